/* tests/test_emit_pipeline.c: pltpu_emit_pipeline (rule K3) inside
 * pallas_call and pl_kernel, and issue 15's "done means": a pl_kernel +
 * emit_pipeline matmul verified against OpenBLAS, timed within 10 % of the
 * equivalent pallas_call grid. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../examples/kernels/matmul.h"
#include "../examples/kernels/matmul_emit.h"
#include "helpers.h"
#include "test_mesh_helpers.h"

/* ---- a copy through a nested pipeline, inside a pallas_call kernel ------------ */

enum { R = 64, C = 256, BR = 16, BC = 128 };

typedef struct copy_case {
    pltpu_pipeline pipe;
} copy_case;

static void copy_body(pl_ctx *c, pl_ref *refs, const int64_t *idx, void *user)
{
    (void)idx, (void)user;
    pl_copy(c, refs[1], refs[0]);
}

static void copy_kernel(pl_ctx *c, pl_ref *refs)
{
    copy_case *k = pl_kernel_user(c);
    pltpu_emit_pipeline(c, &k->pipe, &refs[0], &refs[1], copy_body, NULL);
}

static pl_call copy_call(copy_case *k)
{
    pl_call call = {.name = "nested", .kernel = copy_kernel, .user = k, .n_in = 1, .in = {{.space = PL_ANY}},
                    .n_out = 1, .out = {{.space = PL_ANY}}};
    return call;
}

static copy_case tiles(int64_t br, int64_t bc)
{
    copy_case k = {.pipe = {.grid_rank = 2, .grid = {R / br, C / bc}, .n_in = 1, .n_out = 1,
                            .in = {PL_BLOCK(PL_MAP(0, 1), br, bc)}, .out = {PL_BLOCK(PL_MAP(0, 1), br, bc)}}};
    return k;
}

Test(emit_pipeline, K3_copies_every_block_through_vmem_inside_pallas_call)
{
    th_io io = th_io_2d(R, C);
    copy_case k = tiles(BR, BC);
    pl_call call = copy_call(&k);
    pl_report rep;
    int rc = pl_pallas_call(&call, &io.a, &io.o, NULL, &rep);
    th_expect_ok(rc, &rep);
    cr_assert_eq(th_f32_diff(io.in, io.out, io.n), 0, "the output must equal the input");
    int64_t blocks = (R / BR) * (C / BC);
    cr_assert_eq(rep.dma_copies, 2 * blocks, "one copy in and one write-back per block: %lld",
                 (long long)rep.dma_copies);
    cr_assert_eq(rep.dma_bytes, 2 * (int64_t)R * C * 4);
    th_io_free(&io);
}

/* An input whose block stays the same over the inner axis is copied once per change (P2). */
static void sum_body(pl_ctx *c, pl_ref *refs, const int64_t *idx, void *user)
{
    (void)idx, (void)user;
    pl_copy(c, refs[1], refs[0]);
}

static void skip_kernel(pl_ctx *c, pl_ref *refs)
{
    pltpu_pipeline pipe = {.grid_rank = 2, .grid = {R / BR, 3}, .n_in = 1, .n_out = 1,
                           .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), BR, C)}, .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), BR, C)}};
    pltpu_emit_pipeline(c, &pipe, &refs[0], &refs[1], sum_body, NULL);
}

Test(emit_pipeline, K3_skips_the_copy_of_an_unchanged_block_P2)
{
    th_io io = th_io_2d(R, C);
    pl_call call = {.name = "skip", .kernel = skip_kernel, .n_in = 1, .in = {{.space = PL_ANY}}, .n_out = 1,
                    .out = {{.space = PL_ANY}}};
    pl_report rep;
    int rc = pl_pallas_call(&call, &io.a, &io.o, NULL, &rep);
    th_expect_ok(rc, &rep);
    cr_assert_eq(th_f32_diff(io.in, io.out, io.n), 0);
    cr_assert_eq(rep.dma_copies, 2 * (R / BR), "3 inner steps per block, one copy in and one out: %lld",
                 (long long)rep.dma_copies);
    th_io_free(&io);
}

Test(emit_pipeline, K6_a_block_off_the_128_lanes_is_refused_T1)
{
    th_io io = th_io_2d(R, C);
    copy_case k = tiles(BR, 64); /* 64 lanes of a 256-wide ref */
    pl_call call = copy_call(&k);
    pl_report rep;
    int rc = pl_pallas_call(&call, &io.a, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "pltpu_emit_pipeline", "in_specs[0]", "128 lanes", "T1", "K6");
    th_io_free(&io);
}

Test(emit_pipeline, K3_a_block_outside_its_ref_is_refused_B2)
{
    th_io io = th_io_2d(R, C);
    copy_case k = tiles(BR, BC);
    k.pipe.grid[0] = R / BR + 1; /* one row of blocks too many */
    pl_call call = copy_call(&k);
    pl_report rep;
    int rc = pl_pallas_call(&call, &io.a, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINDEXMAP, "pltpu_emit_pipeline", "in_specs[0]", "block index 4", "B2", "K3");
    th_io_free(&io);
}

Test(emit_pipeline, K3_double_buffers_count_against_the_scoped_vmem_limit_M4)
{
    th_io io = th_io_2d(R, C);
    copy_case k = tiles(BR, BC);
    pl_call call = copy_call(&k);
    call.vmem_limit_bytes = 3 * BR * BC * 4; /* 4 buffers needed: 2 in, 2 out */
    pl_report rep;
    int rc = pl_pallas_call(&call, &io.a, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EVMEM, "pltpu_emit_pipeline", "double buffers", "M4", "K4");
    th_io_free(&io);
}

/* ---- done means: the pl_kernel + emit_pipeline matmul -------------------------- */

/* Run both matmuls on chip; verify the emit one against cblas_sgemm; their times. */
static void compare(const char *chip, int64_t m, int64_t n, int64_t kk, int64_t bm, int64_t bn, int64_t bk,
                    double *t_emit, double *t_grid)
{
    float *a = th_f32_seq(m * kk), *b = th_f32_seq(kk * n), *c1 = th_f32_fill(m * n, 0), *c2 = th_f32_fill(m * n, 0);
    for (int64_t i = 0; i < m * kk; i++) a[i] = (float)((i * 7) % 13) / 13.0f - 0.5f;
    for (int64_t i = 0; i < kk * n; i++) b[i] = (float)((i * 5) % 11) / 11.0f - 0.5f;
    pl_array ins[2] = {PL_ARRAY(a, PL_F32, m, kk), PL_ARRAY(b, PL_F32, kk, n)};
    pl_array o1 = PL_ARRAY(c1, PL_F32, m, n), o2 = PL_ARRAY(c2, PL_F32, m, n);
    pl_options opt = {.chip = chip};
    mme_params p;
    pl_kernel_spec k;
    mme_spec(&k, &p, m, n, kk, bm, bn, bk);
    pl_report r1, r2;
    int rc = pl_kernel(&k, ins, &o1, &opt, &r1);
    th_expect_ok(rc, &r1);
    pl_check chk;
    cr_assert_eq(pl_check_matmul(&ins[0], &ins[1], &o1, &chk, NULL), PL_OK, "%s: verdict %d, norm error %g", chip,
                 chk.verdict, chk.norm_err);
    cr_assert_eq(chk.verdict, PL_PASS, "%s: against cblas_sgemm: norm error %g", chip, chk.norm_err);
    mm_params mp;
    pl_call call;
    mm_call(&call, &mp, m, n, kk, bm, bn, bk);
    rc = pl_pallas_call(&call, ins, &o2, &opt, &r2);
    th_expect_ok(rc, &r2);
    cr_assert_eq(r1.cores, r2.cores, "%s: both run on every TensorCore: %d vs %d", chip, r1.cores, r2.cores);
    cr_assert_eq(r1.hbm_bytes, r2.hbm_bytes, "%s: the same HBM traffic: %lld vs %lld", chip,
                 (long long)r1.hbm_bytes, (long long)r2.hbm_bytes);
    *t_emit = r1.time_s;
    *t_grid = r2.time_s;
    printf("matmul %lldx%lldx%lld in (%lld, %lld, %lld) tiles on %s: pl_kernel + emit_pipeline %.2f us, "
           "pallas_call grid %.2f us (%+.1f %%)\n", (long long)m, (long long)n, (long long)kk, (long long)bm,
           (long long)bn, (long long)bk, chip, r1.time_s * 1e6, r2.time_s * 1e6,
           100.0 * (r1.time_s / r2.time_s - 1));
    free(a), free(b), free(c1), free(c2);
}

static void within_10_percent(const char *chip, int64_t size, int64_t tile)
{
    double te, tg;
    compare(chip, size, size, size, tile, tile, tile, &te, &tg);
    cr_assert(te > 0 && tg > 0);
    cr_assert(te <= 1.10 * tg && te >= 0.90 * tg, "%s: pl_kernel + emit_pipeline %.3f us vs the pallas_call grid "
              "%.3f us: more than 10 %% apart", chip, te * 1e6, tg * 1e6);
}

Test(emit_pipeline, done_means_matmul_verifies_and_times_like_the_grid_on_v5e, .timeout = 120)
{
    within_10_percent("v5e", 1024, 256);
}

Test(emit_pipeline, done_means_matmul_on_both_cores_of_v5p, .timeout = 120)
{
    within_10_percent("v5p", 1024, 256);
}

Test(emit_pipeline, done_means_matmul_with_small_tiles_where_step_overhead_counts, .timeout = 120)
{
    within_10_percent("v6e", 512, 128);
}

/* An output block the body never writes reaches HBM as poison, as the outer pipeline's does (P4, V1). */
static void skip_half(pl_ctx *c, pl_ref *refs, const int64_t *idx, void *user)
{
    (void)user;
    if (idx[0] % 2 == 0) pl_copy(c, refs[1], refs[0]);
}

static void half_kernel(pl_ctx *c, pl_ref *refs)
{
    copy_case k = tiles(BR, C);
    pltpu_emit_pipeline(c, &k.pipe, &refs[0], &refs[1], skip_half, NULL);
}

Test(emit_pipeline, K3_an_output_block_never_written_reads_as_poison_V1)
{
    th_io io = th_io_2d(R, C);
    pl_call call = {.name = "half", .kernel = half_kernel, .n_in = 1, .in = {{.space = PL_ANY}}, .n_out = 1,
                    .out = {{.space = PL_ANY}}};
    pl_report rep;
    int rc = pl_pallas_call(&call, &io.a, &io.o, NULL, &rep);
    th_expect_ok(rc, &rep);
    cr_assert_eq(io.out[0], io.in[0], "block 0 was copied");
    cr_assert(io.out[BR * C] != io.out[BR * C], "block 1 was never written: NaN poison, got %g", io.out[BR * C]);
    th_io_free(&io);
}

Test(emit_pipeline, K3_cost_only_times_the_matmul_as_the_real_run_without_data, .timeout = 120)
{
    int64_t s = 1024, t = 256;
    float *a = th_f32_fill(s * s, 0.5f), *b = th_f32_fill(s * s, 0.25f), *o = th_f32_fill(s * s, 0);
    pl_array ins[2] = {PL_ARRAY(a, PL_F32, s, s), PL_ARRAY(b, PL_F32, s, s)};
    pl_array out = PL_ARRAY(o, PL_F32, s, s);
    mme_params p;
    pl_kernel_spec k;
    mme_spec(&k, &p, s, s, s, t, t, t);
    pl_options opt = {.chip = "v5p"};
    pl_report real, cost;
    th_expect_ok(pl_kernel(&k, ins, &out, &opt, &real), &real);
    pl_array none[2] = {PL_ARRAY(NULL, PL_F32, s, s), PL_ARRAY(NULL, PL_F32, s, s)};
    pl_array none_out = PL_ARRAY(NULL, PL_F32, s, s);
    opt.cost_only = 1;
    th_expect_ok(pl_kernel(&k, none, &none_out, &opt, &cost), &cost);
    cr_assert_eq(cost.time_s, real.time_s, "cost-only %g s vs %g s", cost.time_s, real.time_s);
    cr_assert_eq(cost.dma_copies, real.dma_copies);
    free(a), free(b), free(o);
}

/* A function index map: the transpose of a (2, 2)-block array, block (j, i) into block (i, j). */
static void swap_map(const int64_t *g, const pl_ref *pf, int64_t *bi, void *u)
{
    (void)pf, (void)u;
    bi[0] = g[1];
    bi[1] = g[0];
}

static void unset_map(const int64_t *g, const pl_ref *pf, int64_t *bi, void *u)
{
    (void)pf, (void)u;
    bi[0] = g[0];
}

static int fn_map_case(pl_index_map_fn in_map, pl_report *rep, th_io *io)
{
    copy_case k = tiles(R / 2, C / 2);
    k.pipe.in[0].map = PL_MAP_FN(in_map, NULL);
    pl_call call = copy_call(&k);
    return pl_pallas_call(&call, &io->a, &io->o, NULL, rep);
}

Test(emit_pipeline, K3_function_index_maps_select_blocks_B2)
{
    th_io io = th_io_2d(R, C);
    pl_report rep;
    th_expect_ok(fn_map_case(swap_map, &rep, &io), &rep);
    /* out block (i, j) holds in block (j, i): element (0, C/2) comes from in (R/2, 0) */
    cr_assert_eq(io.out[C / 2], io.in[(R / 2) * C], "%g vs %g", io.out[C / 2], io.in[(R / 2) * C]);
    th_io_free(&io);
}

Test(emit_pipeline, K3_an_index_map_that_leaves_a_dimension_unset_is_an_error_B2)
{
    th_io io = th_io_2d(R, C);
    pl_report rep;
    int rc = fn_map_case(unset_map, &rep, &io);
    TH_EXPECT_ERROR(rc, rep, PL_EINDEXMAP, "in_specs[0]", "left dimension 1 unset", "(0, 0)", "B2", "K3");
    th_io_free(&io);
}

/* The "1-D pallas_call over row panels" form: emit_pipeline inside a pallas_call kernel. */
static void panels_within_10_percent(const char *chip)
{
    int64_t s = 1024, t = 256;
    float *a = th_f32_seq(s * s), *b = th_f32_seq(s * s), *c1 = th_f32_fill(s * s, 0), *c2 = th_f32_fill(s * s, 0);
    for (int64_t i = 0; i < s * s; i++) a[i] = (float)((i * 7) % 13) / 13.0f - 0.5f, b[i] = (float)((i * 5) % 11) / 11.0f - 0.5f;
    pl_array ins[2] = {PL_ARRAY(a, PL_F32, s, s), PL_ARRAY(b, PL_F32, s, s)};
    pl_array o1 = PL_ARRAY(c1, PL_F32, s, s), o2 = PL_ARRAY(c2, PL_F32, s, s);
    pl_options opt = {.chip = chip};
    mme_params p;
    mm_params mp;
    pl_call panels, grid;
    mme_call(&panels, &p, s, s, s, t, t, t);
    mm_call(&grid, &mp, s, s, s, t, t, t);
    pl_report r1, r2;
    th_expect_ok(pl_pallas_call(&panels, ins, &o1, &opt, &r1), &r1);
    th_expect_ok(pl_pallas_call(&grid, ins, &o2, &opt, &r2), &r2);
    pl_check chk;
    cr_assert_eq(pl_check_matmul(&ins[0], &ins[1], &o1, &chk, NULL), PL_OK);
    cr_assert_eq(chk.verdict, PL_PASS, "%s: norm error %g", chip, chk.norm_err);
    printf("matmul %lld^3 in %lld-tiles on %s: pallas_call over panels + emit_pipeline %.2f us, grid %.2f us (%+.1f %%)\n",
           (long long)s, (long long)t, chip, r1.time_s * 1e6, r2.time_s * 1e6, 100.0 * (r1.time_s / r2.time_s - 1));
    cr_assert(r1.time_s <= 1.10 * r2.time_s && r1.time_s >= 0.90 * r2.time_s, "%s: %g vs %g s", chip, r1.time_s,
              r2.time_s);
    free(a), free(b), free(c1), free(c2);
}

Test(emit_pipeline, K3_a_pallas_call_over_row_panels_times_like_the_grid_v5e, .timeout = 120)
{
    panels_within_10_percent("v5e");
}

Test(emit_pipeline, K3_a_pallas_call_over_row_panels_times_like_the_grid_v5p, .timeout = 120)
{
    panels_within_10_percent("v5p");
}

/* On every device of a mesh (pl_mesh_call): each device's nested pipeline copies its own shard. */
Test(emit_pipeline, K3_runs_on_every_device_of_a_mesh)
{
    mh_run r;
    mh_alloc(&r, "ring:2", R, C, R, C);
    copy_case k = tiles(BR, BC);
    pl_call call = copy_call(&k);
    int rc = mh_call(&r, &call, NULL);
    cr_assert_eq(rc, PL_OK, "%d: %s", rc, r.reps[0].error);
    for (int64_t i = 0; i < 2 * R * C; i++) cr_assert_eq(r.o[i], r.x[i], "element %lld", (long long)i);
    mh_free(&r);
}
