/* sim/blockset.c: which output blocks have been written back, and when.
 *
 * Rule P5 needs, for each output, the set of block indices already written
 * back to HBM, to catch a later grid point that selects one again. Blocks are
 * keyed by their linear index; an open-addressing table keeps this O(1) per
 * write-back whatever the number of blocks.
 */
#include <stdlib.h>

#include "blockset.h"

static uint64_t hash(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return k;
}

static int grow(sim_blockset *s)
{
    size_t cap = s->cap ? 2 * s->cap : 64;
    sim_blockset n = {.keys = malloc(cap * sizeof *n.keys), .vals = malloc(cap * sizeof *n.vals), .cap = cap};
    if (!n.keys || !n.vals) {
        free(n.keys);
        free(n.vals);
        return -1;
    }
    for (size_t i = 0; i < cap; i++) n.keys[i] = -1;
    for (size_t i = 0; i < s->cap; i++)
        if (s->keys[i] >= 0) sim_blockset_put(&n, s->keys[i], s->vals[i]);
    free(s->keys);
    free(s->vals);
    *s = n;
    return 0;
}

int sim_blockset_put(sim_blockset *s, int64_t key, int64_t val)
{
    if (2 * (s->len + 1) > s->cap && grow(s)) return -1;
    size_t i = hash((uint64_t)key) & (s->cap - 1);
    while (s->keys[i] >= 0 && s->keys[i] != key) i = (i + 1) & (s->cap - 1);
    if (s->keys[i] < 0) s->len++;
    s->keys[i] = key;
    s->vals[i] = val;
    return 0;
}

int sim_blockset_get(const sim_blockset *s, int64_t key, int64_t *val)
{
    if (!s->cap) return 0;
    size_t i = hash((uint64_t)key) & (s->cap - 1);
    while (s->keys[i] >= 0) {
        if (s->keys[i] == key) {
            *val = s->vals[i];
            return 1;
        }
        i = (i + 1) & (s->cap - 1);
    }
    return 0;
}

void sim_blockset_free(sim_blockset *s)
{
    free(s->keys);
    free(s->vals);
    *s = (sim_blockset){0};
}
