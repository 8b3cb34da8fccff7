/*
 * memory.h - how arenad hands the memory of large requests back to the
 * system: the C library allocator's thresholds, fixed at start, and a
 * trim after each large plan job.
 *
 * WHY
 *  glibc's malloc starts by serving a block of 128 KiB or more with its
 *  own mmap, returned to the system when it is freed. But each time such
 *  a block is freed it raises that threshold to the block's size (up to
 *  32 MiB) and the threshold for giving back the free top of a heap to
 *  twice that. After one large request the arrays of every later one
 *  stay in the heaps, and freed heap memory stays resident: a graph of
 *  10^6 tensors left an idle daemon at 135 MiB. Fixed thresholds keep
 *  glibc's starting behaviour for the daemon's whole life, so what a job
 *  frees does not depend on the jobs before it.
 *
 *  Small requests are not affected: their blocks are below the
 *  thresholds, served and reused from the heaps as before.
 *
 * THREADS
 *  daemon_memory_setup() once, before any worker thread runs;
 *  daemon_memory_release() from any thread (the plan jobs call it on the
 *  loop thread). Neither touches any state of arenad's own, and neither
 *  calls another file of daemon/.
 *
 *  With a C library other than glibc both do nothing: memory then comes
 *  back as that allocator decides.
 */
#ifndef ARENA_DAEMON_MEMORY_H
#define ARENA_DAEMON_MEMORY_H

#include <stddef.h>

/* Blocks of at least this many bytes are their own mapping, released to
 * the system when freed (glibc's own starting value, kept fixed). */
#define DAEMON_MEMORY_MMAP_BYTES (128u << 10)
/* A heap whose free top reaches this many bytes gives it back when a
 * block is freed (glibc's own starting value, kept fixed). */
#define DAEMON_MEMORY_TRIM_BYTES (128u << 10)
/* A plan job over a graph of at least this many tensors is large: when it
 * ends, the free memory inside every heap goes back to the system. Its
 * per-tensor arrays are then 128 KiB or more each. */
#define DAEMON_MEMORY_LARGE_TENSORS 16384u

/* Fixes the allocator's thresholds at the values above. Returns 0, or
 * ARENA_EINTERNAL when the C library refused one (the allocator then
 * keeps its own policy; the daemon still works). */
int daemon_memory_setup(void);

/* Whether a plan job over n_tensors tensors is large (see above). */
int daemon_memory_large(size_t n_tensors);

/* Gives the free memory inside every heap back to the system (glibc's
 * malloc_trim). Costs a walk of the heaps' free lists (about 0.1 ms
 * measured after jobs of 2 * 10^4 to 10^6 tensors); meant for the end of
 * a large job. */
void daemon_memory_release(void);

#endif
