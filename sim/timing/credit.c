/* sim/timing/credit.c: semaphore counts in the mesh timing model (timing.h).
 *
 * In the replay, a remote copy adds its bytes to the receiving semaphore
 * when its transfer ends, a signal adds when it is made, and a wait takes
 * when enough has arrived: a count per (device, semaphore), kept in an
 * open-addressing table keyed by the semaphore's address on its device.
 * A count back at 0 leaves the table (a ring all-reduce of N devices
 * touches 2 N^2 semaphores, a few at a time).
 */
#include <stdlib.h>

#include "timing.h"

typedef struct credit {
    uintptr_t cell;       /* 0: empty */
    int32_t device;
    int64_t count;
} credit;

struct sim_credits {
    credit *t;
    size_t cap, n;
    int n_dev;
    int *news, n_news;   /* devices with news since the replay last looked (sim_credits_news) */
    uint8_t *has_news;
};

static size_t home(const sim_credits *c, int device, uintptr_t cell)
{
    return (size_t)(((cell >> 3) ^ ((uintptr_t)device << 40)) * 0x9e3779b97f4a7c15ULL) & (c->cap - 1);
}

static size_t slot(const sim_credits *c, int device, uintptr_t cell)
{
    size_t mask = c->cap - 1, i = home(c, device, cell);
    while (c->t[i].cell && !(c->t[i].cell == cell && c->t[i].device == device)) i = (i + 1) & mask;
    return i;
}

static int grow(sim_credits *c)
{
    size_t cap = c->cap ? 2 * c->cap : 64, old_cap = c->cap;
    credit *old = c->t, *t = calloc(cap, sizeof *t);
    if (!t) return -1;
    c->t = t;
    c->cap = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].cell) c->t[slot(c, old[i].device, old[i].cell)] = old[i];
    free(old);
    return 0;
}

static credit *find(sim_credits *c, int device, uintptr_t cell)
{
    if (2 * (c->n + 1) > c->cap && grow(c)) return NULL;
    credit *e = &c->t[slot(c, device, cell)];
    if (!e->cell) *e = (credit){.cell = cell, .device = device}, c->n++;
    return e;
}

/* Empty e's slot; backward-shift deletion keeps every later entry of its
 * probe run reachable from its home slot. */
static void drop(sim_credits *c, credit *e)
{
    size_t mask = c->cap - 1, i = (size_t)(e - c->t);
    c->t[i].cell = 0;
    c->n--;
    for (size_t j = (i + 1) & mask; c->t[j].cell; j = (j + 1) & mask) {
        size_t k = home(c, c->t[j].device, c->t[j].cell);
        if (((j - k) & mask) < ((j - i) & mask)) continue; /* its home lies after the hole: it stays */
        c->t[i] = c->t[j];
        c->t[j].cell = 0;
        i = j;
    }
}

sim_credits *sim_credits_new(int n_devices)
{
    sim_credits *c = calloc(1, sizeof *c);
    if (c && n_devices > 0 &&
        (!(c->news = malloc((size_t)n_devices * sizeof *c->news)) || !(c->has_news = calloc((size_t)n_devices, 1)))) {
        free(c->news), free(c->has_news), free(c);
        return NULL;
    }
    if (c) c->n_dev = n_devices > 0 ? n_devices : 0;
    return c;
}

void sim_credits_free(sim_credits *c)
{
    if (c) free(c->t), free(c->news), free(c->has_news);
    free(c);
}

void sim_credits_mark(sim_credits *c, int device)
{
    if (device < 0 || device >= c->n_dev || c->has_news[device]) return;
    c->has_news[device] = 1;
    c->news[c->n_news++] = device;
}

int sim_credits_news(sim_credits *c, int *device)
{
    if (!c->n_news) return 0;
    *device = c->news[--c->n_news];
    c->has_news[*device] = 0;
    return 1;
}

int sim_credit_add(sim_credits *c, int device, uintptr_t cell, int64_t amount)
{
    credit *e = find(c, device, cell);
    if (!e) return -1;
    sim_credits_mark(c, device); /* news for the device's waiting takes */
    e->count += amount;
    if (!e->count) drop(c, e);
    return 0;
}

int sim_credit_take(sim_credits *c, int device, uintptr_t cell, int64_t amount)
{
    credit *e = find(c, device, cell);
    if (!e || e->count < amount) return 0;
    e->count -= amount;
    if (!e->count) drop(c, e);
    return 1;
}
