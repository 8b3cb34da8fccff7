/*
 * cli_render_text.h - text measures and formats for `arenactl render`
 * (cli_render_text.c). Pure functions; output buffers are the caller's.
 */
#ifndef ARENA_CLI_RENDER_TEXT_H
#define ARENA_CLI_RENDER_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* Human-readable bytes into out (cap bytes): "1.31 MiB", "512 B". */
void render_fmt_bytes(char *out, size_t cap, uint64_t v);

/* A step from 1, 2, 5 x 10^k, at least min. */
uint64_t render_nice_step(double min);

/* The width of s in px at font size px, estimated from above (DejaVu
 * Sans, the widest common sans-serif; bold 12 % wider). */
double render_text_w(const char *s, double px, int bold);

/* Copies in into out (cap bytes), cutting its middle to "..." when it is
 * wider than max_w px at px. */
void render_fit_text(char *out, size_t cap, const char *in, double px,
                     int bold, double max_w);

#endif
