/* sim/mesh/race_queue.c: the race detector's events, queued by the walk
 * and applied on a thread of their own (race_queue.h says why).
 *
 * One producer at a time (the mesh's lock orders them) appends to blocks
 * of events and publishes them, 64 at a time and at the end, with a
 * release store of the block's count; the detector's thread reads with
 * acquire loads, applies, and hands the blocks it is done with back. The grid points the events name are kept once
 * per device and step, as the detector keeps them, in chunks the queue
 * frees at the end. An idle detector sleeps on a condition variable, with
 * a timeout, so a wake-up that crossed its going to sleep costs at most a
 * millisecond, never a hang.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "race_queue.h"

#if defined(__x86_64__) || defined(__i386__)
#define PAUSE() __builtin_ia32_pause()
#else
#define PAUSE() ((void)0)
#endif

enum { EV_COPY, EV_LOCAL, EV_ADDED, EV_TAKEN, EV_ACCESS };

typedef struct rq_event {
    int kind, a, b;        /* copy: from, to; local: device; added: device, owner; taken: device; access: device,
                              write */
    const void *cell;      /* copy: recv; local: sem; added, taken: the semaphore's cell */
    int64_t amount;        /* copy, local: bytes; added, taken: the amount */
    uintptr_t span[4];     /* copy: lo, hi; local: the read span, the written span */
    const char *point;     /* copy, local: interned */
} rq_event;

#define BLOCK 4096
#define BATCH 64           /* events the producer publishes at once: one store the detector sees, not 64 */

typedef struct rq_block {
    _Atomic(struct rq_block *) next;
    atomic_int n;          /* events published */
    rq_event e[BLOCK];
} rq_block;

/* The producer's fields and the detector's on cache lines of their own: a
 * field both write at every event would move between the host's cores at
 * every event. */
struct sim_race_queue {
    sim_mesh_race *race;
    pthread_t tid;
    pthread_mutex_t m;
    pthread_cond_t wake;   /* the detector sleeps here when there is nothing to apply */
    pthread_cond_t room;   /* a producer too far ahead sleeps here */
    long long max;         /* events queued at most */
    rq_block *spare;       /* blocks the detector is done with, for the producer again (under m) */
    int n_spare;
    _Alignas(64) atomic_int sleeping, closing, full;
    _Alignas(64) atomic_llong applied; /* the detector's */
    rq_block *head;
    int at;
    _Alignas(64) long long made; /* the producer's, under the mesh's lock */
    long long seen;        /* applied, as the producer last read it (it only grows) */
    rq_block *tail;
    int tail_n;            /* events in tail, published or not */
    sim_points points;     /* the events' grid points, kept until the end */
};

static void apply(sim_mesh_race *r, const rq_event *e)
{
    switch (e->kind) {
    case EV_COPY:
        sim_mesh_race_copy(r, e->a, e->b, e->span[0], e->span[1], e->cell, e->amount, e->point);
        break;
    case EV_LOCAL: sim_mesh_race_local(r, e->a, e->span, e->cell, e->amount, e->point); break;
    case EV_ACCESS: sim_mesh_race_access(r, e->a, e->span[0], e->span[1], e->b, e->point); break;
    case EV_ADDED: sim_mesh_race_added(r, e->a, e->b, e->cell, e->amount); break;
    default: sim_mesh_race_taken(r, e->a, e->cell, e->amount); break;
    }
}

static void sleep_a_little(pthread_cond_t *c, pthread_mutex_t *m)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_nsec += 1000000;
    if (t.tv_nsec >= 1000000000) t.tv_sec++, t.tv_nsec -= 1000000000;
    pthread_cond_timedwait(c, m, &t);
}

/* Apply what is published; 1 when it applied any. */
static int drain(sim_race_queue *q)
{
    int did = 0;
    for (;;) {
        int n = atomic_load_explicit(&q->head->n, memory_order_acquire);
        if (q->at < n) {
            int from = q->at;
            for (; q->at < n; q->at++) apply(q->race, &q->head->e[q->at]);
            atomic_fetch_add_explicit(&q->applied, n - from, memory_order_release);
            if (atomic_load(&q->full)) { /* a producer waits for room */
                pthread_mutex_lock(&q->m);
                pthread_cond_broadcast(&q->room);
                pthread_mutex_unlock(&q->m);
            }
            did = 1;
            continue;
        }
        rq_block *next = atomic_load_explicit(&q->head->next, memory_order_acquire);
        if (q->at < BLOCK || !next) return did;
        rq_block *done = q->head;
        q->head = next, q->at = 0;
        pthread_mutex_lock(&q->m); /* once a block: its 4096 events pay for it */
        if (q->n_spare < 8) {
            atomic_store_explicit(&done->next, q->spare, memory_order_relaxed);
            q->spare = done, q->n_spare++, done = NULL;
        }
        pthread_mutex_unlock(&q->m);
        free(done);
    }
}

static void *detector_main(void *p)
{
    sim_race_queue *q = p;
    for (int idle = 0;;) {
        if (drain(q)) {
            idle = 0;
            continue;
        }
        if (atomic_load(&q->closing) && !drain(q)) break;
        if (++idle < 4) { /* the walk may be about to publish: a short look again, not a system call */
            for (int k = 0; k < 256; k++) PAUSE();
            continue;
        }
        idle = 0;
        pthread_mutex_lock(&q->m);
        atomic_store(&q->sleeping, 1);
        if (!atomic_load(&q->closing)) sleep_a_little(&q->wake, &q->m);
        atomic_store(&q->sleeping, 0);
        pthread_mutex_unlock(&q->m);
    }
    return NULL;
}

sim_race_queue *sim_race_queue_start(sim_mesh_race *race, long long max_events)
{
    sim_race_queue *q = race ? calloc(1, sizeof *q) : NULL;
    if (!q) return NULL;
    q->race = race;
    q->max = max_events > 0 ? max_events : 1;
    q->head = q->tail = calloc(1, sizeof *q->tail);
    if (!q->head || sim_points_init(&q->points, sim_mesh_race_devices(race))) {
        sim_points_free(&q->points), free(q->head), free(q);
        return NULL;
    }
    pthread_mutex_init(&q->m, NULL);
    pthread_cond_init(&q->wake, NULL);
    pthread_cond_init(&q->room, NULL);
    if (pthread_create(&q->tid, NULL, detector_main, q) != 0) {
        pthread_mutex_destroy(&q->m);
        pthread_cond_destroy(&q->wake);
        pthread_cond_destroy(&q->room);
        sim_points_free(&q->points), free(q->head), free(q);
        return NULL;
    }
    return q;
}

static void wake_detector(sim_race_queue *q)
{
    pthread_mutex_lock(&q->m);
    pthread_cond_signal(&q->wake);
    pthread_mutex_unlock(&q->m);
}

/* What tail holds, for the detector to see. */
static void flush(sim_race_queue *q)
{
    atomic_store_explicit(&q->tail->n, q->tail_n, memory_order_release);
}

/* Until the detector applied all but `ahead` of the events made. */
static void wait_for_detector(sim_race_queue *q, long long ahead)
{
    flush(q);
    pthread_mutex_lock(&q->m);
    atomic_store(&q->full, 1);
    pthread_cond_signal(&q->wake);
    while (q->made - (q->seen = atomic_load(&q->applied)) > ahead) sleep_a_little(&q->room, &q->m);
    atomic_store(&q->full, 0);
    pthread_mutex_unlock(&q->m);
}

/* The next event's slot, published by publish(); NULL when out of memory
 * (the caller applies the event itself: apply_now). A walk that is max
 * events ahead of the detector waits for it first. */
static rq_event *slot(sim_race_queue *q)
{
    if (q->made - q->seen >= q->max && q->made - (q->seen = atomic_load_explicit(&q->applied, memory_order_acquire)) >= q->max)
        wait_for_detector(q, q->max - 1);
    if (q->tail_n == BLOCK) {
        pthread_mutex_lock(&q->m);
        rq_block *b = q->spare;
        if (b) q->spare = atomic_load_explicit(&b->next, memory_order_relaxed), q->n_spare--;
        pthread_mutex_unlock(&q->m);
        if (b) {
            atomic_store_explicit(&b->next, NULL, memory_order_relaxed);
            atomic_store_explicit(&b->n, 0, memory_order_relaxed);
        } else if (!(b = calloc(1, sizeof *b))) return NULL;
        flush(q);
        atomic_store_explicit(&q->tail->next, b, memory_order_release);
        q->tail = b;
        q->tail_n = 0;
    }
    return &q->tail->e[q->tail_n];
}

static void publish(sim_race_queue *q)
{
    q->tail_n++;
    q->made++;
    if (q->made % BATCH) return;
    flush(q);
    /* a sleeping detector wakes by itself within a millisecond; it is woken
     * early only once a batch waits, not at every event */
    if (atomic_load_explicit(&q->sleeping, memory_order_relaxed) &&
        q->made - atomic_load_explicit(&q->applied, memory_order_relaxed) >= 16 * BATCH)
        wake_detector(q);
}

/* Out of memory for a block: the detector applies every earlier event
 * first, then this one is applied here (the detector, with nothing to
 * apply, holds no state of the race's meanwhile). */
static void apply_now(sim_race_queue *q, const rq_event *e)
{
    wait_for_detector(q, 0);
    apply(q->race, e);
}

static void put(sim_race_queue *q, const rq_event *e)
{
    rq_event *s = slot(q);
    if (!s) {
        apply_now(q, e);
        return;
    }
    *s = *e;
    publish(q);
}

void sim_race_queue_copy(sim_race_queue *q, int from, int to, uintptr_t lo, uintptr_t hi, const void *recv,
                         int64_t bytes, const char *point)
{
    put(q, &(rq_event){.kind = EV_COPY, .a = from, .b = to, .cell = recv, .amount = bytes, .span = {lo, hi},
                       .point = sim_points_keep(&q->points, from, point)});
}

void sim_race_queue_local(sim_race_queue *q, int device, const uintptr_t *span, const void *sem, int64_t bytes,
                          const char *point)
{
    put(q, &(rq_event){.kind = EV_LOCAL, .a = device, .cell = sem, .amount = bytes,
                       .span = {span[0], span[1], span[2], span[3]}, .point = sim_points_keep(&q->points, device, point)});
}

void sim_race_queue_access(sim_race_queue *q, int device, uintptr_t lo, uintptr_t hi, int write, const char *point)
{
    put(q, &(rq_event){.kind = EV_ACCESS, .a = device, .b = write, .span = {lo, hi},
                       .point = sim_points_keep(&q->points, device, point)});
}

void sim_race_queue_added(sim_race_queue *q, int device, int owner, const void *cell, int64_t amount)
{
    put(q, &(rq_event){.kind = EV_ADDED, .a = device, .b = owner, .cell = cell, .amount = amount});
}

void sim_race_queue_taken(sim_race_queue *q, int device, const void *cell, int64_t amount)
{
    put(q, &(rq_event){.kind = EV_TAKEN, .a = device, .cell = cell, .amount = amount});
}

void sim_race_queue_finish(sim_race_queue *q)
{
    if (!q) return;
    flush(q);
    atomic_store(&q->closing, 1);
    wake_detector(q);
    pthread_join(q->tid, NULL);
    for (rq_block *b = q->head, *next; b; b = next) next = atomic_load(&b->next), free(b);
    for (rq_block *b = q->spare, *next; b; b = next) next = atomic_load(&b->next), free(b);
    sim_points_free(&q->points);
    pthread_mutex_destroy(&q->m);
    pthread_cond_destroy(&q->wake);
    pthread_cond_destroy(&q->room);
    free(q);
}
