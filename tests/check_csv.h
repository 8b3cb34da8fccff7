/*
 * check_csv.h - what the parts of the csv suite share: the functions
 * each part exports to add its test cases (check_csv_<part>.c).
 */
#ifndef ARENA_CHECK_CSV_H
#define ARENA_CHECK_CSV_H

#include <check.h>

/* Adds the test case "stream" (check_csv_stream.c). */
void csv_add_stream_tests(Suite *s);

#endif /* ARENA_CHECK_CSV_H */
