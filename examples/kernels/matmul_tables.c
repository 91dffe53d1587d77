/* examples/kernels/matmul_tables.c: the definitions of the two matmuls
 * driven by scalar-prefetch tables, block_sparse.h and grouped_matmul.h,
 * over their own builders. The tables are a fixed function of the
 * parameters (a "pattern" seed), not of the input seed: they decide the
 * grid, which build must know. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "block_sparse.h"
#include "data.h"
#include "grouped_matmul.h"
#include "kdef_util.h"
#include "registry.h"

static const int64_t blk_cands[] = {128, 256, 512};
static const int64_t dt_cands[] = {PL_F32, PL_BF16};
static const pl_dtype float_dts[] = {PL_F32, PL_BF16};

/* ---- block-sparse ----------------------------------------------------------- */

enum { B_M, B_N, B_K, B_BM, B_BN, B_BK, B_PCT, B_PSEED, B_DT };

static int bsd_check(const int64_t *v, char *msg, size_t n)
{
    const pl_kernel_def *d = &ex_def_block_sparse;
    int64_t pct = v[B_PCT];
    for (int i = 0; i < d->n_params; i++)
        if (i != B_PCT && d->params[i].kind == PL_PARAM_INT && v[i] < 1) {
            snprintf(msg, n, "%s: %s = %lld must be >= 1", d->name, d->params[i].name, (long long)v[i]);
            return PL_EINVAL;
        }
    if (pct < 0 || pct > 100) {
        snprintf(msg, n, "%s: density = %lld must be a percentage, 0 to 100", d->name, (long long)pct);
        return PL_EINVAL;
    }
    if (v[B_M] % v[B_BM] || v[B_K] % v[B_BK]) {
        snprintf(msg, n, "%s: bm = %lld must divide M = %lld and bk = %lld must divide K = %lld (the pattern is in "
                 "whole blocks)", d->name, (long long)v[B_BM], (long long)v[B_M], (long long)v[B_BK],
                 (long long)v[B_K]);
        return PL_EINVAL;
    }
    if ((v[B_M] / v[B_BM]) > EX_MAX_TABLE / (v[B_K] / v[B_BK])) {
        snprintf(msg, n, "%s: M/bm x K/bk = %lld x %lld blocks is more than the %d a block table may hold; use larger "
                 "bm or bk", d->name, (long long)(v[B_M] / v[B_BM]), (long long)(v[B_K] / v[B_BK]), EX_MAX_TABLE);
        return PL_EINVAL;
    }
    return ex_check_dtype(d, v, B_DT, float_dts, 2, msg, n);
}

int ex_block_sparse_build(const int64_t *v, double density, pl_kernel_build *b, char *msg, size_t n)
{
    int rc = bsd_check(v, msg, n);
    if (rc != PL_OK) return rc;
    bs_pattern pat;
    rc = bs_pattern_random(&pat, v[B_M] / v[B_BM], v[B_K] / v[B_BK], density, (uint64_t)v[B_PSEED]);
    if (rc != PL_OK) {
        snprintf(msg, n, "block_sparse_matmul: cannot build the block table (%s)", pl_strerror(rc));
        return rc;
    }
    bs_params p;
    rc = bs_call(&b->call, &p, &pat, v[B_M], v[B_N], v[B_K], v[B_BM], v[B_BN], v[B_BK], msg, n);
    const void *pp = ex_intern(&p, sizeof p);
    const void *off = ex_intern(pat.offsets, sizeof(int32_t) * (size_t)(pat.row_blocks + 1));
    const void *kidx = ex_intern(pat.kidx, sizeof(int32_t) * (size_t)(pat.nnz ? pat.nnz : 1));
    if (rc == PL_OK && (!pp || !off || !kidx)) rc = PL_ENOMEM;
    if (rc == PL_OK) {
        /* bs_call pointed user and the maps at the local p: repoint them at the lasting copy */
        b->call.user = b->call.in[0].map.user = b->call.in[1].map.user = (void *)pp;
        pl_dtype dt = (pl_dtype)v[B_DT];
        pl_array x = PL_ARRAY(NULL, dt, v[B_M], v[B_K]), y = PL_ARRAY(NULL, dt, v[B_K], v[B_N]);
        bs_args(b->args, &pat, &x, &y);
        b->args[0].data = (void *)off, b->args[1].data = (void *)kidx;
        b->n_args = 4;
        b->n_outs = 1;
        b->outs[0] = PL_ARRAY(NULL, dt, v[B_M], v[B_N]);
    }
    bs_pattern_free(&pat);
    return rc;
}

static int bsd_build(const int64_t *v, pl_kernel_build *b, char *msg, size_t n)
{
    return ex_block_sparse_build(v, (double)v[B_PCT] / 100.0, b, msg, n);
}

/* x is zero outside the present blocks (it serves the dense reference), y
 * dense. The present blocks are those of the block table build made. */
static int bsd_inputs(const int64_t *v, pl_kernel_build *b, uint64_t seed)
{
    if (!b->args[2].data || !b->args[3].data) return PL_OK; /* cost-only: no data to fill */
    bs_pattern pat = {.row_blocks = b->args[0].shape[0] - 1, .offsets = b->args[0].data, .kidx = b->args[1].data};
    bs_fill_x(&pat, b->args[2].data, b->args[2].dtype, v[B_M], v[B_K], v[B_BM], v[B_BK], seed);
    void *y = ex_random_matrix(pl_array_size(&b->args[3]), b->args[3].dtype, seed + 1);
    if (!y) return PL_ENOMEM;
    memcpy(b->args[3].data, y, pl_array_bytes(&b->args[3]));
    free(y);
    return PL_OK;
}

static int bsd_reference(const int64_t *v, const pl_kernel_build *b, pl_array *want)
{
    float *c = malloc(sizeof(float) * (size_t)(v[B_M] * v[B_N]));
    int rc = c ? ex_ref_gemm(&b->args[2], &b->args[3], 0, c, v[B_M], v[B_N], v[B_K]) : PL_ENOMEM;
    if (rc == PL_OK) ex_store_f32(&want[0], c, v[B_M] * v[B_N]);
    free(c);
    return rc;
}

/* Only the present blocks' work and bytes count as ideal. */
static double bsd_flops(const int64_t *v) { return 2.0 * v[B_M] * (double)v[B_N] * v[B_K] * v[B_PCT] / 100.0; }
static double bsd_bytes(const int64_t *v)
{
    double es = (double)pl_dtype_size((pl_dtype)v[B_DT]);
    return es * ((double)v[B_M] * v[B_K] * v[B_PCT] / 100.0 + (double)v[B_K] * v[B_N] + (double)v[B_M] * v[B_N]);
}

const pl_kernel_def ex_def_block_sparse = {
    .name = "block_sparse_matmul", .summary = "C = X @ Y with X block-sparse, its block table in scalar prefetch",
    .n_params = 9,
    .params = {{.name = "M", .def = 512, .help = "rows of X and C (a multiple of bm)"},
               {.name = "N", .def = 512, .help = "columns of Y and C"},
               {.name = "K", .def = 1024, .help = "the contraction length (a multiple of bk)"},
               {.name = "bm", .def = 128, .candidates = blk_cands, .n_candidates = 3, .help = "rows per block"},
               {.name = "bn", .def = 256, .candidates = blk_cands, .n_candidates = 3, .help = "columns per block"},
               {.name = "bk", .def = 256, .candidates = blk_cands, .n_candidates = 3,
                .help = "contraction elements per block (X's sparsity unit is (bm, bk))"},
               {.name = "density", .def = 25, .help = "percent of X's (bm, bk) blocks present"},
               {.name = "pattern_seed", .def = 1, .help = "which blocks are present (a fixed shuffle of it)"},
               {.name = "dtype", .kind = PL_PARAM_DTYPE, .def = PL_F32, .candidates = dt_cands, .n_candidates = 2,
                .help = "of X, Y and C: f32 or bf16"}},
    .check = bsd_check, .build = bsd_build, .inputs = bsd_inputs, .reference = bsd_reference,
    .rtol = 1.6e-2, .atol = 1e-2, .flops = bsd_flops, .bytes = bsd_bytes,
};

/* ---- grouped ------------------------------------------------------------------ */

enum { G_M, G_N, G_K, G_G, G_BM, G_BN, G_BK, G_SSEED, G_DT };

static int gmd_check(const int64_t *v, char *msg, size_t n)
{
    int rc = ex_check_positive(&ex_def_grouped, v, msg, n);
    if (rc == PL_OK && (v[G_G] > EX_MAX_TABLE / 2 || ex_cdiv(v[G_M], v[G_BM]) > EX_MAX_TABLE / 2)) {
        snprintf(msg, n, "grouped_matmul: G = %lld groups and cdiv(M, bm) = %lld row blocks must each be at most %d "
                 "(the tile table)", (long long)v[G_G], (long long)ex_cdiv(v[G_M], v[G_BM]), EX_MAX_TABLE / 2);
        return PL_EINVAL;
    }
    if (rc == PL_OK && v[G_M] > INT32_MAX) {
        snprintf(msg, n, "grouped_matmul: M = %lld does not fit the int32 group offsets", (long long)v[G_M]);
        return PL_EINVAL;
    }
    return rc == PL_OK ? ex_check_dtype(&ex_def_grouped, v, G_DT, float_dts, 2, msg, n) : rc;
}

/* The tile table for the ragged sizes given, or those sizes_seed gives. */
static int gmd_tiles(const int64_t *v, const int64_t *given, gm_tiles *t, char *msg, size_t n)
{
    int64_t g = v[G_G];
    int64_t *sizes = malloc(sizeof(int64_t) * (size_t)g);
    int32_t *offsets = malloc(sizeof(int32_t) * (size_t)(g + 1));
    int rc = sizes && offsets ? PL_OK : PL_ENOMEM;
    if (rc == PL_OK) {
        if (given) memcpy(sizes, given, sizeof(int64_t) * (size_t)g);
        else gm_sizes_random(sizes, g, v[G_M], (uint64_t)v[G_SSEED]);
        rc = gm_offsets_from_sizes(offsets, sizes, g);
        if (rc != PL_OK) snprintf(msg, n, "grouped_matmul: the group sizes must be >= 0 and add up to M");
    }
    if (rc == PL_OK) rc = gm_tiles_build(t, offsets, g, v[G_M], v[G_BM], msg, n);
    free(sizes), free(offsets);
    return rc;
}

int ex_grouped_build(const int64_t *v, const int64_t *sizes, pl_kernel_build *b, char *msg, size_t n)
{
    int rc = gmd_check(v, msg, n);
    if (rc != PL_OK) return rc;
    gm_tiles t;
    if ((rc = gmd_tiles(v, sizes, &t, msg, n)) != PL_OK) return rc;
    gm_params p;
    rc = gm_call(&b->call, &p, &t, v[G_M], v[G_N], v[G_K], v[G_BM], v[G_BN], v[G_BK], GM_N_OUTER, msg, n);
    const void *pp = ex_intern(&p, sizeof p);
    const void *off = ex_intern(t.offsets, sizeof(int32_t) * (size_t)(t.groups + 1));
    const void *rb = ex_intern(t.tile_rb, sizeof(int32_t) * (size_t)t.n_tiles);
    const void *tg = ex_intern(t.tile_group, sizeof(int32_t) * (size_t)t.n_tiles);
    if (rc == PL_OK && (!pp || !off || !rb || !tg)) rc = PL_ENOMEM;
    if (rc == PL_OK) {
        /* gm_call pointed user and the maps at the local p: repoint them at the lasting copy */
        b->call.user = b->call.in[0].map.user = b->call.in[1].map.user = b->call.out[0].map.user = (void *)pp;
        pl_dtype dt = (pl_dtype)v[G_DT];
        pl_array x = PL_ARRAY(NULL, dt, v[G_M], v[G_K]), w = PL_ARRAY(NULL, dt, v[G_G], v[G_K], v[G_N]);
        gm_args(b->args, &t, &x, &w);
        b->args[0].data = (void *)off, b->args[1].data = (void *)rb, b->args[2].data = (void *)tg;
        b->n_args = 5;
        b->n_outs = 1;
        b->outs[0] = PL_ARRAY(NULL, dt, v[G_M], v[G_N]);
    }
    gm_tiles_free(&t);
    return rc;
}

static int gmd_build(const int64_t *v, pl_kernel_build *b, char *msg, size_t n)
{
    return ex_grouped_build(v, NULL, b, msg, n);
}

/* out[rows of g] = X[rows of g] @ W[g], group by group through cblas_sgemm. */
static int gmd_reference(const int64_t *v, const pl_kernel_build *b, pl_array *want)
{
    int64_t m = v[G_M], nn = v[G_N], k = v[G_K];
    const int32_t *off = b->args[0].data;
    float *c = calloc((size_t)(m * nn), sizeof(float));
    int rc = c ? PL_OK : PL_ENOMEM;
    size_t es = pl_dtype_size((pl_dtype)v[G_DT]);
    for (int64_t g = 0; rc == PL_OK && g < v[G_G]; g++) {
        int64_t r0 = off[g], rows = off[g + 1] - off[g];
        if (rows == 0) continue;
        pl_array xg = PL_ARRAY((char *)b->args[3].data + (size_t)(r0 * k) * es, (pl_dtype)v[G_DT], rows, k);
        pl_array wg = PL_ARRAY((char *)b->args[4].data + (size_t)(g * k * nn) * es, (pl_dtype)v[G_DT], k, nn);
        rc = ex_ref_gemm(&xg, &wg, 0, c + r0 * nn, rows, nn, k);
    }
    if (rc == PL_OK) ex_store_f32(&want[0], c, m * nn);
    free(c);
    return rc;
}

static double gmd_flops(const int64_t *v) { return 2.0 * v[G_M] * (double)v[G_N] * v[G_K]; }
static double gmd_bytes(const int64_t *v)
{
    double es = (double)pl_dtype_size((pl_dtype)v[G_DT]);
    return es * ((double)v[G_M] * v[G_K] + (double)v[G_G] * v[G_K] * v[G_N] + (double)v[G_M] * v[G_N]);
}

const pl_kernel_def ex_def_grouped = {
    .name = "grouped_matmul", .summary = "MoE-style grouped matmul: ragged row groups, one weight each (megablox gmm)",
    .n_params = 9,
    .params = {{.name = "M", .def = 512, .help = "rows of X and C, cut into ragged groups"},
               {.name = "N", .def = 256, .help = "columns of each weight and of C"},
               {.name = "K", .def = 256, .help = "the contraction length"},
               {.name = "G", .def = 4, .help = "groups (weights)"},
               {.name = "bm", .def = 128, .candidates = blk_cands, .n_candidates = 3, .help = "rows per block"},
               {.name = "bn", .def = 128, .candidates = blk_cands, .n_candidates = 3, .help = "columns per block"},
               {.name = "bk", .def = 128, .candidates = blk_cands, .n_candidates = 3,
                .help = "contraction elements per step"},
               {.name = "sizes_seed", .def = 1, .help = "the ragged group sizes (a fixed function of it)"},
               {.name = "dtype", .kind = PL_PARAM_DTYPE, .def = PL_F32, .candidates = dt_cands, .n_candidates = 2,
                .help = "of X, W and C: f32 or bf16"}},
    .check = gmd_check, .build = gmd_build, .inputs = ex_fill_data_inputs, .reference = gmd_reference,
    .rtol = 1.6e-2, .atol = 1e-2, .flops = gmd_flops, .bytes = gmd_bytes,
};
