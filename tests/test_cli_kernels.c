/* tests/test_cli_kernels.c: the `tilesim` verbs over any kernel definition
 * (issue 10): list, run, verify, sweep KERNEL, explain KERNEL, on built-in
 * kernels and on the plugin template; their messages for bad kernels,
 * --set and --vary; the public sweep printers and the generic heatmap; and
 * that the older `sweep matmul M N K` and `explain matmul ...` keep their
 * output format (documented and scripted against).
 *
 * The command is the tilesim of this build directory (BUILD/tilesim next to
 * BUILD/tests/), the plugin BUILD/examples/plugin/rmsnorm.so, as in
 * test_cli.c. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../examples/kernels/registry.h"
#include "../sim/tilesim.h"
#include "helpers.h"

/* ---- running the command ------------------------------------------------------------ */

static const char *tilesim(void)
{
    static char path[PATH_MAX];
    return th_tilesim_path(path, sizeof path);
}

static const char *plugin(void)
{
    static char path[PATH_MAX];
    return th_build_path("examples/plugin/rmsnorm.so", path, sizeof path);
}

typedef struct res {
    int status;
    char *out, *err;
} res;

static char *slurp_fd(const char *path)
{
    char *s = th_read_file(path);
    unlink(path);
    return s ? s : strdup("");
}

static res run_args(const char *const *args)
{
    cr_assert(access(tilesim(), X_OK) == 0, "%s is missing: build it first", tilesim());
    char o[] = "/tmp/tck_out_XXXXXX", e[] = "/tmp/tck_err_XXXXXX";
    int fo = mkstemp(o), fe = mkstemp(e);
    cr_assert(fo >= 0 && fe >= 0);
    char *argv[40];
    int n = 0;
    argv[n++] = (char *)tilesim();
    for (; args[n - 1] && n < 39; n++) argv[n] = (char *)args[n - 1];
    argv[n] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        setenv("OPENBLAS_NUM_THREADS", "1", 1);
        if (dup2(fo, 1) < 0 || dup2(fe, 2) < 0) _exit(126);
        execv(argv[0], argv);
        _exit(127);
    }
    int ws;
    cr_assert_eq(waitpid(pid, &ws, 0), pid);
    close(fo), close(fe);
    res r = {WIFEXITED(ws) ? WEXITSTATUS(ws) : -WTERMSIG(ws), slurp_fd(o), slurp_fd(e)};
    cr_assert(r.status >= 0, "tilesim was killed by signal %d: %s", -r.status, r.err);
    return r;
}
#define RUN(...) run_args((const char *const[]){__VA_ARGS__, NULL})

static void res_free(res *r) { free(r->out), free(r->err); }

#define STARTS(text, lit) (strncmp((text), (lit), strlen(lit)) == 0)

static void need_plugin(void)
{
    if (access(plugin(), R_OK) != 0) cr_skip_test("%s is not built (make builds the plugin template)", plugin());
}

/* ---- list ---------------------------------------------------------------------------- */

Test(cli_kernels, list_shows_every_builtin_with_its_parameters)
{
    res r = RUN("list");
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
    res_free(&r);
}

Test(cli_kernels, list_of_the_plugin)
{
    need_plugin();
    res r = RUN("list", plugin());
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "rmsnorm"), "%s", r.out);
    res_free(&r);
    r = RUN("list", "/nonexistent/p.so");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "/nonexistent/p.so"), "the message names the file: %s", r.err);
    res_free(&r);
}

/* ---- run ----------------------------------------------------------------------------- */

Test(cli_kernels, run_passes_and_reports_bandwidth_first)
{
    res r = RUN("run", "rmsnorm");
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "PASS") && strstr(r.out, "reference check (V5)"), "%s", r.out);
    cr_expect(strstr(r.out, "GB/s"), "an RMSNorm is judged by its bandwidth: %s", r.out);
    res_free(&r);
}

Test(cli_kernels, run_json_parses_with_the_verdict_per_output)
{
    res r = RUN("run", "layernorm", "--json");
    cr_assert_eq(r.status, 0, "%s", r.err);
    json_t *doc = th_json_parse(r.out, "run --json");
    cr_expect_str_eq(th_json_str(doc, "kernel"), "layernorm");
    cr_expect_str_eq(th_json_str(doc, "verdict"), "PASS");
    json_t *outs = json_object_get(doc, "outputs");
    cr_assert(json_is_array(outs) && json_array_size(outs) >= 1);
    cr_expect_str_eq(th_json_str(json_array_get(outs, 0), "verdict"), "PASS");
    cr_expect(json_is_object(json_object_get(doc, "report")));
    json_decref(doc);
    res_free(&r);
}

Test(cli_kernels, run_rejected_exits_2_with_the_rule)
{
    res r = RUN("run", "rmsnorm", "--set", "br=12");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "br=12") && strstr(r.err, "T1"), "names the configuration and the rule: %s", r.err);
    res_free(&r);
}

Test(cli_kernels, run_cost_only_checks_nothing)
{
    res r = RUN("run", "softmax", "--cost-only");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "cost only") && !strstr(r.out, "reference check"), "%s", r.out);
    res_free(&r);
}

Test(cli_kernels, run_on_the_plugin)
{
    need_plugin();
    char spec[PATH_MAX + 16];
    snprintf(spec, sizeof spec, "%s:rmsnorm", plugin());
    const char *specs[2] = {plugin(), spec};
    for (int i = 0; i < 2; i++) {
        res r = RUN("run", specs[i]);
        cr_expect_eq(r.status, 0, "%s: %s%s", specs[i], r.out, r.err);
        cr_expect(strstr(r.out, "PASS"), "%s", r.out);
        res_free(&r);
    }
    snprintf(spec, sizeof spec, "%s:nope", plugin());
    res r = RUN("run", spec);
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "no kernel 'nope'"), "%s", r.err);
    res_free(&r);
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

Test(cli_kernels, a_wrong_kernel_fails_with_exit_1_naming_its_block)
{
    char root[PATH_MAX / 2], src[] = "/tmp/tck_wrong_XXXXXX", so[64], cmd[PATH_MAX + 256];
    if (!source_root(root, sizeof root)) cr_skip_test("the source tree is not above the build directory");
    int fd = mkstemp(src);
    cr_assert(fd >= 0 && write(fd, wrong_src, strlen(wrong_src)) == (ssize_t)strlen(wrong_src));
    close(fd);
    snprintf(so, sizeof so, "%s.so", src);
    snprintf(cmd, sizeof cmd, "cc -shared -fPIC -O1 -x c -I'%s' '%s' -o '%s'", root, src, so);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    res r = RUN("verify", so);
    cr_expect_eq(r.status, 1, "a wrong result exits 1: %s%s", r.out, r.err);
    cr_expect(strstr(r.out, "FAIL") && strstr(r.out, "block (1, 0)"), "the verdict and the block (V5): %s", r.out);
    res_free(&r);
    r = RUN("run", so, "--json");
    cr_expect_eq(r.status, 1, "%s", r.err);
    json_t *doc = th_json_parse(r.out, "run --json of a wrong kernel");
    cr_expect_str_eq(th_json_str(doc, "verdict"), "FAIL");
    json_decref(doc);
    res_free(&r);
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
            res r = RUN(verbs[k], name);
            cr_expect_eq(r.status, 0, "%s %s: exit %d\n%s%s", verbs[k], name, r.status, r.out, r.err);
            cr_expect(k == 2 ? strstr(r.out, "summary:") != NULL : strstr(r.out, "PASS") != NULL, "%s %s: %s", verbs[k],
                      name, r.out);
            res_free(&r);
        }
    }
}

Test(cli_kernels, verify_and_explain_the_plugin)
{
    need_plugin();
    char heat[] = "/tmp/tck_pheat_XXXXXX";
    close(mkstemp(heat));
    res r = RUN("verify", plugin(), "--heatmap", heat);
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    char *svg = th_read_file(heat);
    cr_expect(svg && strstr(svg, "legend"), "the plugin's heatmap");
    free(svg);
    unlink(heat);
    res_free(&r);
    r = RUN("explain", plugin(), "--set", "rows=64", "--set", "br=16");
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "step 3") && strstr(r.out, "summary:"), "%s", r.out);
    res_free(&r);
}

Test(cli_kernels, verify_writes_a_labelled_heatmap)
{
    char path[] = "/tmp/tck_heat_XXXXXX";
    close(mkstemp(path));
    res r = RUN("verify", "rmsnorm", "--set", "br=64", "--heatmap", path);
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    char *svg = th_read_file(path);
    cr_assert(svg && strncmp(svg, "<svg", 4) == 0);
    cr_expect(strstr(svg, "class=\"row-label\"") && strstr(svg, "class=\"col-label\"") && strstr(svg, "legend"),
              "block labels and a legend");
    cr_expect(strstr(svg, "block (15, 0)"), "1024 rows in blocks of 64: 16 row blocks");
    free(svg);
    unlink(path);
    res_free(&r);
    r = RUN("verify", "rmsnorm", "--heatmap", "/nonexistent/dir/h.svg");
    cr_expect_neq(r.status, 0);
    cr_expect(strstr(r.err, "/nonexistent/dir/h.svg"), "%s", r.err);
    res_free(&r);
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

/* ---- sweep KERNEL ------------------------------------------------------------------------ */

static void expect_ranked(json_t *doc)
{
    json_t *legal = json_object_get(doc, "legal"), *rej = json_object_get(doc, "rejected");
    cr_assert(json_is_array(legal) && json_is_array(rej));
    cr_expect_eq((double)json_array_size(legal), th_json_num(doc, "n_legal"));
    cr_expect_eq((double)json_array_size(rej), th_json_num(doc, "n_rejected"));
    for (size_t i = 1; i < json_array_size(legal); i++)
        cr_expect(th_json_num(json_array_get(legal, i - 1), "time_s") <= th_json_num(json_array_get(legal, i), "time_s"),
                  "ranked fastest first");
    for (size_t i = 0; i < json_array_size(rej); i++) {
        json_t *x = json_array_get(rej, i);
        cr_expect(strlen(th_json_str(x, "reason")) > 10, "a rejected configuration has its reason");
        cr_expect(json_is_object(json_object_get(x, "params")));
    }
}

Test(cli_kernels, sweep_kernel_json_ranks_and_lists_rejected)
{
    res r = RUN("sweep", "rmsnorm", "--vary", "br=8,12,16,32,64,128,256,512,1024", "--set", "dtype=f32", "--json");
    cr_assert_eq(r.status, 0, "%s", r.err);
    json_t *doc = th_json_parse(r.out, "sweep --json");
    cr_expect_str_eq(th_json_str(doc, "kernel"), "rmsnorm");
    cr_expect_str_eq(th_json_str(doc, "chip"), "v5e");
    cr_expect_eq(th_json_num(doc, "evaluated"), 9);
    cr_expect_eq(th_json_num(doc, "n_rejected"), 1, "br=12 breaks the (8, 128) rule");
    json_t *rej = json_array_get(json_object_get(doc, "rejected"), 0);
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(rej, "params"), "br")), 12);
    cr_expect(strstr(th_json_str(rej, "reason"), "T1"), "%s", th_json_str(rej, "reason"));
    expect_ranked(doc);
    json_decref(doc);
    res_free(&r);
}

/* A C program gets the command's JSON from pl_kernel_sweep and one call of
 * the public printer, byte for byte. */
Test(cli_kernels, public_json_printer_prints_what_the_command_prints)
{
    const pl_kernel_def *d = ex_kernel_find("rmsnorm");
    cr_assert(d);
    static const int64_t brs[] = {8, 12, 64, 256};
    int64_t v[4 * PL_KDEF_MAX_PARAMS];
    char labels[4][256];
    const char *lab[4];
    int br = pl_kernel_param_index(d, "br");
    for (int i = 0; i < 4; i++) {
        pl_kernel_defaults(d, v + i * d->n_params);
        v[i * d->n_params + br] = brs[i];
        lab[i] = pl_kernel_format(d, v + i * d->n_params, labels[i], sizeof labels[i]);
    }
    pl_report *reps = calloc(4, sizeof *reps);
    pl_options opt = {.cost_only = 1};
    cr_assert_eq(pl_kernel_sweep(d, 4, v, &opt, NULL, reps), PL_OK);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert_eq(pl_sweep_print_json(f, 4, reps, lab), PL_OK);
    fclose(f);
    res r = RUN("sweep", "rmsnorm", "--vary", "br=8,12,64,256", "--set", "dtype=f32", "--json");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect_str_eq(r.out, text);
    int order[4];
    cr_expect_eq(pl_sweep_rank(4, reps, order), 3, "br=12 is rejected");
    cr_expect_eq(order[3], 1, "the rejected one comes last");
    free(text), free(reps);
    res_free(&r);
}

Test(cli_kernels, sweep_kernel_text_csv_and_svg)
{
    char svg[] = "/tmp/tck_roof_XXXXXX";
    close(mkstemp(svg));
    res r = RUN("sweep", "add", "--svg", svg, "--top", "3");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "configuration") && strstr(r.out, "HBM GB/s") && strstr(r.out, "more legal"), "%s", r.out);
    char *plot = th_read_file(svg);
    cr_expect(plot && strstr(plot, "<svg") && strstr(plot, "roofline: add"), "the roofline names the kernel");
    free(plot);
    unlink(svg);
    res_free(&r);
    r = RUN("sweep", "add", "--csv");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(STARTS(r.out, "rank,config,status,"), "%s", r.out);
    res_free(&r);
}

Test(cli_kernels, sweep_of_the_plugin)
{
    need_plugin();
    res r = RUN("sweep", plugin(), "--json");
    cr_assert_eq(r.status, 0, "%s", r.err);
    json_t *doc = th_json_parse(r.out, "plugin sweep");
    cr_expect_gt(th_json_num(doc, "n_legal"), 0);
    expect_ranked(doc);
    json_decref(doc);
    res_free(&r);
}

/* ---- explain KERNEL -------------------------------------------------------------------- */

Test(cli_kernels, explain_any_kernel_narrates_its_operands)
{
    res r = RUN("explain", "rmsnorm", "--set", "rows=64", "--set", "br=16");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "grid (4) = 4 steps"), "%s", r.out);
    cr_expect(strstr(r.out, "copied HBM -> VMEM") && strstr(r.out, "written back to HBM"), "%s", r.out);
    cr_expect(strstr(r.out, "gamma"), "every operand by its name: %s", r.out);
    cr_expect(!strstr(r.out, "acc += x @ y"), "no matmul narration for a norm");
    res_free(&r);
    r = RUN("explain", "rmsnorm", "--set", "br=8", "--set", "rows=65536");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "at most 512"), "%s", r.err);
    res_free(&r);
}

/* ---- bad command lines ------------------------------------------------------------------ */

typedef struct bad {
    const char *args[10];
    const char *says;
} bad;

Test(cli_kernels, bad_command_lines_name_what_and_exit_2)
{
    static const bad cases[] = {
        {{"run"}, "missing the kernel"},
        {{"run", "conv"}, "unknown kernel 'conv'; the kernels are matmul"},
        {{"verify", "nope"}, "unknown kernel 'nope'"},
        {{"explain", "nope"}, "unknown kernel 'nope'"},
        {{"run", "rmsnorm", "--set", "bogus=1"}, "no parameter 'bogus' (its parameters: rows, d, br"},
        {{"run", "rmsnorm", "--set", "br=x"}, "--set br=x: parameter 'br'"},
        {{"run", "rmsnorm", "--set", "br"}, "want name=value"},
        {{"run", "rmsnorm", "--frob"}, "unknown option '--frob'; see 'tilesim run --help'"},
        {{"run", "rmsnorm", "--se", "br=8"}, "unknown option '--se'"},
        {{"verify", "rmsnorm", "--heat=x.svg"}, "unknown option '--heat'"},
        {{"run", "rmsnorm", "--seed"}, "--seed: missing value"},
        {{"run", "rmsnorm", "--json=1"}, "--json: takes no value"},
        {{"run", "rmsnorm", "--vary", "br=8"}, "'--vary' is not an option of run"},
        {{"run", "rmsnorm", "extra"}, "unexpected argument 'extra'"},
        {{"sweep", "rmsnorm", "--vary", "br=8,x"}, "--vary br=8,x: parameter 'br'"},
        {{"sweep", "rmsnorm", "--vary", "zz=8"}, "--vary zz=8: kernel 'rmsnorm' has no parameter 'zz'"},
        {{"sweep", "rmsnorm", "--vary", "br=8,8"}, "'8' appears twice"},
        {{"sweep", "rmsnorm", "--vary", "br="}, "want NAME=V1,V2"},
        {{"sweep", "rmsnorm", "--vary", "br=8", "--set", "br=16"}, "given twice"},
        {{"sweep", "rmsnorm", "--csv", "--json"}, "exclude each other"},
        {{"sweep", "rmsnorm", "--heatmap", "x"}, "'--heatmap' is not an option of sweep"},
        {{"run", "rmsnorm", "--chip", "v9"}, "unknown chip 'v9'"},
        {{"list", "a", "b"}, "unexpected argument 'b'"},
        {{"verify", "rmsnorm", "--output", "9"}, "--output: '9'"},
        /* the matmul form, now read by getopt_long: messages as before, no abbreviated options */
        {{"sweep", "matmul", "-5", "256", "256"}, "M: '-5' is not positive"},
        {{"sweep", "matmul", "256", "256", "256", "--thr", "2"}, "unknown option '--thr'"},
        {{"sweep", "matmul", "256", "256", "256", "--bm", "-128"}, "--bm: '-128' is not positive"},
        {{"explain", "matmul", "--", "256", "256", "256", "128", "128"}, "missing BK"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        res r = run_args(cases[i].args);
        cr_expect_eq(r.status, 2, "case %zu (%s ...): exit %d: %s", i, cases[i].args[0], r.status, r.err);
        cr_expect(strstr(r.err, cases[i].says), "case %zu: stderr lacks \"%s\":\n%s", i, cases[i].says, r.err);
        cr_expect(strstr(r.err, "usage: tilesim"), "case %zu: no usage hint: %s", i, r.err);
        res_free(&r);
    }
}

Test(cli_kernels, every_verb_has_help_listing_its_options)
{
    static const char *const verbs[][3] = {
        {"list", "--help"}, {"run", "--help"}, {"verify", "-h"}, {"sweep", "--help"}, {"explain", "--help"}};
    static const char *const wants[] = {"usage: tilesim list", "--cost-only", "--heatmap FILE.svg", "--vary",
                                        "--set"};
    for (size_t i = 0; i < sizeof verbs / sizeof *verbs; i++) {
        res r = run_args(verbs[i]);
        cr_expect_eq(r.status, 0, "%s --help: %s", verbs[i][0], r.err);
        cr_expect(strstr(r.out, wants[i]), "%s --help lacks %s:\n%s", verbs[i][0], wants[i], r.out);
        res_free(&r);
    }
}

/* ---- the matmul commands keep their format ------------------------------------------------- */

/* `sweep matmul M N K --json` is scripted against: its members and their
 * order stay those of release 0.5. */
Test(cli_kernels, old_matmul_sweep_json_keeps_its_members)
{
    res r = RUN("sweep", "matmul", "256", "256", "256", "--bm", "128,256", "--bn", "128", "--bk", "128,100", "--json");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(STARTS(r.out, "{\"kernel\":\"matmul\",\"m\":256,\"n\":256,\"k\":256,\"dtype\":\"f32\",\"chip\":\"v5e\","
                            "\"vmem_limit\":"), "%s", r.out);
    cr_expect(strstr(r.out, "\n{\"bm\":128,\"bn\":128,\"bk\":128,\"ai\":64,\"vmem_bytes\":"), "%s", r.out);
    cr_expect(strstr(r.out, "\"rejected\":[\n{\"bm\":128,\"bn\":128,\"bk\":100,\"steps\":"), "%s", r.out);
    json_t *doc = th_json_parse(r.out, "sweep matmul --json");
    cr_expect_eq(th_json_num(doc, "n_legal"), 2);
    json_decref(doc);
    res_free(&r);
    r = RUN("sweep", "matmul", "256", "256", "256", "--bm", "128", "--bn", "128", "--bk", "128", "--csv");
    cr_expect(STARTS(r.out, "bm,bn,bk,status,ai,vmem_bytes,fits,steps,time_s,tflops,peak_pct,bound,reason\n"
                            "128,128,128,ok,64,"), "%s", r.out);
    res_free(&r);
    r = RUN("explain", "matmul", "256", "256", "256", "128", "128", "128");
    cr_expect_eq(r.status, 0);
    cr_expect(STARTS(r.out, "explain: matmul C (256 x 256) = A (256 x 256) @ B (256 x 256), f32 on v5e\n"), "%s", r.out);
    cr_expect(strstr(r.out, "kernel: acc = 0; acc += x @ y"), "%s", r.out);
    res_free(&r);
}

/* A size near 2^63 is a usage error, not a crash or a negative grid: the
 * definitions' ceiling division must not overflow (G1; the paged table). */
Test(cli_kernels, sizes_near_int64_max_are_refused_by_name)
{
    res r = RUN("run", "paged_attention", "--set", "max_len=9223372036854775000", "--set", "page=4096", "--cost-only");
    cr_expect_eq(r.status, 2, "%s", r.err);
    cr_expect(strstr(r.err, "block table"), "%s", r.err);
    res_free(&r);
    r = RUN("run", "add", "--set", "rows=9223372036854775807", "--cost-only");
    cr_expect_eq(r.status, 2, "%s", r.err);
    cr_expect(!strstr(r.err, "has size -"), "a negative grid axis: %s", r.err);
    res_free(&r);
}

/* An error names the word the user typed: the unknown letter of a short
 * option cluster, the NAME=... of a --vary whose name is not a parameter. */
Test(cli_kernels, errors_name_the_word_typed)
{
    res r = RUN("run", "-xy", "rmsnorm");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "unknown option '-x'"), "%s", r.err);
    res_free(&r);
    r = RUN("sweep", "rmsnorm", "--vary", "=1");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "'=1'") && !strstr(r.err, "'=0'"), "%s", r.err);
    res_free(&r);
}
