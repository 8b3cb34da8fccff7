/*
 * config.c - defaults, ini loading and printing (see config.h).
 *
 * DESIGN: one table lists every key with its section, type and field
 * offset, so loading, command-line overrides and --check-config printing
 * cannot disagree about what exists.
 */
#include "config.h"

#include <errno.h>
#include <ini.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "planner.h"

enum kind { K_STR, K_UINT, K_U64, K_U32, K_UIDS, K_GIDS };

struct key {
  const char *section;
  const char *name;
  enum kind kind;
  size_t off;
  uint64_t min, max; /* for numbers */
};

#define F(field) offsetof(struct daemon_config, field)
static const struct key keys[] = {
    {"daemon", "socket", K_STR, F(socket_path), 0, 0},
    {"daemon", "database", K_STR, F(db_path), 0, 0},
    {"daemon", "log_level", K_STR, F(log_level), 0, 0},
    {"daemon", "workers", K_UINT, F(workers), 1, 128},
    {"limits", "max_connections", K_UINT, F(max_connections), 1, 1000000},
    {"limits", "max_connections_per_uid", K_UINT,
     F(max_connections_per_uid), 1, 1000000},
    {"limits", "max_inflight_per_conn", K_UINT, F(max_inflight_per_conn), 1,
     100000},
    {"limits", "max_queued_jobs", K_UINT, F(max_queued_jobs), 1, 1000000},
    {"limits", "max_frame_bytes", K_U64, F(max_frame_bytes), 64, 1ull << 30},
    {"limits", "request_mem_bytes", K_U64, F(request_mem_bytes), 4096,
     1ull << 34},
    {"limits", "max_tensors", K_U64, F(max_tensors), 1, 16000000},
    {"limits", "write_queue_bytes", K_U64, F(write_queue_bytes), 4096,
     1ull << 32},
    {"limits", "idle_timeout_ms", K_U64, F(idle_timeout_ms), 10,
     86400000ull},
    {"limits", "handshake_timeout_ms", K_U64, F(handshake_timeout_ms), 10,
     86400000ull},
    {"limits", "drain_timeout_ms", K_U64, F(drain_timeout_ms), 0,
     3600000ull},
    {"planner", "default_effort", K_U32, F(default_effort), 0,
     DAEMON_EFFORT_MAX},
    {"planner", "max_effort", K_U32, F(max_effort), 1, DAEMON_EFFORT_MAX},
    {"cache", "memory_bytes", K_U64, F(memory_cache_bytes), 0, 1ull << 40},
    {"cache", "memory_entries", K_U64, F(memory_cache_entries), 0,
     100000000ull},
    {"cache", "db_max_bytes", K_U64, F(db_max_bytes), 0, 1ull << 50},
    {"cache", "db_max_entries", K_U64, F(db_max_entries), 0, 1ull << 40},
    {"access", "allow_uids", K_UIDS, F(allow_uids), 0, 0},
    {"access", "allow_gids", K_GIDS, F(allow_gids), 0, 0},
};
#undef F

/* Deprecated names that still set a key, with the same value. The effort
 * was once a time budget in ms, with the same numbers. */
static const struct alias {
  const char *section, *name; /* the old name */
  const char *full, *use;     /* "section.old", "section.new" for the log */
  const char *key;            /* the new key, in the same section */
} aliases[] = {
    {"planner", "default_budget_ms", "planner.default_budget_ms",
     "planner.default_effort", "default_effort"},
};

void daemon_config_defaults(struct daemon_config *c)
{
  memset(c, 0, sizeof *c);
  snprintf(c->socket_path, sizeof c->socket_path, "%s", DAEMON_DEFAULT_SOCKET);
  snprintf(c->db_path, sizeof c->db_path, "%s", DAEMON_DEFAULT_DB);
  snprintf(c->log_level, sizeof c->log_level, "info");
  c->workers = 2;
  c->max_connections = 256;
  c->max_connections_per_uid = 128;
  c->max_inflight_per_conn = 32;
  c->max_queued_jobs = 256;
  c->max_frame_bytes = 16u << 20;
  c->request_mem_bytes = 256ull << 20;
  c->max_tensors = 2097152;
  c->write_queue_bytes = 4u << 20;
  c->idle_timeout_ms = 60000;
  c->handshake_timeout_ms = 5000;
  c->drain_timeout_ms = 10000;
  c->default_effort = PLANNER_DEFAULT_EFFORT;
  c->max_effort = 10 * PLANNER_DEFAULT_EFFORT;
  c->memory_cache_bytes = 64ull << 20;
  c->memory_cache_entries = 4096;
  c->db_max_bytes = 512ull << 20;
  c->db_max_entries = 100000;
}

static int parse_u64(const char *v, uint64_t min, uint64_t max,
                     uint64_t *out)
{
  if (!*v || *v == '-' || *v == '+')
    return -1;
  char *end;
  errno = 0;
  unsigned long long x = strtoull(v, &end, 10);
  /* allow k/M/G suffixes for byte counts */
  uint64_t mul = 1;
  if (*end == 'k' || *end == 'K')
    mul = 1024, end++;
  else if (*end == 'M')
    mul = 1024 * 1024, end++;
  else if (*end == 'G')
    mul = 1024ull * 1024 * 1024, end++;
  if (errno || *end || x > UINT64_MAX / mul)
    return -1;
  x *= mul;
  if (x < min || x > max)
    return -1;
  *out = x;
  return 0;
}

/* Parses "1000, 1001" into ids. */
static int parse_ids(const char *v, unsigned *ids, unsigned *n)
{
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", v);
  *n = 0;
  for (char *save = NULL, *tok = strtok_r(buf, ", \t", &save); tok;
       tok = strtok_r(NULL, ", \t", &save)) {
    uint64_t x;
    if (*n >= DAEMON_MAX_ALLOW || parse_u64(tok, 0, UINT32_MAX - 1, &x))
      return -1;
    ids[(*n)++] = (unsigned)x;
  }
  return 0;
}

static int named(const char *sec, const char *name, const char *section,
                 const char *key)
{
  return strcmp(name, key) == 0 &&
         (!section || !*section || strcmp(sec, section) == 0);
}

/* Finds a key by its name or a deprecated one (*alias is then set). */
static const struct key *find_key(const char *section, const char *name,
                                  const struct alias **alias)
{
  *alias = NULL;
  for (size_t i = 0; i < sizeof aliases / sizeof *aliases; i++)
    if (named(aliases[i].section, aliases[i].name, section, name)) {
      *alias = &aliases[i];
      section = aliases[i].section;
      name = aliases[i].key;
      break;
    }
  for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
    if (named(keys[i].section, keys[i].name, section, name))
      return &keys[i];
  return NULL;
}

static int set_value(struct daemon_config *c, const struct key *k,
                     const char *v)
{
  char *base = (char *)c + k->off;
  uint64_t x;
  switch (k->kind) {
  case K_STR: {
    size_t cap = k->off == offsetof(struct daemon_config, log_level)
                     ? sizeof c->log_level
                     : DAEMON_PATH_MAX;
    if (strlen(v) >= cap)
      return -1;
    memcpy(base, v, strlen(v) + 1);
    return 0;
  }
  case K_UINT:
    if (parse_u64(v, k->min, k->max, &x))
      return -1;
    *(unsigned *)(void *)base = (unsigned)x;
    return 0;
  case K_U32:
    if (parse_u64(v, k->min, k->max, &x))
      return -1;
    *(uint32_t *)(void *)base = (uint32_t)x;
    return 0;
  case K_U64:
    if (parse_u64(v, k->min, k->max, &x))
      return -1;
    *(uint64_t *)(void *)base = x;
    return 0;
  case K_UIDS: {
    unsigned ids[DAEMON_MAX_ALLOW], n;
    if (parse_ids(v, ids, &n))
      return -1;
    for (unsigned i = 0; i < n; i++)
      c->allow_uids[i] = (uid_t)ids[i];
    c->n_allow_uids = n;
    return 0;
  }
  case K_GIDS: {
    unsigned ids[DAEMON_MAX_ALLOW], n;
    if (parse_ids(v, ids, &n))
      return -1;
    for (unsigned i = 0; i < n; i++)
      c->allow_gids[i] = (gid_t)ids[i];
    c->n_allow_gids = n;
    return 0;
  }
  }
  return -1;
}

int daemon_config_set(struct daemon_config *c, const char *section,
                      const char *key, const char *value,
                      char err[ARENA_ERR_LEN])
{
  const struct alias *al;
  const struct key *k = find_key(section, key, &al);
  if (!k) {
    if (err)
      snprintf(err, ARENA_ERR_LEN, "unknown key '%s%s%s'",
               section && *section ? section : "",
               section && *section ? "." : "", key);
    return ARENA_EPARSE;
  }
  if (set_value(c, k, value)) {
    if (err) {
      if (k->kind == K_STR)
        snprintf(err, ARENA_ERR_LEN, "%s.%s: value too long", k->section,
                 k->name);
      else if (k->kind == K_UIDS || k->kind == K_GIDS)
        snprintf(err, ARENA_ERR_LEN,
                 "%s.%s: expected up to %d numeric ids separated by commas",
                 k->section, k->name, DAEMON_MAX_ALLOW);
      else
        snprintf(err, ARENA_ERR_LEN,
                 "%s.%s: '%s' is not a whole number from %" PRIu64
                 " to %" PRIu64,
                 k->section, k->name, value, k->min, k->max);
    }
    return ARENA_EPARSE;
  }
  if (al) {
    c->deprecated_key = al->full;
    c->replaced_by = al->use;
  }
  return 0;
}

struct load_ctx {
  struct daemon_config *c;
  char *err;
  int failed;
};

static int on_ini(void *user, const char *section, const char *name,
                  const char *value)
{
  struct load_ctx *lc = user;
  if (lc->failed)
    return 0;
  if (daemon_config_set(lc->c, section, name, value, lc->err)) {
    lc->failed = 1;
    return 0;
  }
  return 1;
}

int daemon_config_load(struct daemon_config *c, const char *path,
                       char err[ARENA_ERR_LEN])
{
  char why[ARENA_ERR_LEN] = "";
  struct load_ctx lc = {c, why, 0};
  FILE *f = fopen(path, "r");
  if (!f) {
    if (err)
      snprintf(err, ARENA_ERR_LEN, "%s: %s", path, strerror(errno));
    return errno == ENOENT ? ARENA_ENOENT : ARENA_EIO;
  }
  int line = ini_parse_file(f, on_ini, &lc);
  fclose(f);
  if (line != 0) {
    if (err)
      snprintf(err, ARENA_ERR_LEN, "%s:%d: %s", path, line,
               lc.failed ? why : "syntax error");
    return ARENA_EPARSE;
  }
  return 0;
}

int daemon_config_validate(const struct daemon_config *c,
                           char err[ARENA_ERR_LEN])
{
  enum dlog_level lvl;
  const char *why = NULL;
  if (!c->socket_path[0])
    why = "daemon.socket is empty";
  else if (!c->db_path[0])
    why = "daemon.database is empty";
  else if (dlog_parse_level(c->log_level, &lvl))
    why = "daemon.log_level must be error, warning, notice, info or debug";
  else if (strlen(c->socket_path) >= 108)
    why = "daemon.socket is longer than a Unix socket path may be (107)";
  else if ((c->default_effort ? c->default_effort : PLANNER_DEFAULT_EFFORT) >
           c->max_effort)
    why = "planner.default_effort is above planner.max_effort";
  if (why && err)
    snprintf(err, ARENA_ERR_LEN, "%s", why);
  return why ? ARENA_EINVAL : 0;
}

int daemon_config_deprecation(const struct daemon_config *c, char *buf,
                              size_t len)
{
  if (!c->deprecated_key)
    return 0;
  snprintf(buf, len, "%s is deprecated; use %s (the same number, in effort "
                     "units)", c->deprecated_key, c->replaced_by);
  return 1;
}

static void print_ids(FILE *f, const char *name, const unsigned *ids,
                      unsigned n)
{
  fprintf(f, "%s =", name);
  for (unsigned i = 0; i < n; i++)
    fprintf(f, "%s%u", i ? ", " : " ", ids[i]);
  fputc('\n', f);
}

void daemon_config_print(const struct daemon_config *c, FILE *f)
{
  const char *section = "";
  for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
    const struct key *k = &keys[i];
    const char *base = (const char *)c + k->off;
    if (strcmp(section, k->section) != 0) {
      fprintf(f, "%s[%s]\n", i ? "\n" : "", k->section);
      section = k->section;
    }
    switch (k->kind) {
    case K_STR:
      fprintf(f, "%s = %s\n", k->name, base);
      break;
    case K_UINT:
      fprintf(f, "%s = %u\n", k->name, *(const unsigned *)(const void *)base);
      break;
    case K_U32:
      fprintf(f, "%s = %" PRIu32 "\n", k->name,
              *(const uint32_t *)(const void *)base);
      break;
    case K_U64:
      fprintf(f, "%s = %" PRIu64 "\n", k->name,
              *(const uint64_t *)(const void *)base);
      break;
    case K_UIDS: {
      unsigned ids[DAEMON_MAX_ALLOW];
      for (unsigned j = 0; j < c->n_allow_uids; j++)
        ids[j] = (unsigned)c->allow_uids[j];
      print_ids(f, k->name, ids, c->n_allow_uids);
      break;
    }
    case K_GIDS: {
      unsigned ids[DAEMON_MAX_ALLOW];
      for (unsigned j = 0; j < c->n_allow_gids; j++)
        ids[j] = (unsigned)c->allow_gids[j];
      print_ids(f, k->name, ids, c->n_allow_gids);
      break;
    }
    }
  }
}
