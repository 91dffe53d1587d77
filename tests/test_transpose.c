/* tests/test_transpose.c: pl_transpose, x.T of a 2-D block (issue 23).
 *
 * JAX's Pallas TPU tests transpose blocks inside kernels (x_ref[...].T in
 * the ops tests); a kernel that did it element by element with pl_get and
 * pl_set took 265 us for what should cost a copy. The op keeps every value
 * bit for bit (converting to dst's dtype as pl_copy does), may work in
 * place on a square block, refuses a shape that is not the transpose by
 * name, and is priced as a copy through VMEM (rule T11 in docs/PALLAS.md;
 * docs/CHIPS.md).
 */
#include <criterion/criterion.h>
#include <string.h>

#include "../kernel/pallas.h"
#include "../sim/tilesim.h"
#include "helpers.h"

static void t_kernel(pl_ctx *c, pl_ref *r) { pl_transpose(c, r[1], r[0]); }

/* in place: copy in, transpose the output block onto itself */
static void t_inplace_kernel(pl_ctx *c, pl_ref *r)
{
    pl_copy(c, r[1], r[0]);
    pl_transpose(c, r[1], r[1]);
}

static pl_call one_block(void (*k)(pl_ctx *, pl_ref *))
{
    return (pl_call){.name = "transpose", .kernel = k, .n_in = 1, .n_out = 1};
}

/* out (n, m) holds in (m, n) transposed, value for value */
static void expect_transposed(const float *in, const float *out, int m, int n)
{
    for (int r = 0; r < m; r++)
        for (int k = 0; k < n; k++) cr_assert_eq(out[k * m + r], in[r * n + k], "(%d, %d)", r, k);
}

Test(transpose, f32_and_bf16_blocks_keep_every_value)
{
    float in[8 * 128], out[128 * 8];
    for (int i = 0; i < 8 * 128; i++) in[i] = (float)i * 0.25f - 100;
    pl_call call = one_block(t_kernel);
    pl_array a = PL_ARRAY(in, PL_F32, 8, 128), o = PL_ARRAY(out, PL_F32, 128, 8);
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &a, &o, NULL, &rep), &rep);
    expect_transposed(in, out, 8, 128);

    uint16_t bin[16 * 256], bout[256 * 16];
    for (int i = 0; i < 16 * 256; i++) bin[i] = pl_f32_to_bf16((float)(i % 251) - 3.5f);
    pl_array ba = PL_ARRAY(bin, PL_BF16, 16, 256), bo = PL_ARRAY(bout, PL_BF16, 256, 16);
    th_expect_ok(pl_pallas_call(&call, &ba, &bo, NULL, &rep), &rep);
    for (int r = 0; r < 16; r++)
        for (int k = 0; k < 256; k++) cr_assert_eq(bout[k * 16 + r], bin[r * 256 + k], "bf16 (%d, %d)", r, k);
}

Test(transpose, a_square_block_transposes_in_place)
{
    static float in[128 * 128], out[128 * 128];
    for (int i = 0; i < 128 * 128; i++) in[i] = (float)i;
    pl_call call = one_block(t_inplace_kernel);
    pl_array a = PL_ARRAY(in, PL_F32, 128, 128), o = PL_ARRAY(out, PL_F32, 128, 128);
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &a, &o, NULL, &rep), &rep);
    expect_transposed(in, out, 128, 128);
}

Test(transpose, a_shape_that_is_not_the_transpose_is_refused_by_name)
{
    float in[8 * 128] = {0}, out[8 * 128];
    pl_call call = one_block(t_kernel);
    pl_array a = PL_ARRAY(in, PL_F32, 8, 128), o = PL_ARRAY(out, PL_F32, 8, 128);
    pl_report rep;
    cr_assert_eq(pl_pallas_call(&call, &a, &o, NULL, &rep), PL_ESHAPE);
    cr_expect(strstr(rep.error, "pl_transpose") && strstr(rep.error, "(128, 8)"), "%s", rep.error);
    pl_array a3 = PL_ARRAY(in, PL_F32, 2, 4, 128), o3 = PL_ARRAY(out, PL_F32, 2, 4, 128);
    cr_assert_eq(pl_pallas_call(&call, &a3, &o3, NULL, &rep), PL_ESHAPE);
    cr_expect(strstr(rep.error, "rank 3"), "%s", rep.error);
}

/* (1024, 1024) f32 in (256, 256) blocks, block (i, j) of x to block (j, i)
 * of o: the transpose costs what the plain copy of the same blocks costs,
 * within a quarter, on v5e and v6e. */
Test(transpose, a_tiled_transpose_costs_about_a_copy)
{
    static const char *chips[] = {"v5e", "v6e"};
    for (int ci = 0; ci < 2; ci++) {
        pl_call t = th_copy_call_2d(1024, 1024, 256, 256), cp = t;
        t.kernel = t_kernel;
        t.out[0] = PL_BLOCK(PL_MAP(1, 0), 256, 256);
        pl_array a = PL_ARRAY(NULL, PL_F32, 1024, 1024), o = PL_ARRAY(NULL, PL_F32, 1024, 1024);
        pl_options opt = {.chip = chips[ci], .cost_only = 1};
        pl_report rt, rc;
        th_expect_ok(pl_pallas_call(&t, &a, &o, &opt, &rt), &rt);
        th_expect_ok(pl_pallas_call(&cp, &a, &o, &opt, &rc), &rc);
        cr_expect(rt.time_s < 1.25 * rc.time_s && rt.time_s >= rc.time_s, "%s: transpose %g us, copy %g us",
                  chips[ci], rt.time_s * 1e6, rc.time_s * 1e6);
    }
}

/* The transposed blocks really land transposed across the grid. */
Test(transpose, a_tiled_transpose_is_the_matrix_transpose)
{
    static float in[512 * 256], out[256 * 512];
    for (int i = 0; i < 512 * 256; i++) in[i] = (float)(i % 9973);
    pl_call t = th_copy_call_2d(512, 256, 128, 128);
    t.kernel = t_kernel;
    t.out[0] = PL_BLOCK(PL_MAP(1, 0), 128, 128);
    pl_array a = PL_ARRAY(in, PL_F32, 512, 256), o = PL_ARRAY(out, PL_F32, 256, 512);
    pl_report rep;
    th_expect_ok(pl_pallas_call(&t, &a, &o, NULL, &rep), &rep);
    for (int r = 0; r < 512; r++)
        for (int k = 0; k < 256; k++) cr_assert_eq(out[k * 512 + r], in[r * 256 + k], "(%d, %d)", r, k);
}
