/*
 * bench_tflite_child.cc - one measured run of bench_tflite, in a fresh
 * process (bench_tflite --child ...): maps the model, builds the
 * interpreter, times the first and the steady invokes, reads the
 * process's memory and prints the one "result" line the parent reads
 * (bench_tflite.cc says what is measured and why).
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

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "arenad_tflite.h"
#include "arenad_tflite_ops.h"
#include "bench_tflite.h"
#include "heapcount.h"
#include "tflite_infer_run.h"

namespace bench_tflite {

/* Parses a decimal number in [lo, hi]. Returns 0 or -1. */
int number(const char *s, long long lo, long long hi, long long *v) {
  char *end;
  if (!s || !*s)
    return -1;
  errno = 0;
  *v = strtoll(s, &end, 10);
  return errno || *end || *v < lo || *v > hi ? -1 : 0;
}

namespace {

/* ---- the child: one run in a fresh process ----------------------------- */

/* The child's command line: --child KIND --socket PATH --invokes N
 * [--min-saving B] --t0 MS MODEL (t0: CLOCK_MONOTONIC in ms when the parent forked). */
struct ChildArgs {
  Kind kind = kAlone;
  const char *socket = nullptr; /* miss and hit: the daemon's */
  long long invokes = 50;       /* steady invokes */
  long long min_saving = -1;    /* -1: the adapter's default */
  double t0 = 0;                /* ms */
  const char *model = nullptr;
};

/* Returns 0 or 64. */
int parse_child(int argc, char **argv, ChildArgs *a) {
  for (int i = 2; i < argc; i++) {
    const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : nullptr;
    bool bad = false;
    if (!strcmp(o, "--socket") && v) {
      a->socket = argv[++i];
    } else if (!strcmp(o, "--invokes") && v) {
      bad = number(argv[++i], 1, 1000000, &a->invokes) != 0;
    } else if (!strcmp(o, "--min-saving") && v) {
      bad = number(argv[++i], 0, 1LL << 50, &a->min_saving) != 0;
    } else if (!strcmp(o, "--t0") && v) {
      a->t0 = strtod(argv[++i], nullptr);
    } else if (o[0] != '-' && !a->model) {
      a->model = o;
    } else {
      bad = true;
    }
    if (bad) {
      printf("error: bad child option '%s'\n", o);
      return 64;
    }
  }
  bool known = false;
  for (int k = 0; k < kKinds; k++)
    if (argc > 1 && !strcmp(argv[1], kKindName[k])) {
      a->kind = (Kind)k;
      known = true;
    }
  if (!known || !a->model || (a->kind != kAlone && !a->socket)) {
    printf("error: usage: bench_tflite --child alone|miss|hit "
           "[--socket PATH] [--invokes N] [--min-saving B] [--t0 MS] "
           "MODEL\n");
    return 64;
  }
  return 0;
}

/* The model's bytes, mapped read-only as TFLite's BuildFromFile maps
 * them. */
struct Mapped {
  void *data = MAP_FAILED;
  size_t len = 0;
  ~Mapped() {
    if (data != MAP_FAILED)
      munmap(data, len);
  }
};

/* Maps path into m. Returns false with errno set (EINVAL: empty or not a
 * regular file). */
bool map_model(const char *path, Mapped *m) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  struct stat st;
  if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size <= 0) {
    close(fd);
    errno = EINVAL;
    return false;
  }
  m->data = mmap(nullptr, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  int e = errno;
  close(fd);
  if (m->data == MAP_FAILED) {
    errno = e;
    return false;
  }
  m->len = (size_t)st.st_size;
  return true;
}

/* VmHWM and RssAnon of this process, KiB (-1: unknown). */
void read_status(long *hwm, long *anon) {
  *hwm = *anon = -1;
  FILE *f = fopen("/proc/self/status", "r");
  if (!f)
    return;
  char line[256];
  while (fgets(line, sizeof line, f)) {
    long v;
    if (sscanf(line, "VmHWM: %ld", &v) == 1)
      *hwm = v;
    else if (sscanf(line, "RssAnon: %ld", &v) == 1)
      *anon = v;
  }
  fclose(f);
}

/* A moment on the wall clock and on the process's CPU clock (every
 * thread's time), ms. */
struct Clock {
  double wall, cpu;
};

Clock clock_now() {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return Clock{now_ms(), (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6};
}

/* Times the first invoke and the mean of the steady ones into s. Returns
 * false after printing why when an invoke fails. */
bool time_invokes(tflite::Interpreter *in, long long steady, Sample *s) {
  for (long long i = 0; i <= steady; i++) {
    arenad::FillTfliteInputs(in, 1, (int)i);
    Clock t = clock_now();
    if (in->Invoke() != kTfLiteOk) {
      printf("error: invoke %lld failed\n", i);
      return false;
    }
    Clock u = clock_now();
    if (i == 0) {
      s->first_ms = u.wall - t.wall;
      s->first_cpu_ms = u.cpu - t.cpu;
    } else {
      s->steady_ms += (u.wall - t.wall) / (double)steady;
      s->steady_cpu_ms += (u.cpu - t.cpu) / (double)steady;
    }
  }
  return true;
}

/* Seconds of one Invoke() of in on inputs of round i. */
double timed_invoke(tflite::Interpreter *in, int i) {
  arenad::FillTfliteInputs(in, 1, i);
  double t = now_ms();
  if (in->Invoke() != kTfLiteOk)
    return -1;
  return now_ms() - t;
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

/* PAIRED (bench_tflite.cc): hit, the interpreter on arenad's plan, and a
 * second interpreter of the model on TFLite's own planner built here,
 * invoked in turn (which goes first alternating), steady invokes only;
 * prints the ratio of their medians. */
void print_paired(const Mapped &m, tflite::Interpreter *hit,
                  long long invokes) {
  arenad::TfliteOpResolver resolver;
  arenad::TflitePlanner q(nullptr, m.data, m.len, resolver);
  std::unique_ptr<tflite::Interpreter> alone;
  if (q.BuildTfliteOnly(&alone))
    return;
  int n = (int)std::max<long long>(invokes, 20);
  std::vector<double> th, ta;
  for (int i = 0; i <= n; i++) {
    double h, x;
    if (i % 2) {
      h = timed_invoke(hit, i);
      x = timed_invoke(alone.get(), i);
    } else {
      x = timed_invoke(alone.get(), i);
      h = timed_invoke(hit, i);
    }
    if (h < 0 || x < 0)
      return;
    if (i > 0) { /* the first of each is not steady */
      th.push_back(h);
      ta.push_back(x);
    }
  }
  double a = median_of(ta);
  if (a > 0)
    printf(PAIRED_OUT, median_of(th) / a, n);
}

/* Copies name into s->source, cut to fit. The same plain copy for every
 * kind of run: formatting it with printf in one kind and not the other
 * put libc's printf code (about 100 KiB of pages, which the result line
 * maps later in every run anyway) into one kind's peak RSS only. */
void set_source(Sample *s, const char *name) {
  size_t i = 0;
  for (; name[i] && i + 1 < sizeof s->source; i++)
    s->source[i] = name[i];
  s->source[i] = '\0';
}

/* Builds the interpreter of kind a.kind; the planner is the caller's.
 * Sets the plan's figures in s. Returns 0 or the exit status after
 * printing why. */
int build(const ChildArgs &a, arenad::TflitePlanner *p,
          std::unique_ptr<tflite::Interpreter> *in, Sample *s) {
  int rc = a.kind == kAlone ? p->BuildTfliteOnly(in) : p->Build(in);
  if (rc) {
    printf("error: %s\n", p->error());
    return 65;
  }
  if (a.kind == kAlone) {
    s->alone = arenad::TfliteArenaBytes(**in, nullptr);
    s->remainder = s->alone;
    set_source(s, "tflite");
  } else {
    const arenad::TflitePlanInfo &i = p->info();
    s->alone = i.tflite_alone;
    s->arena = i.arena_bytes;
    s->remainder = i.remainder;
    set_source(s, arenad::TflitePlanSourceName(i.source));
  }
  return 0;
}

/* Opens the client handle of a miss or a hit (none for alone, *c NULL).
 * Returns 0, or 70 after printing why. */
int open_client(const ChildArgs &a, arenad_client_t **c) {
  *c = nullptr;
  if (a.kind == kAlone)
    return 0;
  struct arenad_client_options co;
  arenad_client_options_init(&co);
  co.socket_path = a.socket;
  if (arenad_client_open(&co, c)) {
    printf("error: cannot open a client handle\n");
    return 70;
  }
  return 0;
}

/* Prints the result line of s, with the heap and the status now. */
void print_result(Sample *s) {
  struct heapcount h;
  heapcount_get(&h);
  read_status(&s->hwm, &s->anon);
  bool counted = heapcount_active();
  printf(RESULT_OUT, s->source, s->alone, s->arena, s->remainder,
         s->start_ms, s->init_ms, s->first_ms, s->steady_ms, s->init_cpu_ms,
         s->first_cpu_ms, s->steady_cpu_ms, s->hwm, s->anon,
         counted ? (long long)h.peak_bytes : -1LL,
         counted ? (long long)h.live_bytes : -1LL);
}

/* One run: see the file's comment. Init is timed from opening the client
 * handle to an allocated interpreter (the resolver and the planner made
 * on the way). Returns its exit status: 0, 64, 65 (the model cannot run
 * here), 66 (cannot be read) or 70 (an invoke or the client failed). */
}  // namespace

int child_main(int argc, char **argv) {
  ChildArgs a;
  int rc = parse_child(argc, argv, &a);
  if (rc)
    return rc;
  Mapped m;
  if (!map_model(a.model, &m)) {
    printf("error: %s: cannot read: %s\n", a.model,
           errno == EINVAL ? "empty or not a file" : strerror(errno));
    return 66;
  }
  Sample s;
  Clock t = clock_now();
  arenad_client_t *c;
  if ((rc = open_client(a, &c)))
    return rc;
  {
    arenad::TfliteOpResolver resolver;
    arenad::TflitePlanner planner(c, m.data, m.len, resolver);
    if (a.min_saving >= 0)
      planner.SetMinSaving((uint64_t)a.min_saving);
    std::unique_ptr<tflite::Interpreter> in;
    rc = build(a, &planner, &in, &s);
    Clock ready = clock_now();
    s.init_ms = ready.wall - t.wall;
    s.init_cpu_ms = ready.cpu - t.cpu;
    s.start_ms = a.t0 > 0 ? ready.wall - a.t0 : -1; /* -1: no --t0 */
    if (!rc && !time_invokes(in.get(), a.invokes, &s))
      rc = 70;
    if (!rc)
      print_result(&s);
    if (!rc && a.kind == kHit)
      print_paired(m, in.get(), a.invokes);
    in.reset(); /* before the planner that owns its arena */
  }
  arenad_client_close(c);
  return rc;
}

}  // namespace bench_tflite
