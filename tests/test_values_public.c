/* tests/test_values_public.c: values (pallas.h, pl_value) for kernels of
 * users' own: what a kernel computes at one grid point is held as a value,
 * in no VMEM budget (M4), so a plugin's kernel counts the VMEM a real one
 * allocates; taking more than the grid point reserved is an error naming
 * the bytes, never a write past the arena. */
#include <criterion/criterion.h>
#include <string.h>

#include "helpers.h"

/* o = 2x + y through a value t, on (64, 256) blocks of a (128, 512) array */
static void two_x_plus_y(pl_ctx *c, pl_ref *refs)
{
    int64_t r = refs[0].shape[0], k = refs[0].shape[1];
    pl_values_begin(c, pl_value_bytes(PL_F32, r, k));
    pl_ref t = pl_value(c, PL_F32, r, k);
    pl_mul_scalar(c, t, refs[0], 2.0);
    pl_add(c, refs[2], t, refs[1]);
}

static void takes_too_much(pl_ctx *c, pl_ref *refs)
{
    pl_values_begin(c, pl_value_bytes(PL_F32, 8, 128));
    (void)pl_value(c, PL_F32, 8, 128);
    (void)pl_value(c, PL_F32, 8, 128); /* one more than reserved */
    (void)refs;
}

static void never_reserves(pl_ctx *c, pl_ref *refs)
{
    (void)pl_value(c, PL_BF16, 16, 128);
    (void)refs;
}

static pl_call call_of(pl_kernel_fn fn)
{
    pl_call call = {.name = "values", .kernel = fn, .grid_rank = 2, .grid = {2, 2}, .n_in = 2, .n_out = 1,
                    .in = {PL_BLOCK(PL_MAP(0, 1), 64, 256), PL_BLOCK(PL_MAP(0, 1), 64, 256)},
                    .out = {PL_BLOCK(PL_MAP(0, 1), 64, 256)}};
    return call;
}

Test(values_public, a_value_is_in_no_vmem_budget_and_computes)
{
    float *x = th_f32_seq(128 * 512), *y = th_f32_seq(128 * 512), *o = th_f32_fill(128 * 512, TH_SENTINEL);
    pl_array in[2] = {PL_ARRAY(x, PL_F32, 128, 512), PL_ARRAY(y, PL_F32, 128, 512)}, out = PL_ARRAY(o, PL_F32, 128, 512);
    pl_call call = call_of(two_x_plus_y);
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, in, &out, NULL, &rep), &rep);
    for (int i = 0; i < 128 * 512; i++) cr_assert_eq(o[i], 2 * x[i] + y[i], "o[%d]", i);
    cr_expect_eq(rep.n_scratch, 0);
    cr_expect_eq(rep.vmem_bytes, 3 * 2 * 64 * 256 * 4, "the three blocks' two buffers, nothing for t");
    free(x), free(y), free(o);
}

Test(values_public, a_value_past_what_was_reserved_is_an_error)
{
    pl_array in[2] = {PL_ARRAY(NULL, PL_F32, 128, 512), PL_ARRAY(NULL, PL_F32, 128, 512)};
    pl_array out = PL_ARRAY(NULL, PL_F32, 128, 512);
    pl_options opt = {.cost_only = 1};
    pl_report rep;
    pl_call call = call_of(takes_too_much);
    int rc = pl_pallas_call(&call, in, &out, &opt, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "pl_value(8, 128) of f32 needs 4096 bytes", "left 0 of 4096",
                    "pl_values_begin");
    call = call_of(never_reserves);
    rc = pl_pallas_call(&call, in, &out, &opt, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "pl_value(16, 128) of bf16", "left 0 of 0");
}

Test(values_public, value_bytes_refuses_nonsense_and_overflow)
{
    cr_expect_eq(pl_value_bytes(PL_F32, 0, 128), 0);
    cr_expect_eq(pl_value_bytes(PL_F32, 8, -1), 0);
    cr_expect_eq(pl_value_bytes((pl_dtype)99, 8, 128), 0);
    cr_expect_eq(pl_value_bytes(PL_F32, INT64_MAX / 2, INT64_MAX / 2), SIZE_MAX);
    cr_expect_eq(pl_value_bytes(PL_BF16, 16, 128), 4096);
}
