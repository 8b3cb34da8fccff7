/*
 * tflite_infer.cc - runs a .tflite model on TensorFlow Lite's interpreter
 * with its tensors placed by arenad: how a program integrates
 * arenad::TflitePlanner (client/tflite/arenad_tflite.h).
 *
 * It maps the model file (as TFLite's BuildFromFile does), opens a
 * libarenad-client handle (fallback on unless --no-fallback), lets the
 * planner build and allocate the interpreter (the cache key is the
 * model identity, arenad::TfliteModelIdentity, and the input shapes),
 * invokes it on seeded inputs and
 * prints where the plan came from, the memory TFLite alone would use,
 * arenad's arena and what TFLite still allocates, a digest of every
 * invoke's outputs and the last invoke's outputs. Its memory does not
 * grow with --invokes. Any number of these processes on one machine share
 * one plan from arenad's cache. --planner tflite runs TFLite's own
 * planner instead, for comparison. --soak N is the classic stability
 * test: N invokes at fixed shapes on one thread, the process's memory
 * printed every N/10 invokes, and a failure when it grows. --audit runs
 * nothing: it says whether TFLite's own plan for the model is sound
 * (arenad_tflite_audit.h), naming every illegal overlap.
 *
 * Exit status: 0 ran (--audit: the plan is sound); 1 --soak saw memory
 * grow past its bound (--audit: the plan is unsound); 64 bad command
 * line; 65 the model is invalid or cannot run here, or planning failed;
 * 66 the model cannot be read; 70 an invoke failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "arenad_tflite.h"
#include "arenad_tflite_audit.h"
#include "arenad_tflite_ops.h"
#include "arenad_tflite_pipeline.h"
#include "tflite_infer_run.h"
#include "tflite_infer_table.h"

namespace {

void usage(FILE *f) {
  fprintf(f,
          "Usage: tflite_infer [options] MODEL.tflite\n"
          "       tflite_infer [options] --pipeline MODEL.tflite...\n"
          "\n"
          "Runs MODEL on TensorFlow Lite with its tensors placed by arenad\n"
          "and prints the plan's source, the memory and the outputs.\n"
          "\n"
          "Options:\n"
          "  --socket PATH   arenad's socket (default $ARENAD_SOCKET, else\n"
          "                  %s)\n"
          "  --no-fallback   fail when arenad cannot plan, instead of\n"
          "                  planning in this process\n"
          "  --planner P     arenad (default) or tflite (TFLite's own\n"
          "                  planner, for comparison)\n"
          "  --no-in-place   give every tensor bytes of its own\n"
          "  --input-shape S run the model's input at shape S (dimensions\n"
          "                  joined by commas: 1,192,192,3); once per\n"
          "                  input, in the model's order\n"
          "  --table SHAPES  run nothing; print the arena at each SHAPES\n"
          "                  (every input's shape, joined by '/') against\n"
          "                  TFLite alone and the lower bound, one row\n"
          "                  per --table; exit 65 when TFLite refuses one\n"
          "  --plot FILE     with --table: draw those rows as an SVG chart\n"
          "  --pipeline      run every MODEL in turn on one arena with a\n"
          "                  joint plan (arenad::TflitePipeline), printing\n"
          "                  each one's outputs as a run of it alone would,\n"
          "                  then the arena figures and the process's\n"
          "                  peak RSS and RssAnon; with --planner tflite\n"
          "                  each on TFLite's own planner instead, with\n"
          "                  --separate each on its own arenad plan\n"
          "  --min-saving B  keep TFLite's own planner, without asking\n"
          "                  arenad, when the model's arena tensors sum to\n"
          "                  under B bytes (default %llu; 0: always ask)\n"
          "  --seed N        seed of the input values (default 1)\n"
          "  --invokes N     number of invokes (default 1)\n"
          "  --soak N        N invokes (at least 10), printing the process's\n"
          "                  memory every N/10; exit 1 when RssAnon grows\n"
          "                  past the first tenth's by more than the bound\n"
          "  --soak-bound K  that bound, in KiB (default 64)\n"
          "  --values N      values printed per output (default 16, 0 = all)\n"
          "  --audit         run nothing; say whether TFLite's own plan for\n"
          "                  MODEL is sound, naming each illegal overlap\n"
          "                  (tensors, writing and reading nodes, bytes);\n"
          "                  exit 0 sound, 1 unsound\n"
          "  -h, --help      this text\n",
          ARENAD_CLIENT_DEFAULT_SOCKET,
          (unsigned long long)arenad::kTfliteMinSaving);
}

/* The command line. */
struct Args {
  const char *model = nullptr;  /* path, borrowed */
  const char *socket = nullptr; /* NULL: the client's default */
  bool fallback = true;
  bool tflite = false;          /* TFLite's own planner */
  bool in_place = true;
  unsigned long long min_saving = arenad::kTfliteMinSaving;
  std::vector<std::vector<int>> shapes; /* --input-shape, in order */
  std::vector<tflite_infer::ShapeRow> table; /* --table, one row each */
  const char *plot = nullptr;              /* --plot FILE */
  bool pipeline = false;                   /* --pipeline */
  bool separate = false;                   /* --separate */
  std::vector<const char *> more;          /* its models after the first */
  unsigned long long seed = 1;
  unsigned long long invokes = 1;
  unsigned long long values = 16;
  unsigned long long soak = 0;       /* --soak N, 0: no soak */
  unsigned long long soak_bound = 64; /* KiB */
  bool audit = false;                 /* --audit */
};

/* Parses a decimal number in [lo, hi]. Returns 0 or -1. */
int number(const char *s, unsigned long long lo, unsigned long long hi,
           unsigned long long *v) {
  char *end;
  if (!s || !*s || *s == '-')
    return -1;
  errno = 0;
  *v = strtoull(s, &end, 10);
  return errno || *end || *v < lo || *v > hi ? -1 : 0;
}

/* Parses dimensions joined by commas ("1,192,192,3"), each 1 to
 * 2^31 - 1, into *dims. Returns 0 or -1. */
int parse_shape(const char *s, std::vector<int> *dims) {
  dims->clear();
  while (s && *s) {
    const char *comma = strchr(s, ',');
    std::string one(s, comma ? (size_t)(comma - s) : strlen(s));
    unsigned long long d;
    if (number(one.c_str(), 1, 0x7fffffff, &d) || dims->size() >= 8)
      return -1;
    dims->push_back((int)d);
    s = comma ? comma + 1 : nullptr;
    if (comma && !*s)
      return -1;
  }
  return dims->empty() ? -1 : 0;
}

/* Parses every input's shape joined by '/' ("1,8/1,16") into *shapes.
 * Returns 0 or -1. */
int parse_shapes(const char *s, std::vector<std::vector<int>> *shapes) {
  shapes->clear();
  std::string all = s ? s : "";
  size_t at = 0;
  do {
    size_t slash = all.find('/', at);
    std::string one = all.substr(at, slash == std::string::npos
                                         ? std::string::npos
                                         : slash - at);
    shapes->emplace_back();
    if (parse_shape(one.c_str(), &shapes->back()))
      return -1;
    at = slash == std::string::npos ? slash : slash + 1;
  } while (at != std::string::npos);
  return 0;
}

/* Returns 0, -1 after --help, or 64. */
int parse(int argc, char **argv, Args *a) {
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : nullptr;
    bool bad = false;
    if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
      usage(stdout);
      return -1;
    } else if (!strcmp(o, "--no-fallback")) {
      a->fallback = false;
    } else if (!strcmp(o, "--no-in-place")) {
      a->in_place = false;
    } else if (!strcmp(o, "--audit")) {
      a->audit = true;
    } else if (!strcmp(o, "--pipeline")) {
      a->pipeline = true;
    } else if (!strcmp(o, "--separate")) {
      a->separate = true;
    } else if (!strcmp(o, "--socket") && v) {
      a->socket = argv[++i];
    } else if (!strcmp(o, "--planner") && v) {
      a->tflite = !strcmp(v, "tflite");
      bad = !a->tflite && strcmp(v, "arenad");
      i++;
    } else if (!strcmp(o, "--input-shape") && v) {
      a->shapes.emplace_back();
      bad = parse_shape(argv[++i], &a->shapes.back()) != 0;
    } else if (!strcmp(o, "--table") && v) {
      a->table.emplace_back();
      bad = parse_shapes(argv[++i], &a->table.back().shapes) != 0;
    } else if (!strcmp(o, "--plot") && v) {
      a->plot = argv[++i];
    } else if (!strcmp(o, "--min-saving") && v) {
      bad = number(argv[++i], 0, ~0ull, &a->min_saving) != 0;
    } else if (!strcmp(o, "--seed") && v) {
      bad = number(argv[++i], 0, ~0ull, &a->seed) != 0;
    } else if (!strcmp(o, "--invokes") && v) {
      bad = number(argv[++i], 1, 1000000000, &a->invokes) != 0;
    } else if (!strcmp(o, "--soak") && v) {
      bad = number(argv[++i], 10, 1000000000, &a->soak) != 0;
    } else if (!strcmp(o, "--soak-bound") && v) {
      bad = number(argv[++i], 0, 1ull << 30, &a->soak_bound) != 0;
    } else if (!strcmp(o, "--values") && v) {
      bad = number(argv[++i], 0, ~0ull, &a->values) != 0;
    } else if (o[0] != '-' && !a->model) {
      a->model = o;
    } else if (o[0] != '-') {
      a->more.push_back(o);
    } else {
      bad = true;
    }
    if (bad) {
      fprintf(stderr, "tflite_infer: bad option '%s' (see --help)\n", o);
      return 64;
    }
  }
  if (!a->model) {
    fprintf(stderr, "tflite_infer: missing MODEL (see --help)\n");
    return 64;
  }
  if (!a->more.empty() && !a->pipeline) {
    fprintf(stderr, "tflite_infer: one MODEL, or --pipeline (see --help)\n");
    return 64;
  }
  if ((a->pipeline && (a->audit || !a->table.empty() ||
                       !a->shapes.empty() || a->soak)) ||
      (a->separate && (!a->pipeline || a->tflite))) {
    fprintf(stderr, "tflite_infer: --pipeline goes with none of --audit, "
                    "--table, --input-shape and --soak, and --separate "
                    "only with --pipeline (see --help)\n");
    return 64;
  }
  if ((a->plot && a->table.empty()) ||
      (!a->table.empty() && (a->audit || a->tflite || !a->shapes.empty()))) {
    fprintf(stderr, "tflite_infer: --plot needs --table, and --table goes "
                    "with none of --audit, --planner tflite and "
                    "--input-shape (see --help)\n");
    return 64;
  }
  return 0;
}

/* The model's bytes: a regular file mapped read-only, so they stay page
 * cache shared with every process running the model, not heap; anything
 * else (a pipe) read into memory. */
struct Model {
  const char *data = nullptr;
  size_t len = 0;
  void *map = MAP_FAILED;  /* the mapping, when there is one */
  std::vector<char> copy;  /* the bytes, when not mapped */
  ~Model() {
    if (map != MAP_FAILED)
      munmap(map, len);
  }
};

/* Loads path into m. Returns false with errno set (EINVAL: empty). */
bool load_model(const char *path, Model *m) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    m->map = mmap(nullptr, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m->map != MAP_FAILED) {
      m->len = (size_t)st.st_size;
      m->data = static_cast<const char *>(m->map);
      close(fd);
      return true;
    }
  }
  char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0)
    m->copy.insert(m->copy.end(), buf, buf + n);
  int e = n < 0 ? errno : 0;
  close(fd);
  if (e || m->copy.empty()) {
    errno = e ? e : EINVAL;
    return false;
  }
  m->data = m->copy.data();
  m->len = m->copy.size();
  return true;
}

/* This process's memory, KiB, from /proc/self/status (-1: unknown). */
struct Memory {
  long rss = -1;      /* VmRSS */
  long anon = -1;     /* RssAnon */
  long hwm = -1;      /* VmHWM, the peak RSS */
};

Memory read_memory() {
  Memory m;
  FILE *f = fopen("/proc/self/status", "r");
  if (!f)
    return m;
  char line[256];
  while (fgets(line, sizeof line, f)) {
    long v;
    if (sscanf(line, "VmRSS: %ld", &v) == 1)
      m.rss = v;
    else if (sscanf(line, "RssAnon: %ld", &v) == 1)
      m.anon = v;
    else if (sscanf(line, "VmHWM: %ld", &v) == 1)
      m.hwm = v;
  }
  fclose(f);
  return m;
}

/* The soak's state: checkpoints every `every` invokes. */
struct Soak {
  uint64_t n = 0;        /* invokes in all */
  uint64_t every = 0;    /* n / 10 */
  long bound = 0;        /* KiB */
  long base = -1;        /* RssAnon after the first tenth */
  long worst = -1;       /* the largest RssAnon after it */
  uint64_t worst_at = 0; /* the invoke (1-based) of worst */
};

/* After invoke i: every n/10 invokes, prints the process's memory; the
 * first checkpoint is the base, later ones are held against it. */
void soak_checkpoint(uint64_t i, void *user) {
  Soak *s = static_cast<Soak *>(user);
#ifdef TFLITE_INFER_TESTING
  /* Test builds only: a leak, for the suite's negative control. */
  if (const char *leak = getenv("TFLITE_INFER_TEST_LEAK")) {
    size_t bytes = (size_t)strtoull(leak, nullptr, 10);
    void *p = malloc(bytes);
    if (p)
      memset(p, 1, bytes); /* touched, so resident; never freed */
  }
#endif
  uint64_t done = i + 1;
  if (done % s->every && done != s->n)
    return;
  Memory m = read_memory();
  printf("soak: invoke %llu: VmRSS %ld KiB, RssAnon %ld KiB, VmHWM %ld KiB\n",
         (unsigned long long)done, m.rss, m.anon, m.hwm);
  fflush(stdout);
  if (s->base < 0) {
    s->base = m.anon;
  } else if (m.anon > s->worst) {
    s->worst = m.anon;
    s->worst_at = done;
  }
}

void print_outputs(tflite::Interpreter *in, unsigned long long values) {
  for (size_t k = 0; k < in->outputs().size(); k++) {
    const TfLiteTensor *t = in->tensor(in->outputs()[k]);
    printf("output %zu: %s [", k, TfLiteTypeGetName(t->type));
    for (int d = 0; t->dims && d < t->dims->size; d++)
      printf("%s%d", d ? ", " : "", t->dims->data[d]);
    printf("]");
    size_t n = t->type == kTfLiteFloat32 ? t->bytes / 4 : t->bytes;
    size_t show = values && values < n ? (size_t)values : n;
    for (size_t i = 0; i < show; i++) {
      if (t->type == kTfLiteFloat32)
        printf(" %.9g", (double)t->data.f[i]);
      else if (t->type == kTfLiteInt8)
        printf(" %d", t->data.int8[i]);
      else
        printf(" %u", t->data.uint8[i]);
    }
    if (show < n)
      printf(" ... (%zu values)", n);
    printf("\n");
  }
}

/* The --input-shape line: "input shapes: [1,192,192,3]". */
void print_shapes(const std::vector<std::vector<int>> &shapes) {
  printf("input shapes:");
  for (size_t i = 0; i < shapes.size(); i++) {
    printf("%s[", i ? ", " : " ");
    for (size_t k = 0; k < shapes[i].size(); k++)
      printf("%s%d", k ? "," : "", shapes[i][k]);
    printf("]");
  }
  printf("\n");
}

void print_plan(const arenad::TflitePlanner &p, arenad_client_t *c) {
  const arenad::TflitePlanInfo &i = p.info();
  printf("plan: from %s", arenad::TflitePlanSourceName(i.source));
  if (i.below_min_saving)
    printf(" (the model's arena tensors sum to under the minimum saving: "
           "arenad not asked)");
  else if (p.note()[0])
    printf(" (arenad: %s)", p.note());
  else if (i.fallback_reason)
    printf(" (arenad: %s)", arenad_client_errmsg(c));
  printf(", %zu tensors (%zu placed, %zu left to TFLite), %zu pairs in place",
         i.n_tensors, i.n_placed, i.n_left, i.n_shared);
  if (i.fetched)
    printf("; fetched by key with its placement record, nothing learned");
  else if (i.fetch_refused)
    printf("; a fetched plan did not match this interpreter: learned");
  printf("; %zu interpreter%s\n", i.n_interpreters,
         i.n_interpreters == 1 ? "" : "s");
  printf("memory: TFLite alone %llu bytes; arenad arena %llu + TFLite's "
         "remainder %llu = %llu bytes (plan %llu, lower bound %llu); "
         "%zu temporaries of %llu bytes stay with TFLite\n",
         (unsigned long long)i.tflite_alone, (unsigned long long)i.arena_bytes,
         (unsigned long long)i.remainder, (unsigned long long)i.total(),
         (unsigned long long)i.plan_bytes, (unsigned long long)i.lower_bound,
         i.n_temporaries, (unsigned long long)i.temporary_bytes);
}


/* --audit: TFLite's own plan for the model, judged by arenad's rules.
 * Returns the exit status: 0 sound, 1 unsound, 65 when TFLite cannot
 * allocate the model or the audit cannot read it. */
int audit(const Args &a, const Model &m, arenad::TflitePlanner *p) {
  std::unique_ptr<tflite::Interpreter> in;
  if (p->BuildTfliteOnly(&in)) {
    fprintf(stderr, "tflite_infer: %s: %s\n", a.model, p->error());
    return 65;
  }
  arenad::TfliteAudit r;
  std::string err;
  if (arenad::AuditTflitePlan(*in, m.data, m.len, &r, &err)) {
    fprintf(stderr, "tflite_infer: %s: audit: %s\n", a.model, err.c_str());
    return 65;
  }
  if (r.sound) {
    printf("audit: TFLite's plan is sound (%zu tensors, %llu bytes; %zu "
           "pair%s in place, %zu view%s)\n", r.n_tensors,
           (unsigned long long)r.arena_bytes, r.n_in_place,
           r.n_in_place == 1 ? "" : "s", r.n_views,
           r.n_views == 1 ? "" : "s");
    return 0;
  }
  for (const auto &o : r.overlaps)
    printf("audit: %s\n", arenad::TfliteOverlapText(o).c_str());
  printf("audit: arenad's verifier: %s\n", r.verifier.c_str());
  printf("audit: TFLite's plan is unsound: %zu illegal overlap%s among %zu "
         "tensors (%llu bytes)\n", r.overlaps.size(),
         r.overlaps.size() == 1 ? "" : "s", r.n_tensors,
         (unsigned long long)r.arena_bytes);
  return 1;
}

/* Prints the digest line: the chain of every invoke's outputs. */
void print_digest(const uint8_t *d, unsigned long long invokes) {
  printf("outputs digest: ");
  for (size_t i = 0; i < arenad::kTfliteDigestLen; i++)
    printf("%02x", d[i]);
  printf(" (%llu invoke%s)\n", invokes, invokes == 1 ? "" : "s");
}

/* Runs the invokes (the soak's when asked) and prints the digest and the
 * last outputs. Returns the exit status: 0, 1 (memory grew) or 70. */
int run(const Args &a, tflite::Interpreter *in) {
  Soak soak;
  uint64_t n = a.soak ? a.soak : a.invokes;
  soak.n = n;
  soak.every = n / 10;
  soak.bound = (long)a.soak_bound;
  uint8_t digest[arenad::kTfliteDigestLen];
  std::string err;
  if (!arenad::RunTfliteDigest(in, a.seed, n, digest, &err,
                               a.soak ? soak_checkpoint : nullptr, &soak)) {
    fprintf(stderr, "tflite_infer: %s: %s\n", a.model, err.c_str());
    return 70;
  }
  print_digest(digest, (unsigned long long)n);
  print_outputs(in, a.values);
  if (!a.soak)
    return 0;
  long grew = soak.worst > soak.base ? soak.worst - soak.base : 0;
  if (soak.base < 0 || grew > soak.bound) {
    printf("soak: memory grew: RssAnon %ld KiB after invoke %llu, %ld KiB "
           "after invoke %llu, %ld KiB more (bound %ld KiB)\n",
           soak.base, (unsigned long long)soak.every, soak.worst,
           (unsigned long long)soak.worst_at, grew, soak.bound);
    fflush(stdout); /* before any exit-time checker of the runtime's */
    return 1;
  }
  printf("soak: flat: RssAnon grew %ld KiB after the first %llu invokes "
         "(bound %ld KiB)\n", grew, (unsigned long long)soak.every,
         soak.bound);
  return 0;
}

/* --pipeline --separate or --planner tflite: every model its own
 * interpreter (all built before the first runs, as an application that
 * keeps them would). Returns 0 or 65. */
int build_each(const Args &a, arenad_client_t *c,
               const std::vector<const char *> &paths,
               const std::vector<std::unique_ptr<Model>> &ms,
               const arenad::TfliteOpResolver &resolver,
               std::vector<std::unique_ptr<arenad::TflitePlanner>> *ps,
               std::vector<std::unique_ptr<tflite::Interpreter>> *ins) {
  uint64_t arenas = 0, rest = 0;
  for (size_t k = 0; k < ms.size(); k++) {
    ps->emplace_back(new arenad::TflitePlanner(c, ms[k]->data, ms[k]->len,
                                               resolver));
    arenad::TflitePlanner &p = *ps->back();
    p.SetInPlace(a.in_place);
    p.SetMinSaving(a.min_saving);
    ins->emplace_back();
    if (a.tflite ? p.BuildTfliteOnly(&ins->back()) : p.Build(&ins->back())) {
      fprintf(stderr, "tflite_infer: %s: %s\n", paths[k], p.error());
      return 65;
    }
    if (a.tflite) {
      arenas += arenad::TfliteArenaBytes(*ins->back(), nullptr);
    } else {
      arenas += p.info().arena_bytes;
      rest += p.info().remainder;
    }
  }
  printf("pipeline: %zu models, each on %s: arenas %llu bytes summed, "
         "TFLite's remainders %llu\n", ms.size(),
         a.tflite ? "TFLite's own planner" : "its own arenad plan",
         (unsigned long long)arenas, (unsigned long long)rest);
  return 0;
}

/* --pipeline on arenad::TflitePipeline. Returns 0 or 65. */
int build_shared(const Args &a, arenad::TflitePipeline *pipe,
                 const std::vector<std::unique_ptr<Model>> &ms) {
  pipe->SetInPlace(a.in_place);
  for (const auto &m : ms)
    pipe->Add(m->data, m->len);
  if (pipe->Build()) {
    fprintf(stderr, "tflite_infer: pipeline: %s\n", pipe->error());
    return 65;
  }
  const arenad::TflitePipelineInfo &i = pipe->info();
  printf("pipeline: %zu models on one arena: TFLite alone %llu bytes (each "
         "model's arena, summed); arenad alone %llu (each model's plan, "
         "summed; the largest %llu); shared arena %llu bytes (plan from %s; "
         "lower bound %llu; inputs and outputs %llu); TFLite's remainder "
         "%llu\n",
         ms.size(), (unsigned long long)i.tflite_alone,
         (unsigned long long)i.arenad_alone,
         (unsigned long long)i.largest_alone,
         (unsigned long long)i.arena_bytes,
         i.local ? "local" : i.cached ? "cache" : "daemon",
         (unsigned long long)i.lower_bound, (unsigned long long)i.io_bytes,
         (unsigned long long)i.remainder);
  return 0;
}

/* --pipeline: every model built, then run in turn, each printing its
 * outputs as a run of it alone would; then the process's memory.
 * Returns 0, 65 (a model cannot be built or planned), 66 (cannot be
 * read) or run()'s status. */
int pipeline(const Args &a, arenad_client_t *c) {
  struct timespec t0, t1, t2;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  std::vector<const char *> paths = {a.model};
  paths.insert(paths.end(), a.more.begin(), a.more.end());
  std::vector<std::unique_ptr<Model>> ms;
  for (const char *path : paths) {
    ms.emplace_back(new Model());
    if (!load_model(path, ms.back().get())) {
      fprintf(stderr, "tflite_infer: %s: cannot read: %s\n", path,
              errno == EINVAL ? "empty file" : strerror(errno));
      return 66;
    }
  }
  arenad::TfliteOpResolver resolver;
  arenad::TflitePipeline pipe(c, resolver);
  std::vector<std::unique_ptr<arenad::TflitePlanner>> ps;
  std::vector<std::unique_ptr<tflite::Interpreter>> ins;
  bool shared = !a.tflite && !a.separate;
  int status = shared ? build_shared(a, &pipe, ms)
                      : build_each(a, c, paths, ms, resolver, &ps, &ins);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  for (size_t k = 0; k < paths.size() && !status; k++) {
    printf("model: %s\n", paths[k]);
    status = run(a, shared ? pipe.interpreter(k) : ins[k].get());
  }
  clock_gettime(CLOCK_MONOTONIC, &t2);
  Memory m = read_memory();
  auto ms_between = [](const timespec &x, const timespec &y) {
    return (double)(y.tv_sec - x.tv_sec) * 1e3 +
           (double)(y.tv_nsec - x.tv_nsec) / 1e6;
  };
  if (!status)
    printf("process: models read and built in %.3f ms, run in %.3f ms; "
           "peak RSS %ld KiB, RssAnon %ld KiB\n", ms_between(t0, t1),
           ms_between(t1, t2), m.hwm, m.anon);
  ins.clear(); /* before the planners that own their arenas */
  return status;
}

/* --table (and --plot): returns 0, 65 when a row was refused, or 73
 * when the plot cannot be written. */
int shape_table(const Args &a, const Model &m, arenad_client_t *c) {
  std::vector<tflite_infer::ShapeRow> rows = a.table;
  size_t failed =
      tflite_infer::MeasureShapes(c, m.data, m.len, a.in_place, &rows);
  printf("model: %s\nshape table (bytes; arenad asked at every shape):\n",
         a.model);
  tflite_infer::PrintShapeTable(stdout, rows);
  int status = failed ? 65 : 0;
  std::string err;
  if (a.plot && failed == rows.size()) {
    fprintf(stderr, "tflite_infer: --plot: no shape could be built: "
                    "nothing drawn\n");
  } else if (a.plot) {
    const char *base = strrchr(a.model, '/');
    if (tflite_infer::WriteShapePlot(a.plot, base ? base + 1 : a.model, rows,
                                     &err)) {
      fprintf(stderr, "tflite_infer: --plot: %s\n", err.c_str());
      return 73;
    }
    printf("plot: %s\n", a.plot);
  }
  return status;
}

}  // namespace

int main(int argc, char **argv) {
  Args a;
  int rc = parse(argc, argv, &a);
  if (rc)
    return rc < 0 ? 0 : rc;
  Model model;
  if (!load_model(a.model, &model)) {
    fprintf(stderr, "tflite_infer: %s: cannot read: %s\n", a.model,
            errno == EINVAL ? "empty file" : strerror(errno));
    return 66;
  }
  struct arenad_client_options co;
  arenad_client_options_init(&co);
  co.socket_path = a.socket;
  co.fallback = a.fallback ? 1 : 0;
  arenad_client_t *c = nullptr;
  if (arenad_client_open(&co, &c)) {
    fprintf(stderr, "tflite_infer: cannot open a client handle\n");
    return 65;
  }
  if (!a.table.empty() || a.pipeline) {
    int status = a.pipeline ? pipeline(a, c) : shape_table(a, model, c);
    arenad_client_close(c);
    return status;
  }
  arenad::TfliteOpResolver resolver;
  std::unique_ptr<tflite::Interpreter> interp;
  int status = 0;
  {
    arenad::TflitePlanner planner(c, model.data, model.len, resolver);
    planner.SetInPlace(a.in_place);
    planner.SetMinSaving(a.min_saving);
    planner.SetInputShapes(a.shapes);
    printf("model: %s\n", a.model);
    if (!a.shapes.empty())
      print_shapes(a.shapes);
    if (a.audit)
      status = audit(a, model, &planner);
    else if ((rc = a.tflite ? planner.BuildTfliteOnly(&interp)
                            : planner.Build(&interp))) {
      fprintf(stderr, "tflite_infer: %s: %s\n", a.model, planner.error());
      status = 65;
    } else {
      if (a.tflite)
        printf("plan: TFLite's own planner, arena %llu bytes\n",
               (unsigned long long)arenad::TfliteArenaBytes(*interp, nullptr));
      else
        print_plan(planner, c);
      status = run(a, interp.get());
    }
    interp.reset(); /* before the planner that owns its arena */
  }
  arenad_client_close(c);
  return status;
}
