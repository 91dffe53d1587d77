/* sim/timing/records.c: what the walk records per TensorCore for the timing model
 * (timing.h): per operand its transfers, per step its compute time or its
 * event list. Arrays grow by doubling; the walk reserves what it knows it
 * will need up front.
 */
#include <stdlib.h>
#include <string.h>

#include "timing.h"

/* ---- a host thread's spare record buffers ------------------------------------------ */

/* A sweep walks one configuration after another on each host thread. Fresh
 * memory for each one's records costs a page fault and the kernel's zeroing
 * of every page (about 6 % of bench/sweep_speed), so while a thread sweeps
 * (sim_records_pool) the step and copy lists it frees wait here for the
 * next configuration's reservations. */
enum { POOL_SLOTS = 8, POOL_MIN_BYTES = 1 << 20 };
static _Thread_local struct {
    int on; /* how many sweeps on this thread asked for it */
    struct spare {
        void *p;
        size_t bytes;
    } slot[POOL_SLOTS];
} pool;

void sim_records_pool(int on)
{
    pool.on += on ? 1 : -1; /* a sweep inside a sweep's configuration keeps the outer one's pool on */
    if (pool.on > 0) return;
    pool.on = 0;
    for (int i = 0; i < POOL_SLOTS; i++) {
        free(pool.slot[i].p);
        pool.slot[i] = (struct spare){0};
    }
}

/* The smallest spare of at least `bytes`, or NULL; *got: its size. */
static void *pool_take(size_t bytes, size_t *got)
{
    int best = -1;
    for (int i = 0; pool.on && i < POOL_SLOTS; i++)
        if (pool.slot[i].p && pool.slot[i].bytes >= bytes && (best < 0 || pool.slot[i].bytes < pool.slot[best].bytes))
            best = i;
    if (best < 0) return NULL;
    void *p = pool.slot[best].p;
    *got = pool.slot[best].bytes;
    pool.slot[best] = (struct spare){0};
    return p;
}

/* Keep p (of `bytes`) for later, or free it. */
static void pool_give(void *p, size_t bytes)
{
    for (int i = 0; p && pool.on && bytes >= POOL_MIN_BYTES && i < POOL_SLOTS; i++)
        if (!pool.slot[i].p) {
            pool.slot[i] = (struct spare){p, bytes};
            return;
        }
    free(p);
}

/* ---- records ------------------------------------------------------------------ */

/* Room for n elements of `elem` bytes in *p (capacity *cap): a spare, or
 * the allocator's. 0, or -1 when out of memory. */
static int reserve(void **p, int64_t *cap, int64_t n, size_t elem)
{
    size_t got;
    void *q = *p ? NULL : pool_take((size_t)n * elem, &got);
    if (q) {
        *p = q;
        *cap = (int64_t)(got / elem);
        return 0;
    }
    if (!(q = realloc(*p, (size_t)n * elem))) return -1;
    sim_hugepages(q, (size_t)n * elem);
    *p = q;
    *cap = n;
    return 0;
}

int sim_opline_reserve(sim_opline *l, int64_t n, int with_bidx)
{
    if (n <= l->cap) return 0;
    int64_t cap = l->cap;
    if (reserve((void **)&l->x, &cap, n, sizeof *l->x)) return -1;
    if (with_bidx && l->rank) {
        int64_t *b = realloc(l->bidx, (size_t)(cap * l->rank) * sizeof *b); /* a spare may hold more than n */
        if (!b) return -1;
        l->bidx = b;
    }
    l->cap = cap;
    return 0;
}

int sim_coreline_reserve(sim_coreline *c, int64_t steps)
{
    if (steps <= c->cap) return 0;
    return reserve((void **)&c->step_s, &c->cap, steps, sizeof *c->step_s);
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
    sim_prefetch_ahead(&l->x[l->n], SIM_RECORDS_AHEAD * sizeof *l->x, 1); /* to be written soon */
    l->x[l->n] = (sim_xfer){.step = step, .bytes = bytes, .slot = slot};
    if (bidx && l->rank && l->bidx) memcpy(l->bidx + l->n * l->rank, bidx, (size_t)l->rank * sizeof *bidx);
    l->n++;
    return 0;
}

double sim_coreline_bytes(const sim_coreline *c)
{
    double b = (double)c->steps * (sizeof *c->step_s + (c->step_kev ? sizeof *c->step_kev : 0)) +
               (double)c->n_kev * sizeof *c->kev + (double)c->manual.n * sizeof *c->manual.x +
               (double)c->signals.n * sizeof *c->signals.x;
    for (int i = 0; i < c->n_ops; i++)
        b += (double)c->op[i].n * (double)(sizeof *c->op[i].x + (c->op[i].bidx ? (size_t)c->op[i].rank * 8 : 0));
    return b;
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
        pool_give(c->op[i].x, (size_t)c->op[i].cap * sizeof *c->op[i].x);
        free(c->op[i].bidx);
    }
    free(c->manual.x);
    free(c->manual.bidx);
    free(c->signals.x);
    free(c->signals.bidx);
    free(c->kev);
    free(c->step_kev);
    pool_give(c->step_s, (size_t)c->cap * sizeof *c->step_s);
    free(c->step_point);
    free(c->kernel_t);
    free(c->begin_t);
    free(c->setup_t);
    memset(c, 0, sizeof *c);
}

