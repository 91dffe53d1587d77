/* sim/mesh/mesh_report.c: what a mesh call did, over all devices
 * (pl_mesh_report, sim/tilesim_mesh.h): the first failing device, the
 * slowest device's time, the links' traffic and bandwidth, and what bounds
 * the mesh by the one rule of sim/timing/bound.c (rule M11).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../call/exec.h"
#include "../tilesim_mesh.h"

_Static_assert(PL_MESH_BUSY == PL_BOUND_COUNT, "pl_mesh_report.busy holds one fraction per pl_bound");

/* The first failing device, a kernel's own error before a deadlock it caused. */
static void first_failure(pl_mesh_report *mr, sim_exec *const *xs, int n)
{
    /* a race between devices first (found the same in every schedule), then a
     * kernel's own error, then a deadlock it caused */
    for (int pass = 0; pass < 3 && mr->failed_device < 0; pass++)
        for (int d = 0; d < n && xs[d] && mr->failed_device < 0; d++) {
            const pl_report *rep = &xs[d]->rep;
            int want = pass == 0 ? rep->status == PL_ERACE : pass == 1 ? rep->status != PL_EDEADLOCK : 1;
            if (rep->status && want) {
                mr->failed_device = d;
                mr->status = rep->status;
                int at = snprintf(mr->error, sizeof mr->error, "device %d: ", d);
                snprintf(mr->error + at, sizeof mr->error - (size_t)at, "%.*s", (int)(sizeof mr->error) - at - 1,
                         rep->error);
            }
        }
}

/* The one bound rule (sim/timing/bound.c) over the mesh: each device's resources
 * in seconds, the busiest device's over the mesh's time; ICI is the
 * busiest link; latency is the time that neither the devices' own work
 * (compute, overhead) nor the busiest link nor HBM explain: copies and
 * hops waiting for their first byte and the waits they set off (issue 22: a
 * ring whose links ran at 31% of peak was called ICI-bound). */
static void mesh_busy(pl_mesh_report *mr, sim_exec *const *xs, int n)
{
    double own = 0, t = mr->time_s;
    for (int d = 0; d < n && xs[d]; d++) {
        const pl_report *rep = &xs[d]->rep;
        double cores = rep->cores > 0 ? rep->cores : 1, mine = (rep->compute_s + rep->overhead_s) / cores;
        if (mine > own) own = mine;
        for (int b = PL_BOUND_COMPUTE; b < PL_BOUND_COUNT; b++) {
            double f = rep->busy[b] * rep->time_s / t;
            if (f > mr->busy[b]) mr->busy[b] = f;
        }
    }
    mr->busy[PL_BOUND_ICI] = mr->busiest_link_s / t;
    mr->busy[PL_BOUND_DCN] = mr->dcn_busiest_s / t; /* the network between slices is a link too */
    double floor = own > mr->busiest_link_s ? own : mr->busiest_link_s;
    if (mr->dcn_busiest_s > floor) floor = mr->dcn_busiest_s;
    if (mr->hbm_s > floor) floor = mr->hbm_s;
    mr->busy[PL_BOUND_LATENCY] = t > floor ? (t - floor) / t : 0;
    mr->bound = sim_bound_pick(mr->busy);
    mr->ici_bound = mr->bound == PL_BOUND_ICI;
}

static void bound(pl_mesh_report *mr, sim_exec *const *xs, int n, const pl_chip *chip)
{
    char t[32], l[32], x[32];
    double busiest = mr->busiest_link_s;
    pl_format_time(mr->time_s, t, sizeof t);
    pl_format_time(busiest, l, sizeof l);
    if (!(busiest > 0 || mr->dcn_busiest_s > 0) || !(mr->time_s > 0)) {
        snprintf(mr->bound_msg, sizeof mr->bound_msg, "no copies between devices");
        return;
    }
    mesh_busy(mr, xs, n);
    char dcn[64] = "";
    if (mr->dcn_copies) snprintf(dcn, sizeof dcn, "; %.1f us per copy between slices over DCN, M14",
                                 chip->dcn_latency_s * 1e6);
    if (mr->bound == PL_BOUND_DCN)
        snprintf(mr->bound_msg, sizeof mr->bound_msg,
                 "DCN-bound: the busiest host's NICs carry %s of data between slices at %.1f GB/s, %.1f%% of the "
                 "%s the mesh takes, more than any other resource is busy; keep the traffic between slices small "
                 "(reduce within a slice over ICI first) (rule M14)",
                 pl_format_time(mr->dcn_busiest_s, x, sizeof x), chip->dcn_bw / 1e9, 100 * mr->busy[PL_BOUND_DCN], t);
    else if (mr->bound == PL_BOUND_ICI)
        snprintf(mr->bound_msg, sizeof mr->bound_msg,
                 "ICI-bound: the busiest link carries %s of data over %s at %.0f GB/s, %.1f%% of the %s the mesh "
                 "takes, more than any other resource is busy (rule M11)",
                 l, chip->name, chip->ici_bw / 1e9, 100 * mr->busy[PL_BOUND_ICI], t);
    else if (mr->bound == PL_BOUND_LATENCY)
        snprintf(mr->bound_msg, sizeof mr->bound_msg,
                 "latency-bound: %s of the %s the mesh takes (%.1f%%) is neither a device's compute or per-step "
                 "overhead (rule P9) nor bytes on the busiest link (%s, %.1f%%) or in HBM: it is the latency of "
                 "each copy and hop (%.2f us per DMA, %.2f us per ICI hop, rule M11%s) and the waits it sets off",
                 pl_format_time(mr->busy[PL_BOUND_LATENCY] * mr->time_s, x, sizeof x), t,
                 100 * mr->busy[PL_BOUND_LATENCY], l, 100 * mr->busy[PL_BOUND_ICI], chip->dma_latency_s * 1e6,
                 chip->ici_latency_s * 1e6, dcn);
    else
        snprintf(mr->bound_msg, sizeof mr->bound_msg,
                 "not ICI-bound: the busiest link needs %s (%.1f%%) of the %s the mesh takes; a device's %s bounds "
                 "it (busy %.1f%%)", l, 100 * mr->busy[PL_BOUND_ICI], t,
                 mr->bound == PL_BOUND_COMPUTE ? "compute" : mr->bound == PL_BOUND_HBM ? "HBM traffic"
                 : pl_bound_name((pl_bound)mr->bound), 100 * mr->busy[mr->bound]);
}

void sim_mesh_report(pl_mesh_report *mr, sim_exec *const *xs, int n, const pl_mesh *mesh, const sim_link_stats *st)
{
    memset(mr, 0, sizeof *mr);
    mr->slices = pl_mesh_slices(mesh);
    mr->n_devices = n;
    mr->ranks = 1; /* mesh_mpi.c says otherwise */
    mr->failed_device = -1;
    first_failure(mr, xs, n);
    const pl_chip *chip = n > 0 && xs[0] ? xs[0]->plan.chip : NULL;
    for (int d = 0; d < n && xs[d]; d++) {
        const pl_report *rep = &xs[d]->rep;
        if (rep->time_s > mr->time_s) mr->time_s = rep->time_s;
        if (rep->compute_s > mr->compute_s) mr->compute_s = rep->compute_s;
        double hbm = chip && chip->hbm_bw > 0 ? (double)rep->hbm_bytes / chip->hbm_bw : 0;
        if (hbm > mr->hbm_s) mr->hbm_s = hbm;
        mr->remote_copies += rep->ici_copies;
        /* saturate: 512 devices of 64 TiB each pass int64's range (a mesh of cost-only giants) */
        mr->ici_bytes = mr->ici_bytes > INT64_MAX - rep->ici_bytes ? INT64_MAX : mr->ici_bytes + rep->ici_bytes;
        if (rep->remote_wait_s > mr->remote_wait_s) mr->remote_wait_s = rep->remote_wait_s;
    }
    if (!chip || mr->status) return;
    if (st->dcn_copies) {
        mr->dcn_copies = st->dcn_copies;
        mr->dcn_bytes = st->dcn_bytes;
        memcpy(mr->dcn_pair_bytes, st->dcn_pair, sizeof mr->dcn_pair_bytes);
        mr->dcn_busiest_s = chip->dcn_bw > 0 ? st->dcn_busiest_bytes / chip->dcn_bw : 0;
    }
    for (int d = 0; d < n && xs[d]; d++)
        if (xs[d]->rep.dcn_wait_s > mr->dcn_wait_s) mr->dcn_wait_s = xs[d]->rep.dcn_wait_s;
    mr->link_bytes = st->link_bytes;
    mr->links_used = st->links_used;
    mr->busiest_link_s = chip->ici_bw > 0 ? st->busiest_bytes / chip->ici_bw : 0;
    if (mr->time_s > 0 && mr->links_used > 0) {
        mr->ici_bw_achieved = mr->link_bytes / ((double)mr->links_used * mr->time_s);
        mr->ici_bw_fraction = chip->ici_bw > 0 ? mr->ici_bw_achieved / chip->ici_bw : 0;
    }
    bound(mr, xs, n, chip);
}

void pl_mesh_report_print(const pl_mesh_report *mr, const pl_report *reports, FILE *f)
{
    char t[32], b[32];
    if (!mr || !f) return;
    for (int d = 0; reports && d < mr->n_devices; d++) {
        const pl_report *r = &reports[d];
        pl_format_time(r->time_s, t, sizeof t);
        pl_format_bytes((double)r->ici_bytes, b, sizeof b);
        char w[32];
        pl_format_time(r->remote_wait_s, w, sizeof w);
        fprintf(f, "  device %3d: %s%s, %lld copies to other devices (%s), waited %s for them\n", d,
                r->status ? "failed: " : "", r->status ? pl_strerror(r->status) : t, (long long)r->ici_copies, b, w);
    }
    if (mr->status) {
        fprintf(f, "mesh: %s\n", mr->error);
        return;
    }
    pl_format_time(mr->time_s, t, sizeof t);
    pl_format_bytes((double)mr->ici_bytes, b, sizeof b);
    fprintf(f, "mesh: %d devices, %s; %lld copies between devices, %s sent; links in use %d, %.1f GB/s each "
            "(%.0f%% of peak)\n", mr->n_devices, t, (long long)mr->remote_copies, b, mr->links_used,
            mr->ici_bw_achieved / 1e9, 100 * mr->ici_bw_fraction);
    pl_format_time(mr->remote_wait_s, b, sizeof b);
    fprintf(f, "waits: a device waited at most %s for other devices' copies and signals\n", b);
    if (mr->dcn_copies) { /* the Megascale view: traffic between slices */
        char w[32], s2[32];
        pl_format_bytes(mr->dcn_bytes, b, sizeof b);
        pl_format_time(mr->dcn_wait_s, w, sizeof w);
        pl_format_time(mr->dcn_busiest_s, s2, sizeof s2);
        fprintf(f, "DCN: %lld copies between slices, %s; the busiest host NIC %s (%.1f%% of the run); a device waited "
                "at most %s on DCN\n", (long long)mr->dcn_copies, b, s2, 100 * mr->busy[PL_BOUND_DCN], w);
        for (int i = 0; i < PL_MESH_MAX_SLICES; i++)
            for (int j = 0; j < PL_MESH_MAX_SLICES; j++)
                if (mr->dcn_pair_bytes[i][j] > 0)
                    fprintf(f, "  slice %d -> slice %d: %s\n", i, j,
                            pl_format_bytes(mr->dcn_pair_bytes[i][j], b, sizeof b));
    }
    char busy[256] = "";
    size_t at = 0;
    for (int b = PL_BOUND_COMPUTE; b < PL_BOUND_COUNT && at < sizeof busy; b++) /* in the report's order */
        if (mr->busy[b] >= 0.0005)
            at += (size_t)snprintf(busy + at, sizeof busy - at, "%s%s %.1f%%", at ? ", " : "",
                                   pl_resource_name((pl_bound)b), 100 * mr->busy[b]);
    if (busy[0]) fprintf(f, "busy: %s\n", busy);
    fprintf(f, "bound: %s\n", mr->bound_msg);
}
