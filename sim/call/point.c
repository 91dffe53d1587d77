/* sim/point.c: the grid point of a global step number, as the megacore
 * split and the walk order place it. A leaf of the call's files: checks.c
 * and pipeline.c name points in their messages, and the walk calls them,
 * so this cannot live in walk.c (tools/layering.sh). */
#include "exec.h"

/* The grid point of global step `step` (the inverse of the walk: each core
 * walks its chunk of the split axis in G1 order, through the order's
 * permutation). Here rather than in walk.c so that checks.c, which names
 * points in its messages, does not call back into the walk. */
void sim_point_of_step(const sim_exec *x, int64_t step, int64_t *idx)
{
    const pl_call *call = x->plan.call;
    int c = 0; /* the core whose steps contain step: step_base rises with c */
    while (c + 1 < x->n_cores && step >= x->step_base[c + 1]) c++;
    step -= x->step_base[c];
    for (int a = call->grid_rank - 1; a >= 0; a--) {
        int64_t size = a == x->split_axis ? x->hi[c] - x->lo[c] : call->grid[a];
        int64_t pos = step % size + (a == x->split_axis ? x->lo[c] : 0);
        step /= size;
        idx[a] = x->perm[a] ? x->perm[a][pos] : pos;
    }
}
