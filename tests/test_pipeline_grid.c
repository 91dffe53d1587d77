/* tests/test_pipeline_grid.c: the grid walk (G1, G2) and how input blocks
 * come in: the slice the index map selects (P1), and no copy when the block
 * did not change (P2).
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
