/* sim/mesh/mesh_hooks.c: how the kernel of one TensorCore of a mesh device
 * reaches the others (kern_mesh_ops, kernel/context.h; rules M11, M13):
 * the mesh's lock, waits that block on a condition variable per core and
 * the deadlock they may add up to, the same Ref on another core or device,
 * and the race detector's events (mesh_race.h). pl_mesh_call (mesh_run.c)
 * hands sim_mesh_hooks to every device's call. A hook names a core by its
 * unit, device x cores + core.
 */
#include <sched.h>
#include <stdlib.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../call/core.h"
#include "mesh_fiber.h"
#include "mesh_run.h"

static void run_lock(void *p) { pthread_mutex_lock(&((mesh_run *)p)->lock); }
static void run_unlock(void *p) { pthread_mutex_unlock(&((mesh_run *)p)->lock); }
/* A semaphore of `device` grew (lock held): wake it only when the count it waits for is now there, so a
 * core is not switched in to find its wait still short (issue 26: context switches were most of a big
 * mesh's host time). A deadlock or a core that ended wakes every core (sim_mesh_wake_all). */
static void run_wake(void *p, int device)
{
    mesh_run *r = p;
    mesh_dev *d = &r->dev[device];
    if (!d->blocked || *d->cell < d->need) return;
    if (r->fibers) sim_fiber_ready(r, d);
    else pthread_cond_signal(&d->cond);
}

void sim_mesh_wake_unit(mesh_run *r, int unit)
{
    mesh_dev *d = &r->dev[unit];
    if (!r->fibers) pthread_cond_broadcast(&d->cond);
    else if (d->blocked) sim_fiber_ready(r, d);
}

/* Every device looks again (a deadlock, a device that ended). */
void sim_mesh_wake_all(mesh_run *r)
{
    for (int u = r->first * r->cores; u < (r->first + r->count) * r->cores; u++) sim_mesh_wake_unit(r, u);
}

const char *sim_mesh_unit_name(const mesh_run *r, int unit, char *buf, size_t n)
{
    if (r->cores > 1) snprintf(buf, n, "core %d of device %d", unit % r->cores, unit / r->cores);
    else snprintf(buf, n, "device %d", unit);
    return buf;
}

void sim_mesh_declare_deadlock(mesh_run *r)
{
    r->deadlock = 1;
    size_t n = sizeof r->deadlock_msg;
    int at = snprintf(r->deadlock_msg, n, "deadlock across the mesh: every device still running waits for a copy or "
                      "signal that no device can send any more (rule M10):");
    int listed = 0, blocked = 0;
    char who[48];
    for (int u = 0; u < r->units; u++) blocked += r->dev[u].blocked != 0;
    for (int u = 0; u < r->units && at > 0 && (size_t)at < n; u++) {
        if (!r->dev[u].blocked) continue;
        if (listed++ == 12) {
            at += snprintf(r->deadlock_msg + at, n - (size_t)at, "; and %d more", blocked - 12);
            break;
        }
        sim_mesh_dev_what(&r->dev[u]);
        /* what its semaphore holds now, not when it began to wait: signals may have come since, short of
         * the count; across processes each rank sent its devices' counts (mesh_mpi.c) */
        if (r->ranks <= 1) r->dev[u].held = *r->dev[u].cell;
        at += snprintf(r->deadlock_msg + at, n - (size_t)at, "%s %s %s, holds %lld", listed > 1 ? ";" : "",
                       sim_mesh_unit_name(r, u, who, sizeof who), r->dev[u].what, (long long)r->dev[u].held);
    }
    sim_mesh_wake_all(r);
}

/* Every device still running is blocked on a wait that is still short (lock
 * held): a deadlock. A device woken but not yet running again counts as
 * blocked, so the counts alone would see deadlocks that are not. Across
 * processes, the calling thread of each looks (mesh_mpi.c): it is woken. */
void sim_mesh_find_deadlock(mesh_run *r)
{
    if (r->ranks > 1) {
        pthread_cond_signal(&r->main_cond);
        return;
    }
    if (r->deadlock || r->alive == 0 || r->blocked < r->alive) return;
    for (int u = 0; u < r->units; u++)
        if (r->dev[u].blocked && *r->dev[u].cell >= r->dev[u].need) return;
    sim_mesh_declare_deadlock(r);
}

void sim_mesh_dev_what(mesh_dev *d)
{
    if (!d->wait.c) return;
    kern_wait_format(&d->wait, d->what, sizeof d->what);
    d->wait.c = NULL;
}

static int run_block(void *p, int device, const int64_t *cell, int64_t need, const kern_wait *what, char *msg,
                     size_t n)
{
    mesh_run *r = p;
    mesh_dev *d = &r->dev[device];
    d->blocked = 1;
    d->cell = cell;
    d->need = need;
    d->held = *cell;
    d->wait = *what; /* in words only if a deadlock is declared: waits block by the million */
    r->blocked++;
    sim_mesh_find_deadlock(r);
    while (*cell < need && !r->deadlock) {
        if (r->fibers) sim_fiber_park(r, d); /* until readied: the pool runs others meanwhile */
        else pthread_cond_wait(&d->cond, &r->lock);
    }
    r->blocked--;
    d->blocked = 0;
    if (*cell >= need) return 0;
    snprintf(msg, n, "%s", r->deadlock_msg);
    return 1;
}

/* Can other devices name argument `arg`? An ANY operand or a scratch
 * buffer, whose place is fixed, or a pipelined VMEM block (an input's or
 * an output's buffers: the distributed Pallas guide copies into the other
 * device's out_ref); not SMEM prefetch or an SMEM block. */
int sim_mesh_reachable(const sim_exec *x, int arg)
{
    int n_ops = x->plan.n_ops;
    if (arg < 0 || arg >= n_ops + x->plan.call->n_scratch) return 0;
    if (arg >= n_ops) return 1;
    const sim_operand *op = &x->plan.ops[arg];
    return op->role != PL_ROLE_PREFETCH && (!op->pipelined || op->space == PL_VMEM);
}

uintptr_t sim_mesh_arg_base(const sim_exec *x, int core, int arg)
{
    const sim_core *k = x->cores[core];
    /* a pipelined block: its slots, one after the other, so that a Ref into
     * slot s on one device is slot s on the other: the same VMEM address,
     * as on the chip, whichever block that device holds there now */
    if (arg < x->plan.n_ops && x->plan.ops[arg].pipelined) return (uintptr_t)k->pipe[arg].slots;
    return (uintptr_t)k->refs[arg].data;
}

/* Every unit's argument bases in one table (mesh_run.h, arg_base). */
int sim_mesh_keep_bases(mesh_run *r)
{
    int n_args = r->dev[0].x->plan.n_ops + r->dev[0].x->plan.call->n_scratch;
    r->arg_base = calloc((size_t)r->units * (size_t)n_args + 1, sizeof *r->arg_base);
    r->arg_reach = calloc((size_t)n_args + 1, 1);
    if (!r->arg_base || !r->arg_reach) return PL_ENOMEM;
    r->n_args = n_args;
    for (int a = 0; a < n_args; a++) r->arg_reach[a] = (unsigned char)sim_mesh_reachable(r->dev[0].x, a);
    for (int u = r->first * r->cores; u < (r->first + r->count) * r->cores; u++)
        for (int a = 0; a < n_args; a++)
            r->arg_base[(size_t)u * (size_t)n_args + (size_t)a] = sim_mesh_arg_base(r->dev[u].x, r->dev[u].core, a);
    return PL_OK;
}

static int reach(const mesh_run *r, int arg) { return arg >= 0 && arg < r->n_args && r->arg_reach[arg]; }

/* r on unit `to`: the same argument, at the same offset from its base
 * (scratch and VMEM blocks are the core's own; HBM is the device's). */
static int run_translate(void *p, int from, int to, const pl_ref *ref, void **out)
{
    mesh_run *r = p;
    int arg = ref->arg;
    if (!reach(r, arg)) return 0;
    /* integers: cost-only ANY bases may be NULL */
    *out = (void *)(sim_mesh_base(r, to, arg) + ((uintptr_t)ref->data - sim_mesh_base(r, from, arg)));
    return 1;
}

static int64_t run_axis(void *p, int device, const char *axis, int64_t *size)
{
    mesh_run *r = p;
    int a = pl_mesh_axis(r->mesh, axis);
    if (a < 0) return -1;
    int64_t coords[PL_MESH_MAX_AXES];
    pl_mesh_coords(r->mesh, device, coords);
    *size = r->mesh->shape[a];
    return coords[a];
}

static int run_device_at(void *p, int device, const int64_t *coords, const char *axis, int64_t index, int *n)
{
    mesh_run *r = p;
    int64_t at[PL_MESH_MAX_AXES];
    *n = r->mesh->rank;
    if (coords) memcpy(at, coords, (size_t)r->mesh->rank * sizeof *at);
    else pl_mesh_coords(r->mesh, device, at);
    if (axis) {
        int a = pl_mesh_axis(r->mesh, axis);
        if (a < 0) return -1;
        at[a] = index;
    }
    for (int a = 0; a < r->mesh->rank; a++)
        if (at[a] < 0 || at[a] >= r->mesh->shape[a]) return -2;
    return pl_mesh_device(r->mesh, at);
}

static void run_perturb(void *p, int device)
{
    mesh_run *r = p;
    if (!r->seed) return;
    for (uint64_t k = sim_splitmix64(&r->dev[device].rng) % 4; k > 0; k--) {
        if (r->fibers) sim_fiber_yield(r, &r->dev[device]);
        else sched_yield();
    }
}

/* A core that read the same count POLL_QUIET times in a row counts as polling (it wakes no one while it
 * only reads); one that reads it POLL_LIMIT times while every other live core is blocked or polling
 * ends in a deadlock: well past any yield schedule, far short of a wait a user would notice. */
enum { POLL_QUIET = 1000, POLL_LIMIT = 100000 };

/* Lock held: the core did something else (added to a semaphore, ended): it may wake others again. */
void sim_mesh_unpoll(mesh_run *r, mesh_dev *d)
{
    d->polls = 0;
    if (d->polling) d->polling = 0, r->polling--;
}

static int run_poll(void *p, int unit, const int64_t *cell, int64_t value)
{
    mesh_run *r = p;
    mesh_dev *d = &r->dev[unit];
    pthread_mutex_lock(&r->lock);
    if (cell != d->poll_cell || value != d->poll_value) sim_mesh_unpoll(r, d);
    d->poll_cell = cell, d->poll_value = value;
    if (++d->polls == POLL_QUIET) d->polling = 1, r->polling++;
    /* the others that could change it: none when every other live core is blocked or polling (across
     * processes, another rank's may run: never a verdict there) */
    int alone = r->ranks <= 1 && r->blocked + r->polling - d->polling >= r->alive - 1;
    int stuck = alone && d->polls >= POLL_LIMIT;
    pthread_mutex_unlock(&r->lock);
    if (stuck) return 1;
    if (r->fibers) sim_fiber_yield(r, d); /* the others run before it reads again */
    else sched_yield();
    return 0;
}

/* Bytes [lo, hi) of argument `arg` of device `device` as the race detector
 * keys them: the argument and the offsets from its base, so that arrays whose
 * addresses mean nothing (cost-only ANY operands are offsets from NULL) and
 * the buffers of different devices never collide. 0 when other devices
 * cannot reach the argument (a pipelined block, SMEM prefetch). */
int sim_mesh_region(const mesh_run *r, int unit, int arg, uintptr_t *lo, uintptr_t *hi)
{
    if (!reach(r, arg)) return 0;
    uintptr_t base = sim_mesh_base(r, unit, arg), key = (uintptr_t)(arg + 1) << 48;
    *lo = key + (*lo - base);
    *hi = key + (*hi - base);
    return 1;
}

void sim_mesh_landed(sim_exec *x, int arg, uintptr_t offset)
{
    if (arg < 0 || arg >= x->plan.n_ops || !x->plan.ops[arg].pipelined) return;
    const sim_operand *op = &x->plan.ops[arg];
    uintptr_t block = (uintptr_t)op->block_elems * op->elem_size, slot = block ? offset / block : 0;
    if (slot >= SIM_REMOTE_SLOTS) slot = SIM_REMOTE_SLOTS - 1;
    __atomic_add_fetch(&x->remote_written[arg][slot], 1, __ATOMIC_RELEASE);
}

/* M15: a copy into another device's VMEM (a pipelined block, an input's or
 * output's buffer, as JAX's basic_remote_vmem_dma; or VMEM scratch) before
 * anything of that device has reached this one in this call: on a TPU that
 * device may not have entered the kernel yet, its VMEM still the previous
 * kernel's; JAX's tests and distributed guide handshake first. A finding on
 * the sender, once; not in cost-only runs (their race events are queued)
 * nor across ranks. */
static void no_handshake(mesh_run *r, int from, int to, int arg, const char *point)
{
    /* the cores of one device enter the kernel together (M13): only other devices need the handshake */
    if (r->dev[from].device == r->dev[to].device || r->dev[from].no_handshake || !r->race || r->race_q ||
        r->ranks > 1)
        return;
    const sim_plan *p = &r->dev[to].x->plan;
    int s = arg - p->n_ops;
    int vmem = arg >= 0 && arg < p->n_ops ? p->ops[arg].space == PL_VMEM && p->ops[arg].pipelined
                                          : s >= 0 && s < p->call->n_scratch && p->call->scratch[s].space == PL_VMEM;
    if (!vmem) return;
    pthread_mutex_lock(&r->lock);
    int heard = sim_mesh_race_heard(r->race, from, to);
    if (!heard) {
        r->dev[from].no_handshake = 1;
        sim_exec *x = r->dev[from].x;
        int dev_from = r->dev[from].device, dev_to = r->dev[to].device;
        char msg[PL_MSG_MAX];
        snprintf(msg, sizeof msg, "device %d at grid point %s copies into %s of device %d, in its VMEM, before "
                 "anything of device %d has reached it in this call: on a TPU device %d may not have entered the "
                 "kernel yet and its VMEM may still hold the previous kernel's data; handshake first, as JAX's "
                 "distributed guide does (each signals the barrier semaphore, pltpu_get_barrier_semaphore, on the "
                 "other and waits for its signal; rule M15)", dev_from, point,
                 arg < p->n_ops ? p->ops[arg].rep->name : r->dev[to].x->rep.scratch[s].name, dev_to, dev_to, dev_to);
        sim_add_finding(&x->rep, PL_FIND_NO_HANDSHAKE, "M15", arg < p->n_ops ? arg : -1, NULL, 0, NULL, 0, msg);
    }
    pthread_mutex_unlock(&r->lock);
}

static int run_incoming(void *p, int from, int to, int arg, uintptr_t lo, uintptr_t hi, const int64_t *recv,
                        int64_t bytes, const char *point)
{
    mesh_run *r = p;
    r->dev[from].n_seen = 0; /* an event of the sender's: its accesses after are of a new epoch */
    no_handshake(r, from, to, arg, point);
    if (!sim_mesh_region(r, to, arg, &lo, &hi)) return 0;
    sim_mesh_landed(r->dev[to].x, arg, lo - ((uintptr_t)(arg + 1) << 48));
    pthread_mutex_lock(&r->lock);
    int rc = 0;
    if (r->race_q) sim_race_queue_copy(r->race_q, from, to, lo, hi, recv, bytes, point); /* cost-only: moves nothing */
    else rc = sim_mesh_race_copy(r->race, from, to, lo, hi, recv, bytes, point);
    pthread_mutex_unlock(&r->lock);
    return rc;
}

static int run_local_copy(void *p, int device, const pl_ref *src, const pl_ref *dst, const int64_t *sem,
                          int64_t bytes, const char *point)
{
    mesh_run *r = p;
    r->dev[device].n_seen = 0;
    uintptr_t span[4];
    kern_ref_span(src, &span[0], &span[1]);
    kern_ref_span(dst, &span[2], &span[3]);
    if (!sim_mesh_region(r, device, src->arg, &span[0], &span[1])) span[0] = span[1] = 0; /* out of other devices' reach */
    if (!sim_mesh_region(r, device, dst->arg, &span[2], &span[3])) span[2] = span[3] = 0;
    pthread_mutex_lock(&r->lock);
    int rc = 0;
    if (r->race_q) sim_race_queue_local(r->race_q, device, span, sem, bytes, point);
    else rc = sim_mesh_race_local(r->race, device, span, sem, bytes, point);
    pthread_mutex_unlock(&r->lock);
    return rc;
}

/* added, taken: under the mesh's lock (kern_sem_lock) */
static void run_added(void *p, int device, int owner, const int64_t *cell, int64_t amount)
{
    mesh_run *r = p;
    if (device != owner) r->dev[device].n_seen = 0;
    sim_mesh_unpoll(r, &r->dev[device]); /* it may wake a core again */
    if (r->race_q) sim_race_queue_added(r->race_q, device, owner, cell, amount);
    else sim_mesh_race_added(r->race, device, owner, cell, amount);
}
static void run_taken(void *p, int device, const int64_t *cell, int64_t amount)
{
    mesh_run *r = p;
    r->dev[device].n_seen = 0;
    if (r->race_q) sim_race_queue_taken(r->race_q, device, cell, amount);
    else sim_mesh_race_taken(r->race, device, cell, amount);
}

static int run_hops(void *p, int from, int to)
{
    mesh_run *r = p;
    return pl_mesh_hops(r->mesh, r->dev[from].device, r->dev[to].device);
}
static int run_away(void *p, int unit) { return !sim_mesh_here(p, ((mesh_run *)p)->dev[unit].device); }

static void run_post(void *p, int from, int to, const pl_ref *src, const pl_ref *dst, const pl_ref *sem,
                     int64_t amount, const char *point)
{
    mesh_run *r = p;
    uintptr_t off = (uintptr_t)sem->data - sim_mesh_base(r, to, sem->arg);
    sim_mesh_mpi_post(r, from, to, src, dst, sem->arg, off, amount, point);
}

/* A core's context: cores are made before any device thread starts and freed after all end. */
static pl_ctx *run_peer(void *p, int unit)
{
    mesh_run *r = p;
    if (unit < 0 || unit >= r->units || !sim_mesh_here(r, r->dev[unit].device)) return NULL;
    const sim_core *k = r->dev[unit].x->cores[r->dev[unit].core];
    return k ? (pl_ctx *)&k->ctx : NULL;
}

/* Every remote copy asks: one slice answers at once, and a slice is a block
 * of devices numbered one after the other (no validation of the mesh, which
 * pl_mesh_call checked, per copy). */
static int run_dcn(void *p, int from, int to)
{
    mesh_run *r = p;
    if (!r->mesh->dcn) return 0;
    int per_slice = r->n / (int)r->mesh->shape[0];
    return r->dev[from].device / per_slice != r->dev[to].device / per_slice;
}

/* The kernel of `unit` touched r: the race detector hears of bytes other
 * devices can reach, once per region and epoch (mesh_dev.seen). */
static void run_access(void *p, int unit, const pl_ref *ref, int write, const char *point)
{
    mesh_run *r = p;
    if (!r->race || !reach(r, ref->arg) || pl_size(*ref) == 0) return;
    uintptr_t lo, hi;
    kern_ref_span(ref, &lo, &hi);
    if (!sim_mesh_region(r, unit, ref->arg, &lo, &hi)) return;
    mesh_dev *d = &r->dev[unit];
    for (int i = 0; i < d->n_seen; i++)
        if (d->seen[i][0] == lo && d->seen[i][1] == hi && d->seen_write[i] >= write) return;
    if (d->n_seen < SIM_MESH_SEEN) d->seen[d->n_seen][0] = lo, d->seen[d->n_seen][1] = hi, d->seen_write[d->n_seen++] = (unsigned char)write;
    pthread_mutex_lock(&r->lock);
    if (r->race_q) sim_race_queue_access(r->race_q, unit, lo, hi, write, point);
    else sim_mesh_race_access(r->race, unit, lo, hi, write, point);
    pthread_mutex_unlock(&r->lock);
}

const kern_mesh_ops sim_mesh_hooks = {run_lock,    run_unlock,   run_block,      run_wake,  run_translate,
                                       run_axis,    run_perturb,  run_incoming,   run_local_copy,
                                       run_added,   run_taken,    run_hops,       run_away,  run_post,
                                       run_peer,    run_dcn,      run_access,     run_device_at, run_poll};
