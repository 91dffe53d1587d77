/* tests/test_ops_more.c: the ops real kernels need (issue 10): rsqrt, sqrt,
 * log, tanh, sigmoid, gelu, div, add/mul by a scalar, cmp masks, where,
 * reductions along either axis, iota, cast; and element access (pl_get /
 * pl_set) counted as scalar-unit work by the timing model.
 *
 * Each value case is a one-step call (grid ()) over whole arrays (rule B3):
 * the kernel runs one op; the host computes the same element in double from
 * the stored inputs and rounds it once to the output's dtype, as the ops
 * promise, so results agree bit for bit, in f32 and bf16, on aligned and
 * ragged shapes, with every broadcast the ops allow.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../kernel/pallas.h"
#include "../sim/tilesim.h"
#include "helpers.h"

typedef enum {
    O_RSQRT, O_SQRT, O_LOG, O_TANH, O_SIGMOID, O_GELU, O_ADDS, O_MULS, /* unary */
    O_DIV, O_CMP, O_CMPS, O_WHERE, O_SUM0, O_SUM1, O_MAX0, O_MAX1, O_CAST
} ot_op;

static const char *NAMES[] = {"pl_rsqrt", "pl_sqrt", "pl_log", "pl_tanh", "pl_sigmoid", "pl_gelu", "pl_add_scalar",
                              "pl_mul_scalar", "pl_div", "pl_cmp", "pl_cmp_scalar", "pl_where", "pl_reduce_sum 0",
                              "pl_reduce_sum 1", "pl_reduce_max 0", "pl_reduce_max 1", "pl_cast"};

#define OT_S 0.375 /* the scalar of add/mul/cmp_scalar */

typedef struct ot_case {
    ot_op op;
    pl_cmp_op cmp;
    pl_dtype in_dt, out_dt;
    int64_t r, c;      /* a and the output (reductions: their keepdims shape) */
    int64_t br, bc;    /* b's shape: (r or 1, c or 1), broadcast */
    int64_t mr, mc;    /* where's mask shape */
    int in_place;      /* the kernel copies a into the output and runs the op on it (dst is a source) */
} ot_case;

static void apply(pl_ctx *c, const ot_case *t, pl_ref o, pl_ref a, pl_ref b, pl_ref m)
{
    switch (t->op) {
    case O_RSQRT: pl_rsqrt(c, o, a); break;
    case O_SQRT: pl_sqrt(c, o, a); break;
    case O_LOG: pl_log(c, o, a); break;
    case O_TANH: pl_tanh(c, o, a); break;
    case O_SIGMOID: pl_sigmoid(c, o, a); break;
    case O_GELU: pl_gelu(c, o, a); break;
    case O_ADDS: pl_add_scalar(c, o, a, OT_S); break;
    case O_MULS: pl_mul_scalar(c, o, a, OT_S); break;
    case O_DIV: pl_div(c, o, a, b); break;
    case O_CMP: pl_cmp(c, o, a, b, t->cmp); break;
    case O_CMPS: pl_cmp_scalar(c, o, a, t->cmp, OT_S); break;
    case O_WHERE: pl_where(c, o, m, a, b); break;
    case O_SUM0: pl_reduce_sum(c, o, a, 0); break;
    case O_SUM1: pl_reduce_sum(c, o, a, -1); break; /* -1: the last axis, as jnp */
    case O_MAX0: pl_reduce_max(c, o, a, 0); break;
    case O_MAX1: pl_reduce_max(c, o, a, 1); break;
    case O_CAST: pl_cast(c, o, a); break;
    }
}

static void case_kernel(pl_ctx *c, pl_ref *refs)
{
    const ot_case *t = pl_kernel_user(c);
    pl_ref a = refs[0];
    if (t->in_place) pl_copy(c, refs[3], a), a = refs[3];
    apply(c, t, refs[3], a, refs[1], refs[2]);
}

static int cmp_ref(double a, double b, pl_cmp_op op)
{
    switch (op) {
    case PL_LT: return a < b;
    case PL_LE: return a <= b;
    case PL_GT: return a > b;
    case PL_GE: return a >= b;
    case PL_EQ: return a == b;
    default: return a != b;
    }
}

/* The host's element (i, j) of the result; x, y, m row-major doubles. */
static double naive(const ot_case *t, const double *x, const double *y, const double *m, int64_t i, int64_t j)
{
    double a = x[i * t->c + j], b = y[(t->br == 1 ? 0 : i) * t->bc + (t->bc == 1 ? 0 : j)], acc;
    const double k = sqrt(2.0 / 3.14159265358979323846);
    switch (t->op) {
    case O_RSQRT: return 1.0 / sqrt(a);
    case O_SQRT: return sqrt(a);
    case O_LOG: return log(a);
    case O_TANH: return tanh(a);
    case O_SIGMOID: return 1.0 / (1.0 + exp(-a));
    case O_GELU: return 0.5 * a * (1.0 + tanh(k * (a + 0.044715 * a * a * a)));
    case O_ADDS: return a + OT_S;
    case O_MULS: return a * OT_S;
    case O_DIV: return a / b;
    case O_CMP: return cmp_ref(a, b, t->cmp);
    case O_CMPS: return cmp_ref(a, OT_S, t->cmp);
    case O_WHERE: return m[(t->mr == 1 ? 0 : i) * t->mc + (t->mc == 1 ? 0 : j)] != 0 ? a : b;
    case O_CAST: return a;
    default: break;
    }
    int axis0 = t->op == O_SUM0 || t->op == O_MAX0, is_max = t->op == O_MAX0 || t->op == O_MAX1;
    int64_t n = axis0 ? t->r : t->c;
    acc = is_max ? -INFINITY : 0;
    for (int64_t q = 0; q < n; q++) {
        double v = axis0 ? x[q * t->c + j] : x[i * t->c + q];
        if (is_max && isnan(v)) return v;
        acc = is_max ? (v > acc ? v : acc) : acc + v;
    }
    return acc;
}

static void *random_array(int64_t n, pl_dtype dt, double lo, double span, uint64_t seed)
{
    size_t es = pl_dtype_size(dt);
    char *p = malloc((size_t)(n ? n : 1) * es);
    cr_assert_not_null(p);
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        pl_store_elem(p + (size_t)i * es, dt, lo + span * (double)(seed >> 11) / 9007199254740992.0);
    }
    return p;
}

static double *as_doubles(const void *p, pl_dtype dt, int64_t n)
{
    double *d = malloc((size_t)(n ? n : 1) * sizeof *d);
    cr_assert_not_null(d);
    for (int64_t i = 0; i < n; i++) d[i] = pl_load_elem((const char *)p + (size_t)i * pl_dtype_size(dt), dt);
    return d;
}

static int same(double a, double b) { return (isnan(a) && isnan(b)) || (a == b && signbit(a) == signbit(b)); }

/* Run the case and compare every output element with the host's. */
static void run_case(ot_case t)
{
    static ot_case user;
    if (!t.br) t.br = t.r, t.bc = t.c;
    if (!t.mr) t.mr = t.r, t.mc = t.c;
    user = t;
    int positive = t.op <= O_LOG, reduce0 = t.op == O_SUM0 || t.op == O_MAX0;
    int reduce1 = t.op == O_SUM1 || t.op == O_MAX1;
    int64_t orr = reduce0 ? 1 : t.r, oc = reduce1 ? 1 : t.c;
    void *a = random_array(t.r * t.c, t.in_dt, positive ? 0.25 : -3.0, positive ? 4.0 : 6.0, 11);
    void *b = random_array(t.br * t.bc, t.in_dt, 0.25, 2.0, 12);
    void *m = random_array(t.mr * t.mc, PL_I32, 0, 2, 13); /* 0 or 1 */
    void *o = random_array(orr * oc, t.out_dt, 0, 0, 0);
    size_t es = pl_dtype_size(t.in_dt);
    if (t.br == t.r && t.bc == t.c) /* equal elements, so EQ, LE and GE see ties */
        for (int64_t i = 0; i < t.r * t.c; i += 3) memcpy((char *)b + i * es, (char *)a + i * es, es);
    if (t.op == O_CMP || t.op == O_MAX0 || t.op == O_MAX1) pl_store_elem(a, t.in_dt, NAN);
    pl_array args[3] = {PL_ARRAY(a, t.in_dt, t.r, t.c), PL_ARRAY(b, t.in_dt, t.br, t.bc),
                        PL_ARRAY(m, PL_I32, t.mr, t.mc)};
    pl_array out = PL_ARRAY(o, t.out_dt, orr, oc);
    pl_call call = {.name = NAMES[t.op], .kernel = case_kernel, .user = &user, .n_in = 3, .n_out = 1};
    pl_report rep;
    int rc = pl_pallas_call(&call, args, &out, NULL, &rep);
    cr_assert_eq(rc, PL_OK, "%s %s: %s", NAMES[t.op], pl_dtype_name(t.in_dt), rep.error);
    double *x = as_doubles(a, t.in_dt, t.r * t.c), *y = as_doubles(b, t.in_dt, t.br * t.bc);
    double *mm = as_doubles(m, PL_I32, t.mr * t.mc);
    int64_t bad = 0;
    for (int64_t i = 0; i < orr; i++)
        for (int64_t j = 0; j < oc; j++) {
            char want[8];
            pl_store_elem(want, t.out_dt, naive(&t, x, y, mm, i, j));
            double w = pl_load_elem(want, t.out_dt);
            double g = pl_load_elem((char *)o + (size_t)(i * oc + j) * pl_dtype_size(t.out_dt), t.out_dt);
            if (!same(g, w) && bad++ < 3)
                cr_expect(0, "%s %s->%s (%lldx%lld, b %lldx%lld, op %d): element (%lld, %lld) is %.9g, want %.9g",
                          NAMES[t.op], pl_dtype_name(t.in_dt), pl_dtype_name(t.out_dt), (long long)t.r,
                          (long long)t.c, (long long)t.br, (long long)t.bc, (int)t.cmp, (long long)i, (long long)j,
                          g, w);
        }
    cr_expect_eq(bad, 0, "%s: %lld elements differ", NAMES[t.op], (long long)bad);
    free(x), free(y), free(mm), free(a), free(b), free(m), free(o);
}

static const int64_t SHAPES[][2] = {{16, 128}, {5, 37}, {1, 9}};
#define N_SHAPES (sizeof SHAPES / sizeof *SHAPES)

/* f32 and bf16 (computed in f32 or better, rounded once on store), every shape. */
static void check_float_op(ot_op op)
{
    static const pl_dtype dts[] = {PL_F32, PL_BF16};
    int reduces = op >= O_SUM0 && op <= O_MAX1;
    for (int d = 0; d < 2; d++)
        for (size_t s = 0; s < N_SHAPES; s++)
            for (int in_place = 0; in_place <= !reduces; in_place++)
                run_case((ot_case){.op = op, .in_dt = dts[d], .out_dt = dts[d], .r = SHAPES[s][0],
                                   .c = SHAPES[s][1], .in_place = in_place});
}

Test(ops_more, rsqrt_matches_host) { check_float_op(O_RSQRT); }
Test(ops_more, sqrt_matches_host) { check_float_op(O_SQRT); }
Test(ops_more, log_matches_host) { check_float_op(O_LOG); }
Test(ops_more, tanh_matches_host) { check_float_op(O_TANH); }
Test(ops_more, sigmoid_matches_host) { check_float_op(O_SIGMOID); }
Test(ops_more, gelu_tanh_form_matches_host) { check_float_op(O_GELU); }
Test(ops_more, add_and_mul_by_a_scalar_match_host)
{
    check_float_op(O_ADDS);
    check_float_op(O_MULS);
}
Test(ops_more, reductions_along_either_axis_match_host)
{
    check_float_op(O_SUM0);
    check_float_op(O_SUM1);
    check_float_op(O_MAX0); /* a NaN in column 0 / row 0 wins, as jnp.max */
    check_float_op(O_MAX1);
}

/* b of a's shape, a column, a row, and one element, in f32 and bf16. */
static void check_broadcasts(ot_case t)
{
    for (size_t s = 0; s < N_SHAPES; s++) {
        int64_t r = SHAPES[s][0], c = SHAPES[s][1];
        const int64_t bs[][2] = {{r, c}, {r, 1}, {1, c}, {1, 1}};
        for (int k = 0; k < 4; k++) {
            ot_case u = t;
            u.r = r, u.c = c, u.br = bs[k][0], u.bc = bs[k][1];
            if (u.op == O_WHERE) u.mr = bs[3 - k][0], u.mc = bs[3 - k][1]; /* the mask broadcasts too */
            run_case(u);
            u.in_place = u.in_dt == u.out_dt;
            run_case(u);
        }
    }
}

Test(ops_more, div_broadcasts_rows_columns_and_scalars)
{
    check_broadcasts((ot_case){.op = O_DIV, .in_dt = PL_F32, .out_dt = PL_F32});
    check_broadcasts((ot_case){.op = O_DIV, .in_dt = PL_BF16, .out_dt = PL_BF16});
}

Test(ops_more, cmp_writes_a_zero_one_mask_for_every_comparison)
{
    for (int op = PL_LT; op <= PL_NE; op++) {
        check_broadcasts((ot_case){.op = O_CMP, .cmp = (pl_cmp_op)op, .in_dt = PL_F32, .out_dt = PL_I32});
        run_case((ot_case){.op = O_CMP, .cmp = (pl_cmp_op)op, .in_dt = PL_BF16, .out_dt = PL_I8, .r = 5, .c = 37});
        run_case((ot_case){.op = O_CMP, .cmp = (pl_cmp_op)op, .in_dt = PL_I32, .out_dt = PL_I32, .r = 8, .c = 128});
        run_case((ot_case){.op = O_CMPS, .cmp = (pl_cmp_op)op, .in_dt = PL_F32, .out_dt = PL_I32, .r = 5, .c = 37});
    }
}

Test(ops_more, where_selects_with_broadcast_masks_and_operands)
{
    check_broadcasts((ot_case){.op = O_WHERE, .in_dt = PL_F32, .out_dt = PL_F32});
    check_broadcasts((ot_case){.op = O_WHERE, .in_dt = PL_BF16, .out_dt = PL_BF16});
    check_broadcasts((ot_case){.op = O_WHERE, .in_dt = PL_I32, .out_dt = PL_I32}); /* integers exactly */
}

Test(ops_more, cast_converts_as_astype)
{
    run_case((ot_case){.op = O_CAST, .in_dt = PL_F32, .out_dt = PL_BF16, .r = 5, .c = 37});
    run_case((ot_case){.op = O_CAST, .in_dt = PL_F32, .out_dt = PL_I32, .r = 5, .c = 37}); /* truncates */
    run_case((ot_case){.op = O_CAST, .in_dt = PL_BF16, .out_dt = PL_F32, .r = 16, .c = 128});
}

/* o = x / o[0, :] computed in place with the divisor a view of o's own first
 * row: the row is read before any row of o is written. */
static void row_alias_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_ref x = refs[0], o = refs[1];
    pl_copy(c, o, x);
    pl_div(c, o, o, pl_ds(c, o, 0, 0, 1));
}

Test(ops_more, a_broadcast_row_may_alias_the_destination)
{
    float *x = th_f32_seq(4 * 8), *o = th_f32_fill(4 * 8, 0);
    for (int j = 0; j < 8; j++) x[j] = 2.0f; /* the divisor row */
    pl_array in = PL_ARRAY(x, PL_F32, 4, 8), out = PL_ARRAY(o, PL_F32, 4, 8);
    pl_call call = {.name = "alias", .kernel = row_alias_kernel, .n_in = 1, .n_out = 1};
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &in, &out, NULL, &rep), &rep);
    for (int i = 0; i < 32; i++) cr_assert_eq(o[i], x[i] / 2.0f, "element %d is %g, want %g", i, o[i], x[i] / 2.0f);
    free(x), free(o);
}
