/* kernel/pipeline_emit.h: what pltpu_emit_pipeline (kernel/pipeline_emit.c,
 * rule K3) shares with its checks (kernel/pipeline_emit_check.c). Not part
 * of the public API. */
#ifndef TILESIM_KERNEL_PIPELINE_EMIT_H
#define TILESIM_KERNEL_PIPELINE_EMIT_H

#include "scoped.h"

enum { KERN_EMIT_MAX_OPS = PL_MAX_OPERANDS }; /* inputs plus outputs */
/* pl_block_spec.buffers: 0 is the default 2; Pallas sizes no limit, 8 slots
 * already hide any copy latency the chip table holds (P6). */
enum { KERN_EMIT_MAX_BUFFERS = 8 };

/* One operand: its HBM ref, spec, its Buffered(n) VMEM slots, used as a ring,
 * and their copies. */
typedef struct kern_emit_op {
    pl_ref hbm;
    const pl_block_spec *spec;      /* the caller's, or `whole` for a spec of rank 0 */
    pl_block_spec whole;            /* a rank-0 spec as the whole ref, a zero index map (B3, K3) */
    int out;
    char name[24];                  /* "in_specs[0]" */
    int64_t block[PL_MAX_RANK];     /* elements per dimension: the spec's, 1 where squeezed (B4) */
    uint8_t squeezed[PL_MAX_RANK];  /* dropped from the body's ref; its index is an element index (B4) */
    uint8_t element[PL_MAX_RANK];   /* pl.Element(n): the index map gives the window's first element (B5, K6) */
    uint8_t bounded[PL_MAX_RANK];   /* pl.BoundedSlice(n): the index map gives PL_DS(start, size <= n) (K8) */
    int64_t nblocks[PL_MAX_RANK];   /* legal indices: cdiv(ref, block), the last block ragged (B6); Element:
                                     * ref - block + 1 first elements */
    int nbuf;                       /* slots: the spec's buffers, 2 when 0 (P6); 0 for a direct operand */
    int direct;                     /* spec.space PL_ANY: the body gets the ref's block itself, no copy (K3) */
    int smem;                       /* spec.space PL_SMEM: the slots are SMEM, not VMEM (K3, M1) */
    int accumulate;                 /* an output added into (K9): slot nbuf keeps the block as the ref held it */
    int fresh;                      /* its block became current at this step */
    char *buf;                      /* nbuf slots of block bytes */
    int64_t *sems;                  /* one DMA semaphore per slot, KERN_SEM_STRIDE cells each */
    pltpu_copy *cp;                 /* one copy per slot (in the scoped allocation: 16 x 8 would crowd the stack) */
    int64_t slot_bytes;
    int cur;                        /* the slot holding the current block */
    int pending[KERN_EMIT_MAX_BUFFERS]; /* a copy into (inputs) or out of (outputs) the slot is in flight */
    int64_t now[PL_MAX_RANK], next[PL_MAX_RANK], prev_block[PL_MAX_RANK];
    /* inputs: blocks started into the slots after cur (ring order), the last inner step looked at for them
     * and the block started last (or the current one) */
    int ahead;
    int64_t fetch_step, fetch_blk[PL_MAX_RANK];
} kern_emit_op;

/* A BoundedSlice index PL_DS(start, size) taken apart (K8); kern_is_ds:
 * the tag and nothing else above the size (PL_DS_BAD sets a bit there). */
static inline int64_t kern_ds_start(int64_t v) { return v & (PL_DS_LIMIT - 1); }
static inline int64_t kern_ds_size(int64_t v) { return v / PL_DS_LIMIT & (PL_DS_LIMIT - 1); }
static inline int kern_is_ds(int64_t v)
{
    return v >= 0 && v / PL_DS_LIMIT / PL_DS_LIMIT == PL_DS_TAG / PL_DS_LIMIT / PL_DS_LIMIT;
}

/* The pipeline's own arguments: grid, operand counts, body (G2, K3). */
void kern_emit_check_pipeline(pl_ctx *c, const pltpu_pipeline *p, const pl_ref *ins, const pl_ref *outs,
                              pltpu_pipeline_body body);
/* One operand's spec against its ref, as pallas_call checks a BlockSpec
 * (B1, B2, B4, T1, T2, T8, P5) and its buffer count (P6); fills o's block,
 * squeezed, nblocks and nbuf. */
void kern_emit_check_spec(pl_ctx *c, const pltpu_pipeline *p, kern_emit_op *o);
/* The block o selects at inner grid point idx into bi, checked in range (B2, B4, B6). */
void kern_emit_block_at(pl_ctx *c, const kern_emit_op *o, const int64_t *idx, int rank, int64_t *bi);
/* K7: with p->core_split on a call of several cores, this core's part of
 * the grid into *part (one PL_PARALLEL axis cut into contiguous chunks, as
 * JAX's emit_pipeline(core_axis_name=) does) and its first point into
 * offset; with p->core_axis, the part of this point of that enclosing grid
 * axis (core_axis=int); otherwise *part is *p and offset 0. Faults as JAX
 * does. */
void kern_emit_split(pl_ctx *c, const pltpu_pipeline *p, pltpu_pipeline *part, int64_t *offset);
/* The inner grid point of step s, row-major (G1). */
void kern_emit_point(const pltpu_pipeline *p, int64_t s, int64_t *idx);

/* P5: the output blocks written back so far, and after which inner step.
 * The table lives in the pipeline's scoped allocation (freed after a fault
 * too); it remembers the first KERN_EMIT_REVISITS write-backs of a call. */
enum { KERN_EMIT_REVISITS = 1 << 16 };
typedef struct kern_emit_written {
    int64_t block[PL_MAX_RANK];
    int64_t step;
    int32_t op;                     /* the operand's position among inputs and outputs */
    int32_t used;
} kern_emit_written;
typedef struct kern_emit_revisits {
    kern_emit_written *slot;
    int64_t cap, n;                 /* cap: a power of two, or 0 for no outputs */
} kern_emit_revisits;
/* Entries for a pipeline of `steps` inner steps and n_out outputs. */
int64_t kern_emit_revisit_cap(int64_t steps, int n_out);
/* Output o (operand `op`) selects its block o->now at step s: fault with PL_EREVISIT when that block was
 * written back at an earlier step (the block changed and came back). */
void kern_emit_revisit_check(pl_ctx *c, const kern_emit_revisits *t, const pltpu_pipeline *p, const kern_emit_op *o,
                             int op, int64_t s);
/* Its write-back after step s. */
void kern_emit_revisit_put(kern_emit_revisits *t, const kern_emit_op *o, int op, int64_t s);

#endif
