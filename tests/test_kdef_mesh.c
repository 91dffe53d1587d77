/* tests/test_kdef_mesh.c: mesh kernels as kernel definitions (issue 24):
 * a definition with .mesh runs SPMD on every device of its mesh through
 * pl_kernel_run (pl_mesh_call), each device checked against
 * .mesh_reference; sweeps rank meshes by the mesh's time and bound; the
 * template examples/plugin/ring_reduce_scatter.c works with `tilesim run`
 * and `tilesim sweep`, and the verbs that draw one device refuse it by name.
 *
 * The definitions here are small: each device sends its x to its right
 * neighbour's o (a permute, the distributed Pallas guide's first example),
 * correct, forgetting to send (a deadlock), or sending to the wrong device
 * (a wrong result).
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../kernel/pltpu.h"
#include "../sim/kdef.h"
#include "helpers.h"
#include "run.h"

enum { P_DEVICES, P_HOW };
enum { HOW_RIGHT, HOW_NONE, HOW_SELF };

static void permute_kernel(pl_ctx *c, pl_ref *refs)
{
    const int64_t *v = pl_kernel_user(c);
    int n = (int)v[P_DEVICES], me = pltpu_device_id(c);
    int to = v[P_HOW] == HOW_SELF ? me : (me + 1) % n;
    pltpu_remote_copy cp =
        pltpu_make_async_remote_copy(c, refs[0], refs[1], pl_at(c, refs[2], 0), pl_at(c, refs[2], 1), to);
    if (v[P_HOW] == HOW_NONE && me == n - 1) { /* the last device forgets to send: device 0 waits forever */
        pltpu_remote_copy_wait_recv(c, &cp);
        return;
    }
    pltpu_remote_copy_start(c, &cp);
    pltpu_remote_copy_wait(c, &cp);
}

static int permute_mesh(const int64_t *v, pl_mesh *mesh, char *msg, size_t n)
{
    char spec[32];
    snprintf(spec, sizeof spec, "ring:%lld", (long long)v[P_DEVICES]);
    return pl_mesh_parse(spec, mesh, msg, n);
}

static int permute_build(const int64_t *v, pl_kernel_build *b, char *msg, size_t n)
{
    (void)msg, (void)n;
    memcpy(b->param, v, 2 * sizeof *v);
    b->call = (pl_call){.name = "permute", .kernel = permute_kernel, .user = b->param, .grid_rank = 1, .grid = {1},
                        .n_in = 1, .in = {PL_BLOCK_NAMED("x", PL_MAP(PL_ZERO, PL_ZERO), 8, 128)},
                        .n_out = 1, .out = {PL_BLOCK_NAMED("o", PL_MAP(PL_ZERO, PL_ZERO), 8, 128)},
                        .n_scratch = 1, .scratch = {PLTPU_SEMAPHORE_DMA(2)}};
    b->n_args = 1, b->args[0] = PL_ARRAY(NULL, PL_F32, 8, 128);
    b->n_outs = 1, b->outs[0] = PL_ARRAY(NULL, PL_F32, 8, 128);
    return PL_OK;
}

/* device d's o is its left neighbour's x */
static int permute_reference(const int64_t *v, const pl_kernel_build *devs, int n_devices, int device, pl_array *want)
{
    (void)v;
    memcpy(want[0].data, devs[(device + n_devices - 1) % n_devices].args[0].data, pl_array_bytes(&want[0]));
    return PL_OK;
}

static const int64_t dev_cands[] = {2, 4, 8};
static const pl_kernel_def permute_def = {
    .name = "permute",
    .n_params = 2,
    .params = {{.name = "devices", .def = 4, .candidates = dev_cands, .n_candidates = 3}, {.name = "how", .def = 0}},
    .build = permute_build,
    .mesh = permute_mesh,
    .mesh_reference = permute_reference,
};

/* a mesh kernel whose output is a dot on each device (o = x @ w, no copies), checked with pl_want_dot */
static void local_dot_kernel(pl_ctx *c, pl_ref *refs) { pl_dot(c, refs[2], refs[0], refs[1], 0); }

static int local_dot_build(const int64_t *v, pl_kernel_build *b, char *msg, size_t n)
{
    (void)v, (void)msg, (void)n;
    b->call = (pl_call){.name = "local_dot", .kernel = local_dot_kernel, .grid_rank = 1, .grid = {1}, .n_in = 2,
                        .in = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 8, 512), PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 512, 128)},
                        .n_out = 1, .out = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 8, 128)}};
    b->n_args = 2, b->args[0] = PL_ARRAY(NULL, PL_F32, 8, 512), b->args[1] = PL_ARRAY(NULL, PL_F32, 512, 128);
    b->n_outs = 1, b->outs[0] = PL_ARRAY(NULL, PL_F32, 8, 128);
    return PL_OK;
}

static int local_dot_reference(const int64_t *v, const pl_kernel_build *devs, int n_devices, int device,
                               pl_array *want)
{
    (void)v, (void)n_devices;
    int rc = pl_ref_matmul(&devs[device].args[0], &devs[device].args[1], 0, 0, &want[0], NULL, 0);
    return rc != PL_OK ? rc : pl_want_dot(&want[0], &devs[device].args[0], &devs[device].args[1], 0, 0);
}

Test(kdef_mesh, a_dot_checked_on_every_device_prints_its_thresholds)
{
    pl_kernel_def d = permute_def;
    d.name = "local_dot", d.build = local_dot_build, d.mesh_reference = local_dot_reference;
    int64_t v[PL_KDEF_MAX_PARAMS] = {2, 0};
    pl_options opt = {.chip = "v5e"};
    pl_report rep;
    pl_check check[PL_MAX_OPERANDS];
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    int rc = pl_kernel_run(&d, v, &opt, &rep, check, f);
    fclose(f);
    cr_assert_eq(rc, PL_OK, "%s", rep.error);
    cr_assert_gt(check[0].pass_below, 0, "the dot's thresholds travel with the worst device's check: %s", text);
    cr_assert(strstr(text, "vs op(a) @ op(b)") && !strstr(text, "pass below 0,"), "%s", text);
    free(text);
}

static int run_permute(int devices, int how, pl_report *rep, pl_check *check, char **verdicts)
{
    int64_t v[PL_KDEF_MAX_PARAMS] = {devices, how};
    pl_options opt = {.chip = "v5e"};
    size_t len = 0;
    FILE *f = open_memstream(verdicts, &len);
    int rc = pl_kernel_run(&permute_def, v, &opt, rep, check, f);
    fclose(f);
    return rc;
}

Test(kdef_mesh, a_mesh_definition_runs_on_every_device_and_checks_each)
{
    pl_report rep;
    pl_check check[PL_MAX_OPERANDS];
    char *verdicts = NULL;
    cr_assert_eq(run_permute(4, HOW_RIGHT, &rep, check, &verdicts), PL_OK, "%s", rep.error);
    cr_assert_eq(check[0].verdict, PL_PASS);
    cr_assert_eq(check[0].max_abs_err, 0, "a copy is exact");
    cr_assert(strstr(verdicts, "verify output 0 'o' (f32 8x128) on device ") && strstr(verdicts, " of 4 (the worst)"),
              "%s", verdicts);
    cr_assert_eq(rep.ici_copies, 1, "the slowest device's report: its one copy over ICI (%lld)",
                 (long long)rep.ici_copies);
    cr_assert_gt(rep.time_s, 0);
    free(verdicts);
}

Test(kdef_mesh, a_device_that_forgets_to_send_is_a_deadlock_not_a_hang)
{
    pl_report rep;
    char *verdicts = NULL;
    int rc = run_permute(4, HOW_NONE, &rep, NULL, &verdicts);
    cr_assert_eq(rc, PL_EDEADLOCK, "%d: %s", rc, rep.error);
    cr_assert(strstr(rep.error, "device 0"), "the stuck device is named: %s", rep.error);
    free(verdicts);
}

Test(kdef_mesh, a_copy_to_the_wrong_device_fails_the_reference_naming_a_device)
{
    pl_report rep;
    pl_check check[PL_MAX_OPERANDS];
    char *verdicts = NULL;
    cr_assert_eq(run_permute(4, HOW_SELF, &rep, check, &verdicts), PL_EVERIFY, "%s", rep.error);
    cr_assert_eq(check[0].verdict, PL_FAIL);
    cr_assert(strstr(verdicts, "FAIL"), "%s", verdicts);
    cr_assert(strstr(rep.error, "on a device (V5)"), "%s", rep.error);
    free(verdicts);
}

/* A sweep over the mesh's size: each row is the mesh's time, and a ring
 * of 8 takes no less than a ring of 2 (the same copy, more devices). */
Test(kdef_mesh, a_sweep_ranks_meshes_by_the_mesh_time)
{
    int64_t values[3 * 2] = {2, 0, 4, 0, 8, 0};
    pl_report reps[3];
    pl_options opt = {.chip = "v5e"};
    cr_assert_eq(pl_kernel_sweep(&permute_def, 3, values, &opt, NULL, reps), PL_OK);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(reps[i].status, PL_OK, "row %d: %s", i, reps[i].error);
        cr_assert_gt(reps[i].time_s, 0);
        cr_assert(reps[i].bound_msg[0], "row %d has the mesh's bound", i);
    }
    cr_assert_geq(reps[2].time_s, reps[0].time_s * 0.999, "%g vs %g", reps[2].time_s, reps[0].time_s);
}

Test(kdef_mesh, a_definition_without_a_mesh_is_refused_by_pl_kernel_def_mesh)
{
    pl_kernel_def single = permute_def;
    single.mesh = NULL;
    int64_t v[PL_KDEF_MAX_PARAMS] = {4, 0};
    pl_mesh mesh;
    char msg[256];
    cr_assert_eq(pl_kernel_def_mesh(&single, v, &mesh, msg, sizeof msg), PL_EINVAL);
    cr_assert(strstr(msg, "'permute' is not a mesh kernel"), "%s", msg);
    v[P_DEVICES] = 0; /* ring:0 */
    cr_assert_neq(pl_kernel_def_mesh(&permute_def, v, &mesh, msg, sizeof msg), PL_OK);
    cr_assert(strstr(msg, "kernel 'permute': its mesh:"), "%s", msg);
}

/* ---- the template plugin, through the CLI ------------------------------------------------ */

static const char *ring_plugin(char *path, size_t n)
{
    return th_build_path("examples/plugin/ring_reduce_scatter.so", path, n);
}

Test(kdef_mesh, the_ring_reduce_scatter_template_runs_and_passes_on_8_devices)
{
    char path[PATH_MAX];
    th_run r = TH_RUN("run", ring_plugin(path, sizeof path), "--set", "devices=8", "--set", "rows=16");
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_assert(strstr(r.out, "on v5e, ring of 8 (x)"), "%s", r.out);
    cr_assert(strstr(r.out, "  device   7: "), "%s", r.out);
    cr_assert(strstr(r.out, "mesh: 8 devices"), "%s", r.out);
    cr_assert(strstr(r.out, "of 8 (the worst) vs reference"), "%s", r.out);
    cr_assert(strstr(r.out, "\nPASS\n"), "%s", r.out);
    th_run_free(&r);
}

Test(kdef_mesh, verify_checks_every_device_and_refuses_a_heatmap)
{
    char path[PATH_MAX];
    th_run r = TH_RUN("verify", ring_plugin(path, sizeof path), "--set", "devices=8", "--set", "rows=8");
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_assert(strstr(r.out, "against its reference on every device (V5)"), "%s", r.out);
    cr_assert(strstr(r.out, "of 8 (the worst) vs reference") && strstr(r.out, "\nPASS\n"), "%s", r.out);
    th_run_free(&r);
    r = TH_RUN("verify", path, "--heatmap", "/tmp/tilesim_mesh_heatmap.svg");
    cr_assert_eq(r.status, 2, "%s%s", r.out, r.err);
    cr_assert(strstr(r.err, "--heatmap draws one device's output"), "%s", r.err);
    th_run_free(&r);
}

/* memory: device 0's buffers through a recorder pl_mesh_call now takes */
Test(kdef_mesh, memory_shows_device_0s_buffers)
{
    char path[PATH_MAX];
    th_run r = TH_RUN("memory", ring_plugin(path, sizeof path), "--set", "devices=4");
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_assert(strstr(r.out, "mesh kernel on a ring of 4 (x): device 0's memory"), "%s", r.out);
    cr_assert(strstr(r.out, "live at the peak (step 0): x[0], o[0], recv, send"), "%s", r.out);
    th_run_free(&r);
    r = TH_RUN("memory", "ring_allreduce", "--set", "devices=4", "--set", "rows=256", "--set", "cols=256");
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_assert(strstr(r.out, "recv_buf") && strstr(r.out, "6 steps in program order"), "%s", r.out);
    th_run_free(&r);
}

Test(kdef_mesh, list_says_a_mesh_kernel_and_its_mesh)
{
    char path[PATH_MAX];
    th_run r = TH_RUN("list", ring_plugin(path, sizeof path));
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_assert(strstr(r.out, "  a mesh kernel: runs SPMD on every device of its mesh (ring of 4 (x) at the defaults)"),
              "%s", r.out);
    th_run_free(&r);
}

Test(kdef_mesh, profile_shows_the_slowest_device)
{
    char path[PATH_MAX];
    th_run r = TH_RUN("profile", ring_plugin(path, sizeof path), "--set", "devices=4");
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_assert(strstr(r.out, "mesh kernel on a ring of 4 (x): the profile of its slowest device"), "%s", r.out);
    cr_assert(strstr(r.out, "pl_add"), "the device's ops: %s", r.out);
    th_run_free(&r);
}

Test(kdef_mesh, the_template_sweeps_over_mesh_sizes)
{
    char path[PATH_MAX];
    th_run r = TH_RUN("sweep", ring_plugin(path, sizeof path), "--vary", "devices=2,4", "--vary", "rows=8");
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_assert(strstr(r.out, "devices=2 rows=8 cols=512"), "%s", r.out);
    cr_assert(strstr(r.out, "devices=4 rows=8 cols=512"), "%s", r.out);
    cr_assert(strstr(r.out, "2 configurations, 2 legal"), "%s", r.out);
    th_run_free(&r);
}

/* explain narrates device 0's steps of a mesh kernel (its remote copies
 * among the kernel's ops); explain --html, one device's page, is refused by
 * name in favour of run --html */
Test(kdef_mesh, explain_narrates_device_0_and_refuses_its_html_page)
{
    char path[PATH_MAX];
    th_run r = TH_RUN("explain", ring_plugin(path, sizeof path), "--set", "devices=4");
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_assert(strstr(r.out, "mesh kernel on a ring of 4 (x): every device runs this call; device 0's steps:"), "%s",
              r.out);
    const char *k = strstr(r.out, "  kernel: ");
    cr_assert(k && !strstr(k + 1, "  kernel: "), "one device's kernel line, not four: %s", r.out);
    cr_assert(strstr(k, "DMA start (copy 2, M7)"), "its three remote copies: %s", r.out);
    th_run_free(&r);
    r = TH_RUN("explain", path, "--html", "/tmp/tilesim_mesh_explain.html");
    cr_assert_eq(r.status, 2, "%s%s", r.out, r.err);
    cr_assert(strstr(r.err, "'ring_reduce_scatter' is a mesh kernel: 'explain --html' walks one device's grid"),
              "%s", r.err);
    th_run_free(&r);
}

/* --html of a mesh kernel: a page with every device's timeline, drawn from
 * the run's trace, which it carries (tests/browser draws it in Chromium) */
Test(kdef_mesh, run_html_writes_the_mesh_page_with_its_trace)
{
    char path[PATH_MAX], page[64];
    th_temp_file(page, "");
    th_run r = TH_RUN("run", ring_plugin(path, sizeof path), "--set", "devices=4", "--html", page);
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_assert(strstr(r.out, "page: "), "%s", r.out);
    char *html = th_read_file(page);
    cr_assert(strstr(html, "<title>ring_reduce_scatter devices=4 rows=64 cols=512 on a ring of 4 (x)</title>"), "%.400s",
              html);
    cr_assert(strstr(html, "<script id=\"trace\" type=\"application/json\">{"), "the trace, embedded");
    cr_assert(strstr(html, "\"process_name\""), "its tracks' names");
    cr_assert(strstr(html, "mesh: 4 devices"), "the report");
    free(html);
    th_run_free(&r);
    r = TH_RUN("run", path, "--html", "/nonexistent/dir/page.html");
    cr_assert_eq(r.status, 2, "%s%s", r.out, r.err);
    cr_assert(strstr(r.err, "--html:"), "%s", r.err);
    th_run_free(&r);
    unlink(page);
}

/* ---- the built-in rings as definitions ------------------------------------------------ */

/* The definition runs the program's call: the same mesh time to the last
 * printed digit, and every device checked against the sum. */
Test(kdef_mesh, ring_allreduce_as_a_definition_times_what_the_program_times)
{
    th_run prog = TH_RUN("run", "ring_allreduce", "--devices", "4", "--rows", "256", "--cols", "256");
    th_run def = TH_RUN("run", "ring_allreduce", "--set", "devices=4", "--set", "rows=256", "--set", "cols=256");
    cr_assert_eq(prog.status, 0, "%s%s", prog.out, prog.err);
    cr_assert_eq(def.status, 0, "%s%s", def.out, def.err);
    const char *p = strstr(prog.out, "  mesh: "), *d = strstr(def.out, "\nmesh: 4 devices, ");
    cr_assert(p && d, "%s\n%s", prog.out, def.out);
    double tp = atof(p + strlen("  mesh: ")), td = atof(d + strlen("\nmesh: 4 devices, "));
    cr_assert(tp > 0 && tp == td, "program %g us, definition %g us", tp, td);
    cr_assert(strstr(def.out, "of 4 (the worst) vs reference") && strstr(def.out, "\nPASS\n"), "%s", def.out);
    th_run_free(&prog);
    th_run_free(&def);
}

Test(kdef_mesh, ring_allgather_passes_bit_for_bit_and_both_rings_sweep)
{
    th_run r = TH_RUN("run", "ring_allgather", "--set", "devices=4", "--set", "rows=16", "--set", "cols=256");
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_assert(strstr(r.out, "max abs err 0,"), "a gather copies: %s", r.out);
    th_run_free(&r);
    r = TH_RUN("sweep", "ring_allreduce", "--vary", "devices=2,4,8", "--set", "rows=512", "--set", "cols=512");
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_assert(strstr(r.out, "3 configurations, 3 legal"), "%s", r.out);
    th_run_free(&r);
    r = TH_RUN("sweep", "ring_allreduce", "--vary", "devices=3", "--set", "rows=512");
    cr_assert(strstr(r.out, "multiple of 2") || strstr(r.err, "multiple of 2"), "rows=512 is not a multiple of "
              "2 x 3: %s%s", r.out, r.err);
    th_run_free(&r);
}

Test(kdef_mesh, list_shows_the_built_in_mesh_kernels)
{
    th_run r = TH_RUN("list");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "built-in mesh kernels"), "%s", r.out);
    cr_assert(strstr(r.out, "ring_allgather: a ring all-gather"), "%s", r.out);
    th_run_free(&r);
}

/* 'tilesim list ring_allreduce' shows the one definition, as 'tilesim list'
 * does, and an unknown name's message lists the mesh kernels too */
Test(kdef_mesh, list_of_one_mesh_kernel_shows_its_definition)
{
    th_run r = TH_RUN("list", "ring_allreduce");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "ring_allreduce: a bidirectional ring all-reduce"), "%s", r.out);
    cr_expect(strstr(r.out, "devices"), "%s", r.out);
    th_run_free(&r);
    r = TH_RUN("list", "no_such_kernel");
    cr_expect_eq(r.status, 2, "%s", r.out);
    cr_expect(strstr(r.err, "hier_allreduce"), "the names offered leave out the mesh kernels: %s", r.err);
    th_run_free(&r);
}

/* The program takes --devices; with --json the same name is the definition,
 * whose devices is a parameter: the message says to give --set devices=N,
 * not that --devices is unknown. */
Test(kdef_mesh, a_program_option_beside_a_definition_option_says_to_use_set)
{
    th_run r = TH_RUN("run", "ring_allreduce", "--devices", "4", "--json");
    cr_expect_eq(r.status, 2, "%s", r.out);
    cr_expect(strstr(r.err, "--set devices=VALUE"), "%s", r.err);
    th_run_free(&r);
    r = TH_RUN("run", "ring_allreduce", "--set", "devices=4", "--json", "--cost-only");
    cr_expect_eq(r.status, 0, "the advice given works: %s", r.err);
    th_run_free(&r);
}

/* collective_matmul's sweep weighs overlapping the gather with the matmul
 * against gathering first, at the times the program prints for both */
Test(kdef_mesh, collective_matmul_sweeps_overlap_against_gather_first_at_the_programs_times)
{
    th_run prog = TH_RUN("run", "collective_matmul", "--devices", "4");
    th_run sw = TH_RUN("sweep", "collective_matmul", "--set", "devices=4", "--csv");
    cr_assert_eq(prog.status, 0, "%s%s", prog.out, prog.err);
    cr_assert_eq(sw.status, 0, "%s%s", sw.out, sw.err);
    const char *p = strstr(prog.out, "overlapped "), *g = strstr(prog.out, "gather first ");
    cr_assert(p && g, "%s", prog.out);
    double over = atof(p + strlen("overlapped ")), first = atof(g + strlen("gather first "));
    cr_assert_lt(over, first, "%s", prog.out);
    const char *row0 = strstr(sw.out, "gather_first=0"), *row1 = strstr(sw.out, "gather_first=1");
    cr_assert(row0 && row1 && row0 < row1, "the overlapped one ranks first: %s", sw.out);
    th_run_free(&prog);
    th_run_free(&sw);
    th_run r = TH_RUN("run", "collective_matmul", "--set", "devices=4", "--set", "gather_first=1");
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    char mesh_line[64];
    snprintf(mesh_line, sizeof mesh_line, "\nmesh: 4 devices, %.2f us", first);
    cr_assert(strstr(r.out, mesh_line), "the gather-first time %s: %s", mesh_line, r.out);
    cr_assert(strstr(r.out, "\nPASS\n"), "%s", r.out);
    th_run_free(&r);
}

/* examples/deadlock.c's bug as a parameter of the ring_allgather definition:
 * the device that never sends leaves the others waiting, reported (M10) */
Test(kdef_mesh, ring_allgather_with_a_forgetful_device_is_the_deadlock_report)
{
    th_run r = TH_RUN("run", "ring_allgather", "--set", "devices=4", "--set", "rows=8", "--set", "cols=128", "--set",
                      "forgetful=3");
    cr_assert_eq(r.status, 2, "%s%s", r.out, r.err);
    cr_assert(strstr(r.err, "deadlock across the mesh") && strstr(r.err, "device 2 at grid point (2)"), "%s", r.err);
    th_run_free(&r);
    r = TH_RUN("run", "ring_allgather", "--set", "devices=4", "--set", "forgetful=4");
    cr_assert_eq(r.status, 2, "%s%s", r.out, r.err);
    cr_assert(strstr(r.err, "forgetful=4: a device of the ring (0 to 3), or -1 for none"), "%s", r.err);
    th_run_free(&r);
}

/* run --json of a mesh kernel carries the mesh: its time and bound, and each device's time */
Test(kdef_mesh, run_json_carries_the_mesh_and_every_devices_time)
{
    char path[PATH_MAX];
    th_run r = TH_RUN("run", ring_plugin(path, sizeof path), "--set", "devices=4", "--json");
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    json_error_t e;
    json_t *j = json_loads(r.out, JSON_REJECT_DUPLICATES, &e), *mesh = json_object_get(j, "mesh");
    cr_assert(j && json_is_object(mesh), "%s: %s", e.text, r.out);
    cr_expect_str_eq(json_string_value(json_object_get(j, "verdict")), "PASS");
    cr_expect_eq(json_integer_value(json_object_get(mesh, "devices")), 4);
    cr_expect_eq(json_array_size(json_object_get(mesh, "device_time_s")), 4);
    cr_expect_str_eq(json_string_value(json_object_get(mesh, "shape")), "ring of 4 (x)");
    double t = json_number_value(json_object_get(mesh, "time_s"));
    cr_expect(t > 0 && t == json_number_value(json_object_get(json_object_get(j, "report"), "time_s")),
              "the report's time is the mesh's: %s", r.out);
    json_decref(j);
    th_run_free(&r);
}

/* The deadlock program's own check held only up to 13 devices: the message
 * names 12 stuck devices and counts the rest */
Test(kdef_mesh, the_deadlock_program_passes_past_twelve_stuck_devices)
{
    th_run r = TH_RUN("run", "deadlock", "--devices", "20");
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "naming 12 of the 19 stuck devices and counting the rest"), "%s", r.out);
    th_run_free(&r);
}

/* --trace and --html into one file: the page replaced the trace, exit 0 */
Test(kdef_mesh, two_outputs_into_one_file_are_refused)
{
    th_run r = TH_RUN("run", "ring_allreduce", "--set", "devices=4", "--cost-only", "--trace",
                      "/tmp/tilesim_test_same_out", "--html", "/tmp/tilesim_test_same_out");
    cr_expect_eq(r.status, 2, "%s", r.out);
    cr_expect(strstr(r.err, "--trace and --html name the same file"), "%s", r.err);
    cr_expect(access("/tmp/tilesim_test_same_out", F_OK) != 0, "nothing written");
    th_run_free(&r);
}
