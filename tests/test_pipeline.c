/* tests/test_pipeline.c: what happens while a call runs: the grid walk (G1,
 * G2), the HBM <-> VMEM pipeline (P1-P7), BlockSpec details that only show at
 * run time (B4 squeezed dims, B6 edge blocks), scratch (M2), poison (V1) and
 * the cost-only option.
 *
 * Each test is named after the rule of ../shared/PALLAS.md it checks. Kernels
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

/* ---- helpers ------------------------------------------------------------------ */

/* n f32 values 0, 1, 2, ... (exact up to 2^24). */
static float *f32_iota(int64_t n)
{
    float *p = malloc((size_t)n * sizeof *p);
    cr_assert_not_null(p);
    for (int64_t i = 0; i < n; i++) p[i] = (float)i;
    return p;
}

static float *f32_const(int64_t n, float v)
{
    float *p = malloc((size_t)n * sizeof *p);
    cr_assert_not_null(p);
    for (int64_t i = 0; i < n; i++) p[i] = v;
    return p;
}

static int count_nan_f32(const float *p, int64_t n)
{
    int k = 0;
    for (int64_t i = 0; i < n; i++) k += isnan(p[i]) != 0;
    return k;
}

static void run_ok(const pl_call *call, const pl_array *args, pl_array *outs, const pl_options *opt, pl_report *rep)
{
    int rc = pl_pallas_call(call, args, outs, opt, rep);
    cr_assert_eq(rc, PL_OK, "pl_pallas_call returned %d (%s): %s", rc, pl_strerror(rc), rep->error);
    cr_assert_eq(rep->status, PL_OK);
}

/* ---- G: the grid ---------------------------------------------------------------- */

#define TRACE_MAX 128

typedef struct trace {
    int rank;                   /* grid axes to record */
    int64_t n;                  /* kernel invocations */
    int64_t id[TRACE_MAX][PL_MAX_GRID];
    int64_t num[TRACE_MAX][PL_MAX_GRID];
} trace;

static void trace_kernel(pl_ctx *c, pl_ref *refs)
{
    (void)refs;
    trace *t = pl_kernel_user(c);
    if (t->n < TRACE_MAX)
        for (int a = 0; a < t->rank; a++) {
            t->id[t->n][a] = pl_program_id(c, a);
            t->num[t->n][a] = pl_num_programs(c, a);
        }
    t->n++;
}

Test(pipeline, G1_lexicographic_order_last_axis_fastest)
{
    static trace t = {.rank = 3};
    pl_call call = {.name = "trace", .kernel = trace_kernel, .user = &t, .grid_rank = 3, .grid = {2, 3, 4}};
    pl_report rep;
    run_ok(&call, NULL, NULL, NULL, &rep);
    cr_assert_eq(t.n, 24, "kernel ran %lld times on a (2, 3, 4) grid", (long long)t.n);
    cr_assert_eq(rep.steps, 24);
    int64_t s = 0;
    for (int64_t i = 0; i < 2; i++) /* nested loops, axis 0 outermost */
        for (int64_t j = 0; j < 3; j++)
            for (int64_t k = 0; k < 4; k++, s++)
                cr_expect(t.id[s][0] == i && t.id[s][1] == j && t.id[s][2] == k,
                          "step %lld ran at (%lld, %lld, %lld), expected (%lld, %lld, %lld)", (long long)s,
                          (long long)t.id[s][0], (long long)t.id[s][1], (long long)t.id[s][2], (long long)i,
                          (long long)j, (long long)k);
}

Test(pipeline, G1_axis_of_size_one)
{
    static trace t = {.rank = 3};
    pl_call call = {.kernel = trace_kernel, .user = &t, .grid_rank = 3, .grid = {3, 1, 2}};
    pl_report rep;
    run_ok(&call, NULL, NULL, NULL, &rep);
    cr_assert_eq(t.n, 6);
    for (int64_t s = 0; s < 6; s++)
        cr_expect(t.id[s][0] == s / 2 && t.id[s][1] == 0 && t.id[s][2] == s % 2, "step %lld at (%lld, %lld, %lld)",
                  (long long)s, (long long)t.id[s][0], (long long)t.id[s][1], (long long)t.id[s][2]);
}

Test(pipeline, G1_grid_rank_0_runs_once)
{
    static trace t = {.rank = 0};
    pl_call call = {.kernel = trace_kernel, .user = &t, .grid_rank = 0};
    pl_report rep;
    run_ok(&call, NULL, NULL, NULL, &rep);
    cr_assert_eq(t.n, 1, "grid=() must run the kernel exactly once, ran %lld times", (long long)t.n);
    cr_assert_eq(rep.steps, 1);
}

Test(pipeline, G2_num_programs_is_grid_size)
{
    static trace t = {.rank = 3};
    pl_call call = {.kernel = trace_kernel, .user = &t, .grid_rank = 3, .grid = {2, 5, 3}};
    pl_report rep;
    run_ok(&call, NULL, NULL, NULL, &rep);
    cr_assert_eq(t.n, 30);
    for (int64_t s = 0; s < 30; s++)
        for (int a = 0; a < 3; a++) {
            cr_expect_eq(t.num[s][a], call.grid[a], "step %lld: num_programs(%d) = %lld, grid has %lld",
                         (long long)s, a, (long long)t.num[s][a], (long long)call.grid[a]);
            cr_expect(t.id[s][a] >= 0 && t.id[s][a] < call.grid[a]);
        }
}

Test(pipeline, G2_rank_1_grid)
{
    static trace t = {.rank = 1};
    pl_call call = {.kernel = trace_kernel, .user = &t, .grid_rank = 1, .grid = {7}};
    pl_report rep;
    run_ok(&call, NULL, NULL, NULL, &rep);
    cr_assert_eq(t.n, 7);
    for (int64_t s = 0; s < 7; s++) {
        cr_expect_eq(t.id[s][0], s);
        cr_expect_eq(t.num[s][0], 7);
    }
}

static void bad_axis_kernel(pl_ctx *c, pl_ref *refs)
{
    (void)refs;
    int *reached = pl_kernel_user(c);
    (void)pl_num_programs(c, 2); /* the grid has 2 axes: faults */
    *reached = 1;
}

Test(pipeline, G2_axis_outside_grid_faults)
{
    static int reached = 0;
    pl_call call = {.kernel = bad_axis_kernel, .user = &reached, .grid_rank = 2, .grid = {2, 2}};
    pl_report rep;
    int rc = pl_pallas_call(&call, NULL, NULL, NULL, &rep);
    cr_assert_eq(rc, PL_EINVAL, "got %d: %s", rc, rep.error);
    cr_assert_eq(reached, 0, "the kernel went on after a bad axis");
    cr_assert_not_null(strstr(rep.error, "G2"), "error does not cite rule G2: %s", rep.error);
}

/* ---- P1: input blocks hold the HBM slice the index map selects --------------- */

typedef struct p1_state {
    const float *x;       /* (16, 256) f32, block (i, j) */
    const float *y;       /* (16, 256) f32, block (1 - i, 1 - j), function map */
    const uint16_t *z;    /* (16, 256) bf16, block (j, i) */
    int64_t checked, bad;
    int bad_shape;
} p1_state;

static void p1_reverse_map(const int64_t *g, const pl_ref *prefetch, int64_t *b, void *user)
{
    (void)prefetch;
    (void)user;
    b[0] = 1 - g[0];
    b[1] = 1 - g[1];
}

static void p1_kernel(pl_ctx *c, pl_ref *refs)
{
    p1_state *u = pl_kernel_user(c);
    int64_t i = pl_program_id(c, 0), j = pl_program_id(c, 1);
    for (int k = 0; k < 3; k++)
        if (refs[k].rank != 2 || refs[k].shape[0] != 8 || refs[k].shape[1] != 128) u->bad_shape = 1;
    int64_t bx[2] = {i, j}, by[2] = {1 - i, 1 - j}, bz[2] = {j, i};
    for (int64_t r = 0; r < 8; r++)
        for (int64_t col = 0; col < 128; col++) {
            double gx = pl_get_at(c, refs[0], r, col), gy = pl_get_at(c, refs[1], r, col),
                   gz = pl_get_at(c, refs[2], r, col);
            double wx = u->x[(bx[0] * 8 + r) * 256 + bx[1] * 128 + col];
            double wy = u->y[(by[0] * 8 + r) * 256 + by[1] * 128 + col];
            double wz = pl_bf16_to_f32(u->z[(bz[0] * 8 + r) * 256 + bz[1] * 128 + col]);
            u->bad += (gx != wx) + (gy != wy) + (gz != wz);
            u->checked += 3;
        }
}

Test(pipeline, P1_input_block_is_the_selected_hbm_slice)
{
    float *x = f32_iota(16 * 256), *y = f32_iota(16 * 256);
    uint16_t *z = malloc(16 * 256 * sizeof *z);
    cr_assert_not_null(z);
    for (int i = 0; i < 16 * 256; i++) {
        y[i] = -y[i] - 0.5f;
        z[i] = pl_f32_to_bf16((float)(i % 251) - 100.0f); /* exact in bf16 */
    }
    static p1_state u;
    u = (p1_state){.x = x, .y = y, .z = z};
    pl_call call = {
        .kernel = p1_kernel, .user = &u, .grid_rank = 2, .grid = {2, 2}, .n_in = 3,
        .in = {PL_BLOCK(PL_MAP(0, 1), 8, 128), PL_BLOCK(PL_MAP_FN(p1_reverse_map, NULL), 8, 128),
               PL_BLOCK(PL_MAP(1, 0), 8, 128)},
    };
    pl_array args[3] = {PL_ARRAY(x, PL_F32, 16, 256), PL_ARRAY(y, PL_F32, 16, 256), PL_ARRAY(z, PL_BF16, 16, 256)};
    pl_report rep;
    run_ok(&call, args, NULL, NULL, &rep);
    cr_assert_eq(u.bad_shape, 0, "an input Ref does not have the block shape (8, 128)");
    cr_assert_eq(u.checked, 4 * 3 * 8 * 128);
    cr_assert_eq(u.bad, 0, "%lld of %lld block elements differ from the HBM slice", (long long)u.bad,
                 (long long)u.checked);
    for (int k = 0; k < 3; k++) {
        cr_expect_eq(rep.op[k].copies, 4, "%s: %lld copies", rep.op[k].name, (long long)rep.op[k].copies);
        cr_expect_eq(rep.op[k].bytes_in, 16 * 256 * (k == 2 ? 2 : 4));
    }
    free(x), free(y), free(z);
}

/* ---- P2: skip the copy of an unchanged input block ------------------------------- */

typedef struct p2_state {
    int64_t bad;
} p2_state;

static void p2_kernel(pl_ctx *c, pl_ref *refs)
{
    p2_state *u = pl_kernel_user(c);
    int64_t i = pl_program_id(c, 0);
    /* skipped or not, the kernel sees block (i, 0): rows 8i.. of a (32, 128) iota */
    for (int64_t r = 0; r < 8; r++)
        for (int64_t col = 0; col < 128; col += 37)
            u->bad += pl_get_at(c, refs[0], r, col) != (double)((i * 8 + r) * 128 + col);
}

static void p2_map_fn(const int64_t *g, const pl_ref *prefetch, int64_t *b, void *user)
{
    (void)prefetch;
    (*(int *)user)++;
    b[0] = g[0];
    b[1] = 0;
}

static void p2_check(const pl_report *rep, const p2_state *u)
{
    cr_assert_eq(u->bad, 0, "the kernel saw wrong data in %lld places", (long long)u->bad);
    cr_assert_eq(rep->steps, 32);
    cr_assert_eq(rep->op[0].copies, 4, "copies = %lld, want 4 (one per block index on axis 0)",
                 (long long)rep->op[0].copies);
    cr_assert_eq(rep->op[0].skipped, 28, "skipped = %lld, want 28", (long long)rep->op[0].skipped);
    cr_assert_eq(rep->op[0].bytes_in, 32 * 128 * 4, "bytes_in = %lld: skipped copies moved bytes",
                 (long long)rep->op[0].bytes_in);
}

Test(pipeline, P2_skip_copy_of_unchanged_block)
{
    float *x = f32_iota(32 * 128);
    static p2_state u;
    pl_call call = {.kernel = p2_kernel, .user = &u, .grid_rank = 2, .grid = {4, 8}, .n_in = 1,
                    .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)}};
    pl_array args[1] = {PL_ARRAY(x, PL_F32, 32, 128)};
    pl_report rep;
    run_ok(&call, args, NULL, NULL, &rep);
    p2_check(&rep, &u);
    free(x);
}

Test(pipeline, P2_skip_copy_function_map)
{
    float *x = f32_iota(32 * 128);
    static p2_state u;
    static int calls = 0;
    pl_call call = {.kernel = p2_kernel, .user = &u, .grid_rank = 2, .grid = {4, 8}, .n_in = 1,
                    .in = {PL_BLOCK(PL_MAP_FN(p2_map_fn, &calls), 8, 128)}};
    pl_array args[1] = {PL_ARRAY(x, PL_F32, 32, 128)};
    pl_report rep;
    run_ok(&call, args, NULL, NULL, &rep);
    p2_check(&rep, &u);
    cr_expect_geq(calls, 32, "the index map ran %d times for 32 grid points", calls);
    free(x);
}

Test(pipeline, P2_no_skip_when_block_changes_every_step)
{
    float *x = f32_iota(32 * 128);
    /* block (g1, 0): the block index follows the fast axis, so it changes every step */
    pl_call call = {.kernel = trace_kernel, .user = &(trace){.rank = 0}, .grid_rank = 2, .grid = {2, 4},
                    .n_in = 1, .in = {PL_BLOCK(PL_MAP(1, PL_ZERO), 8, 128)}};
    pl_array args[1] = {PL_ARRAY(x, PL_F32, 32, 128)};
    pl_report rep;
    run_ok(&call, args, NULL, NULL, &rep);
    cr_assert_eq(rep.op[0].copies, 8);
    cr_assert_eq(rep.op[0].skipped, 0);
    free(x);
}

/* ---- P3: outputs stay in VMEM while their block index holds ---------------------- */

typedef struct p3_state {
    float *o_hbm;          /* the output array, watched from inside the kernel */
    const void *data[6];   /* o.data per step */
    int64_t early_write;   /* HBM rows of block 1 changed before the end */
    int64_t premature;     /* HBM block 0 changed while still being accumulated */
    int64_t missing;       /* HBM block 0 not final once block 1 runs */
    const float *want;     /* final o */
} p3_state;

static void p3_kernel(pl_ctx *c, pl_ref *refs)
{
    p3_state *u = pl_kernel_user(c);
    pl_ref x = refs[0], o = refs[1];
    int64_t i = pl_program_id(c, 0), k = pl_program_id(c, 1);
    u->data[i * 3 + k] = o.data;
    for (int64_t e = 0; e < 8 * 128; e++) {
        u->early_write += u->o_hbm[8 * 128 + e] != -1.0f;
        if (i == 0) u->premature += u->o_hbm[e] != -1.0f;
        if (i == 1 && k >= 1) u->missing += u->o_hbm[e] != u->want[e];
    }
    if (k == 0) pl_fill(c, o, 0.0);
    pl_add(c, o, o, x);
}

Test(pipeline, P3_output_block_accumulates_and_writes_back_once)
{
    float *x = f32_iota(16 * 384), *o = f32_const(16 * 128, -1.0f), *want = malloc(16 * 128 * sizeof *want);
    cr_assert_not_null(want);
    for (int r = 0; r < 16; r++)
        for (int col = 0; col < 128; col++) {
            float s = 0;
            for (int k = 0; k < 3; k++) s += x[r * 384 + k * 128 + col];
            want[r * 128 + col] = s;
        }
    static p3_state u;
    u = (p3_state){.o_hbm = o, .want = want};
    pl_call call = {.kernel = p3_kernel, .user = &u, .grid_rank = 2, .grid = {2, 3}, .n_in = 1,
                    .in = {PL_BLOCK(PL_MAP(0, 1), 8, 128)}, .n_out = 1,
                    .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)}};
    pl_array args[1] = {PL_ARRAY(x, PL_F32, 16, 384)};
    pl_array out = PL_ARRAY(o, PL_F32, 16, 128);
    pl_report rep;
    run_ok(&call, args, &out, NULL, &rep);
    for (int i = 0; i < 2; i++)
        for (int k = 1; k < 3; k++)
            cr_expect_eq(u.data[i * 3 + k], u.data[i * 3], "block %d: step %d got another buffer than step 0", i,
                         k);
    cr_expect_eq(u.premature, 0, "block 0 reached HBM while its index was still current");
    cr_expect_eq(u.early_write, 0, "block 1 reached HBM before the grid ended");
    cr_expect_eq(u.missing, 0, "block 0 was not in HBM after its index changed");
    int64_t bad = 0;
    for (int e = 0; e < 16 * 128; e++) bad += o[e] != want[e];
    cr_assert_eq(bad, 0, "%lld output elements differ from the sum over k", (long long)bad);
    cr_assert_eq(rep.op[1].writebacks, 2, "writebacks = %lld, want one per output block",
                 (long long)rep.op[1].writebacks);
    cr_assert_eq(rep.op[1].bytes_out, 16 * 128 * 4);
    cr_assert_eq(rep.op[0].copies, 6);
    free(x), free(o), free(want);
}

/* Output index changes every step: one write-back per step. */
static void p3_fill_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_fill(c, refs[0], (double)(pl_program_id(c, 0) * 10 + pl_program_id(c, 1)));
}

Test(pipeline, P3_writeback_per_block_change)
{
    float *o = f32_const(32 * 256, -1.0f);
    pl_call call = {.kernel = p3_fill_kernel, .grid_rank = 2, .grid = {4, 2}, .n_out = 1,
                    .out = {PL_BLOCK(PL_MAP(0, 1), 8, 128)}};
    pl_array out = PL_ARRAY(o, PL_F32, 32, 256);
    pl_report rep;
    run_ok(&call, NULL, &out, NULL, &rep);
    cr_assert_eq(rep.op[0].writebacks, 8);
    cr_assert_eq(rep.op[0].bytes_out, 32 * 256 * 4);
    for (int r = 0; r < 32; r++)
        for (int col = 0; col < 256; col++)
            cr_assert_eq(o[r * 256 + col], (float)((r / 8) * 10 + col / 128), "o[%d][%d] = %g", r, col,
                         o[r * 256 + col]);
    free(o);
}

/* ---- P4: output blocks start as garbage --------------------------------------- */

typedef struct p4_state {
    int64_t not_poison; /* output elements that were not poison on entry */
    int64_t entries;
} p4_state;

static void p4_nothing_kernel(pl_ctx *c, pl_ref *refs)
{
    (void)c;
    (void)refs;
}

Test(pipeline, P4_unwritten_output_is_nan_in_hbm)
{
    float *o = f32_const(16 * 256, 7.0f);
    pl_call call = {.kernel = p4_nothing_kernel, .grid_rank = 2, .grid = {2, 2}, .n_out = 1,
                    .out = {PL_BLOCK(PL_MAP(0, 1), 8, 128)}};
    pl_array out = PL_ARRAY(o, PL_F32, 16, 256);
    pl_report rep;
    /* status not asserted: rule V1 allows reporting the NaN; the NaN is what
     * matters, and it proves the write-back happened */
    pl_pallas_call(&call, NULL, &out, NULL, &rep);
    cr_assert_eq(count_nan_f32(o, 16 * 256), 16 * 256,
                 "%d of %d elements are NaN; an unwritten output block must write back poison",
                 count_nan_f32(o, 16 * 256), 16 * 256);
    cr_assert_eq(rep.op[0].writebacks, 4);
    free(o);
}

Test(pipeline, P4_unwritten_output_is_zero_with_uninit_zero)
{
    float *o = f32_const(16 * 256, 7.0f);
    pl_call call = {.kernel = p4_nothing_kernel, .grid_rank = 2, .grid = {2, 2}, .n_out = 1,
                    .out = {PL_BLOCK(PL_MAP(0, 1), 8, 128)}};
    pl_array out = PL_ARRAY(o, PL_F32, 16, 256);
    pl_options opt = {.uninit = PL_UNINIT_ZERO};
    pl_report rep;
    run_ok(&call, NULL, &out, &opt, &rep);
    for (int e = 0; e < 16 * 256; e++) cr_assert_eq(o[e], 0.0f, "o[%d] = %g, want 0", e, o[e]);
    free(o);
}

/* Every new output block is poison on entry: never the HBM contents, never
 * what an earlier block left in the same (reused) buffer. */
static void p4_entry_kernel(pl_ctx *c, pl_ref *refs)
{
    p4_state *u = pl_kernel_user(c);
    pl_ref o = refs[0];
    for (int64_t r = 0; r < 8; r++)
        for (int64_t col = 0; col < 128; col++) u->not_poison += !isnan(pl_get_at(c, o, r, col));
    u->entries++;
    pl_fill(c, o, (double)(pl_program_id(c, 0) + 1));
}

Test(pipeline, P4_output_block_is_never_loaded_and_starts_poisoned)
{
    float *o = f32_const(32 * 128, 5.0f);
    static p4_state u;
    pl_call call = {.kernel = p4_entry_kernel, .user = &u, .grid_rank = 1, .grid = {4}, .n_out = 1,
                    .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)}};
    pl_array out = PL_ARRAY(o, PL_F32, 32, 128);
    pl_report rep;
    run_ok(&call, NULL, &out, NULL, &rep);
    cr_assert_eq(u.entries, 4);
    cr_assert_eq(u.not_poison, 0, "%lld output elements were not poison when the kernel started",
                 (long long)u.not_poison);
    for (int e = 0; e < 32 * 128; e++) cr_assert_eq(o[e], (float)(e / (8 * 128) + 1));
    free(o);
}

static void p4_write_input_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_set_at(c, refs[0], 99.0, 0, 0);
    pl_set_at(c, refs[0], 99.0, 7, 127);
}

Test(pipeline, P4_writes_to_input_block_never_reach_hbm)
{
    float *x = f32_iota(16 * 128);
    pl_call call = {.kernel = p4_write_input_kernel, .grid_rank = 1, .grid = {2}, .n_in = 1,
                    .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)}};
    pl_array args[1] = {PL_ARRAY(x, PL_F32, 16, 128)};
    pl_report rep;
    /* status not asserted: rule V3 lets the simulator report the write */
    pl_pallas_call(&call, args, NULL, NULL, &rep);
    for (int e = 0; e < 16 * 128; e++) cr_assert_eq(x[e], (float)e, "input HBM element %d changed to %g", e, x[e]);
    free(x);
}

/* ---- P5: revisits ------------------------------------------------------------ */

static void p5_table_map(const int64_t *g, const pl_ref *prefetch, int64_t *b, void *user)
{
    (void)prefetch;
    const int64_t *table = user;
    b[0] = table[g[1]];
    b[1] = 0;
}

Test(pipeline, P5_revisit_after_writeback_is_an_error)
{
    static const int64_t table[4] = {0, 1, 2, 1}; /* block 1 again at (0, 3), written back after (0, 1) */
    float *o = f32_const(24 * 128, 0.0f);
    pl_call call = {.kernel = p3_fill_kernel, .grid_rank = 2, .grid = {1, 4}, .n_out = 1,
                    .out = {PL_BLOCK(PL_MAP_FN(p5_table_map, (void *)table), 8, 128)}};
    call.out[0].name = "acc_out";
    pl_array out = PL_ARRAY(o, PL_F32, 24, 128);
    pl_report rep;
    int rc = pl_pallas_call(&call, NULL, &out, NULL, &rep);
    cr_assert_eq(rc, PL_EREVISIT, "got %d (%s): %s", rc, pl_strerror(rc), rep.error);
    cr_assert_eq(rep.status, PL_EREVISIT);
    cr_expect_not_null(strstr(rep.error, "P5"), "error does not cite rule P5: %s", rep.error);
    cr_expect_not_null(strstr(rep.error, "(0, 3)"), "error does not name the revisiting point (0, 3): %s",
                       rep.error);
    cr_expect_not_null(strstr(rep.error, "(0, 1)"), "error does not name the earlier point (0, 1): %s", rep.error);
    cr_expect_not_null(strstr(rep.error, "acc_out"), "error does not name the operand: %s", rep.error);
    cr_expect_eq(strcmp(pl_last_error(), rep.error), 0);
    free(o);
}

Test(pipeline, P5_revisit_on_outer_axis_is_an_error)
{
    /* out block follows the fast axis: (0,0) b0, (0,1) b1, (1,0) b0 again */
    float *o = f32_const(16 * 128, 0.0f);
    pl_call call = {.kernel = p3_fill_kernel, .grid_rank = 2, .grid = {2, 2}, .n_out = 1,
                    .out = {PL_BLOCK(PL_MAP(1, PL_ZERO), 8, 128)}};
    pl_array out = PL_ARRAY(o, PL_F32, 16, 128);
    pl_report rep;
    int rc = pl_pallas_call(&call, NULL, &out, NULL, &rep);
    cr_assert_eq(rc, PL_EREVISIT, "got %d: %s", rc, rep.error);
    cr_expect_not_null(strstr(rep.error, "(1, 0)"), "error does not name grid point (1, 0): %s", rep.error);
    free(o);
}

Test(pipeline, P5_consecutive_revisits_are_legal)
{
    /* block (i, 0) over steps (i, 0..2): the same block three times in a row */
    float *o = f32_const(16 * 128, -1.0f), *x = f32_iota(16 * 384);
    static p3_state u;
    float *want = malloc(16 * 128 * sizeof *want);
    cr_assert_not_null(want);
    for (int e = 0; e < 16 * 128; e++) {
        int r = e / 128, col = e % 128;
        want[e] = x[r * 384 + col] + x[r * 384 + 128 + col] + x[r * 384 + 256 + col];
    }
    u = (p3_state){.o_hbm = o, .want = want};
    pl_call call = {.kernel = p3_kernel, .user = &u, .grid_rank = 2, .grid = {2, 3}, .n_in = 1,
                    .in = {PL_BLOCK(PL_MAP(0, 1), 8, 128)}, .n_out = 1,
                    .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)}};
    pl_array args[1] = {PL_ARRAY(x, PL_F32, 16, 384)};
    pl_array out = PL_ARRAY(o, PL_F32, 16, 128);
    pl_report rep;
    run_ok(&call, args, &out, NULL, &rep);
    cr_assert_eq(rep.op[1].writebacks, 2);
    for (int e = 0; e < 16 * 128; e++) cr_assert_eq(o[e], want[e]);
    free(o), free(x), free(want);
}

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

/* ---- B4: squeezed dimensions -------------------------------------------------- */

typedef struct b4_state {
    const float *x;      /* (4, 16, 128) */
    int bad_rank;
    int64_t bad;
    int64_t seen;
} b4_state;

/* squeezed dim: element index 3 - g0 */
static void b4_map(const int64_t *g, const pl_ref *prefetch, int64_t *b, void *user)
{
    (void)prefetch;
    (void)user;
    b[0] = 3 - g[0];
    b[1] = g[1];
    b[2] = 0;
}

static void b4_kernel(pl_ctx *c, pl_ref *refs)
{
    b4_state *u = pl_kernel_user(c);
    pl_ref x = refs[0], y = refs[1], o = refs[2];
    int64_t i = pl_program_id(c, 0), j = pl_program_id(c, 1);
    for (int k = 0; k < 3; k++)
        if (refs[k].rank != 2 || refs[k].shape[0] != 8 || refs[k].shape[1] != 128 || refs[k].stride[0] != 128 ||
            refs[k].stride[1] != 1)
            u->bad_rank = 1;
    if (u->bad_rank) return;
    for (int64_t r = 0; r < 8; r++)
        for (int64_t col = 0; col < 128; col++) {
            u->bad += pl_get_at(c, x, r, col) != u->x[(i * 16 + j * 8 + r) * 128 + col];
            u->bad += pl_get_at(c, y, r, col) != u->x[((3 - i) * 16 + j * 8 + r) * 128 + col];
            u->seen += 2;
        }
    pl_copy(c, o, y);
}

Test(pipeline, B4_squeezed_dimension_is_dropped_and_indexes_elements)
{
    float *x = f32_iota(4 * 16 * 128), *o = f32_const(4 * 16 * 128, -1.0f);
    static b4_state u;
    u = (b4_state){.x = x};
    pl_call call = {.kernel = b4_kernel, .user = &u, .grid_rank = 2, .grid = {4, 2}, .n_in = 2,
                    .in = {PL_BLOCK(PL_MAP(0, 1, PL_ZERO), PL_SQUEEZED, 8, 128),
                           PL_BLOCK(PL_MAP_FN(b4_map, NULL), PL_SQUEEZED, 8, 128)},
                    .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, 1, PL_ZERO), PL_SQUEEZED, 8, 128)}};
    pl_array args[2] = {PL_ARRAY(x, PL_F32, 4, 16, 128), PL_ARRAY(x, PL_F32, 4, 16, 128)};
    pl_array out = PL_ARRAY(o, PL_F32, 4, 16, 128);
    pl_report rep;
    run_ok(&call, args, &out, NULL, &rep);
    cr_assert_eq(u.bad_rank, 0, "a squeezed Ref is not rank 2 (8, 128) with strides (128, 1)");
    cr_assert_eq(u.seen, 8 * 2 * 8 * 128);
    cr_assert_eq(u.bad, 0, "%lld elements differ from the slice selected by the squeezed index", (long long)u.bad);
    for (int i = 0; i < 3; i++) {
        cr_expect_eq(rep.op[i].rank, 3);
        cr_expect(rep.op[i].block[0] == 1 && rep.op[i].block[1] == 8 && rep.op[i].block[2] == 128,
                  "%s: report block (%lld, %lld, %lld), want (1, 8, 128)", rep.op[i].name,
                  (long long)rep.op[i].block[0], (long long)rep.op[i].block[1], (long long)rep.op[i].block[2]);
        cr_expect_eq(rep.op[i].block_bytes, 8 * 128 * 4);
    }
    /* o[i] = x[3 - i] */
    for (int i = 0; i < 4; i++)
        for (int e = 0; e < 16 * 128; e++)
            cr_assert_eq(o[i * 2048 + e], x[(3 - i) * 2048 + e], "o[%d] elem %d", i, e);
    cr_assert_eq(rep.op[2].writebacks, 8);
    free(x), free(o);
}

typedef struct b4b_state {
    const float *x; /* (2, 3, 8, 128) */
    int bad_rank;
    int64_t bad;
} b4b_state;

static void b4b_kernel(pl_ctx *c, pl_ref *refs)
{
    b4b_state *u = pl_kernel_user(c);
    int64_t i = pl_program_id(c, 0), j = pl_program_id(c, 1);
    if (refs[0].rank != 2 || refs[0].shape[0] != 8 || refs[0].shape[1] != 128) {
        u->bad_rank = 1;
        return;
    }
    for (int64_t r = 0; r < 8; r++)
        for (int64_t col = 0; col < 128; col++)
            u->bad += pl_get_at(c, refs[0], r, col) != u->x[((i * 3 + j) * 8 + r) * 128 + col];
}

Test(pipeline, B4_two_squeezed_dimensions)
{
    float *x = f32_iota(2 * 3 * 8 * 128);
    static b4b_state u;
    u = (b4b_state){.x = x};
    pl_call call = {.kernel = b4b_kernel, .user = &u, .grid_rank = 2, .grid = {2, 3}, .n_in = 1,
                    .in = {PL_BLOCK(PL_MAP(0, 1, PL_ZERO, PL_ZERO), PL_SQUEEZED, PL_SQUEEZED, 8, 128)}};
    pl_array args[1] = {PL_ARRAY(x, PL_F32, 2, 3, 8, 128)};
    pl_report rep;
    run_ok(&call, args, NULL, NULL, &rep);
    cr_assert_eq(u.bad_rank, 0);
    cr_assert_eq(u.bad, 0);
    cr_assert_eq(rep.op[0].copies, 6);
    free(x);
}

/* ---- B6: edge blocks ------------------------------------------------------------ */

#define B6_M 20
#define B6_N 200
#define B6_GUARD 300

typedef struct b6_state {
    const float *x;
    int64_t inb_bad, pad_bad, pad_seen, inb_seen;
    double pad_want; /* NaN: poison */
} b6_state;

static void b6_kernel(pl_ctx *c, pl_ref *refs)
{
    b6_state *u = pl_kernel_user(c);
    pl_ref x = refs[0], o = refs[1];
    int64_t i = pl_program_id(c, 0), j = pl_program_id(c, 1);
    for (int64_t r = 0; r < 8; r++)
        for (int64_t col = 0; col < 128; col++) {
            int64_t gr = i * 8 + r, gc = j * 128 + col;
            double v = pl_get_at(c, x, r, col);
            if (gr < B6_M && gc < B6_N) {
                u->inb_bad += v != u->x[gr * B6_N + gc];
                u->inb_seen++;
            } else {
                u->pad_bad += isnan(u->pad_want) ? !isnan(v) : v != u->pad_want;
                u->pad_seen++;
            }
        }
    pl_fill(c, o, (double)(i * 10 + j + 1)); /* also over the overhang */
}

static void b6_run(pl_uninit uninit)
{
    float *x = f32_iota(B6_M * B6_N);
    /* the output lives inside a larger allocation: the guard after it must
     * survive the write-back of the edge blocks */
    float *o = f32_const(B6_M * B6_N + B6_GUARD, -1.0f);
    static b6_state u;
    u = (b6_state){.x = x, .pad_want = uninit == PL_UNINIT_ZERO ? 0.0 : NAN};
    pl_call call = {.kernel = b6_kernel, .user = &u, .grid_rank = 2, .grid = {3, 2}, .n_in = 1,
                    .in = {PL_BLOCK(PL_MAP(0, 1), 8, 128)}, .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, 1), 8, 128)}};
    pl_array args[1] = {PL_ARRAY(x, PL_F32, B6_M, B6_N)};
    pl_array out = PL_ARRAY(o, PL_F32, B6_M, B6_N);
    pl_options opt = {.uninit = uninit};
    pl_report rep;
    run_ok(&call, args, &out, &opt, &rep);
    cr_assert_eq(u.inb_seen, B6_M * B6_N, "in-bounds elements seen: %lld", (long long)u.inb_seen);
    cr_assert_eq(u.inb_bad, 0, "%lld in-bounds elements of edge blocks are wrong", (long long)u.inb_bad);
    cr_assert_eq(u.pad_seen, 3 * 2 * 8 * 128 - B6_M * B6_N);
    cr_assert_eq(u.pad_bad, 0, "%lld of %lld padding elements are not %s", (long long)u.pad_bad,
                 (long long)u.pad_seen, uninit == PL_UNINIT_ZERO ? "zero" : "poison (NaN)");
    /* writes past the edge are dropped: every element holds its own block's value */
    for (int r = 0; r < B6_M; r++)
        for (int col = 0; col < B6_N; col++)
            cr_assert_eq(o[r * B6_N + col], (float)((r / 8) * 10 + col / 128 + 1),
                         "o[%d][%d] = %g: an edge block's overhang was written into a neighbour", r, col,
                         o[r * B6_N + col]);
    for (int g = 0; g < B6_GUARD; g++)
        cr_assert_eq(o[B6_M * B6_N + g], -1.0f, "write past the end of the output array (guard %d)", g);
    cr_assert_eq(rep.op[0].copies, 6);
    cr_assert_eq(rep.op[0].bytes_in, B6_M * B6_N * 4, "bytes_in = %lld, want only in-bounds bytes %d",
                 (long long)rep.op[0].bytes_in, B6_M * B6_N * 4);
    cr_assert_eq(rep.op[1].writebacks, 6);
    cr_assert_eq(rep.op[1].bytes_out, B6_M * B6_N * 4, "bytes_out = %lld, want only in-bounds bytes %d",
                 (long long)rep.op[1].bytes_out, B6_M * B6_N * 4);
    cr_assert_eq(rep.hbm_bytes, 2 * B6_M * B6_N * 4);
    free(x), free(o);
}

Test(pipeline, B6_edge_blocks_poison_padding_and_drop_overhang) { b6_run(PL_UNINIT_NAN); }

Test(pipeline, B6_edge_blocks_zero_padding_with_uninit_zero) { b6_run(PL_UNINIT_ZERO); }

/* Edge block whose block is larger than the whole array (128 > 100 columns). */
static void b6_copy_kernel(pl_ctx *c, pl_ref *refs) { pl_copy(c, refs[1], refs[0]); }

Test(pipeline, B6_block_wider_than_array)
{
    float *x = f32_iota(24 * 100), *o = f32_const(24 * 100 + 64, -1.0f);
    pl_call call = {.kernel = b6_copy_kernel, .grid_rank = 1, .grid = {3}, .n_in = 1,
                    .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)}, .n_out = 1,
                    .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)}};
    pl_array args[1] = {PL_ARRAY(x, PL_F32, 24, 100)};
    pl_array out = PL_ARRAY(o, PL_F32, 24, 100);
    pl_report rep;
    run_ok(&call, args, &out, NULL, &rep);
    for (int e = 0; e < 24 * 100; e++) cr_assert_eq(o[e], (float)e, "o[%d] = %g", e, o[e]);
    for (int g = 0; g < 64; g++) cr_assert_eq(o[24 * 100 + g], -1.0f);
    cr_assert_eq(rep.op[0].bytes_in, 24 * 100 * 4);
    cr_assert_eq(rep.op[1].bytes_out, 24 * 100 * 4);
    free(x), free(o);
}

/* ---- M2: scratch ------------------------------------------------------------------ */

typedef struct m2_state {
    int64_t vmem_not_nan;  /* VMEM f32 scratch elements not NaN at step 0 */
    int64_t smem_first;    /* SMEM i32 scratch[0] at step 0 */
    int64_t smem_final;    /* its value at the last step */
    const void *acc_data[6];
} m2_state;

static void m2_kernel(pl_ctx *c, pl_ref *refs)
{
    m2_state *u = pl_kernel_user(c);
    pl_ref x = refs[0], o = refs[1], acc = refs[2], cnt = refs[3];
    int64_t i = pl_program_id(c, 0), j = pl_program_id(c, 1), step = i * 3 + j;
    u->acc_data[step] = acc.data;
    if (step == 0) {
        for (int64_t r = 0; r < 8; r++)
            for (int64_t col = 0; col < 128; col++) u->vmem_not_nan += !isnan(pl_get_at(c, acc, r, col));
        u->smem_first = (int64_t)pl_get_at(c, cnt, 0);
        pl_fill(c, acc, 0.0);
        pl_set_at(c, cnt, 0.0, 0);
    }
    pl_add(c, acc, acc, x); /* acc persists across all six steps */
    pl_set_at(c, cnt, pl_get_at(c, cnt, 0) + 1, 0);
    if (step == 5) {
        pl_copy(c, o, acc);
        u->smem_final = (int64_t)pl_get_at(c, cnt, 0);
    }
}

Test(pipeline, M2_scratch_persists_and_starts_poisoned)
{
    float *x = f32_iota(8 * 128), *o = f32_const(8 * 128, -1.0f);
    static m2_state u;
    pl_call call = {.kernel = m2_kernel, .user = &u, .grid_rank = 2, .grid = {2, 3}, .n_in = 1,
                    .in = {{0}}, .n_out = 1, .out = {{0}}, .n_scratch = 2,
                    .scratch = {PLTPU_VMEM(PL_F32, 8, 128), PLTPU_SMEM(PL_I32, 4)}};
    pl_array args[1] = {PL_ARRAY(x, PL_F32, 8, 128)};
    pl_array out = PL_ARRAY(o, PL_F32, 8, 128);
    pl_report rep;
    run_ok(&call, args, &out, NULL, &rep);
    cr_assert_eq(u.vmem_not_nan, 0, "%lld VMEM scratch elements were not NaN at the first step",
                 (long long)u.vmem_not_nan);
    cr_assert_eq(u.smem_first, INT32_MAX, "SMEM i32 scratch started as %lld, want INT32_MAX (rule V1)",
                 (long long)u.smem_first);
    cr_assert_eq(u.smem_final, 6, "SMEM counter = %lld after 6 steps", (long long)u.smem_final);
    for (int s = 1; s < 6; s++) cr_expect_eq(u.acc_data[s], u.acc_data[0], "scratch moved at step %d", s);
    for (int e = 0; e < 8 * 128; e++) cr_assert_eq(o[e], 6.0f * (float)e, "o[%d] = %g", e, o[e]);
    cr_assert_eq(rep.n_scratch, 2);
    free(x), free(o);
}

Test(pipeline, M2_scratch_is_zero_with_uninit_zero)
{
    float *x = f32_iota(8 * 128), *o = f32_const(8 * 128, -1.0f);
    static m2_state u;
    pl_call call = {.kernel = m2_kernel, .user = &u, .grid_rank = 2, .grid = {2, 3}, .n_in = 1,
                    .in = {{0}}, .n_out = 1, .out = {{0}}, .n_scratch = 2,
                    .scratch = {PLTPU_VMEM(PL_F32, 8, 128), PLTPU_SMEM(PL_I32, 4)}};
    pl_array args[1] = {PL_ARRAY(x, PL_F32, 8, 128)};
    pl_array out = PL_ARRAY(o, PL_F32, 8, 128);
    pl_options opt = {.uninit = PL_UNINIT_ZERO};
    pl_report rep;
    run_ok(&call, args, &out, &opt, &rep);
    cr_assert_eq(u.vmem_not_nan, 8 * 128, "with uninit zero the scratch must not be NaN");
    cr_assert_eq(u.smem_first, 0);
    free(x), free(o);
}

/* ---- V1: poison per dtype ---------------------------------------------------------- */

#define V1_N 5 /* f32, bf16, f16, i32, i8 */

typedef struct v1_state {
    double out_first[V1_N], out_last[V1_N]; /* output blocks at entry */
    double scr[V1_N];                        /* scratch at entry */
} v1_state;

static void v1_kernel(pl_ctx *c, pl_ref *refs)
{
    v1_state *u = pl_kernel_user(c);
    for (int t = 0; t < V1_N; t++) {
        pl_ref o = refs[t], s = refs[V1_N + t];
        u->out_first[t] = pl_get_at(c, o, 0, 0);
        u->out_last[t] = pl_get_at(c, o, o.shape[0] - 1, o.shape[1] - 1);
        u->scr[t] = pl_get_at(c, s, 1, 2);
    }
    /* writes nothing: the poison goes back to HBM */
}

static void v1_run(pl_uninit uninit)
{
    static const pl_dtype dts[V1_N] = {PL_F32, PL_BF16, PL_F16, PL_I32, PL_I8};
    void *mem[V1_N];
    pl_array outs[V1_N];
    pl_call call = {.kernel = v1_kernel, .grid_rank = 0, .n_out = V1_N, .n_scratch = V1_N};
    static v1_state u;
    call.user = &u;
    for (int t = 0; t < V1_N; t++) {
        size_t es = pl_dtype_size(dts[t]);
        mem[t] = malloc(32 * 128 * es);
        cr_assert_not_null(mem[t]);
        for (int e = 0; e < 32 * 128; e++) pl_store_elem((char *)mem[t] + (size_t)e * es, dts[t], 3.0);
        outs[t] = PL_ARRAY(mem[t], dts[t], 32, 128);
        call.out[t] = (pl_block_spec){0};
        call.scratch[t] = PLTPU_VMEM(dts[t], 4, 8);
    }
    pl_options opt = {.uninit = uninit};
    pl_report rep;
    pl_pallas_call(&call, NULL, outs, &opt, &rep); /* V1 may report NaN reaching HBM */
    cr_assert_eq(rep.steps, 1, "the call did not run: %s", rep.error);
    for (int t = 0; t < V1_N; t++) {
        const char *n = pl_dtype_name(dts[t]);
        size_t es = pl_dtype_size(dts[t]);
        if (uninit == PL_UNINIT_ZERO) {
            cr_expect_eq(u.out_first[t], 0.0, "%s output at entry: %g", n, u.out_first[t]);
            cr_expect_eq(u.out_last[t], 0.0, "%s output at entry: %g", n, u.out_last[t]);
            cr_expect_eq(u.scr[t], 0.0, "%s scratch at entry: %g", n, u.scr[t]);
            for (int e = 0; e < 32 * 128; e++)
                cr_assert_eq(pl_load_elem((char *)mem[t] + (size_t)e * es, dts[t]), 0.0, "%s HBM element %d", n,
                             e);
        } else if (pl_dtype_is_float(dts[t])) {
            cr_expect(isnan(u.out_first[t]) && isnan(u.out_last[t]), "%s output at entry: %g, %g, want NaN", n,
                      u.out_first[t], u.out_last[t]);
            cr_expect(isnan(u.scr[t]), "%s scratch at entry: %g, want NaN", n, u.scr[t]);
            for (int e = 0; e < 32 * 128; e++)
                cr_assert(isnan(pl_load_elem((char *)mem[t] + (size_t)e * es, dts[t])), "%s HBM element %d: %g", n,
                          e, pl_load_elem((char *)mem[t] + (size_t)e * es, dts[t]));
        } else {
            double max = dts[t] == PL_I32 ? (double)INT32_MAX : (double)INT8_MAX;
            cr_expect_eq(u.out_first[t], max, "%s output at entry: %g, want %g", n, u.out_first[t], max);
            cr_expect_eq(u.out_last[t], max, "%s output at entry: %g, want %g", n, u.out_last[t], max);
            cr_expect_eq(u.scr[t], max, "%s scratch at entry: %g, want %g", n, u.scr[t], max);
            for (int e = 0; e < 32 * 128; e++)
                cr_assert_eq(pl_load_elem((char *)mem[t] + (size_t)e * es, dts[t]), max, "%s HBM element %d", n, e);
        }
        free(mem[t]);
    }
}

Test(pipeline, V1_poison_per_dtype) { v1_run(PL_UNINIT_NAN); }

Test(pipeline, V1_uninit_zero_per_dtype) { v1_run(PL_UNINIT_ZERO); }

Test(pipeline, V1_bf16_poison_is_nan_bits)
{
    uint16_t *o = malloc(16 * 128 * sizeof *o);
    cr_assert_not_null(o);
    for (int e = 0; e < 16 * 128; e++) o[e] = 0x3f80; /* 1.0 */
    pl_call call = {.kernel = p4_nothing_kernel, .grid_rank = 1, .grid = {2}, .n_out = 1,
                    .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)}};
    pl_array out = PL_ARRAY(o, PL_BF16, 16, 128);
    pl_report rep;
    pl_pallas_call(&call, NULL, &out, NULL, &rep);
    for (int e = 0; e < 16 * 128; e++)
        cr_assert((o[e] & 0x7f80) == 0x7f80 && (o[e] & 0x7f) != 0, "bf16 element %d = 0x%04x is not a NaN", e, o[e]);
    free(o);
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
