/*
 * check_daemon_unread.c - replies a peer does not read (daemon/conn.c,
 * UNREAD REPLIES): the bytes of replies waiting for one connection, and
 * for one uid, are bounded (a reply past a bound is answered BUSY, and
 * a stalled connection of the uid is closed first to make room for a
 * reply of another); a connection whose writes make no progress for
 * idle_timeout_ms is closed; Stats counts both. (128 connections of one
 * uid, with the daemon's memory measured: check_reliability's unread
 * test.)
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "check_daemon.h"
#include "testutil.h"
#include "wire.h"

/* Bytes of each Ping's payload: several times what a Unix socket takes
 * at once, so that its Pong waits in the daemon. */
#define BIG (1u << 20)

static void sleep_ms(int ms)
{
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Sends a Ping of BIG bytes with request id rid on fd. */
static void send_big_ping(int fd, uint64_t rid)
{
  static uint8_t payload[BIG];
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  Arenad__V1__Ping ping = ARENAD__V1__PING__INIT;
  ping.payload.data = payload;
  ping.payload.len = sizeof payload;
  req.protocol_version = WIRE_PROTOCOL_VERSION;
  req.request_id = rid;
  req.body_case = ARENAD__V1__REQUEST__BODY_PING;
  req.ping = &ping;
  ck_assert_int_eq(hn_send(fd, &req), 0);
}

/* Reads the reply to rid on fd: 1 for its Pong, 0 for BUSY (with
 * `about` in its message), failing the test otherwise. */
static int pong_or_busy(int fd, uint64_t rid, const char *about)
{
  Arenad__V1__Response *r = hn_recv(fd, 20000);
  ck_assert_ptr_nonnull(r);
  ck_assert_uint_eq(r->request_id, rid);
  int pong = r->status == ARENAD__V1__STATUS__OK &&
             r->body_case == ARENAD__V1__RESPONSE__BODY_PONG;
  if (!pong) {
    ck_assert_int_eq(r->status, ARENAD__V1__STATUS__BUSY);
    ck_assert_msg(strstr(r->error, about), "%s", r->error);
  }
  wire_free_response(r);
  return pong;
}

/* The daemon's counters; asserted OK. */
static void counters(const struct harness *h, uint64_t *stalled,
                     uint64_t *refused, uint64_t *open)
{
  Arenad__V1__Response *r = hn_stats(h);
  ck_assert_ptr_nonnull(r);
  ck_assert_int_eq(r->status, ARENAD__V1__STATUS__OK);
  *stalled = r->stats->stalled_closes;
  *refused = r->stats->reply_refusals;
  *open = r->stats->connections;
  wire_free_response(r);
}

/* One connection's unsent replies: the first Pong waits (whatever its
 * size), the second would take them over write_queue_max_bytes and is
 * answered BUSY; once the first is read, a third goes. */
START_TEST(test_connection_bound)
{
  struct harness h;
  ck_assert_int_eq(hn_init(&h, "[limits]\nwrite_queue_max_bytes = 1536K\n"),
                   0);
  ck_assert_int_eq(hn_start(&h), 0);
  int fd = hn_connect(&h);
  ck_assert_int_ge(fd, 0);
  send_big_ping(fd, 1);
  sleep_ms(200); /* its Pong waits in the daemon */
  send_big_ping(fd, 2);
  ck_assert_int_eq(pong_or_busy(fd, 1, ""), 1);
  ck_assert_int_eq(pong_or_busy(fd, 2, "this connection are unread"), 0);
  send_big_ping(fd, 3);
  ck_assert_int_eq(pong_or_busy(fd, 3, ""), 1);
  uint64_t stalled, refused, open;
  counters(&h, &stalled, &refused, &open);
  ck_assert_uint_eq(refused, 1);
  ck_assert_uint_eq(stalled, 0);
  close(fd);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
}
END_TEST

/* One uid's unsent replies: with A's Pong waiting, B's would take the
 * uid over write_queue_max_bytes_per_uid: BUSY while A is not yet
 * stalled; once A's writes made no progress for a second, A is closed to
 * make room and B gets its Pong. */
START_TEST(test_uid_bound_closes_stalled)
{
  struct harness h;
  ck_assert_int_eq(
      hn_init(&h, "[limits]\nwrite_queue_max_bytes_per_uid = 1536K\n"), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  int a = hn_connect(&h), b = hn_connect(&h);
  ck_assert_int_ge(a, 0);
  ck_assert_int_ge(b, 0);
  send_big_ping(a, 1);
  sleep_ms(200);
  send_big_ping(b, 2);
  ck_assert_int_eq(pong_or_busy(b, 2, "this user are unread"), 0);
  sleep_ms(1300); /* A stalled */
  send_big_ping(b, 3);
  ck_assert_int_eq(pong_or_busy(b, 3, ""), 1);
  ck_assert(hn_wait_closed(a, 5000)); /* what it had, then EOF */
  uint64_t stalled, refused, open;
  counters(&h, &stalled, &refused, &open);
  ck_assert_uint_eq(refused, 1);
  ck_assert_uint_eq(stalled, 1);
  ck_assert_int_eq(hn_log_count(&h, "its replies unread for"), 1);
  close(a);
  close(b);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
}
END_TEST

/* A connection that never reads its Pong is closed once its writes made
 * no progress for idle_timeout_ms, though a reply waits (it used to
 * count as busy for ever); one that reads slowly is not. */
START_TEST(test_unread_closed_at_idle_timeout)
{
  struct harness h;
  ck_assert_int_eq(hn_init(&h, "[limits]\nidle_timeout_ms = 400\n"), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  int fd = hn_connect(&h);
  ck_assert_int_ge(fd, 0);
  send_big_ping(fd, 1);
  uint64_t stalled = 0, refused, open = 2;
  for (int i = 0; i < 40 && open > 1; i++) {
    sleep_ms(100);
    counters(&h, &stalled, &refused, &open);
  }
  ck_assert_uint_eq(open, 1); /* the Stats connection alone */
  ck_assert_uint_eq(stalled, 1);
  ck_assert_int_eq(hn_log_count(&h, "replies unread for"), 1);
  close(fd);

  /* A reader that takes 64 KiB every 100 ms makes progress: served. */
  fd = hn_connect(&h);
  ck_assert_int_ge(fd, 0);
  send_big_ping(fd, 2);
  uint8_t *buf = malloc(BIG + 64);
  size_t got = 0;
  for (int i = 0; i < 200 && got < BIG + 16; i++) {
    ssize_t n = recv(fd, buf + got, 65536, MSG_DONTWAIT);
    if (n == 0)
      break;
    got += n > 0 ? (size_t)n : 0;
    sleep_ms(100);
  }
  ck_assert_uint_gt(got, BIG);
  free(buf);
  close(fd);
  counters(&h, &stalled, &refused, &open);
  ck_assert_uint_eq(stalled, 1);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
}
END_TEST

void cd_add_unread_tests(TCase *tc)
{
  tcase_add_test(tc, test_connection_bound);
  tcase_add_test(tc, test_uid_bound_closes_stalled);
  tcase_add_test(tc, test_unread_closed_at_idle_timeout);
}
