/*
 * check_models_layout.c - the layout of `arenactl render`'s picture:
 * every text label, measured with DejaVu Sans' advance widths, lies
 * inside the viewBox, tick labels do not touch, the width stays within
 * 1800 px for a million operators, and the legend and axis titles are
 * there.
 */
#include <check.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_models.h"
#include "testutil.h"

/* The box a <text> element covers, measured with the advance widths of
 * DejaVu Sans (Debian's default sans-serif; Liberation Sans is
 * narrower), 12 % wider for bold, ascent 0.8 em and descent 0.25 em; the
 * anchor and size per class as in render's <style>. */
struct tbox {
  double x0, y0, x1, y1; /* px */
  char cls[16];          /* class attribute */
  char text[128];        /* content, entities kept */
};

/* DejaVu Sans advance widths of ' ' .. '~', in 1/2048 em. */
static const short dejavu[95] = {
    651,  821,  942,  1716, 1303, 1946, 1597, 563,  799,  799,  1024, 1716,
    651,  739,  651,  690,  1303, 1303, 1303, 1303, 1303, 1303, 1303, 1303,
    1303, 1303, 690,  690,  1716, 1716, 1716, 1087, 2048, 1401, 1405, 1430,
    1577, 1294, 1178, 1587, 1540, 604,  604,  1343, 1141, 1767, 1532, 1612,
    1235, 1612, 1423, 1300, 1251, 1499, 1401, 2025, 1403, 1251, 1403, 799,
    690,  799,  1716, 1024, 1024, 1255, 1300, 1126, 1300, 1260, 721,  1300,
    1298, 569,  569,  1186, 569,  1995, 1298, 1253, 1300, 1300, 842,  1067,
    803,  1298, 1212, 1675, 1212, 1212, 1075, 1303, 690,  1303, 1716,
};

/* The width in em of the text between p and end, entities decoded. */
static double text_em(const char *p, const char *end)
{
  double em = 0;
  for (; p < end; p++) {
    char c = *p;
    if (c == '&') {
      const char *semi = strchr(p, ';');
      c = !strncmp(p, "&lt;", 4) ? '<' : !strncmp(p, "&gt;", 4) ? '>'
          : !strncmp(p, "&amp;", 5) ? '&' : !strncmp(p, "&quot;", 6) ? '"'
                                                                     : '\'';
      p = semi;
    }
    em += (c >= ' ' && c <= '~' ? dejavu[c - ' '] : 2048) / 2048.0;
  }
  return em;
}

static double attr_num(const char *tag, const char *end, const char *name)
{
  char key[32];
  snprintf(key, sizeof key, " %s=\"", name);
  const char *p = strstr(tag, key);
  ck_assert_msg(p && p < end, "no %s in %.80s", name, tag);
  return strtod(p + strlen(key), NULL);
}

/* Fills b (cap entries) with the text boxes of the first <svg> in doc;
 * returns how many, and the viewBox size in *w, *h. */
static size_t text_boxes(const char *doc, struct tbox *b, size_t cap,
                         double *w, double *h)
{
  const char *svg = strstr(doc, "<svg ");
  ck_assert_ptr_nonnull(svg);
  const char *vb = strstr(svg, "viewBox=\"0 0 ");
  ck_assert_ptr_nonnull(vb);
  ck_assert_int_eq(sscanf(vb, "viewBox=\"0 0 %lf %lf\"", w, h), 2);
  size_t n = 0;
  const char *end_svg = strstr(svg, "</svg>");
  ck_assert_ptr_nonnull(end_svg);
  for (const char *p = strstr(svg, "<text "); p && p < end_svg;
       p = strstr(p + 1, "<text ")) {
    const char *gt = strchr(p, '>'), *close = strstr(p, "</text>");
    ck_assert_ptr_nonnull(gt);
    ck_assert_ptr_nonnull(close);
    ck_assert_uint_lt(n, cap);
    struct tbox *t = &b[n++];
    memset(t, 0, sizeof *t);
    const char *c = strstr(p, " class=\"");
    if (c && c < gt)
      sscanf(c, " class=\"%15[^\"]\"", t->cls);
    snprintf(t->text, sizeof t->text, "%.*s", (int)(close - gt - 1), gt + 1);
    int bold = strcmp(t->cls, "title") == 0;
    double px = bold ? 14 : strcmp(t->cls, "id") == 0 ? 10 : 11;
    double tw = text_em(gt + 1, close) * px * (bold ? 1.12 : 1.0);
    double x = attr_num(p, gt, "x"), y = attr_num(p, gt, "y");
    double a = 0; /* share of the width left of x */
    if (!strcmp(t->cls, "xl") || !strcmp(t->cls, "axl") ||
        !strcmp(t->cls, "ayl") || !strcmp(t->cls, "id"))
      a = 0.5;
    else if (!strcmp(t->cls, "yl"))
      a = 1;
    t->x0 = x - a * tw;
    t->x1 = x + (1 - a) * tw;
    t->y0 = y - 0.8 * px;
    t->y1 = y + 0.25 * px;
    const char *rot = strstr(p, " transform=\"rotate(-90 ");
    if (rot && rot < gt) {
      /* turned a quarter anticlockwise about (x, y) */
      struct tbox u = *t;
      t->x0 = x - (y - u.y0);
      t->x1 = x + (u.y1 - y);
      t->y0 = y - (u.x1 - x);
      t->y1 = y + (x - u.x0);
    }
  }
  return n;
}

static const struct tbox *find_text(const struct tbox *b, size_t n,
                                    const char *cls, const char *text)
{
  for (size_t i = 0; i < n; i++)
    if (!strcmp(b[i].cls, cls) && strstr(b[i].text, text))
      return &b[i];
  return NULL;
}

/* The layout promises of render: every text inside the viewBox, axis
 * titles with units, the legend, and tick labels that do not touch.
 * Returns the picture's width. */
static double assert_layout(const char *doc)
{
  static struct tbox b[20000];
  double w, h;
  size_t n = text_boxes(doc, b, sizeof b / sizeof b[0], &w, &h);
  for (size_t i = 0; i < n; i++)
    ck_assert_msg(b[i].x0 >= 0 && b[i].y0 >= 0 && b[i].x1 <= w &&
                      b[i].y1 <= h,
                  "text '%s' (class %s) spans [%.1f, %.1f] x [%.1f, %.1f], "
                  "outside the viewBox %.0f x %.0f",
                  b[i].text, b[i].cls, b[i].x0, b[i].x1, b[i].y0, b[i].y1, w,
                  h);
  ck_assert_ptr_nonnull(find_text(b, n, "axl", "operator index"));
  ck_assert_ptr_nonnull(find_text(b, n, "ayl", "arena offset (bytes)"));
  static const char *const legend[] = {"tensor: ", "tensor live at the peak",
                                       "peak operator", "lower bound",
                                       "arena top"};
  for (size_t k = 0; k < 5; k++)
    ck_assert_msg(find_text(b, n, "lg", legend[k]), "no legend '%s'",
                  legend[k]);
  ck_assert_ptr_nonnull(strstr(doc, "<path class=\"sw swt\""));
  size_t ticks = 0;
  const struct tbox *prev = NULL;
  for (size_t i = 0; i < n; i++)
    if (!strcmp(b[i].cls, "xl")) {
      if (prev)
        ck_assert_msg(prev->x1 < b[i].x0, "tick labels %s and %s touch",
                      prev->text, b[i].text);
      prev = &b[i];
      ticks++;
    }
  ck_assert_uint_ge(ticks, 3);
  return w;
}

/* Writes a CSV of n tensors reaching operator n_ops - 1. */
static void write_trace(const char *name, size_t n, uint64_t n_ops)
{
  FILE *f;
  char p[PATH_MAX + 64];
  uint64_t rs = 12;
  snprintf(p, sizeof p, "%s/%s", cm_tmpdir(), name);
  ck_assert_ptr_nonnull(f = fopen(p, "w"));
  fprintf(f, "id,size,first,last\n");
  for (size_t i = 0; i < n; i++) {
    uint64_t first = i + 1 == n ? n_ops - 1 : tu_rand_range(&rs, 0, n_ops - 1);
    uint64_t last = first + tu_rand_range(&rs, 0, n_ops / 8);
    fprintf(f, "%zu,%llu,%llu,%llu\n", i,
            (unsigned long long)tu_rand_range(&rs, 1, 1 << 20),
            (unsigned long long)first,
            (unsigned long long)(last < n_ops ? last : n_ops - 1));
  }
  ck_assert_int_eq(fclose(f), 0);
}

/* Both ends: 7 operators (whose header and line labels once ran past
 * the picture) and 10^6 operators (once 3,000,286 px wide), in SVG and
 * HTML; a file name too long for any picture is shortened. */
START_TEST(test_render_layout)
{
  static const struct {
    size_t n;
    uint64_t ops;
    const char *name;
  } cases[] = {
      {7, 7, "seven.csv"},
      {2000, 1000000, "long.csv"},
      {3, 3, /* 240 bytes */
       "a-file-name-much-too-long-for-any-picture-a-file-name-much-t"
       "oo-long-for-any-picture-a-file-name-much-too-long-for-any-pi"
       "cture-a-file-name-much-too-long-for-any-picture-a-file-name-"
       "much-too-long-for-any-picture-a-file-name-much-too-long-.csv"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    write_trace(cases[k].name, cases[k].n, cases[k].ops);
    for (int html = 0; html < 2; html++) {
      struct run r;
      if (html)
        RUN(&r, "render", "--html", "--algo", "greedy-size", cases[k].name);
      else
        RUN(&r, "render", "--algo", "greedy-size", cases[k].name);
      ck_assert_msg(r.status == 0, "%s", r.err);
      double w = assert_layout(r.out);
      ck_assert_double_le(w, 1800);
      ck_assert_uint_eq(cm_count(r.out, "<rect class=\"t"), cases[k].n);
      if (k == 2)
        cm_assert_contains(r.out, "...");
      cm_run_free(&r);
    }
  }
}
END_TEST

void cm_add_layout_tests(Suite *s)
{
  TCase *tc = tcase_create("layout");
  tcase_add_checked_fixture(tc, cm_setup, cm_teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_render_layout);
  suite_add_tcase(s, tc);
}
