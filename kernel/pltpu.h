/* kernel/pltpu.h: TPU-only primitives (Pallas's `pltpu.`): asynchronous
 * copies between memory spaces, and semaphores (rules M7-M10 of PALLAS.md).
 *
 * A kernel that pages data in by hand keeps its source in HBM (a BlockSpec
 * with space PL_ANY, rule T5), copies slices of it into VMEM scratch with
 * pltpu_async_copy, and waits on a DMA semaphore before it reads them:
 *
 *     // scratch: buf (2, page, d) f32 in VMEM, sems: PLTPU_SEMAPHORE_DMA(2)
 *     pltpu_copy cp = pltpu_async_copy(c, pl_ds(c, kv_hbm, 0, start, page),
 *                                      pl_at(c, buf, slot), pl_at(c, sems, slot));
 *     pltpu_copy_start(c, &cp);
 *     ...                                   // compute on the other slot meanwhile
 *     pltpu_copy_wait(c, &cp);              // now pl_at(c, buf, slot) holds the page
 *
 * A copy's handle is a value: keep it in host memory of the kernel (it may
 * outlive a grid step: start at step i, wait at step i + 1), or rebuild an
 * identical one where the wait happens, as Pallas kernels do. A handle is
 * good for the TensorCore that started it and until the call returns: on a
 * megacore chip the cores run at the same time, on host threads of their
 * own (pl_pallas_call), so a handle kept in memory that all grid points
 * share (pl_kernel_user, a static) races; rebuilding it at the wait never
 * does.
 *
 * Semantics, as JAX's TPU interpret mode has them:
 *   - a DMA semaphore counts bytes: a finished copy adds its size, wait()
 *     blocks until the count reaches the copy's size and subtracts it (M8);
 *   - copies happen at start() (pl_options.dma_mode = PL_DMA_EAGER, the
 *     default) or only when waited (PL_DMA_ON_WAIT); a kernel whose results
 *     differ between the two reads a buffer before waiting for it, and
 *     pl_check_dma_modes says so;
 *   - a wait that no started copy or signal can satisfy is a deadlock,
 *     reported with the semaphore and the grid point, never a hang (M10);
 *   - a semaphore left non-zero, or a copy started and never waited, when
 *     the call ends is an error (M10);
 *   - starting a copy into bytes that another started copy still writes
 *     (no wait between) is a race (V4).
 * Copies and waits also enter the timeline: they share HBM bandwidth with
 * the pipeline's copies, and a wait stalls the kernel until its copy lands.
 */
#ifndef TILESIM_PLTPU_H
#define TILESIM_PLTPU_H

#include "pallas.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pltpu_copy {
    pl_ref src, dst;   /* same shape and dtype; any memory spaces except SEMAPHORE */
    pl_ref sem;        /* one DMA semaphore: pl_at of a PLTPU_SEMAPHORE_DMA scratch */
    int64_t bytes;     /* what the copy moves, and what its wait takes off the semaphore */
} pltpu_copy;

/* make_async_copy(src, dst, sem): checks shapes, dtypes and the semaphore
 * (PL_ESHAPE, PL_EDTYPE, PL_ESPACE) and starts nothing. */
pltpu_copy pltpu_async_copy(pl_ctx *c, pl_ref src, pl_ref dst, pl_ref sem);
/* .start(): the data moves now (PL_DMA_EAGER) or at the wait (PL_DMA_ON_WAIT);
 * a start into bytes another started copy still writes is PL_ERACE (V4). */
void pltpu_copy_start(pl_ctx *c, const pltpu_copy *cp);
/* .wait(): until cp's semaphore holds cp->bytes, which it takes off (M8); a
 * wait nothing can satisfy is PL_EDEADLOCK (M10). cp is read, not kept. */
void pltpu_copy_wait(pl_ctx *c, const pltpu_copy *cp);

/* Regular semaphores (M9): add to, wait for (then subtract), and read a
 * count. sem is one element of a PLTPU_SEMAPHORE scratch; read also takes
 * a DMA semaphore (its count of landed bytes). */
void pltpu_semaphore_signal(pl_ctx *c, pl_ref sem, int64_t inc);
void pltpu_semaphore_wait(pl_ctx *c, pl_ref sem, int64_t value);
int64_t pltpu_semaphore_read(pl_ctx *c, pl_ref sem);

/* ---- other devices of a mesh (M11, M12; sim/tilesim_mesh.h) ----------------
 *
 * Under pl_mesh_call every device runs the kernel; these say which one this
 * is and reach the others. A ring all-gather step, as the distributed Pallas
 * guide writes it:
 *
 *     int me = pltpu_device_id(c), n = pltpu_num_devices(c);
 *     pltpu_remote_copy cp = pltpu_make_async_remote_copy(
 *         c, pl_at(c, buf, slot), pl_at(c, buf, 1 - slot),
 *         pl_at(c, send_sems, 0), pl_at(c, recv_sems, 0), (me + 1) % n);
 *     pltpu_remote_copy_start(c, &cp);      // my slot -> my right neighbour's other slot
 *     pltpu_remote_copy_wait(c, &cp);       // my send is done, and my left neighbour's has landed
 *
 * The destination is the same Ref (argument, offsets) on the other device:
 * an ANY (HBM) operand, a scratch buffer, or a pipelined VMEM block (an
 * input's or output's buffer, rule M11). Its DMA semaphore recv_sem, on
 * the other device, counts the bytes landed there; send_sem, here, the
 * bytes sent. A wait blocks until another device's copy or signal makes it
 * possible; a wait nothing in the mesh can satisfy is PL_EDEADLOCK naming
 * every stuck device. On a single device (pl_pallas_call) the device is 0
 * of 1 and a remote copy to device 0 is a local one. */

/* This device's number in the mesh (row-major over its axes), and how many. */
int pltpu_device_id(pl_ctx *c);
int pltpu_num_devices(pl_ctx *c);
/* lax.axis_index / axis_size: the position along the mesh axis named `axis`
 * and the axis's length; an unknown name is PL_EINVAL. */
int64_t pltpu_axis_index(pl_ctx *c, const char *axis);
int64_t pltpu_axis_size(pl_ctx *c, const char *axis);
/* Device ids as JAX's DeviceIdType.MESH gives them. pltpu_device_at: the
 * device at mesh coordinates coords (one per axis, in the mesh's order:
 * device_id=(y, x)). pltpu_device_along: this device's coordinates with
 * `axis` set to index (device_id={'x': index}, the other axes this
 * device's own): the neighbour along x of a 2-D mesh is
 * pltpu_device_along(c, "x", (pltpu_axis_index(c, "x") + 1) % nx). An
 * unknown axis or a coordinate off the mesh is PL_EINVAL. */
int pltpu_device_at(pl_ctx *c, const int64_t *coords);
int pltpu_device_along(pl_ctx *c, const char *axis, int64_t index);
/* Joint axes, as JAX takes a tuple of axis names: lax.axis_index(("x", "y"))
 * is this device's position over x and y together, row-major in the order
 * given (x * size(y) + y); device_id={("x", "y"): k} is the device at that
 * joint position k, its other axes this device's own. n names, 1 to 8. */
int64_t pltpu_axis_index_joint(pl_ctx *c, const char *const *axes, int n);
int pltpu_device_along_joint(pl_ctx *c, const char *const *axes, int n, int64_t index);

typedef struct pltpu_remote_copy {
    pl_ref src, dst;        /* same shape and dtype; dst names a Ref of device `device` */
    pl_ref send_sem;        /* here: a DMA semaphore that counts the bytes sent */
    pl_ref recv_sem;        /* there: a DMA semaphore that counts the bytes landed */
    int device;
    int64_t bytes;
    int core;               /* the TensorCore of `device` it lands on (kernel ABI 4) */
} pltpu_remote_copy;

/* make_async_remote_copy(src, dst, send_sem, recv_sem, device_id): checks
 * shapes, dtypes, the semaphores and the device (PL_ESHAPE, PL_EDTYPE,
 * PL_ESPACE, PL_EINVAL) and starts nothing. */
pltpu_remote_copy pltpu_make_async_remote_copy(pl_ctx *c, pl_ref src, pl_ref dst, pl_ref send_sem,
                                               pl_ref recv_sem, int device_id);
/* .start(): the data lands on the other device now, adding cp->bytes to its
 * recv_sem and to this device's send_sem. */
void pltpu_remote_copy_start(pl_ctx *c, const pltpu_remote_copy *cp);
/* .wait_send(): until send_sem holds cp->bytes (taken off); .wait_recv():
 * until this device's recv_sem holds cp->bytes, the copy the left
 * neighbour started into this device (taken off); .wait(): both. */
void pltpu_remote_copy_wait_send(pl_ctx *c, const pltpu_remote_copy *cp);
void pltpu_remote_copy_wait_recv(pl_ctx *c, const pltpu_remote_copy *cp);
void pltpu_remote_copy_wait(pl_ctx *c, const pltpu_remote_copy *cp);
/* semaphore_signal(sem, inc, device_id=...): add inc to the regular
 * semaphore sem of another device (the same scratch element there). */
void pltpu_semaphore_signal_device(pl_ctx *c, pl_ref sem, int64_t inc, int device_id);
/* get_barrier_semaphore(): the regular semaphore every device of the call
 * holds at the same place, for a handshake before remote copies (M15): a
 * device signals it on its neighbours (pltpu_semaphore_signal_device) and
 * waits for their signals. The call must set collective_id
 * (pl_call.has_collective_id), as Mosaic requires; else PL_EINVAL. */
pl_ref pltpu_get_barrier_semaphore(pl_ctx *c);

/* ---- TensorCores of a device (M13) -----------------------------------------
 *
 * A device whose call walks on several TensorCores (v4 and v5p: 2; G4) runs
 * them at once, each with its own VMEM, scratch and semaphores, all sharing
 * the device's HBM. JAX names one of them by a device id with a core axis,
 * device_id={'device': d, 'core': k}; these take (device, core), device -1
 * meaning this one ({'core': k} alone). A remote copy made by
 * pltpu_make_async_remote_copy lands on the same core index of the other
 * device. Cores that signal each other, as JAX's test_can_signal_cores:
 *
 *     // pl_kernel on v5p, a run_scoped regular semaphore `sem`:
 *     for (int k = 0; k < pl_core_count(c); k++) pltpu_semaphore_signal_core(c, sem, 1, -1, k);
 *     pltpu_semaphore_wait(c, sem, pl_core_count(c));    // every core has come this far
 */

/* lax.axis_size('core'): the TensorCores this call's device walks on at
 * once (1 when its grid has no parallel axis to split, G4). */
int pl_core_count(const pl_ctx *c);
pltpu_remote_copy pltpu_make_async_remote_copy_core(pl_ctx *c, pl_ref src, pl_ref dst, pl_ref send_sem,
                                                    pl_ref recv_sem, int device_id, int core);
void pltpu_semaphore_signal_core(pl_ctx *c, pl_ref sem, int64_t inc, int device_id, int core);

#ifdef __cplusplus
}
#endif
#endif
