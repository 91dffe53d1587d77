/* examples/kernels/flash_attention.h: attention for one head (or batch*heads
 * heads), O = softmax(Q K^T / sqrt(d)) V, the flash-attention way: one pass
 * over the keys with an online softmax, never holding the whole score matrix.
 *
 *     fa_config cfg = {.sq = 512, .skv = 512, .d = 128, .bq = 128, .bk = 128, .dtype = PL_F32};
 *     fa_params p;
 *     pl_call call;
 *     fa_call(&call, &p, &cfg);
 *     pl_array args[3], out;
 *     fa_inputs(&cfg, args, &out, 1);                 // random q, k, v
 *     pl_pallas_call(&call, args, &out, NULL, &rep);
 *     fa_check(&cfg, args, &out, &chk, stdout);       // against OpenBLAS + a softmax in double
 *     fa_free(args, &out);
 *
 * The grid is (heads, q blocks, kv blocks), the head axis only when
 * cfg.heads > 0, with the kv axis last and arbitrary: the output block and
 * the scratch (running max m, running sum l, accumulator acc) stay in VMEM
 * while the kv blocks stream past (rules G1, P3, M2). At kv == 0 the kernel
 * sets m = -inf, l = 0, acc = 0; at each step
 *
 *     s = q @ k^T * scale          (pl_dot with PL_DOT_TRANS_B)
 *     m_new = max(m, rowmax(s)),  p = exp(s - m_new),  alpha = exp(m - m_new)
 *     l = alpha * l + rowsum(p),  acc = alpha * acc + p @ v,  m = m_new
 *
 * and at the last kv step o = acc / l. A bf16 or f16 kernel rounds p to the
 * input dtype before p @ v, as `p.astype(v.dtype)` does, so the MXU runs at
 * its bf16 rate. Ragged lengths (bq not dividing sq, bk not dividing skv)
 * slice the edge blocks' garbage away with pl_ds (rule B6). A causal kernel
 * (row i sees columns j <= i) skips blocks above the diagonal, masks the
 * blocks it cuts with pl_tril, and clamps the k and v index maps to the last
 * block a q block needs, so that skipped steps copy nothing (rule P2).
 */
#ifndef TILESIM_EXAMPLES_FLASH_ATTENTION_H
#define TILESIM_EXAMPLES_FLASH_ATTENTION_H

#include <stdio.h>

#include "../../sim/tilesim.h"

typedef struct fa_config {
    int64_t heads;  /* batch*heads: arrays (heads, s, d) and a leading parallel grid axis; 0: arrays (s, d) */
    int64_t sq;     /* query length */
    int64_t skv;    /* key / value length */
    int64_t d;      /* head dimension */
    int64_t bq, bk; /* block lengths along sq and skv */
    int causal;     /* row i attends to columns j <= i */
    pl_dtype dtype; /* of q, k, v and o: f32, bf16 or f16 */
} fa_config;

typedef struct fa_params {
    fa_config cfg;
    double scale; /* 1 / sqrt(d) */
} fa_params;

void fa_kernel(pl_ctx *c, pl_ref *refs);

/* Describe the call for cfg: operands "q", "k", "v", "o"; scratch "m", "l",
 * "acc", the state that outlives a step. The scores s, p (p.astype(v.dtype)
 * for 16-bit inputs), m_new and alpha are values, in registers, as in a
 * Pallas kernel (examples/kernels/values.h). p must outlive the
 * call. Returns PL_OK, or PL_EINVAL for a size below 1, a negative head
 * count or a dtype that is not f32, bf16 or f16. */
int fa_call(pl_call *call, fa_params *p, const fa_config *cfg);

/* Allocate q, k, v (fixed pseudo-random values: q in [-4, 4), k and v in
 * [-1, 1), seeded by seed) and a zeroed o. Returns PL_OK, PL_ENOMEM. */
int fa_inputs(const fa_config *cfg, pl_array args[3], pl_array *out, uint64_t seed);
void fa_free(pl_array args[3], pl_array *out);
/* The same values into arrays that already have data (of fa_shapes' shapes):
 * what the "flash_attention" definition's inputs use. */
void fa_fill(const fa_config *cfg, pl_array args[3], uint64_t seed);
/* The shapes of q, k, v and o without data, for a cost-only run. */
void fa_shapes(const fa_config *cfg, pl_array args[3], pl_array *out);
/* Host bytes a real run with fa_check takes at its peak: the arrays and
 * the reference. */
double fa_host_bytes(const fa_config *cfg);

/* The reference into ref (heads x sq x d floats, heads >= 1): S = Q K^T with
 * cblas_sgemm (16-bit inputs widened exactly), softmax in double on the host,
 * O = P V with cblas_sgemm. Returns PL_OK, PL_ENOMEM. */
int fa_reference(const fa_config *cfg, const pl_array args[3], float *ref);

/* Tolerances for pl_allclose against the reference: f32 rtol 1e-5, atol
 * 1e-6; 16-bit, with u the unit roundoff (2^-8 for bf16, 2^-11 for f16),
 * rtol 4u (o rounds) and atol 2u (p rounds before p @ v, |v| < 1). */
void fa_tolerance(pl_dtype t, double *rtol, double *atol);

/* Compare out with the reference (pl_allclose with fa_tolerance); print the
 * verdict line to f unless NULL. Returns PL_OK (PASS or MARGINAL),
 * PL_EVERIFY, PL_ENOMEM. */
int fa_check(const fa_config *cfg, const pl_array args[3], const pl_array *out, pl_check *chk, FILE *f);

#endif
