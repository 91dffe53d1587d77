/* sim/timing/timing.c: the discrete-event model of sim/timing/timing.h.
 *
 * Time advances from event to event: a core becoming free (overhead or
 * kernel done), a transfer's first byte (issue + latency), a transfer's
 * last byte. Between events every active transfer drains at hbm_bw / k
 * bytes per second, k the number of active transfers (processor sharing:
 * the DMA engines interleave their requests to HBM).
 *
 * A transfer finishes by event, not by residue: when time reaches the
 * finish event dma_next computed, the transfers that event was for are
 * done even if `now + remaining * k / bw` rounded to `now` (a fraction of a
 * byte late in a long run). So every turn of the loop either advances time
 * or finishes a transfer, and the timing of every call terminates.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tilesim_mesh.h"
#include "dma_engine.h"
#include "ici.h"
#include "mesh_sched.h"
#include "timing.h"

/* ---- the cores ------------------------------------------------------------------ */

enum { PH_PROLOGUE, PH_BEGIN, PH_WAIT_COPIES, PH_EVENTS, PH_KERNEL, PH_WAIT_WB, PH_EPILOGUE, PH_END, PH_DONE };

typedef struct core_state {
    sim_coreline *cl;
    dma_engine *dma;   /* its device's HBM DMA engine */
    sim_links *links;  /* copies to other devices (M11): the mesh's links, not HBM */
    sim_credits *credits; /* a mesh: semaphores between devices */
    int device;
    int64_t n; /* current step */
    int phase;
    double wake;
    double compute, overhead;
    int64_t waited;    /* transfers waited for since the last charge: each a semaphore wait (dma_issue_s) */
    int64_t kev;       /* PH_EVENTS: the next event */
    const void *pf_ev, *pf_x; /* a mesh: the lines its next turn reads (its next event and copy), to prefetch */
    int64_t next_issue[SIM_MAX_OPS]; /* next transfer to issue */
    int64_t next_wait[SIM_MAX_OPS];  /* first transfer not yet known done */
} core_state;

/* Inputs: issue every copy whose step is within the lookahead of its buffers
 * and whose slot is free (the block k copies back is no longer in use).
 * Returns the copies issued (each a descriptor the core writes), or -1. */
static int64_t issue_copies(core_state *c, dma_engine *d, double delay)
{
    int64_t issued = 0;
    for (int i = 0; i < c->cl->n_ops; i++) {
        sim_opline *l = &c->cl->op[i];
        if (l->is_out) { /* P5: a fetch-back waits until its one slot is written back, then goes at once */
            for (; c->next_issue[i] < l->n && l->x[c->next_issue[i]].fetch && l->x[c->next_issue[i]].step <= c->n; issued++)
                if (dma_issue(d, &l->x[c->next_issue[i]++], delay)) return -1;
            continue;
        }
        int64_t k = l->buffers, j;
        while ((j = c->next_issue[i]) < l->n && l->x[j].step <= c->n + k - 1 &&
               (j < k || c->n >= l->x[j - k + 1].step)) {
            if (dma_issue(d, &l->x[j], delay)) return -1;
            c->next_issue[i]++;
            issued++;
        }
    }
    return issued;
}

static int64_t issue_writebacks(core_state *c, dma_engine *d)
{
    int64_t issued = 0;
    for (int i = 0; i < c->cl->n_ops; i++) {
        sim_opline *l = &c->cl->op[i];
        if (!l->is_out) continue;
        for (; c->next_issue[i] < l->n && l->x[c->next_issue[i]].step <= c->n; issued++)
            if (dma_issue(d, &l->x[c->next_issue[i]++], 0)) return -1;
    }
    return issued;
}

/* The core found transfer x of line l done and goes past it: into the
 * line's sums (each transfer once, in order). */
static inline void passed(sim_opline *l, const sim_xfer *x)
{
    l->sums.n[x->fetch]++;
    l->sums.busy[x->fetch] += x->t_done - x->t_issue;
    l->sums.bytes[x->fetch] += (double)x->bytes;
}

/* Are all transfers of the wanted kind with step <= upto done? Copies in
 * include outputs' fetch-backs (P5). Each transfer found done counts in
 * c->waited: the core waited on its semaphore. */
static int all_done(core_state *c, int outputs, int64_t upto)
{
    for (int i = 0; i < c->cl->n_ops; i++) {
        sim_opline *l = &c->cl->op[i];
        if (!outputs && l->is_out) {
            for (int64_t j = c->next_wait[i]; j < l->n && l->x[j].step <= upto; j++)
                if (l->x[j].fetch && !l->x[j].done) return 0;
            continue;
        }
        if (l->is_out != outputs) continue;
        while (c->next_wait[i] < l->n && l->x[c->next_wait[i]].step <= upto) {
            if (!l->x[c->next_wait[i]].done) return 0;
            passed(l, &l->x[c->next_wait[i]++]);
            c->waited++;
        }
    }
    return 1;
}

/* The core's scalar slot is busy for `s` seconds from now (overhead: the
 * step's fixed cost, descriptors, semaphore waits, the prologue). */
static void busy(core_state *c, double now, double s)
{
    c->wake = now + s;
    c->overhead += s;
}

/* Pay for the semaphore waits counted since the last charge. */
static void pay_waits(core_state *c, const pl_chip *chip, double now)
{
    busy(c, now, (double)c->waited * chip->dma_issue_s);
    c->waited = 0;
}

/* PH_EVENTS: the next event of a kernel that starts and waits for manual
 * copies. Each start writes a descriptor and each wait reads a semaphore on
 * the core's scalar slot (dma_issue_s). 1 if it acted, 0, or -1. */
static int core_event(core_state *c, dma_engine *d, const pl_chip *chip, double now)
{
    sim_coreline *cl = c->cl;
    sim_kevent *e = &cl->kev[c->kev];
    if ((e->kind == SIM_KEV_WAIT || e->kind == SIM_KEV_TAKE) && e->t0 < 0) e->t0 = now;
    switch (e->kind) {
    case SIM_KEV_COMPUTE: c->wake = now + e->seconds; break;
    case SIM_KEV_SEND: { /* written like a descriptor; it crosses the links as a copy's first byte does */
        sim_xfer *x = &cl->signals.x[e->xfer];
        if (c->links) {
            if (sim_links_signal(c->links, c->device, x, now)) return -1;
        } else if (c->credits && sim_credit_add(c->credits, x->to, x->cell, x->bytes)) return -1;
        busy(c, now, chip->dma_issue_s);
        break;
    }
    case SIM_KEV_START:
        if (cl->manual.x[e->xfer].hops && c->links) {
            if (sim_links_issue(c->links, c->device, &cl->manual.x[e->xfer], now)) return -1;
        } else if (dma_issue(d, &cl->manual.x[e->xfer], 0)) return -1;
        busy(c, now, chip->dma_issue_s);
        break;
    case SIM_KEV_WAIT:
        if (!cl->manual.x[e->xfer].done) return 0;
        e->t1 = now;
        busy(c, now, e->joined ? 0 : chip->dma_issue_s); /* one wait covering several copies reads once */
        break;
    case SIM_KEV_TAKE: /* a mesh: until what another device sends or signals has arrived */
        if (!c->credits || !sim_credit_take(c->credits, c->device, e->cell, e->amount)) return 0;
        e->t1 = now;
        busy(c, now, chip->dma_issue_s);
        break;
    case SIM_KEV_SIGNAL:
        if (c->credits && sim_credit_add(c->credits, e->device, e->cell, e->amount)) return -1;
        break;
    default: c->phase = PH_KERNEL; return 1;
    }
    c->kev++;
    /* A mesh's cores take turns, an event each: by this core's next turn its
     * event list has left the cache (1,024 devices are 1,024 streams, too
     * many for the hardware's prefetcher). Fetch what the next turn reads:
     * the event after next, and the next event's copy (it was fetched one
     * turn ahead). Timing is unchanged; a 1,024-device replay is faster.
     * One device (a sweep's) keeps its lines hot: no prefetch there. */
    if (!c->credits) return 1;
    __builtin_prefetch(&cl->kev[c->kev + 1]);
    if (c->kev < cl->n_kev) {
        const sim_kevent *n = &cl->kev[c->kev];
        c->pf_ev = n;
        c->pf_x = n->kind == SIM_KEV_START || n->kind == SIM_KEV_WAIT ? &cl->manual.x[n->xfer] : NULL;
        if (c->pf_x) __builtin_prefetch(c->pf_x);
    }
    return 1;
}

/* P8: before the next step reuses an output slot, the write-back that last
 * used it must be done: k - 1 steps back for k buffers. 1 when they are. */
static int slots_free(core_state *c)
{
    for (int i = 0; i < c->cl->n_ops; i++) {
        sim_opline *l = &c->cl->op[i];
        if (!l->is_out) continue;
        while (c->next_wait[i] < l->n && l->x[c->next_wait[i]].step <= c->n - (l->buffers - 1)) {
            if (!l->x[c->next_wait[i]].done) return 0;
            passed(l, &l->x[c->next_wait[i]++]);
            c->waited++;
        }
    }
    return 1;
}

/* Whether the core may act at time now: the test before every core_act
 * call, inlined where the replay loops (most calls found the core busy). */
static inline int core_ready(const core_state *c, double now) { return c->phase != PH_DONE && c->wake <= now; }

/* Let the core act at time now (core_ready); returns 1 if it did, 0 if it
 * waits, -1 on error. Inlined where the replay loops: a sweep's replay calls
 * it about four times a grid step, and its call cost a tenth of it. */
static inline __attribute__((always_inline)) int core_act(core_state *c, dma_engine *d, const pl_chip *chip,
                                                          double now)
{
    sim_coreline *cl = c->cl;
    int64_t issued;
    switch (c->phase) {
    case PH_PROLOGUE: /* set-up before the first copy can go */
        busy(c, now, chip->prologue_s);
        c->phase = PH_BEGIN;
        return 1;
    case PH_BEGIN: { /* the last step's write-back waits first, then the step: one event */
        double waits = (double)c->waited * chip->dma_issue_s;
        c->waited = 0;
        if ((issued = issue_copies(c, d, waits)) < 0) return -1;
        busy(c, now, waits + chip->step_overhead_s + (double)issued * chip->dma_issue_s);
        if (cl->begin_t) cl->begin_t[c->n] = now, cl->setup_t[c->n] = c->wake; /* allocated together (tracing) */
        c->phase = PH_WAIT_COPIES;
        return 1;
    }
    case PH_WAIT_COPIES: { /* the semaphore waits, then the kernel: one event, not two (a per-step cost) */
        if (!all_done(c, 0, c->n)) return 0;
        double start = now + (double)c->waited * chip->dma_issue_s;
        c->overhead += start - now;
        c->waited = 0;
        if (cl->kernel_t) cl->kernel_t[2 * c->n] = start;
        c->compute += cl->step_s[c->n];
        if (cl->step_kev && c->n < cl->cap_step_kev && cl->step_kev[c->n] >= 0) {
            c->kev = cl->step_kev[c->n];
            c->wake = start;
            c->phase = PH_EVENTS;
        } else {
            c->wake = start + cl->step_s[c->n];
            c->phase = PH_KERNEL;
        }
        return 1;
    }
    case PH_EVENTS: return core_event(c, d, chip, now);
    case PH_KERNEL:
        if (cl->kernel_t) cl->kernel_t[2 * c->n + 1] = now;
        if ((issued = issue_writebacks(c, d)) < 0) return -1;
        busy(c, now, (double)issued * chip->dma_issue_s);
        c->phase = PH_WAIT_WB;
        return 1;
    case PH_WAIT_WB:
        if (!slots_free(c)) return 0;
        /* its waits are paid by the next step's PH_BEGIN (no event of their own), after the last step here */
        if (c->n + 1 == cl->steps) pay_waits(c, chip, now);
        c->n++;
        c->phase = c->n == cl->steps ? PH_EPILOGUE : PH_BEGIN;
        return 1;
    case PH_EPILOGUE:
        if (!all_done(c, 1, INT64_MAX)) return 0;
        pay_waits(c, chip, now);
        if (cl->begin_t) cl->begin_t[cl->steps] = now, cl->setup_t[cl->steps] = c->wake;
        c->phase = PH_END;
        return 1;
    case PH_END: c->phase = PH_DONE; return 1;
    }
    return 0;
}

/* One core's sums into its device's result. */
static void core_result(const core_state *c, sim_time_result *out, int i)
{
    /* a nested pipeline's steps ran as part of the kernel's time, but are overhead (P9, K3) */
    double nested = c->cl->nested_overhead_s, compute = c->compute - nested, overhead = c->overhead + nested;
    out->compute_s += compute;
    out->overhead_s += overhead;
    out->core_compute_s[i] = compute;
    out->core_overhead_s[i] = overhead;
    double busy = compute + overhead, exposed = out->core_end_s[i] - busy;
    out->exposed_s += exposed > 0 ? exposed : 0;
    if (out->core_end_s[i] > out->total_s) out->total_s = out->core_end_s[i];
}

/* Everything that can happen at `now` on one device (a mesh: mesh_act,
 * below). Sets *next to the earliest core wake-up; returns 1 while a core
 * runs, 0 when all are done, -1.
 * Inlined into the replay's loop: it runs at every event, millions of times
 * a cost-only sweep (a call was 5 % of its instructions, bench/sweep_speed). */
static inline __attribute__((always_inline)) int act_all(core_state *cs, int n, const int *dev_of, int *core_of,
                                                         sim_time_dev *devs, const pl_chip *chip, double now,
                                                         double *next)
{
    /* Without a mesh one pass is enough: a core's actions only issue
     * transfers, which finish later, so they cannot let another core go at
     * this instant (a mesh's signals can: mesh_act passes again). */
    int running = 0;
    for (int i = 0; i < n; i++) {
        int r = 0;
        while (core_ready(&cs[i], now) && (r = core_act(&cs[i], cs[i].dma, chip, now)) > 0) continue;
        if (r < 0) return -1;
    }
    *next = INFINITY;
    for (int i = 0; i < n; i++) {
        sim_time_result *out = devs[dev_of[i]].out;
        if (cs[i].phase == PH_DONE) {
            if (out->core_end_s[core_of[i]] == 0) out->core_end_s[core_of[i]] = now;
            continue;
        }
        running = 1;
        if (cs[i].wake > now && cs[i].wake < *next) *next = cs[i].wake;
    }
    return running;
}

/* act_all for a mesh, by event (mesh_sched.h says how): 1 while a core runs, 0 when all are done, -1. */
static int mesh_act(mesh_sched *m, core_state *cs, const int *dev_of, const int *core_of, sim_time_dev *devs,
                    const pl_chip *chip, sim_credits *credits, double now, double *next)
{
    while (m->hn && m->hk[0] <= now) ready_set(m, m->hv[0]), heap_pop(m);
    take_news(m, credits);
    for (int acted = 1; acted;) {
        acted = 0;
        for (int w = 0; w < m->words; w++)
            while (m->ready[w]) {
                int i = w * 64 + __builtin_ctzll(m->ready[w]), r = 0;
                m->ready[w] &= m->ready[w] - 1;
                core_state *c = &cs[i];
                /* the core after this one: its lines again, in case other cores' turns evicted them */
                int j = m->ready[w] ? w * 64 + __builtin_ctzll(m->ready[w]) : -1;
                if (j >= 0 && cs[j].pf_ev) {
                    __builtin_prefetch(cs[j].pf_ev);
                    if (cs[j].pf_x) __builtin_prefetch(cs[j].pf_x);
                }
                while (core_ready(c, now) && (r = core_act(c, c->dma, chip, now)) > 0) acted = 1;
                if (r < 0) return -1;
                if (c->phase == PH_DONE) {
                    sim_time_result *out = devs[dev_of[i]].out;
                    if (out->core_end_s[core_of[i]] == 0) out->core_end_s[core_of[i]] = now;
                    m->running--;
                } else if (c->wake > now) {
                    heap_push(m, c->wake, i);
                } else { /* waits for its device's news */
                    int d = c->device;
                    m->wait_next[i] = m->wait_head[d], m->wait_head[d] = i;
                }
                take_news(m, credits); /* a signal this core sent: a core past it acts in this pass */
            }
    }
    *next = m->hn ? m->hk[0] : INFINITY;
    return m->running > 0;
}

static void link_stats(const sim_links *links, int n_dev, sim_link_stats *st)
{
    *st = (sim_link_stats){.busiest_link = -1};
    if (links) sim_links_dcn(links, &st->dcn_copies, st->dcn_pair);
    for (int k = 0; links && k < sim_links_count(links); k++) {
        double b = sim_links_bytes(links, k);
        if (b <= 0) continue;
        if (SIM_IS_DCN_LINK(n_dev, k)) { /* a host's NIC, out (even) or in */
            if (k % 2 == 0) st->dcn_bytes += b;
            if (b > st->dcn_busiest_bytes) st->dcn_busiest_bytes = b;
            continue;
        }
        st->link_bytes += b;
        st->links_used++;
        if (b > st->busiest_bytes) st->busiest_bytes = b, st->busiest_link = k;
    }
}

static inline __attribute__((always_inline)) int time_devices(sim_time_dev *devs, int n_dev, const pl_chip *chip,
                                                              const pl_mesh *mesh, sim_link_stats *stats)
{
    mesh_sched ms = {0}; /* a mesh's cores by event (mesh_act) */
    int n = 0, rc = 0;
    for (int d = 0; d < n_dev; d++) {
        memset(devs[d].out, 0, sizeof *devs[d].out);
        if (devs[d].n_cores < 1 || devs[d].n_cores > SIM_MAX_CORES) return -1;
        n += devs[d].n_cores;
    }
    if (sim_time_bad_figure(chip, 0) >= 0) return -2;
    /* ICI (a mesh): each copy shares every link of its route, after the DMA
     * latency and a latency per hop (links.c) */
    double hop = isfinite(chip->ici_latency_s) && chip->ici_latency_s > 0 ? chip->ici_latency_s : 0;
    dma_engine *eng = calloc((size_t)n_dev, sizeof *eng); /* per device: its HBM */
    core_state *cs = calloc((size_t)n, sizeof *cs);
    int *dev_of = calloc((size_t)n, sizeof *dev_of), *core_of = calloc((size_t)n, sizeof *core_of);
    sim_credits *credits = mesh ? sim_credits_new(n_dev) : NULL;
    sim_link_figures fig = {.bw = chip->ici_bw, .latency = chip->dma_latency_s, .hop_latency = hop,
                            .dcn_bw = chip->dcn_bw, .dcn_latency = chip->dcn_latency_s,
                            .devices_per_host = pl_chip_devices_per_host(chip)};
    sim_links *links = mesh && credits ? sim_links_new(mesh, &fig, credits) : NULL;
    if (!eng || !cs || !dev_of || !core_of || (mesh && !links)) { rc = -1; goto out; }
    if (mesh && sim_time_bad_figure(chip, mesh->dcn ? 2 : 1) >= 0) { rc = -2; goto out; }
    for (int d = 0, i = 0; d < n_dev; d++) {
        eng[d] = DMA_ENGINE(chip);
        eng[d].credits = credits, eng[d].device = d;
        for (int k = 0; k < devs[d].n_cores; k++, i++) {
            sim_coreline *cl = &devs[d].cores[k];
            for (int o = 0; o < cl->n_ops; o++) memset(&cl->op[o].sums, 0, sizeof cl->op[o].sums);
            cs[i] = (core_state){.cl = cl, .dma = &eng[d], .links = links, .credits = credits,
                                 .device = d, .phase = cl->steps ? PH_PROLOGUE : PH_DONE};
            dev_of[i] = d;
            core_of[i] = k;
        }
    }
    if (credits && mesh_sched_init(&ms, n, n_dev)) { rc = -1; goto out; }
    for (int i = 0; credits && i < n; i++)
        if (cs[i].phase != PH_DONE) ready_set(&ms, i), ms.running++;
    for (double now = 0;;) {
        double next;
        int r = credits ? mesh_act(&ms, cs, dev_of, core_of, devs, chip, credits, now, &next)
                        : act_all(cs, n, dev_of, core_of, devs, chip, now, &next);
        if (r < 0) { rc = -1; goto out; }
        if (!r) break;
        for (int e = 0; e < n_dev; e++) {
            double t = eng[e].n ? dma_next(&eng[e]) : INFINITY;
            if (t < next) next = t;
        }
        double t_links = links ? sim_links_next(links, now) : INFINITY;
        if (t_links < next) next = t_links;
        /* a core waits on nothing: broken records, a semaphore no device
         * fills, or a chip whose figures put the next event at infinity */
        if (!isfinite(next)) { rc = credits ? -3 : -2; goto out; }
        for (int e = 0; e < n_dev; e++) {
            /* an idle engine only moves its clock: no call (a mesh of 1,024 devices has about that many idle ones
             * at each of its instants, millions in a multislice run) */
            if (!eng[e].n) { dma_idle_to(&eng[e], next); continue; }
            dma_advance(&eng[e], next);
            if (eng[e].oom) { rc = -1; goto out; }
        }
        if (links && sim_links_advance(links, now, next)) { rc = -1; goto out; }
        now = next;
    }
    for (int i = 0; i < n; i++) core_result(&cs[i], devs[dev_of[i]].out, core_of[i]);
    if (stats) link_stats(links, n_dev, stats);
out:
    mesh_sched_free(&ms);
    for (int e = 0; eng && e < n_dev; e++) free(eng[e].live);
    free(eng);
    sim_links_free(links);
    free(cs);
    free(dev_of);
    free(core_of);
    sim_credits_free(credits);
    return rc;
}

int sim_time_mesh(sim_time_dev *devs, int n_devices, const pl_chip *chip, const pl_mesh *mesh,
                  sim_link_stats *stats)
{
    return time_devices(devs, n_devices, chip, mesh, stats);
}

int sim_time_run(sim_coreline *cores, int n_cores, const pl_chip *chip, sim_time_result *out)
{
    /* one core of one device, a sweep's every configuration: the replay's
     * loops over cores and devices, made for that constant */
    if (n_cores == 1) {
        sim_time_dev d = {.cores = cores, .n_cores = 1, .out = out};
        return time_devices(&d, 1, chip, NULL, NULL);
    }
    sim_time_dev d = {.cores = cores, .n_cores = n_cores, .out = out};
    return time_devices(&d, 1, chip, NULL, NULL);
}
