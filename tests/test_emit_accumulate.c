/* should_accumulate_out in emit_pipeline (rule K9), as JAX's
 * tpu_pallas_pipeline_test.py test_double_pipeline_matmul and the
 * distributed guide's reduce-scatter (whose inner pipeline's body writes
 * `accum_ref[...] = input_ref[...]` and the HBM block gains the input) use
 * it: an output block is copied in and kept when it becomes current, and
 * written back as the body's block plus the kept one. */
#include <criterion/criterion.h>
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "../sim/tilesim_kernel.h"
#include "helpers.h"

enum { N = 512, B = 128 };

static pltpu_pipeline g_mm;

/* z += x @ y over (i, j, k), zeroed at k == 0: JAX's matmul_pipeline */
static void matmul_body(pl_ctx *c, pl_ref *refs, const int64_t *idx, void *user)
{
    (void)user;
    if (idx[2] == 0) pl_fill(c, refs[2], 0.0);
    pl_dot(c, refs[2], refs[0], refs[1], PL_DOT_ACC);
}

static void twice(pl_ctx *c, pl_ref *refs)
{
    for (int acc = 0; acc < 2; acc++) {
        g_mm.should_accumulate_out = acc;
        pltpu_emit_pipeline(c, &g_mm, &refs[0], &refs[2], matmul_body, NULL);
    }
}

Test(emit_accumulate, K9_a_second_pipeline_adds_into_the_first_ones_output)
{
    g_mm = (pltpu_pipeline){.grid_rank = 3, .grid = {N / B, N / B, N / B}, .n_in = 2, .n_out = 1,
                            .in = {PL_BLOCK(PL_MAP(0, 2), B, B), PL_BLOCK(PL_MAP(2, 1), B, B)},
                            .out = {PL_BLOCK(PL_MAP(0, 1), B, B)}};
    float *x = th_f32_seq(N * N), *y = th_f32_seq(N * N), *z = th_f32_fill(N * N, TH_SENTINEL);
    for (int i = 0; i < N * N; i++) x[i] = (float)((i * 7) % 13) / 13.0f - 0.5f, y[i] = (float)((i * 5) % 11) / 11.0f;
    pl_array a[2] = {PL_ARRAY(x, PL_F32, N, N), PL_ARRAY(y, PL_F32, N, N)}, o = PL_ARRAY(z, PL_F32, N, N);
    pl_call call = {.name = "double_pipeline_matmul", .kernel = twice, .n_in = 2, .n_out = 1};
    call.in[0].space = call.in[1].space = call.out[0].space = PL_ANY;
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, a, &o, &(pl_options){.chip = "v5e"}, &rep), &rep);
    float *want = calloc(N * N, sizeof *want);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 2.0f, x, N, y, N, 0.0f, want, N);
    for (int i = 0; i < N * N; i++)
        cr_assert(fabsf(z[i] - want[i]) <= 1e-3f * (1 + fabsf(want[i])), "z[%d] = %g, 2 x@y = %g", i, z[i], want[i]);
    free(x), free(y), free(z), free(want);
}

/* the guide's reduce step: the body writes the input over its block, the ref gains it */
static void overwrite(pl_ctx *c, pl_ref *refs, const int64_t *idx, void *user)
{
    (void)idx, (void)user;
    pl_copy(c, refs[1], refs[0]);
}

static pltpu_pipeline g_add;
static void add_into(pl_ctx *c, pl_ref *refs) { pltpu_emit_pipeline(c, &g_add, &refs[0], &refs[2], overwrite, NULL); }

static int run_add(int accumulate, pl_memspace out_space, float *x, float *z, pl_report *rep)
{
    g_add = (pltpu_pipeline){.grid_rank = 1, .grid = {4}, .n_in = 1, .n_out = 1,
                             .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)}, .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)},
                             .should_accumulate_out = accumulate};
    g_add.out[0].space = out_space;
    pl_array a[2] = {PL_ARRAY(x, PL_F32, 32, 128), PL_ARRAY(z, PL_F32, 32, 128)}, o = PL_ARRAY(z, PL_F32, 32, 128);
    /* z as given: the output aliases it (M6); an output of its own would start uninitialized (V1) */
    pl_call call = {.name = "accumulate", .kernel = add_into, .n_in = 2, .n_out = 1, .n_alias = 1, .alias = {{1, 0}}};
    call.in[0].space = call.in[1].space = call.out[0].space = PL_ANY;
    return pl_pallas_call(&call, a, &o, &(pl_options){.chip = "v6e"}, rep);
}

Test(emit_accumulate, K9_the_ref_gains_what_the_body_writes_and_costs_one_copy_in_more)
{
    float *x = th_f32_seq(32 * 128), *z = th_f32_fill(32 * 128, 0);
    pl_report with, without;
    for (int i = 0; i < 32 * 128; i++) z[i] = 1000.0f;
    th_expect_ok(run_add(1, PL_VMEM, x, z, &with), &with);
    for (int i = 0; i < 32 * 128; i++) cr_assert_eq(z[i], 1000.0f + x[i], "z[%d]", i);
    for (int i = 0; i < 32 * 128; i++) z[i] = 1000.0f;
    th_expect_ok(run_add(0, PL_VMEM, x, z, &without), &without);
    for (int i = 0; i < 32 * 128; i++) cr_assert_eq(z[i], x[i], "written, not added: z[%d]", i);
    cr_expect_gt(with.dma_bytes, without.dma_bytes, "each output block is also copied in");
    cr_expect_eq(with.dma_bytes - without.dma_bytes, 32 * 128 * 4);
    pl_report rep;
    int rc = run_add(1, PL_ANY, x, z, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "out_specs[0]", "should_accumulate_out", "ANY", "K9");
    free(x), free(z);
}
