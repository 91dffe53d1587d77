/* bench/sweep_speed.c: how fast tilesim evaluates tile sizes in cost-only
 * mode, the engine behind `tilesim sweep`.
 *
 * Sweeps every power-of-two (bm, bn, bk) from 128 to 2048 for an 8192^3 bf16
 * matmul on v5e, as `tilesim sweep matmul 8192 8192 8192 --dtype bf16` does,
 * and prints configurations per second and simulated grid steps per second.
 * Targets: the sweep under 2 s on a 2-core machine (issue 3); >= 10 million
 * simulated steps per second (issue 26; issue 3 asked for 5). The host's
 * speed varies: compare builds side by side (docs/developing.md).
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../examples/kernels/matmul.h"
#include "../sim/tilesim.h"

#define N 8192
static const int64_t tiles[] = {128, 256, 512, 1024, 2048};
#define NT (int)(sizeof tiles / sizeof *tiles)

static int build(int i, pl_call *call, pl_array *args, pl_array *outs, void *param, void *user)
{
    (void)user;
    int64_t bm = tiles[i / (NT * NT)], bn = tiles[i / NT % NT], bk = tiles[i % NT];
    mm_call(call, param, N, N, N, bm, bn, bk);
    args[0] = PL_ARRAY(NULL, PL_BF16, N, N);
    args[1] = PL_ARRAY(NULL, PL_BF16, N, N);
    outs[0] = PL_ARRAY(NULL, PL_BF16, N, N);
    return PL_OK;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(void)
{
    enum { CONFIGS = NT * NT * NT };
    static pl_report reps[CONFIGS];
    pl_options opt = {.chip = "v5e"};
    double best = 1e30;
    int64_t steps = 0;
    int legal = 0;
    for (int rep = 0; rep < 3; rep++) {
        double t0 = now_s();
        if (pl_sweep(CONFIGS, build, NULL, &opt, NULL, reps) != PL_OK) {
            fprintf(stderr, "sweep_speed: pl_sweep failed\n");
            return 1;
        }
        double t = now_s() - t0;
        if (t < best) best = t;
    }
    int fastest = -1;
    for (int i = 0; i < CONFIGS; i++) {
        if (reps[i].status != PL_OK) continue;
        legal++;
        steps += reps[i].steps;
        if (fastest < 0 || reps[i].time_s < reps[fastest].time_s) fastest = i;
    }
    if (fastest < 0) {
        fprintf(stderr, "sweep_speed: no legal configuration\n");
        return 1;
    }
    printf("sweep: 8192^3 bf16 on v5e, bm, bn, bk in {128 .. 2048}: %d configurations, %d legal, %lld grid steps\n",
           CONFIGS, legal, (long long)steps);
    printf("  wall time           %8.3f s     (target < 2 s: %s)\n", best, best < 2 ? "met" : "MISSED");
    printf("  configurations / s  %8.0f\n", CONFIGS / best);
    printf("  grid steps / s      %8.2f M   (target >= 10 M: %s)\n", (double)steps / best / 1e6,
           (double)steps / best >= 10e6 ? "met" : "MISSED");
    const pl_report *r = &reps[fastest];
    printf("  fastest: (%lld, %lld, %lld) %.3f ms, %.0f%% of peak; %s\n", (long long)tiles[fastest / (NT * NT)],
           (long long)tiles[fastest / NT % NT], (long long)tiles[fastest % NT], r->time_s * 1e3,
           100 * r->peak_fraction, r->bound_msg);
    return 0;
}
