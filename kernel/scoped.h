/* kernel/scoped.h: run_scoped VMEM inside a kernel (rule K4), shared by
 * pl_run_scoped and pltpu_emit_pipeline (kernel/scoped.c,
 * kernel/pipeline_emit.c). Not part of the public API. */
#ifndef TILESIM_KERNEL_SCOPED_H
#define TILESIM_KERNEL_SCOPED_H

#include "../sim/tilesim_kernel.h"
#include "context.h"

/* Host memory of `bytes` for a scoped allocation that takes `counted` bytes
 * of the scoped VMEM limit while live; `what` names it in the PL_EVMEM
 * fault (M4, K4). Zeroed. Freed by kern_scoped_pop or kern_ctx_free. */
void *kern_scoped_push(pl_ctx *c, size_t bytes, int64_t counted, const char *what);
/* Free the newest allocation (the one kern_scoped_push gave last). A copy
 * still in flight into or out of it, or on a semaphore in it, is
 * PL_ESEMAPHORE (M10): its memory is about to go. */
void kern_scoped_pop(pl_ctx *c, const char *fn);
/* p, inside one of c's live run_scoped allocations, on another device:
 * the same bytes of the allocation at the same depth of peer's live
 * run_scoped stack, as the same VMEM or semaphore address names them on
 * every chip of a mesh (K4, M11). NULL when peer is not inside that scope
 * (or holds another allocation there), with why filled in. Call with the
 * mesh's lock held: peer's stack changes under it. */
void *kern_scoped_peer(const pl_ctx *c, const void *p, const pl_ctx *peer, char *why, size_t n);
/* Bytes a VMEM buffer of this shape takes laid out in (rows, 128) tiles (T6, T8). */
int64_t kern_laid_out_bytes(const pl_ctx *c, const int64_t *shape, int rank, pl_dtype t);

/* pl_kernel's kernel: runs the wrapped body with its own user pointer. */
typedef struct kern_kernel_wrap {
    pl_kernel_fn body;
    void *user;
} kern_kernel_wrap;
void kern_kernel_trampoline(pl_ctx *c, pl_ref *refs);

/* A scratch buffer's rules, for pallas_call's scratch (sim/call/validate.c) and run_scoped alike: its memory
 * space (M2), a semaphore array's declaration and size (M2), SMEM's 32-bit scalars (M1). PL_OK, or the code
 * with msg saying it, after "who: " (kernel/scoped.c). */
int kern_scratch_rules(const pl_scratch *s, const char *who, char *msg, size_t n);

#endif
