/*
 * check_daemon_faults.c - arenad under injected faults, run as
 * $ARENAD_FAULTS, BUILD/tests/arenad-faults (conn.c built with
 * -DARENAD_FAULT_INJECTION;
 * the installed daemon has no such switch): a connection that cannot be
 * allocated is accepted and closed at once, and the listener keeps
 * serving the connections behind it.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_daemon.h"
#include "testutil.h"
#include "wire.h"

/* Starts arenad-faults with ARENAD_FAULT_CONN_ALLOC=n; $ARENAD is as
 * it was afterwards. */
static void start_faulty(struct harness *h, const char *n)
{
  char *keep = strdup(tu_bin("ARENAD"));
  ck_assert_ptr_nonnull(keep);
  setenv("ARENAD", tu_bin("ARENAD_FAULTS"), 1);
  setenv("ARENAD_FAULT_CONN_ALLOC", n, 1);
  ck_assert_int_eq(hn_start(h), 0);
  setenv("ARENAD", keep, 1);
  free(keep);
  unsetenv("ARENAD_FAULT_CONN_ALLOC");
}

static int count(const char *text, const char *what)
{
  int n = 0;
  for (const char *p = text; p && (p = strstr(p, what)); p++)
    n++;
  return n;
}

/* Sends a Ping on fd: 1 when it is answered, 0 when the daemon closed
 * the connection instead; fails the test when neither happens. */
static int ping_or_closed(int fd, uint64_t rid)
{
  /* the send fails once the daemon has closed the connection */
  Arenad__V1__Response *r = hn_ping(fd, rid, 5000);
  if (r) {
    ck_assert_int_eq(r->status, ARENAD__V1__STATUS__OK);
    ck_assert_uint_eq(r->request_id, rid);
    wire_free_response(r);
    return 1;
  }
  ck_assert_msg(hn_wait_closed(fd, 100),
                "connection neither served nor closed: the listener stalled");
  return 0;
}

START_TEST(accept_out_of_memory_keeps_the_listener)
{
  struct harness h;
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  /* hn_start's own probe connection takes the first failure; a
   * connection that waited for the spare handle allocates again */
  start_faulty(&h, "4");
  enum { N = 4 };
  int fds[N], closed = 0;
  for (int i = 0; i < N; i++) { /* at once: they queue in the backlog */
    fds[i] = hn_connect(&h);
    ck_assert_int_ge(fds[i], 0);
  }
  for (int i = 0; i < N; i++) {
    closed += !ping_or_closed(fds[i], 10 + (uint64_t)i);
    close(fds[i]);
  }
  ck_assert_int_ge(closed, 1);
  /* the failures are used up: a new connection is served */
  int fd = hn_connect(&h);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(ping_or_closed(fd, 3), 1);
  close(fd);
  ck_assert_int_eq(hn_stop(&h), 0);
  size_t len;
  char *log = tu_read_file(h.log, &len);
  ck_assert_ptr_nonnull(log);
  ck_assert_int_eq(
      count(log, "out of memory for a new connection: closed it at once"),
      1 + closed);
  free(log);
  hn_cleanup(&h);
}
END_TEST

void cd_add_faults_tests(TCase *tc)
{
  tcase_add_test(tc, accept_out_of_memory_keeps_the_listener);
}
