/* tests/test_kernel_dtypes.c: the dtype conversions of kernel/pallas.h
 * (bf16 and f16 rounding, overflow, subnormals, NaN; integers truncating and
 * saturating) and element load/store of every dtype.
 *
 * Conversions are pure functions and are tested directly, against reference
 * roundings computed in double (ref_round() in test_kernel_helpers.h).
 * Element access needs a running context: it runs inside a one-step
 * pl_pallas_call (grid ()) whose kernel calls a test body, as in the other
 * test_kernel_*.c files.
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
