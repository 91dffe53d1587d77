/* bench/mesh_scale.c: how host time and memory grow with a mesh's size
 * (issue 26). Runs `tilesim run ring_allreduce --devices D --cost-only` for
 * D = 64, 128, 256 (and on to --max, at most 4096), each in a process of
 * its own so that its peak memory is its own, and prints per size the
 * remote copies the program makes (about 4 D^2: half of each chunk goes
 * each way; 2 D^2 with --one-way, the textbook ring whose count issue 26
 * gives), the host time, host us per copy, peak bytes per copy, and at the
 * end the exponent of time and of memory fitted against copies (1: linear
 * in copies). Targets: linear, and a 1024-device ring all-reduce (about
 * 2.1 M copies, --one-way) in under 10 s on a 2-core host (9.06 s on
 * 2026-12-03; both ways, 4.2 M copies, 15.82 s; docs/developing.md has the
 * tables). A size
 * that takes under 5 s runs three times and shows its fastest run: on a
 * shared host one run of 64 devices took from 0.07 to 0.74 s, which moved
 * the fitted exponent from 0.78 to 1.16 between two runs of the bench.
 *
 *   build/bench/mesh_scale [--max D] [--one-way]     # D: 256 by default; 1024 for the target row
 *
 * The tilesim command is the one built beside this program (BUILD/tilesim),
 * or $TILESIM.
 */
#define _DEFAULT_SOURCE /* wait4 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

typedef struct run {
    long long copies;
    double seconds, peak_bytes;
} run;

static int one_way; /* --one-way: the textbook ring, 2 D^2 copies (issue 26's count) */

/* One run of the ring all-reduce on d devices: its copies, wall time and peak RSS; 0 when it ran. */
static int run_one(const char *tilesim, int d, run *out)
{
    char devices[16], rows[24];
    snprintf(devices, sizeof devices, "%d", d);
    snprintf(rows, sizeof rows, "%d", d > 512 ? 2 * d : 1024); /* a multiple of 2 D: 1024 rows up to 512 devices */
    int fd[2];
    if (pipe(fd)) return -1;
    double t0 = now_s();
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        const char *args[] = {tilesim, "run", "ring_allreduce", "--devices", devices, "--rows", rows, "--cost-only",
                              one_way ? "--one-way" : NULL, NULL};
        execv(tilesim, (char *const *)args);
        _exit(127);
    }
    close(fd[1]);
    char buf[1 << 16];
    long long copies = -1;
    FILE *f = fdopen(fd[0], "r");
    while (f && fgets(buf, sizeof buf, f)) { /* "  mesh: 302.72 us, 16128 remote copies, ..." */
        const char *m = strstr(buf, "remote copies");
        if (m && strstr(buf, "mesh:")) {
            const char *p = m;
            while (p > buf && p[-1] == ' ') p--;
            while (p > buf && p[-1] >= '0' && p[-1] <= '9') p--;
            copies = atoll(p);
        }
    }
    if (f) fclose(f);
    else close(fd[0]); /* the child sees its pipe closed rather than blocking on a full one */
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0) return -1;
    out->seconds = now_s() - t0;
    out->peak_bytes = (double)ru.ru_maxrss * 1024.0;
    out->copies = copies;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 && copies > 0 ? 0 : -1;
}

/* Least-squares slope of log(y) against log(x). */
static double exponent(const double *x, const double *y, int n)
{
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (int i = 0; i < n; i++) {
        double a = log(x[i]), b = log(y[i]);
        sx += a, sy += b, sxx += a * a, sxy += a * b;
    }
    double den = n * sxx - sx * sx;
    return den != 0 ? (n * sxy - sx * sy) / den : NAN;
}

int main(int argc, char **argv)
{
    int max = 256;
    for (int i = 1; i < argc; i++) {
        char *end = NULL;
        if (!strcmp(argv[i], "--max") && i + 1 < argc && (max = (int)strtol(argv[++i], &end, 10)) >= 64 &&
            max <= 4096 && !*end)
            continue;
        if (!strcmp(argv[i], "--one-way")) {
            one_way = 1;
            continue;
        }
        fprintf(stderr, "usage: mesh_scale [--max D] [--one-way]   (D from 64 to 4096; 256 by default)\n");
        return 2;
    }
    char tilesim[4096];
    const char *env = getenv("TILESIM");
    if (env) snprintf(tilesim, sizeof tilesim, "%s", env);
    else {
        snprintf(tilesim, sizeof tilesim, "%s", argv[0]);
        char *slash = strrchr(tilesim, '/');
        if (slash) *slash = '\0';
        else snprintf(tilesim, sizeof tilesim, ".");
        size_t len = strlen(tilesim);
        snprintf(tilesim + len, sizeof tilesim - len, "/../tilesim");
    }
    if (access(tilesim, X_OK)) {
        fprintf(stderr, "mesh_scale: %s: %s (build it with make, or set TILESIM)\n", tilesim, strerror(errno));
        return 2;
    }
    printf("ring all-reduce%s, cost-only, one process (%s run ring_allreduce --devices D --cost-only%s; --rows 2D past "
           "512)\n", one_way ? " one way round (2 D (D - 1) copies)" : " both ways (4 D (D - 1) copies)", tilesim,
           one_way ? " --one-way" : "");
    printf("%8s %12s %10s %12s %14s\n", "devices", "copies", "host s", "host us/copy", "peak bytes/copy");
    double xs[8], ts[8], ms[8], at1024 = -1;
    int n = 0;
    for (int d = 64; d <= max && n < 8; d *= 2) {
        run r;
        for (int rep = 0; rep < 3; rep++) { /* the fastest of three short runs: the others met a busy host */
            run t;
            if (run_one(tilesim, d, &t)) {
                fprintf(stderr, "mesh_scale: the run of %d devices failed\n", d);
                return 1;
            }
            if (rep == 0 || t.seconds < r.seconds) r = t;
            if (r.seconds >= 5) break;
        }
        printf("%8d %12lld %10.2f %12.2f %14.0f\n", d, r.copies, r.seconds, 1e6 * r.seconds / (double)r.copies,
               r.peak_bytes / (double)r.copies);
        fflush(stdout);
        xs[n] = (double)r.copies, ts[n] = r.seconds, ms[n] = r.peak_bytes;
        if (d == 1024) at1024 = r.seconds;
        n++;
    }
    if (n >= 2)
        printf("fitted against copies: host time ~ copies^%.2f, peak memory ~ copies^%.2f (goal: 1, linear)\n",
               exponent(xs, ts, n), exponent(xs, ms, n));
    if (at1024 >= 0)
        printf("1024 devices: %.2f s (target < 10 s: %s)\n", at1024, at1024 < 10 ? "met" : "MISSED");
    return 0;
}
