/* sim/mesh/mesh_run.c: one call run SPMD on every device of a mesh (rules M11,
 * M12; sim/tilesim_mesh.h).
 *
 * Each device is a call of its own (sim_exec: its arrays, plan and
 * TensorCores) with hooks through which its kernel reaches the others
 * (mesh_hooks.c): the same Ref on another core or device, the semaphore
 * lock, and waits that block. Every device starts (buffers, poisoned
 * scratch, zeroed semaphores) before any runs a step, since a neighbour may
 * copy into it from its first step; then each TensorCore of each device
 * runs on a host thread of its own, all at once (M13). A core blocked on a
 * semaphore sleeps on its condition variable; when every core still running
 * is blocked, none can ever wake another: that is a deadlock, and each
 * blocked core ends with a message naming them all. After the threads,
 * every device's semaphores are checked (M10) and its walk is timed, in
 * device order.
 */
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../call/core.h"
#include "../base/hostthreads.h"
#include "mesh_fiber.h"
#include "mesh_run.h"
#include "../base/outfile.h"
#include "ranks.h"

/* ---- the run ----------------------------------------------------------------------- */

/* A unit's walk, on its thread or fiber; then the others learn it ended. */
static void run_unit(mesh_dev *d)
{
    mesh_run *r = d->run;
    sim_walk_device_steps(d->x, d->core);
    pthread_mutex_lock(&r->lock);
    r->alive--;
    sim_mesh_unpoll(r, d);
    d->done = 1;
    sim_mesh_find_deadlock(r); /* the others may have been waiting for this one */
    pthread_mutex_unlock(&r->lock);
}

static void *device_main(void *p)
{
    mesh_dev *d = p;
    mesh_run *r = d->run;
    pthread_mutex_lock(&r->lock); /* every device starts together, or none does */
    while (!r->go) pthread_cond_wait(&d->cond, &r->lock);
    int go = r->go;
    pthread_mutex_unlock(&r->lock);
    if (go > 0) run_unit(d);
    return NULL;
}

static int refuse(pl_mesh_report *mr, int code, const char *fmt, const char *what)
{
    memset(mr, 0, sizeof *mr);
    mr->failed_device = -1;
    mr->ranks = 1;
    mr->status = code;
    snprintf(mr->error, sizeof mr->error, fmt, what);
    return code;
}

static int open_trace(mesh_run *r, const pl_call *call, const pl_options *opt, pl_mesh_report *mr)
{
    if (!opt || !opt->trace_path) return PL_OK;
    char msg[PL_MSG_MAX - 64]; /* room for the prefix in the report */
    if (sim_trace_check(call, r->n, opt, msg, sizeof msg)) return refuse(mr, PL_EINVAL, "pl_mesh_call: %s", msg);
    r->trace_limit = sim_trace_limit(opt);
    if ((r->trace = sim_out_open(opt->trace_path, msg, sizeof msg))) return PL_OK;
    return refuse(mr, PL_EINVAL, "pl_mesh_call: the trace file: %s", msg);
}

static void write_trace(mesh_run *r, sim_exec *const *xs, pl_mesh_report *mr)
{
    sim_trace_dev *devs = calloc((size_t)r->n, sizeof *devs);
    int bad = !devs;
    for (int d = 0; !bad && d < r->n; d++)
        devs[d] = (sim_trace_dev){&xs[d]->plan, xs[d]->lines, xs[d]->n_cores, &xs[d]->rep};
    errno = 0;
    if (!bad) bad = sim_trace_write_mesh(r->trace->f, r->mesh, devs, r->n, xs[0]->plan.chip, mr->time_s);
    int e = devs ? errno : ENOMEM; /* the system's reason, where it gave one */
    free(devs);
    if (bad) {
        char what[1536];
        snprintf(what, sizeof what, "'%.1024s' failed: %s", r->trace->path, e ? strerror(e) : "a write error (disk full?)");
        refuse(mr, PL_EINVAL, "pl_mesh_call: writing the trace file %s", what);
        return;
    }
    char msg[PL_MSG_MAX - 64]; /* room for the prefix in the report */
    if (sim_trace_too_big(r->trace->f, r->trace_limit, r->trace->path, msg, sizeof msg))
        refuse(mr, PL_EINVAL, "pl_mesh_call: %s", msg); /* then dropped, not committed (pl_mesh_call) */
}

/* "device 2's copy into it", ... for the race's message */
static const char *what_of(int kind)
{
    static const char *const what[] = {"copy into it", "local copy reading it", "local copy writing it",
                                       "kernel reading it", "kernel writing it"};
    return kind >= 0 && kind < 5 ? what[kind] : "?";
}

/* The race the run met, if any (mesh_race.h): the device of its first event
 * fails with it, whatever else happened, in every schedule the same. */
static void report_race(mesh_run *r)
{
    const sim_mesh_conflict *race = sim_mesh_race_found(r->race);
    if (!race) return;
    int arg = (int)(race->key >> 48) - 1; /* region() keys bytes by argument */
    const sim_exec *x = r->dev[race->on].x;
    const char *name = arg < x->plan.n_ops ? x->plan.ops[arg].rep->name : x->rep.scratch[arg - x->plan.n_ops].name;
    const sim_mesh_event *a = &race->a, *b = &race->b;
    if (!sim_mesh_here(r, r->dev[a->device].device)) return; /* its process fails it (all found the same race) */
    const char *hint = a->kind == 0 && b->kind == 0 && a->device == b->device
                           ? "the receiver may still be reading the first: signal back when the buffer is free (a "
                             "capacity handshake, rule M12)"
                       : a->kind == 0 && b->kind == 0 ? "order the two copies with a semaphore"
                       : a->kind >= 3 || b->kind >= 3
                           ? "the kernel touches those bytes only after its wait_recv took the copy, and the sender "
                             "copies into bytes the kernel touched only after a signal from it says it is done with "
                             "them (a barrier or capacity semaphore, rule M12)"
                           : "wait for the local copy, then let the other device know";
    char wa[48], wb[48], won[48];
    sim_fail(&r->dev[a->device].x->rep, PL_ERACE,
             "kernel %s: the same bytes of '%s' of %s are touched by %s's %s (started at grid point %s) and by "
             "%s's %s (started at grid point %s), with nothing ordering the two: %s (rules V4, M11)",
             x->rep.call_name, name, sim_mesh_unit_name(r, race->on, won, sizeof won),
             sim_mesh_unit_name(r, a->device, wa, sizeof wa), what_of(a->kind), a->point,
             sim_mesh_unit_name(r, b->device, wb, sizeof wb), what_of(b->kind), b->point, hint);
}

/* Every device of this process at once (and, across processes, those of
 * every process: mesh_mpi.c agrees): each TensorCore a fiber on a pool of
 * host threads (mesh_fiber.h), or a host thread of its own. */
static int run_devices(mesh_run *r)
{
    int units = r->count * r->cores, first = r->first * r->cores;
    r->alive = units;
    int made = 0;
    if (r->fibers) made = sim_fibers_start(r);
    else
        while (made < units &&
               pthread_create(&r->dev[first + made].tid, NULL, device_main, &r->dev[first + made]) == 0)
            made++;
    int all = made == units;
    if (r->ranks > 1) all = sim_mesh_mpi_agree(r, all);
    /* Devices wait for each other: all of them run at once or none does
     * (one run after another could wait forever for a device not started) */
    pthread_mutex_lock(&r->lock);
    r->go = all ? 1 : -1;
    if (r->fibers) sim_fibers_go(r);
    else sim_mesh_wake_all(r);
    pthread_mutex_unlock(&r->lock);
    if (r->go > 0) sim_blas_single_begin();
    if (r->go > 0 && r->ranks > 1) sim_mesh_mpi_progress(r); /* until no device anywhere can run */
    if (r->fibers) sim_fibers_join(r);
    else
        for (int u = 0; u < made; u++) pthread_join(r->dev[first + u].tid, NULL);
    if (r->go > 0) sim_blas_single_end();
    if (r->go > 0) return PL_OK;
    if (made == units) return PL_ENOMEM; /* another process could not: its device says so */
    char who[48];
    return sim_fail(&r->dev[first + made].x->rep, PL_ENOMEM,
                    "pl_mesh_call: the host could not start %s for %s of %d devices (every TensorCore of "
                    "every device runs at once)", r->fibers ? "a fiber (its stack) or a pool thread" : "a thread",
                    sim_mesh_unit_name(r, first + made, who, sizeof who), r->n);
}

/* The units: every TensorCore of every device (M13), its device's call
 * shared; their condition variables. */
static int make_units(mesh_run *r, sim_exec **xs)
{
    r->cores = xs[0]->n_cores;
    for (int d = 1; d < r->n; d++) /* SPMD: one plan, one split; a what-if could differ */
        if (xs[d]->n_cores != r->cores) r->cores = 0;
    if (r->cores < 1)
        return sim_fail(&xs[0]->rep, PL_EINVAL, "pl_mesh_call: the devices' calls split over different numbers of "
                        "TensorCores (G4); every device runs the same call");
    if (r->cores > 1 && r->ranks > 1)
        return sim_fail(&xs[0]->rep, PL_EINVAL, "pl_mesh_call: devices of %d TensorCores each across Open MPI "
                        "ranks are not supported yet: run the mesh in one process, or give the grid no parallel "
                        "axis to split (G4, M13)", r->cores);
    r->units = r->n * r->cores;
    if (!(r->dev = calloc((size_t)r->units, sizeof *r->dev)))
        return sim_fail(&xs[0]->rep, PL_ENOMEM, "pl_mesh_call: out of host memory");
    for (int u = 0; u < r->units; u++) {
        mesh_dev *dv = &r->dev[u];
        dv->run = r;
        dv->device = u / r->cores;
        dv->core = u % r->cores;
        dv->x = xs[dv->device];
        dv->rng = r->seed ^ (0x9e3779b97f4a7c15ULL * (uint64_t)(u + 1));
        pthread_cond_init(&dv->cond, NULL);
    }
    return PL_OK;
}

/* Validate every device (in device order, before any thread) and start
 * those of this process. */
static int start_devices(mesh_run *r, sim_exec **xs, const pl_call *call, const pl_array *args, pl_array *outs,
                         const pl_options *given)
{
    pl_options opt = given ? *given : (pl_options){0};
    opt.trace_path = NULL; /* one trace for the mesh (pl_mesh_call), not one per device */
    int n_args = call->num_scalar_prefetch + call->n_in;
    for (int d = 0; d < r->n; d++) {
        sim_mesh_link link = {.ops = &sim_mesh_hooks, .run = r, .device = d, .n_devices = r->n};
        pl_options o = opt;
        o.cost_only |= !sim_mesh_here(r, d); /* run elsewhere: its plan here, never its data (which may be NULL) */
        if (d != 0) o.on_step = NULL, o.on_step_user = NULL; /* a recorder sees device 0, whose buffers every
                                                                 device of the SPMD call has */
        /* NULL + 0 is undefined (clang's UBSan): a call without inputs (pl_kernel's may have none) passes NULL */
        const pl_array *da = args ? args + (size_t)d * (size_t)n_args : NULL;
        pl_array *dout = outs ? outs + (size_t)d * (size_t)call->n_out : NULL;
        xs[d] = sim_exec_new(call, da, dout, &o,
                             &link);
        if (!xs[d]) return PL_ENOMEM;
        xs[d]->tracing = r->tracing; /* the records a trace needs */
    }
    /* every device validated (each report says how), then every one started */
    for (int d = 0; d < r->n; d++)
        if (xs[d]->rep.status) return xs[d]->rep.status;
    if (make_units(r, xs)) return xs[0]->rep.status;
    for (int d = r->first; d < r->first + r->count; d++)
        if (sim_walk_device_start(xs[d])) return xs[d]->rep.status;
    if (sim_mesh_keep_bases(r)) return sim_fail(&xs[0]->rep, PL_ENOMEM, "pl_mesh_call: out of host memory");
    return PL_OK;
}

/* After the threads: races, M10 and the merge on this process's devices,
 * the timing of all (across processes: rank 0 times, all learn: mesh_mpi.c). */
static void end_devices(mesh_run *r, sim_exec **xs, int ran, pl_mesh_report *mr, sim_link_stats *stats)
{
    sim_race_queue_finish(r->race_q); /* every event the walk queued, applied */
    r->race_q = NULL;
    if (ran) {
        if (r->ranks > 1) sim_mesh_mpi_races(r);
        report_race(r);
        /* found and reported: its state goes before the replay (and, across
         * ranks, before rank 0 gathers every device's records) */
        sim_mesh_race_free(r->race);
        r->race = NULL;
        for (int d = r->first; d < r->first + r->count; d++) {
            sim_walk_device_end(xs[d]);
            const char *overflow = r->dev[d * r->cores].overflow; /* from another process: one core a device */
            if (overflow[0]) sim_fail(&xs[d]->rep, PL_EINVAL, "%s", overflow);
        }
        int taken = 0; /* Mosaic's check is of the kernel, not of one device: any device's use counts */
        for (int d = r->first; d < r->first + r->count; d++) taken |= xs[d]->barrier_taken;
        sim_check_collective_id(xs[r->first], taken);
    }
    if (r->ranks > 1) {
        sim_mesh_mpi_finish(r, xs, ran, mr, stats);
        return;
    }
    if (ran) sim_exec_finish_mesh(xs, r->n, r->mesh, stats);
    sim_mesh_report(mr, xs, r->n, r->mesh, stats);
}

int pl_mesh_call(const pl_mesh *mesh, const pl_call *call, const pl_array *args, pl_array *outs,
                 const pl_options *opt, pl_mesh_report *report, pl_report *reports)
{
    pl_mesh_report local;
    pl_mesh_report *mr = report ? report : &local;
    char msg[256];
    if (!mesh || !call) return refuse(mr, PL_EINVAL, "pl_mesh_call: %s is NULL", mesh ? "call" : "mesh");
    if (pl_mesh_check(mesh, msg, sizeof msg) != PL_OK) return refuse(mr, PL_EINVAL, "pl_mesh_call: %s", msg);
    const pl_chip *chip = opt && opt->chip_spec ? opt->chip_spec : opt && opt->chip ? pl_chip_find(opt->chip)
                                                                              : pl_chip_default();
    /* an unknown chip name is reported by each device's call, as before */
    if (chip && !sim_chip_devices_ok(chip, pl_mesh_devices(mesh), msg, sizeof msg))
        return refuse(mr, PL_EINVAL, "pl_mesh_call: %s", msg);
    if (chip && mesh->dcn && !(chip->dcn_bw > 0 && chip->dcn_latency_s >= 0 && chip->chips_per_host >= 1)) {
        snprintf(msg, sizeof msg, "chip %s has no data-center network figures (dcn_gbps %.3g, dcn_latency_us %.3g, "
                 "chips_per_host %d), which a multislice mesh needs (rule M14): set them in its chip file, or start "
                 "it from a preset (base = v5e)", chip->name, chip->dcn_bw / 1e9, chip->dcn_latency_s * 1e6,
                 chip->chips_per_host);
        return refuse(mr, PL_EINVAL, "pl_mesh_call: %s", msg);
    }
    if (opt && opt->on_step && sim_mpi_size() > 1)
        return refuse(mr, PL_EINVAL, "pl_mesh_call: %s is not supported across processes yet",
                      "a recorder (on_step)");
    if ((call->num_scalar_prefetch + call->n_in > 0 && !args) || (call->n_out > 0 && !outs))
        return refuse(mr, PL_EINVAL, "pl_mesh_call: %s is NULL but the call has some", !outs ? "outs" : "args");
    mesh_run r = {.mesh = mesh, .n = pl_mesh_devices(mesh), .seed = opt ? opt->seed : 0,
                  .tracing = opt && opt->trace_path, .cost_only = opt && opt->cost_only,
                  .ranks = sim_mpi_size(), .rank = sim_mpi_rank(), .fibers = sim_fibers_wanted(), .run_unit = run_unit};
    r.first = (int)((int64_t)r.n * r.rank / r.ranks); /* contiguous blocks of devices per process */
    r.count = (int)((int64_t)r.n * (r.rank + 1) / r.ranks) - r.first;
    int traced = r.rank != 0 || open_trace(&r, call, opt, mr) == PL_OK; /* rank 0 writes the one trace */
    if (r.ranks > 1 && !sim_mesh_mpi_agree(&r, traced) && traced)
        return refuse(mr, PL_EINVAL, "pl_mesh_call: %s", "rank 0 cannot write the trace file (its message says why)");
    if (!traced) return mr->status;
    sim_exec **xs = calloc((size_t)r.n, sizeof *xs);
    if (!xs) {
        sim_out_abort(r.trace);
        return refuse(mr, PL_ENOMEM, "%s", "pl_mesh_call: out of host memory");
    }
    pthread_mutex_init(&r.lock, NULL);
    pthread_cond_init(&r.main_cond, NULL);
    sim_link_stats stats = {.busiest_link = -1};
    int rc = start_devices(&r, xs, call, args, outs, opt);
    /* NULL past SIM_MESH_RACE_MAX cores: not tracked */
    if (rc == PL_OK) r.race = sim_mesh_race_new(r.units);
    /* cost-only in one process, no copy's data waits for the detector's answer: it runs beside the walk
     * (race_queue.h); TILESIM_RACE_INLINE=1 keeps it in the walk, to compare */
    const char *inl = getenv("TILESIM_RACE_INLINE");
    if (r.race && r.cost_only && r.ranks == 1 && !(inl && strcmp(inl, "1") == 0))
        r.race_q = sim_race_queue_start(r.race, SIM_RACE_QUEUE_MAX);
    if (r.ranks > 1) rc = sim_mesh_mpi_begin(&r, rc); /* every process, or none, runs */
    if (rc == PL_OK) rc = run_devices(&r);
    end_devices(&r, xs, r.go > 0, mr, &stats);
    for (int d = 0; r.go <= 0 && mr->status && d < r.n; d++) /* no device ran: each report says so */
        if (xs[d] && !xs[d]->rep.status)
            sim_fail(&xs[d]->rep, mr->status, "device %d did not run: device %d's call failed first (%s)", d,
                     mr->failed_device, pl_strerror(mr->status));
    if (r.trace && mr->status == PL_OK) write_trace(&r, xs, mr);
    char tmsg[PL_MSG_MAX - 64];
    if (r.trace && mr->status == PL_OK) { /* the last bytes go at the close; then the rename */
        if (sim_out_commit(r.trace, tmsg, sizeof tmsg)) refuse(mr, PL_EINVAL, "pl_mesh_call: the trace file: %s", tmsg);
    } else sim_out_abort(r.trace); /* a failed call leaves an old trace as it was */
    if (rc != PL_OK && mr->status == PL_OK) refuse(mr, rc, "%s", "pl_mesh_call: out of host memory");
    rc = mr->status;
    for (int d = 0; d < r.n; d++) {
        if (xs[d]) sim_exec_delete(xs[d], reports ? &reports[d] : NULL);
        else if (reports) { /* every report is written: this device's call could not even be made */
            memset(&reports[d], 0, sizeof reports[d]);
            reports[d].status = PL_ENOMEM;
            snprintf(reports[d].error, sizeof reports[d].error, "device %d: out of host memory", d);
        }
    }
    sim_mesh_race_free(r.race);
    sim_mesh_mpi_free(&r);
    pthread_cond_destroy(&r.main_cond);
    for (int u = 0; r.dev && u < r.units; u++) pthread_cond_destroy(&r.dev[u].cond);
    pthread_mutex_destroy(&r.lock);
    free(r.dev);
    free(r.arg_base);
    free(r.arg_reach);
    free(xs);
    return rc;
}
