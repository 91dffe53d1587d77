/* tests/test_plugin_stall.c: a kernel stuck in an endless loop of its own
 * C code is reported, not waited on for ever (pl_guard_stalls; the tilesim
 * command watches with TILESIM_KERNEL_TIMEOUT seconds, 60 by default).
 *
 * tests/plugins/hostile.c spins at grid point (2, 1) with how=6 (a loop
 * that never calls tilesim) and works 2.5 s without a call with how=7; its
 * callbacks do the same when `where` names them. Stuck code exits 3 with
 * the kernel (or callback), the grid point and the seconds; code that is
 * slow but ends under the limit, and host callbacks (reference, inputs),
 * are left alone.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdlib.h>
#include <time.h>

#include "../sim/tilesim.h"
#include "run.h"

static const char *hostile(void)
{
    static char path[PATH_MAX];
    th_build_path("tests/plugins/hostile.so", path, sizeof path);
    cr_assert(access(path, R_OK) == 0, "%s is missing: `make` builds tests/plugins/*.c", path);
    return path;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void expect_stuck(th_run *r, const char *who)
{
    cr_assert_eq(r->status, PL_EXIT_KERNEL_CRASHED, "status %d, stderr: %s", r->status, r->err);
    cr_assert(strstr(r->err, "made no tilesim call"), "no stall report: %s", r->err);
    cr_assert(strstr(r->err, "for 1 s"), "the seconds are not said: %s", r->err);
    cr_assert(strstr(r->err, who), "'%s' missing from: %s", who, r->err);
    cr_assert(strstr(r->err, "exit status 3: the user's code did not return"), "%s", r->err);
    cr_assert(strstr(r->err, "TILESIM_KERNEL_TIMEOUT"), "the knob is not named: %s", r->err);
}

Test(plugin_stall, an_endless_loop_in_the_kernel_is_reported_with_its_grid_point, .timeout = 60)
{
    setenv("TILESIM_KERNEL_TIMEOUT", "1", 1);
    double t0 = now_s();
    th_run r = TH_RUN("run", hostile(), "--set", "how=6");
    expect_stuck(&r, "kernel 'hostile' made no tilesim call");
    cr_assert(strstr(r.err, "at grid point (2, 1) of grid (4, 2)"), "no grid point: %s", r.err);
    cr_assert(strstr(r.err, "the last tilesim op it called: pl_mul"), "no last op: %s", r.err);
    cr_expect_lt(now_s() - t0, 20, "reported after %.1f s", now_s() - t0);
    th_run_free(&r);
}

/* A sweep's worker thread spins; the other worker finishes the rest first. */
Test(plugin_stall, an_endless_loop_on_a_sweep_worker_is_reported, .timeout = 60)
{
    setenv("TILESIM_KERNEL_TIMEOUT", "1", 1);
    th_run r = TH_RUN("sweep", hostile(), "--set", "how=6", "--threads", "2");
    expect_stuck(&r, "kernel 'hostile' made no tilesim call");
    th_run_free(&r);
}

Test(plugin_stall, an_endless_loop_in_an_index_map_or_build_callback_is_reported, .timeout = 60)
{
    setenv("TILESIM_KERNEL_TIMEOUT", "1", 1);
    th_run r = TH_RUN("run", hostile(), "--set", "how=6", "--set", "where=6", "--cost-only");
    expect_stuck(&r, "its index map function made no tilesim call");
    th_run_free(&r);
    r = TH_RUN("run", hostile(), "--set", "how=6", "--set", "where=1");
    expect_stuck(&r, "kernel definition 'hostile': its build callback made no tilesim call");
    th_run_free(&r);
}

/* One device of a mesh spins, `runs` times over: the others wait on it,
 * in tilesim, and the report names device 1, the spinning one. */
static void expect_device_1_stuck(int runs)
{
    setenv("TILESIM_KERNEL_TIMEOUT", "1", 1);
    setenv("TILESIM_HOSTILE_LOADER", "mesh", 1);
    for (int k = 0; k < runs; k++) {
        th_run r = TH_RUN("run", hostile(), "--set", "how=6", "--set", "where=0");
        expect_stuck(&r, "kernel 'hostile_mesh' made no tilesim call");
        cr_assert(strstr(r.err, "of device 1;"), "not device 1: %s", r.err);
        th_run_free(&r);
    }
}

Test(plugin_stall, an_endless_loop_on_one_device_of_a_mesh_is_reported, .timeout = 60) { expect_device_1_stuck(1); }

/* The same with a host thread per device (as sanitizer builds run meshes):
 * the devices blocked in their waits are not the stuck one; the threads'
 * order in the watch's list varies, so three runs. */
Test(plugin_stall, with_a_thread_per_device_the_spinning_device_is_named_not_a_waiting_one, .timeout = 60)
{
    setenv("TILESIM_MESH_THREADS", "1", 1);
    expect_device_1_stuck(3);
}

/* Slow is not stuck: 2.5 s without a call under a limit of 5 s passes, and
 * so does any time with the watch off (0). */
Test(plugin_stall, a_slow_kernel_under_the_limit_passes, .timeout = 60)
{
    setenv("TILESIM_KERNEL_TIMEOUT", "5", 1);
    th_run r = TH_RUN("run", hostile(), "--set", "how=7");
    cr_assert_eq(r.status, 0, "status %d: %s%s", r.status, r.out, r.err);
    th_run_free(&r);
    setenv("TILESIM_KERNEL_TIMEOUT", "0", 1);
    r = TH_RUN("run", hostile(), "--set", "how=7");
    cr_assert_eq(r.status, 0, "status %d: %s%s", r.status, r.out, r.err);
    th_run_free(&r);
}

/* A definition's reference callback is host code: it may compute for long
 * without a tilesim call. */
Test(plugin_stall, a_long_reference_callback_is_not_taken_for_a_stuck_kernel, .timeout = 60)
{
    setenv("TILESIM_KERNEL_TIMEOUT", "1", 1);
    th_run r = TH_RUN("run", hostile(), "--set", "how=7", "--set", "where=2");
    cr_assert_eq(r.status, 0, "status %d: %s%s", r.status, r.out, r.err);
    th_run_free(&r);
}

/* ... but an endless loop there was never stopped at all: host callbacks
 * get ten times the limit (0.5 s here: 5 s), then are reported as any. */
Test(plugin_stall, an_endless_reference_callback_is_stopped_at_ten_times_the_limit, .timeout = 60)
{
    setenv("TILESIM_KERNEL_TIMEOUT", "0.5", 1);
    double t0 = now_s();
    th_run r = TH_RUN("run", hostile(), "--set", "how=6", "--set", "where=2");
    double took = now_s() - t0;
    cr_assert_eq(r.status, PL_EXIT_KERNEL_CRASHED, "status %d, stderr: %s", r.status, r.err);
    cr_expect(strstr(r.err, "reference callback made no tilesim call") && strstr(r.err, "for 5 s"), "%s", r.err);
    cr_expect(took >= 4.5 && took < 30, "stopped after %.1f s", took);
    th_run_free(&r);
}

Test(plugin_stall, a_bad_timeout_value_is_refused)
{
    static const char *bad[] = {"abc", "-1", "", "5s", "nan"};
    for (int i = 0; i < 5; i++) {
        setenv("TILESIM_KERNEL_TIMEOUT", bad[i], 1);
        th_run r = TH_RUN("list");
        cr_assert_eq(r.status, 2, "'%s': status %d", bad[i], r.status);
        cr_assert(strstr(r.err, "TILESIM_KERNEL_TIMEOUT="), "'%s': %s", bad[i], r.err);
        th_run_free(&r);
    }
}
