/* tests/test_value_fusion.c: the VMEM traffic an op is charged when its
 * operands are values (kern_vmem_read / kern_vmem_write, issue 22). Mosaic
 * lowers each op on a value vreg by vreg and keeps a vreg's chain of ops
 * together, so a chain of elementwise ops on values loads its Refs once and
 * stores its result once: the values between cost no VMEM bandwidth. A
 * value read a second time (after a reduction over it) was kept: that read
 * pays its store and its load. The profile's bytes per op show it, and the
 * time follows (an op's VMEM bytes are a floor on it).
 */
#include <criterion/criterion.h>
#include <string.h>

#include "../examples/kernels/values.h"
#include "test_kernel_helpers.h"

#define ROWS 8
#define COLS 128
#define BLOCK (ROWS * COLS * 4) /* bytes of an (8, 128) f32 block */

static const pl_profile_row *row_named(const pl_report *r, const char *name)
{
    for (int i = 0; i < r->n_profile; i++)
        if (strcmp(r->profile[i].name, name) == 0) return &r->profile[i];
    return NULL;
}

static double bytes_of(const pl_report *r, const char *name)
{
    const pl_profile_row *row = row_named(r, name);
    cr_assert(row, "no %s row", name);
    return row->vmem_bytes;
}

/* x (scratch: a Ref) -> v = 2x + 1 -> t = rowsum(v) -> v - t -> back to x */
static void chain(pl_ctx *c, pl_ref *refs, void *arg)
{
    (void)arg;
    pl_ref x = refs[0];
    ex_values *vals = ex_values_begin(c, ex_value_bytes(PL_F32, ROWS, COLS) + ex_value_bytes(PL_F32, ROWS, 1));
    pl_ref v = ex_value(vals, PL_F32, ROWS, COLS), t = ex_value(vals, PL_F32, ROWS, 1);
    pl_fill(c, x, 1.0);
    pl_scale(c, v, x, 2.0);      /* loads x; v stays in registers */
    pl_add_scalar(c, v, v, 1.0); /* fused: no VMEM */
    pl_sum_rows(c, t, v);        /* fused read of v */
    pl_sub_col(c, v, v, t);      /* v again, after the reduction: stored and loaded */
    pl_copy(c, x, v);            /* fused read, a store to x */
}

Test(value_fusion, a_chain_of_ops_on_values_moves_only_its_refs_through_vmem)
{
    pl_scratch scr = PLTPU_VMEM(PL_F32, ROWS, COLS);
    pl_report rep;
    run_body_ok(chain, NULL, &scr, 1, &rep);
    cr_expect_eq(bytes_of(&rep, "pl_scale"), BLOCK, "reads the Ref x, writes a value");
    cr_expect_eq(bytes_of(&rep, "pl_add_scalar"), 0, "a value the last op wrote, in place");
    cr_expect_eq(bytes_of(&rep, "pl_sum_rows"), 0, "reads the value the last op wrote, writes a value");
    cr_expect_eq(bytes_of(&rep, "pl_sub_col"), 2 * BLOCK, "v read a second time: its store and its load (t is fresh)");
    cr_expect_eq(bytes_of(&rep, "pl_copy"), BLOCK, "a fresh value into the Ref x");
}

/* A value no op of this step wrote comes from VMEM; a Ref is always there. */
static void stale(pl_ctx *c, pl_ref *refs, void *arg)
{
    (void)arg;
    pl_ref x = refs[0];
    ex_values *vals = ex_values_begin(c, ex_value_bytes(PL_F32, ROWS, COLS));
    pl_ref v = ex_value(vals, PL_F32, ROWS, COLS);
    if (pl_program_id(c, 0) == 0) pl_fill(c, v, 3.0);
    else pl_copy(c, x, v); /* v was written a step ago */
    pl_add(c, x, x, x);    /* Refs: read twice, written */
}

Test(value_fusion, a_value_from_an_earlier_step_and_refs_are_charged_in_full)
{
    static body b = {stale, NULL};
    pl_call call = {.name = "stale", .kernel = body_kernel, .user = &b, .grid_rank = 1, .grid = {2},
                    .n_scratch = 1, .scratch = {PLTPU_VMEM(PL_F32, ROWS, COLS)}};
    pl_report rep;
    int rc = pl_pallas_call(&call, NULL, NULL, NULL, &rep);
    cr_assert_eq(rc, PL_OK, "%s", rep.error);
    cr_expect_eq(bytes_of(&rep, "pl_fill"), 0, "a value written, never read: no store");
    cr_expect_eq(bytes_of(&rep, "pl_copy"), 2 * BLOCK, "the value from step 0 is loaded, x stored");
    cr_expect_eq(bytes_of(&rep, "pl_add"), 2 * (3 * BLOCK), "two Refs read and one written, at both steps");
}
