/*
 * check_planner.h - what the parts of the planner suite share: the
 * random graphs of the property tests and the functions each part
 * exports to add its test cases (defined in check_planner_<part>.c).
 */
#ifndef ARENA_CHECK_PLANNER_H
#define ARENA_CHECK_PLANNER_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include "planner.h"

/* Shapes of cp_random_graph(). */
enum cp_shape {
  CP_SHAPE_CHAIN,  /* short lifetimes along a chain of operators */
  CP_SHAPE_FANOUT, /* everything starts early, lifetimes of any length */
  CP_SHAPE_MIXED,  /* short lifetimes, some from 0 and some to the end */
  CP_SHAPE__N
};

/* Fills t with 1..cap tensors of the given shape from the PRNG state rs:
 * some empty, some tiny, some with their own alignment, ids unique, none
 * pinned. Returns how many. */
size_t cp_random_graph(uint64_t *rs, enum cp_shape sh,
                       struct planner_tensor *t, size_t cap);

/* Adds the test case "validation" (check_planner_validation.c). */
void cp_add_validation_tests(Suite *s);

/* Adds the test case "oracle" (check_planner_oracle.c). */
void cp_add_oracle_tests(Suite *s);

/* Adds the test case "best" (check_planner_best.c). */
void cp_add_best_tests(Suite *s);

/* Adds the test case "unions" (check_planner_unions.c). */
void cp_add_union_tests(Suite *s);

/* Adds the test case "threads" (check_planner_threads.c). */
void cp_add_thread_tests(Suite *s);

/* Adds the test case "share" (check_planner_share.c). */
void cp_add_share_tests(Suite *s);

/* Adds the test case "sort" (check_planner_sort.c). */
void cp_add_sort_tests(Suite *s);

/* Adds the test case "report" (check_planner_report.c). */
void cp_add_report_tests(Suite *s);

#endif
