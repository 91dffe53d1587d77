/* kernel/pipeline_emit.c: pltpu_emit_pipeline (rule K3), a nested grid
 * walked inside a kernel with the outer pipeline's buffering (P1-P3, P8)
 * made of manual copies (M7), so that the DMA engine, the copies' overlap
 * with the body and the waits are timed as any kernel's copies are.
 *
 * As Pallas's pltpu.emit_pipeline, a block may hang over the end of its ref
 * (B6): only its part inside the ref is copied in or written back (and
 * timed), the rest of an input's slot reads as poison (V1); a squeezed
 * dimension is dropped from the body's ref (B4). The checks that a
 * BlockSpec gets in pallas_call (B2, T1, T2, T8, P5) are in
 * kernel/pipeline_emit_check.c. */
#include <stdio.h>
#include <string.h>

#include "pipeline_emit.h"

typedef kern_emit_op pipe_op;

/* One call: the pipeline, its operands and the write-backs done (P5). */
typedef struct emit_run {
    const pltpu_pipeline *p;
    pipe_op *ops;
    int n;
    int64_t steps;
    kern_emit_revisits written;
    pltpu_pipeline_body body;
    void *user;
} emit_run;

/* A slot as the copies see it: the whole block, squeezed dimensions as 1. */
static pl_ref slot_ref(const pipe_op *o, int slot)
{
    pl_ref r = {.data = o->buf + slot * o->slot_bytes, .dtype = o->hbm.dtype, .space = PL_VMEM,
                .rank = o->hbm.rank, .arg = -1, .role = (uint8_t)(o->out ? PL_ROLE_OUT : PL_ROLE_IN)};
    int64_t stride = 1;
    for (int d = r.rank - 1; d >= 0; d--) {
        r.shape[d] = o->block[d];
        r.stride[d] = stride;
        stride *= r.shape[d];
    }
    return r;
}

/* A slot as the body sees it: the squeezed dimensions dropped (B4). */
static pl_ref body_ref(const pipe_op *o, int slot)
{
    pl_ref full = slot_ref(o, slot), r = full;
    r.rank = 0;
    for (int d = 0; d < full.rank; d++)
        if (!o->squeezed[d]) {
            r.shape[r.rank] = full.shape[d];
            r.stride[r.rank] = full.stride[d];
            r.rank++;
        }
    for (int d = r.rank; d < PL_MAX_RANK; d++) r.shape[d] = r.stride[d] = 0;
    return r;
}

/* Block bi's part inside the ref (B6: a ragged edge block moves only that),
 * as an HBM view and as the same corner of the slot; 1 when it is not the
 * whole block. */
static int block_views(pl_ctx *c, const pipe_op *o, int slot, const int64_t *bi, pl_ref *h, pl_ref *v)
{
    int partial = 0;
    *h = o->hbm;
    *v = slot_ref(o, slot);
    for (int d = 0; d < o->hbm.rank; d++) {
        int64_t at = o->squeezed[d] ? bi[d] : bi[d] * o->block[d], left = o->hbm.shape[d] - at;
        int64_t size = left < o->block[d] ? left : o->block[d];
        partial |= size < o->block[d];
        *h = pl_ds(c, *h, d, at, size);
        v->shape[d] = size; /* the slot's corner starts at 0: only its shape shrinks */
    }
    return partial;
}

/* Fill a slot with poison (V1): a fresh output block (P4), or the part of an
 * input's edge block past its ref, which on hardware keeps whatever the
 * slot held before (B6). */
static void poison_slot(pl_ctx *c, const pipe_op *o, int slot)
{
    if (c->cost_only) return;
    char *at = o->buf + slot * o->slot_bytes;
    int64_t es = (int64_t)pl_dtype_size(o->hbm.dtype);
    pl_store_elem(at, o->hbm.dtype, kern_poison_value(c, o->hbm.dtype));
    for (int64_t done = es; done < o->slot_bytes;) { /* slot_bytes is a multiple of 64, so of es */
        int64_t k = done < o->slot_bytes - done ? done : o->slot_bytes - done;
        memcpy(at + done, at, (size_t)k);
        done += k;
    }
}

static pl_ref sem_ref(const pipe_op *o, int slot)
{
    return (pl_ref){.data = o->sems + slot, .dtype = PL_I32, .space = PL_SEMAPHORE, .arg = -1,
                    .role = PL_ROLE_SCRATCH, .sem_kind = PL_SEM_DMA};
}

static void start(pl_ctx *c, pipe_op *o, int slot, const int64_t *bi)
{
    pl_ref h, v;
    if (block_views(c, o, slot, bi, &h, &v) && !o->out) poison_slot(c, o, slot);
    o->cp[slot] = o->out ? pltpu_async_copy(c, v, h, sem_ref(o, slot)) : pltpu_async_copy(c, h, v, sem_ref(o, slot));
    pltpu_copy_start(c, &o->cp[slot]);
    o->pending[slot] = 1;
}

static void finish(pl_ctx *c, pipe_op *o, int slot)
{
    if (!o->pending[slot]) return;
    pltpu_copy_wait(c, &o->cp[slot]);
    o->pending[slot] = 0;
}

static int same(const int64_t *a, const int64_t *b, int n) { return memcmp(a, b, (size_t)n * sizeof *a) == 0; }

/* One inner grid step s at idx: the outer pipeline's order (P1-P3, P8) with
 * manual copies: prefetch the inputs' next blocks, wait for the current
 * ones, run the body, start the write-back of outputs whose block changes. */
static void step(pl_ctx *c, emit_run *run, int64_t s, const int64_t *idx, const int64_t *nidx)
{
    const pltpu_pipeline *p = run->p;
    int n = run->n;
    int64_t steps = run->steps;
    pl_ref refs[KERN_EMIT_MAX_OPS];
    for (int i = n; i < KERN_EMIT_MAX_OPS; i++) refs[i] = (pl_ref){.arg = (int16_t)(KERN_ARG_MISSING - i)};
    for (int i = 0; i < n; i++) {
        pipe_op *o = &run->ops[i];
        int rank = o->hbm.rank, changed = s == 0;
        if (s == 0) kern_emit_block_at(c, o, idx, p->grid_rank, o->now);
        if (s > 0) {
            memcpy(o->now, o->next, sizeof o->now);
            changed = !same(o->now, o->prev_block, rank);
        }
        if (o->out && changed) kern_emit_revisit_check(c, &run->written, p, o, i, s); /* P5 */
        if (changed && s > 0) o->cur = 1 - o->cur;
        if (s + 1 < steps) kern_emit_block_at(c, o, nidx, p->grid_rank, o->next);
        if (!o->out) {
            if (s == 0) start(c, o, o->cur, o->now);                          /* P1 */
            if (s + 1 < steps && !same(o->next, o->now, rank)) start(c, o, 1 - o->cur, o->next); /* prefetch */
        }
        memcpy(o->prev_block, o->now, sizeof o->now);
        refs[i] = body_ref(o, o->cur);
    }
    /* the loop's own work, a grid step's overhead (P9), while the copies just started fly, as the outer
     * pipeline issues its copies before its step overhead */
    kern_op over = {.kind = KERN_OP_OVERHEAD, .elems = 1, .name = "pltpu_emit_pipeline"};
    if (over.elems > 0) kern_record(c, &over);
    /* inputs: the current block has landed (a skipped copy waits nothing, P2); outputs: the write-back
     * that last used this slot has landed (P8; none when the block stays) */
    for (int i = 0; i < n; i++) finish(c, &run->ops[i], run->ops[i].cur);
    run->body(c, refs, idx, run->user);
    for (int i = 0; i < n; i++) {
        pipe_op *o = &run->ops[i];
        if (!o->out || !(s + 1 == steps || !same(o->next, o->now, o->hbm.rank))) continue;
        start(c, o, o->cur, o->now); /* P3 */
        kern_emit_revisit_put(&run->written, o, i, s);
    }
}

/* Check each operand and size its two slots: host bytes into *host, laid-out VMEM bytes into *counted. */
static void plan_ops(pl_ctx *c, const pltpu_pipeline *p, const pl_ref *ins, const pl_ref *outs, pipe_op *ops,
                     int64_t *host, int64_t *counted)
{
    *host = *counted = 0;
    for (int i = 0; i < p->n_in + p->n_out; i++) {
        pipe_op *o = &ops[i];
        memset(o, 0, sizeof *o);
        o->out = i >= p->n_in;
        o->hbm = o->out ? outs[i - p->n_in] : ins[i];
        o->spec = o->out ? &p->out[i - p->n_in] : &p->in[i];
        snprintf(o->name, sizeof o->name, "%s[%d]", o->out ? "out_specs" : "in_specs", o->out ? i - p->n_in : i);
        kern_emit_check_spec(c, p, o);
        int64_t e = 1, laid = kern_laid_out_bytes(c, o->block, o->hbm.rank, o->hbm.dtype), bytes;
        int over = laid > INT64_MAX / 4 - *counted; /* Buffered(2), and room for the sums below */
        for (int d = 0; d < o->hbm.rank && !over; d++) over = __builtin_mul_overflow(e, o->block[d], &e);
        if (over || __builtin_mul_overflow(e, (int64_t)pl_dtype_size(o->hbm.dtype), &bytes) ||
            bytes > INT64_MAX / 4 - *host)
            kern_fault(c, PL_EVMEM, "pltpu_emit_pipeline: %s: two buffers of its block do not fit in VMEM (rules "
                       "M4, K4)", o->name);
        o->slot_bytes = (bytes + 63) / 64 * 64;
        *host += 2 * o->slot_bytes + 2 * KERN_SEM_STRIDE * 4;
        *counted += 2 * laid;
    }
}

void pltpu_emit_pipeline(pl_ctx *c, const pltpu_pipeline *p, const pl_ref *ins, const pl_ref *outs,
                         pltpu_pipeline_body body, void *user)
{
    kern_emit_check_pipeline(c, p, ins, outs, body);
    pipe_op ops[KERN_EMIT_MAX_OPS];
    emit_run run = {.p = p, .ops = ops, .n = p->n_in + p->n_out, .steps = 1, .body = body, .user = user};
    for (int a = 0; a < p->grid_rank; a++)
        run.steps = run.steps > INT64_MAX / p->grid[a] ? INT64_MAX : run.steps * p->grid[a];
    int64_t host, counted;
    plan_ops(c, p, ins, outs, ops, &host, &counted);
    run.written.cap = kern_emit_revisit_cap(run.steps, p->n_out);
    /* the P5 table is host memory only: it takes no VMEM (counted) */
    char *mem = kern_scoped_push(c, (size_t)host + (size_t)run.written.cap * sizeof *run.written.slot, counted,
                                 "pltpu_emit_pipeline: its double buffers");
    for (int i = 0; i < run.n; i++) {
        ops[i].buf = mem;
        mem += 2 * ops[i].slot_bytes;
        if (ops[i].out) /* an output block starts as garbage (P4): poison, V1 */
            poison_slot(c, &ops[i], 0), poison_slot(c, &ops[i], 1);
    }
    for (int i = 0; i < run.n; i++) {
        ops[i].sems = (int64_t *)mem;
        mem += 2 * KERN_SEM_STRIDE * 4;
    }
    run.written.slot = (kern_emit_written *)mem; /* 8-byte aligned: slots are multiples of 64, semaphores of 16 */
    int64_t idx[PL_MAX_GRID] = {0}, nidx[PL_MAX_GRID] = {0};
    for (int64_t s = 0; s < run.steps; s++) {
        memcpy(nidx, idx, sizeof idx); /* the next point, row-major (G1) */
        for (int a = p->grid_rank - 1; a >= 0; a--) {
            if (++nidx[a] < p->grid[a]) break;
            nidx[a] = 0;
        }
        step(c, &run, s, idx, nidx);
        memcpy(idx, nidx, sizeof idx);
    }
    for (int i = 0; i < run.n; i++) {
        finish(c, &ops[i], 0);
        finish(c, &ops[i], 1);
    }
    kern_scoped_pop(c, "pltpu_emit_pipeline");
}
