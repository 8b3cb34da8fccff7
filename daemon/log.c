/*
 * log.c - the daemon's stderr logger (see log.h).
 */
#include "log.h"

#include <stdio.h>
#include <string.h>

static const struct {
  const char *name;
  enum dlog_level level;
} names[] = {
    {"error", DLOG_ERR},   {"warning", DLOG_WARNING}, {"notice", DLOG_NOTICE},
    {"info", DLOG_INFO},   {"debug", DLOG_DEBUG},
};

int dlog_parse_level(const char *s, enum dlog_level *out)
{
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (strcmp(s, names[i].name) == 0) {
      *out = names[i].level;
      return 0;
    }
  return -1;
}

const char *dlog_level_name(enum dlog_level l)
{
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (names[i].level == l)
      return names[i].name;
  return "?";
}

void dlog_set_level(struct dlog *l, enum dlog_level level)
{
  atomic_store_explicit(&l->level, (int)level, memory_order_relaxed);
}

int dlog_enabled(const struct dlog *l, enum dlog_level level)
{
  return (int)level <= atomic_load_explicit(&l->level, memory_order_relaxed);
}

void dlog(const struct dlog *l, enum dlog_level level, const char *fmt, ...)
{
  if (!dlog_enabled(l, level))
    return;
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fprintf(stderr, "<%d>arenad: %s\n", (int)level, line);
}
