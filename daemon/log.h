/*
 * log.h - the daemon's logger: one line per event on stderr, prefixed
 * with an sd-daemon priority ("<3>" error ... "<7>" debug) so that journald
 * files each line at the right level. Without journald the prefixes are
 * still readable.
 *
 * A logger is a small value owned by the server context; there is no
 * global logger. Lines are written with one fprintf each, which POSIX
 * stdio makes atomic per call, so worker threads may log too.
 */
#ifndef ARENA_DAEMON_LOG_H
#define ARENA_DAEMON_LOG_H

#include <stdarg.h>
#include <stdatomic.h>

enum dlog_level {
  DLOG_ERR = 3,
  DLOG_WARNING = 4,
  DLOG_NOTICE = 5,
  DLOG_INFO = 6,
  DLOG_DEBUG = 7,
};

struct dlog {
  atomic_int level; /* lines above this level are dropped; SIGHUP changes
                       it on the loop thread while workers log, hence
                       atomic (relaxed: no other data depends on it) */
};

/* Sets the level (any thread). */
void dlog_set_level(struct dlog *l, enum dlog_level level);
/* Whether a line at this level would be written. */
int dlog_enabled(const struct dlog *l, enum dlog_level level);

/* Parses "error", "warning", "notice", "info" or "debug". Returns 0 and
 * sets *out, or -1. */
int dlog_parse_level(const char *s, enum dlog_level *out);
const char *dlog_level_name(enum dlog_level l);

void dlog(const struct dlog *l, enum dlog_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* one when n is 1, else many: "1 job", "2 jobs", for any message that
 * counts (static strings, returned as given). */
static inline const char *dlog_noun(unsigned long long n, const char *one,
                                    const char *many)
{
  return n == 1 ? one : many;
}

#endif
