/* sim/tilesim_mesh.h: meshes of devices, and one call run SPMD on every
 * device of a mesh, as shard_map + pallas_call does (rules M11, M12).
 *
 * A mesh is a device count with a shape of 1 to 3 named axes (a ring of 8,
 * a 4x4 torus, a 4x4x4 torus), each axis wrapping around or not. Devices
 * are numbered row-major over the axes, last axis fastest. Every device has
 * its own HBM arrays (its shard of each argument and output), VMEM, SMEM
 * and semaphores, and runs the same kernel over its own grid; the kernel
 * finds its place with pltpu_device_id / pltpu_axis_index (kernel/pltpu.h)
 * and talks to other devices with remote copies and remote signals.
 *
 *     pl_mesh mesh;
 *     char msg[256];
 *     pl_mesh_parse("ring:8", &mesh, msg, sizeof msg);     // 8 devices, axis "x", wrapping
 *     // args: 8 x n_args arrays (device 0's, then device 1's, ...); outs likewise
 *     pl_mesh_report mr;
 *     int rc = pl_mesh_call(&mesh, &call, args, outs, &opt, &mr, reports);
 *
 * Every device runs at once: as fibers on a pool of host threads (one per
 * CPU), or with TILESIM_MESH_THREADS=1 each on a host thread of its own
 * (docs/meshes.md). A wait blocks until another
 * device's copy or signal satisfies it; when every device still running is
 * blocked, that is a deadlock, reported with each device's pending wait and
 * grid point (PL_EDEADLOCK), never a hang.
 */
#ifndef TILESIM_MESH_H
#define TILESIM_MESH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* defined in sim/tilesim.h (a typedef may be repeated, in C11 and C++) */
typedef struct pl_array pl_array;
typedef struct pl_call pl_call;
typedef struct pl_options pl_options;
typedef struct pl_report pl_report;

#define PL_MESH_MAX_AXES 4 /* a slice's torus has at most 3; a multislice mesh adds the DCN axis */
#define PL_MESH_MAX_DEVICES 4096
#define PL_MESH_AXIS_NAME 16
#define PL_MESH_MAX_SLICES 16 /* slices of a multislice mesh (its DCN axis, M14) */

typedef struct pl_mesh {
    int rank;                                   /* axes: 1 to PL_MESH_MAX_AXES */
    int64_t shape[PL_MESH_MAX_AXES];            /* devices along each axis, >= 1 */
    char axis[PL_MESH_MAX_AXES][PL_MESH_AXIS_NAME]; /* names: "x", "y", "z" unless given */
    uint8_t wrap[PL_MESH_MAX_AXES];             /* 1: the axis is a ring (torus link from last to first) */
    /* 1: a multislice mesh (rule M14). Axis 0 is the data-center network
     * (DCN): its coordinate is the slice, and it has no ICI links (wrap[0]
     * is 0); the other axes are each slice's ICI torus, the same in every
     * slice. A copy between two slices leaves by its chip's host NIC and
     * arrives by the other's, over DCN; a copy within a slice crosses ICI
     * links. 0: one slice, every axis ICI. */
    uint8_t dcn;
} pl_mesh;

/* Parse a mesh: "8" or "ring:8" (a ring of 8), "line:8" (no wrap-around),
 * "4x4", "4x4x4" (tori: every axis wraps), with axis names as "x=4,y=4"
 * (also "ring:x=8"). Several slices joined over DCN (M14): "dcn:4 x 16x16"
 * (4 slices, each a 16x16 torus; axis "dcn", then x and y), "dcn:data=2 x
 * ring:8" (the DCN axis named). PL_OK, or PL_EINVAL with msg saying what is
 * wrong. */
int pl_mesh_parse(const char *text, pl_mesh *mesh, char *msg, size_t n);
/* Check a mesh built by hand: PL_OK or PL_EINVAL with msg. */
int pl_mesh_check(const pl_mesh *mesh, char *msg, size_t n);
/* Devices of the mesh (the product of its shape). */
int pl_mesh_devices(const pl_mesh *mesh);
/* Slices of a multislice mesh (its DCN axis's size); 1 for one slice, 0
 * for an invalid mesh. The slice of a device: its coordinate on axis 0 of
 * a multislice mesh, else 0 (-1 for a bad device). */
int pl_mesh_slices(const pl_mesh *mesh);
int pl_mesh_slice_of(const pl_mesh *mesh, int device);
/* Device number <-> coordinates (row-major, last axis fastest). */
void pl_mesh_coords(const pl_mesh *mesh, int device, int64_t *coords);
int pl_mesh_device(const pl_mesh *mesh, const int64_t *coords);
/* Links a copy from `from` to `to` crosses: dimension-ordered routing (axis
 * 0 first), the shorter way round on a wrapping axis (ties: the positive
 * way). A neighbour is one hop. Between two slices of a multislice mesh: 2,
 * the sender's DCN port and the receiver's. */
int pl_mesh_hops(const pl_mesh *mesh, int from, int to);
/* The axis named `name`, or -1. */
int pl_mesh_axis(const pl_mesh *mesh, const char *name);
/* "ring of 8 (x)", "4x4 torus (x, y)" into buf; returns buf. */
const char *pl_mesh_format(const pl_mesh *mesh, char *buf, size_t n);

/* What a mesh call did, over all devices. */
#define PL_MESH_BUSY 10 /* PL_BOUND_COUNT of sim/tilesim.h, which this header does not include */
typedef struct pl_mesh_report {
    int status;                 /* what pl_mesh_call returned */
    char error[2048];           /* the first failing device's message (a deadlock: every stuck device) */
    int failed_device;          /* that device, or -1 */
    int n_devices;
    double time_s;              /* the slowest device's time */
    int64_t remote_copies;      /* copies to other devices, all devices */
    int64_t ici_bytes;          /* bytes they sent */
    /* the links (rule M11): each copy crosses the links of its route */
    double link_bytes;          /* bytes x links crossed, all copies */
    int links_used;             /* directed links that carried bytes */
    double ici_bw_achieved;     /* link_bytes / (links_used x time_s): bytes/s per link in use */
    double ici_bw_fraction;     /* of a link's peak (pl_chip.ici_bw) */
    double busiest_link_s;      /* the busiest link's bytes / its bandwidth: a floor on time_s */
    double compute_s;           /* the busiest device's kernel time (MXU + VPU + scalar) */
    double hbm_s;               /* the busiest device's HBM bytes / HBM bandwidth */
    double remote_wait_s;       /* the longest any device waited for other devices' copies and signals */
    int ici_bound;              /* 1: bound is PL_BOUND_ICI */
    /* busy[b]: the fraction of time_s resource b was busy (0-1), indexed by pl_bound: per device as in its
       pl_report, the busiest device's; ICI: the busiest link; latency: time neither the devices' own work nor
       the busiest link nor HBM explains (copies' and hops' latencies and the waits they set off) */
    double busy[PL_MESH_BUSY];
    int bound;                  /* a pl_bound: the largest of busy (sim/timing/bound.c's one rule); 0: no copies */
    char bound_msg[512];        /* the bound in one sentence */
    int ranks;                  /* processes the devices ran in (Open MPI ranks; 1: this one) */
    int64_t rank_messages;      /* copies and signals that went from one process to another */
    /* the data-center network of a multislice mesh (rule M14; the Megascale view); 0 on one slice */
    int slices;                 /* 1: one slice */
    int64_t dcn_copies;         /* copies between slices */
    double dcn_bytes;           /* their bytes */
    double dcn_pair_bytes[PL_MESH_MAX_SLICES][PL_MESH_MAX_SLICES]; /* [from slice][to slice] */
    double dcn_busiest_s;       /* the busiest host NIC's bytes (one way) / its bandwidth: a floor on time_s;
                                   busy[PL_BOUND_DCN] is it over time_s */
    double dcn_wait_s;          /* the longest any device waited for copies that came over DCN */
} pl_mesh_report;

/* The mesh report as text: per device its time, compute, copies and bytes
 * over ICI; then the mesh's time, link bandwidth and bound. reports: the n
 * per-device reports pl_mesh_call filled (or NULL: the mesh lines only).
 * Any thread. */
void pl_mesh_report_print(const pl_mesh_report *mr, const pl_report *reports, FILE *f);

/* Run `call` on every device of `mesh`. args holds, per device, the
 * call's num_scalar_prefetch + n_in arrays (device d's at
 * args[d * (num_scalar_prefetch + n_in)]); outs holds n_out arrays per
 * device likewise. reports: one pl_report per device, or NULL. opt as for
 * pl_pallas_call (chip, checks, cost_only, ...; opt->seed also perturbs
 * the order in which device threads run, to show that results do not
 * depend on it). Returns PL_OK or the first failing device's code (in
 * device order, a kernel's own error before a deadlock it caused).
 * Lifetimes as pl_pallas_call; the kernel runs on one host thread per
 * device, all at once. A recorder (opt->on_step, e.g. pl_memview_recorder)
 * sees device 0's steps, the buffers every device of the SPMD call has, on
 * device 0's thread while the caller waits in pl_mesh_call (one process
 * only; across MPI ranks it is refused). */
int pl_mesh_call(const pl_mesh *mesh, const pl_call *call, const pl_array *args, pl_array *outs,
                 const pl_options *opt, pl_mesh_report *report, pl_report *reports);

/* Across Open MPI ranks. In a program built against libtilesim_mpi.a (the
 * `make mpi` build) and started by mpirun, with MPI initialised by
 * MPI_Init_thread(..., MPI_THREAD_FUNNELED, ...) before, every rank calls
 * pl_mesh_call with the same arguments, from its main thread. Each rank
 * runs a contiguous block of the devices on its threads; copies and
 * signals between ranks travel as MPI messages. Every rank returns the
 * same code and holds every device's report and the same mesh report,
 * timed as one process would; rank 0 writes the trace. Outputs are
 * written only where their device ran, and the arrays of a device that
 * runs elsewhere are never read: their data may be NULL, so that each rank
 * needs host memory for its own devices' arrays only.
 *
 * The devices this process runs: [*first, *first + *count). Without MPI
 * (or with one rank): 0 and every device. */
void pl_mesh_local_devices(const pl_mesh *mesh, int *first, int *count);
/* Share numbers each process worked out for its own devices (checks of
 * their outputs, say): v holds per_device doubles per device (device d's
 * at v[d * per_device]), those of this process's devices filled in; after
 * the call every process holds every device's. All ranks call it. PL_OK,
 * PL_EINVAL (NULL mesh or v, per_device < 1) or PL_ENOMEM. */
int pl_mesh_share(const pl_mesh *mesh, double *v, int per_device);

#ifdef __cplusplus
}
#endif
#endif
