/* sim/review/review_jobs.c: the kernel shapes a review needs, each timed once.
 *
 * Hundreds of configurations share a few dozen shapes (a projection's shape
 * depends on the TP degree, the weight dtype and the token count only), so
 * each distinct shape is a job, and each job's tile sizes are picked by a
 * cost-only sweep of its candidates. The candidates of every job of one
 * kernel go into one pl_kernel_sweep (in chunks, to bound the reports'
 * memory), which spreads them over every host core.
 *
 * Candidates: matmul blocks of 256 to 2048 (all M rows in one block when
 * M <= 512: a decode batch), flash blocks of 256 to 2048, pages of 128 to
 * 2048 tokens. The paged kernel copies one page per DMA, so a large page
 * stands for the several pages per compute block that TPU paged-attention
 * kernels fetch at once (num_kv_pages_per_block). */
#include <stdlib.h>
#include <string.h>

#include "review.h"

/* configurations per pl_kernel_sweep: 1024 reports of ~32 KB. Few, large
 * sweeps: a sweep that reports progress polls every 100 ms (sim/kdef/sweep.c),
 * so each one costs up to a tick of waiting at its end. */
#define CHUNK 1024

int rv_job(pl_review_result *r, int kind, int64_t d0, int64_t d1, int64_t d2, int64_t d3, int64_t d4)
{
    int64_t d[6] = {d0, d1, d2, d3, d4, 0};
    for (int i = 0; i < r->n_jobs; i++)
        if (r->jobs[i].kind == kind && memcmp(r->jobs[i].dims, d, sizeof d) == 0) return i;
    if ((r->n_jobs & (r->n_jobs - 1)) == 0) { /* grow at powers of two */
        pl_review_job *j = realloc(r->jobs, sizeof *j * (size_t)(r->n_jobs ? 2 * r->n_jobs : 16));
        if (!j) return -1;
        r->jobs = j;
    }
    pl_review_job *j = &r->jobs[r->n_jobs];
    memset(j, 0, sizeof *j);
    j->kind = kind;
    memcpy(j->dims, d, sizeof d);
    j->status = PL_EINVAL;
    snprintf(j->error, sizeof j->error, "not timed");
    return r->n_jobs++;
}

/* Block candidates along a dimension of size n: those of list not above
 * n, or n itself (a whole dimension is always a legal block, T6). */
static int blocks(int64_t n, const int64_t *list, int k, int64_t *out)
{
    int c = 0;
    if (n < 1) return 0; /* an empty dimension has no tiling (a job of it adds no rows) */
    for (int i = 0; i < k; i++)
        if (list[i] <= n) out[c++] = list[i];
    if (c == 0) out[c++] = n;
    return c;
}

typedef struct rv_sweep {
    const pl_kernel_def *d;
    int idx[8];      /* parameter indexes, by the names below */
    int n_rows, cap;
    int64_t *values; /* n_rows x d->n_params */
    int *owner;      /* the job of each row */
} rv_sweep;

static const char *const names[RV_ALLREDUCE][8] = {
    {"M", "N", "K", "bm", "bn", "bk", "wdtype", NULL},
    {"heads", "sq", "skv", "d", "bq", "bk", "causal", "dtype"},
    {"batch", "heads", "dim", "max_len", "page", "kv", "ahead", NULL},
};

/* A tiling with more grid steps (or pages) than this is not simulated: a
 * few seconds of host time each at most, whatever the model file says. */
#define MAX_STEPS ((double)(1 << 19))

/* The review's weight choice as the matmul's dtype parameter (printed by name). */
static int64_t weight_dtype(int64_t w) { return w == PL_W_INT8 ? PL_I8 : w == PL_W_FP8 ? PL_F8E4M3 : PL_BF16; }

static double cdiv_d(int64_t a, int64_t b) { return (double)(a / b + (a % b != 0)); }

static int add_row(rv_sweep *s, int job, const int64_t *set, int nset)
{
    if (s->n_rows == s->cap) {
        int cap = s->cap ? 2 * s->cap : 256;
        int64_t *v = realloc(s->values, sizeof *v * (size_t)cap * (size_t)s->d->n_params);
        if (v) s->values = v;
        int *o = realloc(s->owner, sizeof *o * (size_t)cap);
        if (o) s->owner = o;
        if (!v || !o) return PL_ENOMEM;
        s->cap = cap;
    }
    int64_t *row = s->values + (size_t)s->n_rows * (size_t)s->d->n_params;
    pl_kernel_defaults(s->d, row);
    for (int i = 0; i < nset; i++) row[s->idx[i]] = set[i];
    s->owner[s->n_rows++] = job;
    return PL_OK;
}

/* Every candidate tiling of job j as rows of s. */
static int job_rows(rv_sweep *s, int kind, int j, const pl_review_job *job)
{
    static const int64_t mm[] = {256, 512, 1024, 2048}, fa[] = {256, 512, 1024, 2048}, pg[] = {128, 256, 512, 1024, 2048};
    const int64_t *d = job->dims;
    int64_t a[5], b[5], c[5];
    int na, nb, nc, rc = PL_OK;
    if (kind == RV_MATMUL) {
        na = d[0] <= 512 ? (a[0] = d[0], 1) : blocks(d[0], mm, 3, a); /* decode: all rows in one block */
        nb = blocks(d[1], mm, 4, b), nc = blocks(d[2], mm, 4, c);
        for (int x = 0; x < na; x++)
            for (int y = 0; y < nb; y++)
                for (int z = 0; z < nc && rc == PL_OK; z++)
                    if (cdiv_d(d[0], a[x]) * cdiv_d(d[1], b[y]) * cdiv_d(d[2], c[z]) <= MAX_STEPS)
                        rc = add_row(s, j, (int64_t[]){d[0], d[1], d[2], a[x], b[y], c[z], weight_dtype(d[3])}, 7);
    } else if (kind == RV_FLASH) {
        na = blocks(d[1], fa, 4, a);
        for (int x = 0; x < na; x++)
            for (int y = 0; y < na && rc == PL_OK; y++)
                if ((double)d[0] * cdiv_d(d[1], a[x]) * cdiv_d(d[1], a[y]) <= MAX_STEPS)
                    rc = add_row(s, j, (int64_t[]){d[0], d[1], d[1], d[2], a[x], a[y], d[3], PL_BF16}, 8);
    } else {
        static const int64_t ahead[] = {1, 2, 4, 8}; /* pages in flight: serving kernels fetch several */
        na = blocks(d[3], pg, 5, a);
        for (int x = 0; x < na && rc == PL_OK; x++)
            for (int y = 0; y < 4 && rc == PL_OK; y++)
                if ((double)d[0] * cdiv_d(d[3], a[x]) <= MAX_STEPS && (y == 0 || a[x] * (ahead[y] + 1) <= 4 * d[3]))
                    rc = add_row(s, j, (int64_t[]){d[0], d[1], d[2], d[3], a[x], d[4], ahead[y]}, 7);
    }
    return rc;
}

typedef struct rv_progress {
    const pl_review_kernels *k;
    int base, total;
} rv_progress;

static void progress(int done, int total, void *user)
{
    (void)total;
    rv_progress *p = user;
    if (p->k->progress) p->k->progress(p->base + done, p->total, p->k->user);
}

/* Sweep the rows in chunks; each job keeps its fastest legal row. */
static int sweep_kind(pl_review_result *r, const pl_review_brief *b, const pl_review_kernels *k, rv_sweep *s,
                      rv_progress *pr)
{
    pl_report *reps = calloc(CHUNK, sizeof *reps);
    if (!reps) return PL_ENOMEM;
    pl_options opt = {.chip_spec = b->chip, .cost_only = 1};
    /* no progress callback unless asked: without one, pl_sweep never polls */
    pl_sweep_options so = {.threads = k->threads, .progress = k->progress ? progress : NULL, .progress_user = pr};
    int rc = PL_OK;
    for (int at = 0; at < s->n_rows && rc == PL_OK; at += CHUNK) {
        int cnt = s->n_rows - at < CHUNK ? s->n_rows - at : CHUNK;
        rc = pl_kernel_sweep(s->d, cnt, s->values + (size_t)at * (size_t)s->d->n_params, &opt, &so, reps);
        for (int i = 0; i < cnt && rc == PL_OK; i++) {
            pl_review_job *j = &r->jobs[s->owner[at + i]];
            const int64_t *v = s->values + (size_t)(at + i) * (size_t)s->d->n_params;
            if (reps[i].status != PL_OK) {
                if (j->status != PL_OK) snprintf(j->error, sizeof j->error, "%s", reps[i].error);
                continue;
            }
            if (j->status == PL_OK && reps[i].time_s >= j->time_s) continue;
            j->status = PL_OK, j->error[0] = '\0', j->time_s = reps[i].time_s;
            memcpy(j->values, v, sizeof *v * (size_t)s->d->n_params);
            /* the kernel's name first: `tilesim run NAME --set ...` re-runs the line (review_paged holds every
             * sequence at max_len, where paged_attention draws the other lengths) */
            char cfg[sizeof j->label - 40];
            pl_kernel_format(s->d, v, cfg, sizeof cfg);
            snprintf(j->label, sizeof j->label, "%.38s %s", s->d->name, cfg);
        }
        r->kernel_runs += cnt;
        pr->base += cnt;
    }
    free(reps);
    return rc;
}

/* A job none of whose tilings was simulated says why. */
static void too_big(pl_review_job *job)
{
    snprintf(job->error, sizeof job->error, "every tiling of this shape has more than %.0f grid steps or pages; "
             "the review does not simulate it", MAX_STEPS);
}

static int prepare(rv_sweep *s, int kind, const pl_kernel_def *d, char *err, size_t n)
{
    memset(s, 0, sizeof *s);
    s->d = d;
    if (!d) return snprintf(err, n, "review: no definition given for the %s kernel",
                            kind == RV_MATMUL ? "matmul" : kind == RV_FLASH ? "flash" : "paged"), PL_EINVAL;
    for (int i = 0; i < 8 && names[kind][i]; i++)
        if ((s->idx[i] = pl_kernel_param_index(d, names[kind][i])) < 0)
            return snprintf(err, n, "review: kernel %s has no parameter '%s'", d->name, names[kind][i]), PL_EINVAL;
    return PL_OK;
}

int rv_jobs_run(pl_review_result *r, const pl_review_brief *b, const pl_review_kernels *k, char *err, size_t n)
{
    const pl_kernel_def *defs[RV_ALLREDUCE] = {k->matmul, k->flash, k->paged};
    rv_sweep s[RV_ALLREDUCE];
    rv_progress pr = {.k = k};
    int rc = PL_OK, kind;
    for (kind = 0; kind < RV_ALLREDUCE && rc == PL_OK; kind++) {
        if ((rc = prepare(&s[kind], kind, defs[kind], err, n))) break;
        for (int j = 0; j < r->n_jobs && rc == PL_OK; j++)
            if (r->jobs[j].kind == kind) {
                int before = s[kind].n_rows;
                rc = job_rows(&s[kind], kind, j, &r->jobs[j]);
                if (s[kind].n_rows == before) too_big(&r->jobs[j]);
            }
        pr.total += s[kind].n_rows;
    }
    for (int i = 0; i < kind && rc == PL_OK; i++) rc = sweep_kind(r, b, k, &s[i], &pr);
    for (int i = 0; i < kind; i++) free(s[i].values), free(s[i].owner);
    if (rc == PL_ENOMEM) snprintf(err, n, "review: out of host memory for the sweeps");
    for (int j = 0; j < r->n_jobs && rc == PL_OK; j++) {
        pl_review_job *job = &r->jobs[j];
        if (job->kind != RV_ALLREDUCE) continue;
        if (!k->allreduce_s) return snprintf(err, n, "review: no all-reduce cost given"), PL_EINVAL;
        job->time_s = k->allreduce_s(b->chip, (int)job->dims[0], (double)job->dims[1], k->user, job->error,
                                     sizeof job->error);
        job->status = job->time_s < 0 ? PL_EINVAL : PL_OK;
        snprintf(job->label, sizeof job->label, "ring all-reduce: %lld devices, %lld bytes each",
                 (long long)job->dims[0], (long long)job->dims[1]);
    }
    return rc;
}
