/* sim/call/blockset.h: a map from an output block's index (its rank entries) to
 * a grid step, for output revisits (rule P5) and races (V4). Internal.
 *
 * Keys are the block indices themselves, not a linear number: under element
 * padding (B5) a dimension has up to 2^41 positions, and a product of such
 * extents overflows 64 bits, so distinct blocks could share a number. */
#ifndef TILESIM_BLOCKSET_H
#define TILESIM_BLOCKSET_H

#include <stddef.h>
#include <stdint.h>

typedef struct sim_blockset {
    int64_t *keys;  /* cap x rank block indices */
    int64_t *vals;
    uint8_t *used;
    int rank;       /* fixed by the first put */
    size_t cap, len;
} sim_blockset;

/* 0, or -1 when out of memory. rank: 0..PL_MAX_RANK, the same for every put. */
int sim_blockset_put(sim_blockset *s, const int64_t *bidx, int rank, int64_t val);
int sim_blockset_get(const sim_blockset *s, const int64_t *bidx, int rank, int64_t *val); /* 1 if found */
void sim_blockset_free(sim_blockset *s);

#endif
