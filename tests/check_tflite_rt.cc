/*
 * check_tflite_rt.cc - TensorFlow Lite's interpreter runs on arenad's
 * plans (tflite_rt_suite; C++, built against the bundled TFLite).
 *
 * TFLite checks only that a caller-given address is 64-byte aligned and
 * large enough, never that two tensors live at once do not share bytes.
 * So these tests check for themselves, from the interpreter arenad's
 * planner built: a plan is proven only when
 *  (a) every tensor the planner placed has its data pointer at the
 *      arena's base plus its planned offset, 64-byte aligned;
 *  (b) no two placed tensors live at the same node share a byte, apart
 *      from a declared in-place pair;
 *  (c) the outputs of three invokes on seeded inputs are bit-identical to
 *      those of TFLite's own planner;
 *  (d) arenad's arena plus what TFLite still allocates in its own arena
 *      (its accounting, GetMemoryAllocInfo) is never more than TFLite
 *      alone.
 *
 * The plans are computed in this process (the client's fallback, with a
 * socket where no daemon listens): the daemon path is the client
 * library's and is tested there.
 *
 * Test cases:
 *  models   every bundled model: the ones TFLite runs proven as above
 *           (one table row each), the others refused by TFLite itself.
 *  control  the negative control: a deliberately overlapping plan
 *           (TflitePlanner's test-only mode) must fail check (b).
 *  infer    the tflite_infer example: 8 processes at once against one
 *           arenad compute one plan between them (the daemon's counters)
 *           and print the same outputs; --planner tflite prints them too.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "arenad_tflite.h"
#include "tflite/kernels/register.h"
#include "tflite_infer_run.h"
extern "C" {
#include "daemon_harness.h"
#include "testutil.h"
#include "wire.h"
}

/* Last: check.h defines a macro `fail` that C++ library headers use. */
#include <check.h>

extern "C" Suite *tflite_rt_suite(void);

namespace {

constexpr const char *kDir = "tests/data/models/";
constexpr int kInvokes = 3;

/* Every bundled model, and whether TFLite runs it. */
struct Model {
  const char *name;
  bool runs; /* false: TFLite refuses it (see why) */
  const char *why;
};
const Model kModels[] = {
    {"audio_preprocessor_int8", false, "signal operators are not TFLite builtins"},
    {"dtln_noise_suppression", true, nullptr},
    {"face_detection_short_range", true, nullptr},
    {"hello_world_float", true, nullptr},
    {"keyword_scrambled", true, nullptr},
    {"magic_wand", true, nullptr},
    {"micro_speech_lstm", true, nullptr},
    {"micro_speech_quantized", true, nullptr},
    {"mobilenet_v2_quantized_1x3x224x224", true, nullptr},
    {"person_detect", false, "quantized_dimension must be in range"},
    {"trained_lstm", true, nullptr},
};
constexpr int kNModels = sizeof kModels / sizeof kModels[0];

std::vector<char> ReadModel(const char *name) {
  std::string path = std::string(kDir) + name + ".tflite";
  std::vector<char> v;
  FILE *f = fopen(path.c_str(), "rb");
  ck_assert_msg(f != NULL, "cannot open %s", path.c_str());
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0)
    v.insert(v.end(), buf, buf + n);
  fclose(f);
  return v;
}

/* A client whose daemon is absent: every plan is computed locally. */
arenad_client_t *LocalClient(void) {
  struct arenad_client_options o;
  arenad_client_options_init(&o);
  o.socket_path = "/nonexistent/arenad-tflite-test.sock";
  o.connect_timeout_ms = 50;
  arenad_client_t *c = NULL;
  ck_assert_int_eq(arenad_client_open(&o, &c), 0);
  return c;
}

/* Checks (a): returns the number of placed tensors not at their
 * address. */
size_t Misplaced(const arenad::TflitePlanner &p, tflite::Interpreter *in) {
  size_t bad = 0;
  for (const auto &b : p.buffers()) {
    if (!b.placed)
      continue;
    const uint8_t *d = reinterpret_cast<const uint8_t *>(in->tensor(b.tensor)->data.raw);
    if (d != p.arena() + b.offset || reinterpret_cast<uintptr_t>(d) % 64)
      bad++;
  }
  return bad;
}

/* Checks (b) on the interpreter's real data pointers: the number of
 * pairs of placed tensors live at one node that share a byte without
 * being a declared in-place pair. */
size_t Conflicts(const arenad::TflitePlanner &p, tflite::Interpreter *in) {
  const auto &bs = p.buffers();
  size_t bad = 0;
  for (size_t i = 0; i < bs.size(); i++)
    for (size_t j = i + 1; j < bs.size(); j++) {
      const auto &x = bs[i], &y = bs[j];
      if (!x.placed || !y.placed || x.size == 0 || y.size == 0 ||
          x.last < y.first || y.last < x.first || x.alias == y.tensor ||
          y.alias == x.tensor)
        continue;
      uintptr_t a = reinterpret_cast<uintptr_t>(in->tensor(x.tensor)->data.raw);
      uintptr_t b = reinterpret_cast<uintptr_t>(in->tensor(y.tensor)->data.raw);
      if (a < b + y.size && b < a + x.size)
        bad++;
    }
  return bad;
}

START_TEST(test_models) {
  const Model &m = kModels[_i];
  std::vector<char> bytes = ReadModel(m.name);
  arenad_client_t *c = LocalClient();
  tflite::ops::builtin::BuiltinOpResolver resolver;
  {
    arenad::TflitePlanner p(c, bytes.data(), bytes.size(), resolver);
    std::unique_ptr<tflite::Interpreter> ours, theirs;
    int rc = p.Build(&ours);
    if (!m.runs) {
      ck_assert_msg(rc != 0, "%s: TFLite was expected to refuse it (%s)",
                    m.name, m.why);
      printf("tflite_rt: %-36s not run by TFLite: %s\n", m.name, m.why);
    } else {
      ck_assert_msg(rc == 0, "%s: %s", m.name, p.error());
      const arenad::TflitePlanInfo &i = p.info();
      ck_assert_int_eq(p.BuildTfliteOnly(&theirs), 0);
      std::vector<uint8_t> a, b;
      std::string err;
      ck_assert_msg(arenad::RunTflite(ours.get(), 7, kInvokes, &a, &err),
                    "%s: %s", m.name, err.c_str());
      ck_assert_msg(arenad::RunTflite(theirs.get(), 7, kInvokes, &b, &err),
                    "%s: %s", m.name, err.c_str());
      bool same = a == b;
      ck_assert_msg(same, "%s: outputs differ from TFLite's own planner", m.name);
      ck_assert_uint_eq(Misplaced(p, ours.get()), 0);
      ck_assert_uint_eq(Conflicts(p, ours.get()), 0);
      ck_assert_msg(i.total() <= i.tflite_alone,
                    "%s: %llu bytes with arenad, %llu alone", m.name,
                    (unsigned long long)i.total(),
                    (unsigned long long)i.tflite_alone);
      ck_assert_uint_eq(i.n_placed + i.n_left, i.n_tensors);
      printf("tflite_rt: | %s | %llu | %llu + %llu = %llu | %lld | %s | %s, "
             "%zu/%zu placed, %zu temporaries %llu bytes, %zu in place, "
             "plan %llu |\n",
             m.name, (unsigned long long)i.tflite_alone,
             (unsigned long long)i.arena_bytes,
             (unsigned long long)i.remainder, (unsigned long long)i.total(),
             (long long)i.tflite_alone - (long long)i.total(),
             same ? "yes" : "no", arenad::TflitePlanSourceName(i.source),
             i.n_placed, i.n_tensors, i.n_temporaries,
             (unsigned long long)i.temporary_bytes, i.n_shared,
             (unsigned long long)i.plan_bytes);
    }
    ours.reset();
    theirs.reset();
  }
  arenad_client_close(c);
}
END_TEST

/* The checker must catch an overlapping plan on some model the planner
 * places. */
START_TEST(test_negative_control) {
  arenad_client_t *c = LocalClient();
  tflite::ops::builtin::BuiltinOpResolver resolver;
  bool caught = false;
  for (int k = 0; k < kNModels && !caught; k++) {
    if (!kModels[k].runs)
      continue;
    std::vector<char> bytes = ReadModel(kModels[k].name);
    arenad::TflitePlanner p(c, bytes.data(), bytes.size(), resolver);
    std::unique_ptr<tflite::Interpreter> in;
    p.TestOnlyOverlap(true);
    if (p.Build(&in) != 0 || p.info().n_placed == 0)
      continue;
    caught = Conflicts(p, in.get()) > 0;
    in.reset();
  }
  ck_assert_msg(caught, "no overlapping plan was noticed");
  arenad_client_close(c);
}
END_TEST

/* Reads a whole file into a string ("" when missing). */
std::string Slurp(const std::string &path) {
  size_t len = 0;
  char *s = tu_read_file(path.c_str(), &len);
  std::string r = s ? std::string(s, len) : std::string();
  free(s);
  return r;
}

/* Starts tflite_infer with args, stdout and stderr into out. */
pid_t Spawn(const std::vector<std::string> &args, const std::string &out) {
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 1);
    dup2(fd, 2);
    std::vector<char *> argv;
    for (const auto &a : args)
      argv.push_back(const_cast<char *>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

/* The outputs tflite_infer printed: its lines from "output ". */
std::string Outputs(const std::string &text) {
  size_t at = text.find("output ");
  return at == std::string::npos ? std::string() : text.substr(at);
}

/* 8 tflite_infer processes at once against one arenad: one plan
 * computed, the others served from its cache or joined to the job in
 * flight; all print the outputs of TFLite's own planner. */
START_TEST(test_infer_eight_processes) {
  constexpr int kProcs = 8;
  setenv("ARENAD", TFLITE_TEST_BUILD "/arenad", 0);
  struct harness h;
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  std::string bin = TFLITE_TEST_BUILD "/examples/tflite_infer";
  std::string model = std::string(kDir) + "magic_wand.tflite";
  pid_t pids[kProcs];
  for (int i = 0; i < kProcs; i++)
    pids[i] = Spawn({bin, "--socket", h.sock, "--no-fallback", "--invokes",
                     "3", "--values", "0", model},
                    std::string(h.dir) + "/out." + std::to_string(i));
  std::string ref = std::string(h.dir) + "/out.tflite";
  int st;
  pid_t own = Spawn({bin, "--planner", "tflite", "--invokes", "3", "--values",
                     "0", model}, ref);
  ck_assert_int_eq(waitpid(own, &st, 0), own);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s",
                Slurp(ref).c_str());
  std::string expect = Outputs(Slurp(ref));
  ck_assert(!expect.empty());
  for (int i = 0; i < kProcs; i++) {
    ck_assert_int_eq(waitpid(pids[i], &st, 0), pids[i]);
    std::string text = Slurp(std::string(h.dir) + "/out." + std::to_string(i));
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "process %d: %s", i,
                  text.c_str());
    ck_assert_msg(text.find("plan: from daemon,") != std::string::npos ||
                      text.find("plan: from cache,") != std::string::npos,
                  "process %d: %s", i, text.c_str());
    ck_assert_msg(Outputs(text) == expect, "process %d printed other outputs",
                  i);
  }
  Arenad__V1__Response *r = hn_stats(&h);
  ck_assert_ptr_nonnull(r);
  ck_assert_ptr_nonnull(r->stats);
  uint64_t computed = r->stats->plans_computed;
  wire_free_response(r);
  ck_assert_uint_eq(computed, 1);
  printf("tflite_rt infer: %d processes, plans computed %llu\n", kProcs,
         (unsigned long long)computed);
  hn_cleanup(&h);
}
END_TEST

}  // namespace

Suite *tflite_rt_suite(void) {
  Suite *s = suite_create("tflite_rt");
  TCase *tc = tcase_create("models");
  tcase_set_timeout(tc, 600);
  tcase_add_loop_test(tc, test_models, 0, kNModels);
  suite_add_tcase(s, tc);
  tc = tcase_create("control");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_negative_control);
  suite_add_tcase(s, tc);
  tc = tcase_create("infer");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_infer_eight_processes);
  suite_add_tcase(s, tc);
  return s;
}
