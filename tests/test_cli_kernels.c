/* tests/test_cli_kernels.c: the `tilesim` verbs that run a kernel
 * definition (issue 10): list, run and verify, on built-in kernels and on the
 * plugin template; a wrong kernel's exit status and verdict (V5); verify's
 * heatmap and the generic allclose heatmap. Sweep, explain and the messages
 * for bad command lines are in test_cli_kernels_sweep.c.
 *
 * The command is the tilesim of this build directory (BUILD/tilesim next to
 * BUILD/tests/), the plugin BUILD/examples/plugin/rmsnorm.so (tests/run.h). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../examples/kernels/registry.h"
#include "../sim/tilesim.h"
#include "run.h"

/* ---- list ---------------------------------------------------------------------------- */

Test(cli_kernels, list_shows_every_builtin_with_its_parameters)
{
    th_run r = TH_RUN("list");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(ex_kernel_count() >= 11, "the built-ins: matmul (3 forms), block-sparse, grouped, flash, paged, "
                                      "rmsnorm, layernorm, softmax, add");
    for (int i = 0; i < ex_kernel_count(); i++) {
        const pl_kernel_def *d = ex_kernel_at(i);
        char head[128];
        snprintf(head, sizeof head, "\n%s: ", d->name);
        cr_expect(strstr(r.out, head), "list lacks kernel %s", d->name);
        for (int p = 0; p < d->n_params; p++) cr_expect(strstr(r.out, d->params[p].name), "%s.%s", d->name,
                                                        d->params[p].name);
    }
    cr_expect(strstr(r.out, "sweep: 128,256,512"), "candidates are listed:\n%s", r.out);
    th_run_free(&r);
}

Test(cli_kernels, list_of_the_plugin)
{
    th_need_plugin();
    th_run r = TH_RUN("list", th_plugin());
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "rmsnorm"), "%s", r.out);
    th_run_free(&r);
    r = TH_RUN("list", "/nonexistent/p.so");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "/nonexistent/p.so"), "the message names the file: %s", r.err);
    th_run_free(&r);
}

/* Issue 24: `tilesim list quant_matmul` said "plugin 'quant_matmul': cannot
 * open it"; a built-in's name shows that kernel, and a name that is neither
 * says so, listing the built-ins. */
Test(cli_kernels, list_of_a_builtin_name_shows_that_kernel)
{
    th_run r = TH_RUN("list", "quant_matmul");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "quant_matmul:") && strstr(r.out, "wdtype"), "%s", r.out);
    cr_expect(!strstr(r.out, "rmsnorm:"), "that kernel alone: %s", r.out);
    th_run_free(&r);
    r = TH_RUN("list", "quant_matmu");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "'quant_matmu' is neither a built-in kernel") && strstr(r.err, "quant_matmul"), "%s",
              r.err);
    th_run_free(&r);
}

/* Issue 24: explain of a plugin shows the ops its kernel made at each step,
 * and the operand names line up however long they are ("gamma"). */
Test(cli_kernels, explain_of_a_plugin_shows_its_ops_and_aligns_the_names)
{
    th_need_plugin();
    th_run r = TH_RUN("explain", th_plugin(), "--set", "rows=32", "--set", "d=256", "--set", "br=8");
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "  kernel: ") && strstr(r.out, "pl_mul_row (VPU), 2048 elements") &&
                  strstr(r.out, "pl_rsqrt (EUP"), "%s", r.out);
    const char *x = strstr(r.out, "\n  x     block (1, 0)"), *g = strstr(r.out, "\n  gamma block (0, 0)");
    cr_expect(x && g, "x and gamma in one column:\n%s", r.out);
    th_run_free(&r);
}

/* ---- run ----------------------------------------------------------------------------- */

Test(cli_kernels, run_passes_and_reports_bandwidth_first)
{
    th_run r = TH_RUN("run", "rmsnorm");
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "PASS") && strstr(r.out, "reference check (V5)"), "%s", r.out);
    cr_expect(strstr(r.out, "GB/s"), "an RMSNorm is judged by its bandwidth: %s", r.out);
    th_run_free(&r);
}

Test(cli_kernels, run_json_parses_with_the_verdict_per_output)
{
    th_run r = TH_RUN("run", "layernorm", "--json");
    cr_assert_eq(r.status, 0, "%s", r.err);
    json_t *doc = th_json_parse(r.out, "run --json");
    cr_expect_str_eq(th_json_str(doc, "kernel"), "layernorm");
    cr_expect_str_eq(th_json_str(doc, "verdict"), "PASS");
    json_t *outs = json_object_get(doc, "outputs");
    cr_assert(json_is_array(outs) && json_array_size(outs) >= 1);
    cr_expect_str_eq(th_json_str(json_array_get(outs, 0), "verdict"), "PASS");
    cr_expect(json_is_object(json_object_get(doc, "report")));
    json_decref(doc);
    th_run_free(&r);
}

Test(cli_kernels, run_rejected_exits_2_with_the_rule)
{
    th_run r = TH_RUN("run", "rmsnorm", "--set", "br=12");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "br=12") && strstr(r.err, "T1"), "names the configuration and the rule: %s", r.err);
    th_run_free(&r);
}

Test(cli_kernels, run_cost_only_checks_nothing)
{
    th_run r = TH_RUN("run", "softmax", "--cost-only");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "cost only") && !strstr(r.out, "reference check"), "%s", r.out);
    th_run_free(&r);
}

Test(cli_kernels, run_on_the_plugin)
{
    th_need_plugin();
    char spec[PATH_MAX + 16];
    snprintf(spec, sizeof spec, "%s:rmsnorm", th_plugin());
    const char *specs[2] = {th_plugin(), spec};
    for (int i = 0; i < 2; i++) {
        th_run r = TH_RUN("run", specs[i]);
        cr_expect_eq(r.status, 0, "%s: %s%s", specs[i], r.out, r.err);
        cr_expect(strstr(r.out, "PASS"), "%s", r.out);
        th_run_free(&r);
    }
    snprintf(spec, sizeof spec, "%s:nope", th_plugin());
    th_run r = TH_RUN("run", spec);
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "no kernel 'nope'"), "%s", r.err);
    th_run_free(&r);
}

/* ---- a wrong kernel: exit 1, FAIL, the block that is wrong ------------------------------- */

/* A plugin compiled here: y = x, except that row block 1 adds 1. */
static const char wrong_src[] =
    "#include \"kernel/pallas.h\"\n#include \"sim/kdef.h\"\n#include <string.h>\n"
    "static void k(pl_ctx *c, pl_ref *r) {\n"
    "    if (pl_program_id(c, 0) == 1) pl_add_scalar(c, r[1], r[0], 1.0); else pl_copy(c, r[1], r[0]); }\n"
    "static int build(const int64_t *v, pl_kernel_build *b, char *m, size_t n) {\n"
    "    (void)v, (void)m, (void)n;\n"
    "    b->call = (pl_call){.name = \"wrong\", .kernel = k, .grid_rank = 1, .grid = {4}, .n_in = 1,\n"
    "        .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)}, .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)}};\n"
    "    b->n_args = 1, b->args[0] = PL_ARRAY(NULL, PL_F32, 32, 128);\n"
    "    b->n_outs = 1, b->outs[0] = PL_ARRAY(NULL, PL_F32, 32, 128);\n"
    "    return PL_OK; }\n"
    "static int ref(const int64_t *v, const pl_kernel_build *b, pl_array *w) {\n"
    "    (void)v; memcpy(w[0].data, b->args[0].data, 32 * 128 * 4); return PL_OK; }\n"
    "static const pl_kernel_def d = {.name = \"wrong\", .summary = \"y = x, wrong in row block 1\", .n_params = 1,\n"
    "    .params = {{.name = \"unused\", .def = 1}}, .build = build, .reference = ref};\n"
    "static const pl_kernel_def *const all[] = {&d};\n"
    "int tilesim_kernels(int abi, const pl_kernel_def *const **defs) {\n"
    "    if (abi != PL_KERNEL_ABI) return -1; *defs = all; return 1; }\n";

/* The same plugin with a kernel a little off everywhere: y = x * 1.00002,
 * twice f32's default rtol (1e-5): past the tolerance, short of a FAIL. */
static const char marginal_src[] =
    "#include \"kernel/pallas.h\"\n#include \"sim/kdef.h\"\n#include <string.h>\n"
    "static void k(pl_ctx *c, pl_ref *r) { pl_mul_scalar(c, r[1], r[0], 1.00002); }\n"
    "static int build(const int64_t *v, pl_kernel_build *b, char *m, size_t n) {\n"
    "    (void)v, (void)m, (void)n;\n"
    "    b->call = (pl_call){.name = \"off\", .kernel = k, .grid_rank = 1, .grid = {4}, .n_in = 1,\n"
    "        .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)}, .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)}};\n"
    "    b->call.out[0].name = \"y\";\n"
    "    b->n_args = 1, b->args[0] = PL_ARRAY(NULL, PL_F32, 32, 128);\n"
    "    b->n_outs = 1, b->outs[0] = PL_ARRAY(NULL, PL_F32, 32, 128);\n"
    "    return PL_OK; }\n"
    "static int ref(const int64_t *v, const pl_kernel_build *b, pl_array *w) {\n"
    "    (void)v; memcpy(w[0].data, b->args[0].data, 32 * 128 * 4); return PL_OK; }\n"
    "static const pl_kernel_def d = {.name = \"off\", .summary = \"y = x, a little off\", .n_params = 1,\n"
    "    .params = {{.name = \"unused\", .def = 1}}, .build = build, .reference = ref};\n"
    "static const pl_kernel_def *const all[] = {&d};\n"
    "int tilesim_kernels(int abi, const pl_kernel_def *const **defs) {\n"
    "    if (abi != PL_KERNEL_ABI) return -1; *defs = all; return 1; }\n";

/* A plugin whose output is a long f32 dot, o = x @ w (8 x 4096 @ 4096 x 128),
 * with a plain double reference, as a new user wrote it; dotcheck=1 makes
 * the reference declare the output a dot (pl_want_dot). */
static const char dot_src[] =
    "#include \"kernel/pallas.h\"\n#include \"sim/kdef.h\"\n"
    "static void k(pl_ctx *c, pl_ref *r) { pl_dot(c, r[2], r[0], r[1], 0); }\n"
    "static int build(const int64_t *v, pl_kernel_build *b, char *m, size_t n) {\n"
    "    (void)v, (void)m, (void)n;\n"
    "    b->call = (pl_call){.name = \"dot\", .kernel = k, .grid_rank = 1, .grid = {1}, .n_in = 2,\n"
    "        .in = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 8, 4096), PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 4096, 128)},\n"
    "        .n_out = 1, .out = {PL_BLOCK_NAMED(\"o\", PL_MAP(PL_ZERO, PL_ZERO), 8, 128)}};\n"
    "    b->n_args = 2, b->args[0] = PL_ARRAY(NULL, PL_F32, 8, 4096), b->args[1] = PL_ARRAY(NULL, PL_F32, 4096, 128);\n"
    "    b->n_outs = 1, b->outs[0] = PL_ARRAY(NULL, PL_F32, 8, 128);\n"
    "    return PL_OK; }\n"
    "static int ref(const int64_t *v, const pl_kernel_build *b, pl_array *w) {\n"
    "    const float *x = b->args[0].data, *y = b->args[1].data; float *o = w[0].data;\n"
    "    for (int i = 0; i < 8; i++) for (int j = 0; j < 128; j++) { double s = 0;\n"
    "        for (int p = 0; p < 4096; p++) s += (double)x[i * 4096 + p] * y[p * 128 + j];\n"
    "        o[i * 128 + j] = (float)s; }\n"
    "    return v[0] ? pl_want_dot(&w[0], &b->args[0], &b->args[1], 0, 0) : PL_OK; }\n"
    "static const pl_kernel_def d = {.name = \"dot\", .summary = \"o = x @ w, K = 4096\", .n_params = 1,\n"
    "    .params = {{.name = \"dotcheck\", .def = 0}}, .build = build, .reference = ref};\n"
    "static const pl_kernel_def *const all[] = {&d};\n"
    "int tilesim_kernels(int abi, const pl_kernel_def *const **defs) {\n"
    "    if (abi != PL_KERNEL_ABI) return -1; *defs = all; return 1; }\n";

/* The source tree: the first directory above the build holding sim/kdef.h. */
static int source_root(char *root, size_t n)
{
    th_build_path("", root, n);
    for (int up = 0; up < 4; up++) {
        char probe[PATH_MAX + 32];
        snprintf(probe, sizeof probe, "%s/sim/kdef.h", root);
        if (access(probe, R_OK) == 0) return 1;
        char *slash = strrchr(root, '/');
        if (!slash || slash == root) return 0;
        if (slash[1] == '\0') *slash = '\0', slash = strrchr(root, '/');
        if (!slash) return 0;
        *slash = '\0';
    }
    return 0;
}

/* Compile a plugin's source (text) into src.so next to src (a mkstemp
 * template, filled in); skips when the source tree is not above the build. */
static void build_plugin(const char *text, char *src, char *so, size_t n)
{
    char root[PATH_MAX / 2], cmd[PATH_MAX + 256];
    if (!source_root(root, sizeof root)) cr_skip_test("the source tree is not above the build directory");
    int fd = mkstemp(src);
    cr_assert(fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    snprintf(so, n, "%s.so", src);
    snprintf(cmd, sizeof cmd, "cc -shared -fPIC -O1 -x c -I'%s' '%s' -o '%s'", root, src, so);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
}

Test(cli_kernels, a_wrong_kernel_fails_with_exit_1_naming_its_block)
{
    char src[] = "/tmp/tck_wrong_XXXXXX", so[64];
    build_plugin(wrong_src, src, so, sizeof so);
    th_run r = TH_RUN("verify", so);
    cr_expect_eq(r.status, 1, "a wrong result exits 1: %s%s", r.out, r.err);
    cr_expect(strstr(r.out, "FAIL") && strstr(r.out, "block (1, 0)"), "the verdict and the block (V5): %s", r.out);
    th_run_free(&r);
    r = TH_RUN("run", so, "--json");
    cr_expect_eq(r.status, 1, "%s", r.err);
    json_t *doc = th_json_parse(r.out, "run --json of a wrong kernel");
    cr_expect_str_eq(th_json_str(doc, "verdict"), "FAIL");
    json_decref(doc);
    th_run_free(&r);
    unlink(src), unlink(so);
}

/* ---- verify and the heatmap ------------------------------------------------------------ */

/* run, verify and explain work on every built-in kernel with its defaults. */
Test(cli_kernels, every_builtin_runs_verifies_and_explains, .timeout = 120)
{
    for (int i = 0; i < ex_kernel_count(); i++) {
        const char *name = ex_kernel_at(i)->name, *verbs[3] = {"run", "verify", "explain"};
        for (int k = 0; k < 3; k++) {
            if (k == 1 && !ex_kernel_at(i)->reference) continue;
            th_run r = TH_RUN(verbs[k], name);
            cr_expect_eq(r.status, 0, "%s %s: exit %d\n%s%s", verbs[k], name, r.status, r.out, r.err);
            cr_expect(k == 2 ? strstr(r.out, "summary:") != NULL : strstr(r.out, "PASS") != NULL, "%s %s: %s", verbs[k],
                      name, r.out);
            th_run_free(&r);
        }
    }
}

Test(cli_kernels, verify_and_explain_the_plugin)
{
    th_need_plugin();
    char heat[] = "/tmp/tck_pheat_XXXXXX";
    close(mkstemp(heat));
    th_run r = TH_RUN("verify", th_plugin(), "--heatmap", heat);
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    char *svg = th_read_file(heat);
    cr_expect(svg && strstr(svg, "legend"), "the plugin's heatmap");
    free(svg);
    unlink(heat);
    th_run_free(&r);
    r = TH_RUN("explain", th_plugin(), "--set", "rows=64", "--set", "br=16");
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "step 3") && strstr(r.out, "summary:"), "%s", r.out);
    th_run_free(&r);
}

Test(cli_kernels, verify_writes_a_labelled_heatmap)
{
    char path[] = "/tmp/tck_heat_XXXXXX";
    close(mkstemp(path));
    th_run r = TH_RUN("verify", "rmsnorm", "--set", "br=64", "--heatmap", path);
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    char *svg = th_read_file(path);
    cr_assert(svg && strncmp(svg, "<svg", 4) == 0);
    cr_expect(strstr(svg, "class=\"row-label\"") && strstr(svg, "class=\"col-label\"") && strstr(svg, "legend"),
              "block labels and a legend");
    cr_expect(strstr(svg, "block (15, 0)"), "1024 rows in blocks of 64: 16 row blocks");
    free(svg);
    unlink(path);
    th_run_free(&r);
    r = TH_RUN("verify", "rmsnorm", "--heatmap", "/nonexistent/dir/h.svg");
    cr_expect_neq(r.status, 0);
    cr_expect(strstr(r.err, "/nonexistent/dir/h.svg"), "%s", r.err);
    th_run_free(&r);
}

/* The generic heatmap of any output: the bad block takes the FAIL colour, a
 * block with no error the 'exact' one; every colour is in the legend. */
Test(cli_kernels, allclose_heatmap_marks_the_bad_block)
{
    enum { M = 64, N = 256 };
    float *got = th_f32_seq(M * N), *want = th_f32_seq(M * N);
    got[40 * N + 200] += 1.0f; /* row block 5 of 8 rows, column block 1 of 128 columns */
    pl_array g = PL_ARRAY(got, PL_F32, M, N), w = PL_ARRAY(want, PL_F32, M, N);
    char path[] = "/tmp/tck_heat2_XXXXXX", msg[512];
    close(mkstemp(path));
    cr_assert_eq(pl_allclose_heatmap(&g, &w, 8, 128, 0, 0, path, msg, sizeof msg), PL_EVERIFY, "%s", msg);
    cr_expect(strstr(msg, "8x2 blocks") && strstr(msg, "FAIL"), "%s", msg);
    char *svg = th_read_file(path);
    const char *bad = strstr(svg, "<title>block (5, 1)");
    cr_assert(bad, "a tooltip per block");
    const char *rect = bad;
    while (rect > svg && strncmp(rect, "<rect", 5) != 0) rect--;
    cr_expect(strstr(rect, "fill=\"#440154\"") == strstr(rect, "fill="), "the bad block is FAIL-coloured");
    const char *good = strstr(svg, "<title>block (0, 0)");
    rect = good;
    while (rect > svg && strncmp(rect, "<rect", 5) != 0) rect--;
    cr_expect(strstr(rect, "fill=\"#FDE725\"") == strstr(rect, "fill="), "an exact block is 'exact'-coloured");
    cr_expect(strstr(svg, "FAIL (error &gt;") || strstr(svg, "FAIL (error >"), "the legend names FAIL");
    cr_expect(strstr(svg, "exact (0)") && strstr(svg, "MARGINAL"), "the legend has every step");
    free(svg);
    unlink(path);
    pl_array small = PL_ARRAY(want, PL_F32, M, N / 2);
    cr_expect_eq(pl_allclose_heatmap(&g, &small, 8, 128, 0, 0, path, msg, sizeof msg), PL_ESHAPE);
    cr_expect_eq(pl_allclose_heatmap(&g, &w, 8, 128, 0, 0, "/nonexistent/h.svg", msg, sizeof msg), PL_EINVAL);
    cr_expect(strstr(msg, "/nonexistent/h.svg"), "%s", msg);
    free(got), free(want);
}

/* Issue 24: a MARGINAL result's last line says MARGINAL, not PASS; exit 0,
 * and 1 with --strict (V5). Before, a final PASS followed it. */
Test(cli_kernels, a_marginal_result_says_so_last_and_strict_makes_it_exit_1)
{
    char src[] = "/tmp/tck_marginal_XXXXXX", so[64];
    build_plugin(marginal_src, src, so, sizeof so);
    static const char *const verbs[] = {"run", "verify"};
    for (int i = 0; i < 2; i++) {
        th_run r = TH_RUN(verbs[i], so);
        cr_expect_eq(r.status, 0, "%s: MARGINAL exits 0: %s%s", verbs[i], r.out, r.err);
        const char *last = strstr(r.out, "MARGINAL: output 'y'");
        cr_expect(last && !strstr(last, "PASS"), "%s: the last line says MARGINAL, no PASS after it: %s", verbs[i],
                  r.out);
        th_run_free(&r);
        r = TH_RUN(verbs[i], so, "--strict");
        cr_expect_eq(r.status, 1, "%s --strict: MARGINAL exits 1: %s%s", verbs[i], r.out, r.err);
        th_run_free(&r);
    }
    th_run r = TH_RUN("run", so, "--json");
    json_t *doc = th_json_parse(r.out, "run --json of a marginal kernel");
    cr_expect_str_eq(th_json_str(doc, "verdict"), "MARGINAL");
    json_decref(doc);
    th_run_free(&r);
    unlink(src), unlink(so);
}

/* Issue 24: a correct long f32 dot FAILed against a double reference at the
 * f32 default tolerance ("worst 6.7 of the tolerance"); declared a dot
 * (pl_want_dot) it is checked by the error its contraction explains, and
 * passes. */
Test(cli_kernels, a_dot_output_is_checked_by_its_normalised_error)
{
    char src[] = "/tmp/tck_dot_XXXXXX", so[64];
    build_plugin(dot_src, src, so, sizeof so);
    th_run r = TH_RUN("verify", so, "--set", "dotcheck=1");
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "normalised error") && strstr(r.out, "PASS"), "%s", r.out);
    th_run_free(&r);
    r = TH_RUN("run", so, "--set", "dotcheck=1");
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "vs op(a) @ op(b)") && strstr(r.out, "pass below"), "%s", r.out);
    th_run_free(&r);
    r = TH_RUN("verify", so, "--set", "dotcheck=0"); /* the f32 tolerance: what the user met */
    cr_expect(strstr(r.out, "of the tolerance"), "%s", r.out);
    cr_expect(strstr(r.out, "pl_want_tolerance(&want[0]"), "a FAIL near the tolerance says how to set it: %s", r.out);
    cr_expect_eq(r.status, 1, "the correct dot FAILs at the f32 tolerance, as the user found: %s", r.out);
    cr_log_info("the same dot at the f32 tolerance: %s", strstr(r.out, "output 0") ? strstr(r.out, "output 0") : r.out);
    th_run_free(&r);
    unlink(src), unlink(so);
}

/* A plugin names its operands: a newline or an escape in a name reaches no
 * terminal (the verdict lines printed them raw; the operand table had
 * printed '?' already). */
Test(cli_kernels, an_operand_name_with_control_characters_is_printed_safely)
{
    char src[] = "/tmp/tck_evil_XXXXXX", so[64], text[sizeof dot_src + 64];
    const char *at = strstr(dot_src, "PL_BLOCK_NAMED(\"o\"");
    cr_assert(at);
    snprintf(text, sizeof text, "%.*sPL_BLOCK_NAMED(\"o\\n\\x1b[31m\"%s", (int)(at - dot_src), dot_src,
             at + strlen("PL_BLOCK_NAMED(\"o\""));
    build_plugin(text, src, so, sizeof so);
    static const char *const verbs[] = {"run", "verify"};
    for (int i = 0; i < 2; i++) {
        th_run r = TH_RUN(verbs[i], so, "--set", "dotcheck=1");
        cr_expect(!strchr(r.out, '\x1b') && !strchr(r.err, '\x1b'), "%s: %s%s", verbs[i], r.out, r.err);
        cr_expect(strstr(r.out, "'o??[31m'"), "%s: %s", verbs[i], r.out);
        th_run_free(&r);
    }
    unlink(src), unlink(so);
}
