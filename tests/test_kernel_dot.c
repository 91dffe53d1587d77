/* tests/test_kernel_dot.c: pl_dot against a double reference: f32, bf16
 * and f16 inputs, f32 and bf16 accumulators, trans_b, views, an empty
 * contraction and mismatched shapes.
 *
 * Everything here needs a running context, so it runs inside a one-step
 * pl_pallas_call (grid ()) whose kernel calls a test body (run_body() in
 * test_kernel_helpers.h); the body works on scratch buffers (which start as
 * poison, rule V1) and copies results out through a host struct. Bodies use
 * cr_expect only, never cr_assert, so that no assertion longjmps through the
 * simulator.
 */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../kernel/pallas.h"
#include "../sim/tilesim.h"
#include "test_kernel_helpers.h"

/* ---- pl_dot ----------------------------------------------------------------------- */

#define DOT_MAX 4096

typedef struct dot_case {
    int64_t m, n, k;
    pl_dtype da, db, dc;
    unsigned flags;
    int views;   /* operate on pl_ds views inside larger scratch buffers */
    int integer; /* small exact values instead of pseudo-random ones */
    /* filled by the test */
    double a[DOT_MAX], b[DOT_MAX], c0[DOT_MAX], got[DOT_MAX];
    double outside_not_nan; /* acc scratch elements outside the view that changed */
} dot_case;

/* Pseudo-random value in [-1, 1), rounded to dt. */
static double dot_value(uint64_t *seed, pl_dtype dt, int integer, int64_t i)
{
    double v;
    if (integer) v = (double)((i * 7 + 3) % 5 - 2);
    else {
        *seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
        v = (double)(*seed >> 11) / 9007199254740992.0 * 2.0 - 1.0;
    }
    char buf[8];
    pl_store_elem(buf, dt, v);
    return pl_load_elem(buf, dt);
}

static void dot_body(pl_ctx *c, pl_ref *refs, void *arg)
{
    dot_case *t = arg;
    int tb = (t->flags & PL_DOT_TRANS_B) != 0;
    pl_ref A = refs[0], B = refs[1], C = refs[2];
    if (t->views) { /* the operands sit at an offset inside wider buffers */
        A = pl_ds(c, pl_ds(c, A, 0, 1, t->m), 1, 2, t->k);
        B = pl_ds(c, pl_ds(c, B, 0, 3, tb ? t->n : t->k), 1, 4, tb ? t->k : t->n);
        C = pl_ds(c, pl_ds(c, C, 0, 2, t->m), 1, 1, t->n);
    }
    put(c, A, t->a);
    put(c, B, t->b);
    if (t->flags & PL_DOT_ACC) put(c, C, t->c0); /* otherwise C is poison: the dot must overwrite it */
    pl_dot(c, C, A, B, t->flags);
    get(c, C, t->got);
    if (t->views) {
        pl_ref whole = refs[2];
        for (int64_t i = 0; i < whole.shape[0]; i++)
            for (int64_t j = 0; j < whole.shape[1]; j++) {
                int in = i >= 2 && i < 2 + t->m && j >= 1 && j < 1 + t->n;
                if (!in) t->outside_not_nan += !isnan(pl_get_at(c, whole, i, j));
            }
    }
}

static double unit_roundoff(pl_dtype t) { return t == PL_BF16 ? 0x1p-8 : t == PL_F16 ? 0x1p-11 : 0x1p-24; }

static void dot_check(dot_case *t)
{
    int tb = (t->flags & PL_DOT_TRANS_B) != 0;
    int64_t m = t->m, n = t->n, k = t->k;
    cr_assert(m * k <= DOT_MAX && k * n <= DOT_MAX && m * n <= DOT_MAX);
    uint64_t seed = 12345;
    for (int64_t i = 0; i < m * k; i++) t->a[i] = dot_value(&seed, t->da, t->integer, i);
    for (int64_t i = 0; i < k * n; i++) t->b[i] = dot_value(&seed, t->db, t->integer, i + 5);
    for (int64_t i = 0; i < m * n; i++) t->c0[i] = dot_value(&seed, t->dc, t->integer, i + 11);
    pl_scratch scr[3];
    int64_t pad = t->views ? 5 : 0;
    scr[0] = (pl_scratch){.space = PL_VMEM, .dtype = t->da, .rank = 2, .shape = {m + pad, k + pad}};
    scr[1] = tb ? (pl_scratch){.space = PL_VMEM, .dtype = t->db, .rank = 2, .shape = {n + pad, k + pad}}
                : (pl_scratch){.space = PL_VMEM, .dtype = t->db, .rank = 2, .shape = {k + pad, n + pad}};
    scr[2] = (pl_scratch){.space = PL_VMEM, .dtype = t->dc, .rank = 2, .shape = {m + pad, n + pad}};
    pl_report rep;
    run_body_ok(dot_body, t, scr, 3, &rep);
    cr_expect_eq(rep.mxu_flops, 2.0 * (double)(m * n * k), "mxu_flops = %g, want 2mnk = %g", rep.mxu_flops,
                 2.0 * (double)(m * n * k));
    cr_expect_eq(rep.vpu_flops, 0.0);
    cr_expect_eq(t->outside_not_nan, 0, "pl_dot wrote %g accumulator elements outside its view",
                 t->outside_not_nan);
    int64_t bad = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = (t->flags & PL_DOT_ACC) ? t->c0[i * n + j] : 0.0, mag = fabs(s);
            for (int64_t p = 0; p < k; p++) {
                double bv = tb ? t->b[j * k + p] : t->b[p * n + j]; /* b as stored: (n, k) or (k, n) */
                s += t->a[i * k + p] * bv;
                mag += fabs(t->a[i * k + p] * bv);
            }
            double got = t->got[i * n + j];
            double tol = unit_roundoff(t->dc) * fabs(s) + 2.0 * (double)(k + 1) * 0x1p-24 * mag;
            if (t->dc == PL_F32) tol = 2.0 * (double)(k + 1) * 0x1p-24 * mag;
            if (t->integer) tol = 0; /* every partial sum is exact */
            if (!(fabs(got - s) <= tol)) {
                if (bad < 5)
                    cr_log_error("C[%lld][%lld] = %.9g, want %.9g (tol %.3g)", (long long)i, (long long)j, got, s,
                                 tol);
                bad++;
            }
        }
    cr_expect_eq(bad, 0, "%lld of %lld elements of pl_dot (%s @ %s%s -> %s, flags %u) differ from the triple loop",
                 (long long)bad, (long long)(m * n), pl_dtype_name(t->da), pl_dtype_name(t->db), tb ? "^T" : "",
                 pl_dtype_name(t->dc), t->flags);
}

static dot_case *new_case(int64_t m, int64_t n, int64_t k, pl_dtype da, pl_dtype db, pl_dtype dc, unsigned flags)
{
    static dot_case t; /* large: keep it off the stack */
    memset(&t, 0, sizeof t);
    t.m = m, t.n = n, t.k = k, t.da = da, t.db = db, t.dc = dc, t.flags = flags;
    return &t;
}

Test(kernel, dot_f32_overwrites_poisoned_acc)
{
    dot_check(new_case(5, 3, 7, PL_F32, PL_F32, PL_F32, 0));
}

Test(kernel, dot_f32_acc)
{
    dot_check(new_case(5, 3, 7, PL_F32, PL_F32, PL_F32, PL_DOT_ACC));
}

Test(kernel, dot_f32_trans_b)
{
    dot_check(new_case(5, 3, 7, PL_F32, PL_F32, PL_F32, PL_DOT_TRANS_B));
}

Test(kernel, dot_f32_acc_trans_b)
{
    dot_check(new_case(6, 9, 4, PL_F32, PL_F32, PL_F32, PL_DOT_ACC | PL_DOT_TRANS_B));
}

Test(kernel, dot_f32_exact_integers)
{
    dot_case *t = new_case(9, 11, 13, PL_F32, PL_F32, PL_F32, PL_DOT_ACC);
    t->integer = 1;
    dot_check(t);
}

Test(kernel, dot_bf16_inputs_f32_acc)
{
    dot_check(new_case(16, 24, 40, PL_BF16, PL_BF16, PL_F32, PL_DOT_ACC));
}

Test(kernel, dot_bf16_inputs_overwrite)
{
    dot_check(new_case(8, 5, 33, PL_BF16, PL_BF16, PL_F32, 0));
}

Test(kernel, dot_bf16_trans_b)
{
    dot_check(new_case(7, 12, 20, PL_BF16, PL_BF16, PL_F32, PL_DOT_ACC | PL_DOT_TRANS_B));
}

Test(kernel, dot_bf16_accumulator)
{
    dot_check(new_case(8, 16, 24, PL_BF16, PL_BF16, PL_BF16, PL_DOT_ACC));
}

Test(kernel, dot_bf16_accumulator_overwrite)
{
    dot_check(new_case(8, 16, 24, PL_BF16, PL_BF16, PL_BF16, 0));
}

Test(kernel, dot_bf16_accumulator_exact_integers)
{
    dot_case *t = new_case(8, 16, 24, PL_BF16, PL_BF16, PL_BF16, PL_DOT_ACC);
    t->integer = 1;
    dot_check(t);
}

Test(kernel, dot_f16_inputs)
{
    dot_check(new_case(5, 6, 9, PL_F16, PL_F16, PL_F32, PL_DOT_ACC));
}

Test(kernel, dot_mixed_f32_bf16)
{
    dot_check(new_case(5, 6, 9, PL_F32, PL_BF16, PL_F32, PL_DOT_ACC | PL_DOT_TRANS_B));
}

Test(kernel, dot_on_views_f32)
{
    dot_case *t = new_case(6, 10, 12, PL_F32, PL_F32, PL_F32, PL_DOT_ACC);
    t->views = 1;
    dot_check(t);
}

Test(kernel, dot_on_views_f32_trans_b_overwrite)
{
    dot_case *t = new_case(6, 10, 12, PL_F32, PL_F32, PL_F32, PL_DOT_TRANS_B);
    t->views = 1;
    dot_check(t);
}

Test(kernel, dot_on_views_bf16)
{
    dot_case *t = new_case(6, 10, 12, PL_BF16, PL_BF16, PL_BF16, PL_DOT_ACC | PL_DOT_TRANS_B);
    t->views = 1;
    dot_check(t);
}

typedef struct dot_empty_state {
    double over[4 * 3], acc[4 * 3];
} dot_empty_state;

static void dot_empty_body(pl_ctx *c, pl_ref *refs, void *arg)
{
    dot_empty_state *u = arg;
    pl_ref a = pl_ds(c, refs[0], 1, 0, 0), b = pl_ds(c, refs[1], 0, 0, 0); /* (4, 0) @ (0, 3) */
    pl_ref o = refs[2], acc = refs[3];
    pl_dot(c, o, a, b, 0); /* o was poison: an empty sum is 0 */
    get(c, o, u->over);
    pl_fill(c, acc, 2.5);
    pl_dot(c, acc, a, b, PL_DOT_ACC); /* adds nothing */
    get(c, acc, u->acc);
}

Test(kernel, dot_with_empty_contraction)
{
    static dot_empty_state u;
    pl_scratch scr[4] = {PLTPU_VMEM(PL_F32, 4, 8), PLTPU_VMEM(PL_BF16, 8, 3), PLTPU_VMEM(PL_F32, 4, 3),
                         PLTPU_VMEM(PL_BF16, 4, 3)};
    pl_report rep;
    run_body_ok(dot_empty_body, &u, scr, 4, &rep);
    for (int e = 0; e < 12; e++) {
        cr_expect_eq(u.over[e], 0.0, "acc = a @ b with k = 0: element %d = %g, want 0", e, u.over[e]);
        cr_expect_eq(u.acc[e], 2.5, "acc += a @ b with k = 0: element %d = %g, want 2.5", e, u.acc[e]);
    }
    cr_expect_eq(rep.mxu_flops, 0.0);
}

static void dot_shape_body(pl_ctx *c, pl_ref *refs, void *arg)
{
    int *reached = arg;
    pl_dot(c, refs[2], refs[0], refs[1], 0); /* (4, 8) @ (6, 8): k does not match */
    *reached = 1;
}

Test(kernel, dot_needs_matching_shapes)
{
    static int reached = 0;
    pl_scratch scr[3] = {PLTPU_VMEM(PL_F32, 4, 8), PLTPU_VMEM(PL_F32, 6, 8), PLTPU_VMEM(PL_F32, 4, 8)};
    pl_report rep;
    int rc = run_body(dot_shape_body, &reached, scr, 3, &rep);
    cr_assert_eq(rc, PL_ESHAPE, "got %d: %s", rc, rep.error);
    cr_assert_eq(reached, 0);
    cr_assert_eq(rep.mxu_flops, 0.0);
}
