/*
 * tflite_infer_table.cc - tflite_infer --table and --plot: the model's
 * memory at several input shapes, as rows and as an SVG chart (see
 * tflite_infer_table.h).
 */
#include "tflite_infer_table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <memory>

#include "arenad_tflite.h"
#include "arenad_tflite_ops.h"

namespace tflite_infer {

std::string ShapesText(const std::vector<std::vector<int>> &shapes) {
  std::string s;
  for (size_t i = 0; i < shapes.size(); i++) {
    s += i ? ", [" : "[";
    for (size_t k = 0; k < shapes[i].size(); k++)
      s += (k ? "," : "") + std::to_string(shapes[i][k]);
    s += "]";
  }
  return s;
}

namespace {

/* Builds one row; false with row->error set when it cannot. */
bool MeasureRow(arenad_client_t *c, const void *model, size_t len,
                bool in_place, ShapeRow *row) {
  arenad::TfliteOpResolver resolver;
  arenad::TflitePlanner p(c, model, len, resolver);
  p.SetInPlace(in_place);
  p.SetMinSaving(0); /* the table is about memory: always ask */
  p.SetInputShapes(row->shapes);
  std::unique_ptr<tflite::Interpreter> in;
  if (p.Build(&in)) {
    row->error = p.error();
    return false;
  }
  const arenad::TflitePlanInfo &i = p.info();
  row->alone = i.tflite_alone;
  row->arenad = i.source == arenad::TflitePlanSource::kTflite
                    ? i.tflite_alone
                    : i.total();
  row->bound = i.lower_bound;
  row->input_elements = 0;
  for (int t : in->inputs()) {
    const TfLiteIntArray *d = in->tensor(t)->dims;
    uint64_t n = 1;
    for (int k = 0; d && k < d->size; k++)
      n *= (uint64_t)(d->data[k] > 0 ? d->data[k] : 0);
    row->input_elements += n;
  }
  in.reset(); /* before the planner that owns its arena */
  return true;
}

/* Bytes as "1.5 MiB", "640 KiB" or "512 B". */
std::string Human(double b) {
  char s[32];
  if (b >= 1024.0 * 1024.0)
    snprintf(s, sizeof s, "%.1f MiB", b / (1024.0 * 1024.0));
  else if (b >= 1024.0)
    snprintf(s, sizeof s, "%.0f KiB", b / 1024.0);
  else
    snprintf(s, sizeof s, "%.0f B", b);
  return s;
}

/* s with &, <, > and " escaped for XML. */
std::string Xml(const std::string &s) {
  std::string o;
  for (char ch : s) {
    if (ch == '&')
      o += "&amp;";
    else if (ch == '<')
      o += "&lt;";
    else if (ch == '>')
      o += "&gt;";
    else if (ch == '"')
      o += "&quot;";
    else
      o += ch;
  }
  return o;
}

/* The chart's geometry: the plot area and the data ranges. */
struct Chart {
  double left = 96, right = 690, top = 56, bottom = 330; /* px */
  double x_lo = 0, x_hi = 1, y_hi = 1;
  double X(double v) const {
    return x_hi > x_lo ? left + (v - x_lo) / (x_hi - x_lo) * (right - left)
                       : (left + right) / 2;
  }
  double Y(double v) const { return bottom - v / y_hi * (bottom - top); }
};

/* One series as an SVG polyline with a circle at each point. */
std::string Series(const Chart &c, const std::vector<const ShapeRow *> &rs,
                   uint64_t ShapeRow::*field, const char *colour,
                   const char *dash) {
  std::string pts, dots;
  char buf[160];
  for (const ShapeRow *r : rs) {
    double x = c.X((double)r->input_elements), y = c.Y((double)(r->*field));
    snprintf(buf, sizeof buf, "%.1f,%.1f ", x, y);
    pts += buf;
    snprintf(buf, sizeof buf,
             "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"/>\n", x, y,
             colour);
    dots += buf;
  }
  snprintf(buf, sizeof buf,
           "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s "
           "points=\"",
           colour, dash);
  return buf + pts + "\"/>\n" + dots;
}

/* The whole SVG document. */
std::string Svg(const std::string &title, std::vector<const ShapeRow *> rs) {
  std::sort(rs.begin(), rs.end(), [](const ShapeRow *a, const ShapeRow *b) {
    return a->input_elements < b->input_elements;
  });
  Chart c;
  c.x_lo = (double)rs.front()->input_elements;
  c.x_hi = (double)rs.back()->input_elements;
  uint64_t top = 1;
  for (const ShapeRow *r : rs)
    top = std::max({top, r->alone, r->arenad, r->bound});
  c.y_hi = (double)top * 1.1;
  std::string s =
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"720\" "
      "height=\"440\" viewBox=\"0 0 720 440\" font-family=\"sans-serif\" "
      "font-size=\"12\">\n<rect width=\"720\" height=\"440\" "
      "fill=\"white\"/>\n";
  char buf[256];
  snprintf(buf, sizeof buf,
           "<text x=\"360\" y=\"24\" text-anchor=\"middle\" "
           "font-size=\"15\">Arena against input size: %s</text>\n",
           Xml(title).c_str());
  s += buf;
  for (int k = 0; k <= 5; k++) { /* y grid and labels */
    double v = c.y_hi * k / 5, y = c.Y(v);
    snprintf(buf, sizeof buf,
             "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
             "stroke=\"#ddd\"/>\n<text x=\"%.1f\" y=\"%.1f\" "
             "text-anchor=\"end\">%s</text>\n",
             c.left, y, c.right, y, c.left - 8, y + 4, Human(v).c_str());
    s += buf;
  }
  for (const ShapeRow *r : rs) { /* x labels: the shapes */
    double x = c.X((double)r->input_elements);
    snprintf(buf, sizeof buf,
             "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" "
             "transform=\"rotate(-30 %.1f %.1f)\">%s</text>\n",
             x, c.bottom + 18, x, c.bottom + 18,
             Xml(ShapesText(r->shapes)).c_str());
    s += buf;
  }
  snprintf(buf, sizeof buf,
           "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
           "stroke=\"black\"/>\n<text x=\"%.1f\" y=\"430\" "
           "text-anchor=\"middle\">input shape (x: its elements)</text>\n",
           c.left, c.bottom, c.right, c.bottom, (c.left + c.right) / 2);
  s += buf;
  s += Series(c, rs, &ShapeRow::alone, "#d62728", "");
  s += Series(c, rs, &ShapeRow::arenad, "#1f77b4", "");
  s += Series(c, rs, &ShapeRow::bound, "#555555",
              " stroke-dasharray=\"6 4\""); /* on top: often arenad's */
  const char *names[] = {"TFLite alone", "arenad", "lower bound"};
  const char *colours[] = {"#d62728", "#1f77b4", "#555555"};
  for (int k = 0; k < 3; k++) {
    snprintf(buf, sizeof buf,
             "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" "
             "stroke-width=\"2\"%s/>\n<text x=\"%d\" y=\"%d\">%s</text>\n",
             110, 72 + 18 * k, 136, 72 + 18 * k, colours[k],
             k == 2 ? " stroke-dasharray=\"6 4\"" : "", 142, 76 + 18 * k,
             names[k]);
    s += buf;
  }
  return s + "</svg>\n";
}

}  // namespace

size_t MeasureShapes(arenad_client_t *c, const void *model, size_t len,
                     bool in_place, std::vector<ShapeRow> *rows) {
  size_t failed = 0;
  for (ShapeRow &r : *rows)
    failed += !MeasureRow(c, model, len, in_place, &r);
  return failed;
}

void PrintShapeTable(FILE *f, const std::vector<ShapeRow> &rows) {
  size_t w = 5;
  for (const ShapeRow &r : rows)
    w = std::max(w, ShapesText(r.shapes).size());
  fprintf(f, "%-*s  %14s  %14s  %14s  %14s\n", (int)w, "shape",
          "TFLite alone", "arenad", "saved", "lower bound");
  for (const ShapeRow &r : rows) {
    std::string shape = ShapesText(r.shapes);
    if (!r.error.empty()) {
      fprintf(f, "%-*s  refused: %s\n", (int)w, shape.c_str(),
              r.error.c_str());
      continue;
    }
    fprintf(f, "%-*s  %14llu  %14llu  %14llu  %14llu\n", (int)w,
            shape.c_str(), (unsigned long long)r.alone,
            (unsigned long long)r.arenad,
            (unsigned long long)(r.alone - std::min(r.alone, r.arenad)),
            (unsigned long long)r.bound);
  }
}

int WriteShapePlot(const char *path, const char *title,
                   const std::vector<ShapeRow> &rows, std::string *err) {
  std::vector<const ShapeRow *> built;
  for (const ShapeRow &r : rows)
    if (r.error.empty())
      built.push_back(&r);
  if (built.empty()) {
    *err = "no shape could be built: nothing to draw";
    return -1;
  }
  std::string svg = Svg(title, built);
  std::string tmp = std::string(path) + ".tmp." + std::to_string(getpid());
  FILE *f = fopen(tmp.c_str(), "wx");
  if (!f) {
    *err = tmp + ": " + strerror(errno);
    return -1;
  }
  bool ok = fwrite(svg.data(), 1, svg.size(), f) == svg.size();
  ok = fclose(f) == 0 && ok;
  if (!ok || rename(tmp.c_str(), path) != 0) {
    *err = std::string(path) + ": " + strerror(errno);
    unlink(tmp.c_str());
    return -1;
  }
  return 0;
}

}  // namespace tflite_infer
