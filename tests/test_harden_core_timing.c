/* tests/test_harden_core_timing.c: issue 8, the simulator's core under
 * extreme but legal input: the timing model must always terminate (time
 * advances, P6, P8, P9), and a what-if chip whose figures the timing cannot
 * run on is an error naming the chip and the figure. Every test here failed
 * before its fix. */
#include <math.h>
#include <stdio.h>

#include "../kernel/pltpu.h"
#include "../sim/call/exec.h"
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
    /* the DMA engine ends a copy within a millionth of its bytes (floating-point residue, sim/timing/timing.c), so
       the HBM floor holds to that; ops timed at the VMEM bandwidth end steps mid-copy and show it */
    double floor_hbm = (double)r->hbm_bytes / chip->hbm_bw;
    cr_assert(r->time_s >= floor_hbm * (1 - 1e-6), "%s: %g s < %lld bytes at %g B/s", what, r->time_s,
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

/* A what-if chip whose step overhead is NaN, infinite or negative: an error
 * naming the figure. The cost estimate converted overhead / cycle to an
 * integer before the timing refused the chip, undefined for NaN (UBSan under
 * make check-asan; make fuzz found it, FINDINGS F7). */
Test(harden_core, a_chip_with_a_bad_step_overhead_names_the_figure, .timeout = 30)
{
    const double bad[] = {NAN, INFINITY, -1e-6};
    for (int f = 0; f < 3; f++) {
        pl_chip chip = *pl_chip_find("v5e");
        snprintf(chip.name, sizeof chip.name, "overhead%d", f);
        chip.step_overhead_s = bad[f];
        pl_report rep;
        int rc = one_byte_steps(4, NULL, &chip, &rep);
        TH_EXPECT_ERROR(rc, rep, PL_EINVAL, chip.name, "step_overhead_s");
    }
}
