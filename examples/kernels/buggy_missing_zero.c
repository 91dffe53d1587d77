/* examples/kernels/buggy_missing_zero.c: the tiled matmul whose accumulator
 * is never zeroed.
 *
 * Scratch starts uninitialized (rule M2) and keeps its contents from one grid
 * point to the next, so the matmul must zero acc when the contraction index
 * is 0. This copy forgets: on hardware acc holds whatever the previous call
 * left in VMEM, and the result is silently wrong. tilesim fills scratch with
 * NaN (rule V1), so NaN reaches HBM and the finding explains it with the
 * first read of acc before anything wrote all of it.
 */
#include "buggy.h"

static void missing_zero_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_ref x = refs[0], y = refs[1], o = refs[2], acc = refs[3];
    int64_t k = pl_program_id(c, 2), nk = pl_num_programs(c, 2);
    /* BUG: missing `if (k == 0) pl_fill(c, acc, 0.0);` */
    pl_dot(c, acc, x, y, PL_DOT_ACC);
    if (k == nk - 1) pl_copy(c, o, acc);
}

int bug_run_missing_zero(const pl_options *opt, pl_report *rep)
{
    pl_call call = bug_matmul_call(missing_zero_kernel, BUG_M, BUG_N, BUG_K, BUG_BM, BUG_BN, BUG_BK);
    return bug_run_matmul(&call, BUG_M, BUG_N, BUG_K, opt, rep);
}
