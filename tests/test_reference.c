/* tests/test_reference.c: the references a definition computes its outputs
 * with (issue 24: plugins had no fast reference): pl_ref_matmul through
 * OpenBLAS with either operand transposed and any float dtype, softmax,
 * RMSNorm and LayerNorm, each against plain loops in double; and the
 * errors, which name what is wrong. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

static double get(const pl_array *a, int64_t i) { return pl_load_elem((const char *)a->data + i * (int64_t)pl_dtype_size(a->dtype), a->dtype); }

static pl_array filled(pl_dtype t, int64_t r, int64_t c, unsigned seed)
{
    pl_array a = PL_ARRAY(calloc((size_t)(r * c), pl_dtype_size(t)), t, r, c);
    for (int64_t i = 0; i < r * c; i++) {
        seed = seed * 1103515245u + 12345u;
        pl_store_elem((char *)a.data + i * (int64_t)pl_dtype_size(t), t, ((seed >> 16) % 2001) / 1000.0 - 1.0);
    }
    return a;
}

Test(reference, matmul_with_every_transpose_matches_plain_loops)
{
    const int64_t m = 37, k = 53, n = 29;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            pl_array a = filled(PL_F32, ta ? k : m, ta ? m : k, 1), b = filled(PL_F32, tb ? n : k, tb ? k : n, 2);
            pl_array c = PL_ARRAY(calloc((size_t)(m * n), 4), PL_F32, m, n);
            char msg[256];
            cr_assert_eq(pl_ref_matmul(&a, &b, ta, tb, &c, msg, sizeof msg), PL_OK, "%s", msg);
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < n; j++) {
                    double s = 0;
                    for (int64_t p = 0; p < k; p++)
                        s += get(&a, ta ? p * m + i : i * k + p) * get(&b, tb ? j * k + p : p * n + j);
                    cr_assert(fabs(get(&c, i * n + j) - s) < 1e-4, "trans (%d, %d) at (%lld, %lld): %g vs %g", ta,
                              tb, (long long)i, (long long)j, get(&c, i * n + j), s);
                }
            free(a.data), free(b.data), free(c.data);
        }
}

/* bf16 operands widen exactly; a bf16 output is the f32 sum rounded once. */
Test(reference, bf16_in_bf16_out)
{
    pl_array a = filled(PL_BF16, 16, 64, 3), b = filled(PL_BF16, 64, 8, 4);
    pl_array c = PL_ARRAY(calloc(16 * 8, 2), PL_BF16, 16, 8);
    cr_assert_eq(pl_ref_matmul(&a, &b, 0, 0, &c, NULL, 0), PL_OK);
    for (int64_t i = 0; i < 16 * 8; i++) {
        float s = 0;
        for (int64_t p = 0; p < 64; p++) s += (float)get(&a, i / 8 * 64 + p) * (float)get(&b, p * 8 + i % 8);
        cr_assert(fabs(get(&c, i) - pl_bf16_to_f32(pl_f32_to_bf16(s))) <= 1e-6 + fabs(s) * 0x1p-7, "%lld",
                  (long long)i);
    }
    free(a.data), free(b.data), free(c.data);
}

Test(reference, a_shape_that_does_not_multiply_is_named)
{
    pl_array a = filled(PL_F32, 4, 5, 1), b = filled(PL_F32, 6, 7, 2), c = PL_ARRAY(calloc(28, 4), PL_F32, 4, 7);
    char msg[256];
    cr_assert_eq(pl_ref_matmul(&a, &b, 0, 0, &c, msg, sizeof msg), PL_ESHAPE);
    cr_assert(strstr(msg, "op(a) is 4x5, op(b) 6x7") && strstr(msg, "do not multiply"), "%s", msg);
    pl_array none = {0};
    cr_assert_eq(pl_ref_matmul(&none, &b, 0, 0, &c, msg, sizeof msg), PL_EINVAL);
    cr_assert(strstr(msg, "pl_ref_matmul: a"), "%s", msg);
    free(a.data), free(b.data), free(c.data);
}

Test(reference, softmax_rmsnorm_and_layernorm_match_plain_loops)
{
    const int64_t r = 5, d = 96;
    pl_array x = filled(PL_F32, r, d, 9), g = filled(PL_F32, 1, d, 10), bt = filled(PL_F32, 1, d, 11);
    pl_array o = PL_ARRAY(calloc((size_t)(r * d), 4), PL_F32, r, d);
    cr_assert_eq(pl_ref_softmax(&x, &o, NULL, 0), PL_OK);
    for (int64_t i = 0; i < r; i++) {
        double mx = -1e300, s = 0, sum = 0;
        for (int64_t j = 0; j < d; j++) mx = fmax(mx, get(&x, i * d + j));
        for (int64_t j = 0; j < d; j++) s += exp(get(&x, i * d + j) - mx);
        for (int64_t j = 0; j < d; j++) {
            cr_assert(fabs(get(&o, i * d + j) - exp(get(&x, i * d + j) - mx) / s) < 1e-7);
            sum += get(&o, i * d + j);
        }
        cr_assert(fabs(sum - 1) < 1e-5, "row %lld sums to %g", (long long)i, sum);
    }
    cr_assert_eq(pl_ref_rmsnorm(&x, &g, 1e-6, &o, NULL, 0), PL_OK);
    for (int64_t i = 0; i < r; i++) {
        double ss = 0;
        for (int64_t j = 0; j < d; j++) ss += get(&x, i * d + j) * get(&x, i * d + j);
        for (int64_t j = 0; j < d; j++)
            cr_assert(fabs(get(&o, i * d + j) - get(&x, i * d + j) / sqrt(ss / d + 1e-6) * get(&g, j)) < 1e-5);
    }
    cr_assert_eq(pl_ref_layernorm(&x, &g, &bt, 1e-5, &o, NULL, 0), PL_OK);
    for (int64_t i = 0; i < r; i++) {
        double mu = 0, var = 0;
        for (int64_t j = 0; j < d; j++) mu += get(&x, i * d + j) / d;
        for (int64_t j = 0; j < d; j++) var += (get(&x, i * d + j) - mu) * (get(&x, i * d + j) - mu) / d;
        for (int64_t j = 0; j < d; j++)
            cr_assert(fabs(get(&o, i * d + j) - ((get(&x, i * d + j) - mu) / sqrt(var + 1e-5) * get(&g, j) +
                                                 get(&bt, j))) < 1e-5);
    }
    char msg[256];
    pl_array small = filled(PL_F32, 1, 8, 1);
    cr_assert_eq(pl_ref_rmsnorm(&x, &small, 1e-6, &o, msg, sizeof msg), PL_ESHAPE);
    cr_assert(strstr(msg, "96 elements"), "%s", msg);
    free(x.data), free(g.data), free(bt.data), free(o.data), free(small.data);
}
