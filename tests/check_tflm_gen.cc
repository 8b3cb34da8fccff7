/*
 * check_tflm_gen.cc - the TFLM suite's generated models: small float
 * models of CONCATENATION, STRIDED_SLICE, PAD and ADD whose branches
 * leave tensors of many sizes live at once, where TFLite Micro's own
 * GreedyMemoryPlanner fragments its arena and arenad finds a smaller
 * one. The bundled real models are chains on which arenad's offsets equal
 * TFLM's own, so only these models make TFLM run on a layout of
 * arenad's that differs from its own planner's.
 *
 * The models are built by gen_models.cc (gen_models.h), which the full
 * TensorFlow Lite suite shares.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "check_tflm.h"
#include "gen_models.h"
#include "tensorflow/lite/micro/memory_planner/greedy_memory_planner.h"
#include "arenad_tflm.h"
#include "tflm_infer_run.h"

extern "C" {
#include "testutil.h"
}

namespace check_tflm {
namespace {

constexpr int kGenModels = 24; /* seeds tried */

}  // namespace

tflm_infer::Model ToModel(const std::vector<uint8_t> &bytes) {
  tflm_infer::Model m;
  m.len = bytes.size();
  m.data = static_cast<uint8_t *>(aligned_alloc(16, (m.len + 15) / 16 * 16));
  ck_assert_ptr_nonnull(m.data);
  memcpy(m.data, bytes.data(), m.len);
  return m;
}

tflm_infer::Model GenConvModel() { return ToModel(gen_models::ConvModel()); }
tflm_infer::Model GenKindsModel() { return ToModel(gen_models::KindsModel()); }
tflm_infer::Model GenChainModel() { return ToModel(gen_models::ChainModel()); }
tflm_infer::Model GenModel(uint64_t seed) {
  return ToModel(gen_models::RandomModel(seed));
}

namespace {

/* Every generated model runs with arenad's plan as with TFLM's own:
 * identical outputs over the invokes, a plan without conflicts, never a
 * larger arena; and on some of them a smaller one, on a layout that is
 * not TFLM's. */
START_TEST(test_generated_models) {
  int smaller = 0, other_layout = 0;
  size_t own_total = 0, ours_total = 0;
  LocalClient lc;
  for (int s = 0; s < kGenModels; s++) {
    tflm_infer::Model m = GenModel((uint64_t)s);
    tflite::GreedyMemoryPlanner greedy;
    tflm_infer::Run r_own, r_ours;
    AssertProven("TFLM's planner", RunOn(m, &greedy, &r_own), r_own);
    arenad::TflmPlanner ours(lc.c, m.data, m.len);
    int rc = RunOn(m, &ours, &r_ours);
    std::vector<int> alias = PlannerAliases(&ours, r_ours.n_buffers);
    AssertProven("arenad's planner", rc, r_ours, &alias);
    ck_assert_msg(SameOutputs(r_own, r_ours), "model %d: outputs differ", s);
    ck_assert_uint_le(r_ours.head_bytes, r_own.head_bytes);
    smaller += r_ours.head_bytes < r_own.head_bytes;
    bool same = r_ours.n_buffers == r_own.n_buffers;
    for (size_t i = 0; same && i < r_own.n_buffers; i++)
      same = r_ours.buffers[i].offset == r_own.buffers[i].offset;
    other_layout += !same;
    own_total += r_own.head_bytes;
    ours_total += r_ours.head_bytes;
    tflm_infer::FreeRun(&r_ours);
    tflm_infer::FreeRun(&r_own);
    tflm_infer::FreeModel(&m);
  }
  printf("tflm generated: %d models, arenad's arena smaller on %d, layout "
         "other than TFLM's on %d; heads %zu (TFLM) and %zu (arenad) in "
         "all; outputs identical over %d invokes\n",
         kGenModels, smaller, other_layout, own_total, ours_total, kInvokes);
  fflush(stdout);
  ck_assert_int_ge(smaller, kGenModels / 4);
  ck_assert_int_ge(other_layout, smaller);
}
END_TEST

}  // namespace

void AddGeneratedTests(Suite *s) {
  TCase *tc = tcase_create("generated");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_generated_models);
  suite_add_tcase(s, tc);
}

}  // namespace check_tflm
