/* sim/timing/bound.c: the one rule that names what bounds a run. Each resource's
 * busy time over the run's time is its busy fraction; the bound is the
 * resource with the largest. Reports, sweep rows, profiles and mesh reports
 * all take their label from here, so that a label never contradicts the
 * numbers beside it (issue 22: a run moving HBM bytes for 99.5% of its time
 * was called compute-bound by an older rule that compared exposed waits).
 */
#include "../base/sim.h"

const char *pl_bound_name(pl_bound b)
{
    switch (b) {
    case PL_BOUND_COMPUTE: return "compute";
    case PL_BOUND_VPU: return "VPU";
    case PL_BOUND_HBM: return "HBM";
    case PL_BOUND_OVERHEAD: return "step overhead";
    case PL_BOUND_SCALAR: return "scalar";
    case PL_BOUND_VMEM: return "VMEM";
    case PL_BOUND_ICI: return "ICI";
    case PL_BOUND_LATENCY: return "latency";
    case PL_BOUND_DCN: return "DCN";
    default: return "none";
    }
}

const char *pl_resource_name(pl_bound b) { return b == PL_BOUND_COMPUTE ? "MXU" : pl_bound_name(b); }

/* VMEM bytes the block ops read and wrote (copies' rows move HBM bytes). */
static double op_vmem_bytes(const pl_report *r)
{
    double bytes = 0;
    for (int i = 0; i < r->n_profile && i < PL_MAX_PROFILE; i++)
        if (r->profile[i].cat != PL_PROF_DMA) bytes += r->profile[i].vmem_bytes;
    return bytes;
}

/* Copies the cores waited on, each paying the DMA issue latency once. */
static double copies_made(const pl_report *r)
{
    double n = (double)r->dma_copies;
    for (int i = 0; i < r->n_operands; i++) n += (double)(r->op[i].copies + r->op[i].writebacks + r->op[i].fetchbacks);
    return n;
}

/* Per-core units (MXU, VPU, scalar, overhead, waits) are summed over cores
 * in the report, so they divide by cores x time; HBM is the device's,
 * shared by its cores. The latency part of the waits is what the copies'
 * issue latencies and the ICI hops can explain, no more, and not the part
 * the HBM bytes force: a wait for bytes the bandwidth is still moving is
 * HBM's. */
void sim_bound_busy(pl_report *r)
{
    const pl_chip *chip = r->chip;
    for (int b = 0; b < PL_BOUND_COUNT; b++) r->busy[b] = 0;
    if (!chip || !(r->time_s > 0) || r->cores <= 0) return;
    double core_time = r->time_s * r->cores;
    r->busy[PL_BOUND_COMPUTE] = r->mxu_s / core_time;
    r->busy[PL_BOUND_VPU] = r->vpu_s / core_time;
    r->busy[PL_BOUND_SCALAR] = r->scalar_s / core_time;
    r->busy[PL_BOUND_OVERHEAD] = r->overhead_s / core_time;
    r->busy[PL_BOUND_HBM] = chip->hbm_bw > 0 ? (double)r->hbm_bytes / chip->hbm_bw / r->time_s : 0;
    r->busy[PL_BOUND_VMEM] = chip->vmem_bw > 0 ? op_vmem_bytes(r) / chip->vmem_bw / core_time : 0;
    /* a device's copies to others over all its links at once: a floor (the mesh report has the busiest link) */
    double links = chip->ici_links > 0 ? chip->ici_links : 1;
    r->busy[PL_BOUND_ICI] = chip->ici_bw > 0 ? (double)r->ici_bytes / (chip->ici_bw * links) / r->time_s : 0;
    /* per core: the waits (exposed DMA, which holds a mesh device's waits
     * for other devices too) the bytes do not explain (HBM's or the links'
     * need that long; the core's own work covers some of it), capped by
     * the latencies */
    double bytes_s = r->time_s * (r->busy[PL_BOUND_HBM] > r->busy[PL_BOUND_ICI] ? r->busy[PL_BOUND_HBM]
                                                                                : r->busy[PL_BOUND_ICI]);
    double own = (r->compute_s + r->overhead_s) / r->cores;
    double forced = bytes_s > own ? bytes_s - own : 0, waits = r->dma_exposed_s / r->cores - forced;
    double latency = (copies_made(r) * chip->dma_latency_s + (double)r->ici_copies * chip->ici_latency_s) / r->cores;
    if (waits > 0) r->busy[PL_BOUND_LATENCY] = (latency < waits ? latency : waits) / r->time_s;
}

pl_bound sim_bound_pick(const double *busy)
{
    pl_bound best = PL_BOUND_NONE;
    for (int b = PL_BOUND_COMPUTE; b < PL_BOUND_COUNT; b++)
        if (busy[b] > 0 && (best == PL_BOUND_NONE || busy[b] > busy[best])) best = (pl_bound)b;
    return best;
}

int sim_bound_busy_line(const pl_report *r, char *buf, size_t n)
{
    int order[PL_BOUND_COUNT], k = 0;
    for (int b = PL_BOUND_COMPUTE; b < PL_BOUND_COUNT; b++) { /* largest first; equal ones keep enum order */
        int j = k++;
        while (j > 0 && r->busy[b] > r->busy[order[j - 1]]) order[j] = order[j - 1], j--;
        order[j] = b;
    }
    size_t at = 0;
    int shown = 0;
    buf[0] = '\0';
    for (int i = 0; i < k && at < n; i++) {
        if (r->busy[order[i]] < 0.0005) continue; /* "0.0%" says nothing */
        at += (size_t)snprintf(buf + at, n - at, "%s%s %.1f%%", shown++ ? ", " : "", pl_resource_name(order[i]),
                               100 * r->busy[order[i]]);
    }
    return shown;
}

void sim_bound_busy_json(const pl_report *r, FILE *f)
{
    fprintf(f, "\"busy\":{");
    for (int b = PL_BOUND_COMPUTE; b < PL_BOUND_COUNT; b++)
        fprintf(f, "%s\"%s\":%.6g", b > PL_BOUND_COMPUTE ? "," : "", pl_resource_name((pl_bound)b), r->busy[b]);
    fprintf(f, "}");
}
