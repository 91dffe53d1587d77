/* tests/test_emit_buffered.c: pl_block_spec.buffers inside pltpu_emit_pipeline
 * (issue 15, rules P6 and K3), as Pallas's pl.Buffered(n) in emit_pipeline:
 * n VMEM slots per operand; with n >= 3 an input's copies run ahead into
 * every free slot (lookahead, up to n - 1 distinct future blocks) and an
 * output's write-backs stay in flight while the next n - 1 blocks compute;
 * Buffered(1) overlaps nothing. Data stays exact for any n, the run_scoped
 * VMEM is n slots, and a count outside 0..8 is refused naming the operand. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/tilesim_kernel.h"
#include "helpers.h"

/* ---- one nested pipeline inside a one-step pallas_call over ANY refs ----------- */

typedef struct buf_case {
    pltpu_pipeline pipe;
    pltpu_pipeline_body body;
} buf_case;

static void buf_kernel(pl_ctx *c, pl_ref *refs)
{
    buf_case *k = pl_kernel_user(c);
    pltpu_emit_pipeline(c, &k->pipe, &refs[0], &refs[k->pipe.n_in], k->body, k);
}

static int run(buf_case *k, const pl_array *in, pl_array *out, const pl_options *opt, pl_report *rep)
{
    pl_call call = {.name = "emit_buffered", .kernel = buf_kernel, .user = k, .n_in = 1,
                    .in = {{.space = PL_ANY}}, .n_out = 1, .out = {{.space = PL_ANY}}};
    return pl_pallas_call(&call, in, out, opt, rep);
}

static void copy_body(pl_ctx *c, pl_ref *refs, const int64_t *idx, void *user)
{
    (void)idx, (void)user;
    pl_copy(c, refs[1], refs[0]);
}

/* Both operands Buffered(n). */
static void set_buffers(buf_case *k, int n)
{
    k->pipe.in[0].buffers = n;
    k->pipe.out[0].buffers = n;
}

/* ---- 1. data: exact for n = 1..4 ------------------------------------------------- */

enum { RR = 200, RC = 384, RBR = 64, RBC = 128, TAIL = 1024 };

Test(emit_buffered, K3_P6_ragged_blocks_copy_exactly_for_1_to_4_buffers_B6)
{
    for (int n = 1; n <= 4; n++) {
        float *in = th_f32_seq(RR * RC), *out = th_f32_fill(RR * RC + TAIL, TH_SENTINEL);
        pl_array a = PL_ARRAY(in, PL_F32, RR, RC), o = PL_ARRAY(out, PL_F32, RR, RC);
        buf_case k = {.pipe = {.grid_rank = 2, .grid = {4, 3}, .n_in = 1, .n_out = 1, /* cdiv(200, 64) = 4 */
                               .in = {PL_BLOCK(PL_MAP(0, 1), RBR, RBC)}, .out = {PL_BLOCK(PL_MAP(0, 1), RBR, RBC)}},
                      .body = copy_body};
        set_buffers(&k, n);
        pl_report rep;
        th_expect_ok(run(&k, &a, &o, NULL, &rep), &rep);
        cr_assert_eq(th_f32_diff(in, out, RR * RC), 0, "Buffered(%d): the output must equal the input", n);
        for (int64_t i = 0; i < TAIL; i++)
            cr_assert_eq(out[RR * RC + i], TH_SENTINEL, "Buffered(%d): element %lld past the output was written",
                         n, (long long)i);
        cr_assert_eq(rep.dma_copies, 2 * 4 * 3, "Buffered(%d): one copy in and one out per block: %lld", n,
                     (long long)rep.dma_copies);
        cr_assert_eq(rep.dma_bytes, 2 * (int64_t)RR * RC * 4, "Buffered(%d): only the bytes inside the ref", n);
        /* n slots of each operand's 64 x 128 f32 block (K4) */
        cr_assert_eq(rep.scoped_peak_bytes, 2 * n * (int64_t)RBR * RBC * 4, "Buffered(%d): scoped peak %lld", n,
                     (long long)rep.scoped_peak_bytes);
        free(in);
        free(out);
    }
}

/* Grid (i, r, k) = (4, 3, 2): the input block (i, k) comes back for every r
 * (0, 1, 0, 1, 0, 1); the output block (i, 0) accumulates all six. */
enum { VR = 64, VC = 256, VB = 16, VBC = 128, REPS = 3 };

static void accumulate_body(pl_ctx *c, pl_ref *refs, const int64_t *idx, void *user)
{
    (void)user;
    if (idx[1] == 0 && idx[2] == 0) pl_copy(c, refs[1], refs[0]);
    else pl_add(c, refs[1], refs[1], refs[0]);
}

Test(emit_buffered, K3_P6_a_revisited_input_block_is_fetched_again_exactly_for_1_to_4_buffers_P2)
{
    float *in = th_f32_seq(VR * VC), want[VR * VBC];
    for (int64_t r = 0; r < VR; r++)
        for (int64_t j = 0; j < VBC; j++) { /* the body's order: block 0, + block 1, + block 0, ... */
            float acc = in[r * VC + j];
            for (int s = 1; s < 2 * REPS; s++) acc += in[r * VC + (s % 2) * VBC + j];
            want[r * VBC + j] = acc;
        }
    for (int n = 1; n <= 4; n++) {
        float *out = th_f32_fill(VR * VBC, TH_SENTINEL);
        pl_array a = PL_ARRAY(in, PL_F32, VR, VC), o = PL_ARRAY(out, PL_F32, VR, VBC);
        buf_case k = {.pipe = {.grid_rank = 3, .grid = {VR / VB, REPS, 2}, .n_in = 1, .n_out = 1,
                               .in = {PL_BLOCK(PL_MAP(0, 2), VB, VBC)},
                               .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), VB, VBC)}},
                      .body = accumulate_body};
        set_buffers(&k, n);
        pl_report rep;
        th_expect_ok(run(&k, &a, &o, NULL, &rep), &rep);
        cr_assert_eq(th_f32_diff(want, out, VR * VBC), 0, "Buffered(%d): the sums must be exact", n);
        /* every inner step changes the input block: 4 x 6 copies in, 4 write-backs */
        cr_assert_eq(rep.dma_copies, 4 * 2 * REPS + 4, "Buffered(%d): copies %lld", n, (long long)rep.dma_copies);
        cr_assert_eq(rep.scoped_peak_bytes, 2 * n * (int64_t)VB * VBC * 4, "Buffered(%d): scoped peak %lld", n,
                     (long long)rep.scoped_peak_bytes);
        free(out);
    }
    free(in);
}

/* ---- 2. timing: a copy-latency-bound pipeline --------------------------------------- */

/* STEPS small (8, 128) f32 blocks, each copied in once, into one output block
 * written back once, on a v5e whose DMAs take LAT_US to their first byte. */
enum { STEPS = 33, LB = 8, LC = 128 };
#define LAT_S 50e-6

static void latency_run_out(int n, int lat, int moving_out, pl_report *rep)
{
    pl_chip chip = *pl_chip_find("v5e");
    if (lat) chip.dma_latency_s = LAT_S;
    pl_options opt = {.chip_spec = &chip, .cost_only = 1};
    pl_array a = PL_ARRAY(NULL, PL_F32, STEPS * LB, LC), o = PL_ARRAY(NULL, PL_F32, moving_out ? STEPS * LB : LB, LC);
    buf_case k = {.pipe = {.grid_rank = 1, .grid = {STEPS}, .n_in = 1, .n_out = 1,
                           .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), LB, LC)},
                           .out = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), LB, LC)}},
                  .body = copy_body};
    if (moving_out) k.pipe.out[0] = PL_BLOCK(PL_MAP(0, PL_ZERO), LB, LC); /* one write-back per step */
    set_buffers(&k, n);
    th_expect_ok(run(&k, &a, &o, &opt, rep), rep);
    int64_t want = moving_out ? 2 * STEPS : STEPS + 1;
    cr_assert_eq(rep->dma_copies, want, "Buffered(%d): copies %lld", n, (long long)rep->dma_copies);
}

static void latency_run(int n, int lat, pl_report *rep) { latency_run_out(n, lat, 0, rep); }

Test(emit_buffered, K3_P6_more_buffers_hide_more_copy_latency_but_never_more_than_n_minus_1_ahead)
{
    double t[6];
    for (int n = 1; n <= 5; n++) {
        pl_report rep;
        latency_run(n, 1, &rep);
        t[n] = rep.time_s;
        cr_log_info("Buffered(%d): %g us", n, t[n] * 1e6);
        if (n > 1) cr_assert(t[n] < t[n - 1] * 0.9, "Buffered(%d) %g us, not faster than Buffered(%d) %g us", n,
                             t[n] * 1e6, n - 1, t[n - 1] * 1e6);
        if (n < 2) continue;
        /* copies run at most n - 1 blocks ahead of the one in use: block s + n - 1 starts at step s, once
         * block s - 1 has landed, so at most n copies fly at once and block k lands no sooner than
         * (k / n + 1) latencies after the start; the output's write-back adds one more. One more copy in
         * flight would beat this floor by a fifth or more, one fewer would miss it by as much. */
        double floor_s = (double)((STEPS - 1) / n + 2) * LAT_S;
        cr_assert(t[n] >= floor_s, "Buffered(%d) %g us: faster than %d copies in flight allow (%g us)", n,
                  t[n] * 1e6, n, floor_s * 1e6);
        cr_assert(t[n] < floor_s * 1.05, "Buffered(%d) %g us: the copies should run %d ahead (%g us)", n,
                  t[n] * 1e6, n - 1, floor_s * 1e6);
    }
}

Test(emit_buffered, K3_P6_one_buffer_overlaps_nothing_its_time_is_the_sum_of_its_parts)
{
    for (int lat = 0; lat < 4; lat++) { /* the chip's latency or 50 us; one output block or one per step */
        pl_report one, two;
        latency_run_out(1, lat & 1, lat >> 1, &one);
        latency_run_out(2, lat & 1, lat >> 1, &two);
        const pl_chip *v5e = pl_chip_find("v5e");
        double l = lat & 1 ? LAT_S : v5e->dma_latency_s;
        /* each copy's descriptor (dma_issue_s) is written on the core while the copy flies */
        double serial = (double)one.dma_copies * (l - v5e->dma_issue_s) + (double)one.dma_bytes / v5e->hbm_bw;
        cr_assert(fabs(one.dma_exposed_s - serial) <= 1e-6 * serial,
                  "Buffered(1): every copy is waited whole: exposed %g us, copies in series %g us",
                  one.dma_exposed_s * 1e6, serial * 1e6);
        cr_assert(fabs(one.compute_s + one.overhead_s + one.dma_exposed_s - one.time_s) <= 1e-9 * one.time_s,
                  "Buffered(1): time %g us is compute %g + overhead %g + copies %g", one.time_s * 1e6,
                  one.compute_s * 1e6, one.overhead_s * 1e6, one.dma_exposed_s * 1e6);
        cr_assert(two.dma_exposed_s < one.dma_exposed_s, "Buffered(2) hides some copy time: %g vs %g us",
                  two.dma_exposed_s * 1e6, one.dma_exposed_s * 1e6);
    }
}

/* ---- 3. VMEM, the default and the refusals ---------------------------------------- */

Test(emit_buffered, K3_K4_P6_run_scoped_vmem_is_n_slots_of_each_block)
{
    int64_t in_blk = LB * LC * 4, out_blk = LB * LC * 4;
    for (int n = 1; n <= 8; n++) {
        pl_report rep;
        latency_run(n, 0, &rep);
        cr_assert_eq(rep.scoped_peak_bytes, n * (in_blk + out_blk), "Buffered(%d): scoped peak %lld, want %lld",
                     n, (long long)rep.scoped_peak_bytes, (long long)(n * (in_blk + out_blk)));
    }
}

Test(emit_buffered, K3_P6_zero_buffers_is_the_default_two)
{
    pl_report def, two;
    latency_run(0, 1, &def);
    latency_run(2, 1, &two);
    cr_assert_eq(def.scoped_peak_bytes, two.scoped_peak_bytes);
    cr_assert_eq(def.scoped_peak_bytes, 2 * 2 * LB * LC * 4);
    cr_assert(def.time_s == two.time_s, "default %g us, Buffered(2) %g us", def.time_s * 1e6, two.time_s * 1e6);
}

static void expect_refused(int in_n, int out_n, const char *who, const char *count)
{
    float *in = th_f32_seq(STEPS * LB * LC), *out = th_f32_fill(LB * LC, TH_SENTINEL);
    pl_array a = PL_ARRAY(in, PL_F32, STEPS * LB, LC), o = PL_ARRAY(out, PL_F32, LB, LC);
    buf_case k = {.pipe = {.grid_rank = 1, .grid = {STEPS}, .n_in = 1, .n_out = 1,
                           .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), LB, LC)},
                           .out = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), LB, LC)}},
                  .body = copy_body};
    k.pipe.in[0].buffers = in_n;
    k.pipe.out[0].buffers = out_n;
    pl_report rep;
    int rc = run(&k, &a, &o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "pltpu_emit_pipeline", who, count, "buffers", "P6", "K3");
    /* the output is a fresh buffer (poisoned, V1) that the refused pipeline never wrote */
    for (int64_t i = 0; i < LB * LC; i++) cr_assert(isnan(out[i]), "the refused pipeline wrote out[%lld]", (long long)i);
    free(in);
    free(out);
}

Test(emit_buffered, K3_P6_a_buffer_count_past_8_or_negative_is_refused_naming_the_operand)
{
    expect_refused(9, 0, "in_specs[0]", "9");
    expect_refused(2, 9, "out_specs[0]", "9");
    expect_refused(-1, 2, "in_specs[0]", "-1");
    expect_refused(1000000, 2, "in_specs[0]", "1000000");
}
