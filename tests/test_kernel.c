/* tests/test_kernel.c: the kernel language of kernel/pallas.h: dtype
 * conversions, views (pl_ds, pl_at), element access, the elementwise block ops
 * and pl_dot, and the work each op reports.
 *
 * Conversions are pure functions and are tested directly, against reference
 * roundings computed in double. Everything else needs a running context, so
 * it runs inside a one-step pl_pallas_call (grid ()) whose kernel calls a test
 * body; the body works on scratch buffers (which start as poison, rule V1) and
 * copies results out through a host struct. Bodies use cr_expect only, never
 * cr_assert, so that no assertion longjmps through the simulator.
 */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../kernel/pallas.h"
#include "../sim/tilesim.h"

/* ---- helpers ------------------------------------------------------------------ */

static uint32_t f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

static float f32_of(uint32_t u)
{
    float x;
    memcpy(&x, &u, 4);
    return x;
}

/* Reference round-to-nearest-even of x to a binary float format with `mant`
 * stored mantissa bits, minimum normal exponent emin and overflow threshold
 * 2^(emax+1) (1 - 2^-(mant+2)) (the first value that rounds to inf). The
 * result is returned as a double (inf on overflow, signed zero kept). */
static double ref_round(float xf, int mant, int emin, int emax)
{
    double x = xf, ax = fabs(x);
    if (isnan(x) || isinf(x)) return x;
    double q;
    if (ax < ldexp(1.0, emin)) q = ldexp(1.0, emin - mant); /* subnormal spacing */
    else {
        int e;
        frexp(ax, &e); /* ax = f 2^e, f in [0.5, 1) */
        q = ldexp(1.0, e - 1 - mant);
    }
    double n = ax / q, fl = floor(n), rem = n - fl;
    if (rem > 0.5 || (rem == 0.5 && fmod(fl, 2.0) == 1.0)) fl += 1.0;
    double v = fl * q;
    if (v >= ldexp(1.0, emax + 1)) v = INFINITY;
    return signbit(x) ? -v : v;
}

static double ref_bf16(float x) { return ref_round(x, 7, -126, 127); }
static double ref_f16(float x) { return ref_round(x, 10, -14, 15); }

/* Run `fn` once inside a kernel (grid ()) with the given scratch buffers. */
typedef void (*body_fn)(pl_ctx *c, pl_ref *refs, void *arg);

typedef struct body {
    body_fn fn;
    void *arg;
} body;

static void body_kernel(pl_ctx *c, pl_ref *refs)
{
    body *b = pl_kernel_user(c);
    b->fn(c, refs, b->arg);
}

static int run_body(body_fn fn, void *arg, const pl_scratch *scr, int n_scr, pl_report *rep)
{
    static body b;
    b = (body){fn, arg};
    pl_call call = {.name = "body", .kernel = body_kernel, .user = &b, .n_scratch = n_scr};
    for (int i = 0; i < n_scr; i++) call.scratch[i] = scr[i];
    return pl_pallas_call(&call, NULL, NULL, NULL, rep);
}

static void run_body_ok(body_fn fn, void *arg, const pl_scratch *scr, int n_scr, pl_report *rep)
{
    int rc = run_body(fn, arg, scr, n_scr, rep);
    cr_assert_eq(rc, PL_OK, "the kernel failed with %d (%s): %s", rc, pl_strerror(rc), rep->error);
}

/* Row-major element e of r as an index. */
static void unravel(const pl_ref *r, int64_t e, int64_t *idx)
{
    for (int d = r->rank - 1; d >= 0; d--) {
        idx[d] = e % r->shape[d];
        e /= r->shape[d];
    }
}

/* Set / get every element of r in row-major order. */
static void put(pl_ctx *c, pl_ref r, const double *v)
{
    int64_t idx[PL_MAX_RANK] = {0};
    for (int64_t e = 0; e < pl_size(r); e++) {
        unravel(&r, e, idx);
        pl_set(c, r, idx, v[e]);
    }
}

static void get(pl_ctx *c, pl_ref r, double *v)
{
    int64_t idx[PL_MAX_RANK] = {0};
    for (int64_t e = 0; e < pl_size(r); e++) {
        unravel(&r, e, idx);
        v[e] = pl_get(c, r, idx);
    }
}

/* Same value or both NaN. */
static int same(double a, double b) { return (isnan(a) && isnan(b)) || (a == b && signbit(a) == signbit(b)); }

/* ---- dtypes ---------------------------------------------------------------------- */

Test(kernel, dtype_table)
{
    static const struct { pl_dtype t; size_t size; const char *name; int is_float; } want[] = {
        {PL_F32, 4, "f32", 1}, {PL_BF16, 2, "bf16", 1}, {PL_F16, 2, "f16", 1}, {PL_I32, 4, "i32", 0},
        {PL_I8, 1, "i8", 0},
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        cr_expect_eq(pl_dtype_size(want[i].t), want[i].size);
        cr_expect_eq(pl_dtype_bits(want[i].t), (int)want[i].size * 8);
        cr_expect_str_eq(pl_dtype_name(want[i].t), want[i].name);
        cr_expect_eq(pl_dtype_is_float(want[i].t), want[i].is_float);
        pl_dtype t = PL_DTYPE_COUNT;
        cr_expect_eq(pl_dtype_parse(want[i].name, &t), PL_OK);
        cr_expect_eq(t, want[i].t);
    }
    pl_dtype t;
    cr_expect_eq(pl_dtype_parse("bfloat16", &t), PL_OK);
    cr_expect_eq(t, PL_BF16);
    cr_expect_eq(pl_dtype_parse("int8", &t), PL_OK);
    cr_expect_eq(t, PL_I8);
    cr_expect_eq(pl_dtype_parse("f64", &t), PL_EINVAL);
    cr_expect_eq(pl_dtype_parse(NULL, &t), PL_EINVAL);
    cr_expect_eq(pl_dtype_size(PL_DTYPE_COUNT), 0);
    cr_expect_str_eq(pl_dtype_name(PL_DTYPE_COUNT), "?");
}

Test(kernel, bf16_rounds_to_nearest_even)
{
    static const struct { uint32_t in; uint16_t out; } cases[] = {
        {0x3f800000, 0x3f80}, /* 1 */
        {0x3f808000, 0x3f80}, /* 1 + 2^-8: tie, 0x3f80 even: down */
        {0x3f818000, 0x3f82}, /* 1 + 3 2^-8: tie, 0x3f81 odd: up */
        {0x3f807fff, 0x3f80}, /* just below the tie */
        {0x3f808001, 0x3f81}, /* just above the tie */
        {0xbf818000, 0xbf82}, /* negative tie: magnitude rounds the same way */
        {0xbf808000, 0xbf80},
        {0x3fffffff, 0x4000}, /* carry into the exponent */
        {0x7f7f7fff, 0x7f7f}, /* largest bf16 below the tie stays finite */
        {0x7f7f8000, 0x7f80}, /* tie at the top, odd: overflows to inf */
        {0x7f7fffff, 0x7f80}, /* FLT_MAX -> inf */
        {0xff7fffff, 0xff80},
        {0x7f800000, 0x7f80}, /* inf */
        {0xff800000, 0xff80},
        {0x00000000, 0x0000},
        {0x80000000, 0x8000}, /* -0 keeps its sign */
        {0x00008000, 0x0000}, /* subnormal tie, even: to zero */
        {0x00018000, 0x0002}, /* subnormal tie, odd: up */
        {0x00010001, 0x0001},
        {0x00000001, 0x0000}, /* smallest f32 subnormal */
        {0x807fffff, 0x8080}, /* largest subnormal rounds up to -2^-126 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        uint16_t got = pl_f32_to_bf16(f32_of(cases[i].in));
        cr_expect_eq(got, cases[i].out, "bf16(0x%08x) = 0x%04x, want 0x%04x", cases[i].in, got, cases[i].out);
    }
}

Test(kernel, bf16_nan_stays_nan)
{
    static const uint32_t nans[] = {0x7fc00000, 0xffc00000, 0x7f800001, 0xff800001, 0x7fffffff, 0xffffffff,
                                    0x7f80ffff, 0x7fbfffff};
    for (size_t i = 0; i < sizeof nans / sizeof *nans; i++) {
        uint16_t h = pl_f32_to_bf16(f32_of(nans[i]));
        cr_expect((h & 0x7f80) == 0x7f80 && (h & 0x007f) != 0, "bf16(NaN 0x%08x) = 0x%04x is not a NaN", nans[i],
                  h);
        cr_expect(isnan(pl_bf16_to_f32(h)));
    }
}

Test(kernel, bf16_matches_reference_rounding)
{
    /* a sweep over every exponent and many mantissas, both signs */
    int64_t bad = 0;
    for (uint64_t u = 0; u <= 0xffffffffu; u += 65521) {
        for (uint32_t k = 0; k < 3; k++) {
            uint32_t bits = (uint32_t)u;
            if (k == 1) bits = (bits & 0xffff0000u) | 0x8000u; /* an exact tie */
            if (k == 2) bits ^= 0x00007fffu;
            float x = f32_of(bits);
            if (isnan(x)) continue;
            double want = ref_bf16(x), got = pl_bf16_to_f32(pl_f32_to_bf16(x));
            if (!same(got, want)) {
                if (bad < 5) cr_log_error("bf16(0x%08x = %a) = %a, want %a", bits, (double)x, got, want);
                bad++;
            }
        }
    }
    cr_assert_eq(bad, 0, "%lld conversions to bf16 differ from round-to-nearest-even", (long long)bad);
}

Test(kernel, bf16_to_f32_is_exact_and_round_trips)
{
    for (uint32_t h = 0; h <= 0xffff; h++) {
        float f = pl_bf16_to_f32((uint16_t)h);
        cr_assert_eq(f32_bits(f), h << 16, "bf16 0x%04x widened to 0x%08x", h, f32_bits(f));
        if (isnan(f)) cr_assert(isnan(pl_bf16_to_f32(pl_f32_to_bf16(f))));
        else cr_assert_eq(pl_f32_to_bf16(f), h, "bf16 0x%04x does not round-trip", h);
    }
}

Test(kernel, f16_rounds_to_nearest_even)
{
    static const struct { float in; uint16_t out; } cases[] = {
        {1.0f, 0x3c00},
        {-2.0f, 0xc000},
        {0.5f, 0x3800},
        {1.0f + 0x1p-11f, 0x3c00},           /* tie, even: down */
        {1.0f + 3 * 0x1p-11f, 0x3c02},       /* tie, odd: up */
        {1.0f + 0x1p-11f + 0x1p-20f, 0x3c01}, /* above the tie */
        {1.0f + 0x1p-11f - 0x1p-23f, 0x3c00}, /* below the tie */
        {2049.0f, 0x6800},                   /* tie between 2048 and 2050 */
        {2051.0f, 0x6802},                   /* tie between 2050 and 2052 */
        {-2051.0f, 0xe802},
        {2047.5f, 0x6800},                   /* tie, carries into the exponent */
        {65504.0f, 0x7bff},                  /* largest f16 */
        {65519.0f, 0x7bff},                  /* below the overflow tie */
        {0.0f, 0x0000},
        {-0.0f, 0x8000},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        uint16_t got = pl_f32_to_f16(cases[i].in);
        cr_expect_eq(got, cases[i].out, "f16(%a) = 0x%04x, want 0x%04x", (double)cases[i].in, got, cases[i].out);
    }
}

Test(kernel, f16_overflows_to_inf)
{
    static const struct { float in; uint16_t out; } cases[] = {
        {65520.0f, 0x7c00}, /* the tie above 65504 rounds to inf */
        {65536.0f, 0x7c00},  {1e6f, 0x7c00},        {-1e6f, 0xfc00},          {FLT_MAX, 0x7c00},
        {-FLT_MAX, 0xfc00}, {INFINITY, 0x7c00},    {-INFINITY, 0xfc00},      {65519.996f, 0x7bff},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        uint16_t got = pl_f32_to_f16(cases[i].in);
        cr_expect_eq(got, cases[i].out, "f16(%a) = 0x%04x, want 0x%04x", (double)cases[i].in, got, cases[i].out);
    }
    cr_expect(isinf(pl_f16_to_f32(0x7c00)) && pl_f16_to_f32(0x7c00) > 0);
    cr_expect(isinf(pl_f16_to_f32(0xfc00)) && pl_f16_to_f32(0xfc00) < 0);
}

Test(kernel, f16_subnormals)
{
    static const struct { float in; uint16_t out; } cases[] = {
        {0x1p-24f, 0x0001},                /* smallest subnormal */
        {-0x1p-24f, 0x8001},
        {0x1p-25f, 0x0000},                /* tie between 0 and 2^-24: even is 0 */
        {-0x1p-25f, 0x8000},
        {3 * 0x1p-25f, 0x0002},            /* tie between 1 and 2 quanta: 2 */
        {0x1p-25f + 0x1p-40f, 0x0001},     /* above the tie */
        {1.25f * 0x1p-24f, 0x0001},
        {1023 * 0x1p-24f, 0x03ff},         /* largest subnormal */
        {1023.5f * 0x1p-24f, 0x0400},      /* tie, odd: up into the smallest normal */
        {0x1p-14f, 0x0400},                /* smallest normal */
        {0x1p-26f, 0x0000},
        {1e-45f, 0x0000},                  /* f32 subnormal */
        {-1e-45f, 0x8000},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        uint16_t got = pl_f32_to_f16(cases[i].in);
        cr_expect_eq(got, cases[i].out, "f16(%a) = 0x%04x, want 0x%04x", (double)cases[i].in, got, cases[i].out);
    }
    cr_expect_eq(pl_f16_to_f32(0x0001), 0x1p-24f);
    cr_expect_eq(pl_f16_to_f32(0x03ff), 1023 * 0x1p-24f);
    cr_expect_eq(pl_f16_to_f32(0x8001), -0x1p-24f);
    cr_expect_eq(pl_f16_to_f32(0x0400), 0x1p-14f);
    cr_expect(signbit(pl_f16_to_f32(0x8000)) && pl_f16_to_f32(0x8000) == 0.0f);
}

Test(kernel, f16_nan_stays_nan)
{
    static const uint32_t nans[] = {0x7fc00000, 0xffc00000, 0x7f800001, 0x7f802000, 0x7fffffff, 0xffffffff};
    for (size_t i = 0; i < sizeof nans / sizeof *nans; i++) {
        uint16_t h = pl_f32_to_f16(f32_of(nans[i]));
        cr_expect((h & 0x7c00) == 0x7c00 && (h & 0x03ff) != 0, "f16(NaN 0x%08x) = 0x%04x is not a NaN", nans[i],
                  h);
    }
    cr_expect(isnan(pl_f16_to_f32(0x7e00)));
    cr_expect(isnan(pl_f16_to_f32(0x7c01)));
    cr_expect(isnan(pl_f16_to_f32(0xfe00)));
}

Test(kernel, f16_matches_reference_rounding)
{
    int64_t bad = 0;
    for (uint64_t u = 0; u <= 0xffffffffu; u += 65521) {
        for (uint32_t k = 0; k < 3; k++) {
            uint32_t bits = (uint32_t)u;
            if (k == 1) bits = (bits & 0xffffe000u) | 0x1000u; /* exact ties of normal f16 */
            if (k == 2) bits ^= 0x00000fffu;
            float x = f32_of(bits);
            if (isnan(x)) continue;
            double want = ref_f16(x), got = pl_f16_to_f32(pl_f32_to_f16(x));
            if (!same(got, want)) {
                if (bad < 5) cr_log_error("f16(0x%08x = %a) = %a, want %a", bits, (double)x, got, want);
                bad++;
            }
        }
    }
    /* every value near the subnormal range, quantum by quarter quantum */
    for (int i = -4 * 2100; i <= 4 * 2100; i++) {
        float x = (float)i * 0x1p-26f;
        double want = ref_f16(x), got = pl_f16_to_f32(pl_f32_to_f16(x));
        if (!same(got, want)) {
            if (bad < 10) cr_log_error("f16(%a) = %a, want %a", (double)x, got, want);
            bad++;
        }
    }
    cr_assert_eq(bad, 0, "%lld conversions to f16 differ from round-to-nearest-even", (long long)bad);
}

Test(kernel, f16_round_trips_every_value)
{
    for (uint32_t h = 0; h <= 0xffff; h++) {
        float f = pl_f16_to_f32((uint16_t)h);
        int is_nan = (h & 0x7c00) == 0x7c00 && (h & 0x03ff);
        if (is_nan) {
            cr_assert(isnan(f), "f16 NaN 0x%04x widened to %a", h, (double)f);
            continue;
        }
        cr_assert_eq(pl_f32_to_f16(f), h, "f16 0x%04x -> %a -> 0x%04x", h, (double)f, pl_f32_to_f16(f));
    }
}

Test(kernel, int_conversions_truncate_and_saturate)
{
    static const struct { double in; int32_t i32; int8_t i8; } cases[] = {
        {3.7, 3, 3},           {-3.7, -3, -3},          {-0.5, 0, 0},          {127.9, 127, 127},
        {128.0, 128, 127},     {1000.0, 1000, 127},     {-128.9, -128, -128},  {-129.0, -129, -128},
        {2147483647.0, INT32_MAX, 127}, {2147483648.0, INT32_MAX, 127}, {1e20, INT32_MAX, 127},
        {-2147483648.0, INT32_MIN, -128}, {-2147483649.5, INT32_MIN, -128}, {-1e20, INT32_MIN, -128},
        {INFINITY, INT32_MAX, 127}, {-INFINITY, INT32_MIN, -128}, {NAN, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int32_t a = 12345;
        int8_t b = 99;
        pl_store_elem(&a, PL_I32, cases[i].in);
        pl_store_elem(&b, PL_I8, cases[i].in);
        cr_expect_eq(a, cases[i].i32, "i32(%g) = %d, want %d", cases[i].in, a, cases[i].i32);
        cr_expect_eq(b, cases[i].i8, "i8(%g) = %d, want %d", cases[i].in, b, cases[i].i8);
    }
}

Test(kernel, load_store_elem_every_dtype)
{
    char buf[8];
    pl_store_elem(buf, PL_F32, 0.1);
    cr_expect_eq(pl_load_elem(buf, PL_F32), (double)0.1f);
    pl_store_elem(buf, PL_BF16, 1.0 + 0x1p-8);
    cr_expect_eq(pl_load_elem(buf, PL_BF16), 1.0);
    pl_store_elem(buf, PL_BF16, -3.0);
    cr_expect_eq(pl_load_elem(buf, PL_BF16), -3.0);
    pl_store_elem(buf, PL_F16, 65520.0);
    cr_expect(isinf(pl_load_elem(buf, PL_F16)));
    pl_store_elem(buf, PL_F16, 0.333251953125); /* exact in f16 */
    cr_expect_eq(pl_load_elem(buf, PL_F16), 0.333251953125);
    pl_store_elem(buf, PL_I32, -2147483648.0);
    cr_expect_eq(pl_load_elem(buf, PL_I32), -2147483648.0);
    pl_store_elem(buf, PL_I8, -5.0);
    cr_expect_eq(pl_load_elem(buf, PL_I8), -5.0);
    int8_t m = -128;
    cr_expect_eq(pl_load_elem(&m, PL_I8), -128.0);
}

/* ---- views ---------------------------------------------------------------------- */

typedef struct view_state {
    int ok_ds_cols, ok_ds_rows, ok_chain, ok_at, ok_at_view, ok_rank3, ok_bf16, ok_empty;
    double via_view, via_base;
    int64_t sizes[4];
} view_state;

static int check_ref(const pl_ref *r, const void *base, size_t es, int64_t off, int rank, const int64_t *shape,
                     const int64_t *stride)
{
    if (r->data != (const char *)base + off * (int64_t)es) return 0;
    if (r->rank != rank) return 0;
    for (int d = 0; d < rank; d++)
        if (r->shape[d] != shape[d] || r->stride[d] != stride[d]) return 0;
    return 1;
}

static void views_body(pl_ctx *c, pl_ref *refs, void *arg)
{
    view_state *u = arg;
    pl_ref s = refs[0], s3 = refs[1], b = refs[2]; /* f32 (8, 16), f32 (2, 3, 4), bf16 (8, 16) */
    pl_ref cols = pl_ds(c, s, 1, 4, 8);
    u->ok_ds_cols = check_ref(&cols, s.data, 4, 4, 2, (int64_t[]){8, 8}, (int64_t[]){16, 1});
    pl_ref rows = pl_ds(c, s, 0, 2, 3);
    u->ok_ds_rows = check_ref(&rows, s.data, 4, 32, 2, (int64_t[]){3, 16}, (int64_t[]){16, 1});
    pl_ref both = pl_ds(c, rows, 1, 5, 6);
    u->ok_chain = check_ref(&both, s.data, 4, 2 * 16 + 5, 2, (int64_t[]){3, 6}, (int64_t[]){16, 1});
    pl_ref row3 = pl_at(c, s, 3);
    u->ok_at = check_ref(&row3, s.data, 4, 48, 1, (int64_t[]){16}, (int64_t[]){1});
    pl_ref at_view = pl_at(c, cols, 2);
    u->ok_at_view = check_ref(&at_view, s.data, 4, 2 * 16 + 4, 1, (int64_t[]){8}, (int64_t[]){1});
    pl_ref m = pl_at(c, s3, 1);
    pl_ref v = pl_at(c, m, 2);
    pl_ref e = pl_at(c, v, 3);
    pl_ref d2 = pl_ds(c, s3, 2, 1, 2);
    u->ok_rank3 = check_ref(&m, s3.data, 4, 12, 2, (int64_t[]){3, 4}, (int64_t[]){4, 1}) &&
                  check_ref(&v, s3.data, 4, 20, 1, (int64_t[]){4}, (int64_t[]){1}) &&
                  check_ref(&e, s3.data, 4, 23, 0, NULL, NULL) &&
                  check_ref(&d2, s3.data, 4, 1, 3, (int64_t[]){2, 3, 2}, (int64_t[]){12, 4, 1});
    pl_ref bv = pl_at(c, pl_ds(c, b, 1, 4, 8), 1);
    u->ok_bf16 = check_ref(&bv, b.data, 2, 16 + 4, 1, (int64_t[]){8}, (int64_t[]){1}) && bv.dtype == PL_BF16;
    pl_ref empty = pl_ds(c, s, 1, 16, 0);
    u->ok_empty = empty.shape[1] == 0 && pl_size(empty) == 0;
    u->sizes[0] = pl_size(cols);
    u->sizes[1] = pl_size(both);
    u->sizes[2] = pl_size(e);
    u->sizes[3] = pl_size(d2);
    /* a write through a view lands on the base element it covers */
    pl_set_at(c, both, 42.5, 1, 2); /* base (2 + 1, 5 + 2) */
    u->via_base = pl_get_at(c, s, 3, 7);
    pl_set_at(c, s, -1.25, 4, 9); /* seen by cols at (4, 5) */
    u->via_view = pl_get_at(c, cols, 4, 5);
}

Test(kernel, ds_and_at_views_shape_stride_offset)
{
    static view_state u;
    pl_scratch scr[3] = {PLTPU_VMEM(PL_F32, 8, 16), PLTPU_VMEM(PL_F32, 2, 3, 4), PLTPU_VMEM(PL_BF16, 8, 16)};
    pl_report rep;
    run_body_ok(views_body, &u, scr, 3, &rep);
    cr_expect(u.ok_ds_cols, "pl_ds(s, 1, 4, 8) on (8, 16): wrong shape, stride or offset");
    cr_expect(u.ok_ds_rows, "pl_ds(s, 0, 2, 3) on (8, 16): wrong shape, stride or offset");
    cr_expect(u.ok_chain, "pl_ds of a pl_ds: wrong shape, stride or offset");
    cr_expect(u.ok_at, "pl_at(s, 3) on (8, 16): wrong shape, stride or offset");
    cr_expect(u.ok_at_view, "pl_at of a column view: wrong offset");
    cr_expect(u.ok_rank3, "views of a rank-3 ref: wrong shape, stride or offset");
    cr_expect(u.ok_bf16, "bf16 view offsets must count 2-byte elements");
    cr_expect(u.ok_empty, "an empty pl_ds at the end is legal and has size 0");
    cr_expect_eq(u.sizes[0], 64);
    cr_expect_eq(u.sizes[1], 18);
    cr_expect_eq(u.sizes[2], 1);
    cr_expect_eq(u.sizes[3], 12);
    cr_expect_eq(u.via_base, 42.5);
    cr_expect_eq(u.via_view, -1.25);
    cr_expect_eq(rep.vpu_flops, 0.0, "views and element access are not block ops");
}

typedef struct bounds_state {
    int which, reached;
} bounds_state;

static void bounds_body(pl_ctx *c, pl_ref *refs, void *arg)
{
    bounds_state *u = arg;
    pl_ref s = refs[0]; /* (8, 16) */
    switch (u->which) {
    case 0: (void)pl_get_at(c, pl_ds(c, s, 1, 10, 7), 0, 6); break; /* 10 + 6 >= 16: past the Ref (V6) */
    case 1: (void)pl_ds(c, s, 2, 0, 1); break;        /* no dimension 2 */
    case 2: (void)pl_at(c, s, 8); break;
    case 3: (void)pl_get_at(c, pl_ds(c, s, 1, 4, 8), 0, 8); break; /* inside s, outside the view */
    case 4: pl_set_at(c, s, 1.0, -1, 0); break;
    }
    u->reached = 1;
}

Test(kernel, views_and_access_stay_inside_the_ref)
{
    pl_scratch scr[1] = {PLTPU_VMEM(PL_F32, 8, 16)};
    for (int w = 0; w < 5; w++) {
        static bounds_state u;
        u = (bounds_state){.which = w};
        pl_report rep;
        int rc = run_body(bounds_body, &u, scr, 1, &rep);
        cr_expect_eq(rc, PL_EBOUNDS, "case %d: got %d (%s)", w, rc, rep.error);
        cr_expect_eq(u.reached, 0, "case %d: the kernel went on after a bad access", w);
    }
}

typedef struct getset_state {
    double bf16_tie, bf16_up, i32_trunc, i32_sat, i32_max, i8_sat, f16_inf, f32_tenth, rank0;
} getset_state;

static void getset_body(pl_ctx *c, pl_ref *refs, void *arg)
{
    getset_state *u = arg;
    pl_ref b = refs[0], i = refs[1], q = refs[2], h = refs[3], f = refs[4];
    pl_set_at(c, b, 1.0 + 0x1p-8, 0, 0);
    u->bf16_tie = pl_get_at(c, b, 0, 0);
    pl_set_at(c, b, 1.0 + 3 * 0x1p-8, 1, 1);
    u->bf16_up = pl_get_at(c, b, 1, 1);
    pl_set_at(c, i, 7.9, 2, 3);
    u->i32_trunc = pl_get_at(c, i, 2, 3);
    pl_set_at(c, i, -1e12, 0, 0);
    u->i32_sat = pl_get_at(c, i, 0, 0);
    pl_set_at(c, i, 2147483647.0, 1, 0);
    u->i32_max = pl_get_at(c, i, 1, 0);
    pl_set_at(c, q, 200.0, 3, 3);
    u->i8_sat = pl_get_at(c, q, 3, 3);
    pl_set_at(c, h, 65520.0, 0, 1);
    u->f16_inf = pl_get_at(c, h, 0, 1);
    pl_set_at(c, f, 0.1, 2, 2);
    u->f32_tenth = pl_get_at(c, f, 2, 2);
    pl_ref r0 = pl_at(c, pl_at(c, f, 3), 1);
    int64_t none[1] = {0};
    pl_set(c, r0, none, 6.5);
    u->rank0 = pl_get_at(c, f, 3, 1);
}

Test(kernel, get_set_convert_to_the_ref_dtype)
{
    static getset_state u;
    pl_scratch scr[5] = {PLTPU_VMEM(PL_BF16, 4, 4), PLTPU_VMEM(PL_I32, 4, 4), PLTPU_VMEM(PL_I8, 4, 4),
                         PLTPU_VMEM(PL_F16, 4, 4), PLTPU_VMEM(PL_F32, 4, 4)};
    pl_report rep;
    run_body_ok(getset_body, &u, scr, 5, &rep);
    cr_expect_eq(u.bf16_tie, 1.0);
    cr_expect_eq(u.bf16_up, 1.0 + 0x1p-6);
    cr_expect_eq(u.i32_trunc, 7.0);
    cr_expect_eq(u.i32_sat, (double)INT32_MIN);
    cr_expect_eq(u.i32_max, 2147483647.0);
    cr_expect_eq(u.i8_sat, 127.0);
    cr_expect(isinf(u.f16_inf) && u.f16_inf > 0);
    cr_expect_eq(u.f32_tenth, (double)0.1f);
    cr_expect_eq(u.rank0, 6.5, "a rank-0 view reads and writes its one element");
}

/* ---- fill and copy ---------------------------------------------------------------- */

typedef struct fill_state {
    double s[8 * 16];
    uint16_t bf[4 * 8];
    double h, i, q;
} fill_state;

static void fill_body(pl_ctx *c, pl_ref *refs, void *arg)
{
    fill_state *u = arg;
    pl_ref s = refs[0], b = refs[1], h = refs[2], i = refs[3], q = refs[4];
    pl_fill(c, pl_ds(c, pl_ds(c, s, 0, 2, 3), 1, 4, 8), 3.5); /* rows 2..4, cols 4..11 */
    get(c, s, u->s);
    pl_fill(c, b, 0.1);
    pl_fill(c, pl_ds(c, b, 1, 2, 3), -0.1); /* non-contiguous rows of a 16-bit ref */
    memcpy(u->bf, b.data, sizeof u->bf);
    pl_fill(c, h, 1e6);
    u->h = pl_get_at(c, h, 1, 1);
    pl_fill(c, i, -2.9);
    u->i = pl_get_at(c, i, 1, 1);
    pl_fill(c, q, 300);
    u->q = pl_get_at(c, q, 1, 1);
}

Test(kernel, fill_touches_only_its_view_and_converts)
{
    static fill_state u;
    pl_scratch scr[5] = {PLTPU_VMEM(PL_F32, 8, 16), PLTPU_VMEM(PL_BF16, 4, 8), PLTPU_VMEM(PL_F16, 2, 2),
                         PLTPU_VMEM(PL_I32, 2, 2), PLTPU_VMEM(PL_I8, 2, 2)};
    pl_report rep;
    run_body_ok(fill_body, &u, scr, 5, &rep);
    for (int r = 0; r < 8; r++)
        for (int col = 0; col < 16; col++) {
            int in = r >= 2 && r < 5 && col >= 4 && col < 12;
            double v = u.s[r * 16 + col];
            cr_expect(in ? v == 3.5 : isnan(v), "s[%d][%d] = %g after filling rows 2..4, cols 4..11", r, col, v);
        }
    for (int r = 0; r < 4; r++)
        for (int col = 0; col < 8; col++) {
            uint16_t want = pl_f32_to_bf16(col >= 2 && col < 5 ? -0.1f : 0.1f);
            cr_expect_eq(u.bf[r * 8 + col], want, "bf16 [%d][%d] = 0x%04x, want 0x%04x", r, col, u.bf[r * 8 + col],
                         want);
        }
    cr_expect(isinf(u.h), "f16 fill of 1e6 must overflow to inf, got %g", u.h);
    cr_expect_eq(u.i, -2.0);
    cr_expect_eq(u.q, 127.0);
}

#define CP_N 12

static const float cp_src[CP_N] = {1.0f, 1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, -1.0f - 0x1p-8f - 0x1p-20f,
                                   0x1.fffffep127f, -0.0f, 0.1f, 1e-40f, 2.5f, -2.5f, 3e9f, -3e9f};

typedef struct copy_state {
    float src[CP_N];
    uint16_t bf[CP_N];
    double bf_back[CP_N], h[CP_N], i32[CP_N], i8[CP_N], f_from_i[CP_N];
    double views[4 * 5];
    double dst_after[6 * 16];
} copy_state;

static void copy_body(pl_ctx *c, pl_ref *refs, void *arg)
{
    copy_state *u = arg;
    pl_ref f = refs[0], b = refs[1], back = refs[2], h = refs[3], i = refs[4], q = refs[5], fi = refs[6];
    pl_ref big = refs[7], dst = refs[8];
    double v[CP_N];
    for (int e = 0; e < CP_N; e++) v[e] = cp_src[e];
    put(c, f, v);
    pl_copy(c, b, f); /* f32 -> bf16 */
    memcpy(u->bf, b.data, sizeof u->bf);
    pl_copy(c, back, b); /* bf16 -> f32 */
    get(c, back, u->bf_back);
    pl_copy(c, h, f);
    get(c, h, u->h);
    pl_copy(c, i, f);
    get(c, i, u->i32);
    pl_copy(c, q, f);
    get(c, q, u->i8);
    pl_copy(c, fi, i); /* i32 -> f32 */
    get(c, fi, u->f_from_i);
    /* between views with gaps between rows: big (4, 20) cols 3..7 -> dst (6, 16) rows 1..4, cols 10..14 */
    double w[4 * 20];
    for (int e = 0; e < 80; e++) w[e] = e;
    put(c, big, w);
    pl_copy(c, pl_ds(c, pl_ds(c, dst, 0, 1, 4), 1, 10, 5), pl_ds(c, big, 1, 3, 5));
    get(c, dst, u->dst_after);
}

Test(kernel, copy_converts_between_dtypes)
{
    static copy_state u;
    pl_scratch scr[9] = {PLTPU_VMEM(PL_F32, 3, 4),  PLTPU_VMEM(PL_BF16, 3, 4), PLTPU_VMEM(PL_F32, 3, 4),
                         PLTPU_VMEM(PL_F16, 3, 4),  PLTPU_VMEM(PL_I32, 3, 4),  PLTPU_VMEM(PL_I8, 3, 4),
                         PLTPU_VMEM(PL_F32, 3, 4),  PLTPU_VMEM(PL_F32, 4, 20), PLTPU_VMEM(PL_F32, 6, 16)};
    pl_report rep;
    run_body_ok(copy_body, &u, scr, 9, &rep);
    for (int e = 0; e < CP_N; e++) {
        float x = cp_src[e];
        cr_expect_eq(u.bf[e], pl_f32_to_bf16(x), "copy f32 %a -> bf16 0x%04x, want 0x%04x", (double)x, u.bf[e],
                     pl_f32_to_bf16(x));
        cr_expect(same(pl_bf16_to_f32(u.bf[e]), ref_bf16(x)), "copy f32 %a -> bf16 is not RNE", (double)x);
        cr_expect(same(u.bf_back[e], pl_bf16_to_f32(u.bf[e])), "copy bf16 -> f32 is not exact at %d", e);
        cr_expect(same(u.h[e], ref_f16(x)), "copy f32 %a -> f16 = %a, want %a", (double)x, u.h[e], ref_f16(x));
        double t = trunc((double)x);
        double w32 = t > INT32_MAX ? INT32_MAX : t < INT32_MIN ? INT32_MIN : t;
        double w8 = t > 127 ? 127 : t < -128 ? -128 : t;
        cr_expect_eq(u.i32[e], w32, "copy f32 %a -> i32 = %g, want %g", (double)x, u.i32[e], w32);
        cr_expect_eq(u.i8[e], w8, "copy f32 %a -> i8 = %g, want %g", (double)x, u.i8[e], w8);
        cr_expect_eq(u.f_from_i[e], (double)(float)w32);
    }
    cr_expect_eq(u.bf[1], 0x3f80, "1 + 2^-8 is a tie: even is 1.0");
    cr_expect_eq(u.bf[2], 0x3f82);
    cr_expect_eq(u.bf[4], 0x7f80, "FLT_MAX overflows bf16 to inf");
    cr_expect_eq(u.bf[5], 0x8000);
    for (int r = 0; r < 6; r++)
        for (int col = 0; col < 16; col++) {
            int in = r >= 1 && r < 5 && col >= 10 && col < 15;
            double v = u.dst_after[r * 16 + col], want = (r - 1) * 20 + 3 + (col - 10);
            cr_expect(in ? v == want : isnan(v), "dst[%d][%d] = %g after a view-to-view copy", r, col, v);
        }
    cr_expect_eq(rep.vpu_flops, 6.0 * CP_N + 4 * 5, "vpu_flops = %g: a copy counts one per element",
                 rep.vpu_flops);
}

static void copy_shape_body(pl_ctx *c, pl_ref *refs, void *arg)
{
    int *reached = arg;
    pl_copy(c, refs[0], refs[1]); /* (4, 8) <- (8, 4) */
    *reached = 1;
}

Test(kernel, copy_needs_equal_shapes)
{
    static int reached = 0;
    pl_scratch scr[2] = {PLTPU_VMEM(PL_F32, 4, 8), PLTPU_VMEM(PL_F32, 8, 4)};
    pl_report rep;
    int rc = run_body(copy_shape_body, &reached, scr, 2, &rep);
    cr_assert_eq(rc, PL_ESHAPE, "got %d: %s", rc, rep.error);
    cr_assert_eq(reached, 0);
}

/* Integer to narrower integer conversion keeps the low bits, as XLA's
 * convert (and numpy's astype) do: jnp.int32(300).astype(jnp.int8) == 44.
 * Saturation is for floats converted to integers only. */
typedef struct narrow_state {
    double i8[6];
} narrow_state;

static void narrow_body(pl_ctx *c, pl_ref *refs, void *arg)
{
    narrow_state *u = arg;
    put(c, refs[0], (double[]){300.0, -129.0, 127.0, -128.0, 256.0, -1.0});
    pl_copy(c, refs[1], refs[0]);
    get(c, refs[1], u->i8);
}

Test(kernel, copy_i32_to_i8_wraps_like_xla)
{
    static narrow_state u;
    pl_scratch scr[2] = {PLTPU_VMEM(PL_I32, 2, 3), PLTPU_VMEM(PL_I8, 2, 3)};
    pl_report rep;
    run_body_ok(narrow_body, &u, scr, 2, &rep);
    static const double want[6] = {44.0, 127.0, 127.0, -128.0, 0.0, -1.0};
    for (int e = 0; e < 6; e++)
        cr_expect_eq(u.i8[e], want[e], "i32 -> i8 element %d = %.0f, want %.0f (low 8 bits)", e, u.i8[e], want[e]);
}

/* Ops on empty views (a masked tail of length 0) must do nothing. */
typedef struct empty_state {
    double after[4 * 8];
} empty_state;

static void empty_body(pl_ctx *c, pl_ref *refs, void *arg)
{
    empty_state *u = arg;
    pl_ref s = refs[0], t = refs[1];
    pl_fill(c, s, 1.0);
    pl_fill(c, t, 2.0);
    pl_ref es = pl_ds(c, s, 1, 8, 0), et = pl_ds(c, t, 1, 3, 0), er = pl_ds(c, s, 0, 4, 0);
    pl_fill(c, es, 9.0);
    pl_fill(c, er, 9.0);
    pl_copy(c, es, et);
    pl_add(c, es, es, et);
    pl_relu(c, es, et);
    get(c, s, u->after);
}

Test(kernel, ops_on_empty_views_do_nothing)
{
    static empty_state u;
    pl_scratch scr[2] = {PLTPU_VMEM(PL_F32, 4, 8), PLTPU_VMEM(PL_F32, 4, 8)};
    pl_report rep;
    run_body_ok(empty_body, &u, scr, 2, &rep);
    for (int e = 0; e < 32; e++) cr_expect_eq(u.after[e], 1.0, "element %d changed by an op on an empty view", e);
}

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
