/* tests/test_block_sparse.c: the block-sparse matmul of
 * examples/kernels/block_sparse.h, whose block table arrives by scalar
 * prefetch (rule M5) and drives the x and y index maps (B2).
 *
 * Over several shapes, densities and dtypes: the result passes
 * pl_check_matmul against cblas_sgemm on the dense equivalent (V5) with no
 * findings from the default checks (V1, V3, P4); x is copied once per
 * present block visit and never for the steps past a row's count or for an
 * empty row (P2); the kernel does no MXU work for those steps; each output
 * block is written back once (P3), zeros for an empty row.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../examples/kernels/data.h"
#include "../examples/kernels/block_sparse.h"
#include "../kernel/pallas.h"
#include "../sim/tilesim.h"

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* What each grid point did to x and y, from pl_options.on_step. */
#define MAX_STEPS 4096
typedef struct walk_log {
    int64_t n;
    int64_t idx[MAX_STEPS][3];
    pl_step_action x[MAX_STEPS], y[MAX_STEPS];
} walk_log;

static void log_step(const pl_step_info *info, void *user)
{
    walk_log *w = user;
    if (info->final || w->n >= MAX_STEPS) return;
    memcpy(w->idx[w->n], info->idx, sizeof w->idx[w->n]);
    w->x[w->n] = info->op[2].action; /* operands: offsets, kidx, x, y, o */
    w->y[w->n] = info->op[3].action;
    w->n++;
}

typedef struct bs_case {
    int64_t m, n, k, bm, bn, bk;
    pl_dtype dt;
    double density;            /* used when mask is NULL */
    uint64_t seed;
    const unsigned char *mask; /* (m/bm) x (k/bk), or NULL for a random pattern */
    const char *chip;          /* NULL: default */
} bs_case;

typedef struct bs_result {
    pl_report rep;
    pl_check chk;
    bs_pattern pat;
    void *out;
    walk_log *log;
} bs_result;

static void bs_run(const bs_case *t, bs_result *r)
{
    int64_t m = t->m, n = t->n, k = t->k;
    char what[160];
    snprintf(what, sizeof what, "%lldx%lldx%lld %s in (%lld, %lld, %lld)", (long long)m, (long long)n, (long long)k,
             pl_dtype_name(t->dt), (long long)t->bm, (long long)t->bn, (long long)t->bk);
    int rc = t->mask ? bs_pattern_from_mask(&r->pat, m / t->bm, k / t->bk, t->mask)
                     : bs_pattern_random(&r->pat, m / t->bm, k / t->bk, t->density, t->seed);
    cr_assert_eq(rc, PL_OK, "%s: building the pattern: %d", what, rc);
    size_t es = pl_dtype_size(t->dt);
    void *x = malloc((size_t)(m * k) * es), *y = ex_random_matrix(k * n, t->dt, 2);
    r->out = malloc((size_t)(m * n) * es);
    cr_assert(x && r->out);
    bs_fill_x(&r->pat, x, t->dt, m, k, t->bm, t->bk, 7);
    for (int64_t e = 0; e < m * n; e++) pl_store_elem((char *)r->out + (size_t)e * es, t->dt, NAN);
    pl_array xa = PL_ARRAY(x, t->dt, m, k), ya = PL_ARRAY(y, t->dt, k, n), out = PL_ARRAY(r->out, t->dt, m, n);
    pl_array args[4];
    bs_args(args, &r->pat, &xa, &ya);
    bs_params params;
    pl_call call;
    char err[256];
    rc = bs_call(&call, &params, &r->pat, m, n, k, t->bm, t->bn, t->bk, err, sizeof err);
    cr_assert_eq(rc, PL_OK, "%s: bs_call: %s", what, err);
    r->log = calloc(1, sizeof *r->log);
    cr_assert_not_null(r->log);
    pl_options opt = {.chip = t->chip, .on_step = log_step, .on_step_user = r->log};
    rc = pl_pallas_call(&call, args, &out, &opt, &r->rep);
    cr_assert_eq(rc, PL_OK, "%s: pl_pallas_call returned %d: %s", what, rc, r->rep.error);
    cr_assert_eq(r->rep.n_findings, 0, "%s: %d findings with the default checks:\n%s", what, r->rep.n_findings,
                 r->rep.warnings);
    rc = pl_check_matmul(&xa, &ya, &out, &r->chk, NULL);
    cr_assert_eq(rc, PL_OK, "%s: pl_check_matmul returned %d", what, rc);
    cr_assert_eq(r->chk.verdict, PL_PASS, "%s: %s, normalised error %g (pass <= %g) at (%lld, %lld), %lld NaN", what,
                 pl_verdict_name(r->chk.verdict), r->chk.norm_err, r->chk.pass_below, (long long)r->chk.worst_row,
                 (long long)r->chk.worst_col, (long long)r->chk.n_nan);
    free(x);
    free(y);
}

static void bs_free(bs_result *r)
{
    bs_pattern_free(&r->pat);
    free(r->out);
    free(r->log);
}

/* The copy counts, the skipped compute and the write-backs the block table implies. */
static void bs_expect_traffic(const bs_case *t, const bs_result *r)
{
    const pl_report *rep = &r->rep;
    const bs_pattern *p = &r->pat;
    int64_t nj = cdiv(t->n, t->bn), rows = t->m / t->bm, steps = rows * nj * (p->max_row ? p->max_row : 1);
    cr_assert_eq(rep->steps, steps);
    cr_assert_str_eq(rep->op[2].name, "x");
    cr_assert_str_eq(rep->op[3].name, "y");
    int64_t want_x = bs_expected_x_copies(p, nj);
    cr_assert_eq(rep->op[2].copies, want_x,
                 "x copies %lld, want %lld for %lld present blocks over %lld column blocks (a copy per present "
                 "block visit, none for steps past a row's count or for empty rows, rule P2)",
                 (long long)rep->op[2].copies, (long long)want_x, (long long)p->nnz, (long long)nj);
    cr_assert_eq(rep->op[2].copies + rep->op[2].skipped, steps);
    if (nj == 1 && p->nnz > 0)
        cr_assert_eq(rep->op[2].copies, p->nnz, "one column block: x copies %lld, want the %lld present blocks",
                     (long long)rep->op[2].copies, (long long)p->nnz);
    cr_assert_eq(rep->op[2].bytes_in, rep->op[2].copies * t->bm * t->bk * (int64_t)pl_dtype_size(t->dt));
    /* y: at most one copy per present block and column block; never for the extra steps */
    int64_t max_y = p->nnz ? p->nnz * nj : 1;
    cr_assert_leq(rep->op[3].copies, max_y, "y copies %lld > %lld", (long long)rep->op[3].copies, (long long)max_y);
    cr_assert_eq(rep->op[3].copies + rep->op[3].skipped, steps);
    /* compute only for present blocks */
    double flops = 2.0 * (double)t->bm * (double)t->bn * (double)t->bk * (double)p->nnz * (double)nj;
    cr_assert_eq(rep->mxu_flops, flops, "MXU FLOPs %g, want %g: steps past a row's count must skip the dot",
                 rep->mxu_flops, flops);
    cr_assert_eq(rep->op[4].writebacks, rows * nj, "o written back %lld times, want once per block (P3)",
                 (long long)rep->op[4].writebacks);
}

/* No grid point past a row's count, and none of an empty row, copies x or y
 * (except grid point 0, which must load something). */
static void bs_expect_no_copy_when_idle(const bs_result *r)
{
    const walk_log *w = r->log;
    const bs_pattern *p = &r->pat;
    cr_assert_lt(w->n, MAX_STEPS, "the case is too large for the step log");
    cr_assert_eq(w->n, r->rep.steps);
    for (int64_t st = 1; st < w->n; st++) {
        int64_t i = w->idx[st][0], s = w->idx[st][2], cnt = p->offsets[i + 1] - p->offsets[i];
        if (s < cnt) continue;
        cr_assert_eq(w->x[st], PL_ACT_SKIP, "grid point (%lld, %lld, %lld), row count %lld: x action %d, want a skip",
                     (long long)i, (long long)w->idx[st][1], (long long)s, (long long)cnt, w->x[st]);
        cr_assert_eq(w->y[st], PL_ACT_SKIP, "grid point (%lld, %lld, %lld), row count %lld: y action %d, want a skip",
                     (long long)i, (long long)w->idx[st][1], (long long)s, (long long)cnt, w->y[st]);
    }
}

/* Rows of row block i of out (m x n) are all exactly zero. */
static void bs_expect_zero_rows(const bs_case *t, const bs_result *r, int64_t i)
{
    size_t es = pl_dtype_size(t->dt);
    for (int64_t row = i * t->bm; row < (i + 1) * t->bm; row++)
        for (int64_t c = 0; c < t->n; c++) {
            double v = pl_load_elem((char *)r->out + (size_t)(row * t->n + c) * es, t->dt);
            cr_assert(v == 0 && !signbit(v), "empty row block %lld: out[%lld][%lld] = %g, want 0", (long long)i,
                      (long long)row, (long long)c, v);
        }
}

static void bs_full(const bs_case *t)
{
    bs_result r = {0};
    bs_run(t, &r);
    bs_expect_traffic(t, &r);
    bs_expect_no_copy_when_idle(&r);
    for (int64_t i = 0; i < r.pat.row_blocks; i++)
        if (r.pat.offsets[i] == r.pat.offsets[i + 1]) bs_expect_zero_rows(t, &r, i);
    bs_free(&r);
}

/* ---- shapes and densities ---------------------------------------------------------- */

Test(block_sparse, f32_30_percent_two_column_blocks)
{
    bs_full(&(bs_case){256, 256, 1024, 64, 128, 128, PL_F32, 0.3, 1, NULL, NULL});
}

Test(block_sparse, bf16_30_percent_two_column_blocks)
{
    bs_full(&(bs_case){256, 256, 1024, 64, 128, 128, PL_BF16, 0.3, 1, NULL, NULL});
}

Test(block_sparse, f32_one_column_block_copies_x_once_per_present_block)
{
    bs_full(&(bs_case){512, 128, 1024, 128, 128, 256, PL_F32, 0.5, 3, NULL, NULL});
}

Test(block_sparse, bf16_10_percent_square)
{
    bs_full(&(bs_case){512, 512, 512, 64, 256, 128, PL_BF16, 0.1, 11, NULL, NULL});
}

Test(block_sparse, f32_fully_dense_pattern)
{
    bs_result r = {0};
    bs_case t = {256, 256, 512, 128, 128, 128, PL_F32, 1.0, 5, NULL, NULL};
    bs_run(&t, &r);
    bs_expect_traffic(&t, &r);
    /* every block present: the same traffic as the dense tiled matmul */
    cr_assert_eq(r.rep.op[2].copies, 2 * 2 * 4);
    cr_assert_eq(r.rep.op[3].copies, 2 * 2 * 4);
    bs_free(&r);
}

Test(block_sparse, f32_nothing_present_writes_zeros)
{
    bs_case t = {128, 256, 512, 64, 128, 128, PL_F32, 0.0, 1, NULL, NULL};
    bs_result r = {0};
    bs_run(&t, &r);
    cr_assert_eq(r.pat.nnz, 0);
    cr_assert_eq(r.rep.op[2].copies, 1, "x copies %lld: grid point 0 loads one block, nothing after",
                 (long long)r.rep.op[2].copies);
    cr_assert_eq(r.rep.op[3].copies, 1);
    cr_assert_eq(r.rep.mxu_flops, 0);
    bs_expect_traffic(&t, &r);
    for (int64_t i = 0; i < 2; i++) bs_expect_zero_rows(&t, &r, i);
    bs_free(&r);
}

Test(block_sparse, f32_ragged_n)
{
    bs_full(&(bs_case){256, 300, 512, 64, 128, 128, PL_F32, 0.4, 9, NULL, NULL});
}

/* ---- empty rows, in front, in the middle, at the end --------------------------------- */

/* 6 row blocks x 4 k blocks: rows 0, 2, 3 and 5 empty; row 1 has one block,
 * row 4 three. */
static const unsigned char mask_empty_rows[6 * 4] = {
    0, 0, 0, 0,
    0, 0, 1, 0,
    0, 0, 0, 0,
    0, 0, 0, 0,
    1, 0, 1, 1,
    0, 0, 0, 0,
};

Test(block_sparse, f32_all_empty_rows_front_middle_end)
{
    bs_case t = {6 * 64, 256, 4 * 128, 64, 128, 128, PL_F32, 0, 0, mask_empty_rows, NULL};
    bs_result r = {0};
    bs_run(&t, &r);
    cr_assert_eq(r.pat.empty_rows, 4);
    cr_assert_eq(r.pat.max_row, 3);
    bs_expect_traffic(&t, &r);
    /* row 1: one block for both column blocks; row 4: 3 blocks x 2 column blocks */
    cr_assert_eq(r.rep.op[2].copies, 1 + 3 * 2);
    bs_expect_no_copy_when_idle(&r);
    for (int64_t i = 0; i < 6; i++)
        if (i != 1 && i != 4) bs_expect_zero_rows(&t, &r, i);
    bs_free(&r);
}

Test(block_sparse, bf16_all_empty_rows_front_middle_end)
{
    bs_full(&(bs_case){6 * 64, 256, 4 * 128, 64, 128, 128, PL_BF16, 0, 0, mask_empty_rows, NULL});
}

/* A single present block, in the last row. */
static const unsigned char mask_last_only[4 * 3] = {
    0, 0, 0,
    0, 0, 0,
    0, 0, 0,
    0, 1, 0,
};

Test(block_sparse, f32_only_the_last_row_has_a_block)
{
    bs_case t = {4 * 32, 384, 3 * 128, 32, 128, 128, PL_F32, 0, 0, mask_last_only, NULL};
    bs_result r = {0};
    bs_run(&t, &r);
    bs_expect_traffic(&t, &r);
    cr_assert_eq(r.rep.op[2].copies, 1, "the leading empty rows name the first block the walk loads");
    cr_assert_eq(r.rep.op[3].copies, 3, "y: one block per column block of the last row");
    bs_expect_no_copy_when_idle(&r);
    bs_free(&r);
}

/* ---- megacore and order ------------------------------------------------------------- */

Test(block_sparse, f32_megacore_split_rows)
{
    bs_case t = {512, 256, 512, 64, 128, 128, PL_F32, 0.35, 21, NULL, "v4"};
    bs_result r = {0};
    bs_run(&t, &r);
    cr_assert_eq(r.rep.cores, 2);
    cr_assert_eq(r.rep.op[4].writebacks, 8 * 2);
    bs_free(&r);
}

Test(block_sparse, f32_result_does_not_depend_on_the_order_of_parallel_axes)
{
    bs_pattern pat;
    cr_assert_eq(bs_pattern_from_mask(&pat, 6, 4, mask_empty_rows), PL_OK);
    int64_t m = 6 * 64, n = 256, k = 4 * 128;
    float *x = malloc((size_t)(m * k) * sizeof *x), *y = ex_random_matrix(k * n, PL_F32, 4);
    float *o = calloc((size_t)(m * n), sizeof *o);
    cr_assert(x && o);
    bs_fill_x(&pat, x, PL_F32, m, k, 64, 128, 3);
    pl_array xa = PL_ARRAY(x, PL_F32, m, k), ya = PL_ARRAY(y, PL_F32, k, n), out = PL_ARRAY(o, PL_F32, m, n);
    pl_array args[4];
    bs_args(args, &pat, &xa, &ya);
    bs_params params;
    pl_call call;
    cr_assert_eq(bs_call(&call, &params, &pat, m, n, k, 64, 128, 128, NULL, 0), PL_OK);
    pl_report rep;
    int rc = pl_check_order(&call, args, &out, NULL, 1234, &rep);
    cr_assert_eq(rc, PL_OK, "pl_check_order: %d: %s", rc, rep.error);
    free(x), free(y), free(o);
    bs_pattern_free(&pat);
}

/* ---- the host side -------------------------------------------------------------------- */

Test(block_sparse, pattern_csr_and_bad_calls)
{
    bs_pattern pat;
    cr_assert_eq(bs_pattern_from_mask(&pat, 6, 4, mask_empty_rows), PL_OK);
    static const int32_t off[7] = {0, 0, 1, 1, 1, 4, 4}, kidx[4] = {2, 0, 2, 3};
    cr_assert_eq(pat.nnz, 4);
    cr_assert_eq(memcmp(pat.offsets, off, sizeof off), 0);
    cr_assert_eq(memcmp(pat.kidx, kidx, sizeof kidx), 0);
    cr_assert_eq(bs_expected_x_copies(&pat, 2), 1 + 3 * 2);
    cr_assert_eq(bs_expected_x_copies(&pat, 1), 4);

    bs_params p;
    pl_call call;
    char err[256];
    cr_assert_eq(bs_call(&call, &p, &pat, 6 * 64 + 8, 256, 512, 64, 128, 128, err, sizeof err), PL_EINVAL);
    cr_assert(strstr(err, "BM"), "%s", err);
    cr_assert_eq(bs_call(&call, &p, &pat, 6 * 64, 256, 500, 64, 128, 128, err, sizeof err), PL_EINVAL);
    cr_assert(strstr(err, "BK"), "%s", err);
    cr_assert_eq(bs_call(&call, &p, &pat, 6 * 64, 256, 512, 64, 128, 256, err, sizeof err), PL_EINVAL);
    cr_assert(strstr(err, "pattern"), "%s", err);
    bs_pattern_free(&pat);

    cr_assert_eq(bs_pattern_random(&pat, 4, 5, 0.5, 1), PL_OK);
    cr_assert_eq(pat.nnz, 10, "round(0.5 * 20) blocks present, got %lld", (long long)pat.nnz);
    for (int64_t i = 0; i < 4; i++)
        for (int32_t e = pat.offsets[i] + 1; e < pat.offsets[i + 1]; e++)
            cr_assert_lt(pat.kidx[e - 1], pat.kidx[e], "k indices of a row must increase");
    bs_pattern_free(&pat);
    cr_assert_eq(bs_pattern_random(&pat, 4, 5, 1.5, 1), PL_EINVAL);
}
