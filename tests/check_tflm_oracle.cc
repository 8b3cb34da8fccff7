/*
 * check_tflm_oracle.cc - the TFLM suite's "oracle" case: TensorFlow Lite
 * Micro's outputs on arenad's plans, in-place sharing on and off,
 * compared bit for bit with a run in which no two buffers share a byte:
 * TFLM's own LinearMemoryPlanner, which gives every buffer bytes of its
 * own. TFLM's GreedyMemoryPlanner, which never shares in place, is held
 * to the same oracle.
 *
 * The models are those of gen_models_random.cc (gen_models.h): the
 * reduced graph on which full TensorFlow Lite's own planner overwrites a
 * tensor still to be read (a RESHAPE on its input's bytes, an ADD in
 * place over them), and seeded random models of the kinds of operators
 * in-place sharing meets, with that shape among their steps. The full
 * TensorFlow Lite suite (check_tflite_rt.cc) runs the same models.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vector>

#include "arenad_tflm.h"
#include "check_tflm.h"
#include "gen_models.h"
#include "tensorflow/lite/micro/memory_planner/greedy_memory_planner.h"
#include "tensorflow/lite/micro/memory_planner/linear_memory_planner.h"
#include "tflm_infer_run.h"

namespace check_tflm {
namespace {

constexpr int kSharingModels = 32; /* seeds run */


/* What one model gave. */
struct Outcome {
  size_t pairs;         /* in-place pairs arenad's plan shared */
  size_t oracle_head;   /* bytes, LinearMemoryPlanner */
  size_t greedy_head;   /* bytes, TFLM's own planner */
  size_t arenad_head;   /* bytes, arenad's plan with sharing */
};

/* Whether a deliberately overlapping plan of arenad's (one buffer moved
 * onto another live at the same time) shows: it gives outputs other than
 * the oracle's run r, or a sanitizer stops the run (AddressSanitizer
 * refuses a kernel's memcpy between overlapping bytes). Run in a child
 * process, so that such a stop ends only the child. */
bool OverlapCaught(const tflm_infer::Model &m, const tflm_infer::Run &r) {
  fflush(stdout);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    LocalClient lc;
    arenad::TflmPlanner bad(lc.c, m.data, m.len);
    bad.TestOnlyOverlap(true);
    tflm_infer::Run r_bad;
    int rc = RunOn(m, &bad, &r_bad);
    _exit(rc != tflm_infer::kRunOk ? 4 : SameOutputs(r, r_bad) ? 2 : 3);
  }
  int st = 0;
  ck_assert_int_eq(waitpid(pid, &st, 0), pid);
  /* 2: the same outputs (not caught); 4: the run failed before an
   * invoke; 3, a sanitizer's status or a signal: caught */
  return !(WIFEXITED(st) && (WEXITSTATUS(st) == 2 || WEXITSTATUS(st) == 4));
}

/* Runs m on the oracle, on TFLM's own planner and on arenad's plan
 * (sharing on and off, each proven: no overlap but a legal declared
 * pair) and asserts all outputs equal the oracle's. */
Outcome Check(const char *name, const tflm_infer::Model &m,
              tflm_infer::Run *oracle_out) {
  LocalClient lc;
  Outcome o = {0, 0, 0, 0};
  tflite::LinearMemoryPlanner linear;
  tflite::GreedyMemoryPlanner greedy;
  tflm_infer::Run r_oracle, r_greedy, r_on, r_off;
  AssertProven("the oracle", RunOn(m, &linear, &r_oracle), r_oracle);
  AssertProven("TFLM's planner", RunOn(m, &greedy, &r_greedy), r_greedy);
  ck_assert_msg(SameOutputs(r_oracle, r_greedy),
                "%s: TFLM's planner differs from the oracle", name);
  {
    arenad::TflmPlanner on(lc.c, m.data, m.len);
    int rc = RunOn(m, &on, &r_on);
    std::vector<int> alias = PlannerAliases(&on, r_on.n_buffers);
    AssertProven("arenad's planner, sharing on", rc, r_on, &alias);
    o.pairs = on.info().n_shared;
  }
  {
    arenad::TflmPlanner off(lc.c, m.data, m.len);
    off.SetInPlace(false);
    AssertProven("arenad's planner, sharing off", RunOn(m, &off, &r_off),
                 r_off);
  }
  ck_assert_msg(SameOutputs(r_oracle, r_on),
                "%s: arenad's plan with sharing differs from the oracle",
                name);
  ck_assert_msg(SameOutputs(r_oracle, r_off),
                "%s: arenad's plan without sharing differs from the oracle",
                name);
  o.oracle_head = r_oracle.head_bytes;
  o.greedy_head = r_greedy.head_bytes;
  o.arenad_head = r_on.head_bytes;
  tflm_infer::FreeRun(&r_greedy);
  tflm_infer::FreeRun(&r_on);
  tflm_infer::FreeRun(&r_off);
  if (oracle_out)
    *oracle_out = r_oracle;
  else
    tflm_infer::FreeRun(&r_oracle);
  return o;
}

/* The reduced graph: the oracle's channels 0..3 are zeros, as the
 * arithmetic says (RELU(t3 - RELU6(t3))), and every plan gives them. */
START_TEST(test_oracle_reshape_in_place) {
  tflm_infer::Model m = ToModel(gen_models::ReshapeInPlaceModel());
  tflm_infer::Run r;
  Outcome o = Check("reduced graph", m, &r);
  ck_assert_uint_eq(r.outputs_len, (size_t)kInvokes * 16 * 8 * 4);
  const float *f = reinterpret_cast<const float *>(r.outputs);
  for (size_t i = 0; i < r.outputs_len / 4; i++)
    if (i % 8 < 4)
      ck_assert_msg(f[i] == 0.0f, "oracle value %zu: %g", i, (double)f[i]);
  printf("tflm oracle: reduced graph: outputs of the oracle (%zu bytes), "
         "TFLM's planner (%zu) and arenad's plan (%zu, %zu pairs in place; "
         "and without sharing) identical\n",
         o.oracle_head, o.greedy_head, o.arenad_head, o.pairs);
  tflm_infer::FreeRun(&r);
  tflm_infer::FreeModel(&m);
}
END_TEST

/* Random models of the kinds in-place sharing meets; and the oracle's
 * negative control: on some of them a deliberately overlapping plan
 * gives other outputs. */
START_TEST(test_oracle_sharing_models) {
  size_t pairs = 0, oracle = 0, greedy = 0, ours = 0;
  int caught = 0;
  for (int s = 0; s < kSharingModels; s++) {
    tflm_infer::Model m = ToModel(gen_models::SharingModel((uint64_t)s));
    char name[32];
    snprintf(name, sizeof name, "model %d", s);
    tflm_infer::Run r;
    Outcome o = Check(name, m, &r);
    caught += OverlapCaught(m, r);
    tflm_infer::FreeRun(&r);
    ck_assert_uint_le(o.arenad_head, o.greedy_head);
    pairs += o.pairs;
    oracle += o.oracle_head;
    greedy += o.greedy_head;
    ours += o.arenad_head;
    tflm_infer::FreeModel(&m);
  }
  printf("tflm oracle: %d random models, outputs identical to the oracle's "
         "with TFLM's planner and arenad's (sharing on, %zu pairs; and "
         "off); heads %zu (oracle), %zu (TFLM), %zu (arenad) in all; an "
         "overlapping plan caught on %d\n",
         kSharingModels, pairs, oracle, greedy, ours, caught);
  ck_assert_int_gt(caught, 0);
}
END_TEST

}  // namespace

void AddOracleTests(Suite *s) {
  TCase *tc = tcase_create("oracle");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_oracle_reshape_in_place);
  tcase_add_test(tc, test_oracle_sharing_models);
  suite_add_tcase(s, tc);
}

}  // namespace check_tflm
