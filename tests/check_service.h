/*
 * check_service.h - what the files of the service suite
 * (tests/check_service*.c) share: the functions that add the cases of
 * the other files.
 */
#ifndef ARENA_CHECK_SERVICE_H
#define ARENA_CHECK_SERVICE_H

#include <check.h>

/* check_service_unusable.c: a poisoned stored plan through the real
 * daemon and the library. */
void service_add_unusable(TCase *tc);

/* check_service_place.c: placement records, attach and fetch by key. */
void service_add_place(TCase *tc);

#endif /* ARENA_CHECK_SERVICE_H */
