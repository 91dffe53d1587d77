/* tests/test_guide_dsd.c: the JAX Pallas sparse guide's "Sparse @ Dense
 * matrix multiplication" (docs/pallas/tpu/sparse), written in tilesim as a
 * user would port it: x's nonzero (bm, bk) blocks stored compactly as
 * (num_blocks, bm, bk), their block rows and columns in two scalar-prefetch
 * tables sorted by row (M5), a grid (N/bn, num_blocks), an output aliased
 * to a zeros input (input_output_aliases={4: 0}, M6) so that output blocks
 * no grid point visits stay zero, and an f32 accumulator that starts at a
 * row's first block and is stored at its last.
 *
 * The guide's kernel finds a row's last block by reading idxs_i[min(blk +
 * 1, num_blocks)]: at the last grid point that is one past the table, a
 * read a TPU does without complaint (the `is_end` beside it makes the value
 * irrelevant). tilesim names it. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../examples/kernels/data.h"
#include "helpers.h"

#define BM 128
#define BK 128
#define BN 128
#define MB 6 /* block rows of x */
#define KB 4 /* block columns of x */
#define NB 3 /* block columns of y and o */

typedef struct dsd {
    int guide_index; /* 1: the guide's min(blk + 1, num_blocks), one past the table at the end */
    int n;           /* nonzero blocks */
} dsd;

/* refs: idxs_i, idxs_k (SMEM), x (1, BM, BK), y (BK, BN), zeros (BM, BN), o (BM, BN), acc (BM, BN) f32 */
static void dsd_kernel(pl_ctx *c, pl_ref *r)
{
    const dsd *p = pl_kernel_user(c);
    pl_ref ii = r[0], x = r[2], y = r[3], o = r[5], acc = r[6];
    int64_t blk = pl_program_id(c, 1), last = p->n - 1;
    int64_t row = (int64_t)pl_get_at(c, ii, blk);
    int64_t prev = (int64_t)pl_get_at(c, ii, blk > 0 ? blk - 1 : 0);
    if (blk == 0 || row != prev) pl_fill(c, acc, 0.0);
    pl_dot(c, acc, pl_at(c, x, 0), y, PL_DOT_ACC);
    int64_t after = p->guide_index ? (blk + 1 < p->n ? blk + 1 : p->n) : (blk + 1 < last ? blk + 1 : last);
    int next_change = row != (int64_t)pl_get_at(c, ii, after);
    if (blk == last || next_change) pl_copy(c, o, acc);
}

static void x_map(const int64_t *g, const pl_ref *pf, int64_t *b, void *u)
{
    (void)pf, (void)u;
    b[0] = g[1], b[1] = b[2] = 0;
}

static void y_map(const int64_t *g, const pl_ref *pf, int64_t *b, void *u)
{
    (void)u;
    b[0] = pf ? ((const int32_t *)pf[1].data)[g[1]] : 0;
    b[1] = g[0];
}

static void o_map(const int64_t *g, const pl_ref *pf, int64_t *b, void *u)
{
    (void)u;
    b[0] = pf ? ((const int32_t *)pf[0].data)[g[1]] : 0;
    b[1] = g[0];
}

/* Block (i, k) of x is nonzero when (i * 7 + k * 3) % 5 < 2, and block rows
 * 2 and 5 are empty: 8 of the 24 blocks, every row's in column order. */
static int present(int i, int k) { return i != 2 && i != 5 && (i * 7 + k * 3) % 5 < 2; }

typedef struct run_out {
    int rc;
    pl_report rep;
    float max_err, untouched; /* |o - X @ Y| over the visited rows; the largest |o| over the empty rows */
} run_out;

static run_out run(int guide_index)
{
    int32_t ii[MB * KB], kk[MB * KB];
    int n = 0;
    for (int i = 0; i < MB; i++)
        for (int k = 0; k < KB; k++)
            if (present(i, k)) ii[n] = i, kk[n] = k, n++;
    cr_assert_eq(n, 7);
    float *xd = calloc((size_t)MB * BM * KB * BK, sizeof *xd); /* X dense, for the reference */
    float *xb = ex_random_matrix((int64_t)n * BM * BK, PL_F32, 3);
    float *y = ex_random_matrix((int64_t)KB * BK * NB * BN, PL_F32, 4);
    float *zeros = calloc((size_t)MB * BM * NB * BN, sizeof *zeros), *o = calloc((size_t)MB * BM * NB * BN, sizeof *o);
    cr_assert(xd && xb && y && zeros && o);
    for (int b = 0; b < n; b++)
        for (int r = 0; r < BM; r++)
            memcpy(&xd[((size_t)ii[b] * BM + r) * KB * BK + (size_t)kk[b] * BK], &xb[((size_t)b * BM + r) * BK],
                   BK * sizeof *xd);
    dsd p = {.guide_index = guide_index, .n = n};
    pl_call call = {
        .name = "dsd", .kernel = dsd_kernel, .user = &p, .grid_rank = 2, .grid = {NB, n},
        .num_scalar_prefetch = 2, .n_in = 3,
        .in = {PL_BLOCK(PL_MAP_FN(x_map, NULL), 1, BM, BK), PL_BLOCK(PL_MAP_FN(y_map, NULL), BK, BN),
               PL_BLOCK(PL_MAP_FN(o_map, NULL), BM, BN)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP_FN(o_map, NULL), BM, BN)},
        .n_scratch = 1, .scratch = {PLTPU_VMEM(PL_F32, BM, BN)},
        .n_alias = 1, .alias = {{.in = 4, .out = 0}},
    };
    pl_array args[5] = {PL_ARRAY(ii, PL_I32, n), PL_ARRAY(kk, PL_I32, n), PL_ARRAY(xb, PL_F32, n, BM, BK),
                        PL_ARRAY(y, PL_F32, KB * BK, NB * BN), PL_ARRAY(zeros, PL_F32, MB * BM, NB * BN)};
    pl_array out = PL_ARRAY(o, PL_F32, MB * BM, NB * BN);
    run_out r = {0};
    r.rc = pl_pallas_call(&call, args, &out, NULL, &r.rep);
    for (int64_t row = 0; r.rc == PL_OK && row < MB * BM; row++) {
        int empty = row / BM == 2 || row / BM == 5;
        for (int64_t col = 0; col < NB * BN; col++) {
            double want = 0;
            for (int64_t t = 0; !empty && t < KB * BK; t++)
                want += (double)xd[row * KB * BK + t] * y[t * NB * BN + col];
            float got = o[row * NB * BN + col], err = (float)fabs(got - want);
            if (empty && fabsf(got) > r.untouched) r.untouched = fabsf(got);
            if (!empty && err > r.max_err) r.max_err = err;
        }
    }
    free(xd), free(xb), free(y), free(zeros), free(o);
    return r;
}

/* With the table read kept inside it, the port computes X @ Y, and the
 * rows no block of x touches keep the aliased input's zeros. */
Test(guide_dsd, the_port_computes_x_at_y_and_unvisited_rows_keep_the_aliased_zeros)
{
    run_out r = run(0);
    cr_assert_eq(r.rc, PL_OK, "%s", r.rep.error);
    cr_expect_lt(r.max_err, 1e-3, "max |o - X @ Y| = %g", r.max_err);
    cr_expect_eq(r.untouched, 0, "an empty row of x leaves o's zeros: %g", r.untouched);
    cr_expect_eq(r.rep.steps, NB * 7);
}

/* The guide's own index reads idxs_i[num_blocks] at the last grid point:
 * out of bounds of the 7-entry table, named with the grid point. */
Test(guide_dsd, the_guides_read_one_past_the_table_is_named)
{
    run_out r = run(1);
    cr_assert_neq(r.rc, PL_OK, "the read of idxs_i[7] must not pass");
    cr_expect(strstr(r.rep.error, "(0, 6)"), "names the first grid point that reads it: %s", r.rep.error);
    cr_expect(strstr(r.rep.error, "7"), "names the index: %s", r.rep.error);
    cr_log_info("%s", r.rep.error);
}
