/* sim/kdef/sweep.c: evaluate many configurations of a call in cost-only mode, one
 * host thread per core (pinned, hostthreads.h), for tile-size sweeps.
 *
 * Configurations are independent, and a call keeps all its state in its own
 * sim_exec, so workers just take the next index from an atomic counter.
 * Results land in reports[i] whatever thread ran i, so the output does not
 * depend on the host's thread count.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../base/hostthreads.h"
#include "../mesh/ranks.h"
#include "../timing/timing.h"
#include "../tilesim.h"

typedef struct sweep_job {
    int n;
    pl_sweep_build_fn build;
    void *user;
    pl_options opt;
    pl_report *reports;
    int first, step, count;        /* this process's share: first + k * step, k < count (sim/mesh/ranks.h) */
    atomic_int next, done;
} sweep_job;

typedef struct sweep_worker {
    sweep_job *job;
    int index;
    pthread_t tid;
} sweep_worker;

static void run_one(sweep_job *job, int i)
{
    pl_call call;
    pl_array args[2 * PL_MAX_OPERANDS], outs[PL_MAX_OPERANDS];
    _Alignas(max_align_t) unsigned char param[PL_SWEEP_PARAM_BYTES];
    memset(&call, 0, sizeof call);
    memset(args, 0, sizeof args);
    memset(outs, 0, sizeof outs);
    memset(param, 0, sizeof param);
    pl_report *rep = &job->reports[i];
    int rc = job->build(i, &call, args, outs, param, job->user);
    if (rc != PL_OK) {
        memset(rep, 0, sizeof *rep);
        rep->status = rc;
        snprintf(rep->error, sizeof rep->error, "configuration %d: %s", i, pl_strerror(rc));
        return;
    }
    pl_pallas_call(&call, args, outs, &job->opt, rep);
}

static void *worker_main(void *arg)
{
    sweep_worker *w = arg;
    sweep_job *job = w->job;
    sim_pin_thread(w->index);
    sim_records_pool(1); /* one configuration's record buffers serve the next */
    int k;
    while ((k = atomic_fetch_add(&job->next, 1)) < job->count) {
        run_one(job, job->first + k * job->step);
        atomic_fetch_add(&job->done, 1);
    }
    sim_records_pool(0);
    return NULL;
}

int pl_sweep(int n, pl_sweep_build_fn build, void *user, const pl_options *opt, const pl_sweep_options *sopt,
             pl_report *reports)
{
    if (n < 0 || !build || (n > 0 && !reports)) return PL_EINVAL;
    /* with Open MPI (make mpi), configuration i is rank i % size's */
    int rank = sim_mpi_rank(), size = sim_mpi_size();
    sweep_job job = {.n = n, .build = build, .user = user, .reports = reports, .first = rank, .step = size,
                     .count = n / size + (rank < n % size)};
    if (opt) job.opt = *opt;
    job.opt.cost_only = 1;
    job.opt.trace_path = NULL; /* one file for many calls makes no sense */
    atomic_init(&job.next, 0);
    atomic_init(&job.done, 0);

    int threads = sopt && sopt->threads > 0 ? sopt->threads : 0;
    if (!threads) threads = sim_host_cores();
    if (threads < 1) threads = 1;
    if (threads > 64) threads = 64;
    if (threads > job.count) threads = job.count > 0 ? job.count : 1;
    /* the sweep's workers fill the host: a megacore call inside one walks its
     * cores in order rather than start threads of its own */
    if (threads > 1) job.opt.host_threads = 1;

    /* Workers 1.. run on threads of their own; worker 0 is the calling
     * thread, unless it reports progress, in which case one more thread
     * works in its place. */
    int reporting = sopt && sopt->progress, spawn = reporting ? threads : threads - 1;
    sweep_worker w[65];
    int started = 0;
    for (int t = 1; t <= spawn; t++) {
        w[t] = (sweep_worker){.job = &job, .index = reporting ? t - 1 : t};
        if (pthread_create(&w[t].tid, NULL, worker_main, &w[t]) != 0) break;
        started = t;
    }
    w[0] = (sweep_worker){.job = &job, .index = 0};
    if (reporting && started > 0) {
        struct timespec tick = {0, 100 * 1000 * 1000};
        while (atomic_load(&job.done) < job.count) {
            nanosleep(&tick, NULL);
            sopt->progress(atomic_load(&job.done), job.count, sopt->progress_user);
        }
        sopt->progress(job.count, job.count, sopt->progress_user);
    } else {
        worker_main(&w[0]); /* also when no thread could be started */
        if (reporting) sopt->progress(job.count, job.count, sopt->progress_user);
    }
    for (int t = 1; t <= started; t++) pthread_join(w[t].tid, NULL);
    const pl_chip *chip = job.opt.chip_spec ? job.opt.chip_spec
                          : job.opt.chip    ? pl_chip_find(job.opt.chip) : pl_chip_default();
    return sim_mpi_share_reports(reports, n, chip); /* one process: nothing to do */
}
