/*
 * check_models.h - what the parts of the model-subcommand suite share:
 * running arenactl in a fresh temporary directory per test, and the
 * checks of its output (defined in check_models.c; the parts are
 * check_models_<part>.c).
 */
#ifndef ARENA_CHECK_MODELS_H
#define ARENA_CHECK_MODELS_H

#include <check.h>
#include <stddef.h>

/* What one run of arenactl produced. */
struct run {
  int status; /* exit status, or 128 + signal number */
  char *out;  /* stdout, owned */
  size_t out_len; /* bytes in out */
  char *err;  /* stderr, owned */
};

/* The fixture: cm_setup() finds arenactl and the test data and makes a
 * fresh temporary directory, cm_teardown() removes it. cm_tmpdir() is
 * that directory (borrowed, valid until cm_teardown()). */
void cm_setup(void);
void cm_teardown(void);
const char *cm_tmpdir(void);

/* Runs arenactl with the NULL-terminated args inside cm_tmpdir() into *r;
 * cm_run_free() frees what it holds. */
void cm_run_cli(struct run *r, const char *const *args);
void cm_run_free(struct run *r);
#define RUN(r, ...) cm_run_cli((r), (const char *const[]){__VA_ARGS__, NULL})

/* Asserts that needle occurs in hay. */
void cm_assert_contains(const char *hay, const char *needle);

/* Minimal XML well-formedness of s: tags balance and nest. */
void cm_assert_well_formed(const char *s);

/* How many times needle occurs in s. */
size_t cm_count(const char *s, const char *needle);

/* Adds the test case "layout" (check_models_layout.c). */
void cm_add_layout_tests(Suite *s);
/* Adds the test case "input" (check_models_input.c). */
void cm_add_input_tests(Suite *s);

#endif /* ARENA_CHECK_MODELS_H */
