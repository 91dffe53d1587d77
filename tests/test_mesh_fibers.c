/* A mesh's TensorCores run as fibers on a few host threads (issue 26,
 * sim/mesh/mesh_fiber.h) unless TILESIM_MESH_THREADS=1 gives each a thread.
 * These tests ask for fibers with TILESIM_MESH_THREADS=0, which an
 * AddressSanitizer build needs (it uses threads by default).
 * The two modes must agree byte for byte (outputs, JSON report, trace),
 * deadlocks and races must read the same, a core's values (held in host
 * memory between ops) must survive a park while other cores run on its
 * thread, and meshes far past what a thread per core allows must run. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../examples/kernels/values.h"
#include "../kernel/sanitizers.h"
#include "run.h"
#include "test_mesh_helpers.h"

/* the tilesim command of this test binary's build (th_tilesim_path) */
#define SANITIZED TILESIM_ASAN /* locals may live on its fake stack, and its own handler takes a fault */

static th_run tilesim(const char *const *args)
{
    char exe[PATH_MAX];
    return th_run_argv(th_tilesim_path(exe, sizeof exe), args);
}

/* stdout and the trace of one CLI run in a mode */
static void run_mode(const char *threads, const char *const *args, const char *trace, th_run *out, char **trace_text)
{
    if (threads) setenv("TILESIM_MESH_THREADS", threads, 1);
    else unsetenv("TILESIM_MESH_THREADS");
    *out = tilesim(args);
    *trace_text = trace ? th_read_file(trace) : NULL;
    unsetenv("TILESIM_MESH_THREADS");
}

static void expect_same_in_both_modes(const char *const *args, const char *trace)
{
    th_run f, t;
    char *tf, *tt;
    run_mode("0", args, trace, &f, &tf);
    run_mode("1", args, trace, &t, &tt);
    cr_expect_eq(f.status, 0, "fibers: %s%s", f.out, f.err);
    cr_expect_eq(t.status, 0, "threads: %s%s", t.out, t.err);
    cr_expect(f.out && t.out && strcmp(f.out, t.out) == 0, "%s: fibers and threads print differently:\n%s\n---\n%s",
              args[1], f.out, t.out);
    if (trace) cr_expect(tf && tt && strcmp(tf, tt) == 0, "%s: the traces differ", args[1]);
    free(tf), free(tt);
    th_run_free(&f), th_run_free(&t);
}

Test(mesh_fibers, fibers_and_threads_print_the_same_report_and_trace, .timeout = 120)
{
    char trace[64];
    th_temp_file(trace, NULL);
    const char *ring[] = {"run", "ring_allreduce", "--set", "devices=8", "--set", "rows=64", "--set", "cols=128",
                          "--json", "--trace", trace, NULL};
    expect_same_in_both_modes(ring, trace);
    const char *hier[] = {"run", "hier_allreduce", "--mesh", "dcn:2 x ring:4", "--rows", "64", "--cols", "128",
                          "--trace", trace, NULL};
    expect_same_in_both_modes(hier, trace);
    unlink(trace);
}

/* Every device waits for a signal no one sends. */
static void all_wait(pl_ctx *c, pl_ref *refs) { pltpu_semaphore_wait(c, pl_at(c, refs[2], 0), 1); }

static const pl_call wait_call = {
    .name = "all_wait", .kernel = all_wait, .grid_rank = 1, .grid = {1},
    .n_in = 1, .in = {{.space = PL_ANY}}, .n_out = 1, .out = {{.space = PL_ANY}},
    .n_scratch = 1, .scratch = {PLTPU_SEMAPHORE(1)},
};

static void deadlock_message(const char *threads, char *msg, size_t n)
{
    if (threads) setenv("TILESIM_MESH_THREADS", threads, 1);
    mh_run r;
    mh_alloc(&r, "ring:6", 8, 128, 8, 128);
    mh_call(&r, &wait_call, &(pl_options){.cost_only = 1});
    unsetenv("TILESIM_MESH_THREADS");
    cr_expect_eq(r.rc, PL_EDEADLOCK, "%d: %s", r.rc, r.mr.error);
    snprintf(msg, n, "%s", r.mr.error);
    mh_free(&r);
}

Test(mesh_fibers, a_deadlock_of_fibers_is_reported_as_with_threads, .timeout = 60)
{
    char f[PL_MSG_MAX], t[PL_MSG_MAX];
    deadlock_message("0", f, sizeof f);
    deadlock_message("1", t, sizeof t);
    mh_assert_says(f, "deadlock across the mesh");
    for (int d = 0; d < 6; d++) cr_expect(mh_names_device(f, d), "device %d not named: %s", d, f);
    cr_expect_str_eq(f, t);
}

/* Each device holds a value in the kernel's arena across a wait that parks
 * it (the next device signals only after its own value is written), then
 * writes the value out: with every fiber on one pool thread, a value kept
 * per thread would be overwritten by the next device's. */
static void hold_across_wait(pl_ctx *c, pl_ref *refs)
{
    int me = pltpu_device_id(c), n = pltpu_num_devices(c);
    ex_values *a = ex_values_begin(c, ex_value_bytes(PL_F32, 8, 128));
    pl_ref v = ex_value(a, PL_F32, 8, 128);
    pl_fill(c, v, (float)(me + 1));
    if (me < n - 1) pltpu_semaphore_wait(c, pl_at(c, refs[2], 0), 1); /* parks: device me+1 runs its kernel */
    if (me > 0) pltpu_semaphore_signal_device(c, pl_at(c, refs[2], 0), 1, me - 1);
    pltpu_copy dc = pltpu_async_copy(c, v, refs[1], pl_at(c, refs[3], 0));
    pltpu_copy_start(c, &dc);
    pltpu_copy_wait(c, &dc);
}

Test(mesh_fibers, a_cores_values_survive_a_park, .timeout = 60)
{
    setenv("TILESIM_MESH_POOL", "1", 1);
    setenv("TILESIM_MESH_THREADS", "0", 1);
    pl_call call = {
        .name = "hold", .kernel = hold_across_wait, .grid_rank = 1, .grid = {1},
        .n_in = 1, .in = {{.space = PL_ANY}}, .n_out = 1, .out = {{.space = PL_ANY}},
        .n_scratch = 2, .scratch = {PLTPU_SEMAPHORE(1), PLTPU_SEMAPHORE_DMA(1)},
    };
    mh_run r;
    mh_alloc(&r, "line:8", 8, 128, 8, 128);
    mh_call(&r, &call, NULL);
    cr_assert_eq(r.rc, PL_OK, "%s", r.mr.error);
    for (int d = 0; d < r.n; d++)
        for (int64_t i = 0; i < r.o_elems; i++)
            if (r.o[d * r.o_elems + i] != (float)(d + 1))
                cr_assert_fail("device %d element %lld: %g, not its own value %d", d, (long long)i,
                               r.o[d * r.o_elems + i], d + 1);
    mh_free(&r);
}

/* The host threads of this process now (Threads: in /proc/self/status), or -1. */
static int host_threads(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    int n = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "Threads: %d", &n) == 1) break;
    if (f) fclose(f);
    return n;
}

static int threads_seen = -1;

/* A chain down the devices (mh_chain): device 0 runs its last op after
 * every other device started; it counts the host threads then. */
static void chain(pl_ctx *c, pl_ref *refs)
{
    if (mh_chain(c, pl_at(c, refs[2], 0))) threads_seen = host_threads();
}

/* 3000 devices, each of them started and waiting: a thread per device would
 * be 3000 threads; fibers run on a pool of a few. */
Test(mesh_fibers, three_thousand_devices_run_on_a_few_threads, .timeout = 120)
{
    pl_call call = {
        .name = "chain", .kernel = chain, .grid_rank = 1, .grid = {1},
        .n_in = 1, .in = {{.space = PL_ANY}}, .n_out = 1, .out = {{.space = PL_ANY}},
        .n_scratch = 1, .scratch = {PLTPU_SEMAPHORE(1)},
    };
    mh_run r;
    setenv("TILESIM_MESH_THREADS", "0", 1);
    mh_alloc(&r, "line:3000", 8, 128, 8, 128);
    mh_call(&r, &call, &(pl_options){.cost_only = 1});
    cr_expect_eq(r.rc, PL_OK, "%s", r.mr.error);
    cr_expect_eq(r.mr.n_devices, 3000);
    cr_expect(threads_seen > 0 && threads_seen < 16, "%d host threads while 3000 devices ran", threads_seen);
    mh_free(&r);
}

/* A kernel whose locals outgrow a fiber's stack meets the guard page below
 * it: the crash guard says it was a stack overflow and how to get a bigger
 * stack, instead of a bare SIGSEGV. */
static void big_locals(pl_ctx *c, pl_ref *refs)
{
    (void)c, (void)refs;
    volatile char big[2 << 20]; /* twice the 1 MiB stack the test gives fibers */
    for (int i = (2 << 20) - 1; i >= 0; i -= 2048) big[i] = (char)i; /* from the top down: into the guard page */
    if (big[2047] == 3) fputs("", stderr);
}

Test(mesh_fibers, a_stack_overflow_on_a_fiber_is_named, .timeout = 60)
{
    if (SANITIZED) cr_skip_test("AddressSanitizer handles stack overflows itself");
    int fd[2];
    cr_assert_eq(pipe(fd), 0);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        dup2(fd[1], 2);
        close(fd[0]);
        setenv("TILESIM_MESH_THREADS", "0", 1);
        setenv("TILESIM_MESH_STACK_MB", "1", 1);
        pl_guard_kernels("test");
        pl_call call = {
            .name = "big", .kernel = big_locals, .grid_rank = 1, .grid = {1},
            .n_in = 1, .in = {{.space = PL_ANY}}, .n_out = 1, .out = {{.space = PL_ANY}},
        };
        mh_run r;
        mh_alloc(&r, "ring:2", 8, 128, 8, 128);
        mh_call(&r, &call, &(pl_options){.cost_only = 1});
        _exit(0);
    }
    close(fd[1]);
    char err[4096] = "";
    size_t n = 0;
    ssize_t k;
    while (n + 1 < sizeof err && (k = read(fd[0], err + n, sizeof err - 1 - n)) > 0) n += (size_t)k;
    err[n] = 0;
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == PL_EXIT_KERNEL_CRASHED, "status %d: %s", status, err);
    cr_expect(strstr(err, "a stack overflow") && strstr(err, "TILESIM_MESH_STACK_MB"), "%s", err);
}
