/* sim/timing/dma_engine.h: a device's HBM DMA engine in the replay
 * (timing.c): the transfers in flight share the bandwidth equally after a
 * fixed latency (a fluid model), and finish by event, not by residue.
 *
 *     dma_engine d = {.bw = chip->hbm_bw, .inv_bw = 1 / chip->hbm_bw, .latency = chip->dma_latency_s,
 *                     .row_full = chip->dma_row_bytes};
 *     dma_issue(&d, &x, 0);              // x starts moving after the latency
 *     double t = dma_next(&d);           // the next activation or finish
 *     dma_advance(&d, t);                // x->done once its bytes are through
 *
 * Only timing.c includes it: the functions are static inline because the
 * replay calls them at every event, millions of times in a sweep.
 */
#ifndef TILESIM_TIMING_DMA_ENGINE_H
#define TILESIM_TIMING_DMA_ENGINE_H

#include <math.h>
#include <stdlib.h>

#include "timing.h"

/* A transfer in flight: the record, when its first byte moves, what is left. */
typedef struct dma_live {
    sim_xfer *x;
    double t_ready, remaining;
} dma_live;

typedef struct dma_engine {
    double bw, latency, now;
    double inv_bw;   /* 1 / bw: a multiply at every event, not a divide */
    double row_full; /* chip->dma_row_bytes: rows shorter than this move at row / row_full of the bandwidth */
    sim_credits *credits; /* a mesh: a finished copy's bytes reach its receiving semaphore */
    int device;           /* whose engine: a mesh marks it when a transfer ends (sim_credits_mark) */
    int oom;
    dma_live *live; /* issued, not done */
    int64_t n, cap;
    int active;      /* transfers moving bytes now, as dma_next counted them */
    int counted;     /* active, finish and min_rem are valid: no issue or advance since */
    double finish;   /* the next finish event dma_next found (INFINITY: none) */
    double min_rem;  /* the bytes left of the transfer(s) it finishes */
} dma_engine;

/* Issue x `delay` seconds from now (the core is still busy until then): it
 * takes no bandwidth before its start plus the latency, so issuing it now
 * with that start is the same as an event at now + delay, without one. */
static inline int dma_issue(dma_engine *d, sim_xfer *x, double delay)
{
    if (d->n == d->cap && sim_grow((void **)&d->live, &d->cap, sizeof *d->live, 16)) return -1;
    x->t_issue = d->now + delay;
    x->done = 0;
    /* A strided copy of short rows wastes part of each HBM burst: it holds
     * its share of the bandwidth as long as bytes / efficiency would take
     * (docs/CHIPS.md, dma_row_bytes). */
    double eff = x->row_bytes > 0 && d->row_full > (double)x->row_bytes ? (double)x->row_bytes / d->row_full : 1;
    d->live[d->n++] = (dma_live){x, x->t_issue + d->latency, (double)x->bytes / eff};
    d->counted = 0;
    return 0;
}

/* The next time something changes in the engine: a transfer activates or
 * one finishes. INFINITY when idle. */
static inline double dma_next(dma_engine *d)
{
    if (!d->n) return INFINITY;
    int active = 0;
    double next_ready = INFINITY, min_rem = INFINITY;
    for (int i = 0; i < d->n; i++) {
        const dma_live *x = &d->live[i];
        if (x->t_ready <= d->now) {
            active++;
            if (x->remaining < min_rem) min_rem = x->remaining;
        } else if (x->t_ready < next_ready) next_ready = x->t_ready;
    }
    d->active = active;
    d->counted = 1;
    double finish = active ? d->now + min_rem * active * d->inv_bw : INFINITY;
    d->finish = finish;
    d->min_rem = min_rem;
    return finish < next_ready ? finish : next_ready;
}

/* Drain to time t (no event strictly before t, by construction). */
static inline void dma_advance(dma_engine *d, double t)
{
    double was = d->now;
    int active = 0;
    if (d->counted) active = d->active; /* dma_next just counted them at this instant */
    else
        for (int i = 0; i < d->n; i++) active += d->live[i].t_ready <= was;
    /* At the finish event every active transfer moved exactly the smallest
     * remainder, whatever rounding did to t: that transfer is done. */
    double moved = !active ? 0 : d->counted && t >= d->finish ? d->min_rem : (t - was) * d->bw / active;
    d->counted = 0;
    d->now = t;
    for (int i = 0; i < d->n;) {
        dma_live *l = &d->live[i];
        if (l->t_ready <= was) l->remaining -= moved;
        /* within a millionth of its bytes is done: floating-point residue */
        if (l->t_ready <= was && l->remaining <= 1e-6 * (double)(l->x->bytes ? l->x->bytes : 1)) {
            l->x->done = 1;
            l->x->t_done = t;
            if (d->credits) sim_credits_mark(d->credits, d->device); /* its core may be waiting for it */
            if (l->x->cell && d->credits &&
                sim_credit_add(d->credits, l->x->to, l->x->cell, l->x->regular ? 1 : l->x->bytes))
                d->oom = 1;
            d->live[i] = d->live[--d->n];
        } else i++;
    }
}

#endif
