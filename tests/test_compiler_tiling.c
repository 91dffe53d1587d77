/* tests/test_compiler_tiling.c: the compiler's tiling check, the second
 * layer of legality after the BlockSpec check (T1): rule T8 (XLA E2002) and
 * the per-chip, per-dtype memory tiling table behind it (presets, chip
 * files, `tilesim chips`). The shapes are those of real reports: a bf16
 * (8, 2048) block of a tall array rejected on v7x and accepted on v5e; an
 * int8 (8, 128) block rejected on every chip with (32, 128) suggested. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/tilesim.h"
#include "helpers.h"
#include "run.h"

/* Validate a copy of an (m, n) array of dt in (bm, bn) blocks on chip. */
static int check_copy(pl_dtype dt, int64_t m, int64_t n, int64_t bm, int64_t bn, const char *chip, pl_report *rep)
{
    pl_array a = PL_ARRAY(NULL, dt, m, n), o = PL_ARRAY(NULL, dt, m, n);
    pl_call call = th_copy_call_2d(m, n, bm, bn);
    pl_options opt = {.chip = chip, .cost_only = 1}; /* shapes only: no data */
    return pl_validate(&call, &a, &o, &opt, rep);
}

/* ---- T8: the block against the array's memory tiling ------------------------------- */

Test(compiler_tiling, T8_bf16_8x2048_block_of_a_tall_array_is_rejected_on_v7x)
{
    pl_report rep;
    int rc = check_copy(PL_BF16, 4096, 2048, 8, 2048, "v7x", &rep);
    TH_EXPECT_ERROR(rc, rep, PL_ETILING, "in0: block (8, 2048) of bf16 array (4096, 2048)",
                    "passes the BlockSpec check (T1)", "not the compiler's tiling check", "on v7x",
                    "(16, 128) tiles", "E2002", "rule T8", "Nearest legal block shapes: (16, 2048)");
}

Test(compiler_tiling, T8_bf16_8x2048_block_of_a_tall_array_is_accepted_before_v7)
{
    static const char *chips[] = {"v4", "v5e", "v5p", "v6e"};
    for (size_t i = 0; i < sizeof chips / sizeof *chips; i++) {
        pl_report rep;
        int rc = check_copy(PL_BF16, 4096, 2048, 8, 2048, chips[i], &rep);
        cr_assert_eq(rc, PL_OK, "%s: %s", chips[i], rep.error);
        cr_assert_eq(rep.n_warnings, 0, "%s: bf16 tiles (8, 128) there: %s", chips[i], rep.warnings);
    }
    pl_report rep; /* and on v7x, 16 rows pass */
    th_expect_ok(check_copy(PL_BF16, 4096, 2048, 16, 2048, "v7x", &rep), &rep);
}

Test(compiler_tiling, T8_int8_8x128_block_is_rejected_on_every_chip_with_32x128_suggested)
{
    for (int i = 0; i < pl_chip_count(); i++) {
        pl_report rep;
        int rc = check_copy(PL_I8, 1024, 128, 8, 128, pl_chip_at(i)->name, &rep);
        TH_EXPECT_ERROR(rc, rep, PL_ETILING, "i8 array (1024, 128)", "(32, 128) tiles", "E2002", "rule T8",
                        "Nearest legal block shapes: (32, 128)");
        cr_assert(strstr(rep.error, pl_chip_at(i)->name), "%s", rep.error);
        th_expect_ok(check_copy(PL_I8, 1024, 128, 32, 128, pl_chip_at(i)->name, &rep), &rep);
    }
}

Test(compiler_tiling, T8_suggests_the_multiples_below_and_above)
{
    pl_report rep;
    int rc = check_copy(PL_I8, 1024, 256, 40, 128, "v5e", &rep);
    TH_EXPECT_ERROR(rc, rep, PL_ETILING, "second-last dimension 40 is neither a multiple of 32",
                    "Nearest legal block shapes: (32, 128) or (64, 128)");
}

/* The first layer still answers first, with its own code and rule. */
Test(compiler_tiling, T1_is_reported_before_T8_with_its_own_code)
{
    pl_report rep;
    int rc = check_copy(PL_BF16, 4096, 2048, 4, 2048, "v7x", &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "rule T1");
    cr_assert_null(strstr(rep.error, "E2002"), "%s", rep.error);
}

/* Where the block is the whole second-last dimension the compiler pads
 * instead: legal, with the T6 warning when the padding doubles the bytes. */
Test(compiler_tiling, T8_a_whole_dimension_only_pads_and_T6_warns)
{
    pl_report rep;
    th_expect_ok(check_copy(PL_I8, 8, 256, 8, 128, "v7x", &rep), &rep);
    cr_assert_eq(rep.n_warnings, 2, "%s", rep.warnings);
    cr_assert(strstr(rep.warnings, "rule T6"), "%s", rep.warnings);
}

/* An array whose rows the large tile does not divide gets 8-row tiles. */
Test(compiler_tiling, T8_an_array_not_tall_in_whole_tiles_has_8_row_tiles)
{
    pl_report rep;
    th_expect_ok(check_copy(PL_BF16, 24, 256, 8, 128, "v7x", &rep), &rep);
    th_expect_ok(check_copy(PL_I8, 40, 256, 8, 128, "v5e", &rep), &rep);
}

/* SMEM and ANY operands have no VMEM tiling to match. */
Test(compiler_tiling, T8_applies_to_vmem_blocks_only)
{
    pl_array a = PL_ARRAY(NULL, PL_I8, 1024, 128), o = PL_ARRAY(NULL, PL_I8, 1024, 128);
    pl_call call = th_copy_call_2d(1024, 128, 1024, 128);
    call.in[0] = (pl_block_spec){.space = PL_ANY};
    call.grid[0] = 1;
    pl_options opt = {.chip = "v7x", .cost_only = 1};
    pl_report rep;
    th_expect_ok(pl_validate(&call, &a, &o, &opt, &rep), &rep);
}

/* ---- the table: presets, chip files, the CLI --------------------------------------- */

Test(compiler_tiling, T8_tile_rows_per_chip_and_dtype)
{
    const pl_chip *v5e = pl_chip_find("v5e"), *v7x = pl_chip_find("v7x");
    cr_assert_eq(pl_chip_tile_rows(v5e, PL_F32, 4096), 8);
    cr_assert_eq(pl_chip_tile_rows(v7x, PL_F32, 4096), 8);
    cr_assert_eq(pl_chip_tile_rows(v5e, PL_BF16, 4096), 8);
    cr_assert_eq(pl_chip_tile_rows(v7x, PL_BF16, 4096), 16);
    cr_assert_eq(pl_chip_tile_rows(v7x, PL_BF16, 16), 16, "16 rows: one whole (16, 128) tile");
    for (int i = 0; i < pl_chip_count(); i++) {
        cr_assert_eq(pl_chip_tile_rows(pl_chip_at(i), PL_I8, 4096), 32, "%s", pl_chip_at(i)->name);
        cr_assert_eq(pl_chip_at(i)->sublanes_4bit, 64, "%s", pl_chip_at(i)->name);
    }
    /* not a multiple of the large tile: 8 rows; fewer than 8: the smallest
     * power of two that holds them, at least the packing (32 / bits) */
    cr_assert_eq(pl_chip_tile_rows(v7x, PL_BF16, 24), 8);
    cr_assert_eq(pl_chip_tile_rows(v5e, PL_I8, 40), 8);
    cr_assert_eq(pl_chip_tile_rows(v5e, PL_I8, 2), 4);
    cr_assert_eq(pl_chip_tile_rows(v5e, PL_BF16, 3), 4);
    cr_assert_eq(pl_chip_tile_rows(v5e, PL_F32, 1), 1);
    pl_chip zero = {0}; /* a table left zero: the usual tiles, never a division by zero */
    cr_assert_eq(pl_chip_tile_rows(&zero, PL_I8, 4096), 32);
    cr_assert_eq(pl_chip_tile_rows(&zero, PL_BF16, 4096), 8);
}

Test(compiler_tiling, T8_chip_files_set_the_tiling_and_the_mxu_table)
{
    pl_chip c;
    char err[512];
    int rc = pl_chip_parse("base = v5e\nsublanes_8bit = 16\nfp8_tflops = 100\n", "t", &c, err, sizeof err);
    cr_assert_eq(rc, PL_OK, "%s", err);
    cr_assert_eq(c.sublanes_8bit, 16);
    cr_assert_float_eq(c.fp8_ops, 100e12, 1);
    pl_array a = PL_ARRAY(NULL, PL_I8, 1024, 128), o = PL_ARRAY(NULL, PL_I8, 1024, 128);
    pl_call call = th_copy_call_2d(1024, 128, 16, 128);
    pl_options opt = {.chip_spec = &c, .cost_only = 1};
    pl_report rep;
    th_expect_ok(pl_validate(&call, &a, &o, &opt, &rep), &rep);
    rc = pl_chip_parse("base = v5e\nsublanes_8bit = 4\n", "t", &c, err, sizeof err);
    cr_assert_eq(rc, PL_EINVAL);
    cr_assert(strstr(err, "sublanes_8bit"), "%s", err);
    cr_assert_eq(pl_chip_find("v7x")->int8_ops, 0, "v7x has no int8 MXU path");
    cr_assert_gt(pl_chip_find("v7x")->fp8_ops, 0, "fp8 exists on v7x");
    cr_assert_eq(pl_chip_find("v6e")->fp8_ops, 0, "and only there");
}

Test(compiler_tiling, T8_tilesim_chips_prints_the_table)
{
    th_run r = TH_RUN("chips");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "tile rows 32/16/8/4-bit (T8)"), "%s", r.out);
    cr_assert(strstr(r.out, "8/16/32/64"), "v7x's row: %s", r.out);
    cr_assert(strstr(r.out, "8/8/32/64"), "v5e's row: %s", r.out);
    cr_assert(strstr(r.out, "MXU int8 x int8 / fp8 (T10)"), "%s", r.out);
    th_run_free(&r);
    r = TH_RUN("chips", "--json");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "\"sublanes_8bit\":32"), "%s", r.out);
    cr_assert(strstr(r.out, "\"fp8_ops\":"), "%s", r.out);
    th_run_free(&r);
}

Test(compiler_tiling, ETILING_has_a_name)
{
    cr_assert_str_eq(pl_strerror(PL_ETILING), "rejected by the compiler's tiling check");
    cr_assert_eq(PL_STATUS_MIN, PL_ETILING);
}

/* A call that passes says so, layer by layer, with each block's tile. */
Test(compiler_tiling, T8_the_report_says_both_layers_passed)
{
    pl_report rep;
    th_expect_ok(check_copy(PL_BF16, 4096, 2048, 16, 2048, "v7x", &rep), &rep);
    cr_assert_eq(rep.op[0].tile_rows, 16);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert(f);
    pl_report_print(&rep, f);
    fclose(f);
    cr_assert(strstr(text, "legality: passes the BlockSpec check (T1-T5) and the compiler's tiling check on v7x "
                           "(T8): in0 bf16 in (16, 128) tiles, out0 bf16 in (16, 128) tiles"), "%s", text);
    free(text);
    th_expect_ok(check_copy(PL_I8, 1024, 128, 32, 128, "v5e", &rep), &rep);
    cr_assert_eq(rep.op[1].tile_rows, 32);
}
