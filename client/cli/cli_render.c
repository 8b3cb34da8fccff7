/*
 * cli_render.c - `arenactl render`: a plan as a picture.
 *
 * Operators run along x, arena offsets go up y; every planned tensor is
 * one <rect class="t"> spanning its lifetime and its bytes, labelled with
 * its id where the label fits and always carrying a <title> tooltip. The
 * lower bound (dashed) and the arena top (solid) are drawn as lines;
 * tensors live at a peak operator are highlighted (class "t peak") and
 * the peak operators shaded. Only tensors are <rect>s (background, bands,
 * legend swatches and axes are paths and lines), so a reader can count
 * them.
 *
 * DESIGN
 *  The layout is computed before anything is written (layout()): the
 *  margins from the widths of the texts that go in them (estimated per
 *  character, generously for DejaVu Sans and Liberation Sans, the usual
 *  sans-serif fonts), the plot from the operator count. The plot gets 48
 *  px per operator up to what SVG_MAX_W leaves, and at least PLOT_MIN_W,
 *  so the picture is never wider than SVG_MAX_W px whatever the operator
 *  count: a long trace gets sub-pixel operators (tensors stay at least
 *  MIN_PX wide) and tick steps of 1, 2 or 5 x 10^k operators chosen so that
 *  the labels never touch. Every text lies inside the viewBox: the header
 *  (file name, shortened in the middle when too long, two summary lines
 *  and the legend, which wraps) sets a minimum width, the axis titles
 *  and line labels have their margins. --html wraps the SVG in a
 *  self-contained page (no scripts, no external resources) with a summary
 *  and a table of every tensor.
 *
 *  In-place pairs the plan took (planner.h, IN-PLACE SHARING) add a line
 *  to the header listing them (output<-input, cut to fit), a legend
 *  entry, and a marker (a dashed outline, a <path class="inplace">) over
 *  the operator where each output is written over its input; the output
 *  is drawn after the tensors that share nothing, so it lies on top. A
 *  picture without such pairs is drawn exactly as before.
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_model.h"
#include "cli_render_text.h"
#include "cli_share.h"
#include "cli_write.h"
#include "planner.h"

#define SVG_MAX_W 1800.0 /* px: the picture is never wider */
#define PLOT_MIN_W 640.0 /* px: the plot is never narrower */
#define OP_MAX_W 48.0    /* px per operator at most */
#define PLOT_H 560.0     /* px of the plot area */
#define PAD 16.0         /* px of empty border around everything */
#define FONT_PX 11.0     /* px of ordinary text */
#define TITLE_PX 14.0    /* px of the title (bold) */
#define ID_PX 10.0       /* px of the id labels inside tensors */
#define LINE_H 17.0      /* px between lines of header text */
#define MIN_PX 0.75      /* px: the least width or height of a tensor */

static void usage(FILE *f)
{
  fprintf(f,
          "Usage: %s render [options] FILE [-o OUT]\n"
          "\n"
          "Draws the plan of FILE (a lifetime-graph CSV, a plan, or a .tflite\n"
          "model; graphs are planned first) as SVG: operators along x,\n"
          "offsets up y, one rectangle per tensor, the lower bound and arena\n"
          "top as lines, tensors live at the peak highlighted, with axis\n"
          "titles and a legend. The picture is at most 1800 px wide, however\n"
          "many operators there are.\n"
          "\n"
          "Options:\n"
          "  -o FILE          write to FILE (default standard output)\n"
          "  --html           write a self-contained HTML page: picture,\n"
          "                   summary and a table of all tensors\n"
          "  --algo A         algorithm for graphs (default best)\n"
          "  --align N        alignment in bytes (default %u)\n"
          "  --keep-dequant   .tflite: plan DEQUANTIZE-of-constant outputs\n"
          "  --shape DIMS     .tflite: size a dynamic batch\n"
          CLI_IN_PLACE_HELP
          "  -h, --help       show this help\n"
          "\n"
          "Outputs written over their input in place are outlined (dashed)\n"
          "at that operator and listed in the header.\n"
          "\n"
          "Exit status: 0 done, 64 bad command line, 65 bad input,\n"
          "66 cannot read FILE, 74 cannot write OUT.\n",
          CLI_PROG, PLANNER_DEFAULT_ALIGNMENT);
}

/* Where things go, in px (computed by layout()). */
struct layout {
  double width, height; /* of the SVG */
  double x0, x1;        /* plot left and right */
  double y_top, y0;     /* plot top and bottom (y grows downwards) */
  double legend_y;      /* baseline of the first legend row */
  char title[160];      /* file name, shortened to fit */
  char line1[160];      /* counts, algorithm, alignment */
  char line2[200];      /* arena, lower bound, peak */
  char line3[400];      /* the in-place pairs, when there are any */
};

/* Everything the drawing needs. */
struct render {
  struct cli_graph g;       /* the input */
  struct planner_options o; /* planning options */
  struct planner_plan p;    /* the plan drawn */
  uint64_t *live;           /* live bytes per operator */
  size_t n_ops;             /* operators */
  uint64_t peak;            /* max of live */
  uint8_t *at_peak;         /* per tensor: 1 when live at a peak op */
  double opw;               /* px per operator */
  double scale;             /* px per byte */
  uint64_t top;             /* bytes at the top of the plot */
  uint64_t xstep;           /* operators between x ticks */
  uint64_t ystep;           /* bytes between y ticks */
  struct cli_pair *pairs;   /* in-place pairs the plan took, owned */
  size_t n_pairs;           /* entries in pairs */
  size_t *over;             /* per tensor: 1 + the row of the input a
                               pair's output is written over, else 0 */
  struct layout l;          /* positions */
};

static double y_of(const struct render *r, uint64_t bytes)
{
  return r->l.y0 - (double)bytes * r->scale;
}

/* The label of the arena top and lower bound lines: one label when they
 * coincide. which: 0 arena, 1 lower bound. */
static void line_label(const struct render *r, int which, char *out,
                       size_t cap)
{
  char h[32];
  uint64_t v = which ? r->p.lower_bound_bytes : r->p.arena_bytes;
  render_fmt_bytes(h, sizeof h, v);
  if (r->p.arena_bytes == r->p.lower_bound_bytes)
    snprintf(out, cap, "arena top = lower bound %llu (%s)",
             (unsigned long long)v, h);
  else
    snprintf(out, cap, "%s %llu (%s)", which ? "lower bound" : "arena top",
             (unsigned long long)v, h);
}

/* ---- legend ------------------------------------------------------------------- */

/* The legend's entries: a swatch kind and its text. */
enum swatch { SW_TENSOR, SW_PEAK, SW_PEAKOP, SW_LB, SW_ARENA, SW_INPLACE };
static const struct {
  enum swatch kind;
  const char *text;
} legend[] = {
    {SW_TENSOR, "tensor: lifetime along x, bytes up y (hover for details)"},
    {SW_PEAK, "tensor live at the peak"},
    {SW_PEAKOP, "peak operator"},
    {SW_LB, "lower bound"},
    {SW_ARENA, "arena top"},
    {SW_INPLACE, "output written over its input (in place)"},
};
#define N_LEGEND (sizeof legend / sizeof legend[0])

/* Legend entries drawn: the last one only when pairs are shown. */
static size_t legend_count(const struct render *r)
{
  return r->n_pairs ? N_LEGEND : N_LEGEND - 1;
}
#define SWATCH_W 22.0 /* px of a swatch */
#define LEGEND_GAP 20.0 /* px between entries */

/* Lays the legend out in rows of at most max_w px. Calls place(ctx, k, x,
 * row) for each entry when place is not NULL; returns the number of rows. */
static int legend_rows(double max_w, size_t n,
                       void (*place)(void *, size_t, double, int), void *ctx)
{
  double x = 0;
  int row = 0;
  for (size_t k = 0; k < n; k++) {
    double w = SWATCH_W + 6 + render_text_w(legend[k].text, FONT_PX, 0);
    if (x > 0 && x + w > max_w) {
      x = 0;
      row++;
    }
    if (place)
      place(ctx, k, x, row);
    x += w + LEGEND_GAP;
  }
  return row + 1;
}

struct legend_ctx {
  FILE *f;
  const struct render *r;
};

static void legend_entry(void *ctx, size_t k, double dx, int row)
{
  struct legend_ctx *c = ctx;
  FILE *f = c->f;
  double x = PAD + dx, y = c->r->l.legend_y + row * LINE_H;
  switch (legend[k].kind) {
  case SW_TENSOR:
  case SW_PEAK:
  case SW_PEAKOP:
    fprintf(f, "<path class=\"sw%s\" d=\"M%.2f %.2f h%.0f v10 h-%.0f Z\"/>",
            legend[k].kind == SW_TENSOR ? " swt"
            : legend[k].kind == SW_PEAK ? " swp"
                                         : " peakop",
            x, y - 9, SWATCH_W, SWATCH_W);
    break;
  case SW_LB:
  case SW_ARENA:
    fprintf(f, "<path class=\"%s\" d=\"M%.2f %.2f h%.0f\"/>",
            legend[k].kind == SW_LB ? "lb" : "arena", x, y - 4, SWATCH_W);
    break;
  case SW_INPLACE:
    fprintf(f, "<path class=\"inplace\" d=\"M%.2f %.2f h%.0f v10 h-%.0f Z\"/>",
            x, y - 9, SWATCH_W, SWATCH_W);
    break;
  }
  fprintf(f, "<text class=\"lg\" x=\"%.2f\" y=\"%.2f\">%s</text>\n",
          x + SWATCH_W + 6, y, legend[k].text);
}

/* ---- layout --------------------------------------------------------------------- */

/* Widest y tick label, in px. */
static double y_labels_w(const struct render *r)
{
  double w = 0;
  for (uint64_t b = 0; b <= r->top; b += r->ystep) {
    char s[32];
    render_fmt_bytes(s, sizeof s, b);
    double t = render_text_w(s, FONT_PX, 0);
    if (t > w)
      w = t;
    if (b > UINT64_MAX - r->ystep)
      break;
  }
  return w;
}

/* Writes the header line listing the pairs, "output<-input", as many as
 * fit in max_w px, then how many are left out. */
static void pairs_line(struct render *r, double max_w)
{
  char *out = r->l.line3;
  size_t cap = sizeof r->l.line3, len;
  snprintf(out, cap, "in place (output<-input), %zu pair%s:", r->n_pairs,
           r->n_pairs == 1 ? "" : "s");
  for (size_t i = 0; i < r->n_pairs; i++) {
    char one[48], rest[48];
    len = strlen(out);
    snprintf(one, sizeof one, "%s %u<-%u", i ? "," : "",
             (unsigned)r->g.tensors[r->pairs[i].out].id,
             (unsigned)r->g.tensors[r->pairs[i].in].id);
    /* what must still fit after this pair: the note on those left out */
    snprintf(rest, sizeof rest, ", ... (%zu more)", r->n_pairs - i - 1);
    int last = i + 1 == r->n_pairs;
    double w = render_text_w(out, FONT_PX, 0) + render_text_w(one, FONT_PX, 0) +
               (last ? 0 : render_text_w(rest, FONT_PX, 0));
    if (w > max_w || len + sizeof one + sizeof rest >= cap) {
      snprintf(out + len, cap - len, "%s ... (%zu more)", i ? "," : "",
               r->n_pairs - i);
      return;
    }
    memcpy(out + len, one, strlen(one) + 1);
  }
}

/* Computes r->l, r->opw, r->scale and the tick steps. */
static void layout(struct render *r)
{
  struct layout *l = &r->l;
  char a[96], b[96];
  /* Power-of-two byte steps give round labels in KiB and MiB. */
  r->ystep = 1;
  while (r->ystep < r->top / 6)
    r->ystep <<= 1;
  /* Left: the rotated axis title, the tick labels, the ticks. */
  double ml = PAD + FONT_PX + 12 + y_labels_w(r) + 8;
  line_label(r, 0, a, sizeof a);
  line_label(r, 1, b, sizeof b);
  double wa = render_text_w(a, FONT_PX, 0), wb = render_text_w(b, FONT_PX, 0);
  double mr = 10 + (wa > wb ? wa : wb) + PAD;
  /* The header, at most as wide as the picture may be. */
  double hmax = SVG_MAX_W - 2 * PAD;
  render_fit_text(l->title, sizeof l->title, r->g.what, TITLE_PX, 1, hmax);
  snprintf(l->line1, sizeof l->line1,
           "%zu tensor%s, %zu operator%s, %s, alignment %llu", r->g.n,
           CLI_PLURAL(r->g.n), r->n_ops, CLI_PLURAL(r->n_ops),
           planner_algo_name(r->p.algo),
           (unsigned long long)r->o.alignment);
  snprintf(l->line2, sizeof l->line2,
           "arena %llu byte%s, lower bound %llu byte%s, peak %llu live "
           "byte%s",
           (unsigned long long)r->p.arena_bytes, CLI_PLURAL(r->p.arena_bytes),
           (unsigned long long)r->p.lower_bound_bytes,
           CLI_PLURAL(r->p.lower_bound_bytes), (unsigned long long)r->peak,
           CLI_PLURAL(r->peak));
  double hw = render_text_w(l->title, TITLE_PX, 1);
  if (render_text_w(l->line1, FONT_PX, 0) > hw)
    hw = render_text_w(l->line1, FONT_PX, 0);
  if (render_text_w(l->line2, FONT_PX, 0) > hw)
    hw = render_text_w(l->line2, FONT_PX, 0);
  /* The plot: 48 px per operator within [PLOT_MIN_W, SVG_MAX_W]. */
  double pw = (double)r->n_ops * OP_MAX_W;
  if (pw < PLOT_MIN_W)
    pw = PLOT_MIN_W;
  if (pw > SVG_MAX_W - ml - mr)
    pw = SVG_MAX_W - ml - mr;
  l->width = ml + pw + mr;
  if (l->width < hw + 2 * PAD)
    l->width = hw + 2 * PAD;
  if (l->width > SVG_MAX_W)
    l->width = SVG_MAX_W;
  pw = l->width - ml - mr; /* the plot takes what the header left */
  l->x0 = ml;
  l->x1 = ml + pw;
  r->opw = pw / (double)r->n_ops;
  /* Rows: title, two summary lines, the legend, then the plot. */
  pairs_line(r, l->width - 2 * PAD);
  l->legend_y = PAD + TITLE_PX + (r->n_pairs ? 3 : 2) * LINE_H + LINE_H;
  int rows = legend_rows(l->width - 2 * PAD, legend_count(r), NULL, NULL);
  l->y_top = l->legend_y + (rows - 1) * LINE_H + 12 + FONT_PX + 8;
  l->y0 = l->y_top + PLOT_H;
  l->height = l->y0 + 6 + FONT_PX + 12 + FONT_PX + 8 + PAD;
  r->scale = PLOT_H / (double)r->top;
  /* Operator ticks: the widest label plus 16 px between labels. */
  char last[24];
  snprintf(last, sizeof last, "%zu", r->n_ops - 1);
  r->xstep = render_nice_step((render_text_w(last, FONT_PX, 0) + 16) / r->opw);
}

/* ---- drawing -------------------------------------------------------------------- */

static const char *const palette[] = {
    "#7aa6c2", "#8fbc8f", "#b4a7d6", "#9fc5e8", "#a2c4a8", "#c9b79c",
    "#8eaccd", "#b6d7a8",
};

static void draw_tensor(FILE *f, const struct render *r, size_t i)
{
  const struct planner_tensor *t = &r->g.tensors[i];
  uint64_t off = r->p.offsets[i];
  double x = r->l.x0 + (double)t->first * r->opw;
  double w = (double)(t->last - t->first + 1) * r->opw;
  double y = y_of(r, off + t->size);
  double h = (double)t->size * r->scale;
  if (w < MIN_PX)
    w = MIN_PX; /* keep tensors of long traces visible */
  if (h < MIN_PX)
    h = MIN_PX; /* keep tiny and empty tensors visible */
  fprintf(f,
          "<rect class=\"t%s\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
          "height=\"%.2f\" fill=\"%s\"><title>tensor %u",
          r->at_peak[i] ? " peak" : "", x, y, w, h,
          r->at_peak[i] ? "#e4572e" : palette[t->id % 8], (unsigned)t->id);
  if (r->g.names && r->g.names[i][0]) {
    fputs(" ", f);
    cli_xml_escape(f, r->g.names[i]);
  }
  fprintf(f, ": %llu byte%s at offset %llu, operators %lld-%lld%s",
          (unsigned long long)t->size, CLI_PLURAL(t->size),
          (unsigned long long)off,
          (long long)t->first, (long long)t->last,
          r->at_peak[i] ? ", live at the peak" : "");
  if (r->over && r->over[i])
    fprintf(f, ", written over tensor %u in place",
            (unsigned)r->g.tensors[r->over[i] - 1].id);
  fputs("</title></rect>\n", f);
  char id[16];
  snprintf(id, sizeof id, "%u", (unsigned)t->id);
  if (w >= render_text_w(id, ID_PX, 0) + 4 && h >= ID_PX + 1)
    fprintf(f, "<text class=\"id\" x=\"%.2f\" y=\"%.2f\">%s</text>\n",
            x + w / 2, y + h / 2 + 3.5, id);
}

/* Outlines, dashed, the bytes each pair's output is written over its
 * input in, at the operator where that happens. */
static void draw_inplace(FILE *f, const struct render *r)
{
  for (size_t k = 0; k < r->n_pairs; k++) {
    size_t i = r->pairs[k].out;
    const struct planner_tensor *t = &r->g.tensors[i];
    const struct planner_tensor *in = &r->g.tensors[r->pairs[k].in];
    double x = r->l.x0 + (double)t->first * r->opw, w = r->opw;
    double y = y_of(r, r->p.offsets[i] + t->size);
    double h = (double)t->size * r->scale;
    if (w < MIN_PX)
      w = MIN_PX;
    if (h < MIN_PX)
      h = MIN_PX;
    fprintf(f, "<path class=\"inplace\" d=\"M%.2f %.2f h%.2f v%.2f h%.2f Z\">"
            "<title>tensor %u written over tensor %u in place at operator "
            "%lld (%llu byte%s)</title></path>\n",
            x, y, w, h, -w, (unsigned)t->id, (unsigned)in->id,
            (long long)t->first, (unsigned long long)t->size,
            CLI_PLURAL(t->size));
  }
}

static void draw_axes(FILE *f, const struct render *r)
{
  const struct layout *l = &r->l;
  fprintf(f, "<path class=\"axis\" d=\"M%.2f %.2f V%.2f H%.2f\"/>\n", l->x0,
          l->y_top, l->y0, l->x1);
  for (uint64_t k = 0; k < r->n_ops; k += r->xstep) {
    double x = l->x0 + ((double)k + 0.5) * r->opw;
    fprintf(f, "<path class=\"tick\" d=\"M%.2f %.2f v5\"/>"
            "<text class=\"xl\" x=\"%.2f\" y=\"%.2f\">%llu</text>\n",
            x, l->y0, x, l->y0 + 6 + FONT_PX + 1, (unsigned long long)k);
    if (k > UINT64_MAX - r->xstep)
      break;
  }
  fprintf(f, "<text class=\"axl\" x=\"%.2f\" y=\"%.2f\">operator index "
          "(execution order)</text>\n",
          (l->x0 + l->x1) / 2, l->y0 + 6 + FONT_PX + 12 + FONT_PX);
  for (uint64_t b = 0; b <= r->top; b += r->ystep) {
    char s[32];
    render_fmt_bytes(s, sizeof s, b);
    fprintf(f, "<path class=\"grid\" d=\"M%.2f %.2f H%.2f\"/>"
            "<text class=\"yl\" x=\"%.2f\" y=\"%.2f\">%s</text>\n",
            l->x0, y_of(r, b), l->x1, l->x0 - 8, y_of(r, b) + 4, s);
    if (b > UINT64_MAX - r->ystep)
      break;
  }
  double ym = (l->y_top + l->y0) / 2, xt = PAD + FONT_PX;
  fprintf(f, "<text class=\"ayl\" x=\"%.2f\" y=\"%.2f\" "
          "transform=\"rotate(-90 %.2f %.2f)\">arena offset (bytes)</text>\n",
          xt, ym, xt, ym);
}

static void draw_lines(FILE *f, const struct render *r)
{
  const struct layout *l = &r->l;
  double ya = y_of(r, r->p.arena_bytes), yl = y_of(r, r->p.lower_bound_bytes);
  char a[96], b[96];
  line_label(r, 0, a, sizeof a);
  line_label(r, 1, b, sizeof b);
  /* The lower bound is drawn first, so that the arena line stays on top
   * where the two coincide. Its label goes below it (above the axis),
   * the arena's above its line: the two never meet. */
  fprintf(f, "<path class=\"lb\" d=\"M%.2f %.2f H%.2f\"/>\n", l->x0, yl,
          l->x1 + 8);
  fprintf(f, "<path class=\"arena\" d=\"M%.2f %.2f H%.2f\"/>\n", l->x0, ya,
          l->x1 + 8);
  fprintf(f, "<text class=\"ll\" x=\"%.2f\" y=\"%.2f\">%s</text>\n",
          l->x1 + 10, ya - 4, a);
  if (r->p.arena_bytes != r->p.lower_bound_bytes) {
    double y = yl + FONT_PX + 3;
    if (y > l->y0 - 3)
      y = l->y0 - 3;
    fprintf(f, "<text class=\"ll\" x=\"%.2f\" y=\"%.2f\">%s</text>\n",
            l->x1 + 10, y, b);
  }
}

/* Shades the peak operators, one band per run of them (runs closer than
 * a pixel merge), so that a long trace does not get a band per operator. */
static void draw_peak_ops(FILE *f, const struct render *r)
{
  const struct layout *l = &r->l;
  size_t k = 0;
  while (k < r->n_ops) {
    if (r->peak == 0 || r->live[k] != r->peak) {
      k++;
      continue;
    }
    size_t e = k + 1; /* one past the run */
    for (size_t j = e; j < r->n_ops && (double)(j - e) * r->opw < 1.0; j++)
      if (r->live[j] == r->peak)
        e = j + 1;
    double x = l->x0 + (double)k * r->opw, w = (double)(e - k) * r->opw;
    if (w < MIN_PX)
      w = MIN_PX;
    fprintf(f, "<path class=\"peakop\" d=\"M%.2f %.2f h%.2f V%.2f h%.2f Z\"/>\n",
            x, l->y_top, w, l->y0, -w);
    k = e;
  }
}

static void write_svg(FILE *f, const struct render *r)
{
  const struct layout *l = &r->l;
  struct legend_ctx lc = {f, r};
  fprintf(f,
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
          "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
          "font-family=\"sans-serif\" font-size=\"11\">\n",
          l->width, l->height, l->width, l->height);
  fputs("<style>\n"
        ".t{stroke:#2f3e46;stroke-width:0.5}\n"
        ".t.peak{stroke:#7a1f0c;stroke-width:1}\n"
        ".id{text-anchor:middle;font-size:10px;fill:#102030}\n"
        ".axis{stroke:#333;fill:none}.tick{stroke:#333}\n"
        ".grid{stroke:#ddd;stroke-width:0.5}\n"
        ".xl{text-anchor:middle}.yl{text-anchor:end}.axl{text-anchor:middle}\n"
        ".ayl{text-anchor:middle}\n"
        ".arena{stroke:#1b4965;stroke-width:1.5}\n"
        ".lb{stroke:#c1121f;stroke-width:1.5;stroke-dasharray:6 4}\n"
        ".ll{font-size:11px}.peakop{fill:#fde2d8}\n"
        ".sw{stroke:#2f3e46;stroke-width:0.5}.swt{fill:#7aa6c2}"
        ".swp{fill:#e4572e;stroke:#7a1f0c}\n"
        ".title{font-size:14px;font-weight:bold}\n",
        f);
  if (r->n_pairs)
    fputs(".inplace{fill:none;stroke:#000;stroke-width:1.5;"
          "stroke-dasharray:3 2}\n",
          f);
  fputs("</style>\n", f);
  fprintf(f, "<path fill=\"#ffffff\" d=\"M0 0 H%.0f V%.0f H0 Z\"/>\n",
          l->width, l->height);
  fprintf(f, "<text class=\"title\" x=\"%.0f\" y=\"%.0f\">", PAD,
          PAD + TITLE_PX);
  cli_xml_escape(f, l->title);
  fprintf(f, "</text>\n<text class=\"sum\" x=\"%.0f\" y=\"%.0f\">%s</text>\n"
          "<text class=\"sum\" x=\"%.0f\" y=\"%.0f\">%s</text>\n",
          PAD, PAD + TITLE_PX + LINE_H, l->line1, PAD,
          PAD + TITLE_PX + 2 * LINE_H, l->line2);
  if (r->n_pairs) {
    fprintf(f, "<text class=\"sum\" x=\"%.0f\" y=\"%.0f\">", PAD,
            PAD + TITLE_PX + 3 * LINE_H);
    cli_xml_escape(f, l->line3);
    fputs("</text>\n", f);
  }
  legend_rows(l->width - 2 * PAD, legend_count(r), legend_entry, &lc);
  draw_peak_ops(f, r);
  draw_axes(f, r);
  /* outputs written over their input last, so that they lie on top */
  for (size_t i = 0; i < r->g.n; i++)
    if (!r->over || !r->over[i])
      draw_tensor(f, r, i);
  for (size_t k = 0; k < r->n_pairs; k++)
    draw_tensor(f, r, r->pairs[k].out);
  draw_inplace(f, r);
  draw_lines(f, r);
  fputs("</svg>\n", f);
}

static void write_html(FILE *f, const struct render *r)
{
  const struct cli_graph *g = &r->g;
  fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<title>arena plan: ", f);
  cli_xml_escape(f, g->what);
  fputs("</title>\n<style>\n"
        "body{font-family:sans-serif;margin:24px;color:#102030}\n"
        ".pic{overflow-x:auto;border:1px solid #ccc}\n"
        ".pic svg{display:block;max-width:100%;height:auto}\n"
        "table{border-collapse:collapse;margin:12px 0}\n"
        "td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}\n"
        "td.n,th.n{text-align:left}tr.peak td{background:#fde2d8}\n"
        "</style>\n</head>\n<body>\n<h1>Arena plan: ", f);
  cli_xml_escape(f, g->what);
  fputs("</h1>\n<table id=\"summary\">\n", f);
  fprintf(f, "<tr><th class=\"n\">tensors</th><td>%zu</td></tr>\n"
          "<tr><th class=\"n\">operators</th><td>%zu</td></tr>\n"
          "<tr><th class=\"n\">algorithm</th><td>%s</td></tr>\n"
          "<tr><th class=\"n\">alignment</th><td>%llu</td></tr>\n"
          "<tr><th class=\"n\">arena bytes</th><td>%llu</td></tr>\n"
          "<tr><th class=\"n\">lower bound bytes</th><td>%llu</td></tr>\n"
          "<tr><th class=\"n\">naive bytes</th><td>%llu</td></tr>\n"
          "<tr><th class=\"n\">peak live bytes</th><td>%llu</td></tr>\n",
          g->n, r->n_ops, planner_algo_name(r->p.algo),
          (unsigned long long)r->o.alignment,
          (unsigned long long)r->p.arena_bytes,
          (unsigned long long)r->p.lower_bound_bytes,
          (unsigned long long)r->p.naive_bytes, (unsigned long long)r->peak);
  if (r->n_pairs)
    fprintf(f, "<tr><th class=\"n\">in-place pairs</th><td>%zu</td></tr>\n"
            "<tr><th class=\"n\">lower bound without sharing</th>"
            "<td>%llu</td></tr>\n",
            r->n_pairs, (unsigned long long)r->p.lower_bound_unshared_bytes);
  if (g->has_model) {
    char hex[65];
    for (int i = 0; i < 32; i++)
      snprintf(hex + 2 * i, 3, "%02x", g->model.sha256[i]);
    fprintf(f, "<tr><th class=\"n\">model sha256</th><td class=\"n\">%s"
            "</td></tr>\n", hex);
  }
  fputs("</table>\n<div class=\"pic\">\n", f);
  write_svg(f, r);
  fputs("</div>\n<h2>Tensors</h2>\n<table id=\"tensors\">\n<tr><th>id</th>"
        "<th class=\"n\">name</th><th>bytes</th><th>first</th><th>last</th>"
        "<th>offset</th><th class=\"n\">at peak</th>",
        f);
  fputs(r->n_pairs ? "<th>written over</th></tr>\n" : "</tr>\n", f);
  for (size_t i = 0; i < g->n; i++) {
    const struct planner_tensor *t = &g->tensors[i];
    fprintf(f, "<tr%s><td>%u</td><td class=\"n\">",
            r->at_peak[i] ? " class=\"peak\"" : "", (unsigned)t->id);
    if (g->names)
      cli_xml_escape(f, g->names[i]);
    fprintf(f, "</td><td>%llu</td><td>%lld</td><td>%lld</td><td>%llu</td>"
            "<td class=\"n\">%s</td>",
            (unsigned long long)t->size, (long long)t->first,
            (long long)t->last, (unsigned long long)r->p.offsets[i],
            r->at_peak[i] ? "yes" : "");
    if (r->n_pairs && r->over[i])
      fprintf(f, "<td>%u</td>", (unsigned)g->tensors[r->over[i] - 1].id);
    else if (r->n_pairs)
      fputs("<td></td>", f);
    fputs("</tr>\n", f);
  }
  fputs("</table>\n</body>\n</html>\n", f);
}

/* The pairs the plan took, and for each output the input it is written
 * over. */
static int find_pairs(struct render *r)
{
  struct planner_graph v = cli_graph_view(&r->g);
  int rc = cli_pairs_taken(r->g.what, &v, &r->o, r->p.offsets, &r->pairs,
                           &r->n_pairs);
  if (rc || !r->n_pairs)
    return rc;
  r->over = calloc(r->g.n, sizeof *r->over);
  if (!r->over) {
    cli_error(r->g.what, "out of memory");
    return CLI_EX_OSERR;
  }
  for (size_t k = 0; k < r->n_pairs; k++)
    r->over[r->pairs[k].out] = r->pairs[k].in + 1;
  return 0;
}

static int prepare(struct render *r)
{
  int rc;
  if ((rc = cli_graph_plan(&r->g, &r->o, &r->p)) != 0 ||
      (rc = find_pairs(r)) != 0 ||
      (rc = cli_live_bytes(&r->g, &r->live, &r->n_ops)) != 0)
    return rc;
  r->at_peak = calloc(r->g.n + 1, 1);
  if (!r->at_peak) {
    cli_error(r->g.what, "out of memory");
    return CLI_EX_OSERR;
  }
  for (size_t k = 0; k < r->n_ops; k++)
    if (r->live[k] > r->peak)
      r->peak = r->live[k];
  /* cnt[k] = peak operators before k, so a tensor is live at one iff
   * cnt[last + 1] > cnt[first]; linear however long the lifetimes. */
  size_t *cnt = calloc(r->n_ops + 1, sizeof *cnt);
  if (!cnt) {
    cli_error(r->g.what, "out of memory");
    return CLI_EX_OSERR;
  }
  for (size_t k = 0; k < r->n_ops; k++)
    cnt[k + 1] = cnt[k] + (r->peak > 0 && r->live[k] == r->peak);
  for (size_t i = 0; i < r->g.n; i++) {
    const struct planner_tensor *t = &r->g.tensors[i];
    r->at_peak[i] = cnt[t->last + 1] > cnt[t->first];
  }
  free(cnt);
  r->top = r->p.arena_bytes > r->p.lower_bound_bytes ? r->p.arena_bytes
                                                      : r->p.lower_bound_bytes;
  if (r->top == 0)
    r->top = 1;
  layout(r);
  return 0;
}

int cli_render_main(int argc, char **argv)
{
  struct render r;
  struct cli_load_opts lo;
  const char *file = NULL, *out = NULL;
  int html = 0, rc = 0;
  memset(&r, 0, sizeof r);
  memset(&lo, 0, sizeof lo);
  cli_graph_init(&r.g);
  planner_options_init(&r.o);
  planner_plan_init(&r.p);
  for (int i = 1; i < argc; i++) {
    const char *v;
    int m;
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      usage(stdout);
      return cli_finish_stdout();
    } else if (strcmp(argv[i], "--html") == 0) {
      html = 1;
    } else if ((m = cli_opt_value(argc, argv, &i, "-o", &v)) != 0) {
      if (m < 0)
        return CLI_EX_USAGE;
      out = v;
    } else if (cli_model_option(argc, argv, &i, &lo, &rc) ||
               cli_plan_option(argc, argv, &i, &r.o, &rc)) {
      if (rc)
        return rc;
    } else if (argv[i][0] == '-' && strcmp(argv[i], "-") != 0) {
      cli_error("render", "unknown option '%s'", argv[i]);
      return CLI_EX_USAGE;
    } else if (file) {
      cli_error("render", "only one FILE may be given");
      return CLI_EX_USAGE;
    } else {
      file = argv[i];
    }
  }
  if (!file) {
    usage(stderr);
    return CLI_EX_USAGE;
  }
  char *text = NULL;
  size_t len = 0;
  r.o.in_place = !lo.no_in_place;
  if ((rc = cli_graph_load(file, &lo, &r.g)) == 0) {
    if (r.g.offsets && r.g.alignment)
      r.o.alignment = r.g.alignment;
    rc = prepare(&r);
  }
  if (rc == 0) {
    FILE *mf = open_memstream(&text, &len);
    if (!mf) {
      cli_error(NULL, "out of memory");
      rc = CLI_EX_OSERR;
    } else {
      if (html)
        write_html(mf, &r);
      else {
        fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", mf);
        write_svg(mf, &r);
      }
      if (fclose(mf) != 0 || !text) {
        cli_error(NULL, "out of memory");
        rc = CLI_EX_OSERR;
      } else {
        rc = cli_write_file(out, text, len);
      }
    }
  }
  free(text);
  free(r.live);
  free(r.at_peak);
  free(r.pairs);
  free(r.over);
  planner_plan_cleanup(&r.p);
  cli_graph_cleanup(&r.g);
  return rc;
}
