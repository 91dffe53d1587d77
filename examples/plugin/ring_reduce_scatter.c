/* examples/plugin/ring_reduce_scatter.c: a ring reduce-scatter as a tilesim
 * plugin, the template for a mesh kernel of your own (rules M7-M12).
 *
 *     cc -shared -fPIC -O2 -Wall -Wextra -I. examples/plugin/ring_reduce_scatter.c -o ring_reduce_scatter.so
 *     tilesim run ring_reduce_scatter.so --set devices=8
 *     tilesim sweep ring_reduce_scatter.so --vary devices=2,4,8 --vary rows=64,256
 *
 * Every device holds x of (devices x rows, cols) f32: one chunk of `rows`
 * rows per device. Afterwards device d's o (rows, cols) is the sum over all
 * devices of their chunk d, as lax.psum_scatter gives. The kernel runs the
 * classic one-way ring: at step 1 each device sends its chunk d - 1 to its
 * right neighbour; at step s it receives the partial sum of chunk d - s - 1
 * from its left neighbour, adds its own, and passes it on; at the last step
 * the chunk is its own, and the sum lands in o.
 *
 * What a mesh definition adds to a single-device one (examples/plugin/
 * rmsnorm.c): `.mesh` names the mesh for the parameter values (here a ring
 * of `devices`); build describes one device's call and arrays, the same on
 * every device (SPMD, as shard_map + pallas_call); `.mesh_reference`
 * computes one device's expected outputs from every device's inputs.
 */
#include <stdio.h>
#include <string.h>

#include "kernel/pallas.h"
#include "kernel/pltpu.h"
#include "sim/kdef.h"

enum { P_DEVICES, P_ROWS, P_COLS };
/* refs (rule M3): input x, output o, scratch recv (2 slots of a chunk),
 * send (a chunk), sems (DMA: send, receive), ready (regular: free slots) */
enum { X, O, RECV, SEND, SEMS, READY };

/* ---- the kernel: each device, once (a grid of one point) ------------------ */

static void rs_kernel(pl_ctx *c, pl_ref *refs)
{
    const int64_t *v = pl_kernel_user(c);
    int n = (int)v[P_DEVICES];
    int64_t r = v[P_ROWS];
    int me = pltpu_device_id(c), right = (me + 1) % n, left = (me + n - 1) % n;
    pl_ref ready = pl_at(c, refs[READY], 0);
    /* flow control: the left neighbour may write a receive slot of mine only
     * after I said it is free; two slots, so the first two sends need no wait
     * on my side. Grants match sends: the semaphore ends at zero (M10). */
    pltpu_semaphore_signal_device(c, ready, n - 1 < 2 ? n - 1 : 2, left);
    pl_copy(c, refs[SEND], pl_ds(c, refs[X], 0, (int64_t)left * r, r));
    for (int s = 1; s < n; s++) {
        pl_ref slot = pl_ds(c, refs[RECV], 0, (int64_t)((s - 1) % 2) * r, r);
        pltpu_semaphore_wait(c, ready, 1); /* my right neighbour's slot is free */
        pltpu_remote_copy cp = pltpu_make_async_remote_copy(c, refs[SEND], slot, pl_at(c, refs[SEMS], 0),
                                                            pl_at(c, refs[SEMS], 1), right);
        pltpu_remote_copy_start(c, &cp);
        pltpu_remote_copy_wait(c, &cp); /* mine has left; my left neighbour's has landed in my slot */
        int64_t chunk = ((int64_t)me - s - 1 + 2 * (int64_t)n) % n;
        pl_ref own = pl_ds(c, refs[X], 0, chunk * r, r);
        if (s < n - 1) {
            pl_add(c, refs[SEND], slot, own); /* the partial sum travels on */
            if (s + 2 <= n - 1) pltpu_semaphore_signal_device(c, ready, 1, left); /* the slot is free again */
        } else {
            pl_add(c, refs[O], slot, own); /* chunk me, summed over every device */
        }
    }
}

/* ---- the definition ------------------------------------------------------------ */

static int rs_check(const int64_t *v, char *msg, size_t n)
{
    if (v[P_DEVICES] < 2 || v[P_DEVICES] > 64) {
        snprintf(msg, n, "devices=%lld: a ring needs 2 to 64 devices", (long long)v[P_DEVICES]);
        return PL_EINVAL;
    }
    if (v[P_ROWS] < 8 || v[P_ROWS] % 8 || v[P_COLS] < 128 || v[P_COLS] % 128) {
        snprintf(msg, n, "rows=%lld, cols=%lld: a chunk is whole (8, 128) f32 tiles (rows a multiple of 8, cols of "
                 "128)", (long long)v[P_ROWS], (long long)v[P_COLS]);
        return PL_EINVAL;
    }
    return PL_OK;
}

/* The mesh for values v: a ring of `devices` (axis "x", wrapping). */
static int rs_mesh(const int64_t *v, pl_mesh *mesh, char *msg, size_t n)
{
    char spec[32];
    snprintf(spec, sizeof spec, "ring:%lld", (long long)v[P_DEVICES]);
    return pl_mesh_parse(spec, mesh, msg, n);
}

/* One device's call and arrays; every device runs the same. */
static int rs_build(const int64_t *v, pl_kernel_build *b, char *msg, size_t n)
{
    (void)msg, (void)n;
    int64_t devices = v[P_DEVICES], r = v[P_ROWS], cols = v[P_COLS];
    memcpy(b->param, v, 3 * sizeof *v); /* the kernel reads them through call.user */
    b->call = (pl_call){
        .name = "ring_reduce_scatter",
        .kernel = rs_kernel,
        .user = b->param,
        .grid_rank = 1,
        .grid = {1},
        .n_in = 1,
        .in = {PL_BLOCK_NAMED("x", PL_MAP(PL_ZERO, PL_ZERO), devices * r, cols)},
        .n_out = 1,
        .out = {PL_BLOCK_NAMED("o", PL_MAP(PL_ZERO, PL_ZERO), r, cols)},
        .n_scratch = 4,
        .scratch = {PLTPU_VMEM_NAMED("recv", PL_F32, 2 * r, cols), PLTPU_VMEM_NAMED("send", PL_F32, r, cols),
                    PLTPU_SEMAPHORE_DMA(2), PLTPU_SEMAPHORE(1)},
    };
    b->call.scratch[2].name = "sems";
    b->call.scratch[3].name = "ready";
    b->n_args = 1;
    b->args[0] = PL_ARRAY(NULL, PL_F32, devices * r, cols);
    b->n_outs = 1;
    b->outs[0] = PL_ARRAY(NULL, PL_F32, r, cols);
    return PL_OK;
}

/* Device `device`'s o: its chunk summed over every device's x, in double. */
static int rs_mesh_reference(const int64_t *v, const pl_kernel_build *devs, int n_devices, int device,
                             pl_array *want)
{
    int64_t r = v[P_ROWS], cols = v[P_COLS], off = (int64_t)device * r * cols;
    float *o = want[0].data;
    for (int64_t i = 0; i < r * cols; i++) {
        double sum = 0;
        for (int d = 0; d < n_devices; d++) sum += ((const float *)devs[d].args[0].data)[off + i];
        o[i] = (float)sum;
    }
    /* n - 1 f32 additions in ring order, not the reference's: their rounding */
    return pl_want_tolerance(&want[0], 1e-6 * (double)n_devices, 1e-6 * (double)n_devices);
}

/* Ideal: every device reads its x and writes its o once; n - 1 adds of a chunk. */
static double rs_flops(const int64_t *v) { return (double)(v[P_DEVICES] - 1) * (double)(v[P_ROWS] * v[P_COLS]); }
static double rs_bytes(const int64_t *v) { return 4.0 * (double)(v[P_DEVICES] + 1) * (double)(v[P_ROWS] * v[P_COLS]); }

static const pl_kernel_def rs_def = {
    .name = "ring_reduce_scatter",
    .summary = "a one-way ring reduce-scatter: device d ends with chunk d summed over every device",
    .n_params = 3,
    /* no sweep candidates: these shape the problem, not its tiling (a
     * sweep varies them when told: --vary devices=2,4,8) */
    .params = {{.name = "devices", .def = 4, .help = "devices in the ring (the mesh)"},
               {.name = "rows", .def = 64, .help = "rows of a chunk (x has devices x rows)"},
               {.name = "cols", .def = 512, .help = "columns of x and o"}},
    .check = rs_check,
    .build = rs_build,
    .mesh = rs_mesh,
    .mesh_reference = rs_mesh_reference,
    .flops = rs_flops,
    .bytes = rs_bytes,
};

static const pl_kernel_def *const kernels[] = {&rs_def};

int tilesim_kernels(int abi, const pl_kernel_def *const **defs)
{
    if (abi != PL_KERNEL_ABI) return -1; /* built against another sim/kdef.h */
    *defs = kernels;
    return (int)(sizeof kernels / sizeof kernels[0]);
}
