/* sim/base/hostthreads.c: the host's cores (hostthreads.h). */
#include <cblas.h>
#include <hwloc.h>
#include <pthread.h>

#include "hostthreads.h"

static pthread_once_t topo_once = PTHREAD_ONCE_INIT;
static hwloc_topology_t topo; /* read-only once loaded: hwloc's queries and binding may run concurrently */
static int have_topo, n_cores = 1;

static void load_topology(void)
{
    if (hwloc_topology_init(&topo) != 0) return;
    if (hwloc_topology_load(topo) != 0) {
        hwloc_topology_destroy(topo);
        return;
    }
    have_topo = 1;
    int n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    n_cores = n > 0 ? n : 1;
}

int sim_host_cores(void)
{
    pthread_once(&topo_once, load_topology);
    return n_cores;
}

void sim_pin_thread(int index)
{
    pthread_once(&topo_once, load_topology);
    if (!have_topo) return;
    hwloc_obj_t core = hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE, (unsigned)(index % n_cores));
    if (core) hwloc_set_cpubind(topo, core->cpuset, HWLOC_CPUBIND_THREAD); /* best effort */
}

typedef struct pinned_job {
    int index;
    void *(*fn)(void *);
    void *arg;
} pinned_job;

static void *pinned_main(void *p)
{
    pinned_job *j = p;
    sim_pin_thread(j->index);
    return j->fn(j->arg);
}

void sim_run_pinned(int n, void *(*fn)(void *), void *const *arg)
{
    pthread_t tid[64];
    pinned_job job[64];
    int started[64] = {0};
    if (n > 64) n = 64;
    for (int t = 0; t < n; t++) {
        job[t] = (pinned_job){.index = t, .fn = fn, .arg = arg[t]};
        started[t] = pthread_create(&tid[t], NULL, pinned_main, &job[t]) == 0;
    }
    for (int t = 0; t < n; t++)
        if (!started[t]) fn(arg[t]);
    for (int t = 0; t < n; t++)
        if (started[t]) pthread_join(tid[t], NULL);
}

static pthread_mutex_t blas_lock = PTHREAD_MUTEX_INITIALIZER;
static int blas_users, blas_saved;

void sim_blas_single_begin(void)
{
    pthread_mutex_lock(&blas_lock);
    if (blas_users++ == 0) {
        blas_saved = openblas_get_num_threads();
        if (blas_saved != 1) openblas_set_num_threads(1);
    }
    pthread_mutex_unlock(&blas_lock);
}

void sim_blas_single_end(void)
{
    pthread_mutex_lock(&blas_lock);
    if (--blas_users == 0 && blas_saved != 1) openblas_set_num_threads(blas_saved);
    pthread_mutex_unlock(&blas_lock);
}
