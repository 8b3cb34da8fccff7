/*
 * tflite_infer_table.h - tflite_infer's memory against input size: one
 * model built at several input shapes, one row each (TFLite alone,
 * arenad, the saving, the lower bound), and the same rows drawn as an
 * SVG chart.
 *
 *     std::vector<ShapeRow> rows = ...;        // the shapes, one row each
 *     int rc = MeasureShapes(client, model, len, true, &rows);
 *     PrintShapeTable(stdout, rows);
 *     WriteShapePlot("memory.svg", "model.tflite", rows, &err);
 *
 * Each row is built by its own arenad::TflitePlanner with the minimum
 * saving off (arenad is asked on every model, small or not: the table is
 * about memory), and its interpreter is destroyed before the next row.
 *
 * OWNERSHIP
 *  The client handle and the model bytes are borrowed for the call;
 *  rows are the caller's value types, filled in place.
 */
#ifndef TFLITE_INFER_TABLE_H
#define TFLITE_INFER_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <string>
#include <vector>

#include <arenad/arenad_client.h>

namespace tflite_infer {

/* One input shape set and what it needs. Value struct. */
struct ShapeRow {
  std::vector<std::vector<int>> shapes; /* one per input, the caller's */
  uint64_t alone = 0;  /* TFLite's arena on its own planner, bytes */
  uint64_t arenad = 0; /* arenad's arena plus TFLite's remainder */
  uint64_t bound = 0;  /* no plan of the tensors needs less */
  uint64_t input_elements = 0; /* elements of every input at shapes */
  std::string error;   /* why the row could not be built ("" when it was) */
};

/* "[1,192,192,3]" (inputs joined by ", "). */
std::string ShapesText(const std::vector<std::vector<int>> &shapes);

/* Builds the model (len bytes) at each row's shapes through client c and
 * fills the row. Returns the number of rows that failed (their error
 * set). */
size_t MeasureShapes(arenad_client_t *c, const void *model, size_t len,
                     bool in_place, std::vector<ShapeRow> *rows);

/* The rows as a table: shape | TFLite alone | arenad | saved | lower
 * bound, bytes. */
void PrintShapeTable(FILE *f, const std::vector<ShapeRow> &rows);

/* The built rows as an SVG line chart at path: x the input's elements,
 * y the bytes, TFLite alone's and arenad's lines and the lower bound
 * dashed, each point labelled with its shape. Written to a temporary
 * beside path and renamed over it. Returns 0, or -1 with *err saying
 * why (nothing is left at path then). */
int WriteShapePlot(const char *path, const char *title,
                   const std::vector<ShapeRow> &rows, std::string *err);

}  // namespace tflite_infer

#endif /* TFLITE_INFER_TABLE_H */
