/* tests/test_fuzz_regress.c: minimal reproducers of what the libFuzzer
 * harnesses of tests/fuzz/ found (tests/fuzz/FINDINGS.md has the inputs,
 * stacks and fixes). Each test is the smallest call that reached the bug.
 *
 * Some findings are undefined behaviour that only clang's UBSan reports
 * (GCC's does not check NULL + 0): those tests pass under a plain build and
 * fail under `make check-asan CC=clang` until the bug is fixed. */
#include "../kernel/pltpu.h"
#include "helpers.h"
#include "run.h"

/* ---- F1: pl_copy between integer dtypes advanced a NULL pointer ------------- */

static void widen_kernel(pl_ctx *c, pl_ref *refs) { pl_copy(c, refs[1], refs[0]); }

/* kernel/ops.c int_row stepped its absent second operand (NULL) by 0 for
 * every element: "applying zero offset to null pointer". A copy that
 * converts i8 to i32 (one of the integer paths) is all it takes. */
Test(fuzz_regress, F1_integer_copy_with_conversion)
{
    int8_t in[16];
    int32_t out[16];
    for (int i = 0; i < 16; i++) in[i] = (int8_t)(i - 8), out[i] = 99;
    pl_call call = {
        .name = "widen",
        .kernel = widen_kernel,
        .grid_rank = 1,
        .grid = {1},
        .n_in = 1,
        .in = {PL_BLOCK(PL_MAP(PL_ZERO), 16)},
        .n_out = 1,
        .out = {PL_BLOCK(PL_MAP(PL_ZERO), 16)},
    };
    pl_array a = PL_ARRAY(in, PL_I8, 16), o = PL_ARRAY(out, PL_I32, 16);
    pl_report rep;
    cr_assert_eq(pl_pallas_call(&call, &a, &o, NULL, &rep), PL_OK, "%s", rep.error);
    for (int i = 0; i < 16; i++) cr_assert_eq(out[i], i - 8, "element %d: %d", i, out[i]);
}

/* ---- F2: a what-if chip with no 16-bit sublanes --------------------------------- */

static void fill_kernel(pl_ctx *c, pl_ref *refs) { pl_fill(c, refs[0], 1.0); }

/* sim/call/validate.c rounds 16-bit blocks up to chip->sublanes_16bit rows (T6):
 * a pl_chip with 0 there divided by zero (SIGFPE), with -1 overflowed. A
 * chip file cannot say so (8 to 32), but pl_options.chip_spec can: the call
 * must refuse the chip, naming the figure, as it does a bad core count. */
Test(fuzz_regress, F2_chip_spec_without_16bit_sublanes)
{
    for (int bad = -1; bad <= 0; bad++) {
        uint16_t out[16 * 8];
        pl_chip chip = *pl_chip_default();
        chip.sublanes_16bit = bad;
        pl_call call = {
            .name = "fill",
            .kernel = fill_kernel,
            .grid_rank = 1,
            .grid = {2},
            .n_out = 1,
            .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 8)},
        };
        pl_array o = PL_ARRAY(out, PL_BF16, 16, 8);
        pl_options opt = {.chip_spec = &chip};
        pl_report rep;
        cr_assert_eq(pl_validate(&call, NULL, &o, &opt, &rep), PL_EINVAL, "sublanes %d: %s", bad, rep.error);
        cr_assert(strstr(rep.error, "sublanes_16bit"), "the message names the figure: %s", rep.error);
        cr_assert_eq(pl_pallas_call(&call, NULL, &o, &opt, &rep), PL_EINVAL, "sublanes %d: %s", bad, rep.error);
    }
}

/* ---- F4: copies never waited made every start quadratic ------------------------ */

/* Starts one empty copy per step and never waits: empty views overlap
 * nothing, so no race is reported, and before the bound each start compared
 * its destination with every copy still in flight (O(steps^2): the fuzzer's
 * 30,000-step input ran for minutes). The call must end at the bound with
 * a message naming the missing waits, not at the end of the grid. */
static void never_wait_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_ref buf = refs[1], sems = refs[2];
    pltpu_copy cp = pltpu_async_copy(c, pl_ds(c, refs[0], 0, 0, 0), pl_ds(c, buf, 0, 0, 0), pl_at(c, sems, 0));
    pltpu_copy_start(c, &cp);
}

Test(fuzz_regress, F4_copies_never_waited_are_bounded)
{
    float x[8 * 128] = {0};
    pl_block_spec any = PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 8, 128);
    any.space = PL_ANY;
    pl_call call = {
        .name = "never_wait",
        .kernel = never_wait_kernel,
        .grid_rank = 1,
        .grid = {20000},
        .n_in = 1,
        .in = {any},
        .n_scratch = 2,
        .scratch = {PLTPU_VMEM(PL_F32, 8, 128), PLTPU_SEMAPHORE_DMA(1)},
    };
    pl_array a = PL_ARRAY(x, PL_F32, 8, 128);
    pl_report rep;
    int rc = pl_pallas_call(&call, &a, NULL, NULL, &rep);
    cr_assert_eq(rc, PL_ESEMAPHORE, "%d: %s", rc, rep.error);
    cr_assert(strstr(rep.error, "4096 copies are already in flight") && strstr(rep.error, "(0)") &&
                  strstr(rep.error, "grid point (4096)"),
              "%s", rep.error);
}

/* ---- F8: a host's devices, chips x devices per chip, overflowed int --------- */

/* sim/timing/chips.c pl_chip_devices_per_host multiplied a chip spec's
 * chips_per_host (up to INT_MAX from a fuzzed spec) by its devices per
 * chip in int: "8 * 2147483647 cannot be represented in type 'int'"
 * (UBSan). It is computed in 64 bits and saturates. */
Test(fuzz_regress, F8_devices_per_host_of_huge_counts_saturate)
{
    pl_chip chip = *pl_chip_find("v7x");
    chip.chips_per_host = INT_MAX;
    chip.devices_per_chip = 8;
    cr_expect_eq(pl_chip_devices_per_host(&chip), INT_MAX);
    chip.chips_per_host = 4, chip.devices_per_chip = 2;
    cr_expect_eq(pl_chip_devices_per_host(&chip), 8);
    chip.chips_per_host = 0;
    cr_expect_eq(pl_chip_devices_per_host(&chip), 1);
}

/* A block of 2^62 rows saturates the VMEM budget at 2^63 - 1 bytes; the
 * listing XLA-style and the --vmem-limit hint then summed and rounded it
 * past INT64_MAX (UBSan: signed overflow in vmem_report.c and fmt.c) and
 * printed "Program vmem requirement -9223372036854251525B". */
Test(fuzz_regress, a_saturated_vmem_budget_lists_without_overflow)
{
    const char *verbs[] = {"run", "memory", "profile", "explain", "verify"};
    for (int i = 0; i < 5; i++) {
        const char *args[] = {verbs[i], "matmul", "--set", "bm=4611686018427387904", NULL};
        th_run r = th_run_tilesim(args);
        cr_expect_eq(r.status, 2, "%s: exit %d: %s", verbs[i], r.status, r.err);
        cr_expect(strstr(r.err, "VMEM budget exceeded") && !strstr(r.err, "requirement -") && !strstr(r.err, "needs -"),
                  "%s: %s", verbs[i], r.err);
        th_run_free(&r);
    }
}
