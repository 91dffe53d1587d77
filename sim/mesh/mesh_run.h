/* sim/mesh/mesh_run.h: the state of one pl_mesh_call, shared by mesh_run.c (a
 * process's devices, each on a host thread) and mesh_mpi.c (devices in
 * other processes, reached over Open MPI). Internal.
 *
 * A mesh of n devices runs in one process, or (the `make mpi` build under
 * mpirun) on R ranks, each running a contiguous block of the devices
 * [first, first + count). Every process plans every device's call (the
 * plans are the same everywhere; a device run elsewhere is a shadow whose
 * records and report arrive at the end), so that a Ref of any device can
 * be named and rank 0 can replay the timing of all of them together.
 */
#ifndef TILESIM_MESH_RUN_H
#define TILESIM_MESH_RUN_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "../call/exec.h"
#include "mesh_race.h"
#include "race_queue.h"
#include "../tilesim_mesh.h"

#define SIM_MESH_WHAT 512

/* One TensorCore of a device of the mesh, on a host thread of its own: a
 * unit (kern_mesh_ops), device x cores + core. A device whose call walks
 * on one core is one unit. */
#define SIM_MESH_SEEN 8
typedef struct mesh_dev {
    struct mesh_run *run;
    sim_exec *x;            /* its device's call (shared by the device's cores) */
    int device, core;
    uint64_t rng;           /* the seeded schedule's yields */
    int blocked, done;      /* done: its walk ended (mesh_mpi.c asks) */
    const int64_t *cell;    /* what it waits for: *cell >= need */
    int64_t need;
    kern_wait wait;         /* its pending wait (wait.c: not yet in words) */
    char what[SIM_MESH_WHAT]; /* ... in words, for the deadlock message (sim_mesh_dev_what) */
    int64_t held;           /* what *cell held when the deadlock was declared, for its message */
    const int64_t *poll_cell; /* the semaphore its kernel polls (pltpu_semaphore_read) and what it read */
    int64_t poll_value, polls; /* polls: reads of that value in a row */
    int polling;            /* it read the same count POLL_QUIET times in a row and added to no semaphore since:
                               it can wake no one, as a blocked core cannot (counted in mesh_run.polling) */
    pthread_t tid;          /* thread mode: its host thread */
    pthread_cond_t cond;    /* thread mode: its waits sleep here; woken when one of its semaphores grows */
    struct sim_fiber *fiber; /* fiber mode: its stack and context (mesh_fiber.c) */
    char overflow[256];     /* a signal from another process overflowed a semaphore here (M9) */
    /* the regions its kernel touched since its last event, told the race detector once: an access
     * of the same bytes again has the same epoch (mesh_race.h) */
    uintptr_t seen[SIM_MESH_SEEN][2];
    unsigned char seen_write[SIM_MESH_SEEN];
    int n_seen;
    int no_handshake;       /* it copied into another device's VMEM before hearing from it: said once (M15) */
} mesh_dev;

struct sim_mesh_mpi;

typedef struct mesh_run {
    const pl_mesh *mesh;
    int n;                  /* devices */
    int cores, units;       /* TensorCores each device's call walks on (G4, M13); units = n x cores */
    mesh_dev *dev;          /* per unit */
    pthread_mutex_t lock;
    int alive, blocked, deadlock;
    int polling;            /* live cores polling a count that holds still (mesh_dev.polling) */
    char deadlock_msg[PL_KERN_MESH_MSG];
    uint64_t seed;
    sim_mesh_race *race;    /* V4 between devices (mesh_race.h) */
    sim_race_queue *race_q; /* cost-only in one process: race's events applied on a thread of its own */
    /* units x n_args: where each unit's arguments start (sim_mesh_arg_base), kept in one table: every
     * remote op translates, and a big mesh's devices are cold in the host's caches. The units here fill
     * their rows at start; across processes every process learns every row (its address there:
     * sim_mesh_mpi_begin). arg_reach: which arguments other devices can name (sim_mesh_reachable; one
     * plan for all) */
    uintptr_t *arg_base;
    unsigned char *arg_reach;
    int n_args;
    int go;                 /* 0: threads wait to start; 1: run; -1: a thread could not be made, none runs */
    struct sim_out *trace;  /* pl_options.trace_path, open (rank 0 only; outfile.h) */
    int64_t trace_limit;    /* its size limit (sim_trace_limit) */
    int tracing;            /* the devices record what a trace needs */
    int cost_only;
    /* the devices this process runs; ranks > 1: the others are in other processes */
    int first, count, ranks, rank;
    struct sim_mesh_mpi *mpi;   /* mesh_mpi.c, when ranks > 1 */
    pthread_cond_t main_cond;   /* the calling thread (which moves the messages) sleeps here */
    /* fiber mode (mesh_fiber.h): the cores are fibers on n_pools host threads */
    int fibers;
    void (*run_unit)(mesh_dev *d); /* a unit's walk and its end (mesh_run.c), lock not held */
    struct sim_fiber *fibers_of;
    struct sim_fiber_pool *pools;
    int n_pools;
    char stack_note[160];       /* what the crash guard says of an overflow of a fiber's stack */
} mesh_run;

static inline int sim_mesh_here(const mesh_run *r, int device)
{
    return device >= r->first && device < r->first + r->count;
}

/* "device 3", or "core 1 of device 3" on devices of several cores */
const char *sim_mesh_unit_name(const mesh_run *r, int unit, char *buf, size_t n);

/* mesh_hooks.c: the hooks every device's call reaches the mesh through */
extern const kern_mesh_ops sim_mesh_hooks;
/* Every core looks again (a deadlock, a core that ended); lock held. */
void sim_mesh_wake_all(mesh_run *r);
/* A semaphore of `unit` (of this process) grew: if it waits, it looks again; lock held. */
void sim_mesh_wake_unit(mesh_run *r, int unit);
/* Declare a deadlock when every core still running is blocked on a wait
 * still short (lock held; across processes, wake the calling thread). */
void sim_mesh_find_deadlock(mesh_run *r);
/* Lock held: core d did something besides polling a semaphore (mesh_hooks.c, run_poll). */
void sim_mesh_unpoll(mesh_run *r, mesh_dev *d);
/* Can other devices name argument `arg`? (an ANY operand, scratch, or a
 * pipelined VMEM block, slot for slot) */
int sim_mesh_reachable(const sim_exec *x, int arg);
/* Where argument `arg` of core `core` of a device starts, as remote Refs
 * are translated: a pipelined block's first slot, else its buffer. */
uintptr_t sim_mesh_arg_base(const sim_exec *x, int core, int arg);
/* After every device here started: r->arg_base and r->arg_reach; PL_ENOMEM when out of memory. */
int sim_mesh_keep_bases(mesh_run *r);
/* Where argument `arg` of `unit` starts, here or (across processes) there; 0 for an argument out of range */
static inline uintptr_t sim_mesh_base(const mesh_run *r, int unit, int arg)
{
    return arg >= 0 && arg < r->n_args ? r->arg_base[(size_t)unit * (size_t)r->n_args + (size_t)arg] : 0;
}
/* A remote copy landed `offset` bytes into argument `arg` of device x:
 * count it on the slot there (sim_exec.remote_written; any thread). */
void sim_mesh_landed(sim_exec *x, int arg, uintptr_t offset);
/* Bytes [lo, hi) of argument `arg` of `unit` as the race detector keys them; 0: unreachable */
int sim_mesh_region(const mesh_run *r, int unit, int arg, uintptr_t *lo, uintptr_t *hi);
/* The deadlock message from every device's blocked/what/held (lock held or
 * threads stopped); sets r->deadlock and wakes this process's devices. */
void sim_mesh_declare_deadlock(mesh_run *r);
/* d's pending wait in words, into d->what, once (lock held). */
void sim_mesh_dev_what(mesh_dev *d);

/* mesh_mpi.c: all but begin/end are called only when r->ranks > 1 */
/* Before the threads: agree on whether every rank started its devices
 * (the status, the same on all), and learn where every device's arguments
 * are. */
int sim_mesh_mpi_begin(mesh_run *r, int status);
/* 1 when every process could do its part (ok on each), else 0 */
int sim_mesh_mpi_agree(mesh_run *r, int ok);
/* After the threads: every process learns the races every other found
 * (sim_mesh_race_consider), so that all report the same first one. */
void sim_mesh_mpi_races(mesh_run *r);
/* A copy (or signal: dst NULL) to a device of another process, from a
 * device thread; lock not held. */
void sim_mesh_mpi_post(mesh_run *r, int from, int to, const pl_ref *src, const pl_ref *dst, int recv_arg,
                       uintptr_t recv_off, int64_t amount, const char *point);
/* On the calling thread, while the devices run: move messages until no
 * device of any process can run again; then a deadlock is declared on every
 * process alike. */
void sim_mesh_mpi_progress(mesh_run *r);
/* After the threads: the races and the devices' reports and records meet on
 * rank 0, which times them all (sim_exec_finish_mesh) and makes the mesh's
 * report; every rank ends with every report. */
void sim_mesh_mpi_finish(mesh_run *r, sim_exec **xs, int ran, pl_mesh_report *mr, sim_link_stats *stats);
void sim_mesh_mpi_free(mesh_run *r);

/* mesh_ship.c: a device's report and records as bytes, for another process */
typedef struct sim_buf {
    char *p;
    size_t n, cap;
    int bad;                /* out of memory */
} sim_buf;
void sim_buf_put(sim_buf *b, const void *v, size_t n);
void sim_ship_device(sim_buf *b, const sim_exec *x, int with_lines);
/* Read one device's bytes at *at (moved past them) into x; PL_OK or
 * PL_ENOMEM / PL_EINVAL (truncated). chip: this process's. */
int sim_unship_device(const char **at, const char *end, sim_exec *x);

#endif
