/* tests/test_memview.c: the memory viewer (sim/tilesim_memview.h, issue 14):
 * VMEM live over the steps of a run from the pipeline's own record, the peak
 * against the budget validation computes (M4), the live set at the peak,
 * double buffering (P6, P8), scratch (M2), single buffers and skipped copies
 * (P2, P6), HBM arrays with aliases counted once (M6). The JSON and the SVG
 * are tested in test_memview_out.c,
 * `tilesim memory KERNEL` in test_memview_cli.c. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../examples/kernels/registry.h"
#include "../sim/kdef.h"
#include "../sim/tilesim_memview.h"
#include "run.h"
#include "test_memview.h"

/* helpers: tests/test_memview.h */

/* ---- the peak against the budget (M4) ---------------------------------------------------- */

Test(memview, reserved_is_the_budget_and_the_live_peak_reaches_it_on_most_builtins)
{
    int full = 0;
    for (int i = 0; i < ex_kernel_count(); i++) {
        const pl_kernel_def *d = ex_kernel_at(i);
        pl_memview mv;
        pl_report rep;
        view_kernel(d->name, NULL, NULL, &mv, &rep);
        cr_expect_eq(mv.reserved_bytes, rep.vmem_bytes, "%s: reserved %lld, budget (M4) %lld", d->name,
                     (long long)mv.reserved_bytes, (long long)rep.vmem_bytes);
        pl_kernel_build *b = built();
        if (b->call.num_scalar_prefetch == 0) { /* pl_validate alone: the budget before anything runs */
            pl_report vrep;
            pl_options vopt = {.cost_only = 1}; /* the arrays have no data */
            cr_assert_eq(pl_validate(&b->call, b->args, b->outs, &vopt, &vrep), PL_OK, "%s", vrep.error);
            cr_expect_eq(mv.reserved_bytes, vrep.vmem_bytes, "%s: pl_validate's budget", d->name);
        }
        cr_expect_leq(mv.peak_bytes, rep.vmem_bytes, "%s", d->name);
        if (peak_is_budget(d->name)) {
            full++;
            cr_expect_eq(mv.peak_bytes, rep.vmem_bytes, "%s: peak %lld, budget (M4) %lld", d->name,
                         (long long)mv.peak_bytes, (long long)rep.vmem_bytes);
        }
        cr_expect_eq(mv.vmem_limit, rep.vmem_limit, "%s", d->name);
        cr_expect_eq(mv.n_steps, rep.steps, "%s: one record per grid step (G1)", d->name);
        for (int64_t s = 0; s < mv.n_steps; s++)
            cr_expect_eq(mv.steps[s].live_bytes, live_sum(&mv, s), "%s step %lld", d->name, (long long)s);
        pl_memview_free(&mv);
    }
    cr_expect_geq(full, 8, "the built-ins checked at their budget");
}

/* flash_attention: q (i) and o (i) change every 4 steps. q's next block is
 * copied in the step before it is needed (P8), o's next block starts at
 * that step: so q's two slots are live at step 3, o's two at step 4
 * (write-back in flight, P3), never all four at once. The budget counts
 * all four; the live peak is one q-sized slot lower. */
Test(memview, flash_attention_never_holds_every_slot_at_once)
{
    pl_memview mv;
    pl_report rep;
    view_kernel("flash_attention", NULL, NULL, &mv, &rep);
    cr_expect_eq(state_at(&mv, 3, "q[1]"), PL_SLOT_INFLIGHT);
    cr_expect_eq(state_at(&mv, 3, "o[1]"), PL_SLOT_EMPTY);
    cr_expect_eq(state_at(&mv, 4, "q[0]"), PL_SLOT_STALE);
    cr_expect_eq(state_at(&mv, 4, "o[0]"), PL_SLOT_WRITEBACK);
    cr_expect_eq(mv.peak_bytes, rep.vmem_bytes - 128 * 128 * 4);
    pl_memview_free(&mv);
}

Test(memview, a_budget_raised_by_the_block_size_raises_the_peak_alike)
{
    pl_memview mv;
    pl_report rep;
    view_kernel("add", "br=128", NULL, &mv, &rep);
    int64_t small = mv.peak_bytes;
    cr_expect_eq(small, rep.vmem_bytes);
    pl_memview_free(&mv);
    view_kernel("add", "br=512", NULL, &mv, &rep);
    cr_expect_eq(mv.peak_bytes, rep.vmem_bytes);
    cr_expect_eq(mv.peak_bytes, 4 * small, "blocks 4x the rows: 4x the bytes (%lld vs %lld)",
                 (long long)mv.peak_bytes, (long long)small);
    pl_memview_free(&mv);
}

/* ---- what is live at the peak ------------------------------------------------------------ */

/* matmul at its defaults: grid (2, 2, 2), x (i, k), y (k, j), o (i, j), acc.
 * Step 2 is the first with every slot live: o's first block is being written
 * back (P3) while its second is current, and x, y each hold the current
 * block and the next one's copy (P8). */
Test(memview, the_live_set_at_the_peak_of_a_matmul)
{
    pl_memview mv;
    pl_report rep;
    view_kernel("matmul", NULL, NULL, &mv, &rep);
    cr_assert_eq(mv.peak_step, 2, "peak at step %lld", (long long)mv.peak_step);
    cr_expect_eq(mv.steps[2].idx[0], 0);
    cr_expect_eq(mv.steps[2].idx[1], 1);
    cr_expect_eq(mv.steps[2].idx[2], 0);
    cr_expect_eq(state_at(&mv, 2, "o[0]"), PL_SLOT_WRITEBACK);
    cr_expect_eq(state_at(&mv, 2, "o[1]"), PL_SLOT_CURRENT);
    cr_expect_eq(state_at(&mv, 2, "acc"), PL_SLOT_SCRATCH);
    cr_expect_eq(state_at(&mv, 1, "o[1]"), PL_SLOT_EMPTY, "o's second slot is not reached before step 2");
    int live = 0;
    for (int a = 0; a < mv.n_allocs; a++) live += pl_memview_live(&mv, 2, a);
    cr_expect_eq(live, 7, "x, y, o two slots each, and acc");
    int x0 = find_alloc(&mv, "x[0]");
    cr_expect_eq(mv.allocs[x0].rank, 2);
    cr_expect_eq(mv.allocs[x0].shape[0], 256);
    cr_expect_eq(mv.allocs[x0].dtype, PL_F32);
    cr_expect_eq(mv.allocs[x0].bytes, 256 * 256 * 4);
    cr_expect_eq(mv.allocs[x0].padded_bytes, 256 * 256 * 4);
    /* the text names the peak and each live allocation */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert_eq(pl_memview_print(&mv, f), PL_OK);
    fclose(f);
    cr_expect(strstr(text, "peak") && strstr(text, "step 2") && strstr(text, "o[0]") && strstr(text, "write-back"),
              "%s", text);
    free(text);
    pl_memview_free(&mv);
}

Test(memview, padded_bytes_of_a_one_row_block_and_p6_single_buffer)
{
    pl_memview mv;
    pl_report rep;
    view_kernel("rmsnorm", NULL, NULL, &mv, &rep);
    int g = find_alloc(&mv, "gamma[0]");
    cr_expect_eq(mv.allocs[g].bytes, 512 * 4);
    cr_expect_eq(mv.allocs[g].padded_bytes, 8 * 512 * 4, "1 row pads to 8 sublanes (T6)");
    for (int a = 0; a < mv.n_allocs; a++)
        cr_expect_neq(strcmp(mv.allocs[a].name, "gamma[1]"), 0, "gamma's block never changes: one slot (P6)");
    cr_expect_eq(mv.allocs[g].live_steps, mv.n_steps, "its one copy serves every step (P2)");
    pl_memview_free(&mv);
}

/* ---- double buffering, Buffered(1), skipped copies ----------------------------------------- */

Test(memview, double_buffering_shows_two_slots_of_an_input_live)
{
    pl_call call = copy_rows(0, 0);
    pl_memview mv;
    pl_report rep;
    view_call(&call, NULL, &mv, &rep);
    cr_expect_eq(state_at(&mv, 0, "in0[0]"), PL_SLOT_CURRENT);
    cr_expect_eq(state_at(&mv, 0, "in0[1]"), PL_SLOT_INFLIGHT, "step 1's copy is issued in step 0 (P8)");
    cr_expect_eq(state_at(&mv, 1, "in0[1]"), PL_SLOT_CURRENT);
    cr_expect_eq(state_at(&mv, 1, "in0[0]"), PL_SLOT_INFLIGHT);
    cr_expect_eq(state_at(&mv, 7, "in0[1]"), PL_SLOT_CURRENT);
    cr_expect_eq(state_at(&mv, 7, "in0[0]"), PL_SLOT_STALE, "nothing comes after the last step");
    cr_expect_eq(mv.peak_bytes, rep.vmem_bytes);
    cr_expect_eq(mv.steps[7].live_bytes, rep.vmem_bytes - 8 * 128 * 4, "one input slot fewer at the end");
    pl_memview_free(&mv);
}

Test(memview, buffered_1_holds_one_slot_and_no_copy_ahead)
{
    pl_call call = copy_rows(1, 0);
    pl_memview mv;
    pl_report rep;
    view_call(&call, NULL, &mv, &rep);
    for (int a = 0; a < mv.n_allocs; a++) cr_expect_neq(strcmp(mv.allocs[a].name, "in0[1]"), 0, "Buffered(1)");
    for (int64_t s = 0; s < mv.n_steps; s++)
        cr_expect_eq(state_at(&mv, s, "in0[0]"), PL_SLOT_CURRENT, "step %lld: copied in at its own step",
                     (long long)s);
    cr_expect_eq(mv.reserved_bytes, rep.vmem_bytes);
    cr_expect_eq(mv.peak_bytes, rep.vmem_bytes);
    pl_memview_free(&mv);
}

Test(memview, a_block_that_never_changes_leaves_its_second_slot_empty)
{
    pl_call call = copy_rows(2, 1); /* Buffered(2) asked for, yet one block for the whole grid: copies skipped (P2) */
    pl_memview mv;
    pl_report rep;
    view_call(&call, NULL, &mv, &rep);
    cr_expect_eq(rep.op[0].skipped, 7);
    for (int64_t s = 0; s < mv.n_steps; s++) {
        cr_expect_eq(state_at(&mv, s, "in0[0]"), PL_SLOT_CURRENT);
        cr_expect_eq(state_at(&mv, s, "in0[1]"), PL_SLOT_EMPTY, "step %lld", (long long)s);
    }
    cr_expect_eq(mv.reserved_bytes, rep.vmem_bytes, "the budget still counts both (M4)");
    cr_expect_eq(mv.peak_bytes, rep.vmem_bytes - 8 * 128 * 4, "the peak lacks the slot never filled");
    cr_expect_eq(mv.allocs[find_alloc(&mv, "in0[1]")].live_steps, 0);
    pl_memview_free(&mv);
}

/* ---- scratch (M2) and HBM (M6) --------------------------------------------------------------- */

Test(memview, scratch_is_live_at_every_step_and_counted_padded)
{
    pl_call call = copy_rows(0, 0);
    pl_memview plain, with;
    pl_report rep;
    view_call(&call, NULL, &plain, &rep);
    call.n_scratch = 1;
    call.scratch[0] = PLTPU_VMEM(PL_F32, 3, 100); /* (3, 100) pads to (8, 128) */
    call.scratch[0].name = "tmp";
    view_call(&call, NULL, &with, &rep);
    int t = find_alloc(&with, "tmp");
    cr_expect_eq(with.allocs[t].kind, PL_MEM_SCRATCH);
    cr_expect_eq(with.allocs[t].bytes, 3 * 100 * 4);
    cr_expect_eq(with.allocs[t].padded_bytes, 8 * 128 * 4);
    cr_expect_eq(with.allocs[t].live_steps, with.n_steps);
    cr_expect_eq(with.peak_bytes, plain.peak_bytes + 8 * 128 * 4);
    cr_expect_eq(with.reserved_bytes, rep.vmem_bytes);
    cr_expect_eq(with.internal_scratch_bytes, 0, "not modelled: said, not guessed");
    pl_memview_free(&plain);
    pl_memview_free(&with);
}

Test(memview, hbm_arrays_with_an_alias_counted_once)
{
    pl_call call = copy_rows(0, 0);
    call.n_alias = 1;
    call.alias[0].in = 0;
    call.alias[0].out = 0;
    pl_memview mv;
    pl_report rep;
    view_call(&call, NULL, &mv, &rep);
    cr_assert_eq(mv.n_hbm, 2);
    cr_expect_eq(mv.hbm[0].role, PL_ROLE_IN);
    cr_expect_eq(mv.hbm[1].role, PL_ROLE_OUT);
    cr_expect_eq(mv.hbm[1].alias_of, 0, "the output shares the input's buffer (M6)");
    cr_expect_eq(mv.hbm[0].bytes, 64 * 128 * 4);
    cr_expect_eq(mv.hbm_bytes, 64 * 128 * 4, "counted once");
    cr_expect_eq(mv.hbm_physical, (int64_t)pl_chip_default()->hbm_bytes);
    pl_memview_free(&mv);
}

Test(memview, megacore_steps_carry_their_core)
{
    pl_call call = copy_rows(0, 0);
    call.semantics[0] = PL_PARALLEL;
    pl_memview mv;
    pl_report rep;
    view_call(&call, "v4", &mv, &rep);
    cr_assert_eq(mv.n_steps, 8);
    cr_expect_eq(mv.steps[0].core, 0);
    cr_expect_eq(mv.steps[7].core, 1, "core 1's steps follow core 0's (G4)");
    cr_expect_eq(mv.steps[4].core_step, 0);
    cr_expect_eq(state_at(&mv, 4, "in0[0]"), PL_SLOT_CURRENT, "core 1 starts its own pipeline in its own VMEM");
    cr_expect_eq(mv.peak_bytes, rep.vmem_bytes);
    pl_memview_free(&mv);
}

Test(memview, a_rejected_call_gives_its_error)
{
    pl_call call = copy_rows(0, 0);
    call.vmem_limit_bytes = 4096; /* far under the blocks (M4) */
    pl_array a = PL_ARRAY(NULL, PL_F32, 64, 128), o = PL_ARRAY(NULL, PL_F32, 64, 128);
    pl_memview mv;
    pl_report rep;
    int rc = pl_memview_call(&call, &a, &o, NULL, &mv, &rep);
    cr_expect_eq(rc, PL_EVMEM);
    cr_expect_eq(mv.status, PL_EVMEM);
    cr_expect(strstr(mv.error, "M4"), "%s", mv.error);
    cr_expect_eq(pl_memview_svg(&mv, stdout), PL_EINVAL, "no chart of a run that did not happen");
    pl_memview_free(&mv);
    cr_expect_eq(pl_memview_call(NULL, &a, &o, NULL, &mv, NULL), PL_EINVAL);
    cr_expect(mv.error[0]);
    pl_memview_free(&mv);
}

/* The page of --html records the steps too: a recorder already in the
 * options is kept and still sees every step, the final one included. */
static void count_steps(const pl_step_info *info, void *user)
{
    int *n = user;
    n[info->final ? 1 : 0]++;
}

Test(memview, a_recorder_already_in_the_options_still_sees_every_step)
{
    pl_call call = copy_rows(0, 0);
    pl_array a = PL_ARRAY(NULL, PL_F32, 64, 128), o = PL_ARRAY(NULL, PL_F32, 64, 128);
    int n[2] = {0, 0};
    pl_options opt = {.cost_only = 1, .on_step = count_steps, .on_step_user = n};
    pl_memview mv;
    pl_report rep;
    cr_assert_eq(pl_memview_recorder(&mv, &opt), PL_OK);
    cr_assert_eq(pl_pallas_call(&call, &a, &o, &opt, &rep), PL_OK, "%s", rep.error);
    cr_assert_eq(pl_memview_finish(&mv, &call, &a, &o, &rep), PL_OK, "%s", mv.error);
    cr_expect_eq(n[0], 8, "the other recorder saw %d steps", n[0]);
    cr_expect_eq(n[1], 1, "and the final call");
    cr_expect_eq(mv.n_steps, 8);
    pl_memview_free(&mv);
}
