/* tests/test_named_specs.c: PL_BLOCK_NAMED and the PLTPU_*_NAMED scratch
 * forms (issue 24): a spec carries its name from the macro, so reports and
 * messages name it without a `.name = ...` assignment afterwards. */
#include <criterion/criterion.h>
#include <string.h>

#include "helpers.h"

static void copy_kernel(pl_ctx *c, pl_ref *r)
{
    pl_copy(c, r[2], r[0]);
    pl_copy(c, r[1], r[2]);
}

static pl_call named_call(int64_t lanes)
{
    pl_call call = {.name = "named", .kernel = copy_kernel, .grid_rank = 1, .grid = {4}, .n_in = 1,
                    .in = {PL_BLOCK_NAMED("x", PL_MAP(0, PL_ZERO), 8, lanes)}, .n_out = 1,
                    .out = {PL_BLOCK_NAMED("y", PL_MAP(0, PL_ZERO), 8, lanes)}, .n_scratch = 2,
                    .scratch = {PLTPU_VMEM_NAMED("stage", PL_F32, 8, lanes), PLTPU_SEMAPHORE_DMA_NAMED("sems", 2)}};
    return call;
}

Test(named_specs, reports_name_operands_and_scratch_from_the_macros)
{
    th_io io = th_io_2d(32, 256);
    pl_call call = named_call(256);
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), &rep);
    cr_assert_eq(th_f32_diff(io.in, io.out, io.n), 0);
    cr_assert_str_eq(rep.op[0].name, "x");
    cr_assert_str_eq(rep.op[1].name, "y");
    cr_assert_str_eq(rep.scratch[0].name, "stage");
    cr_assert_str_eq(rep.scratch[1].name, "sems");
    th_io_free(&io);
}

Test(named_specs, a_message_names_the_operand_from_the_macro)
{
    th_io io = th_io_2d(32, 256);
    pl_call call = named_call(64); /* 64 lanes of a 256-wide array: T1 */
    pl_report rep;
    int rc = pl_pallas_call(&call, &io.a, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "x: block (8, 64)", "T1");
    th_io_free(&io);
}
