/*
 * exact_int.h - internal interface between the files of the exact planner.
 * Included only by exact.c, exact_*.c and improve.c (the windowed
 * re-planning, which shares the helpers below); cross-file functions use the
 * exact__ prefix. The method is described in the DESIGN comment at the
 * top of exact.c.
 *
 *   exact.c         drivers, planner__exact_within() (improve.h)
 *   exact_build.c   preprocessing: struct ctx from a problem
 *   exact_order.c   static rank orders, twins, restart schedule
 *   exact_search.c  the depth-first search over one component
 *   exact_stream.c  the same search for large components, in linear memory
 *   exact_stream_setup.c  its memory and set-up (exact_stream_int.h)
 *   exact_sections.c  the sections of a set of lifetimes
 *
 * Ownership: planner__exact_within() keeps one struct ctx (zeroed first) for the
 * whole call. p and offsets are borrowed from the caller; every other
 * pointer in the ctx is an array the ctx owns, allocated by exact__build()
 * and freed by exact__free(), which is also safe after a failed or partial
 * build.
 */
#ifndef ARENA_EXACT_INT_H
#define ARENA_EXACT_INT_H

#include <stdint.h>

#include "planner_int.h"

#define NONE UINT32_MAX /* no tensor, no rank */
#define EXACT_ORDER_SLOTS 7 /* base orders, the dynamic one, the jittered */
#define EXACT_TT_MAX (1u << 16) /* dead-end table entries at most (40 bytes) */
/* Work units between exact_stream.c's polls of the stop callback and the
 * effort. */
#define EXACT_STREAM_POLL (1u << 16)

/* Results of a search and of the driver's steps (exact.c adds R_NOMEM). */
enum { R_FOUND, R_INFEAS, R_LIMIT, R_SPENT, R_CANCEL, R_GIVEUP };

struct pin {
  uint64_t off, top; /* byte range [off, top) of a pinned tensor */
};

struct lvl {
  uint64_t kpos;   /* key of the last candidate tried here: offset ... */
  int64_t krank;   /* ... and rank; -1 at the root (anything goes) */
  uint64_t t1;     /* min pos + size over unplaced, on entry */
  uint64_t x;      /* offset of the tensor placed from this level */
  uint64_t maxrem; /* the maxrem bound before that placement */
  uint32_t c;      /* local index of that tensor */
  uint32_t pmark;  /* pos trail length before it */
  uint32_t fmark;  /* floor trail length before it */
  uint64_t h1, h2; /* state fingerprint before that placement */
  uint64_t ex;     /* entry key: offset ... */
  int64_t er;      /* ... and rank (-1: none) */
  int gstart;      /* 1: first level of a group other than the first */
  uint32_t only;   /* NONE, or the highest rank a candidate may have */
  uint64_t onlyp;  /* ... and the only offset it may take */
};

/* A decomposition: at some level the unplaced tensors of the current
 * group fell apart into groups that share no point in time. Each group is
 * searched on its own from that level's state and key; when one group has
 * no completion the whole level fails (backjump). */
struct dec {
  uint32_t level;  /* level whose state was split */
  uint32_t rmark;  /* rank trail length before its groups were re-ranked */
  uint64_t x0;     /* its entry key: offset ... */
  int64_t r0;      /* ... and rank */
  uint32_t g0, ng; /* groups: (lo, hi) pairs at X->gr[g0 + 2k], k < ng */
  uint32_t gi;     /* group being searched */
  uint64_t h;      /* hash of the above except gi */
};

/* A sort key of a rank order (exact_order.c), descending, ties by i. */
struct rkey {
  uint64_t k1, k2, k3;
  uint32_t i;
};

/* A remembered dead end: the state with fingerprint (h1, h2) has no
 * completion when entered with a key (offset, rank) >= (kpos, krank). */
struct ttent {
  uint64_t h1, h2; /* fingerprint */
  uint64_t kpos;   /* entry key: offset ... */
  int64_t krank;   /* ... and tie key */
  uint32_t gen;    /* search call that wrote it; others are empty */
};

/* Everything one planner__exact_within() call works with. Owns every array it
 * points to except p and offsets; exact__build() allocates them and
 * exact__free() frees them. */
struct ctx {
  const struct planner__prob *p; /* borrowed */
  uint64_t *offsets; /* borrowed: graph order, always a valid plan */
  /* Free tensors sorted by (first, last, graph index), K of them. */
  uint32_t K;
  uint32_t *gi;                 /* graph index */
  uint64_t *size, *align;       /* bytes */
  uint32_t *slo, *shi;          /* section range, local to the component */
  uint32_t *adj_off, *adj;      /* overlap lists, local indexes */
  uint32_t *pin_off, *pinl;     /* pinned obstacles per tensor */
  /* Components: tensors [cb[c], cb[c+1]), sections [sb[c], sb[c+1]). */
  uint32_t nc;
  uint32_t *cb, *sb;
  uint64_t *rem0;               /* initial rem of every section */
  uint64_t *carena;             /* arena of each component's tensors */
  unsigned char *searchable;    /* 0: not searched (too large); 1: by
                                   exact_search.c; 2: by exact_stream.c */
  uint64_t *peak;               /* max rem0 over a tensor's sections */
  struct pin *pins;             /* pinned obstacles, sorted by offset */
  uint32_t npins;
  uint64_t pintop;              /* max top of pinned tensors */
  uint64_t g;                   /* granule, see DESIGN */
  /* Work arrays, sized for the largest searchable component. */
  uint64_t *pos, *floor, *rem, *ptr_v, *ftr, *out;
  uint32_t *ul, *upos, *ptr_i, *rank, *tmp;
  uint32_t *sl_off, *sl;        /* tensors live in each section (CSR) */
  uint64_t *rel;                /* release times, scratch for erd_ok() */
  struct lvl *lv;
  /* Control. */
  struct ttent *tt;             /* tt_size dead ends */
  uint32_t tt_size;             /* a power of two, see exact__build() */
  struct dec *dec;              /* decomposition stack */
  uint32_t *gr;                 /* group ranges (lo, hi) pairs */
  uint32_t *bys;                /* local tensors by first section */
  uint32_t *twin;               /* identical tensor of next lower rank */
  /* Re-ranking when a group splits (exact__rerank()). */
  unsigned order;               /* order of the current search, no flag */
  int dyn;                      /* 1: split groups are re-ranked */
  uint32_t *rtr_i, *rtr_v;      /* rank trail: tensor and its old rank */
  uint32_t rtn, rtcap;          /* trail length and room */
  struct rkey *rks;             /* sort scratch, one per tensor */
  uint64_t reranks;             /* splits re-ranked so far */
  uint64_t *rpk;                /* current peaks, scratch, one per tensor */
  uint64_t lo_k[EXACT_ORDER_SLOTS]; /* descent: per order slot, the
                                   highest target out of its reach (or the
                                   bound), a multiple of g; see exact.c */
  uint32_t gen;                 /* current search call, for tt */
  uint64_t nodes;               /* total search nodes */
  uint64_t work;                /* work units done, setup included */
  uint64_t work_limit;          /* the effort in work units, see search.c */
  int cancelled;
  struct exact_stream *stream;  /* exact_stream.c's state, or NULL */
};

/* A 64-bit mixer (the SplitMix64 finaliser): the state fingerprints of
 * exact_search.c, the deterministic jitter of exact_order.c and the
 * random stream of ruin and recreate (improve_lns.c). */
static inline uint64_t exact__mix64(uint64_t z)
{
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Work units of sorting n entries, or of n binary searches among about
 * as many: n (1 + floor(log2 n)). */
static inline uint64_t exact__sort_units(uint64_t n)
{
  uint64_t u = n;
  for (uint64_t k = n; k > 1; k >>= 1)
    u += n;
  return u;
}

/* The sections of n lifetimes (exact_sections.c): pt[2k] is the start of
 * lifetime k and pt[2k + 1] one past its end, above the start, all
 * nonnegative. Leaves the distinct points in pt[0 .. u), ascending, sets
 * slo[k] to the section lifetime k starts (the index of its start among
 * them) and shi[k] to its last one (the index of its end, less one), and
 * returns u; 0 when n is 0 or memory runs out. */
uint32_t exact__sections(uint64_t *pt, uint32_t n, uint32_t *slo,
                         uint32_t *shi);

/* Index of the first of the npt sorted points pt that is not below t:
 * the section that starts at t, when t is one of them. */
static inline uint32_t exact__sec_find(const int64_t *pt, uint32_t npt,
                                       int64_t t)
{
  uint32_t lo = 0, hi = npt;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (pt[mid] < t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* exact_build.c. Builds everything the search needs into X, which holds
 * only p, offsets and work_limit (the rest zeroed), counting the work in
 * X->work. Returns 0; R_SPENT when the effort ran out during the setup
 * or provably cannot pay for a plan below the incumbent (see cannot_pay()
 * there); R_CANCEL when the stop callback fired (checked between the
 * phases); or ARENA_ENOMEM. Call exact__free() in every case. */
int exact__build(struct ctx *X);

/* exact_build.c. Frees every array X owns (not p, not offsets). */
void exact__free(struct ctx *X);

/* Flag of an order number v: re-rank the groups of every split. */
#define EXACT_DYN 0x40000000u

/* exact_order.c. Restart round r: sets *v to the order to use and returns
 * the node limit of the round. */
uint64_t exact__round_plan(unsigned r, unsigned *v);

/* exact_order.c. The slot of order v (exact__round_plan()) among
 * EXACT_ORDER_SLOTS: each base order, the dynamic order, and one shared
 * by all jittered orders. */
unsigned exact__order_slot(unsigned v);

/* exact_order.c. Fills X->rank for component c with order v (from
 * exact__round_plan()), and X->twin; sets X->order and X->dyn and empties
 * the rank trail. Returns 0 or ARENA_ENOMEM. */
int exact__make_rank(struct ctx *X, uint32_t c, unsigned v);

/* exact_order.c. Ranks the n tensors list[0 .. n) (local to the
 * component whose first tensor is a) anew by X->order, with peak[k] in
 * place of the initial peak of list[k], pushing their old ranks on the
 * rank trail. Returns 1, or 0 without any change when the trail has no
 * room. */
int exact__rerank(struct ctx *X, uint32_t a, const uint32_t *list,
                  const uint64_t *peak, uint32_t n);

/* exact_order.c. Pops the rank trail down to mark, restoring ranks. */
void exact__rank_restore(struct ctx *X, uint32_t mark);

/* exact_search.c. Depth-first search for a placement of component c
 * within cap, with at most `limit` nodes; X->rank and X->twin must hold
 * the order (exact__make_rank()). Returns R_FOUND (the local offsets are
 * in X->out), R_INFEAS, R_LIMIT, R_SPENT or R_CANCEL. */
int exact__search(struct ctx *X, uint32_t c, uint64_t cap, uint64_t limit);

/* exact_search.c. Lowest offset >= y, aligned for free tensor k (global
 * index), that misses its pinned obstacles. */
uint64_t exact__fixpin(const struct ctx *X, uint32_t k, uint64_t y);

/* exact_stream.c. The search of exact__search() for a component marked
 * searchable == 2 (large), in memory linear in the component: same
 * arguments and results, and R_GIVEUP when its state cannot be
 * allocated. Every call takes at least enough nodes to place each tensor
 * once, beyond `limit`. */
int exact__stream_search(struct ctx *X, uint32_t c, uint64_t cap,
                         uint64_t limit);

/* exact_stream.c. Bytes X->stream holds (0 when none), for the tests
 * and docs/exact.md's memory figures. */
size_t exact__stream_bytes(const struct ctx *X);

/* exact_stream.c. Frees X->stream (safe when NULL). */
void exact__stream_free(struct ctx *X);

/* Polls the stop callback and the work budget (never a clock); the stop
 * callback is read only here. Returns R_SPENT, R_CANCEL or R_FOUND (keep
 * going). */
static inline int exact__poll_stop(struct ctx *X)
{
  const struct planner_options *o = X->p->o;
  if (o->stop && o->stop(o->stop_ctx)) {
    X->cancelled = 1;
    return R_CANCEL;
  }
  return X->work >= X->work_limit ? R_SPENT : R_FOUND;
}

#endif /* ARENA_EXACT_INT_H */
