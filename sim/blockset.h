/* sim/blockset.h: a map from a block's linear index (>= 0) to a step, used
 * to detect output revisits (rule P5). Internal. */
#ifndef TILESIM_BLOCKSET_H
#define TILESIM_BLOCKSET_H

#include <stddef.h>
#include <stdint.h>

typedef struct sim_blockset {
    int64_t *keys; /* -1: empty slot */
    int64_t *vals;
    size_t cap, len;
} sim_blockset;

int sim_blockset_put(sim_blockset *s, int64_t key, int64_t val); /* 0, or -1 when out of memory */
int sim_blockset_get(const sim_blockset *s, int64_t key, int64_t *val); /* 1 if found */
void sim_blockset_free(sim_blockset *s);

#endif
