/* sim/timing/ici.c: the ICI link model of sim/timing/ici.h.
 *
 * A fluid model like the DMA engine of sim/timing/timing.c, with links in place of
 * the one HBM port. A copy over h hops becomes active at t_ready + h x the
 * hop latency (its first byte has crossed every link: cut-through, not
 * store-and-forward, as a DMA over ICI streams), then holds every link of
 * its route at once. Between events each active copy drains at the
 * smallest share it gets on its links, link_bw / (copies active on the
 * link); the shares change only when a copy starts or finishes, so those
 * are the events.
 *
 * An event only changes the shares on the links of the copies that start
 * or finish, so only the copies on those links can get a new rate (drained
 * to now at their old one first); every other copy keeps its rate and its
 * finish time, and so does a copy on such a link whose busiest link is
 * another. The next finish comes from a heap of the active copies by finish
 * time. So an event costs the copies on the links it touches, not every
 * copy in flight.
 *
 * A copy finishes by event, not by residue: the copies whose finish time is
 * the event's time are done, whatever rounding left in their remainder (a
 * byte at t = 1e9 s is below the clock's resolution). So every turn of the
 * loop either starts a copy at the next turn or finishes one: at most 2n + 1
 * turns, and the model always terminates.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "ici.h"

/* A copy's state while it is timed: remaining bytes as of t_upd, drained
 * at rate since; finish = t_upd + remaining / rate. */
typedef struct ici_live {
    size_t first; /* its route: route[first .. first + hops) */
    int hops;
    size_t hpos;    /* its place in the heap; SIZE_MAX: not there */
    uint64_t stamp; /* the last event that gave it a rate */
    double remaining, t_upd, rate, finish;
} ici_live;

typedef struct ici_model {
    sim_ici_xfer *x;
    ici_live *l;
    int *route;      /* every route, one after the other: link numbers */
    int *entry_copy; /* route entry -> its copy */
    size_t *pos;     /* route entry -> its place in its link's list */
    size_t *lk_off;  /* per link: where its list starts in lk_item (CSR) */
    int *lk_len;     /* per link: copies active on it */
    size_t *lk_item; /* the lists: route entries */
    uint64_t *lk_stamp; /* per link: the last event that marked it dirty */
    int *dirty, n_dirty; /* links whose shares changed at this event */
    int *order, n_order; /* copies that cross a link, by t_start */
    int *heap; /* active copies by finish time (heap_fix) */
    size_t n_heap;
    uint64_t event; /* 64 bits: a stamp never meets an old event again */
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

/* Routes, first bytes, the per-link lists' room. -1 out of memory, -2 a
 * first byte at infinity. */
static int ici_setup(ici_model *md, const pl_mesh *m, double lat, int n)
{
    size_t total = 0, n_links = (size_t)SIM_ICI_LINKS(pl_mesh_devices(m));
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
    size_t room = total ? total : 1;
    md->route = malloc(room * sizeof *md->route);
    md->entry_copy = malloc(room * sizeof *md->entry_copy);
    md->pos = malloc(room * sizeof *md->pos);
    md->lk_item = malloc(room * sizeof *md->lk_item);
    md->lk_off = calloc(n_links + 1, sizeof *md->lk_off);
    md->lk_len = calloc(n_links, sizeof *md->lk_len);
    md->lk_stamp = calloc(n_links, sizeof *md->lk_stamp);
    md->dirty = malloc(n_links * sizeof *md->dirty);
    if (!md->route || !md->entry_copy || !md->pos || !md->lk_item || !md->lk_off || !md->lk_len || !md->lk_stamp ||
        !md->dirty)
        return -1;
    for (int i = 0; i < n; i++) {
        sim_mesh_route(m, md->x[i].from, md->x[i].to, md->route + md->l[i].first, md->l[i].hops);
        for (int h = 0; h < md->l[i].hops; h++) {
            md->entry_copy[md->l[i].first + (size_t)h] = i;
            md->lk_off[md->route[md->l[i].first + (size_t)h] + 1]++;
        }
    }
    for (size_t k = 0; k < n_links; k++) md->lk_off[k + 1] += md->lk_off[k];
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

/* ---- the heap of finish times --------------------------------------------------------- */

/* An indexed min-heap of the active copies by (finish, index): a copy's
 * place is l[i].hpos, so a new rate moves its entry instead of adding one. */
static int ev_less(const ici_model *md, int a, int b)
{
    double ta = md->l[a].finish, tb = md->l[b].finish;
    return ta < tb || (ta == tb && a < b);
}

static void heap_set(ici_model *md, size_t k, int i)
{
    md->heap[k] = i;
    md->l[i].hpos = k;
}

static void heap_fix(ici_model *md, size_t k)
{
    int i = md->heap[k];
    while (k && ev_less(md, i, md->heap[(k - 1) / 2])) {
        heap_set(md, k, md->heap[(k - 1) / 2]);
        k = (k - 1) / 2;
    }
    for (;;) {
        size_t c = 2 * k + 1;
        if (c >= md->n_heap) break;
        if (c + 1 < md->n_heap && ev_less(md, md->heap[c + 1], md->heap[c])) c++;
        if (!ev_less(md, md->heap[c], i)) break;
        heap_set(md, k, md->heap[c]);
        k = c;
    }
    heap_set(md, k, i);
}

/* The room is n copies, allocated up front: no failure here. */
static void heap_add(ici_model *md, int i)
{
    md->heap[md->n_heap++] = i;
    heap_fix(md, md->n_heap - 1);
}

static void heap_pop(ici_model *md)
{
    md->l[md->heap[0]].hpos = SIZE_MAX;
    if (--md->n_heap) {
        md->heap[0] = md->heap[md->n_heap];
        heap_fix(md, 0);
    }
}

/* ---- events -------------------------------------------------------------------------- */

static void mark(ici_model *md, int link)
{
    if (md->lk_stamp[link] == md->event) return;
    md->lk_stamp[link] = md->event;
    md->dirty[md->n_dirty++] = link;
}

/* Copy i joins (+1) or leaves (-1) the lists of its links. */
static void hold(ici_model *md, int i, int join)
{
    for (int h = 0; h < md->l[i].hops; h++) {
        size_t e = md->l[i].first + (size_t)h;
        int link = md->route[e];
        size_t *list = md->lk_item + md->lk_off[link];
        if (join) {
            md->pos[e] = (size_t)md->lk_len[link];
            list[md->lk_len[link]++] = e;
        } else {
            size_t last = list[--md->lk_len[link]];
            list[md->pos[e]] = last;
            md->pos[last] = md->pos[e];
        }
        mark(md, link);
    }
}

/* Copy i's share from now on: drained to now at its old rate and moved in
 * the heap, unless its share is the same (its busiest link is not one that
 * changed), when its finish stands. */
static void rerate(ici_model *md, int i, double now)
{
    ici_live *l = &md->l[i];
    int most = 1;
    for (int h = 0; h < l->hops; h++) {
        int c = md->lk_len[md->route[l->first + (size_t)h]];
        if (c > most) most = c;
    }
    double rate = md->bw / most;
    if (rate == l->rate && l->hpos != SIZE_MAX) return;
    l->remaining -= l->rate * (now - l->t_upd);
    if (l->remaining < 0) l->remaining = 0; /* rounding: never a finish before now */
    l->t_upd = now;
    l->rate = rate;
    l->finish = now + l->remaining / rate;
    if (l->hpos == SIZE_MAX) heap_add(md, i);
    else heap_fix(md, l->hpos);
}

/* New rates for every copy on a link whose shares changed at this event. */
static void rerate_dirty(ici_model *md, double now)
{
    for (int d = 0; d < md->n_dirty; d++) {
        int link = md->dirty[d];
        const size_t *list = md->lk_item + md->lk_off[link];
        for (int k = 0; k < md->lk_len[link]; k++) {
            int i = md->entry_copy[list[k]];
            if (md->l[i].stamp == md->event) continue;
            md->l[i].stamp = md->event;
            rerate(md, i, now);
        }
    }
    md->n_dirty = 0;
}

static int ici_run(ici_model *md)
{
    double now = 0;
    int p = 0;
    for (;;) {
        md->event++;
        while (p < md->n_order && md->x[md->order[p]].t_start <= now) {
            int i = md->order[p++];
            md->l[i] = (ici_live){.first = md->l[i].first, .hops = md->l[i].hops, .hpos = SIZE_MAX,
                                  .remaining = (double)md->x[i].bytes, .t_upd = now};
            hold(md, i, 1);
        }
        rerate_dirty(md, now);
        double ready = p < md->n_order ? md->x[md->order[p]].t_start : INFINITY;
        if (!md->n_heap && p == md->n_order) return 0;
        double t = md->n_heap && md->l[md->heap[0]].finish < ready ? md->l[md->heap[0]].finish : ready;
        if (!isfinite(t)) return -2; /* cannot happen with finite figures; never loop on it */
        md->event++;
        while (md->n_heap && md->l[md->heap[0]].finish <= t) { /* every copy whose finish is t is done at t */
            int i = md->heap[0];
            heap_pop(md);
            md->x[i].t_done = t;
            hold(md, i, 0);
        }
        rerate_dirty(md, t);
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
    md.heap = malloc((size_t)n * sizeof *md.heap);
    int rc = !md.l || !md.order || !md.heap ? -1 : ici_setup(&md, m, hop_latency_s, n);
    if (!rc) rc = sort_order(&md);
    if (!rc) rc = ici_run(&md);
    free(md.l);
    free(md.order);
    free(md.route);
    free(md.entry_copy);
    free(md.pos);
    free(md.lk_off);
    free(md.lk_len);
    free(md.lk_item);
    free(md.lk_stamp);
    free(md.dirty);
    free(md.heap);
    return rc;
}
