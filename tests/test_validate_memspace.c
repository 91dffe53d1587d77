/* tests/test_validate_memspace.c: memory spaces, checked before anything
 * runs: rank-0 blocks (T3), SMEM (T4, M1), ANY takes no blocking (T5), and
 * the kernel's arguments in order: prefetch, inputs, outputs, scratch (M3).
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

/* ---- T3: rank-0 blocks ------------------------------------------------------------ */

Test(validate, T3_rank0_array_in_vmem_is_an_error)
{
    pl_report rep;
    pl_array scalar = {.dtype = PL_F32, .rank = 0};
    int rc = check_input(scalar, (pl_block_spec){0}, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "in0", "rank-0", "rule T3");
}

Test(validate, T3_rank0_output_in_vmem_is_an_error)
{
    int32_t x = 0; /* a legal SMEM input, so that the output is what fails */
    float y = TH_SENTINEL;
    pl_array in = {.data = &x, .dtype = PL_I32, .rank = 0}, out = {.data = &y, .dtype = PL_F32, .rank = 0};
    pl_call call = {
        .name = "scalar", .kernel = th_noop_kernel,
        .n_in = 1, .in = {{.space = PL_SMEM}},
        .n_out = 1, .out = {{0}},
    };
    pl_report rep;
    int rc = rejected(&call, &in, &out, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "out0", "rank-0", "rule T3");
    cr_assert_eq(y, TH_SENTINEL);
}

/* ---- T4: SMEM ---------------------------------------------------------------------- */

static void scalar_to_block_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_fill(c, refs[1], pl_get(c, refs[0], (const int64_t[]){0}));
}

Test(validate, T4_smem_rank0_whole_array_is_exempt)
{
    int32_t x = 42;
    float *out = th_f32_fill(8 * 128, TH_SENTINEL);
    pl_array in = {.data = &x, .dtype = PL_I32, .rank = 0}, o = PL_ARRAY(out, PL_F32, 8, 128);
    pl_call call = {
        .name = "smem_scalar", .kernel = scalar_to_block_kernel,
        .n_in = 1, .in = {{.space = PL_SMEM}},
        .n_out = 1, .out = {{0}},
    };
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &in, &o, NULL, &rep), &rep);
    for (int i = 0; i < 8 * 128; i++) cr_assert_eq(out[i], 42.0f, "out[%d] = %g", i, out[i]);
    cr_assert_eq(rep.op[0].space, PL_SMEM);
    cr_assert_eq(rep.smem_bytes, 4);
    cr_assert_eq(rep.vmem_bytes, 8 * 128 * 4, "the SMEM operand counted in VMEM: %lld", (long long)rep.vmem_bytes);
    free(out);
}

Test(validate, T4_smem_whole_array_is_exempt_and_counts_as_smem)
{
    pl_report rep;
    pl_block_spec whole = {.space = PL_SMEM};
    th_expect_ok(check_input(PL_ARRAY(NULL, PL_I32, 3, 5), whole, NULL, &rep), &rep);
    cr_assert_eq(rep.op[0].buffers, 1);
    cr_assert_eq(rep.smem_bytes, 3 * 5 * 4);
    cr_assert_eq(rep.vmem_bytes, 8 * 128 * 4);
    cr_assert_eq(rep.n_warnings, 0, "%s", rep.warnings);
}

Test(validate, T4_partial_smem_block_follows_T1)
{
    pl_array arr = PL_ARRAY(NULL, PL_I32, 16, 256);
    pl_block_spec spec = PL_BLOCK(PL_MAP(0, 1), 8, 64);
    spec.space = PL_SMEM;
    pl_report rep;
    int rc = check_input(arr, spec, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "in0", "(8, 64)", "(16, 256)", "rule T1");

    spec = PL_BLOCK(PL_MAP(0, 1), 1, 256);
    spec.space = PL_SMEM;
    rc = check_input(arr, spec, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "in0", "(1, 256)", "second-last block dimension 1", "rule T1");

    spec = PL_BLOCK(PL_MAP(0, 1), 8, 128);
    spec.space = PL_SMEM;
    th_expect_ok(check_input(arr, spec, NULL, &rep), &rep);
    cr_assert_eq(rep.smem_bytes, 2 * 8 * 128 * 4);
}

/* ---- T5: ANY takes no blocking --------------------------------------------------- */

Test(validate, T5_any_partial_block_is_an_error)
{
    pl_block_spec spec = PL_BLOCK(PL_MAP(0, 1), 8, 128);
    spec.space = PL_ANY;
    pl_report rep;
    int rc = check_input(F32_16x256, spec, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "in0", "ANY", "(8, 128)", "(16, 256)", "non-constant index map",
                    "rule T5");
}

Test(validate, T5_any_partial_block_with_constant_map_is_an_error)
{
    pl_block_spec spec = PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 8, 128);
    spec.space = PL_ANY;
    pl_report rep;
    int rc = check_input(F32_16x256, spec, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "in0", "(8, 128)", "rule T5");
    cr_assert_null(strstr(rep.error, "non-constant"), "%s", rep.error);
}

Test(validate, T5_any_whole_block_with_grid_map_is_an_error)
{
    pl_block_spec spec = PL_BLOCK(PL_MAP(0, 1), 16, 256);
    spec.space = PL_ANY;
    pl_report rep;
    int rc = check_input(F32_16x256, spec, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "in0", "(16, 256)", "non-constant index map", "rule T5");
}

Test(validate, T5_any_whole_array_with_constant_map_is_legal)
{
    pl_report rep;
    pl_block_spec spec = PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 16, 256);
    spec.space = PL_ANY;
    th_expect_ok(check_input(F32_16x256, spec, NULL, &rep), &rep);
    cr_assert_eq(rep.op[0].buffers, 0, "an ANY operand took %d VMEM buffers", rep.op[0].buffers);
    cr_assert_eq(rep.op[0].vmem_bytes, 0);
    cr_assert_eq(rep.vmem_bytes, 8 * 128 * 4, "ANY counted in VMEM: %lld", (long long)rep.vmem_bytes);
}

Test(validate, T5_any_operand_is_the_hbm_array_itself)
{
    th_io io = th_io_2d(16, 256);
    rec r = {.n_refs = 2, .src = -1, .dst = 1};
    pl_call call = {
        .name = "any", .kernel = rec_kernel, .user = &r,
        .grid_rank = 2, .grid = {2, 2},
        .n_in = 1, .in = {{.space = PL_ANY}},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, 1), 8, 128)},
    };
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), &rep);
    cr_assert_eq(r.runs, 4);
    assert_ref(&r.refs[0], 0, PL_ROLE_IN, PL_ANY, PL_F32, 2, (const int64_t[]){16, 256});
    cr_assert_eq(r.refs[0].data, (void *)io.in, "the ANY ref is not the caller's HBM array");
    cr_assert_eq(rep.op[0].copies, 0);
    th_io_free(&io);
}

/* ---- M3: kernel arguments: prefetch, inputs, outputs, scratch ----------------------- */

Test(validate, M3_refs_in_order_prefetch_inputs_outputs_scratch)
{
    int32_t table[4] = {3, 1, 4, 1};
    float *in1 = th_f32_seq(16 * 128);
    th_io io = th_io_2d(16, 256);
    pl_array args[3] = {PL_ARRAY(table, PL_I32, 4), io.a, PL_ARRAY(in1, PL_F32, 16, 128)};
    rec r = {.n_refs = 6, .src = 1, .dst = 3};
    pl_call call = {
        .name = "m3", .kernel = rec_kernel, .user = &r,
        .grid_rank = 2, .grid = {2, 2},
        .num_scalar_prefetch = 1,
        .n_in = 2,
        .in = {PL_BLOCK(PL_MAP(0, 1), 8, 128), PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, 1), 8, 128)},
        .n_scratch = 2,
        .scratch = {PLTPU_VMEM(PL_F32, 8, 256), PLTPU_SMEM(PL_I32, 5)},
    };
    call.scratch[0].name = "acc";
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, args, &io.o, NULL, &rep), &rep);
    cr_assert_eq(th_f32_diff(io.in, io.out, io.n), 0);
    cr_assert_eq(r.runs, 4);
    assert_ref(&r.refs[0], 0, PL_ROLE_PREFETCH, PL_SMEM, PL_I32, 1, (const int64_t[]){4});
    assert_ref(&r.refs[1], 1, PL_ROLE_IN, PL_VMEM, PL_F32, 2, (const int64_t[]){8, 128});
    assert_ref(&r.refs[2], 2, PL_ROLE_IN, PL_VMEM, PL_F32, 2, (const int64_t[]){8, 128});
    assert_ref(&r.refs[3], 3, PL_ROLE_OUT, PL_VMEM, PL_F32, 2, (const int64_t[]){8, 128});
    assert_ref(&r.refs[4], 4, PL_ROLE_SCRATCH, PL_VMEM, PL_F32, 2, (const int64_t[]){8, 256});
    assert_ref(&r.refs[5], 5, PL_ROLE_SCRATCH, PL_SMEM, PL_I32, 1, (const int64_t[]){5});
    cr_assert(r.refs[1].readonly && r.refs[2].readonly, "input refs must be read-only (V3)");
    cr_assert(!r.refs[3].readonly && !r.refs[4].readonly);

    cr_assert_eq(rep.n_operands, 4);
    static const char *names[] = {"prefetch0", "in0", "in1", "out0"};
    static const pl_role roles[] = {PL_ROLE_PREFETCH, PL_ROLE_IN, PL_ROLE_IN, PL_ROLE_OUT};
    for (int i = 0; i < 4; i++) {
        cr_assert_str_eq(rep.op[i].name, names[i]);
        cr_assert_eq(rep.op[i].role, roles[i], "%s", names[i]);
    }
    cr_assert_eq(rep.n_scratch, 2);
    cr_assert_str_eq(rep.scratch[0].name, "acc");
    cr_assert_str_eq(rep.scratch[1].name, "scratch1");
    cr_assert_eq(rep.scratch[0].bytes, 8 * 256 * 4);
    cr_assert_eq(rep.scratch[1].space, PL_SMEM);
    cr_assert_eq(rep.scratch[1].bytes, 5 * 4);
    cr_assert_eq(rep.vmem_bytes, 3 * 2 * 4096 + 8 * 256 * 4);
    th_io_free(&io);
    free(in1);
}

/* ---- M1: what SMEM holds -------------------------------------------------------- */

Test(validate, M1_prefetch_must_be_32bit)
{
    uint16_t table[4] = {0}; /* f16: narrow bf16 / i16 / i8 tables are accepted (M5) */
    th_io io = th_io_2d(16, 256);
    pl_array args[2] = {PL_ARRAY(table, PL_F16, 4), io.a};
    pl_call call = th_copy_call_2d(16, 256, 8, 128);
    call.num_scalar_prefetch = 1;
    call.kernel = th_noop_kernel;
    pl_report rep;
    int rc = rejected(&call, args, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EDTYPE, "prefetch0", "f16", "rule M1");
    th_io_free(&io);
}

/* SMEM holds 8-, 16- and 32-bit scalars, each in a 32-bit word; not int4 */
Test(validate, M1_smem_scratch_holds_8_16_and_32_bit_scalars)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = th_copy_call_2d(16, 256, 8, 128);
    call.n_scratch = 1;
    call.scratch[0] = PLTPU_SMEM(PL_I4, 16);
    pl_report rep;
    int rc = rejected(&call, &io.a, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EDTYPE, "scratch0", "int4", "storage dtype");
    call.scratch[0] = PLTPU_SMEM(PL_I8, 16);
    th_expect_ok(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), &rep);
    cr_expect_eq(rep.smem_bytes, 16 * 4, "a 32-bit word each");
    th_io_free(&io);
}

Test(validate, M1_smem_over_capacity_is_evmem)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = th_copy_call_2d(16, 256, 8, 128);
    call.n_scratch = 1;
    call.scratch[0] = PLTPU_SMEM(PL_I32, 256 * 1024); /* exactly v5e's 1 MiB */
    pl_report rep;
    th_expect_ok(pl_validate(&call, &io.a, &io.o, NULL, &rep), &rep);
    cr_assert_eq(rep.smem_bytes, 1 * MiB);
    call.scratch[0].shape[0]++;
    int rc = rejected(&call, &io.a, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EVMEM, "SMEM use of 1048580 bytes", "1048576 bytes of SMEM", "v5e", "rule M1");
    th_io_free(&io);
}

/* SMEM holds 32-bit scalars: the validator rejects bf16 prefetch arrays and
 * SMEM scratch (PL_EDTYPE, rule M1) and should reject a bf16 SMEM block
 * operand the same way. */
/* JAX's test_sum_in_smem: an int16 SMEM input summed into an int16 SMEM output */
static void sum_in_smem(pl_ctx *c, pl_ref *refs)
{
    int64_t s = 0;
    for (int64_t i = 0; i < 16; i++) s += (int64_t)pl_get_at(c, refs[0], i / 4, i % 4);
    pl_set_at(c, refs[1], (double)s, 0);
}

Test(validate, M1_jax_sum_in_smem_takes_int16_operands)
{
    int16_t x[16], y[1] = {0};
    for (int i = 0; i < 16; i++) x[i] = (int16_t)i;
    pl_array a = PL_ARRAY(x, PL_I16, 4, 4), o = PL_ARRAY(y, PL_I16, 1);
    pl_call call = {.name = "sum_in_smem", .kernel = sum_in_smem, .n_in = 1, .n_out = 1};
    call.in[0].space = call.out[0].space = PL_SMEM;
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &a, &o, NULL, &rep), &rep);
    cr_expect_eq(y[0], 120);
}

/* A SEMAPHORE operand holds semaphores' counts (M16): not an f32 block */
Test(validate, M16_semaphore_space_holds_no_f32_block)
{
    pl_block_spec spec = PL_BLOCK(PL_MAP(0, 1), 8, 128);
    spec.space = PL_SEMAPHORE;
    pl_report rep;
    int rc = check_input(F32_16x256, spec, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EDTYPE, "in0", "int32 array of counts", "f32", "rule M16");
}

Test(validate, M2_scratch_in_any_is_einval)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = th_copy_call_2d(16, 256, 8, 128);
    call.n_scratch = 1;
    call.scratch[0] = PLTPU_VMEM(PL_F32, 8, 128);
    call.scratch[0].space = PL_ANY;
    pl_report rep;
    int rc = rejected(&call, &io.a, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "scratch0", "ANY", "rule M2");
    th_io_free(&io);
}
