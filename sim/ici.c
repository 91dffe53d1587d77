/* sim/ici.c: the ICI link model of sim/ici.h.
 *
 * A fluid model like the DMA engine of sim/timing.c, with links in place of
 * the one HBM port. A copy over h hops becomes active at t_ready + h x the
 * hop latency (its first byte has crossed every link: cut-through, not
 * store-and-forward, as a DMA over ICI streams), then holds every link of
 * its route at once. Between events each active copy drains at the
 * smallest share it gets on its links, link_bw / (copies active on the
 * link); the shares change only when a copy starts or finishes, so those
 * are the events.
 *
 * A copy finishes by event, not by residue: the copies whose finish time is
 * the event's time are done, whatever rounding left in their remainder (a
 * byte at t = 1e9 s is below the clock's resolution). So every turn of the
 * loop either starts a copy at the next turn or finishes one: at most 2n + 1
 * turns, and the model always terminates.
 */
#include <math.h>
#include <stdlib.h>

#include "ici.h"

/* A copy's state while it is timed. */
typedef struct ici_live {
    size_t first; /* its route: links[first .. first + hops) */
    int hops;
    double remaining, rate, finish;
} ici_live;

typedef struct ici_model {
    sim_ici_xfer *x;
    ici_live *l;
    int *links;  /* every route, one after the other */
    int *count;  /* per link: copies active on it */
    int *order;  /* copies that cross a link, by t_start */
    int *active; /* copies active now */
    int n_order, n_active;
    double bw;
} ici_model;

static int bad_figures(const pl_mesh *m, double bw, double lat, const sim_ici_xfer *x, int n)
{
    int devices = pl_mesh_devices(m);
    if (!devices || !(bw > 0) || !isfinite(bw) || !(lat >= 0) || !isfinite(lat) || n < 0 || (n && !x)) return 1;
    for (int i = 0; i < n; i++)
        if (x[i].from < 0 || x[i].from >= devices || x[i].to < 0 || x[i].to >= devices || x[i].bytes < 0 ||
            !(x[i].t_ready >= 0) || !isfinite(x[i].t_ready))
            return 1;
    return 0;
}

/* Routes, first bytes, and the copies in the order they start. -1 out of
 * memory, -2 a first byte at infinity. */
static int ici_setup(ici_model *md, const pl_mesh *m, double lat, int n)
{
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        sim_ici_xfer *x = &md->x[i];
        md->l[i].hops = pl_mesh_hops(m, x->from, x->to);
        md->l[i].first = total;
        total += (size_t)md->l[i].hops;
        x->t_start = x->t_ready + md->l[i].hops * lat;
        x->t_done = x->t_start; /* a local copy crosses no link; the others are set at their finish */
        if (!isfinite(x->t_start)) return -2;
        if (md->l[i].hops) md->order[md->n_order++] = i;
    }
    md->links = malloc((total ? total : 1) * sizeof *md->links);
    md->count = calloc((size_t)SIM_ICI_LINKS(pl_mesh_devices(m)), sizeof *md->count);
    if (!md->links || !md->count) return -1;
    for (int i = 0; i < n; i++)
        sim_mesh_route(m, md->x[i].from, md->x[i].to, md->links + md->l[i].first, md->l[i].hops);
    return 0;
}

/* order[] by t_start, ties by index: a stable bottom-up merge sort (qsort
 * is not stable, and its comparison could not see x without a global). */
static int sort_order(ici_model *md)
{
    int n = md->n_order, *tmp = malloc((n ? (size_t)n : 1) * sizeof *tmp);
    if (!tmp) return -1;
    for (int w = 1; w < n; w *= 2) {
        for (int lo = 0; lo < n; lo += 2 * w) {
            int mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n, a = lo, b = mid, k = lo;
            while (a < mid && b < hi) {
                const sim_ici_xfer *xa = &md->x[md->order[a]], *xb = &md->x[md->order[b]];
                /* ties keep index order: a's run holds the smaller indices */
                tmp[k++] = xb->t_start < xa->t_start ? md->order[b++] : md->order[a++];
            }
            while (a < mid) tmp[k++] = md->order[a++];
            while (b < hi) tmp[k++] = md->order[b++];
        }
        for (int i = 0; i < n; i++) md->order[i] = tmp[i];
    }
    free(tmp);
    return 0;
}

static void hold(ici_model *md, int i, int d)
{
    for (int h = 0; h < md->l[i].hops; h++) md->count[md->links[md->l[i].first + (size_t)h]] += d;
}

/* Each active copy's rate and finish time; returns the earliest finish. */
static double ici_rates(ici_model *md, double now)
{
    double next = INFINITY;
    for (int k = 0; k < md->n_active; k++) {
        ici_live *l = &md->l[md->active[k]];
        int most = 1;
        for (int h = 0; h < l->hops; h++) {
            int c = md->count[md->links[l->first + (size_t)h]];
            if (c > most) most = c;
        }
        l->rate = md->bw / most;
        l->finish = now + (l->remaining > 0 ? l->remaining : 0) / l->rate; /* never before now */
        if (l->finish < next) next = l->finish;
    }
    return next;
}

/* Drain from now to t: copies whose finish is t (or before, by rounding)
 * are done at t. */
static void ici_advance(ici_model *md, double now, double t)
{
    for (int k = 0; k < md->n_active;) {
        int i = md->active[k];
        ici_live *l = &md->l[i];
        if (l->finish <= t) {
            md->x[i].t_done = t;
            hold(md, i, -1);
            md->active[k] = md->active[--md->n_active];
        } else {
            l->remaining -= l->rate * (t - now);
            k++;
        }
    }
}

static int ici_run(ici_model *md)
{
    double now = 0;
    int p = 0;
    for (;;) {
        while (p < md->n_order && md->x[md->order[p]].t_start <= now) {
            int i = md->order[p++];
            md->l[i].remaining = (double)md->x[i].bytes;
            md->active[md->n_active++] = i;
            hold(md, i, +1);
        }
        double ready = p < md->n_order ? md->x[md->order[p]].t_start : INFINITY;
        if (!md->n_active) {
            if (p == md->n_order) return 0;
            now = ready;
            continue;
        }
        double finish = ici_rates(md, now), t = finish < ready ? finish : ready;
        if (!isfinite(t)) return -2; /* cannot happen with finite figures; never loop on it */
        ici_advance(md, now, t);
        now = t;
    }
}

int sim_ici_time(const pl_mesh *m, double link_bw, double hop_latency_s, sim_ici_xfer *x, int n)
{
    if (!m || bad_figures(m, link_bw, hop_latency_s, x, n)) return -2;
    if (!n) return 0;
    ici_model md = {.x = x, .bw = link_bw};
    md.l = calloc((size_t)n, sizeof *md.l);
    md.order = malloc((size_t)n * sizeof *md.order);
    md.active = malloc((size_t)n * sizeof *md.active);
    int rc = !md.l || !md.order || !md.active ? -1 : ici_setup(&md, m, hop_latency_s, n);
    if (!rc) rc = sort_order(&md);
    if (!rc) rc = ici_run(&md);
    free(md.l);
    free(md.order);
    free(md.active);
    free(md.links);
    free(md.count);
    return rc;
}
