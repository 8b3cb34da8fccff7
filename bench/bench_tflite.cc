/*
 * bench_tflite.cc - TensorFlow Lite with and without arenad, measured as
 * a user measures a process: start-up time, first inference, steady
 * inference, peak RSS, steady RssAnon and peak heap, in the spirit of
 * TFLite's own benchmark_model.
 *
 * For every model it runs, side by side in one run:
 *  alone  TFLite's own planner (TflitePlanner::BuildTfliteOnly);
 *  miss   arenad's plan from a daemon started with an empty database
 *         for this run alone, so that the daemon plans it;
 *  hit    arenad's plan from the cache of one daemon that lives through
 *         the whole benchmark, warmed by one run of the model beforehand.
 * Every run is a fresh process: the benchmark runs itself in child mode
 * (--child, bench_tflite_child.cc), which maps the model, opens a client handle (miss and
 * hit; fallback on, as by default), builds the interpreter (Build() or
 * BuildTfliteOnly()), invokes it once on seeded inputs (the first
 * inference) and then --invokes more times (the steady ones), each timed
 * on the wall clock and on the process's CPU clock (which other jobs on
 * the machine disturb much less), reads its VmHWM and RssAnon from
 * /proc/self/status and its heap from a counting malloc (heapcount.h),
 * and prints one "result" line. The three kinds of
 * runs take turns (alone, miss, hit, alone, ...) so that the machine's
 * noise falls on all of them, and each figure is the median of --reps
 * runs; a ratio is the median of the rounds' ratios. Memory mapped
 * without malloc is in peak RSS, not in peak heap; the daemon's own
 * memory is in neither (it is another process, shared by every client).
 *
 * LAYOUT: every run is exec'd with address-space randomisation off
 * (personality ADDR_NO_RANDOMIZE), so all of them load the program and
 * its libraries at the same addresses. Peak RSS counts the code pages
 * the kernel maps, and on a fault it maps a whole aligned 64 KiB window
 * of the file around the page (fault-around); where the randomised base
 * puts those windows moves one configuration's peak RSS by up to ~300
 * KiB between runs, more than the goals' 64 KiB. --aslr keeps the
 * randomisation.
 *
 * PAGE CACHE: fault-around maps only pages of the file that are cached,
 * so which pages the kernel holds of this program, and how, moves the
 * peak RSS too: the same bytes freshly linked, copied, or read from disk
 * gave the small models' hits +112, +0 and +128 KiB of code pages over
 * TFLite alone. `make bench` drops each benchmark program from the page
 * cache before it runs (dd iflag=nocache), so that the runs load it as a
 * program started from disk; by hand, do the same first:
 *   sync -d build/bench/bench_tflite
 *   dd if=build/bench/bench_tflite iflag=nocache count=0
 *
 * PAIRED: steady inference differs between two processes by more than
 * the 2% goal from the machine alone (two runs of the same interpreter
 * spread over 0.95 to 1.04), so each hit child also builds the model on
 * TFLite's own planner beside the interpreter it measured and invokes
 * the two in turn, the one going first alternating; the ratio of their
 * median steady invokes is judged too ("paired, one process"), after
 * the memory figures were read.
 *
 * Each model gets a table of the three runs, its arena figures from
 * TflitePlanner::info() (TFLite alone, arenad's arena plus TFLite's
 * remainder, the saving), and a PASS or MISS against each goal of the
 * adapter (docs/client.md, "Measured as a process"); the end sums the
 * goals over the models. Quote ratios and differences, not absolute
 * times: the machine is shared.
 *
 * Usage: bench_tflite [DATA_DIR] [--models LIST] [--reps N] [--invokes N]
 *                     [--cpu N] [--min-saving B] [--aslr]
 * DATA_DIR is not used (`make bench` passes it to every benchmark); the
 * models are tests/data/models/ *.tflite, from the source tree's top.
 * arenad is $ARENAD, else the arenad beside the benchmark's build folder.
 * A model TFLite alone cannot run either is printed as "not run", with
 * TFLite's reason. A model that fails otherwise (arenad's runs fail where
 * TFLite alone's do not, a run crashes or takes more than 300 s, a miss's
 * daemon does not start) is printed as FAILED, and the others still run.
 * Exit status: 0 ran (a MISS is a figure, not a failure); 64 bad command
 * line; 66 a model cannot be read; 70 a model FAILED, no daemon could be
 * started, or the counting malloc does not count.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/stat.h>
#include <sys/wait.h>
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
extern "C" {
#include "daemon_harness.h"
}

namespace bench_tflite {
namespace {

/* ---- the parent: runs the children and prints the tables --------------- */

struct Options {
  std::vector<std::string> models; /* paths */
  long long reps = 3;
  long long invokes = 50;
  long long cpu = -1; /* -1: children not pinned */
  long long min_saving = -1; /* -1: the adapter's default */
  bool aslr = false;         /* keep address-space randomisation */
};

void usage(FILE *f) {
  fprintf(f,
          "Usage: bench_tflite [DATA_DIR] [options]\n"
          "\n"
          "Runs every model with TensorFlow Lite alone, on a plan arenad\n"
          "computes (miss) and on one from its cache (hit), each run a\n"
          "fresh process, and prints start-up, first and steady inference\n"
          "times, peak RSS, steady RssAnon and peak heap side by side.\n"
          "DATA_DIR is not used; run from the source tree's top.\n"
          "\n"
          "Options:\n"
          "  --models LIST  comma-separated model names (as in %s/,\n"
          "                 without .tflite) or paths (default: every\n"
          "                 .tflite there)\n"
          "  --reps N       runs of each kind per model, taking turns; the\n"
          "                 figures are their medians (default 3, 1 to %d)\n"
          "  --invokes N    steady invokes after the first (default 50)\n"
          "  --cpu N        pin every run to CPU N (default: not pinned)\n"
          "  --aslr         keep address-space layout randomisation in the\n"
          "                 runs (default: one layout for all; peak RSS\n"
          "                 then moves by up to ~300 KiB between runs)\n"
          "  --min-saving B the adapter's minimum saving for the miss and\n"
          "                 the hit, bytes (default %llu, the adapter's;\n"
          "                 0: arenad is asked on every model)\n"
          "  -h, --help     this text\n",
          kModelDir, kMaxReps, (unsigned long long)arenad::kTfliteMinSaving);
}

/* Adds every *.tflite of kModelDir to o->models, sorted by name.
 * Returns 0, or 66 after printing why. */
int all_models(Options *o) {
  DIR *d = opendir(kModelDir);
  if (!d) {
    fprintf(stderr, "bench_tflite: %s: %s (run from the source tree's top)\n",
            kModelDir, strerror(errno));
    return 66;
  }
  std::vector<std::string> names;
  while (struct dirent *e = readdir(d)) {
    size_t n = strlen(e->d_name);
    if (n > 7 && !strcmp(e->d_name + n - 7, ".tflite"))
      names.push_back(std::string(kModelDir) + "/" + e->d_name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  o->models = names;
  return 0;
}

/* Adds the models of a --models LIST. Returns 0, or 66 after printing
 * why. */
int listed_models(const char *list, Options *o) {
  std::string s = list;
  size_t at = 0;
  while (at <= s.size()) {
    size_t end = s.find(',', at);
    if (end == std::string::npos)
      end = s.size();
    std::string name = s.substr(at, end - at);
    at = end + 1;
    if (name.empty())
      continue;
    bool path = name.find('/') != std::string::npos ||
                (name.size() > 7 && name.substr(name.size() - 7) == ".tflite");
    std::string p = path ? name : std::string(kModelDir) + "/" + name + ".tflite";
    if (access(p.c_str(), R_OK)) {
      fprintf(stderr, "bench_tflite: %s: cannot read: %s\n", p.c_str(),
              strerror(errno));
      return 66;
    }
    o->models.push_back(p);
  }
  return 0;
}

/* Whether this process may run on cpu. */
bool cpu_allowed(long long cpu) {
  cpu_set_t set;
  return cpu >= 0 && cpu < CPU_SETSIZE &&
         sched_getaffinity(0, sizeof set, &set) == 0 &&
         CPU_ISSET((int)cpu, &set);
}

/* Returns 0, -1 after --help, or 64 or 66 after printing why. */
int parse(int argc, char **argv, Options *o) {
  const char *list = nullptr;
  bool data_dir = false;
  for (int i = 1; i < argc; i++) {
    const char *opt = argv[i], *v = i + 1 < argc ? argv[i + 1] : nullptr;
    bool bad = false;
    if (!strcmp(opt, "-h") || !strcmp(opt, "--help")) {
      usage(stdout);
      return -1;
    } else if (!strcmp(opt, "--models") && v) {
      list = argv[++i];
    } else if (!strcmp(opt, "--reps") && v) {
      bad = number(argv[++i], 1, kMaxReps, &o->reps) != 0;
    } else if (!strcmp(opt, "--invokes") && v) {
      bad = number(argv[++i], 1, 1000000, &o->invokes) != 0;
    } else if (!strcmp(opt, "--aslr")) {
      o->aslr = true;
    } else if (!strcmp(opt, "--min-saving") && v) {
      bad = number(argv[++i], 0, 1LL << 50, &o->min_saving) != 0;
    } else if (!strcmp(opt, "--cpu") && v) {
      if (number(argv[++i], 0, CPU_SETSIZE - 1, &o->cpu) ||
          !cpu_allowed(o->cpu)) {
        fprintf(stderr, "bench_tflite: --cpu %s: not a CPU this process "
                "may run on\n", v);
        return 64;
      }
    } else if (opt[0] != '-' && !data_dir) {
      data_dir = true;
    } else {
      bad = true;
    }
    if (bad) {
      fprintf(stderr, "bench_tflite: bad option '%s' (see --help)\n", opt);
      return 64;
    }
  }
  int rc = list ? listed_models(list, o) : all_models(o);
  if (!rc && o->models.empty()) {
    fprintf(stderr, "bench_tflite: no models to run\n");
    rc = 64;
  }
  return rc;
}

/* The model's name: its file name without the folder and ".tflite". */
std::string model_name(const std::string &path) {
  size_t slash = path.rfind('/');
  std::string n = slash == std::string::npos ? path : path.substr(slash + 1);
  if (n.size() > 7 && n.substr(n.size() - 7) == ".tflite")
    n.resize(n.size() - 7);
  return n;
}

/* Reads what the child on fd prints until it closes fd, within the
 * deadline (ms, CLOCK_MONOTONIC). Returns false on a timeout. */
bool read_child(int fd, double deadline, std::string *out) {
  char buf[4096];
  for (;;) {
    double left = deadline - now_ms();
    if (left <= 0)
      return false;
    struct pollfd p = {fd, POLLIN, 0};
    int n = poll(&p, 1, (int)left + 1);
    if (n < 0 && errno == EINTR)
      continue;
    if (n == 0)
      return false; /* the deadline passed */
    if (n < 0)
      return true; /* poll failed: what came is all there is */
    ssize_t r = read(fd, buf, sizeof buf);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return true;
    if (out->size() < (1u << 20)) /* bounded: the result is one line */
      out->append(buf, (size_t)r);
  }
}

/* Reads the child's output text into s: its result line, or why it
 * failed (its last "error: " line, else its exit status). */
void parse_result(const std::string &text, int status, Sample *s) {
  size_t at = text.rfind("\nresult ");
  at = at == std::string::npos ? (text.rfind("result ", 0) == 0 ? 0 : at)
                               : at + 1;
  if (status == 0 && at != std::string::npos &&
      sscanf(text.c_str() + at, RESULT_IN, s->source, &s->alone, &s->arena,
             &s->remainder, &s->start_ms, &s->init_ms, &s->first_ms,
             &s->steady_ms, &s->init_cpu_ms, &s->first_cpu_ms,
             &s->steady_cpu_ms, &s->hwm, &s->anon, &s->heap_peak,
             &s->heap_live) == 15) {
    s->ok = true;
    size_t pr = text.find("\npaired ratio=");
    if (pr != std::string::npos)
      sscanf(text.c_str() + pr + 1, PAIRED_IN, &s->paired);
    return;
  }
  size_t e = text.rfind("error: ");
  if (e != std::string::npos) {
    size_t end = text.find('\n', e);
    s->error = text.substr(e + 7, end == std::string::npos ? end : end - e - 7);
  } else {
    s->error = "the run ended with status " + std::to_string(status) +
               " and no result";
  }
}

/* Runs one child of kind k on model (socket: the daemon's, or NULL) and
 * returns what it measured. */
Sample run_child(const std::string &self, Kind k, const std::string &model,
                 const char *socket, const Options &o) {
  Sample s;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC)) {
    s.error = std::string("pipe: ") + strerror(errno);
    return s;
  }
  char invokes[32], t0[64], min_saving[32];
  snprintf(invokes, sizeof invokes, "%lld", o.invokes);
  snprintf(min_saving, sizeof min_saving, "%lld", o.min_saving);
  std::vector<const char *> argv = {self.c_str(), "--child", kKindName[k],
                                    "--invokes", invokes};
  if (o.min_saving >= 0) {
    argv.push_back("--min-saving");
    argv.push_back(min_saving);
  }
  if (socket) {
    argv.push_back("--socket");
    argv.push_back(socket);
  }
  argv.push_back("--t0");
  argv.push_back(t0);
  argv.push_back(model.c_str());
  argv.push_back(nullptr);
  double start = now_ms();
  snprintf(t0, sizeof t0, "%.6f", start);
  pid_t pid = fork();
  if (pid == 0) {
    if (o.cpu >= 0) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET((int)o.cpu, &set);
      sched_setaffinity(0, sizeof set, &set); /* checked by parse() */
    }
    /* one address layout for every run (LAYOUT), unless --aslr */
    if (!o.aslr) {
      int pers = personality(0xffffffff);
      if (pers != -1)
        personality((unsigned long)pers | ADDR_NO_RANDOMIZE);
    }
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    execv(self.c_str(), const_cast<char *const *>(argv.data()));
    _exit(127);
  }
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    s.error = std::string("fork: ") + strerror(errno);
    return s;
  }
  std::string text;
  bool done = read_child(fds[0], start + kChildSeconds * 1e3, &text);
  close(fds[0]);
  if (!done)
    kill(pid, SIGKILL);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  if (!done) {
    s.error = "timed out after " + std::to_string(kChildSeconds) + " s";
    return s;
  }
  s.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  parse_result(text, s.status, &s);
  return s;
}

/* A miss: the child on a daemon started for it with an empty database. */
Sample run_miss(const std::string &self, const std::string &model,
                const Options &o) {
  struct harness h;
  Sample s;
  if (hn_init(&h, kDaemonConf) || hn_start(&h)) {
    s.error = "cannot start arenad ($ARENAD)";
  } else {
    s = run_child(self, kMiss, model, h.sock, o);
    hn_stop(&h);
  }
  hn_cleanup(&h);
  return s;
}

/* Every run of one model: s[kind][round]; error set when one failed
 * (then the model is reported as not run). */
struct ModelRuns {
  std::string name;
  std::string error;  /* set: the model was not run, for this reason */
  bool broken = false; /* with error: the harness or arenad failed where
                          TFLite alone runs the model */
  std::vector<Sample> s[kKinds];
};

/* When the warm-up hit failed: a model TFLite alone refuses too (exit
 * 65) is not run; anything else is a failure of arenad or the harness. */
void warm_up_failed(const std::string &self, const std::string &model,
                    const Sample &warm, const Options &o, ModelRuns *r) {
  Sample alone = run_child(self, kAlone, model, nullptr, o);
  if (!alone.ok && alone.status == 65 && warm.status == 65) {
    r->error = alone.error;
    return;
  }
  r->broken = true;
  r->error = alone.ok ? "arenad hit: " + warm.error
                      : "TFLite alone: " + alone.error;
}

/* Runs model: one hit to warm the cache (not measured), then --reps
 * rounds of alone, miss and hit. */
ModelRuns run_model(const std::string &self, const std::string &model,
                    const struct harness *hit, const Options &o) {
  ModelRuns r;
  r.name = model_name(model);
  Sample warm = run_child(self, kHit, model, hit->sock, o);
  if (!warm.ok) {
    warm_up_failed(self, model, warm, o, &r);
    return r;
  }
  for (long long round = 0; round < o.reps; round++)
    for (int k = 0; k < kKinds; k++) {
      Sample s = k == kMiss ? run_miss(self, model, o)
                            : run_child(self, (Kind)k, model,
                                        k == kHit ? hit->sock : nullptr, o);
      if (!s.ok) { /* it ran before: whatever failed now is not the model */
        r.broken = true;
        r.error = std::string(kKindLabel[k]) + ": " + s.error;
        return r;
      }
      r.s[k].push_back(s);
    }
  return r;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The medians of one kind's runs. Times in ms, memory in KiB. */
struct Row {
  double start, init, first, steady; /* ms, wall clock */
  double init_first_cpu, steady_cpu; /* ms, the process's CPU clock */
  double hwm, anon, heap;            /* KiB; heap < 0: not counted */
};

Row median_row(const std::vector<Sample> &v) {
  std::vector<double> f[9];
  for (const Sample &s : v) {
    f[0].push_back(s.start_ms);
    f[1].push_back(s.init_ms);
    f[2].push_back(s.first_ms);
    f[3].push_back(s.steady_ms);
    f[4].push_back(s.init_cpu_ms + s.first_cpu_ms);
    f[5].push_back(s.steady_cpu_ms);
    f[6].push_back((double)s.hwm);
    f[7].push_back((double)s.anon);
    f[8].push_back(s.heap_peak < 0 ? -1 : (double)s.heap_peak / 1024);
  }
  return Row{median(f[0]), median(f[1]), median(f[2]), median(f[3]),
             median(f[4]), median(f[5]), median(f[6]), median(f[7]),
             median(f[8])};
}

/* The goals of docs/client.md ("Measured as a process"), one model's
 * verdicts. */
enum Goal {
  kGoalHitMemory,  /* hit <= alone - saving + 64 KiB, all three figures */
  kGoalMissAnon,   /* miss RssAnon within 64 KiB of the hit's */
  kGoalMissPeaks,  /* miss peaks <= alone + 64 KiB */
  kGoalNeverWorse, /* hit <= alone + 64 KiB, all three figures */
  kGoalFirst,      /* hit init+first <= 1.05 x alone, wall clock */
  kGoalFirstCpu,   /* the same on the CPU clock */
  kGoalSteady,     /* hit steady within 2% of alone, wall clock */
  kGoalSteadyCpu,  /* the same on the CPU clock */
  kGoalSteadyPaired, /* the same, paired in one process (PAIRED) */
  kGoals
};
const char *const kGoalText[kGoals] = {
    "hit: peak RSS, RssAnon and peak heap <= alone - saving + 64 KiB",
    "miss: RssAnon the same as the hit's (within 64 KiB)",
    "miss: peak RSS and peak heap <= alone + 64 KiB",
    "never worse: hit <= alone + 64 KiB on all three",
    "hit: init + first inference <= 1.05 x alone (wall clock)",
    "hit: init + first inference <= 1.05 x alone (CPU time)",
    "hit: steady inference within 2% of alone (wall clock)",
    "hit: steady inference within 2% of alone (CPU time)",
    "hit: steady inference within 2% of alone (paired, one process)",
};

const char *mark(bool pass) { return pass ? "PASS" : "MISS"; }

/* Prints "name +D" (or "name -" when a figure is missing) and returns
 * whether D <= 0. */
bool print_diff(const char *name, double fig, double ref, bool have) {
  if (!have || fig < 0) {
    printf("%s -", name);
    return true;
  }
  double d = fig - ref;
  printf("%s %+.0f", name, d);
  return d <= 0;
}

/* A ratio over the rounds: its median and its range. */
struct Ratio {
  double mid, lo, hi;
};

/* hit / alone of f, round by round. */
template <typename F>
Ratio round_ratio(const ModelRuns &r, F f) {
  std::vector<double> v;
  for (size_t i = 0; i < r.s[kAlone].size(); i++) {
    double a = f(r.s[kAlone][i]);
    v.push_back(a > 0 ? f(r.s[kHit][i]) / a : 0);
  }
  auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return Ratio{median(v), *lo, *hi};
}

void print_table(const ModelRuns &r, const Row *rows) {
  printf("  %-13s %-7s %9s %9s %9s %10s %11s %10s %9s %8s %9s\n", "run",
         "source", "start ms", "init ms", "first ms", "steady us",
         "cpu i+f ms", "cpu st. us", "peak RSS", "RssAnon", "peak heap");
  for (int k = 0; k < kKinds; k++) {
    const Row &w = rows[k];
    printf("  %-13s %-7s %9.3f %9.3f %9.3f %10.1f %11.3f %10.1f %9.0f %8.0f ",
           kKindLabel[k], r.s[k][0].source, w.start, w.init, w.first,
           w.steady * 1e3, w.init_first_cpu, w.steady_cpu * 1e3, w.hwm,
           w.anon);
    if (w.heap < 0)
      printf("%9s\n", "-");
    else
      printf("%9.0f\n", w.heap);
  }
}

/* Prints one time ratio, hit / alone, and whether it meets its goal:
 * at most `most`, or within `within` of 1 when most is 0. */
bool print_ratio(const char *what, const Ratio &x, double most,
                 double within) {
  bool pass = most > 0 ? x.mid <= most : fabs(x.mid - 1) <= within;
  printf("  hit / alone, %s: %.3f (rounds %.3f to %.3f) %s\n", what, x.mid,
         x.lo, x.hi, mark(pass));
  return pass;
}

/* Prints the time goals of the hit against alone, on the wall clock and
 * on the CPU clock (less sensitive to the machine's other jobs); sets
 * pass[goal]. */
void print_time_goals(const ModelRuns &r, bool pass[kGoals]) {
  Ratio first = round_ratio(r, [](const Sample &s) {
    return s.init_ms + s.first_ms;
  });
  Ratio first_cpu = round_ratio(r, [](const Sample &s) {
    return s.init_cpu_ms + s.first_cpu_ms;
  });
  Ratio steady = round_ratio(r, [](const Sample &s) { return s.steady_ms; });
  Ratio steady_cpu = round_ratio(r, [](const Sample &s) {
    return s.steady_cpu_ms;
  });
  pass[kGoalFirst] = print_ratio("init + first", first, kFirstGoal, 0);
  pass[kGoalFirstCpu] =
      print_ratio("init + first, CPU", first_cpu, kFirstGoal, 0);
  pass[kGoalSteady] = print_ratio("steady", steady, 0, kSteadyGoal);
  pass[kGoalSteadyCpu] =
      print_ratio("steady, CPU", steady_cpu, 0, kSteadyGoal);
  std::vector<double> v;
  for (const Sample &s : r.s[kHit])
    if (s.paired > 0)
      v.push_back(s.paired);
  if (v.empty()) {
    printf("  hit / alone, steady, paired in one process: - MISS\n");
    pass[kGoalSteadyPaired] = false;
    return;
  }
  auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  pass[kGoalSteadyPaired] = print_ratio("steady, paired in one process",
                                        Ratio{median(v), *lo, *hi}, 0,
                                        kSteadyGoal);
}

/* Prints the memory goals of the hit and the miss (rows[kind], medians)
 * against alone with saving (KiB); sets pass[goal]. */
void print_memory_goals(const Row *rows, double saving, bool pass[kGoals]) {
  const Row &a = rows[kAlone], &m = rows[kMiss], &t = rows[kHit];
  bool heap = a.heap >= 0;
  double goal = -saving + kSlackKib;
  printf("  hit - (alone - saving + 64): ");
  bool ok = print_diff("peak RSS", t.hwm, a.hwm + goal, true);
  ok &= print_diff(", RssAnon", t.anon, a.anon + goal, true);
  ok &= print_diff(", peak heap", t.heap, a.heap + goal, heap);
  pass[kGoalHitMemory] = ok;
  printf(" KiB %s\n", mark(ok));
  printf("  hit - (alone + 64): ");
  ok = print_diff("peak RSS", t.hwm, a.hwm + kSlackKib, true);
  ok &= print_diff(", RssAnon", t.anon, a.anon + kSlackKib, true);
  ok &= print_diff(", peak heap", t.heap, a.heap + kSlackKib, heap);
  pass[kGoalNeverWorse] = ok;
  printf(" KiB %s\n", mark(ok));
  pass[kGoalMissAnon] = fabs(m.anon - t.anon) <= kSlackKib;
  printf("  miss: RssAnon - hit's %+.0f KiB %s; - (alone + 64): ",
         m.anon - t.anon, mark(pass[kGoalMissAnon]));
  ok = print_diff("peak RSS", m.hwm, a.hwm + kSlackKib, true);
  ok &= print_diff(", peak heap", m.heap, a.heap + kSlackKib, heap);
  pass[kGoalMissPeaks] = ok;
  printf(" KiB %s\n", mark(ok));
}

/* Prints one model's arena figures, table and verdicts; sets
 * pass[goal]. */
void print_model(const ModelRuns &r, bool pass[kGoals]) {
  const Sample &h = r.s[kHit][0];
  unsigned long long total = h.arena + h.remainder;
  double saving = h.alone > total ? (double)(h.alone - total) : 0;
  printf("\n%s: arena TFLite alone %llu B, arenad %llu + TFLite's %llu B, "
         "saving %.0f B (%.1f KiB)\n", r.name.c_str(), h.alone, h.arena,
         h.remainder, saving, saving / 1024);
  Row rows[kKinds];
  for (int k = 0; k < kKinds; k++)
    rows[k] = median_row(r.s[k]);
  print_table(r, rows);
  print_time_goals(r, pass);
  print_memory_goals(rows, saving / 1024, pass);
  if (strcmp(h.source, "cache") && strcmp(h.source, "tflite"))
    printf("  note: the hit's plan came from %s, not the cache\n", h.source);
  fflush(stdout);
}

/* The machine's load average over the last minute (-1: unknown). */
double load_average() {
  double l = -1;
  FILE *f = fopen("/proc/loadavg", "r");
  if (f) {
    if (fscanf(f, "%lf", &l) != 1)
      l = -1;
    fclose(f);
  }
  return l;
}

void print_header(const Options &o) {
  printf("bench_tflite: TensorFlow Lite as a process sees it, every run a "
         "fresh process:\n"
         "  TFLite alone (its own planner), arenad miss (a daemon with an "
         "empty cache),\n"
         "  arenad hit (the plan from the cache); median of %lld run%s of "
         "each, taking turns;\n"
         "  start = fork to an allocated interpreter, init = client handle "
         "to it,\n"
         "  first = the first Invoke(), steady = mean of %lld more (us); "
         "cpu = the same\n"
         "  on the process's CPU clock; peak RSS = VmHWM, RssAnon after "
         "the invokes,\n"
         "  peak heap = counting malloc (KiB)%s%s%s; load average %.2f\n",
         o.reps, o.reps == 1 ? "" : "s", o.invokes,
         heapcount_active() ? "" : "; heap not counted in a sanitizer build",
         o.cpu >= 0 ? "; runs pinned to one CPU" : "",
         o.aslr ? "; address layout randomised" : "; one address layout",
         load_average());
  fflush(stdout);
}

/* Whether the counting malloc sees blocks of every kind come and go (a
 * build whose replacement is not the one the process calls would show
 * no heap). */
bool heap_counts() {
  if (!heapcount_active())
    return true;
  constexpr size_t kMiB = 1 << 20;
  struct heapcount before, held, after;
  heapcount_get(&before);
  void *volatile keep[6] = {};
  keep[0] = malloc(kMiB);
  keep[1] = calloc(1, kMiB);
  keep[2] = realloc(keep[0], 2 * kMiB);
  keep[0] = nullptr;
  keep[3] = aligned_alloc(64, kMiB);
  void *p = nullptr;
  keep[4] = posix_memalign(&p, 64, kMiB) == 0 ? p : nullptr;
  keep[5] = new char[kMiB];
  heapcount_get(&held);
  delete[] static_cast<char *>(keep[5]);
  for (int i = 0; i < 5; i++)
    free(keep[i]);
  heapcount_get(&after);
  return held.live_bytes - before.live_bytes >= (int64_t)(6 * kMiB) &&
         after.live_bytes == before.live_bytes;
}

/* The path of this program, for the children. */
std::string self_path() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, (size_t)n) : std::string();
}

/* $ARENAD, else the arenad of this build (the benchmark lives in
 * BUILD/bench/). Returns false when there is none. */
bool find_arenad(const std::string &self) {
  const char *env = getenv("ARENAD");
  if (env && *env)
    return access(env, X_OK) == 0;
  std::string d = self.substr(0, self.rfind('/'));
  std::string bin = d.substr(0, d.rfind('/')) + "/arenad";
  if (access(bin.c_str(), X_OK))
    return false;
  setenv("ARENAD", bin.c_str(), 1);
  return true;
}

int parent_main(int argc, char **argv) {
  Options o;
  int rc = parse(argc, argv, &o);
  if (rc)
    return rc < 0 ? 0 : rc;
  std::string self = self_path();
  if (self.empty() || !find_arenad(self)) {
    fprintf(stderr, "bench_tflite: no arenad to run: set ARENAD to its path\n");
    return 70;
  }
  if (!heap_counts()) {
    fprintf(stderr, "bench_tflite: the counting malloc does not count\n");
    return 70;
  }
  struct harness hit;
  if (hn_init(&hit, kDaemonConf) || hn_start(&hit)) {
    fprintf(stderr, "bench_tflite: cannot start %s\n", getenv("ARENAD"));
    hn_cleanup(&hit);
    return 70;
  }
  print_header(o);
  int passed[kGoals] = {}, n_run = 0, n_broken = 0;
  for (const std::string &model : o.models) {
    ModelRuns r = run_model(self, model, &hit, o);
    if (!r.error.empty()) {
      printf("\n%s: %s: %s\n", r.name.c_str(),
             r.broken ? "FAILED" : "not run", r.error.c_str());
      fflush(stdout);
      n_broken += r.broken;
      continue;
    }
    bool pass[kGoals];
    print_model(r, pass);
    n_run++;
    for (int g = 0; g < kGoals; g++)
      passed[g] += pass[g];
  }
  printf("\ngoals, models that meet each (of %d run; load average now "
         "%.2f):\n", n_run, load_average());
  for (int g = 0; g < kGoals; g++)
    printf("  %-66s %d/%d\n", kGoalText[g], passed[g], n_run);
  hn_stop(&hit);
  hn_cleanup(&hit);
  if (n_broken)
    fprintf(stderr, "bench_tflite: %d model%s FAILED (above)\n", n_broken,
            n_broken == 1 ? "" : "s");
  return n_broken ? 70 : 0;
}

}  // namespace
}  // namespace bench_tflite

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "--child"))
    return bench_tflite::child_main(argc - 1, argv + 1);
  return bench_tflite::parent_main(argc, argv);
}
