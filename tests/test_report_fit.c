/* tests/test_report_fit.c: a report that fits the kernel (issue 10). A kernel
 * with little MXU work leads with its HBM bandwidth; the bound advice names
 * the kernel's own operands, their traffic against their size and the grid
 * axis that re-reads them; on megacore chips the time line adds up; the
 * layout padding warning (T6) covers lanes and sublanes, blocks and scratch.
 * The matmul's headline and advice are the controls. */
#include <criterion/criterion.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../examples/kernels/matmul.h"
#include "helpers.h"

/* ---- helpers -------------------------------------------------------------- */

/* What pl_report_print writes, malloc'd. */
static char *printed(const pl_report *r)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert(f);
    pl_report_print(r, f);
    fclose(f);
    return buf;
}

static json_t *as_json(const pl_report *r)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert(f);
    pl_report_json(r, f);
    fclose(f);
    json_t *j = th_json_parse(buf, "report");
    free(buf);
    return j;
}

/* A v5e whose HBM is 50 GB/s: every kernel of these tests waits for copies. */
static const pl_chip *slow_chip(void)
{
    static pl_chip c;
    c = *pl_chip_find("v5e");
    snprintf(c.name, sizeof c.name, "slow");
    c.hbm_bw = 50e9;
    return &c;
}

/* v5p (two TensorCores) with 50 GB/s of HBM. */
static const pl_chip *slow_megacore(void)
{
    static pl_chip c;
    c = *pl_chip_find("v5p");
    snprintf(c.name, sizeof c.name, "slow2");
    c.hbm_bw = 50e9;
    return &c;
}

/* A cost-only run (arrays without data) that must succeed. */
static void run(const pl_call *call, const pl_array *in, pl_array *out, const char *chip, const pl_chip *spec,
                pl_report *rep)
{
    pl_options opt = {.chip = chip, .chip_spec = spec, .cost_only = 1};
    th_expect_ok(pl_pallas_call(call, in, out, &opt, rep), rep);
}

static void run_matmul(int64_t n, int64_t b, const char *chip, const pl_chip *spec, pl_report *rep)
{
    mm_params p;
    pl_call call;
    mm_call(&call, &p, n, n, n, b, b, b);
    pl_array in[2] = {PL_ARRAY(NULL, PL_BF16, n, n), PL_ARRAY(NULL, PL_BF16, n, n)};
    pl_array out = PL_ARRAY(NULL, PL_BF16, n, n);
    run(&call, in, &out, chip, spec, rep);
}

/* A copy of a (4096, 1024) f32 array in (256, 1024) row blocks: no MXU work,
 * like an RMSNorm. */
static void run_rows(const char *chip, const pl_chip *spec, pl_report *rep)
{
    pl_call call = th_copy_call_2d(4096, 1024, 256, 1024);
    pl_array in = PL_ARRAY(NULL, PL_F32, 4096, 1024), out = PL_ARRAY(NULL, PL_F32, 4096, 1024);
    run(&call, &in, &out, chip, spec, rep);
}

/* "51.12 us" -> seconds */
static double parse_time(const char *s)
{
    char unit[8] = "";
    double v = 0;
    cr_assert_eq(sscanf(s, "%lf %7s", &v, unit), 2, "no time in \"%.30s\"", s);
    if (!strncmp(unit, "ns", 2)) return v * 1e-9;
    if (!strncmp(unit, "us", 2)) return v * 1e-6;
    if (!strncmp(unit, "ms", 2)) return v * 1e-3;
    return v;
}

/* The printed "KEY T = compute A + exposed DMA B + step overhead C" must
 * add up (to the rounding of the printed figures). */
static void expect_parts_add_up(const char *text, const char *key)
{
    const char *t = strstr(text, key);
    cr_assert(t, "no \"%s\" line:\n%s", key, text);
    t += strlen(key);
    const char *comp = strstr(t, "= compute "), *dma = strstr(t, "+ exposed DMA ");
    const char *over = strstr(t, "+ step overhead ");
    cr_assert(comp && dma && over, "%s", t);
    double total = parse_time(t), sum = parse_time(comp + 10) + parse_time(dma + 14) + parse_time(over + 16);
    cr_assert(fabs(sum - total) <= 0.01 * total, "\"%s\": the parts add up to %g s, not the %g s printed:\n%s", key,
              sum, total, text);
}

static void expect_time_line_adds_up(const char *text, const char *chip)
{
    char key[64];
    snprintf(key, sizeof key, "time on %s: ", chip);
    expect_parts_add_up(text, key);
}

/* The output of the tilesim command next to this test binary
 * (BUILD/tests/../tilesim, or $TILESIM) run with args, malloc'd. */
static char *run_cli(const char *args)
{
    char path[PATH_MAX], cmd[PATH_MAX + 256];
    const char *exe = th_tilesim_path(path, sizeof path);
    cr_assert(access(exe, X_OK) == 0, "%s is missing: build it", exe);
    snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", exe, args);
    FILE *p = popen(cmd, "r");
    cr_assert(p);
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    for (int ch; (ch = fgetc(p)) != EOF;) fputc(ch, out);
    fclose(out);
    cr_assert_eq(pclose(p), 0, "%s:\n%s", cmd, buf);
    return buf;
}

/* ---- the headline ----------------------------------------------------------- */

Test(report_fit, headline_is_bandwidth_for_a_kernel_without_mxu_work)
{
    pl_report rep;
    run_rows("v5e", NULL, &rep);
    char *text = printed(&rep);
    cr_assert(strstr(text, "GB/s = ") && strstr(text, "% of the v5e HBM bandwidth (819 GB/s)"),
              "the headline of a kernel without MXU work is its HBM bandwidth:\n%s", text);
    cr_assert(strstr(text, "VPU busy "), "and the VPU's use:\n%s", text);
    cr_assert_null(strstr(text, "0 TFLOP/s"), "no \"0 TFLOP/s\" for a kernel without MXU work:\n%s", text);
    json_t *j = as_json(&rep);
    double bw = th_json_num(j, "hbm_bw_achieved"), frac = th_json_num(j, "hbm_bw_fraction");
    double want = th_json_num(j, "hbm_bytes") / th_json_num(j, "time_s");
    cr_assert(fabs(bw - want) <= 1e-6 * want, "hbm_bw_achieved %g, hbm_bytes / time_s %g", bw, want);
    cr_assert(frac > 0.2 && frac <= 1.0, "a streaming copy reaches a good part of HBM: %g", frac);
    cr_assert(fabs(frac - bw / 819e9) < 1e-3, "fraction %g of the chip's bandwidth", frac);
    cr_assert(json_is_true(json_object_get(j, "mxu_light")), "mxu_light in the JSON");
    json_decref(j);
    free(text);
}

/* o = x @ w, then every element of o rewritten by a scalar loop: a small dot
 * and 1024 scalar-unit accesses, which take far longer than the dot. */
static void scalar_loop_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_dot(c, refs[2], refs[0], refs[1], 0);
    for (int64_t i = 0; i < 8; i++)
        for (int64_t j = 0; j < 128; j++) pl_set_at(c, refs[2], 2 * pl_get_at(c, refs[2], i, j), i, j);
}

Test(report_fit, headline_is_bandwidth_when_scalar_loops_outweigh_the_mxu)
{
    pl_call call = {
        .name = "scalarloop", .kernel = scalar_loop_kernel, .grid_rank = 1, .grid = {4},
        .n_in = 2, .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128), PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 128, 128)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)},
    };
    pl_array in[2] = {PL_ARRAY(NULL, PL_F32, 32, 128), PL_ARRAY(NULL, PL_F32, 128, 128)};
    pl_array out = PL_ARRAY(NULL, PL_F32, 32, 128);
    pl_report rep;
    run(&call, in, &out, "v5e", NULL, &rep);
    cr_assert_gt(rep.mxu_flops, 0);
    cr_assert_gt(rep.scalar_s, rep.mxu_s, "the loop outweighs the dot: %g s vs %g s", rep.scalar_s, rep.mxu_s);
    cr_assert_eq(rep.mxu_light, 1, "the MXU did little of the work");
    char *text = printed(&rep);
    cr_assert(strstr(text, "% of the v5e HBM bandwidth") && strstr(text, "; MXU "), "%s", text);
    free(text);
}

Test(report_fit, matmul_headline_and_advice_are_unchanged)
{
    pl_report rep;
    run_matmul(2048, 128, "v5e", NULL, &rep);
    char *text = printed(&rep);
    cr_assert(strstr(text, " TFLOP/s = ") && strstr(text, "% of the bf16 MXU peak; ") &&
              strstr(text, " FLOP per HBM byte (critical 241)"), "the matmul keeps its headline:\n%s", text);
    cr_assert_null(strstr(text, "GB/s"), "%s", text);
    cr_assert(strstr(rep.bound_msg, "step-overhead-bound: 4096 grid steps x 0.15 us") &&
              strstr(rep.bound_msg, "rule P9)"), "%s", rep.bound_msg);
    /* no advice from the report itself: only a simulated change may advise (issue 22) */
    cr_assert_null(strstr(rep.bound_msg, "amortize"), "%s", rep.bound_msg);
    cr_assert_eq(rep.mxu_light, 0);
    expect_time_line_adds_up(text, "v5e");
    cr_assert_null(strstr(text, "last of"), "one core: nothing to say about cores:\n%s", text);
    free(text);
}

/* ---- the bound advice ------------------------------------------------------- */

Test(report_fit, hbm_advice_names_the_reread_operand_and_the_axis_for_a_matmul)
{
    pl_report rep;
    run_matmul(2048, 256, NULL, slow_chip(), &rep);
    cr_assert_eq(rep.bound, PL_BOUND_HBM, "%s", rep.bound_msg);
    /* x (2048, 2048) bf16 is 8 MiB, read once per column of blocks: 8 times */
    cr_assert(strstr(rep.bound_msg, "x: 64.0 MiB moved for a 8.0 MiB array, read 8 times"), "%s", rep.bound_msg);
    cr_assert(strstr(rep.bound_msg, "grid axis 1 (8 steps), which its index map ignores"), "%s", rep.bound_msg);
    cr_assert(strstr(rep.bound_msg, "larger blocks along axis 1 (y's block dim 1, o's block dim 1) mean fewer "
                                    "re-reads"), "bn, by the operands' dims: %s", rep.bound_msg);
    /* y is read as often as x: the second half of the advice is bm */
    cr_assert(strstr(rep.bound_msg, "; y: 64.0 MiB moved for a 8.0 MiB array, read 8 times, because grid axis 0 "
                                    "(8 steps)") && strstr(rep.bound_msg, "(x's block dim 0, o's block dim 0)"),
              "%s", rep.bound_msg);
    cr_assert_null(strstr(rep.bound_msg, "bm and bn"), "derived, not a matmul's names: %s", rep.bound_msg);
    cr_assert(strstr(rep.bound_msg, "FLOP per HBM byte against the slow's critical"), "%s", rep.bound_msg);
}

/* o = x + v, grid (rows, cols); v (256, 1024) is indexed by the column only,
 * so the walk reads it again for every row of blocks. */
static void add_kernel(pl_ctx *c, pl_ref *refs) { pl_add(c, refs[2], refs[0], refs[1]); }

Test(report_fit, hbm_advice_for_a_kernel_without_bm_or_bn_names_its_operands)
{
    pl_call call = {
        .name = "addrow", .kernel = add_kernel, .grid_rank = 2, .grid = {16, 2},
        .semantics = {PL_PARALLEL, PL_PARALLEL},
        .n_in = 2, .in = {PL_BLOCK(PL_MAP(0, 1), 256, 512), PL_BLOCK(PL_MAP(PL_ZERO, 1), 256, 512)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, 1), 256, 512)},
    };
    call.in[1].name = "v";
    pl_array in[2] = {PL_ARRAY(NULL, PL_F32, 4096, 1024), PL_ARRAY(NULL, PL_F32, 256, 1024)};
    pl_array out = PL_ARRAY(NULL, PL_F32, 4096, 1024);
    pl_report rep;
    run(&call, in, &out, NULL, slow_chip(), &rep);
    cr_assert_eq(rep.bound, PL_BOUND_HBM, "%s", rep.bound_msg);
    cr_assert(strstr(rep.bound_msg, "v: 16.0 MiB moved for a 1.0 MiB array, read 16 times"), "%s", rep.bound_msg);
    cr_assert(strstr(rep.bound_msg, "grid axis 0 (16 steps)"), "%s", rep.bound_msg);
    cr_assert(strstr(rep.bound_msg, "larger blocks along axis 0 (in0's block dim 0, out0's block dim 0)"), "%s",
              rep.bound_msg);
    cr_assert_null(strstr(rep.bound_msg, "bm"), "no bm for a kernel without one: %s", rep.bound_msg);
    cr_assert_null(strstr(rep.bound_msg, "bn"), "no bn for a kernel without one: %s", rep.bound_msg);
    cr_assert_null(strstr(rep.bound_msg, "FLOP per HBM byte"), "no MXU intensity without MXU work: %s",
                   rep.bound_msg);
}

Test(report_fit, hbm_advice_when_every_operand_moves_once)
{
    pl_report rep;
    run_rows(NULL, slow_chip(), &rep);
    cr_assert_eq(rep.bound, PL_BOUND_HBM, "%s", rep.bound_msg);
    cr_assert(strstr(rep.bound_msg, "every operand moves about once"), "%s", rep.bound_msg);
    cr_assert_null(strstr(rep.bound_msg, "bm and bn"), "%s", rep.bound_msg);
    cr_assert_null(strstr(rep.bound_msg, "times"), "nothing is re-read: %s", rep.bound_msg);
}

/* o = x, row blocks split between the cores; w (a 4 MiB table or a 4 KiB
 * row) is one block that never changes. */
static void first_kernel(pl_ctx *c, pl_ref *refs) { pl_copy(c, refs[2], refs[0]); }

static void run_with_table(int64_t w_rows, pl_report *rep)
{
    pl_call call = {
        .name = "table", .kernel = first_kernel, .grid_rank = 1, .grid = {8}, .semantics = {PL_PARALLEL},
        .n_in = 2, .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), 256, 1024), PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), w_rows, 1024)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 256, 1024)},
    };
    call.in[1].name = "w";
    call.vmem_limit_bytes = 64 << 20;
    pl_array in[2] = {PL_ARRAY(NULL, PL_F32, 2048, 1024), PL_ARRAY(NULL, PL_F32, w_rows, 1024)};
    pl_array out = PL_ARRAY(NULL, PL_F32, 2048, 1024);
    run(&call, in, &out, NULL, slow_megacore(), rep);
    cr_assert_eq(rep->cores, 2);
    cr_assert_eq(rep->bound, PL_BOUND_HBM, "%s", rep->bound_msg);
}

Test(report_fit, hbm_advice_says_a_table_is_read_once_per_core)
{
    pl_report rep;
    run_with_table(1024, &rep);
    cr_assert(strstr(rep.bound_msg, "w: 8.0 MiB moved for a 4.0 MiB array, read 2 times, once by each of the 2 "
                                    "TensorCores"), "%s", rep.bound_msg);
    cr_assert_null(strstr(rep.bound_msg, "larger blocks of it"), "%s", rep.bound_msg);
    /* a 4 KiB row read by each core is not what the kernel waits for */
    run_with_table(1, &rep);
    cr_assert(strstr(rep.bound_msg, "every operand moves about once"), "%s", rep.bound_msg);
    cr_assert_null(strstr(rep.bound_msg, "w: "), "%s", rep.bound_msg);
}

/* ---- megacore (G4) ------------------------------------------------------------ */

Test(report_fit, megacore_time_line_adds_up)
{
    pl_report rep;
    run_matmul(2048, 512, "v5p", NULL, &rep);
    cr_assert_eq(rep.cores, 2);
    char *text = printed(&rep);
    expect_time_line_adds_up(text, "v5p");
    cr_assert(strstr(text, "the last of 2 to finish"), "says whose parts they are:\n%s", text);
    double sum = rep.core_compute_s + rep.core_exposed_s + rep.core_overhead_s;
    cr_assert(fabs(sum - rep.time_s) <= 1e-9 * rep.time_s + 1e-15, "core %d: %g + %g + %g != %g", rep.slowest_core,
              rep.core_compute_s, rep.core_exposed_s, rep.core_overhead_s, rep.time_s);
    cr_assert(rep.compute_s > 1.5 * rep.core_compute_s, "compute_s stays the sum over cores");
    free(text);
}

Test(report_fit, megacore_explain_time_line_adds_up)
{
    char *text = run_cli("explain matmul 256 256 256 128 128 128 --chip v5p");
    expect_parts_add_up(text, "predicted time: ");
    cr_assert(strstr(text, "the last of 2 to finish"), "%s", text);
    free(text);
    text = run_cli("explain matmul 256 256 256 128 128 128");
    expect_parts_add_up(text, "predicted time: ");
    cr_assert_null(strstr(text, "last of"), "%s", text);
    free(text);
}

/* ---- T6: padding by lanes and sublanes alike ------------------------------------ */

/* o = x, with a (1, 1024) bias block and a (256, 1) statistics block as
 * inputs and a (256, 1) scratch: the layout pads each by 8x or 128x. */
static void stats_kernel(pl_ctx *c, pl_ref *refs) { pl_copy(c, refs[3], refs[0]); }

static pl_call stats_call(int64_t stat_rows, int64_t scratch_lanes)
{
    pl_call call = {
        .name = "stats", .kernel = stats_kernel, .grid_rank = 1, .grid = {4},
        .n_in = 3,
        .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), 256, 1024), PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), stat_rows, 1024),
               PL_BLOCK(PL_MAP(0, PL_ZERO), 256, scratch_lanes)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 256, 1024)},
        .n_scratch = 1, .scratch = {PLTPU_VMEM(PL_F32, 256, scratch_lanes)},
    };
    call.in[1].name = "bias";
    call.in[2].name = "rowstat";
    call.scratch[0].name = "r";
    return call;
}

static void validate_stats(int64_t bias_rows, int64_t lanes, pl_report *rep)
{
    pl_call call = stats_call(bias_rows, lanes);
    pl_array in[3] = {PL_ARRAY(NULL, PL_F32, 1024, 1024), PL_ARRAY(NULL, PL_F32, bias_rows, 1024),
                      PL_ARRAY(NULL, PL_F32, 1024, lanes)};
    pl_array out = PL_ARRAY(NULL, PL_F32, 1024, 1024);
    pl_options opt = {.cost_only = 1};
    th_expect_ok(pl_validate(&call, in, &out, &opt, rep), rep);
}

static const char *warning_of(const pl_report *rep, const char *name)
{
    char key[64];
    snprintf(key, sizeof key, "%s: ", name);
    for (const char *w = rep->warnings; (w = strstr(w, key)); w++)
        if (w == rep->warnings || w[-1] == '\n') return w;
    return NULL;
}

Test(report_fit, T6_lane_and_sublane_padding_warn_alike_for_blocks_and_scratch)
{
    pl_report rep;
    validate_stats(1, 1, &rep);
    const char *bias = warning_of(&rep, "bias"), *stat = warning_of(&rep, "rowstat"), *r = warning_of(&rep, "r");
    cr_assert(bias, "a (1, 1024) bias block warns (T6):\n%s", rep.warnings);
    cr_assert(stat, "a (256, 1) statistics block warns like the bias (T6):\n%s", rep.warnings);
    cr_assert(r, "a (256, 1) VMEM scratch warns like the bias (T6):\n%s", rep.warnings);
    cr_assert(strstr(bias, "bias: block (1, 1024) (f32) has 1 row where the native tile has 8 sublanes") &&
              strstr(bias, "32768 bytes of VMEM for 4096 of data, 8x (rule T6)"), "%s", rep.warnings);
    cr_assert(strstr(stat, "rowstat: block (256, 1) (f32) is 1 wide where a tile has 128 lanes") &&
              strstr(stat, "131072 bytes of VMEM for 1024 of data, 128x (rule T6)"), "%s", rep.warnings);
    cr_assert(strstr(r, "r: scratch (256, 1) (f32) is 1 wide where a tile has 128 lanes") &&
              strstr(r, "131072 bytes of VMEM for 1024 of data, 128x (rule T6)"), "%s", rep.warnings);
    cr_assert_eq(rep.n_warnings, 3, "one warning each:\n%s", rep.warnings);
}

Test(report_fit, T6_well_shaped_blocks_and_scratch_do_not_warn)
{
    pl_report rep;
    validate_stats(8, 128, &rep);
    cr_assert_eq(rep.n_warnings, 0, "(8, 1024), (256, 128) blocks and (256, 128) scratch:\n%s", rep.warnings);
    pl_report mm;
    run_matmul(1024, 256, "v5e", NULL, &mm);
    cr_assert_eq(mm.n_warnings, 0, "%s", mm.warnings);
}
