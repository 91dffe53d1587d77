/* sim/call/core.c: one TensorCore as a value (core.h): its buffers, its kernel
 * context, and the merge of what it found into the call's report.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "profile.h"

_Static_assert(SIM_MAX_OPS + PL_MAX_SCRATCH <= KERN_MAX_ARGS, "the context names every kernel argument");

/* Scratch i as a Ref over its own zeroed-or-poisoned memory (M2, M9). */
static int alloc_scratch(sim_core *k, int i)
{
    const sim_exec *x = k->x;
    const pl_scratch *s = &x->plan.call->scratch[i];
    int64_t n = 1;
    for (int d = 0; d < s->rank; d++) n *= s->shape[d];
    size_t bytes = (size_t)n * (s->space == PL_SEMAPHORE ? sizeof(int64_t) : pl_dtype_size(s->dtype)); /* 64-bit counts */
    k->scratch_mem[i] = sim_vmem_alloc(x->cost_only, bytes);
    k->scratch_bytes[i] = bytes;
    if (!k->scratch_mem[i]) return sim_fail(&k->rep, PL_ENOMEM, "out of host memory for %s", x->rep.scratch[i].name);
    int arg = x->plan.n_ops + i;
    pl_ref *r = &k->refs[arg];
    *r = (pl_ref){.data = k->scratch_mem[i], .dtype = s->dtype, .space = s->space, .rank = s->rank,
                  .arg = (int16_t)arg, .role = PL_ROLE_SCRATCH, .sem_kind = (uint8_t)s->sem_kind};
    int64_t stride = s->space == PL_SEMAPHORE ? KERN_SEM_STRIDE : 1;
    for (int d = s->rank - 1; d >= 0; d--) {
        r->shape[d] = s->shape[d];
        r->stride[d] = stride;
        stride *= s->shape[d];
    }
    return PL_OK;
}

/* M16: a semaphore operand's Ref over this core's counts, an input's from
 * its array (what the call that made it left), an output's from 0. */
static void sem_operand(sim_core *k, const sim_operand *op, sim_pipe *pipe)
{
    pl_ref *r = &k->refs[op->arg];
    int64_t *cell = (int64_t *)(void *)pipe->slots, stride = KERN_SEM_STRIDE;
    r->data = cell;
    r->readonly = 0;
    r->sem_kind = op->sem_dma ? PL_SEM_DMA : PL_SEM_REGULAR;
    for (int d = r->rank - 1; d >= 0; d--) r->stride[d] = stride, stride *= r->shape[d];
    const int32_t *from = op->role == PL_ROLE_IN ? op->arr->data : NULL;
    for (int64_t i = 0; from && i < op->block_elems; i++) cell[i] = from[i]; /* a Ref's stride of
                                                                              KERN_SEM_STRIDE i32 is one int64 */
}

/* Every operand's buffers and Ref template, then the scratch. */
static int alloc_buffers(sim_core *k)
{
    const sim_plan *p = &k->x->plan;
    for (int i = 0; i < p->n_ops; i++) {
        const sim_operand *op = &p->ops[i];
        sim_pipe *pipe = &k->pipe[i];
        pipe->op = op;
        pipe->tally = &k->rep.op[i];
        pipe->line = &k->line->op[i];
        k->refs[op->arg] = op->ref;
        int rc = sim_pipe_alloc(k, pipe);
        if (rc) return rc;
        if (op->space == PL_SEMAPHORE) {
            sem_operand(k, op, pipe);
        } else if (op->role == PL_ROLE_PREFETCH) {
            k->refs[op->arg].data = pipe->slots;
            k->prefetch[op->index] = k->refs[op->arg];
        } else if (!op->pipelined) { /* ANY: the kernel gets the HBM array itself (T5) */
            k->refs[op->arg].data = op->arr->data;
        }
    }
    for (int i = 0; i < p->call->n_scratch; i++) {
        int rc = alloc_scratch(k, i);
        if (rc) return rc;
    }
    k->n_refs = p->n_ops + p->call->n_scratch;
    /* refs past the last argument say so when used (kernel/context.h) */
    int total = (int)(sizeof k->kernel_refs / sizeof *k->kernel_refs);
    for (int i = k->n_refs; i < total; i++) k->kernel_refs[i] = (pl_ref){.arg = (int16_t)(KERN_ARG_MISSING - i)};
    return PL_OK;
}

/* Bit a set where grid axis a is parallel (G3): copies waited across one are said (G4, kernel/dma.c). */
static unsigned parallel_axes(const pl_call *call)
{
    unsigned m = 0;
    for (int a = 0; a < call->grid_rank && a < 32; a++)
        if (call->semantics[a] == PL_PARALLEL) m |= 1u << a;
    return m;
}

/* Bytes one grid point's op log may take on a core: an eighth of the host's
 * memory over every core and device that walks at once, as the walk's
 * records (walk.c). */
static double op_log_max(const sim_exec *x)
{
    double avail = sim_host_memory_once(), walkers = (double)x->n_cores * (x->mesh.n_devices > 1 ? x->mesh.n_devices : 1);
    return avail > 0 && !isinf(avail) ? avail / 8 / walkers : 0;
}

/* The kernel's context: names for messages (M3), options, the checks' table. */
static void init_context(sim_core *k)
{
    const sim_exec *x = k->x;
    const pl_call *call = x->plan.call;
    const char *names[KERN_MAX_ARGS] = {0};
    for (int i = 0; i < x->plan.n_ops; i++) names[x->plan.ops[i].arg] = x->plan.ops[i].rep->name;
    for (int i = 0; i < call->n_scratch; i++) names[x->plan.n_ops + i] = x->rep.scratch[i].name;
    sim_checks_init(k);
    const pl_chip *chip = x->plan.chip; /* what the compiler checks at ops (T9, T10) */
    kern_target target = {0};
    if (chip)
        target = (kern_target){.chip = chip->name, .mxu_int8 = chip->int8_ops > 0, .mxu_fp8 = chip->fp8_ops > 0,
                               .mxu_fp8_in = chip->mxu_fp8_operands || chip->fp8_ops > 0,
                               .dma_regular = chip->dma_regular_sems, .cores = x->n_cores,
                               .tile_rows = {8, chip->sublanes_16bit, chip->sublanes_8bit, chip->sublanes_4bit},
                               .vmem_free = x->rep.vmem_limit - x->rep.vmem_bytes,
                               .subcores = chip->sc_view ? chip->sc_subcores : 0};
    kern_setup s = {.grid_rank = call->grid_rank, .grid = call->grid, .user = call->user,
                    .kernel_name = x->rep.call_name, .n_prefetch = call->num_scalar_prefetch, .n_in = call->n_in,
                    .n_out = call->n_out, .n_scratch = call->n_scratch, .arg_name = names, .n_args = k->n_refs,
                    .cost_only = x->cost_only, .strict = x->strict, .oob_poison = x->oob_poison,
                    .races_off = !x->checks, .parallel_axes = parallel_axes(call),
                    .uninit_zero = x->uninit == PL_UNINIT_ZERO, .dma_on_wait = x->dma_on_wait,
                    .has_collective_id = call->has_collective_id,
                    .args = k->checking ? k->args : NULL, .warn = sim_kernel_warning, .warn_sink = k,
                    .mesh = x->mesh.ops, .mesh_run = x->mesh.run, .device = x->mesh.device,
                    .n_devices = x->mesh.n_devices, .unit = x->mesh.device * x->n_cores + k->index,
                    .dev_cores = x->n_cores, .target = chip ? &target : NULL, .op_log_max = op_log_max(x)};
    kern_ctx_init(&k->ctx, &s);
}

sim_core *sim_core_new(sim_exec *x, int index, pl_report *err)
{
    sim_core *k = calloc(1, sizeof *k);
    if (!k) {
        sim_fail(err, PL_ENOMEM, "out of host memory for TensorCore %d", index);
        return NULL;
    }
    k->x = x;
    k->index = index;
    k->step_base = x->step_base[index];
    k->line = &x->lines[index];
    k->rep.n_operands = x->rep.n_operands;
    const pl_call *call = x->plan.call;
    k->steps = 1;
    for (int a = 0; a < call->grid_rank; a++) { /* G4: this core's chunk of the split axis */
        k->lo[a] = a == x->split_axis ? x->lo[index] : 0;
        k->hi[a] = a == x->split_axis ? x->hi[index] : call->grid[a];
        k->steps *= k->hi[a] - k->lo[a];
    }
    if (alloc_buffers(k)) {
        sim_fail(err, k->rep.status, "%s", k->rep.error);
        sim_core_delete(k);
        return NULL;
    }
    init_context(k);
    return k;
}

/* The buffers go as soon as the core is done: cores walked in order never
 * hold more than one core's VMEM at a time. The pipes' block sets stay,
 * for the later cores' race checks (V4). */
void sim_core_free_buffers(sim_core *k)
{
    for (int i = 0; i < k->x->plan.n_ops; i++) {
        sim_pipe *p = &k->pipe[i];
        if (p->op && p->op->role == PL_ROLE_PREFETCH) free(p->slots);
        else if (p->slots) sim_vmem_free(k->x->cost_only, p->slots, p->slots_bytes);
        p->slots = NULL;
    }
    for (int i = 0; i < PL_MAX_SCRATCH; i++) {
        sim_vmem_free(k->x->cost_only, k->scratch_mem[i], k->scratch_bytes[i]);
        k->scratch_mem[i] = NULL;
    }
    if (k->ctx.scoped_peak > k->rep.scoped_peak_bytes) { /* K4: the core's peak, and what was live at it */
        k->rep.scoped_peak_bytes = k->ctx.scoped_peak;
        k->rep.n_scoped_peak = k->ctx.n_scoped_peak;
        for (int i = 0; i < k->ctx.n_scoped_peak; i++) {
            snprintf(k->rep.scoped_peak[i].what, sizeof k->rep.scoped_peak[i].what, "%s", k->ctx.scoped_peak_what[i]);
            k->rep.scoped_peak[i].bytes = k->ctx.scoped_peak_bytes[i];
        }
    }
    kern_ctx_free(&k->ctx);
}

void sim_core_delete(sim_core *k)
{
    if (!k) return;
    sim_core_free_buffers(k);
    for (int i = 0; i < SIM_MAX_OPS; i++) sim_pipe_free(k, &k->pipe[i]);
    free(k);
}

/* Append another report's warning lines to rep, as sim_warn would have
 * appended and counted each: a line that does not fit is cut or dropped
 * (and not counted) the same way. */
static void append_warnings(pl_report *rep, const char *text)
{
    size_t used = strlen(rep->warnings), room = sizeof rep->warnings;
    for (const char *line = text; *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        if (used + 2 < room) {
            size_t fit = len < room - used - 2 ? len : room - used - 2;
            memcpy(rep->warnings + used, line, fit);
            used += fit;
            rep->warnings[used++] = '\n';
            rep->warnings[used] = '\0';
            rep->n_warnings++;
        }
        line += len + (nl != NULL);
    }
}

static void add_counts(pl_report *to, const pl_report *from)
{
    to->steps += from->steps;
    to->nested_steps += from->nested_steps;
    if (from->scoped_peak_bytes > to->scoped_peak_bytes) { /* the core that needed most */
        to->scoped_peak_bytes = from->scoped_peak_bytes;
        to->n_scoped_peak = from->n_scoped_peak;
        memcpy(to->scoped_peak, from->scoped_peak, sizeof to->scoped_peak);
    }
    to->mxu_flops += from->mxu_flops;
    to->mxu_flops_padded += from->mxu_flops_padded;
    to->mxu_s += from->mxu_s;
    to->vpu_flops += from->vpu_flops;
    to->vpu_s += from->vpu_s;
    to->scalar_ops += from->scalar_ops;
    to->scalar_s += from->scalar_s;
    to->eup_elems += from->eup_elems;
    to->dma_copies += from->dma_copies;
    to->dma_bytes += from->dma_bytes;
    to->ici_copies += from->ici_copies;
    to->ici_bytes += from->ici_bytes;
    sim_profile_merge(to, from);
    for (int i = 0; i < from->n_operands; i++) {
        pl_operand_report *o = &to->op[i];
        const pl_operand_report *f = &from->op[i];
        o->copies += f->copies;
        o->skipped += f->skipped;
        o->writebacks += f->writebacks;
        o->fetchbacks += f->fetchbacks;
        o->bytes_in += f->bytes_in;
        o->bytes_out += f->bytes_out;
    }
}

void sim_core_merge(sim_exec *x, const sim_core *k)
{
    pl_report *r = &x->rep;
    add_counts(r, &k->rep);
    for (int t = 0; t < PL_DTYPE_COUNT; t++) x->dot_flops[t] += k->dot_flops[t];
    x->barrier_taken |= k->ctx.barrier_taken;
    append_warnings(r, k->rep.warnings);
    for (int i = 0; i < k->rep.n_findings; i++, r->n_findings++)
        if (i < PL_MAX_FINDINGS && r->n_findings < PL_MAX_FINDINGS) r->findings[r->n_findings] = k->rep.findings[i];
    if (k->rep.status) sim_fail(r, k->rep.status, "%s", k->rep.error);
}
