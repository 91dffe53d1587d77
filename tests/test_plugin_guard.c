/* tests/test_plugin_guard.c: a plugin must not take tilesim down without
 * saying why (issue 21). The plugin tests/plugins/hostile.c misbehaves on
 * purpose: its kernel segfaults, aborts, calls exit(7) or pthread_exit, or
 * overflows its stack at grid point (at, 1); its callbacks do the same; its
 * tilesim_kernels returns garbage (TILESIM_HOSTILE_LOADER).
 *
 * Every verb that runs a kernel must then say which signal or call, which
 * kernel, which grid point and which pl_ op came last, and exit with
 * PL_EXIT_KERNEL_CRASHED (3), never be killed by the signal, exit 7, exit
 * 0 in silence or hang; and the loader must refuse what it cannot trust
 * before any tool reads it (exit 2, naming the plugin and the field).
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdlib.h>

#include "../sim/kdef.h"
#include "run.h"

static const char *hostile(void)
{
    static char path[PATH_MAX];
    th_build_path("tests/plugins/hostile.so", path, sizeof path);
    cr_assert(access(path, R_OK) == 0, "%s is missing: `make` builds tests/plugins/*.c", path);
    return path;
}

/* The crash report's words, each checked, and the status. */
static void expect_crash(th_run *r, const char *how, const char *where)
{
    cr_assert_eq(r->status, PL_EXIT_KERNEL_CRASHED, "status %d, stderr: %s", r->status, r->err);
    cr_assert(strstr(r->err, how), "'%s' missing from: %s", how, r->err);
    cr_assert(strstr(r->err, where), "'%s' missing from: %s", where, r->err);
    cr_assert(strstr(r->err, "exit status 3"), "the code is not explained: %s", r->err);
}

static void expect_kernel_crash(th_run *r, const char *how)
{
    expect_crash(r, how, "kernel 'hostile'");
    cr_assert(strstr(r->err, "at grid point (2, 1) of grid (4, 2)"), "no grid point: %s", r->err);
    cr_assert(strstr(r->err, "the last tilesim op it called: pl_mul"), "no last op: %s", r->err);
}

Test(plugin_guard, a_correct_kernel_still_passes)
{
    th_run r = TH_RUN("run", hostile());
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_assert(strstr(r.out, "PASS"));
    th_run_free(&r);
}

Test(plugin_guard, a_segfault_names_the_signal_kernel_grid_point_and_last_op)
{
    th_run r = TH_RUN("run", hostile(), "--set", "how=1");
    expect_kernel_crash(&r, "crashed with SIGSEGV");
    th_run_free(&r);
}

Test(plugin_guard, abort_is_reported_as_sigabrt)
{
    th_run r = TH_RUN("run", hostile(), "--set", "how=2");
    expect_kernel_crash(&r, "crashed with SIGABRT");
    th_run_free(&r);
}

Test(plugin_guard, exit_7_is_reported_and_exits_3_not_7)
{
    th_run r = TH_RUN("run", hostile(), "--set", "how=3");
    expect_kernel_crash(&r, "called exit(7)");
    th_run_free(&r);
}

Test(plugin_guard, pthread_exit_is_reported_not_a_silent_exit_0)
{
    th_run r = TH_RUN("run", hostile(), "--set", "how=4");
    expect_kernel_crash(&r, "called pthread_exit()");
    th_run_free(&r);
}

Test(plugin_guard, pthread_exit_on_a_megacore_host_thread_is_reported_not_a_wrong_result)
{
    /* v5p: two TensorCores, each walked on a host thread of its own; row 3
     * of a (4, 2) PARALLEL grid is core 1's */
    th_run r = TH_RUN("run", hostile(), "--chip", "v5p", "--host-threads", "2", "--set", "how=4", "--set", "at=3");
    expect_crash(&r, "called pthread_exit()", "kernel 'hostile'");
    cr_assert(strstr(r.err, "at grid point (3, 1)"), "%s", r.err);
    cr_assert(strstr(r.err, "on core 1"), "%s", r.err);
    cr_assert(!strstr(r.out, "FAIL"), "reported as a wrong result: %s", r.out);
    th_run_free(&r);
}

Test(plugin_guard, a_stack_overflow_is_reported_on_the_alternate_stack)
{
    th_run r = TH_RUN("run", hostile(), "--set", "how=5");
    expect_kernel_crash(&r, "crashed with SIGSEGV");
    th_run_free(&r);
}

Test(plugin_guard, every_verb_that_runs_the_kernel_reports_its_crash)
{
    const char *verbs[] = {"run", "verify", "sweep", "profile", "memory", "explain"};
    for (size_t i = 0; i < sizeof verbs / sizeof *verbs; i++) {
        /* a sweep tries br = 8, 16, 32: at=1 is a grid row in each */
        th_run r = TH_RUN(verbs[i], hostile(), "--set", "how=1", "--set", "at=1");
        cr_assert_eq(r.status, PL_EXIT_KERNEL_CRASHED, "%s: status %d, stderr: %s", verbs[i], r.status, r.err);
        cr_assert(strstr(r.err, "kernel 'hostile' crashed with SIGSEGV"), "%s: %s", verbs[i], r.err);
        cr_assert(strstr(r.err, "at grid point (1, 1)"), "%s: %s", verbs[i], r.err);
        th_run_free(&r);
    }
}

/* An index map is the user's code too: exit(7), abort and a segfault in it
 * end with exit 3 and say so (exit(0) in one ended tilesim with 0, silently) */
Test(plugin_guard, a_crash_in_an_index_map_function_names_it)
{
    static const char *const hows[][2] = {{"3", "exit"}, {"2", "SIGABRT"}, {"1", "SIGSEGV"}};
    for (size_t i = 0; i < sizeof hows / sizeof *hows; i++) {
        char how[16];
        snprintf(how, sizeof how, "how=%s", hows[i][0]);
        th_run r = TH_RUN("run", hostile(), "--set", how, "--set", "where=6", "--cost-only");
        expect_crash(&r, hows[i][1], "index map function");
        th_run_free(&r);
    }
}

/* A constructor runs as the plugin loads: exit(0) there ended tilesim with
 * 0 and no word, abort with 134 */
Test(plugin_guard, a_constructor_that_exits_or_aborts_is_reported)
{
    setenv("TILESIM_HOSTILE_CTOR", "exit", 1);
    th_run r = TH_RUN("run", hostile());
    expect_crash(&r, "called exit(0)", "constructors (run as it loads)");
    th_run_free(&r);
    setenv("TILESIM_HOSTILE_CTOR", "abort", 1);
    r = TH_RUN("list", hostile());
    expect_crash(&r, "SIGABRT", "constructors (run as it loads)");
    th_run_free(&r);
    unsetenv("TILESIM_HOSTILE_CTOR");
}

/* build gave x a negative size: that is the message, not a host-memory
 * refusal of 16 million TiB */
Test(plugin_guard, a_negative_array_size_from_build_is_named)
{
    th_run r = TH_RUN("run", hostile(), "--set", "where=7");
    cr_expect_eq(r.status, 2, "%s%s", r.out, r.err);
    cr_expect(strstr(r.err, "argument 0 has dimension 0 of size -64"), "%s", r.err);
    cr_expect(!strstr(r.err, "host memory"), "%s", r.err);
    th_run_free(&r);
}

Test(plugin_guard, a_crash_in_a_definition_callback_names_the_callback)
{
    th_run r = TH_RUN("run", hostile(), "--set", "how=1", "--set", "where=1");
    expect_crash(&r, "its build callback crashed with SIGSEGV", "kernel definition 'hostile'");
    th_run_free(&r);
    r = TH_RUN("verify", hostile(), "--set", "how=3", "--set", "where=2");
    expect_crash(&r, "its reference callback called exit(7)", "kernel definition 'hostile'");
    th_run_free(&r);
}

/* ---- the loader: nothing a plugin returns is used before it is checked ------- */

static void expect_refused(const char *how, const char *words)
{
    setenv("TILESIM_HOSTILE_LOADER", how, 1);
    th_run r = TH_RUN("list", hostile());
    cr_assert_eq(r.status, 2, "%s: status %d, stderr: %s", how, r.status, r.err);
    cr_assert(strstr(r.err, "hostile.so"), "%s: the plugin is not named: %s", how, r.err);
    cr_assert(strstr(r.err, words), "%s: '%s' missing from: %s", how, words, r.err);
    th_run_free(&r);
    /* run and sweep load it the same way */
    r = TH_RUN("sweep", hostile());
    cr_assert_eq(r.status, 2, "%s (sweep): status %d, stderr: %s", how, r.status, r.err);
    th_run_free(&r);
}

Test(plugin_guard, a_garbage_definitions_pointer_is_refused_not_read)
{
    expect_refused("garbage", "not readable memory");
}

Test(plugin_guard, candidates_null_with_a_count_is_refused_before_list_prints_them)
{
    expect_refused("null_candidates", "parameter 'br' has n_candidates = 3 but candidates is NULL");
}

/* .divides must name another integer parameter, in readable memory */
Test(plugin_guard, a_divides_naming_no_parameter_is_refused)
{
    expect_refused("bad_divides", "parameter 'br': divides names no other integer parameter");
    expect_refused("wild_divides", "parameter 'br': divides names no other integer parameter");
}

Test(plugin_guard, a_negative_candidate_count_is_refused)
{
    expect_refused("negative_candidates", "n_candidates = -1");
}

Test(plugin_guard, a_name_without_a_nul_within_64_bytes_is_refused)
{
    expect_refused("long_name", "over 64 characters or not NUL-terminated");
}

Test(plugin_guard, an_unknown_parameter_kind_is_refused)
{
    expect_refused("bad_kind", "parameter 'how' has kind 7");
}

Test(plugin_guard, a_build_pointer_outside_any_loaded_object_is_refused)
{
    expect_refused("bad_build", "its build is not a function of a loaded object");
}

/* ABI 6's chip_defaults is checked as every callback is, and a crash in it
 * names it, before any --set is read */
Test(plugin_guard, a_chip_defaults_callback_is_checked_and_guarded)
{
    expect_refused("bad_chip_defaults", "its chip_defaults is not a function of a loaded object");
    setenv("TILESIM_HOSTILE_LOADER", "chip_defaults_crash", 1);
    th_run r = TH_RUN("run", hostile(), "--chip", "v5e");
    expect_crash(&r, "its chip_defaults callback crashed with SIGSEGV", "kernel definition 'hostile'");
    th_run_free(&r);
}

Test(plugin_guard, two_definitions_of_one_name_are_refused)
{
    expect_refused("duplicate", "the name is used twice");
}

Test(plugin_guard, a_huge_definition_count_is_refused)
{
    expect_refused("huge_count", "1073741824 definitions (at most 4096)");
}

Test(plugin_guard, a_null_definition_is_refused)
{
    expect_refused("null_def", "definition 0: it is NULL");
}

Test(plugin_guard, a_crash_inside_tilesim_kernels_names_the_plugin)
{
    setenv("TILESIM_HOSTILE_LOADER", "crash", 1);
    th_run r = TH_RUN("list", hostile());
    expect_crash(&r, "its tilesim_kernels function crashed with SIGSEGV", "plugin '");
    th_run_free(&r);
}

/* The C API keeps its documented behaviour: the loader's refusals are
 * PL_EINVAL with the message, in-process. */
Test(plugin_guard, pl_plugin_load_refuses_garbage_in_process)
{
    setenv("TILESIM_HOSTILE_LOADER", "garbage", 1);
    const pl_kernel_def *const *defs = NULL;
    char msg[512];
    cr_assert_eq(pl_plugin_load(hostile(), &defs, msg, sizeof msg), PL_EINVAL, "%s", msg);
    cr_assert(strstr(msg, "not readable memory"), "%s", msg);
    cr_assert_null(defs);
}

/* A temporary directory holding `name` with the text "old": the file a
 * run must not replace. */
static void old_file(char *dir, char *path, size_t n, const char *name)
{
    cr_assert(mkdtemp(dir));
    snprintf(path, n, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs("old", f);
    fclose(f);
}

static void expect_old(const char *path)
{
    char *text = th_read_file(path);
    cr_assert_str_eq(text, "old", "the file was replaced: %.80s", text);
    free(text);
}

/* A crash ends the process at once, but the output files it was writing
 * are neither replaced nor left as temporary files beside them. */
Test(plugin_guard, a_crash_keeps_the_old_output_file_and_leaves_no_temporary_file)
{
    char dir[] = "/tmp/tilesim_guard_XXXXXX", trace[96], page[96];
    old_file(dir, trace, sizeof trace, "t.json");
    snprintf(page, sizeof page, "%s/p.html", dir);
    th_run r = TH_RUN("run", hostile(), "--set", "how=1", "--trace", trace);
    expect_kernel_crash(&r, "crashed with SIGSEGV");
    th_run_free(&r);
    r = TH_RUN("run", hostile(), "--set", "how=3", "--html", page);
    expect_kernel_crash(&r, "called exit(7)");
    th_run_free(&r);
    /* the reference callback crashing (where=2): the call had already written the trace over the old one;
     * the reference now runs before the call, so the run fails before any file is written */
    r = TH_RUN("run", hostile(), "--set", "where=2", "--set", "how=1", "--trace", trace);
    cr_expect_eq(r.status, 3, "%s", r.err);
    cr_expect(strstr(r.err, "reference"), "%s", r.err);
    th_run_free(&r);
    expect_old(trace);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "test \"$(ls -A '%s')\" = t.json", dir);
    cr_assert_eq(system(cmd), 0, "files left beside the output: ls -A %s", dir);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

/* ---- a mesh kernel (issue 24): the device, the kernel and the callback named ---- */

static th_run run_hostile_mesh(const char *how, const char *where)
{
    setenv("TILESIM_HOSTILE_LOADER", "mesh", 1); /* hostile.so returns its mesh kernel */
    return TH_RUN("run", hostile(), "--set", how, "--set", where);
}

Test(plugin_guard, a_mesh_kernel_that_behaves_passes_on_every_device)
{
    th_run r = run_hostile_mesh("how=0", "where=0");
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_assert(strstr(r.out, "of 4 (the worst)") && strstr(r.out, "\nPASS\n"), "%s", r.out);
    th_run_free(&r);
}

Test(plugin_guard, a_segfault_on_one_device_of_a_mesh_names_the_device)
{
    th_run r = run_hostile_mesh("how=1", "where=0");
    expect_crash(&r, "crashed with SIGSEGV", "kernel 'hostile_mesh'");
    cr_assert(strstr(r.err, "of device 1"), "no device: %s", r.err);
    cr_assert(strstr(r.err, "the last tilesim op it called: pl_mul"), "no last op: %s", r.err);
    th_run_free(&r);
}

Test(plugin_guard, pthread_exit_on_a_mesh_device_thread_is_reported)
{
    th_run r = run_hostile_mesh("how=4", "where=0");
    expect_crash(&r, "called pthread_exit()", "of device 1");
    th_run_free(&r);
}

Test(plugin_guard, a_crash_in_the_mesh_or_mesh_reference_callback_names_it)
{
    th_run r = run_hostile_mesh("how=1", "where=3");
    expect_crash(&r, "its mesh callback crashed with SIGSEGV", "kernel definition 'hostile_mesh'");
    th_run_free(&r);
    r = run_hostile_mesh("how=2", "where=4");
    expect_crash(&r, "its mesh_reference callback crashed with SIGABRT", "kernel definition 'hostile_mesh'");
    th_run_free(&r);
}

/* A mesh_reference that crashes ends the run before the mesh call writes
 * its trace: the user's old file stays (each device's reference now runs
 * before the call, as a single device's does). */
Test(plugin_guard, a_crashing_mesh_reference_leaves_the_old_trace_alone)
{
    char dir[] = "/tmp/tilesim_guard_XXXXXX", trace[96];
    old_file(dir, trace, sizeof trace, "t.json");
    setenv("TILESIM_HOSTILE_LOADER", "mesh", 1);
    th_run r = TH_RUN("run", hostile(), "--set", "how=2", "--set", "where=4", "--trace", trace);
    expect_crash(&r, "its mesh_reference callback crashed with SIGABRT", "kernel definition 'hostile_mesh'");
    th_run_free(&r);
    expect_old(trace);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

/* A mesh callback whose answer changes between calls: the run keeps the mesh
 * it sized its devices' reports by (asked once), never overruns them */
Test(plugin_guard, a_mesh_that_changes_between_calls_is_asked_once_per_run)
{
    th_run r = run_hostile_mesh("how=0", "where=5");
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_assert(strstr(r.out, "on v5e, ring of 4 (x)") && strstr(r.out, "of 4 (the worst)"), "%s", r.out);
    cr_assert(strstr(r.out, "\nPASS\n"), "%s", r.out);
    th_run_free(&r);
}

/* A kernel that writes NaN: `run --json` stays JSON (NaN and inf have no
 * JSON spelling; the errors are null), and says FAIL. */
Test(plugin_guard, run_json_of_a_kernel_that_wrote_nan_is_valid_json)
{
    th_run r = TH_RUN("run", hostile(), "--set", "how=8", "--json");
    cr_assert_eq(r.status, 1, "%s%s", r.out, r.err);
    json_error_t e;
    json_t *doc = json_loads(r.out, 0, &e);
    cr_assert(doc, "not JSON (%s at %d): %.300s", e.text, e.position, r.out);
    cr_expect_str_eq(json_string_value(json_object_get(doc, "verdict")), "FAIL");
    json_t *o = json_array_get(json_object_get(doc, "outputs"), 0);
    cr_expect(json_is_null(json_object_get(o, "max_abs_err")), "%.300s", r.out);
    json_decref(doc);
    th_run_free(&r);
}

/* verify shows what the checks found even when the outputs pass: a write
 * into an input block (V3) leaves them right on these inputs */
Test(plugin_guard, verify_shows_the_findings_of_a_kernel_whose_outputs_pass)
{
    th_run r = TH_RUN("verify", hostile(), "--set", "how=9");
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "the checks found") && strstr(r.out, "    V3: in0: kernel hostile at grid point (2, 1)"),
              "%s", r.out);
    cr_expect(strstr(r.out, "\nPASS\n"), "%s", r.out);
    th_run_free(&r);
}

/* run of a kernel whose output fails prints the whole report, its
 * warnings (the NaN's explanation) and the verdicts, not one error line */
Test(plugin_guard, run_of_a_failing_kernel_prints_the_report_and_its_findings)
{
    th_run r = TH_RUN("run", hostile(), "--set", "how=8");
    cr_assert_eq(r.status, 1, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "hostile: grid (4, 2) = 8 steps") && strstr(r.out, "  time on v5e:"), "%s", r.out);
    cr_expect(strstr(r.out, "  warning: out0: NaN written back to HBM"), "%s", r.out);
    cr_expect(strstr(r.out, "\nFAIL: "), "%s", r.out);
    th_run_free(&r);
}

/* run of a mesh kernel lists what the checks found on its devices (the
 * mesh's report has no line for them): hostile_mesh squares its input block
 * in place (V3) and copies into its neighbour's VMEM block with no
 * handshake (M15) on every device; its outputs still pass. At most 8 lines. */
Test(plugin_guard, run_of_a_mesh_kernel_lists_its_devices_findings)
{
    th_run r = run_hostile_mesh("how=0", "where=0");
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "the checks found:\n  device 0, M15: ") && strstr(r.out, "  device 3, V3: ") &&
                  strstr(r.out, "\nPASS\n"), "%s", r.out);
    th_run_free(&r);
}
