/* Integer reductions and pl_reduce_min (issue 10's reductions, widened as
 * JAX's tpu_ops_test.py test_reduction has them): jnp.sum, jnp.max and
 * jnp.min of an int32 block along either axis with keepdims are exact, the
 * sum wrapping as an int32 sum does; the min of a float block lets NaN win,
 * as jnp.min does. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>

#include "../kernel/pallas.h"
#include "../sim/tilesim.h"
#include "helpers.h"

enum { R = 8, C = 128 };
static int g_how, g_axis;

static void reduce_kernel(pl_ctx *c, pl_ref *refs)
{
    if (g_how == 0) pl_reduce_sum(c, refs[1], refs[0], g_axis);
    if (g_how == 1) pl_reduce_max(c, refs[1], refs[0], g_axis);
    if (g_how == 2) pl_reduce_min(c, refs[1], refs[0], g_axis);
}

static int run(pl_dtype dt, void *x, void *y, pl_report *rep)
{
    pl_array a = PL_ARRAY(x, dt, R, C), o = g_axis == 0 ? PL_ARRAY(y, dt, 1, C) : PL_ARRAY(y, dt, R, 1);
    pl_call call = {.name = "reduce", .kernel = reduce_kernel, .n_in = 1, .n_out = 1};
    return pl_pallas_call(&call, &a, &o, NULL, rep);
}

Test(reduce_int, int32_sum_max_and_min_along_either_axis_are_exact)
{
    int32_t x[R * C], y[C];
    for (int i = 0; i < R * C; i++) x[i] = (int32_t)((i * 7919) % 2001) - 1000;
    for (g_how = 0; g_how < 3; g_how++)
        for (g_axis = 0; g_axis < 2; g_axis++) {
            pl_report rep;
            th_expect_ok(run(PL_I32, x, y, &rep), &rep);
            int64_t n = g_axis == 0 ? C : R, m = g_axis == 0 ? R : C;
            for (int64_t k = 0; k < n; k++) {
                int64_t acc = g_how == 0 ? 0 : g_how == 1 ? INT32_MIN : INT32_MAX;
                for (int64_t q = 0; q < m; q++) {
                    int32_t v = g_axis == 0 ? x[q * C + k] : x[k * C + q];
                    acc = g_how == 0 ? acc + v : g_how == 1 ? (v > acc ? v : acc) : (v < acc ? v : acc);
                }
                cr_assert_eq(y[k], (int32_t)acc, "how %d axis %d element %lld", g_how, g_axis, (long long)k);
            }
        }
}

Test(reduce_int, an_int32_sum_wraps_as_int32_does)
{
    int32_t x[R * C], y[R];
    for (int i = 0; i < R * C; i++) x[i] = INT32_MAX / 64;
    g_how = 0, g_axis = 1;
    pl_report rep;
    th_expect_ok(run(PL_I32, x, y, &rep), &rep);
    int32_t want = (int32_t)(uint32_t)((uint64_t)(INT32_MAX / 64) * C);
    for (int r = 0; r < R; r++) cr_assert_eq(y[r], want, "row %d: %d", r, y[r]);
}

Test(reduce_int, float_min_lets_nan_win_and_int8_is_refused)
{
    float x[R * C], y[C];
    for (int i = 0; i < R * C; i++) x[i] = (float)(i % 37) - 3.5f;
    x[5] = NAN;
    g_how = 2, g_axis = 0;
    pl_report rep;
    th_expect_ok(run(PL_F32, x, y, &rep), &rep);
    cr_expect(isnan(y[5]), "column 5 holds the NaN");
    cr_expect_eq(y[0], -3.5f);
    int8_t b[R * C] = {0}, o[C];
    int rc = run(PL_I8, b, o, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EDTYPE, "pl_reduce_min", "float refs (f32, bf16, f16) or int32");
}
