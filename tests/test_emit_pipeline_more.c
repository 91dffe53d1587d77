/* tests/test_emit_pipeline_more.c: pltpu_emit_pipeline (rule K3) as complete
 * as Pallas's pltpu.emit_pipeline (issue 15): ragged edge blocks (B6),
 * squeezed dimensions (B4), the compiler's tiling check with the chip's
 * dtype table (T8) and output revisits (P5), each against a host reference
 * where data flows and with its message where it is refused. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/tilesim_kernel.h"
#include "helpers.h"

/* ---- one nested pipeline inside a one-step pallas_call over ANY refs ----------- */

typedef struct emit_case {
    pltpu_pipeline pipe;
    pltpu_pipeline_body body;
    int seen_rank;                 /* the rank of refs[0] the body saw */
    int64_t seen_shape[PL_MAX_RANK];
} emit_case;

static void emit_kernel(pl_ctx *c, pl_ref *refs)
{
    emit_case *k = pl_kernel_user(c);
    pltpu_emit_pipeline(c, &k->pipe, &refs[0], &refs[k->pipe.n_in], k->body, k);
}

static int run_opt(emit_case *k, const pl_array *in, pl_array *out, const pl_options *opt, pl_report *rep)
{
    pl_call call = {.name = "emit_more", .kernel = emit_kernel, .user = k, .n_in = 1, .in = {{.space = PL_ANY}},
                    .n_out = 1, .out = {{.space = PL_ANY}}};
    return pl_pallas_call(&call, in, out, opt, rep);
}

static int run(emit_case *k, const pl_array *in, pl_array *out, const char *chip, pl_report *rep)
{
    pl_options opt = {.chip = chip};
    return run_opt(k, in, out, chip ? &opt : NULL, rep);
}

static void copy_body(pl_ctx *c, pl_ref *refs, const int64_t *idx, void *user)
{
    (void)idx;
    emit_case *k = user;
    k->seen_rank = refs[0].rank;
    memcpy(k->seen_shape, refs[0].shape, sizeof k->seen_shape);
    pl_copy(c, refs[1], refs[0]);
}

static emit_case copy_2d(int64_t grid0, int64_t grid1, int64_t br, int64_t bc)
{
    emit_case k = {.pipe = {.grid_rank = 2, .grid = {grid0, grid1}, .n_in = 1, .n_out = 1,
                            .in = {PL_BLOCK(PL_MAP(0, 1), br, bc)}, .out = {PL_BLOCK(PL_MAP(0, 1), br, bc)}},
                   .body = copy_body};
    return k;
}

/* ---- 1. ragged edge blocks (B6) ------------------------------------------------------ */

enum { RR = 200, RC = 384, RBR = 64, RBC = 128, TAIL = 1024 };

Test(emit_pipeline_more, K3_ragged_edge_blocks_copy_a_200x384_ref_exactly_B6)
{
    /* the output array ends before a sentinel tail: a write-back past the ref would land there */
    float *in = th_f32_seq(RR * RC), *out = th_f32_fill(RR * RC + TAIL, TH_SENTINEL);
    pl_array a = PL_ARRAY(in, PL_F32, RR, RC), o = PL_ARRAY(out, PL_F32, RR, RC);
    emit_case k = copy_2d(4, 3, RBR, RBC); /* cdiv(200, 64) = 4 row blocks, the last of 8 rows */
    pl_report rep;
    th_expect_ok(run(&k, &a, &o, NULL, &rep), &rep);
    cr_assert_eq(th_f32_diff(in, out, RR * RC), 0, "the output must equal the input");
    for (int64_t i = 0; i < TAIL; i++)
        cr_assert_eq(out[RR * RC + i], TH_SENTINEL, "element %lld past the output was written", (long long)i);
    cr_assert_eq(k.seen_rank, 2);
    cr_assert(k.seen_shape[0] == RBR && k.seen_shape[1] == RBC, "the body sees the full block, edge or not");
    cr_assert_eq(rep.dma_copies, 2 * 4 * 3, "one copy in and one write-back per block: %lld",
                 (long long)rep.dma_copies);
    cr_assert_eq(rep.dma_bytes, 2 * (int64_t)RR * RC * 4, "the copies move only the bytes inside the ref: %lld",
                 (long long)rep.dma_bytes);
    free(in), free(out);
}

Test(emit_pipeline_more, K3_ragged_copies_are_timed_by_the_bytes_they_move_B6)
{
    float *in = th_f32_seq(256 * RC), *out = th_f32_fill(256 * RC, 0);
    pl_array small_in = PL_ARRAY(in, PL_F32, RR, RC), small_out = PL_ARRAY(out, PL_F32, RR, RC);
    pl_array full_in = PL_ARRAY(in, PL_F32, 256, RC), full_out = PL_ARRAY(out, PL_F32, 256, RC);
    emit_case k = copy_2d(4, 3, RBR, RBC);
    pl_report ragged, full;
    th_expect_ok(run(&k, &small_in, &small_out, "v5e", &ragged), &ragged);
    th_expect_ok(run(&k, &full_in, &full_out, "v5e", &full), &full);
    cr_assert_eq(full.dma_bytes, 2 * (int64_t)256 * RC * 4);
    cr_assert(ragged.time_s < full.time_s, "200 rows copy faster than 256: %g vs %g s", ragged.time_s, full.time_s);
    free(in), free(out);
}

Test(emit_pipeline_more, K3_cost_only_times_ragged_blocks_as_the_real_run_B6)
{
    float *in = th_f32_seq(RR * RC), *out = th_f32_fill(RR * RC, 0);
    pl_array a = PL_ARRAY(in, PL_F32, RR, RC), o = PL_ARRAY(out, PL_F32, RR, RC);
    pl_array none_in = PL_ARRAY(NULL, PL_F32, RR, RC), none_out = PL_ARRAY(NULL, PL_F32, RR, RC);
    emit_case k = copy_2d(4, 3, RBR, RBC);
    pl_options opt = {.chip = "v5p"};
    pl_report real, cost;
    th_expect_ok(run_opt(&k, &a, &o, &opt, &real), &real);
    opt.cost_only = 1;
    th_expect_ok(run_opt(&k, &none_in, &none_out, &opt, &cost), &cost);
    cr_assert_eq(cost.time_s, real.time_s, "cost-only %g s vs %g s", cost.time_s, real.time_s);
    cr_assert_eq(cost.dma_bytes, real.dma_bytes);
    free(in), free(out);
}

Test(emit_pipeline_more, K3_a_block_index_past_cdiv_is_refused_B2)
{
    th_io io = th_io_2d(RR, RC);
    emit_case k = copy_2d(5, 3, RBR, RBC); /* block index 4 along rows: cdiv(200, 64) = 4 */
    pl_report rep;
    int rc = run(&k, &io.a, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINDEXMAP, "pltpu_emit_pipeline", "in_specs[0]", "block index 4", "(4, 0)", "B2",
                    "K3");
    th_io_free(&io);
}

/* The body copies rows 0..7 and rows 56..63 of each (64, 128) input block into a
 * (16, 128) output block. The last input block holds rows 192..199 of 200: its
 * rows 56..63 lie past the ref, and the slot had held block 1 before. */
static void edge_body(pl_ctx *c, pl_ref *refs, const int64_t *idx, void *user)
{
    (void)idx, (void)user;
    pl_copy(c, pl_ds(c, refs[1], 0, 0, 8), pl_ds(c, refs[0], 0, 0, 8));
    pl_copy(c, pl_ds(c, refs[1], 0, 8, 8), pl_ds(c, refs[0], 0, 56, 8));
}

/* Copies that move their data when waited (M7) leave the same poison past the ref. */
static void check_edge(pl_dma_mode mode)
{
    float *in = th_f32_seq(RR * 128), *out = th_f32_fill(64 * 128, TH_SENTINEL);
    pl_array a = PL_ARRAY(in, PL_F32, RR, 128), o = PL_ARRAY(out, PL_F32, 64, 128);
    emit_case k = {.pipe = {.grid_rank = 1, .grid = {4}, .n_in = 1, .n_out = 1,
                            .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), 64, 128)},
                            .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 16, 128)}},
                   .body = edge_body};
    pl_report rep;
    pl_options opt = {.dma_mode = mode};
    th_expect_ok(run_opt(&k, &a, &o, &opt, &rep), &rep);
    for (int b = 0; b < 4; b++)
        for (int r = 0; r < 16; r++)
            for (int l = 0; l < 128; l++) {
                int64_t src = (int64_t)b * 64 + (r < 8 ? r : 56 + r - 8);
                float got = out[((int64_t)b * 16 + r) * 128 + l];
                if (src < RR)
                    cr_assert_eq(got, in[src * 128 + l], "block %d row %d lane %d: %g", b, r, l, got);
                else
                    cr_assert(got != got, "block %d row %d lane %d read row %lld past the ref: poison (NaN), "
                              "got %g", b, r, l, (long long)src, got);
            }
    free(in), free(out);
}

Test(emit_pipeline_more, K3_a_body_that_reads_past_the_ref_reads_poison_V1_B6)
{
    check_edge(PL_DMA_EAGER);
}

Test(emit_pipeline_more, K3_past_the_ref_is_poison_with_copies_that_move_on_wait_V1_B6)
{
    check_edge(PL_DMA_ON_WAIT);
}

/* ---- 2. squeezed dimensions (B4) ----------------------------------------------------- */

enum { SB = 4, SR = 64, SC = 256 };

static emit_case squeezed_case(int64_t grid0)
{
    emit_case k = {.pipe = {.grid_rank = 2, .grid = {grid0, SC / 128}, .n_in = 1, .n_out = 1,
                            .in = {PL_BLOCK(PL_MAP(0, PL_ZERO, 1), PL_SQUEEZED, SR, 128)},
                            .out = {PL_BLOCK(PL_MAP(0, PL_ZERO, 1), PL_SQUEEZED, SR, 128)}},
                   .body = copy_body};
    return k;
}

Test(emit_pipeline_more, K3_a_squeezed_dimension_is_dropped_from_the_bodys_ref_B4)
{
    float *in = th_f32_seq(SB * SR * SC), *out = th_f32_fill(SB * SR * SC, TH_SENTINEL);
    pl_array a = PL_ARRAY(in, PL_F32, SB, SR, SC), o = PL_ARRAY(out, PL_F32, SB, SR, SC);
    emit_case k = squeezed_case(SB);
    pl_report rep;
    th_expect_ok(run(&k, &a, &o, NULL, &rep), &rep);
    cr_assert_eq(k.seen_rank, 2, "the squeezed dimension is gone: rank %d", k.seen_rank);
    cr_assert(k.seen_shape[0] == SR && k.seen_shape[1] == 128, "(%lld, %lld)", (long long)k.seen_shape[0],
              (long long)k.seen_shape[1]);
    cr_assert_eq(th_f32_diff(in, out, SB * SR * SC), 0, "the output must equal the input");
    cr_assert_eq(rep.dma_bytes, 2 * (int64_t)SB * SR * SC * 4);
    free(in), free(out);
}

Test(emit_pipeline_more, K3_a_squeezed_index_past_the_ref_is_refused_B4)
{
    float *in = th_f32_seq(SB * SR * SC), *out = th_f32_fill(SB * SR * SC, TH_SENTINEL);
    pl_array a = PL_ARRAY(in, PL_F32, SB, SR, SC), o = PL_ARRAY(out, PL_F32, SB, SR, SC);
    emit_case k = squeezed_case(SB + 1);
    pl_report rep;
    int rc = run(&k, &a, &o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINDEXMAP, "in_specs[0]", "index 4", "squeezed", "(4, 0)", "B4", "K3");
    free(in), free(out);
}

/* JAX's test_compute_slice_mixed_block_dims: x (2, 16, 512) int32, grid
 * (2, 2, 2); the input blocked (None, 8, 256) at (i, j, k), the output
 * (Squeezed, Element(8), 256) at (i, j * 8, k): an Element dimension's
 * index is the window's first element (B5). Every element lands where it
 * came from. */
static void element_rows_map(const int64_t *g, const pl_ref *pf, int64_t *bi, void *u)
{
    (void)pf, (void)u;
    bi[0] = g[0], bi[1] = g[1] * 8, bi[2] = g[2];
}

static emit_case mixed_block_dims(void)
{
    emit_case k = {.pipe = {.grid_rank = 3, .grid = {2, 2, 2}, .n_in = 1, .n_out = 1,
                            .in = {PL_BLOCK(PL_MAP(0, 1, 2), PL_SQUEEZED, 8, 256)},
                            .out = {PL_BLOCK(PL_MAP(0, 1, 2), PL_SQUEEZED, 8, 256)}},
                   .body = copy_body};
    k.pipe.out[0].map = (pl_index_map){.fn = element_rows_map};
    k.pipe.out[0].element[1] = 1;
    return k;
}

Test(emit_pipeline_more, K6_element_dimensions_take_the_first_element_B5)
{
    int32_t *in = malloc(2 * 16 * 512 * 4), *out = malloc(2 * 16 * 512 * 4);
    for (int i = 0; i < 2 * 16 * 512; i++) in[i] = i * 3 - 7, out[i] = -1;
    pl_array a = PL_ARRAY(in, PL_I32, 2, 16, 512), o = PL_ARRAY(out, PL_I32, 2, 16, 512);
    emit_case k = mixed_block_dims();
    pl_report rep;
    th_expect_ok(run(&k, &a, &o, "v5e", &rep), &rep);
    cr_assert_eq(memcmp(in, out, 2 * 16 * 512 * 4), 0, "every element where it came from");
    cr_assert_eq(k.seen_rank, 2, "the squeezed dimension is dropped from the body's ref");
    free(in), free(out);
}

/* An Element window that starts past ref - window is refused by name, and
 * one whose rows are not whole tiles too (JAX slices it in tiles). */
static void element_past_map(const int64_t *g, const pl_ref *pf, int64_t *bi, void *u)
{
    (void)pf, (void)u;
    bi[0] = g[0], bi[1] = g[1] * 9, bi[2] = g[2];
}

Test(emit_pipeline_more, K6_element_windows_are_checked)
{
    int32_t *in = calloc(2 * 16 * 512, 4), *out = calloc(2 * 16 * 512, 4);
    pl_array a = PL_ARRAY(in, PL_I32, 2, 16, 512), o = PL_ARRAY(out, PL_I32, 2, 16, 512);
    emit_case k = mixed_block_dims();
    k.pipe.out[0].map.fn = element_past_map;
    pl_report rep;
    int rc = run(&k, &a, &o, "v5e", &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINDEXMAP, "out_specs[0]", "Element window of 8", "starts at element 9",
                    "0 to 8", "B5", "K6");
    k = mixed_block_dims();
    k.pipe.out[0].block[1] = 4, k.pipe.in[0].block[1] = 4, k.pipe.grid[1] = 4;
    rc = run(&k, &a, &o, "v5e", &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "out_specs[0]", "Element window of 4 rows", "multiple of 8", "K6");
    free(in), free(out);
}

/* ---- 3. the windows of a nested pipeline (K6) ---------------------------------------- */

/* Copy a (rows, 128) ref of `dt` through windows of `br` rows on `chip`;
 * the output must equal the input byte for byte. */
static int copy_rows(pl_dtype dt, int64_t rows, int64_t br, const char *chip, pl_report *rep)
{
    size_t es = pl_dtype_size(dt), n = (size_t)rows * 128 * es;
    uint8_t *in = malloc(n), *out = calloc(n, 1);
    for (size_t i = 0; i < n; i++) in[i] = (uint8_t)(i * 7 + 3);
    pl_array a = PL_ARRAY(in, dt, rows, 128), o = PL_ARRAY(out, dt, rows, 128);
    emit_case k = {.pipe = {.grid_rank = 1, .grid = {rows / br + (rows % br != 0)}, .n_in = 1, .n_out = 1,
                            .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), br, 128)},
                            .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), br, 128)}},
                   .body = copy_body};
    int rc = run(&k, &a, &o, chip, rep);
    if (rc == PL_OK) cr_expect_eq(memcmp(in, out, n), 0, "%s, %lld-row windows on %s: the copy differs",
                                  pl_dtype_name(dt), (long long)br, chip);
    free(in), free(out);
    return rc;
}

/* JAX's emit_pipeline copies each window as a slice of its ref, with no
 * (8,128) check (jax/_src/pallas/mosaic/pipeline.py); on v4 and later JAX
 * runs windows of 1, 2 and 4 rows of int32, 2 and 4 of int16 and 4 of int8
 * (the port of tpu_pallas_pipeline_test.py), and 8 and 16 of int8,
 * which pallas_call's T8 would refuse. On two chips. */
Test(emit_pipeline_more, K6_small_windows_of_whole_sublane_words_run)
{
    static const struct { pl_dtype dt; int64_t br; } ok[] = {
        {PL_I32, 1}, {PL_I32, 2}, {PL_I32, 4}, {PL_I16, 2}, {PL_I16, 4}, {PL_I8, 4}, {PL_I8, 8}, {PL_I8, 16},
        {PL_BF16, 8}};
    static const char *const chips[] = {"v5e", "v7x"};
    for (int c = 0; c < 2; c++)
        for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
            pl_report rep;
            int rc = copy_rows(ok[i].dt, 64, ok[i].br, chips[c], &rep);
            cr_expect_eq(rc, PL_OK, "%s, %lld rows on %s: %s", pl_dtype_name(ok[i].dt), (long long)ok[i].br,
                         chips[c], rep.error);
        }
}

/* Fewer rows than one 32-bit sublane word packs are refused by name: 1 row
 * of int16 (2 a word), 2 of int8 (4 a word). */
Test(emit_pipeline_more, K6_a_window_that_splits_a_sublane_word_is_refused)
{
    pl_report rep;
    int rc = copy_rows(PL_I16, 64, 1, "v5e", &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "in_specs[0]", "1 row", "i16", "multiple of 2", "K6");
    rc = copy_rows(PL_I8, 64, 2, "v7x", &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "in_specs[0]", "2 rows", "i8", "multiple of 4", "K6");
}

/* A window that does not divide its ref leaves a ragged last block, which
 * JAX slices in whole tiles: 4 rows of a 20-row int32 ref is refused
 * ("Block size must divide tiling"), 8 rows runs (B6). */
Test(emit_pipeline_more, K6_a_ragged_window_must_be_whole_tiles)
{
    pl_report rep;
    int rc = copy_rows(PL_I32, 20, 4, "v5e", &rep);
    cr_assert_eq(rc, PL_OK, "4 divides 20: %s", rep.error);
    rc = copy_rows(PL_I32, 22, 4, "v5e", &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "in_specs[0]", "ragged", "8-row tile", "divide tiling", "K6");
    rc = copy_rows(PL_I32, 22, 8, "v5e", &rep);
    cr_assert_eq(rc, PL_OK, "8 rows, the last block 6: %s", rep.error);
}

/* ---- 4. output revisits (P5) --------------------------------------------------------- */

/* Output block 0 over inner points (0, 0) and (0, 1), block 1 at (0, 2), block 0 again at (1, 0). */
static void revisit_map(const int64_t *g, const pl_ref *pf, int64_t *bi, void *u)
{
    (void)pf, (void)u;
    bi[0] = 0;
    bi[1] = g[1] < 2 ? 0 : 1;
}

static void accumulate_body(pl_ctx *c, pl_ref *refs, const int64_t *idx, void *user)
{
    (void)idx, (void)user;
    pl_copy(c, refs[1], refs[0]);
}

Test(emit_pipeline_more, K3_an_output_block_revisited_after_its_write_back_is_refused_P5)
{
    th_io io = th_io_2d(64, 256);
    emit_case k = {.pipe = {.grid_rank = 2, .grid = {2, 3}, .n_in = 1, .n_out = 1,
                            .in = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 64, 128)},
                            .out = {PL_BLOCK(PL_MAP_FN(revisit_map, NULL), 64, 128)}},
                   .body = accumulate_body};
    pl_report rep;
    int rc = run(&k, &io.a, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EREVISIT, "pltpu_emit_pipeline", "out_specs[0]", "inner grid point (1, 0)",
                    "block (0, 0)", "after inner grid point (0, 1)", "P5", "K3");
    th_io_free(&io);
}

Test(emit_pipeline_more, K3_an_input_block_may_come_back_and_outputs_may_stay_P5)
{
    /* the input alternates between its two column blocks; each output block is visited in one run */
    th_io io = th_io_2d(64, 256);
    emit_case k = {.pipe = {.grid_rank = 2, .grid = {2, 2}, .n_in = 1, .n_out = 1,
                            .in = {PL_BLOCK(PL_MAP(PL_ZERO, 1), 64, 128)},
                            .out = {PL_BLOCK(PL_MAP(PL_ZERO, 0), 64, 128)}},
                   .body = accumulate_body};
    pl_report rep;
    th_expect_ok(run(&k, &io.a, &io.o, NULL, &rep), &rep);
    /* output block j holds the input block of the last inner step that selected it: input block 1 */
    for (int64_t r = 0; r < 64; r++)
        for (int64_t l = 0; l < 128; l++) {
            cr_assert_eq(io.out[r * 256 + l], io.in[r * 256 + 128 + l]);
            cr_assert_eq(io.out[r * 256 + 128 + l], io.in[r * 256 + 128 + l]);
        }
    th_io_free(&io);
}

Test(emit_pipeline_more, K3_revisit_mode_any_is_refused_P5)
{
    th_io io = th_io_2d(64, 256);
    emit_case k = copy_2d(4, 2, 16, 128);
    k.pipe.out[0].revisit = PL_REVISIT_ANY;
    pl_report rep;
    int rc = run(&k, &io.a, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "out_specs[0]", "PL_REVISIT_ANY", "P5", "K3");
    th_io_free(&io);
}
