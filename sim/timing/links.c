/* sim/timing/links.c: the ICI links of a mesh in the timing model's replay
 * (timing.h), the incremental form of sim_ici_time (ici.h).
 *
 * A copy to another device occupies every directed link of its route
 * (dimension-ordered, sim_mesh_route) from its first byte, one latency per
 * hop after it was issued, and drains at the smallest share it gets on any
 * of them: the link's bandwidth over the copies active on it. Shares change
 * at every start and finish. Like the DMA engine, a copy ends at the finish
 * event that was computed for it, whatever rounding did to its remainder,
 * so time always advances. When a copy ends, its bytes reach the receiving
 * semaphore of its device (sim/timing/credit.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ici.h"
#include "timing.h"

typedef struct link_live {
    sim_xfer *x;
    double t_ready, remaining, rate, finish;
    int from;            /* the sending device: its core may wait for the copy to end */
    int n_links;
    int *links;
} link_live;

/* A signal in flight: it moves no bytes and shares no link, so it waits in a heap by arrival time rather
 * than among the copies, whose rates every event recomputes. */
typedef struct link_signal {
    double t_ready;
    sim_xfer *x;
} link_signal;

struct sim_links {
    const pl_mesh *mesh;
    link_signal *sig;       /* a min-heap by t_ready */
    int64_t n_sig, cap_sig;
    double bw, latency, hop_latency;
    double dcn_bw, dcn_latency;
    int dph, n_dev, per_slice; /* devices a host, in the mesh, in a slice */
    int64_t dcn_copies;
    double dcn_pair[PL_MESH_MAX_SLICES][PL_MESH_MAX_SLICES];
    sim_credits *credits;
    link_live *live;
    int64_t n, cap;
    int *load;              /* per link: active copies on it, as sim_links_next counted them */
    double *bytes;          /* per link: bytes that crossed it */
    int n_link_ids;
    int fresh;              /* the rates sim_links_next set still hold: no issue or advance since */
};

/* A device's DCN port as its host's: n devices, per_slice of them a slice
 * (numbered slice by slice), dph a host. */
static int host_port(int n, int per_slice, int dph, int link)
{
    if (!SIM_IS_DCN_LINK(n, link)) return link;
    int base = SIM_DCN_LINK(n, 0, 0), dev = (link - base) / 2, in = (link - base) % 2;
    dph = dph > 0 ? dph : 1;
    int hosts_per_slice = (per_slice + dph - 1) / dph; /* a slice's last host may serve fewer */
    return SIM_DCN_LINK(n, dev / per_slice * hosts_per_slice + dev % per_slice / dph, in);
}

int sim_links_host_port(const pl_mesh *mesh, int devices_per_host, int link)
{
    int n = pl_mesh_devices(mesh);
    return n ? host_port(n, n / pl_mesh_slices(mesh), devices_per_host, link) : link;
}

sim_links *sim_links_new(const pl_mesh *mesh, const sim_link_figures *fig, sim_credits *credits)
{
    sim_links *l = calloc(1, sizeof *l);
    if (!l) return NULL;
    *l = (sim_links){.mesh = mesh, .bw = fig->bw, .latency = fig->latency, .hop_latency = fig->hop_latency,
                     .dcn_bw = fig->dcn_bw, .dcn_latency = fig->dcn_latency, .dph = fig->devices_per_host,
                     .n_dev = pl_mesh_devices(mesh), .credits = credits, .n_link_ids = SIM_ICI_LINKS(pl_mesh_devices(mesh))};
    l->per_slice = l->n_dev / (pl_mesh_slices(mesh) > 0 ? pl_mesh_slices(mesh) : 1);
    l->load = calloc((size_t)l->n_link_ids, sizeof *l->load);
    l->bytes = calloc((size_t)l->n_link_ids, sizeof *l->bytes);
    if (!l->load || !l->bytes) {
        sim_links_free(l);
        return NULL;
    }
    return l;
}

void sim_links_free(sim_links *l)
{
    if (!l) return;
    for (int i = 0; i < l->n; i++) free(l->live[i].links);
    free(l->live);
    free(l->sig);
    free(l->load);
    free(l->bytes);
    free(l);
}

/* ---- signals: a heap by arrival ---- */

static void sig_swap(link_signal *a, link_signal *b)
{
    link_signal t = *a;
    *a = *b, *b = t;
}

static int sig_push(sim_links *l, link_signal s)
{
    if (l->n_sig == l->cap_sig && sim_grow((void **)&l->sig, &l->cap_sig, sizeof *l->sig, 16)) return -1;
    int64_t i = l->n_sig++;
    l->sig[i] = s;
    for (; i > 0 && l->sig[(i - 1) / 2].t_ready > l->sig[i].t_ready; i = (i - 1) / 2)
        sig_swap(&l->sig[i], &l->sig[(i - 1) / 2]);
    return 0;
}

static void sig_pop(sim_links *l)
{
    l->sig[0] = l->sig[--l->n_sig];
    for (int64_t i = 0;;) {
        int64_t a = 2 * i + 1, b = a + 1, m = i;
        if (a < l->n_sig && l->sig[a].t_ready < l->sig[m].t_ready) m = a;
        if (b < l->n_sig && l->sig[b].t_ready < l->sig[m].t_ready) m = b;
        if (m == i) return;
        sig_swap(&l->sig[i], &l->sig[m]);
        i = m;
    }
}

/* From issue to the first byte over links[0 .. hops): the DMA latency, then each ICI hop's, or the DCN
 * latency once, on leaving a slice (a host port keeps its raw link's direction, so either id serves). */
static double first_byte(const sim_links *l, const int *links, int hops)
{
    double t = l->latency;
    for (int k = 0; k < hops; k++)
        t += !SIM_IS_DCN_LINK(l->n_dev, links[k]) ? l->hop_latency
             : (links[k] - SIM_DCN_LINK(l->n_dev, 0, 0)) % 2 ? 0 : l->dcn_latency;
    return t;
}

int sim_links_signal(sim_links *l, int from, sim_xfer *x, double now)
{
    int near[16], *links = near; /* most routes fit here */
    int hops = sim_mesh_route(l->mesh, from, x->to, near, 16);
    if (hops < 0) return -1;
    if (hops > 16) { /* past the first pass: the whole route */
        if (!(links = malloc((size_t)hops * sizeof *links))) return -1;
        sim_mesh_route(l->mesh, from, x->to, links, hops);
    }
    double t = first_byte(l, links, hops);
    if (links != near) free(links);
    x->t_issue = now;
    x->done = 0;
    return sig_push(l, (link_signal){.t_ready = now + t, .x = x});
}

int sim_links_issue(sim_links *l, int from, sim_xfer *x, double now)
{
    int near[16]; /* most routes: one pass into this, a second only past it */
    int hops = sim_mesh_route(l->mesh, from, x->to, near, 16);
    if (hops < 0) return -1;
    if (l->n == l->cap && sim_grow((void **)&l->live, &l->cap, sizeof *l->live, 16)) return -1;
    int *links = malloc((size_t)(hops ? hops : 1) * sizeof *links);
    if (!links) return -1;
    if (hops <= 16) memcpy(links, near, (size_t)hops * sizeof *links);
    else sim_mesh_route(l->mesh, from, x->to, links, hops);
    if (hops && SIM_IS_DCN_LINK(l->n_dev, links[0])) { /* the Megascale view's traffic between slices */
        l->dcn_copies++;
        l->dcn_pair[from / l->per_slice][x->to / l->per_slice] += (double)x->bytes;
    }
    double t = first_byte(l, links, hops);
    for (int k = 0; k < hops; k++) /* a copy between slices shares its host's NIC ports */
        if (SIM_IS_DCN_LINK(l->n_dev, links[k])) links[k] = host_port(l->n_dev, l->per_slice, l->dph, links[k]);
    l->fresh = 0;
    x->t_issue = now;
    x->done = 0;
    l->live[l->n++] = (link_live){.x = x, .t_ready = now + t, .remaining = (double)x->bytes,
                                  .from = from, .n_links = hops, .links = links};
    return 0;
}

/* Each active copy's rate and finish time at `now`; the next event. */
double sim_links_next(sim_links *l, double now)
{
    double next = l->n_sig ? l->sig[0].t_ready : INFINITY;
    for (int i = 0; i < l->n; i++)
        if (l->live[i].t_ready <= now)
            for (int k = 0; k < l->live[i].n_links; k++) l->load[l->live[i].links[k]]++;
    for (int i = 0; i < l->n; i++) {
        link_live *c = &l->live[i];
        if (c->t_ready > now) {
            if (c->t_ready < next) next = c->t_ready;
            continue;
        }
        double rate = INFINITY; /* the smallest share on its links: ICI links at bw, a host's DCN port at dcn_bw */
        for (int k = 0; k < c->n_links; k++) {
            double share = (SIM_IS_DCN_LINK(l->n_dev, c->links[k]) ? l->dcn_bw : l->bw) / l->load[c->links[k]];
            if (share < rate) rate = share;
        }
        c->rate = c->n_links ? rate : l->bw;
        c->finish = c->n_links ? now + c->remaining / c->rate : now;
        if (c->finish < next) next = c->finish;
    }
    for (int i = 0; i < l->n; i++)
        for (int k = 0; k < l->live[i].n_links; k++) l->load[l->live[i].links[k]] = 0;
    l->fresh = 1;
    return next;
}

int sim_links_advance(sim_links *l, double now, double t)
{
    if (!l->fresh) sim_links_next(l, now); /* the rates that held since now */
    l->fresh = 0;
    int rc = 0;
    while (l->n_sig && l->sig[0].t_ready <= t) { /* signals that arrived */
        sim_xfer *x = l->sig[0].x;
        x->done = 1;
        x->t_done = l->sig[0].t_ready;
        if (x->cell && l->credits && sim_credit_add(l->credits, x->to, x->cell, x->bytes)) rc = -1;
        sig_pop(l);
    }
    for (int i = 0; i < l->n;) {
        link_live *c = &l->live[i];
        if (c->t_ready > now) {
            i++;
            continue;
        }
        double moved = c->rate * (t - now);
        for (int k = 0; k < c->n_links; k++) l->bytes[c->links[k]] += moved < c->remaining ? moved : c->remaining;
        c->remaining -= moved;
        if (t < c->finish && c->remaining > 1e-6 * (double)c->x->bytes) {
            i++;
            continue;
        }
        c->x->done = 1;
        c->x->t_done = t;
        if (l->credits) sim_credits_mark(l->credits, c->from); /* its sender may be waiting for it */
        if (c->x->cell && l->credits && sim_credit_add(l->credits, c->x->to, c->x->cell, c->x->regular ? 1 : c->x->bytes))
            rc = -1;
        free(c->links);
        l->live[i] = l->live[--l->n];
    }
    return rc;
}

double sim_links_bytes(const sim_links *l, int link) { return link >= 0 && link < l->n_link_ids ? l->bytes[link] : 0; }

int sim_links_count(const sim_links *l) { return l->n_link_ids; }

void sim_links_dcn(const sim_links *l, int64_t *copies, double pair[PL_MESH_MAX_SLICES][PL_MESH_MAX_SLICES])
{
    *copies = l->dcn_copies;
    memcpy(pair, l->dcn_pair, sizeof l->dcn_pair);
}
