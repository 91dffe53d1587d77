/* sim/timing/records.c: what the walk records per TensorCore for the timing model
 * (timing.h): per operand its transfers, per step its compute time or its
 * event list. Arrays grow by doubling; the walk reserves what it knows it
 * will need up front.
 */
#include <stdlib.h>
#include <string.h>

#include "timing.h"

/* ---- records ------------------------------------------------------------------ */

int sim_opline_reserve(sim_opline *l, int64_t n, int with_bidx)
{
    if (n <= l->cap) return 0;
    sim_xfer *x = realloc(l->x, (size_t)n * sizeof *x);
    if (!x) return -1;
    sim_hugepages(x, (size_t)n * sizeof *x);
    l->x = x;
    if (with_bidx && l->rank) {
        int64_t *b = realloc(l->bidx, (size_t)(n * l->rank) * sizeof *b);
        if (!b) return -1;
        l->bidx = b;
    }
    l->cap = n;
    return 0;
}

int sim_coreline_reserve(sim_coreline *c, int64_t steps)
{
    if (steps <= c->cap) return 0;
    double *s = realloc(c->step_s, (size_t)steps * sizeof *s);
    if (!s) return -1;
    sim_hugepages(s, (size_t)steps * sizeof *s);
    c->step_s = s;
    c->cap = steps;
    return 0;
}

int sim_opline_push(sim_opline *l, int64_t step, int64_t bytes, int slot, const int64_t *bidx)
{
    if (l->n == l->cap) {
        int64_t cap = l->cap ? 2 * l->cap : 64;
        sim_xfer *x = realloc(l->x, (size_t)cap * sizeof *x);
        if (!x) return -1;
        sim_hugepages(x, (size_t)cap * sizeof *x);
        l->x = x;
        if (bidx && l->rank) {
            int64_t *b = realloc(l->bidx, (size_t)(cap * l->rank) * sizeof *b);
            if (!b) return -1;
            l->bidx = b;
        }
        l->cap = cap;
    }
    l->x[l->n] = (sim_xfer){.step = step, .bytes = bytes, .slot = slot};
    if (bidx && l->rank && l->bidx) memcpy(l->bidx + l->n * l->rank, bidx, (size_t)l->rank * sizeof *bidx);
    l->n++;
    return 0;
}

int sim_coreline_step(sim_coreline *c, double seconds)
{
    if (c->steps == c->cap && sim_grow((void **)&c->step_s, &c->cap, sizeof *c->step_s, 256)) return -1;
    c->step_s[c->steps++] = seconds;
    return 0;
}

int sim_coreline_event(sim_coreline *c, int64_t step, sim_kevent e)
{
    if (step >= c->cap_step_kev) {
        int64_t cap = c->cap_step_kev ? 2 * c->cap_step_kev : 256;
        while (cap <= step) cap *= 2;
        int64_t *s = realloc(c->step_kev, (size_t)cap * sizeof *s);
        if (!s) return -1;
        for (int64_t i = c->cap_step_kev; i < cap; i++) s[i] = -1; /* steps without events */
        c->step_kev = s;
        c->cap_step_kev = cap;
    }
    /* The list grows as needed: a step may start and wait for any number of
     * copies (no fixed limit on events per step). */
    if (c->n_kev == c->cap_kev && sim_grow((void **)&c->kev, &c->cap_kev, sizeof *c->kev, 64)) return -1;
    if (c->step_kev[step] < 0) c->step_kev[step] = c->n_kev; /* the step's first event */
    e.t0 = e.t1 = -1; /* the replay fills them */
    c->kev[c->n_kev++] = e;
    return 0;
}

void sim_coreline_free(sim_coreline *c)
{
    for (int i = 0; i < c->n_ops; i++) {
        free(c->op[i].x);
        free(c->op[i].bidx);
    }
    free(c->manual.x);
    free(c->manual.bidx);
    free(c->kev);
    free(c->step_kev);
    free(c->step_s);
    free(c->step_point);
    free(c->kernel_t);
    free(c->begin_t);
    memset(c, 0, sizeof *c);
}

