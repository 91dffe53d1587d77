/* sim/walk.c: the grid walk and the pipeline (rules G1, G4, P1-P5).
 *
 * Each TensorCore walks its part of the grid in lexicographic order, last
 * axis fastest (G1); on a megacore chip the cores split one parallel axis
 * (G4) and are walked one after the other, each with its own VMEM buffers
 * and scratch (their timelines overlap again in the timing model). At each
 * grid point, for each operand: evaluate its index map; if the block is the
 * one already in VMEM, skip the copy (P2); otherwise an output writes its
 * previous block back (P3) and a new buffer slot is taken (P6): inputs copy
 * their block in (P1), outputs start as poison (P4, V1). Then the kernel
 * runs. After a core's last point, every output writes back its last block.
 *
 * Steps are numbered per core for the timing model, and globally (each
 * core's after the previous core's) for messages.
 */
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include "exec.h"

/* ---- steps and grid points ---------------------------------------------------- */

static int64_t core_steps(const sim_exec *x, int c)
{
    const pl_call *call = x->plan.call;
    int64_t n = 1;
    for (int a = 0; a < call->grid_rank; a++) n *= a == x->split_axis ? x->hi[c] - x->lo[c] : call->grid[a];
    return n;
}

/* sim_point_of_step, which the checks' messages use too, is in common.c. */

static char *slot_ptr(const sim_operand *op)
{
    return op->slots + (size_t)op->slot * (size_t)op->block_elems * op->elem_size;
}

/* In-bounds bytes of block bidx: what a copy moves. */
static int64_t window_bytes(const sim_operand *op, const int64_t *bidx)
{
    int interior = 1;
    for (int d = 0; d < op->rank; d++)
        interior &= op->squeezed[d] || (!op->element[d] && bidx[d] < op->nblocks[d] - 1);
    if (interior) return op->rep->block_bytes; /* the common case: no edge */
    int64_t start[PL_MAX_RANK], count[PL_MAX_RANK], boff[PL_MAX_RANK], n = (int64_t)op->elem_size;
    sim_block_window(op, bidx, start, count, boff);
    for (int d = 0; d < op->rank; d++) n *= count[d];
    return n;
}

static int same_block(const int64_t *a, const int64_t *b, int rank)
{
    for (int d = 0; d < rank; d++)
        if (a[d] != b[d]) return 0;
    return 1;
}

/* ---- the pipeline, per operand and step ---------------------------------- */

/* step: this core's step number. */
static int write_back(sim_exec *x, sim_operand *op, int64_t step)
{
    int64_t global = x->step_base[x->core] + step;
    int rc = sim_checks_writeback(x, op, global);
    if (rc) return rc;
    int64_t bytes = x->cost_only ? window_bytes(op, op->cur) : sim_copy_out(op, op->cur, slot_ptr(op));
    op->rep->bytes_out += bytes;
    op->rep->writebacks++;
    if (sim_opline_push(&x->cores[x->core].op[op->arg], step, bytes, op->slot, op->cur) ||
        sim_blockset_put(&x->written[op->arg], op->cur, op->rank, global))
        return sim_fail(&x->rep, PL_ENOMEM, "out of host memory recording write-backs of %s", op->rep->name);
    return PL_OK;
}

/* P5: an output block selected again after it was written back. Under
 * RevisitMode.ANY that is legal and sets *fetch: the block comes back from
 * HBM. */
static int check_revisit(sim_exec *x, const sim_operand *op, const int64_t *bidx, int64_t global, int *fetch)
{
    int64_t when;
    *fetch = 0;
    if (!sim_blockset_get(&x->written[op->arg], bidx, op->rank, &when)) return PL_OK;
    if (op->revisit_any) return *fetch = 1, PL_OK;
    if (op->aliased) return PL_OK; /* the block's earlier result is in HBM, where the input is (M6) */
    int64_t then[PL_MAX_GRID], now[PL_MAX_GRID];
    char a[128], b[128], blk[128];
    sim_point_of_step(x, when, then);
    sim_point_of_step(x, global, now);
    int g = x->plan.call->grid_rank;
    sim_format_idx(then, g, a, sizeof a);
    sim_format_idx(now, g, b, sizeof b);
    sim_format_idx(bidx, op->rank, blk, sizeof blk);
    return sim_fail(&x->rep, PL_EREVISIT,
                    "%s: grid point %s selects output block %s again, but that block was written back to HBM "
                    "after grid point %s; on hardware the earlier result is lost. Visit each output block in "
                    "consecutive grid points (put the reduction axis last), or opt in to fetching it back "
                    "from HBM with .revisit = PL_REVISIT_ANY (RevisitMode.ANY) (rule P5)",
                    op->rep->name, b, blk, a);
}

/* P5, RevisitMode.ANY: copy a revisited output block back from HBM, as an
 * input's copy (P1) would; it counts in the output's traffic and, marked as
 * a fetch, as a copy the step waits for in the timing model. */
static int fetch_back(sim_exec *x, sim_operand *op, const int64_t *bidx, char *buf, int64_t step)
{
    int64_t bytes = x->cost_only ? window_bytes(op, bidx) : sim_copy_in(op, bidx, buf, x->uninit);
    op->rep->fetchbacks++;
    op->rep->bytes_in += bytes;
    sim_opline *l = &x->cores[x->core].op[op->arg];
    if (sim_opline_push(l, step, bytes, op->slot, bidx))
        return sim_fail(&x->rep, PL_ENOMEM, "out of host memory recording fetch-backs of %s", op->rep->name);
    l->x[l->n - 1].fetch = 1;
    if (x->ctx.args) x->args[op->arg].written = 1; /* it holds the earlier visits' result, not garbage (P4) */
    return PL_OK;
}

/* Bring op to the block of this step. */
static int advance(sim_exec *x, sim_operand *op, const int64_t *idx, int64_t step)
{
    int64_t bidx[PL_MAX_RANK], global = x->step_base[x->core] + step;
    int rc, fetch = 0;
    if (op->ahead) { /* evaluated before the previous kernel ran (P8) */
        op->ahead = 0;
        if (op->ahead_rc) return sim_fail(&x->rep, op->ahead_rc, "%s", op->ahead_err ? op->ahead_err : "index map");
        memcpy(bidx, op->ahead_bidx, sizeof bidx);
    } else if ((rc = sim_eval_map(&x->plan, op, idx, x->prefetch, bidx, &x->rep))) {
        return rc;
    }
    size_t n = (size_t)op->rank * sizeof *bidx;
    pl_step_operand *so = x->info ? &x->info->op[op->arg] : NULL;
    if (so) {
        memset(so, 0, sizeof *so);
        memcpy(so->block, bidx, n);
    }
    if (op->role == PL_ROLE_OUT && (rc = sim_checks_race(x, op, bidx, global))) return rc;
    if (op->have_block && same_block(bidx, op->cur, op->rank)) {
        if (op->role == PL_ROLE_IN) op->rep->skipped++; /* P2 */
        if (so) so->action = op->role == PL_ROLE_IN ? PL_ACT_SKIP : PL_ACT_KEEP, so->slot = op->slot;
        return PL_OK;
    }
    if (op->role == PL_ROLE_OUT) {
        if (op->have_block) { /* P3 */
            int64_t before = op->rep->bytes_out;
            if ((rc = write_back(x, op, step - 1))) return rc;
            if (so) so->wrote_back = 1, so->wb_bytes = op->rep->bytes_out - before, memcpy(so->wb_block, op->cur, n);
        }
        if ((rc = check_revisit(x, op, bidx, global, &fetch))) return rc;
    }
    op->slot = (op->slot + 1) % op->buffers;
    memcpy(op->cur, bidx, n);
    op->cur_since = step;
    op->have_block = 1;
    char *buf = slot_ptr(op);
    x->refs[op->arg].data = buf;
    if (op->role == PL_ROLE_IN) {
        int64_t bytes = x->cost_only ? window_bytes(op, bidx) : sim_copy_in(op, bidx, buf, x->uninit);
        op->rep->copies++;
        op->rep->bytes_in += bytes;
        if (so) so->bytes = bytes;
        if (sim_opline_push(&x->cores[x->core].op[op->arg], step, bytes, op->slot, bidx))
            return sim_fail(&x->rep, PL_ENOMEM, "out of host memory recording copies of %s", op->rep->name);
    } else if (!fetch && !x->cost_only && x->checks) {
        sim_poison(buf, op->arr->dtype, op->block_elems, x->uninit); /* P4: garbage, made visible */
    }
    sim_checks_new_block(x, op, bidx);
    if (fetch && (rc = fetch_back(x, op, bidx, buf, step))) return rc;
    if (so) so->action = op->role == PL_ROLE_IN ? PL_ACT_COPY : fetch ? PL_ACT_FETCH : PL_ACT_NEW, so->slot = op->slot;
    if (so && fetch) so->bytes = window_bytes(op, bidx);
    return PL_OK;
}

/* ---- the kernel ------------------------------------------------------------------ */

/* Kernels repeat the same few ops at every step: remember the last times. */
static double op_seconds(sim_exec *x, const kern_op *o, double *padded)
{
    unsigned h = (unsigned)(o->kind * 31u + (unsigned)o->m * 7u + (unsigned)o->n * 3u + (unsigned)o->k +
                            (unsigned)o->elems) % SIM_OP_CACHE;
    sim_op_memo *m = &x->op_memo[h];
    if (m->valid && m->op.kind == o->kind && m->op.dtype == o->dtype && m->op.m == o->m && m->op.n == o->n &&
        m->op.k == o->k && m->op.elems == o->elems && m->op.flops == o->flops) {
        *padded = m->padded;
        return m->seconds;
    }
    m->op = *o;
    m->seconds = sim_op_seconds(x->plan.chip, o, &m->padded);
    m->valid = 1;
    *padded = m->padded;
    return m->seconds;
}

/* A step that starts or waits for manual copies becomes an event list: the
 * compute since the last event (*segment, then reset), then e. The list
 * grows as needed, so a step may issue any number of copies. */
static int record_event(sim_exec *x, sim_coreline *cl, double *segment, sim_kevent e)
{
    if ((*segment > 0 &&
         sim_coreline_event(cl, x->ctx.step, (sim_kevent){.kind = SIM_KEV_COMPUTE, .seconds = *segment})) ||
        sim_coreline_event(cl, x->ctx.step, e))
        return sim_fail(&x->rep, PL_ENOMEM, "out of host memory recording copies");
    *segment = 0;
    return PL_OK;
}

static int run_kernel(sim_exec *x)
{
    jmp_buf jb;
    memcpy(x->kernel_refs, x->refs, (size_t)x->n_refs * sizeof *x->refs);
    x->ctx.n_ops = 0;
    x->ctx.scalar_ops = 0;
    x->ctx.fault = &jb;
    if (setjmp(jb)) {
        x->ctx.fault = NULL;
        return sim_fail(&x->rep, x->ctx.fault_code, "%s", x->ctx.fault_msg);
    }
    x->plan.call->kernel(&x->ctx, x->kernel_refs);
    kern_flush_scalar(&x->ctx); /* element accesses after the last block op */
    x->ctx.fault = NULL;
    /* Steps that start or wait for manual copies become event lists for the
     * timing model: compute between the copies' starts and waits. */
    sim_coreline *cl = &x->cores[x->core];
    int events = 0;
    double seconds = 0, segment = 0;
    for (int i = 0; i < x->ctx.n_ops; i++) {
        const kern_op *o = &x->ctx.ops[i];
        if (o->kind == KERN_OP_DMA_START || o->kind == KERN_OP_DMA_WAIT) {
            events = 1;
            int64_t xfer = o->dma - x->dma_base;
            if (o->kind == KERN_OP_DMA_START) {
                if (sim_opline_push(&cl->manual, x->ctx.step, o->elems, 0, NULL))
                    return sim_fail(&x->rep, PL_ENOMEM, "out of host memory recording copies");
                x->rep.dma_copies++;
                if (o->m) x->rep.dma_bytes += o->elems; /* m: the copy touches HBM */
            }
            sim_kevent e = {.kind = o->kind == KERN_OP_DMA_START ? SIM_KEV_START : SIM_KEV_WAIT, .xfer = xfer};
            int rc = record_event(x, cl, &segment, e);
            if (rc) return rc;
            continue;
        }
        double padded, t = op_seconds(x, o, &padded);
        seconds += t;
        segment += t;
        if (o->kind == KERN_OP_DOT) {
            x->rep.mxu_flops += o->flops;
            x->rep.mxu_flops_padded += padded;
            x->rep.mxu_s += t;
            x->dot_flops[o->dtype] += o->flops;
        } else if (o->kind == KERN_OP_SCALAR) {
            x->rep.scalar_ops += o->elems;
            x->rep.scalar_s += t;
        } else {
            x->rep.vpu_flops += o->flops;
            x->rep.vpu_s += t;
            if (o->kind == KERN_OP_EUP) x->rep.eup_elems += o->elems;
        }
    }
    if (events) {
        int rc = record_event(x, cl, &segment, (sim_kevent){.kind = SIM_KEV_END});
        if (rc) return rc;
    }
    if (sim_coreline_step(&x->cores[x->core], seconds)) return sim_fail(&x->rep, PL_ENOMEM, "out of host memory");
    return PL_OK;
}

/* M10: when a core's last grid point is done, every copy must have been
 * waited and every semaphore must be back at zero. */
static int check_semaphores(sim_exec *x)
{
    pl_ctx *c = &x->ctx;
    char name[96], point[128];
    if (c->n_dma) {
        kern_ref_name(c, &c->dma[0].dst, name, sizeof name);
        kern_format_point(c->dma[0].point, c->grid_rank, point, sizeof point);
        return sim_fail(&x->rep, PL_ESEMAPHORE,
                        "copy %lld into %s, started at grid point %s, was never waited: its semaphore is left "
                        "non-zero when the kernel ends (rule M10)%s",
                        (long long)c->dma[0].id, name, point, c->n_dma > 1 ? "; and more copies like it" : "");
    }
    const pl_call *call = x->plan.call;
    for (int i = 0; i < call->n_scratch; i++) {
        if (call->scratch[i].space != PL_SEMAPHORE) continue;
        const int64_t *v = x->scratch_mem[i]; /* 64-bit counts (kernel/context.h) */
        for (int64_t j = 0; j < call->scratch[i].shape[0]; j++)
            if (v[j] != 0)
                return sim_fail(&x->rep, PL_ESEMAPHORE,
                                "semaphore %lld of %s (refs[%d]) holds %lld when the kernel ends; every signal "
                                "needs its wait (rule M10)",
                                (long long)j, x->rep.scratch[i].name, x->plan.n_ops + i, (long long)v[j]);
    }
    return PL_OK;
}

/* P8: the pipeline issues step n + 1's copies before kernel n runs, so an
 * index map that reads scalar prefetch sees the table as it was then: a
 * kernel's writes to it reach the maps two steps later, not one. */
static void look_ahead(sim_exec *x, const sim_grid_iter *at)
{
    const pl_call *call = x->plan.call;
    int64_t idx[PL_MAX_GRID];
    sim_grid_iter next = *at;
    if (!sim_grid_iter_next(&next)) return; /* the last step: nothing comes next */
    for (int a = 0; a < call->grid_rank; a++) idx[a] = x->perm[a] ? x->perm[a][next.pos[a]] : next.pos[a];
    for (int i = 0; i < x->plan.n_ops; i++) {
        sim_operand *op = &x->plan.ops[i];
        if (!op->pipelined || !op->map.fn) continue;
        char err[PL_MSG_MAX];
        op->ahead = 1;
        op->ahead_rc = sim_map_eval(&x->plan, op, idx, x->prefetch, op->ahead_bidx, err, sizeof err);
        if (op->ahead_rc && !op->ahead_err) op->ahead_err = malloc(PL_MSG_MAX);
        if (op->ahead_rc && op->ahead_err) snprintf(op->ahead_err, PL_MSG_MAX, "%s", err);
    }
}

/* ---- one core ---------------------------------------------------------------------- */

/* What a TensorCore has before its first grid point: empty pipelines, its own
 * copy of the scalar-prefetch arrays (M5) and uninitialized scratch (M2). */
static int start_core(sim_exec *x)
{
    sim_plan *p = &x->plan;
    x->ctx.n_dma = 0; /* copies in flight belong to one core */
    x->dma_base = x->ctx.next_dma;
    for (int i = 0; i < p->n_ops; i++) {
        sim_operand *op = &p->ops[i];
        op->have_block = 0;
        op->ahead = 0;
        op->slot = op->buffers - 1; /* the first new block takes slot 0 */
        sim_blockset_free(&x->written[i]); /* P5 concerns one core's buffers */
        if (op->role != PL_ROLE_PREFETCH) continue;
        memcpy(op->slots, op->arr->data, pl_array_bytes(op->arr));
        if (sim_opline_push(&x->cores[x->core].op[i], 0, (int64_t)pl_array_bytes(op->arr), 0, NULL))
            return sim_fail(&x->rep, PL_ENOMEM, "out of host memory");
    }
    for (int i = 0; i < p->call->n_scratch; i++) {
        const pl_scratch *s = &p->call->scratch[i];
        pl_array shape = {.dtype = s->dtype, .rank = s->rank};
        memcpy(shape.shape, s->shape, sizeof shape.shape);
        if (s->space == PL_SEMAPHORE) memset(x->scratch_mem[i], 0, x->scratch_bytes[i]); /* M9 */
        else if (!x->cost_only) sim_poison(x->scratch_mem[i], s->dtype, pl_array_size(&shape), x->uninit);
        if (x->checks) x->args[p->n_ops + i].initialized = 0;
    }
    return PL_OK;
}

static int walk_core(sim_exec *x)
{
    sim_plan *p = &x->plan;
    const pl_call *call = p->call;
    pl_ctx *c = &x->ctx;
    int core = x->core, rc;
    int64_t lo[PL_MAX_GRID] = {0}, hi[PL_MAX_GRID], steps = core_steps(x, core);
    for (int a = 0; a < call->grid_rank; a++) { /* G4: this core's chunk of the split axis */
        lo[a] = a == x->split_axis ? x->lo[core] : 0;
        hi[a] = a == x->split_axis ? x->hi[core] : call->grid[a];
    }
    sim_grid_iter it; /* it.pos: the point in walk order, before the order's permutation */
    sim_grid_iter_box(&it, call->grid_rank, lo, hi);
    sim_coreline *cl = &x->cores[core];
    if (x->tracing && !(cl->step_point = malloc((size_t)(steps + 1) * sizeof *cl->step_point)))
        return sim_fail(&x->rep, PL_ENOMEM, "out of host memory for the trace");
    /* at most one copy or write-back per operand and step: no regrowth on the way */
    int bad = sim_coreline_reserve(cl, steps);
    for (int i = 0; i < p->n_ops && !bad; i++)
        if (p->ops[i].pipelined) /* RevisitMode.ANY: a fetch-back too at most (P5) */
            bad = sim_opline_reserve(&cl->op[i], (p->ops[i].revisit_any ? 2 : 1) * steps + 1, x->tracing);
    if (bad) return sim_fail(&x->rep, PL_ENOMEM, "out of host memory recording %lld grid steps", (long long)steps);
    c->core = core;
    if ((rc = start_core(x))) return rc;
    for (int64_t step = 0; step < steps; step++) {
        int64_t linear = 0;
        for (int a = 0; a < call->grid_rank; a++) {
            c->idx[a] = x->perm[a] ? x->perm[a][it.pos[a]] : it.pos[a];
            linear = linear * call->grid[a] + c->idx[a];
        }
        if (cl->step_point) cl->step_point[step] = linear;
        c->step = step;
        for (int i = 0; i < p->n_ops; i++)
            if (p->ops[i].pipelined && (rc = advance(x, &p->ops[i], c->idx, step))) return rc;
        if (x->info) {
            x->info->step = step;
            x->info->core = core;
            memcpy(x->info->idx, c->idx, sizeof c->idx);
            x->on_step(x->info, x->on_step_user);
        }
        if (call->num_scalar_prefetch) look_ahead(x, &it);
        if ((rc = run_kernel(x))) return rc;
        x->rep.steps++;
        sim_grid_iter_next(&it); /* G1: last axis fastest */
    }
    if ((rc = check_semaphores(x))) return rc;
    if (x->info) x->info->final = 1;
    for (int i = 0; i < p->n_ops; i++) {
        sim_operand *op = &p->ops[i];
        pl_step_operand *so = x->info ? &x->info->op[i] : NULL;
        if (so) memset(so, 0, sizeof *so);
        if (!op->pipelined || op->role != PL_ROLE_OUT || !op->have_block) continue;
        int64_t before = op->rep->bytes_out;
        if ((rc = write_back(x, op, steps - 1))) return rc;
        if (so) so->wrote_back = 1, so->wb_bytes = op->rep->bytes_out - before,
                memcpy(so->wb_block, op->cur, (size_t)op->rank * sizeof *op->cur);
    }
    if (x->info) {
        x->info->step = steps;
        x->on_step(x->info, x->on_step_user);
        x->info->final = 0;
    }
    return PL_OK;
}

int sim_walk(sim_exec *x)
{
    pl_ctx *c = &x->ctx;
    const pl_call *call = x->plan.call;
    c->grid_rank = call->grid_rank;
    c->grid = call->grid;
    c->user = call->user;
    c->kernel_name = x->rep.call_name;
    c->cost_only = x->cost_only;
    memset(c->idx, 0, sizeof c->idx);
    for (int core = 1; core < x->n_cores; core++) x->step_base[core] = x->step_base[core - 1] + core_steps(x, core - 1);
    for (int core = 0; core < x->n_cores; core++) {
        x->core = core;
        int rc = walk_core(x);
        if (rc) return rc;
    }
    return PL_OK;
}
