/* tests/test_nested_report.c: what the report says of a kernel's own
 * pipelines and scopes. An emit_pipeline's steps each pay a grid step's
 * overhead (K3, P9): the report counts them as overhead, not as scalar-unit
 * work, and the op profile's overhead row counts them. run_scoped VMEM
 * (K4) is listed with its peak, in the report and in the compiler-format
 * VMEM report. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../examples/kernels/matmul_emit.h"
#include "helpers.h"

/* matmul_emit cost-only: 1024^3 in 256-tiles, one row panel per outer step. */
static void run_emit(const char *chip, pl_report *rep)
{
    pl_array ins[2] = {PL_ARRAY(NULL, PL_F32, 1024, 1024), PL_ARRAY(NULL, PL_F32, 1024, 1024)};
    pl_array out = PL_ARRAY(NULL, PL_F32, 1024, 1024);
    pl_options opt = {.chip = chip, .cost_only = 1};
    mme_params p;
    pl_kernel_spec k;
    mme_spec(&k, &p, 1024, 1024, 1024, 256, 256, 256);
    int rc = pl_kernel(&k, ins, &out, &opt, rep);
    th_expect_ok(rc, rep);
}

Test(nested_report, K3_P9_emit_pipeline_steps_are_overhead_not_scalar_work)
{
    pl_report r;
    run_emit("v5e", &r);
    const pl_chip *chip = pl_chip_find("v5e");
    /* one core, 4 row panels, each an inner grid (N/bn, K/bk) = (4, 4) */
    cr_assert_eq(r.nested_steps, 64, "nested steps %lld", (long long)r.nested_steps);
    cr_assert_eq(r.scalar_ops, 0, "the inner steps' overhead is not pl_get / pl_set work: %lld",
                 (long long)r.scalar_ops);
    /* every step's fixed cost, the prologue, and a whole number of descriptors and semaphore waits */
    double want = (double)(r.steps + r.nested_steps) * chip->step_overhead_s + chip->prologue_s;
    double issues = (r.overhead_s - want) / chip->dma_issue_s;
    cr_assert(issues > 0 && fabs(issues - round(issues)) < 1e-6, "overhead %g s: %g s of steps and prologue and "
              "%g descriptors and waits", r.overhead_s, want, issues);
    cr_assert(fabs(r.compute_s + r.overhead_s + r.dma_exposed_s - r.time_s) < 1e-9 * r.time_s,
              "compute %g + overhead %g + exposed %g != time %g", r.compute_s, r.overhead_s, r.dma_exposed_s,
              r.time_s);
    cr_assert(r.compute_s >= r.mxu_s * (1 - 1e-12), "compute %g below the MXU's %g", r.compute_s, r.mxu_s);
}

Test(nested_report, K3_the_profile_overhead_row_counts_every_step_and_rows_add_up)
{
    pl_report r;
    run_emit("v6e", &r);
    int over = -1;
    double sum = 0;
    for (int i = 0; i < r.n_profile; i++) {
        if (r.profile[i].cat == PL_PROF_OVERHEAD) over = i;
        cr_assert(r.profile[i].cat != PL_PROF_SCALAR, "row %s is scalar-unit work", r.profile[i].name);
        if (!r.profile[i].overlapped) sum += r.profile[i].time_s;
    }
    cr_assert_geq(over, 0, "no overhead row");
    cr_assert_eq(r.profile[over].count, r.steps + r.nested_steps, "overhead row counts %lld",
                 (long long)r.profile[over].count);
    cr_assert(fabs(sum - r.time_s) < 1e-6 * r.time_s, "rows add to %g, time %g", sum, r.time_s);
}

Test(nested_report, K4_the_scoped_peak_is_reported_and_listed_in_the_vmem_report)
{
    pl_report r;
    run_emit("v5e", &r);
    /* the f32 accumulator (256 x 256) and two slots of a, b and c blocks (256 x 256 f32 each) */
    int64_t blk = 256 * 256 * 4;
    cr_assert_eq(r.scoped_peak_bytes, blk + 2 * 3 * blk, "peak %lld", (long long)r.scoped_peak_bytes);
    cr_assert_eq(r.n_scoped_peak, 2);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert_eq(pl_vmem_report(&r, f), PL_OK);
    pl_report_print(&r, f);
    fclose(f);
    cr_assert(strstr(text, "used 1.75M of 16.00M vmem"), "%s", text);
    cr_assert(strstr(text, "1. Size: 1.50M"), "largest first: %s", text);
    cr_assert(strstr(text, "inside the kernel: pltpu_emit_pipeline: its double buffers"), "%s", text);
    cr_assert(strstr(text, "2. Size: 256.00K"), "%s", text);
    cr_assert(strstr(text, "run_scoped inside the kernel: 1.8 MiB at most"), "%s", text);
    cr_assert(strstr(text, "nested pipelines: 64 emit_pipeline steps"), "%s", text);
    free(text);
}

/* Two scopes one after the other peak at one; nested, at both. */
static void inner_scope(pl_ctx *c, pl_ref *scoped, void *user)
{
    (void)user;
    pl_fill(c, scoped[0], 1.0);
}

static void outer_scope(pl_ctx *c, pl_ref *scoped, void *user)
{
    pl_fill(c, scoped[0], 2.0);
    if (user) pl_run_scoped(c, (const pl_scratch *)user, 1, inner_scope, NULL);
}

static int nested_mode;
static void scopes_body(pl_ctx *c, pl_ref *refs)
{
    (void)refs;
    pl_scratch a = PLTPU_VMEM(PL_F32, 512, 128), b = PLTPU_VMEM(PL_F32, 1024, 128);
    a.name = "a";
    b.name = "b";
    if (nested_mode) {
        pl_run_scoped(c, &a, 1, outer_scope, &b);
    } else {
        pl_run_scoped(c, &a, 1, outer_scope, NULL);
        pl_run_scoped(c, &b, 1, inner_scope, NULL);
    }
}

static void run_scopes(int nested, pl_report *r)
{
    nested_mode = nested;
    pl_kernel_spec k = {.name = "scopes", .body = scopes_body};
    pl_options opt = {.chip = "v5e", .cost_only = 1};
    int rc = pl_kernel(&k, NULL, NULL, &opt, r);
    th_expect_ok(rc, r);
}

Test(nested_report, K4_the_peak_is_what_is_live_at_once)
{
    pl_report r;
    run_scopes(0, &r);
    cr_assert_eq(r.scoped_peak_bytes, 1024 * 128 * 4, "one after the other: the larger, %lld",
                 (long long)r.scoped_peak_bytes);
    cr_assert_eq(r.n_scoped_peak, 1);
    cr_assert(strstr(r.scoped_peak[0].what, "b"), "%s", r.scoped_peak[0].what);
    run_scopes(1, &r);
    cr_assert_eq(r.scoped_peak_bytes, (512 + 1024) * 128 * 4, "nested: both, %lld", (long long)r.scoped_peak_bytes);
    cr_assert_eq(r.n_scoped_peak, 2);
    cr_assert_eq(r.scoped_peak[0].bytes, 512 * 128 * 4, "oldest first");
    cr_assert_eq(r.scoped_peak[1].bytes, 1024 * 128 * 4);
}

Test(nested_report, a_call_without_scopes_reports_none)
{
    pl_call call = th_copy_call_2d(256, 128, 128, 128);
    pl_array in = PL_ARRAY(NULL, PL_F32, 256, 128), out = PL_ARRAY(NULL, PL_F32, 256, 128);
    pl_options opt = {.cost_only = 1};
    pl_report r;
    int rc = pl_pallas_call(&call, &in, &out, &opt, &r);
    th_expect_ok(rc, &r);
    cr_assert_eq(r.scoped_peak_bytes, 0);
    cr_assert_eq(r.n_scoped_peak, 0);
    cr_assert_eq(r.nested_steps, 0);
}
