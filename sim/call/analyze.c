/* sim/call/analyze.c: from the simulated timeline to what a user reads: achieved
 * FLOP/s, fraction of peak, arithmetic intensity against the chip's critical
 * intensity, and the bound in one sentence with what to change. */
#include <math.h>
#include <string.h>

#include "../base/sim.h"
#include "../timing/timing.h"

/* The inputs that move the most bytes, "x and y". */
static void heaviest_inputs(const pl_report *r, char *buf, size_t n)
{
    int first = -1, second = -1;
    for (int i = 0; i < r->n_operands; i++) {
        int64_t b = r->op[i].bytes_in + r->op[i].bytes_out;
        if (first < 0 || b > r->op[first].bytes_in + r->op[first].bytes_out) second = first, first = i;
        else if (second < 0 || b > r->op[second].bytes_in + r->op[second].bytes_out) second = i;
    }
    int64_t top = first < 0 ? 0 : r->op[first].bytes_in + r->op[first].bytes_out;
    if (r->dma_bytes > top) {
        snprintf(buf, n, "the kernel's own copies");
        return;
    }
    if (first < 0) snprintf(buf, n, "the operands");
    /* a second operand of a tenth of the first's bytes is not "mostly" (an argmax's 2 KiB index beside 8 MiB) */
    else if (second < 0 || 10 * (r->op[second].bytes_in + r->op[second].bytes_out) < top)
        snprintf(buf, n, "%s", r->op[first].name);
    else snprintf(buf, n, "%s and %s", r->op[first].name, r->op[second].name);
}

/* The operand moved most beyond its own size (an input read again, an
 * output fetched back), other than `skip`: its index, or -1 when every
 * other operand moves once. *extra: the bytes beyond its size. */
static int most_reread(const pl_report *r, int skip, int64_t *extra_out)
{
    int best = -1;
    int64_t best_extra = 0;
    for (int i = 0; i < r->n_operands; i++) {
        const pl_operand_report *o = &r->op[i];
        if (i == skip || (o->role != PL_ROLE_IN && o->role != PL_ROLE_OUT) || o->array_bytes <= 0) continue;
        int64_t moved = o->bytes_in + (o->role == PL_ROLE_OUT ? o->bytes_out : 0);
        int64_t extra = moved - o->array_bytes;
        /* a few percent over is edge clipping of odd shapes, not re-reading;
         * a small table read twice is not what the kernel waits for */
        if (extra > o->array_bytes / 20 && extra > r->hbm_bytes / 20 && extra > best_extra)
            best = i, best_extra = extra;
    }
    *extra_out = best_extra;
    return best;
}

static const sim_operand *plan_operand_of(const sim_plan *plan, const pl_report *r, int i)
{
    for (int k = 0; plan && k < plan->n_ops; k++)
        if (plan->ops[k].rep == &r->op[i]) return &plan->ops[k];
    return NULL;
}

static int map_uses_axis(const pl_index_map *m, int axis)
{
    for (int d = 0; d < m->n; d++)
        if (m->axis[d] == axis) return 1;
    return 0;
}

/* The grid axis that makes op be copied again: one its (declarative) map
 * ignores while an axis it follows runs inside it, so the walk leaves each
 * block and comes back to it. The longest such axis; -1 if none or unknown. */
static int reread_axis(const sim_plan *plan, const sim_operand *op)
{
    const pl_call *call = plan->call;
    if (!op || op->map.fn || !op->pipelined) return -1;
    int inner_used = -1;
    for (int a = 0; a < call->grid_rank; a++)
        if (call->grid[a] > 1 && map_uses_axis(&op->map, a)) inner_used = a;
    int best = -1;
    for (int a = 0; a < inner_used; a++)
        if (call->grid[a] > 1 && !map_uses_axis(&op->map, a) && (best < 0 || call->grid[a] > call->grid[best]))
            best = a;
    return best;
}

/* "y's block dim 1 and o's block dim 1": the block dims that grid axis
 * `axis` walks; larger ones mean fewer steps along it. */
static void blocks_along(const sim_plan *plan, int axis, char *buf, size_t n)
{
    size_t at = 0;
    int count = 0;
    buf[0] = '\0';
    for (int k = 0; k < plan->n_ops && at < n; k++) {
        const sim_operand *op = &plan->ops[k];
        if (!op->pipelined || op->map.fn) continue;
        for (int d = 0; d < op->map.n && at < n; d++)
            if (op->map.axis[d] == axis)
                at += (size_t)snprintf(buf + at, n - at, "%s%s's block dim %d", count++ ? ", " : "", op->rep->name, d);
    }
}

/* "x: 64.0 MiB moved for a 8.0 MiB array, read 8 times, because grid axis
 * 1 (8 steps) ...": operand i's traffic, and what would cut it. */
static int one_reread(const pl_report *r, const sim_plan *plan, int i, char *buf, size_t n)
{
    char a[32], b[32], dims[256];
    const pl_operand_report *o = &r->op[i];
    int64_t moved = o->bytes_in + (o->role == PL_ROLE_OUT ? o->bytes_out : 0);
    int at = snprintf(buf, n, "%s: %s moved for a %s array, %s %.3g times", o->name,
                      pl_format_bytes((double)moved, a, sizeof a), pl_format_bytes((double)o->array_bytes, b, sizeof b),
                      o->role == PL_ROLE_IN ? "read" : "moved", (double)moved / (double)o->array_bytes);
    if (at < 0 || (size_t)at >= n) return at < 0 ? 0 : (int)n - 1;
    int axis = plan ? reread_axis(plan, plan_operand_of(plan, r, i)) : -1;
    if (axis < 0 && r->cores > 1 && moved <= (int64_t)(r->cores * 1.05 * (double)o->array_bytes))
        return at + snprintf(buf + at, n - (size_t)at, ", once by each of the %d TensorCores, which copy the "
                             "blocks their grid points need (rule G4)", r->cores);
    if (axis < 0)
        return at + snprintf(buf + at, n - (size_t)at, "; larger blocks of it, or an order that visits each block "
                             "once, cut that");
    blocks_along(plan, axis, dims, sizeof dims);
    at += snprintf(buf + at, n - (size_t)at, ", because grid axis %d (%lld steps), which its index map ignores, "
                   "runs outside an axis it follows: ", axis, (long long)plan->call->grid[axis]);
    if ((size_t)at >= n) return (int)n - 1;
    if (dims[0]) return at + snprintf(buf + at, n - (size_t)at, "larger blocks along axis %d (%s) mean fewer "
                                      "re-reads", axis, dims);
    return at + snprintf(buf + at, n - (size_t)at, "fewer steps along that axis mean fewer re-reads");
}

/* After "HBM-bound: ...": which operands' traffic exceeds their size (the
 * two worst), the axis that causes it and the block dims that would cut it,
 * from the kernel's own operands and index maps. */
static void reread_advice(const pl_report *r, const sim_plan *plan, char *buf, size_t n)
{
    int64_t extra1, extra2;
    int i = most_reread(r, -1, &extra1);
    if (i < 0) {
        /* below 90 % a tiling that hides more of the idle time may still gain (the simulated advice after
         * this says whether one does); only a nearly saturated HBM leaves nothing but fewer bytes */
        double f = r->hbm_bw_fraction;
        char idle[200];
        snprintf(idle, sizeof idle, "; HBM idles the other %.0f%% of the run, waiting on each copy's latency and on "
                 "the pipeline's start and end%s", 100 * (1 - f), f < 0.5 ? "" : ": beyond what hides that, only "
                 "fewer bytes make it faster");
        snprintf(buf, n, "%s, so the traffic is already about the least the kernel needs, at %.0f%% of the HBM "
                 "bandwidth%s", r->dma_bytes > r->hbm_bytes / 2 ? "most of it is the kernel's own copies and every "
                 "pipelined operand moves about once" : "every operand moves about once, its own size",
                 100 * f, f < 0.9 ? idle : "; only fewer bytes (a narrower dtype, fusing with the next kernel) make "
                 "it faster");
        return;
    }
    int at = one_reread(r, plan, i, buf, n);
    int j = most_reread(r, i, &extra2);
    if (j >= 0 && 2 * extra2 >= extra1 && (size_t)at + 2 < n) {
        at += snprintf(buf + at, n - (size_t)at, "; ");
        if ((size_t)at < n) one_reread(r, plan, j, buf + at, n - (size_t)at);
    }
}

/* G4: the parts of the core that finished last add up to the call's time. */
static void slowest_core(pl_report *r, const sim_time_result *t)
{
    int s = 0;
    for (int c = 1; c < r->cores && c < SIM_MAX_CORES; c++)
        if (t->core_end_s[c] > t->core_end_s[s]) s = c;
    r->slowest_core = s;
    r->core_compute_s = t->core_compute_s[s];
    r->core_overhead_s = t->core_overhead_s[s];
    double wait = t->core_end_s[s] - r->core_compute_s - r->core_overhead_s;
    r->core_exposed_s = wait > 0 ? wait : 0;
}

/* The figures of the timed run: rates, fractions, intensity, the last core. */
static void fill_rates(pl_report *r, const sim_time_result *t, const double *dot_flops)
{
    const pl_chip *chip = r->chip;
    r->time_s = t->total_s;
    r->compute_s = t->compute_s;
    r->overhead_s = t->overhead_s;
    r->dma_exposed_s = t->exposed_s;
    int best = PL_BF16;
    for (int d = 0; d < PL_DTYPE_COUNT; d++)
        if (dot_flops[d] > dot_flops[best]) best = d;
    r->mxu_dtype = (pl_dtype)best;
    double rate = pl_chip_mxu_rate(chip, r->mxu_dtype);
    r->flops_per_s = r->time_s > 0 ? r->mxu_flops / r->time_s : 0;
    r->peak_fraction = r->flops_per_s / (rate * r->cores);
    r->intensity = r->hbm_bytes ? r->mxu_flops / (double)r->hbm_bytes : 0;
    r->critical_intensity = rate * chip->cores_per_device / chip->hbm_bw;
    r->hbm_bw_achieved = r->time_s > 0 ? (double)r->hbm_bytes / r->time_s : 0;
    r->hbm_bw_fraction = r->hbm_bw_achieved / chip->hbm_bw;
    r->vpu_fraction = r->time_s > 0 && r->cores ? r->vpu_s / (r->time_s * r->cores) : 0;
    /* an RMSNorm's reader wants bandwidth first, not "0 TFLOP/s" */
    r->mxu_light = r->mxu_flops <= 0 || r->mxu_s < r->vpu_s + r->scalar_s;
    slowest_core(r, t);
}

/* A close second is worth knowing: fixing the first only gets that far. */
static void close_second(pl_report *r)
{
    pl_bound second = PL_BOUND_NONE;
    for (int b = PL_BOUND_COMPUTE; b < PL_BOUND_COUNT; b++)
        if (b != (int)r->bound && r->busy[b] > 0 && (second == PL_BOUND_NONE || r->busy[b] > r->busy[second]))
            second = (pl_bound)b;
    size_t used = strlen(r->bound_msg);
    if (second != PL_BOUND_NONE && r->busy[second] >= 0.8 * r->busy[r->bound] && used < sizeof r->bound_msg)
        snprintf(r->bound_msg + used, sizeof r->bound_msg - used, "; %s (busy %.1f%%) is close behind",
                 pl_resource_name(second), 100 * r->busy[second]);
}

/* "HBM-bound: 544.0 MiB of HBM traffic takes 348.2 us at 1638 GB/s, 99.5% of
 * the 350.0 us run (mostly x and y, over 256 steps); ..." */
static void hbm_msg(pl_report *r, const sim_plan *plan)
{
    char a[32], b[32], c[32], names[80], advice[640];
    heaviest_inputs(r, names, sizeof names);
    reread_advice(r, plan, advice, sizeof advice);
    int n = snprintf(r->bound_msg, sizeof r->bound_msg,
                     "HBM-bound: %s of HBM traffic takes %s at %.0f GB/s, %.1f%% of the %s run (mostly %s, over "
                     "%lld steps); %s",
                     pl_format_bytes((double)r->hbm_bytes, c, sizeof c),
                     pl_format_time((double)r->hbm_bytes / r->chip->hbm_bw, a, sizeof a), r->chip->hbm_bw / 1e9,
                     100 * r->busy[PL_BOUND_HBM], pl_format_time(r->time_s, b, sizeof b), names,
                     (long long)r->steps, advice);
    if (r->mxu_flops > 0 && n > 0 && (size_t)n < sizeof r->bound_msg)
        snprintf(r->bound_msg + n, sizeof r->bound_msg - (size_t)n,
                 "; %.0f FLOP per HBM byte against the %s's critical %.0f", r->intensity, r->chip->name,
                 r->critical_intensity);
}

/* The MXU busiest: at what fraction of its peak, and padding it wastes. */
static void compute_msg(pl_report *r, double per_core)
{
    char a[32], b[32];
    int n = snprintf(r->bound_msg, sizeof r->bound_msg,
                     "compute-bound: the MXU is busy %s of %s (%.1f%%), at %.0f%% of the %s %s peak",
                     pl_format_time(r->mxu_s * per_core, a, sizeof a), pl_format_time(r->time_s, b, sizeof b),
                     100 * r->busy[PL_BOUND_COMPUTE], 100 * r->peak_fraction, r->chip->name,
                     pl_dtype_name(r->mxu_dtype));
    double waste = r->mxu_flops_padded > 0 ? 1 - r->mxu_flops / r->mxu_flops_padded : 0;
    if (waste > 0.05 && n > 0 && (size_t)n < sizeof r->bound_msg)
        snprintf(r->bound_msg + n, sizeof r->bound_msg - (size_t)n,
                 "; %.0f%% of the MXU's work is padding: make the contraction and output widths multiples of %d where "
                 "the shapes allow (a width the model fixes, as a head dimension, can only be filled by more of "
                 "them in one dot)",
                 100 * waste, r->chip->mxu_width);
}

/* The sentence of the bounds other than HBM and the MXU. */
static void other_msg(pl_report *r, double per_core)
{
    char a[32], b[32], c[32], d[32];
    const pl_chip *chip = r->chip;
    pl_format_time(r->time_s, b, sizeof b);
    double pct = 100 * r->busy[r->bound];
    switch (r->bound) {
    case PL_BOUND_OVERHEAD: {
        /* the fixed cost of each step, and the rest of the overhead: the copies' descriptors and semaphore
         * waits (dma_issue_us) and the prologue (docs/CHIPS.md) */
        long long steps = (long long)((r->steps + r->nested_steps) / r->cores);
        double fixed = (double)steps * chip->step_overhead_s, all = r->overhead_s * per_core;
        int n = snprintf(r->bound_msg, sizeof r->bound_msg,
                         "step-overhead-bound: %lld grid steps x %.2f us = %s, with the copies' descriptors and waits "
                         "and the prologue %s of %s (%.1f%%, rule P9)",
                         steps, chip->step_overhead_s * 1e6, pl_format_time(fixed, c, sizeof c),
                         pl_format_time(all, a, sizeof a), b, pct);
        /* the kernel's own copies: each start writes a descriptor and each wait reads a semaphore, which
         * fewer grid steps do not cut */
        double manual = (double)r->dma_copies / r->cores * chip->dma_issue_s;
        if (manual > fixed && manual > 0.25 * all && n > 0 && (size_t)n < sizeof r->bound_msg)
            snprintf(r->bound_msg + n, sizeof r->bound_msg - (size_t)n,
                     "; most of it is the kernel's own %lld copies, %.2f us to start each and as much for each "
                     "semaphore wait: fewer, larger copies (one for contiguous rows), or one wait for all the copies "
                     "on a semaphore, cut it; fewer grid steps do not",
                     (long long)(r->dma_copies / r->cores), chip->dma_issue_s * 1e6);
        break;
    }
    case PL_BOUND_SCALAR: /* element loops: one access per scalar-unit cycle (sim/timing/timing.c) */
        snprintf(r->bound_msg, sizeof r->bound_msg,
                 "scalar-bound: %lld pl_get / pl_set element accesses take %s of %s (%.1f%%) on the scalar unit, "
                 "more than the VPU's %s and the MXU's %s; write the loop as block ops (pl_where, pl_cmp, "
                 "pl_iota, reductions) so the VPU does it a vector at a time",
                 (long long)r->scalar_ops, pl_format_time(r->scalar_s * per_core, a, sizeof a), b, pct,
                 pl_format_time(r->vpu_s * per_core, c, sizeof c), pl_format_time(r->mxu_s * per_core, d, sizeof d));
        break;
    case PL_BOUND_VPU:
        snprintf(r->bound_msg, sizeof r->bound_msg,
                 "VPU-bound: elementwise work takes %s of %s (%.1f%%), more than the MXU's %s; fold elementwise "
                 "ops together or move them off the inner loop",
                 pl_format_time(r->vpu_s * per_core, a, sizeof a), b, pct,
                 pl_format_time(r->mxu_s * per_core, c, sizeof c));
        break;
    case PL_BOUND_VMEM:
        snprintf(r->bound_msg, sizeof r->bound_msg,
                 "VMEM-bound: the block ops' loads and stores keep VMEM busy %.1f%% of %s at %.0f GB/s; fold ops "
                 "together so that fewer intermediates pass through VMEM", pct, b, chip->vmem_bw / 1e9);
        break;
    case PL_BOUND_ICI:
        snprintf(r->bound_msg, sizeof r->bound_msg,
                 "ICI-bound: %s sent to other devices takes %.1f%% of %s at a link's %.0f GB/s (rule M11)",
                 pl_format_bytes((double)r->ici_bytes, a, sizeof a), pct, b, chip->ici_bw / 1e9);
        break;
    default: /* PL_BOUND_LATENCY; ICI hops only where copies crossed to other devices */
        if (r->ici_bytes > 0)
            snprintf(r->bound_msg, sizeof r->bound_msg,
                     "latency-bound: cores wait %.1f%% of %s for copies whose issue latency (%.2f us per DMA, %.2f "
                     "us per ICI hop) the bandwidth does not explain", pct, b, chip->dma_latency_s * 1e6,
                     chip->ici_latency_s * 1e6);
        else
            snprintf(r->bound_msg, sizeof r->bound_msg,
                     "latency-bound: cores wait %.1f%% of %s for copies whose issue latency (%.2f us per DMA) the "
                     "bandwidth does not explain", pct, b, chip->dma_latency_s * 1e6);
    }
}

/* The bound (sim/timing/bound.c's rule: the resource busy for the largest fraction
 * of the run) and its sentence. Sentences speak of one core: sums over
 * cores divided by their number. */
void sim_analyze(pl_report *r, const sim_time_result *t, const double *dot_flops, const sim_plan *plan)
{
    fill_rates(r, t, dot_flops);
    sim_bound_busy(r);
    r->bound = sim_bound_pick(r->busy);
    double per_core = r->cores ? 1.0 / r->cores : 1;
    if (r->steps == 0 || r->time_s <= 0 || r->bound == PL_BOUND_NONE) {
        r->bound = PL_BOUND_NONE;
        snprintf(r->bound_msg, sizeof r->bound_msg, "nothing ran");
        return;
    }
    if (r->bound == PL_BOUND_HBM) hbm_msg(r, plan);
    else if (r->bound == PL_BOUND_COMPUTE) compute_msg(r, per_core);
    else other_msg(r, per_core);
    close_second(r);
}
