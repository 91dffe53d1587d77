/* sim/tools/profile_print.c: the op profile as a table and as JSON, as XProf's
 * HLO op profile shows it: the rows sorted so that the few that take the
 * time come first, each with its share of the total, its achieved FLOP/s
 * against its unit's peak and its bandwidth against HBM (copies; a remote
 * copy's against its ICI link, or DCN) or VMEM (ops), and a total line equal
 * to the report's time.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../base/json.h"
#include "../base/sim.h"

/* Where a row goes: busy rows of the timeline by their part of it, then the
 * overlapped copies by their busy time; ties keep the order first met. */
static int before(const pl_profile_row *a, const pl_profile_row *b)
{
    if (a->overlapped != b->overlapped) return !a->overlapped;
    return a->overlapped ? a->busy_s > b->busy_s : a->time_s > b->time_s;
}

int pl_profile_order(const pl_report *r, int *order)
{
    int n = r->n_profile < PL_MAX_PROFILE ? r->n_profile : PL_MAX_PROFILE;
    for (int i = 0; i < n; i++) { /* insertion sort: stable, and n is small */
        int j = i;
        while (j > 0 && before(&r->profile[i], &r->profile[order[j - 1]])) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
    return n;
}

/* The link a DMA row's copies cross: "ICI" for copies to other devices (kernel/remote.c names their row),
 * "DCN" for those to another slice (M14), else "HBM". */
static const char *dma_link(const pl_profile_row *w)
{
    if (w->cat != PL_PROF_DMA || !strstr(w->name, "remote_copy")) return "HBM";
    return strstr(w->name, "(DCN)") ? "DCN" : "ICI";
}

static double unit_peak(const pl_report *r, const pl_profile_row *w)
{
    const pl_chip *chip = r->chip;
    switch (w->cat) {
    case PL_PROF_MXU: return pl_chip_mxu_rate(chip, r->mxu_dtype);
    case PL_PROF_VPU:
    case PL_PROF_EUP: return chip->vpu_flops;
    case PL_PROF_SCALAR: return chip->clock_hz > 0 ? chip->clock_hz : 1e9; /* one access per cycle (oplog.c) */
    default: return 0;
    }
}

pl_profile_rates pl_profile_rates_of(const pl_report *r, const pl_profile_row *w)
{
    pl_profile_rates p = {0};
    if (!r || !w || !r->chip) return p;
    double bytes = w->hbm_bytes + w->vmem_bytes;
    p.flops_per_s = w->busy_s > 0 ? w->flops / w->busy_s : 0;
    p.peak_flops = w->flops > 0 ? unit_peak(r, w) : 0;
    p.bw = w->busy_s > 0 ? bytes / w->busy_s : 0;
    const char *link = dma_link(w); /* a remote copy's rate is a link's, not HBM's */
    p.peak_bw = w->cat != PL_PROF_DMA      ? (w->vmem_bytes > 0 ? r->chip->vmem_bw : 0)
                : !strcmp(link, "ICI") ? r->chip->ici_bw
                : !strcmp(link, "DCN") ? r->chip->dcn_bw
                                       : r->chip->hbm_bw;
    p.intensity = w->vmem_bytes > 0 ? w->flops / w->vmem_bytes : 0;
    p.vmem_bound = p.peak_flops > 0 && p.intensity > 0 && r->chip->vmem_bw > 0 &&
                   r->chip->vmem_bw * p.intensity < p.peak_flops;
    return p;
}

static double pct(double x, double of) { return of > 0 ? 100 * x / of : 0; }


static void print_row(const pl_report *r, const pl_profile_row *w, FILE *f)
{
    char t[32], b[32], share[16] = "-", fl[32] = "", bw[40] = "", rate[40] = "", count[24] = "";
    pl_profile_rates p = pl_profile_rates_of(r, w);
    pl_format_time(w->overlapped ? w->busy_s : w->time_s, t, sizeof t);
    if (!w->overlapped) snprintf(share, sizeof share, "%.1f%%", pct(w->time_s, r->time_s));
    if (w->flops > 0) snprintf(fl, sizeof fl, "%.3g", w->flops);
    if (w->count > 0) snprintf(count, sizeof count, "%lld", (long long)w->count); /* waits count nothing */
    if (p.peak_flops > 0)
        snprintf(rate, sizeof rate, "%.3g T/s %3.0f%%", p.flops_per_s / 1e12, pct(p.flops_per_s, p.peak_flops));
    if (p.bw > 0 && p.peak_bw > 0)
        snprintf(bw, sizeof bw, "%.3g GB/s %3.0f%% %s", p.bw / 1e9, pct(p.bw, p.peak_bw),
                 w->cat == PL_PROF_DMA ? dma_link(w) : "VMEM");
    pl_format_bytes(w->hbm_bytes + w->vmem_bytes, b, sizeof b);
    char line[512];
    int n = snprintf(line, sizeof line, "  %-11s %-30s %9s %10s %6s %10s %18s %10s %22s%s", pl_prof_cat_name(w->cat),
                     w->name, count, t, share, fl, rate, w->hbm_bytes + w->vmem_bytes > 0 ? b : "", bw,
                     w->overlapped ? "  overlapped" : p.vmem_bound ? "  VMEM-bound" : "");
    while (n > 0 && (size_t)n < sizeof line && line[n - 1] == ' ') line[--n] = '\0'; /* no trailing blanks */
    fprintf(f, "%s\n", line);
}

void pl_profile_print(const pl_report *r, FILE *f)
{
    if (!r || !f) return;
    if (r->status != PL_OK || !r->chip) {
        fprintf(f, "op profile: the call failed: %s\n", r->error);
        return;
    }
    int order[PL_MAX_PROFILE], n = pl_profile_order(r, order);
    char a[32];
    double total = 0;
    for (int i = 0; i < n; i++) total += r->profile[i].overlapped ? 0 : r->profile[i].time_s;
    fprintf(f, "op profile of %s on %s: %s", r->call_name, r->chip->name, pl_format_time(r->time_s, a, sizeof a));
    if (r->cores > 1) fprintf(f, " on the timeline of TensorCore %d, which finished last (G4)", r->slowest_core);
    fprintf(f, "\n  %-11s %-30s %9s %10s %6s %10s %18s %10s %22s\n", "category", "op", "count", "time", "share",
            "FLOPs", "FLOP/s   % peak", "bytes", "bandwidth   % peak");
    for (int i = 0; i < n; i++) print_row(r, &r->profile[order[i]], f);
    fprintf(f, "  %-11s %-30s %9s %10s %6s\n", "total", "(all rows but overlapped copies)", "",
            pl_format_time(total, a, sizeof a), "100%");
    /* each copy row's bandwidth is over its own copies' time, which overlaps the other rows': their
     * shares of the HBM may add up past 100 % (the run's own share is the busy line's HBM) */
    double hbm_share = 0;
    int copy_rows = 0;
    for (int i = 0; i < n; i++) {
        const pl_profile_row *row = &r->profile[i];
        if (!row->overlapped) continue;
        pl_profile_rates q = pl_profile_rates_of(r, row);
        if (q.peak_bw > 0) hbm_share += q.bw / q.peak_bw, copy_rows++;
    }
    if (copy_rows > 1 && hbm_share > 1)
        fprintf(f, "  (each copy row's bandwidth is over the time its own copies were in flight, not the run's: "
                "the rows' shares of the HBM do not add up; the run's is the busy line's HBM)\n");
    sim_report_ideal_line(r, f);
    char busy[256]; /* the report's own rule and label (sim/timing/bound.c) */
    if (sim_bound_busy_line(r, busy, sizeof busy)) fprintf(f, "  busy: %s\n", busy);
    fprintf(f, "  bound: %s\n", pl_bound_name(r->bound));
    if (r->profile_other)
        fprintf(f, "  (%lld ops past the profile's %d rows are counted in \"(other ops)\")\n",
                (long long)r->profile_other, PL_MAX_PROFILE);
}

void pl_profile_json(const pl_report *r, FILE *f)
{
    if (!r || !f) return;
    fprintf(f, "{\"call\":");
    pl_json_string(f, r->call_name);
    fprintf(f, ",\"status\":%d", r->status);
    if (r->status != PL_OK || !r->chip) {
        fprintf(f, ",\"error\":");
        pl_json_string(f, r->error);
        fprintf(f, "}\n");
        return;
    }
    int order[PL_MAX_PROFILE], n = pl_profile_order(r, order);
    double total = 0;
    for (int i = 0; i < n; i++) total += r->profile[i].overlapped ? 0 : r->profile[i].time_s;
    fprintf(f, ",\"chip\":");
    pl_json_string(f, r->chip->name);
    fprintf(f, ",\"time_s\":%.9g,\"total_s\":%.9g,\"cores\":%d,\"slowest_core\":%d,\"profile_other\":%lld,\"rows\":[",
            r->time_s, total, r->cores, r->slowest_core, (long long)r->profile_other);
    for (int i = 0; i < n; i++) {
        const pl_profile_row *w = &r->profile[order[i]];
        pl_profile_rates p = pl_profile_rates_of(r, w);
        fprintf(f, "%s{\"category\":\"%s\",\"name\":", i ? "," : "", pl_prof_cat_name(w->cat));
        pl_json_string(f, w->name);
        fprintf(f, ",\"count\":%lld,\"time_s\":%.9g,\"busy_s\":%.9g,\"share\":%.9g,\"flops\":%.9g,"
                   "\"flops_per_s\":%.9g,\"peak_flops\":%.9g,\"vmem_bytes\":%.9g,\"hbm_bytes\":%.9g,"
                   "\"bandwidth\":%.9g,\"peak_bandwidth\":%.9g,\"intensity\":%.9g,\"overlapped\":%s,"
                   "\"vmem_bound\":%s}",
                (long long)w->count, w->time_s, w->busy_s, r->time_s > 0 ? w->time_s / r->time_s : 0, w->flops,
                p.flops_per_s, p.peak_flops, w->vmem_bytes, w->hbm_bytes, p.bw, p.peak_bw, p.intensity,
                w->overlapped ? "true" : "false", p.vmem_bound ? "true" : "false");
    }
    fprintf(f, "],\"bound\":");
    pl_json_string(f, pl_bound_name(r->bound));
    fputc(',', f);
    sim_bound_busy_json(r, f);
    fprintf(f, ",\"ideal_s\":%.9g,\"efficiency\":%.6g}\n", r->ideal_s, r->efficiency);
}
