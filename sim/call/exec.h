/* sim/call/exec.h: one running call. Internal.
 *
 * exec.c validates the call, fixes the order of the walk (the megacore
 * split of G4, a seeded shuffle of parallel axes, V4), has the TensorCores
 * walk (walk.c, each a sim_core of core.h), then times what they recorded
 * (timing.c). Everything here is set before the first core starts and only
 * read while cores walk; what a core finds goes into its own report first.
 */
#ifndef TILESIM_EXEC_H
#define TILESIM_EXEC_H

#include <pthread.h>
#include <stdio.h>

#include "../base/sim.h"
#include "../timing/timing.h"

struct sim_core;

/* A device of a mesh run (mesh_run.c): its number, and the hooks through
 * which the kernel layer reaches the other devices. run NULL: a call on
 * its own (pl_pallas_call). */
typedef struct sim_mesh_link {
    const kern_mesh_ops *ops;
    void *run;
    int device, n_devices;
} sim_mesh_link;

#define SIM_REMOTE_SLOTS 4
typedef struct sim_exec {
    sim_plan plan;
    pl_report rep;
    /* a mesh: remote copies that landed in each VMEM slot of each operand
     * (M11; slots past the last share it), counted by the sending device's
     * thread (atomics); an output block whose slot's count grew while it was
     * there (sim_pipe.remote_seen) was filled by another device and is not
     * called unwritten (P4) */
    int remote_written[SIM_MAX_OPS][SIM_REMOTE_SLOTS];
    /* options */
    pl_uninit uninit;
    int cost_only;
    int checks, strict;                        /* V1-V4 checks on; warnings as errors */
    int oob_poison, dma_on_wait;               /* V2, M7 */
    int host_threads;                          /* pl_options.host_threads */
    int tracing;
    struct sim_out *trace;                     /* pl_options.trace_path (outfile.h) */
    int64_t trace_limit;                       /* its size limit (sim_trace_limit) */
    pl_step_fn on_step;
    void *on_step_user;
    pl_step_info *info;                        /* what this step did, when on_step is set */

    /* the order of the walk (G1, G4, V4) */
    int n_cores;                               /* cores walked: > 1 on multi-core chips with a parallel axis (G4) */
    int split_axis;                            /* the axis cut between cores; -1: none */
    int64_t lo[SIM_MAX_CORES], hi[SIM_MAX_CORES]; /* each core's range of split_axis */
    int64_t step_base[SIM_MAX_CORES];          /* global number of each core's first step */
    int parallel_axes;                         /* parallel axes of size > 1 */
    int64_t *perm[PL_MAX_GRID];                /* seeded order of each parallel axis; NULL: in order */

    /* what the cores did */
    sim_coreline *lines;                       /* n_cores timelines, for the timing model */
    struct sim_core *cores[SIM_MAX_CORES];     /* while they walk */
    int threaded;                              /* they walk on host threads at once */
    pthread_mutex_t meet_lock;                 /* then: guards every core's V4 writers sets (checks.c) */
    double dot_flops[PL_DTYPE_COUNT];          /* MXU work per dtype, all cores */
    int barrier_taken;                         /* some core took the barrier semaphore (M15) */
    sim_mesh_link mesh;                        /* a device of a mesh run, or run NULL */
} sim_exec;

/* pl_pallas_call in three parts, for mesh_run.c, which walks many devices:
 * sim_exec_new validates and plans (x->rep.status says how it went; NULL
 * only when out of memory), sim_walk walks, sim_exec_finish checks P10 and
 * times the walk, sim_exec_delete copies the report out and frees. */
sim_exec *sim_exec_new(const pl_call *call, const pl_array *args, pl_array *outs, const pl_options *opt,
                       const sim_mesh_link *mesh);
void sim_exec_finish(sim_exec *x);
/* M15: a call that sets collective_id and whose kernel never took the
 * barrier semaphore (`taken`: on any core, of any device of a mesh) fails,
 * as Mosaic refuses it, unless it allows that. */
void sim_check_collective_id(sim_exec *x, int taken);
/* The devices of a mesh, once all have walked: P10 on each, then one replay
 * of all their timelines together (devices wait in time for each other's
 * copies and signals). Nothing is timed if a device failed. */
struct pl_mesh;
void sim_exec_finish_mesh(sim_exec **xs, int n, const struct pl_mesh *mesh, sim_link_stats *stats);
/* The mesh's report from its devices' (mesh_report.c); xs[d] may be NULL
 * past a device that failed to start. */
struct pl_mesh_report;
void sim_mesh_report(struct pl_mesh_report *mr, sim_exec *const *xs, int n, const struct pl_mesh *mesh,
                     const sim_link_stats *st);
void sim_exec_delete(sim_exec *x, pl_report *report);
/* A call refused before it becomes a pallas_call (pl_kernel's mesh, K5):
 * report (if any) and pl_last_error() say msg, as a failed call's do.
 * Returns code. */
int sim_exec_refuse(pl_report *report, const char *call_name, const pl_chip *chip, int code, const char *msg);

/* G4: cut an axis of `size` indices into `cores` contiguous chunks [lo, hi)
 * of ceil(size / cores) each, as JAX does (the last may be short or empty;
 * exec.c). Returns how many chunks are not empty. */
int sim_split_axis(int64_t size, int cores, int64_t *lo, int64_t *hi);

/* The grid point of a global step (each core's steps follow the previous
 * core's), seeded order applied (common.c). */
void sim_point_of_step(const sim_exec *x, int64_t step, int64_t *idx);

/* Walk the grid on every core (G1, G4), running the pipeline and the kernel,
 * and merge the cores' reports into x->rep (walk.c). */
int sim_walk(sim_exec *x);
/* The cores and their timelines (walk.c; free_exec calls it). */
void sim_walk_free(sim_exec *x);
/* A device of a mesh walks in three parts (mesh_run.c): every device
 * starts (buffers, scratch, semaphores of each of its cores) before any
 * runs a step, as another device may copy into it from its first step;
 * the steps of each core, the cores on host threads of their own at once
 * (M13); and, once every device is done, the M10 check (signals may come
 * until then) and the merge into x->rep. Each returns x's or the core's
 * status. */
int sim_walk_device_start(sim_exec *x);
int sim_walk_device_steps(sim_exec *x, int core);
int sim_walk_device_end(sim_exec *x);

/* Record a finding in the report (and its warning; checks.c). */
/* Outputs in memory space ANY not aliased to an input (any_outputs.c): poisoned
 * as the call starts (V1); after the walk a NaN in one is V1's finding
 * (PL_EPOISON under strict). */
void sim_any_outputs_poison(sim_exec *x);
/* The first of n elements of dtype t at p that is NaN (an integer: its
 * poison value), or -1 (checks.c: a pass that vectorizes, then the place). */
int64_t sim_nan_in(const void *p, pl_dtype t, int64_t n);
int sim_any_outputs_check(sim_exec *x);
void sim_add_finding(pl_report *rep, pl_finding_kind kind, const char *rule, int operand, const int64_t *point,
                     int grid_rank, const int64_t *block, int rank, const char *msg);

#endif
