/* examples/kernels/ring_allgather.h: a ring all-gather (rules M11, M12) as
 * the distributed Pallas guide writes it, run SPMD on every device of a mesh
 * by pl_mesh_call (sim/tilesim_mesh.h).
 *
 * Each of N devices holds a shard x (rows, cols) f32 and ends with o
 * (N * rows, cols), the shards of devices 0 .. N-1 one after the other. Both
 * stay in HBM (memory space ANY, rule T5). The grid is (N - 1,): at step 0 a
 * device copies its own shard into its slot of o (a local DMA, M7); at step
 * s it sends the slot it received last, (me - s) mod N, into the same slot
 * of its right neighbour's o (pltpu_make_async_remote_copy), and waits for
 * its send and for the shard its left neighbour sent it. Every step has its
 * own receive semaphore, so that a fast left neighbour's next copy never
 * counts toward this step's wait (M12).
 *
 *     ra_shape s = {.devices = 8, .rows = 256, .cols = 1024};
 *     ra_data d;
 *     ra_alloc(&d, &s, 1, 42);                // shards drawn from seed 42, o filled with RA_SENTINEL
 *     pl_call call;
 *     ra_call(&call, &s, NULL);
 *     pl_mesh_call(&mesh, &call, d.args, d.outs, &opt, &mr, reports);
 *     int64_t bad = ra_mismatches(&d, &dev, &elem);   // 0: every device holds the concatenation
 *     ra_free(&d);
 */
#ifndef TILESIM_EXAMPLES_RING_ALLGATHER_H
#define TILESIM_EXAMPLES_RING_ALLGATHER_H

#include <stdint.h>

#include "../../sim/tilesim.h"
#include "../../sim/tilesim_mesh.h"

/* What o holds before the call: a slot the ring never filled keeps it. */
#define RA_SENTINEL (-12345.5f)

typedef struct ra_shape {
    int devices;      /* N >= 2: the ring's length and pl_mesh_devices of the mesh */
    int64_t rows;     /* of one shard */
    int64_t cols;
} ra_shape;

/* call.user of the all-gather (NULL: none). forgetful: the device that
 * "forgets" to start its sends but still waits for what it receives, the
 * bug of examples/deadlock.c (-1: none). */
typedef struct ra_params {
    int forgetful;
} ra_params;

/* The kernel; refs: x (ANY), o (ANY), local_sem, send_sem (DMA, 1 each),
 * recv_sems (DMA, N - 1). */
void ra_kernel(pl_ctx *c, pl_ref *refs);

/* Describe the call for shape s (grid (N - 1,), inputs and outputs in ANY).
 * p, if not NULL, must outlive the call. */
void ra_call(pl_call *call, const ra_shape *s, const ra_params *p);

/* The per-device arrays of a run: args[d] is device d's shard (rows, cols),
 * outs[d] its o (N * rows, cols). With data, x holds the N shards one after
 * the other (device d's at d * rows * cols) and o the N outputs likewise,
 * filled with RA_SENTINEL; without (cost-only), every data pointer is NULL. */
typedef struct ra_data {
    ra_shape s;
    float *x, *o;
    pl_array *args, *outs;
} ra_data;

/* PL_OK, PL_EINVAL for a shape that is not a ring (devices < 2, rows or
 * cols < 1), or PL_ENOMEM. The shards are drawn from seed (values exact in
 * f32, different on every device). ra_free releases what it allocated. */
int ra_alloc(ra_data *d, const ra_shape *s, int with_data, uint64_t seed);
void ra_free(ra_data *d);
/* Host bytes ra_alloc needs with data: for a memory check before it. */
double ra_host_bytes(const ra_shape *s);

/* The reference: the N shards concatenated, (N * rows, cols), into out. */
void ra_reference(const ra_data *d, float *out);
/* Elements of the devices' o that differ (bitwise) from the reference,
 * counting every device; the first one's device and element index in
 * *device and *elem (-1 when none). -1 if there is no data or no memory. */
int64_t ra_mismatches(const ra_data *d, int *device, int64_t *elem);
/* Elements of device dev's o that differ from the reference (-1: no data). */
int64_t ra_device_mismatches(const ra_data *d, int dev);

/* The closed form of a ring all-gather on one link direction: every device
 * sends N - 1 shards over its link to the right, (N - 1) / N of the total
 * bytes over the link's one-way bandwidth. 0 if the chip has no ICI. */
double ra_closed_form_s(const ra_shape *s, const pl_chip *chip);

#endif
