/*
 * check_wire.h - declarations shared by the parts of the wire suite
 * (tests/check_wire.c and tests/check_wire_*.c): the small Plan message
 * that the codec and validation cases start from (wt_*, defined in
 * check_wire_codec.c), and the functions that add the tests of
 * check_wire_codec.c, check_wire_kinds.c, check_wire_validation.c and
 * check_wire_bundle.c to their TCases (wire_add_*).
 */
#ifndef ARENA_CHECK_WIRE_H
#define ARENA_CHECK_WIRE_H

#include <check.h>

#include "arenad.pb-c.h"

/* Number of tensors in the small valid graph of wt_small_plan_msg(). */
#define WT_SMALL_N 4

/* Builds a Plan message for the small graph; free with
 * wire_plan_msg_cleanup. */
void wt_small_plan_msg(Arenad__V1__Plan *m, Arenad__V1__PlanOptions *mo);
/* Packs a Request carrying m, unpacks it again and returns it (owned). */
Arenad__V1__Request *wt_round_trip_plan(Arenad__V1__Plan *m);

/* The "codec" TCase: packing, Plan messages and the decoder's limits
 * first (check_wire_codec.c), then every other message kind
 * (check_wire_kinds.c). */
void wire_add_codec(TCase *tc);
void wire_add_kinds(TCase *tc);
/* The "validation" TCase (check_wire_validation.c). */
void wire_add_validation(TCase *tc);
/* The "bundle" TCase (check_wire_bundle.c): what every reader of a plan
 * bundle does the same way. */
void wire_add_bundle(TCase *tc);

#endif
