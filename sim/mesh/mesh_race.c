/* sim/mesh/mesh_race.c: vector clocks for races between devices (mesh_race.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mesh_race.h"

/* A region of a device's memory and the copy that last landed there. */
typedef struct landed {
    uintptr_t lo, hi;
    int from;
    int local;             /* 0: a copy that landed; 1, 2: a local copy's source, destination on this device */
    uint32_t epoch;        /* the sender's clock at that copy */
    const void *recv;      /* the receiving semaphore */
    int64_t unreceived;    /* bytes no wait_recv has taken yet */
    uint32_t received;     /* the receiver's clock when one did (0: not yet) */
    char point[64];
} landed;

/* What one add brought to a semaphore: its count and the adder's clock. A
 * wait takes adds oldest first and learns only the clocks of those it
 * takes, not of adds that came later (which it did not wait for). */
typedef struct sem_add {
    int64_t left;
    uint32_t *clock;       /* n entries */
} sem_add;

typedef struct semvec {
    const void *cell;
    sem_add *q;            /* q[head .. n): adds not yet taken, oldest first */
    int head, n, cap;
} semvec;

struct sim_mesh_race {
    int n;
    uint32_t *clock;       /* n x n: row d is device d's clock */
    semvec *sems;          /* open addressing on the cell's address */
    size_t cap_sems, n_sems;
    landed **land;         /* per device: the regions copies landed in */
    int *n_land, *cap_land;
    sim_mesh_conflict found;        /* the first race in the canonical order (found.found: any) */
};

sim_mesh_race *sim_mesh_race_new(int n)
{
    if (n < 1 || n > SIM_MESH_RACE_MAX) return NULL;
    sim_mesh_race *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->n = n;
    r->clock = calloc((size_t)n * (size_t)n, sizeof *r->clock);
    r->land = calloc((size_t)n, sizeof *r->land);
    r->n_land = calloc((size_t)n, sizeof *r->n_land);
    r->cap_land = calloc((size_t)n, sizeof *r->cap_land);
    if (!r->clock || !r->land || !r->n_land || !r->cap_land) {
        sim_mesh_race_free(r);
        return NULL;
    }
    return r;
}

void sim_mesh_race_free(sim_mesh_race *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->cap_sems; i++) {
        for (int k = r->sems[i].head; k < r->sems[i].n; k++) free(r->sems[i].q[k].clock);
        free(r->sems[i].q);
    }
    for (int d = 0; r->land && d < r->n; d++) free(r->land[d]);
    free(r->sems);
    free(r->land);
    free(r->n_land);
    free(r->cap_land);
    free(r->clock);
    free(r);
}

static size_t slot_of(const sim_mesh_race *r, const void *cell)
{
    size_t h = ((uintptr_t)cell >> 3) * 0x9e3779b97f4a7c15ULL, mask = r->cap_sems - 1;
    size_t i = h & mask;
    while (r->sems[i].cell && r->sems[i].cell != cell) i = (i + 1) & mask;
    return i;
}

/* A semaphore's adds, made on first use; NULL when out of memory. */
static semvec *sem_of(sim_mesh_race *r, const void *cell)
{
    if (2 * (r->n_sems + 1) > r->cap_sems) {
        size_t cap = r->cap_sems ? 2 * r->cap_sems : 64;
        semvec *old = r->sems, *s = calloc(cap, sizeof *s);
        if (!s) return NULL;
        size_t old_cap = r->cap_sems;
        r->sems = s;
        r->cap_sems = cap;
        for (size_t i = 0; i < old_cap; i++)
            if (old[i].cell) r->sems[slot_of(r, old[i].cell)] = old[i];
        free(old);
    }
    size_t i = slot_of(r, cell);
    if (!r->sems[i].cell) {
        r->sems[i] = (semvec){.cell = cell};
        r->n_sems++;
    }
    return &r->sems[i];
}

static void join(uint32_t *to, const uint32_t *from, int n)
{
    for (int i = 0; i < n; i++)
        if (from[i] > to[i]) to[i] = from[i];
}

void sim_mesh_race_added(sim_mesh_race *r, int device, const void *cell, int64_t amount)
{
    semvec *s = r && amount > 0 ? sem_of(r, cell) : NULL;
    if (!s) return;
    if (s->head == s->n) s->head = s->n = 0; /* all taken: start over */
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 4;
        sem_add *q = realloc(s->q, (size_t)cap * sizeof *q);
        if (!q) return; /* out of memory: this add's clock is not learned; no race is invented by it */
        s->q = q;
        s->cap = cap;
    }
    uint32_t *c = malloc((size_t)r->n * sizeof *c);
    if (!c) return;
    memcpy(c, r->clock + (size_t)device * (size_t)r->n, (size_t)r->n * sizeof *c);
    s->q[s->n++] = (sem_add){amount, c};
}

void sim_mesh_race_taken(sim_mesh_race *r, int device, const void *cell, int64_t amount)
{
    semvec *s = r ? sem_of(r, cell) : NULL;
    if (!s) return;
    uint32_t *mine = r->clock + (size_t)device * (size_t)r->n;
    for (int64_t need = amount; need > 0 && s->head < s->n;) { /* the adds this wait takes, oldest first */
        sem_add *e = &s->q[s->head];
        join(mine, e->clock, r->n);
        int64_t take = e->left < need ? e->left : need;
        e->left -= take;
        need -= take;
        if (e->left == 0) free(e->clock), s->head++;
    }
    uint32_t epoch = ++mine[device]; /* the receive is an event of this device */
    landed *l = r->land[device];
    for (int i = 0; i < r->n_land[device] && amount > 0; i++) { /* oldest first: the list is in landing order */
        if (l[i].recv != cell || l[i].unreceived == 0) continue;
        int64_t take = l[i].unreceived < amount ? l[i].unreceived : amount;
        l[i].unreceived -= take;
        amount -= take;
        if (l[i].unreceived) continue;
        l[i].received = epoch;
        for (int j = 0; j < r->n_land[device]; j++) /* a local copy's other side ends with it */
            if (j != i && l[i].local && l[j].local && l[j].epoch == l[i].epoch && l[j].recv == cell)
                l[j].unreceived = 0, l[j].received = epoch;
    }
}

/* Events in the canonical order: by device, grid point, kind. */
static int event_cmp(const sim_mesh_event *a, const sim_mesh_event *b)
{
    if (a->device != b->device) return a->device < b->device ? -1 : 1;
    int c = strcmp(a->point, b->point);
    return c ? c : (a->kind > b->kind) - (a->kind < b->kind);
}

/* Two events of device `on`'s memory that nothing orders: kept if it comes
 * first in the canonical order, so that the race reported does not depend
 * on which of them a schedule ran second, nor on which races it met first. */
static void note(sim_mesh_race *r, int on, uintptr_t key, sim_mesh_event x, sim_mesh_event y)
{
    sim_mesh_conflict c = {.found = 1, .on = on, .key = key, .a = event_cmp(&x, &y) <= 0 ? x : y,
                  .b = event_cmp(&x, &y) <= 0 ? y : x};
    int better = !r->found.found;
    if (!better) {
        int k = event_cmp(&c.a, &r->found.a);
        if (!k) k = event_cmp(&c.b, &r->found.b);
        if (!k) k = (c.on > r->found.on) - (c.on < r->found.on);
        better = k < 0;
    }
    if (better) r->found = c;
}

static sim_mesh_event event_of(const landed *e)
{
    sim_mesh_event v = {.device = e->from, .kind = e->local};
    snprintf(v.point, sizeof v.point, "%s", e->point);
    return v;
}

/* Does a copy from `from` (clock mine) into bytes e of device `to` race
 * with e? Only if nothing orders e before it: e's start (two copies writing
 * at once), and e's receive or, for a local copy, its wait (the receiver
 * may still be reading, or never got it: the capacity handshake of M12). */
static int unordered(const uint32_t *mine, int to, const landed *e)
{
    if (!e->local && mine[e->from] < e->epoch) return 1;
    return !e->received || mine[to] < e->received;
}

/* e now owns its bytes on device `to`: drop the regions it covers whole.
 * 0 (also when out of memory: then not tracked; no race is invented). */
static int record(sim_mesh_race *r, int to, const landed *e, const char *point)
{
    landed *l = r->land[to];
    int k = 0;
    for (int i = 0; i < r->n_land[to]; i++)
        if (!(e->lo <= l[i].lo && l[i].hi <= e->hi)) l[k++] = l[i];
    r->n_land[to] = k;
    if (k == r->cap_land[to]) {
        int cap = k ? 2 * k : 8;
        landed *g = realloc(l, (size_t)cap * sizeof *g);
        if (!g) return 0;
        r->land[to] = l = g;
        r->cap_land[to] = cap;
    }
    l[k] = *e;
    snprintf(l[k].point, sizeof l[k].point, "%s", point);
    r->n_land[to]++;
    return 0;
}

/* A local copy's side [lo, hi) (kind 1 reads, 2 writes) against the copies
 * that landed here and are not received yet. */
static int local_side(sim_mesh_race *r, int device, uintptr_t lo, uintptr_t hi, int kind, const char *point)
{
    const landed *l = r->land[device];
    sim_mesh_event me = {.device = device, .kind = kind};
    snprintf(me.point, sizeof me.point, "%s", point);
    int raced = 0;
    for (int i = 0; i < r->n_land[device]; i++)
        if (lo < l[i].hi && l[i].lo < hi && !l[i].local && !l[i].received && l[i].from != device) {
            note(r, device, lo > l[i].lo ? lo : l[i].lo, event_of(&l[i]), me);
            raced = 1;
        }
    return raced;
}

int sim_mesh_race_local(sim_mesh_race *r, int device, const uintptr_t *span, const void *sem, int64_t bytes,
                        const char *point)
{
    if (!r) return 0;
    int raced = 0;
    for (int side = 0; side < 2; side++)
        if (span[2 * side] < span[2 * side + 1])
            raced |= local_side(r, device, span[2 * side], span[2 * side + 1], 1 + side, point);
    uint32_t epoch = ++r->clock[(size_t)device * (size_t)r->n + (size_t)device]; /* both sides: one copy */
    for (int side = 0; side < 2; side++)
        if (span[2 * side] < span[2 * side + 1])
            record(r, device, &(landed){.lo = span[2 * side], .hi = span[2 * side + 1], .from = device,
                                        .local = 1 + side, .epoch = epoch, .recv = sem, .unreceived = bytes}, point);
    return raced;
}

int sim_mesh_race_copy(sim_mesh_race *r, int from, int to, uintptr_t lo, uintptr_t hi, const void *recv,
                       int64_t bytes, const char *point)
{
    if (!r) return 0;
    ++r->clock[(size_t)from * (size_t)r->n + (size_t)from]; /* the copy is an event of its sender */
    return sim_mesh_race_landed(r, from, to, lo, hi, recv, bytes, point);
}

int sim_mesh_race_landed(sim_mesh_race *r, int from, int to, uintptr_t lo, uintptr_t hi, const void *recv,
                         int64_t bytes, const char *point)
{
    if (!r) return 0;
    uint32_t *mine = r->clock + (size_t)from * (size_t)r->n, epoch = mine[from];
    sim_mesh_event me = {.device = from, .kind = 0};
    snprintf(me.point, sizeof me.point, "%s", point);
    const landed *l = r->land[to];
    int raced = 0;
    for (int i = 0; i < r->n_land[to]; i++)
        if (lo < l[i].hi && l[i].lo < hi && unordered(mine, to, &l[i])) {
            note(r, to, lo > l[i].lo ? lo : l[i].lo, event_of(&l[i]), me);
            raced = 1;
        }
    record(r, to, &(landed){.lo = lo, .hi = hi, .from = from, .epoch = epoch, .recv = recv, .unreceived = bytes},
           point);
    return raced;
}

const sim_mesh_conflict *sim_mesh_race_found(const sim_mesh_race *r) { return r && r->found.found ? &r->found : NULL; }

int sim_mesh_race_devices(const sim_mesh_race *r) { return r ? r->n : 0; }

void sim_mesh_race_clock(sim_mesh_race *r, int device, int tick, uint32_t *out)
{
    uint32_t *row = r->clock + (size_t)device * (size_t)r->n;
    if (tick) ++row[device];
    memcpy(out, row, (size_t)r->n * sizeof *out);
}

void sim_mesh_race_learn(sim_mesh_race *r, int device, const uint32_t *clock)
{
    memcpy(r->clock + (size_t)device * (size_t)r->n, clock, (size_t)r->n * sizeof *clock);
}

void sim_mesh_race_consider(sim_mesh_race *r, const sim_mesh_conflict *c)
{
    if (r && c && c->found) note(r, c->on, c->key, c->a, c->b);
}
