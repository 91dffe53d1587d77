/* tests/test_any_outputs.c: an output left in HBM (memory space ANY, T5) is
 * a fresh buffer that only the kernel's copies write (M6): it starts
 * uninitialized (V1), and a NaN in it after the call is V1's finding,
 * PL_EPOISON under strict, as a NaN in a pipelined write-back is. Poison
 * that an emit_pipeline's write-back or a manual copy carried to HBM was
 * never reported (JAX's distributed guide's nested reduce-scatter ported
 * as written gave NaN with rc 0 under strict). */
#include <criterion/criterion.h>
#include <math.h>

#include "../sim/tilesim_kernel.h"
#include "helpers.h"

static int g_mode;

static void add_into_out(pl_ctx *c, pl_ref *refs, const int64_t *idx, void *user)
{
    (void)idx, (void)user;
    pl_add(c, refs[1], refs[1], refs[0]); /* the output block was never zeroed */
}

static void kern(pl_ctx *c, pl_ref *r)
{
    if (g_mode == 0) {
        pltpu_pipeline p = {.grid_rank = 1, .grid = {2}, .n_in = 1, .n_out = 1,
                            .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)}, .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)}};
        pltpu_emit_pipeline(c, &p, &r[0], &r[1], add_into_out, NULL);
    } else if (g_mode == 1) { /* a scratch never written, copied out */
        pltpu_sync_copy(c, r[2], r[1]);
    } else { /* the fix: write it first */
        pl_fill(c, r[2], 3.0);
        pltpu_sync_copy(c, r[2], r[1]);
    }
}

static int run(int mode, int strict, float *o, pl_report *rep)
{
    static float x[16 * 128];
    for (int i = 0; i < 16 * 128; i++) x[i] = 1, o[i] = 5;
    g_mode = mode;
    pl_call call = {.name = "any_out", .kernel = kern, .n_in = 1, .n_out = 1, .n_scratch = 1,
                    .scratch = {PLTPU_VMEM(PL_F32, 16, 128)}};
    call.in[0].space = call.out[0].space = PL_ANY;
    pl_array a = PL_ARRAY(x, PL_F32, 16, 128), out = PL_ARRAY(o, PL_F32, 16, 128);
    pl_options opt = {.strict = strict};
    return pl_pallas_call(&call, &a, &out, &opt, rep);
}

Test(any_outputs, V1_poison_carried_to_an_any_output_is_a_finding_and_strict_fails)
{
    float o[16 * 128];
    for (int mode = 0; mode < 2; mode++) {
        pl_report rep;
        cr_assert_eq(run(mode, 0, o, &rep), PL_OK, "mode %d: %s", mode, rep.error);
        cr_expect(isnan(o[0]), "mode %d: the output starts uninitialized, not as the caller's 5", mode);
        cr_assert_eq(rep.n_findings, 1, "mode %d", mode);
        cr_expect_eq(rep.findings[0].kind, PL_FIND_POISON);
        cr_expect(strstr(rep.findings[0].msg, "NaN in HBM at element (0, 0) after the call") &&
                      strstr(rep.findings[0].msg, "rule V1"), "%s", rep.findings[0].msg);
        int rc = run(mode, 1, o, &rep);
        TH_EXPECT_ERROR(rc, rep, PL_EPOISON, "out0", "V1");
    }
    pl_report rep;
    th_expect_ok(run(2, 1, o, &rep), &rep);
    cr_expect_eq(rep.n_findings, 0);
    cr_expect_eq(o[5], 3.0f);
}
