/* sim/call/exec.c: pl_pallas_call and pl_validate: validate (validate.c),
 * allocate the simulated VMEM, plan the order of the walk (the megacore
 * split of rule G4, a seeded shuffle of parallel axes), walk the grid
 * (walk.c), then time what the walk recorded (timing.c) and write the trace.
 *
 * A fault inside the kernel longjmps back to the walk (kernel/context.h);
 * every allocation of the call belongs to the sim_exec value (exec.h), so
 * one cleanup path serves success and failure alike.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exec.h"
#include "../base/outfile.h"
#include "profile.h"
#include "../tilesim_mesh.h"

static _Thread_local char last_error[PL_MSG_MAX];

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

void sim_check_collective_id(sim_exec *x, int taken)
{
    const pl_call *call = x->plan.call;
    if (x->rep.status || !call->has_collective_id || call->allow_collective_id_without_custom_barrier || taken) return;
    sim_fail(&x->rep, PL_EINVAL,
             "the call sets collective_id %d, but its kernel never took the barrier semaphore "
             "(pltpu_get_barrier_semaphore): Mosaic refuses that (\"collective_id has to be unspecified or None when "
             "not using a custom barrier\"); leave has_collective_id 0, or set "
             "allow_collective_id_without_custom_barrier (rule M15)", call->collective_id);
}

/* M5: each scalar-prefetch array is copied to SMEM whole, once per call in
 * the report (each core's copy is in its timeline). */
static void count_prefetch(sim_exec *x)
{
    for (int i = 0; i < x->plan.n_ops; i++) {
        const sim_operand *op = &x->plan.ops[i];
        if (op->role != PL_ROLE_PREFETCH) continue;
        op->rep->copies = 1;
        op->rep->bytes_in = (int64_t)pl_array_bytes(op->arr);
    }
}

static void free_exec(sim_exec *x)
{
    sim_walk_free(x);
    for (int a = 0; a < PL_MAX_GRID; a++) free(x->perm[a]);
    free(x->info);
    sim_out_abort(x->trace); /* a failed call: the temporary file goes, an old trace stays */
    free(x);
}

/* The recorder's view of a step (pl_options.on_step). */
static int init_info(sim_exec *x)
{
    if (!x->on_step) return PL_OK;
    if (!(x->info = calloc(1, sizeof *x->info))) return sim_fail(&x->rep, PL_ENOMEM, "out of host memory");
    x->info->grid_rank = x->plan.call->grid_rank;
    x->info->n_operands = x->plan.n_ops;
    for (int i = 0; i < x->plan.n_ops; i++) {
        x->info->names[i] = x->plan.ops[i].rep->name;
        x->info->ranks[i] = x->plan.ops[i].rank;
    }
    return PL_OK;
}

/* ---- the order of the walk (G4, V4) ------------------------------------------- */

/* As JAX splits a parallel axis between cores: ceil(size / cores)
 * consecutive indices each, so 4 rows over 3 cores are 2, 2 and 0 (the last
 * core idle), not 2, 1, 1. Returns how many cores get any. */
int sim_split_axis(int64_t size, int cores, int64_t *lo, int64_t *hi)
{
    int64_t chunk = (size + cores - 1) / cores; /* a 2^32-point axis has chunks of 2^31: not an int */
    int used = 0;
    for (int c = 0; c < cores; c++) {
        lo[c] = c * chunk < size ? c * chunk : size;
        hi[c] = (c + 1) * chunk < size ? (c + 1) * chunk : size;
        used += hi[c] > lo[c];
    }
    return used;
}

/* G4: on a chip with several TensorCores (2 on megacore chips, more on
 * what-if chips), the first parallel axis that divides evenly by the core
 * count is cut into contiguous chunks; otherwise the largest parallel axis,
 * in chunks of ceil(size / cores) as JAX cuts it (the last cores may get
 * none). A seed shuffles the visiting order of every parallel axis (V4). */
static int plan_order(sim_exec *x, uint64_t seed)
{
    const pl_call *call = x->plan.call;
    /* 1..SIM_MAX_CORES (validate.c); a mesh device's cores each on a host thread (mesh_run.c, M13) */
    int cores = x->plan.chip->cores_per_device;
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
    /* cores whose chunk is empty (an axis shorter than the core count, or 4 over 3) stay idle */
    x->n_cores = x->split_axis < 0 ? 1 : sim_split_axis(call->grid[x->split_axis], cores, x->lo, x->hi);
    if (x->split_axis < 0) sim_split_axis(1, 1, x->lo, x->hi);
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
    char msg[PL_MSG_MAX];
    if (sim_trace_check(x->plan.call, 1, opt, msg, sizeof msg)) return sim_fail(&x->rep, PL_EINVAL, "%s", msg);
    if (!(x->trace = sim_out_open(opt->trace_path, msg, sizeof msg)))
        return sim_fail(&x->rep, PL_EINVAL, "the trace file: %s", msg);
    x->tracing = 1;
    x->trace_limit = sim_trace_limit(opt);
    return PL_OK;
}

/* Before the replay: traffic totals, room for the trace's kernel times. */
static int time_prepare(sim_exec *x)
{
    x->rep.cores = x->n_cores;
    x->rep.hbm_bytes = x->rep.dma_bytes;
    for (int i = 0; i < x->rep.n_operands; i++) x->rep.hbm_bytes += x->rep.op[i].bytes_in + x->rep.op[i].bytes_out;
    for (int c = 0; c < x->n_cores && x->tracing; c++) {
        sim_coreline *cl = &x->lines[c];
        if (!(cl->kernel_t = malloc((size_t)(2 * cl->steps + 1) * sizeof *cl->kernel_t)) ||
            !(cl->begin_t = malloc((size_t)(cl->steps + 1) * sizeof *cl->begin_t)) ||
            !(cl->setup_t = malloc((size_t)(cl->steps + 1) * sizeof *cl->setup_t))) {
            return sim_fail(&x->rep, PL_ENOMEM, "out of host memory for the trace");
        }
    }
    return PL_OK;
}

/* After the replay (rc its code): the report's timing, the trace. */
static void time_report(sim_exec *x, int rc, const sim_time_result *tr)
{
    sim_time_result t = *tr;
    if (rc) {
        const pl_chip *c = x->plan.chip;
        if (rc == -3)
            sim_fail(&x->rep, PL_EINVAL, "the mesh's timeline cannot be replayed: a device waits in time for a copy "
                     "or signal that no device's records hold (an internal inconsistency; please report it)");
        else if (rc == -2) {
            char why[PL_MSG_MAX];
            if (!sim_time_chip_problem(c, why, sizeof why)) snprintf(why, sizeof why, "chip %s cannot be timed", c->name);
            sim_fail(&x->rep, PL_EINVAL, "%s", why);
        }
        else sim_fail(&x->rep, PL_ENOMEM, "out of host memory in the timing model");
        return;
    }
    sim_analyze(&x->rep, &t, x->dot_flops, &x->plan);
    sim_profile_finish(x); /* the op profile's timeline parts (profile.c) */
    if (x->tracing && x->trace) { /* a mesh device records for the mesh's trace (mesh_run.c) */
        char msg[PL_MSG_MAX];
        errno = 0;
        if (sim_trace_write(x->trace->f, &x->plan, x->lines, x->n_cores, &x->rep)) {
            int e = errno; /* the system's reason, where it gave one */
            sim_fail(&x->rep, PL_EINVAL, "writing the trace file '%s' failed: %s", x->trace->path,
                     e ? strerror(e) : "a write error (disk full?)");
            sim_out_abort(x->trace);
        } else if (sim_trace_too_big(x->trace->f, x->trace_limit, x->trace->path, msg, sizeof msg)) {
            sim_fail(&x->rep, PL_EINVAL, "%s", msg);
            sim_out_abort(x->trace);
        } else if (sim_out_commit(x->trace, msg, sizeof msg))
            sim_fail(&x->rep, PL_EINVAL, "the trace file: %s", msg);
        x->trace = NULL;
    }
}

static void time_run(sim_exec *x)
{
    sim_time_result t;
    if (time_prepare(x)) return;
    time_report(x, sim_time_run(x->lines, x->n_cores, x->plan.chip, &t), &t);
}

/* (device, semaphore) pairs that copies from another slice fill, sorted:
 * the waits on them are waits on DCN (M14). NULL: none (or no memory). */
typedef struct dcn_cell { int32_t device; uintptr_t cell; } dcn_cell;

static int cmp_cell(const void *a, const void *b)
{
    const dcn_cell *x = a, *y = b;
    if (x->device != y->device) return x->device < y->device ? -1 : 1;
    return x->cell < y->cell ? -1 : x->cell > y->cell;
}

/* The cells of line m (device d's copies or signals) that something from another slice lands in, appended to
 * *v; 0, or -1 out of memory. */
static int dcn_line(const sim_opline *m, int d, const pl_mesh *mesh, dcn_cell **v, size_t *k, size_t *cap)
{
    for (int64_t j = 0; j < m->n; j++) {
        const sim_xfer *x = &m->x[j];
        if (!x->hops || !x->cell || pl_mesh_slice_of(mesh, d) == pl_mesh_slice_of(mesh, x->to)) continue;
        if (*k == *cap) {
            dcn_cell *g = realloc(*v, (*cap = *cap ? 2 * *cap : 64) * sizeof **v);
            if (!g) return -1;
            *v = g;
        }
        (*v)[(*k)++] = (dcn_cell){x->to, x->cell};
    }
    return 0;
}

static dcn_cell *dcn_cells(sim_exec **xs, int n, const pl_mesh *mesh, size_t *count)
{
    size_t k = 0, cap = 0;
    dcn_cell *v = NULL;
    *count = 0;
    for (int d = 0; mesh->dcn && d < n; d++)
        for (int c = 0; c < xs[d]->n_cores; c++) /* copies and signals: either may cross slices */
            if (dcn_line(&xs[d]->lines[c].manual, d, mesh, &v, &k, &cap) ||
                dcn_line(&xs[d]->lines[c].signals, d, mesh, &v, &k, &cap))
                return free(v), NULL;
    if (k) qsort(v, k, sizeof *v, cmp_cell);
    *count = k;
    return v;
}

void sim_exec_finish_mesh(sim_exec **xs, int n, const pl_mesh *mesh, sim_link_stats *stats)
{
    if (n < 1) return;
    for (int d = 0; d < n; d++) {
        if (xs[d]->rep.status || sim_check_coverage(&xs[d]->plan, xs[d]->strict, &xs[d]->rep) || time_prepare(xs[d]))
            return; /* the call fails: no time to give */
    }
    sim_time_result *t = calloc((size_t)n, sizeof *t);
    sim_time_dev *devs = calloc((size_t)n, sizeof *devs);
    int rc = t && devs ? 0 : -1;
    for (int d = 0; d < n && !rc; d++) devs[d] = (sim_time_dev){xs[d]->lines, xs[d]->n_cores, &t[d]};
    if (!rc) rc = sim_time_mesh(devs, n, xs[0]->plan.chip, mesh, stats);
    size_t n_dcn = 0;
    dcn_cell *dcn = rc ? NULL : dcn_cells(xs, n, mesh, &n_dcn);
    for (int d = 0; d < n; d++) {
        time_report(xs[d], rc, t ? &t[d] : &(sim_time_result){0});
        for (int c = 0; !rc && c < xs[d]->n_cores; c++) /* waits for other devices (TAKE events) */
            for (int64_t i = 0; i < xs[d]->lines[c].n_kev; i++) {
                const sim_kevent *e = &xs[d]->lines[c].kev[i];
                if (e->kind != SIM_KEV_TAKE || e->t0 < 0 || !(e->t1 > e->t0)) continue;
                xs[d]->rep.remote_wait_s += e->t1 - e->t0;
                dcn_cell key = {d, e->cell};
                if (dcn && bsearch(&key, dcn, n_dcn, sizeof *dcn, cmp_cell)) xs[d]->rep.dcn_wait_s += e->t1 - e->t0;
            }
    }
    free(dcn);
    free(t);
    free(devs);
}

/* Options the validation of the call does not look at. */
static int check_options(const pl_options *opt, pl_report *rep)
{
    if (opt && opt->host_threads < 0)
        return sim_fail(rep, PL_EINVAL, "pl_options.host_threads = %d: give 0 (one host thread per TensorCore of a "
                        "megacore chip, up to the host's cores) or a number of threads (1: the cores one after the "
                        "other)", opt->host_threads);
    return PL_OK;
}

/* ---- the public calls ------------------------------------------------------------ */

static void finish(sim_exec *x, pl_report *report)
{
    snprintf(last_error, sizeof last_error, "%s", x->rep.status ? x->rep.error : "");
    if (report) *report = x->rep;
}

int sim_exec_refuse(pl_report *report, const char *call_name, const pl_chip *chip, int code, const char *msg)
{
    snprintf(last_error, sizeof last_error, "%s", msg);
    if (report) {
        memset(report, 0, sizeof *report);
        snprintf(report->call_name, sizeof report->call_name, "%s", call_name);
        snprintf(report->error, sizeof report->error, "%s", msg);
        report->chip = chip;
        report->status = code;
    }
    return code;
}

int pl_validate(const pl_call *call, const pl_array *args, const pl_array *outs, const pl_options *opt,
                pl_report *report)
{
    sim_exec *x = calloc(1, sizeof *x);
    if (!x) return PL_ENOMEM;
    if (!sim_plan_call(call, args, outs, opt, &x->plan, &x->rep)) check_options(opt, &x->rep);
    int rc = x->rep.status;
    finish(x, report);
    free_exec(x);
    return rc;
}

sim_exec *sim_exec_new(const pl_call *call, const pl_array *args, pl_array *outs, const pl_options *opt,
                       const sim_mesh_link *mesh)
{
    sim_exec *x = calloc(1, sizeof *x);
    if (!x) return NULL;
    if (mesh) x->mesh = *mesh;
    x->uninit = opt ? opt->uninit : PL_UNINIT_NAN;
    x->cost_only = opt ? opt->cost_only : 0;
    x->on_step = opt ? opt->on_step : NULL;
    x->on_step_user = opt ? opt->on_step_user : NULL;
    x->checks = !(opt && opt->checks_off);
    x->strict = opt && opt->strict;
    x->oob_poison = opt && opt->oob_reads == PL_OOB_POISON;
    x->dma_on_wait = opt && opt->dma_mode == PL_DMA_ON_WAIT;
    x->host_threads = opt ? opt->host_threads : 0;
    uint64_t seed = opt ? opt->seed : 0;
    if (!sim_plan_call(call, args, outs, opt, &x->plan, &x->rep) && !check_options(opt, &x->rep) &&
        !sim_host_check(&x->plan, &x->rep) && !open_trace(x, opt) && !init_info(x) && !plan_order(x, seed)) {
        count_prefetch(x);
        copy_aliases(x, args, outs);
        sim_any_outputs_poison(x);
    }
    return x;
}

void sim_exec_finish(sim_exec *x)
{
    if (!x->rep.status && !sim_check_coverage(&x->plan, x->strict, &x->rep) && !sim_any_outputs_check(x)) time_run(x);
}

void sim_exec_delete(sim_exec *x, pl_report *report)
{
    finish(x, report);
    free_exec(x);
}

int pl_pallas_call(const pl_call *call, const pl_array *args, pl_array *outs, const pl_options *opt,
                   pl_report *report)
{
    sim_exec *x = sim_exec_new(call, args, outs, opt, NULL);
    if (!x) {
        snprintf(last_error, sizeof last_error, "out of host memory");
        return PL_ENOMEM;
    }
    if (!x->rep.status) sim_walk(x);
    sim_check_collective_id(x, x->barrier_taken);
    sim_exec_finish(x);
    int rc = x->rep.status;
    sim_exec_delete(x, report);
    return rc;
}
