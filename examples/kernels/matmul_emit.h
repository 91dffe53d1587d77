/* examples/kernels/matmul_emit.h: the tiled matmul of examples/kernels/
 * matmul.h written as the TPU quickstart writes kernels now: pl_kernel over
 * the device's TensorCores (K1), each core streaming row panels of C = A @ B
 * (panels core, core + cores, ...), and pltpu_emit_pipeline (K3) tiling
 * each panel over (N/bn, K/bk) with an f32 accumulator from pl_run_scoped
 * (K4). f32 arrays; bm, bn, bk must divide M, N, K (emit_pipeline's blocks
 * lie inside their refs).
 *
 *     mme_params p;
 *     pl_kernel_spec k;
 *     mme_spec(&k, &p, M, N, K, 256, 256, 256);
 *     pl_array ins[2] = {A, B};
 *     pl_kernel(&k, ins, &C, NULL, &rep);
 */
#ifndef TILESIM_EXAMPLES_MATMUL_EMIT_H
#define TILESIM_EXAMPLES_MATMUL_EMIT_H

#include "../../sim/tilesim_kernel.h"

typedef struct mme_params {
    int64_t m, n, k, bm, bn, bk;
} mme_params;

/* The body: refs a (M, K), b (K, N), c (M, N), all in HBM. */
void mme_kernel(pl_ctx *c, pl_ref *refs);

/* Describe C (m, n) = A (m, k) @ B (k, n): inputs "a", "b", output "c".
 * p must outlive the call. */
void mme_spec(pl_kernel_spec *k, mme_params *p, int64_t m, int64_t n, int64_t kk, int64_t bm, int64_t bn,
              int64_t bk);

/* The same as a pallas_call: grid (M/bm,) parallel over the row panels, operands in HBM (ANY), the
 * kernel (mme_panel_kernel) running the nested pipeline of its panel. */
void mme_panel_kernel(pl_ctx *c, pl_ref *refs);
void mme_call(pl_call *call, mme_params *p, int64_t m, int64_t n, int64_t kk, int64_t bm, int64_t bn, int64_t bk);

#endif
