/* tests/test_kdef_plugin.c: kernel definitions from plugins (sim/kdef.h):
 * the template examples/plugin/rmsnorm.c loaded, run against its reference
 * and swept, and broken plugins refused with messages naming the file.
 *
 * The tests load BUILD/examples/plugin/rmsnorm.so of the suite's own build
 * directory (the test binary is BUILD/tests/tilesim_tests), and build tiny
 * broken plugins with `cc` at run time in a temporary directory.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../sim/kdef.h"
#include "helpers.h"

/* ---- plugins ------------------------------------------------------------------------ */

static const pl_kernel_def *load_rmsnorm(void)
{
    char path[PATH_MAX], msg[512];
    th_build_path("examples/plugin/rmsnorm.so", path, sizeof path);
    const pl_kernel_def *const *defs = NULL;
    int n = pl_plugin_load(path, &defs, msg, sizeof msg);
    cr_assert_eq(n, 1, "%s (build it: make BUILD=... %s)", msg, path);
    cr_assert_str_eq(defs[0]->name, "rmsnorm");
    return defs[0];
}

Test(kdef, plugin_template_loads_and_passes_f32_and_bf16)
{
    const pl_kernel_def *d = load_rmsnorm();
    int64_t v[PL_KDEF_MAX_PARAMS];
    pl_kernel_defaults(d, v);
    char msg[256];
    cr_assert_eq(pl_kernel_set(d, v, "rows=64", msg, sizeof msg), PL_OK, "%s", msg);
    cr_assert_eq(pl_kernel_set(d, v, "d=256", msg, sizeof msg), PL_OK, "%s", msg);
    cr_assert_eq(pl_kernel_set(d, v, "br=16", msg, sizeof msg), PL_OK, "%s", msg);
    const char *dts[] = {"dtype=f32", "dtype=bf16"};
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(pl_kernel_set(d, v, dts[i], msg, sizeof msg), PL_OK, "%s", msg);
        pl_report rep;
        pl_check chk[PL_MAX_OPERANDS];
        cr_assert_eq(pl_kernel_run(d, v, NULL, &rep, chk, NULL), PL_OK, "%s: %s", dts[i], rep.error);
        cr_assert_eq(chk[0].verdict, PL_PASS, "%s: worst %g of the tolerance", dts[i], chk[0].norm_err);
        cr_assert_gt(rep.vpu_flops, 0, "the block ops are counted");
    }
    cr_assert_gt(d->flops(v), 0);
    cr_assert_gt(d->bytes(v), 0);
}

Test(kdef, plugin_template_sweeps_its_row_block)
{
    const pl_kernel_def *d = load_rmsnorm();
    int br = pl_kernel_param_index(d, "br");
    cr_assert_geq(br, 0);
    int n = d->params[br].n_candidates;
    cr_assert_geq(n, 8);
    int64_t *vals = calloc((size_t)n * (size_t)d->n_params, sizeof *vals);
    pl_report *rep = calloc((size_t)n, sizeof *rep);
    cr_assert(vals && rep);
    for (int i = 0; i < n; i++) {
        pl_kernel_defaults(d, vals + i * d->n_params);
        vals[i * d->n_params + br] = d->params[br].candidates[i];
    }
    cr_assert_eq(pl_kernel_sweep(d, n, vals, NULL, NULL, rep), PL_OK);
    int ok = 0;
    for (int i = 0; i < n; i++) ok += rep[i].status == PL_OK;
    cr_assert_gt(ok, 3, "most row blocks run");
    cr_assert_eq(rep[n - 1].status, PL_EVMEM, "br=1024 over d=1024 f32 is over the VMEM budget: %s",
                 rep[n - 1].error);
    free(vals);
    free(rep);
}

static char tmpdir[64];

/* Build src into tmpdir/name with cc; the path goes to out. */
static void build_so(const char *name, const char *src, char *out, size_t n)
{
    if (!tmpdir[0]) {
        strcpy(tmpdir, "/tmp/tilesim_kdef_XXXXXX");
        cr_assert(mkdtemp(tmpdir));
    }
    char c[PATH_MAX], cmd[3 * PATH_MAX];
    snprintf(c, sizeof c, "%s/%s.c", tmpdir, name);
    snprintf(out, n, "%s/%s.so", tmpdir, name);
    FILE *f = fopen(c, "w");
    cr_assert(f);
    fputs(src, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "cc -shared -fPIC -o %s %s", out, c);
    cr_assert_eq(system(cmd), 0, "%s failed", cmd);
}

/* Remove tmpdir and what build_so put there. */
static void remove_tmpdir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (tmpdir[0]) cr_assert_eq(system(cmd), 0);
}

static void expect_refused(const char *path, const char *want1, const char *want2)
{
    const pl_kernel_def *const *defs = (const pl_kernel_def *const *)&defs;
    char msg[1024] = "";
    int rc = pl_plugin_load(path, &defs, msg, sizeof msg);
    cr_assert_lt(rc, 0, "%s loaded", path);
    cr_assert_null(defs);
    cr_assert(strstr(msg, path), "the message names the file: %s", msg);
    cr_assert(strstr(msg, want1) && strstr(msg, want2), "message: %s", msg);
}

Test(kdef, plugin_load_refuses_bad_files_naming_file_and_reason)
{
    char path[PATH_MAX];
    expect_refused("/nonexistent/dir/k.so", "cannot open", "No such file");
    build_so("text", "", path, sizeof path);
    strcpy(strrchr(path, '.'), ".c"); /* a C file, not a shared object */
    expect_refused(path, "cannot load it as a shared object", "");
    build_so("nosym", "int other(void) { return 1; }\n", path, sizeof path);
    expect_refused(path, "not a tilesim plugin", "tilesim_kernels");
    build_so("oldabi", "int tilesim_kernels(int abi, const void ***d) { (void)d; return abi == 999 ? 0 : -1; }\n",
             path, sizeof path);
    char abi[48];
    snprintf(abi, sizeof abi, "does not support kernel ABI %d", PL_KERNEL_ABI);
    expect_refused(path, abi, "");
    build_so("empty", "int tilesim_kernels(int abi, const void ***d) { (void)abi; *d = 0; return 0; }\n", path,
             sizeof path);
    expect_refused(path, "no kernel definitions", "");
    build_so("noname", "static const char z[4096]; static const void *l[] = {z};\n"
                       "int tilesim_kernels(int abi, const void ***d) { (void)abi; *d = l; return 1; }\n",
             path, sizeof path);
    expect_refused(path, "definition 0 has no name", "");
    /* a pl_ symbol the program does not export: say how to link it */
    build_so("unexported", "void pl_no_such_op(void); const void *f = (const void *)pl_no_such_op;\n"
                           "int tilesim_kernels(int abi, const void ***d) { (void)abi; (void)d; return -1; }\n",
             path, sizeof path);
    expect_refused(path, "undefined symbol: pl_no_such_op", "-rdynamic -Wl,--whole-archive");
    expect_refused(tmpdir, "not a regular file", "");
    remove_tmpdir();
}

/* a bare name is the file in the current directory, not one on LD_LIBRARY_PATH */
Test(kdef, plugin_bare_name_is_relative_to_the_current_directory)
{
    char path[PATH_MAX], rms[PATH_MAX], msg[512];
    build_so("bare", "", path, sizeof path); /* makes tmpdir */
    th_build_path("examples/plugin/rmsnorm.so", rms, sizeof rms);
    snprintf(path, sizeof path, "%s/mine.so", tmpdir);
    cr_assert_eq(symlink(rms, path), 0);
    cr_assert_eq(chdir(tmpdir), 0);
    const pl_kernel_def *const *defs;
    cr_assert_eq(pl_plugin_load("mine.so", &defs, msg, sizeof msg), 1, "%s", msg);
    setenv("LD_LIBRARY_PATH", tmpdir, 1);
    cr_assert_eq(chdir("/"), 0);
    cr_assert_lt(pl_plugin_load("mine.so", &defs, msg, sizeof msg), 0, "found through the search path");
    cr_assert(strstr(msg, "mine.so"), "%s", msg);
    remove_tmpdir();
}
