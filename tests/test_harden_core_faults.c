/* tests/test_harden_core_faults.c: issue 8, the simulator's core under
 * extreme but legal input: no undefined behaviour on views of data-less or
 * empty refs, index maps that return INT64_MIN or leave a dimension unset
 * are reported (B7, B2), and kernel errors name refs that do not exist, or
 * by their spec's name (M3). Every test here failed before its fix. */
#include <math.h>
#include <stdio.h>

#include "../kernel/pltpu.h"
#include "../sim/call/exec.h"
#include "helpers.h"

/* ---- no undefined behaviour (run under the UBSan build) ---------------------- */

/* Cost-only: the ANY input has no data; views of it offset a NULL pointer. */
static void any_views_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_ref rows = pl_ds(c, refs[0], 0, 8, 8);
    pl_ref row = pl_at(c, rows, 3);
    cr_assert_eq(row.rank, 1);
    pltpu_copy a = pltpu_async_copy(c, pl_ds(c, refs[0], 0, 8, 8), refs[2], pl_at(c, refs[3], 0));
    pltpu_copy b = pltpu_async_copy(c, pl_ds(c, refs[0], 0, 16, 8), pl_at(c, refs[4], 1), pl_at(c, refs[3], 1));
    pltpu_copy_start(c, &a);
    pltpu_copy_start(c, &b);
    pltpu_copy_wait(c, &a);
    pltpu_copy_wait(c, &b);
    pl_copy(c, refs[1], refs[2]);
}

Test(harden_core, cost_only_views_of_an_any_operand_without_data)
{
    pl_call call = {
        .name = "any_views",
        .kernel = any_views_kernel,
        .grid_rank = 1,
        .grid = {2},
        .n_in = 1,
        .in = {{.space = PL_ANY}},
        .n_out = 1,
        .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)},
        .n_scratch = 3,
        .scratch = {PLTPU_VMEM(PL_F32, 8, 128), PLTPU_SEMAPHORE_DMA(2), PLTPU_VMEM(PL_F32, 2, 8, 128)},
    };
    pl_array in = PL_ARRAY(NULL, PL_F32, 64, 128), out = PL_ARRAY(NULL, PL_F32, 16, 128);
    pl_options opt = {.cost_only = 1};
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &in, &out, &opt, &rep), &rep);
    cr_assert_eq(rep.dma_copies, 4);
}

/* Elementwise ops on views with no columns, before any op needed host
 * scratch (kern_tmp of 0 floats was NULL, and NULL + 0 is undefined). */
static int empty_op;

static void empty_views_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_ref a = pl_ds(c, refs[0], 1, 0, 0), o = pl_ds(c, refs[1], 1, 128, 0);
    switch (empty_op) {
    case 0: pl_add(c, o, a, a); break;
    case 1: pl_mul(c, o, a, a); break;
    case 2: pl_max(c, o, a, a); break;
    case 3: pl_relu(c, o, a); break;
    case 4: pl_copy(c, pl_ds(c, refs[2], 1, 0, 0), a); break; /* converting copy */
    case 5: pl_exp(c, o, a); break;
    case 6: pl_sum_rows(c, pl_ds(c, refs[1], 1, 0, 1), a); break;
    default: pl_fill(c, pl_ds(c, refs[2], 0, 8, 0), 1); break;
    }
    pl_copy(c, refs[1], refs[0]);
}

Test(harden_core, elementwise_ops_on_empty_views)
{
    for (empty_op = 0; empty_op < 8; empty_op++)
        for (int checks_off = 0; checks_off < 2; checks_off++) {
            th_io io = th_io_2d(8, 128);
            pl_call call = th_copy_call_2d(8, 128, 8, 128);
            call.kernel = empty_views_kernel;
            call.n_scratch = 1;
            call.scratch[0] = PLTPU_VMEM(PL_BF16, 8, 128);
            pl_options opt = {.checks_off = checks_off};
            pl_report rep;
            int rc = pl_pallas_call(&call, &io.a, &io.o, &opt, &rep);
            cr_assert_eq(rc, PL_OK, "op %d: %s", empty_op, rep.error);
            cr_assert_eq(th_f32_diff(io.in, io.out, io.n), 0);
            th_io_free(&io);
        }
}

/* ---- index maps (B2, B7) ----------------------------------------------------- */

static void min_map(const int64_t *g, const pl_ref *prefetch, int64_t *b, void *user)
{
    (void)prefetch, (void)user;
    b[0] = g[0];
    b[1] = g[1] == 1 ? INT64_MIN : g[1];
}

Test(harden_core, B7_a_map_returning_int64_min_is_out_of_range)
{
    th_io io = th_io_2d(8, 256);
    pl_call call = th_copy_call_2d(8, 256, 8, 128);
    call.in[0].map = PL_MAP_FN(min_map, NULL);
    call.in[0].name = "lhs";
    pl_report rep;
    int rc = pl_pallas_call(&call, &io.a, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINDEXMAP, "lhs", "grid point (0, 1)", "-9223372036854775808", "dimension 1",
                    "0..1", "rule B7");
    cr_assert(!strstr(rep.error, "unset"), "%s", rep.error);
    th_io_free(&io);
}

static void unset_map(const int64_t *g, const pl_ref *prefetch, int64_t *b, void *user)
{
    (void)prefetch, (void)user;
    b[0] = g[0];
}

Test(harden_core, B2_a_dimension_left_unset_is_still_reported_as_unset)
{
    th_io io = th_io_2d(8, 256);
    pl_call call = th_copy_call_2d(8, 256, 8, 128);
    call.out[0].map = PL_MAP_FN(unset_map, NULL);
    pl_report rep;
    int rc = pl_pallas_call(&call, &io.a, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINDEXMAP, "out0", "grid point (0, 0)", "left dimension 1 unset", "rule B2");
    th_io_free(&io);
}

/* ---- refs in kernel errors (M3) ---------------------------------------------- */

static int missing_use;

/* refs[3] of a call with 2 inputs, 1 output and no scratch. */
static void missing_ref_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_ref r = refs[3];
    int64_t i0[1] = {0};
    switch (missing_use) {
    case 0: pl_fill(c, r, 0); break;
    case 1: (void)pl_ds(c, r, 0, 0, 1); break;
    case 2: (void)pl_at(c, r, 0); break;
    case 3: (void)pl_get(c, r, i0); break;
    case 4: pl_set(c, r, i0, 1); break;
    case 5: pl_copy(c, refs[2], r); break;
    case 6: pl_add(c, refs[2], refs[0], r); break;
    case 7: pl_exp(c, r, refs[0]); break;
    case 8: pl_dot(c, r, refs[0], refs[1], 0); break;
    case 9: pltpu_semaphore_signal(c, r, 1); break;
    case 10: (void)pltpu_async_copy(c, refs[0], r, r); break;
    default: pl_max_rows(c, r, refs[0]); break;
    }
}

Test(harden_core, M3_a_ref_past_the_end_does_not_exist)
{
    float *a = th_f32_seq(8 * 128), *b = th_f32_seq(128 * 128), *o = th_f32_fill(8 * 128, 0);
    for (missing_use = 0; missing_use < 12; missing_use++) {
        pl_call call = {
            .name = "missing",
            .kernel = missing_ref_kernel,
            .grid_rank = 1,
            .grid = {1},
            .n_in = 2,
            .in = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 8, 128), PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 128, 128)},
            .n_out = 1,
            .out = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 8, 128)},
        };
        pl_array args[2] = {PL_ARRAY(a, PL_F32, 8, 128), PL_ARRAY(b, PL_F32, 128, 128)};
        pl_array out = PL_ARRAY(o, PL_F32, 8, 128);
        pl_report rep;
        int rc = pl_pallas_call(&call, args, &out, NULL, &rep);
        cr_assert_neq(rc, PL_OK, "use %d", missing_use);
        cr_assert(strstr(rep.error, "refs[3] does not exist: 2 inputs, 1 output, 0 scratch"), "use %d: %s",
                  missing_use, rep.error);
        cr_assert(strstr(rep.error, "grid point (0)"), "use %d: %s", missing_use, rep.error);
        cr_assert(!strstr(rep.error, "rank 0"), "use %d: %s", missing_use, rep.error);
    }
    free(a), free(b), free(o);
}

/* With scalar prefetch, the count names it too. */
static void missing_after_prefetch_kernel(pl_ctx *c, pl_ref *refs) { pl_fill(c, refs[5], 0); }

Test(harden_core, M3_a_ref_past_the_end_counts_prefetch_and_scratch)
{
    int32_t table[1] = {0};
    th_io io = th_io_2d(8, 128);
    pl_call call = th_copy_call_2d(8, 128, 8, 128);
    call.kernel = missing_after_prefetch_kernel;
    call.num_scalar_prefetch = 1;
    call.n_scratch = 2;
    call.scratch[0] = PLTPU_VMEM(PL_F32, 8, 128);
    call.scratch[1] = PLTPU_SEMAPHORE(1);
    pl_array args[2] = {PL_ARRAY(table, PL_I32, 1), io.a};
    pl_report rep;
    int rc = pl_pallas_call(&call, args, &io.o, NULL, &rep);
    cr_assert_neq(rc, PL_OK);
    cr_assert(strstr(rep.error, "refs[5] does not exist: 1 scalar-prefetch, 1 input, 1 output, 2 scratch"), "%s",
              rep.error);
    th_io_free(&io);
}

/* Kernel errors name a ref by its spec's name, else by its default name. */
static void named_oob_kernel(pl_ctx *c, pl_ref *refs)
{
    int64_t which = *(int64_t *)pl_kernel_user(c);
    (void)pl_get_at(c, refs[which], 8, 0);
}

Test(harden_core, M3_kernel_errors_name_refs_by_their_spec_names)
{
    const char *want[] = {"refs[0] (input, VMEM f32) 'lhs'", "refs[1] (output, VMEM f32) 'out0'",
                          "refs[2] (scratch, VMEM f32) 'acc'", "refs[3] (scratch, VMEM f32) 'scratch1'"};
    for (int64_t which = 0; which < 4; which++) {
        th_io io = th_io_2d(8, 128);
        pl_call call = th_copy_call_2d(8, 128, 8, 128);
        call.kernel = named_oob_kernel;
        call.user = &which;
        call.in[0].name = "lhs";
        call.n_scratch = 2;
        call.scratch[0] = PLTPU_VMEM(PL_F32, 8, 128);
        call.scratch[0].name = "acc";
        call.scratch[1] = PLTPU_VMEM(PL_F32, 8, 128);
        pl_report rep;
        int rc = pl_pallas_call(&call, &io.a, &io.o, NULL, &rep);
        TH_EXPECT_ERROR(rc, rep, PL_EBOUNDS, want[which], "pl_get index (8, 0)", "rule V2");
        th_io_free(&io);
    }
}
