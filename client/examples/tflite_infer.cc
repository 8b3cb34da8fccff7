/*
 * tflite_infer.cc - runs a .tflite model on TensorFlow Lite's interpreter
 * with its tensors placed by arenad: how a program integrates
 * arenad::TflitePlanner (client/tflite/arenad_tflite.h).
 *
 * It loads the model, opens a libarenad-client handle (fallback on unless
 * --no-fallback), lets the planner build and allocate the interpreter
 * (the cache key is the model's SHA-256 and input shapes), invokes it on
 * seeded inputs and prints where the plan came from, the memory TFLite
 * alone would use, arenad's arena and what TFLite still allocates, and
 * every output. Any number of these processes on one machine share one
 * plan from arenad's cache. --planner tflite runs TFLite's own planner
 * instead, for comparison.
 *
 * Exit status: 0 ran; 64 bad command line; 65 the model is invalid or
 * cannot run here, or planning failed; 66 the model cannot be read;
 * 70 an invoke failed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <string>
#include <vector>

#include "arenad_tflite.h"
#include "arenad_tflite_ops.h"
#include "tflite_infer_run.h"

namespace {

void usage(FILE *f) {
  fprintf(f,
          "Usage: tflite_infer [options] MODEL.tflite\n"
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
          "  --seed N        seed of the input values (default 1)\n"
          "  --invokes N     number of invokes (default 1)\n"
          "  --values N      values printed per output (default 16, 0 = all)\n"
          "  -h, --help      this text\n",
          ARENAD_CLIENT_DEFAULT_SOCKET);
}

/* The command line. */
struct Args {
  const char *model = nullptr;  /* path, borrowed */
  const char *socket = nullptr; /* NULL: the client's default */
  bool fallback = true;
  bool tflite = false;          /* TFLite's own planner */
  bool in_place = true;
  unsigned long long seed = 1;
  unsigned long long invokes = 1;
  unsigned long long values = 16;
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
    const char *v = i + 1 < argc ? argv[i + 1] : nullptr;
    bool bad = false;
    if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
      usage(stdout);
      return -1;
    } else if (!strcmp(o, "--no-fallback")) {
      a->fallback = false;
    } else if (!strcmp(o, "--no-in-place")) {
      a->in_place = false;
    } else if (!strcmp(o, "--socket") && v) {
      a->socket = argv[++i];
    } else if (!strcmp(o, "--planner") && v) {
      a->tflite = !strcmp(v, "tflite");
      bad = !a->tflite && strcmp(v, "arenad");
      i++;
    } else if (!strcmp(o, "--seed") && v) {
      bad = number(argv[++i], 0, ~0ull, &a->seed) != 0;
    } else if (!strcmp(o, "--invokes") && v) {
      bad = number(argv[++i], 1, 1000000, &a->invokes) != 0;
    } else if (!strcmp(o, "--values") && v) {
      bad = number(argv[++i], 0, ~0ull, &a->values) != 0;
    } else if (o[0] != '-' && !a->model) {
      a->model = o;
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
  return 0;
}

/* Reads a whole file. Returns false with errno set. */
bool slurp(const char *path, std::vector<char> *out) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return false;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0)
    out->insert(out->end(), buf, buf + n);
  bool ok = !ferror(f);
  fclose(f);
  return ok && !out->empty();
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

void print_plan(const arenad::TflitePlanner &p, arenad_client_t *c) {
  const arenad::TflitePlanInfo &i = p.info();
  printf("plan: from %s", arenad::TflitePlanSourceName(i.source));
  if (p.note()[0])
    printf(" (arenad: %s)", p.note());
  else if (i.fallback_reason)
    printf(" (arenad: %s)", arenad_client_errmsg(c));
  printf(", %zu tensors (%zu placed, %zu left to TFLite), %zu pairs in place\n",
         i.n_tensors, i.n_placed, i.n_left, i.n_shared);
  printf("memory: TFLite alone %llu bytes; arenad arena %llu + TFLite's "
         "remainder %llu = %llu bytes (plan %llu, lower bound %llu); "
         "%zu temporaries of %llu bytes stay with TFLite\n",
         (unsigned long long)i.tflite_alone, (unsigned long long)i.arena_bytes,
         (unsigned long long)i.remainder, (unsigned long long)i.total(),
         (unsigned long long)i.plan_bytes, (unsigned long long)i.lower_bound,
         i.n_temporaries, (unsigned long long)i.temporary_bytes);
}

}  // namespace

int main(int argc, char **argv) {
  Args a;
  int rc = parse(argc, argv, &a);
  if (rc)
    return rc < 0 ? 0 : rc;
  std::vector<char> model;
  if (!slurp(a.model, &model)) {
    fprintf(stderr, "tflite_infer: %s: cannot read\n", a.model);
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
  arenad::TfliteOpResolver resolver;
  std::unique_ptr<tflite::Interpreter> interp;
  int status = 0;
  {
    arenad::TflitePlanner planner(c, model.data(), model.size(), resolver);
    planner.SetInPlace(a.in_place);
    printf("model: %s\n", a.model);
    rc = a.tflite ? planner.BuildTfliteOnly(&interp) : planner.Build(&interp);
    if (rc) {
      fprintf(stderr, "tflite_infer: %s: %s\n", a.model, planner.error());
      status = 65;
    } else {
      if (a.tflite)
        printf("plan: TFLite's own planner, arena %llu bytes\n",
               (unsigned long long)arenad::TfliteArenaBytes(*interp, nullptr));
      else
        print_plan(planner, c);
      std::vector<uint8_t> out;
      std::string err;
      if (!arenad::RunTflite(interp.get(), a.seed, (int)a.invokes, &out, &err)) {
        fprintf(stderr, "tflite_infer: %s: %s\n", a.model, err.c_str());
        status = 70;
      } else {
        print_outputs(interp.get(), a.values);
      }
    }
    interp.reset(); /* before the planner that owns its arena */
  }
  arenad_client_close(c);
  return status;
}
