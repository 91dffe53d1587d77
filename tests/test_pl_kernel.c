/* tests/test_pl_kernel.c: pl_kernel on a TensorCore mesh (K1), sync_copy
 * (K2) and run_scoped (K4). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/tilesim_kernel.h"
#include "helpers.h"

enum { ROWS = 8, COLS = 128 };

/* The quickstart's first kernel: fill VMEM scratch, sync_copy it to HBM. */
static void fill_42(pl_ctx *c, pl_ref *refs)
{
    pl_fill(c, refs[1], 42.0);
    pltpu_sync_copy(c, refs[1], refs[0]);
}

Test(pl_kernel, K1_K2_fill_42_runs_once_on_a_single_core_chip)
{
    float *o = th_f32_fill(ROWS * COLS, 0);
    pl_array out = PL_ARRAY(o, PL_F32, ROWS, COLS);
    pl_kernel_spec k = {.name = "fill_42", .body = fill_42, .n_out = 1, .n_scratch = 1,
                        .scratch = {PLTPU_VMEM(PL_F32, ROWS, COLS)}};
    pl_report rep;
    int rc = pl_kernel(&k, NULL, &out, NULL, &rep);
    th_expect_ok(rc, &rep);
    for (int i = 0; i < ROWS * COLS; i++) cr_assert_eq(o[i], 42.0f, "element %d is %g", i, o[i]);
    cr_assert_eq(rep.cores, 1, "v5e has one TensorCore");
    cr_assert_eq(rep.steps, 1, "no grid: the body runs once per core");
    cr_assert_eq(rep.dma_copies, 1, "sync_copy is one copy");
    cr_assert_eq(rep.dma_bytes, ROWS * COLS * 4);
    cr_assert_gt(rep.time_s, 0);
    free(o);
}

/* Each core writes its index into its own rows of the output. */
static void own_rows(pl_ctx *c, pl_ref *refs)
{
    int core = pl_core_index(c);
    pl_fill(c, refs[1], (double)core + 1);
    pltpu_sync_copy(c, refs[1], pl_ds(c, refs[0], 0, core * ROWS, ROWS));
}

static void run_cores(const char *chip, int want)
{
    float *o = th_f32_fill(2 * ROWS * COLS, 0);
    pl_array out = PL_ARRAY(o, PL_F32, 2 * ROWS, COLS);
    pl_kernel_spec k = {.name = "own_rows", .body = own_rows, .n_out = 1, .n_scratch = 1,
                        .scratch = {PLTPU_VMEM(PL_F32, ROWS, COLS)}};
    pl_options opt = {.chip = chip};
    pl_report rep;
    int rc = pl_kernel(&k, NULL, &out, &opt, &rep);
    th_expect_ok(rc, &rep);
    cr_assert_eq(rep.cores, want, "%s: %d cores ran, want %d", chip, rep.cores, want);
    /* rows no core wrote: the output is a fresh buffer, uninitialized (NaN, V1), and said so */
    for (int r = 0; r < 2 * ROWS; r++)
        for (int j = 0; j < COLS; j++) {
            float w = (float)(r / ROWS + 1), got = o[r * COLS + j];
            if (r / ROWS < want) cr_assert_eq(got, w, "%s: row %d holds %g, want %g", chip, r, got, w);
            else cr_assert(isnan(got), "%s: row %d holds %g, want the poison NaN", chip, r, got);
        }
    cr_expect_eq(rep.n_findings, want < 2, "%s: a NaN left in the output is V1's finding", chip);
    free(o);
}

Test(pl_kernel, K1_runs_once_per_tensorcore_of_a_megacore_v5p) { run_cores("v5p", 2); }
Test(pl_kernel, K1_runs_once_on_v6e) { run_cores("v6e", 1); }

static void *seen_user;
static void user_body(pl_ctx *c, pl_ref *refs)
{
    (void)refs;
    seen_user = pl_kernel_user(c);
}

Test(pl_kernel, K1_the_body_sees_its_own_user_pointer)
{
    int mine = 7;
    float *o = th_f32_fill(ROWS * COLS, 0);
    pl_array out = PL_ARRAY(o, PL_F32, ROWS, COLS);
    pl_kernel_spec k = {.body = user_body, .user = &mine, .n_out = 1};
    pl_report rep;
    th_expect_ok(pl_kernel(&k, NULL, &out, NULL, &rep), &rep);
    cr_assert_eq(seen_user, &mine);
    free(o);
}

Test(pl_kernel, K1_a_missing_body_is_an_error)
{
    float *o = th_f32_fill(ROWS * COLS, 0);
    pl_array out = PL_ARRAY(o, PL_F32, ROWS, COLS);
    pl_kernel_spec k = {.name = "nobody", .n_out = 1};
    pl_report rep;
    int rc = pl_kernel(&k, NULL, &out, NULL, &rep);
    cr_assert_eq(rc, PL_EINVAL, "%d: %s", rc, rep.error);
    cr_assert(rep.error[0]);
    free(o);
}

/* sync_copy between refs of different shapes: an error naming both (M7, K2). */
static void bad_copy(pl_ctx *c, pl_ref *refs)
{
    pltpu_sync_copy(c, pl_ds(c, refs[1], 0, 0, 4), refs[0]);
}

Test(pl_kernel, K2_sync_copy_of_different_shapes_is_an_error)
{
    float *o = th_f32_fill(ROWS * COLS, 0);
    pl_array out = PL_ARRAY(o, PL_F32, ROWS, COLS);
    pl_kernel_spec k = {.name = "bad", .body = bad_copy, .n_out = 1, .n_scratch = 1,
                        .scratch = {PLTPU_VMEM(PL_F32, ROWS, COLS)}};
    pl_report rep;
    int rc = pl_kernel(&k, NULL, &out, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_ESHAPE, "pltpu_sync_copy", "shapes differ", "(4, 128)", "(8, 128)", "K2");
    free(o);
}

/* ---- run_scoped (K4) ------------------------------------------------------------ */

static void scoped_fill(pl_ctx *c, pl_ref *scoped, void *user)
{
    pl_ref *out = user;
    pl_fill(c, scoped[0], 5.0);
    pltpu_sync_copy(c, pl_ds(c, scoped[0], 0, 0, ROWS), *out);
}

static int64_t scoped_rows;
static void scoped_body(pl_ctx *c, pl_ref *refs)
{
    pl_scratch t = PLTPU_VMEM(PL_F32, scoped_rows, COLS);
    t.name = "big";
    pl_ref out = pl_ds(c, refs[0], 0, 0, ROWS);
    for (int i = 0; i < 2; i++) { /* a scope frees its VMEM: the second fits again */
        if (scoped_rows == ROWS) {
            pl_run_scoped(c, &t, 1, scoped_fill, &out);
        } else {
            pl_scratch two[2] = {t, PLTPU_VMEM(PL_F32, ROWS, COLS)};
            pl_run_scoped(c, two, 2, scoped_fill, &out);
        }
    }
}

static int run_scoped_case(int64_t rows, int64_t limit, pl_report *rep, float **o)
{
    scoped_rows = rows;
    *o = th_f32_fill(ROWS * COLS, 0);
    pl_array out = PL_ARRAY(*o, PL_F32, ROWS, COLS);
    pl_kernel_spec k = {.name = "scoped", .body = scoped_body, .n_out = 1, .vmem_limit_bytes = limit};
    return pl_kernel(&k, NULL, &out, NULL, rep);
}

Test(pl_kernel, K4_run_scoped_vmem_is_freed_at_the_end_of_its_scope)
{
    pl_report rep;
    float *o;
    int rc = run_scoped_case(ROWS, ROWS * COLS * 4, &rep, &o); /* exactly the limit, twice in a row */
    th_expect_ok(rc, &rep);
    for (int i = 0; i < ROWS * COLS; i++) cr_assert_eq(o[i], 5.0f);
    free(o);
}

Test(pl_kernel, K4_run_scoped_over_the_scoped_vmem_limit_is_an_error_M4)
{
    pl_report rep;
    float *o;
    int rc = run_scoped_case(2 * ROWS, 3 * ROWS * COLS * 4, &rep, &o); /* 2 + 1 tiles of 8 rows: 3 fit, */
    th_expect_ok(rc, &rep);
    free(o);
    rc = run_scoped_case(3 * ROWS, 3 * ROWS * COLS * 4, &rep, &o); /* 3 + 1 do not */
    TH_EXPECT_ERROR(rc, rep, PL_EVMEM, "pl_run_scoped", "types[1]", "M4", "K4");
    free(o);
}

static void noop_scoped(pl_ctx *c, pl_ref *scoped, void *user) { (void)c, (void)scoped, (void)user; }

static void scoped_of(pl_ctx *c, pl_ref *refs)
{
    (void)refs;
    pl_run_scoped(c, (const pl_scratch *)pl_kernel_user(c), 1, noop_scoped, NULL);
}

/* run_scoped keeps pallas_call's scratch rules: a semaphore array of 1 to
 * 65536 (a billion took 8 GB of host memory), SMEM of 32-bit scalars. */
Test(pl_kernel, K4_run_scoped_types_follow_the_scratch_rules_M1_M2)
{
    pl_scratch types[2] = {PLTPU_SEMAPHORE(1000000000), PLTPU_SMEM(PL_I4, 8)};
    int want[2] = {PL_EINVAL, PL_EDTYPE};
    const char *says[2] = {"1 to 65536", "8, 16 or 32 bits"};
    for (int i = 0; i < 2; i++) {
        float *o = th_f32_fill(ROWS * COLS, 0);
        pl_array out = PL_ARRAY(o, PL_F32, ROWS, COLS);
        pl_kernel_spec k = {.name = "scoped", .body = scoped_of, .user = &types[i], .n_out = 1};
        pl_report rep;
        int rc = pl_kernel(&k, NULL, &out, NULL, &rep);
        TH_EXPECT_ERROR(rc, rep, want[i], "pl_run_scoped: types[0]", says[i]);
        free(o);
    }
}

static void leave_signal(pl_ctx *c, pl_ref *scoped, void *user)
{
    (void)user;
    pltpu_semaphore_signal(c, pl_at(c, scoped[0], 1), 3);
}

static void sem_body(pl_ctx *c, pl_ref *refs)
{
    (void)refs;
    pl_scratch t = PLTPU_SEMAPHORE(2);
    pl_run_scoped(c, &t, 1, leave_signal, NULL);
}

Test(pl_kernel, K4_a_scoped_semaphore_left_nonzero_is_an_error_M10)
{
    float *o = th_f32_fill(ROWS * COLS, 0);
    pl_array out = PL_ARRAY(o, PL_F32, ROWS, COLS);
    pl_kernel_spec k = {.name = "sem", .body = sem_body, .n_out = 1};
    pl_report rep;
    int rc = pl_kernel(&k, NULL, &out, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_ESEMAPHORE, "semaphore 1", "holds 3", "M10", "K4");
    free(o);
}

static void start_no_wait(pl_ctx *c, pl_ref *scoped, void *user)
{
    pl_ref *out = user;
    pl_fill(c, scoped[0], 1.0);
    pltpu_copy cp = pltpu_async_copy(c, scoped[0], *out, pl_at(c, scoped[1], 0));
    pltpu_copy_start(c, &cp);
}

static void inflight_body(pl_ctx *c, pl_ref *refs)
{
    pl_scratch t[2] = {PLTPU_VMEM(PL_F32, ROWS, COLS), PLTPU_SEMAPHORE_DMA(1)};
    pl_run_scoped(c, t, 2, start_no_wait, &refs[0]);
}

Test(pl_kernel, K4_a_copy_still_in_flight_when_its_scope_ends_is_an_error_M10)
{
    float *o = th_f32_fill(ROWS * COLS, 0);
    pl_array out = PL_ARRAY(o, PL_F32, ROWS, COLS);
    pl_kernel_spec k = {.name = "inflight", .body = inflight_body, .n_out = 1};
    pl_options opt = {.dma_mode = PL_DMA_ON_WAIT}; /* the data would move at a wait, after the free */
    pl_report rep;
    int rc = pl_kernel(&k, NULL, &out, &opt, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_ESEMAPHORE, "still in flight", "run_scoped", "M10", "K4");
    free(o);
}

Test(pl_kernel, K1_a_null_spec_is_an_error_not_a_crash)
{
    float *o = th_f32_fill(ROWS * COLS, 0);
    pl_array out = PL_ARRAY(o, PL_F32, ROWS, COLS);
    pl_report rep;
    int rc = pl_kernel(NULL, NULL, &out, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "spec is NULL");
    free(o);
}

static void null_body_kernel(pl_ctx *c, pl_ref *refs)
{
    pltpu_pipeline p = {.grid_rank = 1, .grid = {1}};
    pltpu_emit_pipeline(c, &p, refs, refs, NULL, NULL);
}

Test(pl_kernel, K3_emit_pipeline_without_a_body_is_an_error)
{
    float *o = th_f32_fill(ROWS * COLS, 0);
    pl_array out = PL_ARRAY(o, PL_F32, ROWS, COLS);
    pl_kernel_spec k = {.name = "nobody", .body = null_body_kernel, .n_out = 1};
    pl_report rep;
    int rc = pl_kernel(&k, NULL, &out, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "pltpu_emit_pipeline", "the body is NULL", "K3");
    free(o);
}

static void use_missing(pl_ctx *c, pl_ref *scoped, void *user)
{
    (void)user;
    pl_fill(c, scoped[1], 0.0); /* only scoped[0] was asked for */
}

static void missing_body(pl_ctx *c, pl_ref *refs)
{
    (void)refs;
    pl_scratch t = PLTPU_VMEM(PL_F32, ROWS, COLS);
    pl_run_scoped(c, &t, 1, use_missing, NULL);
}

Test(pl_kernel, K4_a_scoped_ref_past_the_last_is_an_error_not_garbage)
{
    float *o = th_f32_fill(ROWS * COLS, 0);
    pl_array out = PL_ARRAY(o, PL_F32, ROWS, COLS);
    pl_kernel_spec k = {.name = "missing", .body = missing_body, .n_out = 1};
    pl_report rep;
    int rc = pl_kernel(&k, NULL, &out, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "pl_fill", "does not exist");
    free(o);
}
