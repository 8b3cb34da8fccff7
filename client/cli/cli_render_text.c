/*
 * cli_render_text.c - the text measures and formats of `arenactl render`
 * (cli_render.c): byte counts for people, tick steps, and text widths
 * estimated from above so that every label fits where the layout puts it.
 * Pure functions: no I/O, no state.
 */
#include "cli_render_text.h"

#include <stdio.h>
#include <string.h>

/* Human-readable bytes: "1.31 MiB". */
void render_fmt_bytes(char *out, size_t cap, uint64_t v)
{
  static const char *const unit[] = {"KiB", "MiB", "GiB", "TiB", "PiB",
                                     "EiB"};
  int u = -1;
  double d = (double)v;
  while (u < 5 && d >= 1024.0) {
    d /= 1024.0;
    u++;
  }
  if (u < 0)
    snprintf(out, cap, "%llu B", (unsigned long long)v);
  else
    snprintf(out, cap, u == 0 ? "%.1f %s" : "%.2f %s", d, unit[u]);
}

/* A step from 1, 2, 5 x 10^k, at least min. */
uint64_t render_nice_step(double min)
{
  uint64_t s = 1;
  for (;;) {
    if ((double)s >= min)
      return s;
    if ((double)(2 * s) >= min)
      return 2 * s;
    if ((double)(5 * s) >= min)
      return 5 * s;
    if (s > UINT64_MAX / 20)
      return s;
    s *= 10;
  }
}

/* The width of text in px at font size px, estimated from above: each
 * character at least as wide as in DejaVu Sans (the widest common
 * sans-serif), bold 12 % wider. Control and non-ASCII bytes are written
 * as '?' (cli_xml_escape()). */
double render_text_w(const char *s, double px, int bold)
{
  double em = 0;
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (strchr("mwMW@%#&+<=>^~", c))
      em += 1.0;
    else if (c >= 'A' && c <= 'Z')
      em += 0.8;
    else if (strchr(" .,:;'|!()[]/\\-ijlrtf", c))
      em += 0.42;
    else
      em += 0.66;
  }
  return em * px * (bold ? 1.12 : 1.0);
}

/* Copies the text in into out (cap bytes), cutting its middle to "..."
 * when it is wider than max_w px at px. */
void render_fit_text(char *out, size_t cap, const char *in, double px,
                     int bold, double max_w)
{
  size_t n = strlen(in), keep = n;
  snprintf(out, cap, "%s", in);
  while (keep > 0 && (strlen(out) + 1 >= cap || render_text_w(out, px, bold) > max_w)) {
    keep--;
    size_t head = keep / 2, tail = keep - head;
    snprintf(out, cap, "%.*s...%s", (int)head, in, in + n - tail);
  }
}

