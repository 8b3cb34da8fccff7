/*
 * digest_int.h - what digest.c shares with the tests: its block function,
 * so that check_digest can compare the portable code with the
 * processor's SHA instructions. Not for other files of the planner.
 */
#ifndef ARENA_DIGEST_INT_H
#define ARENA_DIGEST_INT_H

#include <stddef.h>
#include <stdint.h>

/* Compresses n 64-byte blocks (borrowed) into the SHA-256 chaining value
 * h, with the processor's SHA instructions when accel is nonzero and the
 * processor and the build have them, else with the portable code.
 * Returns 1 when the SHA instructions ran, 0 otherwise; the result in h
 * is the same either way. Cannot fail. */
int planner__sha256_blocks(uint32_t h[8], const uint8_t *blocks, size_t n,
                           int accel);

#endif /* ARENA_DIGEST_INT_H */
