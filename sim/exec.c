/* sim/exec.c: pl_pallas_call and pl_validate: validate (validate.c),
 * allocate the simulated VMEM, plan the order of the walk (the megacore
 * split of rule G4, a seeded shuffle of parallel axes), walk the grid
 * (walk.c), then time what the walk recorded (timing.c) and write the trace.
 *
 * A fault inside the kernel longjmps back to the walk (kernel/context.h);
 * every allocation of the call belongs to the sim_exec value (exec.h), so
 * one cleanup path serves success and failure alike.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, beside _POSIX_C_SOURCE */
#include <errno.h>
#include <setjmp.h>
#include <sys/mman.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exec.h"

static _Thread_local char last_error[PL_MSG_MAX];

/* VMEM buffers. A cost-only run never touches them but must have them (a
 * kernel may still read an element): zeroed pages from mmap cost nothing
 * until touched, where calloc would clear megabytes per call once malloc's
 * mmap threshold has grown (sweeps allocate thousands of such buffers). */
/* Under AddressSanitizer every buffer comes from calloc: mmap'd memory has
 * no redzones, so a write past one would go unseen (FINDINGS.md F3). */
#if defined(__SANITIZE_ADDRESS__)
#define VMEM_MMAP_MIN SIZE_MAX
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define VMEM_MMAP_MIN SIZE_MAX
#endif
#endif
#ifndef VMEM_MMAP_MIN
#define VMEM_MMAP_MIN ((size_t)1 << 16)
#endif

static void *vmem_alloc(sim_exec *x, size_t bytes)
{
    if (!x->cost_only || bytes < VMEM_MMAP_MIN) return x->cost_only ? calloc(1, bytes) : malloc(bytes);
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void vmem_free(const sim_exec *x, void *p, size_t bytes)
{
    if (!p) return;
    if (x->cost_only && bytes >= VMEM_MMAP_MIN) munmap(p, bytes);
    else free(p);
}

const char *pl_last_error(void) { return last_error; }

/* ---- allocation --------------------------------------------------------------- */

/* M6: an aliased output starts as the input it shares a buffer with. */
static void copy_aliases(sim_exec *x, const pl_array *args, pl_array *outs)
{
    const pl_call *call = x->plan.call;
    for (int i = 0; i < call->n_alias && !x->cost_only; i++) {
        const pl_array *in = &args[call->alias[i].in];
        pl_array *out = &outs[call->alias[i].out];
        if (in->data != out->data) memcpy(out->data, in->data, pl_array_bytes(in));
    }
}

_Static_assert(MAX_OPS + PL_MAX_SCRATCH <= KERN_MAX_ARGS, "the context names every kernel argument");

/* What kernel errors say about refs (M3): each argument's name, the counts,
 * and refs past the last argument marked as missing (kernel/context.h). */
static void name_args(sim_exec *x)
{
    pl_ctx *c = &x->ctx;
    const pl_call *call = x->plan.call;
    c->n_prefetch = call->num_scalar_prefetch;
    c->n_in = call->n_in;
    c->n_out = call->n_out;
    c->n_scratch = call->n_scratch;
    for (int i = 0; i < x->plan.n_ops; i++) c->arg_name[x->plan.ops[i].arg] = x->plan.ops[i].rep->name;
    for (int i = 0; i < call->n_scratch; i++) c->arg_name[x->plan.n_ops + i] = x->rep.scratch[i].name;
    int total = (int)(sizeof x->kernel_refs / sizeof *x->kernel_refs);
    for (int i = x->n_refs; i < total; i++) x->kernel_refs[i] = (pl_ref){.arg = (int16_t)(KERN_ARG_MISSING - i)};
}

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
            x->refs[op->arg].data = op->slots;
            x->prefetch[op->index] = x->refs[op->arg];
            continue;
        }
        if (!op->pipelined) { /* ANY: the kernel gets the HBM array itself (T5) */
            x->refs[op->arg].data = op->arr->data;
            continue;
        }
        size_t bytes = (size_t)op->block_elems * op->elem_size * (size_t)op->buffers;
        /* cost-only runs may read what they never wrote: zeroed, not random */
        op->slots = vmem_alloc(x, bytes);
        op->slots_bytes = bytes;
        if (!op->slots)
            return sim_fail(&x->rep, PL_ENOMEM, "out of host memory for the %d buffers of %s (%zu bytes)",
                            op->buffers, op->rep->name, bytes);
    }
    const pl_call *call = p->call;
    for (int i = 0; i < call->n_scratch; i++) {
        const pl_scratch *s = &call->scratch[i];
        pl_array shape = {.dtype = s->dtype, .rank = s->rank};
        memcpy(shape.shape, s->shape, sizeof shape.shape);
        int64_t n = pl_array_size(&shape);
        size_t bytes = (size_t)n * pl_dtype_size(s->dtype);
        if (s->space == PL_SEMAPHORE) bytes = (size_t)n * sizeof(int64_t); /* 64-bit counts */
        x->scratch_mem[i] = vmem_alloc(x, bytes);
        x->scratch_bytes[i] = bytes;
        if (!x->scratch_mem[i])
            return sim_fail(&x->rep, PL_ENOMEM, "out of host memory for %s", x->rep.scratch[i].name);
        (void)n; /* each core poisons its scratch when it starts (walk.c) */
        pl_ref *r = &x->refs[p->n_ops + i];
        *r = (pl_ref){.data = x->scratch_mem[i], .dtype = s->dtype, .space = s->space, .rank = s->rank,
                      .arg = (int16_t)(p->n_ops + i), .role = PL_ROLE_SCRATCH, .sem_kind = (uint8_t)s->sem_kind};
        int64_t stride = s->space == PL_SEMAPHORE ? KERN_SEM_STRIDE : 1;
        for (int d = s->rank - 1; d >= 0; d--) {
            r->shape[d] = s->shape[d];
            r->stride[d] = stride;
            stride *= s->shape[d];
        }
    }
    x->n_refs = p->n_ops + call->n_scratch;
    name_args(x);
    /* cores_per_device is 1..SIM_MAX_CORES (validate.c) */
    if (!(x->cores = calloc((size_t)p->chip->cores_per_device, sizeof *x->cores)))
        return sim_fail(&x->rep, PL_ENOMEM, "out of host memory");
    x->n_alloc_cores = p->chip->cores_per_device;
    for (int c = 0; c < x->n_alloc_cores; c++) {
        x->cores[c].n_ops = p->n_ops;
        for (int i = 0; i < p->n_ops; i++) {
            sim_opline *line = &x->cores[c].op[i];
            line->is_out = p->ops[i].role == PL_ROLE_OUT;
            line->buffers = p->ops[i].role == PL_ROLE_PREFETCH ? 1 : p->ops[i].buffers;
            line->rank = x->tracing ? p->ops[i].rank : 0;
        }
    }
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
        sim_operand *op = &x->plan.ops[i];
        if (op->role == PL_ROLE_PREFETCH) free(op->slots);
        else vmem_free(x, op->slots, op->slots_bytes);
        free(x->plan.ops[i].ahead_err);
        sim_blockset_free(&x->written[i]);
        sim_blockset_free(&x->writers[i]);
    }
    for (int a = 0; a < PL_MAX_GRID; a++) free(x->perm[a]);
    for (int i = 0; i < PL_MAX_SCRATCH; i++) vmem_free(x, x->scratch_mem[i], x->scratch_bytes[i]);
    free(x->ctx.ops);
    free(x->ctx.tmp);
    free(x->ctx.dma);
    for (int c = 0; c < x->n_alloc_cores; c++) sim_coreline_free(&x->cores[c]);
    free(x->cores);
    free(x->info);
    if (x->trace) fclose(x->trace);
    free(x);
}

/* ---- the order of the walk (G4, V4) ------------------------------------------- */

void sim_split_axis(int64_t size, int cores, int64_t *lo, int64_t *hi)
{
    int64_t at = 0; /* a 2^32-point axis has chunks of 2^31: not an int */
    for (int c = 0; c < cores; c++) {
        int64_t chunk = size / cores + (c < size % cores);
        lo[c] = at;
        hi[c] = at + chunk;
        at += chunk;
    }
}

/* G4: on a chip with several TensorCores (2 on megacore chips, more on
 * what-if chips), the first parallel axis that divides evenly by the core
 * count is cut into contiguous chunks; otherwise the largest parallel axis,
 * the first cores taking one extra index (an axis shorter than the core
 * count gives one index to each of its first cores). A seed shuffles the visiting order of every parallel axis (V4). */
static int plan_order(sim_exec *x, uint64_t seed)
{
    const pl_call *call = x->plan.call;
    int cores = x->n_alloc_cores;
    x->split_axis = -1;
    for (int a = 0; a < call->grid_rank; a++)
        if (call->semantics[a] == PL_PARALLEL && call->grid[a] > 1) x->parallel_axes++;
    if (cores > 1) {
        for (int a = 0; a < call->grid_rank && x->split_axis < 0; a++)
            if (call->semantics[a] == PL_PARALLEL && call->grid[a] % cores == 0) x->split_axis = a;
        int even = x->split_axis >= 0;
        for (int a = 0; a < call->grid_rank && !even; a++)
            if (call->semantics[a] == PL_PARALLEL && call->grid[a] > 1 &&
                (x->split_axis < 0 || call->grid[a] > call->grid[x->split_axis]))
                x->split_axis = a;
    }
    /* an axis shorter than the core count keeps the extra cores idle */
    x->n_cores = x->split_axis < 0 ? 1 : call->grid[x->split_axis] < cores ? (int)call->grid[x->split_axis] : cores;
    sim_split_axis(x->split_axis >= 0 ? call->grid[x->split_axis] : 1, x->n_cores, x->lo, x->hi);
    if (!seed) return PL_OK;
    uint64_t state = seed;
    for (int a = 0; a < call->grid_rank; a++) {
        if (call->semantics[a] != PL_PARALLEL || call->grid[a] < 2) continue;
        if (!(x->perm[a] = malloc((size_t)call->grid[a] * sizeof *x->perm[a])))
            return sim_fail(&x->rep, PL_ENOMEM, "out of host memory");
        for (int64_t i = 0; i < call->grid[a]; i++) x->perm[a][i] = i;
        for (int64_t i = call->grid[a] - 1; i > 0; i--) { /* Fisher-Yates */
            int64_t j = (int64_t)(sim_splitmix64(&state) % (uint64_t)(i + 1)), t = x->perm[a][i];
            x->perm[a][i] = x->perm[a][j];
            x->perm[a][j] = t;
        }
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
    x->rep.cores = x->n_cores;
    x->rep.hbm_bytes = x->rep.dma_bytes;
    for (int i = 0; i < x->rep.n_operands; i++) x->rep.hbm_bytes += x->rep.op[i].bytes_in + x->rep.op[i].bytes_out;
    for (int c = 0; c < x->n_cores && x->tracing; c++) {
        sim_coreline *cl = &x->cores[c];
        if (!(cl->kernel_t = malloc((size_t)(2 * cl->steps + 1) * sizeof *cl->kernel_t))) {
            sim_fail(&x->rep, PL_ENOMEM, "out of host memory for the trace");
            return;
        }
    }
    int rc = sim_time_run(x->cores, x->n_cores, x->plan.chip, &t);
    if (rc) {
        const pl_chip *c = x->plan.chip;
        if (rc == -2)
            sim_fail(&x->rep, PL_EINVAL, "chip %s cannot be timed (hbm_bw %g B/s, step_overhead_s %g, "
                     "dma_latency_s %g, bf16_flops %g, vpu_flops %g): rates must be finite and positive, times "
                     "finite", c->name, c->hbm_bw, c->step_overhead_s, c->dma_latency_s, c->bf16_flops, c->vpu_flops);
        else sim_fail(&x->rep, PL_ENOMEM, "out of host memory in the timing model");
        return;
    }
    sim_analyze(&x->rep, &t, x->dot_flops, &x->plan);
    if (x->tracing) {
        int bad = sim_trace_write(x->trace, &x->plan, x->cores, x->n_cores, &x->rep);
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
    x->checks = !(opt && opt->checks_off);
    x->strict = opt && opt->strict;
    x->ctx.oob_poison = opt && opt->oob_reads == PL_OOB_POISON;
    x->ctx.uninit_zero = x->uninit == PL_UNINIT_ZERO;
    x->ctx.strict = x->strict;
    x->ctx.dma_on_wait = opt && opt->dma_mode == PL_DMA_ON_WAIT;
    uint64_t seed = opt ? opt->seed : 0;
    if (!sim_plan_call(call, args, outs, opt, &x->plan, &x->rep) && !sim_host_check(&x->plan, &x->rep) &&
        !open_trace(x, opt) && !alloc_buffers(x) &&
        !sim_checks_init(x) && !plan_order(x, seed)) {
        copy_aliases(x, args, outs);
        if (!sim_walk(x) && !sim_check_coverage(&x->plan, x->strict, &x->rep)) time_run(x);
    }
    int rc = x->rep.status;
    finish(x, report);
    free_exec(x);
    return rc;
}
