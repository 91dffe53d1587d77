/* tests/test_validate_budget.c: the VMEM budget against the scoped limit
 * (M4) and what counts against it: buffer counts (P6) and the single buffer
 * of a block that never changes (P7), all checked before anything runs.
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

/* ---- M4: the VMEM budget ------------------------------------------------------- */

/* The 16x256 copy in (8, 128) blocks plus a 16 MiB VMEM scratch "acc":
 * 2 x 4096 + 2 x 4096 + 16 MiB = 16793600 bytes, just over v5e's 16 MiB. */
#define BUDGET_BYTES (4 * 4096 + 16 * MiB)
static pl_call budget_call(void)
{
    pl_call call = th_copy_call_2d(16, 256, 8, 128);
    call.n_scratch = 1;
    call.scratch[0] = PLTPU_VMEM(PL_F32, 2048, 2048);
    call.scratch[0].name = "acc";
    return call;
}

Test(validate, M4_over_default_scoped_limit_lists_each_buffer)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = budget_call();
    pl_report rep;
    int rc = rejected(&call, &io.a, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EVMEM, "16793600 bytes", "scoped limit of 16777216 bytes", "v5e", "rule M4",
                    "vmem_limit_bytes", "\n  in0 ", "\n  out0 ", "\n  acc ", "2 x 4096 bytes = 8192",
                    "1 x 16777216 bytes = 16777216 (scratch)");
    cr_assert_eq(rep.vmem_bytes, BUDGET_BYTES);
    cr_assert_eq(rep.vmem_limit, 16 * MiB);
    cr_assert_eq(th_io_touched(&io), 0);
    th_io_free(&io);
}

Test(validate, M4_raising_vmem_limit_makes_it_pass)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = budget_call();
    call.vmem_limit_bytes = 32 * MiB;
    pl_report rep;
    th_expect_ok(pl_validate(&call, &io.a, &io.o, NULL, &rep), &rep);
    cr_assert_eq(rep.vmem_limit, 32 * MiB);
    cr_assert_eq(rep.vmem_bytes, BUDGET_BYTES);
    th_io_free(&io);
}

Test(validate, M4_limit_is_inclusive)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = budget_call();
    pl_report rep;
    call.vmem_limit_bytes = BUDGET_BYTES;
    th_expect_ok(pl_validate(&call, &io.a, &io.o, NULL, &rep), &rep);
    call.vmem_limit_bytes = BUDGET_BYTES - 1;
    int rc = rejected(&call, &io.a, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EVMEM, "16793600 bytes", "scoped limit of 16793599 bytes", "rule M4");
    th_io_free(&io);
}

Test(validate, M4_default_limit_depends_on_chip)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = budget_call();
    pl_options opt = {.chip = "v6e"}; /* 32 MiB scoped default */
    pl_report rep;
    th_expect_ok(pl_validate(&call, &io.a, &io.o, &opt, &rep), &rep);
    cr_assert_eq(rep.vmem_limit, 32 * MiB);
    cr_assert_str_eq(rep.chip->name, "v6e");
    th_io_free(&io);
}

Test(validate, M4_limit_above_physical_vmem_fails)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = th_copy_call_2d(16, 256, 8, 128);
    pl_report rep;
    call.vmem_limit_bytes = 128 * MiB; /* v5e: all of it is allowed */
    th_expect_ok(pl_validate(&call, &io.a, &io.o, NULL, &rep), &rep);
    call.vmem_limit_bytes = 128 * MiB + 1;
    int rc = rejected(&call, &io.a, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EVMEM, "134217729", "134217728 bytes of physical VMEM", "v5e", "rule M4");

    pl_options v7x = {.chip = "v7x"}; /* 64 MiB per TensorCore */
    call.vmem_limit_bytes = 65 * MiB;
    rc = rejected(&call, &io.a, &io.o, &v7x, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EVMEM, "68157440", "67108864 bytes of physical VMEM", "v7x", "rule M4");
    cr_assert_eq(th_io_touched(&io), 0);
    th_io_free(&io);
}

Test(validate, M4_negative_limit_is_einval)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = th_copy_call_2d(16, 256, 8, 128);
    call.vmem_limit_bytes = -1;
    pl_report rep;
    int rc = rejected(&call, &io.a, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "vmem_limit_bytes = -1");
    th_io_free(&io);
}

/* A block whose byte count overflows int64 (8 x 2^59 f32 = 2^64 bytes) must
 * not wrap around to a small number and slip under the limit. */
Test(validate, M4_block_bytes_overflowing_int64_are_rejected)
{
    pl_report rep;
    int rc = check_input(F32_16x256, PL_BLOCK(PL_MAP(0, 1), 8, 1LL << 59), NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EVMEM, "rule M4");
}

/* The same for VMEM scratch: 2^31 x 2^31 f32 = 2^64 bytes. */
Test(validate, M4_scratch_bytes_overflowing_int64_are_rejected)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = th_copy_call_2d(16, 256, 8, 128);
    call.n_scratch = 1;
    call.scratch[0] = PLTPU_VMEM(PL_F32, 1LL << 31, 1LL << 31);
    pl_report rep;
    int rc = pl_validate(&call, &io.a, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EVMEM, "scratch0", "rule M4");
    th_io_free(&io);
}

/* ---- P6: buffer counts ------------------------------------------------------------- */

Test(validate, P6_three_buffers_warns_and_runs)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = th_copy_call_2d(16, 256, 8, 128);
    call.in[0].buffers = 3;
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), &rep);
    cr_assert_eq(th_f32_diff(io.in, io.out, io.n), 0);
    cr_assert_eq(rep.n_warnings, 1, "%s", rep.warnings);
    cr_assert(strstr(rep.warnings, "in0") && strstr(rep.warnings, "Buffered(3)") &&
                  strstr(rep.warnings, "rule P6"),
              "%s", rep.warnings);
    cr_assert_eq(rep.op[0].buffers, 3);
    cr_assert_eq(rep.op[1].buffers, 2);
    cr_assert_eq(rep.vmem_bytes, (3 + 2) * 4096);
    th_io_free(&io);
}

Test(validate, P6_negative_buffers_is_einval)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = th_copy_call_2d(16, 256, 8, 128);
    call.out[0].buffers = -1;
    pl_report rep;
    int rc = rejected(&call, &io.a, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "out0", "buffers = -1", "rule P6");
    th_io_free(&io);
}

Test(validate, P6_default_two_buffers_and_one_buffer_do_not_warn)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = th_copy_call_2d(16, 256, 8, 128);
    call.out[0].buffers = 1;
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), &rep);
    cr_assert_eq(th_f32_diff(io.in, io.out, io.n), 0);
    cr_assert_eq(rep.n_warnings, 0, "%s", rep.warnings);
    cr_assert_eq(rep.op[0].buffers, 2);
    cr_assert_eq(rep.op[1].buffers, 1);
    cr_assert_eq(rep.vmem_bytes, 3 * 4096);
    th_io_free(&io);
}

/* ---- P7: whole array + constant map = one buffer ----------------------------------- */

Test(validate, P7_whole_array_constant_map_gets_one_buffer)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = {
        .name = "p7", .kernel = th_copy_kernel,
        .grid_rank = 1, .grid = {4},
        .n_in = 1, .in = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 16, 256)},
        .n_out = 1, .out = {{0}},
    };
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), &rep);
    cr_assert_eq(th_f32_diff(io.in, io.out, io.n), 0);
    cr_assert_eq(rep.op[0].buffers, 1, "explicit whole block: %d buffers", rep.op[0].buffers);
    cr_assert_eq(rep.op[1].buffers, 1, "rank-0 spec: %d buffers", rep.op[1].buffers);
    cr_assert_eq(rep.op[0].copies, 1);
    cr_assert_eq(rep.op[1].writebacks, 1);
    cr_assert_eq(rep.vmem_bytes, 2 * 16 * 256 * 4);
    th_io_free(&io);
}

/* P7 is one case of P6's automatic single buffering: since Mosaic gives any
 * block that never changes over the grid one buffer, neither a whole block
 * nor a constant map is needed; an explicit count still wins. (Changing
 * blocks stay double-buffered: tests/test_jax_cores.c.) */
Test(validate, P6_P7_one_buffer_for_a_block_that_never_changes)
{
    pl_report rep;
    /* whole block, a map that follows axis 2, of size 1: it only ever picks 0 */
    th_expect_ok(check_input(F32_16x256, PL_BLOCK(PL_MAP(PL_ZERO, 2), 16, 256), NULL, &rep), &rep);
    cr_assert_eq(rep.op[0].buffers, 1);
    cr_assert(rep.op[0].single_buffered);
    /* constant map, partial block */
    th_expect_ok(check_input(F32_16x256, PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 8, 256), NULL, &rep), &rep);
    cr_assert_eq(rep.op[0].buffers, 1);
    cr_assert(rep.op[0].single_buffered);
    /* an explicit buffer count wins */
    pl_block_spec spec = PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 16, 256);
    spec.buffers = 2;
    th_expect_ok(check_input(F32_16x256, spec, NULL, &rep), &rep);
    cr_assert_eq(rep.op[0].buffers, 2);
}

/* ---- P1: the call's arrays live in HBM, and must fit it ------------------------- */

/* Two 9 GiB f32 arrays (cost-only: no data) are 18 GiB: over a v5e's 16 GiB
 * of HBM, under a v5p's 95; an output aliasing its input shares its bytes. */
Test(validate, P1_arrays_over_the_devices_hbm_are_refused_naming_both_sizes)
{
    int64_t rows = 9 * 1024 * 8, cols = 32768; /* 9 GiB of f32 */
    pl_call call = th_copy_call_2d(rows, cols, 512, 1024);
    pl_array in = PL_ARRAY(NULL, PL_F32, rows, cols), out = PL_ARRAY(NULL, PL_F32, rows, cols);
    pl_options opt = {.cost_only = 1, .chip = "v5e"};
    pl_report rep;
    int rc = pl_validate(&call, &in, &out, &opt, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "18.0 GiB of HBM", "16.0 GiB a v5e device has", "rule P1");
    opt.chip = "v5p";
    cr_expect_eq(pl_validate(&call, &in, &out, &opt, &rep), PL_OK, "%s", rep.error);
    opt.chip = "v5e";
    call.n_alias = 1; /* M6: the output is the input's buffer: 9 GiB in all */
    call.alias[0].in = 0, call.alias[0].out = 0;
    cr_expect_eq(pl_validate(&call, &in, &out, &opt, &rep), PL_OK, "%s", rep.error);
}
