/* examples/kernels/norm.h: row normalisations and an elementwise add, each a
 * definition in registry.h ("rmsnorm", "layernorm", "add").
 *
 * RMSNorm y = x * rsqrt(mean(x^2, -1) + eps) * gamma and LayerNorm
 * y = (x - mean) * rsqrt(var + eps) * gamma + beta take x (rows, d) in
 * (br, d) blocks: a whole row per block, so the statistics never leave the
 * kernel; gamma and beta are (1, d) rows whose block never changes (one
 * buffer, P6). The grid is (cdiv(rows, br),), parallel; a ragged last block
 * reads poison rows past the array, which are computed and dropped (B6).
 * The f32 copies and the statistics are values, as in a Pallas kernel
 * (x_ref[...].astype(f32)): in registers, not VMEM scratch (values.h). */
#ifndef TILESIM_EXAMPLES_NORM_H
#define TILESIM_EXAMPLES_NORM_H

#include "../../sim/tilesim.h"

typedef struct norm_params {
    double eps;   /* added to the mean square (variance); 0 is the broken variant tests use */
    double inv_d; /* 1 / d */
    int64_t br, d; /* the block: the values' shapes */
} norm_params;

void rmsnorm_kernel(pl_ctx *c, pl_ref *refs);   /* x, gamma, o; values t (br, d), r (br, 1) */
void layernorm_kernel(pl_ctx *c, pl_ref *refs); /* x, gamma, beta, o; values t, u (br, d), r (br, 1) */

#endif
