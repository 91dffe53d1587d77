/* tests/test_prefetch_helpers.h: the counting call shared by the scalar
 * prefetch tests (test_prefetch_*.c): its kernel reads a counter from the
 * prefetch ref, writes it to its output block and counts up. Static inline,
 * as in helpers.h. */
#ifndef TILESIM_TEST_PREFETCH_HELPERS_H
#define TILESIM_TEST_PREFETCH_HELPERS_H

#include "../kernel/pallas.h"
#include "../sim/tilesim.h"

/* o[...] = counter; counter += 1 (refs: counter, o). */
static inline void count_kernel(pl_ctx *c, pl_ref *refs)
{
    double v = pl_get_at(c, refs[0], 0);
    pl_fill(c, refs[1], v);
    pl_set_at(c, refs[0], v + 1, 0);
}

static inline pl_call count_call(int64_t gi, int64_t gj)
{
    pl_call call = {
        .name = "count", .kernel = count_kernel,
        .grid_rank = 2, .grid = {gi, gj},
        .num_scalar_prefetch = 1,
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, 1), 8, 128)},
    };
    return call;
}

#endif
