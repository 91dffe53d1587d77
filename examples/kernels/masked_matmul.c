/* examples/kernels/masked_matmul.c: a dense matmul whose output is masked
 * by a block-sparse mask, skipping the blocks the mask zeroes, as the JAX
 * Pallas TPU sparse guide writes it ("Dense @ Dense Matrix Multiplication
 * with a Block-Sparse Output Mask", docs/pallas/tpu/sparse): o = mask *
 * (x @ y), the mask lower-triangular (jnp.tril), the guide's example.
 *
 * The grid is dense, (M/bm, N/bn, K/bk). Four scalar-prefetch tables
 * (rule M5), built on the host as the guide's sparsify_mask builds them:
 *   - block_mask[i, j]: 1 where the mask block has a nonzero element;
 *   - prefetch_mask[i, j]: which of the mask's distinct blocks (mask_data)
 *     block (i, j) uses, or, for a zero block, the next nonzero block's;
 *   - prefetch_i[i, j], prefetch_j[i, j]: the block itself when nonzero,
 *     else the next nonzero block in grid order.
 * x's map is (prefetch_i[i, j], k if block (i, j) is nonzero else 0), y's
 * (that k, prefetch_j[i, j]): over a zero block both keep naming the first
 * blocks of the next computed one, so the pipeline fetches them once,
 * ahead, and copies nothing while the kernel skips (P2). The mask's
 * distinct blocks (all ones below the diagonal, one triangle per offset
 * on it) are an int32 array (types, bm, bn), selected by prefetch_mask.
 * The kernel zeroes o and an f32 accumulator at k == 0, adds x @ y where
 * the block is nonzero, and at the last k writes mask * acc.
 *
 * The guide times it on a v5e at 16384^3, blocks 512 x 512 x 1024:
 * 28.648 ms (bench/data/pallas_guide_v5e.csv; about 1.8x faster than the
 * dense XLA matmul and mask, 49.988 ms). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kdef_util.h"
#include "registry.h"
#include "values.h"

enum { P_M, P_N, P_K, P_BM, P_BN, P_BK, P_DT };

typedef struct mmk_params {
    int64_t bm, bn;
} mmk_params;

/* ---- the tables (host) ---------------------------------------------------------- */

/* Block (i, j) of tril(ones(M, N)): element (r, c) is 1 where i*bm + r >=
 * j*bn + c, i.e. r - c >= d with d = j*bn - i*bm. All ones when d <= 1 -
 * bn, all zero when d > bm - 1; in between one triangle per d. */
static int64_t block_offset(int64_t i, int64_t j, int64_t bm, int64_t bn) { return j * bn - i * bm; }

typedef struct mmk_tables {
    int32_t *block_mask, *prefetch_mask, *prefetch_i, *prefetch_j;
    int64_t *type_d; /* the offset d of each distinct nonzero mask block */
    int64_t n_types;
} mmk_tables;

static void tables_free(mmk_tables *t)
{
    free(t->block_mask), free(t->prefetch_mask), free(t->prefetch_i), free(t->prefetch_j), free(t->type_d);
}

/* sparsify_mask's walk: from the last block back to the first, so that
 * each zero block learns the next nonzero one; distinct blocks numbered
 * in the order the walk meets them. More than max_types distinct blocks:
 * PL_EINVAL, found before the search for a block's type grows long. */
static int tables_build(mmk_tables *t, int64_t nbm, int64_t nbn, int64_t bm, int64_t bn, int64_t max_types)
{
    size_t n = (size_t)(nbm * nbn);
    *t = (mmk_tables){.block_mask = malloc(n * sizeof(int32_t)), .prefetch_mask = malloc(n * sizeof(int32_t)),
                      .prefetch_i = malloc(n * sizeof(int32_t)), .prefetch_j = malloc(n * sizeof(int32_t)),
                      .type_d = malloc(n * sizeof(int64_t))};
    if (!t->block_mask || !t->prefetch_mask || !t->prefetch_i || !t->prefetch_j || !t->type_d) {
        tables_free(t);
        return PL_ENOMEM;
    }
    int64_t next_type = 0, next_i = nbm - 1, next_j = nbn - 1;
    for (int64_t i = nbm - 1; i >= 0; i--)
        for (int64_t j = nbn - 1; j >= 0; j--) {
            int64_t d = block_offset(i, j, bm, bn), e = i * nbn + j;
            int nonzero = d <= bm - 1;
            if (nonzero) {
                if (d <= 1 - bn) d = 1 - bn; /* every all-ones block is one type */
                int64_t ty = 0;
                while (ty < t->n_types && t->type_d[ty] != d) ty++;
                if (ty == t->n_types && t->n_types == max_types) {
                    tables_free(t);
                    return PL_EINVAL;
                }
                if (ty == t->n_types) t->type_d[t->n_types++] = d;
                next_type = ty, next_i = i, next_j = j;
            }
            t->block_mask[e] = nonzero;
            t->prefetch_mask[e] = (int32_t)next_type;
            t->prefetch_i[e] = (int32_t)next_i;
            t->prefetch_j[e] = (int32_t)next_j;
        }
    return PL_OK;
}

/* ---- the index maps: read the tables (M5) --------------------------------------- */

static int32_t table_at(const pl_ref *prefetch, int t, const int64_t *g)
{
    return ((const int32_t *)prefetch[t].data)[g[0] * prefetch[t].shape[1] + g[1]];
}

static void x_map(const int64_t *g, const pl_ref *prefetch, int64_t *b, void *user)
{
    (void)user;
    b[0] = g[0], b[1] = g[2];
    if (!prefetch) return; /* pl_check_blame calls maps without the tables; x is not an output */
    b[0] = table_at(prefetch, 2, g);
    b[1] = table_at(prefetch, 0, g) ? g[2] : 0;
}

static void y_map(const int64_t *g, const pl_ref *prefetch, int64_t *b, void *user)
{
    (void)user;
    b[0] = g[2], b[1] = g[1];
    if (!prefetch) return;
    b[0] = table_at(prefetch, 0, g) ? g[2] : 0;
    b[1] = table_at(prefetch, 3, g);
}

static void mask_map(const int64_t *g, const pl_ref *prefetch, int64_t *b, void *user)
{
    (void)user;
    b[0] = b[1] = b[2] = 0;
    if (prefetch) b[0] = table_at(prefetch, 1, g);
}

/* ---- the kernel ----------------------------------------------------------------- */

/* refs: block_mask, prefetch_mask, prefetch_i, prefetch_j (SMEM), x (bm, bk),
 * y (bk, bn), mask (1, bm, bn) int32, o (bm, bn), acc (bm, bn) f32 */
static void mmk_kernel(pl_ctx *c, pl_ref *r)
{
    pl_ref x = r[4], y = r[5], mask = r[6], o = r[7], acc = r[8];
    int64_t i = pl_program_id(c, 0), j = pl_program_id(c, 1), k = pl_program_id(c, 2);
    int compute = pl_get_at(c, r[0], i, j) != 0;
    if (k == 0) {
        pl_fill(c, o, 0.0);
        pl_fill(c, acc, 0.0);
    }
    if (!compute) return; /* the mask zeroes the whole block: no work */
    pl_dot(c, acc, x, y, PL_DOT_ACC);
    if (k == pl_num_programs(c, 2) - 1) {
        ex_values *vals = ex_values_begin(c, ex_value_bytes(PL_F32, o.shape[0], o.shape[1]));
        pl_ref f = ex_value(vals, PL_F32, o.shape[0], o.shape[1]);
        pl_mul(c, f, pl_at(c, mask, 0), acc); /* (mask_ref[0] * acc).astype(o.dtype) */
        pl_copy(c, o, f);
    }
}

/* ---- the definition ------------------------------------------------------------- */

static const int64_t blk_cands[] = {128, 256, 512, 1024};
static const int64_t dt_cands[] = {PL_F32, PL_BF16};
static const pl_dtype float_dts[] = {PL_F32, PL_BF16};

static int mmk_check(const int64_t *v, char *msg, size_t n)
{
    const pl_kernel_def *d = &ex_def_masked_matmul;
    int rc = ex_check_positive(d, v, msg, n);
    if (rc != PL_OK) return rc;
    for (int a = 0; a < 3; a++)
        if (v[a] % v[P_BM + a]) {
            snprintf(msg, n, "%s: %s = %lld must divide %s = %lld (the guide's grid is whole blocks)", d->name,
                     d->params[P_BM + a].name, (long long)v[P_BM + a], d->params[a].name, (long long)v[a]);
            return PL_EINVAL;
        }
    if (v[P_M] / v[P_BM] > EX_MAX_TABLE / (v[P_N] / v[P_BN])) {
        snprintf(msg, n, "%s: M/bm x N/bn = %lld x %lld blocks is more than the %d a table may hold; use larger "
                 "bm or bn", d->name, (long long)(v[P_M] / v[P_BM]), (long long)(v[P_N] / v[P_BN]), EX_MAX_TABLE);
        return PL_EINVAL;
    }
    return ex_check_dtype(d, v, P_DT, float_dts, 2, msg, n);
}

/* The distinct mask blocks, (types, bm, bn) int32. NULL: no memory. */
static int32_t *mask_data(const mmk_tables *t, int64_t bm, int64_t bn)
{
    int32_t *m = malloc((size_t)(t->n_types * bm * bn) * sizeof *m);
    for (int64_t ty = 0; m && ty < t->n_types; ty++)
        for (int64_t r = 0; r < bm; r++)
            for (int64_t c = 0; c < bn; c++) m[(ty * bm + r) * bn + c] = r - c >= t->type_d[ty];
    return m;
}

static int mmk_build(const int64_t *v, pl_kernel_build *b, char *msg, size_t n)
{
    int rc = mmk_check(v, msg, n);
    if (rc != PL_OK) return rc;
    int64_t bm = v[P_BM], bn = v[P_BN], bk = v[P_BK], nbm = v[P_M] / bm, nbn = v[P_N] / bn;
    /* the mask's distinct blocks live in HBM as the guide's mask_data: at
     * most 512 MiB of them (one must fit VMEM anyway, M4), known before
     * they are allocated */
    double block_bytes = (double)bm * (double)bn * 4, limit = (double)(512LL << 20);
    int64_t max_types = block_bytes > limit ? 0 : (int64_t)(limit / block_bytes);
    mmk_tables t;
    if ((rc = tables_build(&t, nbm, nbn, bm, bn, max_types)) != PL_OK) {
        if (rc == PL_EINVAL)
            snprintf(msg, n, "masked_matmul: the mask's distinct (%lld, %lld) int32 blocks take more than 512 MiB "
                     "(%lld of them at most fit in it); use smaller bm and bn", (long long)bm, (long long)bn,
                     (long long)max_types);
        else snprintf(msg, n, "masked_matmul: no memory");
        return rc;
    }
    size_t tb = (size_t)(nbm * nbn) * sizeof(int32_t);
    int32_t *md = mask_data(&t, bm, bn);
    const void *tabs[4] = {ex_intern(t.block_mask, tb), ex_intern(t.prefetch_mask, tb), ex_intern(t.prefetch_i, tb),
                           ex_intern(t.prefetch_j, tb)};
    const void *mdi = md ? ex_intern(md, (size_t)(t.n_types * bm * bn) * sizeof *md) : NULL;
    int64_t types = t.n_types;
    free(md);
    tables_free(&t);
    if (!tabs[0] || !tabs[1] || !tabs[2] || !tabs[3] || !mdi) return snprintf(msg, n, "masked_matmul: no memory"), PL_ENOMEM;
    pl_dtype dt = (pl_dtype)v[P_DT];
    b->call = (pl_call){
        .name = "masked_matmul", .kernel = mmk_kernel, .grid_rank = 3, .grid = {nbm, nbn, v[P_K] / bk},
        .semantics = {PL_ARBITRARY, PL_ARBITRARY, PL_ARBITRARY}, /* the guide's pallas_call sets none */
        .num_scalar_prefetch = 4, .n_in = 3,
        .in = {PL_BLOCK(PL_MAP_FN(x_map, NULL), bm, bk), PL_BLOCK(PL_MAP_FN(y_map, NULL), bk, bn),
               PL_BLOCK(PL_MAP_FN(mask_map, NULL), 1, bm, bn)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, 1), bm, bn)},
        .n_scratch = 1, .scratch = {PLTPU_VMEM(PL_F32, bm, bn)},
    };
    static const char *names[] = {"x", "y", "mask"};
    for (int a = 0; a < 3; a++) b->call.in[a].name = names[a];
    b->call.out[0].name = "o";
    b->call.scratch[0].name = "acc";
    for (int a = 0; a < 4; a++) b->args[a] = PL_ARRAY((void *)tabs[a], PL_I32, nbm, nbn);
    b->args[4] = PL_ARRAY(NULL, dt, v[P_M], v[P_K]);
    b->args[5] = PL_ARRAY(NULL, dt, v[P_K], v[P_N]);
    b->args[6] = PL_ARRAY((void *)mdi, PL_I32, types, bm, bn);
    b->n_args = 7;
    b->n_outs = 1;
    b->outs[0] = PL_ARRAY(NULL, dt, v[P_M], v[P_N]);
    return PL_OK;
}

/* o = tril(x @ y), rounded once to o's dtype. */
static int mmk_reference(const int64_t *v, const pl_kernel_build *b, pl_array *want)
{
    int64_t m = v[P_M], nn = v[P_N];
    float *c = malloc(sizeof(float) * (size_t)(m * nn));
    int rc = c ? ex_ref_gemm(&b->args[4], &b->args[5], 0, c, m, nn, v[P_K]) : PL_ENOMEM;
    if (rc == PL_OK) {
        for (int64_t r = 0; r < m; r++)
            for (int64_t col = r + 1; col < nn; col++) c[r * nn + col] = 0;
        ex_store_f32(&want[0], c, m * nn);
    }
    free(c);
    return rc;
}

/* The ideal: the lower triangle's work, x and y once, o once. */
static double mmk_flops(const int64_t *v)
{
    double m = (double)v[P_M], nn = (double)v[P_N], kept = nn <= m ? nn * (2 * m - nn + 1) / 2 : m * (m + 1) / 2;
    return 2.0 * kept * (double)v[P_K];
}
static double mmk_bytes(const int64_t *v)
{
    double es = (double)pl_dtype_size((pl_dtype)v[P_DT]);
    return es * ((double)v[P_M] * v[P_K] + (double)v[P_K] * v[P_N] + (double)v[P_M] * v[P_N]);
}

const pl_kernel_def ex_def_masked_matmul = {
    .name = "masked_matmul",
    .summary = "o = tril(x @ y), blocks the mask zeroes skipped through prefetch maps (the Pallas sparse guide)",
    .n_params = 7,
    .params = {{.name = "M", .def = 1024, .help = "rows of x and o (a multiple of bm)"},
               {.name = "N", .def = 1024, .help = "columns of y and o (a multiple of bn)"},
               {.name = "K", .def = 1024, .help = "the contraction length (a multiple of bk)"},
               {.name = "bm", .def = 256, .candidates = blk_cands, .n_candidates = 4, .help = "rows per block",
                .divides = "M", .multiple = 128},
               {.name = "bn", .def = 256, .candidates = blk_cands, .n_candidates = 4, .help = "columns per block",
                .divides = "N", .multiple = 128},
               {.name = "bk", .def = 512, .candidates = blk_cands, .n_candidates = 4,
                .help = "contraction elements per block", .divides = "K", .multiple = 128},
               {.name = "dtype", .kind = PL_PARAM_DTYPE, .def = PL_BF16, .candidates = dt_cands, .n_candidates = 2,
                .help = "of x, y and o: bf16 (the guide's) or f32"}},
    .check = mmk_check, .build = mmk_build, .reference = mmk_reference,
    .rtol = 1.6e-2, .atol = 1e-2, .flops = mmk_flops, .bytes = mmk_bytes,
};
