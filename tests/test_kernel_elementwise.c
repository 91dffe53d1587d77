/* tests/test_kernel_elementwise.c: the elementwise block ops (add, mul, max,
 * relu; integer wrap-around like XLA; bf16 in place) and the work every op
 * reports.
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

/* ---- elementwise arithmetic ----------------------------------------------------- */

#define EW_N 16

static const float ew_a[EW_N] = {1.0f, -2.5f, 3.0f, 0.0f, -0.0f, 1e30f, -7.0f, 0.1f,
                                 NAN, 2.0f, 1.0f, -1.0f, 5.0f, 1e-30f, 65536.0f, 0.3f};
static const float ew_b[EW_N] = {2.0f, 2.5f, -4.0f, -1.0f, 0.0f, 1e30f, -8.0f, 0.2f,
                                 1.0f, NAN, 0x1p-24f + 0x1p-47f, 0x1p-25f, -5.0f, -1e-30f, 65536.0f, 3.0f};

typedef struct ew_state {
    double add[EW_N], mul[EW_N], max[EW_N], relu[EW_N], inplace[EW_N];
    uint16_t add_bf16[EW_N];
    double vpu;
} ew_state;

static void ew_body(pl_ctx *c, pl_ref *refs, void *arg)
{
    ew_state *u = arg;
    pl_ref a = refs[0], b = refs[1], d = refs[2], hb = refs[3];
    double va[EW_N], vb[EW_N];
    for (int e = 0; e < EW_N; e++) va[e] = ew_a[e], vb[e] = ew_b[e];
    put(c, a, va);
    put(c, b, vb);
    pl_add(c, d, a, b);
    get(c, d, u->add);
    pl_mul(c, d, a, b);
    get(c, d, u->mul);
    pl_max(c, d, a, b);
    get(c, d, u->max);
    pl_relu(c, d, a);
    get(c, d, u->relu);
    pl_add(c, hb, a, b); /* into bf16: computed, then rounded once */
    memcpy(u->add_bf16, hb.data, sizeof u->add_bf16);
    pl_mul(c, a, a, b); /* in place */
    pl_add(c, a, a, b);
    get(c, a, u->inplace);
}

Test(kernel, add_mul_max_relu_f32)
{
    static ew_state u;
    pl_scratch scr[4] = {PLTPU_VMEM(PL_F32, 2, 8), PLTPU_VMEM(PL_F32, 2, 8), PLTPU_VMEM(PL_F32, 2, 8),
                         PLTPU_VMEM(PL_BF16, 2, 8)};
    pl_report rep;
    run_body_ok(ew_body, &u, scr, 4, &rep);
    for (int e = 0; e < EW_N; e++) {
        float a = ew_a[e], b = ew_b[e];
        float add = a + b, mul = a * b; /* f32 arithmetic, one rounding */
        double max = (isnan(a) || isnan(b)) ? NAN : (a > b ? a : b);
        double relu = isnan(a) ? NAN : (a > 0 ? a : 0.0);
        cr_expect(same(u.add[e], add) || (u.add[e] == add), "add %a + %a = %a, want %a", (double)a, (double)b,
                  u.add[e], (double)add);
        cr_expect(same(u.mul[e], mul) || (u.mul[e] == mul), "mul %a * %a = %a, want %a", (double)a, (double)b,
                  u.mul[e], (double)mul);
        cr_expect(isnan(max) ? isnan(u.max[e]) : u.max[e] == max, "max(%a, %a) = %a, want %a (NaN propagates)",
                  (double)a, (double)b, u.max[e], max);
        cr_expect(isnan(relu) ? isnan(u.relu[e]) : u.relu[e] == relu, "relu(%a) = %a, want %a", (double)a,
                  u.relu[e], relu);
        if (isnan(add)) cr_expect(isnan(pl_bf16_to_f32(u.add_bf16[e])), "bf16 dst of a NaN sum is not NaN");
        else
            cr_expect_eq(u.add_bf16[e], pl_f32_to_bf16(add), "bf16 dst of %a + %a = 0x%04x, want 0x%04x", (double)a,
                         (double)b, u.add_bf16[e], pl_f32_to_bf16(add));
        float prod = a * b, ip = prod + b;
        cr_expect(same(u.inplace[e], ip) || u.inplace[e] == ip, "in place (a * b) + b = %a, want %a", u.inplace[e],
                  (double)ip);
    }
    cr_expect_eq(u.add[10], 1.0 + 0x1p-23, "1 + (2^-24 + 2^-47) must round up once");
    cr_expect_eq(rep.vpu_flops, 7.0 * EW_N, "vpu_flops = %g, want one per element per op", rep.vpu_flops);
    cr_expect_eq(rep.mxu_flops, 0.0);
}

typedef struct int_state {
    double add32[4], mul32[4], add8[4];
} int_state;

static void int_body(pl_ctx *c, pl_ref *refs, void *arg)
{
    int_state *u = arg;
    pl_ref a = refs[0], b = refs[1], d = refs[2], a8 = refs[3], b8 = refs[4], d8 = refs[5];
    put(c, a, (double[]){2147483647.0, -2147483648.0, 1000.0, -7.0});
    put(c, b, (double[]){1.0, -1.0, 3000000.0, 3.0});
    pl_add(c, d, a, b);
    get(c, d, u->add32);
    pl_mul(c, d, a, b);
    get(c, d, u->mul32);
    put(c, a8, (double[]){100.0, -100.0, 127.0, 5.0});
    put(c, b8, (double[]){100.0, -100.0, 1.0, -9.0});
    pl_add(c, d8, a8, b8);
    get(c, d8, u->add8);
}

/* XLA integer arithmetic wraps around (two's complement), on TPU as on CPU:
 * jnp.int32(2**31 - 1) + 1 == -2**31. Saturation is for float -> int
 * conversions only. */
Test(kernel, integer_add_mul_wrap_like_xla)
{
    static int_state u;
    pl_scratch scr[6] = {PLTPU_VMEM(PL_I32, 1, 4), PLTPU_VMEM(PL_I32, 1, 4), PLTPU_VMEM(PL_I32, 1, 4),
                         PLTPU_VMEM(PL_I8, 1, 4),  PLTPU_VMEM(PL_I8, 1, 4),  PLTPU_VMEM(PL_I8, 1, 4)};
    pl_report rep;
    run_body_ok(int_body, &u, scr, 6, &rep);
    /* in range: exact */
    cr_expect_eq(u.add32[3], -4.0);
    cr_expect_eq(u.mul32[3], -21.0);
    cr_expect_eq(u.add8[3], -4.0);
    /* overflow: wraps */
    cr_expect_eq(u.add32[0], -2147483648.0, "i32 2^31-1 + 1 = %.0f, want -2^31 (wrap)", u.add32[0]);
    cr_expect_eq(u.add32[1], 2147483647.0, "i32 -2^31 + -1 = %.0f, want 2^31-1 (wrap)", u.add32[1]);
    cr_expect_eq(u.mul32[2], -1294967296.0, "i32 1000 * 3000000 = %.0f, want -1294967296 (wrap)", u.mul32[2]);
    cr_expect_eq(u.mul32[1], -2147483648.0, "i32 -2^31 * -1 = %.0f, want -2^31 (wrap)", u.mul32[1]);
    cr_expect_eq(u.add8[0], -56.0, "i8 100 + 100 = %.0f, want -56 (wrap)", u.add8[0]);
    cr_expect_eq(u.add8[1], 56.0, "i8 -100 + -100 = %.0f, want 56 (wrap)", u.add8[1]);
    cr_expect_eq(u.add8[2], -128.0, "i8 127 + 1 = %.0f, want -128 (wrap)", u.add8[2]);
}

typedef struct relu_state {
    double out[8];
} relu_state;

static void relu_bf16_body(pl_ctx *c, pl_ref *refs, void *arg)
{
    relu_state *u = arg;
    pl_ref b = refs[0];
    put(c, b, (double[]){-1.0, 2.0, -0.5, 0.0, 3.5, NAN, -INFINITY, INFINITY});
    pl_relu(c, b, b);
    get(c, b, u->out);
}

Test(kernel, relu_bf16_in_place)
{
    static relu_state u;
    pl_scratch scr[1] = {PLTPU_VMEM(PL_BF16, 2, 4)};
    pl_report rep;
    run_body_ok(relu_bf16_body, &u, scr, 1, &rep);
    static const double want[8] = {0, 2, 0, 0, 3.5, NAN, 0, INFINITY};
    for (int e = 0; e < 8; e++)
        cr_expect(isnan(want[e]) ? isnan(u.out[e]) : u.out[e] == want[e], "relu[%d] = %g, want %g", e, u.out[e],
                  want[e]);
    cr_expect_eq(rep.vpu_flops, 8.0);
}

/* ---- work reported per op ---------------------------------------------------------- */

typedef struct work_state {
    int op;
} work_state;

static void work_body(pl_ctx *c, pl_ref *refs, void *arg)
{
    work_state *u = arg;
    pl_ref a = refs[0], b = refs[1], d = refs[2], m = refs[3], k = refs[4], n = refs[5];
    pl_ref va = pl_ds(c, a, 1, 2, 6), vb = pl_ds(c, b, 1, 0, 6), vd = pl_ds(c, d, 1, 1, 6); /* (4, 6) views */
    switch (u->op) {
    case 0: pl_fill(c, va, 1.0); break;
    case 1: pl_copy(c, vd, va); break;
    case 2: pl_add(c, vd, va, vb); break;
    case 3: pl_mul(c, vd, va, vb); break;
    case 4: pl_max(c, vd, va, vb); break;
    case 5: pl_relu(c, vd, va); break;
    case 6:
        pl_fill(c, k, 0.5);
        pl_fill(c, n, 0.25);
        pl_dot(c, m, k, n, 0); /* (5, 3) = (5, 7) @ (7, 3) */
        break;
    }
}

Test(kernel, every_op_reports_its_work)
{
    static const char *names[] = {"pl_fill", "pl_copy", "pl_add", "pl_mul", "pl_max", "pl_relu", "pl_dot"};
    pl_scratch scr[6] = {PLTPU_VMEM(PL_F32, 4, 8), PLTPU_VMEM(PL_F32, 4, 8), PLTPU_VMEM(PL_F32, 4, 8),
                         PLTPU_VMEM(PL_F32, 5, 3), PLTPU_VMEM(PL_F32, 5, 7), PLTPU_VMEM(PL_F32, 7, 3)};
    for (int op = 0; op < 7; op++) {
        static work_state u;
        u.op = op;
        pl_report rep;
        run_body_ok(work_body, &u, scr, 6, &rep);
        if (op < 6) {
            cr_expect_eq(rep.vpu_flops, 24.0, "%s on a (4, 6) view: vpu_flops = %g, want 24", names[op],
                         rep.vpu_flops);
            cr_expect_eq(rep.mxu_flops, 0.0, "%s: mxu_flops = %g", names[op], rep.mxu_flops);
        } else {
            cr_expect_eq(rep.mxu_flops, 2.0 * 5 * 3 * 7, "pl_dot (5, 3) = (5, 7) @ (7, 3): mxu_flops = %g, want 210",
                         rep.mxu_flops);
            cr_expect_eq(rep.vpu_flops, 35.0 + 21.0, "the two fills: vpu_flops = %g", rep.vpu_flops);
        }
    }
}
