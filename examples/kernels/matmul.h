/* examples/kernels/matmul.h: the tiled matmul of the Pallas TPU docs, shared
 * by the example program, the `tilesim` command, the tests and the benches.
 *
 *     mm_params p;
 *     pl_call call;
 *     mm_call(&call, &p, M, N, K, 512, 512, 512);   // C = A @ B in 512-tiles
 *     pl_pallas_call(&call, args, &out, NULL, &rep);
 *
 * The kernel keeps an fp32 accumulator in VMEM scratch, zeroes it when the
 * contraction index is 0, adds x @ y at every step, and casts it into the
 * output block on the last contraction step; when the contraction is one
 * block it keeps none (o = dot(x, y).astype(o.dtype)). The grid is (M/bm, N/bn, K/bk),
 * ceil-divided, with the reduction axis last so that the output block stays
 * in VMEM while k runs (rule P3). When bk does not divide K, the last x and y
 * blocks hang over the arrays' edge and their overhang is garbage (rule B6):
 * the kernel slices it away, as a real kernel must mask it.
 */
#ifndef TILESIM_EXAMPLES_MATMUL_H
#define TILESIM_EXAMPLES_MATMUL_H

#include "../../sim/tilesim.h"

typedef struct mm_params {
    int64_t k; /* the contraction length, to mask the ragged last block */
} mm_params;

void mm_kernel(pl_ctx *c, pl_ref *refs);
/* The f32 block this step's dot adds into, for a kernel of mm_call's grid:
 * over several contraction steps the accumulator scratch refs[acc], zeroed
 * at k == 0, with PL_DOT_ACC added to *flags; with one step (mm_call then
 * gives no scratch, as a production kernel keeps none) a value of o's
 * shape (examples/kernels/values.h) that the dot writes. */
pl_ref mm_acc(pl_ctx *c, pl_ref *refs, int acc, pl_ref o, unsigned *flags);

/* Describe C (m, n) = A (m, k) @ B (k, n) with (bm, bn, bk) blocks: operands
 * "x", "y", "o", scratch "acc" (none when bk covers k: grid[2] == 1). p
 * must outlive the call. */
void mm_call(pl_call *call, mm_params *p, int64_t m, int64_t n, int64_t k, int64_t bm, int64_t bn, int64_t bk);

#endif
