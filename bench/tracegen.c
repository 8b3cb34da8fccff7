/*
 * tracegen.c - deterministic generator of large, compiler-like lifetime
 * traces (see tracegen.h for the two shapes).
 *
 * Everything derives from one SplitMix64 stream seeded by the caller, so a
 * (shape, n, seed) triple names one trace on every machine. The SOMAS
 * shape draws one layer template (forward and backward) per trace and
 * repeats it, as a transformer repeats identical layers; the IOPDDL shape
 * draws a palette of dimensions per trace and builds every size from it.
 */
#include "tracegen.h"

#include <stdlib.h>

/* The tensor array being built; lifetimes ending at TO_END are patched to
 * the last operator once it is known. */
struct gen {
  struct planner_tensor *t; /* n entries used, cap allocated */
  size_t n, cap;
  uint64_t s; /* SplitMix64 state */
};

#define TO_END (-1)

uint64_t tracegen_rand(uint64_t *s)
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t tracegen_rand_in(uint64_t *s, uint64_t lo, uint64_t hi)
{
  return lo + tracegen_rand(s) % (hi - lo + 1);
}


/* 1 with probability pct percent. */
static int chance(uint64_t *s, unsigned pct)
{
  return tracegen_rand(s) % 100 < pct;
}

static int push(struct gen *g, uint64_t size, int64_t first, int64_t last)
{
  if (g->n == g->cap) {
    size_t cap = g->cap ? 2 * g->cap : 1024;
    struct planner_tensor *t = realloc(g->t, cap * sizeof *t);
    if (!t)
      return -1;
    g->t = t;
    g->cap = cap;
  }
  struct planner_tensor *x = &g->t[g->n];
  x->id = (uint32_t)g->n;
  x->size = size;
  x->first = first;
  x->last = last;
  x->align = 0;
  x->pinned = PLANNER_NOT_PINNED;
  x->alias = 0;
  x->has_alias = 0;
  g->n++;
  return 0;
}

/* Sets every TO_END lifetime to end at the last operator, and clamps the
 * others to it. */
static void finish(struct gen *g)
{
  int64_t end = 0;
  for (size_t i = 0; i < g->n; i++) {
    if (g->t[i].first > end)
      end = g->t[i].first;
    if (g->t[i].last > end)
      end = g->t[i].last;
  }
  for (size_t i = 0; i < g->n; i++)
    if (g->t[i].last == TO_END || g->t[i].last > end)
      g->t[i].last = end;
}

/* ---- SOMAS: a transformer training step ---------------------------------- */

/* What happens to a tensor of the layer template. */
enum kind {
  K_SHORT,  /* dies within a few operators */
  K_MEDIUM, /* dies after tens to hundreds of operators */
  K_SAVED,  /* forward: dies at the mirror operator of the backward pass */
  K_KEEP,   /* lives to the end of the step (weights, gradients) */
  K_BWDEND, /* backward: lives to the end of the backward pass */
};

struct slot {
  uint64_t size; /* bytes */
  enum kind kind;
  int64_t life;  /* operators after the first, for K_SHORT and K_MEDIUM */
};

/* Lifetime of a short-lived activation, in operators after its first. */
static int64_t short_life(uint64_t *s)
{
  uint64_t u = tracegen_rand(s) % 100;
  if (u < 70)
    return (int64_t)tracegen_rand_in(s, 1, 4);
  if (u < 95)
    return (int64_t)tracegen_rand_in(s, 5, 10);
  return (int64_t)tracegen_rand_in(s, 11, 40);
}

/* Sizes of one model: products of batch, sequence, hidden and head
 * dimensions at two bytes an element, and a few small ones. */
static void somas_palette(uint64_t *s, uint64_t pal[10])
{
  static const uint64_t hid[] = {1024, 1536, 2048, 2560, 4096};
  uint64_t b = 1ull << tracegen_rand_in(s, 0, 3);
  uint64_t q = 512ull << tracegen_rand_in(s, 0, 2);
  uint64_t h = hid[tracegen_rand_in(s, 0, 4)], heads = h / 128;
  uint64_t act = b * q * h * 2;
  pal[0] = act;                    /* hidden states */
  pal[1] = 2 * act;                /* fp32 hidden states */
  pal[2] = 4 * act;                /* feed-forward */
  pal[3] = b * heads * q * q * 2;  /* attention scores */
  pal[4] = act / 2;                /* a split */
  pal[5] = b * q * 8;              /* per-token statistics */
  pal[6] = h * 2;                  /* a bias */
  pal[7] = 4 * h * 2;              /* a wide bias */
  pal[8] = 4;                      /* a scalar */
  pal[9] = 1ull << tracegen_rand_in(s, 1, 5); /* a flag or a shape */
}

static uint64_t somas_size(uint64_t *s, const uint64_t pal[10])
{
  static const unsigned char w[10] = {30, 10, 12, 8, 8, 6, 9, 5, 8, 4};
  uint64_t u = tracegen_rand(s) % 100, acc = 0;
  for (int k = 0; k < 10; k++) {
    acc += w[k];
    if (u < acc)
      return pal[k];
  }
  return pal[0];
}

/* Draws k slots of a layer template: kinds[i] with the percentage
 * between cut[i - 1] and cut[i] (cut[3] = 100). */
static void draw_slots(uint64_t *s, const uint64_t pal[10], struct slot *sl,
                       size_t k, const unsigned char cut[3],
                       const enum kind kinds[4])
{
  for (size_t p = 0; p < k; p++) {
    uint64_t u = tracegen_rand(s) % 100;
    sl[p].size = somas_size(s, pal);
    sl[p].kind = u < cut[0] ? kinds[0] : u < cut[1] ? kinds[1]
               : u < cut[2] ? kinds[2] : kinds[3];
    sl[p].life = sl[p].kind == K_MEDIUM ? (int64_t)tracegen_rand_in(s, 20, 200)
                                        : short_life(s);
  }
}

/* The forward slots: 62% short, 10% medium, 25% saved for the backward
 * pass, 3% kept; the backward ones: 72% short, 12% medium, 8% kept
 * (gradients), 8% to the end of the backward pass. */
static void somas_template(uint64_t *s, const uint64_t pal[10],
                           struct slot *fw, size_t kf, struct slot *bw,
                           size_t kb)
{
  static const unsigned char fcut[3] = {62, 72, 97}, bcut[3] = {72, 84, 92};
  static const enum kind fk[4] = {K_SHORT, K_MEDIUM, K_SAVED, K_KEEP};
  static const enum kind bk[4] = {K_SHORT, K_MEDIUM, K_KEEP, K_BWDEND};
  draw_slots(s, pal, fw, kf, fcut, fk);
  draw_slots(s, pal, bw, kb, bcut, bk);
}

static int somas(struct gen *g, size_t n)
{
  uint64_t *s = &g->s, pal[10];
  somas_palette(s, pal);
  size_t kf = (size_t)tracegen_rand_in(s, 100, 160), kb = kf * 3 / 2;
  struct slot *fw = malloc((kf + kb) * sizeof *fw), *bw = fw + kf;
  if (!fw)
    return -1;
  somas_template(s, pal, fw, kf, bw, kb);
  size_t head = 24, per = kf + kb;
  size_t layers = n > head + per ? (n - head) * 19 / 20 / per : 1;
  if (layers == 0)
    layers = 1;
  size_t tail = n > head + layers * per ? n - head - layers * per : 8;
  int64_t op = 0, fend = (int64_t)(head + layers * kf);
  int64_t bend = fend + (int64_t)(layers * kb);
  int rc = 0;
  /* Weights and embeddings live all the step; then the embedding
   * lookup's short temporaries. */
  for (size_t k = 0; k < 4 && !rc; k++)
    rc = push(g, k < 2 ? pal[tracegen_rand_in(s, 0, 2)] * 4 : pal[6], 0,
              TO_END);
  for (size_t k = 4; k < head && !rc; k++, op++)
    rc = push(g, somas_size(s, pal), op, op + short_life(s));
  for (size_t l = 0; l < layers && !rc; l++) {
    /* The backward pass runs the layers in reverse, so forward layer l
     * comes back at bstart, and its operator p near the mirror point. */
    int64_t bstart = fend + (int64_t)((layers - 1 - l) * kb);
    for (size_t p = 0; p < kf && !rc; p++, op++) {
      const struct slot *x = &fw[p];
      int64_t last = op + x->life;
      if (x->kind == K_SAVED)
        last = bstart + (int64_t)((kf - 1 - p) * kb / kf) +
               (int64_t)tracegen_rand_in(s, 0, 3);
      else if (x->kind == K_KEEP)
        last = TO_END;
      rc = push(g, x->size, op, last);
    }
  }
  for (size_t l = 0; l < layers && !rc; l++) {
    for (size_t p = 0; p < kb && !rc; p++, op++) {
      const struct slot *x = &bw[p];
      int64_t last = op + x->life;
      if (x->kind == K_KEEP)
        last = TO_END;
      else if (x->kind == K_BWDEND)
        last = bend + (int64_t)tracegen_rand_in(s, 0, (uint64_t)tail / 2);
      rc = push(g, x->size, op, last);
    }
  }
  /* The optimiser: short updates of every weight. */
  for (size_t k = 0; k < tail && !rc; k++, op++)
    rc = push(g, chance(s, 50) ? pal[6] : pal[tracegen_rand_in(s, 0, 4)], op,
              op + (int64_t)tracegen_rand_in(s, 1, 3));
  free(fw);
  return rc;
}

/* ---- IOPDDL: an XLA program -------------------------------------------- */

/* A tensor size from the program's dimension palette: a product of one to
 * four dimensions at one, two or four bytes an element, below 1.2 GB;
 * three in four get the benchmark's extra byte. */
static uint64_t iopddl_size(uint64_t *s, const uint64_t dims[6])
{
  uint64_t v = 1ull << tracegen_rand_in(s, 0, 2);
  unsigned rank = (unsigned)tracegen_rand_in(s, 1, 4);
  for (unsigned k = 0; k < rank; k++) {
    uint64_t d = dims[tracegen_rand_in(s, 0, 5)];
    if (v * d > 1200000000ull)
      break;
    v *= d;
  }
  return chance(s, 75) ? v + 1 : v;
}

/* Operators after its first that an operator's output stays live. */
static int64_t iopddl_life(uint64_t *s, int64_t ops)
{
  uint64_t u = tracegen_rand(s) % 100;
  if (u < 65)
    return (int64_t)tracegen_rand_in(s, 1, 6);
  if (u < 85)
    return (int64_t)tracegen_rand_in(s, 7, 60);
  if (u < 95)
    return (int64_t)tracegen_rand_in(s, 61, 400);
  uint64_t hi = (uint64_t)(ops / 2 > 402 ? ops / 2 : 402);
  return (int64_t)tracegen_rand_in(s, 401, hi);
}

static int iopddl(struct gen *g, size_t n)
{
  static const uint64_t all[] = {2,   3,   4,   8,    16,   32,   64,
                                 96,  128, 256, 384,  512,  768,  1024,
                                 1536, 2048, 3072, 4096};
  uint64_t *s = &g->s, dims[6];
  for (int k = 0; k < 6; k++)
    dims[k] = all[tracegen_rand_in(s, 0, sizeof all / sizeof *all - 1)];
  size_t params = n / 20, tiny = n / 50, ops = n - params - tiny;
  int rc = 0;
  /* The tiny burst: shape and flag tensors of the first operators. */
  for (size_t k = 0; k < tiny && !rc; k++)
    rc = push(g, chance(s, 90) ? 5 : 17, 0, 1);
  /* Parameters: live from the start to a last use anywhere after the
   * first eighth of the program. */
  for (size_t k = 0; k < params && !rc; k++)
    rc = push(g, iopddl_size(s, dims), 0,
              (int64_t)tracegen_rand_in(s, ops / 8, ops));
  for (size_t k = 0; k < ops && !rc; k++) {
    int64_t op = (int64_t)k + 1;
    rc = push(g, iopddl_size(s, dims), op, op + iopddl_life(s, (int64_t)ops));
  }
  return rc;
}

struct planner_tensor *tracegen_make(enum tracegen_shape shape, size_t n,
                                     uint64_t seed, size_t *n_out)
{
  struct gen g = {NULL, 0, 0, seed ^ ((uint64_t)shape << 56) ^ n};
  *n_out = 0;
  if (n < 100 || n > PLANNER_MAX_TENSORS)
    return NULL;
  int rc;
  if (shape == TRACEGEN_SOMAS)
    rc = somas(&g, n);
  else if (shape == TRACEGEN_IOPDDL)
    rc = iopddl(&g, n);
  else
    rc = -1;
  if (rc) {
    free(g.t);
    return NULL;
  }
  finish(&g);
  *n_out = g.n;
  return g.t;
}

const char *tracegen_shape_name(enum tracegen_shape shape)
{
  switch (shape) {
  case TRACEGEN_SOMAS:
    return "somas";
  case TRACEGEN_IOPDDL:
    return "iopddl";
  }
  return "?";
}
