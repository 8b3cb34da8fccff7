/*
 * uses.c - carries the use counts of hits served from the in-memory cache
 * to the database, in batches, so that plan hit counts (`List` by
 * MOST_USED, `arenactl ls --order used`) and the database's LRU order
 * include them.
 *
 * DESIGN
 *  A hit on the loop thread only bumps a counter on its hot-cache entry
 *  (hotcache.h). The loop "collects" the counters into a batch, stamped
 *  with the wall-clock time, and pushes it on a queue: every second (the
 *  uses timer), and before it queues any job that uses the database. The
 *  queue is the only state shared with workers; uses_lock guards it and
 *  is held just long enough to push or to take the whole list, never
 *  across sqlite, so the loop never waits on the disk.
 *
 *  A worker "writes" the queue first thing whenever it takes st_lock:
 *  every queued batch goes to storage_add_uses() in one transaction,
 *  oldest first. Since a job's batch is queued before the job, every
 *  get, put (with the LRU eviction in it), list and evict sees every hit
 *  counted before it was asked for. When no job comes along, the timer
 *  queues a small flush job of its own (at most one at a time). At
 *  shutdown, once the loop has run dry and no worker is left, the rest
 *  is collected and written on the main thread before the database
 *  closes, so a graceful restart keeps every count.
 *
 *  A batch that cannot be written (disk full, lock timeout) is dropped
 *  and the failure is reported like any other storage failure: counts
 *  are advisory, and keeping them would grow without bound while the
 *  disk stays full.
 */
#include <stdlib.h>
#include <time.h>

#include "keycodec.h"
#include "server_int.h"

#define USES_FLUSH_MS 1000 /* collect and write at least this often */

/* Counts taken from the hot cache at one moment. */
struct use_batch {
  struct use_batch *next; /* queue link, newest first */
  int64_t when_ms;        /* Unix ms of the collection */
  struct hot_use *u;      /* n uses, owned */
  size_t n;
};

static int64_t unix_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void batch_free(struct use_batch *b)
{
  while (b) {
    struct use_batch *next = b->next;
    hot_uses_free(b->u, b->n);
    free(b);
    b = next;
  }
}

/* Takes the whole queue, oldest batch first. */
static struct use_batch *take_queue(struct server *s)
{
  uv_mutex_lock(&s->uses_lock);
  struct use_batch *b = s->uses;
  s->uses = NULL;
  uv_mutex_unlock(&s->uses_lock);
  struct use_batch *fifo = NULL;
  while (b) {
    struct use_batch *next = b->next;
    b->next = fifo;
    fifo = b;
    b = next;
  }
  return fifo;
}

int uses_collect(struct server *s)
{
  if (!hotcache_has_uses(s->hot))
    return 0;
  struct use_batch *b = calloc(1, sizeof *b);
  if (!b)
    return 0; /* the counts stay in the cache for the next try */
  if (hotcache_take_uses(s->hot, &b->u, &b->n) != 0) {
    free(b);
    return 0;
  }
  b->when_ms = unix_ms();
  uv_mutex_lock(&s->uses_lock);
  b->next = s->uses;
  s->uses = b;
  uv_mutex_unlock(&s->uses_lock);
  return 1;
}

/* The storage_use of one counted key; 0, or -1 when it does not decode
 * (then it is left out). */
static int decode_use(const struct hot_use *h, int64_t when_ms,
                      struct keycodec_key *k, struct storage_use *u)
{
  if (keycodec_decode(h->key, h->key_len, k) != 0)
    return -1;
  u->key = (struct storage_key){k->hash, k->hash_len, k->ranks, k->n_inputs,
                                k->dims};
  u->graph_digest = k->graph_digest;
  u->options_digest = k->options_digest;
  u->count = h->count;
  u->last_used_ms = when_ms;
  return 0;
}

/* Writes batches b (oldest first) in one transaction. */
static void write_batches(struct server *s, const struct use_batch *b)
{
  size_t total = 0, n = 0;
  for (const struct use_batch *x = b; x; x = x->next)
    total += x->n;
  struct storage_use *u = calloc(total ? total : 1, sizeof *u);
  struct keycodec_key *k = calloc(total ? total : 1, sizeof *k);
  if (!u || !k) {
    dlog(&s->log, DLOG_WARNING, "out of memory: %zu plan uses not written",
         total);
  } else {
    for (const struct use_batch *x = b; x; x = x->next)
      for (size_t i = 0; i < x->n; i++)
        if (decode_use(&x->u[i], x->when_ms, &k[n], &u[n]) == 0)
          n++;
    int rc = storage_add_uses(s->st, u, n, NULL);
    if (rc)
      dbhealth_failed(s, "write plan uses", rc);
  }
  for (size_t i = 0; k && i < n; i++)
    keycodec_cleanup(&k[i]);
  free(u);
  free(k);
}

void uses_write(struct server *s)
{
  struct use_batch *b = take_queue(s);
  if (b && s->st)
    write_batches(s, b);
  batch_free(b);
}

static void work_flush(uv_work_t *w)
{
  struct server *s = w->data;
  uv_mutex_lock(&s->st_lock);
  uses_write(s);
  uv_mutex_unlock(&s->st_lock);
}

static void after_flush(uv_work_t *w, int status)
{
  struct server *s = w->data;
  (void)status; /* a cancelled flush leaves its batches for the next one */
  s->uses_flushing = 0;
}

static void on_uses_timer(uv_timer_t *t)
{
  struct server *s = t->data;
  uses_collect(s);
  uv_mutex_lock(&s->uses_lock);
  int pending = s->uses != NULL;
  uv_mutex_unlock(&s->uses_lock);
  if (!pending || s->uses_flushing)
    return;
  s->uses_work.data = s;
  if (uv_queue_work(&s->loop, &s->uses_work, work_flush, after_flush) == 0)
    s->uses_flushing = 1;
}

int uses_init(struct server *s)
{
  s->uses = NULL;
  s->uses_flushing = 0;
  return uv_mutex_init(&s->uses_lock);
}

void uses_start(struct server *s)
{
  uv_timer_init(&s->loop, &s->uses_timer);
  s->uses_timer.data = s;
  uv_timer_start(&s->uses_timer, on_uses_timer, USES_FLUSH_MS,
                 USES_FLUSH_MS);
}

static void close_noop(uv_handle_t *h)
{
  (void)h;
}

void uses_stop(struct server *s)
{
  uv_timer_stop(&s->uses_timer);
  uv_close((uv_handle_t *)&s->uses_timer, close_noop);
}

void uses_cleanup(struct server *s)
{
  uses_collect(s);
  uv_mutex_lock(&s->st_lock);
  uses_write(s);
  uv_mutex_unlock(&s->st_lock);
  uv_mutex_destroy(&s->uses_lock);
}
