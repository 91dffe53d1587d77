/* tests/test_jax_memory_oob.c: where tilesim follows JAX's own Pallas TPU
 * tests on memory (issue 9), part two: out-of-bounds reads as poison for
 * blocks, pl_ds ranges and DMA sources (V2, B7), and masked loads and stores
 * (V6). Semaphore arguments and narrow types are in test_jax_memory.c. Each
 * test names the JAX test file it mirrors; the suite is jax_memory, as
 * there. */
#include <math.h>

#include "../kernel/pltpu.h"
#include "helpers.h"

/* ---- V2, B7: out-of-bounds reads as poison cover whole blocks -------------------------- */

/* Mirrors JAX's tests/pallas/tpu_pallas_interpret_test.py runs with
 * InterpretParams(out_of_bounds_reads="uninitialized"): an input block whose
 * index map points past the array reads as uninitialized memory (NaN for
 * floats, the integer maximum) instead of failing; the default "raise" still
 * fails (B7), and an output block past the array is an error either way. */
enum { OB_ROWS = 16, OB_COLS = 128, OB_BM = 8, OB_GRID = 3 }; /* block 2 of the input lies past its 2 blocks */

static void past_map(const int64_t *idx, const pl_ref *prefetch, int64_t *bidx, void *user)
{
    (void)prefetch, (void)user;
    bidx[0] = idx[0];
    bidx[1] = 0;
}

static int past_block_call(pl_dtype t, int fn_map, pl_oob oob, pl_uninit uninit, void *in, void *out, pl_report *rep)
{
    pl_call call = {
        .name = "past_block", .kernel = th_copy_kernel, .grid_rank = 1, .grid = {OB_GRID},
        .n_in = 1, .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), OB_BM, OB_COLS)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), OB_BM, OB_COLS)},
    };
    if (fn_map) call.in[0].map = PL_MAP_FN(past_map, NULL);
    pl_array a = PL_ARRAY(in, t, OB_ROWS, OB_COLS), o = PL_ARRAY(out, t, OB_GRID * OB_BM, OB_COLS);
    pl_options opt = {.oob_reads = oob, .uninit = uninit};
    return pl_pallas_call(&call, &a, &o, &opt, rep);
}

Test(jax_memory, V2_an_input_block_past_the_array_reads_poison)
{
    for (int fn_map = 0; fn_map < 2; fn_map++) {
        float *x = th_f32_seq(OB_ROWS * OB_COLS), *y = th_f32_fill(OB_GRID * OB_BM * OB_COLS, TH_SENTINEL);
        pl_report rep;
        th_expect_ok(past_block_call(PL_F32, fn_map, PL_OOB_POISON, PL_UNINIT_NAN, x, y, &rep), &rep);
        for (int i = 0; i < OB_ROWS * OB_COLS; i++) cr_assert_eq(y[i], x[i], "map %d: y[%d]", fn_map, i);
        for (int i = OB_ROWS * OB_COLS; i < OB_GRID * OB_BM * OB_COLS; i++)
            cr_assert(isnan(y[i]), "map %d: y[%d] = %g, want the poison NaN (V1)", fn_map, i, y[i]);
        /* the NaN's explanation is a block past the end (B7), not an edge block's padding (B6) */
        cr_assert_geq(rep.n_findings, 1);
        cr_expect(strstr(rep.findings[0].msg, "a read past the array") &&
                      strstr(rep.findings[0].msg, "wholly past the array's end") && strstr(rep.findings[0].msg, "B7"),
                  "%s", rep.findings[0].msg);
        free(x), free(y);
    }
}

/* integers read the dtype's maximum, as JAX's TPU interpret mode fills them (V1) */
Test(jax_memory, V2_a_past_block_reads_the_integer_maximum_or_zero)
{
    int32_t x[OB_ROWS * OB_COLS], y[OB_GRID * OB_BM * OB_COLS];
    for (int i = 0; i < OB_ROWS * OB_COLS; i++) x[i] = i;
    pl_report rep;
    th_expect_ok(past_block_call(PL_I32, 1, PL_OOB_POISON, PL_UNINIT_NAN, x, y, &rep), &rep);
    cr_assert_eq(y[OB_ROWS * OB_COLS], INT32_MAX);
    cr_assert_eq(y[OB_ROWS * OB_COLS - 1], OB_ROWS * OB_COLS - 1);
    th_expect_ok(past_block_call(PL_I32, 0, PL_OOB_POISON, PL_UNINIT_ZERO, x, y, &rep), &rep);
    cr_assert_eq(y[OB_GRID * OB_BM * OB_COLS - 1], 0);
}

Test(jax_memory, B7_an_input_block_past_the_array_still_raises_by_default)
{
    float *x = th_f32_seq(OB_ROWS * OB_COLS), *y = th_f32_fill(OB_GRID * OB_BM * OB_COLS, TH_SENTINEL);
    pl_report rep;
    int rc = past_block_call(PL_F32, 0, PL_OOB_RAISE, PL_UNINIT_NAN, x, y, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINDEXMAP, "in0", "rule B7");
    rc = past_block_call(PL_F32, 1, PL_OOB_RAISE, PL_UNINIT_NAN, x, y, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINDEXMAP, "in0", "grid point (2)", "rule B7");
    free(x), free(y);
}

/* Writes past the end stay errors: an output block map past the array. */
Test(jax_memory, B7_an_output_block_past_the_array_stays_an_error_under_poison)
{
    float *x = th_f32_seq(OB_GRID * OB_BM * OB_COLS), *y = th_f32_fill(OB_ROWS * OB_COLS, TH_SENTINEL);
    pl_call call = {
        .name = "past_out", .kernel = th_copy_kernel, .grid_rank = 1, .grid = {OB_GRID},
        .n_in = 1, .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), OB_BM, OB_COLS)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP_FN(past_map, NULL), OB_BM, OB_COLS)},
    };
    pl_array a = PL_ARRAY(x, PL_F32, OB_GRID * OB_BM, OB_COLS), o = PL_ARRAY(y, PL_F32, OB_ROWS, OB_COLS);
    pl_options opt = {.oob_reads = PL_OOB_POISON};
    pl_report rep;
    int rc = pl_pallas_call(&call, &a, &o, &opt, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINDEXMAP, "out0", "grid point (2)", "rule B7");
    call.out[0].map = PL_MAP(0, PL_ZERO);
    rc = pl_pallas_call(&call, &a, &o, &opt, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINDEXMAP, "out0", "rule B7");
    free(x), free(y);
}

/* A block index so far past the array that its element offset would
 * overflow stays a B7 error under poison, never undefined arithmetic. */
static void huge_map(const int64_t *idx, const pl_ref *prefetch, int64_t *bidx, void *user)
{
    (void)idx, (void)prefetch, (void)user;
    bidx[0] = INT64_MAX / 2;
    bidx[1] = 0;
}

Test(jax_memory, B7_a_block_index_beyond_any_offset_stays_an_error)
{
    float *x = th_f32_seq(OB_ROWS * OB_COLS), *y = th_f32_fill(OB_GRID * OB_BM * OB_COLS, TH_SENTINEL);
    pl_call call = {
        .name = "huge_block", .kernel = th_copy_kernel, .grid_rank = 1, .grid = {OB_GRID},
        .n_in = 1, .in = {PL_BLOCK(PL_MAP_FN(huge_map, NULL), OB_BM, OB_COLS)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), OB_BM, OB_COLS)},
    };
    pl_array a = PL_ARRAY(x, PL_F32, OB_ROWS, OB_COLS), o = PL_ARRAY(y, PL_F32, OB_GRID * OB_BM, OB_COLS);
    pl_options opt = {.oob_reads = PL_OOB_POISON};
    pl_report rep;
    int rc = pl_pallas_call(&call, &a, &o, &opt, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINDEXMAP, "in0", "rule B7");
    free(x), free(y);
}

/* ---- V6: masked loads and stores; V2: ranges past the end ----------------------------- */

/* Mirrors JAX's tests/pallas/pallas_test.py test_masked_load_store: a ragged
 * array (N not a multiple of the block) walked in blocks by a grid; each
 * block is pl_ds(start, BS) of the whole-array Ref, so the last one runs past
 * the end; the mask (lane index < N - start) keeps the load and the store
 * inside. Every element comes out right and nothing past the array is read
 * or written (the VMEM buffer is exactly the array: ASan would see it). */
enum { RG_ROWS = 8, RG_N = 1000, RG_BS = 256, RG_GRID = (RG_N + RG_BS - 1) / RG_BS };

typedef struct ragged_cfg {
    int masked_load, masked_store; /* 0: leave that mask off */
} ragged_cfg;

static void ragged_kernel(pl_ctx *c, pl_ref *refs)
{
    const ragged_cfg *cfg = pl_kernel_user(c);
    pl_ref x = refs[0], o = refs[1], tmp = refs[2], mask = refs[3];
    int64_t start = pl_program_id(c, 0) * RG_BS;
    pl_ref xs = pl_ds(c, x, 1, start, RG_BS), os = pl_ds(c, o, 1, start, RG_BS);
    pl_mask_lt(c, mask, 1, RG_N - start); /* (1, BS): broadcast over the rows */
    pl_load(c, tmp, xs, cfg->masked_load ? &mask : NULL, 0.0);
    pl_scale(c, tmp, tmp, 2.0);
    pl_store(c, os, tmp, cfg->masked_store ? &mask : NULL);
}

static int ragged_call(ragged_cfg cfg, pl_oob oob, float *x, float *y, pl_report *rep)
{
    pl_call call = {
        .name = "ragged", .kernel = ragged_kernel, .user = &cfg, .grid_rank = 1, .grid = {RG_GRID},
        .semantics = {PL_ARBITRARY},
        .n_in = 1, .in = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), RG_ROWS, RG_N)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), RG_ROWS, RG_N)},
        .n_scratch = 2, .scratch = {PLTPU_VMEM(PL_F32, RG_ROWS, RG_BS), PLTPU_VMEM(PL_I32, 1, RG_BS)},
    };
    pl_array a = PL_ARRAY(x, PL_F32, RG_ROWS, RG_N), o = PL_ARRAY(y, PL_F32, RG_ROWS, RG_N);
    pl_options opt = {.oob_reads = oob, .strict = 1};
    return pl_pallas_call(&call, &a, &o, &opt, rep);
}

Test(jax_memory, V6_ragged_array_masked_load_and_store)
{
    enum { GUARD = 64 };
    float *x = th_f32_seq(RG_ROWS * RG_N), *y = th_f32_fill(RG_ROWS * RG_N + GUARD, TH_SENTINEL);
    pl_report rep;
    th_expect_ok(ragged_call((ragged_cfg){1, 1}, PL_OOB_RAISE, x, y, &rep), &rep);
    for (int i = 0; i < RG_ROWS * RG_N; i++) cr_assert_eq(y[i], 2 * x[i], "y[%d] = %g, want %g", i, y[i], 2 * x[i]);
    for (int i = 0; i < GUARD; i++) cr_assert_eq(y[RG_ROWS * RG_N + i], TH_SENTINEL, "past the array: %d", i);
    cr_assert_gt(rep.vpu_flops, 0, "masked ops report VPU work");
    free(x), free(y);
}

Test(jax_memory, V6_an_unmasked_store_past_the_end_is_out_of_bounds)
{
    float *x = th_f32_seq(RG_ROWS * RG_N), *y = th_f32_fill(RG_ROWS * RG_N, TH_SENTINEL);
    pl_report rep;
    int rc = ragged_call((ragged_cfg){1, 0}, PL_OOB_POISON, x, y, &rep); /* writes stay errors under poison */
    TH_EXPECT_ERROR(rc, rep, PL_EBOUNDS, "pl_store writes element (0, 232)", "refs[1] (output", "grid point (3)",
                    "rule");
    free(x), free(y);
}

Test(jax_memory, V2_an_unmasked_load_past_the_end_raises_or_reads_poison)
{
    float *x = th_f32_seq(RG_ROWS * RG_N), *y = th_f32_fill(RG_ROWS * RG_N, TH_SENTINEL);
    pl_report rep;
    int rc = ragged_call((ragged_cfg){0, 1}, PL_OOB_RAISE, x, y, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBOUNDS, "pl_load reads element (0, 232)", "refs[0] (input", "grid point (3)");
    /* poison: the part past the end reads NaN, and the masked store drops it */
    th_expect_ok(ragged_call((ragged_cfg){0, 1}, PL_OOB_POISON, x, y, &rep), &rep);
    for (int i = 0; i < RG_ROWS * RG_N; i++) cr_assert_eq(y[i], 2 * x[i], "y[%d]", i);
    free(x), free(y);
}

/* A range past the end reads poison for the part past it through pl_load
 * and pl_get; other ops refuse the view; writes past the end stay errors. */
typedef enum { PV_LOAD, PV_GET_INSIDE, PV_GET_PAST, PV_SET_PAST, PV_COPY, PV_BAD_MASK } past_view_case;

static void past_view_kernel(pl_ctx *c, pl_ref *refs)
{
    past_view_case k = *(past_view_case *)pl_kernel_user(c);
    pl_ref v = pl_ds(c, refs[0], 0, 4, 8); /* rows 4..11 of 8: rows 8..11 lie past the block */
    pl_ref tmp = refs[2];
    pl_fill(c, refs[1], 0.0);
    if (k == PV_LOAD) {
        pl_load(c, tmp, v, NULL, 0.0);
        pl_copy(c, refs[1], tmp);
    }
    if (k == PV_GET_INSIDE) pl_set_at(c, refs[1], pl_get_at(c, v, 3, 5), 0, 0);
    if (k == PV_GET_PAST) pl_set_at(c, refs[1], pl_get_at(c, v, 4, 5), 0, 0);
    if (k == PV_SET_PAST) pl_set_at(c, v, 1.0, 4, 5);
    if (k == PV_COPY) pl_copy(c, tmp, v);
    if (k == PV_BAD_MASK) pl_load(c, tmp, v, &refs[3], 0.0);
}

static int past_view_call(past_view_case k, pl_oob oob, float *y, pl_report *rep)
{
    float *x = th_f32_seq(8 * 128);
    pl_call call = th_copy_call_2d(8, 128, 8, 128);
    call.kernel = past_view_kernel;
    call.user = &k;
    call.n_scratch = 2;
    call.scratch[0] = PLTPU_VMEM(PL_F32, 8, 128);
    call.scratch[1] = PLTPU_VMEM(PL_I32, 2, 128);
    pl_array a = PL_ARRAY(x, PL_F32, 8, 128), o = PL_ARRAY(y, PL_F32, 8, 128);
    pl_options opt = {.oob_reads = oob};
    int rc = pl_pallas_call(&call, &a, &o, &opt, rep);
    free(x);
    return rc;
}

Test(jax_memory, V2_a_pl_ds_range_past_the_end_reads_poison_for_that_part)
{
    float y[8 * 128];
    pl_report rep;
    th_expect_ok(past_view_call(PV_LOAD, PL_OOB_POISON, y, &rep), &rep);
    for (int i = 0; i < 4 * 128; i++) cr_assert_eq(y[i], 0.5f * (float)(4 * 128 + i), "y[%d]", i);
    for (int i = 4 * 128; i < 8 * 128; i++) cr_assert(isnan(y[i]), "y[%d] = %g, want poison", i, y[i]);
    th_expect_ok(past_view_call(PV_GET_PAST, PL_OOB_POISON, y, &rep), &rep);
    cr_assert(isnan(y[0]));
    th_expect_ok(past_view_call(PV_GET_INSIDE, PL_OOB_RAISE, y, &rep), &rep);
    cr_assert_eq(y[0], 0.5f * (7 * 128 + 5));
}

Test(jax_memory, V2_a_pl_ds_range_past_the_end_raises_by_default)
{
    float y[8 * 128];
    pl_report rep;
    int rc = past_view_call(PV_LOAD, PL_OOB_RAISE, y, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBOUNDS, "pl_load reads element (4, 0)", "refs[0] (input");
    rc = past_view_call(PV_GET_PAST, PL_OOB_RAISE, y, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBOUNDS, "pl_get index (4, 5)", "lies past the Ref", "rule V2");
}

Test(jax_memory, V2_writes_and_plain_ops_past_the_end_stay_errors)
{
    float y[8 * 128];
    pl_report rep;
    int rc = past_view_call(PV_SET_PAST, PL_OOB_POISON, y, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBOUNDS, "pl_set index (4, 5)", "lies past the Ref");
    rc = past_view_call(PV_COPY, PL_OOB_POISON, y, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBOUNDS, "pl_copy on a view of refs[0]", "last 4 elements of dimension 0",
                    "rule V6");
    rc = past_view_call(PV_BAD_MASK, PL_OOB_POISON, y, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_ESHAPE, "the mask refs[3]", "shape (2, 128)", "does not broadcast", "rule V6");
}

/* A DMA whose source runs past the end of its Ref: poison for that part
 * under oob_reads = poison, an error by default; a destination past the end
 * is always an error. */
typedef enum { DP_SRC_PAST, DP_DST_PAST } dma_past_case;

static void dma_past_kernel(pl_ctx *c, pl_ref *refs)
{
    dma_past_case k = *(dma_past_case *)pl_kernel_user(c);
    pl_ref hbm = refs[0], buf = refs[2], sem = pl_at(c, refs[3], 0);
    pltpu_copy cp = k == DP_SRC_PAST ? pltpu_async_copy(c, pl_ds(c, hbm, 0, 8, 16), buf, sem)
                                     : pltpu_async_copy(c, buf, pl_ds(c, hbm, 0, 8, 16), sem);
    pltpu_copy_start(c, &cp);
    pltpu_copy_wait(c, &cp);
    pl_copy(c, refs[1], buf);
}

static int dma_past_call(dma_past_case k, pl_oob oob, float *x, float *y, pl_report *rep)
{
    pl_call call = {
        .name = "dma_past", .kernel = dma_past_kernel, .user = &k, .grid_rank = 1, .grid = {1},
        .n_in = 1, .in = {{.space = PL_ANY}},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 16, 128)},
        .n_scratch = 2, .scratch = {PLTPU_VMEM(PL_F32, 16, 128), PLTPU_SEMAPHORE_DMA(1)},
    };
    pl_array a = PL_ARRAY(x, PL_F32, 16, 128), o = PL_ARRAY(y, PL_F32, 16, 128);
    pl_options opt = {.oob_reads = oob};
    return pl_pallas_call(&call, &a, &o, &opt, rep);
}

Test(jax_memory, V2_a_dma_source_past_the_end_reads_poison_for_that_part)
{
    float *x = th_f32_seq(16 * 128), *y = th_f32_fill(16 * 128, TH_SENTINEL);
    pl_report rep;
    th_expect_ok(dma_past_call(DP_SRC_PAST, PL_OOB_POISON, x, y, &rep), &rep);
    for (int i = 0; i < 8 * 128; i++) cr_assert_eq(y[i], x[8 * 128 + i], "y[%d]", i);
    for (int i = 8 * 128; i < 16 * 128; i++) cr_assert(isnan(y[i]), "y[%d] = %g, want poison", i, y[i]);
    int rc = dma_past_call(DP_SRC_PAST, PL_OOB_RAISE, x, y, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBOUNDS, "pltpu_copy_start from a source", "rule V2", "a copy has no mask",
                    "PL_OOB_POISON");
    rc = dma_past_call(DP_DST_PAST, PL_OOB_POISON, x, y, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBOUNDS, "pltpu_copy_start into a destination", "rule V2", "always an error");
    free(x), free(y);
}

/* Masked ops in a cost-only run report their work and touch no data. */
Test(jax_memory, V6_masked_ops_in_cost_only_touch_no_data)
{
    pl_call call = {
        .name = "ragged_cost", .kernel = ragged_kernel, .user = &(ragged_cfg){1, 1}, .grid_rank = 1,
        .grid = {RG_GRID}, .semantics = {PL_ARBITRARY},
        .n_in = 1, .in = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), RG_ROWS, RG_N)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), RG_ROWS, RG_N)},
        .n_scratch = 2, .scratch = {PLTPU_VMEM(PL_F32, RG_ROWS, RG_BS), PLTPU_VMEM(PL_I32, 1, RG_BS)},
    };
    pl_array a = PL_ARRAY(NULL, PL_F32, RG_ROWS, RG_N), o = PL_ARRAY(NULL, PL_F32, RG_ROWS, RG_N);
    pl_options opt = {.cost_only = 1};
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &a, &o, &opt, &rep), &rep);
    cr_assert_gt(rep.vpu_flops, 0);
}
