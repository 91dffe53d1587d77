/* examples/kernels/buggy_read_padding.c: the tiled matmul on a ragged K
 * without the mask.
 *
 * With K = 300 and bk = 256 the grid has two contraction steps and the second
 * x and y blocks hang 212 elements over the arrays' edge. Those elements are
 * undefined (rule B6): the correct kernel (matmul.c) slices them away with
 * pl_ds before the dot. This copy does not, so on hardware garbage is summed
 * into the result. tilesim fills the overhang with NaN (rule V1); the NaN
 * reaches HBM and the finding explains it with the read of the padding.
 */
#include "buggy.h"

void bug_read_padding_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_ref x = refs[0], y = refs[1], o = refs[2], acc = refs[3];
    int64_t k = pl_program_id(c, 2), nk = pl_num_programs(c, 2);
    if (k == 0) pl_fill(c, acc, 0.0);
    /* BUG: missing on the last block (valid = K - k * bk < bk):
     *   x = pl_ds(c, x, 1, 0, valid); y = pl_ds(c, y, 0, 0, valid); */
    pl_dot(c, acc, x, y, PL_DOT_ACC);
    if (k == nk - 1) pl_copy(c, o, acc);
}

int bug_run_read_padding(const pl_options *opt, pl_report *rep)
{
    pl_call call =
        bug_matmul_call(bug_read_padding_kernel, BUG_M, BUG_N, BUG_K_RAGGED, BUG_BM, BUG_BN, BUG_BK_RAGGED);
    return bug_run_matmul(&call, BUG_M, BUG_N, BUG_K_RAGGED, opt, rep);
}
