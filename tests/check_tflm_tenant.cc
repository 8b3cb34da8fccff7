/*
 * check_tflm_tenant.cc - the TFLM suite's multi-tenant case: several
 * models in one TFLite Micro arena, on arenad's plans
 * (arenad::TflmPlanner::SetModel, arenad_tflm.h, MULTI-TENANT).
 *
 * Four interpreters (face_detection_short_range, person_detect,
 * micro_speech_lstm with its variable state, and person_detect again)
 * share one MicroAllocator and one planner, which is pointed at each
 * model before it allocates. Run in turn, every model gives exactly the
 * outputs it gives alone; each is planned under its own key (the daemon
 * stores one plan per distinct model, and the repeated model is a cache
 * hit); the one head is the largest model's, so the arena holds every
 * model's persistent part and that head, less than the models' own
 * arenas summed. A model the planner refuses fails its allocation
 * cleanly, and the planner serves the next good one.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <set>
#include <string>
#include <vector>

#include "check_tflm.h"
#include "arenad_tflm.h"
#include "tflm_infer_run.h"

extern "C" {
#include "testutil.h"
#include "wire.h"
}

namespace check_tflm {
namespace {

const char *const kTenants[] = {"face_detection_short_range", "person_detect",
                                "micro_speech_lstm", "person_detect"};
constexpr size_t kN = sizeof kTenants / sizeof kTenants[0];

/* RunTenants' hook: points the planner at model i. */
struct Select {
  arenad::TflmPlanner *planner;
  const tflm_infer::Model *models;
  const void *refused; /* when not NULL: model 1 is these bytes instead */
};

int SelectModel(void *ctx, size_t i) {
  Select *s = static_cast<Select *>(ctx);
  if (s->refused && i == 1)
    return s->planner->SetModel(s->refused, 64) == 0 ? 0 : -1;
  return s->planner->SetModel(s->models[i].data, s->models[i].len);
}

START_TEST(test_tenants_share_one_arena) {
  tflm_infer::Model m[kN];
  tflm_infer::Run alone[kN], shared[kN];
  Daemon d;
  std::vector<int> alias[kN];
  size_t own_sum = 0, persistent = 0, max_head = 0;
  for (size_t i = 0; i < kN; i++) {
    m[i] = Load(ModelPath(kTenants[i]));
    arenad::TflmPlanner p(d.c, m[i].data, m[i].len);
    int rc = RunOn(m[i], &p, &alone[i]);
    alias[i] = PlannerAliases(&p, alone[i].n_buffers);
    AssertProven(kTenants[i], rc, alone[i], &alias[i]);
    own_sum += alone[i].arena_used_bytes;
    persistent += alone[i].arena_used_bytes - alone[i].head_bytes;
    max_head = alone[i].head_bytes > max_head ? alone[i].head_bytes : max_head;
  }
  Counters before = Stats(&d.h);

  Arena arena;
  arenad::TflmPlanner planner(d.c, m[0].data, m[0].len);
  Select sel = {&planner, m, NULL};
  int rc = tflm_infer::RunTenants(m, kN, &planner, SelectModel, &sel,
                                  arena.p, kArena, kSeed, kInvokes, shared);
  ck_assert_msg(rc == tflm_infer::kRunOk, "%d: %s", rc, shared[0].error);
  /* Each model on the plan it has alone, offset for offset. */
  for (size_t i = 0; i < kN; i++) {
    AssertProven(kTenants[i], rc, shared[i], &alias[i]);
    ck_assert_msg(SameOutputs(alone[i], shared[i]), "%s: outputs differ",
                  kTenants[i]);
    ck_assert_uint_eq(shared[i].head_bytes, alone[i].head_bytes);
    ck_assert_uint_eq(shared[i].n_buffers, alone[i].n_buffers);
    for (size_t b = 0; b < alone[i].n_buffers; b++)
      ck_assert_int_eq(shared[i].buffers[b].offset, alone[i].buffers[b].offset);
  }
  /* Planned under each model's own key: the models planned alone first
   * (one plan each per distinct model) are all cache hits now. */
  Counters after = Stats(&d.h);
  ck_assert_uint_eq(after.computed, before.computed);
  ck_assert_uint_eq(after.served - before.served, kN);
  Arenad__V1__Response *list = hn_list(&d.h, 0);
  ck_assert_ptr_nonnull(list);
  std::set<std::string> hashes;
  for (size_t k = 0; k < list->list->n_entries; k++) {
    const ProtobufCBinaryData &h = list->list->entries[k]->model_hash;
    hashes.insert(std::string(reinterpret_cast<const char *>(h.data), h.len));
  }
  wire_free_response(list);
  ck_assert_uint_eq(hashes.size(), 3);
  for (size_t i = 0; i < kN; i++) {
    uint8_t digest[ARENAD_CLIENT_DIGEST_LEN];
    arenad_client_sha256(m[i].data, m[i].len, digest);
    ck_assert(hashes.count(std::string(reinterpret_cast<char *>(digest),
                                       sizeof digest)) == 1);
  }
  /* One head, the largest model's, beside every persistent part (less
   * the allocator's own objects, made once rather than once a model). */
  size_t used = shared[0].arena_used_bytes;
  ck_assert_uint_lt(used, own_sum);
  ck_assert_uint_le(used, persistent + max_head);
  ck_assert_uint_lt(persistent + max_head - used, 512 * kN);
  printf("tflm tenants: %zu models in one arena of %zu bytes (head %zu, "
         "the largest model's) against %zu in %zu arenas of their own; "
         "outputs identical over %d invokes in turn\n",
         kN, used, max_head, own_sum, kN, kInvokes);
  fflush(stdout);
  for (size_t i = 0; i < kN; i++) {
    tflm_infer::FreeRun(&shared[i]);
    tflm_infer::FreeRun(&alone[i]);
    tflm_infer::FreeModel(&m[i]);
  }
}
END_TEST

/* A model the planner refuses (64 bytes that are no FlatBuffer) stops
 * the run at that model, with the reason; pointed at a good model again,
 * the same planner plans it. */
START_TEST(test_tenant_refused_model) {
  tflm_infer::Model m[2] = {Load(ModelPath("person_detect")),
                            Load(ModelPath("magic_wand"))};
  std::vector<uint8_t> junk(64, 0x5a);
  LocalClient lc;
  arenad::TflmPlanner planner(lc.c, m[0].data, m[0].len);
  Select sel = {&planner, m, junk.data()};
  tflm_infer::Run r[2];
  {
    Arena arena;
    int rc = tflm_infer::RunTenants(m, 2, &planner, SelectModel, &sel,
                                    arena.p, kArena, kSeed, 1, r);
    ck_assert_int_eq(rc, tflm_infer::kRunAllocate);
    ck_assert_int_eq(planner.status(), ARENA_EPARSE);
    ck_assert_msg(strstr(planner.error(), "not a valid TFLite FlatBuffer"),
                  "%s", planner.error());
    FreeRun(&r[0]);
    FreeRun(&r[1]);
  }
  ck_assert_int_eq(planner.SetModel(m[1].data, m[1].len), 0);
  ck_assert_int_eq(planner.status(), 0);
  tflm_infer::Run again, ref;
  AssertProven("magic_wand", RunOn(m[1], &planner, &again), again);
  arenad::TflmPlanner fresh(lc.c, m[1].data, m[1].len);
  AssertProven("magic_wand", RunOn(m[1], &fresh, &ref), ref);
  ck_assert(SameOutputs(again, ref));
  ck_assert_uint_eq(again.head_bytes, ref.head_bytes);
  tflm_infer::FreeRun(&again);
  tflm_infer::FreeRun(&ref);
  tflm_infer::FreeModel(&m[0]);
  tflm_infer::FreeModel(&m[1]);
}
END_TEST

}  // namespace

void AddTenantTests(Suite *s) {
  TCase *tc = tcase_create("tenants");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_tenants_share_one_arena);
  tcase_add_test(tc, test_tenant_refused_model);
  suite_add_tcase(s, tc);
}

}  // namespace check_tflm
