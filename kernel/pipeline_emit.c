/* kernel/pipeline_emit.c: pltpu_emit_pipeline (rule K3), a nested grid
 * walked inside a kernel with the outer pipeline's buffering (P1-P3, P8)
 * made of manual copies (M7), so that the DMA engine, the copies' overlap
 * with the body and the waits are timed as any kernel's copies are. Each
 * operand has its spec's Buffered(n) slots (P6; default 2), used as a ring:
 * one overlaps nothing, three or more fetch inputs ahead into every free
 * slot (Pallas's lookahead) and keep n - 1 write-backs in flight.
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
    int64_t offset[PL_MAX_GRID]; /* this core's part of a grid split over cores (K7): its first point */
    const int64_t *whole;        /* the grid before the split: what pl_num_programs answers in the body */
} emit_run;

/* Inner point s of this core's part, as the grid's global indices (K7). */
static void run_point(const emit_run *run, int64_t s, int64_t *idx)
{
    kern_emit_point(run->p, s, idx);
    for (int a = 0; a < run->p->grid_rank; a++) idx[a] += run->offset[a];
}

/* A slot as the copies see it: the whole block, squeezed dimensions as 1. */
static pl_ref slot_ref(const pipe_op *o, int slot)
{
    pl_ref r = {.data = o->buf + slot * o->slot_bytes, .dtype = o->hbm.dtype, .space = o->smem ? PL_SMEM : PL_VMEM,
                .rank = o->hbm.rank, .arg = -1, .role = (uint8_t)(o->out ? PL_ROLE_OUT : PL_ROLE_IN)};
    int64_t stride = 1;
    for (int d = r.rank - 1; d >= 0; d--) {
        r.shape[d] = o->block[d];
        r.stride[d] = stride;
        stride *= r.shape[d];
    }
    return r;
}

/* A view of o's whole block as the body sees it: the squeezed dimensions dropped (B4). */
static pl_ref squeeze(const pipe_op *o, pl_ref full)
{
    pl_ref r = full;
    r.rank = 0;
    for (int d = 0; d < full.rank; d++)
        if (!o->squeezed[d]) {
            r.shape[r.rank] = full.shape[d], r.stride[r.rank] = full.stride[d], r.past[r.rank] = full.past[d];
            r.rank++;
        }
    for (int d = r.rank; d < PL_MAX_RANK; d++) r.shape[d] = r.stride[d] = r.past[d] = 0;
    return r;
}

/* A slot as the body sees it: the whole block, a BoundedSlice dimension as long as its bound,
 * statically sized and partially populated (K8: only the slice is copied in and written back). */
static pl_ref body_ref(const pipe_op *o, int slot) { return squeeze(o, slot_ref(o, slot)); }

/* Block bi's part inside o's ref (B6: a ragged edge block moves only that;
 * a BoundedSlice dimension its slice, K8), its size per dimension into size. */
static pl_ref hbm_block(pl_ctx *c, const pipe_op *o, const int64_t *bi, int64_t *size)
{
    pl_ref h = o->hbm;
    for (int d = 0; d < o->hbm.rank; d++) {
        int64_t at, left;
        if (o->bounded[d]) { /* K8: checked inside the ref */
            at = kern_ds_start(bi[d]), size[d] = kern_ds_size(bi[d]);
        } else {
            at = o->squeezed[d] || o->element[d] ? bi[d] : bi[d] * o->block[d], left = o->hbm.shape[d] - at;
            size[d] = left < o->block[d] ? left : o->block[d];
        }
        h = pl_ds(c, h, d, at, size[d]);
    }
    return h;
}

/* Block bi as an HBM view and as the same corner of the slot; 1 when it is
 * not the whole block. */
static int block_views(pl_ctx *c, const pipe_op *o, int slot, const int64_t *bi, pl_ref *h, pl_ref *v)
{
    int partial = 0;
    int64_t size[PL_MAX_RANK];
    *h = hbm_block(c, o, bi, size);
    *v = slot_ref(o, slot);
    for (int d = 0; d < o->hbm.rank; d++) {
        partial |= size[d] < o->block[d];
        v->shape[d] = size[d]; /* the slot's corner starts at 0: only its shape shrinks */
    }
    return partial;
}

/* A direct (ANY) operand's block as the body sees it: the view of the ref
 * itself (its part inside the ref, B6), the squeezed dimensions dropped. */
static pl_ref direct_ref(pl_ctx *c, const pipe_op *o, const int64_t *bi)
{
    int64_t size[PL_MAX_RANK];
    return squeeze(o, hbm_block(c, o, bi, size));
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

/* K9: an accumulated output's new block, copied in from its ref (its slot
 * is free: its last write-back was waited) and kept in slot nbuf, which
 * its write-back adds back; JAX's BufferedRef.accumulator. */
static void accumulate_in(pl_ctx *c, pipe_op *o)
{
    pl_ref h, v;
    if (block_views(c, o, o->cur, o->now, &h, &v)) poison_slot(c, o, o->cur);
    pltpu_copy cp = pltpu_async_copy(c, h, v, sem_ref(o, o->cur));
    pltpu_copy_start(c, &cp);
    pltpu_copy_wait(c, &cp);
    pl_copy(c, slot_ref(o, o->nbuf), slot_ref(o, o->cur));
}

static int same(const int64_t *a, const int64_t *b, int n) { return memcmp(a, b, (size_t)n * sizeof *a) == 0; }

/* An input's copies ahead (P1, P2, P6): into each free slot, the next block that differs from the last one
 * started. With two slots or fewer it looks one step ahead, as the outer pipeline does (P8); with more it
 * looks as far ahead as the slots allow, skipping steps whose block stays (Pallas's Buffered(n,
 * use_lookahead=True), the only way a third slot helps an input). */
static void fetch_ahead(pl_ctx *c, const emit_run *run, pipe_op *o, int64_t s)
{
    int rank = o->hbm.rank;
    int64_t reach = o->nbuf > 2 || s + 1 >= run->steps ? run->steps - 1 : s + 1, b[PL_MAX_RANK], at[PL_MAX_GRID];
    while (o->ahead < o->nbuf - 1 && o->fetch_step < reach) {
        if (++o->fetch_step == s + 1) memcpy(b, o->next, sizeof b); /* the map already ran there */
        else {
            run_point(run, o->fetch_step, at);
            kern_emit_block_at(c, o, at, run->p->grid_rank, b);
        }
        if (same(b, o->fetch_blk, rank)) continue;
        memcpy(o->fetch_blk, b, sizeof b);
        o->ahead++;
        start(c, o, (o->cur + o->ahead) % o->nbuf, b);
    }
}

/* An input at step s, its block changed (or s is 0): the next slot holds it, copied ahead; with one slot
 * nothing was, so it is copied now and waited at once (Buffered(1) overlaps nothing). */
static void input_turn(pl_ctx *c, pipe_op *o, int64_t s, int changed)
{
    if (!changed) return;
    if (s > 0) o->cur = (o->cur + 1) % o->nbuf;
    if (s > 0 && o->ahead > 0) {
        o->ahead--;
        return;
    }
    start(c, o, o->cur, o->now); /* P1 */
    o->fetch_step = s;
    memcpy(o->fetch_blk, o->now, sizeof o->now);
    if (o->nbuf == 1) finish(c, o, o->cur);
}

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
        if (o->direct) { /* no slots, no copies: the block of the ref itself */
            if (s + 1 < steps) kern_emit_block_at(c, o, nidx, p->grid_rank, o->next);
            refs[i] = direct_ref(c, o, o->now);
            continue;
        }
        if (o->out && changed) kern_emit_revisit_check(c, &run->written, p, o, i, s); /* P5 */
        if (o->out && changed && s > 0) o->cur = (o->cur + 1) % o->nbuf;
        o->fresh = changed;
        if (s + 1 < steps) kern_emit_block_at(c, o, nidx, p->grid_rank, o->next);
        if (!o->out) {
            input_turn(c, o, s, changed);
            fetch_ahead(c, run, o, s);
        }
        memcpy(o->prev_block, o->now, sizeof o->now);
        refs[i] = body_ref(o, o->cur);
    }
    /* the loop's own work, a grid step's overhead (P9), while the copies just started fly, as the outer
     * pipeline issues its copies before its step overhead */
    kern_record(c, &(kern_op){.kind = KERN_OP_OVERHEAD, .elems = 1, .name = "pltpu_emit_pipeline"});
    /* inputs: the current block has landed (a skipped copy waits nothing, P2); outputs: the write-back
     * that last used this slot, nbuf blocks ago, has landed (P8; none when the block stays) */
    for (int i = 0; i < n; i++) {
        pipe_op *o = &run->ops[i];
        if (o->direct) continue;
        finish(c, o, o->cur);
        if (o->accumulate && o->fresh) accumulate_in(c, o);
    }
    int prank = c->prog_rank; /* a nested pipeline's body sees its own grid, then this one's again */
    const int64_t *pgrid = c->prog_grid, *pidx = c->prog_idx;
    c->prog_rank = run->p->grid_rank, c->prog_grid = run->whole, c->prog_idx = idx;
    run->body(c, refs, idx, run->user);
    c->prog_rank = prank, c->prog_grid = pgrid, c->prog_idx = pidx;
    for (int i = 0; i < n; i++) {
        pipe_op *o = &run->ops[i];
        if (!o->out || o->direct || !(s + 1 == steps || !same(o->next, o->now, o->hbm.rank))) continue;
        if (o->accumulate) pl_add(c, slot_ref(o, o->cur), slot_ref(o, o->cur), slot_ref(o, o->nbuf)); /* K9 */
        start(c, o, o->cur, o->now); /* P3 */
        if (o->nbuf == 1) finish(c, o, o->cur); /* one slot: the next block needs it back */
        kern_emit_revisit_put(&run->written, o, i, s);
    }
}

/* Check each operand and size its slots: host bytes (slots, semaphores, copies) into *host, laid-out VMEM
 * bytes into *counted; *all_two: every operand takes the default two. */
static void plan_ops(pl_ctx *c, const pltpu_pipeline *p, const pl_ref *ins, const pl_ref *outs, pipe_op *ops,
                     int64_t *host, int64_t *counted, int *all_two)
{
    *host = *counted = 0;
    *all_two = 1;
    for (int i = 0; i < p->n_in + p->n_out; i++) {
        pipe_op *o = &ops[i];
        memset(o, 0, sizeof *o);
        o->out = i >= p->n_in;
        o->hbm = o->out ? outs[i - p->n_in] : ins[i];
        o->spec = o->out ? &p->out[i - p->n_in] : &p->in[i];
        snprintf(o->name, sizeof o->name, "%s[%d]", o->out ? "out_specs" : "in_specs", o->out ? i - p->n_in : i);
        kern_emit_check_spec(c, p, o);
        o->accumulate = o->out && p->should_accumulate_out;
        if (o->accumulate && o->direct)
            kern_fault(c, PL_EINVAL, "pltpu_emit_pipeline: %s: should_accumulate_out on an output in memory space "
                       "ANY, which the body writes itself: there is no block to add into (rules K9, K3)", o->name);
        if (o->direct) continue; /* no slots: nothing in VMEM, nothing on the host */
        *all_two &= o->nbuf == 2;
        /* SMEM slots take no VMEM; SMEM is not limited here, as run_scoped's SMEM is not (K4) */
        int64_t e = 1, laid = o->smem ? 0 : kern_laid_out_bytes(c, o->block, o->hbm.rank, o->hbm.dtype), bytes;
        /* nbuf <= 8 slots, and room for the sums below */
        int over = laid > INT64_MAX / (4 * KERN_EMIT_MAX_BUFFERS) - *counted;
        for (int d = 0; d < o->hbm.rank && !over; d++) over = __builtin_mul_overflow(e, o->block[d], &e);
        if (over || __builtin_mul_overflow(e, (int64_t)pl_dtype_size(o->hbm.dtype), &bytes) ||
            bytes > INT64_MAX / (4 * KERN_EMIT_MAX_BUFFERS) - *host)
            kern_fault(c, PL_EVMEM, "pltpu_emit_pipeline: %s: %d buffers of its block do not fit in VMEM (rules "
                       "M4, K4, P6)", o->name, o->nbuf);
        o->slot_bytes = (bytes + 63) / 64 * 64;
        *host += o->nbuf * (o->slot_bytes + KERN_SEM_STRIDE * 4 + (int64_t)sizeof(pltpu_copy));
        *counted += o->nbuf * laid;
        if (o->accumulate) *host += o->slot_bytes, *counted += laid; /* the kept block (K9) */
    }
}

/* Carve the scoped allocation: each operand's slots (multiples of 64 bytes), then its semaphores and copies
 * (multiples of 8); returns what follows, 8-byte aligned. */
static char *carve(pl_ctx *c, pipe_op *ops, int n, char *mem)
{
    for (int i = 0; i < n; i++) {
        ops[i].buf = mem;
        mem += (ops[i].nbuf + ops[i].accumulate) * ops[i].slot_bytes;
        if (ops[i].out) /* an output block starts as garbage (P4): poison, V1 */
            for (int k = 0; k < ops[i].nbuf; k++) poison_slot(c, &ops[i], k);
    }
    for (int i = 0; i < n; i++) {
        ops[i].sems = (int64_t *)mem;
        mem += ops[i].nbuf * KERN_SEM_STRIDE * 4;
        ops[i].cp = (pltpu_copy *)mem;
        mem += ops[i].nbuf * sizeof(pltpu_copy);
    }
    return mem;
}

void pltpu_emit_pipeline(pl_ctx *c, const pltpu_pipeline *p, const pl_ref *ins, const pl_ref *outs,
                         pltpu_pipeline_body body, void *user)
{
    kern_emit_check_pipeline(c, p, ins, outs, body);
    pltpu_pipeline part = *p; /* this core's part of the grid (K7) */
    pipe_op ops[KERN_EMIT_MAX_OPS];
    emit_run run = {.p = &part, .ops = ops, .n = p->n_in + p->n_out, .steps = 1, .body = body, .user = user,
                    .whole = p->grid};
    kern_emit_split(c, p, &part, run.offset);
    p = &part;
    for (int a = 0; a < p->grid_rank; a++) {
        if (p->grid[a] == 0) return; /* a core split left this core no points (K7): it runs no step */
        run.steps = run.steps > INT64_MAX / p->grid[a] ? INT64_MAX : run.steps * p->grid[a];
    }
    int64_t host, counted;
    int all_two;
    plan_ops(c, p, ins, outs, ops, &host, &counted, &all_two);
    run.written.cap = kern_emit_revisit_cap(run.steps, p->n_out);
    /* the P5 table is host memory only: it takes no VMEM (counted) */
    char *mem = kern_scoped_push(c, (size_t)host + (size_t)run.written.cap * sizeof *run.written.slot, counted,
                                 all_two ? "pltpu_emit_pipeline: its double buffers"
                                         : "pltpu_emit_pipeline: its Buffered(n) buffers");
    run.written.slot = (kern_emit_written *)carve(c, ops, run.n, mem);
    int64_t idx[PL_MAX_GRID] = {0}, nidx[PL_MAX_GRID] = {0}, gidx[PL_MAX_GRID], gnidx[PL_MAX_GRID];
    for (int64_t s = 0; s < run.steps; s++) {
        memcpy(nidx, idx, sizeof idx); /* the next point, row-major (G1) */
        for (int a = p->grid_rank - 1; a >= 0; a--) {
            if (++nidx[a] < p->grid[a]) break;
            nidx[a] = 0;
        }
        for (int a = 0; a < PL_MAX_GRID; a++) gidx[a] = idx[a] + run.offset[a], gnidx[a] = nidx[a] + run.offset[a];
        step(c, &run, s, gidx, gnidx); /* the body and the index maps see global indices */
        memcpy(idx, nidx, sizeof idx);
    }
    for (int i = 0; i < run.n; i++)
        for (int k = 0; k < ops[i].nbuf; k++) finish(c, &ops[i], k);
    kern_scoped_pop(c, "pltpu_emit_pipeline");
}
