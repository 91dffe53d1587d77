/* examples/kernels/collective_matmul.h: the all-gather matmul (rules M7-M12)
 * run SPMD on every device of a ring by pl_mesh_call, in two versions.
 *
 * x (N m, k) f32 is sharded by rows over N devices (device d holds rows
 * d m .. d m + m - 1, in HBM: memory space ANY); w (k, n) f32 is on every
 * device. Every device ends with out = all_gather(x) @ w, (N m, n).
 *
 * Overlapped (cm_call(..., CM_OVERLAPPED, ...)): grid (N,). At step s a
 * device holds block (me - s) mod N of x in one of two VMEM slots; it
 * starts sending that block to its right neighbour's other slot, multiplies
 * it by w on the MXU into rows of out while the copy travels, then waits
 * for its send and for the block its left neighbour sent. A slot is refilled
 * only after the receiver says it is done with it (a capacity semaphore,
 * pltpu_semaphore_signal_device, M12): without it a fast left neighbour
 * would overwrite the block being multiplied.
 *
 * Unoverlapped (CM_GATHER_FIRST): the same ring gathers every block into a
 * VMEM buffer (N m, k) first, steps 0 .. N - 2, and step N - 1 multiplies
 * the whole of it by w: the communication and the MXU work one after the
 * other.
 *
 *     cm_shape s = {.devices = 8, .rows = 128, .k = 512, .cols = 2048};
 *     cm_data d;
 *     cm_alloc(&d, &s, 1, 7);
 *     pl_call call;
 *     cm_call(&call, &s, CM_OVERLAPPED, NULL);
 *     pl_mesh_call(&mesh, &call, d.args, d.outs, &opt, &mr, reports);
 *     pl_check chk;
 *     cm_check(&d, dev, &chk, stdout);   // PL_OK: device dev's out is x @ w
 *     cm_free(&d);
 */
#ifndef TILESIM_EXAMPLES_COLLECTIVE_MATMUL_H
#define TILESIM_EXAMPLES_COLLECTIVE_MATMUL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../../sim/tilesim.h"
#include "../../sim/tilesim_mesh.h"

typedef struct cm_shape {
    int devices;      /* N >= 2 */
    int64_t rows;     /* m: rows of x on one device */
    int64_t k;        /* columns of x, rows of w */
    int64_t cols;     /* n: columns of w and out */
} cm_shape;

typedef enum cm_version { CM_OVERLAPPED = 0, CM_GATHER_FIRST = 1 } cm_version;

/* call.user (NULL: none). no_handshake: the overlapped kernel without its
 * capacity semaphore, the bug it prevents (tests only). */
typedef struct cm_params {
    int no_handshake;
} cm_params;

/* The kernels; refs: x (ANY), w (VMEM, whole), out (VMEM, whole), then the
 * scratch of cm_call. */
void cm_overlapped_kernel(pl_ctx *c, pl_ref *refs);
void cm_gather_first_kernel(pl_ctx *c, pl_ref *refs);

/* PL_OK, or PL_EINVAL with msg saying what is wrong with s. */
int cm_shape_check(const cm_shape *s, char *msg, size_t n);
/* Describe the call of version v for s (a shape cm_shape_check accepts).
 * p, if not NULL, must outlive the call. */
void cm_call(pl_call *call, const cm_shape *s, cm_version v, const cm_params *p);

/* Per-device arrays: args[2 d], args[2 d + 1] are device d's x shard and
 * w; outs[d] its out. With data, x holds the whole (N m, k) x (device d's
 * shard at d m k), w one (k, n) that every device's w points to, out the N
 * outputs one after the other; without (cost-only) every pointer is NULL. */
typedef struct cm_data {
    cm_shape s;
    float *x, *w, *out;
    pl_array *args, *outs;
} cm_data;

/* PL_OK, PL_EINVAL (cm_shape_check) or PL_ENOMEM; x and w drawn from seed
 * in [-1, 1), out filled with NaN. cm_free releases what it allocated. */
int cm_alloc(cm_data *d, const cm_shape *s, int with_data, uint64_t seed);
void cm_free(cm_data *d);
/* Host bytes cm_alloc and cm_check need with data. */
double cm_host_bytes(const cm_shape *s);
/* Fill every out with NaN again (before another run on the same data). */
void cm_reset(cm_data *d);

/* Device dev's out against x @ w by OpenBLAS (pl_check_matmul; a verdict
 * line on f unless NULL): PL_OK on PASS or MARGINAL, PL_EVERIFY on FAIL,
 * PL_EINVAL without data. */
int cm_check(const cm_data *d, int dev, pl_check *chk, FILE *f);

/* MXU time of the whole product on one device, 2 N m k n FLOPs at the
 * chip's f32 MXU rate; and the ring's time to gather x, (N - 1) blocks of
 * m k f32 over one link direction. 0 if the chip lacks the figure. */
double cm_compute_s(const cm_shape *s, const pl_chip *chip);
double cm_comm_s(const cm_shape *s, const pl_chip *chip);

#endif
