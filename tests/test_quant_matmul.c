/* tests/test_quant_matmul.c: the built-in quantized matmul as serving
 * stacks write it (issue 15): x [batch, in] bf16 quantized per row inside
 * the kernel (its abs-max computed outside), w_q [out, in] int8 (v5e, v6e)
 * or fp8 (v7x) with one f32 scale per output column, grid (batch/bb,
 * out/bo, in/bi) with the reduction last, int32 accumulation for int8 x
 * int8 (f32 for fp8), both scales applied at the last reduction step;
 * verified against the host reference, refused where the MXU lacks the
 * path (T10, E2001), ranked by `tilesim sweep`. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "../examples/kernels/registry.h"
#include "../sim/tilesim_check.h"
#include "helpers.h"
#include "run.h"

static const pl_kernel_def *def(void)
{
    const pl_kernel_def *d = ex_kernel_find("quant_matmul");
    cr_assert(d, "quant_matmul is a built-in kernel");
    return d;
}

/* Run the definition with "name=value" settings on chip; the verdicts in out. */
static int run_with(const char *chip, const char *const *sets, int n_sets, pl_report *rep, pl_check *chk)
{
    const pl_kernel_def *d = def();
    int64_t v[PL_KDEF_MAX_PARAMS];
    char msg[256];
    pl_kernel_defaults(d, v);
    for (int i = 0; i < n_sets; i++) cr_assert_eq(pl_kernel_set(d, v, sets[i], msg, sizeof msg), PL_OK, "%s", msg);
    pl_options opt = {.chip = chip};
    return pl_kernel_run(d, v, &opt, rep, chk, NULL);
}

Test(quant_matmul, int8_weights_run_and_verify_on_v5e_accumulating_in_int32)
{
    static const char *sets[] = {"wdtype=i8"};
    pl_report rep;
    pl_check chk[PL_MAX_OPERANDS];
    int rc = run_with("v5e", sets, 1, &rep, chk);
    cr_assert_eq(rc, PL_OK, "%s", rep.error);
    cr_assert_eq(chk[0].verdict, PL_PASS, "the output matches the host reference: max abs err %g", chk[0].max_abs_err);
    cr_assert_eq(rep.mxu_dtype, PL_I8, "the MXU ran int8 x int8 (T10)");
}

Test(quant_matmul, fp8_weights_run_and_verify_on_v7x)
{
    static const char *sets[] = {"wdtype=f8e4m3"};
    pl_report rep;
    pl_check chk[PL_MAX_OPERANDS];
    int rc = run_with("v7x", sets, 1, &rep, chk);
    cr_assert_eq(rc, PL_OK, "%s", rep.error);
    cr_assert_eq(chk[0].verdict, PL_PASS, "max abs err %g", chk[0].max_abs_err);
    cr_assert_eq(rep.mxu_dtype, PL_F8E4M3, "timed at the fp8 rate (T10)");
}

Test(quant_matmul, int8_weights_are_rejected_on_v7x_E2001)
{
    static const char *sets[] = {"wdtype=i8"};
    pl_report rep;
    int rc = run_with("v7x", sets, 1, &rep, NULL);
    TH_EXPECT_ERROR(rc, rep, PL_EDTYPE, "pl_dot of i8 x i8 into i32 on v7x", "no int8 path", "E2001", "rule T10");
}

Test(quant_matmul, fp8_weights_are_rejected_before_v7x)
{
    static const char *sets[] = {"wdtype=f8e4m3"};
    pl_report rep;
    int rc = run_with("v6e", sets, 1, &rep, NULL);
    TH_EXPECT_ERROR(rc, rep, PL_EDTYPE, "no fp8 path", "E2001", "rule T10");
}

/* A block that does not divide its dimension is refused, naming it. */
Test(quant_matmul, parameters_that_do_not_divide_are_refused_by_name)
{
    static const char *sets[] = {"bi=100"};
    pl_report rep;
    int rc = run_with("v5e", sets, 1, &rep, NULL);
    cr_assert_lt(rc, 0);
    cr_assert(strstr(rep.error, "bi"), "%s", rep.error);
}

Test(quant_matmul, tilesim_run_verifies_it)
{
    th_run r = TH_RUN("run", "quant_matmul", "--chip", "v5e", "--set", "wdtype=i8");
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_assert(strstr(r.out, "PASS"), "%s", r.out);
    th_run_free(&r);
    r = TH_RUN("run", "quant_matmul", "--chip", "v7x", "--set", "wdtype=i8");
    cr_assert_neq(r.status, 0);
    cr_assert(strstr(r.err, "E2001"), "%s%s", r.out, r.err);
    th_run_free(&r);
}

Test(quant_matmul, tilesim_sweep_ranks_it)
{
    th_run r = TH_RUN("sweep", "quant_matmul", "--chip", "v5e", "--set", "wdtype=i8", "--json");
    cr_assert_eq(r.status, 0, "%s", r.err);
    json_t *doc = th_json_parse(r.out, "sweep --json");
    cr_assert_str_eq(th_json_str(doc, "kernel"), "quant_matmul");
    json_t *ranked = json_object_get(doc, "legal");
    cr_assert(json_is_array(ranked) && json_array_size(ranked) >= 2, "%s", r.out);
    double prev = 0;
    for (size_t i = 0; i < json_array_size(ranked); i++) {
        double t = th_json_num(json_array_get(ranked, i), "time_s");
        cr_assert_geq(t, prev, "ranked by time");
        prev = t;
    }
    json_decref(doc);
    th_run_free(&r);
}
