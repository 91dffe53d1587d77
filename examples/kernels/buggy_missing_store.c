/* examples/kernels/buggy_missing_store.c: the tiled matmul that never stores
 * its result.
 *
 * An output block in VMEM is never loaded from HBM (rule P4): whatever the
 * kernel does not write goes back to HBM as garbage. This copy accumulates
 * into acc correctly but forgets the final pl_copy(o, acc) on the last
 * contraction step. The check does not depend on NaN poison: it sees that no
 * op wrote the block while it was in VMEM, so it fires with uninit = zero too.
 */
#include "buggy.h"

static void missing_store_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_ref x = refs[0], y = refs[1], acc = refs[3];
    int64_t k = pl_program_id(c, 2);
    if (k == 0) pl_fill(c, acc, 0.0);
    pl_dot(c, acc, x, y, PL_DOT_ACC);
    /* BUG: missing `if (k == nk - 1) pl_copy(c, o, acc);` */
}

int bug_run_missing_store(const pl_options *opt, pl_report *rep)
{
    pl_call call = bug_matmul_call(missing_store_kernel, BUG_M, BUG_N, BUG_K, BUG_BM, BUG_BN, BUG_BK);
    return bug_run_matmul(&call, BUG_M, BUG_N, BUG_K, opt, rep);
}
