/* tests/test_math_ops.c: the softmax ops of kernel/math.c (pl_exp,
 * pl_scale, pl_sub, pl_max_rows, pl_sum_rows, the column and row broadcasts,
 * pl_tril) against naive loops, in f32 and bf16, in place and on pl_ds views;
 * and the VPU work they record.
 *
 * Each case is a one-step call (grid ()) whose inputs and output are whole
 * arrays (rule B3): the kernel runs one op, the host computes the same op in
 * double from the stored inputs and rounds it once to the output's dtype, as
 * the ops promise, so results must agree bit for bit.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../kernel/pallas.h"
#include "../sim/tilesim.h"
#include "helpers.h"

/* ---- the ops, by number ------------------------------------------------------- */

typedef enum {
    OP_EXP, OP_SCALE, OP_SUB, OP_MAX_ROWS, OP_SUM_ROWS, OP_SUB_COL, OP_MUL_COL, OP_DIV_COL, OP_ADD_ROW, OP_MUL_ROW,
    OP_TRIL, OP_COUNT
} mt_op;

typedef enum { B_NONE, B_SAME, B_COL, B_ROW } mt_b; /* the second operand's shape */

static const struct {
    const char *name;
    mt_b b;
    int reduce;   /* output (rows, 1) */
    double flops; /* per element produced (reductions: per element reduced) */
} OPS[OP_COUNT] = {
    [OP_EXP] = {"pl_exp", B_NONE, 0, 4},          [OP_SCALE] = {"pl_scale", B_NONE, 0, 1},
    [OP_SUB] = {"pl_sub", B_SAME, 0, 1},          [OP_MAX_ROWS] = {"pl_max_rows", B_NONE, 1, 1},
    [OP_SUM_ROWS] = {"pl_sum_rows", B_NONE, 1, 1}, [OP_SUB_COL] = {"pl_sub_col", B_COL, 0, 1},
    [OP_MUL_COL] = {"pl_mul_col", B_COL, 0, 1},   [OP_DIV_COL] = {"pl_div_col", B_COL, 0, 4},
    [OP_ADD_ROW] = {"pl_add_row", B_ROW, 0, 1},   [OP_MUL_ROW] = {"pl_mul_row", B_ROW, 0, 1},
    [OP_TRIL] = {"pl_tril", B_NONE, 0, 1},
};

#define MT_SCALE (-0.7)  /* pl_scale's factor */
#define MT_DIAG 2        /* pl_tril's diagonal */
#define MT_SENT 7.0      /* what a view test puts around the view */

static void apply(pl_ctx *c, mt_op op, pl_ref dst, pl_ref a, pl_ref b)
{
    switch (op) {
    case OP_EXP: pl_exp(c, dst, a); break;
    case OP_SCALE: pl_scale(c, dst, a, MT_SCALE); break;
    case OP_SUB: pl_sub(c, dst, a, b); break;
    case OP_MAX_ROWS: pl_max_rows(c, dst, a); break;
    case OP_SUM_ROWS: pl_sum_rows(c, dst, a); break;
    case OP_SUB_COL: pl_sub_col(c, dst, a, b); break;
    case OP_MUL_COL: pl_mul_col(c, dst, a, b); break;
    case OP_DIV_COL: pl_div_col(c, dst, a, b); break;
    case OP_ADD_ROW: pl_add_row(c, dst, a, b); break;
    case OP_MUL_ROW: pl_mul_row(c, dst, a, b); break;
    case OP_TRIL: pl_tril(c, dst, a, MT_DIAG, -INFINITY); break;
    default: break;
    }
}

/* Element (i, j) of the op's result; a is (rows, cols) and b has the op's
 * second shape, both row-major doubles. */
static double naive(mt_op op, const double *a, const double *b, int64_t cols, int64_t i, int64_t j)
{
    double x = a[i * cols + j], acc;
    switch (op) {
    case OP_EXP: return exp(x);
    case OP_SCALE: return x * MT_SCALE;
    case OP_SUB: return x - b[i * cols + j];
    case OP_MAX_ROWS:
        acc = -INFINITY;
        for (int64_t k = 0; k < cols; k++) {
            double y = a[i * cols + k];
            if (isnan(y)) return y;
            if (y > acc) acc = y;
        }
        return acc;
    case OP_SUM_ROWS:
        acc = 0;
        for (int64_t k = 0; k < cols; k++) acc += a[i * cols + k];
        return acc;
    case OP_SUB_COL: return x - b[i];
    case OP_MUL_COL: return x * b[i];
    case OP_DIV_COL: return x / b[i];
    case OP_ADD_ROW: return x + b[j];
    case OP_MUL_ROW: return x * b[j];
    case OP_TRIL: return j <= i + MT_DIAG ? x : -INFINITY;
    default: return NAN;
    }
}

/* ---- one case --------------------------------------------------------------------- */

typedef enum { MODE_PLAIN, MODE_IN_PLACE, MODE_VIEW } mt_mode;

/* In MODE_VIEW every array is PAD_R x PAD_C larger than the op's operands,
 * which are pl_ds views at an offset (a different one for the output). */
#define PAD_R 3
#define PAD_C 5
#define IN_R0 1
#define IN_C0 2
#define OUT_R0 2
#define OUT_C0 3

typedef struct mt_case {
    mt_op op;
    mt_mode mode;
    pl_dtype in_dt, out_dt;
    int64_t rows, cols;
} mt_case;

static void shape_of(const mt_case *t, int which /* 0 a, 1 b, 2 out */, int64_t *r, int64_t *c)
{
    *r = t->rows, *c = t->cols;
    if (which == 1 && OPS[t->op].b == B_COL) *c = 1;
    if (which == 1 && OPS[t->op].b == B_ROW) *r = 1;
    if (which == 2 && OPS[t->op].reduce) *c = 1;
}

static pl_ref view(pl_ctx *c, pl_ref r, int64_t r0, int64_t c0, int64_t rows, int64_t cols)
{
    return pl_ds(c, pl_ds(c, r, 0, r0, rows), 1, c0, cols);
}

static void case_kernel(pl_ctx *c, pl_ref *refs)
{
    const mt_case *t = pl_kernel_user(c);
    int has_b = OPS[t->op].b != B_NONE;
    pl_ref a = refs[0], b = has_b ? refs[1] : refs[0], o = refs[has_b ? 2 : 1];
    switch (t->mode) {
    case MODE_PLAIN: apply(c, t->op, o, a, b); break;
    case MODE_IN_PLACE:
        pl_copy(c, o, a);
        apply(c, t->op, o, o, b);
        break;
    case MODE_VIEW: {
        int64_t r, k;
        pl_fill(c, o, MT_SENT);
        shape_of(t, 0, &r, &k);
        a = view(c, a, IN_R0, IN_C0, r, k);
        shape_of(t, 1, &r, &k);
        b = view(c, b, IN_R0, IN_C0, r, k);
        shape_of(t, 2, &r, &k);
        apply(c, t->op, view(c, o, OUT_R0, OUT_C0, r, k), a, b);
        break;
    }
    }
}

/* A pseudo-random array of n values in [lo, lo + span), stored as dt. */
static void *random_array(int64_t n, pl_dtype dt, double lo, double span, uint64_t seed)
{
    size_t es = pl_dtype_size(dt);
    char *p = malloc((size_t)n * es);
    cr_assert_not_null(p);
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        pl_store_elem(p + (size_t)i * es, dt, lo + span * (double)(seed >> 11) / 9007199254740992.0);
    }
    return p;
}

/* The (rows, cols) block at (r0, c0) of a row-major (R, C) array, as doubles. */
static double *extract(const void *p, pl_dtype dt, int64_t C, int64_t r0, int64_t c0, int64_t rows, int64_t cols)
{
    double *d = malloc((size_t)(rows * cols + 1) * sizeof *d);
    cr_assert_not_null(d);
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            d[i * cols + j] = pl_load_elem((const char *)p + (size_t)((r0 + i) * C + c0 + j) * pl_dtype_size(dt), dt);
    return d;
}

/* Same value, or both NaN. */
static int same(double a, double b) { return (isnan(a) && isnan(b)) || (a == b && signbit(a) == signbit(b)); }

static const char *mode_name(mt_mode m) { return m == MODE_PLAIN ? "plain" : m == MODE_IN_PLACE ? "in place" : "view"; }

/* Run the case and compare every element of the output with the naive loop
 * (and, for a view, with the sentinel around it). */
static void run_case(const mt_case *t)
{
    static mt_case user;
    user = *t;
    int has_b = OPS[t->op].b != B_NONE, pad = t->mode == MODE_VIEW;
    int64_t R[3], C[3];
    void *data[3];
    pl_array arr[3];
    for (int w = 0; w < 3; w++) {
        shape_of(t, w, &R[w], &C[w]);
        R[w] += pad ? PAD_R : 0, C[w] += pad ? PAD_C : 0;
        pl_dtype dt = w == 2 ? t->out_dt : t->in_dt;
        data[w] = w == 2 ? random_array(R[w] * C[w], dt, 0, 0, 0) /* zeros */
                  : random_array(R[w] * C[w], dt, w ? 0.25 : -3.0, w ? 2.0 : 6.0, 11 + (uint64_t)w);
        arr[w] = PL_ARRAY(data[w], dt, R[w], C[w]);
    }
    pl_call call = {.name = OPS[t->op].name, .kernel = case_kernel, .user = &user, .n_in = has_b ? 2 : 1, .n_out = 1};
    pl_array args[2] = {arr[0], arr[1]};
    pl_report rep;
    int rc = pl_pallas_call(&call, args, &arr[2], NULL, &rep);
    cr_assert_eq(rc, PL_OK, "%s %s %s: %s", OPS[t->op].name, pl_dtype_name(t->in_dt), mode_name(t->mode), rep.error);
    cr_expect_eq(rep.n_findings, 0, "%s %s: %d findings: %s", OPS[t->op].name, mode_name(t->mode), rep.n_findings,
                 rep.n_findings ? rep.findings[0].msg : "");

    int64_t r0 = pad ? IN_R0 : 0, c0 = pad ? IN_C0 : 0, ar, ac, br, bc, orr, oc;
    shape_of(t, 0, &ar, &ac);
    shape_of(t, 1, &br, &bc);
    shape_of(t, 2, &orr, &oc);
    double *a = extract(data[0], t->in_dt, C[0], r0, c0, ar, ac);
    double *b = has_b ? extract(data[1], t->in_dt, C[1], r0, c0, br, bc) : NULL;
    int64_t bad = 0;
    for (int64_t i = 0; i < R[2]; i++)
        for (int64_t j = 0; j < C[2]; j++) {
            int64_t vi = i - (pad ? OUT_R0 : 0), vj = j - (pad ? OUT_C0 : 0);
            int inside = vi >= 0 && vi < orr && vj >= 0 && vj < oc;
            char want[8];
            pl_store_elem(want, t->out_dt, inside ? naive(t->op, a, b, ac, vi, vj) : MT_SENT);
            double w = pl_load_elem(want, t->out_dt);
            double g = pl_load_elem((char *)data[2] + (size_t)(i * C[2] + j) * pl_dtype_size(t->out_dt), t->out_dt);
            if (!same(g, w) && bad++ < 3)
                cr_expect(0, "%s %s->%s %s (%lldx%lld): element (%lld, %lld) is %.9g, want %.9g", OPS[t->op].name,
                          pl_dtype_name(t->in_dt), pl_dtype_name(t->out_dt), mode_name(t->mode), (long long)t->rows,
                          (long long)t->cols, (long long)i, (long long)j, g, w);
        }
    cr_expect_eq(bad, 0, "%s %s %s: %lld elements differ", OPS[t->op].name, pl_dtype_name(t->in_dt),
                 mode_name(t->mode), (long long)bad);
    free(a), free(b);
    for (int w = 0; w < 3; w++) free(data[w]);
}

/* Every mode in f32 and in bf16, on a block and on a ragged shape. */
static void check_op(mt_op op)
{
    static const pl_dtype dts[] = {PL_F32, PL_BF16};
    static const int64_t shapes[][2] = {{16, 128}, {5, 37}, {1, 9}};
    for (size_t d = 0; d < 2; d++)
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
            for (int m = MODE_PLAIN; m <= MODE_VIEW; m++) {
                if (m == MODE_IN_PLACE && OPS[op].reduce) continue; /* dst (r, 1) cannot be the (r, c) source */
                run_case(&(mt_case){op, (mt_mode)m, dts[d], dts[d], shapes[s][0], shapes[s][1]});
            }
}

Test(math, exp_matches_naive) { check_op(OP_EXP); }
Test(math, scale_matches_naive) { check_op(OP_SCALE); }
Test(math, sub_matches_naive) { check_op(OP_SUB); }
Test(math, max_rows_matches_naive) { check_op(OP_MAX_ROWS); }
Test(math, sum_rows_matches_naive) { check_op(OP_SUM_ROWS); }
Test(math, sub_col_matches_naive) { check_op(OP_SUB_COL); }
Test(math, mul_col_matches_naive) { check_op(OP_MUL_COL); }
Test(math, div_col_matches_naive) { check_op(OP_DIV_COL); }
Test(math, add_row_matches_naive) { check_op(OP_ADD_ROW); }
Test(math, mul_row_matches_naive) { check_op(OP_MUL_ROW); }
Test(math, tril_matches_naive) { check_op(OP_TRIL); }

Test(math, mixed_dtypes_round_once_to_dst)
{
    for (mt_op op = 0; op < OP_COUNT; op++) {
        run_case(&(mt_case){op, MODE_PLAIN, PL_F32, PL_BF16, 8, 40});
        run_case(&(mt_case){op, MODE_PLAIN, PL_BF16, PL_F32, 8, 40});
    }
}

/* ---- recorded work ---------------------------------------------------------------------- */

Test(math, vpu_flops_per_op)
{
    for (mt_op op = 0; op < OP_COUNT; op++) {
        static mt_case user;
        user = (mt_case){op, MODE_PLAIN, PL_F32, PL_F32, 16, 256};
        int has_b = OPS[op].b != B_NONE;
        pl_call call = {.name = "flops", .kernel = case_kernel, .user = &user, .n_in = has_b ? 2 : 1, .n_out = 1};
        for (int cost_only = 0; cost_only < 2; cost_only++) {
            int64_t br, bc, orr, oc;
            shape_of(&user, 1, &br, &bc);
            shape_of(&user, 2, &orr, &oc);
            float *a = cost_only ? NULL : th_f32_seq(16 * 256), *b = cost_only ? NULL : th_f32_fill(br * bc, 1.5f);
            float *o = cost_only ? NULL : th_f32_fill(orr * oc, 0);
            pl_array args[2] = {PL_ARRAY(a, PL_F32, 16, 256), PL_ARRAY(b, PL_F32, br, bc)};
            pl_array out = PL_ARRAY(o, PL_F32, orr, oc);
            pl_options opt = {.cost_only = cost_only};
            pl_report rep;
            int rc = pl_pallas_call(&call, args, &out, &opt, &rep);
            cr_assert_eq(rc, PL_OK, "%s: %s", OPS[op].name, rep.error);
            double want = OPS[op].flops * 16 * 256;
            cr_expect_eq(rep.vpu_flops, want, "%s%s: vpu_flops %g, want %g", OPS[op].name,
                         cost_only ? " (cost only)" : "", rep.vpu_flops, want);
            cr_expect_eq(rep.mxu_flops, 0);
            cr_expect_gt(rep.vpu_s, 0, "%s: no VPU time", OPS[op].name);
            free(a), free(b), free(o);
        }
    }
}
