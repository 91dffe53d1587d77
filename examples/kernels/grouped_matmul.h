/* examples/kernels/grouped_matmul.h: a grouped (MoE-style) matmul whose
 * groups arrive by scalar prefetch (rule M5), after megablox's gmm.
 *
 * The rows of X (M x K) are cut into G ragged groups: group g is rows
 * offsets[g] .. offsets[g+1] - 1 (sizes need not be multiples of the block,
 * and may be 0). Group g multiplies by its own weight W[g] (W is G x K x N):
 * out[offsets[g]:offsets[g+1]] = X[offsets[g]:offsets[g+1]] @ W[g].
 *
 * A row block of bm rows may straddle groups, so the host builds a tile
 * table: for each non-empty group in order, one tile per row block the
 * group touches, (row block, group). A row block shared by two groups is
 * visited once per group, in consecutive tiles. The three int32 tables go to
 * the call as scalar prefetch, ahead of x and w:
 *
 *     gm_tiles t;
 *     gm_tiles_build(&t, offsets, G, M, bm, err, sizeof err);
 *     gm_params p;
 *     pl_call call;
 *     gm_call(&call, &p, &t, M, N, K, bm, bn, bk, err, sizeof err);
 *     pl_array args[5];
 *     gm_args(args, &t, &x, &w);   // offsets, tile_rb, tile_group, x (M, K), w (G, K, N)
 *     pl_pallas_call(&call, args, &out, NULL, &rep);
 *
 * The grid is (cdiv(N, bn), tiles, cdiv(K, bk)): the tile axis sits inside
 * the column axis, so that the tiles of one row block follow each other for
 * a fixed column block and the output block (row block, j) stays in VMEM
 * across them (P3); each tile writes only its group's rows of it (pl_ds),
 * and the block goes to HBM once, when the row block changes. Putting the
 * tile axis first, (tiles, cdiv(N, bn), cdiv(K, bk)), would revisit an
 * output block after its write-back whenever a row block straddles groups
 * and N has more than one column block: rule P5 rejects that (GM_TILES_OUTER
 * keeps it as a what-if). The kernel keeps an f32 accumulator for the rows
 * of its group, zeroed at k = 0 and stored on the last k step; ragged K and
 * N edges are sliced away (B6).
 */
#ifndef TILESIM_EXAMPLES_GROUPED_MATMUL_H
#define TILESIM_EXAMPLES_GROUPED_MATMUL_H

#include <stdio.h>

#include "../../sim/tilesim.h"

/* The tile table (host). */
typedef struct gm_tiles {
    int64_t groups, m, bm;
    int64_t empty_groups;
    int64_t n_tiles;
    int32_t *offsets;    /* groups + 1 entries: offsets[0] = 0, offsets[groups] = m */
    int32_t *tile_rb;    /* n_tiles entries: the row block of each tile */
    int32_t *tile_group; /* n_tiles entries: its group */
} gm_tiles;

/* Build the tile table for group offsets (groups + 1 entries, from 0 up to m,
 * non-decreasing) and row blocks of bm. Returns PL_OK, PL_EINVAL (err says
 * what is wrong) or PL_ENOMEM. */
int gm_tiles_build(gm_tiles *t, const int32_t *offsets, int64_t groups, int64_t m, int64_t bm, char *err,
                   size_t errlen);
void gm_tiles_free(gm_tiles *t);

/* offsets (groups + 1) from sizes (groups entries, each >= 0). PL_EINVAL if
 * a size is negative or the total passes INT32_MAX. */
int gm_offsets_from_sizes(int32_t *offsets, const int64_t *sizes, int64_t groups);
/* Ragged pseudo-random sizes summing to m (a fixed function of seed), about
 * a quarter of them empty. */
void gm_sizes_random(int64_t *sizes, int64_t groups, int64_t m, uint64_t seed);

typedef enum gm_order {
    GM_N_OUTER = 0,     /* grid (N/bn, tiles, K/bk): each output block written back once (the kernel) */
    GM_TILES_OUTER = 1, /* grid (tiles, N/bn, K/bk): revisits output blocks when N/bn > 1 (P5 what-if) */
} gm_order;

typedef struct gm_params {
    int64_t m, n, k, bm, bn, bk, groups;
    gm_order order;
} gm_params;

void gm_kernel(pl_ctx *c, pl_ref *refs);

/* Describe out (m, n) = grouped X (m, k) @ W (groups, k, n) with (bm, bn, bk)
 * blocks in the given order: operands "x", "w", "o", scratch "acc"; the
 * prefetch args (offsets, tile_rb, tile_group) are prefetch0..2 in the
 * report. Returns PL_OK, or PL_EINVAL with err saying why. p must outlive
 * the call. */
int gm_call(pl_call *call, gm_params *p, const gm_tiles *t, int64_t m, int64_t n, int64_t k, int64_t bm, int64_t bn,
            int64_t bk, gm_order order, char *err, size_t errlen);

/* args[0..4] = offsets, tile_rb, tile_group, *x, *w. */
void gm_args(pl_array args[5], const gm_tiles *t, const pl_array *x, const pl_array *w);

/* Check out against X_g @ W[g] for every non-empty group with
 * pl_check_matmul (cblas_sgemm on the group's rows). *worst (may be NULL)
 * gets the check of the group furthest from passing, *worst_group its index
 * (-1 when every group is empty). If f is not NULL, print one summary line.
 * Returns PL_OK when every group passes or is marginal, PL_EVERIFY
 * otherwise, PL_EINVAL / PL_ESHAPE / PL_ENOMEM for bad arguments. */
int gm_check(const gm_tiles *t, const pl_array *x, const pl_array *w, const pl_array *out, pl_check *worst,
             int64_t *worst_group, FILE *f);

#endif
