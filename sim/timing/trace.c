/* sim/timing/trace.c: the simulated timeline as Chrome trace-event JSON, which
 * Perfetto (ui.perfetto.dev) and chrome://tracing open.
 *
 * One process per TensorCore. In it: thread 0 holds the kernel steps, each
 * after its slice "step overhead (P9)" (args:
 * the grid point and every operand's block index); one thread per buffer
 * slot of each operand holds its DMAs (a slot holds one block at a time, so
 * its copies never overlap on a track); a counter shows the VMEM that holds
 * live data. Times are microseconds, as the format wants.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../base/json.h"
#include "../base/sim.h"
#include "ici.h"
#include "timing.h"

typedef struct vmem_delta {
    double t;
    int64_t bytes;
} vmem_delta;

static int cmp_delta(const void *a, const void *b)
{
    const vmem_delta *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return x->bytes < y->bytes ? -1 : x->bytes > y->bytes; /* frees first at equal times */
}

/* Seconds as the microseconds the trace prints (6 decimals): slices that
 * touch (a step, the next one's overhead) are printed from rounded ends, so
 * that rounding never makes them overlap. */
static double us6(double s) { return round(s * 1e12) / 1e6; }

static void meta(FILE *f, int *first, int pid, int tid, const char *kind, const char *name)
{
    fprintf(f, "%s{\"name\":\"%s\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":", *first ? "" : ",\n", kind,
            pid, tid);
    pl_json_string(f, name);
    fprintf(f, "}}");
    *first = 0;
}

/* The block operand op holds at step n: inputs take the latest copy at or
 * before n, outputs the first write-back at or after n. */
static const int64_t *block_at(const sim_opline *l, int64_t n, int64_t *cursor)
{
    if (!l->bidx || !l->n) return NULL;
    if (!l->is_out) {
        while (*cursor + 1 < l->n && l->x[*cursor + 1].step <= n) (*cursor)++;
    } else {
        while (*cursor < l->n - 1 && l->x[*cursor].step < n) (*cursor)++;
    }
    return l->bidx + *cursor * l->rank;
}

/* The VMEM deltas write_core records: one per VMEM scratch buffer (live
 * from the start), two per transfer of a VMEM operand (live, then freed).
 * Counted from exactly what the loops below append, so that the buffer
 * cannot be outgrown however many scratch buffers or operands a call has. */
static int64_t count_deltas(const sim_plan *plan, const sim_coreline *cl, const pl_report *rep)
{
    int64_t n = 0;
    for (int i = 0; i < rep->n_scratch; i++) n += rep->scratch[i].space == PL_VMEM;
    for (int i = 0; i < cl->n_ops; i++) n += plan->ops[i].space == PL_VMEM ? 2 * cl->op[i].n : 0;
    return n;
}

/* A mesh: the waits of a core for copies and for other devices, as slices
 * on a track of their own (a long wait with nothing beside it is a
 * synchronous collective; compute between a start and its wait, an
 * overlapped one). */
static void write_waits(FILE *f, int *first, int pid, const sim_coreline *cl)
{
    int named = 0;
    for (int64_t i = 0; i < cl->n_kev; i++) {
        const sim_kevent *e = &cl->kev[i];
        if ((e->kind != SIM_KEV_WAIT && e->kind != SIM_KEV_TAKE) || !(e->t1 > e->t0) || e->t0 < 0) continue;
        if (!named++) meta(f, first, pid, 999, "thread_name", "waits (semaphores)");
        if (e->kind == SIM_KEV_WAIT && e->xfer >= 0 && e->xfer < cl->manual.n) {
            /* named as the slice of the copy it waits for ("copy J" on a manual DMA track) */
            const sim_xfer *x = &cl->manual.x[e->xfer];
            fprintf(f, ",\n{\"name\":\"wait: copy %lld\",\"ph\":\"X\",\"pid\":%d,\"tid\":999,\"ts\":%.6f,"
                       "\"dur\":%.6f,\"args\":{\"copy\":%lld,\"bytes\":%lld,\"started at step\":%lld%s}}",
                    (long long)e->xfer, pid, e->t0 * 1e6, (e->t1 - e->t0) * 1e6, (long long)e->xfer,
                    (long long)x->bytes, (long long)x->step, x->hops ? ",\"to another device\":true" : "");
        } else
            fprintf(f, ",\n{\"name\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":999,\"ts\":%.6f,\"dur\":%.6f}",
                    e->kind == SIM_KEV_WAIT ? "wait: own copy" : "wait: another device's copy or signal", pid,
                    e->t0 * 1e6, (e->t1 - e->t0) * 1e6);
    }
}

/* A slice of the core's scalar work on the steps' track, t0 to t1 in seconds. */
static void overhead_slice(FILE *f, int pid, const char *name, double t0, double t1, const char *grid)
{
    fprintf(f, ",\n{\"name\":");
    pl_json_string(f, name);
    fprintf(f, ",\"ph\":\"X\",\"pid\":%d,\"tid\":0,\"ts\":%.6f,\"dur\":%.6f", pid, us6(t0), us6(t1) - us6(t0));
    if (grid) fprintf(f, ",\"args\":{\"grid\":\"%s\"}", grid);
    fprintf(f, "}");
}

/* The kernel steps' track: the call's prologue, each step with its grid
 * point and the blocks it holds after its overhead (P9), and the
 * epilogue's waits for the last write-backs: the track ends when the
 * report's time does. */
static void write_steps(FILE *f, int pid, const sim_plan *plan, const sim_coreline *cl, const pl_report *rep)
{
    int64_t cursor[SIM_MAX_OPS] = {0};
    int g = plan->call->grid_rank;
    if (rep->chip->prologue_s > 0) overhead_slice(f, pid, "prologue", 0, rep->chip->prologue_s, NULL);
    for (int64_t n = 0; n < cl->steps; n++) {
        int64_t point = cl->step_point ? cl->step_point[n] : n, idx[PL_MAX_GRID];
        sim_grid_point(g, plan->call->grid, point, idx);
        char gp[128];
        sim_format_idx(idx, g, gp, sizeof gp);
        double t0 = cl->kernel_t[2 * n], t1 = cl->kernel_t[2 * n + 1];
        /* P9: the step's fixed overhead and its copies' descriptors, from its start; a gap after it is a
         * wait for copies */
        if (cl->setup_t && cl->setup_t[n] > cl->begin_t[n])
            overhead_slice(f, pid, "step overhead (P9)", cl->begin_t[n], cl->setup_t[n], gp);
        fprintf(f, ",\n{\"name\":\"step %s\",\"ph\":\"X\",\"pid\":%d,\"tid\":0,\"ts\":%.6f,\"dur\":%.6f,\"args\":{\"grid\":\"%s\"",
                gp, pid, us6(t0), us6(t1) - us6(t0), gp);
        for (int i = 0; i < cl->n_ops; i++) {
            const int64_t *b = block_at(&cl->op[i], n, &cursor[i]);
            if (!b) continue;
            sim_format_idx(b, cl->op[i].rank, gp, sizeof gp);
            fprintf(f, ",");
            pl_json_string(f, plan->ops[i].rep->name);
            fprintf(f, ":\"%s\"", gp);
        }
        fprintf(f, "}}");
    }
    if (cl->setup_t && cl->setup_t[cl->steps] > cl->begin_t[cl->steps])
        overhead_slice(f, pid, "epilogue: write-back waits", cl->begin_t[cl->steps], cl->setup_t[cl->steps], NULL);
}

/* The pipeline's copies and write-backs on their slots' tracks; into dl, when each block's VMEM is live. */
static void write_pipeline(FILE *f, int pid, const sim_plan *plan, const sim_coreline *cl, const pl_report *rep,
                           const int *tid_base, vmem_delta *dl, int64_t *n_delta)
{
    for (int i = 0; i < rep->n_scratch; i++)
        if (rep->scratch[i].space == PL_VMEM) dl[(*n_delta)++] = (vmem_delta){0, rep->scratch[i].bytes};
    for (int i = 0; i < cl->n_ops; i++) {
        const sim_opline *l = &cl->op[i];
        const sim_operand *op = &plan->ops[i];
        for (int64_t j = 0; j < l->n; j++) {
            const sim_xfer *x = &l->x[j];
            char blk[128] = "";
            if (l->bidx) sim_format_idx(l->bidx + j * l->rank, l->rank, blk, sizeof blk);
            char name[256]; /* the operand's name is the user's: escaped as JSON (pl_json_string) */
            snprintf(name, sizeof name, "%s %s %s", op->rep->name,
                     !l->is_out ? "copy" : x->fetch ? "fetch-back" : "write-back", blk);
            fprintf(f, ",\n{\"name\":");
            pl_json_string(f, name);
            fprintf(f, ",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.6f,\"dur\":%.6f,"
                       "\"args\":{\"bytes\":%lld,\"step\":%lld}}",
                    pid, tid_base[i] + x->slot,
                    x->t_issue * 1e6, (x->t_done - x->t_issue) * 1e6, (long long)x->bytes, (long long)x->step);
            if (op->space != PL_VMEM) continue;
            int64_t vb = op->rep->vmem_bytes;
            if (!l->is_out) { /* live from its issue to the end of the last step that reads it */
                int64_t last = j + 1 < l->n ? l->x[j + 1].step - 1 : cl->steps - 1;
                dl[(*n_delta)++] = (vmem_delta){x->t_issue, vb};
                dl[(*n_delta)++] = (vmem_delta){cl->kernel_t[2 * last + 1], -vb};
            } else if (!x->fetch) { /* live from the first step that writes it until its write-back lands */
                int64_t firstn = j ? l->x[j - 1].step + 1 : 0;
                /* a block fetched back (P5) is live from the fetch's issue */
                double t0 = j && l->x[j - 1].fetch ? l->x[j - 1].t_issue : cl->kernel_t[2 * firstn];
                dl[(*n_delta)++] = (vmem_delta){t0, vb};
                dl[(*n_delta)++] = (vmem_delta){x->t_done, -vb};
            }
        }
    }
}

/* Manual copies (kernel/pltpu.h): they may overlap one another, so each
 * takes the first of the lanes after tid whose previous copy has landed. */
static void write_manual(FILE *f, int *first, int pid, int tid, const sim_coreline *cl)
{
    char name[96];
    enum { LANES = 16 };
    double lane_end[LANES];
    int lanes = 0;
    for (int64_t j = 0; j < cl->manual.n; j++) {
        const sim_xfer *x = &cl->manual.x[j];
        int lane = 0;
        while (lane < lanes && lane_end[lane] > x->t_issue) lane++;
        if (lane == LANES) lane = LANES - 1; /* more overlap than lanes: share the last */
        if (lane == lanes) {
            snprintf(name, sizeof name, "manual DMA %d", lane);
            meta(f, first, pid, tid + lane, "thread_name", name);
            lane_end[lanes++] = 0;
        }
        lane_end[lane] = x->t_done;
        fprintf(f, ",\n{\"name\":\"copy %lld\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.6f,\"dur\":%.6f,"
                   "\"args\":{\"bytes\":%lld,\"started at step\":%lld}}",
                (long long)j, pid, tid + lane, x->t_issue * 1e6, (x->t_done - x->t_issue) * 1e6, (long long)x->bytes,
                (long long)x->step);
    }
}

static int write_core(FILE *f, int *first, int pid, const char *process, const sim_plan *plan,
                      const sim_coreline *cl, const pl_report *rep)
{
    char name[96];
    meta(f, first, pid, 0, "process_name", process);
    meta(f, first, pid, 0, "thread_name", "kernel steps");
    int tid_base[SIM_MAX_OPS], tid = 1;
    for (int i = 0; i < cl->n_ops; i++) {
        const sim_opline *l = &cl->op[i];
        tid_base[i] = tid;
        if (!l->n) continue;
        for (int s = 0; s < l->buffers; s++) { /* an output's fetch-backs share its slot's track (P5) */
            snprintf(name, sizeof name, "%s slot %d (%s)", plan->ops[i].rep->name, s,
                     !l->is_out ? "copy in" : plan->ops[i].revisit_any ? "write-back, fetch-back" : "write-back");
            meta(f, first, pid, tid + s, "thread_name", name);
        }
        tid += l->buffers;
    }
    write_steps(f, pid, plan, cl, rep);
    int64_t n_delta = 0, cap = count_deltas(plan, cl, rep);
    vmem_delta *dl = malloc((size_t)(cap ? cap : 1) * sizeof *dl);
    if (!dl) return -1;
    write_pipeline(f, pid, plan, cl, rep, tid_base, dl, &n_delta);
    write_manual(f, first, pid, tid, cl);
    qsort(dl, (size_t)n_delta, sizeof *dl, cmp_delta);
    int64_t live = 0;
    for (int64_t i = 0; i < n_delta; i++) {
        live += dl[i].bytes;
        if (i + 1 < n_delta && dl[i + 1].t == dl[i].t) continue; /* one sample per instant */
        fprintf(f, ",\n{\"name\":\"VMEM in use\",\"ph\":\"C\",\"pid\":%d,\"ts\":%.6f,\"args\":{\"bytes\":%lld}}", pid,
                dl[i].t * 1e6, (long long)live);
    }
    free(dl);
    return 0;
}


int sim_trace_write(FILE *f, const sim_plan *plan, const sim_coreline *cores, int n_cores, const pl_report *rep)
{
    int first = 1;
    fprintf(f, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"call\":");
    pl_json_string(f, rep->call_name);
    fprintf(f, ",\"chip\":");
    pl_json_string(f, rep->chip->name);
    fprintf(f, ",\"time_s\":%.9g},\"traceEvents\":[\n", rep->time_s);
    for (int c = 0; c < n_cores; c++) {
        char name[64];
        snprintf(name, sizeof name, "TensorCore %d", c);
        if (write_core(f, &first, c, name, plan, &cores[c], rep)) return -1;
    }
    fprintf(f, "\n]}\n");
    return ferror(f) ? -1 : 0;
}

/* ---- a mesh -------------------------------------------------------------------- */

/* The links: a track per directed ICI link that carried copies, each copy
 * on every link of its route from its first byte to its last; on a
 * multislice mesh (M14) a track per slice's DCN traffic out and in (the
 * Megascale view's links), a copy between slices on both. */
static void write_links(FILE *f, int *first, const pl_mesh *mesh, const sim_trace_dev *devs, int n, const pl_chip *chip)
{
    static const char sign[2] = {'+', '-'};
    double latency = chip->dma_latency_s, hop = isfinite(chip->ici_latency_s) && chip->ici_latency_s > 0 ?
                                                    chip->ici_latency_s : 0;
    uint8_t *named = calloc((size_t)SIM_ICI_LINKS(n), 1);
    int links[3 * PL_MESH_MAX_DEVICES];
    meta(f, first, 0, 0, "process_name", mesh->dcn ? "ICI and DCN links" : "ICI links");
    for (int d = 0; d < n; d++)
        for (int c = 0; c < devs[d].n_cores; c++) {
            const sim_opline *m = &devs[d].cores[c].manual;
            for (int64_t j = 0; j < m->n; j++) {
                const sim_xfer *x = &m->x[j];
                if (!x->hops) continue;
                int h = sim_mesh_route(mesh, d, x->to, links, (int)(sizeof links / sizeof *links));
                int dcn = h > 0 && SIM_IS_DCN_LINK(n, links[0]);
                double t0 = x->t_issue + latency + (dcn ? chip->dcn_latency_s : h * hop);
                for (int k = 0; k < h && k < (int)(sizeof links / sizeof *links); k++) {
                    int l = links[k], from = l / (2 * PL_MESH_MAX_AXES), axis = l / 2 % PL_MESH_MAX_AXES;
                    char name[64];
                    if (dcn) { /* slice s out, slice s in: after the ICI links' numbers */
                        int in = k == 1, slice = pl_mesh_slice_of(mesh, in ? x->to : d);
                        l = SIM_DCN_LINK(n, slice, in);
                        snprintf(name, sizeof name, "slice %d DCN %s", slice, in ? "in" : "out");
                    } else
                        snprintf(name, sizeof name, "device %d %c%s", from, sign[l % 2], mesh->axis[axis]);
                    if (named && !named[l]) {
                        meta(f, first, 0, l + 1, "thread_name", name);
                        named[l] = 1;
                    }
                    fprintf(f, ",\n{\"name\":\"copy %d->%d\",\"ph\":\"X\",\"pid\":0,\"tid\":%d,\"ts\":%.6f,"
                            "\"dur\":%.6f,\"args\":{\"bytes\":%lld}}", d, x->to, l + 1, t0 * 1e6,
                            (x->t_done > t0 ? x->t_done - t0 : 0) * 1e6, (long long)x->bytes);
                }
            }
        }
    free(named);
}

int sim_trace_write_mesh(FILE *f, const pl_mesh *mesh, const sim_trace_dev *devs, int n, const pl_chip *chip,
                         double time_s)
{
    int first = 1;
    char name[96];
    fprintf(f, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"call\":");
    pl_json_string(f, devs[0].rep->call_name);
    pl_mesh_format(mesh, name, sizeof name);
    fprintf(f, ",\"chip\":");
    pl_json_string(f, chip->name);
    fprintf(f, ",\"mesh\":");
    pl_json_string(f, name);
    fprintf(f, ",\"time_s\":%.9g},\"traceEvents\":[\n", time_s);
    write_links(f, &first, mesh, devs, n, chip);
    for (int d = 0; d < n; d++)
        for (int c = 0; c < devs[d].n_cores; c++) {
            int pid = 1 + d * SIM_MAX_CORES + c;
            if (devs[d].n_cores > 1) snprintf(name, sizeof name, "device %d TensorCore %d", d, c);
            else snprintf(name, sizeof name, "device %d", d);
            if (write_core(f, &first, pid, name, devs[d].plan, &devs[d].cores[c], devs[d].rep)) return -1;
            write_waits(f, &first, pid, &devs[d].cores[c]);
        }
    fprintf(f, "\n]}\n");
    return ferror(f) ? -1 : 0;
}

/* ---- the size cap -------------------------------------------------------------- */

/* Bytes a step takes in the trace, at least: its slice and its overhead
 * slice (~230 bytes), then per operand its block index in the step's args
 * and, most steps, a copy slice and two VMEM counter samples. An estimate
 * on the low side, so that what it refuses is surely too big (a 2^21-step
 * matmul wrote 1.3 GB, ~620 bytes a step). */
#define TRACE_STEP_BYTES 230.0
#define TRACE_OPERAND_BYTES 60.0

int64_t sim_trace_limit(const pl_options *opt)
{
    return opt && opt->trace_limit_bytes ? opt->trace_limit_bytes : PL_TRACE_LIMIT_DEFAULT;
}

int sim_trace_too_big(FILE *f, int64_t limit, const char *path, char *msg, size_t n)
{
    long size = limit < 0 ? -1 : ftell(f);
    if (size < 0 || size <= limit) return 0;
    char est[32], lim[32];
    snprintf(msg, n, "the trace '%s' came to %s, over the trace limit of %s: nothing was written. Use larger blocks "
             "(fewer grid steps) or a smaller problem, or raise the limit (--trace-limit, pl_options.trace_limit_bytes; "
             "negative: none)", path, pl_format_bytes((double)size, est, sizeof est),
             pl_format_bytes((double)limit, lim, sizeof lim));
    return -1;
}

int sim_trace_check(const pl_call *call, int devices, const pl_options *opt, char *msg, size_t n)
{
    int64_t limit = sim_trace_limit(opt);
    if (limit < 0) return 0;
    double steps = 1;
    for (int a = 0; a < call->grid_rank; a++) steps *= call->grid[a] > 0 ? (double)call->grid[a] : 0;
    int ops = call->num_scalar_prefetch + call->n_in + call->n_out;
    double per_step = TRACE_STEP_BYTES + TRACE_OPERAND_BYTES * ops;
    double bytes = steps * (devices > 0 ? devices : 1) * per_step;
    if (bytes <= (double)limit) return 0;
    char est[32], lim[32], on[48] = "";
    if (devices > 1) snprintf(on, sizeof on, " on each of %d devices", devices);
    char what[300] = "the teaching page's timeline (a trace)";
    if (opt->trace_path) snprintf(what, sizeof what, "the trace '%s'", opt->trace_path);
    snprintf(msg, n, "%s would take about %s (%.0f grid steps%s, ~%.0f bytes each), over the trace "
             "limit of %s: nothing was written. Use larger blocks (fewer grid steps) or a smaller problem, or raise "
             "the limit (--trace-limit, pl_options.trace_limit_bytes; negative: none)", what,
             pl_format_bytes(bytes, est, sizeof est), steps, on, per_step, pl_format_bytes((double)limit, lim,
             sizeof lim));
    return -1;
}
