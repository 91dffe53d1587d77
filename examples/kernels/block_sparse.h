/* examples/kernels/block_sparse.h: block-sparse (M x K) times dense (K x N)
 * matmul, driven by a block table in scalar prefetch (rule M5).
 *
 * X is cut into (bm, bk) blocks; only some are present (the others are
 * zero). The host lists, per row block i, the present k blocks in CSR form:
 * offsets[i] .. offsets[i+1] index kidx[], which holds k-block indices in
 * increasing order. Both arrays are int32 and go to the call as its two
 * scalar-prefetch args, ahead of x and y:
 *
 *     bs_pattern pat;                                   // host-side block table
 *     bs_pattern_random(&pat, M / bm, K / bk, 0.25, 1); // 25% of the blocks present
 *     bs_params p;
 *     pl_call call;
 *     bs_call(&call, &p, &pat, M, N, K, bm, bn, bk);
 *     pl_array args[4];
 *     bs_args(args, &pat, &x, &y);                      // offsets, kidx, x (M, K), y (K, N)
 *     pl_pallas_call(&call, args, &out, NULL, &rep);
 *
 * The grid is (M/bm, cdiv(N, bn), S) with S the largest number of present
 * blocks in a row (at least 1); its last axis walks the row's present blocks.
 * The x index map reads the k index of step s from the table; so does the y
 * map. Steps past the row's count repeat the last present block, so their
 * copies are skipped (P2), and the kernel skips their compute. A row block
 * with no present block at all maps to the block loaded just before it (or,
 * for leading empty rows, the first one loaded after), so it costs no copy;
 * its kernel still zeroes the accumulator and stores zeros. The kernel
 * zeroes the f32 accumulator at step 0 and stores it on the last step.
 *
 * X is held dense in HBM (absent blocks zero), so the same array serves the
 * reference check; the kernel never loads an absent block.
 */
#ifndef TILESIM_EXAMPLES_BLOCK_SPARSE_H
#define TILESIM_EXAMPLES_BLOCK_SPARSE_H

#include "../../sim/tilesim.h"

/* The block table: row block i holds the k blocks kidx[offsets[i]] ..
 * kidx[offsets[i+1] - 1], increasing. */
typedef struct bs_pattern {
    int64_t row_blocks, k_blocks;
    int64_t nnz;      /* present blocks */
    int64_t max_row;  /* most present blocks in one row block */
    int64_t empty_rows; /* row blocks with no present block */
    int32_t *offsets; /* row_blocks + 1 entries */
    int32_t *kidx;    /* max(nnz, 1) entries (a lone 0 when nnz == 0: SMEM arrays are not empty) */
} bs_pattern;

/* From a row-major mask of row_blocks x k_blocks bytes (nonzero: present).
 * Returns PL_OK, PL_EINVAL (sizes < 1 or too many blocks for int32) or PL_ENOMEM. */
int bs_pattern_from_mask(bs_pattern *p, int64_t row_blocks, int64_t k_blocks, const unsigned char *mask);
/* round(density * row_blocks * k_blocks) blocks present, placed by a fixed
 * pseudo-random shuffle of seed. density in [0, 1]. */
int bs_pattern_random(bs_pattern *p, int64_t row_blocks, int64_t k_blocks, double density, uint64_t seed);
void bs_pattern_free(bs_pattern *p);

/* Fill x (m x k, dtype dt, row-major) with pseudo-random values in [-1, 1)
 * inside the present blocks of p and zeros elsewhere. */
void bs_fill_x(const bs_pattern *p, void *x, pl_dtype dt, int64_t m, int64_t k, int64_t bm, int64_t bk, uint64_t seed);

/* x copies a run must make: for each row block with c present blocks, c
 * when c <= 1 (the block stays in VMEM while j moves), else c per column
 * block (the walk over the row restarts at each j); at least 1 (grid point
 * 0 loads some block). */
int64_t bs_expected_x_copies(const bs_pattern *p, int64_t n_col_blocks);

typedef struct bs_params {
    int64_t m, n, k, bm, bn, bk;
} bs_params;

void bs_kernel(pl_ctx *c, pl_ref *refs);

/* Describe out (m, n) = X (m, k) @ y (k, n) for pattern pat with (bm, bn, bk)
 * blocks: prefetch args offsets and kidx (named "prefetch0" and "prefetch1" in
 * the report: prefetch args have no spec to name them), operands "x", "y",
 * "o", scratch "acc". m and k must be multiples of bm and bk and match pat's block counts
 * (PL_EINVAL otherwise; err, if not NULL, says which). p must outlive the call. */
int bs_call(pl_call *call, bs_params *p, const bs_pattern *pat, int64_t m, int64_t n, int64_t k, int64_t bm,
            int64_t bn, int64_t bk, char *err, size_t errlen);

/* args[0..3] = offsets, kidx, *x, *y. */
void bs_args(pl_array args[4], const bs_pattern *pat, const pl_array *x, const pl_array *y);

#endif
