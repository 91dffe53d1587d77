/* sim/timing/mesh_sched.h: which of a mesh's cores the replay asks at an
 * instant (mesh_act in timing.c).
 *
 * Passing over every core at every instant, as act_all does, a mesh
 * cannot afford: a multislice run has millions of instants (copies that
 * share a host's NIC end at times of their own) and a thousand cores,
 * nearly all waiting. mesh_act passes over the cores that can act: those
 * whose wake-up time has come (a heap), and those waiting on their device
 * whose device has news (an add to its semaphores, a transfer of its own
 * that ended: sim_credits_mark); a waiting core asked again without news
 * would find the same wait. It passes again while a core acted (a signal
 * can let another go at the same instant). Cores act in index order
 * within a pass, and a core readied during a pass acts in it if its index
 * is past the one acting (a bitmap walked upward), as passes over every
 * core in index order would.
 *
 *     mesh_sched m;
 *     mesh_sched_init(&m, n_cores, n_devices);
 *     ready_set(&m, i), m.running++;      // every core that runs
 *     heap_push(&m, wake, i);             // i acts again at wake
 *     take_news(&m, credits);             // the waiters of devices with news
 *     mesh_sched_free(&m);
 *
 * Only timing.c includes it (static inline: called at every event).
 */
#ifndef TILESIM_TIMING_MESH_SCHED_H
#define TILESIM_TIMING_MESH_SCHED_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "timing.h"

typedef struct mesh_sched {
    uint64_t *ready;          /* cores to ask at this instant */
    int words;
    double *hk;               /* heap of (wake, core) of the cores whose wake-up is to come */
    int *hv, hn;
    int *wait_head, *wait_next; /* per device: its cores that wait for news */
    int running;              /* cores not done */
} mesh_sched;

static inline int heap_less(const mesh_sched *m, int a, int b)
{
    return m->hk[a] < m->hk[b] || (m->hk[a] == m->hk[b] && m->hv[a] < m->hv[b]);
}

static inline void heap_swap(mesh_sched *m, int a, int b)
{
    double k = m->hk[a];
    int v = m->hv[a];
    m->hk[a] = m->hk[b], m->hv[a] = m->hv[b], m->hk[b] = k, m->hv[b] = v;
}

static inline void heap_push(mesh_sched *m, double wake, int core)
{
    int i = m->hn++;
    m->hk[i] = wake, m->hv[i] = core;
    while (i > 0 && heap_less(m, i, (i - 1) / 2)) heap_swap(m, i, (i - 1) / 2), i = (i - 1) / 2;
}

static inline void heap_pop(mesh_sched *m)
{
    m->hk[0] = m->hk[--m->hn], m->hv[0] = m->hv[m->hn];
    for (int i = 0;;) {
        int l = 2 * i + 1, r = l + 1, s = i;
        if (l < m->hn && heap_less(m, l, s)) s = l;
        if (r < m->hn && heap_less(m, r, s)) s = r;
        if (s == i) break;
        heap_swap(m, i, s), i = s;
    }
}

static inline void ready_set(mesh_sched *m, int i) { m->ready[i >> 6] |= 1ull << (i & 63); }

/* The devices with news: their waiting cores are asked again. */
static inline void take_news(mesh_sched *m, sim_credits *credits)
{
    int d;
    while (sim_credits_news(credits, &d)) {
        for (int i = m->wait_head[d]; i >= 0; i = m->wait_next[i]) ready_set(m, i);
        m->wait_head[d] = -1; /* each waits anew, if it must */
    }
}

/* Room for n cores of n_dev devices, none ready yet (ready_set the cores
 * that run, counting them in running). 0, or -1 out of memory. */
static inline int mesh_sched_init(mesh_sched *m, int n, int n_dev)
{
    memset(m, 0, sizeof *m);
    m->words = (n + 63) / 64;
    m->ready = calloc((size_t)m->words, sizeof *m->ready);
    m->hk = malloc((size_t)n * sizeof *m->hk);
    m->hv = malloc((size_t)n * sizeof *m->hv);
    m->wait_head = malloc((size_t)n_dev * sizeof *m->wait_head);
    m->wait_next = malloc((size_t)n * sizeof *m->wait_next);
    if (!m->ready || !m->hk || !m->hv || !m->wait_head || !m->wait_next) return -1;
    for (int d = 0; d < n_dev; d++) m->wait_head[d] = -1;
    return 0;
}

static inline void mesh_sched_free(mesh_sched *m)
{
    free(m->ready), free(m->hk), free(m->hv), free(m->wait_head), free(m->wait_next);
}

#endif
