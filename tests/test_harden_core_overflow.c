/* tests/test_harden_core_overflow.c: issue 8, the simulator's core under
 * extreme but legal input: counts and keys must not overflow (M9, M8, G4,
 * B5, P5, V4), while revisits and races are still caught. Every test here
 * failed before its fix. */
#include <math.h>
#include <stdio.h>

#include "../kernel/pltpu.h"
#include "../sim/call/exec.h"
#include "helpers.h"

/* ---- counts that do not overflow (M8, M9) ------------------------------------ */

typedef struct sem_seen {
    int64_t after_two, after_three;
} sem_seen;

/* Two signals of INT32_MAX: a 32-bit count overflowed (undefined behaviour,
 * in practice a negative count and a false deadlock). */
static void big_signal_kernel(pl_ctx *c, pl_ref *refs)
{
    sem_seen *seen = pl_kernel_user(c);
    pl_ref sem = pl_at(c, refs[2], 0);
    pltpu_semaphore_signal(c, sem, INT32_MAX);
    pltpu_semaphore_signal(c, sem, INT32_MAX);
    seen->after_two = pltpu_semaphore_read(c, sem);
    pltpu_semaphore_signal(c, sem, 5);
    seen->after_three = pltpu_semaphore_read(c, sem);
    pltpu_semaphore_wait(c, sem, 2 * (int64_t)INT32_MAX + 5);
    pl_copy(c, refs[1], refs[0]);
}

Test(harden_core, M9_semaphore_counts_are_64_bit)
{
    th_io io = th_io_2d(8, 128);
    sem_seen seen = {0};
    pl_call call = th_copy_call_2d(8, 128, 8, 128);
    call.kernel = big_signal_kernel;
    call.user = &seen;
    call.n_scratch = 1;
    call.scratch[0] = PLTPU_SEMAPHORE(2);
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), &rep);
    cr_assert_eq(seen.after_two, 2 * (int64_t)INT32_MAX);
    cr_assert_eq(seen.after_three, 2 * (int64_t)INT32_MAX + 5);
    th_io_free(&io);
}

/* An increment past 2^31 - 1 (M9) is an error that names the semaphore and
 * the grid point. */
static void big_increment_kernel(pl_ctx *c, pl_ref *refs)
{
    pltpu_semaphore_signal(c, pl_at(c, refs[2], 1), (int64_t)INT32_MAX + 1);
    pl_copy(c, refs[1], refs[0]);
}

Test(harden_core, M9_a_bad_increment_names_the_semaphore)
{
    th_io io = th_io_2d(8, 128);
    pl_call call = th_copy_call_2d(8, 128, 8, 128);
    call.kernel = big_increment_kernel;
    call.n_scratch = 1;
    call.scratch[0] = PLTPU_SEMAPHORE(2);
    call.scratch[0].name = "flags";
    pl_report rep;
    int rc = pl_pallas_call(&call, &io.a, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "pltpu_semaphore_signal on refs[2]", "'flags'", "by 2147483648",
                    "at grid point (0, 0)", "M9");
    th_io_free(&io);
}

/* A cost-only copy of 3 GiB between two HBM arrays: its byte count was
 * truncated to 32 bits on the way to the semaphore, and the wait reported a
 * deadlock (M8, M10). */
static void big_copy_kernel(pl_ctx *c, pl_ref *refs)
{
    pltpu_copy cp = pltpu_async_copy(c, refs[0], refs[1], pl_at(c, refs[2], 0));
    pltpu_copy_start(c, &cp);
    pltpu_copy_wait(c, &cp);
}

Test(harden_core, M8_a_3_GiB_copy_is_waited_without_deadlock)
{
    enum { ROWS = 3 * 256 * 1024, COLS = 1024 }; /* 3 GiB of f32 */
    pl_call call = {
        .name = "big_copy",
        .kernel = big_copy_kernel,
        .grid_rank = 1,
        .grid = {1},
        .n_in = 1,
        .in = {{.space = PL_ANY}},
        .n_out = 1,
        .out = {{.space = PL_ANY}},
        .n_scratch = 1,
        .scratch = {PLTPU_SEMAPHORE_DMA(1)},
    };
    pl_array in = PL_ARRAY(NULL, PL_F32, ROWS, COLS), out = PL_ARRAY(NULL, PL_F32, ROWS, COLS);
    pl_options opt = {.cost_only = 1};
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &in, &out, &opt, &rep), &rep);
    cr_assert_eq(rep.dma_bytes, 3LL << 30);
    cr_assert_gt(rep.time_s, (double)(3LL << 30) / pl_chip_find("v5e")->hbm_bw);
}

/* ---- keys that do not overflow (G4, B5, P5, V4) ----------------------------- */

/* G4: a 2^32-point parallel axis on a megacore chip is cut in two halves of
 * 2^31; the running start of each chunk was an int. */
Test(harden_core, G4_megacore_split_of_a_2_pow_32_axis)
{
    int64_t lo[2], hi[2];
    sim_split_axis(1LL << 32, 2, lo, hi);
    cr_assert_eq(lo[0], 0);
    cr_assert_eq(hi[0], 1LL << 31);
    cr_assert_eq(lo[1], 1LL << 31);
    cr_assert_eq(hi[1], 1LL << 32);
    sim_split_axis((1LL << 32) - 1, 2, lo, hi); /* odd: the first core takes the extra index */
    cr_assert_eq(hi[0], 1LL << 31);
    cr_assert_eq(lo[1], 1LL << 31);
    cr_assert_eq(hi[1], (1LL << 32) - 1);
}

/* Output (2, 8, 128) f32 whose dims 1 and 2 are element dims (B5) padded to
 * 2^40 block positions each: blocks (0, 0, 0) and (1, 0, 0) had the same
 * linear key (1 * 2^40 * 2^40 wraps to 0). */
static void padded_map(const int64_t *g, const pl_ref *prefetch, int64_t *b, void *user)
{
    (void)prefetch, (void)user;
    b[0] = g[0], b[1] = 0, b[2] = 0;
}

static pl_call padded_call(pl_semantics sem)
{
    pl_call call = th_copy_call_2d(8, 128, 8, 128);
    call.grid_rank = 1;
    call.grid[0] = 2;
    call.grid[1] = 0;
    call.semantics[0] = sem;
    for (int i = 0; i < 2; i++) {
        pl_block_spec *s = i ? &call.out[0] : &call.in[0];
        *s = PL_BLOCK(PL_MAP_FN(padded_map, NULL), PL_SQUEEZED, 8, 128);
        s->element[1] = s->element[2] = 1;
        s->pad_hi[1] = s->pad_hi[2] = (1LL << 40) - 1; /* n + (2^40 - 1) - n + 1 = 2^40 positions */
    }
    return call;
}

Test(harden_core, P5_huge_element_padding_does_not_alias_blocks)
{
    float *x = th_f32_seq(2 * 8 * 128), *y = th_f32_fill(2 * 8 * 128, TH_SENTINEL);
    pl_call call = padded_call(PL_ARBITRARY);
    pl_array in = PL_ARRAY(x, PL_F32, 2, 8, 128), out = PL_ARRAY(y, PL_F32, 2, 8, 128);
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &in, &out, NULL, &rep), &rep);
    cr_assert_eq(th_f32_diff(x, y, 2 * 8 * 128), 0);
    free(x), free(y);
}

Test(harden_core, V4_huge_element_padding_does_not_alias_blocks)
{
    float *x = th_f32_seq(2 * 8 * 128), *y = th_f32_fill(2 * 8 * 128, TH_SENTINEL);
    pl_call call = padded_call(PL_PARALLEL);
    pl_array in = PL_ARRAY(x, PL_F32, 2, 8, 128), out = PL_ARRAY(y, PL_F32, 2, 8, 128);
    pl_options opt = {.seed = 3};
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &in, &out, &opt, &rep), &rep);
    cr_assert_eq(th_f32_diff(x, y, 2 * 8 * 128), 0);
    free(x), free(y);
}

/* The keys are still the blocks: a real revisit (P5) and a real race (V4)
 * under the same padding are still caught. */
static void revisit_map(const int64_t *g, const pl_ref *prefetch, int64_t *b, void *user)
{
    (void)prefetch, (void)user;
    b[0] = g[0] == 1, b[1] = b[2] = 0; /* (0, 0, 0), (1, 0, 0), (0, 0, 0) again */
}

Test(harden_core, P5_and_V4_still_caught_under_huge_padding)
{
    float *x = th_f32_seq(2 * 8 * 128), *y = th_f32_fill(2 * 8 * 128, TH_SENTINEL);
    pl_array in = PL_ARRAY(x, PL_F32, 2, 8, 128), out = PL_ARRAY(y, PL_F32, 2, 8, 128);
    pl_report rep;
    pl_call call = padded_call(PL_ARBITRARY);
    call.grid[0] = 3;
    call.in[0].map = call.out[0].map = PL_MAP_FN(revisit_map, NULL);
    int rc = pl_pallas_call(&call, &in, &out, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EREVISIT, "out0", "(0, 0, 0)", "rule P5");
    call.semantics[0] = PL_PARALLEL; /* a race on a megacore chip, a warning on one core (V4) */
    rc = pl_pallas_call(&call, &in, &out, &(pl_options){.chip = "v5p"}, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_ERACE, "out0", "(0, 0, 0)", "V4");
    free(x), free(y);
}
