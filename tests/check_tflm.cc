/*
 * check_tflm.cc - TensorFlow Lite Micro runs on arenad's plans
 * (tflm_suite; C++, built against the bundled TFLM).
 *
 * TFLM checks nothing about a plan: it puts every buffer wherever the
 * planner says. So these tests check for themselves, from the plan TFLM
 * actually used: the runner (tflm_infer_run.h) taps every planner and
 * keeps every buffer TFLM added and every offset and head size TFLM read
 * back, and a plan is proven only when (a) no two of those buffers
 * that are live at the same time share a byte, every offset is 16-byte
 * aligned and inside the head, and (b) the interpreter's outputs on
 * seeded inputs over three invokes are bit-identical to those with TFLM's
 * own GreedyMemoryPlanner.
 *
 * Test cases:
 *  planner  arenad::TflmPlanner through the MicroMemoryPlanner interface
 *           alone: bad models and buffers, offline (pinned) offsets, the
 *           daemon path with and without fallback, Init() starting over,
 *           and every bundled model's buffers (as arenactl embed computes
 *           them) planned by TFLM's real GreedyMemoryPlanner and by
 *           arenad: arenad's never larger, smaller where the optimum is,
 *           and arenad's tflm-greedy replica equal to TFLM's planner.
 *  models   every bundled model: the runnable ones with TFLM's planner,
 *           with arenad's (through a real arenad), and with the plan
 *           `arenactl embed` wrote (TFLM reading it itself), all three
 *           proven as above; the buffers TFLM asks for equal the graph
 *           embed plans, scratch buffers included; embed's printed arena
 *           equals TFLM's head and it warns exactly when that is no
 *           smaller than TFLM's own. The models TFLM cannot run fail for
 *           the stated reason. Prints one table row per model.
 *  control  the negative control: a deliberately overlapping plan
 *           (TflmPlanner's test-only mode) must fail the check.
 *  infer    (check_tflm_infer.cc) the tflm_infer example: 8 processes
 *           at once against one arenad share one plan (exactly one
 *           computed, from the daemon's counters); its errors and exit
 *           statuses.
 *  oracle   (check_tflm_oracle.cc) the outputs of arenad's plans,
 *           sharing on and off, and of TFLM's own planner, equal to those
 *           of a run where no two buffers share a byte, on the models of
 *           gen_models_random.cc.
 *  ops_*    (check_tflm_ops.cc) arenad's own TFLM kernels (FLOAT16
 *           DEQUANTIZE, Convolution2DTransposeBias) and the operators
 *           tflm_infer registers.
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

extern "C" {
#include "daemon_harness.h"
#include "testutil.h"
#include "wire.h"
}
#include "arenad_tflm.h"
#include "check_tflm.h"
#include "tensorflow/lite/micro/memory_planner/greedy_memory_planner.h"
#include "tflite.h"
#include "tflm_infer_run.h"

extern "C" Suite *tflm_suite(void);

/* ---- shared with check_tflm_infer.cc (check_tflm.h) ---------------------- */

namespace check_tflm {

std::string ModelPath(const char *name, const char *suffix) {
  return std::string(tu_data_dir()) + "/models/" + name + suffix;
}

Counters Stats(const struct harness *h) {
  Arenad__V1__Response *r = hn_stats(h);
  ck_assert_ptr_nonnull(r);
  ck_assert_ptr_nonnull(r->stats);
  Counters c = {r->stats->plans_computed,   r->stats->misses,
                r->stats->memory_hits,      r->stats->storage_hits,
                r->stats->single_flight_joined, r->stats->plans_served};
  wire_free_response(r);
  return c;
}

/* Reads a whole file into a string ("" when missing). */
std::string Slurp(const std::string &path) {
  size_t len = 0;
  char *s = tu_read_file(path.c_str(), &len);
  std::string r = s ? std::string(s, len) : std::string();
  free(s);
  return r;
}

/* Runs `argv` with stdout and stderr into files of dir; returns the exit
 * status and the two texts. */
int Exec(const std::vector<std::string> &args, const std::string &dir,
        std::string *out, std::string *err) {
  std::vector<const char *> argv;
  for (const std::string &a : args)
    argv.push_back(a.c_str());
  argv.push_back(NULL);
  std::string o = dir + "/out.txt", e = dir + "/err.txt";
  int st = tu_run(argv.data(), NULL, NULL, o.c_str(), e.c_str());
  *out = Slurp(o);
  *err = Slurp(e);
  return st;
}

}  // namespace check_tflm

namespace check_tflm {

/* One buffer TFLM added, and the offset it was given. */
std::vector<Buf> Bufs(const tflm_infer::Run &r) {
  return std::vector<Buf>(r.buffers, r.buffers + r.n_buffers);
}

/* Whether buffers i and j, live at once and overlapping, are a pair
 * declared in alias (alias[out] = in) that shares legally: one offset,
 * the input's last scope the output's first. */
static bool DeclaredPair(const std::vector<Buf> &b,
                         const std::vector<int> *alias, size_t i, size_t j) {
  if (!alias || alias->size() != b.size())
    return false;
  size_t out = j, in = i;
  if ((*alias)[j] != (int)i) {
    if ((*alias)[i] != (int)j)
      return false;
    out = i;
    in = j;
  }
  return b[i].offset == b[j].offset && b[in].last == b[out].first &&
         b[in].first < b[in].last;
}

int Conflicts(const std::vector<Buf> &b, size_t head, char *msg, size_t cap,
              const std::vector<int> *alias) {
  int bad = 0;
  char why[200];
  auto note = [&]() {
    if (!bad++)
      snprintf(msg, cap, "%s", why);
  };
  msg[0] = '\0';
  for (size_t i = 0; i < b.size(); i++) {
    if (b[i].size == 0)
      continue;
    if (b[i].offset < 0 || b[i].offset % kAlign) {
      snprintf(why, sizeof why, "buffer %zu: offset %d unread or not "
               "16-aligned", i, b[i].offset);
      note();
    } else if ((size_t)b[i].offset + (size_t)b[i].size > head) {
      snprintf(why, sizeof why, "buffer %zu ends past the head (%zu)", i,
               head);
      note();
    }
    if (b[i].offline >= 0 && b[i].offset != b[i].offline) {
      snprintf(why, sizeof why, "buffer %zu: offline offset %d not kept", i,
               b[i].offline);
      note();
    }
    for (size_t j = i + 1; j < b.size(); j++) {
      if (b[j].size == 0 || b[i].last < b[j].first || b[j].last < b[i].first)
        continue;
      if (b[i].offset + b[i].size > b[j].offset &&
          b[j].offset + b[j].size > b[i].offset &&
          !DeclaredPair(b, alias, i, j)) {
        snprintf(why, sizeof why, "buffers %zu and %zu are live at once and "
                 "overlap", i, j);
        note();
      }
    }
  }
  return bad;
}

tflm_infer::Model Load(const std::string &path) {
  tflm_infer::Model m;
  char err[tflm_infer::kErrLen];
  int rc = tflm_infer::LoadModel(path.c_str(), &m, err);
  ck_assert_msg(rc == tflm_infer::kRunOk, "%s: %s", path.c_str(), err);
  return m;
}

/* Runs m with planner p on a fresh arena. */
int RunOn(const tflm_infer::Model &m, tflite::MicroMemoryPlanner *p,
          tflm_infer::Run *run) {
  Arena a;
  return tflm_infer::RunModel(m, p, a.p, kArena, kSeed, kInvokes, run);
}

/* Asserts a run succeeded with a proven plan. */
void AssertProven(const char *what, int rc, const tflm_infer::Run &run,
                  const std::vector<int> *alias) {
  char msg[256];
  ck_assert_msg(rc == tflm_infer::kRunOk, "%s: run failed (%d): %s", what, rc,
                run.error);
  ck_assert_uint_gt(run.n_buffers, 0);
  ck_assert_msg(Conflicts(Bufs(run), run.head_bytes, msg, sizeof msg,
                          alias) == 0,
                "%s: %s", what, msg);
  ck_assert_uint_gt(run.n_info, 0);
  ck_assert_uint_eq(run.n_info % kInvokes, 0);
}

bool SameOutputs(const tflm_infer::Run &a, const tflm_infer::Run &b) {
  return a.outputs_len == b.outputs_len && a.n_info == b.n_info &&
         memcmp(a.outputs, b.outputs, a.outputs_len) == 0;
}

std::vector<int> PlannerAliases(arenad::TflmPlanner *p, size_t n) {
  std::vector<int> v(n);
  for (size_t k = 0; k < n; k++)
    v[k] = p->AliasOf((int)k);
  return v;
}

const ModelCase kModels[] = {
    {"audio_preprocessor_int8", tflm_infer::kRunUnsupported,
     "its Signal* operators need kissfft, which neither the bundle nor "
     "Debian 12 provides as source",
     "SignalWindow"},
    {"dtln_noise_suppression", tflm_infer::kRunOk, NULL, NULL},
    {"face_detection_short_range", tflm_infer::kRunOk, NULL, NULL},
    {"hello_world_float", tflm_infer::kRunOk, NULL, NULL},
    {"keyword_scrambled", tflm_infer::kRunOk, NULL, NULL},
    {"magic_wand", tflm_infer::kRunOk, NULL, NULL},
    {"micro_speech_lstm", tflm_infer::kRunOk, NULL, NULL},
    {"micro_speech_quantized", tflm_infer::kRunOk, NULL, NULL},
    {"mobilenet_v2_quantized_1x3x224x224", tflm_infer::kRunOk, NULL, NULL},
    {"person_detect", tflm_infer::kRunOk, NULL, NULL},
    {"trained_lstm", tflm_infer::kRunOk, NULL, NULL},
};
const int kNModels = sizeof kModels / sizeof kModels[0];

}  // namespace check_tflm

namespace {

using namespace check_tflm;


/* The graph `arenactl embed` plans for model bytes (tensors, then TFLM's
 * scratch buffers), as buffers in TFLM's terms: sizes rounded up to 16,
 * operator k as allocation scope k + 1. */
std::vector<Buf> EmbedGraph(const tflm_infer::Model &m) {
  struct planner_tflite_options o = {};
  o.keep_dequant = 1;
  o.skip_variable = 1;
  o.tflm_scratch = 1;
  struct planner_tflite_model t;
  char err[ARENA_ERR_LEN];
  planner_tflite_init(&t);
  ck_assert_msg(planner_tflite_read(m.data, m.len, &o, &t, err) == 0, "%s",
                err);
  std::vector<Buf> v;
  auto add = [&](const struct planner_tensor &x) {
    v.push_back({(int)((x.size + 15) / 16 * 16), (int)x.first + 1,
                 (int)x.last + 1, -1, -1});
  };
  for (size_t i = 0; i < t.n_planned; i++)
    add(t.tensors[i]);
  for (size_t i = 0; i < t.n_scratch; i++)
    add(t.scratch[i]);
  planner_tflite_cleanup(&t);
  return v;
}

/* Feeds bufs to p as TFLM would. */
void Replay(const std::vector<Buf> &bufs, tflite::MicroMemoryPlanner *p,
            std::vector<unsigned char> *scratch) {
  scratch->assign(bufs.size() * tflite::GreedyMemoryPlanner::per_buffer_size()
                      + 64, 0);
  ck_assert_int_eq(p->Init(scratch->data(), (int)scratch->size()), kTfLiteOk);
  for (const Buf &b : bufs)
    ck_assert_int_eq(b.offline >= 0
                         ? p->AddBuffer(b.size, b.first, b.last, b.offline)
                         : p->AddBuffer(b.size, b.first, b.last),
                     kTfLiteOk);
}

/* Asks p for every buffer's offset and the head, as TFLM does after
 * adding them; fills the offsets into bufs and returns the head. */
size_t Query(tflite::MicroMemoryPlanner *p, std::vector<Buf> *bufs) {
  size_t head = p->GetMaximumMemorySize();
  for (size_t i = 0; i < bufs->size(); i++)
    ck_assert_int_eq(p->GetOffsetForBuffer((int)i, &(*bufs)[i].offset),
                     kTfLiteOk);
  return head;
}

/* Buffers as comparable tuples: size-0 and never-used buffers dropped,
 * the graph inputs' scope 0 folded into scope 1 (in arenad's graph they
 * start at operator 0 like that operator's outputs), sorted. */
std::vector<std::vector<int>> Normal(const std::vector<Buf> &bufs) {
  std::vector<std::vector<int>> v;
  for (const Buf &b : bufs)
    if (b.size > 0 && b.first >= 0)
      v.push_back({b.size, std::max(b.first, 1), b.last});
  std::sort(v.begin(), v.end());
  return v;
}

/* The number after `key` in text, or -1. */
long long After(const std::string &text, const char *key) {
  size_t at = text.find(key);
  return at == std::string::npos ? -1
                                 : atoll(text.c_str() + at + strlen(key));
}

/* ---- planner ------------------------------------------------------------ */

START_TEST(test_planner_bad_input) {
  static const uint8_t junk[64] = {1, 2, 3};
  LocalClient lc;
  arenad::TflmPlanner bad(lc.c, junk, sizeof junk);
  ck_assert_int_eq(bad.status(), ARENA_EPARSE);
  ck_assert_ptr_nonnull(strstr(bad.error(), "not a valid TFLite"));
  ck_assert_int_eq(bad.AddBuffer(16, 0, 1), kTfLiteError);
  ck_assert_int_eq(bad.Init(NULL, 0), kTfLiteError);
  arenad::TflmPlanner none(lc.c, NULL, 0);
  ck_assert_int_eq(none.status(), ARENA_EINVAL);
  arenad::TflmPlanner no_client(NULL, junk, sizeof junk);
  ck_assert_int_eq(no_client.status(), ARENA_EINVAL);
  ck_assert_ptr_nonnull(strstr(no_client.error(), "no client"));

  tflm_infer::Model m = Load(ModelPath("hello_world_float"));
  struct {
    int size, first, last, off, code;
  } cases[] = {{-16, 0, 1, -1, ARENA_EINVAL}, {16, 2, 1, -1, ARENA_EINVAL},
               {16, -2, 1, -1, ARENA_EINVAL}, {16, 0, 1, 8, ARENA_EPINNED},
               {16, 0, 1, -5, ARENA_EINVAL}};
  for (auto &c : cases) {
    arenad::TflmPlanner p(lc.c, m.data, m.len);
    ck_assert_int_eq(p.status(), 0);
    TfLiteStatus st = c.off == -1 ? p.AddBuffer(c.size, c.first, c.last)
                                  : p.AddBuffer(c.size, c.first, c.last, c.off);
    ck_assert_int_eq(st, kTfLiteError);
    ck_assert_int_eq(p.status(), c.code);
    int off = 0;
    ck_assert_int_eq(p.GetOffsetForBuffer(0, &off), kTfLiteError);
    ck_assert_uint_eq(p.GetMaximumMemorySize(), 0);
    /* Init() starts over: the planner works again. */
    ck_assert_int_eq(p.Init(NULL, 0), kTfLiteOk);
    ck_assert_int_eq(p.AddBuffer(32, 0, 0), kTfLiteOk);
    ck_assert_int_eq(p.GetOffsetForBuffer(0, &off), kTfLiteOk);
    ck_assert_int_eq(off, 0);
    ck_assert_int_eq(p.GetOffsetForBuffer(1, &off), kTfLiteError);
    ck_assert_uint_eq(p.GetMaximumMemorySize(), 32);
  }
  tflm_infer::FreeModel(&m);
}
END_TEST

/* The planner's cache key hashes the model with arenad_client_sha256():
 * FIPS 180-4's "abc" vector, and the hash arenactl prints for a model;
 * and the client's other wrappers. */
START_TEST(test_planner_model_hash) {
  static const uint8_t abc[32] = {
      0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40,
      0xde, 0x5d, 0xae, 0x22, 0x23, 0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17,
      0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad};
  uint8_t h[ARENAD_CLIENT_DIGEST_LEN];
  arenad_client_sha256("abc", 3, h);
  ck_assert_int_eq(memcmp(h, abc, sizeof h), 0);
  /* The other wrappers TflmPlanner calls instead of planner.h's. */
  struct planner_options o;
  arenad_client_plan_options_init(&o);
  ck_assert_int_eq(o.algo, PLANNER_ALGO_BEST);
  ck_assert_uint_eq(o.alignment, PLANNER_DEFAULT_ALIGNMENT);
  ck_assert_str_eq(arenad_client_strerror(ARENA_EINVAL), "invalid argument");
  ck_assert_str_eq(arenad_client_algo_name(PLANNER_ALGO_TFLM_GREEDY),
                   "tflm-greedy");
  tflm_infer::Model m = Load(ModelPath("person_detect"));
  struct planner_tflite_model t;
  char err[ARENA_ERR_LEN];
  planner_tflite_init(&t);
  ck_assert_int_eq(planner_tflite_read(m.data, m.len, NULL, &t, err), 0);
  arenad_client_sha256(m.data, m.len, h);
  ck_assert_int_eq(memcmp(h, t.sha256, sizeof h), 0);
  planner_tflite_cleanup(&t);
  tflm_infer::FreeModel(&m);
}
END_TEST

START_TEST(test_planner_pinned_and_empty) {
  tflm_infer::Model m = Load(ModelPath("hello_world_float"));
  LocalClient lc;
  arenad::TflmPlanner p(lc.c, m.data, m.len);
  ck_assert_uint_eq(p.GetMaximumMemorySize(), 0); /* no buffers: empty */
  ck_assert_int_eq(p.GetBufferCount(), 0);
  /* TFLM's scopes: -1 (never used), 0 (graph inputs), then operators. */
  std::vector<Buf> bufs = {{64, 0, 1, 128, -1}, {32, 1, 2, -1, -1},
                           {32, 1, 1, -1, -1},  {48, -1, -1, -1, -1},
                           {0, 1, 2, -1, -1},   {16, 2, 2, 0, -1}};
  std::vector<unsigned char> scratch;
  Replay(bufs, &p, &scratch);
  ck_assert_int_eq(p.GetBufferCount(), 6);
  size_t head = Query(&p, &bufs);
  char msg[256];
  ck_assert_msg(Conflicts(bufs, head, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_int_eq(bufs[0].offset, 128);
  ck_assert_int_eq(bufs[5].offset, 0);
  const arenad::TflmPlanInfo &i = p.info();
  ck_assert(i.source == arenad::TflmPlanSource::kLocal);
  ck_assert_uint_eq(i.n_buffers, 6);
  ck_assert_uint_eq(i.arena_bytes, head);
  ck_assert_uint_ge(i.arena_bytes, i.lower_bound_bytes);
  tflm_infer::FreeModel(&m);
}
END_TEST

START_TEST(test_planner_daemon_paths) {
  tflm_infer::Model m = Load(ModelPath("person_detect"));
  std::vector<Buf> bufs = EmbedGraph(m);
  std::vector<unsigned char> scratch;
  Daemon d;
  int off0 = -1, off1 = -1;
  {
    arenad::TflmPlanner p(d.c, m.data, m.len);
    Replay(bufs, &p, &scratch);
    ck_assert_int_eq(p.GetOffsetForBuffer(0, &off0), kTfLiteOk);
    ck_assert(p.info().source == arenad::TflmPlanSource::kDaemon);
  }
  {
    arenad::TflmPlanner p(d.c, m.data, m.len);
    Replay(bufs, &p, &scratch);
    ck_assert_int_eq(p.GetOffsetForBuffer(0, &off1), kTfLiteOk);
    ck_assert(p.info().source == arenad::TflmPlanSource::kCache);
  }
  ck_assert_int_eq(off0, off1);
  Counters n = Stats(&d.h);
  ck_assert_uint_eq(n.computed, 1);
  ck_assert_uint_eq(n.memory_hits, 1);
  /* No daemon: fallback off fails cleanly, fallback on plans locally. */
  struct arenad_client_options o;
  arenad_client_options_init(&o);
  std::string gone = std::string(d.h.dir) + "/none.sock";
  o.socket_path = gone.c_str();
  for (int fb = 0; fb <= 1; fb++) {
    arenad_client_t *c = NULL;
    o.fallback = fb;
    ck_assert_int_eq(arenad_client_open(&o, &c), 0);
    arenad::TflmPlanner p(c, m.data, m.len);
    Replay(bufs, &p, &scratch);
    int off = -1;
    if (!fb) {
      ck_assert_int_eq(p.GetOffsetForBuffer(0, &off), kTfLiteError);
      ck_assert_int_eq(p.status(), ARENA_EUNAVAIL);
      ck_assert(p.info().source == arenad::TflmPlanSource::kNone);
    } else {
      ck_assert_int_eq(p.GetOffsetForBuffer(0, &off), kTfLiteOk);
      ck_assert_int_eq(off, off0);
      ck_assert(p.info().source == arenad::TflmPlanSource::kLocal);
      ck_assert_int_eq(p.info().fallback_reason, ARENA_EUNAVAIL);
    }
    arenad_client_close(c);
  }
  tflm_infer::FreeModel(&m);
}
END_TEST

/* Every bundled model's buffers, as embed computes them, planned by
 * TFLM's own GreedyMemoryPlanner and by arenad. */
START_TEST(test_planner_against_greedy) {
  const ModelCase &mc = kModels[_i];
  tflm_infer::Model m = Load(ModelPath(mc.name));
  std::vector<Buf> bufs = EmbedGraph(m);
  std::vector<unsigned char> scratch;
  tflite::GreedyMemoryPlanner greedy;
  Replay(bufs, &greedy, &scratch);
  size_t own = greedy.GetMaximumMemorySize();
  ck_assert(!greedy.DoAnyBuffersOverlap());
  LocalClient lc;
  arenad::TflmPlanner ours(lc.c, m.data, m.len);
  Replay(bufs, &ours, &scratch);
  size_t head = Query(&ours, &bufs);
  char msg[256];
  std::vector<int> alias = PlannerAliases(&ours, bufs.size());
  ck_assert_msg(Conflicts(bufs, head, msg, sizeof msg, &alias) == 0, "%s",
                msg);
  const arenad::TflmPlanInfo &info = ours.info();
  /* arenad's tflm-greedy is TFLM's planner: same arena on these buffers. */
  std::vector<struct planner_tensor> g;
  for (size_t i = 0; i < bufs.size(); i++)
    g.push_back({(uint32_t)i, (uint64_t)bufs[i].size, bufs[i].first,
                 bufs[i].last, 0, PLANNER_NOT_PINNED, 0, 0});
  struct planner_graph pg = {g.data(), g.size()};
  struct planner_options o;
  planner_options_init(&o);
  o.algo = PLANNER_ALGO_TFLM_GREEDY;
  o.alignment = kAlign;
  struct planner_plan pp;
  planner_plan_init(&pp);
  ck_assert_int_eq(planner_run(&pg, &o, &pp, NULL), 0);
  ck_assert_uint_eq(pp.arena_bytes, own);
  planner_plan_cleanup(&pp);
  /* Never larger; smaller wherever TFLM's planner misses the optimum
   * that arenad proves. */
  ck_assert_uint_le(info.arena_bytes, own);
  if (info.proven_optimal && info.lower_bound_bytes < own)
    ck_assert_uint_lt(info.arena_bytes, own);
  printf("tflm planner: %-36s %4zu buffers, TFLM GreedyMemoryPlanner %8zu, "
         "arenad %8llu (%s%s)\n",
         mc.name, bufs.size(), own, (unsigned long long)info.arena_bytes,
         planner_algo_name(info.algo),
         info.proven_optimal ? ", optimal" : "");
  fflush(stdout);
  tflm_infer::FreeModel(&m);
}
END_TEST

/* ---- models ------------------------------------------------------------- */

/* Runs m with planner p and captures what TFLM prints (stderr)
 * meanwhile; for the models that must fail, whose reason only TFLM's log
 * names. */
int RunCapturing(const tflm_infer::Model &m, tflite::MicroMemoryPlanner *p,
                 tflm_infer::Run *run, std::string *log) {
  char *dir = tu_mkdtemp();
  ck_assert_ptr_nonnull(dir);
  std::string path = std::string(dir) + "/stderr.txt";
  fflush(stderr);
  int saved = dup(2);
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ck_assert_int_ge(fd, 0);
  dup2(fd, 2);
  close(fd);
  int rc = RunOn(m, p, run);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  *log = Slurp(path);
  tu_rm_rf(dir);
  free(dir);
  return rc;
}

/* A model TFLM cannot run here fails for the stated reason, with either
 * planner. */
void AssertNotRunnable(const ModelCase &mc, const tflm_infer::Model &m) {
  tflite::GreedyMemoryPlanner greedy;
  LocalClient lc;
  arenad::TflmPlanner ours(lc.c, m.data, m.len);
  tflite::MicroMemoryPlanner *planners[] = {&greedy, &ours};
  for (tflite::MicroMemoryPlanner *p : planners) {
    tflm_infer::Run r;
    std::string log;
    ck_assert_int_eq(RunCapturing(m, p, &r, &log), mc.status);
    ck_assert_msg(strstr(r.error, mc.word) ||
                      log.find(mc.word) != std::string::npos,
                  "%s: %s / %s", mc.name, r.error, log.c_str());
    tflm_infer::FreeRun(&r);
  }
  printf("tflm model: %-36s not run: %s\n", mc.name, mc.why);
  fflush(stdout);
}

/* Runs the plan `arenactl embed` writes for model `name` with TFLM's own
 * planner, which reads it; *printed gets the arena embed printed and
 * *warned whether it warned. */
void RunEmbedded(const char *name, tflm_infer::Run *r, long long *printed,
                 bool *warned) {
  char *dir = tu_mkdtemp();
  std::string out_model = std::string(dir) + "/planned.tflite", out, err;
  int st = Exec({TFLM_TEST_BUILD "/arenactl", "embed", ModelPath(name), "-o",
                 out_model},
                dir, &out, &err);
  ck_assert_msg(st == 0, "embed: %s", err.c_str());
  *printed = After(out, "), arena ");
  ck_assert_int_gt(*printed, 0);
  *warned = err.find("warning: the plan needs") != std::string::npos;
  tflm_infer::Model pm = Load(out_model);
  tflite::GreedyMemoryPlanner greedy;
  int rc = RunOn(pm, &greedy, r);
  std::vector<int> alias = ModelAliases(*r, pm); /* the pairs embed shared */
  AssertProven("the embedded plan", rc, *r, &alias);
  size_t n_offline = 0;
  for (size_t i = 0; i < r->n_buffers; i++)
    n_offline += r->buffers[i].offline >= 0;
  ck_assert_uint_gt(n_offline, 0);
  tflm_infer::FreeModel(&pm);
  tu_rm_rf(dir);
  free(dir);
}

START_TEST(test_models) {
  const ModelCase &mc = kModels[_i];
  tflm_infer::Model m = Load(ModelPath(mc.name));
  if (mc.status != tflm_infer::kRunOk) {
    AssertNotRunnable(mc, m);
    tflm_infer::FreeModel(&m);
    return;
  }
  tflite::GreedyMemoryPlanner greedy;
  tflm_infer::Run r_own;
  AssertProven("TFLM's planner", RunOn(m, &greedy, &r_own), r_own);

  /* With arenad, through a real daemon. */
  Daemon d;
  arenad::TflmPlanner ours(d.c, m.data, m.len);
  tflm_infer::Run r_ours;
  int rc = RunOn(m, &ours, &r_ours);
  std::vector<int> alias = PlannerAliases(&ours, r_ours.n_buffers);
  AssertProven("arenad's planner", rc, r_ours, &alias);
  ck_assert(ours.info().source == arenad::TflmPlanSource::kDaemon);
  ck_assert_msg(SameOutputs(r_own, r_ours), "%s: outputs differ", mc.name);
  ck_assert_uint_eq(r_ours.n_buffers, r_own.n_buffers);
  for (size_t i = 0; i < r_own.n_buffers; i++) {
    ck_assert_int_eq(r_ours.buffers[i].size, r_own.buffers[i].size);
    ck_assert_int_eq(r_ours.buffers[i].first, r_own.buffers[i].first);
    ck_assert_int_eq(r_ours.buffers[i].last, r_own.buffers[i].last);
  }
  ck_assert_uint_le(r_ours.head_bytes, r_own.head_bytes);
  ck_assert_uint_le(r_ours.arena_used_bytes, r_own.arena_used_bytes);

  /* The buffers TFLM asked for are the graph embed plans, scratch
   * buffers included. */
  ck_assert_msg(Normal(Bufs(r_own)) == Normal(EmbedGraph(m)),
                "%s: TFLM's buffers differ from embed's graph", mc.name);

  /* The plan embed writes, read by TFLM itself: same outputs, the head
   * embed printed, never above TFLM's own, and a warning exactly when it
   * is not below. */
  tflm_infer::Run r_emb;
  long long printed;
  bool warned;
  RunEmbedded(mc.name, &r_emb, &printed, &warned);
  ck_assert_msg(SameOutputs(r_own, r_emb), "%s: embedded outputs differ",
                mc.name);
  ck_assert_uint_eq((size_t)printed, r_emb.head_bytes);
  ck_assert_uint_le(r_emb.head_bytes, r_own.head_bytes);
  ck_assert_msg(warned == (r_emb.head_bytes >= r_own.head_bytes),
                "%s: warning %d, embedded head %zu, TFLM's own %zu", mc.name,
                warned, r_emb.head_bytes, r_own.head_bytes);

  printf("tflm model: %-36s TFLM head %8zu used %8zu | arenad head %8zu "
         "used %8zu | embedded head %8zu | lower bound %8llu | outputs "
         "identical over %d invokes\n",
         mc.name, r_own.head_bytes, r_own.arena_used_bytes, r_ours.head_bytes,
         r_ours.arena_used_bytes, r_emb.head_bytes,
         (unsigned long long)ours.info().lower_bound_bytes, kInvokes);
  fflush(stdout);
  tflm_infer::FreeRun(&r_emb);
  tflm_infer::FreeRun(&r_ours);
  tflm_infer::FreeRun(&r_own);
  tflm_infer::FreeModel(&m);
}
END_TEST

/* ---- control ------------------------------------------------------------ */

START_TEST(test_negative_control) {
  tflm_infer::Model m = Load(ModelPath("person_detect"));
  tflite::GreedyMemoryPlanner greedy;
  tflm_infer::Run r_own;
  AssertProven("TFLM's planner", RunOn(m, &greedy, &r_own), r_own);
  LocalClient lc;
  arenad::TflmPlanner bad(lc.c, m.data, m.len);
  bad.TestOnlyOverlap(true);
  tflm_infer::Run r_bad;
  ck_assert_int_eq(RunOn(m, &bad, &r_bad), tflm_infer::kRunOk);
  char msg[256];
  std::vector<int> alias = PlannerAliases(&bad, r_bad.n_buffers);
  int n = Conflicts(Bufs(r_bad), r_bad.head_bytes, msg, sizeof msg, &alias);
  ck_assert_msg(n > 0, "the overlapping plan passed the check");
  ck_assert_ptr_nonnull(strstr(msg, "overlap"));
  bool same = SameOutputs(r_own, r_bad);
  printf("tflm control: overlapping plan caught (%s); outputs %s\n", msg,
         same ? "happened to match" : "differ");
  fflush(stdout);
  tflm_infer::FreeRun(&r_bad);
  tflm_infer::FreeRun(&r_own);
  tflm_infer::FreeModel(&m);
}
END_TEST

/* The defined symbols of file f, as `nm --defined-only` lists them
 * (nm from PATH, as the deploy suite runs it); "" when nm fails. */
std::string DefinedSymbols(const char *f) {
  std::string cmd = std::string("nm --defined-only '") + f + "' 2>/dev/null";
  FILE *p = popen(cmd.c_str(), "r");
  if (!p)
    return "";
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0)
    out.append(buf, n);
  return pclose(p) == 0 ? out : "";
}

/* The hooks that corrupt a plan on purpose are in the test build of the
 * planner only: no code of them in libarenad-tflm.a, which programs
 * link, nor in tflm_infer, which links it; the test build's object has
 * them, so the check can tell. */
START_TEST(test_hooks_only_in_test_build) {
  const char *overlap = "_ZN6arenad11TflmPlanner7OverlapEv";
  const char *production[] = {TFLM_TEST_BUILD "/libarenad-tflm.a",
                              TFLM_TEST_BUILD "/examples/tflm_infer"};
  for (const char *f : production) {
    std::string syms = DefinedSymbols(f);
    ck_assert_msg(syms.find("TflmPlanner") != std::string::npos,
                  "nm %s: no TflmPlanner at all, or nm failed", f);
    ck_assert_msg(syms.find(overlap) == std::string::npos,
                  "%s contains the test-only plan corruption", f);
  }
  const char *test = TFLM_TEST_BUILD "/tests/arenad_tflm_testing.o";
  ck_assert_msg(DefinedSymbols(test).find(overlap) != std::string::npos,
                "%s lacks the hook the negative control needs", test);
}
END_TEST

}  // namespace

Suite *tflm_suite(void) {
  Suite *s = suite_create("tflm");
  TCase *tc = tcase_create("planner");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_planner_bad_input);
  tcase_add_test(tc, test_planner_model_hash);
  tcase_add_test(tc, test_planner_pinned_and_empty);
  tcase_add_test(tc, test_planner_daemon_paths);
  tcase_add_loop_test(tc, test_planner_against_greedy, 0, kNModels);
  suite_add_tcase(s, tc);
  tc = tcase_create("models");
  tcase_set_timeout(tc, 900); /* mobilenet under the sanitizers */
  tcase_add_loop_test(tc, test_models, 0, kNModels);
  suite_add_tcase(s, tc);
  tc = tcase_create("control");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_negative_control);
  tcase_add_test(tc, test_hooks_only_in_test_build);
  suite_add_tcase(s, tc);
  check_tflm::AddInferTests(s);
  check_tflm::AddGeneratedTests(s);
  check_tflm::AddTenantTests(s);
  check_tflm::AddOracleTests(s);
  check_tflm::AddInPlaceTests(s);
  check_tflm::AddOpsTests(s);
  return s;
}
