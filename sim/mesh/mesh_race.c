/* sim/mesh/mesh_race.c: vector clocks for races between devices (mesh_race.h).
 *
 * The regions copies landed in are kept per device sorted by their first
 * byte, so that the regions a new copy overlaps (those starting at most the
 * longest region's length before it) are found by a binary search, not by
 * a walk over every region the device ever received; and each semaphore
 * keeps the regions still waiting for a receive on it, in landing order,
 * so that a wait finds its own without a walk either (issue 26: a ring
 * all-reduce lands about 4 regions per device and step).
 *
 * The kernel's own loads and stores of bytes other devices can reach are
 * kept the same way, per device, each with the device's epoch at the time:
 * its clock entry plus one, the epoch its next event (a signal, a copy, a
 * receive) closes. A copy landing there races with such an access unless
 * its sender saw that epoch; an access races with a copy that landed there
 * and was not received yet. Either order of the two, so the race is found
 * in every schedule (JAX's TPU interpret mode checks loads and stores
 * against DMAs the same way, with vector clocks). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../kernel/sanitizers.h"
#include "../base/common.h" /* sim_hugepages */
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
    uint32_t gen;          /* its slot's generation: a stale pending reference does not match */
    int live;
    const char *point;     /* kept once (sim_points): a ring of N devices keeps N^2 regions */
} landed;
/* local: 1, 2 a local copy's sides; 3, 4 a kernel's load, store (in the per-device access sets) */
enum { KIND_KERNEL_READ = 3, KIND_KERNEL_WRITE = 4 };

/* A device's regions: a slab of slots, the live ones sorted by lo. */
typedef struct land_set {
    landed *e;
    int cap;
    int *free_ids, n_free;
    int *by_lo, n;         /* n live slots, by_lo[0 .. n) sorted by e[].lo */
    uintptr_t max_len;     /* the longest region ever recorded: how far before lo an overlap may start */
} land_set;

/* A region waiting for a receive on a semaphore, in landing order. */
typedef struct pend {
    int device, id;
    uint32_t gen;
} pend;

/* What one add brought to a semaphore: its count and the adder's clock. A
 * wait takes adds oldest first and learns only the clocks of those it
 * takes, not of adds that came later (which it did not wait for). */
/* A device's clock as it was: shared by every add the device makes until
 * its clock changes (a remote copy adds to the receiver's semaphore and to
 * its own send semaphore with one clock), freed when no add holds it. */
typedef struct snap {
    uint32_t refs;
    struct snap *next;     /* on the free list */
    uint32_t c[];          /* n entries */
} snap;

typedef struct sem_add {
    int64_t left;
    snap *clock;
} sem_add;

typedef struct sim_point_chunk {
    struct sim_point_chunk *next;
    size_t used;
    char s[16384];
} sim_point_chunk;

typedef struct semvec {
    const void *cell;
    sem_add *q;            /* q[head .. n): adds not yet taken, oldest first */
    int head, n, cap;
    pend *p;               /* p[ph .. pn): regions whose bytes count on it, not yet all received */
    int ph, pn, pcap;
} semvec;

struct sim_mesh_race {
    int n;
    uint32_t *clock;       /* n x n: row d is device d's clock */
    semvec *sems;          /* open addressing on the cell's address */
    size_t cap_sems, n_sems;
    land_set *land;        /* per device: the regions copies landed in */
    land_set *acc;         /* per device: the regions its kernel loaded or stored, with their epochs */
    unsigned char *dirty;  /* per device: it accessed since its clock entry last ticked */
    snap **cur;            /* per device: its clock's snapshot while the clock is unchanged, or NULL */
    snap *spare;           /* snapshots no add holds, for the next (a 1024-device ring takes and
                            * drops one of 4 KiB at almost every copy) */
    int n_spare;
    sim_points points;     /* the regions' grid points */
    sim_mesh_conflict found;        /* the first race in the canonical order (found.found: any) */
};

#define MAX_SPARE 256

static void unref(sim_mesh_race *r, snap *s)
{
    if (!s || --s->refs) return;
    if (r->n_spare < MAX_SPARE) s->next = r->spare, r->spare = s, r->n_spare++;
    else free(s);
}

/* Device d's clock row; changed(): it is about to change, so its snapshot
 * no longer describes it. */
static uint32_t *row_of(sim_mesh_race *r, int d) { return r->clock + (size_t)d * (size_t)r->n; }
static uint32_t *changed(sim_mesh_race *r, int d)
{
    unref(r, r->cur[d]);
    r->cur[d] = NULL;
    return row_of(r, d);
}

/* An event of device d: its own entry ticks, closing the epoch of the
 * accesses it made since the last one. */
static uint32_t tick(sim_mesh_race *r, int d)
{
    r->dirty[d] = 0;
    return ++changed(r, d)[d];
}

/* Device d's clock now, shared; NULL when out of memory. */
static snap *snapshot(sim_mesh_race *r, int d)
{
    if (!r->cur[d]) {
        snap *s = r->spare;
        if (s) r->spare = s->next, r->n_spare--;
        else s = malloc(sizeof *s + (size_t)r->n * sizeof *s->c);
        if (!s) return NULL;
        s->refs = 1; /* cur's own */
        memcpy(s->c, row_of(r, d), (size_t)r->n * sizeof *s->c);
        r->cur[d] = s;
    }
    r->cur[d]->refs++;
    return r->cur[d];
}

sim_mesh_race *sim_mesh_race_new(int n)
{
    if (n < 1 || n > SIM_MESH_RACE_MAX) return NULL;
    sim_mesh_race *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->n = n;
    r->clock = calloc((size_t)n * (size_t)n, sizeof *r->clock);
    r->land = calloc((size_t)n, sizeof *r->land);
    r->acc = calloc((size_t)n, sizeof *r->acc);
    r->dirty = calloc((size_t)n, 1);
    r->cur = calloc((size_t)n, sizeof *r->cur);
    if (!r->clock || !r->land || !r->acc || !r->dirty || !r->cur || sim_points_init(&r->points, n)) {
        sim_mesh_race_free(r);
        return NULL;
    }
    return r;
}

void sim_mesh_race_free(sim_mesh_race *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->cap_sems; i++) {
        for (int k = r->sems[i].head; k < r->sems[i].n; k++) unref(r, r->sems[i].q[k].clock);
        free(r->sems[i].q);
        free(r->sems[i].p);
    }
    for (int d = 0; r->land && d < r->n; d++) free(r->land[d].e), free(r->land[d].free_ids), free(r->land[d].by_lo);
    for (int d = 0; r->acc && d < r->n; d++) free(r->acc[d].e), free(r->acc[d].free_ids), free(r->acc[d].by_lo);
    free(r->acc);
    free(r->dirty);
    for (int d = 0; r->cur && d < r->n; d++) unref(r, r->cur[d]);
    for (snap *s = r->spare, *next; s; s = next) next = s->next, free(s);
    free(r->cur);
    sim_points_free(&r->points);
    free(r->sems);
    free(r->land);
    free(r->clock);
    free(r);
}

static size_t home_of(const sim_mesh_race *r, const void *cell);
static size_t slot_of(const sim_mesh_race *r, const void *cell)
{
    size_t mask = r->cap_sems - 1, i = home_of(r, cell);
    while (r->sems[i].cell && r->sems[i].cell != cell) i = (i + 1) & mask;
    return i;
}

static size_t home_of(const sim_mesh_race *r, const void *cell)
{
    return ((uintptr_t)cell >> 3) * 0x9e3779b97f4a7c15ULL & (r->cap_sems - 1);
}

/* A semaphore with nothing left to take and no region waiting for a
 * receive is as if never used: its entry goes (backward-shift deletion of
 * linear probing), so the table holds the semaphores in use, not every one
 * the run ever touched (a ring all-reduce's 2 N^2 at N devices). */
static void drop_sem(sim_mesh_race *r, semvec *s)
{
    free(s->q), free(s->p);
    size_t mask = r->cap_sems - 1, i = (size_t)(s - r->sems), j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (!r->sems[j].cell) break;
        size_t k = home_of(r, r->sems[j].cell);
        int stays = i <= j ? (i < k && k <= j) : (i < k || k <= j); /* its home lies in (i, j]: still reachable */
        if (!stays) r->sems[i] = r->sems[j], i = j;
    }
    r->sems[i] = (semvec){0};
    r->n_sems--;
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

/* snprintf "%s" without the format parser: a point is copied at every copy */
static void copy_point(char *to, size_t n, const char *from)
{
    size_t len = strnlen(from, n - 1);
    memcpy(to, from, len);
    to[len] = 0;
}

int sim_points_init(sim_points *p, int devices)
{
    *p = (sim_points){.devices = devices};
    return (p->last = calloc((size_t)(devices > 0 ? devices : 1), sizeof *p->last)) ? 0 : -1;
}

const char *sim_points_keep(sim_points *p, int d, const char *point)
{
    const char *last = d >= 0 && d < p->devices ? p->last[d] : NULL;
    if (last && strcmp(last, point) == 0) return last;
    size_t len = strnlen(point, sizeof ((sim_mesh_event *)0)->point - 1) + 1;
    sim_point_chunk *c = p->chunks;
    if (!c || c->used + len > sizeof c->s) {
        if (!(c = malloc(sizeof *c))) return "";
        c->next = p->chunks, c->used = 0;
        p->chunks = c;
    }
    char *at = c->s + c->used;
    copy_point(at, len, point);
    c->used += len;
    if (d >= 0 && d < p->devices) p->last[d] = at;
    return at;
}

void sim_points_free(sim_points *p)
{
    for (sim_point_chunk *c = p->chunks, *next; c; c = next) next = c->next, free(c);
    free(p->last);
    *p = (sim_points){0};
}

/* Element-wise max, written without a branch so that the compiler makes it
 * vector code: a 1024-device mesh joins 4 KiB clocks at every wait. x86-64's
 * baseline (SSE2) has no unsigned 32-bit max: GCC makes an AVX2 clone too,
 * chosen at load time where the host has it. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !TILESIM_TSAN && !TILESIM_ASAN
/* (not under a sanitizer: the clone's resolver runs at load time, before
 * the sanitizer's runtime, and ThreadSanitizer's instrumentation of it
 * crashes the program) */
__attribute__((target_clones("avx2", "default")))
#endif
static void join(uint32_t *restrict to, const uint32_t *restrict from, int n)
{
    for (int i = 0; i < n; i++) to[i] = from[i] > to[i] ? from[i] : to[i];
}

void sim_mesh_race_added(sim_mesh_race *r, int device, int owner, const void *cell, int64_t amount)
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
    /* the owner's own add: its wait would join a past clock of its own, which
     * its clock already covers (a send semaphore, a local copy's) */
    /* the add carries the accesses before it; a device's first add is an event of its own even with none
     * (a handshake's signal: the receiver then knows it has entered the kernel, M15) */
    if (device != owner && (r->dirty[device] || !row_of(r, device)[device])) tick(r, device);
    snap *c = device == owner ? NULL : snapshot(r, device);
    if (!c && device != owner) return;
    s->q[s->n++] = (sem_add){amount, c};
}

void sim_mesh_race_taken(sim_mesh_race *r, int device, const void *cell, int64_t amount)
{
    semvec *s = r ? sem_of(r, cell) : NULL;
    if (!s) return;
    uint32_t *mine = changed(r, device);
    for (int64_t need = amount; need > 0 && s->head < s->n;) { /* the adds this wait takes, oldest first */
        sem_add *e = &s->q[s->head];
        if (e->clock) join(mine, e->clock->c, r->n);
        int64_t take = e->left < need ? e->left : need;
        e->left -= take;
        need -= take;
        if (e->left == 0) unref(r, e->clock), s->head++;
    }
    uint32_t epoch = tick(r, device); /* the receive is an event of this device */
    land_set *ls = &r->land[device];
    for (int i = s->ph; i < s->pn && amount > 0; i++) { /* oldest first: the queue is in landing order */
        pend *q = &s->p[i];
        landed *e = q->device == device && q->id >= 0 ? &ls->e[q->id] : NULL;
        if (q->id < 0 || (e && (!e->live || e->gen != q->gen || e->unreceived == 0))) {
            q->id = -1; /* gone (covered by a later copy) or done */
            continue;
        }
        if (!e) continue; /* another device's region on this cell: not this wait's */
        int64_t take = e->unreceived < amount ? e->unreceived : amount;
        e->unreceived -= take;
        amount -= take;
        if (e->unreceived) continue;
        e->received = epoch;
        q->id = -1;
        for (int j = i - 2; e->local && j <= i + 2; j++) { /* a local copy's other side ends with it (pushed beside it) */
            if (j == i || j < s->ph || j >= s->pn || s->p[j].id < 0 || s->p[j].device != device) continue;
            landed *o = &ls->e[s->p[j].id];
            if (o->live && o->gen == s->p[j].gen && o->local && o->epoch == e->epoch && o->recv == cell)
                o->unreceived = 0, o->received = epoch, s->p[j].id = -1;
        }
    }
    while (s->ph < s->pn && s->p[s->ph].id < 0) s->ph++;
    if (s->ph == s->pn) s->ph = s->pn = 0;
    if (s->head == s->n && s->pn == 0) drop_sem(r, s);
}

/* Events in the canonical order: by device, grid point, kind. */
static int event_cmp(const sim_mesh_event *a, const sim_mesh_event *b)
{
    if (a->device != b->device) return a->device < b->device ? -1 : 1;
    int c = strcmp(a->point, b->point);
    return c ? c : (a->kind > b->kind) - (a->kind < b->kind);
}

static int with_kernel(const sim_mesh_conflict *c) { return c->a.kind >= KIND_KERNEL_READ || c->b.kind >= KIND_KERNEL_READ; }

/* Two events of device `on`'s memory that nothing orders: kept if it comes
 * first in the canonical order, so that the race reported does not depend
 * on which of them a schedule ran second, nor on which races it met first.
 * Races between copies come before those with a kernel's access: a copy
 * that lands over an earlier one unordered replaces its record, so whether
 * the kernel's access then meets the earlier copy depends on the schedule;
 * the race between the two copies is met in every one. */
static void note(sim_mesh_race *r, int on, uintptr_t key, sim_mesh_event x, sim_mesh_event y)
{
    sim_mesh_conflict c = {.found = 1, .on = on, .key = key, .a = event_cmp(&x, &y) <= 0 ? x : y,
                  .b = event_cmp(&x, &y) <= 0 ? y : x};
    int better = !r->found.found;
    if (!better) {
        int k = with_kernel(&c) - with_kernel(&r->found);
        if (!k) k = event_cmp(&c.a, &r->found.a);
        if (!k) k = event_cmp(&c.b, &r->found.b);
        if (!k) k = (c.on > r->found.on) - (c.on < r->found.on);
        better = k < 0;
    }
    if (better) r->found = c;
}

static sim_mesh_event event_of(const landed *e)
{
    sim_mesh_event v = {.device = e->from, .kind = e->local};
    copy_point(v.point, sizeof v.point, e->point);
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

/* The first position of set's sorted index whose region starts at or after lo. */
static int first_at(const land_set *set, uintptr_t lo)
{
    int a = 0, b = set->n;
    while (a < b) {
        int m = (a + b) / 2;
        if (set->e[set->by_lo[m]].lo < lo) a = m + 1;
        else b = m;
    }
    return a;
}

/* Where to look for regions overlapping [lo, hi): from the first that may start before lo. */
static int overlap_from(const land_set *set, uintptr_t lo)
{
    return first_at(set, lo > set->max_len ? lo - set->max_len : 0);
}

/* Queue a region on its semaphore's pending list; 0 when out of memory (then never received: not tracked
 * as received either, so it cannot hide a race, only report one it should not; an out-of-memory run fails
 * anyway). */
static void pend_on(sim_mesh_race *r, const void *cell, int device, int id, uint32_t gen)
{
    semvec *s = sem_of(r, cell);
    if (!s) return;
    if (s->pn == s->pcap) {
        if (s->ph > 0) { /* room at the front: slide down */
            memmove(s->p, s->p + s->ph, (size_t)(s->pn - s->ph) * sizeof *s->p);
            s->pn -= s->ph, s->ph = 0;
        }
        if (s->pn == s->pcap) {
            int cap = s->pcap ? 2 * s->pcap : 8;
            pend *p = realloc(s->p, (size_t)cap * sizeof *p);
            if (!p) return;
            s->p = p, s->pcap = cap;
        }
    }
    s->p[s->pn++] = (pend){device, id, gen};
}

/* Room for one more region in set: grow the slab, the index and the free
 * list when every slot is live. 0 when out of memory. */
static int room(land_set *set)
{
    if (set->n_free || set->n < set->cap) return 1;
    int cap = set->cap ? 2 * set->cap : 8;
    landed *g = realloc(set->e, (size_t)cap * sizeof *g);
    if (g) set->e = g, sim_hugepages(g, (size_t)cap * sizeof *g);
    int *idx = g ? realloc(set->by_lo, (size_t)cap * sizeof *idx) : NULL;
    if (idx) set->by_lo = idx;
    int *fr = idx ? realloc(set->free_ids, (size_t)cap * sizeof *fr) : NULL;
    if (fr) set->free_ids = fr;
    if (!fr) return 0;
    for (int i = set->cap; i < cap; i++) set->e[i] = (landed){0}, set->free_ids[set->n_free++] = cap - 1 - (i - set->cap);
    set->cap = cap;
    return 1;
}

/* e now owns its bytes on device `to`: drop the regions it covers whole.
 * The index is mended in one pass: the regions kept stay in order, e goes
 * after those that start where it does (landing order), and when e takes
 * the place of a region it covers (a ring lands each chunk where the last
 * one was) nothing after it moves. 0 (also when out of memory: then not
 * tracked; no race is invented). */
static int record(sim_mesh_race *r, land_set *set, int to, const landed *e, const char *point)
{
    int start = first_at(set, e->lo), rd = start, w = start;
    for (; rd < set->n && set->e[set->by_lo[rd]].lo < e->hi; rd++) {
        landed *l = &set->e[set->by_lo[rd]];
        if (l->hi > e->hi) { /* overlapped, not covered: kept */
            set->by_lo[w++] = set->by_lo[rd];
            continue;
        }
        l->live = 0, l->gen++;
        set->free_ids[set->n_free++] = set->by_lo[rd];
    }
    int at = start;
    while (at < w && set->e[set->by_lo[at]].lo == e->lo) at++; /* after equal starts: landing order */
    if (rd > w) { /* [w, rd) is free now: close it to the one slot e takes at `at` */
        memmove(set->by_lo + at + 1, set->by_lo + at, (size_t)(w - at) * sizeof *set->by_lo);
        if (rd > w + 1) memmove(set->by_lo + w + 1, set->by_lo + rd, (size_t)(set->n - rd) * sizeof *set->by_lo);
        set->n -= rd - w - 1;
    } else {
        if (!room(set)) return 0;
        memmove(set->by_lo + at + 1, set->by_lo + at, (size_t)(set->n - at) * sizeof *set->by_lo);
        set->n++;
    }
    int id = set->free_ids[--set->n_free];
    uint32_t gen = set->e[id].gen;
    set->e[id] = *e;
    set->e[id].gen = gen, set->e[id].live = 1;
    set->e[id].point = sim_points_keep(&r->points, e->from, point);
    set->by_lo[at] = id;
    if (e->hi - e->lo > set->max_len) set->max_len = e->hi - e->lo;
    if (e->unreceived > 0) pend_on(r, e->recv, to, id, gen);
    return 0;
}

/* A local copy's side [lo, hi) (kind 1 reads, 2 writes) against the copies
 * that landed here and are not received yet. */
static int local_side(sim_mesh_race *r, int device, uintptr_t lo, uintptr_t hi, int kind, const char *point)
{
    const land_set *set = &r->land[device];
    sim_mesh_event me = {.device = device, .kind = kind};
    copy_point(me.point, sizeof me.point, point);
    int raced = 0;
    for (int pos = overlap_from(set, lo); pos < set->n && set->e[set->by_lo[pos]].lo < hi; pos++) {
        const landed *l = &set->e[set->by_lo[pos]];
        if (lo < l->hi && !l->local && !l->received && l->from != device) {
            note(r, device, lo > l->lo ? lo : l->lo, event_of(l), me);
            raced = 1;
        }
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
    uint32_t epoch = tick(r, device); /* both sides: one copy */
    for (int side = 0; side < 2; side++)
        if (span[2 * side] < span[2 * side + 1])
            record(r, &r->land[device], device, &(landed){.lo = span[2 * side], .hi = span[2 * side + 1], .from = device,
                                        .local = 1 + side, .epoch = epoch, .recv = sem, .unreceived = bytes}, point);
    return raced;
}

int sim_mesh_race_heard(const sim_mesh_race *r, int from, int to)
{
    return r && r->clock[(size_t)from * (size_t)r->n + (size_t)to] > 0;
}

int sim_mesh_race_copy(sim_mesh_race *r, int from, int to, uintptr_t lo, uintptr_t hi, const void *recv,
                       int64_t bytes, const char *point)
{
    if (!r) return 0;
    tick(r, from); /* the copy is an event of its sender */
    return sim_mesh_race_landed(r, from, to, lo, hi, recv, bytes, point);
}

int sim_mesh_race_landed(sim_mesh_race *r, int from, int to, uintptr_t lo, uintptr_t hi, const void *recv,
                         int64_t bytes, const char *point)
{
    if (!r) return 0;
    uint32_t *mine = r->clock + (size_t)from * (size_t)r->n, epoch = mine[from];
    sim_mesh_event me = {.device = from, .kind = 0};
    copy_point(me.point, sizeof me.point, point);
    const land_set *set = &r->land[to];
    int raced = 0;
    for (int pos = overlap_from(set, lo); pos < set->n && set->e[set->by_lo[pos]].lo < hi; pos++) {
        const landed *l = &set->e[set->by_lo[pos]];
        if (lo < l->hi && unordered(mine, to, l)) {
            note(r, to, lo > l->lo ? lo : l->lo, event_of(l), me);
            raced = 1;
        }
    }
    const land_set *acc = &r->acc[to];
    for (int pos = overlap_from(acc, lo); pos < acc->n && acc->e[acc->by_lo[pos]].lo < hi; pos++) {
        const landed *l = &acc->e[acc->by_lo[pos]];
        if (lo < l->hi && mine[to] < l->epoch) { /* the sender never saw the kernel done with these bytes */
            note(r, to, lo > l->lo ? lo : l->lo, event_of(l), me);
            raced = 1;
        }
    }
    record(r, &r->land[to], to, &(landed){.lo = lo, .hi = hi, .from = from, .epoch = epoch, .recv = recv, .unreceived = bytes},
           point);
    return raced;
}

int sim_mesh_race_access(sim_mesh_race *r, int device, uintptr_t lo, uintptr_t hi, int write, const char *point)
{
    if (!r || lo >= hi) return 0;
    int kind = write ? KIND_KERNEL_WRITE : KIND_KERNEL_READ;
    int raced = local_side(r, device, lo, hi, kind, point); /* a copy landed here and is not received yet */
    uint32_t epoch = row_of(r, device)[device] + 1;           /* closed by the device's next event */
    record(r, &r->acc[device], device, &(landed){.lo = lo, .hi = hi, .from = device, .local = kind, .epoch = epoch},
           point);
    r->dirty[device] = 1;
    return raced;
}

const sim_mesh_conflict *sim_mesh_race_found(const sim_mesh_race *r) { return r && r->found.found ? &r->found : NULL; }

int sim_mesh_race_devices(const sim_mesh_race *r) { return r ? r->n : 0; }

void sim_mesh_race_clock(sim_mesh_race *r, int device, int tick_it, uint32_t *out)
{
    if (tick_it || r->dirty[device]) tick(r, device); /* what it sends carries its accesses before */
    memcpy(out, row_of(r, device), (size_t)r->n * sizeof *out);
}

void sim_mesh_race_learn(sim_mesh_race *r, int device, const uint32_t *clock)
{
    memcpy(changed(r, device), clock, (size_t)r->n * sizeof *clock);
}

void sim_mesh_race_consider(sim_mesh_race *r, const sim_mesh_conflict *c)
{
    if (r && c && c->found) note(r, c->on, c->key, c->a, c->b);
}
