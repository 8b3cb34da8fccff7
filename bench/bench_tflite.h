/*
 * bench_tflite.h - what the two halves of bench_tflite share: the kinds
 * of runs, the line a child prints and the parent reads back, what one
 * run measured, and two small helpers. bench_tflite.cc is the parent (it
 * runs the children and prints the tables), bench_tflite_child.cc one
 * measured run in a fresh process; see bench_tflite.cc for the whole.
 */
#ifndef ARENA_BENCH_TFLITE_H
#define ARENA_BENCH_TFLITE_H

#include <string>

namespace bench_tflite {

inline constexpr const char *kModelDir = "tests/data/models";
constexpr int kMaxReps = 15;
constexpr double kSlackKib = 64;     /* the goals' allowance */
constexpr double kFirstGoal = 1.05;  /* hit init+first / alone, at most */
constexpr double kSteadyGoal = 0.02; /* hit steady / alone, within */
constexpr int kChildSeconds = 300;   /* a child that takes longer is killed */
constexpr const char *kDaemonConf = "[daemon]\nlog_level = warning\n";

/* The three kinds of runs, in the order they take turns. */
enum Kind { kAlone = 0, kMiss = 1, kHit = 2, kKinds = 3 };
inline const char *const kKindName[kKinds] = {"alone", "miss", "hit"};
inline const char *const kKindLabel[kKinds] = {"TFLite alone", "arenad miss",
                                        "arenad hit"};

/* The line a child prints, and how the parent reads it back: one format
 * each way, kept together. */
#define RESULT_OUT                                                          \
  "result source=%s alone=%llu arena=%llu remainder=%llu start_ms=%.6f "   \
  "init_ms=%.6f first_ms=%.6f steady_ms=%.6f init_cpu_ms=%.6f "            \
  "first_cpu_ms=%.6f steady_cpu_ms=%.6f vmhwm_kib=%ld rssanon_kib=%ld "    \
  "heap_peak=%lld heap_live=%lld\n"
#define RESULT_IN                                                           \
  "result source=%15s alone=%llu arena=%llu remainder=%llu start_ms=%lf "  \
  "init_ms=%lf first_ms=%lf steady_ms=%lf init_cpu_ms=%lf "                \
  "first_cpu_ms=%lf steady_cpu_ms=%lf vmhwm_kib=%ld rssanon_kib=%ld "      \
  "heap_peak=%lld heap_live=%lld"

/* What one run measured. Times in ms, memory in KiB unless named. */
struct Sample {
  bool ok = false;
  int status = -1;              /* the child's exit status (128 + signal;
                                   -1: not started or timed out) */
  std::string error;            /* when !ok: why, as the child said it */
  char source[16] = "";         /* the plan's source; "tflite" alone */
  unsigned long long alone = 0; /* bytes: TFLite's arena, own planner */
  unsigned long long arena = 0; /* bytes: arenad's arena (0: none) */
  unsigned long long remainder = 0; /* bytes: TFLite's beside arenad's */
  double start_ms = 0;   /* fork to an allocated interpreter */
  double init_ms = 0;    /* client handle and Build(), or BuildTfliteOnly() */
  double first_ms = 0;   /* the first Invoke() */
  double steady_ms = 0;  /* mean of the steady invokes */
  double init_cpu_ms = 0;   /* the same three on the process's CPU clock */
  double first_cpu_ms = 0;
  double steady_cpu_ms = 0;
  long hwm = -1;         /* VmHWM, the peak RSS */
  long anon = -1;        /* RssAnon after the last invoke */
  long long heap_peak = -1; /* bytes, counting malloc; -1: not counted */
  long long heap_live = -1; /* bytes, after the last invoke */
  double paired = 0; /* hit only: median steady invoke on arenad's plan
                        over TFLite alone's, the two interpreters in this
                        one process, invoked in turn (0: none) */
};

/* The line a hit child prints after its result (PAIRED in
 * bench_tflite.cc). */
#define PAIRED_OUT "paired ratio=%.6f invokes=%d\n"
#define PAIRED_IN "paired ratio=%lf"

inline double now_ms() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Parses a decimal number in [lo, hi]. Returns 0 or -1
 * (bench_tflite_child.cc). */
int number(const char *s, long long lo, long long hi, long long *v);

/* The child mode: one measured run (bench_tflite_child.cc; the command
 * line from --child on). Returns its exit status. */
int child_main(int argc, char **argv);

}  // namespace bench_tflite

#endif /* ARENA_BENCH_TFLITE_H */
