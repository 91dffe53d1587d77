/* tests/test_emit_any_space.c: an emit_pipeline spec in memory space ANY
 * (rule K3). JAX's emit_pipeline gives the body such an operand's block as
 * the ref itself, unbuffered (jax/_src/pallas/mosaic/pipeline.py; the
 * HBM-output tests of tpu_pallas_pipeline_test.py): nothing is copied in
 * or written back, so what the body leaves unwritten keeps what HBM held,
 * and no VMEM is taken for it. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "../sim/tilesim_kernel.h"
#include "helpers.h"

static pltpu_pipeline pipe_spec;
static pl_ref seen_out;
static pl_ref outer[2];

/* columns [128 i, 128 i + 128) of the ANY output, for i < 2 only */
static void half(pl_ctx *c, pl_ref *refs, const int64_t *idx, void *user)
{
    (void)user;
    seen_out = refs[1];
    if (idx[0] < 2) pltpu_sync_copy(c, refs[0], pl_ds(c, refs[1], 1, idx[0] * 128, 128));
}

/* zero the output in HBM, then the pipeline */
static void zero_then_pipe(pl_ctx *c, pl_ref *scratch, void *user)
{
    (void)user;
    pl_fill(c, scratch[0], 0);
    pltpu_sync_copy(c, scratch[0], outer[1]);
    pltpu_emit_pipeline(c, &pipe_spec, &outer[0], &outer[1], half, NULL);
}

static void kern(pl_ctx *c, pl_ref *refs)
{
    outer[0] = refs[0], outer[1] = refs[1];
    pl_scratch t[1] = {PLTPU_VMEM(PL_F32, 8, 512)};
    pl_run_scoped(c, t, 1, zero_then_pipe, NULL);
}

Test(emit_any_space, K3_an_any_space_output_is_the_ref_itself_and_keeps_what_the_body_leaves)
{
    float *x = th_f32_seq(8 * 512), *o = th_f32_fill(8 * 512, TH_SENTINEL);
    pl_array a = PL_ARRAY(x, PL_F32, 8, 512), out = PL_ARRAY(o, PL_F32, 8, 512);
    pl_call call = {.name = "any_out", .kernel = kern, .n_in = 1, .in = {{.space = PL_ANY}}, .n_out = 1,
                    .out = {{.space = PL_ANY}}};
    pipe_spec = (pltpu_pipeline){.grid_rank = 1, .grid = {4}, .n_in = 1, .n_out = 1,
                                 .in = {PL_BLOCK(PL_MAP(PL_ZERO, 0), 8, 128)},
                                 .out = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 8, 512)}};
    pipe_spec.out[0].space = PL_ANY;
    pl_options opt = {.chip = "v5e", .strict = 1};
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &a, &out, &opt, &rep), &rep);
    cr_expect_eq(seen_out.space, PL_ANY, "the body holds the HBM ref, not a VMEM slot");
    cr_expect_eq(seen_out.shape[1], 512);
    for (int r = 0; r < 8; r++)
        for (int k = 0; k < 512; k++) {
            float want = k < 256 ? x[r * 512 + k] : 0.0f; /* the body wrote the first two column blocks */
            cr_assert_eq(o[r * 512 + k], want, "o[%d][%d]: the zeros the body left stay", r, k);
        }
    /* the pipeline takes VMEM for the input's two (8, 128) slots only, not the (8, 512) output */
    cr_expect_lt(rep.vmem_bytes, 8 * 512 * 4 + 3 * 8 * 128 * 4, "%lld bytes", (long long)rep.vmem_bytes);
    free(x), free(o);
}
