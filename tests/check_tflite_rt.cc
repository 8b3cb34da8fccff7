/*
 * check_tflite_rt.cc - TensorFlow Lite's interpreter runs on arenad's
 * plans (tflite_rt_suite; C++, built against the bundled TFLite).
 *
 * TFLite checks only that a caller-given address is 64-byte aligned and
 * large enough, never that two tensors live at once do not share bytes.
 * So these tests check for themselves, from the interpreter arenad's
 * planner built: a plan is proven only when
 *  (a) every tensor the planner placed has its data pointer at the
 *      arena's base plus its planned offset, 64-byte aligned;
 *  (b) no two placed tensors live at the same node share a byte, apart
 *      from a declared in-place pair;
 *  (c) the outputs of three invokes on seeded inputs are bit-identical to
 *      those of TFLite's own planner;
 *  (d) arenad's arena plus what TFLite still allocates in its own arena
 *      (its accounting, GetMemoryAllocInfo) is never more than TFLite
 *      alone;
 *  (e) those outputs are also bit-identical to the oracle's: the same
 *      model with every tensor TFLite would put in its arena given bytes
 *      of its own, so that nothing shares; and TFLite's own plan passes
 *      the audit (arenad_tflite_audit.h). TFLite's own planner is no
 *      oracle: on the models of the "oracle" case it is wrong.
 *
 * Test cases:
 *  models   every bundled model, planned by a real arenad (the client's
 *           fallback off, so the plan is the daemon's): the ones TFLite
 *           runs proven as above (one table row each), with the daemon's
 *           plan the one this process computes itself, the others
 *           refused by TFLite itself, with an error that says why. A
 *           second planner on the same daemon fetches the stored plan
 *           by key (source cache, FETCHED PLANS) and builds one
 *           interpreter, its tensors at the first planner's offsets.
 *  generated  the models of gen_models.h, planned in this process: every
 *           kind of kernel on the in-place allowlist in one chain, all
 *           its pairs shared and proven; a chain of ADDs; 24 random
 *           models of branches; MediaPipe's Convolution2DTransposeBias
 *           (arenad::TfliteOpResolver's registration), its output also
 *           checked against a naive scattering reference written here;
 *           a small segmentation net of MediaPipe's vision operators
 *           (RESIZE_BILINEAR, TRANSPOSE_CONV, ...), float and int8, on
 *           arenad's plan; models whose operators the resolver lacks,
 *           refused with one message naming each once.
 *  oracle   the reduced graph on which TFLite's own planner overwrites a
 *           tensor still to be read: the oracle's outputs from arenad's
 *           plan, sharing on and off, other outputs from TFLite's, and
 *           the audit naming the overlap; 32 random models of the kinds
 *           in-place sharing meets (gen_models::SharingModel), arenad's
 *           plan always giving the oracle's outputs, and the audit
 *           calling TFLite's plan unsound wherever its outputs are
 *           wrong; the audit's negative control, a sound plan doctored
 *           to overlap.
 *  control  the negative control: a deliberately overlapping plan
 *           (TflitePlanner's test-only mode) must fail check (b).
 *  learn    a plan TFLite's arena disagrees with after AllocateTensors
 *           (a temporary moved, test-only) is dropped for TFLite's own
 *           planner, and the next planner learns and places again; the
 *           model identity ignores the weights and not the structure;
 *           Build() on mobilenet_v2 leaves glibc's mmap threshold where
 *           it was (no large block freed through malloc).
 *  infer    the tests' tflite_infer (the example on the small set of
 *           kernels): 8 processes at once against one arenad compute one
 *           plan between them (the daemon's counters) and print the same
 *           outputs; --planner tflite prints them too; a model of
 *           missing operators exits 65 with one line naming them; the
 *           files of tests/data/generated/ are the generator's; --audit on
 *           the reduced graph and on a bundled model.
 *  bench    bench_tflite, the process-level benchmark, runs one round on
 *           one model and prints its three rows.
 */
#include <fcntl.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "arenad_tflite.h"
#include "arenad_tflite_audit.h"
#include "arenad_tflite_ops.h"
#include "gen_models.h"
#include "tflite_infer_run.h"
#include "arenad_tflite_pipeline.h"
#include "tflite/core/subgraph.h"
#include "tflite/interpreter_builder.h"
#include "tflite/kernels/builtin_op_kernels.h"
#include "tflite/model_builder.h"
#include "tflite/schema/schema_generated.h"
extern "C" {
#include "daemon_harness.h"
#include "testutil.h"
#include "wire.h"
}

/* Last: check.h defines a macro `fail` that C++ library headers use. */
#include <check.h>

extern "C" Suite *tflite_rt_suite(void);

namespace {

constexpr const char *kDir = "tests/data/models/";
constexpr int kInvokes = 3;

/* Every bundled model, and whether TFLite runs it. */
struct Model {
  const char *name;
  bool runs; /* false: TFLite refuses it (see why) */
  const char *why;
  const char *said; /* in Build()'s error when refused */
};
const Model kModels[] = {
    {"audio_preprocessor_int8", false, "signal operators are not TFLite builtins",
     "no kernel for custom operator 'SignalWindow' (version 1)"},
    {"dtln_noise_suppression", true, nullptr, nullptr},
    {"face_detection_short_range", true, nullptr, nullptr},
    {"hello_world_float", true, nullptr, nullptr},
    {"keyword_scrambled", true, nullptr, nullptr},
    {"magic_wand", true, nullptr, nullptr},
    {"micro_speech_lstm", true, nullptr, nullptr},
    {"micro_speech_quantized", true, nullptr, nullptr},
    {"mobilenet_v2_quantized_1x3x224x224", true, nullptr, nullptr},
    {"person_detect", false, "quantized_dimension must be in range",
     "TFLite said: quantized_dimension must be in range [0, 1). Was 3."},
    {"trained_lstm", true, nullptr, nullptr},
};
constexpr int kNModels = sizeof kModels / sizeof kModels[0];

/* The planner the tests build on: asks arenad whatever the model's size,
 * since most models here are small (test_small_model covers the
 * default, SMALL MODELS in arenad_tflite.h). */
class Planner : public arenad::TflitePlanner {
 public:
  Planner(arenad_client_t *c, const void *model, size_t len,
          const tflite::OpResolver &resolver)
      : arenad::TflitePlanner(c, model, len, resolver) {
    SetMinSaving(0);
  }
};

/* The mobilenet model the memory tests use. */
constexpr const char *kMobilenet = "mobilenet_v2_quantized_1x3x224x224";

std::vector<char> ReadModel(const char *name) {
  std::string path = std::string(kDir) + name + ".tflite";
  std::vector<char> v;
  FILE *f = fopen(path.c_str(), "rb");
  ck_assert_msg(f != NULL, "cannot open %s", path.c_str());
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0)
    v.insert(v.end(), buf, buf + n);
  fclose(f);
  return v;
}

/* A client whose daemon is absent: every plan is computed locally. */
arenad_client_t *LocalClient(void) {
  struct arenad_client_options o;
  arenad_client_options_init(&o);
  o.socket_path = "/nonexistent/arenad-tflite-test.sock";
  o.connect_timeout_ms = 50;
  arenad_client_t *c = NULL;
  ck_assert_int_eq(arenad_client_open(&o, &c), 0);
  return c;
}

/* Checks (a): returns the number of placed tensors not at their
 * address. */
size_t Misplaced(const arenad::TflitePlanner &p, tflite::Interpreter *in) {
  size_t bad = 0;
  for (const auto &b : p.buffers()) {
    if (!b.placed)
      continue;
    const uint8_t *d = reinterpret_cast<const uint8_t *>(in->tensor(b.tensor)->data.raw);
    if (d != p.arena() + b.offset || reinterpret_cast<uintptr_t>(d) % 64)
      bad++;
  }
  return bad;
}

/* Checks (b) on the interpreter's real data pointers: the number of
 * pairs of placed tensors live at one node that share a byte without
 * being a declared in-place pair. */
size_t Conflicts(const arenad::TflitePlanner &p, tflite::Interpreter *in) {
  const auto &bs = p.buffers();
  size_t bad = 0;
  for (size_t i = 0; i < bs.size(); i++)
    for (size_t j = i + 1; j < bs.size(); j++) {
      const auto &x = bs[i], &y = bs[j];
      if (!x.placed || !y.placed || x.size == 0 || y.size == 0 ||
          x.last < y.first || y.last < x.first || x.alias == y.tensor ||
          y.alias == x.tensor)
        continue;
      uintptr_t a = reinterpret_cast<uintptr_t>(in->tensor(x.tensor)->data.raw);
      uintptr_t b = reinterpret_cast<uintptr_t>(in->tensor(y.tensor)->data.raw);
      if (a < b + y.size && b < a + x.size)
        bad++;
    }
  return bad;
}

/* A client of the daemon at sock with the fallback off: a plan it
 * returns is the daemon's. */
arenad_client_t *DaemonClient(const char *sock) {
  struct arenad_client_options o;
  arenad_client_options_init(&o);
  o.socket_path = sock;
  o.fallback = 0;
  arenad_client_t *c = NULL;
  ck_assert_int_eq(arenad_client_open(&o, &c), 0);
  return c;
}

/* The oracle: an interpreter of the model on which every tensor TFLite
 * would put in its arena has bytes of its own (a caller-given address,
 * SetCustomAllocationForTensor, in one buffer per tensor), so nothing
 * shares; kernel temporaries stay in TFLite's arena, apart from the
 * tensors. Its outputs over kInvokes invokes in *outputs. */
void OracleOutputs(const void *model, size_t len,
                   std::vector<uint8_t> *outputs) {
  arenad::TfliteOpResolver resolver;
  auto fb = tflite::FlatBufferModel::BuildFromBuffer(
      static_cast<const char *>(model), len);
  ck_assert_ptr_nonnull(fb.get());
  std::unique_ptr<tflite::Interpreter> probe, in;
  ck_assert_int_eq(tflite::InterpreterBuilder(*fb, resolver)(&probe),
                   kTfLiteOk);
  ck_assert_int_eq(probe->AllocateTensors(), kTfLiteOk);
  ck_assert_int_eq(tflite::InterpreterBuilder(*fb, resolver)(&in), kTfLiteOk);
  std::vector<void *> own;
  std::vector<int> given;
  std::set<int> temps;
  const tflite::Subgraph &sg = probe->primary_subgraph();
  for (int n : sg.execution_plan()) {
    const TfLiteIntArray *t = sg.node_and_registration(n)->first.temporaries;
    for (int k = 0; t && k < t->size; k++)
      temps.insert(t->data[k]);
  }
  for (int t = 0; t < (int)probe->tensors_size(); t++) {
    const TfLiteTensor *x = probe->tensor(t);
    if (x->allocation_type != kTfLiteArenaRw || temps.count(t) ||
        x->bytes == 0)
      continue;
    void *p = aligned_alloc(64, (x->bytes + 63) / 64 * 64);
    ck_assert_ptr_nonnull(p);
    own.push_back(p);
    TfLiteCustomAllocation a = {p, x->bytes};
    ck_assert_int_eq(in->SetCustomAllocationForTensor(t, a), kTfLiteOk);
    given.push_back(t);
  }
  ck_assert_int_eq(in->AllocateTensors(), kTfLiteOk);
  /* a tensor a kernel made dynamic has heap bytes of its own instead */
  for (size_t k = 0; k < given.size(); k++)
    if (in->tensor(given[k])->allocation_type == kTfLiteCustom)
      ck_assert_ptr_eq(in->tensor(given[k])->data.raw, own[k]);
  std::string err;
  ck_assert_msg(arenad::RunTflite(in.get(), 7, kInvokes, outputs, &err), "%s",
                err.c_str());
  in.reset();
  for (void *p : own)
    free(p);
}

/* Proves planner p's interpreter of the model (len bytes) against
 * TFLite's own and the oracle's, checks (a) to (e); the outputs of ours
 * in *outputs when asked. */
void Prove(const char *name, const void *model, size_t len,
           arenad::TflitePlanner *p, tflite::Interpreter *ours,
           std::vector<uint8_t> *outputs) {
  std::unique_ptr<tflite::Interpreter> theirs;
  ck_assert_int_eq(p->BuildTfliteOnly(&theirs), 0);
  std::vector<uint8_t> a, b, c;
  std::string err;
  arenad::TfliteAudit audit;
  ck_assert_msg(arenad::AuditTflitePlan(*theirs, model, len, &audit,
                                        &err) == 0, "%s: %s", name,
                err.c_str());
  ck_assert_msg(audit.sound, "%s: TFLite's own plan is unsound: %s", name,
                audit.overlaps.empty()
                    ? audit.verifier.c_str()
                    : arenad::TfliteOverlapText(audit.overlaps[0]).c_str());
  ck_assert_msg(arenad::RunTflite(ours, 7, kInvokes, &a, &err), "%s: %s",
                name, err.c_str());
  ck_assert_msg(arenad::RunTflite(theirs.get(), 7, kInvokes, &b, &err),
                "%s: %s", name, err.c_str());
  ck_assert_msg(a == b, "%s: outputs differ from TFLite's own planner", name);
  OracleOutputs(model, len, &c);
  ck_assert_msg(a == c, "%s: outputs differ from the oracle's", name);
  ck_assert_uint_eq(Misplaced(*p, ours), 0);
  ck_assert_uint_eq(Conflicts(*p, ours), 0);
  const arenad::TflitePlanInfo &i = p->info();
  ck_assert_msg(i.total() <= i.tflite_alone,
                "%s: %llu bytes with arenad, %llu alone", name,
                (unsigned long long)i.total(),
                (unsigned long long)i.tflite_alone);
  ck_assert_uint_eq(i.n_placed + i.n_left, i.n_tensors);
  /* TFLite alone is TFLite's own accounting of its own planner */
  ck_assert_uint_eq(i.tflite_alone, arenad::TfliteArenaBytes(*theirs, nullptr));
  /* learning touched none of the space reserved for it */
  ck_assert_msg(i.probe_resident == 0, "%s: %llu bytes of the learning space "
                "resident", name, (unsigned long long)i.probe_resident);
  if (outputs != nullptr)
    *outputs = a;
}

START_TEST(test_models) {
  const Model &m = kModels[_i];
  std::vector<char> bytes = ReadModel(m.name);
  setenv("ARENAD", TFLITE_TEST_BUILD "/arenad", 0);
  struct harness h;
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  arenad_client_t *c = DaemonClient(h.sock), *lc = LocalClient();
  arenad::TfliteOpResolver resolver;
  {
    Planner p(c, bytes.data(), bytes.size(), resolver);
    std::unique_ptr<tflite::Interpreter> ours;
    int rc = p.Build(&ours);
    if (!m.runs) {
      ck_assert_msg(rc != 0, "%s: TFLite was expected to refuse it (%s)",
                    m.name, m.why);
      /* the error says why, TFLite's own words folded in */
      ck_assert_msg(strstr(p.error(), m.said) != NULL, "%s: %s", m.name,
                    p.error());
      printf("tflite_rt: %-36s not run by TFLite: %s\n", m.name, m.why);
    } else {
      ck_assert_msg(rc == 0, "%s: %s", m.name, p.error());
      const arenad::TflitePlanInfo &i = p.info();
      ck_assert_msg(i.source == arenad::TflitePlanSource::kDaemon ||
                        i.source == arenad::TflitePlanSource::kTflite,
                    "%s: plan from %s", m.name,
                    arenad::TflitePlanSourceName(i.source));
      Prove(m.name, bytes.data(), bytes.size(), &p, ours.get(), nullptr);
      /* the daemon's plan is the one this process computes */
      Planner local(lc, bytes.data(), bytes.size(), resolver);
      std::unique_ptr<tflite::Interpreter> li;
      ck_assert_int_eq(local.Build(&li), 0);
      ck_assert_uint_eq(local.info().plan_bytes, i.plan_bytes);
      ck_assert_uint_eq(local.buffers().size(), p.buffers().size());
      for (size_t k = 0; k < p.buffers().size(); k++)
        ck_assert_uint_eq(local.buffers()[k].offset, p.buffers()[k].offset);
      li.reset();
      /* a second process's Build: the daemon's stored plan, fetched by
       * key with its placement record, placed in the one interpreter
       * returned, nothing learned (FETCHED PLANS) */
      Planner hit(c, bytes.data(), bytes.size(), resolver);
      std::unique_ptr<tflite::Interpreter> hi;
      ck_assert_msg(hit.Build(&hi) == 0, "%s: %s", m.name, hit.error());
      const arenad::TflitePlanInfo &hi2 = hit.info();
      if (i.source == arenad::TflitePlanSource::kDaemon) {
        ck_assert_msg(hi2.source == arenad::TflitePlanSource::kCache,
                      "%s: second build from %s", m.name,
                      arenad::TflitePlanSourceName(hi2.source));
        ck_assert_msg(hi2.fetched, "%s: not fetched", m.name);
        ck_assert(!hi2.fetch_refused);
        ck_assert_uint_eq(hi2.n_interpreters, 1);
        ck_assert_uint_eq(hi2.arena_bytes, i.arena_bytes);
        ck_assert_uint_eq(hi2.tflite_alone, i.tflite_alone);
        ck_assert_uint_eq(hi2.n_placed, i.n_placed);
        ck_assert_uint_eq(hit.buffers().size(), p.buffers().size());
        ck_assert_uint_eq(hit.n_learned(), p.n_learned());
        for (size_t k = 0; k < p.n_learned(); k++) { /* then temporaries */
          ck_assert_int_eq(hit.buffers()[k].tensor, p.buffers()[k].tensor);
          ck_assert_uint_eq(hit.buffers()[k].offset, p.buffers()[k].offset);
        }
        /* a program may call AllocateTensors() again: nothing moves */
        ck_assert_int_eq(hi->AllocateTensors(), kTfLiteOk);
        Prove(m.name, bytes.data(), bytes.size(), &hit, hi.get(), nullptr);
      } else {
        ck_assert_int_eq((int)hi2.source, (int)i.source);
      }
      hi.reset();
      printf("tflite_rt: | %s | %llu | %llu + %llu = %llu | %lld | yes | "
             "%s, %zu/%zu placed, %zu temporaries %llu bytes, %zu in place, "
             "plan %llu; %zu interpreter(s), then %s with %zu |\n",
             m.name, (unsigned long long)i.tflite_alone,
             (unsigned long long)i.arena_bytes,
             (unsigned long long)i.remainder, (unsigned long long)i.total(),
             (long long)i.tflite_alone - (long long)i.total(),
             arenad::TflitePlanSourceName(i.source), i.n_placed,
             i.n_tensors, i.n_temporaries,
             (unsigned long long)i.temporary_bytes, i.n_shared,
             (unsigned long long)i.plan_bytes, i.n_interpreters,
             arenad::TflitePlanSourceName(hi2.source), hi2.n_interpreters);
    }
    ours.reset();
  }
  arenad_client_close(lc);
  arenad_client_close(c);
  hn_cleanup(&h);
}
END_TEST

/* The builtin code of the node of interp that writes tensor t, or -1. */
int WriterOf(tflite::Interpreter *interp, int t) {
  for (int n : interp->execution_plan()) {
    const auto *nr = interp->node_and_registration(n);
    for (int k = 0; k < nr->first.outputs->size; k++)
      if (nr->first.outputs->data[k] == t)
        return nr->second.builtin_code;
  }
  return -1;
}

/* The builtin codes of the writers of the in-place pairs p shared: an
 * output and its declared input at one offset. */
std::vector<int> SharedKinds(const arenad::TflitePlanner &p,
                             tflite::Interpreter *interp) {
  std::vector<int> kinds;
  for (const auto &b : p.buffers()) {
    if (b.alias < 0 || !b.placed)
      continue;
    for (const auto &x : p.buffers())
      if (x.tensor == b.alias && x.placed && x.offset == b.offset) {
        int w = WriterOf(interp, x.first > b.first ? x.tensor : b.tensor);
        kinds.push_back(w);
      }
  }
  return kinds;
}

/* Plans and proves one generated model in this process; the planner's
 * info in *info, the kinds of the pairs shared in *kinds. */
void ProveGenerated(const char *name, const std::vector<uint8_t> &bytes,
                    arenad::TflitePlanInfo *info, std::vector<int> *kinds,
                    std::vector<uint8_t> *outputs) {
  arenad_client_t *c = LocalClient();
  arenad::TfliteOpResolver resolver;
  {
    Planner p(c, bytes.data(), bytes.size(), resolver);
    std::unique_ptr<tflite::Interpreter> ours;
    ck_assert_msg(p.Build(&ours) == 0, "%s: %s", name, p.error());
    Prove(name, bytes.data(), bytes.size(), &p, ours.get(), outputs);
    *info = p.info();
    if (kinds != nullptr)
      *kinds = SharedKinds(p, ours.get());
    ours.reset();
  }
  arenad_client_close(c);
}

/* Every allowlisted kind shares its input's bytes in TFLite's kernels
 * with identical outputs: all pairs declared are taken. */
START_TEST(test_generated_kinds) {
  arenad::TflitePlanInfo i;
  std::vector<int> kinds;
  ProveGenerated("kinds", gen_models::KindsModel(), &i, &kinds, nullptr);
  ck_assert_uint_eq(kinds.size(), i.n_shared);
  const std::vector<int> want = gen_models::KindsModelOps();
  for (int k : want) {
    bool seen = false;
    for (int x : kinds)
      seen |= x == k;
    ck_assert_msg(seen, "no pair shared on %s",
                  tflite::EnumNameBuiltinOperator((tflite::BuiltinOperator)k));
  }
  printf("tflite_rt kinds: every allowlisted kind, %zu pairs shared, arena "
         "%llu + %llu (TFLite alone %llu); outputs identical\n",
         i.n_shared, (unsigned long long)i.arena_bytes,
         (unsigned long long)i.remainder,
         (unsigned long long)i.tflite_alone);
}
END_TEST

/* A model whose operators the resolver lacks fails in Build() with one
 * message naming each missing operator once (KindsModel has three ADDs,
 * which this resolver has, and RESHAPE twice), and no interpreter. */
START_TEST(test_missing_operators) {
  std::vector<uint8_t> m = gen_models::KindsModel();
  tflite::MutableOpResolver only_add;
  only_add.AddBuiltin(tflite::BuiltinOperator_ADD,
                      tflite::ops::builtin::Register_ADD(), 1, 6);
  arenad_client_t *c = LocalClient();
  Planner p(c, m.data(), m.size(), only_add);
  std::unique_ptr<tflite::Interpreter> in;
  ck_assert_int_eq(p.Build(&in), ARENA_EUNSUPPORTED);
  ck_assert_ptr_null(in.get());
  std::string why = p.error();
  const std::vector<int> kinds = gen_models::KindsModelOps();
  for (int k : kinds) {
    const char *name =
        tflite::EnumNameBuiltinOperator((tflite::BuiltinOperator)k);
    std::string word = " " + std::string(name) + " (version"; /* whole */
    size_t at = why.find(word);
    if (k == tflite::BuiltinOperator_ADD) {
      ck_assert_msg(at == std::string::npos, "ADD named: %s", why.c_str());
      continue;
    }
    ck_assert_msg(at != std::string::npos, "%s not named: %s", name,
                  why.c_str());
    ck_assert_msg(why.find(word, at + 1) == std::string::npos,
                  "%s named twice: %s", name, why.c_str());
  }
  printf("tflite_rt missing operators: %s\n", why.c_str());
  arenad_client_close(c);
}
END_TEST

/* A model with MAXIMUM under two operator codes (versions 1 and 2) and
 * FLOOR, which arenad's small set of kernels lacks, fails in Build()
 * with one message that names each missing operator once, with every
 * version, and not ADD, which the resolver has. */
START_TEST(test_missing_operator_versions) {
  std::vector<uint8_t> m = gen_models::UnregisteredOpsModel();
  arenad::TfliteOpResolver resolver;
  arenad_client_t *c = LocalClient();
  Planner p(c, m.data(), m.size(), resolver);
  std::unique_ptr<tflite::Interpreter> in;
  ck_assert_int_eq(p.Build(&in), ARENA_EUNSUPPORTED);
  ck_assert_ptr_null(in.get());
  std::string why = p.error();
  for (const char *name : {"MAXIMUM", "FLOOR"}) {
    std::string word = " " + std::string(name) + " (";
    size_t at = why.find(word);
    ck_assert_msg(at != std::string::npos, "%s not named: %s", name,
                  why.c_str());
    ck_assert_msg(why.find(word, at + 1) == std::string::npos,
                  "%s named twice: %s", name, why.c_str());
  }
  ck_assert_msg(why.find("MAXIMUM (versions 1, 2)") != std::string::npos,
                "%s", why.c_str());
  ck_assert_msg(why.find("ADD") == std::string::npos, "%s", why.c_str());
  printf("tflite_rt missing operator versions: %s\n", why.c_str());
  arenad_client_close(c);
}
END_TEST

/* A custom operator without a kernel: TFLite's builder accepts it (it
 * leaves a placeholder a delegate may claim) and only the allocation
 * fails, which must still give the one message naming it, not TFLite's
 * "unresolved custom op" for the first of them alone. */
START_TEST(test_missing_custom_operator) {
  std::vector<uint8_t> m = gen_models::TransposeConvModel();
  tflite::MutableOpResolver only_add;
  only_add.AddBuiltin(tflite::BuiltinOperator_ADD,
                      tflite::ops::builtin::Register_ADD(), 1, 6);
  arenad_client_t *c = LocalClient();
  Planner p(c, m.data(), m.size(), only_add);
  std::unique_ptr<tflite::Interpreter> in;
  ck_assert_int_eq(p.Build(&in), ARENA_EUNSUPPORTED);
  ck_assert_ptr_null(in.get());
  std::string why = p.error();
  ck_assert_msg(why.find("has no kernel for custom operator "
                         "'Convolution2DTransposeBias' (version 1)") !=
                    std::string::npos, "%s", why.c_str());
  ck_assert_msg(why.find("ADD") == std::string::npos, "%s", why.c_str());
  ck_assert_msg(why.find("TFLite said") == std::string::npos, "%s",
                why.c_str());
  printf("tflite_rt missing custom operator: %s\n", why.c_str());
  arenad_client_close(c);
}
END_TEST

/* The builtin codes of the nodes interp runs. */
std::vector<int> NodeKinds(tflite::Interpreter *interp) {
  std::vector<int> kinds;
  for (int n : interp->execution_plan())
    kinds.push_back(interp->node_and_registration(n)->second.builtin_code);
  return kinds;
}

/* MediaPipe's vision operators (RESIZE_BILINEAR, TRANSPOSE_CONV,
 * RESIZE_NEAREST_NEIGHBOR, DEPTH_TO_SPACE, SPACE_TO_DEPTH, HARD_SWISH,
 * PRELU, float16 weights behind DEQUANTIZE, ...) in a small segmentation
 * net, float and int8: every one runs on TFLite's kernel, on arenad's
 * plan (computed in this process, every tensor placed), with outputs
 * identical to TFLite's own planner's (Prove). */
START_TEST(test_generated_segmenter) {
  for (bool int8 : {false, true}) {
    const char *name = int8 ? "segmenter int8" : "segmenter float";
    std::vector<uint8_t> bytes = gen_models::SegmenterModel(int8);
    arenad_client_t *c = LocalClient();
    arenad::TfliteOpResolver resolver;
    {
      Planner p(c, bytes.data(), bytes.size(), resolver);
      std::unique_ptr<tflite::Interpreter> ours;
      ck_assert_msg(p.Build(&ours) == 0, "%s: %s", name, p.error());
      const arenad::TflitePlanInfo &i = p.info();
      ck_assert_msg(i.source == arenad::TflitePlanSource::kLocal,
                    "%s: plan from %s", name,
                    arenad::TflitePlanSourceName(i.source));
      ck_assert_uint_gt(i.n_placed, 0);
      ck_assert_uint_eq(i.n_left, 0);
      Prove(name, bytes.data(), bytes.size(), &p, ours.get(), nullptr);
      std::vector<int> ran = NodeKinds(ours.get());
      for (int k : gen_models::SegmenterModelOps()) {
        bool seen = false;
        for (int x : ran)
          seen |= x == k;
        ck_assert_msg(seen, "%s: no %s node", name,
                      tflite::EnumNameBuiltinOperator((tflite::BuiltinOperator)k));
      }
      printf("tflite_rt %s: %zu nodes, %zu/%zu tensors placed, %zu "
             "temporaries %llu bytes; arena %llu + %llu (TFLite alone "
             "%llu); outputs identical\n",
             name, ran.size(), i.n_placed, i.n_tensors, i.n_temporaries,
             (unsigned long long)i.temporary_bytes,
             (unsigned long long)i.arena_bytes,
             (unsigned long long)i.remainder,
             (unsigned long long)i.tflite_alone);
      ours.reset();
    }
    arenad_client_close(c);
  }
}
END_TEST

/* A chain whose two ADDs may reuse their inputs, and 24 random models of
 * branches: proven, never more memory than TFLite alone. */
START_TEST(test_generated_random) {
  arenad::TflitePlanInfo i;
  ProveGenerated("chain", gen_models::ChainModel(), &i, nullptr, nullptr);
  ck_assert_uint_gt(i.n_shared, 0);
  uint64_t alone = 0, ours = 0;
  int smaller = 0;
  for (uint64_t seed = 0; seed < 24; seed++) {
    std::string name = "random " + std::to_string(seed);
    ProveGenerated(name.c_str(), gen_models::RandomModel(seed), &i, nullptr,
                   nullptr);
    alone += i.tflite_alone;
    ours += i.total();
    smaller += i.total() < i.tflite_alone;
  }
  printf("tflite_rt generated: 24 models, smaller than TFLite alone on %d; "
         "%llu bytes in all against %llu; outputs identical\n",
         smaller, (unsigned long long)ours, (unsigned long long)alone);
}
END_TEST

/* The transposed convolution of gen_models::TransposeConvModel() by
 * scattering, in double: for every input pixel and kernel tap, the
 * product lands on output (iy*2 - 0 + ky, ix*2 - 0 + kx) (SAME with these
 * sizes pads 1 in all, after). */
std::vector<double> ScatterReference(const float *in, const float *w,
                                     const float *bias) {
  constexpr int kIn = 4, kC = 3, kK = 3, kS = 2, kOut = 8, kOc = 2;
  std::vector<double> out((size_t)kOut * kOut * kOc);
  for (int y = 0; y < kOut; y++)
    for (int x = 0; x < kOut; x++)
      for (int o = 0; o < kOc; o++)
        out[((size_t)y * kOut + x) * kOc + o] = bias[o];
  for (int iy = 0; iy < kIn; iy++)
    for (int ix = 0; ix < kIn; ix++)
      for (int ky = 0; ky < kK; ky++)
        for (int kx = 0; kx < kK; kx++) {
          int y = iy * kS + ky, x = ix * kS + kx;
          if (y >= kOut || x >= kOut)
            continue;
          for (int o = 0; o < kOc; o++)
            for (int c = 0; c < kC; c++)
              out[((size_t)y * kOut + x) * kOc + o] +=
                  (double)in[((size_t)iy * kIn + ix) * kC + c] *
                  w[(((size_t)o * kK + ky) * kK + kx) * kC + c];
        }
  return out;
}

START_TEST(test_generated_transpose_conv) {
  std::vector<uint8_t> bytes = gen_models::TransposeConvModel();
  arenad::TflitePlanInfo i;
  ProveGenerated("transpose conv", bytes, &i, nullptr, nullptr);
  /* its values: one invoke on a second interpreter of TFLite's own */
  arenad::TfliteOpResolver resolver;
  arenad_client_t *c = LocalClient();
  {
    Planner p(c, bytes.data(), bytes.size(), resolver);
    std::unique_ptr<tflite::Interpreter> in;
    ck_assert_int_eq(p.BuildTfliteOnly(&in), 0);
    std::vector<uint8_t> out;
    std::string err;
    ck_assert_msg(arenad::RunTflite(in.get(), 7, 1, &out, &err), "%s",
                  err.c_str());
    std::vector<double> want = ScatterReference(
        in->tensor(0)->data.f, in->tensor(1)->data.f, in->tensor(2)->data.f);
    const float *got = in->tensor(3)->data.f;
    const float *sum = in->tensor(4)->data.f;
    for (size_t k = 0; k < want.size(); k++) {
      ck_assert_msg(fabs(got[k] - want[k]) <= 1e-5 * (1 + fabs(want[k])),
                    "value %zu: %g, reference %g", k, (double)got[k], want[k]);
      ck_assert(sum[k] == got[k] + got[k]);
    }
    in.reset();
  }
  arenad_client_close(c);
  printf("tflite_rt transpose conv: outputs identical, values within "
         "rounding of the reference, %zu pairs shared\n", i.n_shared);
}
END_TEST

/* The checker must catch an overlapping plan on some model the planner
 * places. */
START_TEST(test_negative_control) {
  arenad_client_t *c = LocalClient();
  arenad::TfliteOpResolver resolver;
  bool caught = false;
  for (int k = 0; k < kNModels && !caught; k++) {
    if (!kModels[k].runs)
      continue;
    std::vector<char> bytes = ReadModel(kModels[k].name);
    Planner p(c, bytes.data(), bytes.size(), resolver);
    std::unique_ptr<tflite::Interpreter> in;
    p.TestOnlyOverlap(true);
    if (p.Build(&in) != 0 || p.info().n_placed == 0)
      continue;
    caught = Conflicts(p, in.get()) > 0;
    in.reset();
  }
  ck_assert_msg(caught, "no overlapping plan was noticed");
  arenad_client_close(c);
}
END_TEST

/* The outputs of bytes on TFLite's own planner, and the audit of its
 * plan. */
void TfliteOwn(const std::vector<uint8_t> &bytes,
               std::vector<uint8_t> *outputs, arenad::TfliteAudit *audit) {
  arenad_client_t *c = LocalClient();
  arenad::TfliteOpResolver resolver;
  {
    Planner p(c, bytes.data(), bytes.size(), resolver);
    std::unique_ptr<tflite::Interpreter> in;
    ck_assert_int_eq(p.BuildTfliteOnly(&in), 0);
    std::string err;
    ck_assert_msg(arenad::AuditTflitePlan(*in, bytes.data(), bytes.size(),
                                          audit, &err) == 0,
                  "%s", err.c_str());
    ck_assert_msg(arenad::RunTflite(in.get(), 7, kInvokes, outputs, &err),
                  "%s", err.c_str());
  }
  arenad_client_close(c);
}

/* The outputs of bytes on arenad's plan (Build()), in-place sharing on or
 * off; the planner's info in *info. */
void ArenadOutputs(const std::vector<uint8_t> &bytes, bool in_place,
                   std::vector<uint8_t> *outputs,
                   arenad::TflitePlanInfo *info) {
  arenad_client_t *c = LocalClient();
  arenad::TfliteOpResolver resolver;
  {
    Planner p(c, bytes.data(), bytes.size(), resolver);
    p.SetInPlace(in_place);
    std::unique_ptr<tflite::Interpreter> in;
    ck_assert_msg(p.Build(&in) == 0, "%s", p.error());
    ck_assert_uint_eq(Conflicts(p, in.get()), 0);
    std::string err;
    ck_assert_msg(arenad::RunTflite(in.get(), 7, kInvokes, outputs, &err),
                  "%s", err.c_str());
    *info = p.info();
    in.reset();
  }
  arenad_client_close(c);
}

/* The overlap of audit a between tensors x and y, or null. */
const arenad::TfliteOverlap *FindOverlap(const arenad::TfliteAudit &a, int x,
                                         int y) {
  for (const auto &o : a.overlaps)
    if ((o.a.tensor == x && o.b.tensor == y) ||
        (o.a.tensor == y && o.b.tensor == x))
      return &o;
  return nullptr;
}

/* The reduced graph of the finding (gen_models::ReshapeInPlaceModel):
 * the oracle's channels 0..3 are zeros, as the arithmetic says; arenad's
 * plan, sharing on and off, gives the oracle's outputs bit for bit; the
 * audit of TFLite's own plan names t3 and t7, and TFLite's own planner
 * gives other outputs. */
START_TEST(test_reshape_in_place) {
  std::vector<uint8_t> bytes = gen_models::ReshapeInPlaceModel(), oracle,
                       own, on, off;
  OracleOutputs(bytes.data(), bytes.size(), &oracle);
  /* [1, 4, 4, 8] floats per invoke: channels 0..3 are RELU(t3 - RELU6(t3)) */
  ck_assert_uint_eq(oracle.size(), (size_t)kInvokes * 16 * 8 * 4);
  const float *f = reinterpret_cast<const float *>(oracle.data());
  for (size_t i = 0; i < oracle.size() / 4; i++)
    if (i % 8 < 4)
      ck_assert_msg(f[i] == 0.0f, "oracle value %zu: %g", i, (double)f[i]);
  arenad::TflitePlanInfo i_on, i_off;
  ArenadOutputs(bytes, true, &on, &i_on);
  ArenadOutputs(bytes, false, &off, &i_off);
  ck_assert_msg(on == oracle, "sharing on: outputs differ from the oracle "
                "(plan from %s)", arenad::TflitePlanSourceName(i_on.source));
  ck_assert_msg(off == oracle, "sharing off: outputs differ from the oracle "
                "(plan from %s)", arenad::TflitePlanSourceName(i_off.source));
  arenad::TfliteAudit a;
  TfliteOwn(bytes, &own, &a);
  for (const auto &o : a.overlaps)
    printf("tflite_rt reshape in place: audit: %s\n",
           arenad::TfliteOverlapText(o).c_str());
  const float *g = reinterpret_cast<const float *>(own.data());
  printf("tflite_rt reshape in place: TFLite alone %llu bytes, channel 0 "
         "of the output on TFLite's own planner %g %g %g %g, the oracle's "
         "%g %g %g %g; arenad %llu + %llu bytes (sharing on, %zu pairs, "
         "plan from %s), %llu + %llu (off)\n",
         (unsigned long long)i_on.tflite_alone, (double)g[0], (double)g[8],
         (double)g[16], (double)g[24], (double)f[0], (double)f[8],
         (double)f[16], (double)f[24], (unsigned long long)i_on.arena_bytes,
         (unsigned long long)i_on.remainder, i_on.n_shared,
         arenad::TflitePlanSourceName(i_on.source),
         (unsigned long long)i_off.arena_bytes,
         (unsigned long long)i_off.remainder);
  ck_assert_msg(!a.sound, "the audit passed TFLite's plan");
  const arenad::TfliteOverlap *o = FindOverlap(a, 3, 7);
  ck_assert_msg(o != nullptr, "no overlap of t3 and t7 named");
  ck_assert_str_eq(o->a.name.c_str(), "t3");
  ck_assert_str_eq(o->a.writer_op.c_str(), "ADD");
  ck_assert_str_eq(o->a.reader_op.c_str(), "SUB");
  ck_assert_str_eq(o->b.writer_op.c_str(), "ADD");
  ck_assert_uint_eq(o->hi - o->lo, 16 * 4 * 4);
  ck_assert_msg(own != oracle,
                "TFLite's own planner gave the oracle's outputs");
}
END_TEST

/* No unchecked fallback (arenad_tflite.h): on the reduced graph, whose
 * TFLite plan is unsound, a Build() made to prefer TFLite's own planner
 * (as when arenad's plan saves nothing) audits that plan, refuses it and
 * places arenad's, saying why, with the oracle's outputs; on a bundled
 * model, whose TFLite plan is sound, the same Build() does use TFLite's
 * plan. The adapter before the audit returned TFLite's plan on both, and
 * on the reduced graph its wrong outputs. */
START_TEST(test_unsound_fallback_refused) {
  std::vector<uint8_t> bytes = gen_models::ReshapeInPlaceModel(), oracle;
  OracleOutputs(bytes.data(), bytes.size(), &oracle);
  arenad_client_t *c = LocalClient();
  arenad::TfliteOpResolver resolver;
  {
    Planner p(c, bytes.data(), bytes.size(), resolver);
    p.TestOnlyPreferTflite(true);
    std::unique_ptr<tflite::Interpreter> in;
    ck_assert_msg(p.Build(&in) == 0, "%s", p.error());
    const arenad::TflitePlanInfo &i = p.info();
    ck_assert_msg(i.source != arenad::TflitePlanSource::kTflite,
                  "Build() fell back to TFLite's unsound plan");
    ck_assert(i.tflite_unsound);
    ck_assert_uint_eq(i.n_placed, i.n_tensors);
    ck_assert_msg(strstr(p.note(), "TFLite's own plan is unsound") != NULL,
                  "%s", p.note());
    ck_assert_msg(strstr(p.note(), "arenad's plan is used") != NULL, "%s",
                  p.note());
    ck_assert_uint_eq(Conflicts(p, in.get()), 0);
    std::vector<uint8_t> ours;
    std::string err;
    ck_assert_msg(arenad::RunTflite(in.get(), 7, kInvokes, &ours, &err),
                  "%s", err.c_str());
    ck_assert_msg(ours == oracle, "outputs differ from the oracle");
    printf("tflite_rt unsound fallback: %s\n", p.note());
    in.reset();
  }
  {
    std::vector<char> m = ReadModel("magic_wand");
    Planner p(c, m.data(), m.size(), resolver);
    p.TestOnlyPreferTflite(true);
    std::unique_ptr<tflite::Interpreter> in;
    ck_assert_msg(p.Build(&in) == 0, "%s", p.error());
    ck_assert_int_eq((int)p.info().source,
                     (int)arenad::TflitePlanSource::kTflite);
    ck_assert(!p.info().tflite_unsound);
    ck_assert_str_eq(p.note(), "");
    in.reset();
  }
  arenad_client_close(c);
}
END_TEST

/* Random models of the kinds in-place sharing meets
 * (gen_models::SharingModel): arenad's plan, sharing on and off, gives
 * the oracle's outputs bit for bit; wherever TFLite's own planner does
 * not, the audit of its plan says unsound. */
START_TEST(test_sharing_random) {
  constexpr int kModelsRun = 32;
  int unsound = 0, wrong = 0, fell_back = 0;
  size_t pairs = 0;
  for (int seed = 0; seed < kModelsRun; seed++) {
    std::vector<uint8_t> bytes = gen_models::SharingModel((uint64_t)seed),
                         oracle, own, on, off;
    OracleOutputs(bytes.data(), bytes.size(), &oracle);
    arenad::TflitePlanInfo i_on, i_off;
    ArenadOutputs(bytes, true, &on, &i_on);
    ArenadOutputs(bytes, false, &off, &i_off);
    ck_assert_msg(on == oracle, "model %d, sharing on: outputs differ from "
                  "the oracle (plan from %s)", seed,
                  arenad::TflitePlanSourceName(i_on.source));
    ck_assert_msg(off == oracle, "model %d, sharing off: outputs differ from "
                  "the oracle (plan from %s)", seed,
                  arenad::TflitePlanSourceName(i_off.source));
    arenad::TfliteAudit a;
    TfliteOwn(bytes, &own, &a);
    ck_assert_msg(own == oracle || !a.sound, "model %d: TFLite's own planner "
                  "is wrong and the audit passed it", seed);
    unsound += !a.sound;
    wrong += own != oracle;
    fell_back += i_on.source == arenad::TflitePlanSource::kTflite;
    pairs += i_on.n_shared;
  }
  printf("tflite_rt sharing: %d random models, arenad = oracle on all "
         "(sharing on, %zu pairs; and off), %d on TFLite's own planner; "
         "TFLite's own planner wrong on %d, its plan unsound on %d\n",
         kModelsRun, pairs, fell_back, wrong, unsound);
  /* the generator still makes models of the shape */
  ck_assert_int_gt(wrong, 0);
}
END_TEST

/* The audit's negative control: TFLite's sound plan of the chain model,
 * doctored so that a tensor sits on another one live at the same time,
 * is reported, naming the two; left alone it is sound. */
START_TEST(test_audit_control) {
  std::vector<uint8_t> bytes = gen_models::ChainModel(), own;
  arenad::TfliteAudit a;
  TfliteOwn(bytes, &own, &a);
  ck_assert_msg(a.sound, "%s", a.verifier.c_str());
  ck_assert_uint_eq(a.overlaps.size(), 0);
  ck_assert_uint_gt(a.n_tensors, 2);
  std::vector<arenad::TfliteAuditTensor> ts = a.tensors;
  bool moved = false;
  int x = -1, y = -1;
  for (size_t i = 0; i < ts.size() && !moved; i++)
    for (size_t j = 0; j < ts.size() && !moved; j++) {
      if (i == j || ts[i].last < ts[j].first || ts[j].last < ts[i].first ||
          ts[i].offset == ts[j].offset)
        continue;
      ts[j].offset = ts[i].offset;
      x = ts[i].tensor;
      y = ts[j].tensor;
      moved = true;
    }
  ck_assert(moved);
  arenad::TfliteAudit d;
  std::string err;
  ck_assert_int_eq(arenad::AuditTfliteTensors(ts, &d, &err), 0);
  ck_assert(!d.sound);
  ck_assert_msg(!d.verifier.empty(), "no message from the verifier");
  const arenad::TfliteOverlap *o = FindOverlap(d, x, y);
  ck_assert_msg(o != nullptr, "the overlap of tensors %d and %d is not named",
                x, y);
  std::string line = arenad::TfliteOverlapText(*o);
  ck_assert_msg(line.find("(tensor " + std::to_string(x) + ",") !=
                        std::string::npos &&
                    line.find("(tensor " + std::to_string(y) + ",") !=
                        std::string::npos,
                "%s", line.c_str());
  printf("tflite_rt audit control: %s; verifier: %s\n", line.c_str(),
         d.verifier.c_str());
}
END_TEST

/* A plan whose temporary TFLite puts elsewhere (TestOnlyMoveTemporary) is
 * dropped after AllocateTensors: Build() still succeeds, on TFLite's own
 * planner, says why, and proves; a planner without the fault then learns
 * and places the model. */
START_TEST(test_dropped_plan) {
  std::vector<char> bytes = ReadModel(kMobilenet);
  arenad_client_t *c = LocalClient();
  arenad::TfliteOpResolver resolver;
  {
    Planner p(c, bytes.data(), bytes.size(), resolver);
    p.TestOnlyMoveTemporary(true);
    std::unique_ptr<tflite::Interpreter> in;
    ck_assert_msg(p.Build(&in) == 0, "%s", p.error());
    const arenad::TflitePlanInfo &i = p.info();
    ck_assert(i.dropped);
    ck_assert_int_eq((int)i.source, (int)arenad::TflitePlanSource::kTflite);
    ck_assert_msg(strstr(p.error(), "temporaries") != NULL, "%s", p.error());
    ck_assert_uint_eq(i.n_placed, 0);
    Prove("dropped", bytes.data(), bytes.size(), &p, in.get(), nullptr);
    in.reset();
    Planner q(c, bytes.data(), bytes.size(), resolver);
    ck_assert_msg(q.Build(&in) == 0, "%s", q.error());
    ck_assert(!q.info().dropped);
    ck_assert_int_eq((int)q.info().source,
                     (int)arenad::TflitePlanSource::kLocal);
    ck_assert_uint_eq(q.info().n_interpreters, 1);
    ck_assert_uint_eq(q.info().n_placed, q.info().n_tensors);
    Prove("learned again", bytes.data(), bytes.size(), &q, in.get(), nullptr);
    ck_assert(!q.info().placed_again);
    in.reset();
    /* PLACING AGAIN: the next Build() learns nothing; one whose remembered
     * placement TFLite's check refuses forgets it and learns again */
    ck_assert_msg(q.Build(&in) == 0, "%s", q.error());
    ck_assert(q.info().placed_again);
    ck_assert_uint_eq(q.info().n_interpreters, 1);
    ck_assert_uint_eq(q.info().n_placed, q.info().n_tensors);
    Prove("placed again", bytes.data(), bytes.size(), &q, in.get(), nullptr);
    in.reset();
    q.TestOnlyMoveTemporary(true);
    ck_assert_msg(q.Build(&in) == 0, "%s", q.error());
    ck_assert(!q.info().placed_again);
    ck_assert(q.info().dropped);
    ck_assert_int_eq((int)q.info().source,
                     (int)arenad::TflitePlanSource::kTflite);
    in.reset();
    q.TestOnlyMoveTemporary(false);
    ck_assert_msg(q.Build(&in) == 0, "%s", q.error());
    ck_assert(!q.info().placed_again); /* forgotten: learned */
    ck_assert_uint_eq(q.info().n_placed, q.info().n_tensors);
    in.reset();
    printf("tflite_rt dropped: %s\n", p.error());
  }
  arenad_client_close(c);
}
END_TEST

/* The constant buffer of the model at m with the most bytes (largest) or
 * the fewest but at least one (!largest): its data's offset in m and its
 * size. */
std::pair<size_t, size_t> BufferOf(const std::vector<char> &m, bool largest) {
  const tflite::Model *model = tflite::GetModel(m.data());
  std::pair<size_t, size_t> best(0, 0);
  for (const tflite::Buffer *b : *model->buffers()) {
    if (!b || !b->data() || b->data()->size() == 0)
      continue;
    size_t at = (size_t)(b->data()->data() -
                         reinterpret_cast<const uint8_t *>(m.data()));
    size_t n = b->data()->size();
    if (best.second == 0 || (largest ? n > best.second : n < best.second))
      best = {at, n};
  }
  return best;
}

/* The model identity: stable, blind to the bytes of large constant
 * buffers (weights), not to small ones (a RESHAPE's shape) or to the
 * graph; ARENA_EPARSE for bytes that are not a model. */
START_TEST(test_model_identity) {
  std::vector<char> m = ReadModel(kMobilenet);
  uint8_t a[ARENAD_CLIENT_DIGEST_LEN], b[ARENAD_CLIENT_DIGEST_LEN];
  ck_assert_int_eq(arenad::TfliteModelIdentity(m.data(), m.size(), a), 0);
  ck_assert_int_eq(arenad::TfliteModelIdentity(m.data(), m.size(), b), 0);
  ck_assert_mem_eq(a, b, sizeof a);
  std::pair<size_t, size_t> big = BufferOf(m, true), small = BufferOf(m, false);
  ck_assert_uint_gt(big.second, 4096);
  ck_assert_uint_le(small.second, 4096);
  std::vector<char> w = m; /* other weights */
  for (size_t k = 0; k < big.second; k += 7)
    w[big.first + k] ^= 0x5a;
  ck_assert_int_eq(arenad::TfliteModelIdentity(w.data(), w.size(), b), 0);
  ck_assert_mem_eq(a, b, sizeof a);
  std::vector<char> s = m; /* another small constant */
  s[small.first] ^= 1;
  ck_assert_int_eq(arenad::TfliteModelIdentity(s.data(), s.size(), b), 0);
  ck_assert_msg(memcmp(a, b, sizeof a) != 0, "a small constant is ignored");
  std::vector<uint8_t> k1 = gen_models::KindsModel();
  std::vector<uint8_t> k2 = gen_models::ChainModel();
  ck_assert_int_eq(arenad::TfliteModelIdentity(k1.data(), k1.size(), a), 0);
  ck_assert_int_eq(arenad::TfliteModelIdentity(k2.data(), k2.size(), b), 0);
  ck_assert_msg(memcmp(a, b, sizeof a) != 0, "two graphs share an identity");
  const char junk[] = "not a model at all";
  ck_assert_int_eq(arenad::TfliteModelIdentity(junk, sizeof junk, a),
                   ARENA_EPARSE);
  ck_assert_int_eq(arenad::TfliteModelIdentity(nullptr, 0, a), ARENA_EPARSE);
}
END_TEST

/* Whether malloc is glibc's: not under AddressSanitizer, whose allocator
 * replaces it (and its mallinfo2). */
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kGlibcMalloc = false;
#else
constexpr bool kGlibcMalloc = true;
#endif

/* Whether glibc serves a 1 MiB malloc from mmap, that is, whether its
 * dynamic mmap threshold is still below 1 MiB (freeing a mapped block
 * raises it to that block's size). The block is kept in *keep, so that
 * the probe itself moves nothing. */
bool MegabyteMapped(void **keep) {
  size_t before = mallinfo2().hblks;
  *keep = malloc(1 << 20);
  ck_assert_ptr_nonnull(*keep);
  return mallinfo2().hblks == before + 1;
}

/* Build() of mobilenet_v2 (a miss, planned by a daemon) frees no large
 * block through malloc: glibc's mmap threshold stays below 1 MiB, so the
 * real arena and the kernels' invoke-time buffers are not left on the
 * brk heap. The model is mapped from its file, so that reading it frees
 * nothing either. */
START_TEST(test_miss_keeps_malloc_threshold) {
  std::string path = std::string(kDir) + kMobilenet + ".tflite";
  int fd = open(path.c_str(), O_RDONLY);
  ck_assert_int_ge(fd, 0);
  struct stat st;
  ck_assert_int_eq(fstat(fd, &st), 0);
  void *model =
      mmap(nullptr, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  ck_assert(model != MAP_FAILED);
  close(fd);
  setenv("ARENAD", TFLITE_TEST_BUILD "/arenad", 0);
  struct harness h;
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  arenad_client_t *c = DaemonClient(h.sock);
  arenad::TfliteOpResolver resolver;
  void *before = NULL, *after = NULL;
  ck_assert_msg(MegabyteMapped(&before) || !kGlibcMalloc,
                "threshold raised before Build()");
  {
    Planner p(c, model, (size_t)st.st_size, resolver);
    std::unique_ptr<tflite::Interpreter> in;
    ck_assert_msg(p.Build(&in) == 0, "%s", p.error());
    ck_assert_int_eq((int)p.info().source,
                     (int)arenad::TflitePlanSource::kDaemon);
    ck_assert_msg(MegabyteMapped(&after) || !kGlibcMalloc,
                  "Build() raised glibc's mmap threshold above 1 MiB");
    in.reset();
  }
  free(after);
  free(before);
  arenad_client_close(c);
  hn_cleanup(&h);
  munmap(model, (size_t)st.st_size);
}
END_TEST

/* Reads a whole file into a string ("" when missing). */
std::string Slurp(const std::string &path) {
  size_t len = 0;
  char *s = tu_read_file(path.c_str(), &len);
  std::string r = s ? std::string(s, len) : std::string();
  free(s);
  return r;
}

/* Starts tflite_infer with args, stdout and stderr into out. */
pid_t Spawn(const std::vector<std::string> &args, const std::string &out) {
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 1);
    dup2(fd, 2);
    std::vector<char *> argv;
    for (const auto &a : args)
      argv.push_back(const_cast<char *>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

/* The outputs tflite_infer printed: its lines from "output ". */
std::string Outputs(const std::string &text) {
  size_t at = text.find("output ");
  return at == std::string::npos ? std::string() : text.substr(at);
}

/* 8 tflite_infer processes at once against one arenad: one plan
 * computed, the others served from its cache or joined to the job in
 * flight; all print the outputs of TFLite's own planner. */
START_TEST(test_infer_eight_processes) {
  constexpr int kProcs = 8;
  setenv("ARENAD", TFLITE_TEST_BUILD "/arenad", 0);
  struct harness h;
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  std::string bin = TFLITE_TEST_BUILD "/tests/tflite_infer";
  std::string model = std::string(kDir) + "magic_wand.tflite";
  pid_t pids[kProcs];
  for (int i = 0; i < kProcs; i++)
    pids[i] = Spawn({bin, "--socket", h.sock, "--no-fallback", "--min-saving",
                     "0", "--invokes", "3", "--values", "0", model},
                    std::string(h.dir) + "/out." + std::to_string(i));
  std::string ref = std::string(h.dir) + "/out.tflite";
  int st;
  pid_t own = Spawn({bin, "--planner", "tflite", "--invokes", "3", "--values",
                     "0", model}, ref);
  ck_assert_int_eq(waitpid(own, &st, 0), own);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s",
                Slurp(ref).c_str());
  std::string expect = Outputs(Slurp(ref));
  ck_assert(!expect.empty());
  for (int i = 0; i < kProcs; i++) {
    ck_assert_int_eq(waitpid(pids[i], &st, 0), pids[i]);
    std::string text = Slurp(std::string(h.dir) + "/out." + std::to_string(i));
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "process %d: %s", i,
                  text.c_str());
    ck_assert_msg(text.find("plan: from daemon,") != std::string::npos ||
                      text.find("plan: from cache,") != std::string::npos,
                  "process %d: %s", i, text.c_str());
    ck_assert_msg(Outputs(text) == expect, "process %d printed other outputs",
                  i);
  }
  Arenad__V1__Response *r = hn_stats(&h);
  ck_assert_ptr_nonnull(r);
  ck_assert_ptr_nonnull(r->stats);
  uint64_t computed = r->stats->plans_computed;
  wire_free_response(r);
  ck_assert_uint_eq(computed, 1);
  printf("tflite_rt infer: %d processes, plans computed %llu\n", kProcs,
         (unsigned long long)computed);
  hn_cleanup(&h);
}
END_TEST

/* Whether a process's RSS is its own program's doing: not under
 * AddressSanitizer, whose allocator holds freed memory in quarantine and
 * grows RSS on every malloc. */
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kRssIsOurs = false;
#else
constexpr bool kRssIsOurs = true;
#endif

/* Runs args to completion with its output into out; *text is what it
 * printed. Returns its exit status, or -1 when it did not exit. */
int RunInfer(const std::vector<std::string> &args, const std::string &out,
             std::string *text) {
  int st;
  pid_t pid = Spawn(args, out);
  ck_assert_int_eq(waitpid(pid, &st, 0), pid);
  *text = Slurp(out);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The text of the line of text that starts with prefix ("" if none). */
std::string LineOf(const std::string &text, const std::string &prefix) {
  size_t at = text.find(prefix);
  if (at == std::string::npos)
    return std::string();
  size_t end = text.find('\n', at);
  return text.substr(at, end == std::string::npos ? end : end - at);
}

/* tflite_infer as the stability test users run: its outputs digest is
 * the same with TFLite's own planner and with arenad's over several
 * invokes, and differs with the number of invokes; --soak prints the
 * memory ten times and passes on a flat curve, and fails on a build that
 * leaks (the negative control); bad --soak values and unreadable models
 * get their exit statuses. */
START_TEST(test_infer_digest_and_soak) {
  char *dir = tu_mkdtemp();
  ck_assert_ptr_nonnull(dir);
  std::string d = dir, bin = TFLITE_TEST_BUILD "/tests/tflite_infer";
  std::string model = std::string(kDir) + "magic_wand.tflite";
  std::string nosock = d + "/no.sock", text, ref;
  /* no daemon: arenad's plan is made in the process */
  ck_assert_int_eq(RunInfer({bin, "--socket", nosock, "--min-saving", "0", "--invokes", "4",
                             "--values", "0", model}, d + "/a", &text), 0);
  ck_assert_int_eq(RunInfer({bin, "--planner", "tflite", "--invokes", "4",
                             "--values", "0", model}, d + "/b", &ref), 0);
  std::string digest = LineOf(text, "outputs digest: ");
  ck_assert_msg(digest.size() > 64 && digest.find("(4 invokes)") !=
                    std::string::npos, "%s", text.c_str());
  std::string own = LineOf(ref, "outputs digest: ");
  ck_assert_str_eq(digest.c_str(), own.c_str());
  ck_assert(Outputs(text) == Outputs(ref));
  ck_assert_int_eq(RunInfer({bin, "--socket", nosock, "--min-saving", "0", "--invokes", "1",
                             model}, d + "/c", &text), 0);
  std::string one = LineOf(text, "outputs digest: ").substr(0, 80);
  ck_assert_msg(one.size() == 80 && one != digest.substr(0, 80), "%s",
                text.c_str());
  /* a flat soak (its memory figures are the program's own only without
   * AddressSanitizer, whose allocator keeps what is freed: there the
   * soak must still print its ten lines and end with 0 or 1) */
  int soak_rc = RunInfer({bin, "--socket", nosock, "--min-saving", "0", "--soak", "100",
                          "--values", "2", model}, d + "/soak", &text);
  ck_assert_msg(soak_rc == 0 || (!kRssIsOurs && soak_rc == 1), "exit %d: %s",
                soak_rc, text.c_str());
  size_t lines = 0;
  for (size_t at = 0; (at = text.find("soak: invoke ", at)) != std::string::npos;
       at++)
    lines++;
  ck_assert_uint_eq(lines, 10);
  ck_assert_msg(!kRssIsOurs || text.find("soak: flat") != std::string::npos,
                "%s", text.c_str());
  /* the negative control: 256 KiB leaked per invoke */
  std::string leaky = TFLITE_TEST_BUILD "/tests/tflite_infer_testing";
  setenv("TFLITE_INFER_TEST_LEAK", "262144", 1);
  int rc = RunInfer({leaky, "--socket", nosock, "--min-saving", "0", "--soak", "100", model},
                    d + "/leak", &text);
  unsetenv("TFLITE_INFER_TEST_LEAK");
  /* under AddressSanitizer its leak checker also fails the process at
   * exit, with a status of its own */
  ck_assert_msg(rc == 1 || (!kRssIsOurs && rc != 0), "exit %d: %s", rc,
                text.c_str());
  ck_assert_msg(text.find("soak: memory grew") != std::string::npos, "%s",
                text.c_str());
  /* the same testing build without the leak passes */
  rc = RunInfer({leaky, "--socket", nosock, "--min-saving", "0", "--soak", "100", model},
                d + "/noleak", &text);
  ck_assert_msg(rc == 0 || (!kRssIsOurs && rc == 1), "exit %d: %s", rc,
                text.c_str());
  /* usage and input errors */
  ck_assert_int_eq(RunInfer({bin, "--soak", "5", model}, d + "/u", &text), 64);
  std::string empty = d + "/empty.tflite";
  FILE *f = fopen(empty.c_str(), "w");
  ck_assert_ptr_nonnull(f);
  fclose(f);
  ck_assert_int_eq(RunInfer({bin, empty}, d + "/e", &text), 66);
  ck_assert_msg(text.find("empty file") != std::string::npos, "%s",
                text.c_str());
  ck_assert_int_eq(RunInfer({bin, d + "/missing.tflite"}, d + "/m", &text),
                   66);
  ck_assert_msg(text.find("No such file") != std::string::npos, "%s",
                text.c_str());
  tu_rm_rf(dir);
  free(dir);
  printf("tflite_rt soak: digest %s; soak flat, leak caught\n",
         digest.c_str() + strlen("outputs digest: "));
}
END_TEST

/* tflite_infer --audit: on the reduced graph of the finding, exit 1 and
 * a line naming t3 and t7, their writers and readers and the bytes; on a
 * bundled model, exit 0 and the sound line; a missing model 66, bytes
 * that are no model 65. */
START_TEST(test_infer_audit) {
  char *dir = tu_mkdtemp();
  ck_assert_ptr_nonnull(dir);
  std::string d = dir, bin = TFLITE_TEST_BUILD "/tests/tflite_infer", text;
  std::vector<uint8_t> m = gen_models::ReshapeInPlaceModel();
  std::string path = d + "/reduced.tflite";
  FILE *f = fopen(path.c_str(), "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(m.data(), 1, m.size(), f), m.size());
  fclose(f);
  ck_assert_int_eq(RunInfer({bin, "--audit", path}, d + "/a", &text), 1);
  ck_assert_msg(text.find("audit: t3 (tensor 3, 256 bytes, written by node 1 "
                          "ADD, last read by node 5 SUB) and t7 (tensor 7, "
                          "256 bytes, written by node 4 ADD, last read by "
                          "node 7 RESHAPE) share bytes ") != std::string::npos,
                "%s", text.c_str());
  ck_assert_msg(text.find("audit: TFLite's plan is unsound: 1 illegal "
                          "overlap among ") != std::string::npos,
                "%s", text.c_str());
  ck_assert_msg(text.find("outputs digest") == std::string::npos, "%s",
                text.c_str());
  printf("tflite_rt infer audit:\n%s", text.c_str());
  std::string wand = std::string(kDir) + "magic_wand.tflite";
  ck_assert_int_eq(RunInfer({bin, "--audit", wand}, d + "/b", &text), 0);
  ck_assert_msg(text.find("audit: TFLite's plan is sound (8 tensors, 15168 "
                          "bytes; ") != std::string::npos, "%s", text.c_str());
  ck_assert_int_eq(RunInfer({bin, "--audit", d + "/missing.tflite"}, d + "/c",
                            &text), 66);
  std::string junk = d + "/junk.tflite";
  f = fopen(junk.c_str(), "wb");
  ck_assert_ptr_nonnull(f);
  fputs("not a model at all", f);
  fclose(f);
  ck_assert_int_eq(RunInfer({bin, "--audit", junk}, d + "/e", &text), 65);
  ck_assert_int_eq(RunInfer({bin, "--help"}, d + "/h", &text), 0);
  ck_assert(text.find("--audit") != std::string::npos);
  tu_rm_rf(dir);
  free(dir);
}
END_TEST

/* Stops h's daemon, poisons its database (tests/poison_db: every plan
 * replaced by the naive layout of its graph, stored as final), and
 * starts it again. */
void PoisonDaemon(struct harness *h) {
  ck_assert_int_eq(hn_stop(h), 0);
  std::string log = std::string(h->dir) + "/poison.txt";
  const char *argv[] = {tu_bin("POISON_DB"), h->db, NULL};
  int st = tu_run(argv, NULL, NULL, log.c_str(), log.c_str());
  ck_assert_msg(st == 0, "poison_db: exit %d: %s", st, Slurp(log).c_str());
  ck_assert_int_eq(hn_start(h), 0);
}

/* A poisoned plan in arenad's cache (arenad_tflite.h, UNUSABLE PLANS):
 * tflite_infer plans locally, runs with the outputs of TFLite's own
 * planner, says why on its plan line and in TFLite's log, and reports
 * the plan (larger than TFLite alone, the most it can use), which
 * arenad replaces by its own for the next process; without fallback,
 * the report alone gets arenad's new plan. The old client took the
 * poisoned plan and, unable to use it, fell back to TFLite's planner. */
START_TEST(test_infer_poisoned_plan) {
  setenv("ARENAD", TFLITE_TEST_BUILD "/arenad", 0);
  struct harness h;
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  std::string bin = TFLITE_TEST_BUILD "/tests/tflite_infer";
  std::string model = std::string(kDir) + "magic_wand.tflite";
  std::string out = std::string(h.dir) + "/out.txt", text;
  ck_assert_int_eq(RunInfer({bin, "--planner", "tflite", "--invokes", "2",
                             model}, out, &text), 0);
  std::string expect = Outputs(text);
  ck_assert(!expect.empty());
  std::vector<std::string> run = {bin, "--socket", h.sock, "--min-saving",
                                  "0", "--invokes", "2", model};
  ck_assert_int_eq(RunInfer(run, out, &text), 0);
  ck_assert_msg(text.find("plan: from daemon,") != std::string::npos, "%s",
                text.c_str());
  PoisonDaemon(&h);
  ck_assert_msg(RunInfer(run, out, &text) == 0, "%s", text.c_str());
  ck_assert_msg(text.find("plan: from local (arenad: planned locally (") !=
                    std::string::npos, "%s", text.c_str());
  ck_assert_msg(text.find("this caller can use") != std::string::npos, "%s",
                text.c_str());
  ck_assert_msg(text.find("reported to the daemon, which replaced it") !=
                    std::string::npos, "%s", text.c_str());
  ck_assert_msg(text.find("arenad planner: planned locally (") !=
                    std::string::npos, "no log line in %s", text.c_str());
  ck_assert(Outputs(text) == expect);
  ck_assert_int_ge(hn_log_count(&h, "replaced a stored plan a client "
                                    "reported unusable"), 1);
  ck_assert_int_eq(RunInfer(run, out, &text), 0);
  ck_assert_msg(text.find("plan: from cache,") != std::string::npos, "%s",
                text.c_str());
  ck_assert(Outputs(text) == expect);
  /* Without fallback. */
  int replaced = hn_log_count(&h, "replaced a stored plan a client "
                                 "reported unusable");
  PoisonDaemon(&h);
  std::vector<std::string> strict = run;
  strict.insert(strict.begin() + 1, "--no-fallback");
  ck_assert_msg(RunInfer(strict, out, &text) == 0, "%s", text.c_str());
  ck_assert_msg(text.find("plan: from cache,") != std::string::npos, "%s",
                text.c_str());
  ck_assert(Outputs(text) == expect);
  ck_assert_int_gt(hn_log_count(&h, "replaced a stored plan a client "
                                    "reported unusable"), replaced);
  hn_cleanup(&h);
}
END_TEST

/* The row of bench_tflite's table for one kind of run ("TFLite alone",
 * "arenad miss", "arenad hit"): the line that starts with the label and
 * goes on with a source and only figures, the last the peak heap in KiB
 * ("-" when not counted). Returns its source ("" when there is no such
 * row) and sets *heap to that figure (-1 for "-"). */
std::string BenchRow(const std::string &text, const char *label,
                     double *heap) {
  *heap = -1;
  std::string key = std::string("\n  ") + label + " ";
  for (size_t at = text.find(key); at != std::string::npos;
       at = text.find(key, at + 1)) {
    size_t end = text.find('\n', at + 1);
    std::string row = text.substr(at + key.size(), end == std::string::npos
                                                       ? end
                                                       : end - at - key.size());
    std::vector<std::string> words;
    for (size_t i = 0; i < row.size();) {
      size_t j = row.find(' ', i);
      if (j == std::string::npos)
        j = row.size();
      if (j > i)
        words.push_back(row.substr(i, j - i));
      i = j + 1;
    }
    bool figures = words.size() >= 8;
    for (size_t i = 1; figures && i < words.size(); i++) {
      char *e;
      strtod(words[i].c_str(), &e);
      figures = !*e || (i + 1 == words.size() && words[i] == "-");
    }
    if (!figures)
      continue;
    if (words.back() != "-")
      *heap = strtod(words.back().c_str(), nullptr);
    return words[0];
  }
  return std::string();
}

/* bench_tflite, the process-level benchmark, on the smallest model: one
 * round prints the three runs (TFLite alone on its own planner, the miss
 * planned by a fresh daemon, the hit from the cache), the verdicts and
 * the summary; a model TFLite refuses is reported as not run, one whose
 * miss cannot get a daemon as FAILED (exit 70); bad options and a missing
 * model get their exit statuses. Its figures are not held to anything
 * here (they are `make bench`'s). */
START_TEST(test_bench_tflite) {
  setenv("ARENAD", TFLITE_TEST_BUILD "/arenad", 0);
  char *dir = tu_mkdtemp();
  ck_assert_ptr_nonnull(dir);
  std::string d = dir, bin = TFLITE_TEST_BUILD "/bench/bench_tflite", text;
  ck_assert_int_eq(RunInfer({bin, "--min-saving", "0", "--models", "hello_world_float,person_detect",
                             "--reps", "1", "--invokes", "2"}, d + "/run",
                            &text), 0);
  double alone_heap, miss_heap, hit_heap;
  ck_assert_msg(text.find("; one address layout") != std::string::npos, "%s",
                text.c_str());
  ck_assert_msg(text.find("hit / alone, steady, paired in one process: ") !=
                    std::string::npos &&
                    text.find("paired in one process: - ") ==
                        std::string::npos,
                "%s", text.c_str());
  ck_assert_msg(BenchRow(text, "TFLite alone", &alone_heap) == "tflite", "%s",
                text.c_str());
  ck_assert_msg(BenchRow(text, "arenad miss", &miss_heap) == "daemon", "%s",
                text.c_str());
  ck_assert_msg(BenchRow(text, "arenad hit", &hit_heap) == "cache", "%s",
                text.c_str());
  /* the counting malloc counts (a sanitizer build prints no heap) */
  if (kRssIsOurs)
    ck_assert_msg(alone_heap > 0 && miss_heap > 0 && hit_heap > 0, "%s",
                  text.c_str());
  ck_assert_msg(text.find("hello_world_float: arena TFLite alone 192 B") !=
                    std::string::npos, "%s", text.c_str());
  ck_assert_msg(text.find("  hit / alone, init + first: ") != std::string::npos,
                "%s", text.c_str());
  ck_assert_msg(text.find("person_detect: not run: ") != std::string::npos,
                "%s", text.c_str());
  ck_assert_msg(text.find("goals, models that meet each (of 1 run;") !=
                    std::string::npos, "%s", text.c_str());
  /* a daemon that starts once (the benchmark's own) and never again
   * (each miss's): the model FAILED, exit 70 */
  std::string fake = d + "/arenad";
  FILE *f = fopen(fake.c_str(), "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f, "#!/bin/sh\n[ -e '%s/once' ] && exit 1\ntouch '%s/once'\n"
          "exec '%s' \"$@\"\n", dir, dir, getenv("ARENAD"));
  fclose(f);
  ck_assert_int_eq(chmod(fake.c_str(), 0700), 0);
  std::string real = getenv("ARENAD");
  setenv("ARENAD", fake.c_str(), 1);
  int rc = RunInfer({bin, "--min-saving", "0", "--models", "hello_world_float", "--reps", "1",
                     "--invokes", "1"}, d + "/failed", &text);
  setenv("ARENAD", real.c_str(), 1);
  ck_assert_msg(rc == 70, "exit %d: %s", rc, text.c_str());
  ck_assert_msg(text.find("hello_world_float: FAILED: arenad miss: ") !=
                    std::string::npos, "%s", text.c_str());
  ck_assert_int_eq(RunInfer({bin, "--reps", "0"}, d + "/u", &text), 64);
  ck_assert_int_eq(RunInfer({bin, "--min-saving", "-1"}, d + "/v", &text),
                   64);
  ck_assert_int_eq(RunInfer({bin, "--models", "no_such_model"}, d + "/m",
                            &text), 66);
  ck_assert_msg(text.find("no_such_model.tflite: cannot read") !=
                    std::string::npos, "%s", text.c_str());
  tu_rm_rf(dir);
  free(dir);
  printf("tflite_rt bench: hello_world_float's peak heap %.0f / %.0f / %.0f "
         "KiB (alone / miss / hit)\n", alone_heap, miss_heap, hit_heap);
}
END_TEST

/* tests/data/generated/ holds the generator's models byte for byte. */
START_TEST(test_generated_files) {
  for (const gen_models::FileModel &m : gen_models::FileModels()) {
    std::string path = std::string("tests/data/generated/") + m.file;
    std::string have = Slurp(path);
    ck_assert_msg(have.size() == m.bytes.size() &&
                      memcmp(have.data(), m.bytes.data(), have.size()) == 0,
                  "%s is not the generator's model (make gen-models "
                  "writes it)", path.c_str());
  }
}
END_TEST

/* tflite_infer on a model whose operators its kernels lack exits 65
 * with one line on stderr naming each of them once, the only line that
 * names them, and prints no outputs. */
START_TEST(test_infer_missing_operators) {
  char *dir = tu_mkdtemp();
  ck_assert_ptr_nonnull(dir);
  std::string d = dir, bin = TFLITE_TEST_BUILD "/tests/tflite_infer", text;
  std::string model = "tests/data/generated/unregistered_ops.tflite";
  ck_assert_int_eq(RunInfer({bin, "--socket", d + "/no.sock", model},
                            d + "/out", &text), 65);
  std::string line = LineOf(text, "tflite_infer: " + model + ": ");
  ck_assert_msg(!line.empty(), "%s", text.c_str());
  ck_assert_msg(line.find("has no kernel for") != std::string::npos, "%s",
                text.c_str());
  for (const char *name : {"MAXIMUM", "FLOOR"}) {
    std::string word = " " + std::string(name) + " (";
    size_t at = line.find(word);
    ck_assert_msg(at != std::string::npos, "%s not named: %s", name,
                  line.c_str());
    ck_assert_msg(line.find(word, at + 1) == std::string::npos,
                  "%s named twice: %s", name, line.c_str());
  }
  /* no other line names them (TFLite's own reporter would, once a
   * version) */
  size_t lines = 0;
  for (size_t at = 0, end; at < text.size(); at = end + 1) {
    end = text.find('\n', at);
    if (end == std::string::npos)
      end = text.size();
    std::string l = text.substr(at, end - at);
    lines += l.find("MAXIMUM") != std::string::npos ||
             l.find("FLOOR") != std::string::npos;
  }
  ck_assert_msg(lines == 1, "%zu lines name the operators: %s", lines,
                text.c_str());
  ck_assert_msg(text.find("outputs digest") == std::string::npos, "%s",
                text.c_str());
  tu_rm_rf(dir);
  free(dir);
  printf("tflite_rt infer missing operators: exit 65, %s\n", line.c_str());
}
END_TEST

/* SMALL MODELS (arenad_tflite.h): with the default minimum saving, a
 * model whose arena tensors sum to less is built on TFLite's own
 * planner in one interpreter without asking arenad: a client with no
 * daemon and no fallback still gets it, with TFLite's outputs; asked to
 * use arenad (minimum 0, or 1 byte) the same client fails, so the
 * default did not ask. The reduced graph of the RESHAPE finding is small
 * too, but TFLite's plan of it is unsound: it goes on to arenad's plan
 * and the oracle's outputs. tflite_infer says which it did. */
START_TEST(test_small_model) {
  std::vector<char> m = ReadModel("magic_wand");
  arenad::TfliteOpResolver resolver;
  arenad_client_t *c = DaemonClient("/nonexistent/arenad-small-test.sock");
  std::vector<uint8_t> ours, own;
  std::string err;
  {
    arenad::TflitePlanner p(c, m.data(), m.size(), resolver);
    std::unique_ptr<tflite::Interpreter> in, theirs;
    ck_assert_msg(p.Build(&in) == 0, "%s", p.error());
    const arenad::TflitePlanInfo &i = p.info();
    ck_assert_int_eq((int)i.source, (int)arenad::TflitePlanSource::kTflite);
    ck_assert(i.below_min_saving);
    ck_assert_uint_eq(i.n_interpreters, 1);
    ck_assert_uint_eq(i.n_tensors, 0);
    ck_assert_uint_eq(i.tflite_alone, arenad::TfliteArenaBytes(*in, nullptr));
    ck_assert_uint_lt(i.tflite_alone, arenad::kTfliteMinSaving);
    ck_assert_msg(arenad::RunTflite(in.get(), 7, kInvokes, &ours, &err), "%s",
                  err.c_str());
    in.reset();
    ck_assert_int_eq(p.BuildTfliteOnly(&theirs), 0);
    ck_assert_msg(arenad::RunTflite(theirs.get(), 7, kInvokes, &own, &err),
                  "%s", err.c_str());
    ck_assert(ours == own);
  }
  for (uint64_t min : {(uint64_t)0, (uint64_t)1}) {
    arenad::TflitePlanner p(c, m.data(), m.size(), resolver);
    p.SetMinSaving(min);
    std::unique_ptr<tflite::Interpreter> in;
    ck_assert_msg(p.Build(&in) != 0, "minimum %llu: built without a daemon",
                  (unsigned long long)min);
    ck_assert(!in);
  }
  arenad_client_close(c);
  /* an unsound TFLite plan is not kept, small or not */
  std::vector<uint8_t> bytes = gen_models::ReshapeInPlaceModel(), oracle;
  OracleOutputs(bytes.data(), bytes.size(), &oracle);
  c = LocalClient();
  {
    arenad::TflitePlanner p(c, bytes.data(), bytes.size(), resolver);
    std::unique_ptr<tflite::Interpreter> in;
    ck_assert_msg(p.Build(&in) == 0, "%s", p.error());
    ck_assert(!p.info().below_min_saving);
    ck_assert_int_ne((int)p.info().source,
                     (int)arenad::TflitePlanSource::kTflite);
    ck_assert_msg(arenad::RunTflite(in.get(), 7, kInvokes, &ours, &err), "%s",
                  err.c_str());
    ck_assert_msg(ours == oracle, "outputs differ from the oracle");
  }
  arenad_client_close(c);
  char *dir = tu_mkdtemp();
  ck_assert_ptr_nonnull(dir);
  std::string d = dir, bin = TFLITE_TEST_BUILD "/tests/tflite_infer", text;
  std::string model = std::string(kDir) + "magic_wand.tflite";
  ck_assert_int_eq(RunInfer({bin, "--socket", d + "/no.sock", "--no-fallback",
                             model}, d + "/a", &text), 0);
  std::string plan = LineOf(text, "plan: ");
  ck_assert_msg(plan.find("plan: from tflite (the model's arena tensors sum to "
                          "under the minimum saving") == 0, "%s",
                text.c_str());
  ck_assert_int_eq(RunInfer({bin, "--socket", d + "/no.sock", "--no-fallback",
                             "--min-saving", "0", model}, d + "/b", &text), 65);
  ck_assert_int_eq(RunInfer({bin, "--min-saving", "x", model}, d + "/c",
                            &text), 64);
  tu_rm_rf(dir);
  free(dir);
  printf("tflite_rt small model: magic_wand: %s\n", plan.c_str());
}
END_TEST

/* This process's RssAnon, KiB (-1: unknown). */
long RssAnonKib() {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f)
    return -1;
  char line[256];
  long v = -1, k;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "RssAnon: %ld", &k) == 1)
      v = k;
  fclose(f);
  return v;
}

/* The outputs of model m on TFLite's own planner at shapes. */
std::vector<uint8_t> OwnOutputsAt(const std::string &m,
                                  const std::vector<std::vector<int>> &shapes,
                                  arenad_client_t *c) {
  arenad::TfliteOpResolver resolver;
  Planner p(c, m.data(), m.size(), resolver);
  p.SetInputShapes(shapes);
  std::unique_ptr<tflite::Interpreter> in;
  ck_assert_msg(p.BuildTfliteOnly(&in) == 0, "%s", p.error());
  std::vector<uint8_t> out;
  std::string err;
  ck_assert_msg(arenad::RunTflite(in.get(), 7, kInvokes, &out, &err), "%s",
                err.c_str());
  return out;
}

/* The count of plans the daemon of h has computed. */
uint64_t PlansComputed(const struct harness *h) {
  Arenad__V1__Response *st = hn_stats(h);
  ck_assert_ptr_nonnull(st);
  ck_assert_ptr_nonnull(st->stats);
  uint64_t n = st->stats->plans_computed;
  wire_free_response(st);
  return n;
}

/* FETCHED PLANS (arenad_tflite.h), through a real daemon: the first
 * process learns mobilenet_v2 and stores its placement record; the next
 * fetches the plan by key and places it in one interpreter, learning
 * nothing and proven as every plan is; a fetched plan whose graph
 * disagrees with the interpreter (a tensor's life cut short, test-only)
 * is refused before use and the model learned; sharing off and another
 * input shape are other plans, each fetched once learned. */
START_TEST(test_fetched_plan) {
  setenv("ARENAD", TFLITE_TEST_BUILD "/arenad", 0);
  struct harness h;
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  arenad_client_t *c = DaemonClient(h.sock);
  arenad::TfliteOpResolver resolver;
  std::vector<char> bytes = ReadModel(kMobilenet);
  std::unique_ptr<tflite::Interpreter> in;
  uint64_t arena;
  {
    Planner p(c, bytes.data(), bytes.size(), resolver);
    ck_assert_msg(p.Build(&in) == 0, "%s", p.error());
    ck_assert(!p.info().fetched);
    ck_assert(!p.info().fetch_refused);
    ck_assert_int_eq((int)p.info().source,
                     (int)arenad::TflitePlanSource::kDaemon);
    arena = p.info().arena_bytes;
    in.reset();
  }
  {
    Planner q(c, bytes.data(), bytes.size(), resolver);
    ck_assert_msg(q.Build(&in) == 0, "%s", q.error());
    const arenad::TflitePlanInfo &i = q.info();
    ck_assert(i.fetched);
    ck_assert_int_eq((int)i.source, (int)arenad::TflitePlanSource::kCache);
    ck_assert_uint_eq(i.n_interpreters, 1);
    ck_assert_uint_eq(i.arena_bytes, arena);
    ck_assert_uint_eq(i.n_placed, i.n_tensors);
    ck_assert_uint_gt(i.n_temporaries, 0);
    ck_assert_uint_gt(i.n_shared, 0);
    Prove("fetched", bytes.data(), bytes.size(), &q, in.get(), nullptr);
    in.reset();
  }
  ck_assert_uint_eq(PlansComputed(&h), 1);
  {
    Planner r(c, bytes.data(), bytes.size(), resolver);
    r.TestOnlyBreakFetched(true);
    ck_assert_msg(r.Build(&in) == 0, "%s", r.error());
    ck_assert(!r.info().fetched);
    ck_assert(r.info().fetch_refused);
    ck_assert_int_eq((int)r.info().source,
                     (int)arenad::TflitePlanSource::kCache);
    ck_assert_uint_eq(r.info().n_placed, r.info().n_tensors);
    Prove("fetch refused", bytes.data(), bytes.size(), &r, in.get(), nullptr);
    in.reset();
  }
  for (int k = 0; k < 2; k++) { /* sharing off: learned, then fetched */
    Planner s(c, bytes.data(), bytes.size(), resolver);
    s.SetInPlace(false);
    ck_assert_msg(s.Build(&in) == 0, "%s", s.error());
    ck_assert_int_eq(s.info().fetched, k == 1);
    ck_assert_uint_eq(s.info().n_shared, 0);
    Prove("sharing off", bytes.data(), bytes.size(), &s, in.get(), nullptr);
    in.reset();
  }
  ck_assert_uint_eq(PlansComputed(&h), 2);
  std::string m = Slurp("tests/data/generated/resizable.tflite");
  const std::vector<std::vector<int>> shape = {{1, 24, 40, 4}};
  std::vector<uint8_t> own = OwnOutputsAt(m, shape, c);
  for (int k = 0; k < 2; k++) { /* another shape: learned, then fetched */
    Planner t(c, m.data(), m.size(), resolver);
    t.SetMinSaving(0);
    t.SetInputShapes(shape);
    ck_assert_msg(t.Build(&in) == 0, "%s", t.error());
    ck_assert_int_eq(t.info().fetched, k == 1);
    if (k == 1)
      ck_assert_uint_eq(t.info().n_interpreters, 1);
    ck_assert_int_eq(in->tensor(in->inputs()[0])->dims->data[2], 40);
    std::vector<uint8_t> ours;
    std::string err;
    ck_assert_msg(arenad::RunTflite(in.get(), 7, kInvokes, &ours, &err), "%s",
                  err.c_str());
    ck_assert_msg(ours == own, "outputs differ from TFLite's own planner "
                  "at the same shape");
    ck_assert_uint_eq(Conflicts(t, in.get()), 0);
    in.reset();
  }
  ck_assert_uint_eq(PlansComputed(&h), 3);
  printf("tflite_rt fetched: mobilenet_v2 placed from a fetched plan in one "
         "interpreter (%llu bytes), refused when its graph disagrees\n",
         (unsigned long long)arena);
  arenad_client_close(c);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
}
END_TEST

/* INPUT SHAPES (arenad_tflite.h): the resizable generated model at two
 * shapes other than its own, through a daemon: each shape is planned
 * once and gets outputs identical to TFLite's own planner at that shape;
 * going back to a shape is a cache hit; a shape TFLite refuses fails
 * with the shapes named and stores nothing; bad counts and dimensions
 * are ARENA_EINVAL; 100 resizes back and forth leave RssAnon flat. */
START_TEST(test_input_shapes) {
  setenv("ARENAD", TFLITE_TEST_BUILD "/arenad", 0);
  struct harness h;
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  std::string m = Slurp("tests/data/generated/resizable.tflite");
  ck_assert(!m.empty());
  arenad_client_t *c = DaemonClient(h.sock);
  arenad::TfliteOpResolver resolver;
  const std::vector<std::vector<int>> a = {{1, 16, 16, 4}},
                                      b = {{1, 48, 32, 4}};
  std::vector<uint8_t> own_a = OwnOutputsAt(m, a, c),
                       own_b = OwnOutputsAt(m, b, c);
  ck_assert(own_a.size() * 6 == own_b.size());
  Planner p(c, m.data(), m.size(), resolver);
  std::unique_ptr<tflite::Interpreter> in;
  std::string err;
  struct Step {
    const std::vector<std::vector<int>> *shapes;
    const std::vector<uint8_t> *own;
    arenad::TflitePlanSource source;
    bool again; /* PLACING AGAIN: nothing learned */
  } steps[] = {{&a, &own_a, arenad::TflitePlanSource::kDaemon, false},
               {&b, &own_b, arenad::TflitePlanSource::kDaemon, false},
               {&a, &own_a, arenad::TflitePlanSource::kCache, true}};
  uint64_t arena[2] = {0, 0};
  for (size_t i = 0; i < 3; i++) {
    ck_assert_msg(p.Resize(*steps[i].shapes, &in) == 0, "%s", p.error());
    ck_assert_int_eq((int)p.info().source, (int)steps[i].source);
    ck_assert_int_eq(p.info().placed_again, steps[i].again);
    ck_assert_uint_eq(p.info().n_interpreters, steps[i].again ? 1 : 2);
    ck_assert_int_eq(in->tensor(in->inputs()[0])->dims->data[1],
                     (*steps[i].shapes)[0][1]);
    std::vector<uint8_t> ours;
    ck_assert_msg(arenad::RunTflite(in.get(), 7, kInvokes, &ours, &err), "%s",
                  err.c_str());
    ck_assert_msg(ours == *steps[i].own, "step %zu: outputs differ from "
                  "TFLite's own planner at the same shape", i);
    ck_assert_uint_eq(Conflicts(p, in.get()), 0);
    arena[i % 2] = p.info().arena_bytes;
  }
  ck_assert_uint_gt(arena[1], arena[0]);
  /* a shape TFLite refuses: 3 channels into a 4-channel convolution */
  ck_assert_int_ne(p.Resize({{1, 16, 16, 3}}, &in), 0);
  ck_assert(!in);
  ck_assert_msg(strstr(p.error(), "at input shapes [1,16,16,3]: ") ==
                    p.error(), "%s", p.error());
  ck_assert_int_eq(p.Resize({{1, 16, 16, 4}, {1, 16, 16, 4}}, &in),
                   ARENA_EINVAL);
  ck_assert_msg(strstr(p.error(), "2 input shapes given for a model of 1 "
                                  "inputs") != NULL, "%s", p.error());
  ck_assert_int_eq(p.Resize({{1, 0, 16, 4}}, &in), ARENA_EINVAL);
  Arenad__V1__Response *st = hn_stats(&h);
  ck_assert_ptr_nonnull(st);
  ck_assert_ptr_nonnull(st->stats);
  ck_assert_uint_eq(st->stats->plans_computed, 2);
  wire_free_response(st);
  /* back and forth: memory flat */
  long at10 = -1;
  for (int i = 0; i < 100; i++) {
    ck_assert_msg(p.Resize(i % 2 ? b : a, &in) == 0, "%s", p.error());
    ck_assert_int_eq((int)p.info().source,
                     (int)arenad::TflitePlanSource::kCache);
    ck_assert(p.info().placed_again);
    if (i == 9)
      at10 = RssAnonKib();
  }
  long at100 = RssAnonKib();
  in.reset();
  if (kRssIsOurs)
    ck_assert_msg(at100 - at10 <= 128, "RssAnon grew from %ld to %ld KiB",
                  at10, at100);
  printf("tflite_rt input shapes: resizable at [1,16,16,4] %llu bytes, at "
         "[1,48,32,4] %llu; 100 resizes, RssAnon %ld -> %ld KiB\n",
         (unsigned long long)arena[0], (unsigned long long)arena[1], at10,
         at100);
  arenad_client_close(c);
  hn_cleanup(&h);
}
END_TEST

/* tflite_infer --input-shape: the digest of arenad's plan at a shape is
 * TFLite's own planner's at that shape; malformed shapes are exit 64,
 * a refused one exit 65 with the shapes named. */
START_TEST(test_infer_input_shape) {
  char *dir = tu_mkdtemp();
  ck_assert_ptr_nonnull(dir);
  std::string d = dir, bin = TFLITE_TEST_BUILD "/tests/tflite_infer", text,
              ref, model = "tests/data/generated/resizable.tflite";
  ck_assert_int_eq(RunInfer({bin, "--socket", d + "/no.sock", "--min-saving",
                             "0", "--input-shape", "1,24,40,4", "--invokes",
                             "2", model}, d + "/a", &text), 0);
  ck_assert_int_eq(RunInfer({bin, "--planner", "tflite", "--input-shape",
                             "1,24,40,4", "--invokes", "2", model},
                            d + "/b", &ref), 0);
  ck_assert_msg(text.find("input shapes: [1,24,40,4]\n") != std::string::npos,
                "%s", text.c_str());
  ck_assert_msg(text.find("plan: from local") != std::string::npos, "%s",
                text.c_str());
  std::string digest = LineOf(text, "outputs digest: ");
  ck_assert(!digest.empty());
  std::string own = LineOf(ref, "outputs digest: ");
  ck_assert_str_eq(digest.c_str(), own.c_str());
  ck_assert_msg(text.find("output 0: FLOAT32 [1, 24, 40, ") !=
                    std::string::npos, "%s", text.c_str());
  for (const char *bad : {"1,,4", "0,4", "x", "1,2,", ""})
    ck_assert_int_eq(RunInfer({bin, "--input-shape", bad, model}, d + "/c",
                              &text), 64);
  ck_assert_int_eq(RunInfer({bin, "--socket", d + "/no.sock",
                             "--input-shape", "1,8,8,3", model}, d + "/e",
                            &text), 65);
  ck_assert_msg(text.find(": at input shapes [1,8,8,3]: ") !=
                    std::string::npos, "%s", text.c_str());
  tu_rm_rf(dir);
  free(dir);
  printf("tflite_rt infer input shape: %s\n", digest.c_str());
}
END_TEST

/* tflite_infer --table and --plot: one row per shape, TFLite alone >=
 * arenad >= the lower bound on each, growing with the input; a refused
 * shape is a row that says so and exit 65; the SVG has the three lines
 * and every shape; bad uses are exit 64, an unwritable plot exit 73. */
START_TEST(test_infer_table) {
  char *dir = tu_mkdtemp();
  ck_assert_ptr_nonnull(dir);
  std::string d = dir, bin = TFLITE_TEST_BUILD "/tests/tflite_infer", text,
              model = "tests/data/generated/resizable.tflite",
              svg = d + "/memory.svg";
  std::vector<std::string> args = {bin, "--socket", d + "/no.sock",
                                   "--table", "1,16,16,4", "--table",
                                   "1,48,32,4", "--table", "1,96,96,4",
                                   "--plot", svg, model};
  ck_assert_int_eq(RunInfer(args, d + "/a", &text), 0);
  uint64_t last = 0;
  for (const char *shape : {"[1,16,16,4]", "[1,48,32,4]", "[1,96,96,4]"}) {
    std::string row = LineOf(text, std::string(shape) + " ");
    unsigned long long alone, ours, saved, bound;
    ck_assert_msg(sscanf(row.c_str() + strlen(shape), "%llu %llu %llu %llu",
                         &alone, &ours, &saved, &bound) == 4, "%s",
                  text.c_str());
    ck_assert_uint_ge(alone, ours);
    ck_assert_uint_ge(ours, bound);
    ck_assert_uint_eq(saved, alone - ours);
    ck_assert_uint_gt(ours, last);
    last = ours;
  }
  std::string plot = Slurp(svg);
  ck_assert_msg(plot.compare(0, 5, "<svg ") == 0, "%s", plot.c_str());
  size_t lines = 0;
  for (size_t at = plot.find("<polyline"); at != std::string::npos;
       at = plot.find("<polyline", at + 1))
    lines++;
  ck_assert_uint_eq(lines, 3);
  ck_assert(plot.find("[1,48,32,4]") != std::string::npos);
  ck_assert(plot.find("stroke-dasharray") != std::string::npos);
  args.insert(args.end() - 3, {"--table", "1,8,8,3"});
  ck_assert_int_eq(RunInfer(args, d + "/b", &text), 65);
  ck_assert_msg(text.find("[1,8,8,3]") != std::string::npos &&
                    text.find("refused: at input shapes [1,8,8,3]: ") !=
                        std::string::npos, "%s", text.c_str());
  ck_assert_int_eq(RunInfer({bin, "--plot", svg, model}, d + "/c", &text),
                   64);
  ck_assert_int_eq(RunInfer({bin, "--table", "1,,4", model}, d + "/c",
                            &text), 64);
  ck_assert_int_eq(RunInfer({bin, "--table", "1,16,16,4", "--audit", model},
                            d + "/c", &text), 64);
  ck_assert_int_eq(RunInfer({bin, "--socket", d + "/no.sock", "--table",
                             "1,16,16,4", "--plot", d + "/no/such/dir.svg",
                             model}, d + "/c", &text), 73);
  tu_rm_rf(dir);
  free(dir);
  printf("tflite_rt infer table: 3 shapes, largest arena %llu bytes\n",
         (unsigned long long)last);
}
END_TEST

/* The bytes of every output of in, appended to *out. */
void AppendOutputs(tflite::Interpreter *in, std::vector<uint8_t> *out) {
  for (int t : in->outputs()) {
    const TfLiteTensor *x = in->tensor(t);
    const uint8_t *p = reinterpret_cast<const uint8_t *>(x->data.raw);
    out->insert(out->end(), p, p + x->bytes);
  }
}

/* TflitePipeline (arenad_tflite_pipeline.h): magic_wand, the resizable
 * model and magic_wand again on one arena, through a daemon. Invoked
 * round after round in model order and in reverse, every model's outputs
 * are those of TFLite's own planner running it alone; every tensor is at
 * its address; the arena is no larger than the largest model's own plan
 * plus every input and output; a second pipeline of the same models is a
 * cache hit; an Invoke() while another model runs on another thread is
 * ARENA_EBUSY; bad uses fail with the model named. */
START_TEST(test_pipeline) {
  setenv("ARENAD", TFLITE_TEST_BUILD "/arenad", 0);
  struct harness h;
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  std::vector<char> wand = ReadModel("magic_wand");
  std::string res = Slurp("tests/data/generated/resizable.tflite");
  arenad_client_t *c = DaemonClient(h.sock);
  arenad::TfliteOpResolver resolver;
  const void *bytes[] = {wand.data(), res.data(), wand.data()};
  size_t lens[] = {wand.size(), res.size(), wand.size()};
  std::vector<uint8_t> own[3];
  for (int k = 0; k < 3; k++) {
    Planner p(c, bytes[k], lens[k], resolver);
    std::unique_ptr<tflite::Interpreter> in;
    ck_assert_int_eq(p.BuildTfliteOnly(&in), 0);
    std::string err;
    ck_assert(arenad::RunTflite(in.get(), 7, kInvokes, &own[k], &err));
  }
  for (int round = 0; round < 2; round++) {
    arenad::TflitePipeline pipe(c, resolver);
    for (int k = 0; k < 3; k++)
      ck_assert_uint_eq(pipe.Add(bytes[k], lens[k]), (size_t)k);
    ck_assert_msg(pipe.Build() == 0, "%s", pipe.error());
    const arenad::TflitePipelineInfo &i = pipe.info();
    ck_assert(!i.local);
    ck_assert_int_eq(i.cached, round == 1);
    ck_assert_uint_eq(i.n_left, 0);
    ck_assert_uint_gt(i.n_tensors, 0);
    ck_assert_uint_le(i.arena_bytes, i.largest_alone + i.io_bytes);
    ck_assert_uint_lt(i.arena_bytes, i.arenad_alone);
    for (int order = 0; order < 2; order++) {
      std::vector<uint8_t> ours[3];
      for (int n = 0; n < kInvokes; n++)
        for (int j = 0; j < 3; j++) {
          int k = order ? 2 - j : j;
          arenad::FillTfliteInputs(pipe.interpreter(k), 7, n);
          ck_assert_int_eq(pipe.Invoke((size_t)k), 0);
          AppendOutputs(pipe.interpreter(k), &ours[k]);
        }
      for (int k = 0; k < 3; k++)
        ck_assert_msg(ours[k] == own[k], "order %d, model %d: outputs differ "
                      "from the model run alone", order, k);
    }
    /* one at a time */
    std::atomic<bool> stop{false};
    std::thread busy([&] {
      while (!stop.load())
        pipe.Invoke(0);
    });
    bool refused = false;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!refused && std::chrono::steady_clock::now() < deadline) {
      int rc = pipe.Invoke(2);
      ck_assert(rc == 0 || rc == ARENA_EBUSY);
      refused = rc == ARENA_EBUSY;
    }
    stop.store(true);
    busy.join();
    ck_assert_msg(refused, "no Invoke() was refused in 10 s");
    ck_assert_int_eq(pipe.Invoke(3), ARENA_EINVAL);
    if (round == 1)
      printf("tflite_rt pipeline: magic_wand, resizable, magic_wand: arena "
             "%llu bytes (bound %llu), each alone %llu summed, the largest "
             "%llu, inputs and outputs %llu; TFLite alone %llu summed\n",
             (unsigned long long)i.arena_bytes,
             (unsigned long long)i.lower_bound,
             (unsigned long long)i.arenad_alone,
             (unsigned long long)i.largest_alone,
             (unsigned long long)i.io_bytes,
             (unsigned long long)i.tflite_alone);
  }
  { /* a model at another input shape */
    const std::vector<std::vector<int>> wide = {{1, 40, 24, 4}};
    std::vector<uint8_t> own_wide = OwnOutputsAt(res, wide, c), ours;
    arenad::TflitePipeline pipe(c, resolver);
    pipe.Add(wand.data(), wand.size());
    pipe.Add(res.data(), res.size());
    ck_assert_int_eq(pipe.SetInputShapes(1, wide), 0);
    ck_assert_int_eq(pipe.SetInputShapes(2, wide), ARENA_EINVAL);
    ck_assert_msg(pipe.Build() == 0, "%s", pipe.error());
    ck_assert_uint_eq(pipe.info().n_left, 0);
    for (int n = 0; n < kInvokes; n++) {
      arenad::FillTfliteInputs(pipe.interpreter(1), 7, n);
      ck_assert_int_eq(pipe.Invoke(1), 0);
      AppendOutputs(pipe.interpreter(1), &ours);
    }
    ck_assert_msg(ours == own_wide, "outputs at [1,40,24,4] differ");
  }
  {
    arenad::TflitePipeline pipe(c, resolver);
    ck_assert_int_eq(pipe.Build(), ARENA_EINVAL);
    ck_assert_int_eq(pipe.Invoke(0), ARENA_EINVAL);
    std::string bad = Slurp("tests/data/generated/unregistered_ops.tflite");
    pipe.Add(wand.data(), wand.size());
    pipe.Add(bad.data(), bad.size());
    ck_assert_int_ne(pipe.Build(), 0);
    ck_assert_msg(strstr(pipe.error(), "model 1: ") == pipe.error(), "%s",
                  pipe.error());
    ck_assert_ptr_null(pipe.interpreter(0));
  }
  arenad_client_close(c);
  hn_cleanup(&h);
}
END_TEST

/* tflite_infer --pipeline: each model's digest and output lines are a
 * separate run's of that model (same seed), in model order, and the
 * summary line names the shared arena. */
START_TEST(test_infer_pipeline) {
  char *dir = tu_mkdtemp();
  ck_assert_ptr_nonnull(dir);
  std::string d = dir, bin = TFLITE_TEST_BUILD "/tests/tflite_infer", text;
  std::string wand = std::string(kDir) + "magic_wand.tflite",
              res = "tests/data/generated/resizable.tflite";
  ck_assert_int_eq(RunInfer({bin, "--socket", d + "/no.sock", "--invokes",
                             "3", "--pipeline", wand, res, wand},
                            d + "/p", &text), 0);
  size_t at = 0;
  for (const std::string &m : {wand, res, wand}) {
    std::string alone;
    ck_assert_int_eq(RunInfer({bin, "--socket", d + "/no.sock", "--invokes",
                               "3", m}, d + "/a", &alone), 0);
    std::string want = alone.substr(alone.find("outputs digest: "));
    size_t head = text.find("model: " + m + "\n", at);
    ck_assert_msg(head != std::string::npos, "%s", text.c_str());
    size_t from = text.find("outputs digest: ", head);
    ck_assert_msg(text.compare(from, want.size(), want) == 0,
                  "%s: pipeline printed\n%s\nalone\n%s", m.c_str(),
                  text.substr(from, want.size()).c_str(), want.c_str());
    at = from + want.size();
  }
  ck_assert_msg(text.find("pipeline: 3 models on one arena: ") <
                    text.find("model: "), "%s", text.c_str());
  ck_assert_msg(text.find("process: models read and built in ", at) !=
                    std::string::npos,
                "%s", text.c_str());
  /* the same outputs with each model on its own plan, and on TFLite's */
  std::string shared = text.substr(text.find("model: "));
  shared = shared.substr(0, shared.find("process: "));
  for (const char *mode : {"--separate", "--planner"}) {
    std::vector<std::string> args = {bin, "--socket", d + "/no.sock",
                                     "--invokes", "3", "--pipeline", mode};
    if (!strcmp(mode, "--planner"))
      args.push_back("tflite");
    args.insert(args.end(), {wand, res, wand});
    ck_assert_int_eq(RunInfer(args, d + "/s", &text), 0);
    std::string each = text.substr(text.find("model: "));
    each = each.substr(0, each.find("process: "));
    ck_assert_msg(each == shared, "%s: %s", mode, text.c_str());
    ck_assert(text.find("pipeline: 3 models, each on ") != std::string::npos);
  }
  ck_assert_int_eq(RunInfer({bin, wand, res}, d + "/b", &text), 64);
  ck_assert_int_eq(RunInfer({bin, "--pipeline", "--audit", wand}, d + "/b",
                            &text), 64);
  ck_assert_int_eq(RunInfer({bin, "--separate", wand}, d + "/b", &text), 64);
  ck_assert_int_eq(RunInfer({bin, "--socket", d + "/no.sock", "--pipeline",
                             wand, "tests/data/generated/"
                             "unregistered_ops.tflite"}, d + "/b", &text),
                   65);
  ck_assert_int_eq(RunInfer({bin, "--pipeline", wand, d + "/missing"},
                            d + "/b", &text), 66);
  tu_rm_rf(dir);
  free(dir);
}
END_TEST

}  // namespace

Suite *tflite_rt_suite(void) {
  Suite *s = suite_create("tflite_rt");
  TCase *tc = tcase_create("models");
  tcase_set_timeout(tc, 600);
  tcase_add_loop_test(tc, test_models, 0, kNModels);
  suite_add_tcase(s, tc);
  tc = tcase_create("generated");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_generated_kinds);
  tcase_add_test(tc, test_generated_random);
  tcase_add_test(tc, test_generated_transpose_conv);
  tcase_add_test(tc, test_missing_operators);
  tcase_add_test(tc, test_missing_operator_versions);
  tcase_add_test(tc, test_missing_custom_operator);
  tcase_add_test(tc, test_generated_segmenter);
  suite_add_tcase(s, tc);
  tc = tcase_create("oracle");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_reshape_in_place);
  tcase_add_test(tc, test_unsound_fallback_refused);
  tcase_add_test(tc, test_sharing_random);
  tcase_add_test(tc, test_audit_control);
  suite_add_tcase(s, tc);
  tc = tcase_create("control");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_negative_control);
  suite_add_tcase(s, tc);
  tc = tcase_create("learn");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_dropped_plan);
  tcase_add_test(tc, test_fetched_plan);
  tcase_add_test(tc, test_small_model);
  tcase_add_test(tc, test_input_shapes);
  tcase_add_test(tc, test_pipeline);
  tcase_add_test(tc, test_model_identity);
  tcase_add_test(tc, test_miss_keeps_malloc_threshold);
  suite_add_tcase(s, tc);
  tc = tcase_create("infer");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_infer_eight_processes);
  tcase_add_test(tc, test_infer_digest_and_soak);
  tcase_add_test(tc, test_infer_missing_operators);
  tcase_add_test(tc, test_generated_files);
  tcase_add_test(tc, test_infer_poisoned_plan);
  tcase_add_test(tc, test_infer_audit);
  tcase_add_test(tc, test_infer_input_shape);
  tcase_add_test(tc, test_infer_table);
  tcase_add_test(tc, test_infer_pipeline);
  suite_add_tcase(s, tc);
  tc = tcase_create("bench");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_bench_tflite);
  suite_add_tcase(s, tc);
  return s;
}
