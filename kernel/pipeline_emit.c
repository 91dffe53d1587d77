/* kernel/pipeline_emit.c: pltpu_emit_pipeline (rule K3), a nested grid
 * walked inside a kernel with the outer pipeline's buffering (P1-P3, P8)
 * made of manual copies (M7), so that the DMA engine, the copies' overlap
 * with the body and the waits are timed as any kernel's copies are. */
#include <stdio.h>
#include <string.h>

#include "scoped.h"

enum { MAX_PIPE_OPS = PL_MAX_OPERANDS }; /* inputs plus outputs */

/* One operand: its HBM ref, spec, two VMEM slots and their copies. */
typedef struct pipe_op {
    pl_ref hbm;
    const pl_block_spec *spec;
    int out;
    char name[24];                /* "in_specs[0]" */
    char *buf;                    /* two slots of block bytes */
    int64_t *sems;                /* one DMA semaphore per slot, KERN_SEM_STRIDE cells each */
    int64_t slot_bytes;
    int cur;                      /* the slot holding the current block */
    int pending[2];               /* a copy into (inputs) or out of (outputs) the slot is in flight */
    pltpu_copy cp[2];
    int64_t now[PL_MAX_RANK], next[PL_MAX_RANK], prev_block[PL_MAX_RANK];
} pipe_op;

static void check_spec(pl_ctx *c, const pltpu_pipeline *p, pipe_op *o)
{
    const pl_block_spec *s = o->spec;
    const pl_ref *r = &o->hbm;
    kern_check_ref(c, r, "pltpu_emit_pipeline");
    if (r->space == PL_SEMAPHORE || r->rank < 1)
        kern_fault(c, PL_ESPACE, "pltpu_emit_pipeline: %s: its ref is %s of rank %d, not an array (rule K3)",
                   o->name, pl_memspace_name(r->space), r->rank);
    if (s->rank != r->rank)
        kern_fault(c, PL_EBLOCKSHAPE, "pltpu_emit_pipeline: %s: block of rank %d for a ref of rank %d (rules B1, "
                   "K3)", o->name, s->rank, r->rank);
    if (!s->map.fn && s->map.n != r->rank)
        kern_fault(c, PL_EINDEXMAP, "pltpu_emit_pipeline: %s: index map of %d entries for a ref of rank %d (rules "
                   "B2, K3)", o->name, s->map.n, r->rank);
    for (int d = 0; d < r->rank; d++) {
        if (s->block[d] < 1 || s->element[d])
            kern_fault(c, PL_EBLOCKSHAPE, "pltpu_emit_pipeline: %s: block dimension %d is %lld: emit_pipeline "
                       "takes whole block sizes >= 1 (no squeezed or Element dimensions) (rule K3)", o->name, d,
                       (long long)s->block[d]);
        if (s->block[d] > r->shape[d]) /* here, once: the buffers' sizes below are then bounded by the ref's */
            kern_fault(c, PL_EINDEXMAP, "pltpu_emit_pipeline: %s: blocks of %lld along dimension %d do not fit in "
                       "a ref of %lld; emit_pipeline's blocks must lie inside the ref (rules B2, K3)", o->name,
                       (long long)s->block[d], d, (long long)r->shape[d]);
        if (!s->map.fn && s->map.axis[d] != PL_ZERO && (s->map.axis[d] < 0 || s->map.axis[d] >= p->grid_rank))
            kern_fault(c, PL_EINDEXMAP, "pltpu_emit_pipeline: %s: index map entry %d names grid axis %d of a "
                       "%d-axis grid (rules B2, K3)", o->name, d, s->map.axis[d], p->grid_rank);
    }
    int n = r->rank; /* T1 on the VMEM block: (8, 128) or the whole dimension */
    int64_t lane = s->block[n - 1], sub = n >= 2 ? s->block[n - 2] : 8;
    if ((lane % 128 && lane != r->shape[n - 1]) || (n >= 2 && sub % 8 && sub != r->shape[n - 2]))
        kern_fault(c, PL_EBLOCKSHAPE, "pltpu_emit_pipeline: %s: block (..., %lld, %lld) of a ref (..., %lld, "
                   "%lld) breaks the (8,128) rule: the last two dimensions must be multiples of 8 and 128 or "
                   "equal the ref's (rules T1, K3)", o->name, (long long)sub, (long long)lane,
                   (long long)(n >= 2 ? r->shape[n - 2] : 0), (long long)r->shape[n - 1]);
}

/* The block o selects at grid point idx into bi, checked in bounds (B2). */
static void block_at(pl_ctx *c, const pipe_op *o, const int64_t *idx, int rank, int64_t *bi)
{
    const pl_block_spec *s = o->spec;
    for (int d = 0; d < o->hbm.rank; d++) bi[d] = s->map.fn ? INT64_MIN : s->map.axis[d] == PL_ZERO ? 0
                                                                           : idx[s->map.axis[d]];
    if (s->map.fn) s->map.fn(idx, NULL, bi, s->map.user);
    for (int d = 0; d < o->hbm.rank; d++) {
        int unset = bi[d] == INT64_MIN, outside = bi[d] < 0 || bi[d] > (o->hbm.shape[d] - s->block[d]) / s->block[d];
        if (!unset && !outside) continue; /* the point is formatted only for a message (every inner step comes here) */
        char pt[128];
        kern_format_point(idx, rank, pt, sizeof pt);
        if (unset)
            kern_fault(c, PL_EINDEXMAP, "pltpu_emit_pipeline: %s: the index map left dimension %d unset at inner "
                       "grid point %s (rules B2, K3)", o->name, d, pt);
        kern_fault(c, PL_EINDEXMAP, "pltpu_emit_pipeline: %s: block index %lld along dimension %d at inner "
                       "grid point %s: blocks of %lld do not fit there in a ref of %lld; emit_pipeline's blocks "
                       "must lie inside the ref (rules B2, K3)", o->name, (long long)bi[d], d, pt,
                       (long long)s->block[d], (long long)o->hbm.shape[d]);
    }
}

/* The HBM view of block bi, and the VMEM view of a slot. */
static pl_ref hbm_block(pl_ctx *c, const pipe_op *o, const int64_t *bi)
{
    pl_ref v = o->hbm;
    for (int d = 0; d < v.rank; d++) v = pl_ds(c, v, d, bi[d] * o->spec->block[d], o->spec->block[d]);
    return v;
}

static pl_ref slot_ref(const pipe_op *o, int slot)
{
    pl_ref r = {.data = o->buf + slot * o->slot_bytes, .dtype = o->hbm.dtype, .space = PL_VMEM,
                .rank = o->hbm.rank, .arg = -1, .role = (uint8_t)(o->out ? PL_ROLE_OUT : PL_ROLE_IN)};
    int64_t stride = 1;
    for (int d = r.rank - 1; d >= 0; d--) {
        r.shape[d] = o->spec->block[d];
        r.stride[d] = stride;
        stride *= r.shape[d];
    }
    return r;
}

static pl_ref sem_ref(const pipe_op *o, int slot)
{
    return (pl_ref){.data = o->sems + slot, .dtype = PL_I32, .space = PL_SEMAPHORE, .arg = -1,
                    .role = PL_ROLE_SCRATCH, .sem_kind = PL_SEM_DMA};
}

static void start(pl_ctx *c, pipe_op *o, int slot, const int64_t *bi)
{
    pl_ref h = hbm_block(c, o, bi), v = slot_ref(o, slot);
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
static void step(pl_ctx *c, const pltpu_pipeline *p, pipe_op *ops, int n, int64_t s, int64_t steps,
                 const int64_t *idx, const int64_t *nidx, pltpu_pipeline_body body, void *user)
{
    pl_ref refs[MAX_PIPE_OPS];
    for (int i = n; i < MAX_PIPE_OPS; i++) refs[i] = (pl_ref){.arg = (int16_t)(KERN_ARG_MISSING - i)};
    for (int i = 0; i < n; i++) {
        pipe_op *o = &ops[i];
        int rank = o->hbm.rank, changed = s == 0;
        if (s == 0) block_at(c, o, idx, p->grid_rank, o->now);
        if (s > 0) {
            memcpy(o->now, o->next, sizeof o->now);
            changed = !same(o->now, o->prev_block, rank);
        }
        if (changed && s > 0) o->cur = 1 - o->cur;
        if (s + 1 < steps) block_at(c, o, nidx, p->grid_rank, o->next);
        if (!o->out) {
            if (s == 0) start(c, o, o->cur, o->now);                          /* P1 */
            if (s + 1 < steps && !same(o->next, o->now, rank)) start(c, o, 1 - o->cur, o->next); /* prefetch */
        }
        memcpy(o->prev_block, o->now, sizeof o->now);
        refs[i] = slot_ref(o, o->cur);
    }
    /* the loop's own work, a grid step's overhead (P9), while the copies just started fly, as the outer
     * pipeline issues its copies before its step overhead */
    kern_op over = {.kind = KERN_OP_SCALAR, .elems = c->target.step_scalar_ops, .name = "pltpu_emit_pipeline"};
    if (over.elems > 0) kern_record(c, &over);
    /* inputs: the current block has landed (a skipped copy waits nothing, P2); outputs: the write-back
     * that last used this slot has landed (P8; none when the block stays) */
    for (int i = 0; i < n; i++) finish(c, &ops[i], ops[i].cur);
    body(c, refs, idx, user);
    for (int i = 0; i < n; i++) {
        pipe_op *o = &ops[i];
        if (o->out && (s + 1 == steps || !same(o->next, o->now, o->hbm.rank))) start(c, o, o->cur, o->now); /* P3 */
    }
}

static void check_pipeline(pl_ctx *c, const pltpu_pipeline *p, const pl_ref *ins, const pl_ref *outs,
                           pltpu_pipeline_body body)
{
    if (!p || !body)
        kern_fault(c, PL_EINVAL, "pltpu_emit_pipeline: %s is NULL (rule K3)", !p ? "the pipeline" : "the body");
    if (p->grid_rank < 1 || p->grid_rank > PL_MAX_GRID)
        kern_fault(c, PL_EINVAL, "pltpu_emit_pipeline: grid of %d axes; 1 to %d (rules G2, K3)", p->grid_rank,
                   PL_MAX_GRID);
    for (int a = 0; a < p->grid_rank; a++)
        if (p->grid[a] < 1)
            kern_fault(c, PL_EINVAL, "pltpu_emit_pipeline: grid axis %d has %lld points; each needs >= 1 (rules "
                       "G2, K3)", a, (long long)p->grid[a]);
    if (p->n_in < 0 || p->n_out < 0 || p->n_in > PL_MAX_OPERANDS / 2 || p->n_out > PL_MAX_OPERANDS / 2 ||
        (p->n_in && !ins) || (p->n_out && !outs))
        kern_fault(c, PL_EINVAL, "pltpu_emit_pipeline: %d inputs and %d outputs (each 0 to %d, with their refs) "
                   "(rule K3)", p->n_in, p->n_out, PL_MAX_OPERANDS / 2);
}

void pltpu_emit_pipeline(pl_ctx *c, const pltpu_pipeline *p, const pl_ref *ins, const pl_ref *outs,
                         pltpu_pipeline_body body, void *user)
{
    check_pipeline(c, p, ins, outs, body);
    pipe_op ops[MAX_PIPE_OPS];
    int n = p->n_in + p->n_out;
    int64_t host = 0, counted = 0, steps = 1;
    for (int a = 0; a < p->grid_rank; a++) steps = steps > INT64_MAX / p->grid[a] ? INT64_MAX : steps * p->grid[a];
    for (int i = 0; i < n; i++) {
        pipe_op *o = &ops[i];
        memset(o, 0, sizeof *o);
        o->out = i >= p->n_in;
        o->hbm = o->out ? outs[i - p->n_in] : ins[i];
        o->spec = o->out ? &p->out[i - p->n_in] : &p->in[i];
        snprintf(o->name, sizeof o->name, "%s[%d]", o->out ? "out_specs" : "in_specs", o->out ? i - p->n_in : i);
        check_spec(c, p, o);
        int64_t e = 1, laid = kern_laid_out_bytes(c, o->spec->block, o->hbm.rank, o->hbm.dtype), bytes;
        int over = laid > INT64_MAX / 4 - counted; /* Buffered(2), and room for the sums below */
        for (int d = 0; d < o->hbm.rank && !over; d++) over = __builtin_mul_overflow(e, o->spec->block[d], &e);
        if (over || __builtin_mul_overflow(e, (int64_t)pl_dtype_size(o->hbm.dtype), &bytes) ||
            bytes > INT64_MAX / 4 - host)
            kern_fault(c, PL_EVMEM, "pltpu_emit_pipeline: %s: two buffers of its block do not fit in VMEM (rules "
                       "M4, K4)", o->name);
        o->slot_bytes = (bytes + 63) / 64 * 64;
        host += 2 * o->slot_bytes + 2 * KERN_SEM_STRIDE * 4;
        counted += 2 * laid;
    }
    char *mem = kern_scoped_push(c, (size_t)host, counted, "pltpu_emit_pipeline: its double buffers");
    for (int i = 0; i < n; i++) {
        ops[i].buf = mem;
        mem += 2 * ops[i].slot_bytes;
        size_t es = pl_dtype_size(ops[i].hbm.dtype);
        if (ops[i].out && !c->cost_only) /* an output block starts as garbage (P4): poison, V1 */
            for (int64_t e = 0; e < 2 * ops[i].slot_bytes / (int64_t)es; e++)
                pl_store_elem(ops[i].buf + e * (int64_t)es, ops[i].hbm.dtype, kern_poison_value(c, ops[i].hbm.dtype));
    }
    for (int i = 0; i < n; i++) {
        ops[i].sems = (int64_t *)mem;
        mem += 2 * KERN_SEM_STRIDE * 4;
    }
    int64_t idx[PL_MAX_GRID] = {0}, nidx[PL_MAX_GRID] = {0};
    for (int64_t s = 0; s < steps; s++) {
        memcpy(nidx, idx, sizeof idx); /* the next point, row-major (G1) */
        for (int a = p->grid_rank - 1; a >= 0; a--) {
            if (++nidx[a] < p->grid[a]) break;
            nidx[a] = 0;
        }
        step(c, p, ops, n, s, steps, idx, nidx, body, user);
        memcpy(idx, nidx, sizeof idx);
    }
    for (int i = 0; i < n; i++) {
        finish(c, &ops[i], 0);
        finish(c, &ops[i], 1);
    }
    kern_scoped_pop(c, "pltpu_emit_pipeline");
}
