/* sim/call/walk.c: the grid walk (rules G1, G4, M10).
 *
 * Each TensorCore walks its part of the grid in lexicographic order, last
 * axis fastest (G1); on a megacore chip the cores split one parallel axis
 * (G4), each with its own VMEM buffers and scratch (core.h). At each grid
 * point every pipelined operand is brought to its block (pipeline.c), then
 * the kernel runs and its op log goes to the core's timeline (oplog.c).
 * After a core's last point, every output writes its last block back.
 *
 * The cores run one after the other, or each on a host thread of its own
 * when nothing makes one core's walk depend on another's (cores_independent
 * below). Either way each core reports into its own report, merged in core
 * order, so the call's result and report do not depend on the choice: a
 * core that would have seen another's write (a race, V4) makes the walk run
 * again in order, which reports it exactly as the sequential walk does.
 *
 * Steps are numbered per core for the timing model, and globally (each
 * core's after the previous core's) for messages.
 */
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "../base/hostthreads.h"

/* ---- one core ------------------------------------------------------------------- */

/* What a TensorCore has before its first grid point: empty pipelines, its own
 * copy of the scalar-prefetch arrays (M5) and uninitialized scratch (M2). */
static int start_core(sim_core *k)
{
    const sim_exec *x = k->x;
    const pl_call *call = x->plan.call;
    kern_core_start(&k->ctx, k->index, k->first_copy);
    for (int i = 0; i < x->plan.n_ops; i++) {
        int rc = sim_pipe_start(k, &k->pipe[i]);
        if (rc) return rc;
    }
    for (int i = 0; i < call->n_scratch; i++) {
        const pl_scratch *s = &call->scratch[i];
        if (s->space == PL_SEMAPHORE) memset(k->scratch_mem[i], 0, k->scratch_bytes[i]); /* M9 */
        else if (!x->cost_only) sim_poison(k->scratch_mem[i], s->dtype, (int64_t)(k->scratch_bytes[i] / pl_dtype_size(s->dtype)), x->uninit);
        if (k->checking) k->args[x->plan.n_ops + i].initialized = 0;
    }
    /* at most one copy or write-back per operand and step: no regrowth on the way */
    int bad = sim_coreline_reserve(k->line, k->steps);
    for (int i = 0; i < x->plan.n_ops && !bad; i++)
        if (x->plan.ops[i].pipelined) /* RevisitMode.ANY: a fetch-back too at most (P5) */
            bad = sim_opline_reserve(k->pipe[i].line, (x->plan.ops[i].revisit_any ? 2 : 1) * k->steps + 1, x->tracing);
    if (x->tracing && !bad && !(k->line->step_point = malloc((size_t)(k->steps + 1) * sizeof *k->line->step_point)))
        bad = 1;
    if (bad) return sim_fail(&k->rep, PL_ENOMEM, "out of host memory recording %lld grid steps", (long long)k->steps);
    return PL_OK;
}

/* Run the kernel at the current point and record what it did. */
static int run_kernel(sim_core *k, int64_t step)
{
    int rc = kern_run(&k->ctx, k->x->plan.call->kernel, k->kernel_refs);
    if (rc) return sim_fail(&k->rep, rc, "%s", kern_fault_text(&k->ctx));
    if (k->ctx.n_desc) kern_desc_step_end(&k->ctx); /* a copy descriptor made this step and never used (M7) */
    int n;
    const kern_op *ops = kern_step_ops(&k->ctx, &n);
    if (sim_record_step(k->line, k->memo, k->x->plan.chip, step, k->first_copy, ops, n, &k->rep, k->dot_flops))
        return sim_fail(&k->rep, PL_ENOMEM, "out of host memory recording the kernel's ops");
    return PL_OK;
}

/* M10: when a core's last grid point is done, every copy must have been
 * waited and every semaphore must be back at zero. */
static int check_semaphores(sim_core *k)
{
    pl_ctx *c = &k->ctx;
    char name[96], point[128], core[224] = "";
    for (int i = 0; i < k->x->plan.n_ops; i++) { /* M16: copies on a DMA semaphore the call returns */
        const sim_operand *op = &k->x->plan.ops[i];
        if (op->space == PL_SEMAPHORE && op->sem_dma && op->role == PL_ROLE_OUT) kern_dma_hand_over(c, op->arg);
    }
    if (k->x->n_cores > 1) /* megacore: a copy started where one core runs and waited where the other does */
        snprintf(core, sizeof core, "; it ran on core %d of %d, and each core walks its own part of the grid "
                 "(rule G4): wait for a copy or signal at a point the core that made it runs", k->index, k->x->n_cores);
    if (c->n_dma) {
        kern_ref_name(c, &c->dma[0].dst, name, sizeof name);
        kern_format_point(c->dma[0].point, c->grid_rank, point, sizeof point);
        return sim_fail(&k->rep, PL_ESEMAPHORE,
                        "copy %lld into %s, started at grid point %s, was never waited: its semaphore is left "
                        "non-zero when the kernel ends (rule M10)%s%s",
                        (long long)c->dma[0].id, name, point, core, c->n_dma > 1 ? "; and more copies like it" : "");
    }
    const sim_exec *x = k->x;
    const pl_call *call = x->plan.call;
    for (int i = 0; i < call->n_scratch; i++) {
        if (call->scratch[i].space != PL_SEMAPHORE) continue;
        const int64_t *v = k->scratch_mem[i]; /* 64-bit counts (kernel/context.h) */
        int64_t sems = (int64_t)(k->scratch_bytes[i] / sizeof *v); /* any shape: one count each */
        for (int64_t j = 0; j < sems; j++)
            if (v[j] != 0)
                return sim_fail(&k->rep, PL_ESEMAPHORE,
                                "semaphore %lld of %s (refs[%d]) holds %lld when the kernel ends; every signal "
                                "needs its wait (rule M10)%s%s",
                                (long long)j, x->rep.scratch[i].name, x->plan.n_ops + i, (long long)v[j],
                                call->scratch[i].sem_kind == PL_SEM_DMA && v[j] > 0
                                    ? "; a DMA semaphore counts bytes (M8): bytes left over mean a wait's descriptor "
                                      "was smaller than the copies that landed on it (a receiver's slice of the "
                                      "sender's block, say): make both sides' descriptors the same size"
                                    : "",
                                core);
    }
    const int64_t *barrier = kern_barrier_cell(&k->ctx);
    if (*barrier != 0)
        return sim_fail(&k->rep, PL_ESEMAPHORE,
                        "the barrier semaphore holds %lld when the kernel ends: every signal on it needs its wait "
                        "(rules M10, M15)", (long long)*barrier);
    for (int i = 0; c->sem_bank && i < KERN_SEM_BARRIER; i++) /* run_scoped ones, signalled by others after the last wait */
        if (c->sem_bank[i] != 0)
            return sim_fail(&k->rep, PL_ESEMAPHORE,
                            "run_scoped semaphore %d of this core (counted in the order scopes take them) holds %lld "
                            "when the kernel ends: another core or device signalled it, or copied into it, and no "
                            "wait here took it (rules M10, K4, M13)", i, (long long)c->sem_bank[i]);
    return PL_OK;
}

/* Tell the recorder (pl_options.on_step) about this step; cores walked in order only. */
static void report_step(sim_core *k, int64_t step, int final)
{
    pl_step_info *info = k->x->info;
    if (!info) return;
    info->step = step;
    info->core = k->index;
    info->final = final;
    memcpy(info->idx, k->ctx.idx, sizeof k->ctx.idx);
    k->x->on_step(info, k->x->on_step_user);
    info->final = 0;
}

/* A walk of many steps keeps a record of each (its copies, its time): at
 * checkpoints (powers of two from 2^16 steps), the records so far project
 * the whole walk's, over every core of the device and every device of a
 * mesh (they walk alike), and a walk the host cannot hold stops here with
 * what it would need, instead of being killed part way when Linux runs out
 * (a cost-only matmul of 2^28 tiny steps grew past 17 GB). A projection
 * from the first steps may overshoot (they copy, later ones revisit): it
 * stops a walk only once what is held is an eighth of what the host has. */
#define RECORD_CHECK_FROM (1 << 16)
static int records_fit(sim_core *k, int64_t step)
{
    if (step < RECORD_CHECK_FROM || (step & (step - 1)) || step * 2 > k->steps) return PL_OK;
    double walkers = (double)k->x->n_cores * (k->x->mesh.n_devices > 1 ? k->x->mesh.n_devices : 1);
    double held = sim_coreline_bytes(k->line) * walkers, need = held / (double)step * (double)k->steps;
    double avail = pl_host_memory_available();
    if (need - held <= avail || held * 8 < avail) return PL_OK;
    char a[32], b[32];
    return sim_fail(&k->rep, PL_ENOMEM,
                    "%s: its %lld grid steps%s would need about %s of host memory for their records (the copies and "
                    "time of each step; %.0f bytes a step so far), over the %s available: use larger blocks (fewer "
                    "grid steps) or a smaller problem", k->x->rep.call_name, (long long)k->steps,
                    walkers > 1 ? " on each core or device" : "", pl_format_bytes(need, a, sizeof a),
                    held / walkers / (double)step, pl_format_bytes(avail, b, sizeof b));
}

/* The grid points of a started core; then the M10 check (unless a mesh
 * makes it later: other devices may still signal this one) and the last
 * write-backs. */
static int walk_steps(sim_core *k, int check_m10)
{
    const sim_exec *x = k->x;
    const pl_call *call = x->plan.call;
    int n_ops = x->plan.n_ops, rc;
    sim_grid_iter it; /* it.pos: the point in walk order, before the order's permutation */
    sim_grid_iter_box(&it, call->grid_rank, k->lo, k->hi);
    for (int64_t step = 0; step < k->steps; step++) {
        int64_t idx[PL_MAX_GRID] = {0}, linear = 0;
        for (int a = 0; a < call->grid_rank; a++) {
            idx[a] = x->perm[a] ? x->perm[a][it.pos[a]] : it.pos[a];
            linear = linear * call->grid[a] + idx[a];
        }
        if (k->line->step_point) k->line->step_point[step] = linear;
        /* The kernel's copy of the refs, which it may scribble on, taken
         * before the pipeline moves: a new block's data pointer goes into
         * both (take_block). Copied after, the copy's wide loads would wait
         * for those narrow stores to land (a tenth of a sweep's time). */
        memcpy(k->kernel_refs, k->refs, (size_t)k->n_refs * sizeof *k->refs);
        kern_begin_step(&k->ctx, step, idx);
        for (int i = 0; i < n_ops; i++)
            if (x->plan.ops[i].pipelined && (rc = sim_pipe_advance(k, &k->pipe[i], idx, step))) return rc;
        report_step(k, step, 0);
        if (call->num_scalar_prefetch) sim_pipe_look_ahead(k, &it);
        if ((rc = run_kernel(k, step))) return rc;
        if ((rc = records_fit(k, step))) return rc;
        double rss, limit; /* asked every 64 steps: a call a step cost a sweep a tenth of its speed */
        if (++k->size_tick == 64 && !(k->size_tick = 0) && sim_host_grown_past(64, &rss, &limit)) {
            char a[32], b[32];
            return sim_fail(&k->rep, PL_ENOMEM,
                            "%s: the run holds %s of host memory, past the %s it may take (TILESIM_HOST_MEMORY, or "
                            "what the host has): it would be killed part way; fewer grid steps, devices or a "
                            "smaller problem", k->x->rep.call_name, pl_format_bytes(rss, a, sizeof a),
                            pl_format_bytes(limit, b, sizeof b));
        }
        k->rep.steps++;
        sim_grid_iter_next(&it); /* G1: last axis fastest */
    }
    kern_desc_walk_end(&k->ctx); /* a kind of copy descriptor no grid point used (M7) */
    if (check_m10 && (rc = check_semaphores(k))) return rc;
    for (int i = 0; i < n_ops && check_m10; i++) sim_pipe_sem_out(k, &k->pipe[i]); /* a mesh's: at its end */
    for (int i = 0; i < n_ops; i++)
        if ((rc = sim_pipe_drain(k, &k->pipe[i], k->steps))) return rc;
    report_step(k, k->steps, 1);
    return PL_OK;
}

static int walk_core(sim_core *k)
{
    int rc = start_core(k);
    return rc ? rc : walk_steps(k, 1);
}

/* ---- all cores ------------------------------------------------------------------- */

/* The cores' timelines, for the timing model. */
static int init_lines(sim_exec *x)
{
    if (!(x->lines = calloc((size_t)x->n_cores, sizeof *x->lines))) return -1;
    for (int c = 0; c < x->n_cores; c++) {
        x->lines[c].n_ops = x->plan.n_ops;
        for (int i = 0; i < x->plan.n_ops; i++) {
            const sim_operand *op = &x->plan.ops[i];
            sim_opline *line = &x->lines[c].op[i];
            line->is_out = op->role == PL_ROLE_OUT;
            line->buffers = op->role == PL_ROLE_PREFETCH ? 1 : op->buffers;
            line->rank = x->tracing ? op->rank : 0;
        }
    }
    return 0;
}

/* ---- one device of a mesh (mesh_run.c) -------------------------------------------- */

int sim_walk_device_start(sim_exec *x)
{
    if (init_lines(x)) return sim_fail(&x->rep, PL_ENOMEM, "out of host memory");
    for (int i = 0; i < x->plan.n_ops; i++) sim_pipe_sem_zero(&x->plan.ops[i]);
    for (int c = 0; c < x->n_cores; c++) {
        sim_core *k = x->cores[c] = sim_core_new(x, c, &x->rep);
        if (!k) return x->rep.status;
        if (start_core(k)) return k->rep.status;
    }
    if (x->n_cores > 1) { /* its cores walk at once, each on a thread (M13): V4 between them as threaded walks */
        pthread_mutex_init(&x->meet_lock, NULL);
        x->threaded = 1;
    }
    return PL_OK;
}

int sim_walk_device_steps(sim_exec *x, int core) { return walk_steps(x->cores[core], 0); }

int sim_walk_device_end(sim_exec *x)
{
    if (x->threaded) {
        x->threaded = 0;
        pthread_mutex_destroy(&x->meet_lock);
    }
    for (int c = 0; c < x->n_cores; c++) {
        sim_core *k = x->cores[c];
        if (!k) break;
        if (!k->rep.status) check_semaphores(k);
        /* M16: every device is done, so no other can signal its semaphore outputs any more */
        for (int i = 0; i < x->plan.n_ops && !k->rep.status; i++) sim_pipe_sem_out(k, &k->pipe[i]);
        sim_core_free_buffers(k);
    }
    for (int c = 0; c < x->n_cores && x->cores[c]; c++) {
        sim_core_merge(x, x->cores[c]);
        if (x->cores[c]->rep.status) break; /* the first core's error, as the in-order walk */
    }
    return x->rep.status;
}

void sim_walk_free(sim_exec *x)
{
    for (int c = 0; c < SIM_MAX_CORES; c++) {
        sim_core_delete(x->cores[c]);
        x->cores[c] = NULL;
    }
    for (int c = 0; x->lines && c < x->n_cores; c++) sim_coreline_free(&x->lines[c]);
    free(x->lines);
    x->lines = NULL;
}

/* The cores in order, each after the previous one is done (as before
 * threads; the reference the threaded walk must equal). */
static void walk_in_order(sim_exec *x)
{
    int64_t first_copy = 0;
    for (int c = 0; c < x->n_cores; c++) {
        sim_core *k = x->cores[c] = sim_core_new(x, c, &x->rep);
        if (!k) return;
        k->cross_cores = 1;
        k->first_copy = first_copy; /* manual copies are numbered across the call */
        walk_core(k);
        first_copy = kern_next_copy(&k->ctx);
        sim_core_free_buffers(k);
        if (k->rep.status) return;
    }
}

static void *walk_thread(void *arg)
{
    sim_core **ks = arg; /* this thread's cores, NULL-terminated */
    for (; *ks; ks++) {
        walk_core(*ks);
        sim_core_free_buffers(*ks);
    }
    return NULL;
}

/* The outputs as they were before the cores ran. A threaded walk whose
 * early core fails has let later cores write what the in-order walk never
 * reaches: the outputs are put back and the cores walk again in order, so
 * even a failed call leaves its outputs as the in-order walk does. */
typedef struct sim_saved {
    int n;
    void *data[SIM_MAX_OPS];
} sim_saved;

static int save_outputs(const sim_exec *x, sim_saved *s)
{
    s->n = x->plan.n_ops;
    for (int i = 0; i < s->n; i++) {
        const pl_array *a = x->plan.ops[i].arr;
        s->data[i] = NULL;
        if (x->plan.ops[i].role != PL_ROLE_OUT || x->cost_only || !a->data) continue;
        if (!(s->data[i] = malloc(pl_array_bytes(a) ? pl_array_bytes(a) : 1))) return -1;
        memcpy(s->data[i], a->data, pl_array_bytes(a));
    }
    return 0;
}

static void restore_outputs(const sim_exec *x, sim_saved *s, int put_back)
{
    for (int i = 0; i < s->n; i++) {
        if (s->data[i] && put_back) memcpy(x->plan.ops[i].arr->data, s->data[i], pl_array_bytes(x->plan.ops[i].arr));
        free(s->data[i]);
    }
}

/* Each core on a thread of its own (cores beyond `threads` take turns).
 * 0 when the walk stands; 1 when it must be walked again in order (two
 * cores met on an output block, V4, or a core failed before the last one),
 * outputs put back. Cores that meet never write one block at once: the
 * second to select it stops there (checks.c). */
static int walk_threaded(sim_exec *x, int threads)
{
    sim_core *lists[SIM_MAX_CORES][SIM_MAX_CORES + 1] = {{0}};
    void *arg[SIM_MAX_CORES];
    sim_saved saved = {0};
    if (save_outputs(x, &saved)) {
        restore_outputs(x, &saved, 0);
        return 1; /* no room to keep them: in order, with no need to */
    }
    pl_report *ignored = calloc(1, sizeof *ignored); /* the in-order walk will say it */
    for (int c = 0; c < x->n_cores; c++) {
        if (!ignored || !(x->cores[c] = sim_core_new(x, c, ignored))) {
            free(ignored);
            restore_outputs(x, &saved, 0);
            return 1;
        }
        lists[c % threads][c / threads] = x->cores[c];
    }
    free(ignored);
    for (int t = 0; t < threads; t++) arg[t] = lists[t];
    pthread_mutex_init(&x->meet_lock, NULL);
    x->threaded = 1;
    sim_blas_single_begin();
    sim_run_pinned(threads, walk_thread, arg);
    sim_blas_single_end();
    x->threaded = 0;
    pthread_mutex_destroy(&x->meet_lock);
    int again = 0;
    for (int c = 0; c < x->n_cores; c++) /* cores that met; a core failed before the last */
        again |= x->cores[c]->met || (c + 1 < x->n_cores && x->cores[c]->rep.status != PL_OK);
    restore_outputs(x, &saved, again);
    return again;
}

/* Host threads for this call: 1 unless its cores cannot affect each other.
 * They can through HBM (an aliased output, an array passed as both input and
 * output, an ANY operand the kernel reads or writes itself, manual copies,
 * output blocks at element offsets, which may overlap),
 * through the recorder, which sees the steps in order, and, with the checks
 * off, through an output block two cores share unseen (V4). */
static int host_threads(const sim_exec *x)
{
    const pl_call *call = x->plan.call;
    if (x->n_cores < 2 || x->host_threads == 1 || x->on_step || !x->checks || call->n_alias) return 1;
    for (int i = 0; i < call->n_scratch; i++)
        if (call->scratch[i].space == PL_SEMAPHORE) return 1;
    for (int i = 0; i < x->plan.n_ops; i++) {
        const sim_operand *a = &x->plan.ops[i];
        if (a->role != PL_ROLE_PREFETCH && !a->pipelined) return 1;
        for (int d = 0; d < a->rank && a->role == PL_ROLE_OUT; d++)
            if (a->element[d]) return 1; /* element offsets (B5): distinct blocks may overlap in HBM */
        for (int j = 0; j < x->plan.n_ops && a->role == PL_ROLE_OUT && !x->cost_only; j++) {
            const sim_operand *b = &x->plan.ops[j];
            const char *pa = a->arr->data, *pb = b->arr->data;
            if (b->role == PL_ROLE_OUT || !pa || !pb) continue;
            if (pa < pb + pl_array_bytes(b->arr) && pb < pa + pl_array_bytes(a->arr)) return 1;
        }
    }
    int threads = x->host_threads > 0 ? x->host_threads : sim_host_cores();
    if (threads > x->n_cores) threads = x->n_cores;
    if (threads > 1 && !x->cost_only && sim_host_check_copies(&x->plan, threads)) threads = 1;
    return threads < 1 ? 1 : threads;
}

/* Grid points core c walks (G4). */
static int64_t core_steps(const sim_exec *x, int c)
{
    const pl_call *call = x->plan.call;
    int64_t n = 1;
    for (int a = 0; a < call->grid_rank; a++) n *= a == x->split_axis ? x->hi[c] - x->lo[c] : call->grid[a];
    return n;
}

int sim_walk(sim_exec *x)
{
    for (int i = 0; i < x->plan.n_ops; i++) sim_pipe_sem_zero(&x->plan.ops[i]);
    for (int c = 1; c < x->n_cores; c++) x->step_base[c] = x->step_base[c - 1] + core_steps(x, c - 1);
    if (init_lines(x)) return sim_fail(&x->rep, PL_ENOMEM, "out of host memory");
    int threads = host_threads(x), again = 0;
    if (threads > 1 && (again = walk_threaded(x, threads)) != 0) {
        sim_walk_free(x); /* the reference walk says what went wrong, and where */
        if (init_lines(x)) return sim_fail(&x->rep, PL_ENOMEM, "out of host memory");
    }
    if (threads <= 1 || again) walk_in_order(x);
    for (int c = 0; c < x->n_cores && x->cores[c]; c++) {
        sim_core_merge(x, x->cores[c]);
        if (x->cores[c]->rep.status) break; /* the in-order walk stops at the first error */
    }
    return x->rep.status;
}
