/* sim/call/profile.c: the op profile's rows (sim/call/profile.h).
 *
 * A row is found by its category and name: ops are named by string
 * literals (kern_op.name); the op memo (oplog.c) remembers each op's row,
 * so a step's repeated ops do not look theirs up again. The timeline adds the
 * rows only it knows after the replay: each copy's time in flight (DMA rows,
 * overlapped with compute, so they add nothing to the total), the per-step
 * overhead, the waits; and every row's part of time_s, taken from the core
 * that finished last, whose compute, overhead and waits add up to time_s.
 */
#include <stdio.h>
#include <string.h>

#include "core.h"
#include "profile.h"

const char *pl_prof_cat_name(pl_prof_cat c)
{
    static const char *const names[PL_PROF_COUNT] = {"MXU", "VPU", "EUP", "scalar", "DMA",
                                                     "overhead", "DMA wait", "remote wait", "other"};
    return (int)c >= 0 && c < PL_PROF_COUNT ? names[c] : "?";
}

static int find_row(const pl_report *r, pl_prof_cat cat, const char *name)
{
    for (int i = 0; i < r->n_profile; i++) {
        const pl_profile_row *w = &r->profile[i];
        if (w->cat == cat && strncmp(w->name, name, sizeof w->name - 1) == 0) return i; /* as cut */
    }
    return -1;
}

int sim_profile_add(pl_report *r, pl_prof_cat cat, const char *name, int64_t count, double busy_s, double flops,
                    double vmem_bytes, double hbm_bytes)
{
    if (!name) name = "(unnamed)";
    int i = find_row(r, cat, name);
    if (i < 0 && r->n_profile < PL_MAX_PROFILE - 1) {
        i = r->n_profile++;
        r->profile[i] = (pl_profile_row){.cat = cat, .overlapped = cat == PL_PROF_DMA};
        snprintf(r->profile[i].name, sizeof r->profile[i].name, "%.47s", name); /* a longer name is cut */
    } else if (i < 0) { /* full: one row for the rest, which still counts towards the total */
        i = find_row(r, PL_PROF_OTHER, SIM_PROFILE_OTHER);
        if (i < 0) {
            i = r->n_profile++;
            r->profile[i] = (pl_profile_row){.cat = PL_PROF_OTHER, .name = SIM_PROFILE_OTHER};
        }
    }
    sim_profile_add_at(r, i, count, busy_s, flops, vmem_bytes, hbm_bytes);
    return i;
}

void sim_profile_add_at(pl_report *r, int i, int64_t count, double busy_s, double flops, double vmem_bytes,
                        double hbm_bytes)
{
    pl_profile_row *w = &r->profile[i];
    w->count += count;
    w->busy_s += busy_s;
    w->flops += flops;
    w->vmem_bytes += vmem_bytes;
    w->hbm_bytes += hbm_bytes;
    if (w->cat == PL_PROF_OTHER) r->profile_other = w->count;
}

void sim_profile_merge(pl_report *to, const pl_report *from)
{
    for (int i = 0; i < from->n_profile; i++) {
        const pl_profile_row *f = &from->profile[i];
        int k = sim_profile_add(to, f->cat, f->name, f->count, f->busy_s, f->flops, f->vmem_bytes, f->hbm_bytes);
        to->profile[k].time_s += f->time_s; /* overlapped is the row's own: set with it, by its category */
    }
}

static pl_prof_cat cat_of_row(const pl_report *r, int i) { return r->profile[i].cat; }

/* Each copy's time in flight into its row: pipeline copies per operand and
 * direction, manual copies into the row their start made (xfer.prof_row of
 * the core's own report; a core's rows map to the call's by name). */
static void add_copies(sim_exec *x, int c)
{
    pl_report *r = &x->rep;
    const sim_coreline *cl = &x->lines[c];
    char name[64];
    for (int i = 0; i < cl->n_ops; i++) {
        const sim_opline *l = &cl->op[i];
        /* copies in or write-backs; fetch-backs (P5): summed by the replay */
        const int64_t *n = l->sums.n;
        const double *busy = l->sums.busy, *bytes = l->sums.bytes;
        for (int f = 0; f < 2; f++) {
            if (!n[f]) continue;
            snprintf(name, sizeof name, "%s: %s", !l->is_out ? "copy in" : f ? "fetch-back" : "write-back",
                     x->plan.ops[i].rep->name);
            int k = sim_profile_add(r, PL_PROF_DMA, name, n[f], 0, 0, 0, bytes[f]);
            if (r->profile[k].cat == PL_PROF_DMA) r->profile[k].busy_s += busy[f]; /* in flight, overlapped: not
                                                                          into the "(other ops)" row's time */
        }
    }
    const pl_report *own = x->cores[c] ? &x->cores[c]->rep : r;
    int map[PL_MAX_PROFILE]; /* the core's row -> the call's; -2: not looked up yet */
    for (int k = 0; k < PL_MAX_PROFILE; k++) map[k] = -2;
    for (int64_t j = 0; j < cl->manual.n; j++) {
        const sim_xfer *t = &cl->manual.x[j];
        int k = t->prof_row;
        if (k >= own->n_profile || cat_of_row(own, k) != PL_PROF_DMA) continue;
        if (map[k] == -2) map[k] = find_row(r, PL_PROF_DMA, own->profile[k].name);
        if (map[k] >= 0) r->profile[map[k]].busy_s += t->t_done - t->t_issue;
    }
}

/* Time core c waited for other devices (a mesh's TAKE events). */
static double remote_wait(const sim_coreline *cl)
{
    double w = 0;
    for (int64_t i = 0; i < cl->n_kev; i++) {
        const sim_kevent *e = &cl->kev[i];
        if (e->kind == SIM_KEV_TAKE && e->t0 >= 0 && e->t1 > e->t0) w += e->t1 - e->t0;
    }
    return w;
}

/* The compute rows' part of time_s: the last core's own busy time. Without
 * that core's rows (a mesh device's shipped report), a single core's are the
 * call's; several cores' are scaled to the last core's compute. */
static void compute_times(sim_exec *x)
{
    pl_report *r = &x->rep;
    int s = r->slowest_core;
    const pl_report *own = s >= 0 && s < SIM_MAX_CORES && x->cores[s] ? &x->cores[s]->rep : NULL;
    double scale = r->compute_s > 0 ? r->core_compute_s / r->compute_s : 0;
    for (int i = 0; i < r->n_profile; i++) {
        pl_profile_row *w = &r->profile[i];
        if (w->overlapped || w->cat == PL_PROF_OVERHEAD || w->cat == PL_PROF_DMA_WAIT ||
            w->cat == PL_PROF_REMOTE_WAIT)
            continue;
        if (x->n_cores == 1) w->time_s = w->busy_s;
        else if (own) {
            int k = find_row(own, w->cat, w->name);
            w->time_s = k >= 0 ? own->profile[k].busy_s : 0;
        } else w->time_s = w->busy_s * scale;
    }
}

void sim_profile_finish(sim_exec *x)
{
    pl_report *r = &x->rep;
    double remote_all = 0, remote_last = 0;
    for (int c = 0; c < x->n_cores; c++) {
        add_copies(x, c);
        double w = remote_wait(&x->lines[c]);
        remote_all += w;
        if (c == r->slowest_core) remote_last = w;
    }
    compute_times(x);
    if (r->overhead_s > 0) {
        /* a nested pipeline's steps (K3) pay it too: one row, its count every step that paid */
        int k = sim_profile_add(r, PL_PROF_OVERHEAD, "step overhead (P9)", r->steps + r->nested_steps, r->overhead_s,
                                0, 0, 0);
        r->profile[k].time_s += r->core_overhead_s; /* += : a full table shares one row */
    }
    double dma_all = r->dma_exposed_s - remote_all, dma_last = r->core_exposed_s - remote_last;
    if (dma_all > 0 || dma_last > 0) {
        int k = sim_profile_add(r, PL_PROF_DMA_WAIT, "waiting for DMA", 0, dma_all > 0 ? dma_all : 0, 0, 0, 0);
        r->profile[k].time_s += dma_last > 0 ? dma_last : 0;
    }
    if (remote_all > 0) {
        int k = sim_profile_add(r, PL_PROF_REMOTE_WAIT, "waiting for other devices", 0, remote_all, 0, 0, 0);
        r->profile[k].time_s += remote_last;
    }
}
