/*
 * tflm_infer.cc - runs a .tflite model on TensorFlow Lite Micro with its
 * arena planned by arenad: how an interpreter integrates
 * arenad::TflmPlanner (client/tflm/arenad_tflm.h).
 *
 * It loads the model, opens a libarenad-client handle (fallback on unless
 * --no-fallback), creates the planner from the model bytes (the cache key
 * is the model's SHA-256 and input shapes), hands it to
 * MicroAllocator::Create(arena, size, &planner), allocates the tensors,
 * invokes the model on seeded inputs, and prints where the plan came
 * from, the arena bytes, and every output. Any number of these processes
 * on one machine share one plan from arenad's cache. --planner tflm runs
 * TFLM's own GreedyMemoryPlanner instead, for comparison.
 *
 * The model runs in a child process: TFLM does not check every
 * allocation, and on some arenas that are too small it uses a failed one
 * and crashes (seen in its parsers of operator options, in
 * UNIDIRECTIONAL_SEQUENCE_LSTM's and QUANTIZE's Prepare and in
 * GreedyMemoryPlanner; on dtln_noise_suppression with arenas of 1,712 to
 * 4,800 bytes with either planner, and of 5,120 to 5,872 with TFLM's; see
 * docs/client.md). The parent turns such a crash (a signal, or under a
 * sanitizer its exit status) into exit status 70 and a message.
 *
 * The plan line says what happened: where the plan came from, or that
 * there was none because AllocateTensors failed before TFLM asked the
 * planner, or because planning failed. --connect-timeout,
 * --answer-timeout and --plan-timeout set the client's timeouts
 * (arenad_client.h, TIMEOUTS).
 *
 * Usage: see usage() below. Exit status: 0 ran; 64 bad command line;
 * 65 the model is invalid or cannot run here (operators this TFLM build
 * lacks, all of them named in one message; an arena too small; planning
 * failed); 66 the model cannot be read; 70 an invoke failed or TFLM
 * crashed; 71 out of memory.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "arenad_tflm.h"
#include "tensorflow/lite/c/common.h"
#include "tensorflow/lite/micro/memory_planner/greedy_memory_planner.h"
#include "tflm_infer_run.h"

namespace {

constexpr size_t kDefaultArena = 64u << 20; /* bytes */
constexpr unsigned long long kMaxTimeoutMs = 86400000; /* a day */

void usage(FILE *f) {
  fprintf(f,
          "Usage: tflm_infer [options] MODEL.tflite\n"
          "\n"
          "Runs MODEL on TensorFlow Lite Micro with the arena planned by\n"
          "arenad and prints the plan's source, the arena bytes and the\n"
          "outputs.\n"
          "\n"
          "Options:\n"
          "  --socket PATH      arenad's socket (default $ARENAD_SOCKET, else\n"
          "                     %s)\n"
          "  --no-fallback      fail when arenad cannot plan, instead of\n"
          "                     planning in this process\n"
          "  --planner P        arenad (default) or tflm (TFLite Micro's own\n"
          "                     GreedyMemoryPlanner, for comparison)\n"
          "  --in-place         let allowlisted elementwise and reshape\n"
          "                     operators write their output over their input\n"
          "                     (the default)\n"
          "  --no-in-place      give every tensor bytes of its own\n"
          "  --connect-timeout MS  the longest connecting to arenad may take\n"
          "                     (default %u)\n"
          "  --answer-timeout MS   the longest arenad may stay silent before it\n"
          "                     replies or acknowledges the request (default %u)\n"
          "  --plan-timeout MS  the longest the whole request may take, an\n"
          "                     acknowledged search included (default %u)\n"
          "  --arena-bytes N    arena size (default %zu)\n"
          "  --seed N           seed of the input values (default 1)\n"
          "  --invokes N        number of invokes (default 1)\n"
          "  --values N         output values printed per output (default 16,\n"
          "                     0 = all)\n"
          "  -h, --help         this text\n"
          "\n"
          "Exit status: 0 ran, 64 bad command line, 65 the model is invalid\n"
          "or cannot run, 66 cannot read the model, 70 invoke failed or TFLite\n"
          "Micro crashed (an arena too small), 71 out of memory.\n",
          ARENAD_CLIENT_DEFAULT_SOCKET,
          ARENAD_CLIENT_DEFAULT_CONNECT_TIMEOUT_MS,
          ARENAD_CLIENT_DEFAULT_ANSWER_TIMEOUT_MS,
          ARENAD_CLIENT_DEFAULT_REQUEST_TIMEOUT_MS, kDefaultArena);
}

/* The command line. */
struct Args {
  const char *model;     /* path, borrowed */
  const char *socket;    /* NULL: the client's default */
  int fallback;          /* 1: plan locally when arenad fails */
  int tflm;              /* 1: TFLM's own planner */
  int in_place;          /* 1: in-place sharing (the default) */
  uint32_t connect_ms;   /* the client's connect timeout; 0: default */
  uint32_t answer_ms;    /* its answer timeout; 0: default */
  uint32_t plan_ms;      /* its plan (request) timeout; 0: default */
  size_t arena_bytes;    /* arena size */
  unsigned long long seed; /* input seed */
  int invokes;           /* >= 1 */
  size_t values;         /* values printed per output, 0 = all */
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

/* Returns 0, -1 after --help, or 64. */
int parse(int argc, char **argv, Args *a) {
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    unsigned long long n;
    if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
      usage(stdout);
      return -1;
    } else if (!strcmp(o, "--no-fallback")) {
      a->fallback = 0;
    } else if (!strcmp(o, "--in-place") || !strcmp(o, "--no-in-place")) {
      a->in_place = !strcmp(o, "--in-place");
    } else if (!strcmp(o, "--socket") && v) {
      a->socket = v;
      i++;
    } else if (!strcmp(o, "--planner") && v &&
               (!strcmp(v, "arenad") || !strcmp(v, "tflm"))) {
      a->tflm = !strcmp(v, "tflm");
      i++;
    } else if ((!strcmp(o, "--connect-timeout") ||
                !strcmp(o, "--answer-timeout") ||
                !strcmp(o, "--plan-timeout")) &&
               !number(v, 1, kMaxTimeoutMs, &n)) {
      if (!strcmp(o, "--connect-timeout"))
        a->connect_ms = (uint32_t)n;
      else if (!strcmp(o, "--answer-timeout"))
        a->answer_ms = (uint32_t)n;
      else
        a->plan_ms = (uint32_t)n;
      i++;
    } else if (!strcmp(o, "--arena-bytes") && !number(v, 1024, 1ull << 31, &n)) {
      a->arena_bytes = (size_t)n;
      i++;
    } else if (!strcmp(o, "--seed") && !number(v, 0, ~0ull, &n)) {
      a->seed = n;
      i++;
    } else if (!strcmp(o, "--invokes") && !number(v, 1, 1000000, &n)) {
      a->invokes = (int)n;
      i++;
    } else if (!strcmp(o, "--values") && !number(v, 0, 1ull << 31, &n)) {
      a->values = (size_t)n;
      i++;
    } else if (o[0] == '-' || a->model) {
      fprintf(stderr, "tflm_infer: %s '%s'\n",
              o[0] == '-' ? "bad option or value:" : "only one MODEL, not",
              o);
      return 64;
    } else {
      a->model = o;
    }
  }
  if (!a->model) {
    fprintf(stderr, "tflm_infer: missing MODEL (see --help)\n");
    return 64;
  }
  return 0;
}

int exit_status(int run_status) {
  switch (run_status) {
    case tflm_infer::kRunOk:
      return 0;
    case tflm_infer::kRunUnreadable:
      return 66;
    case tflm_infer::kRunInvoke:
      return 70;
    case tflm_infer::kRunNoMemory:
      return 71;
    default:
      return 65;
  }
}

/* Prints one output: its shape, then up to `values` values. */
void print_output(const tflm_infer::Run &r, const tflm_infer::OutputInfo &e,
                  size_t values) {
  printf("output %d.%d: %s [", e.invoke, e.index,
         TfLiteTypeGetName((TfLiteType)e.type));
  for (int d = 0; d < e.rank && d < tflm_infer::kMaxDims; d++)
    printf("%s%d", d ? ", " : "", e.dims[d]);
  printf("]");
  const uint8_t *p = r.outputs + e.offset;
  size_t esz = e.type == kTfLiteFloat32 || e.type == kTfLiteInt32 ? 4
               : e.type == kTfLiteInt16                            ? 2
                                                                   : 1;
  size_t n = e.bytes / esz;
  for (size_t i = 0; i < n && (values == 0 || i < values); i++) {
    if (e.type == kTfLiteFloat32) {
      float f;
      memcpy(&f, p + 4 * i, 4);
      printf(" %.9g", (double)f);
    } else if (e.type == kTfLiteInt32) {
      int32_t x;
      memcpy(&x, p + 4 * i, 4);
      printf(" %d", x);
    } else if (e.type == kTfLiteInt16) {
      int16_t x;
      memcpy(&x, p + 2 * i, 2);
      printf(" %d", x);
    } else if (e.type == kTfLiteInt8) {
      printf(" %d", (int8_t)p[i]);
    } else {
      printf(" %u", p[i]);
    }
  }
  if (values && n > values)
    printf(" ... (%zu values)", n);
  printf("\n");
}

/* Prints where the plan came from. */
void print_plan(arenad::TflmPlanner *p, arenad_client_t *c) {
  const arenad::TflmPlanInfo &i = p->info();
  printf("plan: from %s", arenad::TflmPlanSourceName(i.source));
  if (i.source == arenad::TflmPlanSource::kLocal && i.fallback_reason)
    printf(" (arenad: %s)", arenad_client_errmsg(c));
  printf(", %zu buffers, %s, head %llu bytes, lower bound %llu bytes%s",
         i.n_buffers, arenad_client_algo_name(i.algo),
         (unsigned long long)i.arena_bytes,
         (unsigned long long)i.lower_bound_bytes,
         i.proven_optimal ? " (optimal)" : "");
  if (i.n_shared)
    printf(", %zu pairs in place (lower bound %llu bytes without)",
           i.n_shared, (unsigned long long)i.lower_bound_unshared_bytes);
  printf("\n");
}

/* Loads, plans, runs and prints; returns the exit status. */
int run(const Args &a) {
  int rc;
  char err[tflm_infer::kErrLen];
  tflm_infer::Model m;
  if ((rc = tflm_infer::LoadModel(a.model, &m, err)) != 0) {
    fprintf(stderr, "tflm_infer: %s: %s\n", a.model, err);
    return exit_status(rc);
  }
  struct arenad_client_options co;
  arenad_client_options_init(&co);
  co.socket_path = a.socket;
  co.fallback = a.fallback;
  co.connect_timeout_ms = a.connect_ms;
  co.answer_timeout_ms = a.answer_ms;
  co.request_timeout_ms = a.plan_ms;
  arenad_client_t *c = NULL;
  uint8_t *arena = static_cast<uint8_t *>(
      aligned_alloc(16, (a.arena_bytes + 15) / 16 * 16));
  if (!arena || arenad_client_open(&co, &c) != 0) {
    fprintf(stderr, "tflm_infer: %s\n",
            arena ? "bad --socket path" : "out of memory");
    free(arena);
    tflm_infer::FreeModel(&m);
    return arena ? 64 : 71;
  }
  arenad::TflmPlanner ours(c, m.data, m.len);
  ours.SetInPlace(a.in_place != 0);
  tflite::GreedyMemoryPlanner greedy;
  tflite::MicroMemoryPlanner *planner = &ours;
  if (a.tflm)
    planner = &greedy;
  tflm_infer::Run r;
  rc = tflm_infer::RunModel(m, planner, arena, a.arena_bytes, a.seed,
                            a.invokes, &r);
  printf("model: %s\n", a.model);
  if (rc == tflm_infer::kRunUnsupported)
    ; /* refused before TFLM saw the model: nothing to say of a plan */
  else if (!r.plan_asked)
    printf("plan: none, AllocateTensors failed before TFLite Micro asked "
           "the planner for one (%zu buffers added)\n", r.n_buffers);
  else if (a.tflm)
    printf("plan: TFLite Micro's GreedyMemoryPlanner, head %zu bytes\n",
           r.head_bytes);
  else if (ours.status() == 0)
    print_plan(&ours, c);
  else
    printf("plan: none, planning failed: %s\n", ours.error());
  if (rc == tflm_infer::kRunOk || rc == tflm_infer::kRunInvoke)
    printf("arena: %zu bytes used (head %zu)\n", r.arena_used_bytes,
           r.head_bytes);
  for (size_t i = 0; i < r.n_info; i++)
    print_output(r, r.info[i], a.values);
  if (rc)
    fprintf(stderr, "tflm_infer: %s: %s%s%s\n", a.model, r.error,
            ours.status() ? ": " : "", ours.status() ? ours.error() : "");
  tflm_infer::FreeRun(&r);
  arenad_client_close(c);
  free(arena);
  tflm_infer::FreeModel(&m);
  if (fflush(stdout) != 0 && rc == 0)
    return 74;
  return exit_status(rc);
}

/* Runs run(a) in a child process and returns its exit status, or 70 with
 * a message when TFLM crashed it (see the top of the file). The child
 * writes its status to a pipe just before it exits, so that any other end
 * counts as a crash: a signal, or whatever exit status a sanitizer's
 * runtime gives a process it stopped (ThreadSanitizer's 66 would read as
 * "cannot read the model"). */
int isolated(const Args &a) {
  int fds[2];
  fflush(stdout);
  fflush(stderr);
  if (pipe(fds) != 0)
    return run(a);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return run(a);
  }
  if (pid == 0) {
    close(fds[0]);
    unsigned char rc = (unsigned char)run(a);
    fflush(stdout);
    ssize_t w = write(fds[1], &rc, 1);
    _exit(w == 1 ? rc : 71);
  }
  close(fds[1]);
  unsigned char said = 0;
  ssize_t got;
  while ((got = read(fds[0], &said, 1)) < 0 && errno == EINTR)
    ;
  close(fds[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR)
      return 71;
  if (got == 1 && WIFEXITED(st) && WEXITSTATUS(st) == said)
    return said;
  fprintf(stderr,
          "tflm_infer: %s: TFLite Micro crashed (%s %d); it does not check "
          "every allocation and crashes on some arenas that are too small: "
          "try a larger --arena-bytes\n",
          a.model, WIFSIGNALED(st) ? "signal" : "exit status",
          WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
  return 70;
}

}  // namespace

int main(int argc, char **argv) {
  Args a = {NULL, NULL, 1, 0, 1, 0, 0, 0, kDefaultArena, 1, 1, 16};
  int rc = parse(argc, argv, &a);
  if (rc)
    return rc < 0 ? 0 : rc;
  return isolated(a);
}
