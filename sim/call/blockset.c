/* sim/call/blockset.c: which output blocks have been written back (or first
 * selected), and when.
 *
 * Rule P5 needs, for each output, the set of block indices already written
 * back to HBM, to catch a later grid point that selects one again; rule V4
 * the first step that selected each block. An open-addressing table keyed
 * by the block index keeps this O(1) per lookup whatever the number of
 * blocks, and collision-free whatever their range (blockset.h).
 */
#include <stdlib.h>
#include <string.h>

#include "blockset.h"

static uint64_t mix(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return k;
}

static uint64_t hash(const int64_t *bidx, int rank)
{
    uint64_t h = 0x9e3779b97f4a7c15ULL;
    for (int d = 0; d < rank; d++) h = mix(h ^ (uint64_t)bidx[d]) + 0x9e3779b97f4a7c15ULL * (uint64_t)(d + 1);
    return mix(h);
}

static int same(const int64_t *a, const int64_t *b, int rank)
{
    for (int d = 0; d < rank; d++)
        if (a[d] != b[d]) return 0;
    return 1;
}

/* The slot of bidx, or of the empty slot where it would go. */
static size_t find(const sim_blockset *s, const int64_t *bidx)
{
    size_t r = (size_t)s->rank, i = hash(bidx, s->rank) & (s->cap - 1);
    while (s->used[i] && !same(s->keys + i * r, bidx, s->rank)) i = (i + 1) & (s->cap - 1);
    return i;
}

static int grow(sim_blockset *s)
{
    size_t cap = s->cap ? 2 * s->cap : 64, r = s->rank ? (size_t)s->rank : 1;
    sim_blockset n = {.keys = malloc(cap * r * sizeof *n.keys), .vals = malloc(cap * sizeof *n.vals),
                      .used = calloc(cap, 1), .rank = s->rank, .cap = cap};
    if (!n.keys || !n.vals || !n.used) {
        sim_blockset_free(&n);
        return -1;
    }
    for (size_t i = 0; i < s->cap; i++)
        if (s->used[i]) sim_blockset_put(&n, s->keys + i * (size_t)s->rank, s->rank, s->vals[i]);
    sim_blockset_free(s);
    *s = n;
    return 0;
}

int sim_blockset_put(sim_blockset *s, const int64_t *bidx, int rank, int64_t val)
{
    if (!s->cap) s->rank = rank;
    if (2 * (s->len + 1) > s->cap && grow(s)) return -1;
    size_t i = find(s, bidx);
    if (!s->used[i]) {
        s->used[i] = 1;
        s->len++;
        if (rank) memcpy(s->keys + i * (size_t)rank, bidx, (size_t)rank * sizeof *bidx);
    }
    s->vals[i] = val;
    return 0;
}

int sim_blockset_get(const sim_blockset *s, const int64_t *bidx, int rank, int64_t *val)
{
    if (!s->cap || rank != s->rank) return 0;
    size_t i = find(s, bidx);
    if (!s->used[i]) return 0;
    *val = s->vals[i];
    return 1;
}

void sim_blockset_free(sim_blockset *s)
{
    free(s->keys);
    free(s->vals);
    free(s->used);
    *s = (sim_blockset){0};
}
