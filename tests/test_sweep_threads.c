/* tests/test_sweep_threads.c: pl_sweep's reports do not depend on how many
 * host threads ran it. A configuration's report comes from one cost-only
 * call, whichever worker thread took it and whatever ran beside it; the
 * timing never depends on the host (README, "Timing on a TPU"). So the
 * sweep with one thread and with one per core (threads = 0), or more
 * threads than cores, or with a progress callback (another thread works in
 * the caller's place), must give the same report for every configuration:
 * status and error text, steps, times, bytes, FLOPs, bound and its
 * sentence, per-operand traffic, warnings and findings, and the same JSON.
 */
#include <inttypes.h>
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../examples/kernels/flash_attention.h"
#include "../examples/kernels/matmul.h"
#include "helpers.h"

/* Configurations: matmuls over shapes, tiles (some illegal by T1, some over
 * the VMEM budget, M4), dtypes, and flash attention, causal or not; every
 * 13th configuration is refused by the builder itself. */
static const int64_t mm_shapes[][3] = {{1024, 1024, 1024}, {1000, 520, 3000}, {4096, 2048, 512}};
static const int64_t mm_tiles[] = {100, 128, 256, 512, 2048};
#define N_SHAPES 3
#define N_TILES 5
#define N_MM (N_SHAPES * N_TILES * N_TILES * 2)
#define N_FA 8
#define N_CONFIGS (N_MM + N_FA)
#define REFUSED_EVERY 13

static int build(int i, pl_call *call, pl_array *args, pl_array *outs, void *param, void *user)
{
    (void)user;
    if (i % REFUSED_EVERY == REFUSED_EVERY - 1) return PL_EINVAL;
    if (i < N_MM) {
        const int64_t *s = mm_shapes[i % N_SHAPES];
        int64_t bm = mm_tiles[i / N_SHAPES % N_TILES], bn = mm_tiles[i / (N_SHAPES * N_TILES) % N_TILES];
        int64_t bk = bm == 100 ? 256 : bm; /* bm = 100 breaks the (8,128) rule (T1) */
        pl_dtype dt = i / (N_SHAPES * N_TILES * N_TILES) ? PL_BF16 : PL_F32;
        mm_call(call, param, s[0], s[1], s[2], bm, bn, bk);
        args[0] = PL_ARRAY(NULL, dt, s[0], s[2]);
        args[1] = PL_ARRAY(NULL, dt, s[2], s[1]);
        outs[0] = PL_ARRAY(NULL, dt, s[0], s[1]);
        return PL_OK;
    }
    int f = i - N_MM;
    fa_config cfg = {.heads = f % 2 ? 4 : 0, .sq = 1000 + 24 * f, .skv = 2048, .d = 128, .bq = 128 << (f % 3),
                     .bk = 256, .causal = f / 4, .dtype = f % 2 ? PL_BF16 : PL_F32};
    cr_assert_leq(sizeof(fa_params), PL_SWEEP_PARAM_BYTES);
    int rc = fa_call(call, param, &cfg);
    if (rc == PL_OK) fa_shapes(&cfg, args, outs);
    return rc;
}

static void progress(int done, int total, void *user)
{
    (void)done, (void)total;
    ++*(int *)user;
}

/* Run the sweep with `threads` (and a progress callback if asked) into a
 * fresh array of reports; the caller frees it. */
static pl_report *sweep(const pl_options *opt, int threads, int with_progress)
{
    pl_report *reps = calloc(N_CONFIGS, sizeof *reps);
    cr_assert(reps, "out of host memory");
    int calls = 0;
    pl_sweep_options so = {.threads = threads, .progress = with_progress ? progress : NULL, .progress_user = &calls};
    int rc = pl_sweep(N_CONFIGS, build, NULL, opt, &so, reps);
    cr_assert_eq(rc, PL_OK, "pl_sweep with %d threads returned %d (%s)", threads, rc, pl_strerror(rc));
    if (with_progress) cr_assert_gt(calls, 0, "the progress callback never ran");
    return reps;
}

static char *report_json(const pl_report *r)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert(f, "open_memstream failed");
    pl_report_json(r, f);
    fclose(f);
    return buf;
}

/* Doubles compare exactly: the same simulation gives the same bits. */
#define SAME(field, fmt)                                                                                          \
    cr_assert(a->field == b->field || (isnan((double)a->field) && isnan((double)b->field)),                     \
              "%s: config %d: " #field " " fmt " with one thread, " fmt " with %s", chip, i, a->field, b->field, how)

static void expect_same_report(const char *chip, const char *how, int i, const pl_report *a, const pl_report *b)
{
    SAME(status, "%d");
    cr_assert_str_eq(a->error, b->error, "%s: config %d: the error differs with %s", chip, i, how);
    cr_assert_str_eq(a->warnings, b->warnings, "%s: config %d: the warnings differ with %s", chip, i, how);
    SAME(n_warnings, "%d");
    cr_assert_str_eq(a->call_name, b->call_name);
    cr_assert(a->chip == b->chip, "%s: config %d: another chip with %s", chip, i, how);
    SAME(steps, "%" PRId64);
    SAME(cores, "%d");
    SAME(time_s, "%a");
    SAME(compute_s, "%a");
    SAME(mxu_s, "%a");
    SAME(vpu_s, "%a");
    SAME(overhead_s, "%a");
    SAME(dma_exposed_s, "%a");
    SAME(mxu_flops, "%a");
    SAME(mxu_flops_padded, "%a");
    SAME(vpu_flops, "%a");
    SAME(flops_per_s, "%a");
    SAME(peak_fraction, "%a");
    SAME(intensity, "%a");
    SAME(hbm_bytes, "%" PRId64);
    SAME(dma_copies, "%" PRId64);
    SAME(dma_bytes, "%" PRId64);
    SAME(vmem_bytes, "%" PRId64);
    SAME(vmem_limit, "%" PRId64);
    SAME(smem_bytes, "%" PRId64);
    SAME(bound, "%d");
    cr_assert_str_eq(a->bound_msg, b->bound_msg, "%s: config %d: the bound differs with %s", chip, i, how);
    SAME(n_findings, "%d");
    SAME(n_operands, "%d");
    for (int o = 0; o < a->n_operands; o++) {
        const pl_operand_report *x = &a->op[o], *y = &b->op[o];
        cr_assert(x->copies == y->copies && x->skipped == y->skipped && x->writebacks == y->writebacks &&
                      x->bytes_in == y->bytes_in && x->bytes_out == y->bytes_out && x->vmem_bytes == y->vmem_bytes,
                  "%s: config %d: operand %s moved other blocks with %s", chip, i, x->name, how);
    }
    char *ja = report_json(a), *jb = report_json(b);
    cr_assert_str_eq(ja, jb, "%s: config %d: the JSON report differs with %s", chip, i, how);
    free(ja);
    free(jb);
}

static void compare_thread_counts(const char *chip)
{
    pl_options opt = {.chip = chip};
    pl_report *one = sweep(&opt, 1, 0);
    int legal = 0, illegal = 0, refused = 0;
    for (int i = 0; i < N_CONFIGS; i++) {
        legal += one[i].status == PL_OK;
        illegal += one[i].status == PL_EBLOCKSHAPE || one[i].status == PL_EVMEM;
        refused += i % REFUSED_EVERY == REFUSED_EVERY - 1;
    }
    /* the set covers what the comparison is about: runs, rejections, refusals */
    cr_assert_gt(legal, 20, "%s: only %d legal configurations", chip, legal);
    cr_assert_gt(illegal, 5, "%s: only %d rejected configurations", chip, illegal);
    cr_assert_gt(refused, 5);

    static const struct { int threads, progress; const char *how; } runs[] = {
        {0, 0, "one thread per core (threads = 0)"},
        {0, 1, "one thread per core and a progress callback"},
        {3, 0, "three threads"},
    };
    for (size_t r = 0; r < sizeof runs / sizeof *runs; r++) {
        pl_report *many = sweep(&opt, runs[r].threads, runs[r].progress);
        for (int i = 0; i < N_CONFIGS; i++) expect_same_report(chip, runs[r].how, i, &one[i], &many[i]);
        free(many);
    }
    free(one);
}

Test(sweep_threads, reports_do_not_depend_on_the_thread_count) { compare_thread_counts("v5e"); }

/* A megacore chip splits the first parallel axis between two TensorCores
 * (G4): per-core timelines, still independent of the host threads. */
Test(sweep_threads, megacore_reports_do_not_depend_on_the_thread_count) { compare_thread_counts("v5p"); }

/* pl_sweep_rank (and the printers that rank) on two threads at once, each
 * on its own reports: each gets its own order. The sort's state is per
 * thread; a shared one made one thread sort by the other's times (caught
 * here, or by `make check-tsan`, which runs this suite). */
#define RANK_N 400

typedef struct rank_job {
    pl_report *reports;
    int bad;
} rank_job;

static void *rank_many(void *p)
{
    rank_job *j = p;
    int order[RANK_N];
    for (int rep = 0; rep < 2000 && !j->bad; rep++) {
        int legal = pl_sweep_rank(RANK_N, j->reports, order);
        if (legal != RANK_N) j->bad = 1;
        for (int i = 1; i < legal; i++)
            if (j->reports[order[i - 1]].time_s > j->reports[order[i]].time_s) j->bad = 1;
    }
    return NULL;
}

Test(sweep_threads, rank_on_two_threads_at_once)
{
    rank_job jobs[2];
    for (int t = 0; t < 2; t++) {
        jobs[t].reports = calloc(RANK_N, sizeof *jobs[t].reports);
        cr_assert(jobs[t].reports);
        jobs[t].bad = 0;
        for (int i = 0; i < RANK_N; i++) /* opposite orders: a mixed-up sort shows */
            jobs[t].reports[i].time_s = t ? (double)i : (double)(RANK_N - i);
    }
    pthread_t tid;
    cr_assert_eq(pthread_create(&tid, NULL, rank_many, &jobs[1]), 0);
    rank_many(&jobs[0]);
    pthread_join(tid, NULL);
    for (int t = 0; t < 2; t++) {
        cr_expect(!jobs[t].bad, "thread %d got an order not by its own times", t);
        free(jobs[t].reports);
    }
}
