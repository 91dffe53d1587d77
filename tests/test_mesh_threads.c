/* A mesh whose device threads cannot all be started (a host out of memory
 * for their stacks) is refused with PL_ENOMEM, never left to hang: devices
 * wait for each other, so they run all at once or not at all. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "../kernel/sanitizers.h"
#include <errno.h>

#include "test_mesh_helpers.h"

/* their shadow memory needs more address space than any small limit leaves */
#define SANITIZED (TILESIM_ASAN || TILESIM_TSAN)

static void chain(pl_ctx *c, pl_ref *refs) { mh_chain(c, pl_at(c, refs[2], 0)); }

/* This process's virtual memory now, in bytes (VmSize), or -1. */
static long long vm_size(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmSize: %lld kB", &kb) == 1) break;
    if (f) fclose(f);
    return kb < 0 ? -1 : kb * 1024;
}

Test(mesh_threads, devices_that_cannot_all_start_are_refused_not_hung, .timeout = 60)
{
    if (SANITIZED) cr_skip_test("address space limits and sanitizers do not mix");
    pl_call call = {
        .name = "chain", .kernel = chain, .grid_rank = 1, .grid = {1},
        .n_in = 1, .in = {{.space = PL_ANY}}, .n_out = 1, .out = {{.space = PL_ANY}},
        .n_scratch = 1, .scratch = {PLTPU_SEMAPHORE(1)},
    };
    mh_run r;
    mh_alloc(&r, "line:512", 8, 128, 8, 128);
    long long vm = vm_size();
    cr_assert_gt(vm, 0, "VmSize from /proc/self/status");
    /* room for the call's own memory, not for 512 stacks (a fiber's or a thread's) */
    struct rlimit lim = {.rlim_cur = (rlim_t)(vm + 768LL * 1024 * 1024), .rlim_max = RLIM_INFINITY};
    cr_assert_eq(setrlimit(RLIMIT_AS, &lim), 0);
    mh_call(&r, &call, &(pl_options){.cost_only = 1});
    lim.rlim_cur = RLIM_INFINITY;
    setrlimit(RLIMIT_AS, &lim);
    cr_assert_eq(r.rc, PL_ENOMEM, "%d: %s", r.rc, r.mr.error);
    mh_assert_says(r.mr.error, "the host could not start");
    mh_assert_says(r.mr.error, "for device");
    mh_free(&r);
}

Test(mesh_threads, the_same_chain_runs_with_room)
{
    pl_call call = {
        .name = "chain", .kernel = chain, .grid_rank = 1, .grid = {1},
        .n_in = 1, .in = {{.space = PL_ANY}}, .n_out = 1, .out = {{.space = PL_ANY}},
        .n_scratch = 1, .scratch = {PLTPU_SEMAPHORE(1)},
    };
    mh_run r;
    mh_alloc(&r, "line:16", 8, 128, 8, 128);
    mh_call(&r, &call, &(pl_options){.cost_only = 1});
    cr_expect_eq(r.rc, PL_OK, "%s", r.mr.error);
    mh_free(&r);
}

/* Device 2's output has the wrong shape: the call is refused, and every
 * device's report says what became of it. */
Test(mesh_threads, every_report_is_written_when_one_device_is_refused)
{
    pl_call call = {
        .name = "chain", .kernel = chain, .grid_rank = 1, .grid = {1},
        .n_in = 1, .in = {{.space = PL_ANY}}, .n_out = 1, .out = {{.space = PL_ANY}},
        .n_scratch = 1, .scratch = {PLTPU_SEMAPHORE(1)},
    };
    mh_run r;
    mh_alloc(&r, "line:4", 8, 128, 8, 128);
    memset(r.reps, 0xab, 4 * sizeof *r.reps); /* what the caller's buffer held */
    r.outs[2].rank = 7;
    mh_call(&r, &call, NULL);
    cr_assert_neq(r.rc, PL_OK);
    cr_expect_eq(r.mr.failed_device, 2, "%s", r.mr.error);
    for (int d = 0; d < 4; d++) {
        cr_expect_eq(r.reps[d].status, r.rc, "device %d's report: %d", d, r.reps[d].status);
        cr_expect(memchr(r.reps[d].error, '\0', sizeof r.reps[d].error) && r.reps[d].error[0], "device %d", d);
    }
    cr_expect(strstr(r.reps[3].error, "did not run") && strstr(r.reps[3].error, "device 2"), "%s", r.reps[3].error);
    mh_free(&r);
}

Test(mesh_threads, a_trace_that_cannot_be_written_in_full_is_an_error)
{
    pl_options opt = {.cost_only = 1, .trace_path = "/dev/full"};
    mh_ring r;
    mh_ring_run(&r, 4, 8, 128, &opt, NULL, 0);
    cr_expect_eq(r.rc, PL_EINVAL, "%d: %s", r.rc, r.mr.error);
    mh_assert_says(r.mr.error, "writing the trace file '/dev/full' failed", strerror(ENOSPC));
    mh_ring_free(&r);
}
