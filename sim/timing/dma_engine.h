/* sim/timing/dma_engine.h: a device's HBM DMA engine in the replay
 * (timing.c): the transfers in flight share the bandwidth equally after a
 * fixed latency (a fluid model), and finish by event, not by residue.
 *
 *     dma_engine d = DMA_ENGINE(chip);
 *                     // then .credits and .device on a mesh
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
    double residue; /* done once no more than this is left: a millionth of its bytes (floating-point residue) */
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
    /* Kept current at `now` by dma_issue and dma_advance, so that dma_next
     * costs no pass over the transfers (it runs at every event): */
    int active;        /* transfers moving bytes now (t_ready <= now) */
    double min_rem;    /* the fewest bytes left of an active one (INFINITY: none) */
    double next_ready; /* the first t_ready after now (INFINITY: none) */
    double finish;     /* the finish event dma_next last returned (INFINITY: none) */
} dma_engine;

/* An idle engine at time 0 with the chip's HBM figures. */
#define DMA_ENGINE(chip)                                                                                     \
    ((dma_engine){.bw = (chip)->hbm_bw, .inv_bw = 1 / (chip)->hbm_bw, .latency = (chip)->dma_latency_s,      \
                  .row_full = (chip)->dma_row_bytes, .min_rem = INFINITY, .next_ready = INFINITY,            \
                  .finish = INFINITY})

/* Issue x `delay` seconds from now (the core is still busy until then): it
 * takes no bandwidth before its start plus the latency, so issuing it now
 * with that start is the same as an event at now + delay, without one. */
static inline int dma_issue(dma_engine *d, sim_xfer *x, double delay)
{
    if (d->n == d->cap && sim_grow((void **)&d->live, &d->cap, sizeof *d->live, 16)) return -1;
    x->t_issue = d->now + delay;
    x->done = 0;
    sim_prefetch_ahead(x, SIM_RECORDS_AHEAD * sizeof *x, 0); /* the line's records a few steps on (cold) */
    /* A strided copy of short rows wastes part of each HBM burst: it holds
     * its share of the bandwidth as long as bytes / efficiency would take
     * (docs/CHIPS.md, dma_row_bytes). */
    double held = (double)x->bytes; /* at full efficiency: x / 1 is x, no divide */
    if (x->row_bytes > 0 && d->row_full > (double)x->row_bytes) held /= (double)x->row_bytes / d->row_full;
    dma_live l = {x, x->t_issue + d->latency, held, 1e-6 * (double)(x->bytes ? x->bytes : 1)};
    d->live[d->n++] = l;
    if (l.t_ready <= d->now) {
        d->active++;
        if (l.remaining < d->min_rem) d->min_rem = l.remaining;
    } else if (l.t_ready < d->next_ready) d->next_ready = l.t_ready;
    return 0;
}

/* The next time something changes in the engine: a transfer activates or
 * one finishes. INFINITY when idle. */
static inline double dma_next(dma_engine *d)
{
    double finish = d->active ? d->now + d->min_rem * d->active * d->inv_bw : INFINITY;
    d->finish = finish;
    return finish < d->next_ready ? finish : d->next_ready;
}

/* Drain to time t, the time dma_next returned or earlier (no event strictly
 * before t, by construction), and count what is active at t. */
static inline void dma_advance(dma_engine *d, double t)
{
    double was = d->now;
    int active = d->active;
    /* At the finish event every active transfer moved exactly the smallest
     * remainder, whatever rounding did to t: that transfer is done. */
    double moved = !active ? 0 : t >= d->finish ? d->min_rem : (t - was) * d->bw / active;
    d->now = t;
    d->active = 0;
    d->min_rem = d->next_ready = d->finish = INFINITY;
    for (int i = 0; i < d->n;) {
        dma_live *l = &d->live[i];
        if (l->t_ready <= was) {
            l->remaining -= moved;
            if (l->remaining <= l->residue) {
                l->x->done = 1;
                l->x->t_done = t;
                if (d->credits) sim_credits_mark(d->credits, d->device); /* its core may be waiting for it */
                if (l->x->cell && d->credits &&
                    sim_credit_add(d->credits, l->x->to, l->x->cell, l->x->regular ? 1 : l->x->bytes))
                    d->oom = 1;
                d->live[i] = d->live[--d->n];
                continue;
            }
        }
        if (l->t_ready <= t) {
            d->active++;
            if (l->remaining < d->min_rem) d->min_rem = l->remaining;
        } else if (l->t_ready < d->next_ready) d->next_ready = l->t_ready;
        i++;
    }
}

/* An idle engine's clock moves to t: nothing to drain or count. */
static inline void dma_idle_to(dma_engine *d, double t) { d->now = t; }

#endif
