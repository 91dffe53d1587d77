/* examples/kernels/buggy_parallel_reduction.c: the tiled matmul with its
 * reduction axis marked parallel.
 *
 * Only a parallel axis may be split across the two TensorCores of a megacore
 * chip (rule G3). Marking the contraction axis k parallel lets the two cores
 * each accumulate half of the sum into their own VMEM copy of the same output
 * block: one half is lost, on v4 and v5p only. On a single-core chip the
 * points run in order and the answer is right, so tilesim only warns there
 * (rule V4); the gallery runs these cases on v5p unless the caller picks a
 * chip, where tilesim reports the race as an error:
 *
 *   parallel_reduction     declarative maps: the output map ignores axis 2,
 *                          found before anything runs;
 *   parallel_reduction_fn  a function-form output map, which tilesim cannot
 *                          analyse, so the race is found while running, at
 *                          the second grid point that writes the block.
 *
 * The kernel itself is the correct matmul.
 */
#include "buggy.h"

static void matmul_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_ref x = refs[0], y = refs[1], o = refs[2], acc = refs[3];
    int64_t k = pl_program_id(c, 2), nk = pl_num_programs(c, 2);
    if (k == 0) pl_fill(c, acc, 0.0);
    pl_dot(c, acc, x, y, PL_DOT_ACC);
    if (k == nk - 1) pl_copy(c, o, acc);
}

/* o block (i, j), as PL_MAP(0, 1) but opaque to the validator. */
static void out_map(const int64_t *g, const pl_ref *prefetch, int64_t *b, void *user)
{
    (void)prefetch, (void)user;
    b[0] = g[0];
    b[1] = g[1];
}

/* The race is real on megacore chips only (V4): v5p unless opt names a chip. */
static pl_options on_megacore(const pl_options *opt)
{
    pl_options o = opt ? *opt : (pl_options){0};
    if (!o.chip && !o.chip_spec) o.chip = "v5p";
    return o;
}

int bug_run_parallel_reduction(const pl_options *opt, pl_report *rep)
{
    pl_call call = bug_matmul_call(matmul_kernel, BUG_M, BUG_N, BUG_K, BUG_BM, BUG_BN, BUG_BK);
    call.semantics[2] = PL_PARALLEL; /* BUG: k is a reduction: PL_ARBITRARY */
    pl_options o = on_megacore(opt);
    return bug_run_matmul(&call, BUG_M, BUG_N, BUG_K, &o, rep);
}

int bug_run_parallel_reduction_fn(const pl_options *opt, pl_report *rep)
{
    pl_call call = bug_matmul_call(matmul_kernel, BUG_M, BUG_N, BUG_K, BUG_BM, BUG_BN, BUG_BK);
    call.out[0].map = PL_MAP_FN(out_map, NULL);
    call.semantics[2] = PL_PARALLEL; /* BUG: k is a reduction: PL_ARBITRARY */
    pl_options o = on_megacore(opt);
    return bug_run_matmul(&call, BUG_M, BUG_N, BUG_K, &o, rep);
}
