/* tests/test_emit_smem.c: an emit_pipeline spec in memory space SMEM (rule
 * K3). JAX's emit_pipeline allocates such an operand's buffers in SMEM
 * (BufferedRef over the spec's memory space; tpu_pallas_pipeline_test.py's
 * test_pipeline_axis_queries writes its results through a (None, 128) SMEM
 * out spec): the body reads and writes scalars there, the copies move them
 * as for VMEM, and the buffers take no VMEM. And a spec with no block shape
 * (rank 0) is the whole ref, as test_prng_pallas_vs_pipeline's
 * BlockSpec(memory_space=SMEM) key under grid=(). */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "../sim/tilesim_kernel.h"
#include "helpers.h"

enum { ROWS = 8, COLS = 128 };

static pltpu_pipeline pipe_spec;
static pl_ref outer[2];
static int body_space[2];

/* o[i, k] = 2 x[i, k] + i, scalar by scalar */
static void scalars(pl_ctx *c, pl_ref *refs, const int64_t *idx, void *user)
{
    (void)user;
    body_space[0] = refs[0].space, body_space[1] = refs[1].space;
    for (int64_t k = 0; k < COLS; k++)
        pl_set_at(c, refs[1], 2 * pl_get_at(c, refs[0], k) + (double)idx[0], k);
}

/* a vector op on an SMEM block: the MXU reads VMEM only (M1) */
static void dot_on_smem(pl_ctx *c, pl_ref *refs, const int64_t *idx, void *user)
{
    (void)idx, (void)user;
    pl_dot(c, refs[1], refs[0], refs[0], 0);
}

static pltpu_pipeline_body body;

static void kern(pl_ctx *c, pl_ref *refs)
{
    outer[0] = refs[0], outer[1] = refs[1];
    pltpu_emit_pipeline(c, &pipe_spec, &outer[0], &outer[1], body, NULL);
}

static int run(pl_dtype t, pl_memspace space, int32_t *x, int32_t *o, pl_report *rep)
{
    pl_array a = PL_ARRAY(x, t, ROWS, COLS), out = PL_ARRAY(o, t, ROWS, COLS);
    pl_call call = {.name = "smem_pipe", .kernel = kern, .n_in = 1, .in = {{.space = PL_ANY}}, .n_out = 1,
                    .out = {{.space = PL_ANY}}};
    pipe_spec = (pltpu_pipeline){.grid_rank = 1, .grid = {ROWS}, .n_in = 1, .n_out = 1,
                                 .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), PL_SQUEEZED, COLS)},
                                 .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), PL_SQUEEZED, COLS)}};
    pipe_spec.in[0].space = pipe_spec.out[0].space = space;
    pl_options opt = {.chip = "v5e", .strict = 1};
    return pl_pallas_call(&call, &a, &out, &opt, rep);
}

Test(emit_smem, K3_an_smem_spec_buffers_scalars_in_smem_and_takes_no_vmem)
{
    int32_t x[ROWS * COLS], o[ROWS * COLS];
    for (int i = 0; i < ROWS * COLS; i++) x[i] = i - 300, o[i] = -7;
    pl_report rep;
    body = scalars;
    th_expect_ok(run(PL_I32, PL_SMEM, x, o, &rep), &rep);
    cr_expect_eq(body_space[0], PL_SMEM, "the body's input block is in SMEM");
    cr_expect_eq(body_space[1], PL_SMEM, "the body's output block is in SMEM");
    for (int i = 0; i < ROWS; i++)
        for (int k = 0; k < COLS; k++)
            cr_assert_eq(o[i * COLS + k], 2 * x[i * COLS + k] + i, "o[%d][%d]", i, k);
    cr_expect_eq(rep.scoped_peak_bytes, 0, "SMEM buffers take no VMEM: scoped peak %lld",
                 (long long)rep.scoped_peak_bytes);
    /* the same pipeline over VMEM takes two (1, 128) slots per operand in VMEM */
    th_expect_ok(run(PL_I32, PL_VMEM, x, o, &rep), &rep);
    cr_expect_eq(rep.scoped_peak_bytes, 2 * 2 * 128 * 4, "VMEM: scoped peak %lld",
                 (long long)rep.scoped_peak_bytes);
}

/* The pipeline with body b over space is refused PL_ESPACE, its message naming what. */
static void expect_space_error(pltpu_pipeline_body b, pl_memspace space, const char *what, const char *also)
{
    int32_t x[ROWS * COLS] = {0}, o[ROWS * COLS] = {0};
    pl_report rep;
    body = b;
    int rc = run(PL_I32, space, x, o, &rep);
    cr_assert_eq(rc, PL_ESPACE, "%s", rep.error);
    cr_expect(strstr(rep.error, what) && strstr(rep.error, also), "%s", rep.error);
}

Test(emit_smem, K3_the_mxu_does_not_read_an_smem_block)
{
    expect_space_error(dot_on_smem, PL_SMEM, "SMEM holds scalars", "pl_dot");
}

Test(emit_smem, K3_a_semaphore_space_spec_is_refused_by_name)
{
    expect_space_error(scalars, PL_SEMAPHORE, "in_specs[0]", "SEMAPHORE");
}

/* grid=(), a whole-ref SMEM input (a (2,) "key") and a whole-ref VMEM output: o = key[0] * 1000 + key[1] */
static pl_ref whole_refs[2];
static pltpu_pipeline whole_spec;
static int64_t whole_block_rank;

static void key_body(pl_ctx *c, pl_ref *refs, const int64_t *idx, void *user)
{
    (void)idx, (void)user;
    whole_block_rank = refs[1].rank;
    body_space[0] = refs[0].space;
    pl_fill(c, refs[1], pl_get_at(c, refs[0], 0) * 1000 + pl_get_at(c, refs[0], 1));
}

static void whole_kern(pl_ctx *c, pl_ref *refs)
{
    whole_refs[0] = refs[0], whole_refs[1] = refs[1];
    pltpu_emit_pipeline(c, &whole_spec, &whole_refs[0], &whole_refs[1], key_body, NULL);
}

Test(emit_smem, B3_K3_a_spec_of_rank_0_is_the_whole_ref)
{
    int32_t key[2] = {7, 42};
    float *o = th_f32_fill(8 * 128, TH_SENTINEL);
    pl_array k = PL_ARRAY(key, PL_I32, 2), out = PL_ARRAY(o, PL_F32, 8, 128);
    pl_call call = {.name = "prng_like", .kernel = whole_kern, .n_in = 1, .in = {{.space = PL_ANY}}, .n_out = 1,
                    .out = {{.space = PL_ANY}}};
    whole_spec = (pltpu_pipeline){.grid_rank = 0, .n_in = 1, .n_out = 1};
    whole_spec.in[0].space = PL_SMEM;
    pl_options opt = {.chip = "v5e", .strict = 1};
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &k, &out, &opt, &rep), &rep);
    cr_expect_eq(body_space[0], PL_SMEM);
    cr_expect_eq(whole_block_rank, 2, "the output block is the whole (8, 128) ref");
    for (int i = 0; i < 8 * 128; i++) cr_assert_eq(o[i], 7042.0f, "o[%d] = %g", i, o[i]);
    free(o);
}
