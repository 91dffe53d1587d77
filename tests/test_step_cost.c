/* tests/test_step_cost.c: what a pipeline step costs beyond its fixed
 * overhead (issue 22): the DMA's efficiency on short strided rows, the
 * descriptor issue and semaphore wait of each copy, the MXU's fill and
 * drain per pl_dot, and the shift of the matmul ranking they cause. */
#include "../kernel/pltpu.h"
#include "../sim/timing/timing.h"
#include "helpers.h"
#include "test_timing_helpers.h"

/* A bf16 copy of an (m, n) array in (2048, 128) blocks. */
static pl_report bf16_copy(int64_t m, int64_t n)
{
    pl_call call = th_copy_call_2d(m, n, 2048, 128);
    pl_array in = PL_ARRAY(NULL, PL_BF16, m, n), out = PL_ARRAY(NULL, PL_BF16, m, n);
    pl_options opt = {.chip = "v5e", .cost_only = 1};
    pl_report r;
    th_expect_ok(pl_pallas_call(&call, &in, &out, &opt, &r), &r);
    return r;
}

/* The same 16 blocks of 512 KiB in and out: of a (32768, 128) array (whole
 * rows: one contiguous run per block) or of a (2048, 2048) one (256-byte
 * rows). XLA lays the array out in HBM in (8, 128) tiles, so the block is
 * 2 KiB runs of whole tiles, not 256-byte rows: the same bandwidth (the
 * hardware autotuner's own choices include (37888, 128) int8 blocks,
 * 128-byte rows, which a per-row cost would make 4x slower). */
Test(step_cost, a_block_of_whole_tiles_moves_at_full_bandwidth_though_its_rows_are_256_bytes)
{
    pl_report flat = bf16_copy(32768, 128), rows = bf16_copy(2048, 2048);
    cr_assert_eq(rows.hbm_bytes, flat.hbm_bytes);
    cr_assert_eq(rows.steps, flat.steps);
    cr_assert_lt(rows.time_s, 1.01 * flat.time_s, "tiled %g us, contiguous %g us", rows.time_s * 1e6,
                 flat.time_s * 1e6);
}

static void add_kernel(pl_ctx *c, pl_ref *refs) { pl_add(c, refs[2], refs[0], refs[1]); }

/* 1000 tiny steps: a copy issues and waits for one input, an add for two;
 * the bytes and the VPU work are negligible next to the step's cost. */
Test(step_cost, a_step_that_issues_more_copies_costs_more)
{
    const pl_chip *v5e = pl_chip_find("v5e");
    pl_report one = copy_cost(1000, 8, 128, "v5e");
    pl_call call = th_copy_call_2d(8000, 128, 8, 128);
    call.kernel = add_kernel;
    call.n_in = 2;
    call.in[1] = call.in[0];
    pl_array in[2] = {PL_ARRAY(NULL, PL_F32, 8000, 128), PL_ARRAY(NULL, PL_F32, 8000, 128)};
    pl_array out = PL_ARRAY(NULL, PL_F32, 8000, 128);
    pl_options opt = {.chip = "v5e", .cost_only = 1};
    pl_report two;
    th_expect_ok(pl_pallas_call(&call, in, &out, &opt, &two), &two);
    /* one more descriptor and one more semaphore wait per step */
    double extra = 1000 * 2 * v5e->dma_issue_s;
    cr_assert_gt(v5e->dma_issue_s, 0);
    assert_near(two.time_s - one.time_s, extra, 0.25, "the add's second input, 1000 steps");
}

/* 64 row copies from HBM into the output block on one DMA semaphore, then
 * either a wait for each or one wait whose descriptor covers them all
 * (JAX's paged attention waits so): a semaphore wait reads the semaphore
 * once however many copies it covers, so the second saves 63 waits. */
static void rows_kernel(pl_ctx *c, pl_ref *refs)
{
    int one = *(const int *)pl_kernel_user(c);
    pl_ref sem = pl_at(c, refs[2], 0);
    pltpu_copy cp[64];
    for (int r = 0; r < 64; r++) {
        cp[r] = pltpu_async_copy(c, pl_ds(c, refs[0], 0, r, 1), pl_ds(c, refs[1], 0, r, 1), sem);
        pltpu_copy_start(c, &cp[r]);
    }
    if (one) {
        pltpu_copy all = pltpu_async_copy(c, refs[0], refs[1], sem);
        pltpu_copy_wait(c, &all);
    } else
        for (int r = 0; r < 64; r++) pltpu_copy_wait(c, &cp[r]);
}

static double rows_overhead(int one)
{
    pl_call call = {.name = "rows", .kernel = rows_kernel, .user = &one, .n_in = 1, .in = {{.space = PL_ANY}},
                    .n_out = 1, .out = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 64, 128)},
                    .n_scratch = 1, .scratch = {PLTPU_SEMAPHORE_DMA(1)}};
    pl_array in = PL_ARRAY(NULL, PL_F32, 64, 128), out = PL_ARRAY(NULL, PL_F32, 64, 128);
    pl_options opt = {.chip = "v5e", .cost_only = 1};
    pl_report r;
    th_expect_ok(pl_pallas_call(&call, &in, &out, &opt, &r), &r);
    cr_assert_eq(r.dma_copies, 64);
    return r.overhead_s;
}

Test(step_cost, one_wait_for_many_copies_reads_the_semaphore_once)
{
    const pl_chip *v5e = pl_chip_find("v5e");
    double each = rows_overhead(0), once = rows_overhead(1); /* the core's overhead: some waits overlap the copies */
    assert_near(each - once, 63 * v5e->dma_issue_s, 0.05, "63 semaphore waits fewer");
}

static void dots_kernel(pl_ctx *c, pl_ref *refs)
{
    int *n = pl_kernel_user(c);
    for (int i = 0; i < *n; i++) pl_dot(c, refs[2], refs[0], refs[1], PL_DOT_ACC);
}

static double dots_mxu_s(int n)
{
    pl_call call = {.name = "dots", .kernel = dots_kernel, .user = &n, .grid_rank = 1, .grid = {1},
                    .n_in = 2, .in = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 8, 128), PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 128, 128)},
                    .n_out = 1, .out = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 8, 128)}};
    pl_array in[2] = {PL_ARRAY(NULL, PL_BF16, 8, 128), PL_ARRAY(NULL, PL_BF16, 128, 128)};
    pl_array out = PL_ARRAY(NULL, PL_F32, 8, 128);
    pl_options opt = {.chip = "v5e", .cost_only = 1};
    pl_report r;
    th_expect_ok(pl_pallas_call(&call, in, &out, &opt, &r), &r);
    return r.mxu_s;
}

/* An (8, 128) @ (128, 128) bf16 dot on v5e streams one vmatmul of 16 rows
 * (a register of bf16 rows: m pads to 16) through the 128-wide array: 2.7 ns
 * of MXU work. Each one also latches its weights (one register of 16 rows
 * every 4 cycles: 32 cycles) and fills and drains the array (128 cycles),
 * at 1.5 GHz (OpenXLA's cost model). */
Test(step_cost, an_extra_small_dot_costs_its_fill_and_drain)
{
    const pl_chip *v5e = pl_chip_find("v5e");
    double work = 2.0 * 16 * 128 * 128 / v5e->bf16_flops, latch = 32 / 1.5e9, fill = 128 / 1.5e9;
    assert_near(sim_mxu_fill_seconds(v5e), fill, 1e-9, "v5e fill");
    assert_near(dots_mxu_s(2) - dots_mxu_s(1), work + latch + fill, 0.02, "the second dot");
    /* v6e: OpenXLA's 192 cycles at 1.75 GHz */
    assert_near(sim_mxu_fill_seconds(pl_chip_find("v6e")), 192 / 1.75e9, 1e-9, "v6e fill");
}

/* matmul bf16 M=512 N=4096 K=4096 on v6e: the 8-step 512 x 2048 x 1024 tiling
 * now beats the 32-step 512 x 2048 x 256 one (it did not when a step cost
 * only its 0.35 us: 34.66 us against 34.89 us). */
Test(step_cost, the_matmul_ranking_shifts_to_fewer_larger_steps)
{
    pl_report many = matmul_cost(512, 4096, 4096, 512, 2048, 256, PL_BF16, "v6e", 0);
    pl_report few = matmul_cost(512, 4096, 4096, 512, 2048, 1024, PL_BF16, "v6e", 0);
    cr_assert_gt(many.steps, few.steps);
    cr_assert_lt(few.time_s, many.time_s, "8 steps %g us, 32 steps %g us", few.time_s * 1e6, many.time_s * 1e6);
}

/* The MXU streams m one register of rows at a time (32 rows of int8) and
 * loads each 256 x 256 tile of weights in 32 cycles (OpenXLA's Pallas
 * matmul cost model). An int8 dot of a few rows is bound by its weights:
 * 16 rows cost what 32 do, and 128 rows (4 vmatmuls of 8 cycles, one
 * latch's time) cost about as much again; 1024 rows are bound by their
 * FLOPs. */
static double int8_dot_s(int64_t m)
{
    kern_op op = {.kind = KERN_OP_DOT, .dtype = PL_I8, .m = m, .n = 2048, .k = 2048, .flops = 2.0 * m * 2048 * 2048};
    double padded;
    return sim_op_seconds(pl_chip_find("v6e"), &op, &padded);
}

Test(step_cost, a_dot_of_few_rows_is_bound_by_latching_its_weights)
{
    const pl_chip *v6e = pl_chip_find("v6e");
    double hz = 1.75e9, fill = 192 / hz, latch = 32 / hz, latches = 8 * 8, vmatmul = 8 / hz;
    /* 64 latches over 2 MXUs: the first whole, 31 more each waiting latch - vmatmul */
    double want32 = latches * vmatmul / 2 + latch + (latch - vmatmul) * (latches / 2 - 1) + fill;
    assert_near(int8_dot_s(32), want32, 0.01, "32 rows");
    assert_near(int8_dot_s(16), int8_dot_s(32), 1e-9, "16 rows pad to a register of 32");
    assert_near(int8_dot_s(128), latches * 4 * vmatmul / 2 + latch + fill, 0.01, "128 rows: vmatmuls cover the latches");
    cr_assert_lt(int8_dot_s(128), 1.1 * int8_dot_s(32), "4x the rows for about the same time");
    double flops_1024 = 2.0 * 1024 * 2048 * 2048 / v6e->int8_ops;
    assert_near(int8_dot_s(1024), flops_1024 + latch + fill, 0.01, "1024 rows: FLOP-bound");
}
