/* tests/test_errors_call.c: the error model, part one: errors in the call's
 * description. Every PL_E* code has its own name; a call that fails
 * validation (B2, M1, M4, T1) runs nothing and leaves its outputs untouched;
 * index maps that leave a dimension unset or point past the array (B2, B7)
 * and revisits of a written-back output block (P5) are caught at run time,
 * with messages that name where.
 *
 * PL_ERACE, PL_EDEADLOCK and PL_ENOMEM are tested with the features that
 * raise them: test_dma.c (M10 deadlocks, DMA races), test_jax_cores.c
 * (megacore races, V4) and test_harden_ux.c (the host running out).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

#define MiB (1024LL * 1024LL)
#define S(...) ((const char *const[]){__VA_ARGS__, NULL})

/* ---- the status codes ------------------------------------------------------------ */

/* Every code from PL_OK down to PL_STATUS_MIN has its own name, never the
 * text of an unknown code; the code just past PL_STATUS_MIN has none, so a
 * code added without moving PL_STATUS_MIN (or without a name) fails here. */
Test(errors, every_status_code_has_a_distinct_name)
{
    const char *unknown = pl_strerror(12345);
    cr_assert(unknown && unknown[0]);
    cr_assert(PL_STATUS_MIN < PL_OK);
    for (int a = PL_OK; a >= PL_STATUS_MIN; a--) {
        const char *na = pl_strerror(a);
        cr_assert(na && na[0], "pl_strerror(%d) is empty", a);
        cr_assert_str_neq(na, unknown, "pl_strerror(%d) names no code: \"%s\"", a, na);
        for (int b = a - 1; b >= PL_STATUS_MIN; b--)
            cr_assert_str_neq(na, pl_strerror(b), "codes %d and %d share the name \"%s\"", a, b, na);
    }
    cr_assert_str_eq(pl_strerror(PL_STATUS_MIN - 1), unknown,
                     "pl_strerror(%d) has a name: PL_STATUS_MIN (%d) is not the last code", PL_STATUS_MIN - 1,
                     PL_STATUS_MIN);
    cr_assert_str_eq(pl_strerror(1), unknown, "positive codes are not status codes");
}

/* ---- failures found before running: nothing runs, outputs stay untouched --------- */

/* Run the 16x256 copy call in (8, 128) blocks after `mutate`; validation must
 * fail with `code` and the substrings, the kernel must never run, and the
 * output must still hold TH_SENTINEL everywhere. */
static void expect_rejected(void (*mutate)(pl_call *, pl_options *), int code, const char *const *subs)
{
    th_io io = th_io_2d(16, 256);
    int runs = 0;
    pl_call call = th_copy_call_2d(16, 256, 8, 128);
    call.kernel = th_count_copy_kernel;
    call.user = &runs;
    pl_options opt = {0};
    mutate(&call, &opt);
    pl_report rep;
    int rc = pl_pallas_call(&call, &io.a, &io.o, &opt, &rep);
    th_expect_error(rc, &rep, code, subs);
    cr_assert_eq(runs, 0, "the kernel ran %d times", runs);
    cr_assert_eq(rep.steps, 0);
    cr_assert_eq(th_io_touched(&io), 0, "a rejected call wrote %lld output elements", (long long)th_io_touched(&io));
    th_io_free(&io);
}

static void grid_axis_0(pl_call *c, pl_options *o) { (void)o, c->grid[0] = 0; }
static void unknown_chip(pl_call *c, pl_options *o) { (void)c, o->chip = "tpu-v0"; }
static void out_block_64_wide(pl_call *c, pl_options *o) { (void)o, c->out[0] = PL_BLOCK(PL_MAP(0, 1), 8, 64); }
static void map_axis_3(pl_call *c, pl_options *o) { (void)o, c->out[0].map = PL_MAP(3, 1); }
static void smem_i4_scratch(pl_call *c, pl_options *o)
{
    (void)o;
    c->n_scratch = 1;
    c->scratch[0] = PLTPU_SMEM(PL_I4, 8);
}
static void scratch_16MiB(pl_call *c, pl_options *o)
{
    (void)o;
    c->n_scratch = 1;
    c->scratch[0] = PLTPU_VMEM(PL_F32, 2048, 2048);
}

Test(errors, EINVAL_rejected_call_leaves_output_untouched)
{
    expect_rejected(grid_axis_0, PL_EINVAL, S("copy2d", "grid axis 0 has size 0"));
    expect_rejected(unknown_chip, PL_EINVAL, S("unknown chip 'tpu-v0'"));
}

Test(errors, EBLOCKSHAPE_rejected_call_leaves_output_untouched)
{
    expect_rejected(out_block_64_wide, PL_EBLOCKSHAPE, S("out0", "(8, 64)", "(16, 256)", "rule T1"));
}

Test(errors, EINDEXMAP_B2_rejected_call_leaves_output_untouched)
{
    expect_rejected(map_axis_3, PL_EINDEXMAP, S("out0", "grid axis 3", "rule B2"));
}

Test(errors, EVMEM_rejected_call_leaves_output_untouched)
{
    expect_rejected(scratch_16MiB, PL_EVMEM, S("VMEM budget exceeded", "scratch0", "rule M4"));
}

Test(errors, EDTYPE_rejected_call_leaves_output_untouched)
{
    expect_rejected(smem_i4_scratch, PL_EDTYPE, S("scratch0", "int4", "storage dtype"));
}

/* ---- index maps at run time: B2 and B7 ------------------------------------------- */

/* A 1-D grid over a (16, 128) f32 copy in (8, 128) blocks; the input's map
 * is `in_map`, the output's a constant block (0, 0) so that it stays legal. */
static int run_map(pl_index_map in_map, int64_t steps, th_io *io, pl_report *rep)
{
    *io = th_io_2d(16, 128);
    pl_call call = {
        .name = "maps", .kernel = th_copy_kernel,
        .grid_rank = 1, .grid = {steps},
        .n_in = 1, .in = {PL_BLOCK(in_map, 8, 128)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 8, 128)},
    };
    return pl_pallas_call(&call, &io->a, &io->o, NULL, rep);
}

Test(errors, EINDEXMAP_B7_block_index_past_the_array)
{
    th_io io;
    pl_report rep;
    int rc = run_map(PL_MAP(0, PL_ZERO), 3, &io, &rep); /* 2 row blocks; grid point (2) asks for a third */
    TH_EXPECT_ERROR(rc, rep, PL_EINDEXMAP, "in0", "grid point (2)", "block index (2, 0)", "dimension 0",
                    "0..1", "rule B7");
    cr_assert_eq(rep.steps, 0, "a declarative map is checked before anything runs (T7): %lld steps ran",
                 (long long)rep.steps);
    th_io_free(&io);
}

static void past_end_map(const int64_t *g, const pl_ref *pf, int64_t *b, void *u)
{
    (void)pf, (void)u;
    b[0] = g[0];
    b[1] = 0;
}

/* A function-form map can only be checked as it runs: the grid points
 * before the bad one run, and the error names the one that failed. */
Test(errors, EINDEXMAP_B7_function_map_caught_at_run_time)
{
    th_io io;
    pl_report rep;
    int rc = run_map(PL_MAP_FN(past_end_map, NULL), 3, &io, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINDEXMAP, "in0", "grid point (2)", "block index (2, 0)", "dimension 0", "0..1",
                    "rule B7");
    cr_assert_eq(rep.steps, 2, "grid points before the bad one must run: %lld", (long long)rep.steps);
    th_io_free(&io);
}

static void negative_map(const int64_t *g, const pl_ref *pf, int64_t *b, void *u)
{
    (void)pf, (void)u;
    b[0] = g[0] - 1;
    b[1] = 0;
}

Test(errors, EINDEXMAP_B7_negative_block_index)
{
    th_io io;
    pl_report rep;
    int rc = run_map(PL_MAP_FN(negative_map, NULL), 2, &io, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINDEXMAP, "in0", "grid point (0)", "block index (-1, 0)", "rule B7");
    cr_assert_eq(rep.steps, 0);
    th_io_free(&io);
}

static void half_map(const int64_t *g, const pl_ref *pf, int64_t *b, void *u)
{
    (void)pf, (void)u;
    b[0] = g[0]; /* dimension 1 left unset */
}

Test(errors, EINDEXMAP_B2_function_map_leaves_a_dimension_unset)
{
    th_io io;
    pl_report rep;
    int rc = run_map(PL_MAP_FN(half_map, NULL), 2, &io, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINDEXMAP, "in0", "grid point (0)", "left dimension 1 unset", "rule B2");
    th_io_free(&io);
}

/* ---- P5: revisiting an output block after its write-back --------------------------- */

/* Output block row per grid point: 1, 2, then 1 again. */
static void revisit_map(const int64_t *g, const pl_ref *pf, int64_t *b, void *u)
{
    (void)pf, (void)u;
    static const int64_t rows[] = {1, 2, 1};
    b[0] = rows[g[0]];
    b[1] = 0;
}

Test(errors, EREVISIT_names_both_grid_points)
{
    th_io io = th_io_2d(24, 128);
    pl_call call = {
        .name = "revisit", .kernel = th_copy_kernel,
        .grid_rank = 1, .grid = {3},
        .n_in = 1, .in = {PL_BLOCK(PL_MAP_FN(revisit_map, NULL), 8, 128)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP_FN(revisit_map, NULL), 8, 128)},
    };
    call.out[0].name = "acc_out";
    pl_report rep;
    int rc = pl_pallas_call(&call, &io.a, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EREVISIT, "acc_out", "grid point (2) selects output block (1, 0) again",
                    "after grid point (0)", "rule P5");
    cr_assert_eq(rep.steps, 2);
    cr_assert_eq(rep.op[1].writebacks, 2);
    th_io_free(&io);
}

/* The control: an output block visited at consecutive grid points (the
 * reduction axis last) is one visit, not a revisit. */
static void strip_kernel(pl_ctx *c, pl_ref *refs)
{
    int64_t j = pl_program_id(c, 1);
    pl_copy(c, pl_ds(c, refs[1], 1, j * 128, 128), refs[0]);
}

Test(errors, EREVISIT_not_raised_for_consecutive_visits)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = {
        .name = "strips", .kernel = strip_kernel,
        .grid_rank = 2, .grid = {2, 2},
        .n_in = 1, .in = {PL_BLOCK(PL_MAP(0, 1), 8, 128)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 256)},
    };
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), &rep);
    cr_assert_eq(th_f32_diff(io.in, io.out, io.n), 0);
    cr_assert_eq(rep.op[1].writebacks, 2);
    th_io_free(&io);
}
