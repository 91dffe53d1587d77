/* sim/call/checks.c: the executor's side of the checks hardware cannot make
 * (rules V1, V3, V4, P4 of PALLAS.md).
 *
 * The kernel layer notes reads and writes per argument (kernel/checks.c);
 * this file keeps that table up to date as blocks change, looks at every
 * output block on its way to HBM (was it written at all? does it carry NaN
 * poison, and which suspicious read explains it?), and tracks which grid
 * points write each output block, so that two points that differ in a
 * parallel axis cannot share one (a race on a megacore chip).
 */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "core.h"

/* ---- findings --------------------------------------------------------------- */

void sim_add_finding(pl_report *rep, pl_finding_kind kind, const char *rule, int operand, const int64_t *point,
                     int grid_rank, const int64_t *block, int rank, const char *msg)
{
    sim_warn(rep, "%s", msg);
    if (rep->n_findings++ >= PL_MAX_FINDINGS) return;
    pl_finding *f = &rep->findings[rep->n_findings - 1];
    memset(f, 0, sizeof *f);
    f->kind = kind;
    snprintf(f->rule, sizeof f->rule, "%s", rule);
    f->operand = operand;
    if (point) memcpy(f->point, point, (size_t)grid_rank * sizeof *point);
    if (block) memcpy(f->block, block, (size_t)rank * sizeof *block);
    snprintf(f->msg, sizeof f->msg, "%.*s", (int)sizeof f->msg - 1, msg); /* the first part of a long one */
}

/* Warnings from the kernel layer, by kind: a write into an input block (V3), a read or write of a copy's
 * bytes before its wait (M7), a copy descriptor never used (M7). */
void sim_kernel_warning(void *core, int arg, const char *rule, kern_warning what, const char *msg)
{
    sim_core *k = core;
    char named[1024];
    const sim_plan *plan = &k->x->plan;
    const sim_pipe *p = arg >= 0 && arg < plan->n_ops ? &k->pipe[arg] : NULL;
    snprintf(named, sizeof named, "%s%s%s", p ? p->op->rep->name : "", p ? ": " : "", msg);
    pl_finding_kind kind = what == KERN_WARN_DMA_INFLIGHT ? PL_FIND_DMA_INFLIGHT
                           : what == KERN_WARN_UNUSED_COPY ? PL_FIND_UNUSED_COPY
                           : what == KERN_WARN_PARALLEL_WAIT ? PL_FIND_PARALLEL_WAIT
                                                           : PL_FIND_INPUT_WRITE;
    sim_add_finding(&k->rep, kind, rule, p ? arg : -1, k->ctx.idx, k->ctx.grid_rank,
                    p ? p->cur : NULL, p ? p->op->rank : 0, named);
}

/* ---- the argument table ------------------------------------------------------ */

void sim_checks_init(sim_core *k)
{
    if (!k->x->checks || k->x->cost_only) return; /* without data there is nothing to track */
    k->checking = 1;
    for (int i = 0; i < k->n_refs; i++) {
        kern_arg *a = &k->args[i];
        memset(a, 0, sizeof *a);
        a->tmpl = k->refs[i];
        a->base = k->refs[i].data; /* pipelined operands: set per block */
        for (int d = 0; d < a->tmpl.rank; d++) a->vhi[d] = a->tmpl.shape[d];
    }
}

void sim_checks_new_block(sim_core *k, const sim_pipe *p)
{
    if (!k->checking) return;
    const sim_operand *op = p->op;
    kern_arg *a = &k->args[op->arg];
    a->base = k->refs[op->arg].data;
    a->written = 0;
    if (op->role == PL_ROLE_OUT) a->initialized = 0, kern_new_output_block(&k->ctx); /* reads that explain its NaN start afresh */
    const sim_window *w = &p->win;
    a->clipped = (uint8_t)w->clipped;
    for (int d = 0, j = 0; d < op->rank; d++) /* the Ref drops squeezed dims (B4) */
        if (!op->squeezed[d]) {
            a->vlo[j] = w->boff[d];
            a->vhi[j++] = w->boff[d] + w->count[d];
        }
}

/* ---- output blocks on their way to HBM ----------------------------------- */

static int is_nan_bits(const char *p, pl_dtype t)
{
    uint32_t u;
    uint16_t h;
    switch (t) {
    case PL_F32: memcpy(&u, p, 4); return (u & 0x7fffffffu) > 0x7f800000u;
    case PL_BF16: memcpy(&h, p, 2); return (h & 0x7fffu) > 0x7f80u;
    case PL_F16: memcpy(&h, p, 2); return (h & 0x7fffu) > 0x7c00u;
    case PL_F8E4M3: return (*(const uint8_t *)p & 0x7fu) == 0x7fu; /* e4m3fn: S.1111.111 only */
    case PL_F8E5M2: return (*(const uint8_t *)p & 0x7fu) > 0x7cu;  /* exponent all ones, mantissa not 0 */
    /* integers: the poison value (V1), which a kernel may also compute; asked only where the kernel read
     * uninitialized memory (sim_checks_writeback) */
    case PL_I32: { int32_t i; memcpy(&i, p, 4); return i == INT32_MAX; }
    case PL_I16: { int16_t i; memcpy(&i, p, 2); return i == INT16_MAX; }
    case PL_I8: return *(const int8_t *)p == INT8_MAX;
    default: return 0;
    }
}

/* Nonzero if any of n f32 values is a NaN: with x = bits & 0x7fffffff, a NaN
 * has x > 0x7f800000, so x + 0x7fffff carries into bit 31. OR-ing those
 * sums is a reduction GCC vectorizes; this scan runs on every write-back. */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("O3")))
#endif
static uint32_t any_nan_f32(const uint32_t *u, int64_t n)
{
    uint32_t acc = 0;
    for (int64_t i = 0; i < n; i++) acc |= (u[i] & 0x7fffffffu) + 0x7fffffu;
    return acc & 0x80000000u;
}

#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("O3")))
#endif
static uint32_t any_nan_16(const uint16_t *h, int64_t n, pl_dtype t)
{
    uint32_t acc = 0, add = t == PL_BF16 ? 0x7fffu - 0x7f80u : 0x7fffu - 0x7c00u; /* carries into bit 15 */
    for (int64_t i = 0; i < n; i++) acc |= (uint32_t)(h[i] & 0x7fffu) + add;
    return acc & 0x8000u;
}

int64_t sim_nan_in(const void *p, pl_dtype t, int64_t n)
{
    const char *row = p;
    size_t es = pl_dtype_size(t);
    /* a branch-free pass first (it vectorizes); the position only when needed */
    int fl = pl_dtype_is_float(t);
    uint32_t any = fl && es == 4 ? any_nan_f32((const uint32_t *)p, n)
                   : fl && es == 2 ? any_nan_16((const uint16_t *)p, n, t)
                                   : 1; /* 8-bit floats, integers: element by element below */
    if (any)
        for (int64_t i = 0; i < n; i++)
            if (is_nan_bits(row + (size_t)i * es, t)) return i;
    return -1;
}

/* First NaN inside the in-bounds window w of a block in buf; its position
 * within the block in *pos. */
static int find_nan(const sim_operand *op, const sim_window *w, const char *buf, int64_t *pos)
{
    int64_t idx[PL_MAX_RANK] = {0};
    const int64_t *count = w->count, *boff = w->boff;
    int rank = op->rank;
    for (int d = 0; d < rank; d++)
        if (count[d] <= 0) return 0;
    size_t es = op->elem_size;
    for (;;) {
        int64_t off = 0, stride = 1;
        for (int d = rank - 1; d >= 0; d--) off += (boff[d] + idx[d]) * stride, stride *= op->block[d];
        int64_t i = sim_nan_in(buf + (size_t)off * es, op->arr->dtype, rank ? count[rank - 1] : 1);
        if (i >= 0) {
            for (int e = 0; e < rank; e++) pos[e] = boff[e] + idx[e];
            pos[rank - 1] = boff[rank - 1] + i;
            return 1;
        }
        int d = rank - 2;
        for (; d >= 0; d--) {
            if (++idx[d] < count[d]) break;
            idx[d] = 0;
        }
        if (d < 0) return 0;
    }
}

/* Does any input array already hold NaN? Then NaN in an output proves little. */
static int inputs_hold_nan(const sim_plan *plan)
{
    for (int i = 0; i < plan->n_ops; i++) {
        const sim_operand *op = &plan->ops[i];
        if (op->role != PL_ROLE_IN || !pl_dtype_is_float(op->arr->dtype) || !op->arr->data) continue;
        if (sim_nan_in(op->arr->data, op->arr->dtype, pl_array_size(op->arr)) >= 0) return 1;
    }
    return 0;
}

int sim_checks_writeback(sim_core *k, const sim_pipe *p, int64_t last_step)
{
    if (!k->checking) return PL_OK;
    const sim_exec *x = k->x;
    const sim_operand *op = p->op;
    const kern_arg *a = &k->args[op->arg];
    int64_t pos[PL_MAX_RANK];
    /* filled by another device's remote copy (M11) while this block was here counts as written */
    int unwritten = !a->written &&
                    __atomic_load_n(&x->remote_written[op->arg][sim_remote_slot(p)], __ATOMIC_ACQUIRE) == p->remote_seen;
    /* an integer has no NaN: its poison (the dtype's maximum) is a finding only once the kernel has read
     * uninitialized memory, as a kernel may compute that value itself */
    const pl_ctx *cx = &k->ctx;
    int fl = pl_dtype_is_float(op->arr->dtype), ints = !fl && x->uninit == PL_UNINIT_NAN &&
        (cx->uninit_read[0] || cx->out_read[0] || cx->oob_read[0] || cx->padding_read[0]);
    if (!unwritten && !((fl || ints) && find_nan(op, &p->win, k->refs[op->arg].data, pos)))
        return PL_OK; /* the common case: nothing to say, nothing formatted */

    const pl_call *call = x->plan.call;
    int64_t point[PL_MAX_GRID];
    char where[128], blk[128], at[128], msg[1600]; /* findings keep the first 1023 bytes */
    sim_point_of_step(x, last_step, point);
    sim_format_idx(point, call->grid_rank, where, sizeof where);
    sim_format_idx(p->cur, op->rank, blk, sizeof blk);
    if (unwritten) {
        snprintf(msg, sizeof msg,
                 "%s: block %s went to HBM after grid point %s, but no op wrote to it while it was in VMEM: an "
                 "output block starts as garbage (rule P4); write all of it at the grid points that select it "
                 "(when accumulating, store it on the last reduction step)",
                 op->rep->name, blk, where);
    } else {
        sim_format_idx(pos, op->rank, at, sizeof at);
        const char *cause, *because = "";
        if (k->ctx.oob_read[0]) cause = "a read outside a Ref: ", because = k->ctx.oob_read;
        else if (k->ctx.uninit_read[0] && k->ctx.uninit_core)
            cause = "scratch this core never initialized: ", because = k->ctx.uninit_read;
        else if (k->ctx.uninit_read[0]) cause = "an accumulator that was never zeroed (or a running max or sum never set to its start): ", because = k->ctx.uninit_read;
        else if (k->ctx.out_read[0]) cause = "an output block read before it was written: ", because = k->ctx.out_read;
        else if (k->ctx.padding_read[0]) /* an edge block's overhang (B6), or a whole block past the end (B7) */
            cause = k->ctx.padding_past ? "a read past the array: " : "a read of edge-block padding: ",
            because = k->ctx.padding_read;
        else if (x->uninit == PL_UNINIT_NAN && !inputs_hold_nan(&x->plan))
            cause = "part of the block left unwritten (rule P4), or a NaN computed by the kernel";
        else cause = "NaN already in the inputs, or computed by the kernel";
        char what[96];
        if (fl) snprintf(what, sizeof what, "NaN");
        else snprintf(what, sizeof what, "%s's poison value %ld (uninitialized integers read as the dtype's maximum)",
                      pl_dtype_name(op->arr->dtype),
                      op->arr->dtype == PL_I32 ? (long)INT32_MAX : op->arr->dtype == PL_I16 ? (long)INT16_MAX : (long)INT8_MAX);
        snprintf(msg, sizeof msg,
                 "%s: %s written back to HBM at element %s of block %s, after grid point %s (rule V1); likely "
                 "cause: %s%s",
                 op->rep->name, what, at, blk, where, cause, because);
    }
    sim_add_finding(&k->rep, unwritten ? PL_FIND_UNWRITTEN : PL_FIND_POISON, unwritten ? "P4" : "V1", op->arg, point,
                    call->grid_rank, p->cur, op->rank, msg);
    return x->strict ? sim_fail(&k->rep, PL_EPOISON, "%s", msg) : PL_OK;
}

/* ---- races (V4) ------------------------------------------------------------------ */

/* The first global step that selected block bidx of p's output: in the
 * earlier cores' sets first (their steps come first), then this core's;
 * a block nobody selected yet is recorded for this core at `step`.
 * 1 found, 0 recorded, -1 out of memory. */
static int first_writer(const sim_core *k, sim_pipe *p, const int64_t *bidx, int64_t step, int64_t *first)
{
    for (int c = 0; c < k->index && k->cross_cores; c++)
        if (sim_blockset_get(&k->x->cores[c]->pipe[p->op->arg].writers, bidx, p->op->rank, first)) return 1;
    if (sim_blockset_get(&p->writers, bidx, p->op->rank, first)) return 1;
    return sim_blockset_put(&p->writers, bidx, p->op->rank, step) ? -1 : 0;
}

/* Cores on host threads: first_writer under the lock every core takes here,
 * after asking whether another core selected block bidx already. Then the
 * two would write it back at the same time: 2, and this core stops; the
 * walk runs again in order to report the race (walk.c). */
static int first_writer_locked(sim_core *k, sim_pipe *p, const int64_t *bidx, int64_t step, int64_t *first)
{
    sim_exec *x = k->x;
    int found = 0;
    pthread_mutex_lock(&x->meet_lock);
    for (int c = 0; c < x->n_cores && !found; c++)
        found = c != k->index && sim_blockset_get(&x->cores[c]->pipe[p->op->arg].writers, bidx, p->op->rank, first);
    found = found ? 2 : first_writer(k, p, bidx, step, first);
    pthread_mutex_unlock(&x->meet_lock);
    return found;
}

int sim_checks_race(sim_core *k, sim_pipe *p, const int64_t *bidx, int64_t step)
{
    sim_exec *x = k->x;
    const sim_operand *op = p->op;
    /* declarative maps were checked before running (maps.c) */
    if (!x->checks || !x->parallel_axes || !op->map.fn || p->race_warned) return PL_OK;
    int64_t first;
    int found = x->threaded ? first_writer_locked(k, p, bidx, step, &first) : first_writer(k, p, bidx, step, &first);
    if (found < 0) return sim_fail(&k->rep, PL_ENOMEM, "out of host memory");
    if (found == 2) {
        k->met = 1;
        return sim_fail(&k->rep, PL_ERACE, "TensorCore %d met another on a block of %s", k->index, op->rep->name);
    }
    if (!found) return PL_OK;
    const pl_call *call = x->plan.call;
    int64_t then[PL_MAX_GRID], now[PL_MAX_GRID];
    sim_point_of_step(x, first, then);
    sim_point_of_step(x, step, now);
    for (int a = 0; a < call->grid_rank; a++) {
        if (call->semantics[a] != PL_PARALLEL || then[a] == now[a]) continue;
        p->race_warned = 1; /* a one-core warning is given once per output */
        return sim_race(&x->plan, &k->rep, op, then, now, a, bidx, "");
    }
    return PL_OK;
}

/* ---- races (V4) ------------------------------------------------------------------ */

int sim_race(const sim_plan *plan, pl_report *rep, const sim_operand *op, const int64_t *p0, const int64_t *p1,
             int axis, const int64_t *blk, const char *why)
{
    if (!plan->checks) return PL_OK; /* checks off: no race tracking (V4) */
    const pl_chip *chip = plan->chip;
    int g = plan->call->grid_rank;
    char s0[128], s1[128], sb[128], msg[PL_MSG_MAX], where[200];
    sim_format_idx(p0, g, s0, sizeof s0);
    sim_format_idx(p1, g, s1, sizeof s1);
    sim_format_idx(blk, op->rank, sb, sizeof sb);
    if (chip->cores_per_device > 1)
        snprintf(where, sizeof where, "on %s, with %d TensorCores, they may run on different cores and one result "
                 "is lost", chip->name, chip->cores_per_device);
    else
        snprintf(where, sizeof where, "%s has one TensorCore, so they run in order and give the sequential answer, "
                 "but on megacore chips (v4, v5p) they would race and one result is lost", chip->name);
    snprintf(msg, sizeof msg, "%s: grid points %s and %s differ in axis %d, which is parallel, yet both write output "
             "block %s%s: %s (rules V4, G3); mark axis %d arbitrary if it is a reduction, or else make %s's "
             "index map follow axis %d, so that each point of it writes its own block",
             op->rep->name, s0, s1, axis, sb, why, where, axis, op->rep->name, axis);
    if (chip->cores_per_device > 1 || plan->strict) return sim_fail(rep, PL_ERACE, "%s", msg);
    sim_add_finding(rep, PL_FIND_RACE, "V4", op->arg, p1, g, blk, op->rank, msg);
    return PL_OK;
}
