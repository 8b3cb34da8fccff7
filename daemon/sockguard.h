/*
 * sockguard.h - who may serve a socket path. The daemon that serves PATH
 * holds an exclusive flock(2) on the file PATH.lock beside it, from
 * before it binds until it stops accepting; a daemon that wants PATH
 * takes that lock first. The lock goes with the process that holds it,
 * however it ends, so a dead daemon never blocks a new one; and a holder
 * is never displaced, whether it answers or not.
 *
 * A connect() that succeeds proves nothing: a process that was sent
 * SIGKILL keeps its listening socket open until it has finished dying
 * (a worker in the middle of an fsync can hold it there for seconds),
 * and the kernel queues connections that nobody will ever accept. So
 * where a listener has to be told apart, the guard sends it a real Ping:
 * any reply (Pong, BUSY, DENIED) is a live daemon.
 *
 * The lock file is created with mode 0600 (only the daemon's user can
 * open it, so no other user can hold it) and is never removed: removing
 * it would let two daemons lock two different files of the same name.
 *
 * A helper below the layered files of daemon/ (report.h): it calls only
 * log.c and proto/. It blocks for up to the wait it is given, so it runs
 * at start, before the event loop.
 */
#ifndef ARENA_DAEMON_SOCKGUARD_H
#define ARENA_DAEMON_SOCKGUARD_H

#include <stdint.h>

#include "arena_error.h"
#include "config.h"
#include "log.h"

#define SOCKGUARD_SUFFIX ".lock"

struct sockguard {
  int fd;                                    /* the lock file, locked;
                                                -1 when none is held */
  char path[DAEMON_PATH_MAX + sizeof SOCKGUARD_SUFFIX]; /* PATH.lock */
};

/* Sets g to hold nothing. */
void sockguard_init(struct sockguard *g);

/* Claims socket_path (borrowed) for bind(): takes the lock beside it,
 * then makes sure the path is free. Waits up to wait_ms, polling every
 * few milliseconds, for a holder of the lock that does not answer a Ping
 * to let go (a daemon that is dying), and, once the lock is ours, for a
 * socket that still accepts connections but answers nothing to close
 * (the same daemon, a moment later). A stale socket file, one that
 * nothing listens on, is removed (logged on log, borrowed). When the
 * lock file cannot be opened (left by a daemon that ran as another
 * user, say), it logs a warning and goes by the socket alone, as if
 * the lock were its own.
 *
 * Returns 0 when g holds the lock and nothing is at socket_path; then
 * the caller binds it, and calls sockguard_release when it stops
 * serving. Otherwise g holds nothing and err (may be NULL) says why:
 * ARENA_EBUSY when a daemon answers on the path, or when the lock or the
 * listener was still there after wait_ms (never displaced);
 * ARENA_EINVAL when the path exists and is not a socket (never touched);
 * ARENA_EIO when flock(2) fails for another reason than a holder, or the
 * path cannot be looked at or a stale socket removed. */
int sockguard_claim(struct sockguard *g, const char *socket_path,
                    uint64_t wait_ms, const struct dlog *log,
                    char err[ARENA_ERR_LEN]);

/* For a socket that systemd passed: takes the lock beside socket_path
 * (borrowed) without waiting, so that a daemon started by hand on the
 * same path sees that it is served. Returns 0, ARENA_EBUSY (another
 * process holds it) or ARENA_EIO, with err (may be NULL) explaining; on
 * failure g holds nothing, and the caller serves systemd's socket all
 * the same. */
int sockguard_try(struct sockguard *g, const char *socket_path,
                  char err[ARENA_ERR_LEN]);

/* Releases the lock, if g holds one (the file stays). */
void sockguard_release(struct sockguard *g);

#endif
