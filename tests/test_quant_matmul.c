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

static void run_passing(const char *chip, const char *const *sets, int n_sets, pl_report *rep);

/* v4's spec-sheet int8 rate is XLA's: Mosaic's dtype table gives a Pallas
 * kernel on generation 4 a float lhs only (JAX's tpu_info.py), so int8 x
 * int8 is refused there as on v7x. */
Test(quant_matmul, int8_weights_are_rejected_on_v4_E2001)
{
    static const char *sets[] = {"wdtype=i8"};
    pl_report rep;
    int rc = run_with("v4", sets, 1, &rep, NULL);
    TH_EXPECT_ERROR(rc, rep, PL_EDTYPE, "pl_dot of i8 x i8 into i32 on v4", "no int8 path", "E2001", "rule T10");
}

/* fp8 weights: refused on v4 (no fp8 operands on its MXU), widened to bf16
 * on v6e (no fp8 rate), and the output still verifies there. */
Test(quant_matmul, fp8_weights_are_rejected_on_v4_and_run_widened_on_v6e)
{
    static const char *sets[] = {"wdtype=f8e4m3"};
    pl_report rep;
    int rc = run_with("v4", sets, 1, &rep, NULL);
    TH_EXPECT_ERROR(rc, rep, PL_EDTYPE, "takes no fp8 operands", "E2001", "rule T10");
    run_passing("v6e", sets, 1, &rep);
    cr_expect_eq(rep.mxu_dtype, PL_BF16);
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

/* The weights' default is the chip's (chip_defaults): int8 where the MXU
 * has an int8 path, fp8 on v7x, which has none (T10), so that a plain
 * 'tilesim run quant_matmul --chip v7x' runs; v4 takes neither and keeps
 * int8, which the run refuses with the rule. A value given wins. */
Test(quant_matmul, the_default_weight_dtype_is_one_the_chips_mxu_takes)
{
    const pl_kernel_def *d = def();
    int p = pl_kernel_param_index(d, "wdtype");
    int64_t v[PL_KDEF_MAX_PARAMS];
    struct { const char *chip; pl_dtype want; } k[] = {
        {"v5e", PL_I8}, {"v6e", PL_I8}, {"v7x", PL_F8E4M3}, {"v4", PL_I8}};
    for (size_t i = 0; i < sizeof k / sizeof *k; i++) {
        pl_kernel_defaults_on(d, pl_chip_find(k[i].chip), v);
        cr_expect_eq(v[p], k[i].want, "%s: %s", k[i].chip, pl_dtype_name((pl_dtype)v[p]));
    }
    pl_kernel_defaults_on(d, NULL, v);
    cr_expect_eq(v[p], PL_I8, "no chip: the declared default");
    th_run r = TH_RUN("run", "quant_matmul", "--chip", "v7x");
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "wdtype=f8e4m3 on v7x") && strstr(r.out, "PASS"), "%s", r.out);
    th_run_free(&r);
    r = TH_RUN("list", "quant_matmul"); /* list says where a default differs */
    cr_expect(strstr(r.out, "\n  defaults on v7x: wdtype = f8e4m3\n"), "%s", r.out);
    cr_expect_null(strstr(r.out, "defaults on v6e"), "%s", r.out);
    th_run_free(&r);
}

/* The abs-max is production's (1, batch) row, in (1, bb) blocks, where T1
 * takes that block (bb a multiple of 128, or the whole batch): one 8-row
 * tile a block, 8 KiB at bb = 256, not the 128 KiB of a (256, 1) column.
 * bb = 64 of a 256 batch, which the hardware table ran once and T1 refuses
 * as a row, takes (64, 1) column blocks. Each verifies. */
Test(quant_matmul, the_abs_max_is_a_row_where_T1_takes_it)
{
    static const char *row[] = {"batch=512", "bb=256", "wdtype=i8"}, *col[] = {"batch=256", "bb=64", "wdtype=i8"};
    pl_report rep;
    run_passing("v6e", row, 3, &rep);
    const pl_operand_report *a = th_operand(&rep, "absmax");
    cr_expect(a->rank == 2 && a->block[0] == 1 && a->block[1] == 256, "block (%lld, %lld)", (long long)a->block[0],
              (long long)a->block[1]);
    cr_expect_eq(a->vmem_bytes, 8 * 256 * 4, "one (8, 128)-tiled row block: %lld", (long long)a->vmem_bytes);
    run_passing("v6e", col, 3, &rep);
    a = th_operand(&rep, "absmax");
    cr_expect(a->block[0] == 64 && a->block[1] == 1, "block (%lld, %lld)", (long long)a->block[0],
              (long long)a->block[1]);
    cr_expect_eq(a->vmem_bytes, 64 * 128 * 4, "%lld", (long long)a->vmem_bytes);
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

/* ---- as production writes it (issue 22) ------------------------------------------------ */

#define MiB (1024 * 1024)

/* Cost-only run of quant_matmul with "name=value" settings on chip. */
static int cost_with(const char *chip, const char *const *sets, int n_sets, pl_report *rep)
{
    const pl_kernel_def *d = def();
    int64_t v[PL_KDEF_MAX_PARAMS];
    char msg[256];
    pl_kernel_defaults(d, v);
    for (int i = 0; i < n_sets; i++) cr_assert_eq(pl_kernel_set(d, v, sets[i], msg, sizeof msg), PL_OK, "%s", msg);
    pl_options opt = {.chip = chip, .cost_only = 1};
    return pl_kernel_run(d, v, &opt, rep, NULL, NULL);
}

/* Run with the settings: it must run and its output PASS. */
static void run_passing(const char *chip, const char *const *sets, int n_sets, pl_report *rep)
{
    pl_check chk[PL_MAX_OPERANDS];
    int rc = run_with(chip, sets, n_sets, rep, chk);
    cr_assert_eq(rc, PL_OK, "%s", rep->error);
    cr_assert_eq(chk[0].verdict, PL_PASS, "max abs err %g", chk[0].max_abs_err);
}

static int profile_count(const pl_report *rep, const char *name)
{
    for (int i = 0; i < rep->n_profile; i++)
        if (strcmp(rep->profile[i].name, name) == 0) return (int)rep->profile[i].count;
    return 0;
}

/* The production kernel's own estimate of its VMEM (vLLM's get_vmem_limit)
 * at 16 x 5120 x 4096 (batch x out x in), blocks (16, 1024, 4096), fp4
 * weights, x quantized to fp8, in bits: every block twice, a second buffer
 * of w_q, w_scale and o (their block index changes), x_q and its scale
 * twice: 6.49 MiB. */
static double production_estimate(void)
{
    double x = 16 * 4096 * 16, amax = 16 * 32, w = 1024.0 * 4096 * 4, ws = 1024 * 32, o = 16 * 1024 * 16;
    double bits = 2 * (x + amax + w + ws + o) + w + ws + o + 2 * (16 * 4096 * 8 + 16 * 32);
    return bits / 8;
}

static const char *const production_shape[] = {"batch=16",  "out=5120",  "in=4096",      "bb=16",
                                                "bo=1024",   "bi=4096",   "wdtype=f4e2m1"};

/* The hardware ran this call with the limit it set itself; tilesim ran it
 * over the default 32 MiB before (40.8 MiB: an f32 output, f32 copies of
 * x and the accumulator, four f32 unpack temporaries). Its buffers now fit
 * the production kernel's estimate, which is the limit the call sets. */
Test(quant_matmul, fp4_at_the_production_shape_fits_the_production_estimate_on_v7x)
{
    pl_report rep;
    int rc = cost_with("v7x", production_shape, 7, &rep);
    cr_assert_eq(rc, PL_OK, "%s", rep.error);
    double est = production_estimate();
    cr_expect(rep.vmem_limit > 0.99 * est && rep.vmem_limit < 1.01 * est, "the call sets %lld, the estimate is %.0f",
              (long long)rep.vmem_limit, est);
    cr_expect_leq(rep.vmem_bytes, rep.vmem_limit);
    cr_expect_geq((double)rep.vmem_bytes, 0.65 * est, "%lld bytes: the blocks, x_q and nothing else",
                  (long long)rep.vmem_bytes);
    cr_expect_lt(rep.vmem_bytes, 5 * MiB, "%lld bytes", (long long)rep.vmem_bytes);
}

/* The output is x's dtype, bf16, as the production kernel's. */
Test(quant_matmul, the_output_is_bf16)
{
    pl_report rep;
    cr_assert_eq(cost_with("v6e", NULL, 0, &rep), PL_OK, "%s", rep.error);
    int found = 0;
    for (int i = 0; i < rep.n_operands; i++)
        if (rep.op[i].role == PL_ROLE_OUT) {
            found = 1;
            cr_expect_eq(rep.op[i].dtype, PL_BF16);
        }
    cr_expect(found);
}

/* One contraction step and 4 output blocks: no accumulator; x_q and its
 * scale kept (the production kernel's x_q_scratch and x_scale_scratch, the
 * scale a (bb, 1) f32 column), quantized once per batch block (2 of them),
 * not at each of the 8 steps. */
Test(quant_matmul, one_contraction_step_quantizes_x_once_per_batch_block_and_keeps_no_accumulator)
{
    static const char *const sets[] = {"in=256", "bi=256", "wdtype=i8"};
    pl_report rep;
    run_passing("v6e", sets, 3, &rep);
    cr_assert_eq(rep.n_scratch, 2);
    cr_expect_str_eq(rep.scratch[0].name, "x_q");
    cr_expect_str_eq(rep.scratch[1].name, "x_scale");
    cr_expect_eq(rep.scratch[1].dtype, PL_F32);
    cr_expect_eq(profile_count(&rep, "pl_div_col"), 2, "once per batch block of the (2, 4, 1) grid");
    cr_expect_eq(profile_count(&rep, "pl_dot"), 8);
}

/* Several contraction steps: the accumulator, and nothing else. */
Test(quant_matmul, several_contraction_steps_keep_only_the_accumulator)
{
    static const char *const sets[] = {"wdtype=i8"};
    pl_report rep;
    cr_assert_eq(cost_with("v6e", sets, 1, &rep), PL_OK, "%s", rep.error);
    cr_assert_eq(rep.n_scratch, 1);
    cr_expect_str_eq(rep.scratch[0].name, "acc");
    cr_expect_eq(rep.scratch[0].dtype, PL_I32);
}

/* One contraction step, one output block: no scratch at all. */
Test(quant_matmul, one_step_and_one_output_block_keep_no_scratch)
{
    static const char *const sets[] = {"in=256", "bi=256", "out=256", "bo=256", "wdtype=f4e2m1"};
    pl_report rep;
    run_passing("v7x", sets, 5, &rep);
    cr_expect_eq(rep.n_scratch, 0);
}

/* fp4 weights stay packed in VMEM: their VMEM is that of fp8 weights less
 * half of w_q's buffers, not more (no unpack temporaries); the widening is
 * VPU work in the profile. */
Test(quant_matmul, fp4_weights_take_half_the_vmem_of_fp8_and_no_temporaries)
{
    static const char *f8[] = {"wdtype=f8e4m3"}, *f4[] = {"wdtype=f4e2m1"};
    pl_report r8, r4;
    cr_assert_eq(cost_with("v7x", f8, 1, &r8), PL_OK, "%s", r8.error);
    cr_assert_eq(cost_with("v7x", f4, 1, &r4), PL_OK, "%s", r4.error);
    int64_t w8 = 0, w4 = 0;
    for (int i = 0; i < r8.n_operands; i++)
        if (strcmp(r8.op[i].name, "w_q") == 0) w8 = r8.op[i].vmem_bytes * r8.op[i].buffers;
    for (int i = 0; i < r4.n_operands; i++)
        if (strcmp(r4.op[i].name, "w_q") == 0) w4 = r4.op[i].vmem_bytes * r4.op[i].buffers;
    cr_assert_gt(w4, 0);
    cr_expect_eq(w4 * 2, w8);
    cr_expect_eq(r4.vmem_bytes, r8.vmem_bytes - w4, "fp4 %lld, fp8 %lld", (long long)r4.vmem_bytes,
                 (long long)r8.vmem_bytes);
    cr_expect_eq(r4.n_scratch, r8.n_scratch);
    cr_expect_eq(profile_count(&r4, "pl_unpack_f4"), profile_count(&r4, "pl_dot"), "the widening is counted, once a step");
    cr_expect_gt(profile_count(&r4, "pl_dot"), 0);
}

/* The limit the call sets: min(its estimate, 96 MiB), 48 MiB on v7x. */
Test(quant_matmul, declares_the_production_limit_with_its_cap)
{
    const pl_kernel_def *d = def();
    cr_assert(d->vmem_limit, "quant_matmul computes its vmem_limit_bytes");
    int64_t v[PL_KDEF_MAX_PARAMS];
    char msg[256];
    pl_kernel_defaults(d, v);
    static const char *const big[] = {"batch=4096", "in=8192", "out=8192", "bb=4096", "bo=4096", "bi=8192"};
    for (int i = 0; i < 6; i++) cr_assert_eq(pl_kernel_set(d, v, big[i], msg, sizeof msg), PL_OK, "%s", msg);
    cr_expect_eq(d->vmem_limit(v, pl_chip_find("v6e")), 96 * MiB);
    cr_expect_eq(d->vmem_limit(v, pl_chip_find("v7x")), 48 * MiB);
}

/* The reference sums in blocks of 512 rows of x and of w_q (cblas_dgemm):
 * a call of more rows than a block, and not a multiple of it, still
 * checks PASS with every weight type, so the last, short blocks are
 * where they belong. A misplaced block would put another row's sums in
 * these outputs, far past any tolerance. */
Test(quant_matmul, the_reference_blocks_cover_a_ragged_edge)
{
    static const char *const fp8[] = {"batch=640", "out=768", "in=384", "bb=128", "bo=256", "bi=384", "wdtype=f8e4m3"};
    static const char *const fp4[] = {"batch=640", "out=768", "in=384", "bb=128", "bo=256", "bi=384", "wdtype=f4e2m1"};
    static const char *const i8[] = {"batch=640", "out=768", "in=384", "bb=128", "bo=256", "bi=384", "wdtype=i8"};
    pl_report rep;
    run_passing("v7x", fp8, 7, &rep);
    run_passing("v7x", fp4, 7, &rep);
    run_passing("v6e", i8, 7, &rep);
}
