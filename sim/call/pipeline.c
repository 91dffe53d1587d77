/* sim/call/pipeline.c: one operand's pipeline on one TensorCore (rules P1-P8;
 * pipeline.h).
 *
 * At each grid point: evaluate the operand's index map; if the block is the
 * one already in VMEM, skip the copy (P2); otherwise an output writes its
 * previous block back (P3) and a new buffer slot is taken (P6): inputs copy
 * their block in (P1), outputs start as poison (P4, V1), or, revisited under
 * RevisitMode.ANY, come back from HBM (P5). Each copy is recorded into the
 * core's timeline with this core's step number; checks and messages use
 * global step numbers (each core's after the previous core's).
 */
#include <stdlib.h>
#include <string.h>

#include "core.h"

char *sim_pipe_buffer(const sim_pipe *p)
{
    return p->slots + (size_t)p->slot * (size_t)p->op->block_elems * p->op->elem_size;
}

int sim_pipe_alloc(sim_core *k, sim_pipe *p)
{
    const sim_operand *op = p->op;
    int cost_only = k->x->cost_only;
    if (op->role == PL_ROLE_PREFETCH) {
        p->slots_bytes = pl_array_bytes(op->arr);
        p->slots = malloc(p->slots_bytes ? p->slots_bytes : 1);
    } else if (op->pipelined) {
        p->slots_bytes = (size_t)op->block_elems * op->elem_size * (size_t)op->buffers;
        p->slots = sim_vmem_alloc(cost_only, p->slots_bytes); /* cost-only: zeroed, never random */
    } else if (op->space == PL_SEMAPHORE) { /* M16: one 64-bit count each, as scratch semaphores (kernel/context.h) */
        p->slots_bytes = (size_t)op->block_elems * sizeof(int64_t);
        p->slots = calloc(1, p->slots_bytes ? p->slots_bytes : 1);
    } else {
        return PL_OK; /* ANY: the kernel gets the HBM array itself (T5) */
    }
    if (!p->slots)
        return sim_fail(&k->rep, PL_ENOMEM, "out of host memory for the %d buffers of %s (%zu bytes)",
                        op->role == PL_ROLE_PREFETCH ? 1 : op->buffers, op->rep->name, p->slots_bytes);
    return PL_OK;
}

void sim_pipe_free(sim_core *k, sim_pipe *p)
{
    if (p->op && (p->op->role == PL_ROLE_PREFETCH || p->op->space == PL_SEMAPHORE)) free(p->slots);
    else if (p->slots) sim_vmem_free(k->x->cost_only, p->slots, p->slots_bytes);
    free(p->ahead_err);
    sim_blockset_free(&p->written);
    sim_blockset_free(&p->writers);
    p->slots = NULL;
    p->ahead_err = NULL;
}

int sim_pipe_start(sim_core *k, sim_pipe *p)
{
    const sim_operand *op = p->op;
    p->have_block = 0;
    p->ahead = 0;
    p->slot = op->buffers - 1; /* the first new block takes slot 0 */
    p->fresh = 0;
    if (op->role == PL_ROLE_OUT && op->pipelined && k->x->mesh.ops && !k->x->cost_only && k->x->checks) {
        /* a device of a mesh: another device may copy into these slots before
         * this one takes its first block there (M11), so they are made
         * garbage now, before any device runs, not at their first use (P4) */
        sim_poison(p->slots, op->arr->dtype, op->block_elems * op->buffers, k->x->uninit);
        p->fresh = (uint8_t)((1u << (op->buffers < 8 ? op->buffers : 8)) - 1);
    }
    if (op->role != PL_ROLE_PREFETCH) return PL_OK;
    memcpy(p->slots, op->arr->data, p->slots_bytes); /* whole, before the grid (M5) */
    if (sim_opline_push(p->line, 0, (int64_t)p->slots_bytes, 0, NULL))
        return sim_fail(&k->rep, PL_ENOMEM, "out of host memory");
    return PL_OK;
}

/* Copy the current block in from HBM (or, cost-only, count its bytes). */
static int64_t copy_in(const sim_core *k, const sim_pipe *p)
{
    return k->x->cost_only ? p->win.bytes : sim_copy_in(p->op, &p->win, sim_pipe_buffer(p), k->x->uninit);
}

/* Record a copy of the current window: its bytes and its rows in HBM (the
 * DMA's efficiency depends on them, sim/timing/timing.c). 0, or -1 out of memory. */
static int push_copy(sim_pipe *p, int64_t step, int64_t bytes, const int64_t *bidx)
{
    if (sim_opline_push(p->line, step, bytes, p->slot, bidx)) return -1;
    p->line->x[p->line->n - 1].row_bytes = p->win.row_bytes;
    return 0;
}

/* P3: the current block goes to HBM after this core's step `step`. */
static int write_back(sim_core *k, sim_pipe *p, int64_t step)
{
    const sim_operand *op = p->op;
    int64_t global = k->step_base + step;
    /* in a mesh another device's copy may be landing in this block: its moves take the mesh's lock
     * (kern_dma_move_shared), and so does reading the block here */
    const kern_mesh_ops *mesh = k->x->cost_only ? NULL : k->ctx.mesh;
    if (mesh) mesh->lock(k->ctx.mesh_run);
    int rc = sim_checks_writeback(k, p, global);
    int64_t bytes = rc ? 0 : k->x->cost_only ? p->win.bytes : sim_copy_out(op, &p->win, sim_pipe_buffer(p));
    if (mesh) mesh->unlock(k->ctx.mesh_run);
    if (rc) return rc;
    p->tally->bytes_out += bytes;
    p->tally->writebacks++;
    if (push_copy(p, step, bytes, p->cur) ||
        sim_blockset_put(&p->written, p->cur, op->rank, global))
        return sim_fail(&k->rep, PL_ENOMEM, "out of host memory recording write-backs of %s", op->rep->name);
    return PL_OK;
}

/* P5: an output block selected again after it was written back. Under
 * RevisitMode.ANY that is legal and sets *fetch: the block comes back from
 * HBM. */
static int check_revisit(sim_core *k, const sim_pipe *p, const int64_t *bidx, int64_t global, int *fetch)
{
    const sim_operand *op = p->op;
    int64_t when;
    *fetch = 0;
    if (!sim_blockset_get(&p->written, bidx, op->rank, &when)) return PL_OK;
    if (op->revisit_any) return *fetch = 1, PL_OK;
    if (op->aliased) return PL_OK; /* the block's earlier result is in HBM, where the input is (M6) */
    int64_t then[PL_MAX_GRID], now[PL_MAX_GRID];
    char a[128], b[128], blk[128];
    sim_point_of_step(k->x, when, then);
    sim_point_of_step(k->x, global, now);
    int g = k->x->plan.call->grid_rank;
    sim_format_idx(then, g, a, sizeof a);
    sim_format_idx(now, g, b, sizeof b);
    sim_format_idx(bidx, op->rank, blk, sizeof blk);
    return sim_fail(&k->rep, PL_EREVISIT,
                    "%s: grid point %s selects output block %s again, but that block was written back to HBM "
                    "after grid point %s; on hardware the earlier result is lost. Visit each output block in "
                    "consecutive grid points (put the reduction axis last), or opt in to fetching it back "
                    "from HBM with .revisit = PL_REVISIT_ANY (RevisitMode.ANY) (rule P5)",
                    op->rep->name, b, blk, a);
}

/* P5, RevisitMode.ANY: copy a revisited output block back from HBM, as an
 * input's copy (P1) would; it counts in the output's traffic and, marked as
 * a fetch, as a copy the step waits for in the timing model. */
static int fetch_back(sim_core *k, sim_pipe *p, const int64_t *bidx, int64_t step)
{
    int64_t bytes = copy_in(k, p);
    p->tally->fetchbacks++;
    p->tally->bytes_in += bytes;
    if (push_copy(p, step, bytes, bidx))
        return sim_fail(&k->rep, PL_ENOMEM, "out of host memory recording fetch-backs of %s", p->op->rep->name);
    p->line->x[p->line->n - 1].fetch = 1;
    if (k->checking) k->args[p->op->arg].written = 1; /* it holds the earlier visits' result, not garbage (P4) */
    return PL_OK;
}

/* The block of this step: looked ahead before the previous kernel (P8), or
 * the index map now. */
static int block_of_step(sim_core *k, sim_pipe *p, const int64_t *idx, int64_t *bidx)
{
    if (!p->ahead) /* most steps' maps: by grid axes, inside the array, without a call */
        return sim_map_axes(p->op, idx, bidx) ? PL_OK : sim_eval_map(&k->x->plan, p->op, idx, k->prefetch, bidx, &k->rep);
    p->ahead = 0;
    if (p->ahead_rc) return sim_fail(&k->rep, p->ahead_rc, "%s", p->ahead_err ? p->ahead_err : "index map");
    memcpy(bidx, p->ahead_bidx, sizeof p->ahead_bidx);
    return PL_OK;
}

/* A new block in a new slot: copied in (P1), poison (P4), or fetched back (P5). */
static int take_block(sim_core *k, sim_pipe *p, const int64_t *bidx, int64_t step, int fetch, pl_step_operand *so)
{
    const sim_operand *op = p->op;
    p->slot = (p->slot + 1) % op->buffers;
    kern_copy_idx(p->cur, bidx, op->rank); /* block_of_step has just stored them */
    sim_window_of(op, bidx, &p->win);
    p->have_block = 1;
    char *buf = sim_pipe_buffer(p);
    k->refs[op->arg].data = k->kernel_refs[op->arg].data = buf; /* the kernel's copy is already taken (walk.c) */
    if (op->role == PL_ROLE_IN) {
        if (k->ctx.n_dma) { /* M7, P1: a manual copy still on the buffer this block is about to fill */
            char why[PL_MSG_MAX];
            if (kern_dma_refill_conflict(&k->ctx, &k->refs[op->arg], why, sizeof why)) {
                if (k->x->strict) return sim_fail(&k->rep, PL_ERACE, "%s", why);
                kern_warn(&k->ctx, op->arg, "M7", KERN_WARN_DMA_INFLIGHT, "%s", why);
            }
        }
        int64_t bytes = copy_in(k, p);
        p->tally->copies++;
        p->tally->bytes_in += bytes;
        if (so) so->bytes = bytes;
        if (push_copy(p, step, bytes, bidx))
            return sim_fail(&k->rep, PL_ENOMEM, "out of host memory recording copies of %s", op->rep->name);
    } else if (p->slot < 8 && (p->fresh >> p->slot & 1u)) {
        p->fresh &= (uint8_t)~(1u << p->slot); /* poisoned at the start (a mesh device) */
        p->remote_seen = 0; /* a copy may have landed in this slot already: it counts for this block */
    } else {
        /* remote copies from here on fill this block (M11) */
        p->remote_seen = __atomic_load_n(&k->x->remote_written[op->arg][sim_remote_slot(p)], __ATOMIC_ACQUIRE);
        if (!fetch && !k->x->cost_only && k->x->checks)
            sim_poison(buf, op->arr->dtype, op->block_elems, k->x->uninit); /* P4: garbage, made visible */
    }
    sim_checks_new_block(k, p);
    if (fetch && k->checking) k->args[op->arg].initialized = 1; /* it comes back from HBM as it left (P5) */
    int rc = fetch ? fetch_back(k, p, bidx, step) : PL_OK;
    if (so && !rc) {
        so->action = op->role == PL_ROLE_IN ? PL_ACT_COPY : fetch ? PL_ACT_FETCH : PL_ACT_NEW;
        so->slot = p->slot;
        if (fetch) so->bytes = p->win.bytes;
    }
    return rc;
}

/* The same block index: a loop, not memcmp, at every step of every operand
 * (a call into libc for 16 bytes was 7 % of a cost-only sweep). */
static int same_block(const int64_t *a, const int64_t *b, int rank)
{
    for (int d = 0; d < rank; d++)
        if (a[d] != b[d]) return 0;
    return 1;
}

int sim_pipe_advance(sim_core *k, sim_pipe *p, const int64_t *idx, int64_t step)
{
    const sim_operand *op = p->op;
    int64_t bidx[PL_MAX_RANK], global = k->step_base + step;
    int rc, fetch = 0;
    if ((rc = block_of_step(k, p, idx, bidx))) return rc;
    size_t n = (size_t)op->rank * sizeof *bidx;
    pl_step_operand *so = k->x->info ? &k->x->info->op[op->arg] : NULL;
    if (so) {
        memset(so, 0, sizeof *so);
        memcpy(so->block, bidx, n);
    }
    if (op->role == PL_ROLE_OUT && (rc = sim_checks_race(k, p, bidx, global))) return rc;
    if (p->have_block && same_block(bidx, p->cur, op->rank)) {
        if (op->role == PL_ROLE_IN) p->tally->skipped++; /* P2 */
        if (so) so->action = op->role == PL_ROLE_IN ? PL_ACT_SKIP : PL_ACT_KEEP, so->slot = p->slot;
        return PL_OK;
    }
    if (op->role == PL_ROLE_OUT) {
        if (p->have_block) { /* P3 */
            int64_t before = p->tally->bytes_out;
            if ((rc = write_back(k, p, step - 1))) return rc;
            if (so) so->wrote_back = 1, so->wb_bytes = p->tally->bytes_out - before, memcpy(so->wb_block, p->cur, n);
        }
        if ((rc = check_revisit(k, p, bidx, global, &fetch))) return rc;
    }
    return take_block(k, p, bidx, step, fetch, so);
}

void sim_pipe_sem_zero(const sim_operand *op)
{
    if (op->space == PL_SEMAPHORE && op->sem_dma && op->role == PL_ROLE_OUT && op->arr->data)
        memset(op->arr->data, 0, (size_t)op->block_elems * sizeof(int32_t));
}

void sim_pipe_sem_out(sim_core *k, sim_pipe *p)
{
    const sim_operand *op = p->op;
    if (op->space != PL_SEMAPHORE || op->role != PL_ROLE_OUT || !op->arr->data || !p->slots) return;
    if (!op->sem_dma && k->index != 0) return; /* regular ones: core 0's counts */
    int32_t *to = op->arr->data;
    const int64_t *cell = (const int64_t *)(const void *)p->slots;
    int64_t clipped = -1, reached = 0;
    for (int64_t i = 0; i < op->block_elems; i++) {
        int64_t v = cell[i], want;
        if (op->sem_dma) { /* the bytes every core's copies landed (zeroed before the walk: sim_pipe_sem_zero) */
            int32_t was = __atomic_load_n(&to[i], __ATOMIC_RELAXED), sum;
            do want = (int64_t)was + v, sum = want > INT32_MAX ? INT32_MAX : (int32_t)want;
            while (!__atomic_compare_exchange_n(&to[i], &was, sum, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
        } else want = v, to[i] = v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v;
        if ((want > INT32_MAX || want < INT32_MIN) && clipped < 0) clipped = i, reached = want;
    }
    if (clipped >= 0) /* the array is int32, as Pallas's: say so rather than hand back a wrong count silently */
        sim_warn(&k->rep, "%s: semaphore %lld's count reached %lld, past what its int32 element holds; the output "
                 "holds %d (rule M16)", op->rep->name, (long long)clipped, (long long)reached,
                 reached > 0 ? INT32_MAX : INT32_MIN);
}

int sim_pipe_drain(sim_core *k, sim_pipe *p, int64_t steps)
{
    const sim_operand *op = p->op;
    pl_step_operand *so = k->x->info ? &k->x->info->op[op->arg] : NULL;
    if (so) memset(so, 0, sizeof *so);
    if (!op->pipelined || op->role != PL_ROLE_OUT || !p->have_block) return PL_OK;
    int64_t before = p->tally->bytes_out;
    int rc = write_back(k, p, steps - 1);
    if (!rc && so)
        so->wrote_back = 1, so->wb_bytes = p->tally->bytes_out - before,
        memcpy(so->wb_block, p->cur, (size_t)op->rank * sizeof *p->cur);
    return rc;
}

/* P8: the pipeline issues step n + 1's copies before kernel n runs, so an
 * index map that reads scalar prefetch sees the table as it was then: a
 * kernel's writes to it reach the maps two steps later, not one. */
void sim_pipe_look_ahead(sim_core *k, const sim_grid_iter *at)
{
    const sim_exec *x = k->x;
    int64_t idx[PL_MAX_GRID];
    sim_grid_iter next = *at;
    if (!sim_grid_iter_next(&next)) return; /* the last step: nothing comes next */
    for (int a = 0; a < x->plan.call->grid_rank; a++) idx[a] = x->perm[a] ? x->perm[a][next.pos[a]] : next.pos[a];
    for (int i = 0; i < x->plan.n_ops; i++) {
        sim_pipe *p = &k->pipe[i];
        if (!p->op->pipelined || !p->op->map.fn) continue;
        char err[PL_MSG_MAX];
        p->ahead = 1;
        p->ahead_rc = sim_map_eval(&x->plan, p->op, idx, k->prefetch, p->ahead_bidx, err, sizeof err);
        if (p->ahead_rc && !p->ahead_err) p->ahead_err = malloc(PL_MSG_MAX);
        if (p->ahead_rc && p->ahead_err) snprintf(p->ahead_err, PL_MSG_MAX, "%s", err);
    }
}
