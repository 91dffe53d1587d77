/* sim/analyze.c: from the simulated timeline to what a user reads: achieved
 * FLOP/s, fraction of peak, arithmetic intensity against the chip's critical
 * intensity, and the bound in one sentence with what to change. */
#include <math.h>
#include <string.h>

#include "sim.h"
#include "timing.h"

const char *pl_bound_name(pl_bound b)
{
    switch (b) {
    case PL_BOUND_COMPUTE: return "compute";
    case PL_BOUND_VPU: return "VPU";
    case PL_BOUND_HBM: return "HBM";
    case PL_BOUND_OVERHEAD: return "step overhead";
    default: return "none";
    }
}

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
    else if (second < 0 || r->op[second].bytes_in + r->op[second].bytes_out == 0) snprintf(buf, n, "%s", r->op[first].name);
    else snprintf(buf, n, "%s and %s", r->op[first].name, r->op[second].name);
}

void sim_analyze(pl_report *r, const sim_time_result *t, const double *dot_flops)
{
    const pl_chip *chip = r->chip;
    char a[32], b[32], c[32], names[80];
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

    /* sentences speak of one core: sums over cores divided by their number */
    double per_core = r->cores ? 1.0 / r->cores : 1;
    double comp = r->compute_s * per_core, over = r->overhead_s * per_core, wait = r->dma_exposed_s * per_core;
    if (r->steps == 0 || r->time_s <= 0) {
        r->bound = PL_BOUND_NONE;
        snprintf(r->bound_msg, sizeof r->bound_msg, "nothing ran");
        return;
    }
    if (wait >= comp && wait >= over) {
        r->bound = PL_BOUND_HBM;
        heaviest_inputs(r, names, sizeof names);
        snprintf(r->bound_msg, sizeof r->bound_msg,
                 "HBM-bound: the kernel waits %s of %s for copies (mostly %s, %s over %lld steps); "
                 "%.0f FLOP per HBM byte against the %s's critical %.0f: larger blocks along the dimensions "
                 "that are re-read (bm and bn for a matmul) raise the intensity",
                 pl_format_time(wait, a, sizeof a), pl_format_time(r->time_s, b, sizeof b), names,
                 pl_format_bytes((double)r->hbm_bytes, c, sizeof c), (long long)r->steps, r->intensity, chip->name,
                 r->critical_intensity);
    } else if (over >= comp) {
        r->bound = PL_BOUND_OVERHEAD;
        snprintf(r->bound_msg, sizeof r->bound_msg,
                 "step-overhead-bound: %lld grid steps x %.2f us = %s of %s (rule P9); fewer, larger blocks "
                 "amortize it",
                 (long long)(r->steps / r->cores), chip->step_overhead_s * 1e6, pl_format_time(over, a, sizeof a),
                 pl_format_time(r->time_s, b, sizeof b));
    } else if (r->vpu_s > r->mxu_s) {
        r->bound = PL_BOUND_VPU;
        snprintf(r->bound_msg, sizeof r->bound_msg,
                 "VPU-bound: elementwise work takes %s of %s, more than the MXU's %s; fold elementwise ops "
                 "together or move them off the inner loop",
                 pl_format_time(r->vpu_s * per_core, a, sizeof a), pl_format_time(r->time_s, b, sizeof b),
                 pl_format_time(r->mxu_s * per_core, c, sizeof c));
    } else {
        r->bound = PL_BOUND_COMPUTE;
        int n = snprintf(r->bound_msg, sizeof r->bound_msg,
                         "compute-bound: the MXU is busy %s of %s, at %.0f%% of the %s %s peak",
                         pl_format_time(r->mxu_s * per_core, a, sizeof a), pl_format_time(r->time_s, b, sizeof b),
                         100 * r->peak_fraction, chip->name, pl_dtype_name(r->mxu_dtype));
        double waste = r->mxu_flops_padded > 0 ? 1 - r->mxu_flops / r->mxu_flops_padded : 0;
        if (waste > 0.05 && n > 0 && (size_t)n < sizeof r->bound_msg)
            snprintf(r->bound_msg + n, sizeof r->bound_msg - (size_t)n,
                     "; %.0f%% of the MXU's work is padding: make the contraction and output widths multiples "
                     "of %d",
                     100 * waste, chip->mxu_width);
    }
    /* a close second is worth knowing: fixing the first only gets that far */
    double parts[3] = {comp, wait, over};
    const char *what[3] = {"compute", "exposed DMA", "the step overhead"};
    int first = r->bound == PL_BOUND_HBM ? 1 : r->bound == PL_BOUND_OVERHEAD ? 2 : 0, second = -1;
    for (int i = 0; i < 3; i++)
        if (i != first && (second < 0 || parts[i] > parts[second])) second = i;
    size_t used = strlen(r->bound_msg);
    if (second >= 0 && parts[second] >= 0.8 * parts[first] && used < sizeof r->bound_msg)
        snprintf(r->bound_msg + used, sizeof r->bound_msg - used, "; %s (%s) is close behind", what[second],
                 pl_format_time(parts[second], a, sizeof a));
}
