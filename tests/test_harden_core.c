/* tests/test_harden_core.c: issue 8, the simulator's core under extreme but
 * legal input: the timing model must always terminate (time advances),
 * counts and keys must not overflow (M9, M8, G4, B5, P5, V4), index maps
 * that return INT64_MIN are out of range (B7), and kernel errors name refs
 * that do not exist, or by their spec's name (M3). Every test here failed
 * before its fix. */
#include <math.h>
#include <stdio.h>

#include "../kernel/pltpu.h"
#include "../sim/exec.h"
#include "helpers.h"

/* ---- time advances (P6, P8, P9) ---------------------------------------------- */

/* A cost-only call of `steps` grid steps, each copying one byte in and one
 * byte out: an (steps, 1, 1) i8 array in squeezed (1, 1) blocks. */
static int one_byte_steps(int64_t steps, const char *chip, const pl_chip *spec, pl_report *rep)
{
    pl_call call = {
        .name = "one_byte",
        .kernel = th_copy_kernel,
        .grid_rank = 1,
        .grid = {steps},
        .n_in = 1,
        .in = {PL_BLOCK(PL_MAP(0, PL_ZERO, PL_ZERO), PL_SQUEEZED, 1, 1)},
        .n_out = 1,
        .out = {PL_BLOCK(PL_MAP(0, PL_ZERO, PL_ZERO), PL_SQUEEZED, 1, 1)},
    };
    pl_array in = PL_ARRAY(NULL, PL_I8, steps, 1, 1), out = PL_ARRAY(NULL, PL_I8, steps, 1, 1);
    pl_options opt = {.chip = chip, .chip_spec = spec, .cost_only = 1};
    return pl_pallas_call(&call, &in, &out, &opt, rep);
}

/* What any timing must satisfy: finite, and no faster than the per-step
 * overhead (P9) or the bytes over the bandwidth allow. */
static void expect_sane_time(const pl_report *r, const pl_chip *chip, int64_t steps, const char *what)
{
    cr_assert(isfinite(r->time_s) && r->time_s > 0, "%s: time %g", what, r->time_s);
    double floor_overhead = (double)steps * chip->step_overhead_s / r->cores;
    cr_assert(r->time_s >= floor_overhead * (1 - 1e-9), "%s: %g s < %lld steps of overhead %g s", what, r->time_s,
              (long long)steps, chip->step_overhead_s);
    double floor_hbm = (double)r->hbm_bytes / chip->hbm_bw;
    cr_assert(r->time_s >= floor_hbm * (1 - 1e-9), "%s: %g s < %lld bytes at %g B/s", what, r->time_s,
              (long long)r->hbm_bytes, chip->hbm_bw);
}

/* The reproducer: on v7x, 25,000 one-byte steps never finished
 * timing (a leftover fraction of a byte drained in less than half a
 * rounding step of `now`, so time stopped advancing). */
Test(harden_core, timing_terminates_for_25000_one_byte_steps_on_v7x, .timeout = 30)
{
    pl_report rep;
    th_expect_ok(one_byte_steps(25000, "v7x", NULL, &rep), &rep);
    expect_sane_time(&rep, pl_chip_find("v7x"), 25000, "v7x, 25000 steps");
    cr_assert_eq(rep.steps, 25000);
}

Test(harden_core, timing_terminates_for_200000_one_byte_steps_on_v5e, .timeout = 30)
{
    pl_report rep;
    th_expect_ok(one_byte_steps(200000, "v5e", NULL, &rep), &rep);
    expect_sane_time(&rep, pl_chip_find("v5e"), 200000, "v5e, 200000 steps");
}

/* The chip-file reproducer of `tilesim sweep` and `explain`: hbm_gbps = 1e6
 * and step_overhead_us = 1e6, at the limits the chip format allows. */
Test(harden_core, timing_terminates_with_a_huge_overhead_and_bandwidth, .timeout = 30)
{
    pl_chip chip;
    char err[256];
    cr_assert_eq(pl_chip_parse("base = v5e\nhbm_gbps = 1e6\nstep_overhead_us = 1e6\n", "test", &chip, err,
                               sizeof err), PL_OK, "%s", err);
    pl_report rep;
    th_expect_ok(one_byte_steps(3000, NULL, &chip, &rep), &rep);
    expect_sane_time(&rep, &chip, 3000, "hbm 1e6 GB/s, overhead 1 s");
    /* nothing else costs anything next to a second per step */
    cr_assert(fabs(rep.time_s - 3000.0) < 1e-6 * 3000.0, "time %.17g", rep.time_s);
}

/* Every corner of the chip space on two kinds of call: tiny blocks, and a
 * matmul whose copies and compute overlap. Each timing must end, finite. */
Test(harden_core, timing_terminates_on_extreme_chips, .timeout = 60)
{
    const double bw[] = {1e6, 1e15, 1e300}, overhead[] = {0, 1e-15, 1}, latency[] = {0, 1e-15, 1},
                 flops[] = {1e9, 1e30};
    int n = 0;
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            for (int l = 0; l < 3; l++)
                for (int f = 0; f < 2; f++) {
                    pl_chip chip = *pl_chip_find(f ? "v5p" : "v5e");
                    chip.hbm_bw = bw[a];
                    chip.step_overhead_s = overhead[b];
                    chip.dma_latency_s = latency[l];
                    chip.bf16_flops = chip.vpu_flops = flops[f];
                    char what[160];
                    snprintf(what, sizeof what, "%s with hbm %g B/s, overhead %g s, latency %g s, %g FLOP/s",
                             chip.name, bw[a], overhead[b], latency[l], flops[f]);
                    pl_report rep;
                    int rc = one_byte_steps(2000, NULL, &chip, &rep);
                    cr_assert_eq(rc, PL_OK, "%s: %s", what, rep.error);
                    expect_sane_time(&rep, &chip, 2000, what);

                    pl_call call = th_copy_call_2d(64, 1024, 8, 128);
                    call.semantics[0] = PL_PARALLEL; /* two cores on v5p */
                    pl_array in = PL_ARRAY(NULL, PL_BF16, 64, 1024), out = PL_ARRAY(NULL, PL_BF16, 64, 1024);
                    pl_options opt = {.chip_spec = &chip, .cost_only = 1};
                    rc = pl_pallas_call(&call, &in, &out, &opt, &rep);
                    cr_assert_eq(rc, PL_OK, "%s: %s", what, rep.error);
                    expect_sane_time(&rep, &chip, 64, what);
                    n++;
                }
    cr_assert_eq(n, 54);
}

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

/* ---- no undefined behaviour (run under the UBSan build) ---------------------- */

/* Cost-only: the ANY input has no data; views of it offset a NULL pointer. */
static void any_views_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_ref rows = pl_ds(c, refs[0], 0, 8, 8);
    pl_ref row = pl_at(c, rows, 3);
    cr_assert_eq(row.rank, 1);
    pltpu_copy a = pltpu_async_copy(c, pl_ds(c, refs[0], 0, 8, 8), refs[2], pl_at(c, refs[3], 0));
    pltpu_copy b = pltpu_async_copy(c, pl_ds(c, refs[0], 0, 16, 8), pl_at(c, refs[4], 1), pl_at(c, refs[3], 1));
    pltpu_copy_start(c, &a);
    pltpu_copy_start(c, &b);
    pltpu_copy_wait(c, &a);
    pltpu_copy_wait(c, &b);
    pl_copy(c, refs[1], refs[2]);
}

Test(harden_core, cost_only_views_of_an_any_operand_without_data)
{
    pl_call call = {
        .name = "any_views",
        .kernel = any_views_kernel,
        .grid_rank = 1,
        .grid = {2},
        .n_in = 1,
        .in = {{.space = PL_ANY}},
        .n_out = 1,
        .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)},
        .n_scratch = 3,
        .scratch = {PLTPU_VMEM(PL_F32, 8, 128), PLTPU_SEMAPHORE_DMA(2), PLTPU_VMEM(PL_F32, 2, 8, 128)},
    };
    pl_array in = PL_ARRAY(NULL, PL_F32, 64, 128), out = PL_ARRAY(NULL, PL_F32, 16, 128);
    pl_options opt = {.cost_only = 1};
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &in, &out, &opt, &rep), &rep);
    cr_assert_eq(rep.dma_copies, 4);
}

/* Elementwise ops on views with no columns, before any op needed host
 * scratch (kern_tmp of 0 floats was NULL, and NULL + 0 is undefined). */
static int empty_op;

static void empty_views_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_ref a = pl_ds(c, refs[0], 1, 0, 0), o = pl_ds(c, refs[1], 1, 128, 0);
    switch (empty_op) {
    case 0: pl_add(c, o, a, a); break;
    case 1: pl_mul(c, o, a, a); break;
    case 2: pl_max(c, o, a, a); break;
    case 3: pl_relu(c, o, a); break;
    case 4: pl_copy(c, pl_ds(c, refs[2], 1, 0, 0), a); break; /* converting copy */
    case 5: pl_exp(c, o, a); break;
    case 6: pl_sum_rows(c, pl_ds(c, refs[1], 1, 0, 1), a); break;
    default: pl_fill(c, pl_ds(c, refs[2], 0, 8, 0), 1); break;
    }
    pl_copy(c, refs[1], refs[0]);
}

Test(harden_core, elementwise_ops_on_empty_views)
{
    for (empty_op = 0; empty_op < 8; empty_op++)
        for (int checks_off = 0; checks_off < 2; checks_off++) {
            th_io io = th_io_2d(8, 128);
            pl_call call = th_copy_call_2d(8, 128, 8, 128);
            call.kernel = empty_views_kernel;
            call.n_scratch = 1;
            call.scratch[0] = PLTPU_VMEM(PL_BF16, 8, 128);
            pl_options opt = {.checks_off = checks_off};
            pl_report rep;
            int rc = pl_pallas_call(&call, &io.a, &io.o, &opt, &rep);
            cr_assert_eq(rc, PL_OK, "op %d: %s", empty_op, rep.error);
            cr_assert_eq(th_f32_diff(io.in, io.out, io.n), 0);
            th_io_free(&io);
        }
}

/* ---- index maps (B2, B7) ----------------------------------------------------- */

static void min_map(const int64_t *g, const pl_ref *prefetch, int64_t *b, void *user)
{
    (void)prefetch, (void)user;
    b[0] = g[0];
    b[1] = g[1] == 1 ? INT64_MIN : g[1];
}

Test(harden_core, B7_a_map_returning_int64_min_is_out_of_range)
{
    th_io io = th_io_2d(8, 256);
    pl_call call = th_copy_call_2d(8, 256, 8, 128);
    call.in[0].map = PL_MAP_FN(min_map, NULL);
    call.in[0].name = "lhs";
    pl_report rep;
    int rc = pl_pallas_call(&call, &io.a, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINDEXMAP, "lhs", "grid point (0, 1)", "-9223372036854775808", "dimension 1",
                    "0..1", "rule B7");
    cr_assert(!strstr(rep.error, "unset"), "%s", rep.error);
    th_io_free(&io);
}

static void unset_map(const int64_t *g, const pl_ref *prefetch, int64_t *b, void *user)
{
    (void)prefetch, (void)user;
    b[0] = g[0];
}

Test(harden_core, B2_a_dimension_left_unset_is_still_reported_as_unset)
{
    th_io io = th_io_2d(8, 256);
    pl_call call = th_copy_call_2d(8, 256, 8, 128);
    call.out[0].map = PL_MAP_FN(unset_map, NULL);
    pl_report rep;
    int rc = pl_pallas_call(&call, &io.a, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINDEXMAP, "out0", "grid point (0, 0)", "left dimension 1 unset", "rule B2");
    th_io_free(&io);
}

/* ---- refs in kernel errors (M3) ---------------------------------------------- */

static int missing_use;

/* refs[3] of a call with 2 inputs, 1 output and no scratch. */
static void missing_ref_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_ref r = refs[3];
    int64_t i0[1] = {0};
    switch (missing_use) {
    case 0: pl_fill(c, r, 0); break;
    case 1: (void)pl_ds(c, r, 0, 0, 1); break;
    case 2: (void)pl_at(c, r, 0); break;
    case 3: (void)pl_get(c, r, i0); break;
    case 4: pl_set(c, r, i0, 1); break;
    case 5: pl_copy(c, refs[2], r); break;
    case 6: pl_add(c, refs[2], refs[0], r); break;
    case 7: pl_exp(c, r, refs[0]); break;
    case 8: pl_dot(c, r, refs[0], refs[1], 0); break;
    case 9: pltpu_semaphore_signal(c, r, 1); break;
    case 10: (void)pltpu_async_copy(c, refs[0], r, r); break;
    default: pl_max_rows(c, r, refs[0]); break;
    }
}

Test(harden_core, M3_a_ref_past_the_end_does_not_exist)
{
    float *a = th_f32_seq(8 * 128), *b = th_f32_seq(128 * 128), *o = th_f32_fill(8 * 128, 0);
    for (missing_use = 0; missing_use < 12; missing_use++) {
        pl_call call = {
            .name = "missing",
            .kernel = missing_ref_kernel,
            .grid_rank = 1,
            .grid = {1},
            .n_in = 2,
            .in = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 8, 128), PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 128, 128)},
            .n_out = 1,
            .out = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 8, 128)},
        };
        pl_array args[2] = {PL_ARRAY(a, PL_F32, 8, 128), PL_ARRAY(b, PL_F32, 128, 128)};
        pl_array out = PL_ARRAY(o, PL_F32, 8, 128);
        pl_report rep;
        int rc = pl_pallas_call(&call, args, &out, NULL, &rep);
        cr_assert_neq(rc, PL_OK, "use %d", missing_use);
        cr_assert(strstr(rep.error, "refs[3] does not exist: 2 inputs, 1 output, 0 scratch"), "use %d: %s",
                  missing_use, rep.error);
        cr_assert(strstr(rep.error, "grid point (0)"), "use %d: %s", missing_use, rep.error);
        cr_assert(!strstr(rep.error, "rank 0"), "use %d: %s", missing_use, rep.error);
    }
    free(a), free(b), free(o);
}

/* With scalar prefetch, the count names it too. */
static void missing_after_prefetch_kernel(pl_ctx *c, pl_ref *refs) { pl_fill(c, refs[5], 0); }

Test(harden_core, M3_a_ref_past_the_end_counts_prefetch_and_scratch)
{
    int32_t table[1] = {0};
    th_io io = th_io_2d(8, 128);
    pl_call call = th_copy_call_2d(8, 128, 8, 128);
    call.kernel = missing_after_prefetch_kernel;
    call.num_scalar_prefetch = 1;
    call.n_scratch = 2;
    call.scratch[0] = PLTPU_VMEM(PL_F32, 8, 128);
    call.scratch[1] = PLTPU_SEMAPHORE(1);
    pl_array args[2] = {PL_ARRAY(table, PL_I32, 1), io.a};
    pl_report rep;
    int rc = pl_pallas_call(&call, args, &io.o, NULL, &rep);
    cr_assert_neq(rc, PL_OK);
    cr_assert(strstr(rep.error, "refs[5] does not exist: 1 scalar-prefetch, 1 input, 1 output, 2 scratch"), "%s",
              rep.error);
    th_io_free(&io);
}

/* Kernel errors name a ref by its spec's name, else by its default name. */
static void named_oob_kernel(pl_ctx *c, pl_ref *refs)
{
    int64_t which = *(int64_t *)pl_kernel_user(c);
    (void)pl_get_at(c, refs[which], 8, 0);
}

Test(harden_core, M3_kernel_errors_name_refs_by_their_spec_names)
{
    const char *want[] = {"refs[0] (input, VMEM f32) 'lhs'", "refs[1] (output, VMEM f32) 'out0'",
                          "refs[2] (scratch, VMEM f32) 'acc'", "refs[3] (scratch, VMEM f32) 'scratch1'"};
    for (int64_t which = 0; which < 4; which++) {
        th_io io = th_io_2d(8, 128);
        pl_call call = th_copy_call_2d(8, 128, 8, 128);
        call.kernel = named_oob_kernel;
        call.user = &which;
        call.in[0].name = "lhs";
        call.n_scratch = 2;
        call.scratch[0] = PLTPU_VMEM(PL_F32, 8, 128);
        call.scratch[0].name = "acc";
        call.scratch[1] = PLTPU_VMEM(PL_F32, 8, 128);
        pl_report rep;
        int rc = pl_pallas_call(&call, &io.a, &io.o, NULL, &rep);
        TH_EXPECT_ERROR(rc, rep, PL_EBOUNDS, want[which], "pl_get index (8, 0)", "rule V2");
        th_io_free(&io);
    }
}

/* A what-if chip the timing cannot run on is an error about the chip, not
 * "out of host memory". */
Test(harden_core, timing_on_a_chip_without_bandwidth_names_the_chip, .timeout = 30)
{
    pl_chip chip = *pl_chip_find("v5e");
    snprintf(chip.name, sizeof chip.name, "nobw");
    chip.hbm_bw = 0;
    pl_report rep;
    int rc = one_byte_steps(16, NULL, &chip, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "nobw", "hbm");
}

/* A (128, 128) block dotted with itself into the output block. */
static void self_dot_kernel(pl_ctx *c, pl_ref *refs) { pl_dot(c, refs[1], refs[0], refs[0], 0); }

/* A what-if chip's MXU width is what dots pad to: 0 made every dot's time
 * NaN (0 / 0) and a negative one made it 0, and the call still succeeded
 * with a made-up time. Now an error naming the chip and the figure. */
Test(harden_core, a_chip_without_an_mxu_width_names_the_figure, .timeout = 30)
{
    const int width[] = {0, -128};
    for (int f = 0; f < 2; f++) {
        pl_chip chip = *pl_chip_find("v5e");
        snprintf(chip.name, sizeof chip.name, "narrow%d", f);
        chip.mxu_width = width[f];
        pl_call call = th_copy_call_2d(256, 128, 128, 128);
        call.kernel = self_dot_kernel;
        pl_array in = PL_ARRAY(NULL, PL_F32, 256, 128), out = PL_ARRAY(NULL, PL_F32, 256, 128);
        pl_options opt = {.chip_spec = &chip, .cost_only = 1};
        pl_report rep;
        int rc = pl_pallas_call(&call, &in, &out, &opt, &rep);
        TH_EXPECT_ERROR(rc, rep, PL_EINVAL, chip.name, "mxu_width");
    }
}

/* The same call on chips whose compute rates are zero, negative, NaN or
 * infinite: each an error naming the chip and the figure. Before, every one
 * but a zero bf16_flops succeeded with a negative, NaN or zero compute time. */
Test(harden_core, a_chip_with_a_bad_rate_names_the_figure, .timeout = 30)
{
    const char *figure[] = {"bf16_flops", "vpu_flops", "f32_fraction", "f32_fraction", "vpu_flops", "bf16_flops",
                            "int8_ops", "clock_hz"};
    for (int f = 0; f < 8; f++) {
        pl_chip chip = *pl_chip_find("v5e");
        snprintf(chip.name, sizeof chip.name, "rate%d", f);
        switch (f) {
        case 0: chip.bf16_flops = -1e12; break;
        case 1: chip.vpu_flops = -1e12; break;
        case 2: chip.f32_fraction = -1; break;
        case 3: chip.f32_fraction = NAN; break;
        case 4: chip.vpu_flops = NAN; break;
        case 5: chip.bf16_flops = INFINITY; break;
        case 6: chip.int8_ops = -1; break;
        default: chip.clock_hz = NAN; break;
        }
        pl_call call = th_copy_call_2d(256, 128, 128, 128);
        call.kernel = self_dot_kernel;
        pl_array in = PL_ARRAY(NULL, PL_F32, 256, 128), out = PL_ARRAY(NULL, PL_F32, 256, 128);
        pl_options opt = {.chip_spec = &chip, .cost_only = 1};
        pl_report rep;
        int rc = pl_pallas_call(&call, &in, &out, &opt, &rep);
        TH_EXPECT_ERROR(rc, rep, PL_EINVAL, chip.name, figure[f]);
    }
}
