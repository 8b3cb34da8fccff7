/*
 * overlap.c - the search for two tensors that overlap in both time and
 * memory, planner__find_overlap() (planner_int.h): the heart of the plan
 * verifier (verify.c), and what validation uses to find colliding pins
 * (problem.c). Part of planner/core/ (libc only); calls no other file.
 *
 * DESIGN: sweep the lifetimes in time order, keeping the live tensors in
 * an ordered set by offset. Live tensors never overlap each other (or the
 * sweep would have stopped), so a new tensor overlaps some live one iff it
 * overlaps its nearest live neighbour below or above it in offset order.
 * Tensors whose lifetime has ended leave the set lazily: only when one is
 * met as a neighbour, where it is removed and the search goes on past it.
 * So the nearest live neighbours, and the first colliding pair, are those
 * of a set that holds exactly the live tensors, without a sort by end.
 *
 * The two orders (by first, by (offset, row)) are radix sorts; planner_run()
 * hands in the order by first its time index already has (row_of).
 * The ordered set holds positions in the (offset, row) order, so it is a
 * bit set, kept as a tree of 64-bit words (a word per 64 positions, then
 * a word per 64 words, ...): insert, remove and the neighbour queries
 * cost one word per level, four levels for a million tensors, in n/8
 * contiguous bytes. What the sweep reads of a member (its bytes and last
 * operator) is copied into an array by position, so that a neighbour's
 * is next to the tensor's own in memory instead of in a graph row
 * anywhere. O(n) sorts plus O(n log_64 n) sweep.
 *
 * Most graphs have few tensors live at once, and then neither the sort
 * by offset nor the tree is needed: the sweep keeps the live tensors
 * themselves in a small array, in no order, and tests each new tensor
 * against all of them, which in the cache costs less than finding two
 * neighbours anywhere in the tree. By the argument above that finds a
 * collision at the same tensor as the test against the neighbours, and
 * the pair is then named as the neighbours would name it. Once more than
 * SMALL_LIVE tensors would be live at once, the check starts over with
 * the sort and the tree.
 */
#include "planner_int.h"
#include "planner_sort.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define BT_LEVELS 6 /* 64^6 > 2^32 positions */

/* How many tensors ahead the sweep and the copy into at_pos prefetch
 * their scattered reads (only caches: never changes a result). */
#define VERIFY_AHEAD 16

/* A set of positions 0 .. n-1 as a tree of bit words. */
struct bittree {
  uint64_t *w[BT_LEVELS]; /* level 0: one bit per position */
  unsigned levels;        /* levels in use, >= 1 */
};

static void bt_cleanup(struct bittree *b)
{
  for (unsigned l = 0; l < BT_LEVELS; l++)
    free(b->w[l]);
  memset(b, 0, sizeof *b);
}

static int bt_init(struct bittree *b, size_t n)
{
  memset(b, 0, sizeof *b);
  size_t words = n;
  do {
    words = (words + 63) / 64;
    b->w[b->levels] = calloc(words, sizeof(uint64_t));
    if (!b->w[b->levels++]) {
      bt_cleanup(b);
      return -1;
    }
  } while (words > 1);
  return 0;
}

/* A word's bit in the level above is set iff the word is not 0, so the
 * walk up ends at the first word that already had a member. */
static void bt_insert(struct bittree *b, size_t x)
{
  for (unsigned l = 0; l < b->levels; l++, x >>= 6) {
    uint64_t had = b->w[l][x >> 6];
    b->w[l][x >> 6] = had | (uint64_t)1 << (x & 63);
    if (had)
      break;
  }
}

static void bt_remove(struct bittree *b, size_t x)
{
  for (unsigned l = 0; l < b->levels; l++, x >>= 6)
    if ((b->w[l][x >> 6] &= ~((uint64_t)1 << (x & 63))) != 0)
      break;
}

/* The largest member below x, or SIZE_MAX. */
static size_t bt_prev(const struct bittree *b, size_t x)
{
  for (unsigned l = 0; l < b->levels; l++, x >>= 6) {
    uint64_t below = b->w[l][x >> 6] & (((uint64_t)1 << (x & 63)) - 1);
    if (below) {
      size_t y = (x & ~(size_t)63) | (size_t)(63 - __builtin_clzll(below));
      while (l-- > 0)
        y = y << 6 | (size_t)(63 - __builtin_clzll(b->w[l][y]));
      return y;
    }
  }
  return SIZE_MAX;
}

/* The smallest member above x, or SIZE_MAX. */
static size_t bt_next(const struct bittree *b, size_t x)
{
  for (unsigned l = 0; l < b->levels; l++, x >>= 6) {
    uint64_t above = (x & 63) == 63 ? 0
                                    : b->w[l][x >> 6] &
                                          ~(((uint64_t)2 << (x & 63)) - 1);
    if (above) {
      size_t y = (x & ~(size_t)63) | (size_t)__builtin_ctzll(above);
      while (l-- > 0)
        y = y << 6 | (size_t)__builtin_ctzll(b->w[l][y]);
      return y;
    }
  }
  return SIZE_MAX;
}

/* What the sweep reads of a member of its set, by the member's position
 * in the (offset, row) order: neighbours in offset order are next to
 * each other in memory. */
struct at_pos {
  uint64_t off, end; /* its bytes */
  int64_t last;      /* its last operator */
};

/* Key of a row for one of the sweep's orders. */
enum sweep_key { BY_FIRST, BY_OFFSET };

/* Copies rows[0..m) into out sorted stably by the chosen key; key is
 * scratch of m entries. */
static int sort_by(const struct planner_tensor *t, const uint64_t *offsets,
                   enum sweep_key which, const uint32_t *rows, size_t m,
                   uint32_t *out, uint64_t *key, struct planner__radix *rs)
{
  for (size_t k = 0; k < m; k++) {
    uint32_t i = rows[k];
    out[k] = i;
    key[k] = which == BY_FIRST ? (uint64_t)t[i].first : offsets[i];
  }
  return planner__radix_sort(key, out, m, rs);
}

/* The nearest live member of the set below (dir < 0) or above x, as a
 * position, or SIZE_MAX; members whose lifetime ended before now are
 * removed on the way (see DESIGN). */
static size_t live_neighbour(const struct at_pos *ap, struct bittree *set,
                             size_t x, int dir, int64_t now)
{
  for (;;) {
    size_t y = dir < 0 ? bt_prev(set, x) : bt_next(set, x);
    if (y == SIZE_MAX || ap[y].last >= now)
      return y;
    bt_remove(set, y);
  }
}

/* The sweep over byf; the set holds positions in byo (posof maps a row
 * to its position, ap holds what the sweep reads of each). See DESIGN. */
static int sweep(const struct planner_tensor *t, size_t m,
                 const uint32_t *byf, const uint32_t *byo,
                 const uint32_t *posof, const struct at_pos *ap,
                 struct bittree *set, uint32_t *a, uint32_t *b)
{
  for (size_t k = 0; k < m; k++) {
    if (k + 2 * VERIFY_AHEAD < m)
      __builtin_prefetch(&posof[byf[k + 2 * VERIFY_AHEAD]]);
    if (k + VERIFY_AHEAD < m) { /* its member's bytes and set word */
      size_t y = posof[byf[k + VERIFY_AHEAD]];
      __builtin_prefetch(&ap[y]);
      __builtin_prefetch(&set->w[0][y >> 6]);
    }
    uint32_t i = byf[k];
    size_t x = posof[i];
    bt_insert(set, x);
    size_t pp = live_neighbour(ap, set, x, -1, t[i].first);
    size_t qq = live_neighbour(ap, set, x, 1, t[i].first);
    if (pp != SIZE_MAX && ap[pp].end > ap[x].off) {
      *a = byo[pp];
      *b = i;
      return 1;
    }
    if (qq != SIZE_MAX && ap[x].end > ap[qq].off) {
      *a = i;
      *b = byo[qq];
      return 1;
    }
  }
  return 0;
}

static int ascending(const uint32_t *v, size_t m)
{
  for (size_t k = 1; k < m; k++)
    if (v[k - 1] >= v[k])
      return 0;
  return 1;
}

/* The check's arrays, carved from one block up to CHECK_ONE_BLOCK bytes:
 * one allocation of the whole at once (a plan's largest), so that an
 * allocator which adapts its thresholds to the largest block freed
 * (glibc's, up to 32 MiB) keeps the room of a run for the next one
 * instead of giving it back to the system and faulting it in again.
 * Beyond that size each array is a block of its own, which such an
 * allocator can still keep in its heap. */
#define CHECK_ONE_BLOCK ((size_t)32 << 20)
#define CHECK_PIECES 5

struct check_mem {
  char *block;               /* the one block, or NULL */
  size_t used;               /* of it */
  void *piece[CHECK_PIECES]; /* else the arrays' own blocks */
  size_t n_piece;
};

static size_t round8(size_t bytes)
{
  return (bytes + 7) & ~(size_t)7;
}

/* The next array of bytes (8-byte aligned), or NULL on OOM. */
static void *check_take(struct check_mem *c, size_t bytes)
{
  if (c->block) {
    void *p = c->block + c->used;
    c->used += round8(bytes);
    return p;
  }
  void *p = malloc(bytes);
  if (p)
    c->piece[c->n_piece++] = p;
  return p;
}

static void check_mem_init(struct check_mem *c, const size_t *bytes,
                           size_t n)
{
  size_t total = 0;
  for (size_t k = 0; k < n; k++)
    total += round8(bytes[k]);
  memset(c, 0, sizeof *c);
  c->block = total <= CHECK_ONE_BLOCK ? malloc(total) : NULL;
}

static void check_mem_cleanup(struct check_mem *c)
{
  free(c->block);
  for (size_t k = 0; k < c->n_piece; k++)
    free(c->piece[k]);
}

/* ---- few tensors live at once ------------------------------------------ */

/* Live tensors the small sweep holds at most. */
#define SMALL_LIVE 64
#define SMALL_FULL 2 /* sweep_small(): more were live, nothing decided */

/* A live tensor of the small sweep. */
struct live_one {
  uint64_t off, end; /* its bytes */
  int64_t last;      /* its last operator */
  uint32_t row;
};

/* The pair the sweep of DESIGN reports for row i at [off, end) when it
 * overlaps some member of live[0..n) (all live): its nearest neighbour
 * below in (offset, row) order when they overlap, else the one above. */
static void name_pair(const struct live_one *live, size_t n, uint64_t off,
                      uint32_t i, uint32_t *a, uint32_t *b)
{
  const struct live_one *below = NULL, *above = NULL;
  for (size_t q = 0; q < n; q++) {
    const struct live_one *v = &live[q];
    if (v->off < off || (v->off == off && v->row < i)) {
      if (!below || v->off > below->off ||
          (v->off == below->off && v->row > below->row))
        below = v;
    } else if (!above || v->off < above->off ||
               (v->off == above->off && v->row < above->row)) {
      above = v;
    }
  }
  if (below && below->end > off) {
    *a = below->row;
    *b = i;
  } else {
    *a = i;
    *b = above ? above->row : i; /* above is there: i overlaps one */
  }
}

/* The sweep of DESIGN over by_first with the live tensors in a small
 * array: each new tensor is tested against every one of them (those
 * whose lifetime ended leave in the same pass, the last member taking
 * their place), which finds a collision
 * exactly when the test against the nearest neighbours would; then the
 * pair is named as the sweep names it. Returns 1 with the pair, 0, or
 * SMALL_FULL when more than SMALL_LIVE tensors are live at once. */
static int sweep_small(const struct planner_tensor *t,
                       const uint64_t *offsets, const uint32_t *by_first,
                       size_t m, uint32_t *a, uint32_t *b)
{
  struct live_one live[SMALL_LIVE];
  size_t n = 0;
  for (size_t k = 0; k < m; k++) {
    uint32_t i = by_first[k];
    if (k + VERIFY_AHEAD < m) { /* rows by first are anywhere in memory */
      __builtin_prefetch(&t[by_first[k + VERIFY_AHEAD]]);
      __builtin_prefetch(&offsets[by_first[k + VERIFY_AHEAD]]);
    }
    int64_t now = t[i].first;
    uint64_t off = offsets[i], end = off + t[i].size;
    unsigned hit = 0;
    for (size_t q = n; q-- > 0;) {
      if (live[q].last < now) { /* ended: the last one (seen) moves in */
        live[q] = live[--n];
        continue;
      }
      hit |= (live[q].off < end) & (off < live[q].end); /* rare: no branch */
    }
    if (hit) {
      name_pair(live, n, off, i, a, b);
      return 1;
    }
    if (n == SMALL_LIVE)
      return SMALL_FULL;
    live[n++] = (struct live_one){off, end, t[i].last, i};
  }
  return 0;
}

/* Whether the bytes of the rows subset[0..m) ascend in that order without
 * overlapping (as a bump allocator's do): then no two overlap at all. */
static int apart_in_order(const struct planner_tensor *t,
                          const uint64_t *offsets, const uint32_t *subset,
                          size_t m)
{
  uint64_t top = 0;
  for (size_t k = 0; k < m; k++) {
    uint32_t i = subset[k];
    if (offsets[i] < top)
      return 0;
    top = offsets[i] + t[i].size;
  }
  return 1;
}

/* ---- any number live at once ---------------------------------------------- */

/* The check with the sort by offset and the tree (see DESIGN), in the
 * order by_first. */
static int find_overlap_wide(const struct planner_tensor *t,
                             const uint64_t *offsets, const uint32_t *subset,
                             const uint32_t *by_first, size_t m, uint32_t *a,
                             uint32_t *b)
{
  size_t n = 0, mm = m ? m : 1;
  for (size_t k = 0; k < m; k++)
    if (subset[k] + (size_t)1 > n)
      n = subset[k] + (size_t)1;
  struct bittree live;
  size_t radix = mm * (sizeof(uint64_t) + sizeof(uint32_t));
  const size_t bytes[CHECK_PIECES] = {
      mm * sizeof(struct at_pos), mm * sizeof(uint64_t), radix,
      mm * sizeof(uint32_t), (n ? n : 1) * sizeof(uint32_t)};
  struct check_mem c;
  check_mem_init(&c, bytes, CHECK_PIECES);
  struct at_pos *ap = check_take(&c, bytes[0]);
  uint64_t *key = check_take(&c, bytes[1]);
  void *scratch = check_take(&c, bytes[2]);
  uint32_t *byo = check_take(&c, bytes[3]);
  uint32_t *posof = check_take(&c, bytes[4]);
  if (!ap || !key || !scratch || !byo || !posof) {
    check_mem_cleanup(&c);
    return ARENA_ENOMEM;
  }
  struct planner__radix rs = planner__radix_borrow(scratch, radix);
  int rc = ARENA_ENOMEM;
  if (bt_init(&live, mm))
    goto out;
  /* (offset, row): rows ascending first (in byo, which the sort by
   * offset copies onto itself), then stably by offset */
  const uint32_t *rows = subset;
  if (!ascending(subset, m)) {
    for (size_t k = 0; k < m; k++)
      key[k] = byo[k] = subset[k];
    if (planner__radix_sort(key, byo, m, &rs))
      goto out;
    rows = byo;
  }
  if (sort_by(t, offsets, BY_OFFSET, rows, m, byo, key, &rs))
    goto out;
  /* positions first (scattered writes of 4 bytes), then what the sweep
   * reads of each row, the rows read in their order and written to
   * their positions: writes wait for no one, scattered reads would */
  for (size_t k = 0; k < m; k++)
    posof[byo[k]] = (uint32_t)k;
  for (size_t k = 0; k < m; k++) {
    uint32_t i = subset[k];
    ap[posof[i]] =
        (struct at_pos){offsets[i], offsets[i] + t[i].size, t[i].last};
  }
  rc = sweep(t, m, by_first, byo, posof, ap, &live, a, b);
out:
  bt_cleanup(&live);
  planner__radix_cleanup(&rs);
  check_mem_cleanup(&c);
  return rc;
}

int planner__find_overlap(const struct planner_tensor *t,
                          const uint64_t *offsets, const uint32_t *subset,
                          const uint32_t *by_first, size_t m, uint32_t *a,
                          uint32_t *b)
{
  size_t mm = m ? m : 1, radix = mm * (sizeof(uint64_t) + sizeof(uint32_t));
  const size_t bytes[3] = {mm * sizeof(uint32_t), mm * sizeof(uint64_t),
                           radix};
  struct check_mem c;
  memset(&c, 0, sizeof c);
  if (apart_in_order(t, offsets, subset, m))
    return 0;
  if (!by_first) { /* sorted here, in one block (see check_mem) */
    check_mem_init(&c, bytes, 3);
    uint32_t *byf = check_take(&c, bytes[0]);
    uint64_t *key = check_take(&c, bytes[1]);
    void *scratch = check_take(&c, bytes[2]);
    struct planner__radix rs = planner__radix_borrow(scratch, radix);
    int bad = !byf || !key || !scratch ||
              sort_by(t, offsets, BY_FIRST, subset, m, byf, key, &rs);
    planner__radix_cleanup(&rs);
    if (bad) {
      check_mem_cleanup(&c);
      return ARENA_ENOMEM;
    }
    by_first = byf;
  }
  int rc = sweep_small(t, offsets, by_first, m, a, b);
  if (rc == SMALL_FULL)
    rc = find_overlap_wide(t, offsets, subset, by_first, m, a, b);
  check_mem_cleanup(&c);
  return rc;
}
