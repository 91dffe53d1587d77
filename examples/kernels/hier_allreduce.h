/* examples/kernels/hier_allreduce.h: a hierarchical all-reduce over a
 * multislice mesh (rule M14): the slices' chips talk over ICI, the slices
 * over the data-center network (DCN), which is an order of magnitude
 * slower, so the bytes that cross it are cut to the least.
 *
 * The mesh is "dcn:S x SLICE" with P devices a slice (device d is in-slice
 * index i = d % P of slice j = d / P). Every device holds x (rows, cols)
 * f32 and ends with o, the elementwise sum over all S P devices; x and o
 * stay in HBM (ANY). The rows are P chunks of h1 = rows / P, each chunk S
 * pieces of h2 = h1 / S. One call, grid (2 (P - 1) + 2 (S - 1),),
 * arbitrary, in four phases, each a one-way ring:
 *   1. reduce-scatter in the slice over ICI (P - 1 steps): device i ends
 *      with its slice's sum of chunk i, in VMEM;
 *   2. reduce-scatter of that chunk across the slices over DCN (S - 1
 *      steps, a ring of the S devices of in-slice index i): device (j, i)
 *      ends with the full sum of piece j of chunk i, and stores it in o;
 *   3. all-gather of chunk i's pieces across the slices over DCN (S - 1);
 *   4. all-gather of the chunks in the slice over ICI (P - 1).
 * So each device sends 2 (S - 1) / S x its bytes / P over DCN, against
 * about 2 (N - 1) / N x its bytes for the devices at the slice boundaries
 * of a flat ring over all N devices, and the P devices of a slice spread
 * it over all the slice's hosts' NICs instead of one.
 *
 * Every remote copy of the reduce-scatters lands in a receive slot of its
 * own (a slot a step: no slot is refilled, so no capacity handshake, M12),
 * which costs VMEM: (P - 1) h1 + (S - 1) h2 rows of cols f32.
 *
 *     ha_shape s = {.slices = 2, .per_slice = 8, .rows = 1024, .cols = 1024};
 *     pl_call call;
 *     ha_call(&call, &s);
 *     pl_mesh_call(&mesh, &call, d.args, d.outs, &opt, &mr, reports);  // d: ar_alloc's arrays
 */
#ifndef TILESIM_EXAMPLES_HIER_ALLREDUCE_H
#define TILESIM_EXAMPLES_HIER_ALLREDUCE_H

#include <stddef.h>
#include <stdint.h>

#include "../../sim/tilesim.h"

typedef struct ha_shape {
    int slices;        /* S >= 1: the mesh's DCN axis */
    int per_slice;     /* P >= 1: devices a slice; S P >= 2 */
    int64_t rows;      /* a multiple of 8 S P (each piece whole (8, 128) tiles of rows), and of 2 S P */
    int64_t cols;
} ha_shape;

/* PL_OK, or PL_EINVAL with msg saying what is wrong with s. */
int ha_shape_check(const ha_shape *s, char *msg, size_t n);
/* The kernel; refs: x (ANY), o (ANY), then the scratch of ha_call. */
void ha_kernel(pl_ctx *c, pl_ref *refs);
/* Describe the call (a shape ha_shape_check accepts). */
void ha_call(pl_call *call, const ha_shape *s);

#endif
