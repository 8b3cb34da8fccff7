/*
 * dbhealth.c - the cache database's health as Stats and STATUS= report
 * it: workers (and the main thread at shutdown) record each storage
 * failure and each successful write here; the loop reads the result
 * under status_lock (server.c).
 *
 * This is the lowest layer of daemon/: the plan jobs (jobs.c), the
 * storage jobs (jobs_storage.c) and the use-count writer (uses.c) all
 * report to it, and it calls no other file of daemon/.
 */
#include <stdio.h>
#include <string.h>

#include "server_int.h"

void dbhealth_failed(struct server *s, const char *what, int rc)
{
  char msg[ARENA_ERR_LEN];
  snprintf(msg, sizeof msg, "%s: %s (%s)", what, storage_errmsg(s->st),
           arena_strerror(rc));
  uv_mutex_lock(&s->status_lock);
  int was_ok = s->storage_ok;
  s->storage_ok = 0;
  memcpy(s->storage_err, msg, sizeof msg);
  uv_mutex_unlock(&s->status_lock);
  /* Log the change, not every failure: a full disk fails every write. */
  if (was_ok)
    dlog(&s->log, DLOG_ERR,
         "cache database failing, serving from memory and planning: %s",
         msg);
}

void dbhealth_ok(struct server *s)
{
  uv_mutex_lock(&s->status_lock);
  int was_ok = s->storage_ok;
  s->storage_ok = 1;
  uv_mutex_unlock(&s->status_lock);
  if (!was_ok)
    dlog(&s->log, DLOG_NOTICE, "cache database writable again");
}
