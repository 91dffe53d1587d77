/* sim/base/host.c: will a run fit in the host's memory?
 *
 * A real run holds its arrays and the simulated VMEM in host memory; one
 * that cannot fit would be killed by the kernel's OOM killer part way
 * through (Linux overcommits: malloc succeeds, touching the pages fails).
 * So a run is refused up front when it needs more than the host can give:
 * the smallest of the memory available now (MemAvailable: free memory plus
 * what the page cache would give back; sysconf(_SC_AVPHYS_PAGES) where
 * /proc is missing), what a cgroup memory limit leaves, and the address
 * space limit (RLIMIT_AS). Deciding touches nothing: it only reads those
 * figures.
 */
#define _DEFAULT_SOURCE /* _SC_AVPHYS_PAGES, _SC_PHYS_PAGES */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "outfile.h" /* sim_parse_size */
#include "sim.h"

/* A number from a file holding one ("max" or garbage: -1). */
static double read_number(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    unsigned long long v;
    int ok = fscanf(f, "%llu", &v) == 1;
    fclose(f);
    return ok ? (double)v : -1;
}

/* MemAvailable of /proc/meminfo, bytes; -1 if it is not there. */
static double mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return -1;
    char line[256];
    double kib = -1;
    while (kib < 0 && fgets(line, sizeof line, f)) {
        unsigned long long v;
        if (sscanf(line, "MemAvailable: %llu kB", &v) == 1) kib = (double)v;
    }
    fclose(f);
    return kib < 0 ? -1 : kib * 1024;
}

/* What a cgroup limit leaves (v2, then v1); -1 when there is no limit. */
static double cgroup_room(void)
{
    double lim = read_number("/sys/fs/cgroup/memory.max"), used = read_number("/sys/fs/cgroup/memory.current");
    if (lim < 0) {
        lim = read_number("/sys/fs/cgroup/memory/memory.limit_in_bytes");
        used = read_number("/sys/fs/cgroup/memory/memory.usage_in_bytes");
    }
    if (lim < 0 || lim >= 0x1p60) return -1; /* v1 says "no limit" with a huge number */
    return used >= 0 && used < lim ? lim - used : lim;
}

static double min_known(double a, double b) { return a < 0 ? b : b < 0 ? a : a < b ? a : b; }

double pl_host_memory_available(void)
{
    double page = (double)sysconf(_SC_PAGESIZE), avail = mem_available();
    if (avail < 0) {
        long pages = sysconf(_SC_AVPHYS_PAGES);
        avail = pages > 0 && page > 0 ? (double)pages * page : -1;
    }
    avail = min_known(avail, cgroup_room());
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) avail = min_known(avail, (double)rl.rlim_cur);
    /* TILESIM_HOST_MEMORY=16G: a cap of the user's own (a shared machine), as a size --trace-limit takes */
    const char *cap = getenv("TILESIM_HOST_MEMORY");
    int64_t bytes;
    if (cap && sim_parse_size(cap, &bytes) == 0 && bytes > 0) avail = min_known(avail, (double)bytes);
    return avail < 0 ? INFINITY : avail; /* nothing known: do not refuse */
}

int pl_host_memory_check(double bytes, char *msg, size_t n)
{
    char unused[8], need[32], have[32], phys[32];
    if (!msg || !n) msg = unused, n = sizeof unused;
    if (!(bytes >= 0)) {
        snprintf(msg, n, "host memory check: %g bytes is not a size", bytes);
        return PL_EINVAL;
    }
    double avail = pl_host_memory_available();
    if (bytes <= avail) {
        snprintf(msg, n, "needs %s of host memory, %s available", pl_format_bytes(bytes, need, sizeof need),
                 isinf(avail) ? "no limit known" : pl_format_bytes(avail, have, sizeof have));
        return PL_OK;
    }
    double total = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    snprintf(msg, n,
             "needs %s (%.0f bytes) of host memory, but only %s is available (%s physical): it would be killed "
             "part way; a cost-only run (pl_options.cost_only) needs no data",
             pl_format_bytes(bytes, need, sizeof need), bytes, pl_format_bytes(avail, have, sizeof have),
             pl_format_bytes(total, phys, sizeof phys));
    return PL_ENOMEM;
}

/* The bytes alloc_buffers (exec.c) takes for a real run: each pipelined
 * operand's buffers, the prefetch copies, the scratch. */
static double plan_bytes(const sim_plan *plan)
{
    double bytes = 0;
    for (int i = 0; i < plan->n_ops; i++) {
        const sim_operand *op = &plan->ops[i];
        if (op->role == PL_ROLE_PREFETCH) bytes += (double)pl_array_bytes(op->arr);
        else if (op->pipelined) bytes += (double)op->block_elems * (double)op->elem_size * op->buffers;
    }
    const pl_call *call = plan->call;
    for (int i = 0; i < call->n_scratch; i++) {
        double n = (double)pl_dtype_size(call->scratch[i].dtype);
        for (int d = 0; d < call->scratch[i].rank; d++) n *= (double)call->scratch[i].shape[d];
        bytes += n;
    }
    return bytes;
}

int sim_host_check(const sim_plan *plan, pl_report *rep)
{
    if (plan->cost_only) return PL_OK; /* its buffers are mapped, never touched */
    char msg[512];
    int rc = pl_host_memory_check(plan_bytes(plan), msg, sizeof msg);
    if (rc == PL_OK) return PL_OK;
    return sim_fail(rep, PL_ENOMEM, "%s: the simulated VMEM buffers %s", rep->call_name, msg);
}

int sim_host_check_copies(const sim_plan *plan, int copies)
{
    char msg[512];
    return pl_host_memory_check(plan_bytes(plan) * copies, msg, sizeof msg) != PL_OK;
}

/* ---- the process's own size, watched as it grows ------------------------------------ */

/* Resident bytes of this process, or -1. */
static double resident(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = -1, rss = -1;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &rss) != 2) rss = -1;
        fclose(f);
    }
    return rss < 0 ? -1 : (double)rss * (double)sysconf(_SC_PAGESIZE);
}

static double avail_once, rss_limit;
static void read_once(void)
{
    /* what the process held when it first asked, and three quarters of what it may take besides */
    double now = resident();
    avail_once = pl_host_memory_available();
    rss_limit = isinf(avail_once) || now < 0 ? INFINITY : now + 0.75 * avail_once;
}
static pthread_once_t once = PTHREAD_ONCE_INIT;

double sim_host_memory_once(void)
{
    pthread_once(&once, read_once);
    return avail_once;
}

int sim_host_grown_past(unsigned steps, double *rss, double *limit)
{
    /* sampled once in 4096 steps over all walks (/proc is a syscall): each adds its steps to the shared
     * count 64 at a time, so a sweep's threads seldom touch its cache line, and a mesh's many short device
     * walks still add up */
    static _Atomic unsigned long total;
    unsigned long was = atomic_fetch_add_explicit(&total, steps, memory_order_relaxed);
    if ((was + steps) / 4096 == was / 4096) return 0;
    pthread_once(&once, read_once);
    double now = resident();
    *rss = now, *limit = rss_limit;
    return now > 0 && now > rss_limit;
}
