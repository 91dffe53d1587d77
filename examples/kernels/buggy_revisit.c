/* examples/kernels/buggy_revisit.c: the tiled matmul with the reduction
 * axis outermost.
 *
 * An output block stays in VMEM only while consecutive grid points select it
 * (rule P3); it is written back when the index changes. With the grid
 * (K/bk, M/bm, N/bn) every output block is visited once per k, far apart:
 * each visit starts from garbage and the earlier partial sums are lost
 * (rule P5). The kernel accumulates straight into its f32 output block (the
 * Pallas docs' variant without scratch), so the grid order is the only bug.
 */
#include "buggy.h"

static void revisit_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_ref x = refs[0], y = refs[1], o = refs[2];
    if (pl_program_id(c, 0) == 0) pl_fill(c, o, 0.0); /* k is axis 0 now */
    pl_dot(c, o, x, y, PL_DOT_ACC);
}

int bug_run_revisit(const pl_options *opt, pl_report *rep)
{
    /* BUG: k outermost; the reduction axis must be the last one. */
    pl_call call = {
        .name = "matmul",
        .kernel = revisit_kernel,
        .grid_rank = 3,
        .grid = {BUG_K / BUG_BK, BUG_M / BUG_BM, BUG_N / BUG_BN},
        .semantics = {PL_ARBITRARY, PL_ARBITRARY, PL_ARBITRARY}, /* parallel axes come first (G3) */
        .n_in = 2,
        .in = {PL_BLOCK(PL_MAP(1, 0), BUG_BM, BUG_BK),  /* x block (i, k) */
               PL_BLOCK(PL_MAP(0, 2), BUG_BK, BUG_BN)}, /* y block (k, j) */
        .n_out = 1,
        .out = {PL_BLOCK(PL_MAP(1, 2), BUG_BM, BUG_BN)}, /* o block (i, j) */
    };
    call.in[0].name = "x";
    call.in[1].name = "y";
    call.out[0].name = "o";
    return bug_run_matmul(&call, BUG_M, BUG_N, BUG_K, opt, rep);
}
