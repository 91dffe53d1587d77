/* examples/kernels/buggy_oob_index.c: the tiled matmul with an epilogue that
 * reads one row past its Ref.
 *
 * The epilogue replaces column 0 of the result by its forward difference
 * along rows, o[i][0] = acc[i + 1][0] - acc[i][0], and forgets that the last
 * row has no successor: at i = rows - 1 it reads acc[rows][0]. On hardware
 * that read returns whatever lies next in VMEM. tilesim ends the call with
 * PL_EBOUNDS naming the Ref, the index and the grid point (rule V2), or, with
 * oob_reads = PL_OOB_POISON, returns poison for the read, so that the NaN
 * reaches HBM and is reported (rule V1).
 */
#include "buggy.h"

static void oob_index_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_ref x = refs[0], y = refs[1], o = refs[2], acc = refs[3];
    int64_t k = pl_program_id(c, 2), nk = pl_num_programs(c, 2);
    if (k == 0) pl_fill(c, acc, 0.0);
    pl_dot(c, acc, x, y, PL_DOT_ACC);
    if (k == nk - 1) {
        pl_copy(c, o, acc);
        int64_t rows = acc.shape[0];
        for (int64_t i = 0; i < rows; i++) /* BUG: acc[rows] does not exist */
            pl_set_at(c, o, pl_get_at(c, acc, i + 1, 0) - pl_get_at(c, acc, i, 0), i, 0);
    }
}

int bug_run_oob_index(const pl_options *opt, pl_report *rep)
{
    pl_call call = bug_matmul_call(oob_index_kernel, BUG_M, BUG_N, BUG_K, BUG_BM, BUG_BN, BUG_BK);
    return bug_run_matmul(&call, BUG_M, BUG_N, BUG_K, opt, rep);
}
