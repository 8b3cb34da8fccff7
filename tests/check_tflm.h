/*
 * check_tflm.h - what the parts of the TFLM suite share (C++): the
 * daemon a test runs, its plan counters, the bundled models' paths and
 * the helpers that run a program (defined in check_tflm.cc), and the
 * function each part exports to add its test case (defined in
 * check_tflm_<part>.cc).
 */
#ifndef ARENA_CHECK_TFLM_H
#define ARENA_CHECK_TFLM_H

#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include <string>
#include <vector>

extern "C" {
#include "daemon_harness.h"
}
#include <arenad/arenad_client.h>

/* The Makefile passes its BUILD, where arenad, arenactl and
 * examples/tflm_infer are, to every part of the suite. */
#ifndef TFLM_TEST_BUILD
#define TFLM_TEST_BUILD "build"
#endif

namespace check_tflm {

/* A fresh arenad on a temporary socket for the test process. */
struct Daemon {
  Daemon() {
    setenv("ARENAD", TFLM_TEST_BUILD "/arenad", 0);
    ck_assert_int_eq(hn_init(&h, NULL), 0);
    ck_assert_int_eq(hn_start(&h), 0);
    struct arenad_client_options o;
    arenad_client_options_init(&o);
    o.socket_path = h.sock;
    o.fallback = 0;
    ck_assert_int_eq(arenad_client_open(&o, &c), 0);
  }
  ~Daemon() {
    arenad_client_close(c);
    hn_cleanup(&h);
  }
  struct harness h;
  arenad_client_t *c = NULL;
};

/* The daemon's plan counters. */
struct Counters {
  uint64_t computed, misses, memory_hits, storage_hits, joined, served;
};

/* The counters of h's daemon, from a Stats request. */
Counters Stats(const struct harness *h);

/* The path of the bundled model name (name plus suffix) in the test
 * data. */
std::string ModelPath(const char *name, const char *suffix = ".tflite");

/* Reads a whole file into a string ("" when missing). */
std::string Slurp(const std::string &path);

/* Runs `argv` with stdout and stderr into files of dir; returns the exit
 * status and the two texts. */
int Exec(const std::vector<std::string> &args, const std::string &dir,
        std::string *out, std::string *err);

/* Adds the test case "infer" (check_tflm_infer.cc). */
void AddInferTests(Suite *s);

/* Adds the test cases "ops_half", "ops_dequantize", "ops_transpose_conv"
 * and "ops_resolver" (check_tflm_ops.cc). */
void AddOpsTests(Suite *s);

}  // namespace check_tflm

#endif /* ARENA_CHECK_TFLM_H */
