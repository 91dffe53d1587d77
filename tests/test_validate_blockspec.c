/* tests/test_validate_blockspec.c: what pl_pallas_call checks of a
 * BlockSpec before it runs anything: a block has the array's rank (B1), the
 * index map one entry per dimension (B2), and the defaults of a spec that
 * gives no block shape or no map (B3).
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

/* ---- B1: a block has the array's rank --------------------------------------------- */

Test(validate, B1_block_rank_below_array_rank)
{
    pl_report rep;
    int rc = check_input(F32_16x256, PL_BLOCK(PL_MAP(0), 8), NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "in0", "(8)", "(16, 256)", "rank 1", "rank 2", "rule B1");
}

Test(validate, B1_block_rank_above_array_rank)
{
    pl_report rep;
    int rc = check_input(F32_16x256, PL_BLOCK(PL_MAP(0, 1, 2), 1, 8, 128), NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "in0", "(1, 8, 128)", "(16, 256)", "rule B1");
}

Test(validate, B1_block_dimension_of_size_0)
{
    pl_report rep;
    int rc = check_input(F32_16x256, PL_BLOCK(PL_MAP(0, 1), 0, 128), NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "in0", "(0, 128)", "dimension 0", "rule B1");
}

Test(validate, B1_output_block_rank_mismatch_names_the_output)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = th_copy_call_2d(16, 256, 8, 128);
    call.out[0] = PL_BLOCK(PL_MAP(0), 8);
    pl_report rep;
    int rc = rejected(&call, &io.a, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "out0", "(8)", "(16, 256)", "rule B1");
    th_io_free(&io);
}

/* A spec whose rank exceeds PL_MAX_RANK must be rejected without reading past
 * block[PL_MAX_RANK - 1] (the message formatting must not either). */
Test(validate, B1_block_rank_above_PL_MAX_RANK)
{
    pl_block_spec spec = PL_BLOCK(PL_MAP(0, 1), 8, 128);
    spec.rank = PL_MAX_RANK + 1;
    pl_report rep;
    int rc = check_input(F32_16x256, spec, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "in0", "(16, 256)", "rule B1");
}

/* ---- B2: the index map returns one block index per array dimension ---------------- */

Test(validate, B2_map_with_too_few_entries)
{
    pl_report rep;
    int rc = check_input(F32_16x256, PL_BLOCK(PL_MAP(0), 8, 128), NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINDEXMAP, "in0", "returns 1 indices", "rank 2", "rule B2");
}

Test(validate, B2_map_with_too_many_entries)
{
    pl_report rep;
    int rc = check_input(F32_16x256, PL_BLOCK(PL_MAP(0, 1, 2), 8, 128), NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINDEXMAP, "in0", "returns 3 indices", "rank 2", "rule B2");
}

Test(validate, B2_map_axis_beyond_grid_rank)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = th_copy_call_2d(16, 256, 8, 128); /* grid rank 2 */
    call.in[0].map = PL_MAP(0, 2);
    pl_report rep;
    int rc = rejected(&call, &io.a, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINDEXMAP, "in0", "entry 1", "grid axis 2", "2 axes", "rule B2");
    th_io_free(&io);
}

Test(validate, B2_map_negative_axis_other_than_PL_ZERO)
{
    pl_report rep;
    int rc = check_input(F32_16x256, PL_BLOCK(PL_MAP(0, -3), 8, 128), NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINDEXMAP, "in0", "grid axis -3", "rule B2");
}

Test(validate, B2_map_on_rank0_grid_naming_an_axis)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = th_copy_call_2d(16, 256, 16, 256);
    call.grid_rank = 0;
    pl_report rep;
    int rc = rejected(&call, &io.a, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINDEXMAP, "in0", "grid axis 0", "0 axes", "rule B2");
    th_io_free(&io);
}

Test(validate, B2_map_with_n_0_but_axes_set)
{
    pl_block_spec spec = {.rank = 2, .block = {8, 128}, .map = {.axis = {0, 1}}};
    pl_report rep;
    int rc = check_input(F32_16x256, spec, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINDEXMAP, "in0", "n = 0", "rule B2");
}

/* ---- B3: no block shape = whole array, no map = all zeros ---------------------- */

Test(validate, B3_rank0_spec_means_whole_array_copied_once)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = {
        .name = "whole", .kernel = th_copy_kernel,
        .grid_rank = 1, .grid = {3},
        .n_in = 1, .in = {{0}},
        .n_out = 1, .out = {{0}},
    };
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), &rep);
    cr_assert_eq(th_f32_diff(io.in, io.out, io.n), 0);
    cr_assert_eq(rep.steps, 3);
    for (int i = 0; i < 2; i++) {
        const pl_operand_report *o = &rep.op[i];
        cr_assert_eq(o->rank, 2);
        cr_assert_eq(o->block[0], 16, "%s block[0] = %lld", o->name, (long long)o->block[0]);
        cr_assert_eq(o->block[1], 256, "%s block[1] = %lld", o->name, (long long)o->block[1]);
        cr_assert_eq(o->block_bytes, 16 * 256 * 4);
    }
    cr_assert_eq(rep.op[0].copies, 1, "in0 copied %lld times", (long long)rep.op[0].copies);
    cr_assert_eq(rep.op[0].skipped, 2);
    cr_assert_eq(rep.op[1].writebacks, 1, "out0 written back %lld times", (long long)rep.op[1].writebacks);
    th_io_free(&io);
}

Test(validate, B3_zero_map_means_block_0_at_every_grid_point)
{
    th_io io = th_io_2d(16, 256);
    pl_block_spec spec = {.rank = 2, .block = {8, 128}}; /* map left {0} */
    pl_call call = {
        .name = "zero_map", .kernel = th_copy_kernel,
        .grid_rank = 2, .grid = {2, 2},
        .n_in = 1, .in = {spec},
        .n_out = 1, .out = {spec},
    };
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), &rep);
    for (int64_t i = 0; i < 16; i++)
        for (int64_t j = 0; j < 256; j++) {
            float want = i < 8 && j < 128 ? io.in[i * 256 + j] : TH_SENTINEL;
            cr_assert_eq(io.out[i * 256 + j], want, "out[%lld, %lld] = %g, want %g", (long long)i, (long long)j,
                         io.out[i * 256 + j], want);
        }
    cr_assert_eq(rep.steps, 4);
    cr_assert_eq(rep.op[0].copies, 1);
    cr_assert_eq(rep.op[0].skipped, 3);
    cr_assert_eq(rep.op[1].writebacks, 1);
    th_io_free(&io);
}
