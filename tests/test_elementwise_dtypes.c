/* tests/test_elementwise_dtypes.c: every elementwise op that takes integers
 * (pl_add, pl_mul, pl_max, pl_copy/pl_cast, pl_relu) against every dtype it
 * accepts, compared with a scalar C reference computed here (issue 21: an
 * int16 destination was written one byte per element, so -5 + -6 came out
 * as 32757).
 *
 * The references follow jnp: integer add and mul wrap modulo 2^bits (XLA's
 * two's complement), integer narrowing keeps the low bits, floats round the
 * exact result to nearest even (ref_round). Inputs are chosen so that
 * every integer dtype overflows somewhere and every float input is exact.
 */
#include <criterion/criterion.h>
#include <stdint.h>

#include "test_kernel_helpers.h"

#define N 6

typedef enum { OP_ADD, OP_MUL, OP_MAX, OP_COPY_FROM_I32, OP_RELU, N_OPS } ew_op;
static const char *const op_names[N_OPS] = {"pl_add", "pl_mul", "pl_max", "pl_copy from i32", "pl_relu"};

typedef struct dt_case {
    pl_dtype t;
    int bits;            /* integers: the width that wraps; 0 for floats */
    int mant, emin, emax; /* floats: ref_round's format */
    double a[N], b[N];
} dt_case;

static const dt_case cases[] = {
    {PL_I8, 8, 0, 0, 0, {-5, 100, -128, 127, 7, -1}, {-6, 100, -1, 1, -20, -128}},
    {PL_I16, 16, 0, 0, 0, {-5, 30000, -32768, 32767, 300, -1}, {-6, 30000, -1, 1, 200, -32768}},
    {PL_I32, 32, 0, 0, 0, {-5, 2e9, -2147483648.0, 2147483647.0, 100000, -1},
     {-6, 2e9, -1, 1, 100000, -2147483648.0}},
    {PL_F32, 0, 23, -126, 127, {-2, 1.5, 0.5, 4, -0.25, 3}, {-1, 0.5, 0.5, -2, 2, -3}},
    {PL_BF16, 0, 7, -126, 127, {-2, 1.5, 0.5, 4, -0.25, 3}, {-1, 0.5, 0.5, -2, 2, -3}},
    {PL_F16, 0, 10, -14, 15, {-2, 1.5, 0.5, 4, -0.25, 3}, {-1, 0.5, 0.5, -2, 2, -3}},
    {PL_F8E4M3, 0, 3, -6, 8, {-2, 1.5, 0.5, 4, -0.25, 3}, {-1, 0.5, 0.5, -2, 2, -3}},
    {PL_F8E5M2, 0, 2, -14, 15, {-2, 1.5, 0.5, 4, -0.25, 3}, {-1, 0.5, 0.5, -2, 2, -3}},
};
#define N_CASES (sizeof cases / sizeof *cases)

/* the two's complement value of the low `bits` bits of u */
static double wrap(uint64_t u, int bits)
{
    uint64_t m = bits == 64 ? ~0ull : (1ull << bits) - 1, v = u & m;
    return v >> (bits - 1) ? -(double)((~v & m) + 1) : (double)v;
}

/* The copy's i32 source: values that every narrower integer dtype wraps. */
static double copy_source(int i)
{
    static const double src[N] = {-11, 32757, 70000, -129, 128, -2147483648.0};
    return src[i];
}

/* what jnp gives for element i of op on case k */
static double reference(ew_op op, const dt_case *k, int i)
{
    double x = k->a[i], y = k->b[i], r;
    switch (op) {
    case OP_ADD: r = x + y; break;
    case OP_MUL: r = x * y; break;
    case OP_MAX: r = x > y ? x : y; break;
    case OP_RELU: r = x > 0 ? x : 0; break;
    default: r = x; break; /* the copy's source holds a (or its i32 image, below) */
    }
    if (!k->bits) return ref_round((float)r, k->mant, k->emin, k->emax);
    int64_t xi = (int64_t)x, yi = (int64_t)y;
    if (op == OP_ADD) return wrap((uint64_t)xi + (uint64_t)yi, k->bits);
    if (op == OP_MUL) return wrap((uint64_t)xi * (uint64_t)yi, k->bits);
    if (op == OP_COPY_FROM_I32) return wrap((uint64_t)(int64_t)copy_source(i), k->bits);
    return r;
}

typedef struct ew_state {
    ew_op op;
    const dt_case *k;
    double got[N];
} ew_state;

static void ew_body(pl_ctx *c, pl_ref *refs, void *arg)
{
    ew_state *s = arg;
    pl_ref a = refs[0], b = refs[1], d = refs[2], src32 = refs[3];
    put(c, a, s->k->a);
    put(c, b, s->k->b);
    switch (s->op) {
    case OP_ADD: pl_add(c, d, a, b); break;
    case OP_MUL: pl_mul(c, d, a, b); break;
    case OP_MAX: pl_max(c, d, a, b); break;
    case OP_RELU: pl_relu(c, d, a); break;
    default: {
        double v[N];
        for (int i = 0; i < N; i++) v[i] = s->k->bits ? copy_source(i) : s->k->a[i];
        put(c, src32, v);
        pl_copy(c, d, s->k->bits ? src32 : a);
    }
    }
    get(c, d, s->got);
}

Test(ew_dtypes, every_op_every_dtype_matches_jnp)
{
    for (size_t k = 0; k < N_CASES; k++)
        for (int op = 0; op < N_OPS; op++) {
            static ew_state s;
            s = (ew_state){.op = (ew_op)op, .k = &cases[k]};
            pl_dtype t = cases[k].t;
            pl_scratch scr[4] = {PLTPU_VMEM(t, 1, N), PLTPU_VMEM(t, 1, N), PLTPU_VMEM(t, 1, N),
                                 PLTPU_VMEM(PL_I32, 1, N)};
            pl_report rep;
            run_body_ok(ew_body, &s, scr, 4, &rep);
            for (int i = 0; i < N; i++) {
                double want = reference((ew_op)op, &cases[k], i);
                cr_expect(same(s.got[i], want), "%s %s element %d (%g, %g): got %.17g, want %.17g", op_names[op],
                          pl_dtype_name(t), i, cases[k].a[i], cases[k].b[i], s.got[i], want);
            }
        }
}

/* Mixed integer sources into an int16 destination: the integer path must
 * write by the destination's width, whatever the sources' widths. */
static void mixed_body(pl_ctx *c, pl_ref *refs, void *arg)
{
    double *got = arg;
    put(c, refs[0], (double[]){-5, 30000, 32767, 100, -32768, 7});
    put(c, refs[1], (double[]){-6, 30000, 1, -100, -1, 0});
    pl_add(c, refs[2], refs[0], refs[1]);
    get(c, refs[2], got);
}

Test(ew_dtypes, i32_sources_into_i16_wrap_at_16_bits)
{
    static double got[N];
    pl_scratch scr[3] = {PLTPU_VMEM(PL_I32, 1, N), PLTPU_VMEM(PL_I32, 1, N), PLTPU_VMEM(PL_I16, 1, N)};
    pl_report rep;
    run_body_ok(mixed_body, got, scr, 3, &rep);
    static const double want[N] = {-11, -5536, -32768, 0, 32767, 7};
    for (int i = 0; i < N; i++) cr_expect_eq(got[i], want[i], "element %d: got %g, want %g", i, got[i], want[i]);
}

/* ---- pl_add_scalar and pl_mul_scalar on integer refs (issue 23) ---------------------------
 * jnp: an integer array plus or times a Python int stays an integer array and
 * wraps; tilesim refused integer refs (JAX's integer tests use x + 1, x * 2). */

typedef struct int_scalar_state {
    pl_dtype t;
    double s;
    int mul;
    double got[N];
} int_scalar_state;

static void int_scalar_body(pl_ctx *c, pl_ref *refs, void *arg)
{
    int_scalar_state *s = arg;
    const dt_case *k = NULL;
    for (size_t i = 0; i < N_CASES; i++)
        if (cases[i].t == s->t) k = &cases[i];
    put(c, refs[0], k->a);
    if (s->mul) pl_mul_scalar(c, refs[1], refs[0], s->s);
    else pl_add_scalar(c, refs[1], refs[0], s->s);
    get(c, refs[1], s->got);
}

Test(ew_dtypes, add_and_mul_scalar_take_integer_refs_and_wrap_as_jnp)
{
    static const double scalars[] = {1, -3, 1000};
    for (size_t k = 0; k < 3; k++) /* i8, i16, i32 */
        for (int mul = 0; mul < 2; mul++)
            for (size_t j = 0; j < sizeof scalars / sizeof *scalars; j++) {
                static int_scalar_state st;
                st = (int_scalar_state){.t = cases[k].t, .s = scalars[j], .mul = mul};
                pl_scratch scr[2] = {PLTPU_VMEM(st.t, 1, N), PLTPU_VMEM(st.t, 1, N)};
                pl_report rep;
                run_body_ok(int_scalar_body, &st, scr, 2, &rep);
                for (int i = 0; i < N; i++) {
                    int64_t x = (int64_t)cases[k].a[i], s = (int64_t)scalars[j];
                    double want = wrap(mul ? (uint64_t)x * (uint64_t)s : (uint64_t)x + (uint64_t)s, cases[k].bits);
                    cr_expect_eq(st.got[i], want, "%s %s %g, element %d (%g): got %.17g, want %.17g",
                                 mul ? "pl_mul_scalar" : "pl_add_scalar", pl_dtype_name(st.t), scalars[j], i,
                                 cases[k].a[i], st.got[i], want);
                }
            }
}

static void frac_body(pl_ctx *c, pl_ref *refs, void *arg)
{
    (void)arg;
    pl_add_scalar(c, refs[1], refs[0], 0.5);
}

static void float_into_int_body(pl_ctx *c, pl_ref *refs, void *arg)
{
    (void)arg;
    pl_mul_scalar(c, refs[1], refs[0], 2);
}

Test(ew_dtypes, an_integer_ref_refuses_a_fractional_scalar_and_a_float_source)
{
    pl_scratch scr[2] = {PLTPU_VMEM(PL_I32, 1, N), PLTPU_VMEM(PL_I32, 1, N)};
    pl_report rep;
    cr_assert_eq(run_body(frac_body, NULL, scr, 2, &rep), PL_EINVAL, "%s", rep.error);
    cr_assert(strstr(rep.error, "pl_add_scalar") && strstr(rep.error, "not a whole number") &&
              strstr(rep.error, "cast"), "%s", rep.error);
    pl_scratch mixed[2] = {PLTPU_VMEM(PL_F32, 1, N), PLTPU_VMEM(PL_I32, 1, N)};
    cr_assert_eq(run_body(float_into_int_body, NULL, mixed, 2, &rep), PL_EDTYPE, "%s", rep.error);
    cr_assert(strstr(rep.error, "pl_mul_scalar") && strstr(rep.error, "pl_cast"), "%s", rep.error);
}
