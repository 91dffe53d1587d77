/* A copy's handle is a value the kernel holds (kernel/pltpu.h): one changed
 * after pltpu_async_copy or pltpu_make_async_remote_copy checked it, with
 * sides that no longer match its byte count or each other, is refused at
 * its start or wait (rule M7), never copied past a buffer's end. */
#include <criterion/criterion.h>
#include <string.h>

#include "../kernel/pltpu.h"
#include "helpers.h"

enum { ROWS = 8, COLS = 128 };

static int run_one(pl_kernel_fn kernel, pl_report *rep)
{
    th_io io = th_io_2d(2 * ROWS, COLS);
    pl_call call = {
        .name = "handles", .kernel = kernel, .grid_rank = 1, .grid = {1},
        .n_in = 1, .in = {{.space = PL_ANY}}, .n_out = 1, .out = {{.space = PL_ANY}},
        .n_scratch = 2, .scratch = {PLTPU_VMEM(PL_F32, ROWS, COLS), PLTPU_SEMAPHORE_DMA(2)},
    };
    int rc = pl_pallas_call(&call, &io.a, &io.o, NULL, rep);
    th_io_free(&io);
    return rc;
}

/* made from 8 rows of x into the 8-row scratch, then the source widened to all 16 rows */
static void wider_source(pl_ctx *c, pl_ref *refs)
{
    pltpu_copy cp = pltpu_async_copy(c, pl_ds(c, refs[0], 0, 0, ROWS), refs[2], pl_at(c, refs[3], 0));
    cp.src = refs[0];
    pltpu_copy_start(c, &cp);
}

static void negative_bytes(pl_ctx *c, pl_ref *refs)
{
    pltpu_copy cp = pltpu_async_copy(c, pl_ds(c, refs[0], 0, 0, ROWS), refs[2], pl_at(c, refs[3], 0));
    pltpu_copy_start(c, &cp);
    cp.bytes = -5;
    pltpu_copy_wait(c, &cp);
}

static void wider_remote(pl_ctx *c, pl_ref *refs)
{
    pltpu_remote_copy cp = pltpu_make_async_remote_copy(c, pl_ds(c, refs[0], 0, 0, ROWS), refs[2],
                                                        pl_at(c, refs[3], 0), pl_at(c, refs[3], 1), 0);
    cp.src = refs[1];
    pltpu_remote_copy_start(c, &cp);
}

Test(dma_handles, a_source_widened_after_the_copy_was_made_is_refused_M7)
{
    pl_report rep;
    cr_assert_eq(run_one(wider_source, &rep), PL_ESHAPE, "%s", rep.error);
    cr_expect(strstr(rep.error, "pltpu_copy_start") && strstr(rep.error, "shapes differ"), "%s", rep.error);
}

Test(dma_handles, a_byte_count_changed_after_the_copy_was_made_is_refused_M7)
{
    pl_report rep;
    cr_assert_eq(run_one(negative_bytes, &rep), PL_EINVAL, "%s", rep.error);
    cr_expect(strstr(rep.error, "pltpu_copy_wait") && strstr(rep.error, "changed after it was made") &&
              strstr(rep.error, "-5"), "%s", rep.error);
}

Test(dma_handles, a_remote_copy_widened_after_it_was_made_is_refused_M7)
{
    pl_report rep;
    cr_assert_eq(run_one(wider_remote, &rep), PL_ESHAPE, "%s", rep.error);
    cr_expect(strstr(rep.error, "pltpu_remote_copy_start"), "%s", rep.error);
}

/* JAX's test_unused_dma_descriptor_error: a descriptor made and never
 * started or waited runs, and JAX logs "AsyncCopyDescriptor was not used";
 * here a finding citing M7. One rebuilt only to wait on is used. */
static void made_only(pl_ctx *c, pl_ref *refs)
{
    (void)pltpu_async_copy(c, pl_ds(c, refs[0], 0, 0, ROWS), refs[2], pl_at(c, refs[3], 0));
}

static void rebuilt_for_the_wait(pl_ctx *c, pl_ref *refs)
{
    pltpu_copy cp = pltpu_async_copy(c, pl_ds(c, refs[0], 0, 0, ROWS), refs[2], pl_at(c, refs[3], 0));
    pltpu_copy_start(c, &cp);
    pltpu_copy same = pltpu_async_copy(c, pl_ds(c, refs[0], 0, 0, ROWS), refs[2], pl_at(c, refs[3], 0));
    pltpu_copy_wait(c, &same);
}

static int unused_findings(const pl_report *rep)
{
    int n = 0;
    for (int i = 0; i < rep->n_findings && i < PL_MAX_FINDINGS; i++)
        if (strstr(rep->findings[i].msg, "never started or waited")) {
            cr_expect_str_eq(rep->findings[i].rule, "M7");
            cr_expect_eq(rep->findings[i].kind, PL_FIND_UNUSED_COPY);
            cr_expect(strstr(rep->findings[i].msg, "AsyncCopyDescriptor was not used"), "%s", rep->findings[i].msg);
            n++;
        }
    return n;
}

/* The distributed guide's kernels make every descriptor at every grid step
 * and use each under its own pl.when: JAX logs nothing (each is used
 * somewhere), so neither does tilesim; a kind used at no step still is. */
static int g_use_b;
static void each_made_some_used(pl_ctx *c, pl_ref *refs)
{
    int64_t i = pl_program_id(c, 0);
    pltpu_copy a = pltpu_async_copy(c, pl_ds(c, refs[0], 0, 0, ROWS), refs[2], pl_at(c, refs[3], 0));
    pltpu_copy b = pltpu_async_copy(c, pl_ds(c, refs[0], 0, ROWS, ROWS), refs[2], pl_at(c, refs[3], 1));
    if (i == 0 || !g_use_b) pltpu_copy_start(c, &a), pltpu_copy_wait(c, &a);
    else pltpu_copy_start(c, &b), pltpu_copy_wait(c, &b);
}

Test(dma_handles, descriptors_made_at_every_step_and_used_at_some_are_no_finding_M7)
{
    th_io io = th_io_2d(2 * ROWS, COLS);
    pl_call call = {
        .name = "guide_like", .kernel = each_made_some_used, .grid_rank = 1, .grid = {2},
        .n_in = 1, .in = {{.space = PL_ANY}}, .n_out = 1, .out = {{.space = PL_ANY}},
        .n_scratch = 2, .scratch = {PLTPU_VMEM(PL_F32, ROWS, COLS), PLTPU_SEMAPHORE_DMA(2)},
    };
    pl_report rep;
    g_use_b = 1;
    cr_assert_eq(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), PL_OK, "%s", rep.error);
    cr_expect_eq(unused_findings(&rep), 0, "b is used at step 1, a at step 0");
    g_use_b = 0;
    cr_assert_eq(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), PL_OK, "%s", rep.error);
    cr_expect_eq(unused_findings(&rep), 1, "b is used at no step");
    th_io_free(&io);
}

Test(dma_handles, a_descriptor_never_started_or_waited_is_a_finding_M7)
{
    pl_report rep;
    cr_assert_eq(run_one(made_only, &rep), PL_OK, "%s", rep.error);
    cr_expect_eq(unused_findings(&rep), 1);
    cr_assert_eq(run_one(rebuilt_for_the_wait, &rep), PL_OK, "%s", rep.error);
    cr_expect_eq(unused_findings(&rep), 0);
}
