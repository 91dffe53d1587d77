/* sim/mesh/mesh_mpi.c: a mesh whose devices run in several processes, over Open
 * MPI (mesh_run.h). Compiled to stubs unless the build defines TILESIM_MPI
 * (`make mpi`); mesh_run.c calls it only when there are several ranks.
 *
 * Rank k runs devices [first_k, first_k + count_k) on its threads, as one
 * process runs all of them. A remote copy or signal to a device of another
 * rank is a message: the copy's elements (packed in order), the offsets of
 * its destination and semaphore from their arguments' bases there, and the
 * sender's vector clock (mesh_race.h). The calling thread of each rank
 * moves the messages while its devices run: it sends what they posted and
 * applies what arrives (the data, then the semaphore's add, as the copy
 * lands), so a device waits for another rank's copy as for a local one.
 * Messages of one sender arrive in the order sent (MPI keeps it).
 *
 * When does the run end? Rank 0 asks every rank, in waves, whether it is
 * idle (each of its devices has ended or waits for a count still short,
 * and nothing is left to send) and how many messages it has sent and
 * applied. Two waves in a row in which every rank is idle and the counts
 * are equal and unchanged mean no message is in flight and none can ever
 * be sent again (a rank becomes busy only by receiving one). Then the run
 * ends: every device done, or a deadlock, whose message is built on every
 * rank from every stuck device's wait.
 *
 * At the end (mesh_mpi_end.c) the races each rank found meet on every
 * rank, and the devices' reports and timing records meet on rank 0.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../call/core.h"
#include "mesh_run.h"

#include "mesh_mpi.h"

#ifdef TILESIM_MPI

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}


static int rank_of(const mesh_run *r, int device)
{
    int k = (int)((int64_t)device * r->ranks / r->n);
    while (k + 1 < r->ranks && first_of(r, k + 1) <= device) k++;
    while (k > 0 && first_of(r, k) > device) k--;
    return k;
}

int sim_mesh_mpi_agree(mesh_run *r, int ok)
{
    (void)r;
    int all = ok;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all;
}

/* counts and displacements of each rank's block of devices, `each` bytes a device */
static void blocks(const mesh_run *r, size_t each, int *counts, int *displs)
{
    for (int k = 0; k < r->ranks; k++) {
        displs[k] = (int)((size_t)first_of(r, k) * each);
        counts[k] = (int)((size_t)(first_of(r, k + 1) - first_of(r, k)) * each);
    }
}

int sim_mesh_mpi_begin(mesh_run *r, int status)
{
    int worst = status;
    MPI_Allreduce(&status, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (worst) return status ? status : worst;
    struct sim_mesh_mpi *m = r->mpi = calloc(1, sizeof *m);
    int *counts = calloc((size_t)r->ranks, sizeof *counts), *displs = calloc((size_t)r->ranks, sizeof *displs);
    int ok = sim_mesh_mpi_agree(r, m && counts && displs);
    if (ok) { /* every device's argument bases, each in its own process (one core a device across ranks) */
        MPI_Comm_dup(MPI_COMM_WORLD, &m->comm);
        blocks(r, (size_t)r->n_args * sizeof *r->arg_base, counts, displs);
        MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_BYTE, r->arg_base, counts, displs, MPI_BYTE, m->comm);
    } else if (m) {
        free(m);
        r->mpi = NULL;
    }
    free(counts);
    free(displs);
    return ok ? PL_OK : PL_ENOMEM;
}

/* A contiguous Ref of src's shape over buf. */
static pl_ref packed(const pl_ref *like, void *buf)
{
    pl_ref t = *like;
    t.data = buf;
    int64_t s = 1;
    for (int d = like->rank - 1; d >= 0; d--) {
        t.stride[d] = s;
        s *= like->shape[d];
    }
    return t;
}

void sim_mesh_mpi_post(mesh_run *r, int from, int to, const pl_ref *src, const pl_ref *dst, int sem_arg,
                       uintptr_t sem_off, int64_t amount, const char *point)
{
    int n_clock = r->race ? sim_mesh_race_devices(r->race) : 0;
    int with_data = dst && !r->cost_only && pl_size(*src) > 0;
    size_t data = with_data ? (size_t)pl_size(*src) * pl_dtype_size(src->dtype) : 0;
    size_t len = sizeof(wire) + (size_t)n_clock * sizeof(uint32_t) + data;
    outmsg *o = calloc(1, sizeof *o);
    char *buf = malloc(len);
    if (!o || !buf || len > (size_t)INT32_MAX) { /* never silently: the receiver would wait forever */
        free(o);
        free(buf);
        snprintf(r->dev[from].overflow, sizeof r->dev[from].overflow,
                 "device %d: out of host memory for a message to device %d in another process", from, to);
        return;
    }
    wire w = {.from = from, .to = to, .sem_arg = sem_arg, .is_copy = dst != NULL, .n_clock = n_clock,
              .has_data = with_data, .sem_off = (int64_t)sem_off, .amount = amount};
    if (dst) {
        w.dst = *dst;
        w.dst_off = (int64_t)((uintptr_t)dst->data - sim_mesh_base(r, to, dst->arg));
    }
    snprintf(w.point, sizeof w.point, "%s", point);
    if (with_data) {
        pl_ref t = packed(src, buf + sizeof(wire) + (size_t)n_clock * sizeof(uint32_t));
        kern_dma_move(&t, src);
    }
    *o = (outmsg){.buf = buf, .len = (int)len, .dest = rank_of(r, to)};
    pthread_mutex_lock(&r->lock);
    if (n_clock) /* a copy is an event of its sender (sim_mesh_race_copy), a signal not */
        sim_mesh_race_clock(r->race, from, dst && pl_size(*dst) > 0, (uint32_t *)(buf + sizeof(wire)));
    memcpy(buf, &w, sizeof w);
    if (r->mpi->queue_tail) r->mpi->queue_tail->next = o;
    else r->mpi->queue = o;
    r->mpi->queue_tail = o;
    pthread_cond_signal(&r->main_cond);
    pthread_mutex_unlock(&r->lock);
}

/* ---- arrival ---------------------------------------------------------------------- */

/* A copy or signal from another process lands on device w->to. */
static void apply(mesh_run *r, const char *buf, int len)
{
    wire w;
    if (len < (int)sizeof w) return;
    memcpy(&w, buf, sizeof w);
    if (!sim_mesh_here(r, w.to) || w.from < 0 || w.from >= r->n) return;
    const uint32_t *clock = (const uint32_t *)(buf + sizeof w);
    const char *data = buf + sizeof w + (size_t)w.n_clock * sizeof(uint32_t);
    int64_t *cell = (int64_t *)(sim_mesh_base(r, w.to, w.sem_arg) + (uintptr_t)w.sem_off);
    pl_ref dst = w.dst;
    dst.data = (void *)(sim_mesh_base(r, w.to, w.dst.arg) + (uintptr_t)w.dst_off);
    int raced = 0;
    if (w.is_copy) /* a block another device filled (P4, M11) */
        sim_mesh_landed(r->dev[w.to].x, dst.arg, (uintptr_t)w.dst_off);
    pthread_mutex_lock(&r->lock);
    if (r->race && w.n_clock == sim_mesh_race_devices(r->race)) {
        sim_mesh_race_learn(r->race, w.from, clock);
        uintptr_t lo, hi;
        if (w.is_copy && pl_size(dst) > 0) {
            kern_ref_span(&dst, &lo, &hi);
            if (sim_mesh_region(r, w.to, dst.arg, &lo, &hi))
                raced = sim_mesh_race_landed(r->race, w.from, w.to, lo, hi, cell, w.amount, w.point);
        }
    }
    pthread_mutex_unlock(&r->lock);
    if (w.has_data && !raced) {
        pl_ref t = packed(&dst, (void *)data);
        kern_dma_move(&dst, &t);
    }
    pthread_mutex_lock(&r->lock);
    if (*cell > INT64_MAX - w.amount)
        snprintf(r->dev[w.to].overflow, sizeof r->dev[w.to].overflow, "a %s from device %d adds %lld to a "
                 "semaphore of device %d that holds %lld: its count would overflow (rule M9)",
                 w.is_copy ? "remote copy" : "signal", w.from, (long long)w.amount, w.to, (long long)*cell);
    else {
        *cell += w.amount;
        if (r->race) sim_mesh_race_added(r->race, w.from, w.to, cell, w.amount);
        sim_mesh_wake_unit(r, w.to);
    }
    r->mpi->applied++;
    pthread_mutex_unlock(&r->lock);
}

/* ---- the calling thread: messages and waves ------------------------------------------ */

/* This rank now (lock held): idle when every device ended or waits for a
 * count still short and nothing is left to send. */
static status here_now(const mesh_run *r, int64_t wave)
{
    status s = {.wave = wave, .sent = r->mpi->sent, .applied = r->mpi->applied, .idle = r->mpi->queue == NULL};
    for (int d = r->first; d < r->first + r->count; d++) {
        const mesh_dev *v = &r->dev[d];
        if (v->done) continue;
        if (v->blocked && *v->cell < v->need) s.blocked++;
        else s.idle = 0;
    }
    return s;
}

static void send_bytes(mesh_run *r, outmsg *o, int tag)
{
    struct sim_mesh_mpi *m = r->mpi;
    MPI_Isend(o->buf, o->len, MPI_BYTE, o->dest, tag, m->comm, &o->req);
    o->next = m->pending;
    m->pending = o;
}

static void send_small(mesh_run *r, int dest, int tag, const void *v, int len)
{
    outmsg *o = calloc(1, sizeof *o);
    char *buf = malloc((size_t)len);
    if (!o || !buf) { /* a few bytes: wait for them instead */
        free(o);
        free(buf);
        MPI_Send(v, len, MPI_BYTE, dest, tag, r->mpi->comm);
        return;
    }
    memcpy(buf, v, (size_t)len);
    *o = (outmsg){.buf = buf, .len = len, .dest = dest};
    send_bytes(r, o, tag);
}

/* Sends that completed are freed; all of them when `all`. */
static void reap(struct sim_mesh_mpi *m, int all)
{
    for (outmsg **p = &m->pending; *p;) {
        int done = 0;
        if (all) MPI_Wait(&(*p)->req, MPI_STATUS_IGNORE), done = 1;
        else MPI_Test(&(*p)->req, &done, MPI_STATUS_IGNORE);
        if (!done) {
            p = &(*p)->next;
            continue;
        }
        outmsg *o = *p;
        *p = o->next;
        free(o->buf);
        free(o);
    }
}

/* Send what the devices posted; 1 if there was something. */
static int flush(mesh_run *r)
{
    pthread_mutex_lock(&r->lock);
    outmsg *o = r->mpi->queue;
    r->mpi->queue = r->mpi->queue_tail = NULL;
    pthread_mutex_unlock(&r->lock);
    int any = o != NULL;
    while (o) {
        outmsg *next = o->next;
        send_bytes(r, o, TAG_DATA);
        r->mpi->sent++;
        o = next;
    }
    return any;
}

static status status_now(mesh_run *r, int64_t wave)
{
    pthread_mutex_lock(&r->lock);
    status s = here_now(r, wave);
    pthread_mutex_unlock(&r->lock);
    return s;
}

/* Rank 0: a wave's answer (its own too). Returns 1 (no deadlock) or 2
 * (deadlock) when the run has ended, else 0. */
static int answer(mesh_run *r, const status *s)
{
    struct sim_mesh_mpi *m = r->mpi;
    if (!m->waving || s->wave != m->wave) return 0;
    m->sum.sent += s->sent, m->sum.applied += s->applied, m->sum.blocked += s->blocked;
    m->sum.idle &= s->idle;
    if (++m->got < r->ranks) return 0;
    m->waving = 0;
    m->last_wave = now_s();
    int quiet = m->sum.idle && m->sum.sent == m->sum.applied;
    if (quiet && m->have_prev && m->prev.sent == m->sum.sent && m->prev.applied == m->sum.applied)
        return m->sum.blocked ? 2 : 1;
    m->have_prev = quiet;
    m->prev = m->sum;
    if (quiet) m->last_wave = 0; /* the confirming wave at once */
    return 0;
}

/* Rank 0: start a wave when idle here and none is under way. */
static int start_wave(mesh_run *r)
{
    struct sim_mesh_mpi *m = r->mpi;
    if (m->waving || now_s() - m->last_wave < 2e-4) return 0;
    status mine = status_now(r, m->wave + 1);
    if (!mine.idle) return 0;
    m->wave++;
    m->waving = 1;
    m->got = 0;
    m->sum = (status){.idle = 1};
    for (int k = 1; k < r->ranks; k++) send_small(r, k, TAG_PROBE, &m->wave, sizeof m->wave);
    return answer(r, &mine);
}

/* Receive and handle every message waiting; returns the end (answer()) */
static int receive(mesh_run *r, int *busy)
{
    int flag = 0, end = 0;
    MPI_Status st;
    while (!end && MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, r->mpi->comm, &flag, &st) == MPI_SUCCESS && flag) {
        int len = 0;
        MPI_Get_count(&st, MPI_BYTE, &len);
        char *buf = malloc(len > 0 ? (size_t)len : 1);
        if (!buf) return end; /* try again later */
        MPI_Recv(buf, len, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, r->mpi->comm, MPI_STATUS_IGNORE);
        *busy = 1;
        if (st.MPI_TAG == TAG_DATA) apply(r, buf, len);
        else if (st.MPI_TAG == TAG_PROBE && len == (int)sizeof(int64_t)) {
            int64_t wave;
            memcpy(&wave, buf, sizeof wave);
            status s = status_now(r, wave);
            send_small(r, 0, TAG_STATUS, &s, sizeof s);
        } else if (st.MPI_TAG == TAG_STATUS && len == (int)sizeof(status)) {
            status s;
            memcpy(&s, buf, sizeof s);
            end = answer(r, &s);
        } else if (st.MPI_TAG == TAG_END && len == (int)sizeof(int)) memcpy(&end, buf, sizeof end);
        free(buf);
    }
    return end;
}

/* Every rank builds the deadlock message from every stuck device's wait. */
static void deadlock(mesh_run *r)
{
    stuck *all = calloc((size_t)r->n, sizeof *all);
    int *counts = calloc((size_t)r->ranks, sizeof *counts), *displs = calloc((size_t)r->ranks, sizeof *displs);
    int ok = sim_mesh_mpi_agree(r, all && counts && displs);
    pthread_mutex_lock(&r->lock);
    for (int d = r->first; ok && d < r->first + r->count; d++) {
        all[d].blocked = r->dev[d].blocked && !r->dev[d].done;
        all[d].held = all[d].blocked ? *r->dev[d].cell : r->dev[d].held; /* now, not when it began to wait */
        if (all[d].blocked) sim_mesh_dev_what(&r->dev[d]);
        memcpy(all[d].what, r->dev[d].what, sizeof all[d].what);
    }
    pthread_mutex_unlock(&r->lock);
    if (ok) {
        blocks(r, sizeof *all, counts, displs);
        MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_BYTE, all, counts, displs, MPI_BYTE, r->mpi->comm);
    }
    pthread_mutex_lock(&r->lock);
    for (int d = 0; ok && d < r->n; d++) {
        if (sim_mesh_here(r, d)) continue; /* its own entry is live */
        r->dev[d].blocked = (int)all[d].blocked;
        r->dev[d].held = all[d].held;
        memcpy(r->dev[d].what, all[d].what, sizeof r->dev[d].what);
        r->dev[d].what[sizeof r->dev[d].what - 1] = '\0';
    }
    sim_mesh_declare_deadlock(r);
    if (!ok) snprintf(r->deadlock_msg, sizeof r->deadlock_msg, "deadlock across the mesh (rule M10); out of host "
                      "memory to list the stuck devices");
    pthread_mutex_unlock(&r->lock);
    free(all);
    free(counts);
    free(displs);
}

void sim_mesh_mpi_progress(mesh_run *r)
{
    int end = 0;
    while (!end) {
        int busy = flush(r);
        reap(r->mpi, 0);
        end = receive(r, &busy);
        if (!end && r->rank == 0) end = start_wave(r);
        if (end && r->rank == 0)
            for (int k = 1; k < r->ranks; k++) send_small(r, k, TAG_END, &end, sizeof end);
        if (end || busy) continue;
        struct timespec t; /* nothing came: sleep until a device posts or blocks, or 200 us */
        clock_gettime(CLOCK_REALTIME, &t);
        t.tv_nsec += 200000;
        if (t.tv_nsec >= 1000000000L) t.tv_sec++, t.tv_nsec -= 1000000000L;
        pthread_mutex_lock(&r->lock);
        if (!r->mpi->queue) pthread_cond_timedwait(&r->main_cond, &r->lock, &t);
        pthread_mutex_unlock(&r->lock);
    }
    reap(r->mpi, 1);
    if (end == 2) deadlock(r);
}

void sim_mesh_mpi_free(mesh_run *r)
{
    if (!r->mpi) return;
    reap(r->mpi, 1);
    for (outmsg *o = r->mpi->queue; o;) {
        outmsg *next = o->next;
        free(o->buf);
        free(o);
        o = next;
    }
    MPI_Comm_free(&r->mpi->comm);
    free(r->mpi);
    r->mpi = NULL;
}

#else /* one process: mesh_run.c never has other ranks */

int sim_mesh_mpi_agree(mesh_run *r, int ok) { return (void)r, ok; }
int sim_mesh_mpi_begin(mesh_run *r, int status) { return (void)r, status; }
void sim_mesh_mpi_post(mesh_run *r, int from, int to, const pl_ref *src, const pl_ref *dst, int sem_arg,
                       uintptr_t sem_off, int64_t amount, const char *point)
{
    (void)r, (void)from, (void)to, (void)src, (void)dst, (void)sem_arg, (void)sem_off, (void)amount, (void)point;
}
void sim_mesh_mpi_progress(mesh_run *r) { (void)r; }
void sim_mesh_mpi_free(mesh_run *r) { (void)r; }

#endif
