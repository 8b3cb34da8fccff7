/*
 * check_wire_validation.c - the "validation" case of the wire suite:
 * wire_graph_from_plan walked through each rule with one broken field of
 * a valid Plan message at a time, the limits shown to be inclusive, the
 * alias column's values with in-place sharing on and off, and
 * wire_shape_from_msg's input count.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"
#include "wire_plan.h"
#include "check_wire.h"

/* One way to break a valid Plan message, and the code it must give. */
struct bad_case {
  const char *what;
  int code;
  const char *needle; /* must appear in the error text */
};

static const struct bad_case bad_cases[] = {
    {"sizes column short", ARENA_EINVAL, "columns differ"},
    {"last column long", ARENA_EINVAL, "columns differ"},
    {"align column short", ARENA_EINVAL, "tensor_align"},
    {"pinned column short", ARENA_EINVAL, "tensor_pinned"},
    {"no tensors", ARENA_EEMPTY, "no tensors"},
    {"too many tensors", ARENA_ETOOBIG, "over 3"},
    {"empty model hash", ARENA_EINVAL, "model hash"},
    {"65-byte model hash", ARENA_EINVAL, "model hash"},
    {"negative dim", ARENA_EINVAL, "negative"},
    {"rank over limit", ARENA_EINVAL, "rank"},
    {"first > last", ARENA_ELIFETIME, ""},
    {"negative first", ARENA_ELIFETIME, ""},
    {"duplicate id", ARENA_EDUPID, ""},
    {"bad algorithm", ARENA_EINVAL, "algorithm"},
    {"negative algorithm", ARENA_EINVAL, "algorithm"},
    {"alignment not a power of two", ARENA_EALIGN, ""},
    {"pinned below -1", ARENA_EPINNED, "pinned offset -7 "},
    {"alias column short", ARENA_EINVAL, "tensor_alias"},
    {"alias above UINT32_MAX", ARENA_EINVAL, "neither -1 nor a tensor id"},
    {"alias below -1", ARENA_EINVAL, "neither -1 nor a tensor id"},
    {"alias names the tensor itself", ARENA_EINVAL, "itself"},
    {"alias names a missing id", ARENA_EINVAL, "not in the graph"},
};
#define N_BAD (sizeof bad_cases / sizeof bad_cases[0])

/* Gives m an owned tensor_alias column of n entries, all -1 but row
 * `row`, which gets value v. */
static void set_aliases(Arenad__V1__Plan *m, size_t n, size_t row, int64_t v)
{
  m->tensor_alias = malloc(n * sizeof *m->tensor_alias);
  ck_assert_ptr_nonnull(m->tensor_alias);
  for (size_t i = 0; i < n; i++)
    m->tensor_alias[i] = i == row ? v : -1;
  m->n_tensor_alias = n;
}

START_TEST(validation_rejects)
{
  const struct bad_case *bc = &bad_cases[_i];
  Arenad__V1__Plan m;
  Arenad__V1__PlanOptions mo;
  wt_small_plan_msg(&m, &mo);
  ck_assert_uint_eq(m.n_tensor_pinned, WT_SMALL_N);
  ck_assert_uint_eq(m.n_tensor_align, WT_SMALL_N);
  struct wire_limits l;
  wire_limits_init(&l);
  uint8_t long_hash[WIRE_MAX_MODEL_HASH + 1] = {0};
  int64_t dims[WIRE_MAX_RANK + 1] = {0};
  Arenad__V1__Dims d = ARENAD__V1__DIMS__INIT;
  Arenad__V1__Dims *shape[] = {&d};

  switch (_i) {
  case 0: m.n_tensor_sizes--; break;
  case 1: m.n_tensor_last++; break; /* reads stay inside: the check is first */
  case 2: m.n_tensor_align--; break;
  case 3: m.n_tensor_pinned = 1; break;
  case 4:
    m.n_tensor_ids = m.n_tensor_sizes = m.n_tensor_first = 0;
    m.n_tensor_last = m.n_tensor_align = m.n_tensor_pinned = 0;
    break;
  case 5: l.max_tensors = 3; break;
  case 6: m.model_hash.len = 0; break;
  case 7:
    m.model_hash.data = long_hash;
    m.model_hash.len = sizeof long_hash;
    break;
  case 8:
    dims[0] = 2;
    dims[1] = -1;
    d.dims = dims;
    d.n_dims = 2;
    m.input_shape = shape;
    m.n_input_shape = 1;
    break;
  case 9:
    d.dims = dims;
    d.n_dims = WIRE_MAX_RANK + 1;
    m.input_shape = shape;
    m.n_input_shape = 1;
    break;
  case 10: m.tensor_first[1] = 5; break;
  case 11: m.tensor_first[0] = -3; break;
  case 12: m.tensor_ids[2] = m.tensor_ids[0]; break;
  case 13: mo.algorithm = (Arenad__V1__Algorithm)PLANNER_ALGO__COUNT; break;
  case 14: mo.algorithm = (Arenad__V1__Algorithm)-2; break;
  case 15: mo.alignment = 48; break;
  case 16: m.tensor_pinned[0] = -7; break;
  case 17: set_aliases(&m, 3, 0, -1); break;
  case 18: set_aliases(&m, WT_SMALL_N, 2, (int64_t)UINT32_MAX + 1); break;
  case 19: set_aliases(&m, WT_SMALL_N, 2, -2); break;
  case 20: set_aliases(&m, WT_SMALL_N, 1, 3); break; /* row 1 is id 3 */
  case 21: set_aliases(&m, WT_SMALL_N, 1, 99); break;
  default: ck_abort_msg("no case %d", _i);
  }

  /* Round-trip through the codec first so that the validation sees
   * exactly what a peer could send (case 1 cannot be encoded: the
   * column is shorter than it claims, so it is checked directly). */
  struct wire_graph g;
  char err[ARENA_ERR_LEN] = "";
  int rc;
  if (_i == 1) {
    rc = wire_graph_from_plan(&m, &l, &g, err);
  } else {
    Arenad__V1__Request *back = wt_round_trip_plan(&m);
    rc = wire_graph_from_plan(back->plan, &l, &g, err);
    wire_free_request(back);
  }
  ck_assert_msg(rc == bc->code, "%s: got %s (%s), want %s", bc->what,
                arena_err_name(rc), err, arena_err_name(bc->code));
  ck_assert_msg(err[0] != '\0', "%s: no message", bc->what);
  ck_assert_msg(strstr(err, bc->needle) != NULL, "%s: message '%s'",
                bc->what, err);
  /* On failure the graph is left empty. */
  ck_assert_ptr_null(g.tensors);
  ck_assert_uint_eq(g.n_tensors, 0);
  ck_assert_ptr_null(g.shape.ranks);
  if (_i == 7)
    m.model_hash.data = NULL; /* not owned by the message */
  m.input_shape = NULL;
  m.n_input_shape = 0;
  m.n_tensor_ids = m.n_tensor_sizes = m.n_tensor_first = WT_SMALL_N;
  wire_plan_msg_cleanup(&m);
}
END_TEST

/* The limits are inclusive: exactly max_tensors, a 64-byte hash and the
 * largest rank all pass. */
START_TEST(validation_limits_inclusive)
{
  Arenad__V1__Plan m;
  Arenad__V1__PlanOptions mo;
  wt_small_plan_msg(&m, &mo);
  struct wire_limits l;
  wire_limits_init(&l);
  l.max_tensors = WT_SMALL_N;
  uint8_t hash[WIRE_MAX_MODEL_HASH];
  memset(hash, 0x5a, sizeof hash);
  m.model_hash.data = hash;
  m.model_hash.len = sizeof hash;
  int64_t dims[WIRE_MAX_RANK];
  for (size_t i = 0; i < WIRE_MAX_RANK; i++)
    dims[i] = (int64_t)i;
  Arenad__V1__Dims d = ARENAD__V1__DIMS__INIT;
  d.dims = dims;
  d.n_dims = WIRE_MAX_RANK;
  Arenad__V1__Dims *shape[] = {&d};
  m.input_shape = shape;
  m.n_input_shape = 1;
  struct wire_graph g;
  char err[ARENA_ERR_LEN] = "";
  ck_assert_msg(wire_graph_from_plan(&m, &l, &g, err) == 0, "%s", err);
  ck_assert_uint_eq(g.shape.ranks[0], WIRE_MAX_RANK);
  ck_assert_uint_eq(g.model_hash_len, WIRE_MAX_MODEL_HASH);
  wire_graph_cleanup(&g);
  m.input_shape = NULL;
  m.n_input_shape = 0;
  wire_plan_msg_cleanup(&m);
}
END_TEST

/* Every alias value from -1 to UINT32_MAX is accepted as such (the id
 * must then be in the graph); with in-place sharing off a bad alias is
 * still refused, and good ones are checked, then cleared. */
START_TEST(validation_alias_values)
{
  Arenad__V1__Plan m;
  Arenad__V1__PlanOptions mo;
  wt_small_plan_msg(&m, &mo);
  struct wire_limits l;
  wire_limits_init(&l);
  struct wire_graph g;
  char err[ARENA_ERR_LEN] = "";
  set_aliases(&m, WT_SMALL_N, 0, 3); /* id 7 may reuse id 3 */
  m.tensor_alias[1] = -1;
  Arenad__V1__Request *back = wt_round_trip_plan(&m);
  ck_assert_msg(wire_graph_from_plan(back->plan, &l, &g, err) == 0, "%s", err);
  ck_assert_uint_eq(g.tensors[0].has_alias, 1);
  ck_assert_uint_eq(g.tensors[0].alias, 3);
  for (size_t i = 1; i < WT_SMALL_N; i++)
    ck_assert_uint_eq(g.tensors[i].has_alias, 0);
  ck_assert_int_eq(g.opts.in_place, 1);
  wire_graph_cleanup(&g);
  wire_free_request(back);

  /* UINT32_MAX is an id like any other: here one not in the graph */
  m.tensor_alias[2] = UINT32_MAX;
  ck_assert_int_eq(wire_graph_from_plan(&m, &l, &g, err), ARENA_EINVAL);
  ck_assert_ptr_nonnull(strstr(err, "not in the graph"));
  ck_assert_ptr_nonnull(strstr(err, "4294967295"));

  /* in-place off: the same bad alias is refused ... */
  mo.no_in_place = 1;
  back = wt_round_trip_plan(&m);
  ck_assert_int_eq(wire_graph_from_plan(back->plan, &l, &g, err),
                   ARENA_EINVAL);
  wire_free_request(back);
  m.tensor_alias[2] = (int64_t)UINT32_MAX + 1;
  ck_assert_int_eq(wire_graph_from_plan(&m, &l, &g, err), ARENA_EINVAL);
  /* ... and good ones arrive cleared */
  m.tensor_alias[2] = -1;
  ck_assert_msg(wire_graph_from_plan(&m, &l, &g, err) == 0, "%s", err);
  ck_assert_int_eq(g.opts.in_place, 0);
  for (size_t i = 0; i < WT_SMALL_N; i++)
    ck_assert_uint_eq(g.tensors[i].has_alias, 0);
  wire_graph_cleanup(&g);
  wire_plan_msg_cleanup(&m);
}
END_TEST

START_TEST(shape_too_many_inputs)
{
  Arenad__V1__Dims d = ARENAD__V1__DIMS__INIT;
  Arenad__V1__Dims **many = calloc(WIRE_MAX_INPUTS + 1, sizeof *many);
  ck_assert_ptr_nonnull(many);
  for (size_t i = 0; i <= WIRE_MAX_INPUTS; i++)
    many[i] = &d;
  struct wire_shape s;
  char err[ARENA_ERR_LEN] = "";
  ck_assert_int_eq(wire_shape_from_msg(many, WIRE_MAX_INPUTS + 1, &s, err),
                   ARENA_EINVAL);
  ck_assert_ptr_nonnull(strstr(err, "inputs"));
  ck_assert_int_eq(wire_shape_from_msg(many, WIRE_MAX_INPUTS, &s, err), 0);
  ck_assert_uint_eq(s.n_inputs, WIRE_MAX_INPUTS);
  wire_shape_cleanup(&s);
  /* A NULL entry (impossible from the decoder, possible from a caller). */
  many[3] = NULL;
  ck_assert_int_eq(wire_shape_from_msg(many, 4, &s, NULL), ARENA_EINVAL);
  free(many);
}
END_TEST

void wire_add_validation(TCase *tc)
{
  tcase_add_loop_test(tc, validation_rejects, 0, (int)N_BAD);
  tcase_add_test(tc, validation_limits_inclusive);
  tcase_add_test(tc, validation_alias_values);
  tcase_add_test(tc, shape_too_many_inputs);
}
