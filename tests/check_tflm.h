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
#include "testutil.h"
}
#include <arenad/arenad_client.h>
#include "arenad_tflm.h"
#include "tflm_infer_run.h"

/* The Makefile passes its BUILD, where arenad, arenactl and
 * examples/tflm_infer are, to every part of the suite. */
#ifndef TFLM_TEST_BUILD
#error "TFLM_TEST_BUILD is not defined: build the tflm suite with make, which passes BUILD"
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

/* Constants of the runs. */
constexpr size_t kArena = 16u << 20; /* bytes per interpreter arena */
constexpr int kInvokes = 3;
constexpr uint64_t kSeed = 20250101;
constexpr int kAlign = 16; /* TFLM's MicroArenaBufferAlignment() */

/* One buffer TFLM added, and the offset it was given. */
using Buf = tflm_infer::PlannedBuffer;

/* The buffers of a run. */
std::vector<Buf> Bufs(const tflm_infer::Run &r);

/* Checks a recorded plan. Returns the number of problems (overlaps,
 * unaligned or unread offsets, buffers beyond the head, offline offsets
 * not kept) and describes the first in msg. With alias (one entry per
 * buffer: the buffer whose bytes it may reuse, or -1), two buffers that
 * overlap are no problem when they are a declared pair sharing legally:
 * one offset, the input's last scope the output's first. */
int Conflicts(const std::vector<Buf> &b, size_t head, char *msg, size_t cap,
              const std::vector<int> *alias = nullptr);

/* The bundled models and what TFLM does with them in this build. */
struct ModelCase {
  const char *name;
  int status;      /* expected tflm_infer::RunStatus */
  const char *why; /* for the ones that cannot run: the reason, and a word
                      TFLM's or the runner's message must contain */
  const char *word;
};
extern const ModelCase kModels[];
extern const int kNModels;

/* Loads a model file; the test fails when it cannot. */
tflm_infer::Model Load(const std::string &path);

/* An arena, 16-byte aligned, owned. */
struct Arena {
  Arena() : p(static_cast<uint8_t *>(aligned_alloc(16, kArena))) {
    ck_assert_ptr_nonnull(p);
  }
  ~Arena() { free(p); }
  uint8_t *p;
};

/* Runs m with planner p on a fresh arena. */
int RunOn(const tflm_infer::Model &m, tflite::MicroMemoryPlanner *p,
          tflm_infer::Run *run);

/* Asserts a run succeeded with a proven plan (with alias: see
 * Conflicts). */
void AssertProven(const char *what, int rc, const tflm_infer::Run &run,
                  const std::vector<int> *alias = nullptr);

/* Whether two runs' outputs are bit-identical. */
bool SameOutputs(const tflm_infer::Run &a, const tflm_infer::Run &b);

/* The pairs p declared for its n buffers: entry k is the buffer whose
 * bytes buffer k may reuse, or -1 (arenad::TflmPlanner::AliasOf). */
std::vector<int> PlannerAliases(arenad::TflmPlanner *p, size_t n);

/* The pairs arenad's reader derives from m, as buffers of run r that
 * share one offset: entry k is the buffer whose bytes buffer k reuses, or
 * -1 (check_tflm_share.cc). For a plan TFLM read from the model itself,
 * such as one arenactl embed wrote. */
std::vector<int> ModelAliases(const tflm_infer::Run &r,
                              const tflm_infer::Model &m);

/* A client whose daemon is never there: with its fallback on, every plan
 * is made in the test process. */
struct LocalClient {
  LocalClient() {
    char *dir = tu_mkdtemp();
    ck_assert_ptr_nonnull(dir);
    path = std::string(dir) + "/no-daemon.sock";
    tu_rm_rf(dir);
    free(dir);
    struct arenad_client_options o;
    arenad_client_options_init(&o);
    o.socket_path = path.c_str();
    o.fallback = 1;
    ck_assert_int_eq(arenad_client_open(&o, &c), 0);
  }
  ~LocalClient() { arenad_client_close(c); }
  std::string path;
  arenad_client_t *c = NULL;
};

/* A model's bytes as a tflm_infer::Model: a 16-byte aligned copy, as
 * TFLM needs, owned by the caller (tflm_infer::FreeModel;
 * check_tflm_gen.cc). */
tflm_infer::Model ToModel(const std::vector<uint8_t> &bytes);

/* The models of gen_models.h as tflm_infer::Models, 16-byte aligned
 * copies owned by the caller (tflm_infer::FreeModel; check_tflm_gen.cc):
 * RandomModel(seed), ConvModel(), ChainModel() and KindsModel(). */
tflm_infer::Model GenModel(uint64_t seed);
tflm_infer::Model GenConvModel();
tflm_infer::Model GenChainModel();
tflm_infer::Model GenKindsModel();

/* Adds the test case "in-place" (check_tflm_share.cc). */
void AddInPlaceTests(Suite *s);

/* Adds the test case "generated" (check_tflm_gen.cc). */
void AddGeneratedTests(Suite *s);

/* Adds the test case "tenants" (check_tflm_tenant.cc). */
void AddTenantTests(Suite *s);

/* Adds the test case "oracle" (check_tflm_oracle.cc). */
void AddOracleTests(Suite *s);

/* Adds the test case "infer" (check_tflm_infer.cc). */
void AddInferTests(Suite *s);

/* Adds the test cases "ops_half", "ops_dequantize", "ops_transpose_conv"
 * and "ops_resolver" (check_tflm_ops.cc). */
void AddOpsTests(Suite *s);

}  // namespace check_tflm

#endif /* ARENA_CHECK_TFLM_H */
