/* sim/mesh_report.c: what a mesh call did, over all devices
 * (pl_mesh_report, sim/tilesim_mesh.h): the first failing device, the
 * slowest device's time, the links' traffic and bandwidth, and whether the
 * links bound the kernel (rule M11).
 */
#include <stdio.h>
#include <string.h>

#include "exec.h"
#include "tilesim_mesh.h"

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

/* ICI-bound when the busiest link needs longer than any device computes or
 * moves HBM bytes, and a good part (LINK_SHARE) of the mesh's time: the
 * links set the pace. When the links are busy for less than that and the
 * devices compute and move little, the time goes to per-step overhead and
 * the latencies of copies and hops: latency-bound. */
#define LINK_SHARE 0.3

static void bound(pl_mesh_report *mr, const pl_chip *chip)
{
    char t[32], l[32];
    double busiest = mr->busiest_link_s, work = mr->compute_s > mr->hbm_s ? mr->compute_s : mr->hbm_s;
    pl_format_time(mr->time_s, t, sizeof t);
    pl_format_time(busiest, l, sizeof l);
    mr->ici_bound = busiest > 0 && busiest >= work && busiest >= LINK_SHARE * mr->time_s;
    if (mr->ici_bound)
        snprintf(mr->bound_msg, sizeof mr->bound_msg,
                 "ICI-bound: the busiest link carries %s of data over %s at %.0f GB/s, more than any device "
                 "computes or moves through HBM; the mesh takes %s (rule M11). Fewer bytes per link (both "
                 "directions, more links) or overlap with compute",
                 l, chip->name, chip->ici_bw / 1e9, t);
    else if (busiest > 0 && work < LINK_SHARE * mr->time_s)
        snprintf(mr->bound_msg, sizeof mr->bound_msg,
                 "latency-bound: the busiest link is busy %s and no device computes or moves HBM bytes for long, "
                 "of the %s the mesh takes; the rest is per-step overhead and the latency of each copy and hop "
                 "(rules P9, M11). Fewer, larger copies amortize it", l, t);
    else if (busiest > 0)
        snprintf(mr->bound_msg, sizeof mr->bound_msg,
                 "not ICI-bound: the busiest link needs %s of the %s the mesh takes; a device's %s bounds it", l, t,
                 mr->compute_s >= mr->hbm_s ? "compute" : "HBM traffic");
    else snprintf(mr->bound_msg, sizeof mr->bound_msg, "no copies between devices");
}

void sim_mesh_report(pl_mesh_report *mr, sim_exec *const *xs, int n, const sim_link_stats *st)
{
    memset(mr, 0, sizeof *mr);
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
        mr->ici_bytes += rep->ici_bytes;
        if (rep->remote_wait_s > mr->remote_wait_s) mr->remote_wait_s = rep->remote_wait_s;
    }
    if (!chip || mr->status) return;
    mr->link_bytes = st->link_bytes;
    mr->links_used = st->links_used;
    mr->busiest_link_s = chip->ici_bw > 0 ? st->busiest_bytes / chip->ici_bw : 0;
    if (mr->time_s > 0 && mr->links_used > 0) {
        mr->ici_bw_achieved = mr->link_bytes / ((double)mr->links_used * mr->time_s);
        mr->ici_bw_fraction = chip->ici_bw > 0 ? mr->ici_bw_achieved / chip->ici_bw : 0;
    }
    bound(mr, chip);
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
    fprintf(f, "bound: %s\n", mr->bound_msg);
}
