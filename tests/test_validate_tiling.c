/* tests/test_validate_tiling.c: the block shapes the chip can tile, checked
 * before anything runs: the (8,128) rule (T1), rank-1 blocks (T2), native
 * tiling as a warning (T6), and messages that name operand, block shape,
 * array shape and rule (T7).
 *
 * A rejected call goes through both pl_validate and pl_pallas_call, which
 * must agree on the code and the message and run nothing (rejected() in
 * test_validate_helpers.h). Each test is named after the rule it checks.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "test_validate_helpers.h"

/* ---- T1: the (8,128) rule ------------------------------------------------------- */

Test(validate, T1_last_dim_not_multiple_of_128)
{
    pl_report rep;
    int rc = check_input(F32_16x256, PL_BLOCK(PL_MAP(0, 1), 8, 64), NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "in0", "(8, 64)", "(16, 256)", "last block dimension 64",
                    "multiple of 128", "rule T1", "128 would do, or the whole dimension");
}

Test(validate, T1_last_dim_multiple_of_128_is_legal)
{
    pl_report rep;
    th_expect_ok(check_input(F32_16x256, PL_BLOCK(PL_MAP(0, 1), 8, 128), NULL, &rep), &rep);
    th_expect_ok(check_input(PL_ARRAY(NULL, PL_F32, 16, 384), PL_BLOCK(PL_MAP(0, 1), 8, 256), NULL, &rep), &rep);
}

Test(validate, T1_last_dim_equal_to_array_dim_is_legal)
{
    th_io io = th_io_2d(16, 200);
    pl_call call = th_copy_call_2d(16, 200, 8, 200);
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), &rep);
    cr_assert_eq(th_f32_diff(io.in, io.out, io.n), 0);
    th_io_free(&io);
}

Test(validate, T1_last_dim_equal_to_another_dim_is_not_enough)
{
    pl_report rep; /* 16 equals the array's second-last dim, not its last */
    int rc = check_input(F32_16x256, PL_BLOCK(PL_MAP(0, 1), 8, 16), NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "last block dimension 16", "rule T1");
}

Test(validate, T1_second_last_dim_not_multiple_of_8)
{
    pl_report rep;
    int rc = check_input(F32_16x256, PL_BLOCK(PL_MAP(0, 1), 4, 128), NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "in0", "(4, 128)", "(16, 256)", "second-last block dimension 4",
                    "multiple of 8", "rule T1", "8 would do, or the whole dimension");
    rc = check_input(PL_ARRAY(NULL, PL_F32, 64, 256), PL_BLOCK(PL_MAP(0, 1), 20, 128), NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "second-last block dimension 20", "16 or 24 would do, or 64");
}

Test(validate, T1_second_last_dim_equal_to_array_dim_is_legal)
{
    th_io io = th_io_2d(12, 256);
    pl_call call = th_copy_call_2d(12, 256, 12, 128);
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), &rep);
    cr_assert_eq(th_f32_diff(io.in, io.out, io.n), 0);
    th_io_free(&io);
}

Test(validate, T1_second_last_dim_multiple_of_8_is_legal)
{
    pl_report rep;
    th_expect_ok(check_input(PL_ARRAY(NULL, PL_F32, 32, 256), PL_BLOCK(PL_MAP(0, 1), 16, 128), NULL, &rep), &rep);
    th_expect_ok(check_input(PL_ARRAY(NULL, PL_F32, 12, 200), PL_BLOCK(PL_MAP(0, 1), 16, 256), NULL, &rep), &rep);
}

Test(validate, T1_squeezed_last_dim_counts_as_1)
{
    pl_report rep;
    int rc = check_input(F32_16x256, PL_BLOCK(PL_MAP(0, 1), 8, PL_SQUEEZED), NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "in0", "(8, squeezed)", "last block dimension 1 (squeezed)",
                    "rule T1");
}

Test(validate, T1_squeezed_second_last_dim_counts_as_1)
{
    pl_report rep;
    int rc = check_input(PL_ARRAY(NULL, PL_F32, 16, 4, 256), PL_BLOCK(PL_MAP(0, 1, 2), 8, PL_SQUEEZED, 128),
                         NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "in0", "(8, squeezed, 128)", "(16, 4, 256)",
                    "second-last block dimension 1 (squeezed)", "rule T1", "a unit dimension", "pltpu_async_copy");
}

Test(validate, T1_squeezed_dim_over_array_dim_1_is_legal)
{
    pl_report rep;
    th_expect_ok(check_input(PL_ARRAY(NULL, PL_F32, 16, 1, 256), PL_BLOCK(PL_MAP(0, 1, 2), 8, PL_SQUEEZED, 128),
                             NULL, &rep),
                 &rep);
}

Test(validate, T1_squeezed_leading_dim_is_legal_and_dropped_from_the_ref)
{
    float *in = th_f32_seq(4 * 16 * 256), *out = th_f32_fill(4 * 16 * 256, TH_SENTINEL);
    pl_array a = PL_ARRAY(in, PL_F32, 4, 16, 256), o = PL_ARRAY(out, PL_F32, 4, 16, 256);
    rec r = {.n_refs = 2, .src = 0, .dst = 1};
    pl_call call = {
        .name = "squeeze", .kernel = rec_kernel, .user = &r,
        .grid_rank = 3, .grid = {4, 2, 2},
        .n_in = 1, .in = {PL_BLOCK(PL_MAP(0, 1, 2), PL_SQUEEZED, 8, 128)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, 1, 2), PL_SQUEEZED, 8, 128)},
    };
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &a, &o, NULL, &rep), &rep);
    cr_assert_eq(th_f32_diff(in, out, 4 * 16 * 256), 0);
    cr_assert_eq(r.runs, 16);
    assert_ref(&r.refs[0], 0, PL_ROLE_IN, PL_VMEM, PL_F32, 2, (const int64_t[]){8, 128});
    assert_ref(&r.refs[1], 1, PL_ROLE_OUT, PL_VMEM, PL_F32, 2, (const int64_t[]){8, 128});
    free(in);
    free(out);
}

Test(validate, T1_does_not_depend_on_dtype)
{
    static const pl_dtype dts[] = {PL_F32, PL_BF16, PL_F16, PL_I32, PL_I8};
    for (size_t i = 0; i < sizeof dts / sizeof *dts; i++) {
        /* 8 rows: a whole second-last dimension, which the compiler's tiling
         * check (T8, dtype-dependent: tests/test_compiler_tiling.c) accepts */
        pl_array arr = PL_ARRAY(NULL, dts[i], 8, 256);
        pl_report rep;
        int rc = check_input(arr, PL_BLOCK(PL_MAP(0, 1), 8, 128), NULL, &rep);
        cr_assert_eq(rc, PL_OK, "%s (8, 128): %s", pl_dtype_name(dts[i]), rep.error);
        rc = check_input(arr, PL_BLOCK(PL_MAP(0, 1), 8, 64), NULL, &rep);
        cr_assert_eq(rc, PL_EBLOCKSHAPE, "%s (8, 64) returned %d", pl_dtype_name(dts[i]), rc);
        rc = check_input(arr, PL_BLOCK(PL_MAP(0, 1), 4, 128), NULL, &rep);
        cr_assert_eq(rc, PL_EBLOCKSHAPE, "%s (4, 128) returned %d", pl_dtype_name(dts[i]), rc);
        /* 16 rows is a multiple of 8 even where the native tile is 32 rows (T6) */
        rc = check_input(arr, PL_BLOCK(PL_MAP(0, 1), 16, 128), NULL, &rep);
        cr_assert_eq(rc, PL_OK, "%s (16, 128): %s", pl_dtype_name(dts[i]), rep.error);
    }
}

Test(validate, T1_applies_to_outputs)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = th_copy_call_2d(16, 256, 8, 128);
    call.out[0] = PL_BLOCK(PL_MAP(0, 1), 8, 100);
    pl_report rep;
    int rc = rejected(&call, &io.a, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "out0", "(8, 100)", "(16, 256)", "rule T1");
    th_io_free(&io);
}

/* ---- T2: rank-1 blocks ----------------------------------------------------------- */

Test(validate, T2_rank1_equal_to_array_size_is_legal)
{
    float *in = th_f32_seq(100), *out = th_f32_fill(100, TH_SENTINEL);
    pl_array a = PL_ARRAY(in, PL_F32, 100), o = PL_ARRAY(out, PL_F32, 100);
    pl_call call = {
        .name = "vec", .kernel = th_copy_kernel,
        .grid_rank = 1, .grid = {1},
        .n_in = 1, .in = {PL_BLOCK(PL_MAP(0), 100)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(0), 100)},
    };
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &a, &o, NULL, &rep), &rep);
    cr_assert_eq(th_f32_diff(in, out, 100), 0);
    free(in);
    free(out);
}

Test(validate, T2_rank1_multiple_of_1024_is_legal)
{
    pl_report rep;
    pl_array arr = PL_ARRAY(NULL, PL_I8, 8192);
    th_expect_ok(check_input(arr, PL_BLOCK(PL_MAP(0), 1024), NULL, &rep), &rep);
    th_expect_ok(check_input(arr, PL_BLOCK(PL_MAP(0), 3072), NULL, &rep), &rep); /* not a power of two */
}

Test(validate, T2_rank1_power_of_two_minimum_depends_on_dtype)
{
    static const struct { pl_dtype dt; int64_t min; } cases[] = {
        {PL_F32, 128}, {PL_I32, 128}, {PL_BF16, 256}, {PL_F16, 256}, {PL_I8, 512},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        pl_array arr = PL_ARRAY(NULL, cases[i].dt, 4096);
        const char *dt = pl_dtype_name(cases[i].dt);
        char min[32];
        snprintf(min, sizeof min, ">= %lld", (long long)cases[i].min);
        pl_report rep;
        int rc = check_input(arr, PL_BLOCK(PL_MAP(0), cases[i].min), NULL, &rep);
        cr_assert_eq(rc, PL_OK, "%s block %lld: %s", dt, (long long)cases[i].min, rep.error);
        rc = check_input(arr, PL_BLOCK(PL_MAP(0), 2 * cases[i].min), NULL, &rep);
        cr_assert_eq(rc, PL_OK, "%s block %lld: %s", dt, (long long)(2 * cases[i].min), rep.error);
        rc = check_input(arr, PL_BLOCK(PL_MAP(0), cases[i].min / 2), NULL, &rep);
        TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "in0", dt, "(4096)", min, "rule T2");
    }
}

Test(validate, T2_rank1_not_power_of_two_below_1024_is_illegal)
{
    pl_report rep;
    int rc = check_input(PL_ARRAY(NULL, PL_F32, 4096), PL_BLOCK(PL_MAP(0), 384), NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "in0", "rank-1 block (384)", "f32 array (4096)", "multiple of 1024",
                    "power of two >= 128", "rule T2");
    rc = check_input(PL_ARRAY(NULL, PL_F32, 4096), PL_BLOCK(PL_MAP(0), 1000), NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "(1000)", "rule T2");
}

Test(validate, T2_rank1_legal_block_runs)
{
    float *in = th_f32_seq(1024), *out = th_f32_fill(1024, TH_SENTINEL);
    pl_array a = PL_ARRAY(in, PL_F32, 1024), o = PL_ARRAY(out, PL_F32, 1024);
    pl_call call = {
        .name = "vec", .kernel = th_copy_kernel,
        .grid_rank = 1, .grid = {4},
        .n_in = 1, .in = {PL_BLOCK(PL_MAP(0), 256)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(0), 256)},
    };
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &a, &o, NULL, &rep), &rep);
    cr_assert_eq(th_f32_diff(in, out, 1024), 0);
    cr_assert_eq(rep.op[0].copies, 4);
    free(in);
    free(out);
}

/* ---- T6: native tiling is a warning --------------------------------------------- */

/* Validate a bf16 or i8 (rows, 256) copy in (rows, 128) blocks on `chip`:
 * the block is the whole second-last dimension, so the compiler pads it
 * (T6) rather than rejecting it (T8, tests/test_compiler_tiling.c). */
static int check_tiled(pl_dtype dt, int64_t rows, const char *chip, pl_report *rep)
{
    pl_array a = with_data(PL_ARRAY(NULL, dt, rows, 256)), o = with_data(PL_ARRAY(NULL, dt, rows, 256));
    pl_call call = th_copy_call_2d(rows, 256, rows, 128);
    pl_options opt = {.chip = chip};
    int rc = pl_validate(&call, &a, &o, &opt, rep);
    free(a.data);
    free(o.data);
    return rc;
}

Test(validate, T6_bf16_8_rows_on_v7x_warns_not_errors)
{
    pl_report rep;
    th_expect_ok(check_tiled(PL_BF16, 8, "v7x", &rep), &rep);
    cr_assert_eq(rep.n_warnings, 2, "want one warning per operand, got %d:\n%s", rep.n_warnings, rep.warnings);
    cr_assert(strstr(rep.warnings, "in0") && strstr(rep.warnings, "out0"), "%s", rep.warnings);
    cr_assert(strstr(rep.warnings, "rule T6"), "%s", rep.warnings);
    cr_assert(strstr(rep.warnings, "16 sublanes"), "%s", rep.warnings);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(rep.op[i].block_bytes, 8 * 128 * 2);
        cr_assert_eq(rep.op[i].vmem_bytes, 16 * 128 * 2, "padded bytes %lld", (long long)rep.op[i].vmem_bytes);
        cr_assert_gt(rep.op[i].vmem_bytes, rep.op[i].block_bytes);
    }
    cr_assert_eq(rep.vmem_bytes, 2 * 2 * 16 * 128 * 2, "the budget must count padded bytes");
}

Test(validate, T6_bf16_8_rows_before_v7_does_not_warn)
{
    static const char *chips[] = {"v4", "v5e", "v5p", "v6e"};
    for (size_t i = 0; i < sizeof chips / sizeof *chips; i++) {
        pl_report rep;
        th_expect_ok(check_tiled(PL_BF16, 8, chips[i], &rep), &rep);
        cr_assert_eq(rep.n_warnings, 0, "%s: %s", chips[i], rep.warnings);
        cr_assert_eq(rep.op[0].vmem_bytes, rep.op[0].block_bytes, "%s", chips[i]);
    }
}

Test(validate, T6_bf16_16_rows_on_v7x_does_not_warn)
{
    pl_report rep;
    th_expect_ok(check_tiled(PL_BF16, 16, "v7x", &rep), &rep);
    cr_assert_eq(rep.n_warnings, 0, "%s", rep.warnings);
    cr_assert_eq(rep.op[0].vmem_bytes, rep.op[0].block_bytes);
}

Test(validate, T6_i8_8_rows_warns_on_every_chip)
{
    for (int i = 0; i < pl_chip_count(); i++) {
        pl_report rep;
        th_expect_ok(check_tiled(PL_I8, 8, pl_chip_at(i)->name, &rep), &rep);
        cr_assert_eq(rep.n_warnings, 2, "%s: %s", pl_chip_at(i)->name, rep.warnings);
        cr_assert(strstr(rep.warnings, "32 sublanes"), "%s", rep.warnings);
        cr_assert_eq(rep.op[0].vmem_bytes, 32 * 128, "%s", pl_chip_at(i)->name);
        cr_assert_eq(rep.op[0].block_bytes, 8 * 128);
    }
}

Test(validate, T6_padding_counts_against_the_vmem_limit)
{
    uint16_t *in = calloc(32 * 256, 2), *out = calloc(32 * 256, 2);
    cr_assert(in && out);
    for (int i = 0; i < 32 * 256; i++) in[i] = pl_f32_to_bf16((float)(i % 300) * 0.5f);
    /* 8 rows: the whole dimension, padded to 16 on v7x (T6), not rejected (T8) */
    pl_array a = PL_ARRAY(in, PL_BF16, 8, 256), o = PL_ARRAY(out, PL_BF16, 8, 256);
    pl_call call = th_copy_call_2d(8, 256, 8, 128);
    pl_options opt = {.chip = "v7x"};
    pl_report rep;
    call.vmem_limit_bytes = 4 * 8 * 128 * 2; /* the logical bytes: not enough */
    int rc = rejected(&call, &a, &o, &opt, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EVMEM, "rule M4");
    call.vmem_limit_bytes = 4 * 16 * 128 * 2; /* the padded bytes */
    th_expect_ok(pl_pallas_call(&call, &a, &o, &opt, &rep), &rep);
    cr_assert_eq(memcmp(in, out, 8 * 256 * 2), 0, "a call that warns must still run correctly");
    cr_assert_eq(rep.n_warnings, 2);
    free(in);
    free(out);
}

/* ---- T7: messages name operand, block shape, array shape and rule ---------------- */

Test(validate, T7_message_names_operand_block_array_and_rule)
{
    const struct {
        pl_array arr;
        pl_block_spec spec;
        int code;
        const char *block, *array, *rule;
    } cases[] = {
        {F32_16x256, PL_BLOCK(PL_MAP(0), 8), PL_EBLOCKSHAPE, "(8)", "(16, 256)", "rule B1"},
        {F32_16x256, PL_BLOCK(PL_MAP(0, 1), 8, 64), PL_EBLOCKSHAPE, "(8, 64)", "(16, 256)", "rule T1"},
        {F32_16x256, PL_BLOCK(PL_MAP(0, 1), 4, 128), PL_EBLOCKSHAPE, "(4, 128)", "(16, 256)", "rule T1"},
        {F32_16x256, PL_BLOCK(PL_MAP(0, 1), 8, PL_SQUEEZED), PL_EBLOCKSHAPE, "(8, squeezed)", "(16, 256)",
         "rule T1"},
        {PL_ARRAY(NULL, PL_BF16, 4096), PL_BLOCK(PL_MAP(0), 200), PL_EBLOCKSHAPE, "(200)", "(4096)", "rule T2"},
        {PL_ARRAY(NULL, PL_I32, 16, 256), {.rank = 2, .block = {8, 64}, .space = PL_SMEM}, PL_EBLOCKSHAPE,
         "(8, 64)", "(16, 256)", "rule T1"},
        {F32_16x256, {.rank = 2, .block = {8, 256}, .space = PL_ANY}, PL_EBLOCKSHAPE, "(8, 256)", "(16, 256)",
         "rule T5"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        pl_block_spec spec = cases[i].spec;
        spec.name = "weights";
        pl_report rep;
        int rc = check_input(cases[i].arr, spec, NULL, &rep);
        cr_assert_eq(rc, cases[i].code, "case %zu returned %d: %s", i, rc, rep.error);
        const char *need[] = {"weights", cases[i].block, cases[i].array, cases[i].rule};
        for (size_t k = 0; k < sizeof need / sizeof *need; k++)
            cr_assert(strstr(rep.error, need[k]), "case %zu: message lacks \"%s\": %s", i, need[k], rep.error);
    }
}

/* The B1 message for a block dimension < 1 names the block shape but not the
 * array's shape, which T7 requires of every violation. */
Test(validate, T7_B1_block_dimension_of_size_0_message_names_array_shape)
{
    pl_report rep;
    int rc = check_input(F32_16x256, PL_BLOCK(PL_MAP(0, 1), 0, 128), NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "in0", "(0, 128)", "(16, 256)", "rule B1");
}

Test(validate, T7_violation_is_reported_before_anything_runs)
{
    th_io io = th_io_2d(16, 256);
    th_io io2 = th_io_2d(16, 256);
    pl_array outs[2] = {io.o, io2.o};
    int runs = 0;
    pl_call call = th_copy_call_2d(16, 256, 8, 128);
    call.kernel = th_count_copy_kernel;
    call.user = &runs;
    call.n_out = 2; /* the first output is legal, the second is not */
    call.out[1] = PL_BLOCK(PL_MAP(0, 1), 8, 64);
    pl_report rep;
    int rc = rejected(&call, &io.a, outs, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "out1", "rule T1");
    cr_assert_eq(runs, 0, "the kernel ran %d times", runs);
    cr_assert_eq(th_io_touched(&io), 0);
    cr_assert_eq(th_io_touched(&io2), 0);
    th_io_free(&io);
    th_io_free(&io2);
}
