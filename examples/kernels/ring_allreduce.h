/* examples/kernels/ring_allreduce.h: a ring all-reduce (rules M7-M12) as a
 * bidirectional reduce-scatter followed by a bidirectional all-gather, run
 * SPMD on every device of a ring by pl_mesh_call (sim/tilesim_mesh.h).
 * With ar_shape.directions = 1 it is the textbook one-way ring: every
 * shard whole, to the right only, half the copies of twice the size.
 *
 * Every device holds x (rows, cols) f32 and ends with o (rows, cols) f32,
 * the elementwise sum of the N devices' x; both stay in HBM (memory space
 * ANY). The rows are cut into N shards, and every shard into two halves:
 * the first half of each shard travels to the right round the ring, the
 * second to the left, so both directions of every link carry data at once.
 *
 * Grid (2 (N - 1),), arbitrary. Steps 0 .. N - 2 reduce-scatter: at step s
 * a device sends its running sum of the first half of shard me - s - 1 to
 * its right neighbour (of the second half of shard me + s + 1 to its left
 * one), receives the running sum of the next shard from the other side
 * into a VMEM slot, and adds its own x (loaded from HBM by a local DMA) in
 * f32. After N - 1 steps it holds the full sum of shard me and stores it
 * into its o. Steps N - 1 .. 2 N - 3 all-gather o's shards as
 * ring_allgather.h does, the halves again each their own way.
 *
 * The receive slots are double-buffered and reused, so the sender waits for
 * a capacity semaphore that the receiver signals once it has read a slot
 * (pltpu_semaphore_signal_device), as the distributed Pallas guide does
 * (M12); the all-gather writes every slot of o once and needs none. Here,
 * with two slots and both directions in one step, the other direction's
 * data happens to order a refill after the read already (the refilling
 * neighbour first waits for what this device sends it after its add); the
 * handshake keeps the kernel right without that coincidence, and with one
 * slot it is needed outright (ar_params.single_slot drops it: wrong sums).
 *
 *     ar_shape s = {.devices = 8, .rows = 1024, .cols = 1024};
 *     ar_data d;
 *     ar_alloc(&d, &s, 1, 42);
 *     pl_call call;
 *     ar_call(&call, &s, NULL);
 *     pl_mesh_call(&mesh, &call, d.args, d.outs, &opt, &mr, reports);
 *     ar_error e;
 *     ar_verify(&d, &e);          // e.ok: every device holds the sum
 *     ar_free(&d);
 */
#ifndef TILESIM_EXAMPLES_RING_ALLREDUCE_H
#define TILESIM_EXAMPLES_RING_ALLREDUCE_H

#include <stddef.h>
#include <stdint.h>

#include "../../sim/tilesim.h"
#include "../../sim/tilesim_mesh.h"

/* What o holds before the call: an element the ring never wrote keeps it. */
#define AR_SENTINEL (-4242.25f)

typedef struct ar_shape {
    int devices;      /* N >= 2: the ring's length */
    int64_t rows;     /* of x and o on every device: a multiple of 2 N (N shards of two halves; of N one way) */
    int64_t cols;
    int directions;   /* 2 (or 0): both ways round the ring; 1: one way, the textbook ring (2 N (N - 1) copies, not 4) */
} ar_shape;

/* call.user (NULL: none). single_slot: one receive slot per direction and
 * no capacity handshake, the bug the handshake prevents: a sender may
 * overwrite a slot its neighbour has not read yet (tests only). */
typedef struct ar_params {
    int single_slot;
} ar_params;

/* The kernel; refs: x (ANY), o (ANY), then the scratch of ar_call. */
void ar_kernel(pl_ctx *c, pl_ref *refs);

/* Describe the call for s (call a shape ar_shape_check accepts). p, if not
 * NULL, must outlive the call. */
void ar_call(pl_call *call, const ar_shape *s, const ar_params *p);

/* PL_OK, or PL_EINVAL with msg saying what is wrong with s. */
int ar_shape_check(const ar_shape *s, char *msg, size_t n);
/* s's ring directions: 1 or 2. */
int ar_directions(const ar_shape *s);

/* The per-device arrays: args[d] is device d's x, outs[d] its o. With data,
 * x holds the N inputs one after the other (device d's at d * rows * cols),
 * o the N outputs likewise, filled with AR_SENTINEL; without (cost-only)
 * every data pointer is NULL. */
typedef struct ar_data {
    ar_shape s;
    float *x, *o;
    pl_array *args, *outs;
} ar_data;

/* PL_OK, PL_EINVAL (ar_shape_check) or PL_ENOMEM. Values drawn from seed,
 * in [-1, 1) with 23 fraction bits, different on every device, so that the
 * sums round. ar_free releases what it allocated. */
int ar_alloc(ar_data *d, const ar_shape *s, int with_data, uint64_t seed);
void ar_free(ar_data *d);
/* Host bytes ar_alloc and ar_verify need with data. */
double ar_host_bytes(const ar_shape *s);

/* The reference: the elementwise sum over devices, in double, into ref
 * (rows * cols); and the sum of the magnitudes into mag (NULL: not wanted). */
void ar_reference(const ar_data *d, double *ref, double *mag);

/* How far the devices' o are from the reference. An element passes when
 * |o - ref| <= (N - 1) u sum_d |x_d| (u = 2^-24), the error bound of any
 * order of N - 1 f32 additions; norm_err is the largest |o - ref| over that
 * bound (<= 1: every element passes). */
typedef struct ar_error {
    int ok;                   /* 1: every element of every device passes */
    int64_t bad;              /* elements that do not, all devices */
    int first_device;         /* the first failing element's device and index (-1: none) */
    int64_t first_elem;
    double max_abs_err, norm_err;
} ar_error;
/* PL_OK (e filled), PL_EINVAL without data, PL_ENOMEM. dev >= 0: only that
 * device; -1: all. */
int ar_verify(const ar_data *d, int dev, ar_error *e);
/* Device dev's o added into e (bad, max_abs_err, norm_err, the first bad element) against a reference
 * ar_reference computed once: checking many devices of a big mesh, compute it once. */
void ar_verify_device(const ar_data *d, int dev, const double *ref, const double *mag, ar_error *e);

/* The closed form of the ring all-reduce: every device sends 2 (N - 1) / N
 * of its bytes (reduce-scatter, then all-gather), split over `directions`
 * link directions (2: the bidirectional ring; 1: one direction at a time),
 * each at the chip's one-way link bandwidth. 0 if the chip has no ICI. */
double ar_closed_form_s(const ar_shape *s, const pl_chip *chip, int directions);

#endif
