/* sim/timing/credit.c: semaphore counts in the mesh timing model (timing.h).
 *
 * In the replay, a remote copy adds its bytes to the receiving semaphore
 * when its transfer ends, a signal adds when it is made, and a wait takes
 * when enough has arrived: a count per (device, semaphore), kept in an
 * open-addressing table keyed by the semaphore's address on its device.
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
};

static size_t slot(const sim_credits *c, int device, uintptr_t cell)
{
    size_t mask = c->cap - 1, i = (size_t)(((cell >> 3) ^ ((uintptr_t)device << 40)) * 0x9e3779b97f4a7c15ULL) & mask;
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

sim_credits *sim_credits_new(void) { return calloc(1, sizeof(sim_credits)); }

void sim_credits_free(sim_credits *c)
{
    if (c) free(c->t);
    free(c);
}

int sim_credit_add(sim_credits *c, int device, uintptr_t cell, int64_t amount)
{
    credit *e = find(c, device, cell);
    if (!e) return -1;
    e->count += amount;
    return 0;
}

int sim_credit_take(sim_credits *c, int device, uintptr_t cell, int64_t amount)
{
    credit *e = find(c, device, cell);
    if (!e || e->count < amount) return 0;
    e->count -= amount;
    return 1;
}
