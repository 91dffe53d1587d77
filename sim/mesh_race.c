/* sim/mesh_race.c: vector clocks for races between devices (mesh_race.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mesh_race.h"

/* A region of a device's memory and the copy that last landed there. */
typedef struct landed {
    uintptr_t lo, hi;
    int from;
    int read;              /* a local copy's source on this device, not a copy that landed */
    uint32_t epoch;        /* the sender's clock at that copy */
    const void *recv;      /* the receiving semaphore */
    int64_t unreceived;    /* bytes no wait_recv has taken yet */
    uint32_t received;     /* the receiver's clock when one did (0: not yet) */
    char point[64];
} landed;

typedef struct semvec {
    const void *cell;
    uint32_t *clock;       /* n entries */
} semvec;

struct sim_mesh_race {
    int n;
    uint32_t *clock;       /* n x n: row d is device d's clock */
    semvec *sems;          /* open addressing on the cell's address */
    size_t cap_sems, n_sems;
    landed **land;         /* per device: the regions copies landed in */
    int *n_land, *cap_land;
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
    for (size_t i = 0; i < r->cap_sems; i++) free(r->sems[i].clock);
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

/* The clock of a semaphore, made on first use; NULL when out of memory. */
static uint32_t *sem_clock(sim_mesh_race *r, const void *cell)
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
        uint32_t *c = calloc((size_t)r->n, sizeof *c);
        if (!c) return NULL;
        r->sems[i] = (semvec){cell, c};
        r->n_sems++;
    }
    return r->sems[i].clock;
}

static void join(uint32_t *to, const uint32_t *from, int n)
{
    for (int i = 0; i < n; i++)
        if (from[i] > to[i]) to[i] = from[i];
}

void sim_mesh_race_added(sim_mesh_race *r, int device, const void *cell)
{
    uint32_t *s = r ? sem_clock(r, cell) : NULL;
    if (s) join(s, r->clock + (size_t)device * (size_t)r->n, r->n);
}

void sim_mesh_race_taken(sim_mesh_race *r, int device, const void *cell, int64_t amount)
{
    uint32_t *s = r ? sem_clock(r, cell) : NULL;
    if (!s) return;
    uint32_t *mine = r->clock + (size_t)device * (size_t)r->n;
    join(mine, s, r->n);
    uint32_t epoch = ++mine[device]; /* the receive is an event of this device */
    landed *l = r->land[device];
    for (int i = 0; i < r->n_land[device] && amount > 0; i++) { /* oldest first: the list is in landing order */
        if (l[i].recv != cell || l[i].unreceived == 0) continue;
        int64_t take = l[i].unreceived < amount ? l[i].unreceived : amount;
        l[i].unreceived -= take;
        amount -= take;
        if (l[i].unreceived == 0) l[i].received = epoch;
    }
}

/* Does the copy from `from` (clock mine) into bytes e landed in race with
 * it? Writes why into msg. */
static int races(const uint32_t *mine, int to, const landed *e, char *msg, size_t n)
{
    if (!e->read && mine[e->from] < e->epoch) {
        snprintf(msg, n, "device %d's copy, started at grid point %s, landed in those bytes and nothing orders it "
                 "before this one (no wait of this device saw it)", e->from, e->point);
        return 1;
    }
    /* the same words whether or not the receive has happened yet in this
     * schedule: the verdict must not depend on the schedule */
    if (e->read && (!e->received || mine[to] < e->received)) {
        snprintf(msg, n, "device %d's own copy, started at grid point %s, reads those bytes and nothing orders its "
                 "wait before this copy: it may read what this one writes", to, e->point);
        return 1;
    }
    if (!e->received || mine[to] < e->received) {
        snprintf(msg, n, "device %d may still be reading device %d's copy (started at grid point %s) in those bytes: "
                 "nothing orders its receive (wait_recv) before this copy; signal back when the buffer is free (a "
                 "capacity handshake, rule M12)", to, e->from, e->point);
        return 1;
    }
    return 0;
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

int sim_mesh_race_reading(sim_mesh_race *r, int device, uintptr_t lo, uintptr_t hi, const void *sem, int64_t bytes,
                          const char *point, char *msg, size_t n)
{
    if (!r) return 0;
    const landed *l = r->land[device];
    for (int i = 0; i < r->n_land[device]; i++) /* a copy that landed here and is not received yet */
        if (lo < l[i].hi && l[i].lo < hi && !l[i].read && !l[i].received && l[i].from != device) {
            snprintf(msg, n, "device %d's copy, started at grid point %s, lands in those bytes and this device has "
                     "not received it (no wait_recv took it): this copy may read old or new data", l[i].from,
                     l[i].point);
            return 1;
        }
    uint32_t epoch = ++r->clock[(size_t)device * (size_t)r->n + (size_t)device];
    return record(r, device, &(landed){.lo = lo, .hi = hi, .from = device, .read = 1, .epoch = epoch, .recv = sem,
                                       .unreceived = bytes}, point);
}

int sim_mesh_race_copy(sim_mesh_race *r, int from, int to, uintptr_t lo, uintptr_t hi, const void *recv,
                       int64_t bytes, const char *point, char *msg, size_t n)
{
    if (!r) return 0;
    uint32_t *mine = r->clock + (size_t)from * (size_t)r->n, epoch = ++mine[from];
    landed *l = r->land[to];
    for (int i = 0; i < r->n_land[to]; i++)
        if (lo < l[i].hi && l[i].lo < hi && races(mine, to, &l[i], msg, n)) return 1;
    return record(r, to, &(landed){.lo = lo, .hi = hi, .from = from, .epoch = epoch, .recv = recv,
                                   .unreceived = bytes}, point);
}
