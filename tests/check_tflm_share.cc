/*
 * check_tflm_share.cc - in-place sharing proven in TensorFlow Lite Micro
 * (the TFLM suite's "in-place" case).
 *
 * With sharing on, arenad::TflmPlanner declares the pairs arenad's
 * .tflite reader derives from its allowlist of kernels, and the plan may
 * give a pair one buffer. A plan is proven here when TFLM, running on it,
 * gives outputs bit-identical to its own GreedyMemoryPlanner's over three
 * invokes, and the plan TFLM used passes the check of check_tflm.cc with
 * one exception: two buffers live at once may overlap only when they are
 * a declared pair at one offset, the input's last scope the output's
 * first, and the operator that writes the output is on this test's own
 * list of kernels that read element i before they write element i. A
 * generated chain proves every kind of kernel on the allowlist. Two
 * negative controls must fail that check: a plan that shares bytes
 * without declaring the pair, and a pair declared on a CONV_2D.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include <vector>

#include "arenad_tflm.h"
#include "check_tflm.h"
#include "gen_models.h"
#include "tensorflow/lite/micro/memory_planner/greedy_memory_planner.h"
#include "tensorflow/lite/schema/schema_generated.h"
#include "tflite.h"
#include "tflm_infer_run.h"

namespace check_tflm {
namespace {

/* The kernels this test accepts a shared pair on: elementwise in the
 * shared input, or a copy of it (the reshape-like ones). */
const int kSafe[] = {
    tflite::BuiltinOperator_ADD,         tflite::BuiltinOperator_SUB,
    tflite::BuiltinOperator_MUL,         tflite::BuiltinOperator_RELU,
    tflite::BuiltinOperator_RELU6,       tflite::BuiltinOperator_PRELU,
    tflite::BuiltinOperator_LEAKY_RELU,  tflite::BuiltinOperator_LOGISTIC,
    tflite::BuiltinOperator_TANH,        tflite::BuiltinOperator_HARD_SWISH,
    tflite::BuiltinOperator_ELU,         tflite::BuiltinOperator_QUANTIZE,
    tflite::BuiltinOperator_DEQUANTIZE,  tflite::BuiltinOperator_RESHAPE,
    tflite::BuiltinOperator_SQUEEZE,     tflite::BuiltinOperator_EXPAND_DIMS,
};

bool Safe(int code) {
  for (int c : kSafe)
    if (c == code)
      return true;
  return false;
}

/* The builtin code of the operator that writes each tensor of subgraph
 * 0, -1 for none. */
std::vector<int> WriterOps(const tflm_infer::Model &m) {
  const tflite::Model *model = tflite::GetModel(m.data);
  const tflite::SubGraph *sg = model->subgraphs()->Get(0);
  std::vector<int> w(sg->tensors()->size(), -1);
  for (const tflite::Operator *op : *sg->operators()) {
    const tflite::OperatorCode *c =
        model->operator_codes()->Get(op->opcode_index());
    int code = std::max((int)c->builtin_code(),
                        (int)c->deprecated_builtin_code());
    for (int32_t t : *op->outputs())
      if (t >= 0 && (size_t)t < w.size())
        w[(size_t)t] = code;
  }
  return w;
}

/* A pair the reader derived, in TFLM's terms, and its writer. */
struct Pair {
  Buf out, in;
  int op;
};

Buf AsBuf(const struct planner_tensor &t) {
  return {(int)((t.size + 15) / 16 * 16), (int)t.first + 1, (int)t.last + 1,
          -1, -1};
}

/* Every pair arenad's reader derives from m, as TFLM buffers. */
std::vector<Pair> ModelPairs(const tflm_infer::Model &m) {
  struct planner_tflite_options o;
  memset(&o, 0, sizeof o);
  o.keep_dequant = 1;
  o.skip_variable = 1;
  struct planner_tflite_model t;
  char err[ARENA_ERR_LEN];
  planner_tflite_init(&t);
  ck_assert_msg(planner_tflite_read(m.data, m.len, &o, &t, err) == 0, "%s",
                err);
  std::vector<int> writer = WriterOps(m);
  std::vector<Pair> v;
  for (size_t i = 0; i < t.n_planned; i++) {
    const struct planner_tensor &x = t.tensors[i];
    if (!x.has_alias)
      continue;
    for (size_t k = 0; k < t.n_planned; k++)
      if (t.tensors[k].id == x.alias)
        v.push_back({AsBuf(x), AsBuf(t.tensors[k]), writer[x.id]});
  }
  planner_tflite_cleanup(&t);
  return v;
}

bool SameBuf(const Buf &a, const Buf &b) {
  return a.size == b.size && a.last == b.last &&
         (a.first == b.first || (a.first == 0 && b.first == 1));
}

/* The problems of a run with sharing: the check of Conflicts() with the
 * declared pairs, and every pair at one offset written by a kernel of
 * kSafe as the model says. Describes the first in msg. */
int SharingProblems(const tflm_infer::Run &r, const std::vector<int> &alias,
                    const std::vector<Pair> &pairs, char *msg, size_t cap) {
  int bad = Conflicts(Bufs(r), r.head_bytes, msg, cap, &alias);
  for (size_t o = 0; o < alias.size(); o++) {
    int i = alias[o];
    if (i < 0 || r.buffers[o].offset != r.buffers[i].offset)
      continue;
    bool ok = false;
    for (const Pair &p : pairs)
      ok |= SameBuf(r.buffers[o], p.out) && SameBuf(r.buffers[i], p.in) &&
            Safe(p.op);
    if (!ok && !bad++)
      snprintf(msg, cap, "buffers %zu and %d share bytes, but no kernel on "
               "the allowlist writes one over the other", o, i);
  }
  return bad;
}

size_t Taken(const tflm_infer::Run &r, const std::vector<int> &alias) {
  size_t n = 0;
  for (size_t o = 0; o < alias.size(); o++)
    n += alias[o] >= 0 && r.buffers[o].offset == r.buffers[alias[o]].offset;
  return n;
}

/* Runs m with sharing on; asserts the plan is proven with its pairs and
 * the outputs equal own's. Returns the head and sets *shared. */
size_t RunShared(const char *name, const tflm_infer::Model &m,
                 const tflm_infer::Run &own, arenad_client_t *c,
                 size_t *shared, uint64_t *bound) {
  arenad::TflmPlanner p(c, m.data, m.len);
  tflm_infer::Run r;
  int rc = RunOn(m, &p, &r);
  ck_assert_msg(rc == tflm_infer::kRunOk, "%s: %s", name, r.error);
  std::vector<int> alias = PlannerAliases(&p, r.n_buffers);
  std::vector<Pair> pairs = ModelPairs(m);
  char msg[256];
  ck_assert_msg(SharingProblems(r, alias, pairs, msg, sizeof msg) == 0,
                "%s: %s", name, msg);
  ck_assert_msg(SameOutputs(own, r), "%s: outputs differ with sharing", name);
  size_t declared = 0;
  for (int a : alias)
    declared += a >= 0;
  ck_assert_msg(declared == pairs.size(), "%s: %zu pairs declared of the "
                "model's %zu", name, declared, pairs.size());
  *shared = Taken(r, alias);
  ck_assert_uint_eq(*shared, p.info().n_shared);
  *bound = p.info().lower_bound_bytes;
  size_t head = r.head_bytes;
  tflm_infer::FreeRun(&r);
  return head;
}

/* Every bundled model TFLM runs, and the generated ones: TFLM's own
 * planner, arenad without and with sharing. Prints one row each. */
START_TEST(test_in_place_models) {
  const ModelCase &mc = kModels[_i];
  if (mc.status != tflm_infer::kRunOk)
    return;
  tflm_infer::Model m = Load(ModelPath(mc.name));
  tflite::GreedyMemoryPlanner greedy;
  tflm_infer::Run own, off;
  AssertProven("TFLM's planner", RunOn(m, &greedy, &own), own);
  LocalClient lc;
  arenad::TflmPlanner p_off(lc.c, m.data, m.len);
  p_off.SetInPlace(false);
  AssertProven("arenad without sharing", RunOn(m, &p_off, &off), off);
  ck_assert_uint_eq(p_off.info().n_shared, 0);
  ck_assert_msg(SameOutputs(own, off), "%s: outputs differ", mc.name);
  size_t shared = 0;
  uint64_t bound = 0;
  size_t on = RunShared(mc.name, m, own, lc.c, &shared, &bound);
  ck_assert_uint_le(on, off.head_bytes);
  ck_assert_uint_le(off.head_bytes, own.head_bytes);
  if (strcmp(mc.name, "face_detection_short_range") == 0)
    ck_assert_uint_eq(on, bound); /* at the sharing bound */
  printf("tflm in-place: %-36s TFLM %8zu | arenad %8zu | in place %8zu | "
         "saved %5.1f%% | %3zu pairs | outputs identical\n",
         mc.name, own.head_bytes, off.head_bytes, on,
         100.0 * (double)(own.head_bytes - on) / (double)own.head_bytes,
         shared);
  fflush(stdout);
  tflm_infer::FreeRun(&off);
  tflm_infer::FreeRun(&own);
  tflm_infer::FreeModel(&m);
}
END_TEST

START_TEST(test_in_place_generated) {
  LocalClient lc;
  size_t pairs = 0;
  for (int s = -1; s < 24; s++) {
    tflm_infer::Model m = s < 0 ? GenChainModel() : GenModel((uint64_t)s);
    tflite::GreedyMemoryPlanner greedy;
    tflm_infer::Run own;
    AssertProven("TFLM's planner", RunOn(m, &greedy, &own), own);
    size_t shared = 0;
    uint64_t bound = 0;
    size_t on = RunShared(s < 0 ? "chain" : "generated", m, own, lc.c,
                          &shared, &bound);
    ck_assert_uint_le(on, own.head_bytes);
    if (s < 0)
      ck_assert_uint_eq(shared, 2); /* both ADDs over their inputs */
    pairs += shared;
    tflm_infer::FreeRun(&own);
    tflm_infer::FreeModel(&m);
  }
  printf("tflm in-place: generated models share %zu pairs in all; outputs "
         "identical\n", pairs);
  fflush(stdout);
}
END_TEST

/* Every kind of kernel on the allowlist that this TFLM build has, in one
 * chain where every output may reuse its input: all pairs declared, all
 * taken, the outputs those of TFLM's own planner. */
START_TEST(test_in_place_kinds) {
  tflm_infer::Model m = GenKindsModel();
  tflite::GreedyMemoryPlanner greedy;
  tflm_infer::Run own;
  AssertProven("TFLM's planner", RunOn(m, &greedy, &own), own);
  LocalClient lc;
  size_t shared = 0;
  uint64_t bound = 0;
  size_t on = RunShared("kinds", m, own, lc.c, &shared, &bound);
  std::vector<Pair> pairs = ModelPairs(m);
  ck_assert_uint_eq(shared, pairs.size());
  const std::vector<int> want = gen_models::KindsModelOps();
  for (int k : want) {
    bool seen = false;
    for (const Pair &p : pairs)
      seen |= p.op == k;
    ck_assert_msg(seen, "no pair on %s",
                  tflite::EnumNameBuiltinOperator((tflite::BuiltinOperator)k));
  }
  printf("tflm in-place: every allowlisted kind, %zu pairs shared, head %zu "
         "(TFLM's own %zu); outputs identical\n", shared, on, own.head_bytes);
  fflush(stdout);
  tflm_infer::FreeRun(&own);
  tflm_infer::FreeModel(&m);
}
END_TEST

/* Control: a plan that shares without declaring the pair fails. */
START_TEST(test_in_place_control_undeclared) {
  tflm_infer::Model m = GenChainModel();
  LocalClient lc;
  arenad::TflmPlanner p(lc.c, m.data, m.len);
  p.TestOnlyHideAliases(true);
  tflm_infer::Run r;
  ck_assert_int_eq(RunOn(m, &p, &r), tflm_infer::kRunOk);
  ck_assert_uint_gt(p.info().n_shared, 0);
  std::vector<int> alias = PlannerAliases(&p, r.n_buffers);
  char msg[256];
  int n = SharingProblems(r, alias, ModelPairs(m), msg, sizeof msg);
  ck_assert_msg(n > 0, "an undeclared share passed the check");
  ck_assert_ptr_nonnull(strstr(msg, "overlap"));
  printf("tflm in-place control: undeclared share caught (%s)\n", msg);
  fflush(stdout);
  tflm_infer::FreeRun(&r);
  tflm_infer::FreeModel(&m);
}
END_TEST

/* Control: a pair declared on a CONV_2D shares, and fails the check. */
START_TEST(test_in_place_control_conv) {
  tflm_infer::Model m = GenConvModel();
  tflite::GreedyMemoryPlanner greedy;
  tflm_infer::Run own, r;
  AssertProven("TFLM's planner", RunOn(m, &greedy, &own), own);
  LocalClient lc;
  arenad::TflmPlanner p(lc.c, m.data, m.len);
  p.TestOnlyAlias(2, 1);
  ck_assert_int_eq(RunOn(m, &p, &r), tflm_infer::kRunOk);
  std::vector<int> alias = PlannerAliases(&p, r.n_buffers);
  ck_assert_int_eq(alias[2], 1);
  ck_assert_int_eq(r.buffers[2].offset, r.buffers[1].offset);
  char msg[256];
  int n = SharingProblems(r, alias, ModelPairs(m), msg, sizeof msg);
  ck_assert_msg(n > 0, "a pair on CONV_2D passed the check");
  ck_assert_ptr_nonnull(strstr(msg, "allowlist"));
  bool same = SameOutputs(own, r);
  printf("tflm in-place control: CONV_2D pair caught (%s); outputs %s\n",
         msg, same ? "happened to match" : "differ");
  fflush(stdout);
  tflm_infer::FreeRun(&r);
  tflm_infer::FreeRun(&own);
  tflm_infer::FreeModel(&m);
}
END_TEST

}  // namespace

std::vector<int> ModelAliases(const tflm_infer::Run &r,
                              const tflm_infer::Model &m) {
  std::vector<Pair> pairs = ModelPairs(m);
  std::vector<int> alias(r.n_buffers, -1);
  for (size_t o = 0; o < r.n_buffers; o++)
    for (const Pair &p : pairs) {
      if (!SameBuf(r.buffers[o], p.out))
        continue;
      for (size_t i = 0; i < r.n_buffers; i++)
        if (i != o && SameBuf(r.buffers[i], p.in) &&
            r.buffers[i].offset == r.buffers[o].offset)
          alias[o] = (int)i;
    }
  return alias;
}

void AddInPlaceTests(Suite *s) {
  TCase *tc = tcase_create("in-place");
  tcase_set_timeout(tc, 900); /* mobilenet under the sanitizers */
  tcase_add_loop_test(tc, test_in_place_models, 0, kNModels);
  tcase_add_test(tc, test_in_place_generated);
  tcase_add_test(tc, test_in_place_kinds);
  tcase_add_test(tc, test_in_place_control_undeclared);
  tcase_add_test(tc, test_in_place_control_conv);
  suite_add_tcase(s, tc);
}

}  // namespace check_tflm
