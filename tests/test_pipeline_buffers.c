/* tests/test_pipeline_buffers.c: buffer counts (P6), the whole array under
 * a constant map copied once (P7), the cost-only option, and the per-step
 * recorder (pl_options.on_step) against P2, P3 and P6.
 *
 * Each test is named after the rule of docs/PALLAS.md it checks. Kernels
 * never assert: they record what they saw into a host struct reached through
 * pl_kernel_user, and the test asserts after the call, so a failure names the
 * rule rather than a longjmp out of the simulator.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../kernel/pallas.h"
#include "../sim/tilesim.h"
#include "test_pipeline_helpers.h"

/* ---- P6: buffer counts ------------------------------------------------------- */

static void p6_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_add(c, refs[3], refs[0], refs[1]);
    pl_add(c, refs[3], refs[3], refs[2]);
}

Test(pipeline, P6_buffer_count_in_report)
{
    float *a = f32_iota(32 * 128), *b = f32_iota(32 * 128), *d = f32_iota(32 * 128), *o = f32_const(32 * 128, 0);
    pl_call call = {.kernel = p6_kernel, .grid_rank = 1, .grid = {4}, .n_in = 3,
                    .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128), PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128),
                           PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)},
                    .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)}};
    call.in[1].buffers = 1;
    call.in[2].buffers = 3;
    pl_array args[3] = {PL_ARRAY(a, PL_F32, 32, 128), PL_ARRAY(b, PL_F32, 32, 128), PL_ARRAY(d, PL_F32, 32, 128)};
    pl_array out = PL_ARRAY(o, PL_F32, 32, 128);
    pl_report rep;
    run_ok(&call, args, &out, NULL, &rep);
    cr_assert_eq(rep.op[0].buffers, 2, "default must be double-buffered, got %d", rep.op[0].buffers);
    cr_assert_eq(rep.op[1].buffers, 1);
    cr_assert_eq(rep.op[2].buffers, 3);
    cr_assert_eq(rep.op[3].buffers, 2);
    for (int i = 0; i < 4; i++) cr_assert_eq(rep.op[i].vmem_bytes, 8 * 128 * 4);
    cr_assert_eq(rep.vmem_bytes, (2 + 1 + 3 + 2) * 8 * 128 * 4, "vmem_bytes = %lld", (long long)rep.vmem_bytes);
    cr_assert_geq(rep.n_warnings, 1, "Buffered(3) must warn");
    cr_assert_not_null(strstr(rep.warnings, "P6"), "warnings: %s", rep.warnings);
    for (int e = 0; e < 32 * 128; e++) cr_assert_eq(o[e], 3.0f * (float)e, "o[%d] = %g", e, o[e]);
    free(a), free(b), free(d), free(o);
}

Test(pipeline, P6_default_buffers_do_not_warn)
{
    float *a = f32_iota(32 * 128), *o = f32_const(32 * 128, 0);
    pl_call call = {.kernel = p6_kernel, .grid_rank = 1, .grid = {4}, .n_in = 3,
                    .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128), PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128),
                           PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)},
                    .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)}};
    call.in[1].buffers = 2;
    call.in[2].buffers = 1;
    pl_array args[3] = {PL_ARRAY(a, PL_F32, 32, 128), PL_ARRAY(a, PL_F32, 32, 128), PL_ARRAY(a, PL_F32, 32, 128)};
    pl_array out = PL_ARRAY(o, PL_F32, 32, 128);
    pl_report rep;
    run_ok(&call, args, &out, NULL, &rep);
    cr_assert_eq(rep.n_warnings, 0, "warnings: %s", rep.warnings);
    cr_assert_eq(rep.vmem_bytes, (2 + 2 + 1 + 2) * 8 * 128 * 4);
    free(a), free(o);
}

/* ---- P7: whole array, constant map ------------------------------------------- */

static void p7_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_ref x = refs[0], w = refs[1], o = refs[2];
    if (pl_program_id(c, 0) == 0 && pl_program_id(c, 1) == 0) pl_fill(c, o, 0.0);
    pl_add(c, o, o, x);
    pl_add(c, o, o, w);
}

Test(pipeline, P7_whole_array_constant_map_copied_once)
{
    float *x = f32_iota(16 * 128), *w = f32_const(16 * 128, 1.0f), *o = f32_const(16 * 128, -1.0f);
    pl_call call = {.kernel = p7_kernel, .grid_rank = 2, .grid = {3, 4}, .n_in = 2,
                    .in = {{0}, /* B3: no block shape, no map */
                           PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 16, 128)},
                    .n_out = 1, .out = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 16, 128)}};
    pl_array args[2] = {PL_ARRAY(x, PL_F32, 16, 128), PL_ARRAY(w, PL_F32, 16, 128)};
    pl_array out = PL_ARRAY(o, PL_F32, 16, 128);
    pl_report rep;
    run_ok(&call, args, &out, NULL, &rep);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(rep.op[i].copies, 1, "%s: copies = %lld, want 1", rep.op[i].name, (long long)rep.op[i].copies);
        cr_assert_eq(rep.op[i].skipped, 11);
        cr_assert_eq(rep.op[i].buffers, 1, "%s: buffers = %d, want 1 (rule P7)", rep.op[i].name,
                     rep.op[i].buffers);
        cr_assert_eq(rep.op[i].bytes_in, 16 * 128 * 4);
    }
    cr_assert_eq(rep.op[2].writebacks, 1, "whole output: writebacks = %lld, want 1", (long long)rep.op[2].writebacks);
    cr_assert_eq(rep.op[2].buffers, 1);
    cr_assert_eq(rep.op[2].bytes_out, 16 * 128 * 4);
    cr_assert_eq(rep.vmem_bytes, 3 * 16 * 128 * 4, "vmem_bytes = %lld: whole blocks take one buffer each",
                 (long long)rep.vmem_bytes);
    for (int e = 0; e < 16 * 128; e++) cr_assert_eq(o[e], 12.0f * ((float)e + 1.0f), "o[%d] = %g", e, o[e]);
    free(x), free(w), free(o);
}

/* ---- cost-only ------------------------------------------------------------------ */

typedef struct cost_state {
    int64_t runs;
} cost_state;

static void cost_kernel(pl_ctx *c, pl_ref *refs)
{
    cost_state *u = pl_kernel_user(c);
    pl_ref x = refs[0], y = refs[1], o = refs[2], acc = refs[3];
    u->runs++;
    if (pl_program_id(c, 2) == 0) pl_fill(c, acc, 0.0);
    pl_dot(c, acc, x, y, PL_DOT_ACC);
    if (pl_program_id(c, 2) == pl_num_programs(c, 2) - 1) pl_copy(c, o, acc);
}

static void cost_run(int cost_only, float *a, float *b, float *o, pl_report *rep, cost_state *u)
{
    pl_call call = {.kernel = cost_kernel, .user = u, .grid_rank = 3, .grid = {2, 2, 3}, .n_in = 2,
                    .in = {PL_BLOCK(PL_MAP(0, 2), 8, 128), PL_BLOCK(PL_MAP(2, 1), 128, 128)}, .n_out = 1,
                    .out = {PL_BLOCK(PL_MAP(0, 1), 8, 128)}, .n_scratch = 1, .scratch = {PLTPU_VMEM(PL_F32, 8, 128)}};
    pl_array args[2] = {PL_ARRAY(a, PL_F32, 16, 384), PL_ARRAY(b, PL_F32, 384, 256)};
    pl_array out = PL_ARRAY(o, PL_F32, 16, 256);
    pl_options opt = {.cost_only = cost_only};
    run_ok(&call, args, &out, &opt, rep);
}

Test(pipeline, cost_only_counts_copies_and_leaves_output_untouched)
{
    float *a = f32_const(16 * 384, 0.5f), *b = f32_const(384 * 256, 0.25f);
    float *o_real = f32_const(16 * 256, 42.0f), *o_cost = f32_const(16 * 256, 42.0f);
    static cost_state ur, uc;
    pl_report real, cost;
    cost_run(0, a, b, o_real, &real, &ur);
    cost_run(1, a, b, o_cost, &cost, &uc);
    for (int e = 0; e < 16 * 256; e++) {
        cr_assert_eq(o_cost[e], 42.0f, "cost_only wrote output element %d (%g)", e, o_cost[e]);
        cr_assert_eq(o_real[e], 384 * 0.125f, "the real run computed o[%d] = %g", e, o_real[e]);
    }
    cr_assert_eq(uc.runs, 12, "cost_only must still walk the grid and run the kernel");
    cr_assert_eq(cost.steps, 12);
    cr_assert_eq(cost.op[0].copies, 12, "x copies = %lld", (long long)cost.op[0].copies);
    for (int i = 0; i < 3; i++) {
        cr_expect_eq(cost.op[i].copies, real.op[i].copies, "%s copies", cost.op[i].name);
        cr_expect_eq(cost.op[i].skipped, real.op[i].skipped, "%s skipped", cost.op[i].name);
        cr_expect_eq(cost.op[i].writebacks, real.op[i].writebacks, "%s writebacks", cost.op[i].name);
        cr_expect_eq(cost.op[i].bytes_in, real.op[i].bytes_in, "%s bytes_in", cost.op[i].name);
        cr_expect_eq(cost.op[i].bytes_out, real.op[i].bytes_out, "%s bytes_out", cost.op[i].name);
    }
    cr_assert_eq(cost.op[2].writebacks, 4);
    cr_assert_eq(cost.hbm_bytes, real.hbm_bytes);
    cr_assert_eq(cost.mxu_flops, real.mxu_flops);
    cr_assert_eq(cost.mxu_flops, 2.0 * 16 * 256 * 384);
    cr_assert_eq(cost.vpu_flops, real.vpu_flops);
    cr_assert_eq(cost.time_s, real.time_s, "cost_only time %g s, real run %g s", cost.time_s, real.time_s);
    free(a), free(b), free(o_real), free(o_cost);
}

Test(pipeline, cost_only_accepts_arrays_without_data)
{
    float *a = f32_const(16 * 384, 0.5f), *b = f32_const(384 * 256, 0.25f), *o = f32_const(16 * 256, 42.0f);
    static cost_state ur, un;
    pl_report real, nul;
    cost_run(1, a, b, o, &real, &ur);
    cost_run(1, NULL, NULL, NULL, &nul, &un);
    cr_assert_eq(un.runs, 12);
    for (int i = 0; i < 3; i++) {
        cr_expect_eq(nul.op[i].copies, real.op[i].copies);
        cr_expect_eq(nul.op[i].writebacks, real.op[i].writebacks);
        cr_expect_eq(nul.op[i].bytes_in, real.op[i].bytes_in);
        cr_expect_eq(nul.op[i].bytes_out, real.op[i].bytes_out);
    }
    cr_assert_eq(nul.mxu_flops, real.mxu_flops);
    /* without cost_only, NULL data is an error and nothing runs */
    static cost_state ue;
    pl_call call = {.kernel = cost_kernel, .user = &ue, .grid_rank = 3, .grid = {2, 2, 3}, .n_in = 2,
                    .in = {PL_BLOCK(PL_MAP(0, 2), 8, 128), PL_BLOCK(PL_MAP(2, 1), 128, 128)}, .n_out = 1,
                    .out = {PL_BLOCK(PL_MAP(0, 1), 8, 128)}, .n_scratch = 1, .scratch = {PLTPU_VMEM(PL_F32, 8, 128)}};
    pl_array args[2] = {PL_ARRAY(NULL, PL_F32, 16, 384), PL_ARRAY(NULL, PL_F32, 384, 256)};
    pl_array out = PL_ARRAY(NULL, PL_F32, 16, 256);
    pl_report rep;
    cr_assert_eq(pl_pallas_call(&call, args, &out, NULL, &rep), PL_EINVAL);
    cr_assert_eq(ue.runs, 0);
    free(a), free(b), free(o);
}

/* ---- the per-step recorder (pl_options.on_step) agrees with P2, P3, P6 -------- */

#define REC_STEPS 16
#define REC_OPS 4

typedef struct recorder {
    int calls, finals;
    int64_t step[REC_STEPS + 1];
    int64_t idx[REC_STEPS + 1][2];
    pl_step_action action[REC_STEPS + 1][REC_OPS];
    int slot[REC_STEPS + 1][REC_OPS];
    int wrote_back[REC_STEPS + 1][REC_OPS];
    int64_t block0[REC_STEPS + 1][REC_OPS], wb_block0[REC_STEPS + 1][REC_OPS];
} recorder;

static void record_step(const pl_step_info *info, void *user)
{
    recorder *r = user;
    int s = r->calls++;
    if (s > REC_STEPS) return;
    r->finals += info->final;
    r->step[s] = info->step;
    r->idx[s][0] = info->idx[0];
    r->idx[s][1] = info->idx[1];
    for (int i = 0; i < info->n_operands && i < REC_OPS; i++) {
        r->action[s][i] = info->op[i].action;
        r->slot[s][i] = info->op[i].slot;
        r->wrote_back[s][i] = info->op[i].wrote_back;
        r->block0[s][i] = info->op[i].block[0];
        r->wb_block0[s][i] = info->op[i].wb_block[0];
    }
}

static void rec_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_ref o = refs[3];
    if (pl_program_id(c, 1) == 0) pl_fill(c, o, 0.0);
    pl_add(c, o, o, refs[0]);
}

Test(pipeline, P2_P3_P6_step_recorder)
{
    /* grid (3, 4); in0 block (i, 0) double-buffered, in1 block (j, 0) with 3
     * buffers, in2 block (i, 0) single-buffered; out block (i, 0) */
    float *x = f32_iota(32 * 128), *o = f32_const(24 * 128, -1.0f);
    pl_call call = {.kernel = rec_kernel, .grid_rank = 2, .grid = {3, 4}, .n_in = 3,
                    .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128), PL_BLOCK(PL_MAP(1, PL_ZERO), 8, 128),
                           PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)},
                    .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)}};
    call.in[1].buffers = 3;
    call.in[2].buffers = 1;
    pl_array args[3] = {PL_ARRAY(x, PL_F32, 24, 128), PL_ARRAY(x, PL_F32, 32, 128), PL_ARRAY(x, PL_F32, 24, 128)};
    pl_array out = PL_ARRAY(o, PL_F32, 24, 128);
    static recorder r;
    pl_options opt = {.on_step = record_step, .on_step_user = &r};
    pl_report rep;
    run_ok(&call, args, &out, &opt, &rep);
    cr_assert_eq(r.calls, 13, "on_step ran %d times: want one per grid point and one final", r.calls);
    cr_assert_eq(r.finals, 1);
    int slot1 = -1;
    for (int s = 0; s < 12; s++) {
        int64_t i = s / 4, j = s % 4;
        cr_expect_eq(r.step[s], s);
        cr_expect(r.idx[s][0] == i && r.idx[s][1] == j, "step %d reported at (%lld, %lld)", s,
                  (long long)r.idx[s][0], (long long)r.idx[s][1]);
        /* in0: new block when j == 0, slots alternate (P6, two buffers) */
        cr_expect_eq(r.action[s][0], j == 0 ? PL_ACT_COPY : PL_ACT_SKIP, "step %d: in0 action %d", s, r.action[s][0]);
        cr_expect_eq(r.slot[s][0], (int)(i % 2), "step %d: in0 in slot %d, want %d", s, r.slot[s][0], (int)(i % 2));
        cr_expect_eq(r.block0[s][0], i);
        /* in1: block j changes every step, three slots in turn */
        cr_expect_eq(r.action[s][1], PL_ACT_COPY);
        slot1 = (slot1 + 1) % 3;
        cr_expect_eq(r.slot[s][1], slot1, "step %d: in1 in slot %d, want %d", s, r.slot[s][1], slot1);
        /* in2: one buffer */
        cr_expect_eq(r.slot[s][2], 0);
        /* out: NEW at j == 0, then KEEP; the previous block written back just before a NEW (P3) */
        cr_expect_eq(r.action[s][3], j == 0 ? PL_ACT_NEW : PL_ACT_KEEP, "step %d: out action %d", s,
                     r.action[s][3]);
        cr_expect_eq(r.wrote_back[s][3], j == 0 && i > 0, "step %d: out wrote_back %d", s, r.wrote_back[s][3]);
        if (j == 0 && i > 0) cr_expect_eq(r.wb_block0[s][3], i - 1);
    }
    cr_expect_eq(r.wrote_back[12][3], 1, "the last block must be written back after the last step");
    cr_expect_eq(r.wb_block0[12][3], 2);
    cr_expect_eq(rep.op[3].writebacks, 3);
    for (int e = 0; e < 24 * 128; e++) cr_assert_eq(o[e], 4.0f * (float)e);
    free(x), free(o);
}
