/*
 * cli_render.c - `arenactl render`: a plan as a picture.
 *
 * Operators run along x, arena offsets go up y; every planned tensor is
 * one <rect class="t"> spanning its lifetime and its bytes, labelled with
 * its id where the label fits and always carrying a <title> tooltip. The
 * lower bound (dashed) and the arena top (solid) are drawn as lines;
 * tensors live at a peak operator are highlighted (class "t peak") and
 * the peak operators shaded. Only tensors are <rect>s (background, bands
 * and axes are paths and lines), so a reader can count them.
 *
 * The width adapts to the operator count (3 to 48 px per operator, about
 * 1400 px for most models), so 350 operators still give a readable
 * picture. --html wraps the SVG in a self-contained page (no scripts, no
 * external resources) with a summary and a table of every tensor.
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_model.h"
#include "planner.h"

#define PLOT_W 1400.0 /* px of the plot area, aimed for */
#define PLOT_H 560.0  /* px of the plot area */
#define MARGIN_L 96.0 /* px for the byte axis */
#define MARGIN_R 190.0 /* px for the line labels */
#define MARGIN_T 56.0 /* px for the title */
#define MARGIN_B 56.0 /* px for the operator axis */

static void usage(FILE *f)
{
  fprintf(f,
          "Usage: %s render [options] FILE [-o OUT]\n"
          "\n"
          "Draws the plan of FILE (a lifetime-graph CSV, a plan, or a .tflite\n"
          "model; graphs are planned first) as SVG: operators along x,\n"
          "offsets up y, one rectangle per tensor, the lower bound and arena\n"
          "top as lines, tensors live at the peak highlighted.\n"
          "\n"
          "Options:\n"
          "  -o FILE          write to FILE (default standard output)\n"
          "  --html           write a self-contained HTML page: picture,\n"
          "                   summary and a table of all tensors\n"
          "  --algo A         algorithm for graphs (default best)\n"
          "  --align N        alignment in bytes (default %u)\n"
          "  --keep-dequant   .tflite: plan DEQUANTIZE-of-constant outputs\n"
          "  --shape DIMS     .tflite: size a dynamic batch\n"
          "  -h, --help       show this help\n"
          "\n"
          "Exit status: 0 done, 64 bad command line, 65 bad input,\n"
          "66 cannot read FILE, 74 cannot write OUT.\n",
          CLI_PROG, PLANNER_DEFAULT_ALIGNMENT);
}

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
};

/* Human-readable bytes: "1.31 MiB". */
static void fmt_bytes(char *out, size_t cap, uint64_t v)
{
  if (v >= (1ull << 30))
    snprintf(out, cap, "%.2f GiB", (double)v / (double)(1ull << 30));
  else if (v >= (1ull << 20))
    snprintf(out, cap, "%.2f MiB", (double)v / (double)(1ull << 20));
  else if (v >= (1ull << 10))
    snprintf(out, cap, "%.1f KiB", (double)v / 1024.0);
  else
    snprintf(out, cap, "%llu B", (unsigned long long)v);
}

/* A step from 1, 2, 5 x 10^k, at least min. */
static uint64_t nice_step(double min)
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

static double y_of(const struct render *r, uint64_t bytes)
{
  return MARGIN_T + PLOT_H - (double)bytes * r->scale;
}

static const char *const palette[] = {
    "#7aa6c2", "#8fbc8f", "#b4a7d6", "#9fc5e8", "#a2c4a8", "#c9b79c",
    "#8eaccd", "#b6d7a8",
};

static void draw_tensor(FILE *f, const struct render *r, size_t i)
{
  const struct planner_tensor *t = &r->g.tensors[i];
  uint64_t off = r->p.offsets[i];
  double x = MARGIN_L + (double)t->first * r->opw;
  double w = (double)(t->last - t->first + 1) * r->opw;
  double y = y_of(r, off + t->size);
  double h = (double)t->size * r->scale;
  if (h < 0.75)
    h = 0.75; /* keep tiny and empty tensors visible */
  fprintf(f,
          "<rect class=\"t%s\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
          "height=\"%.2f\" fill=\"%s\"><title>tensor %u",
          r->at_peak[i] ? " peak" : "", x, y, w, h,
          r->at_peak[i] ? "#e4572e" : palette[t->id % 8], (unsigned)t->id);
  if (r->g.names && r->g.names[i][0]) {
    fputs(" ", f);
    cli_xml_escape(f, r->g.names[i]);
  }
  fprintf(f, ": %llu bytes at offset %llu, operators %lld-%lld%s</title>"
          "</rect>\n",
          (unsigned long long)t->size, (unsigned long long)off,
          (long long)t->first, (long long)t->last,
          r->at_peak[i] ? ", live at the peak" : "");
  char id[16];
  int len = snprintf(id, sizeof id, "%u", (unsigned)t->id);
  if (w >= 6.5 * len + 4 && h >= 11)
    fprintf(f, "<text class=\"id\" x=\"%.2f\" y=\"%.2f\">%s</text>\n",
            x + w / 2, y + h / 2 + 3.5, id);
}

static void draw_axes(FILE *f, const struct render *r)
{
  double x0 = MARGIN_L, y0 = MARGIN_T + PLOT_H;
  double x1 = MARGIN_L + (double)r->n_ops * r->opw;
  fprintf(f, "<path class=\"axis\" d=\"M%.2f %.2f V%.2f H%.2f\"/>\n", x0,
          MARGIN_T, y0, x1);
  uint64_t step = nice_step(40.0 / r->opw);
  for (uint64_t k = 0; k < r->n_ops; k += step) {
    double x = x0 + ((double)k + 0.5) * r->opw;
    fprintf(f, "<path class=\"tick\" d=\"M%.2f %.2f v5\"/>"
            "<text class=\"xl\" x=\"%.2f\" y=\"%.2f\">%llu</text>\n",
            x, y0, x, y0 + 18, (unsigned long long)k);
  }
  fprintf(f, "<text class=\"axl\" x=\"%.2f\" y=\"%.2f\">operator</text>\n",
          (x0 + x1) / 2, y0 + 40);
  /* Power-of-two steps give round labels in KiB and MiB. */
  uint64_t bstep = 1;
  while (bstep < r->top / 6)
    bstep <<= 1;
  for (uint64_t b = 0; b <= r->top; b += bstep) {
    char s[32];
    fmt_bytes(s, sizeof s, b);
    fprintf(f, "<path class=\"grid\" d=\"M%.2f %.2f H%.2f\"/>"
            "<text class=\"yl\" x=\"%.2f\" y=\"%.2f\">%s</text>\n",
            x0, y_of(r, b), x1, x0 - 6, y_of(r, b) + 4, s);
    if (b > UINT64_MAX - bstep)
      break;
  }
}

static void draw_lines(FILE *f, const struct render *r)
{
  double x0 = MARGIN_L, x1 = MARGIN_L + (double)r->n_ops * r->opw;
  double ya = y_of(r, r->p.arena_bytes), yl = y_of(r, r->p.lower_bound_bytes);
  char a[32], l[32];
  fmt_bytes(a, sizeof a, r->p.arena_bytes);
  fmt_bytes(l, sizeof l, r->p.lower_bound_bytes);
  double la = ya - 4, ll = yl + 14;
  fprintf(f, "<path class=\"arena\" d=\"M%.2f %.2f H%.2f\"/>"
          "<text class=\"ll\" x=\"%.2f\" y=\"%.2f\">arena top %llu (%s)</text>\n",
          x0, ya, x1 + 8, x1 + 10, la, (unsigned long long)r->p.arena_bytes, a);
  fprintf(f, "<path class=\"lb\" d=\"M%.2f %.2f H%.2f\"/>"
          "<text class=\"ll\" x=\"%.2f\" y=\"%.2f\">lower bound %llu (%s)</text>\n",
          x0, yl, x1 + 8, x1 + 10, ll, (unsigned long long)r->p.lower_bound_bytes,
          l);
}

static void write_svg(FILE *f, const struct render *r)
{
  double width = MARGIN_L + (double)r->n_ops * r->opw + MARGIN_R;
  double height = MARGIN_T + PLOT_H + MARGIN_B;
  fprintf(f,
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
          "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
          "font-family=\"sans-serif\" font-size=\"11\">\n",
          width, height, width, height);
  fputs("<style>\n"
        ".t{stroke:#2f3e46;stroke-width:0.5}\n"
        ".t.peak{stroke:#7a1f0c;stroke-width:1}\n"
        ".id{text-anchor:middle;font-size:10px;fill:#102030}\n"
        ".axis{stroke:#333;fill:none}.tick{stroke:#333}\n"
        ".grid{stroke:#ddd;stroke-width:0.5}\n"
        ".xl{text-anchor:middle}.yl{text-anchor:end}.axl{text-anchor:middle}\n"
        ".arena{stroke:#1b4965;stroke-width:1.5}\n"
        ".lb{stroke:#c1121f;stroke-width:1.5;stroke-dasharray:6 4}\n"
        ".ll{font-size:11px}.peakop{fill:#fde2d8}\n"
        ".title{font-size:14px;font-weight:bold}\n"
        "</style>\n",
        f);
  fprintf(f, "<path fill=\"#ffffff\" d=\"M0 0 H%.0f V%.0f H0 Z\"/>\n", width,
          height);
  fprintf(f, "<text class=\"title\" x=\"%.0f\" y=\"22\">", MARGIN_L);
  cli_xml_escape(f, r->g.what);
  fprintf(f, "</text>\n<text x=\"%.0f\" y=\"40\">%zu tensors, %zu operators, "
          "%s, alignment %llu: arena %llu bytes, lower bound %llu bytes, "
          "peak %llu live bytes (highlighted)</text>\n",
          MARGIN_L, r->g.n, r->n_ops, planner_algo_name(r->p.algo),
          (unsigned long long)r->o.alignment,
          (unsigned long long)r->p.arena_bytes,
          (unsigned long long)r->p.lower_bound_bytes,
          (unsigned long long)r->peak);
  for (size_t k = 0; k < r->n_ops; k++)
    if (r->live[k] == r->peak)
      fprintf(f, "<path class=\"peakop\" d=\"M%.2f %.2f h%.2f V%.2f h%.2f Z\"/>\n",
              MARGIN_L + (double)k * r->opw, MARGIN_T, r->opw,
              MARGIN_T + PLOT_H, -r->opw);
  draw_axes(f, r);
  for (size_t i = 0; i < r->g.n; i++)
    draw_tensor(f, r, i);
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
        "<th>offset</th><th class=\"n\">at peak</th></tr>\n",
        f);
  for (size_t i = 0; i < g->n; i++) {
    const struct planner_tensor *t = &g->tensors[i];
    fprintf(f, "<tr%s><td>%u</td><td class=\"n\">",
            r->at_peak[i] ? " class=\"peak\"" : "", (unsigned)t->id);
    if (g->names)
      cli_xml_escape(f, g->names[i]);
    fprintf(f, "</td><td>%llu</td><td>%lld</td><td>%lld</td><td>%llu</td>"
            "<td class=\"n\">%s</td></tr>\n",
            (unsigned long long)t->size, (long long)t->first,
            (long long)t->last, (unsigned long long)r->p.offsets[i],
            r->at_peak[i] ? "yes" : "");
  }
  fputs("</table>\n</body>\n</html>\n", f);
}

static int prepare(struct render *r)
{
  int rc;
  if ((rc = cli_graph_plan(&r->g, &r->o, &r->p)) != 0 ||
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
  r->opw = PLOT_W / (double)r->n_ops;
  if (r->opw > 48)
    r->opw = 48;
  if (r->opw < 3)
    r->opw = 3;
  r->top = r->p.arena_bytes > r->p.lower_bound_bytes ? r->p.arena_bytes
                                                      : r->p.lower_bound_bytes;
  if (r->top == 0)
    r->top = 1;
  r->scale = PLOT_H / (double)r->top;
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
        rc = cli_model_write(out, text, len);
      }
    }
  }
  free(text);
  free(r.live);
  free(r.at_peak);
  planner_plan_cleanup(&r.p);
  cli_graph_cleanup(&r.g);
  return rc;
}
