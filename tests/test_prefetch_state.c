/* tests/test_prefetch_state.c: scalar prefetch refs as state (rule M5).
 *
 * The SMEM copies of the prefetch args are writable and persist from one
 * grid point to the next (each core of a megacore starting from the caller's
 * values), while the caller's arrays stay as they were, even when a kernel
 * faults; a cost-only call still needs the prefetch data.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../kernel/pallas.h"
#include "../sim/tilesim.h"
#include "helpers.h"
#include "test_prefetch_helpers.h"

/* ---- M5: writable, persistent across grid points ---------------------------------- */

/* Element (0, 0) of output block (i, j) of a (gi*8, gj*128) f32 array. */
static float block_value(const float *out, int64_t gj, int64_t i, int64_t j)
{
    return out[i * 8 * gj * 128 + j * 128];
}

Test(prefetch, M5_prefetch_is_writable_and_persists_across_grid_points)
{
    int32_t counter[1] = {100};
    float *out = th_f32_fill(3 * 8 * 4 * 128, TH_SENTINEL);
    pl_array o = PL_ARRAY(out, PL_F32, 3 * 8, 4 * 128);
    pl_call call = count_call(3, 4);
    pl_array args[1] = {PL_ARRAY(counter, PL_I32, 1)};
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, args, &o, NULL, &rep), &rep);
    for (int64_t i = 0; i < 3; i++)
        for (int64_t j = 0; j < 4; j++) {
            float want = (float)(100 + i * 4 + j), got = block_value(out, 4, i, j);
            cr_assert_eq(got, want, "block (%lld, %lld) saw counter %g, want %g: a pl_set on a prefetch ref must "
                         "persist to the next grid point (rule M5)", (long long)i, (long long)j, got, want);
        }
    cr_assert_eq(counter[0], 100, "the caller's prefetch array changed to %d", counter[0]);
    cr_assert_eq(rep.n_findings, 0, "%s", rep.warnings);

    /* a second call starts again from the caller's value */
    for (int64_t e = 0; e < 3 * 8 * 4 * 128; e++) out[e] = TH_SENTINEL;
    th_expect_ok(pl_pallas_call(&call, args, &o, NULL, &rep), &rep);
    cr_assert_eq(block_value(out, 4, 0, 0), 100.0f);
    cr_assert_eq(block_value(out, 4, 2, 3), 111.0f);
    free(out);
}

/* A model choice of walk.c: on a megacore chip each TensorCore has its own
 * SMEM, so each starts from the caller's values. */
Test(prefetch, M5_each_core_of_a_megacore_starts_from_the_callers_values)
{
    int32_t counter[1] = {7};
    float *out = th_f32_fill(2 * 8 * 3 * 128, TH_SENTINEL);
    pl_array o = PL_ARRAY(out, PL_F32, 2 * 8, 3 * 128);
    pl_call call = count_call(2, 3);
    call.semantics[0] = PL_PARALLEL;
    pl_array args[1] = {PL_ARRAY(counter, PL_I32, 1)};
    pl_options opt = {.chip = "v4"};
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, args, &o, &opt, &rep), &rep);
    cr_assert_eq(rep.cores, 2);
    for (int64_t i = 0; i < 2; i++)
        for (int64_t j = 0; j < 3; j++)
            cr_assert_eq(block_value(out, 3, i, j), (float)(7 + j), "core %lld block (%lld, %lld): %g", (long long)i,
                         (long long)i, (long long)j, block_value(out, 3, i, j));
    cr_assert_eq(counter[0], 7);
    free(out);
}

/* ---- M5: the caller's array is never modified, the SMEM copy is ------------------ */

/* Scribble over the whole table, then copy what the table held at step 0
 * into the output (refs: table, o). */
typedef struct scribble {
    int32_t first[4], later[4];
} scribble;

static void scribble_kernel(pl_ctx *c, pl_ref *refs)
{
    scribble *s = pl_kernel_user(c);
    int64_t g = pl_program_id(c, 0);
    for (int64_t i = 0; i < 4; i++) {
        int32_t v = (int32_t)pl_get_at(c, refs[0], i);
        if (g == 0) s->first[i] = v;
        else s->later[i] = v;
        pl_set_at(c, refs[0], -1000 - i - 10 * (double)g, i);
    }
    pl_fill(c, refs[1], 1.0);
}

Test(prefetch, M5_caller_prefetch_array_is_never_modified)
{
    int32_t table[4] = {4, 3, 2, 1};
    float *out = th_f32_fill(16 * 128, TH_SENTINEL);
    pl_array args[1] = {PL_ARRAY(table, PL_I32, 4)};
    pl_array o = PL_ARRAY(out, PL_F32, 16, 128);
    scribble s;
    memset(&s, 0, sizeof s);
    pl_call call = {
        .name = "scribble", .kernel = scribble_kernel, .user = &s,
        .grid_rank = 1, .grid = {2},
        .num_scalar_prefetch = 1,
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)},
    };
    for (int mode = 0; mode < 2; mode++) { /* with data, then cost-only */
        pl_options opt = {.cost_only = mode};
        pl_report rep;
        th_expect_ok(pl_pallas_call(&call, args, &o, &opt, &rep), &rep);
        for (int i = 0; i < 4; i++) {
            cr_assert_eq(table[i], 4 - i, "%s: caller's table[%d] is %d, want %d (rule M5: the kernel writes the "
                         "SMEM copy)", mode ? "cost-only" : "run", i, table[i], 4 - i);
            cr_assert_eq(s.first[i], 4 - i, "%s: step 0 read table[%d] = %d", mode ? "cost-only" : "run", i,
                         s.first[i]);
            cr_assert_eq(s.later[i], -1000 - i, "%s: step 1 read table[%d] = %d, want the -%d step 0 wrote",
                         mode ? "cost-only" : "run", i, s.later[i], 1000 + i);
        }
    }
    free(out);
}

/* A failed call leaves the caller's prefetch array alone too. */
static void set_then_fault_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_set_at(c, refs[0], 99, 0);
    pl_get_at(c, refs[0], 4); /* outside the table: faults (V2) */
}

Test(prefetch, M5_a_kernel_fault_leaves_the_callers_prefetch_alone)
{
    int32_t table[4] = {1, 2, 3, 4};
    float *out = th_f32_fill(8 * 128, TH_SENTINEL);
    pl_array args[1] = {PL_ARRAY(table, PL_I32, 4)};
    pl_array o = PL_ARRAY(out, PL_F32, 8, 128);
    pl_call call = {
        .name = "fault", .kernel = set_then_fault_kernel,
        .num_scalar_prefetch = 1,
        .n_out = 1, .out = {{0}},
    };
    pl_report rep;
    int rc = pl_pallas_call(&call, args, &o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBOUNDS, "pl_get", "scalar-prefetch", "rule V2");
    cr_assert_eq(table[0], 1, "a failed call changed the caller's table to %d", table[0]);
    cr_assert_eq(out[0], TH_SENTINEL);
    free(out);
}

Test(prefetch, M5_cost_only_still_needs_the_prefetch_data)
{
    pl_array args[1] = {PL_ARRAY(NULL, PL_I32, 4)};
    pl_array o = PL_ARRAY(NULL, PL_F32, 8, 128);
    pl_call call = count_call(1, 1);
    pl_options opt = {.cost_only = 1};
    pl_report rep;
    int rc = pl_pallas_call(&call, args, &o, &opt, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "prefetch0", "NULL");
}
