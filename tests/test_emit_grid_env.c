/* tests/test_emit_grid_env.c: what an emit_pipeline body sees of its grid,
 * as JAX's tpu_pallas_pipeline_test.py asserts it. The body runs in the
 * pipeline's grid_env (jax/_src/pallas/mosaic/pipeline.py): pl_program_id
 * and pl_num_programs there answer for the pipeline's grid, its global
 * point and whole size when split over cores (test_pipeline_axis_queries,
 * test_program_id_vmap), not for the call around it. grid () runs the body
 * once (test_prng_pallas_vs_pipeline). A core split that leaves a core no
 * point runs nothing on it (test_can_partition_grid, grid (1, 1)). */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "../sim/tilesim_kernel.h"
#include "helpers.h"

enum { MAX_SEEN = 32 };
typedef struct seen {
    int64_t pid[MAX_SEEN], num[MAX_SEEN], idx[MAX_SEEN], core[MAX_SEEN];
    int n;
} seen;
static seen got;
static pltpu_pipeline pipe_spec;

static void record(pl_ctx *c, pl_ref *refs, const int64_t *idx, void *user)
{
    (void)user;
    if (got.n < MAX_SEEN) {
        int r = pipe_spec.grid_rank;
        got.pid[got.n] = r ? pl_program_id(c, r - 1) : -1;
        got.num[got.n] = r ? pl_num_programs(c, r - 1) : -1;
        got.idx[got.n] = r ? idx[r - 1] : -1;
        got.core[got.n] = pl_core_index(c);
        got.n++;
    }
    if (pipe_spec.n_in) pl_mul_scalar(c, refs[1], refs[0], 2.0);
}

static void around(pl_ctx *c, pl_ref *refs) { pltpu_emit_pipeline(c, &pipe_spec, &refs[0], &refs[1], record, NULL); }

/* x * 2 over (rows, 128) f32 in (8, 128) blocks: by pl_kernel (no grid)
 * or a pallas_call over an outer grid (outer > 0) of HBM (ANY) refs */
static int run(const char *chip, int64_t rows, int64_t outer, pl_report *rep, float **x, float **y)
{
    *x = th_f32_seq(rows * 128), *y = th_f32_fill(rows * 128, TH_SENTINEL);
    pl_array a = PL_ARRAY(*x, PL_F32, rows, 128), o = PL_ARRAY(*y, PL_F32, rows, 128);
    pl_options opt = {.chip = chip, .strict = 1};
    got.n = 0;
    if (!outer) {
        pl_kernel_spec k = {.name = "grid_env", .body = around, .n_in = 1, .n_out = 1};
        return pl_kernel(&k, &a, &o, &opt, rep);
    }
    pl_call call = {.name = "grid_env", .kernel = around, .grid_rank = 1, .grid = {outer}, .n_in = 1, .n_out = 1,
                    .in = {{.space = PL_ANY}}, .out = {{.space = PL_ANY}},
                    .semantics = {PL_ARBITRARY}};
    return pl_pallas_call(&call, &a, &o, &opt, rep);
}

/* pipe_spec: grid (n,) of (8, 128) blocks along the rows, split over the
 * cores (PL_PARALLEL) when split */
static void rows_pipeline(int64_t n, int split)
{
    pipe_spec = (pltpu_pipeline){.grid_rank = 1, .grid = {n}, .n_in = 1, .n_out = 1,
                                 .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)},
                                 .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)}, .core_split = split,
                                 .semantics = {split ? PL_PARALLEL : PL_ARBITRARY}};
}

/* y = 2 x, element by element */
static void expect_doubled(const float *x, const float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++) cr_assert_eq(y[i], 2 * x[i], "element %lld", (long long)i);
}

Test(emit_grid_env, G2_program_id_in_the_body_is_the_pipelines_not_the_calls)
{
    rows_pipeline(4, 0);
    pl_report rep;
    float *x, *y;
    th_expect_ok(run("v5e", 32, 1, &rep, &x, &y), &rep);
    cr_assert_eq(got.n, 4);
    for (int s = 0; s < 4; s++) {
        cr_expect_eq(got.pid[s], s, "step %d: the pipeline's index, not the outer grid's 0", s);
        cr_expect_eq(got.num[s], 4, "step %d: the pipeline's size, not the outer grid's 1", s);
    }
    expect_doubled(x, y, 32 * 128);
    free(x), free(y);
    /* in pl_kernel, which has no grid of its own (G2 would refuse the axis) */
    th_expect_ok(run("v5e", 32, 0, &rep, &x, &y), &rep);
    cr_assert_eq(got.n, 4);
    cr_expect_eq(got.pid[3], 3);
    free(x), free(y);
}

/* test_pipeline_axis_queries: grid (8,) split over v5p's two cores; in the
 * body program_id(0) is the global point and num_programs(0) is 8.
 * test_can_partition_grid, grid (1,) over the two cores: one core runs the
 * point, the other none (before, the empty part divided by zero and killed
 * the process with SIGFPE). */
Test(emit_grid_env, K7_a_split_grid_answers_with_global_points_and_its_whole_size)
{
    static const int64_t points[] = {8, 1};
    for (int t = 0; t < 2; t++) {
        int64_t n = points[t];
        rows_pipeline(n, 1);
        pl_report rep;
        float *x, *y;
        th_expect_ok(run("v5p", 8 * n, 0, &rep, &x, &y), &rep);
        cr_assert_eq(got.n, n, "each point once over both cores");
        for (int s = 0; s < got.n; s++) {
            cr_expect_eq(got.pid[s], got.idx[s], "grid (%lld,) record %d: program_id is the body's global index",
                         (long long)n, s);
            cr_expect_eq(got.pid[s] / ((n + 1) / 2), got.core[s], "record %d: core %lld ran point %lld", s,
                         (long long)got.core[s], (long long)got.pid[s]);
            cr_expect_eq(got.num[s], n, "record %d: the whole grid's size", s);
        }
        expect_doubled(x, y, 8 * n * 128);
        free(x), free(y);
    }
}

/* grid (): the body runs once, its blocks the whole refs. */
static void once(pl_ctx *c, pl_ref *refs, const int64_t *idx, void *user)
{
    (void)idx, (void)user;
    got.n++;
    pl_mul_scalar(c, refs[1], refs[0], 2.0);
}
static void around_once(pl_ctx *c, pl_ref *refs) { pltpu_emit_pipeline(c, &pipe_spec, &refs[0], &refs[1], once, NULL); }

Test(emit_grid_env, K3_grid_of_no_axes_runs_the_body_once)
{
    pipe_spec = (pltpu_pipeline){.grid_rank = 0, .n_in = 1, .n_out = 1,
                                 .in = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 16, 128)},
                                 .out = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 16, 128)}};
    float *x = th_f32_seq(16 * 128), *y = th_f32_fill(16 * 128, TH_SENTINEL);
    pl_array a = PL_ARRAY(x, PL_F32, 16, 128), o = PL_ARRAY(y, PL_F32, 16, 128);
    pl_kernel_spec k = {.name = "grid_none", .body = around_once, .n_in = 1, .n_out = 1};
    pl_options opt = {.chip = "v5e", .strict = 1};
    pl_report rep;
    got.n = 0;
    th_expect_ok(pl_kernel(&k, &a, &o, &opt, &rep), &rep);
    cr_expect_eq(got.n, 1);
    expect_doubled(x, y, 16 * 128);
    free(x), free(y);
}
