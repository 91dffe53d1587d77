/* sim/exec.c: pl_pallas_call: validate, allocate VMEM, walk the grid.
 *
 * The walk follows rule G1 (lexicographic order, last axis fastest) on one
 * TensorCore. At each grid point, for each operand: evaluate its index map;
 * if the block is the one already in VMEM, skip the copy (P2); otherwise an
 * output writes its previous block back (P3) and a new buffer slot is taken
 * (P6): inputs copy their block in (P1), outputs start as poison (P4, V1).
 * Then the kernel runs on the buffers. After the last point every output
 * writes back its last block.
 *
 * A fault inside the kernel longjmps back here (kernel/context.h); every
 * allocation of the call belongs to the sim_exec value, so one cleanup path
 * serves success and failure alike.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include "blockset.h"
#include "sim.h"
#include "timing.h"

#define MAX_OPS (3 * PL_MAX_OPERANDS)

typedef struct sim_exec {
    sim_plan plan;
    pl_report rep;
    pl_uninit uninit;
    int cost_only;
    pl_ctx ctx;
    int n_refs;                                /* plan.n_ops + scratch */
    pl_ref refs[MAX_OPS + PL_MAX_SCRATCH];     /* templates: data set once or per new block */
    pl_ref kernel_refs[MAX_OPS + PL_MAX_SCRATCH]; /* the copy the kernel may scribble on */
    pl_ref prefetch[PL_MAX_OPERANDS];          /* SMEM copies of the prefetch args (M5) */
    void *scratch_mem[PL_MAX_SCRATCH];
    sim_blockset written[MAX_OPS];             /* per output: block -> write-back step (P5) */
    sim_coreline core;                         /* what the walk did, for the timing model */
    int tracing;
    FILE *trace;
    double dot_flops[PL_DTYPE_COUNT];          /* MXU work per dtype */
    pl_step_fn on_step;
    void *on_step_user;
    pl_step_info *info;                        /* what this step did, when on_step is set */
} sim_exec;

static _Thread_local char last_error[PL_MSG_MAX];

const char *pl_last_error(void) { return last_error; }

/* ---- allocation --------------------------------------------------------------- */

static int alloc_buffers(sim_exec *x)
{
    sim_plan *p = &x->plan;
    for (int i = 0; i < p->n_ops; i++) {
        sim_operand *op = &p->ops[i];
        x->refs[op->arg] = op->ref;
        if (op->role == PL_ROLE_PREFETCH) {
            size_t bytes = pl_array_bytes(op->arr);
            op->slots = malloc(bytes);
            if (!op->slots) return sim_fail(&x->rep, PL_ENOMEM, "out of host memory for %s", op->rep->name);
            memcpy(op->slots, op->arr->data, bytes); /* whole, before the grid (M5) */
            op->rep->copies = 1;
            op->rep->bytes_in = (int64_t)bytes;
            x->core.op[op->arg].buffers = 1;
            if (sim_opline_push(&x->core.op[op->arg], 0, (int64_t)bytes, 0, NULL))
                return sim_fail(&x->rep, PL_ENOMEM, "out of host memory");
            x->refs[op->arg].data = op->slots;
            x->prefetch[op->index] = x->refs[op->arg];
            continue;
        }
        if (!op->pipelined) { /* ANY: the kernel gets the HBM array itself (T5) */
            x->refs[op->arg].data = op->arr->data;
            continue;
        }
        size_t bytes = (size_t)op->block_elems * op->elem_size * (size_t)op->buffers;
        sim_opline *line = &x->core.op[op->arg];
        line->is_out = op->role == PL_ROLE_OUT;
        line->buffers = op->buffers;
        line->rank = x->tracing ? op->rank : 0;
        /* cost-only runs may read what they never wrote: zeroed, not random */
        op->slots = x->cost_only ? calloc(1, bytes) : malloc(bytes);
        if (!op->slots)
            return sim_fail(&x->rep, PL_ENOMEM, "out of host memory for the %d buffers of %s (%zu bytes)",
                            op->buffers, op->rep->name, bytes);
        op->slot = op->buffers - 1; /* the first new block takes slot 0 */
    }
    const pl_call *call = p->call;
    for (int i = 0; i < call->n_scratch; i++) {
        const pl_scratch *s = &call->scratch[i];
        pl_array shape = {.dtype = s->dtype, .rank = s->rank};
        memcpy(shape.shape, s->shape, sizeof shape.shape);
        int64_t n = pl_array_size(&shape);
        size_t bytes = (size_t)n * pl_dtype_size(s->dtype);
        x->scratch_mem[i] = x->cost_only ? calloc(1, bytes) : malloc(bytes);
        if (!x->scratch_mem[i])
            return sim_fail(&x->rep, PL_ENOMEM, "out of host memory for %s", x->rep.scratch[i].name);
        if (!x->cost_only) sim_poison(x->scratch_mem[i], s->dtype, n, x->uninit); /* M2, V1 */
        pl_ref *r = &x->refs[p->n_ops + i];
        *r = (pl_ref){.data = x->scratch_mem[i], .dtype = s->dtype, .space = s->space, .rank = s->rank,
                      .arg = (int16_t)(p->n_ops + i), .role = PL_ROLE_SCRATCH};
        int64_t stride = 1;
        for (int d = s->rank - 1; d >= 0; d--) {
            r->shape[d] = s->shape[d];
            r->stride[d] = stride;
            stride *= s->shape[d];
        }
    }
    x->n_refs = p->n_ops + call->n_scratch;
    x->core.n_ops = p->n_ops;
    if (x->on_step) {
        if (!(x->info = calloc(1, sizeof *x->info))) return sim_fail(&x->rep, PL_ENOMEM, "out of host memory");
        x->info->grid_rank = call->grid_rank;
        x->info->n_operands = p->n_ops;
        for (int i = 0; i < p->n_ops; i++) {
            x->info->names[i] = p->ops[i].rep->name;
            x->info->ranks[i] = p->ops[i].rank;
        }
    }
    return PL_OK;
}

static void free_exec(sim_exec *x)
{
    for (int i = 0; i < x->plan.n_ops; i++) {
        free(x->plan.ops[i].slots);
        sim_blockset_free(&x->written[i]);
    }
    for (int i = 0; i < PL_MAX_SCRATCH; i++) free(x->scratch_mem[i]);
    free(x->ctx.ops);
    free(x->ctx.tmp);
    sim_coreline_free(&x->core);
    free(x->info);
    if (x->trace) fclose(x->trace);
    free(x);
}

/* ---- the pipeline, per operand and step ---------------------------------- */

static int64_t linear_block(const sim_operand *op, const int64_t *bidx)
{
    int64_t k = 0;
    for (int d = 0; d < op->rank; d++) k = k * op->nblocks[d] + bidx[d];
    return k;
}

static char *slot_ptr(const sim_operand *op) { return op->slots + (size_t)op->slot * (size_t)op->block_elems * op->elem_size; }

static void unravel(const sim_plan *p, int64_t step, int64_t *idx)
{
    for (int a = p->call->grid_rank - 1; a >= 0; a--) {
        idx[a] = step % p->call->grid[a];
        step /= p->call->grid[a];
    }
}

/* In-bounds bytes of block bidx: what a copy moves. */
static int64_t window_bytes(const sim_operand *op, const int64_t *bidx)
{
    int64_t start[PL_MAX_RANK], count[PL_MAX_RANK], n = (int64_t)op->elem_size;
    sim_block_window(op, bidx, start, count);
    for (int d = 0; d < op->rank; d++) n *= count[d];
    return n;
}

static int write_back(sim_exec *x, sim_operand *op, int64_t last_step)
{
    int64_t bytes = x->cost_only ? window_bytes(op, op->cur) : sim_copy_out(op, op->cur, slot_ptr(op));
    op->rep->bytes_out += bytes;
    op->rep->writebacks++;
    if (sim_opline_push(&x->core.op[op->arg], last_step, bytes, op->slot, op->cur))
        return sim_fail(&x->rep, PL_ENOMEM, "out of host memory recording write-backs of %s", op->rep->name);
    if (sim_blockset_put(&x->written[op->arg], linear_block(op, op->cur), last_step))
        return sim_fail(&x->rep, PL_ENOMEM, "out of host memory tracking write-backs of %s", op->rep->name);
    return PL_OK;
}

/* P5: an output block selected again after it was written back. */
static int check_revisit(sim_exec *x, const sim_operand *op, const int64_t *bidx, int64_t step)
{
    int64_t when;
    if (!sim_blockset_get(&x->written[op->arg], linear_block(op, bidx), &when)) return PL_OK;
    int64_t then[PL_MAX_GRID], now[PL_MAX_GRID];
    char a[128], b[128], blk[128];
    unravel(&x->plan, when, then);
    unravel(&x->plan, step, now);
    int g = x->plan.call->grid_rank;
    sim_format_idx(then, g, a, sizeof a);
    sim_format_idx(now, g, b, sizeof b);
    sim_format_idx(bidx, op->rank, blk, sizeof blk);
    return sim_fail(&x->rep, PL_EREVISIT,
                    "%s: grid point %s selects output block %s again, but that block was written back to HBM "
                    "after grid point %s; on hardware the earlier result is lost. Visit each output block in "
                    "consecutive grid points (put the reduction axis last) (rule P5)",
                    op->rep->name, b, blk, a);
}

static int same_block(const int64_t *a, const int64_t *b, int rank)
{
    for (int d = 0; d < rank; d++)
        if (a[d] != b[d]) return 0;
    return 1;
}

/* Bring op to the block of this step. */
static int advance(sim_exec *x, sim_operand *op, const int64_t *idx, int64_t step)
{
    int64_t bidx[PL_MAX_RANK];
    int rc = sim_eval_map(&x->plan, op, idx, x->prefetch, bidx, &x->rep);
    if (rc) return rc;
    size_t n = (size_t)op->rank * sizeof *bidx;
    pl_step_operand *so = x->info ? &x->info->op[op->arg] : NULL;
    if (so) {
        memset(so, 0, sizeof *so);
        memcpy(so->block, bidx, n);
    }
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
        if ((rc = check_revisit(x, op, bidx, step))) return rc;
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
        if (sim_opline_push(&x->core.op[op->arg], step, bytes, op->slot, bidx))
            return sim_fail(&x->rep, PL_ENOMEM, "out of host memory recording copies of %s", op->rep->name);
    } else if (!x->cost_only) {
        sim_poison(buf, op->arr->dtype, op->block_elems, x->uninit); /* P4 */
    }
    if (so) so->action = op->role == PL_ROLE_IN ? PL_ACT_COPY : PL_ACT_NEW, so->slot = op->slot;
    return PL_OK;
}

/* ---- the kernel ------------------------------------------------------------------ */

static int run_kernel(sim_exec *x)
{
    jmp_buf jb;
    memcpy(x->kernel_refs, x->refs, (size_t)x->n_refs * sizeof *x->refs);
    x->ctx.n_ops = 0;
    x->ctx.fault = &jb;
    if (setjmp(jb)) {
        x->ctx.fault = NULL;
        return sim_fail(&x->rep, x->ctx.fault_code, "%s", x->ctx.fault_msg);
    }
    x->plan.call->kernel(&x->ctx, x->kernel_refs);
    x->ctx.fault = NULL;
    const pl_chip *chip = x->plan.chip;
    double seconds = 0;
    for (int i = 0; i < x->ctx.n_ops; i++) {
        const kern_op *o = &x->ctx.ops[i];
        double padded, t = sim_op_seconds(chip, o, &padded);
        seconds += t;
        if (o->kind == KERN_OP_DOT) {
            x->rep.mxu_flops += o->flops;
            x->rep.mxu_flops_padded += padded;
            x->rep.mxu_s += t;
            x->dot_flops[o->dtype] += o->flops;
        } else {
            x->rep.vpu_flops += o->flops;
            x->rep.vpu_s += t;
        }
    }
    if (sim_coreline_step(&x->core, seconds)) return sim_fail(&x->rep, PL_ENOMEM, "out of host memory");
    return PL_OK;
}

static int walk(sim_exec *x)
{
    sim_plan *p = &x->plan;
    const pl_call *call = p->call;
    pl_ctx *c = &x->ctx;
    c->grid_rank = call->grid_rank;
    c->grid = call->grid;
    c->user = call->user;
    c->kernel_name = x->rep.call_name;
    c->cost_only = x->cost_only;
    memset(c->idx, 0, sizeof c->idx);
    int rc;
    for (int64_t step = 0; step < p->steps; step++) {
        c->step = step;
        for (int i = 0; i < p->n_ops; i++)
            if (p->ops[i].pipelined && (rc = advance(x, &p->ops[i], c->idx, step))) return rc;
        if (x->info) {
            x->info->step = step;
            memcpy(x->info->idx, c->idx, sizeof c->idx);
            x->on_step(x->info, x->on_step_user);
        }
        if ((rc = run_kernel(x))) return rc;
        x->rep.steps++;
        for (int a = call->grid_rank - 1; a >= 0; a--) { /* G1: last axis fastest */
            if (++c->idx[a] < call->grid[a]) break;
            c->idx[a] = 0;
        }
    }
    if (x->info) x->info->final = 1;
    for (int i = 0; i < p->n_ops; i++) {
        sim_operand *op = &p->ops[i];
        pl_step_operand *so = x->info ? &x->info->op[i] : NULL;
        if (so) memset(so, 0, sizeof *so);
        if (!op->pipelined || op->role != PL_ROLE_OUT || !op->have_block) continue;
        int64_t before = op->rep->bytes_out;
        if ((rc = write_back(x, op, p->steps - 1))) return rc;
        if (so) so->wrote_back = 1, so->wb_bytes = op->rep->bytes_out - before,
                memcpy(so->wb_block, op->cur, (size_t)op->rank * sizeof *op->cur);
    }
    if (x->info) {
        x->info->step = p->steps;
        x->on_step(x->info, x->on_step_user);
    }
    return PL_OK;
}

/* ---- timing and trace ------------------------------------------------------------ */

static int open_trace(sim_exec *x, const pl_options *opt)
{
    if (!opt || !opt->trace_path) return PL_OK;
    x->trace = fopen(opt->trace_path, "w");
    if (!x->trace)
        return sim_fail(&x->rep, PL_EINVAL, "cannot write the trace file '%s': %s", opt->trace_path, strerror(errno));
    x->tracing = 1;
    return PL_OK;
}

static void time_run(sim_exec *x)
{
    sim_time_result t;
    sim_coreline *cl = &x->core;
    x->rep.cores = 1;
    for (int i = 0; i < x->rep.n_operands; i++) x->rep.hbm_bytes += x->rep.op[i].bytes_in + x->rep.op[i].bytes_out;
    if (x->tracing && !(cl->kernel_t = malloc((size_t)(2 * cl->steps + 1) * sizeof *cl->kernel_t))) {
        sim_fail(&x->rep, PL_ENOMEM, "out of host memory for the trace");
        return;
    }
    if (sim_time_run(cl, 1, x->plan.chip, &t)) {
        sim_fail(&x->rep, PL_ENOMEM, "out of host memory in the timing model");
        return;
    }
    sim_analyze(&x->rep, &t, x->dot_flops);
    if (x->tracing) {
        int bad = sim_trace_write(x->trace, &x->plan, cl, 1, &x->rep);
        bad |= fclose(x->trace) != 0;
        x->trace = NULL;
        if (bad) sim_fail(&x->rep, PL_EINVAL, "writing the trace file failed (disk full?)");
    }
}

/* ---- the public calls ------------------------------------------------------------ */

static void finish(sim_exec *x, pl_report *report)
{
    snprintf(last_error, sizeof last_error, "%s", x->rep.status ? x->rep.error : "");
    if (report) *report = x->rep;
}

int pl_validate(const pl_call *call, const pl_array *args, const pl_array *outs, const pl_options *opt,
                pl_report *report)
{
    sim_exec *x = calloc(1, sizeof *x);
    if (!x) return PL_ENOMEM;
    sim_plan_call(call, args, outs, opt, &x->plan, &x->rep);
    int rc = x->rep.status;
    finish(x, report);
    free_exec(x);
    return rc;
}

int pl_pallas_call(const pl_call *call, const pl_array *args, pl_array *outs, const pl_options *opt,
                   pl_report *report)
{
    sim_exec *x = calloc(1, sizeof *x);
    if (!x) {
        snprintf(last_error, sizeof last_error, "out of host memory");
        return PL_ENOMEM;
    }
    x->uninit = opt ? opt->uninit : PL_UNINIT_NAN;
    x->cost_only = opt ? opt->cost_only : 0;
    x->on_step = opt ? opt->on_step : NULL;
    x->on_step_user = opt ? opt->on_step_user : NULL;
    if (!sim_plan_call(call, args, outs, opt, &x->plan, &x->rep) && !open_trace(x, opt) && !alloc_buffers(x) &&
        !walk(x))
        time_run(x);
    int rc = x->rep.status;
    finish(x, report);
    free_exec(x);
    return rc;
}
