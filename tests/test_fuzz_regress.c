/* tests/test_fuzz_regress.c: minimal reproducers of what the libFuzzer
 * harnesses of tests/fuzz/ found (tests/fuzz/FINDINGS.md has the inputs,
 * stacks and fixes). Each test is the smallest call that reached the bug.
 *
 * Some findings are undefined behaviour that only clang's UBSan reports
 * (GCC's does not check NULL + 0): those tests pass under a plain build and
 * fail under `make check-asan CC=clang` until the bug is fixed. */
#include "../kernel/pltpu.h"
#include "helpers.h"

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

/* sim/validate.c rounds 16-bit blocks up to chip->sublanes_16bit rows (T6):
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
