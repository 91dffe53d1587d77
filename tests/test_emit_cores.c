/* tests/test_emit_cores.c: emit_pipeline's grid split over the TensorCores
 * of a pl_kernel (issue 23; rule K7), as JAX's emit_pipeline(core_axis_name=)
 * splits it (jax/_src/pallas/mosaic/pipeline.py): one PL_PARALLEL axis,
 * the first the cores divide, cut into contiguous parts in core order;
 * else the largest parallel axis, the first `rem` cores taking one point
 * more; the body and the index maps see global indices. JAX's
 * test_megacore_mul (tpu_pallas_pipeline_test.py): y = x * 2 over a (4, 4)
 * grid of (128, 128) blocks, semantics (ARBITRARY, PARALLEL). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/tilesim_kernel.h"
#include "helpers.h"

enum { MAX_SEEN = 64 };
static int64_t seen[4][MAX_SEEN][2]; /* per core: the inner points its body ran, in order */
static int n_seen[4];
static pltpu_pipeline pipe_spec;

static void times_two(pl_ctx *c, pl_ref *refs, const int64_t *idx, void *user)
{
    (void)user;
    int core = pl_core_index(c);
    if (core < 4 && n_seen[core] < MAX_SEEN) {
        seen[core][n_seen[core]][0] = idx[0];
        seen[core][n_seen[core]][1] = pipe_spec.grid_rank > 1 ? idx[1] : -1;
        n_seen[core]++;
    }
    pl_mul_scalar(c, refs[1], refs[0], 2.0);
}

static void megacore_body(pl_ctx *c, pl_ref *refs) { pltpu_emit_pipeline(c, &pipe_spec, &refs[0], &refs[1], times_two, NULL); }

static int run_mul(const pl_options *opt, int64_t rows, int64_t cols, pl_report *rep, float **x, float **y)
{
    *x = th_f32_seq(rows * cols), *y = th_f32_fill(rows * cols, TH_SENTINEL);
    pl_array a = PL_ARRAY(*x, PL_F32, rows, cols), o = PL_ARRAY(*y, PL_F32, rows, cols);
    pl_kernel_spec k = {.name = "megacore_mul", .body = megacore_body, .n_in = 1, .n_out = 1};
    return pl_kernel(&k, &a, &o, opt, rep);
}

Test(emit_cores, K7_megacore_mul_splits_the_parallel_axis_over_v5ps_two_cores)
{
    pipe_spec = (pltpu_pipeline){.grid_rank = 2, .grid = {4, 4}, .n_in = 1, .n_out = 1,
                                 .in = {PL_BLOCK(PL_MAP(0, 1), 128, 128)}, .out = {PL_BLOCK(PL_MAP(0, 1), 128, 128)},
                                 .core_split = 1, .semantics = {PL_ARBITRARY, PL_PARALLEL}};
    pl_options opt = {.chip = "v5p", .strict = 1};
    pl_report rep;
    float *x, *y;
    th_expect_ok(run_mul(&opt, 512, 512, &rep, &x, &y), &rep);
    cr_assert_eq(rep.cores, 2);
    for (int i = 0; i < 512 * 512; i++) cr_assert_eq(y[i], 2 * x[i], "element %d", i);
    for (int core = 0; core < 2; core++) {
        cr_assert_eq(n_seen[core], 8, "core %d ran %d of the 16 points", core, n_seen[core]);
        for (int k = 0; k < 8; k++) { /* i = 0..3 outer, j = 2 core .. 2 core + 1 inner, in order (G1) */
            cr_assert_eq(seen[core][k][0], k / 2, "core %d point %d", core, k);
            cr_assert_eq(seen[core][k][1], 2 * core + k % 2, "core %d point %d: global j", core, k);
        }
    }
    cr_assert_eq(rep.nested_steps, 16, "16 inner steps over both cores");
    free(x), free(y);
    /* in time too: without the split each core walks all 16 points */
    pipe_spec.core_split = 0;
    memset(n_seen, 0, sizeof n_seen);
    pl_report whole;
    th_expect_ok(run_mul(&opt, 512, 512, &whole, &x, &y), &whole);
    cr_assert_eq(n_seen[0], 16);
    cr_expect_lt(rep.time_s, 0.7 * whole.time_s, "split %g s, every core the whole grid %g s", rep.time_s,
                 whole.time_s);
    free(x), free(y);
}

/* A grid the cores do not divide: 5 points over 2 cores are 3 and 2. */
Test(emit_cores, K7_an_uneven_axis_gives_the_first_cores_one_more)
{
    pipe_spec = (pltpu_pipeline){.grid_rank = 1, .grid = {5}, .n_in = 1, .n_out = 1,
                                 .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)},
                                 .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)},
                                 .core_split = 1, .semantics = {PL_PARALLEL}};
    pl_options opt = {.chip = "v5p"};
    pl_report rep;
    float *x, *y;
    th_expect_ok(run_mul(&opt, 40, 128, &rep, &x, &y), &rep);
    for (int i = 0; i < 40 * 128; i++) cr_assert_eq(y[i], 2 * x[i], "element %d", i);
    cr_assert_eq(n_seen[0], 3);
    cr_assert_eq(n_seen[1], 2);
    for (int k = 0; k < 3; k++) cr_assert_eq(seen[0][k][0], k);
    for (int k = 0; k < 2; k++) cr_assert_eq(seen[1][k][0], 3 + k);
    free(x), free(y);
}

/* JAX refuses a split with no parallel axis. */
Test(emit_cores, K7_a_split_without_a_parallel_axis_is_refused)
{
    pipe_spec = (pltpu_pipeline){.grid_rank = 2, .grid = {4, 4}, .n_in = 1, .n_out = 1,
                                 .in = {PL_BLOCK(PL_MAP(0, 1), 128, 128)}, .out = {PL_BLOCK(PL_MAP(0, 1), 128, 128)},
                                 .core_split = 1};
    pl_options opt = {.chip = "v5p"};
    pl_report rep;
    float *x, *y;
    int rc = run_mul(&opt, 512, 512, &rep, &x, &y);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "core_split over 2 cores", "PL_PARALLEL", "without parallel grid dimensions",
                    "K7");
    free(x), free(y);
}

/* One core: nothing to split, the whole grid runs there. */
Test(emit_cores, K7_on_one_core_the_whole_grid_runs)
{
    pipe_spec = (pltpu_pipeline){.grid_rank = 2, .grid = {4, 4}, .n_in = 1, .n_out = 1,
                                 .in = {PL_BLOCK(PL_MAP(0, 1), 128, 128)}, .out = {PL_BLOCK(PL_MAP(0, 1), 128, 128)},
                                 .core_split = 1, .semantics = {PL_ARBITRARY, PL_PARALLEL}};
    pl_options opt = {.chip = "v6e"};
    pl_report rep;
    float *x, *y;
    th_expect_ok(run_mul(&opt, 512, 512, &rep, &x, &y), &rep);
    cr_assert_eq(n_seen[0], 16);
    for (int i = 0; i < 512 * 512; i++) cr_assert_eq(y[i], 2 * x[i], "element %d", i);
    free(x), free(y);
}

/* ---- core_axis=int: an enclosing grid axis numbers the parts (JAX's PaddedPipelineEmitter) ---- */

/* pallas_call grid (2,) PARALLEL on v5p, each point running the pipeline
 * with core_axis = that axis: point i walks part i of the (4, 4) grid, so
 * both TensorCores do half the inner steps, and the result is whole. */
static void outer_body(pl_ctx *c, pl_ref *refs) { pltpu_emit_pipeline(c, &pipe_spec, &refs[0], &refs[1], times_two, NULL); }

static int run_outer(const char *chip, int core_axis, int core_split, pl_report *rep, float **x, float **y)
{
    pipe_spec = (pltpu_pipeline){.grid_rank = 2, .grid = {4, 4}, .n_in = 1, .n_out = 1,
                                 .in = {PL_BLOCK(PL_MAP(0, 1), 128, 128)}, .out = {PL_BLOCK(PL_MAP(0, 1), 128, 128)},
                                 .core_axis = core_axis, .core_split = core_split,
                                 .semantics = {PL_PARALLEL, PL_ARBITRARY}};
    memset(n_seen, 0, sizeof n_seen);
    *x = th_f32_seq(512 * 512), *y = th_f32_fill(512 * 512, TH_SENTINEL);
    pl_array a = PL_ARRAY(*x, PL_F32, 512, 512), o = PL_ARRAY(*y, PL_F32, 512, 512);
    pl_call call = {.name = "padded", .kernel = outer_body, .grid_rank = 1, .grid = {2}, .semantics = {PL_PARALLEL},
                    .n_in = 1, .n_out = 1};
    call.in[0].space = call.out[0].space = PL_ANY;
    pl_options opt = {.chip = chip, .strict = 1};
    return pl_pallas_call(&call, &a, &o, &opt, rep);
}

Test(emit_cores, K7_core_axis_gives_each_point_of_the_enclosing_axis_its_part)
{
    pl_report rep, whole;
    float *x, *y;
    th_expect_ok(run_outer("v5p", 1, 0, &rep, &x, &y), &rep);
    for (int i = 0; i < 512 * 512; i++) cr_assert_eq(y[i], 2 * x[i], "element %d", i);
    cr_assert_eq(rep.cores, 2);
    cr_assert_eq(rep.nested_steps, 16, "each of the 2 points walks 8 of the 16 inner points");
    for (int core = 0; core < 2; core++) { /* outer point = core here: i = 2 core .. 2 core + 1, every j */
        cr_assert_eq(n_seen[core], 8, "core %d", core);
        for (int k = 0; k < 8; k++) cr_assert_eq(seen[core][k][0], 2 * core + k / 4, "core %d point %d", core, k);
    }
    free(x), free(y);
    th_expect_ok(run_outer("v5p", 0, 0, &whole, &x, &y), &whole); /* no core_axis: both points walk it all */
    cr_assert_eq(whole.nested_steps, 32);
    cr_expect_lt(rep.time_s, 0.7 * whole.time_s, "split %g s, whole %g s", rep.time_s, whole.time_s);
    free(x), free(y);
}

Test(emit_cores, K7_core_axis_past_the_grid_or_with_core_split_is_refused)
{
    pl_report rep;
    float *x, *y;
    int rc = run_outer("v5p", 2, 0, &rep, &x, &y); /* the enclosing grid has one axis */
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "core_axis = 2 names axis 1 of the enclosing grid, which has 1 axis", "K7");
    free(x), free(y);
    rc = run_outer("v5p", 1, 1, &rep, &x, &y);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "core_split and core_axis both set", "K7");
    free(x), free(y);
}
