/*
 * arenad_tflite_audit.h - whether the memory plan TensorFlow Lite made
 * for an interpreter is sound: no tensor's bytes are written while
 * another tensor that lives in them is still to be read.
 *
 * TFLite's ArenaPlanner lets some outputs share their input's bytes (an
 * ADD computed in place, a RESHAPE that keeps its input's buffer). The
 * audit reads the layout TFLite chose from an allocated interpreter and
 * judges it by arenad's rules, with arenad's verifier:
 *
 *     std::unique_ptr<tflite::Interpreter> in = ...;  // AllocateTensors() done
 *     arenad::TfliteAudit a;
 *     if (arenad::AuditTflitePlan(*in, model, model_len, &a) == 0 && !a.sound)
 *       for (const auto &o : a.overlaps)
 *         puts(arenad::TfliteOverlapText(o).c_str());
 *
 * WHAT IT READS
 *  Subgraph 0 only. Every tensor in TFLite's read-write arena
 *  (kTfLiteArenaRw) with a data pointer and a non-zero size: the tensors
 *  the nodes of the execution plan name as inputs, outputs or
 *  intermediates, and each node's temporaries. Its offset is its data
 *  pointer minus the lowest such pointer (the arena's base; the arena is
 *  one allocation). Constants, TFLite's persistent arena, dynamic and
 *  caller-placed (kTfLiteCustom) tensors are left out: nothing plans
 *  them. Lifetimes are those arenad::TflitePlanner learns: from the first
 *  to the last position in the execution plan whose node names the
 *  tensor, graph inputs from position 0, graph outputs to the last one;
 *  a temporary lives at its node.
 *
 * WHAT IS LEGAL
 *  Two tensors live at one position may share bytes only as
 *  - an in-place pair arenad's .tflite reader declares from its
 *    allowlist of kernels (planner/formats/tflite.h, IN-PLACE PAIRS) and
 *    the planner accepts (planner.h, IN-PLACE SHARING): the output at its
 *    input's offset, written at the input's last read. The reader names
 *    one input per output, the first that qualifies; where TFLite put
 *    the output of an ADD, SUB or MUL on its other input of the same
 *    size instead (not a graph input or output), that input is the pair,
 *    since the kernel reads both inputs element by element; or
 *  - a view: the output of a RESHAPE, SQUEEZE or EXPAND_DIMS at its
 *    input's offset with its input's size. TFLite's kernels of those
 *    operators then copy nothing, so the two are one buffer under two
 *    names; the audit merges them into one buffer that lives from the
 *    first to the last position of either.
 *  The buffers (views merged, every tensor otherwise alone) and TFLite's
 *  offsets become a planner graph and plan, alignment 1, which
 *  planner_verify() checks: the same verifier every plan arenad serves
 *  passes. A pairwise scan of the tensors then names every overlap the
 *  rules above do not allow. The plan is sound when the verifier accepts
 *  it; its message on the first conflict it finds is kept, and stands
 *  alone should the scan find nothing to name.
 *  When no two tensors live at one position share a byte at all (a view
 *  and its input being one buffer), the plan is sound under any rule:
 *  AuditTflitePlan() says so at once, without reading the model's
 *  allowlist or running the verifier (the common case on small models,
 *  where reading the model again would cost more than the model's whole
 *  arena; arenad_tflite.h, SMALL MODELS).
 *
 * OWNERSHIP
 *  The interpreter and the model bytes are borrowed for the call; the
 *  results are value types the caller owns. No state is kept.
 */
#ifndef ARENAD_TFLITE_AUDIT_H
#define ARENAD_TFLITE_AUDIT_H

#include <stddef.h>
#include <stdint.h>

#include <string>
#include <vector>

#include "tflite/interpreter.h"

namespace arenad {

/* One tensor of TFLite's arena, as the audit sees it. Value struct. */
struct TfliteAuditTensor {
  int tensor;        /* index in subgraph 0 */
  std::string name;  /* the model's name for it ("" when none) */
  uint64_t size;     /* bytes */
  uint64_t offset;   /* data pointer minus the arena's base, bytes */
  int64_t first;     /* lifetime, execution-plan positions, inclusive */
  int64_t last;
  int64_t writer;    /* position of the node that first writes it, -1 for a
                        graph input */
  int64_t reader;    /* position of the last node that reads it, -1 when
                        none does (a graph output, a dead output) */
  std::string writer_op; /* that node's operator ("ADD", ...), "" for -1 */
  std::string reader_op;
  int alias;         /* the tensor whose bytes the allowlist lets it
                        reuse, or -1 */
  int view_of;       /* the tensor it is a view of (WHAT IS LEGAL), -1 */
  bool temporary;    /* a kernel temporary of node `first` */
};

/* One overlap the rules do not allow: tensors a and b share bytes
 * [lo, hi) of the arena while both live at positions [from, to]. a is
 * the one written first. Value struct. */
struct TfliteOverlap {
  TfliteAuditTensor a, b;
  uint64_t lo, hi;   /* bytes from the arena's base, hi exclusive */
  int64_t from, to;  /* positions where both are live */
};

/* What AuditTflitePlan() found. Value struct. */
struct TfliteAudit {
  bool sound;          /* planner_verify() accepted TFLite's layout */
  size_t n_tensors;    /* arena tensors read (temporaries included) */
  uint64_t arena_bytes; /* max(offset + size) over them */
  size_t n_in_place;   /* allowlisted in-place pairs TFLite shares */
  size_t n_views;      /* views merged (WHAT IS LEGAL) */
  std::vector<TfliteOverlap> overlaps; /* illegal overlaps, by a then b */
  std::string verifier; /* planner_verify()'s message when it refused */
  std::vector<TfliteAuditTensor> tensors; /* what was read, by offset */
};

/* Audits the layout of interp's subgraph 0 (allocated: AllocateTensors()
 * returned kTfLiteOk) for the model at model (model_len bytes, the bytes
 * interp was built from; read for the in-place allowlist). Returns 0 and
 * fills *out, or an ARENA_E* code with *err (may be NULL) saying why:
 * ARENA_EINVAL (no model bytes, or the execution plan names a missing
 * node), ARENA_EPARSE and the other codes of planner_tflite_read() (the
 * allowlist cannot be read from the model), ARENA_ENOMEM. On failure
 * *out is empty and not sound. */
int AuditTflitePlan(const tflite::Interpreter &interp, const void *model,
                    size_t model_len, TfliteAudit *out, std::string *err);

/* The judgement of AuditTflitePlan() on tensors already read (for a
 * caller that learned them itself; alias and view_of set as above, ids
 * unique). Fills every field of *out but tensors, which it sets to the
 * given ones sorted by offset. Returns 0, ARENA_EINVAL (a bad lifetime,
 * an alias or view naming a tensor not given) or ARENA_ENOMEM, with
 * *err (may be NULL) saying why. */
int AuditTfliteTensors(const std::vector<TfliteAuditTensor> &tensors,
                       TfliteAudit *out, std::string *err);

/* One line naming overlap o: the two tensors (index, name, bytes), the
 * node that writes and the last node that reads each, and the shared
 * bytes, e.g.
 *   "t3 (tensor 3, 256 bytes, written by node 1 ADD, last read by node 5
 *   SUB) and t7 (...) share bytes 0..255 while both are live (nodes 4..5)" */
std::string TfliteOverlapText(const TfliteOverlap &o);

}  // namespace arenad

#endif /* ARENAD_TFLITE_AUDIT_H */
