/* bench/megacore_threads.c: what walking a megacore chip's TensorCores on
 * host threads (issue 11, pl_options.host_threads) buys on the host.
 *
 *   1. cblas_sgemm on the same problem size (f32, one thread): the yardstick
 *      every bench here reports against.
 *   2. A real (not cost-only) bf16 matmul on v5p (two TensorCores, G4) with
 *      host_threads 1 (the cores one after the other) and then 2 (one host
 *      thread each): best of SIM_REPS runs each, after a warm-up run whose
 *      output is kept; every timed output must equal it bit for bit, and the
 *      host_threads 1 output must pass pl_check_matmul (V5).
 *   3. The speedup of 2 threads over 1 (goal >= 1.6x on a host with two
 *      cores or more) and each side against one sgemm.
 *   4. What the host allows at the moment: its load average and the speedup
 *      of a plain two-thread spin loop. On a shared or busy machine (other
 *      builds running) that ceiling is well under 2x, and the matmul's
 *      speedup cannot beat it: compare the two before reading a miss as
 *      tilesim's.
 *
 * Times are wall-clock (CLOCK_MONOTONIC), not the CPU time of the calling
 * thread as in matmul_vs_blas: with host threads the work runs on threads
 * other than the caller. OpenBLAS runs on one thread on both sides: the
 * speedup is the cores', not OpenBLAS's.
 *
 * Exit status: 0 when everything ran and the outputs agree, whether or not
 * the goal was met (a measurement, not a test); 1 when a result is wrong
 * (the outputs differ, or the check fails); 2 when a call failed or memory
 * ran out.
 */
#define _DEFAULT_SOURCE /* getloadavg */
#include <cblas.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../examples/kernels/matmul.h"
#include "../kernel/pallas.h"
#include "../sim/tilesim.h"

#define N_MAT 3072     /* M = N = K: about 1 s per tilesim run on one core of the dev host */
#define TILE 512       /* bm = bn = bk: grid (6, 6, 6), axis 0 split 3 + 3 (G4) */
#define SIM_REPS 3     /* timed runs per host_threads, after a warm-up */
#define BLAS_REPS 3
#define SPEEDUP_GOAL 1.6

#define EXIT_WRONG 1
#define EXIT_FAILED 2

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* n bf16 values of a fixed pseudo-random sequence in [-1, 1). */
static uint16_t *random_bf16(size_t n, uint64_t seed)
{
    uint16_t *p = malloc(n * sizeof *p);
    if (!p) return NULL;
    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        p[i] = pl_f32_to_bf16((float)((double)(seed >> 11) / 9007199254740992.0 * 2.0 - 1.0));
    }
    return p;
}

static float *widen(const uint16_t *p, size_t n)
{
    float *f = malloc(n * sizeof *f);
    if (f)
        for (size_t i = 0; i < n; i++) f[i] = pl_bf16_to_f32(p[i]);
    return f;
}

static double best_sgemm(const float *a, const float *b, float *c, int n)
{
    double best = 1e30;
    for (int r = 0; r <= BLAS_REPS; r++) { /* r == 0: warm-up */
        double t0 = wall_s();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
        double t = wall_s() - t0;
        if (r > 0 && t < best) best = t;
    }
    return best;
}

/* Best wall time of SIM_REPS runs with host_threads after a warm-up run
 * into want (host_threads 1) or checked against it (others); < 0: failed
 * (*status says how). */
static double bench_threads(int threads, const pl_array *args, pl_array *out, uint16_t *want, int *status)
{
    mm_params p;
    pl_call call;
    mm_call(&call, &p, N_MAT, N_MAT, N_MAT, TILE, TILE, TILE);
    pl_options opt = {.chip = "v5p", .host_threads = threads};
    pl_report rep;
    size_t bytes = pl_array_bytes(out);
    double best = 1e30;
    for (int r = 0; r <= SIM_REPS; r++) {
        memset(out->data, 0xA5, bytes);
        double t0 = wall_s();
        int rc = pl_pallas_call(&call, args, out, &opt, &rep);
        double t = wall_s() - t0;
        if (rc != PL_OK) {
            fprintf(stderr, "megacore_threads: host_threads %d: the call failed (%s): %s\n", threads, pl_strerror(rc),
                    rep.error);
            *status = EXIT_FAILED;
            return -1;
        }
        if (threads == 1 && r == 0) memcpy(want, out->data, bytes);
        else if (memcmp(want, out->data, bytes) != 0) {
            fprintf(stderr, "megacore_threads: host_threads %d, run %d: the output differs from host_threads 1's\n",
                    threads, r);
            *status = EXIT_WRONG;
            return -1;
        }
        if (r > 0 && t < best) best = t;
    }
    if (rep.cores != 2) fprintf(stderr, "megacore_threads: note: %d TensorCores ran, not 2\n", rep.cores);
    return best;
}

/* ---- 4. the host's own two-thread ceiling ------------------------------------------ */

static void *spin(void *arg)
{
    volatile double x = 0;
    for (long i = 0; i < 100000000L; i++) x += 1e-9;
    (void)arg;
    return NULL;
}

/* Wall time of two spins one after the other over two at once; < 0 if no thread starts. */
static double spin_ceiling(void)
{
    double t0 = wall_s();
    spin(NULL), spin(NULL);
    double seq = wall_s() - t0;
    pthread_t t[2];
    t0 = wall_s();
    if (pthread_create(&t[0], NULL, spin, NULL)) return -1;
    if (pthread_create(&t[1], NULL, spin, NULL)) {
        pthread_join(t[0], NULL);
        return -1;
    }
    pthread_join(t[0], NULL), pthread_join(t[1], NULL);
    return seq / (wall_s() - t0);
}

static void host_note(void)
{
    double load[1] = {-1}, ceiling = spin_ceiling();
    if (getloadavg(load, 1) < 1) load[0] = -1;
    printf("the host now: load average %.2f; two threads of a plain spin loop run %.2fx as fast as one "
           "(the ceiling for the speedup above)\n", load[0], ceiling);
}

static int run(const uint16_t *a, const uint16_t *b, uint16_t *c, uint16_t *want, const float *af, const float *bf,
               float *cf)
{
    const int n = N_MAT;
    const double flops = 2.0 * n * (double)n * n;
    pl_array args[2] = {PL_ARRAY((void *)a, PL_BF16, n, n), PL_ARRAY((void *)b, PL_BF16, n, n)};
    pl_array out = PL_ARRAY(c, PL_BF16, n, n);
    double t_blas = best_sgemm(af, bf, cf, n);
    printf("  %-34s %9.3f s  %7.1f GFLOP/s\n", "OpenBLAS cblas_sgemm (f32)", t_blas, flops / t_blas * 1e-9);

    int status = 0;
    double t1 = bench_threads(1, args, &out, want, &status);
    if (t1 < 0) return status;
    pl_array w = PL_ARRAY(want, PL_BF16, n, n);
    pl_check chk;
    int vrc = pl_check_matmul(&args[0], &args[1], &w, &chk, NULL);
    if (vrc != PL_OK) {
        fprintf(stderr, "megacore_threads: the matmul is wrong (%s): norm_err %.3g, %lld NaN\n", pl_strerror(vrc),
                chk.norm_err, (long long)chk.n_nan);
        return vrc == PL_EVERIFY ? EXIT_WRONG : EXIT_FAILED;
    }
    printf("  %-34s %9.3f s  %7.1f GFLOP/s  sgemm / tilesim %.3f  (check %s)\n", "tilesim v5p, host_threads 1", t1,
           flops / t1 * 1e-9, t_blas / t1, pl_verdict_name(chk.verdict));
    double t2 = bench_threads(2, args, &out, want, &status);
    if (t2 < 0) return status;
    printf("  %-34s %9.3f s  %7.1f GFLOP/s  sgemm / tilesim %.3f  (output identical)\n",
           "tilesim v5p, host_threads 2", t2, flops / t2 * 1e-9, t_blas / t2);
    double speedup = t1 / t2;
    printf("\nspeedup host_threads 2 over 1: %.2fx; goal >= %.1fx on a host with 2+ cores: %s\n", speedup,
           SPEEDUP_GOAL, speedup >= SPEEDUP_GOAL ? "met" : "NOT met");
    return 0;
}

int main(void)
{
    openblas_set_num_threads(1);
    const size_t elems = (size_t)N_MAT * N_MAT;
    double t_start = wall_s();
    uint16_t *a = random_bf16(elems, 1), *b = random_bf16(elems, 2);
    uint16_t *c = malloc(elems * sizeof *c), *want = malloc(elems * sizeof *want);
    float *af = a ? widen(a, elems) : NULL, *bf = b ? widen(b, elems) : NULL, *cf = malloc(elems * sizeof *cf);
    int status = EXIT_FAILED;
    if (a && b && c && want && af && bf && cf) {
        printf("megacore TensorCores on host threads: v5p bf16 matmul %dx%dx%d, %d-tiles, real run\n", N_MAT, N_MAT,
               N_MAT, TILE);
        printf("OpenBLAS: %s, %d thread(s); wall time, best of %d after a warm-up\n\n", openblas_get_config(),
               openblas_get_num_threads(), SIM_REPS);
        status = run(a, b, c, want, af, bf, cf);
        if (!status) host_note();
        printf("\ntotal bench time %.1f s\n", wall_s() - t_start);
    } else fprintf(stderr, "megacore_threads: out of memory for %dx%d matrices\n", N_MAT, N_MAT);
    free(a), free(b), free(c), free(want), free(af), free(bf), free(cf);
    return status;
}
