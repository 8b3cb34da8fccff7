/*
 * arenad_tflite_audit.cc - judges the memory plan TensorFlow Lite made
 * for an interpreter by arenad's rules (see arenad_tflite_audit.h).
 *
 * DESIGN
 *  AuditTflitePlan() = Read (the interpreter's subgraph 0: tensors,
 *  lifetimes, writers and readers, offsets) -> Allowlist (the in-place
 *  pairs of arenad's .tflite reader) -> Views -> AuditTfliteTensors(),
 *  which merges views into buffers, runs planner_verify() on them and
 *  names the illegal overlaps with a pairwise scan. Only the .tflite
 *  reader (planner/formats/tflite.h) and the planner core's verifier
 *  (planner.h) are called, both in the client library.
 */
#include "arenad_tflite_audit.h"

#include <string.h>

#include <algorithm>
#include <map>

#include "tflite.h"
#include "tflite/core/subgraph.h"
#include "tflite/schema/schema_generated.h"

namespace arenad {

namespace {

/* The builtin operator's name of a registration, or its custom name. */
std::string OpName(const TfLiteRegistration &r) {
  if (r.builtin_code == tflite::BuiltinOperator_CUSTOM)
    return r.custom_name ? r.custom_name : "CUSTOM";
  const char *n = tflite::EnumNameBuiltinOperator(
      static_cast<tflite::BuiltinOperator>(r.builtin_code));
  return n && *n ? n : "builtin " + std::to_string(r.builtin_code);
}

/* Operators whose output TFLite may place on input 0's buffer without
 * copying (its kTfLiteInplaceOpDataUnmodified kernels). */
bool ViewOp(int code) {
  return code == tflite::BuiltinOperator_RESHAPE ||
         code == tflite::BuiltinOperator_SQUEEZE ||
         code == tflite::BuiltinOperator_EXPAND_DIMS;
}

int Fail(int code, const std::string &why, std::string *err) {
  if (err)
    *err = why;
  return code;
}

/* Per tensor of subgraph 0, while walking the execution plan. */
struct Use {
  int64_t first = -1, last = -1, writer = -1, reader = -1;
  int writer_code = -1; /* builtin code of the writer */
  std::vector<int> writer_in; /* the writer's inputs (-1: absent) */
  bool io = false;      /* a graph input or output */
  std::string writer_op, reader_op;
};

/* Reads interp's arena tensors into *out (WHAT IT READS). */
int Read(const tflite::Interpreter &interp,
         std::vector<TfliteAuditTensor> *out, std::vector<Use> *uses,
         std::string *err) {
  const tflite::Subgraph &sg = interp.primary_subgraph();
  const std::vector<int> &plan = sg.execution_plan();
  size_t n = interp.tensors_size();
  std::vector<Use> &u = *uses;
  u.assign(n, Use());
  std::vector<TfliteAuditTensor> temps;
  std::vector<bool> is_temp(n, false);
  auto use = [&](int t, int64_t at) {
    if (t < 0 || (size_t)t >= n)
      return;
    if (u[t].first < 0)
      u[t].first = at;
    u[t].last = std::max(u[t].last, at);
  };
  for (size_t i = 0; i < plan.size(); i++) {
    const auto *nr = sg.node_and_registration(plan[i]);
    if (!nr)
      return Fail(ARENA_EINVAL, "the execution plan names a missing node",
                  err);
    const TfLiteNode &node = nr->first;
    std::string op = OpName(nr->second);
    int64_t at = (int64_t)i;
    for (int k = 0; node.inputs && k < node.inputs->size; k++) {
      int t = node.inputs->data[k];
      use(t, at);
      if (t >= 0 && (size_t)t < n) {
        u[t].reader = at;
        u[t].reader_op = op;
      }
    }
    for (int k = 0; node.outputs && k < node.outputs->size; k++) {
      int t = node.outputs->data[k];
      use(t, at);
      if (t >= 0 && (size_t)t < n && u[t].writer < 0) {
        u[t].writer = at;
        u[t].writer_op = op;
        u[t].writer_code = nr->second.builtin_code;
        for (int j = 0; node.inputs && j < node.inputs->size; j++)
          u[t].writer_in.push_back(node.inputs->data[j]);
      }
    }
    for (int k = 0; node.intermediates && k < node.intermediates->size; k++)
      use(node.intermediates->data[k], at);
    for (int k = 0; node.temporaries && k < node.temporaries->size; k++) {
      int t = node.temporaries->data[k];
      if (t < 0 || (size_t)t >= n || is_temp[t])
        continue;
      const TfLiteTensor *x = interp.tensor(t);
      if (!x || x->allocation_type != kTfLiteArenaRw || !x->data.raw ||
          x->bytes == 0)
        continue;
      is_temp[t] = true;
      TfliteAuditTensor a;
      a.tensor = t;
      a.name = x->name ? x->name : "";
      a.size = x->bytes;
      a.offset = reinterpret_cast<uintptr_t>(x->data.raw);
      a.first = a.last = a.writer = a.reader = at;
      a.writer_op = a.reader_op = op;
      a.alias = a.view_of = -1;
      a.temporary = true;
      temps.push_back(a);
    }
  }
  int64_t end = plan.empty() ? 0 : (int64_t)plan.size() - 1;
  for (int t : interp.inputs())
    if (t >= 0 && (size_t)t < n) {
      u[t].io = true;
      if (u[t].first >= 0)
        u[t].first = 0;
    }
  for (int t : interp.outputs())
    if (t >= 0 && (size_t)t < n) {
      u[t].io = true;
      if (u[t].first >= 0)
        u[t].last = end;
    }
  out->clear();
  for (size_t t = 0; t < n; t++) {
    const TfLiteTensor *x = interp.tensor((int)t);
    if (is_temp[t] || u[t].first < 0 || !x ||
        x->allocation_type != kTfLiteArenaRw || !x->data.raw || x->bytes == 0)
      continue;
    TfliteAuditTensor a;
    a.tensor = (int)t;
    a.name = x->name ? x->name : "";
    a.size = x->bytes;
    a.offset = reinterpret_cast<uintptr_t>(x->data.raw);
    a.first = u[t].first;
    a.last = u[t].last;
    a.writer = u[t].writer;
    a.reader = u[t].reader;
    a.writer_op = u[t].writer_op;
    a.reader_op = u[t].reader_op;
    a.alias = a.view_of = -1;
    a.temporary = false;
    out->push_back(a);
  }
  out->insert(out->end(), temps.begin(), temps.end());
  uint64_t base = UINT64_MAX;
  for (const auto &a : *out)
    base = std::min(base, a.offset);
  for (auto &a : *out)
    a.offset -= base;
  return 0;
}

/* Whether the kernel of code reads element i of every input of its
 * output's size before it writes element i of the output: the binary
 * operators of the allowlist, which TFLite may compute in place on either
 * input. */
bool EitherInput(int code) {
  return code == tflite::BuiltinOperator_ADD ||
         code == tflite::BuiltinOperator_SUB ||
         code == tflite::BuiltinOperator_MUL;
}

/* Sets each tensor's alias to the pair arenad's .tflite reader declares
 * for it, if any (WHAT IS LEGAL). The reader names one input per output,
 * the first that qualifies; an ADD, SUB or MUL that TFLite computed on
 * the bytes of its other input of the output's size (not a graph input
 * or output) is declared on that one instead, since the kernel reads
 * both inputs elementwise. */
int Allowlist(const void *model, size_t len, const std::vector<Use> &u,
              std::vector<TfliteAuditTensor> *ts, std::string *err) {
  struct planner_tflite_options o;
  memset(&o, 0, sizeof o);
  o.keep_dequant = 1;
  struct planner_tflite_model m;
  planner_tflite_init(&m);
  char why[ARENA_ERR_LEN] = "";
  int rc = planner_tflite_read(model, len, &o, &m, why);
  if (rc) {
    planner_tflite_cleanup(&m);
    return Fail(rc, std::string("reading the model's in-place pairs: ") + why,
                err);
  }
  std::map<int, int> alias;
  for (size_t i = 0; i < m.n_planned; i++)
    if (m.tensors[i].has_alias)
      alias[(int)m.tensors[i].id] = (int)m.tensors[i].alias;
  planner_tflite_cleanup(&m);
  std::map<int, size_t> present;
  for (size_t i = 0; i < ts->size(); i++)
    if (!(*ts)[i].temporary)
      present[(*ts)[i].tensor] = i;
  for (auto &a : *ts) {
    if (a.temporary)
      continue;
    auto it = alias.find(a.tensor);
    if (it == alias.end() || !present.count(it->second))
      continue;
    a.alias = it->second;
    const Use &w = u[a.tensor];
    if (!EitherInput(w.writer_code) || (*ts)[present[a.alias]].offset == a.offset)
      continue;
    for (int x : w.writer_in) {
      auto in = present.find(x);
      if (in == present.end() || u[x].io)
        continue;
      const TfliteAuditTensor &b = (*ts)[in->second];
      if (b.offset == a.offset && b.size == a.size)
        a.alias = x;
    }
  }
  return 0;
}

/* Marks each output of a view operator that TFLite put at its input's
 * offset, with its input's size, as a view of that input. */
void Views(const std::vector<Use> &u, std::vector<TfliteAuditTensor> *ts) {
  std::map<int, size_t> at;
  for (size_t i = 0; i < ts->size(); i++)
    if (!(*ts)[i].temporary)
      at[(*ts)[i].tensor] = i;
  for (auto &a : *ts) {
    if (a.temporary || !ViewOp(u[a.tensor].writer_code))
      continue;
    const std::vector<int> &in = u[a.tensor].writer_in;
    auto it = at.find(in.empty() ? -1 : in[0]);
    if (it == at.end())
      continue;
    const TfliteAuditTensor &x = (*ts)[it->second];
    if (x.offset == a.offset && x.size == a.size)
      a.view_of = x.tensor;
  }
}

/* A buffer: a tensor with the views of it merged in. */
struct Buffer {
  uint64_t offset, size;
  int64_t first, last;
  int alias;   /* buffer index, or -1 */
  uint32_t id; /* the tensor index of its root, the member not a view */
};

/* The buffer index of each tensor: views follow view_of to their root. */
std::vector<int> Classes(const std::vector<TfliteAuditTensor> &ts,
                         const std::map<int, size_t> &at) {
  std::vector<int> cls(ts.size(), -1);
  int next = 0;
  for (size_t i = 0; i < ts.size(); i++) {
    size_t r = i;
    /* A chain of views is at most as long as the list. */
    for (size_t steps = 0; steps < ts.size() && ts[r].view_of >= 0; steps++) {
      auto it = at.find(ts[r].view_of);
      if (it == at.end())
        break;
      r = it->second;
    }
    if (cls[r] < 0)
      cls[r] = next++;
    cls[i] = cls[r];
  }
  return cls;
}

/* Buffer b as a planner tensor; alias_id: its alias's id, or -1. */
struct planner_tensor AsPlannerTensor(const Buffer &b, int64_t alias_id) {
  struct planner_tensor t;
  memset(&t, 0, sizeof t);
  t.id = b.id;
  t.size = b.size;
  t.first = b.first;
  t.last = b.last;
  t.pinned = PLANNER_NOT_PINNED;
  if (alias_id >= 0) {
    t.has_alias = 1;
    t.alias = (uint32_t)alias_id;
  }
  return t;
}

/* Whether out, reusing in's bytes, and in form a legal in-place pair at
 * one offset. */
bool LegalPair(const Buffer &out, const Buffer &in,
               const struct planner_options *o) {
  if (out.offset != in.offset || out.id == in.id)
    return false;
  struct planner_tensor a = AsPlannerTensor(out, in.id);
  struct planner_tensor b = AsPlannerTensor(in, -1);
  return planner_alias_check(&a, &b, o) == NULL;
}

bool LessByOffset(const TfliteAuditTensor &x, const TfliteAuditTensor &y) {
  if (x.offset != y.offset)
    return x.offset < y.offset;
  return x.tensor < y.tensor;
}

}  // namespace

int AuditTfliteTensors(const std::vector<TfliteAuditTensor> &tensors,
                       TfliteAudit *out, std::string *err) {
  *out = TfliteAudit();
  out->sound = false;
  std::vector<TfliteAuditTensor> ts = tensors;
  std::sort(ts.begin(), ts.end(), LessByOffset);
  std::map<int, size_t> at;
  for (size_t i = 0; i < ts.size(); i++) {
    const TfliteAuditTensor &a = ts[i];
    if (a.first < 0 || a.last < a.first)
      return Fail(ARENA_EINVAL,
                  "tensor " + std::to_string(a.tensor) + ": a bad lifetime",
                  err);
    if (!at.emplace(a.tensor, i).second)
      return Fail(ARENA_EINVAL,
                  "tensor " + std::to_string(a.tensor) + " given twice", err);
  }
  for (auto &a : ts) {
    if ((a.alias >= 0 && !at.count(a.alias)) ||
        (a.view_of >= 0 && !at.count(a.view_of)))
      return Fail(ARENA_EINVAL,
                  "tensor " + std::to_string(a.tensor) +
                      ": an alias or view of a tensor not given",
                  err);
    /* a view only where it is one buffer with its input */
    if (a.view_of >= 0) {
      const TfliteAuditTensor &x = ts[at[a.view_of]];
      if (x.offset != a.offset || x.size != a.size || x.tensor == a.tensor)
        a.view_of = -1;
    }
  }
  std::vector<int> cls = Classes(ts, at);
  int n_cls = 0;
  for (int c : cls)
    n_cls = std::max(n_cls, c + 1);
  /* Each buffer's extent, lifetime, and the alias of the member written
   * first (the root; a view's own alias is its input, inside the buffer). */
  std::vector<Buffer> bufs((size_t)n_cls);
  std::vector<int64_t> root_first((size_t)n_cls, INT64_MAX);
  std::vector<bool> seen((size_t)n_cls, false);
  for (size_t i = 0; i < ts.size(); i++) {
    Buffer &b = bufs[(size_t)cls[i]];
    const TfliteAuditTensor &a = ts[i];
    if (!seen[(size_t)cls[i]]) {
      b = Buffer{a.offset, a.size, a.first, a.last, -1, (uint32_t)a.tensor};
      seen[(size_t)cls[i]] = true;
    }
    if (a.view_of < 0)
      b.id = (uint32_t)a.tensor;
    b.size = std::max(b.size, a.size);
    b.first = std::min(b.first, a.first);
    b.last = std::max(b.last, a.last);
    if (a.view_of < 0 && a.alias >= 0 && a.first < root_first[(size_t)cls[i]]) {
      root_first[(size_t)cls[i]] = a.first;
      int target = cls[at[a.alias]];
      b.alias = target == cls[i] ? -1 : target;
    }
    out->n_views += a.view_of >= 0;
    out->arena_bytes = std::max(out->arena_bytes, a.offset + a.size);
  }
  out->n_tensors = ts.size();
  struct planner_options o;
  planner_options_init(&o);
  o.alignment = 1;
  o.in_place = 1;
  /* The verifier's judgement on the buffers. */
  std::vector<struct planner_tensor> g;
  std::vector<uint64_t> offsets;
  struct planner_plan p;
  planner_plan_init(&p);
  for (int c = 0; c < n_cls; c++) {
    const Buffer &b = bufs[(size_t)c];
    g.push_back(AsPlannerTensor(
        b, b.alias >= 0 ? (int64_t)bufs[(size_t)b.alias].id : -1));
    offsets.push_back(bufs[(size_t)c].offset);
    p.arena_bytes = std::max(p.arena_bytes,
                             bufs[(size_t)c].offset + bufs[(size_t)c].size);
  }
  int rc = 0;
  if (n_cls > 0) {
    p.offsets = offsets.data();
    p.n_offsets = offsets.size();
    struct planner_graph graph = {g.data(), g.size()};
    char why[ARENA_ERR_LEN] = "";
    rc = planner_verify(&graph, &o, &p, why);
    if (rc == ARENA_EVERIFY)
      out->verifier = why;
    else if (rc)
      return Fail(rc, std::string("verifying TFLite's layout: ") + why, err);
  }
  out->sound = rc == 0;
  /* Pairs TFLite shares that the allowlist allows. */
  for (int c = 0; c < n_cls; c++) {
    const Buffer &b = bufs[(size_t)c];
    if (b.alias >= 0 && LegalPair(b, bufs[(size_t)b.alias], &o))
      out->n_in_place++;
  }
  /* The scan: every two tensors of different buffers live at one position
   * and sharing a byte, unless their buffers, or the two tensors
   * themselves, are a legal in-place pair. */
  for (size_t i = 0; i < ts.size(); i++)
    for (size_t j = i + 1; j < ts.size() && ts[j].offset < ts[i].offset +
                                                             ts[i].size;
         j++) {
      const TfliteAuditTensor &x = ts[i], &y = ts[j];
      int cx = cls[i], cy = cls[j];
      if (cx == cy || x.last < y.first || y.last < x.first)
        continue;
      const Buffer &bx = bufs[(size_t)cx], &by = bufs[(size_t)cy];
      if ((bx.alias == cy && LegalPair(bx, by, &o)) ||
          (by.alias == cx && LegalPair(by, bx, &o)))
        continue;
      Buffer tx = {x.offset, x.size, x.first, x.last, -1, (uint32_t)x.tensor};
      Buffer ty = {y.offset, y.size, y.first, y.last, -1, (uint32_t)y.tensor};
      if ((x.alias == y.tensor && LegalPair(tx, ty, &o)) ||
          (y.alias == x.tensor && LegalPair(ty, tx, &o)))
        continue;
      bool x_first = x.first < y.first ||
                     (x.first == y.first && x.tensor < y.tensor);
      TfliteOverlap v;
      v.a = x_first ? x : y;
      v.b = x_first ? y : x;
      v.lo = y.offset;
      v.hi = std::min(x.offset + x.size, y.offset + y.size);
      v.from = std::max(x.first, y.first);
      v.to = std::min(x.last, y.last);
      out->overlaps.push_back(v);
    }
  std::sort(out->overlaps.begin(), out->overlaps.end(),
            [](const TfliteOverlap &l, const TfliteOverlap &r) {
              if (l.a.tensor != r.a.tensor)
                return l.a.tensor < r.a.tensor;
              return l.b.tensor < r.b.tensor;
            });
  out->tensors = ts;
  return 0;
}

namespace {

/* Sorts ts by offset; true when no two of them live at one position
 * share a byte, a view and what it is a view of being one buffer. */
bool Disjoint(std::vector<TfliteAuditTensor> *ts) {
  std::sort(ts->begin(), ts->end(), LessByOffset);
  std::map<int, size_t> at;
  for (size_t i = 0; i < ts->size(); i++)
    if (!(*ts)[i].temporary)
      at[(*ts)[i].tensor] = i;
  std::vector<int> cls = Classes(*ts, at);
  for (size_t i = 0; i < ts->size(); i++) {
    const TfliteAuditTensor &x = (*ts)[i];
    for (size_t j = i + 1; j < ts->size() && (*ts)[j].offset <
                                                   x.offset + x.size;
         j++) {
      const TfliteAuditTensor &y = (*ts)[j];
      if (cls[i] != cls[j] && x.first <= y.last && y.first <= x.last)
        return false;
    }
  }
  return true;
}

}  // namespace

int AuditTflitePlan(const tflite::Interpreter &interp, const void *model,
                    size_t model_len, TfliteAudit *out, std::string *err) {
  *out = TfliteAudit();
  out->sound = false;
  if (!model || model_len == 0)
    return Fail(ARENA_EINVAL, "no model bytes", err);
  std::vector<TfliteAuditTensor> ts;
  std::vector<Use> uses;
  int rc = Read(interp, &ts, &uses, err);
  if (rc)
    return rc;
  Views(uses, &ts);
  if (Disjoint(&ts)) { /* sound under any rule */
    out->sound = true;
    out->n_tensors = ts.size();
    for (const TfliteAuditTensor &t : ts) {
      out->arena_bytes = std::max(out->arena_bytes, t.offset + t.size);
      out->n_views += t.view_of >= 0;
    }
    out->tensors = ts;
    return 0;
  }
  if ((rc = Allowlist(model, model_len, uses, &ts, err)))
    return rc;
  return AuditTfliteTensors(ts, out, err);
}

namespace {

std::string Describe(const TfliteAuditTensor &t) {
  std::string s = (t.name.empty() ? "tensor" : t.name) + " (tensor " +
                  std::to_string(t.tensor) + ", " + std::to_string(t.size) +
                  " bytes, ";
  if (t.temporary)
    return s + "a temporary of node " + std::to_string(t.first) + " " +
           t.writer_op + ")";
  if (t.writer < 0)
    s += "a graph input";
  else
    s += "written by node " + std::to_string(t.writer) + " " + t.writer_op;
  if (t.reader < 0)
    s += ", read by no node";
  else
    s += ", last read by node " + std::to_string(t.reader) + " " +
         t.reader_op;
  return s + ")";
}

}  // namespace

std::string TfliteOverlapText(const TfliteOverlap &o) {
  std::string when = o.from == o.to
                         ? "node " + std::to_string(o.from)
                         : "nodes " + std::to_string(o.from) + ".." +
                               std::to_string(o.to);
  return Describe(o.a) + " and " + Describe(o.b) + " share bytes " +
         std::to_string(o.lo) + ".." + std::to_string(o.hi - 1) +
         " of the arena while both are live (" + when + ")";
}

}  // namespace arenad
