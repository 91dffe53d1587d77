/* tests/test_timing_model.c: the timing model against closed-form
 * expectations (rules P6, P8, P9 and the chip figures): the regimes a call
 * can be bound by, buffering, megacore and shared HBM. */
#include "../examples/kernels/matmul.h"
#include "../sim/timing/timing.h"
#include "helpers.h"
#include "test_timing_helpers.h"

/* ---- regimes ------------------------------------------------------------------ */

/* Large tiles on a large matmul: the MXU is the bottleneck, and the time is
 * the FLOPs over the peak, plus little. */
Test(timing, large_tiles_approach_flops_over_peak)
{
    const pl_chip *v5e = pl_chip_find("v5e");
    pl_report r = matmul_cost(8192, 8192, 8192, 1024, 1024, 1024, PL_BF16, "v5e", 0);
    double ideal = 2.0 * 8192 * 8192 * 8192 / v5e->bf16_flops;
    /* within 7%: 512 steps of fixed and descriptor cost (0.43 us each) and the MXU's fill and drain per dot
     * take about 5% of the peak time on v5e, as a real 1024-tiled matmul reaches 90-95% of peak */
    assert_near(r.time_s, ideal, 0.07, "8192^3 bf16 in 1024-tiles on v5e");
    cr_assert(r.time_s >= ideal, "nothing beats the peak: %g < %g", r.time_s, ideal);
    cr_assert_eq(r.bound, PL_BOUND_COMPUTE, "bound: %s", r.bound_msg);
    cr_assert_gt(r.peak_fraction, 0.9);
    cr_assert_leq(r.peak_fraction, 1.0);
}

/* The same on v6e: 256-wide MXUs, 918 TFLOP/s. f32 runs at 1/3 of bf16. */
Test(timing, f32_matmul_runs_at_a_third_of_bf16)
{
    pl_report b = matmul_cost(4096, 4096, 4096, 512, 512, 512, PL_BF16, "v6e", 0);
    pl_report f = matmul_cost(4096, 4096, 4096, 512, 512, 512, PL_F32, "v6e", 0);
    /* the MXU's fill and drain per dot (mxu_fill_cycles) and its first
     * latch (64 cycles at 1.75 GHz: 16 bf16 rows every 4 cycles, 8 f32 rows
     * every 2) are the same for both: 8^3 dots */
    double fills = 512 * (sim_mxu_fill_seconds(pl_chip_find("v6e")) + 64 / 1.75e9);
    assert_near(f.compute_s - fills, 3 * (b.compute_s - fills), 0.02, "f32 compute vs 3x bf16, fills apart");
}

/* Tiny blocks: each step moves a few KiB and computes nothing, so the fixed
 * per-step cost (P9) is the time. */
Test(timing, tiny_blocks_are_step_overhead_bound)
{
    const pl_chip *v5e = pl_chip_find("v5e");
    pl_report r = copy_cost(1000, 8, 128, "v5e");
    /* each step: its fixed cost, and the descriptor and the wait of its copy in and its write-back */
    double ideal = 1000 * (v5e->step_overhead_s + 4 * v5e->dma_issue_s) + v5e->prologue_s;
    assert_near(r.time_s, ideal, 0.05, "1000 steps of (8,128) copies");
    cr_assert_eq(r.bound, PL_BOUND_OVERHEAD, "bound: %s", r.bound_msg);
    cr_assert(strstr(r.bound_msg, "rule P9"), "%s", r.bound_msg);
}

/* Big blocks, no compute: the HBM bandwidth is the time. */
Test(timing, big_copies_are_hbm_bound)
{
    const pl_chip *v5e = pl_chip_find("v5e");
    pl_report r = copy_cost(64, 512, 1024, "v5e");
    double bytes = 2.0 * 64 * 512 * 1024 * 4; /* in and out */
    cr_assert_eq((double)r.hbm_bytes, bytes);
    assert_near(r.time_s, bytes / v5e->hbm_bw, 0.05, "64 x 2 MiB in and out");
    cr_assert_eq(r.bound, PL_BOUND_HBM, "bound: %s", r.bound_msg);
    cr_assert(strstr(r.bound_msg, "HBM-bound"), "%s", r.bound_msg);
}

/* Padding (CHIPS.md): a dot of 100-wide operands costs as much as a
 * 128-wide one on a 128-wide MXU. */
Test(timing, mxu_pads_to_its_width)
{
    pl_report a = matmul_cost(1024, 100, 100, 1024, 100, 100, PL_BF16, "v5e", 0);
    pl_report b = matmul_cost(1024, 128, 128, 1024, 128, 128, PL_BF16, "v5e", 0);
    assert_near(a.mxu_s, b.mxu_s, 1e-9, "100-wide vs 128-wide");
    cr_assert_lt(a.mxu_flops, b.mxu_flops);
    assert_near(a.mxu_flops_padded, b.mxu_flops, 1e-9, "padded work");
}

/* Rule P6: with two buffers the next step's copies overlap this step's
 * compute; with one they cannot, and when copies and compute take about
 * as long (512-tiles of a bf16 matmul on v5e: ~1.3 us each) the time nearly
 * doubles. */
Test(timing, single_buffering_exposes_copies)
{
    mm_params p;
    pl_call call;
    mm_call(&call, &p, 2048, 2048, 2048, 512, 512, 512);
    pl_array args[2] = {PL_ARRAY(NULL, PL_BF16, 2048, 2048), PL_ARRAY(NULL, PL_BF16, 2048, 2048)};
    pl_array out = PL_ARRAY(NULL, PL_BF16, 2048, 2048);
    pl_options opt = {.cost_only = 1};
    pl_report two, one;
    cr_assert_eq(pl_pallas_call(&call, args, &out, &opt, &two), PL_OK, "%s", two.error);
    call.in[0].buffers = call.in[1].buffers = 1;
    cr_assert_eq(pl_pallas_call(&call, args, &out, &opt, &one), PL_OK, "%s", one.error);
    cr_assert_gt(one.time_s, 1.5 * two.time_s, "Buffered(1) %g vs Buffered(2) %g", one.time_s, two.time_s);
    cr_assert_gt(one.dma_exposed_s, 5 * two.dma_exposed_s, "exposed %g vs %g", one.dma_exposed_s,
                 two.dma_exposed_s);
    cr_assert_eq(one.compute_s, two.compute_s);
}

/* The time splits into compute + exposed DMA + overhead on one core. */
Test(timing, time_is_compute_plus_exposed_plus_overhead)
{
    pl_report r = matmul_cost(2048, 2048, 2048, 256, 512, 256, PL_F32, "v5e", 0);
    assert_near(r.compute_s + r.dma_exposed_s + r.overhead_s, r.time_s, 1e-9, "sum of parts");
    cr_assert_eq(r.cores, 1);
}

/* G4: on a megacore chip (v5p) the first parallel axis is split over two
 * TensorCores; a compute-bound matmul then takes about half as long as with
 * every axis arbitrary, which keeps it on one core (G3). */
Test(timing, megacore_splits_the_first_parallel_axis)
{
    mm_params p;
    pl_call call;
    mm_call(&call, &p, 4096, 4096, 4096, 512, 512, 512);
    pl_array args[2] = {PL_ARRAY(NULL, PL_BF16, 4096, 4096), PL_ARRAY(NULL, PL_BF16, 4096, 4096)};
    pl_array out = PL_ARRAY(NULL, PL_BF16, 4096, 4096);
    pl_options opt = {.chip = "v5p", .cost_only = 1};
    pl_report two, one;
    cr_assert_eq(pl_pallas_call(&call, args, &out, &opt, &two), PL_OK, "%s", two.error);
    call.semantics[0] = call.semantics[1] = PL_ARBITRARY;
    cr_assert_eq(pl_pallas_call(&call, args, &out, &opt, &one), PL_OK, "%s", one.error);
    cr_assert_eq(two.cores, 2);
    cr_assert_eq(one.cores, 1);
    cr_assert_eq(two.steps, one.steps, "the same grid points run, split over cores");
    assert_near(two.compute_s, one.compute_s, 1e-9, "compute is summed over cores");
    assert_near(two.time_s, one.time_s / 2, 0.1, "two cores vs one");
    /* on a single-core chip the marking changes nothing (G3) */
    opt.chip = "v5e";
    cr_assert_eq(pl_pallas_call(&call, args, &out, &opt, &one), PL_OK);
    call.semantics[0] = call.semantics[1] = PL_PARALLEL;
    cr_assert_eq(pl_pallas_call(&call, args, &out, &opt, &two), PL_OK);
    cr_assert_eq(one.time_s, two.time_s);
}

/* Results never depend on the chip; timing never on the data: a real run
 * and a cost-only run predict the same time. */
Test(timing, cost_only_predicts_the_same_time_as_a_real_run)
{
    int64_t m = 256, n = 384, k = 300;
    float *a = th_f32_seq(m * k), *b = th_f32_seq(k * n), *c5 = th_f32_fill(m * n, 0), *c6 = th_f32_fill(m * n, 0);
    mm_params p;
    pl_call call;
    mm_call(&call, &p, m, n, k, 128, 128, 128);
    pl_array args[2] = {PL_ARRAY(a, PL_F32, m, k), PL_ARRAY(b, PL_F32, k, n)};
    pl_array o5 = PL_ARRAY(c5, PL_F32, m, n), o6 = PL_ARRAY(c6, PL_F32, m, n);
    pl_options v5e = {.chip = "v5e"}, v6e = {.chip = "v6e"}, cost = {.chip = "v5e", .cost_only = 1};
    pl_report r5, r6, rc;
    cr_assert_eq(pl_pallas_call(&call, args, &o5, &v5e, &r5), PL_OK);
    cr_assert_eq(pl_pallas_call(&call, args, &o6, &v6e, &r6), PL_OK);
    cr_assert_eq(th_f32_diff(c5, c6, m * n), 0, "results differ between chips");
    pl_array none[2] = {PL_ARRAY(NULL, PL_F32, m, k), PL_ARRAY(NULL, PL_F32, k, n)};
    pl_array onone = PL_ARRAY(NULL, PL_F32, m, n);
    cr_assert_eq(pl_pallas_call(&call, none, &onone, &cost, &rc), PL_OK, "%s", rc.error);
    cr_assert_eq(rc.time_s, r5.time_s);
    cr_assert_eq(rc.hbm_bytes, r5.hbm_bytes);
    cr_assert_neq(r5.time_s, r6.time_s);
    free(a), free(b), free(c5), free(c6);
}

/* Two TensorCores (megacore) share one HBM: two HBM-bound timelines take
 * twice as long as one; two compute-bound ones take as long as one. */
static void fill_line(sim_coreline *cl, int64_t steps, int64_t bytes, double compute)
{
    memset(cl, 0, sizeof *cl);
    cl->n_ops = 2;
    cl->op[0].buffers = cl->op[1].buffers = 2;
    cl->op[1].is_out = 1;
    for (int64_t s = 0; s < steps; s++) {
        cr_assert_eq(sim_opline_push(&cl->op[0], s, bytes, (int)(s % 2), NULL), 0);
        cr_assert_eq(sim_opline_push(&cl->op[1], s, bytes, (int)(s % 2), NULL), 0);
        cr_assert_eq(sim_coreline_step(cl, compute), 0);
    }
}

Test(timing, two_cores_share_hbm_bandwidth)
{
    const pl_chip *v5p = pl_chip_find("v5p");
    sim_coreline lines[2];
    sim_time_result one, two;
    fill_line(&lines[0], 100, 4 << 20, 1e-9);
    cr_assert_eq(sim_time_run(lines, 1, v5p, &one), 0);
    fill_line(&lines[1], 100, 4 << 20, 1e-9);
    cr_assert_eq(sim_time_run(lines, 2, v5p, &two), 0);
    assert_near(two.total_s, 2 * one.total_s, 0.03, "two HBM-bound cores");
    sim_coreline_free(&lines[0]);
    sim_coreline_free(&lines[1]);

    fill_line(&lines[0], 100, 4096, 50e-6);
    cr_assert_eq(sim_time_run(lines, 1, v5p, &one), 0);
    fill_line(&lines[1], 100, 4096, 50e-6);
    cr_assert_eq(sim_time_run(lines, 2, v5p, &two), 0);
    assert_near(two.total_s, one.total_s, 0.01, "two compute-bound cores");
    assert_near(two.compute_s, 2 * one.compute_s, 1e-9, "compute summed over cores");
    sim_coreline_free(&lines[0]);
    sim_coreline_free(&lines[1]);
}
