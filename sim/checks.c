/* sim/checks.c: the executor's side of the checks hardware cannot make
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
#include <string.h>

#include "exec.h"

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

/* Warnings from the kernel layer: so far only writes into input blocks. */
static void kernel_warning(void *sink, int arg, const char *msg)
{
    sim_exec *x = sink;
    char named[1024];
    const sim_operand *op = arg >= 0 && arg < x->plan.n_ops ? &x->plan.ops[arg] : NULL;
    snprintf(named, sizeof named, "%s%s%s", op ? op->rep->name : "", op ? ": " : "", msg);
    sim_add_finding(&x->rep, PL_FIND_INPUT_WRITE, "V3", op ? arg : -1, x->ctx.idx, x->ctx.grid_rank,
                    op ? op->cur : NULL, op ? op->rank : 0, named);
}

/* ---- the argument table ------------------------------------------------------ */

int sim_checks_init(sim_exec *x)
{
    if (!x->checks || x->cost_only) return PL_OK; /* without data there is nothing to track */
    pl_ctx *c = &x->ctx;
    c->checks = 1;
    c->args = x->args;
    c->n_args = x->n_refs;
    c->warn = kernel_warning;
    c->warn_sink = x;
    for (int i = 0; i < x->n_refs; i++) {
        kern_arg *a = &x->args[i];
        memset(a, 0, sizeof *a);
        a->tmpl = x->refs[i];
        a->base = x->refs[i].data; /* pipelined operands: set per block */
        for (int d = 0; d < a->tmpl.rank; d++) a->vhi[d] = a->tmpl.shape[d];
    }
    return PL_OK;
}

void sim_checks_new_block(sim_exec *x, const sim_operand *op, const int64_t *bidx)
{
    if (!x->ctx.args) return;
    kern_arg *a = &x->args[op->arg];
    a->base = x->refs[op->arg].data;
    a->written = 0;
    if (op->role == PL_ROLE_OUT) { /* reads that explain this block's NaN start afresh */
        x->ctx.padding_read[0] = '\0';
        x->ctx.oob_read[0] = '\0';
    }
    int64_t start[PL_MAX_RANK], count[PL_MAX_RANK], boff[PL_MAX_RANK];
    a->clipped = (uint8_t)sim_block_window(op, bidx, start, count, boff);
    for (int d = 0, k = 0; d < op->rank; d++) /* the Ref drops squeezed dims (B4) */
        if (!op->squeezed[d]) {
            a->vlo[k] = boff[d];
            a->vhi[k++] = boff[d] + count[d];
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

/* First NaN inside the in-bounds window of block bidx in buf; its position
 * within the block in *pos. */
static int find_nan(const sim_operand *op, const int64_t *bidx, const char *buf, int64_t *pos)
{
    int64_t start[PL_MAX_RANK], count[PL_MAX_RANK], boff[PL_MAX_RANK], idx[PL_MAX_RANK] = {0};
    sim_block_window(op, bidx, start, count, boff);
    int rank = op->rank;
    for (int d = 0; d < rank; d++)
        if (count[d] <= 0) return 0;
    size_t es = op->elem_size;
    for (;;) {
        int64_t off = 0, stride = 1;
        for (int d = rank - 1; d >= 0; d--) off += (boff[d] + idx[d]) * stride, stride *= op->block[d];
        const char *row = buf + (size_t)off * es;
        int64_t n = rank ? count[rank - 1] : 1;
        /* a branch-free pass first (it vectorizes); the position only when needed */
        uint32_t any = op->arr->dtype == PL_F32 ? any_nan_f32((const uint32_t *)row, n)
                                                 : any_nan_16((const uint16_t *)row, n, op->arr->dtype);
        if (any)
            for (int64_t i = 0; i < n; i++)
                if (is_nan_bits(row + (size_t)i * es, op->arr->dtype)) {
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
static int inputs_hold_nan(const sim_exec *x)
{
    for (int i = 0; i < x->plan.n_ops; i++) {
        const sim_operand *op = &x->plan.ops[i];
        if (op->role != PL_ROLE_IN || !pl_dtype_is_float(op->arr->dtype) || !op->arr->data) continue;
        int64_t n = pl_array_size(op->arr);
        for (int64_t e = 0; e < n; e++)
            if (is_nan_bits((const char *)op->arr->data + (size_t)e * op->elem_size, op->arr->dtype)) return 1;
    }
    return 0;
}

int sim_checks_writeback(sim_exec *x, const sim_operand *op, int64_t last_step)
{
    if (!x->ctx.args) return PL_OK;
    const kern_arg *a = &x->args[op->arg];
    int64_t pos[PL_MAX_RANK];
    int unwritten = !a->written;
    if (!unwritten && !(pl_dtype_is_float(op->arr->dtype) && find_nan(op, op->cur, x->refs[op->arg].data, pos)))
        return PL_OK; /* the common case: nothing to say, nothing formatted */

    const pl_call *call = x->plan.call;
    int64_t point[PL_MAX_GRID];
    char where[128], blk[128], at[128], msg[1400]; /* findings keep the first 1023 bytes */
    sim_point_of_step(x, last_step, point);
    sim_format_idx(point, call->grid_rank, where, sizeof where);
    sim_format_idx(op->cur, op->rank, blk, sizeof blk);
    if (unwritten) {
        snprintf(msg, sizeof msg,
                 "%s: block %s went to HBM after grid point %s, but no op wrote to it while it was in VMEM: an "
                 "output block starts as garbage (rule P4); write all of it at the grid points that select it "
                 "(when accumulating, store it on the last reduction step)",
                 op->rep->name, blk, where);
    } else {
        sim_format_idx(pos, op->rank, at, sizeof at);
        const char *cause, *because = "";
        if (x->ctx.oob_read[0]) cause = "a read outside a Ref: ", because = x->ctx.oob_read;
        else if (x->ctx.uninit_read[0]) cause = "an accumulator that was never zeroed: ", because = x->ctx.uninit_read;
        else if (x->ctx.padding_read[0]) cause = "a read of edge-block padding: ", because = x->ctx.padding_read;
        else if (x->uninit == PL_UNINIT_NAN && !inputs_hold_nan(x))
            cause = "part of the block left unwritten (rule P4), or a NaN computed by the kernel";
        else cause = "NaN already in the inputs, or computed by the kernel";
        snprintf(msg, sizeof msg,
                 "%s: NaN written back to HBM at element %s of block %s, after grid point %s (rule V1); likely "
                 "cause: %s%s",
                 op->rep->name, at, blk, where, cause, because);
    }
    sim_add_finding(&x->rep, unwritten ? PL_FIND_UNWRITTEN : PL_FIND_POISON, unwritten ? "P4" : "V1", op->arg, point,
                    call->grid_rank, op->cur, op->rank, msg);
    return x->strict ? sim_fail(&x->rep, PL_EPOISON, "%s", msg) : PL_OK;
}

/* ---- races (V4) ------------------------------------------------------------------ */

int sim_checks_race(sim_exec *x, const sim_operand *op, const int64_t *bidx, int64_t step)
{
    /* declarative maps were checked before running (validate.c) */
    if (!x->checks || !x->parallel_axes || !op->map.fn || x->race_warned[op->arg]) return PL_OK;
    sim_blockset *set = &x->writers[op->arg];
    int64_t first;
    if (!sim_blockset_get(set, bidx, op->rank, &first)) {
        if (sim_blockset_put(set, bidx, op->rank, step)) return sim_fail(&x->rep, PL_ENOMEM, "out of host memory");
        return PL_OK;
    }
    const pl_call *call = x->plan.call;
    int64_t then[PL_MAX_GRID], now[PL_MAX_GRID];
    sim_point_of_step(x, first, then);
    sim_point_of_step(x, step, now);
    for (int a = 0; a < call->grid_rank; a++) {
        if (call->semantics[a] != PL_PARALLEL || then[a] == now[a]) continue;
        x->race_warned[op->arg] = 1; /* a one-core warning is given once per output */
        return sim_race(&x->plan, &x->rep, op, then, now, a, bidx, "");
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
             "block %s%s: %s (rules V4, G3); mark axis %d arbitrary if it is a reduction",
             op->rep->name, s0, s1, axis, sb, why, where, axis);
    if (chip->cores_per_device > 1 || plan->strict) return sim_fail(rep, PL_ERACE, "%s", msg);
    sim_add_finding(rep, PL_FIND_RACE, "V4", op->arg, p1, g, blk, op->rank, msg);
    return PL_OK;
}
