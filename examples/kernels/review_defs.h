/* examples/kernels/review_defs.h: the kernels `tilesim review` times
 * (sim/tilesim_review.h), as definitions over the built-ins:
 *
 *   review_matmul   y = x @ W of a projection: x (M, K) bf16 activations,
 *                   W (K, N) in the weight dtype (bf16, or 8-bit: int8 and
 *                   fp8 both stored a byte an element, PL_I8 standing in for
 *                   fp8's storage, as tilesim has no fp8 dtype), o (M, N)
 *                   bf16. An 8-bit block is dequantized to bf16 in VMEM
 *                   (pl_copy) before a bf16 pl_dot, as weight-only kernels
 *                   do, so the MXU runs at its bf16 rate (T10: no int8 MXU
 *                   path is needed, on v7x either).
 *   review_paged    the paged_attention built-in with every sequence
 *                   max_len tokens long (a decode batch at one context).
 *   flash_attention the built-in (causal parameter) is used as it is.
 *
 * ex_review_allreduce_s: the ring all-reduce (ring_allreduce.h) of `bytes`
 * per device, cost-only through pl_mesh_call on a 1 x N ring over the chip's
 * ICI. The ring keeps its half shards in VMEM scratch (about 4 bytes / N
 * per device byte), so an all-reduce larger than ~2 N MiB per device runs
 * as back-to-back chunks of at most that; one chunk is simulated and its
 * time multiplied (chunks are identical). The payload is f32 elements of
 * the same byte count as the bf16 activations, 128 columns, rows padded to
 * whole 8-row half shards. */
#ifndef TILESIM_EXAMPLES_REVIEW_DEFS_H
#define TILESIM_EXAMPLES_REVIEW_DEFS_H

#include "../../sim/tilesim_review.h"

extern const pl_kernel_def ex_def_review_matmul, ex_def_review_paged;

double ex_review_allreduce_s(const pl_chip *chip, int devices, double bytes, void *user, char *err, size_t n);

/* The kernels above with the flash_attention built-in. */
pl_review_kernels ex_review_kernels(void);

#endif
