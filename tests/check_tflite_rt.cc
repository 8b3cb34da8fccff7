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
 *      alone.
 *
 * Test cases:
 *  models   every bundled model, planned by a real arenad (the client's
 *           fallback off, so the plan is the daemon's): the ones TFLite
 *           runs proven as above (one table row each), with the daemon's
 *           plan the one this process computes itself, the others
 *           refused by TFLite itself, with an error that says why.
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
 *  control  the negative control: a deliberately overlapping plan
 *           (TflitePlanner's test-only mode) must fail check (b).
 *  infer    the tests' tflite_infer (the example on the small set of
 *           kernels): 8 processes at once against one arenad compute one
 *           plan between them (the daemon's counters) and print the same
 *           outputs; --planner tflite prints them too; a model of
 *           missing operators exits 65 with one line naming them; the
 *           files of tests/data/generated/ are the generator's.
 */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "arenad_tflite.h"
#include "arenad_tflite_ops.h"
#include "gen_models.h"
#include "tflite_infer_run.h"
#include "tflite/kernels/builtin_op_kernels.h"
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

/* Proves planner p's interpreter against TFLite's own on the same model,
 * checks (a) to (d); the outputs of ours in *outputs when asked. */
void Prove(const char *name, arenad::TflitePlanner *p,
           tflite::Interpreter *ours, std::vector<uint8_t> *outputs) {
  std::unique_ptr<tflite::Interpreter> theirs;
  ck_assert_int_eq(p->BuildTfliteOnly(&theirs), 0);
  std::vector<uint8_t> a, b;
  std::string err;
  ck_assert_msg(arenad::RunTflite(ours, 7, kInvokes, &a, &err), "%s: %s",
                name, err.c_str());
  ck_assert_msg(arenad::RunTflite(theirs.get(), 7, kInvokes, &b, &err),
                "%s: %s", name, err.c_str());
  ck_assert_msg(a == b, "%s: outputs differ from TFLite's own planner", name);
  ck_assert_uint_eq(Misplaced(*p, ours), 0);
  ck_assert_uint_eq(Conflicts(*p, ours), 0);
  const arenad::TflitePlanInfo &i = p->info();
  ck_assert_msg(i.total() <= i.tflite_alone,
                "%s: %llu bytes with arenad, %llu alone", name,
                (unsigned long long)i.total(),
                (unsigned long long)i.tflite_alone);
  ck_assert_uint_eq(i.n_placed + i.n_left, i.n_tensors);
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
    arenad::TflitePlanner p(c, bytes.data(), bytes.size(), resolver);
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
      Prove(m.name, &p, ours.get(), nullptr);
      /* the daemon's plan is the one this process computes */
      arenad::TflitePlanner local(lc, bytes.data(), bytes.size(), resolver);
      std::unique_ptr<tflite::Interpreter> li;
      ck_assert_int_eq(local.Build(&li), 0);
      ck_assert_uint_eq(local.info().plan_bytes, i.plan_bytes);
      ck_assert_uint_eq(local.buffers().size(), p.buffers().size());
      for (size_t k = 0; k < p.buffers().size(); k++)
        ck_assert_uint_eq(local.buffers()[k].offset, p.buffers()[k].offset);
      li.reset();
      printf("tflite_rt: | %s | %llu | %llu + %llu = %llu | %lld | yes | "
             "%s, %zu/%zu placed, %zu temporaries %llu bytes, %zu in place, "
             "plan %llu |\n",
             m.name, (unsigned long long)i.tflite_alone,
             (unsigned long long)i.arena_bytes,
             (unsigned long long)i.remainder, (unsigned long long)i.total(),
             (long long)i.tflite_alone - (long long)i.total(),
             arenad::TflitePlanSourceName(i.source), i.n_placed,
             i.n_tensors, i.n_temporaries,
             (unsigned long long)i.temporary_bytes, i.n_shared,
             (unsigned long long)i.plan_bytes);
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
    arenad::TflitePlanner p(c, bytes.data(), bytes.size(), resolver);
    std::unique_ptr<tflite::Interpreter> ours;
    ck_assert_msg(p.Build(&ours) == 0, "%s: %s", name, p.error());
    Prove(name, &p, ours.get(), outputs);
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
  arenad::TflitePlanner p(c, m.data(), m.size(), only_add);
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
  arenad::TflitePlanner p(c, m.data(), m.size(), resolver);
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
  arenad::TflitePlanner p(c, m.data(), m.size(), only_add);
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
      arenad::TflitePlanner p(c, bytes.data(), bytes.size(), resolver);
      std::unique_ptr<tflite::Interpreter> ours;
      ck_assert_msg(p.Build(&ours) == 0, "%s: %s", name, p.error());
      const arenad::TflitePlanInfo &i = p.info();
      ck_assert_msg(i.source == arenad::TflitePlanSource::kLocal,
                    "%s: plan from %s", name,
                    arenad::TflitePlanSourceName(i.source));
      ck_assert_uint_gt(i.n_placed, 0);
      ck_assert_uint_eq(i.n_left, 0);
      Prove(name, &p, ours.get(), nullptr);
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
    arenad::TflitePlanner p(c, bytes.data(), bytes.size(), resolver);
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
    arenad::TflitePlanner p(c, bytes.data(), bytes.size(), resolver);
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
    pids[i] = Spawn({bin, "--socket", h.sock, "--no-fallback", "--invokes",
                     "3", "--values", "0", model},
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
  ck_assert_int_eq(RunInfer({bin, "--socket", nosock, "--invokes", "4",
                             "--values", "0", model}, d + "/a", &text), 0);
  ck_assert_int_eq(RunInfer({bin, "--planner", "tflite", "--invokes", "4",
                             "--values", "0", model}, d + "/b", &ref), 0);
  std::string digest = LineOf(text, "outputs digest: ");
  ck_assert_msg(digest.size() > 64 && digest.find("(4 invokes)") !=
                    std::string::npos, "%s", text.c_str());
  std::string own = LineOf(ref, "outputs digest: ");
  ck_assert_str_eq(digest.c_str(), own.c_str());
  ck_assert(Outputs(text) == Outputs(ref));
  ck_assert_int_eq(RunInfer({bin, "--socket", nosock, "--invokes", "1",
                             model}, d + "/c", &text), 0);
  std::string one = LineOf(text, "outputs digest: ").substr(0, 80);
  ck_assert_msg(one.size() == 80 && one != digest.substr(0, 80), "%s",
                text.c_str());
  /* a flat soak (its memory figures are the program's own only without
   * AddressSanitizer, whose allocator keeps what is freed: there the
   * soak must still print its ten lines and end with 0 or 1) */
  int soak_rc = RunInfer({bin, "--socket", nosock, "--soak", "100",
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
  int rc = RunInfer({leaky, "--socket", nosock, "--soak", "100", model},
                    d + "/leak", &text);
  unsetenv("TFLITE_INFER_TEST_LEAK");
  /* under AddressSanitizer its leak checker also fails the process at
   * exit, with a status of its own */
  ck_assert_msg(rc == 1 || (!kRssIsOurs && rc != 0), "exit %d: %s", rc,
                text.c_str());
  ck_assert_msg(text.find("soak: memory grew") != std::string::npos, "%s",
                text.c_str());
  /* the same testing build without the leak passes */
  rc = RunInfer({leaky, "--socket", nosock, "--soak", "100", model},
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
  tc = tcase_create("control");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_negative_control);
  suite_add_tcase(s, tc);
  tc = tcase_create("infer");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_infer_eight_processes);
  tcase_add_test(tc, test_infer_digest_and_soak);
  tcase_add_test(tc, test_infer_missing_operators);
  tcase_add_test(tc, test_generated_files);
  suite_add_tcase(s, tc);
  return s;
}
