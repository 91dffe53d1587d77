/* examples/kernels/buggy_write_input.c: the tiled matmul that squares its
 * input block in place.
 *
 * The kernel wants (x * x) @ y and saves a temporary by writing x * x into
 * the x block itself. Writes to an input block never reach HBM (rule P4), and
 * worse, when consecutive grid points select the same x block the copy is
 * skipped (P2) and the kernel squares the already-squared values. tilesim
 * reports the first write into each input operand of the call (rule V3), or,
 * with strict = 1, ends the call with PL_EREADONLY at that write.
 */
#include "buggy.h"

static void write_input_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_ref x = refs[0], y = refs[1], o = refs[2], acc = refs[3];
    int64_t k = pl_program_id(c, 2), nk = pl_num_programs(c, 2);
    if (k == 0) pl_fill(c, acc, 0.0);
    pl_mul(c, x, x, x); /* BUG: x is an input block; use a VMEM scratch for x * x */
    pl_dot(c, acc, x, y, PL_DOT_ACC);
    if (k == nk - 1) pl_copy(c, o, acc);
}

int bug_run_write_input(const pl_options *opt, pl_report *rep)
{
    pl_call call = bug_matmul_call(write_input_kernel, BUG_M, BUG_N, BUG_K, BUG_BM, BUG_BN, BUG_BK);
    return bug_run_matmul(&call, BUG_M, BUG_N, BUG_K, opt, rep);
}
