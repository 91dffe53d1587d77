/* kernel/remote.c: other devices of a mesh (rules M11, M12; kernel/pltpu.h).
 *
 * A remote copy moves its data at start, straight into the same Ref on the
 * other device (the simulator translates the pointer), adds its bytes to
 * that device's receive semaphore and, as a copy in flight here, to this
 * device's send semaphore. Waits take from the local semaphores; when a
 * count is short, a device of a mesh blocks until another device adds to
 * it, or until the mesh finds every device blocked (a deadlock: the mesh's
 * message names them all). Semaphore cells are shared between devices, so
 * every access is under the mesh's lock (kern_sem_lock). A device that
 * runs in another process (a mesh across Open MPI ranks) is reached by
 * message instead: the copy's data and its semaphore add arrive there
 * together, later, as they would over ICI.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "context.h"
#include "pltpu.h"
#include "scoped.h"

int pltpu_device_id(pl_ctx *c) { return c->device; }
int pltpu_num_devices(pl_ctx *c) { return c->n_devices; }

static int64_t axis_of(pl_ctx *c, const char *axis, int64_t *size, const char *fn)
{
    int64_t v = -1;
    if (axis && c->mesh) v = c->mesh->axis_index(c->mesh_run, c->device, axis, size);
    char name[41]; /* an axis name for a message: its first 40 bytes (a kernel's string) */
    if (v < 0)
        kern_fault(c, PL_EINVAL, "%s(%s%s%s): the mesh has no axis of that name%s", fn, axis ? "\"" : "",
                   axis ? kern_copy_name(name, sizeof name, axis) : "NULL", axis ? "\"" : "",
                   c->mesh ? "" : " (this call runs on one device, not on a mesh: pl_mesh_call)");
    return v;
}

int64_t pltpu_axis_index(pl_ctx *c, const char *axis)
{
    int64_t size;
    return axis_of(c, axis, &size, "pltpu_axis_index");
}

int64_t pltpu_axis_size(pl_ctx *c, const char *axis)
{
    int64_t size = 0;
    axis_of(c, axis, &size, "pltpu_axis_size");
    return size;
}

/* DeviceIdType.MESH: a tuple of coordinates, or this device's with one axis set. */
static int device_at(pl_ctx *c, const int64_t *coords, const char *axis, int64_t index, const char *fn)
{
    int n = 0, d = c->mesh ? c->mesh->device_at(c->mesh_run, c->device, coords, axis, index, &n) : -1;
    if (d == -1 && axis) axis_of(c, axis, &(int64_t){0}, fn); /* names the axis it does not have */
    if (d == -2 && axis)
        kern_fault(c, PL_EINVAL, "%s(\"%s\", %lld): index %lld is off the mesh's axis \"%s\" of %lld devices "
                   "(rules M11, M12)", fn, axis, (long long)index, (long long)index, axis,
                   (long long)pltpu_axis_size(c, axis));
    if (d < 0) {
        char at[160] = "";
        for (int a = 0, k = 0; coords && a < n && a < 8; a++)
            k += snprintf(at + k, sizeof at - (size_t)k, "%s%lld", a ? ", " : "", (long long)coords[a]);
        kern_fault(c, PL_EINVAL, "%s((%s)): %s (rules M11, M12)", fn, at,
                   c->mesh ? "a coordinate is off the mesh: each is 0 .. the size of its axis - 1, one per axis "
                             "in the mesh's order"
                           : "this call runs on one device, not on a mesh (pl_mesh_call)");
    }
    return d;
}

int pltpu_device_at(pl_ctx *c, const int64_t *coords)
{
    if (!coords) kern_fault(c, PL_EINVAL, "pltpu_device_at: coords is NULL; give one coordinate per mesh axis");
    return device_at(c, coords, NULL, 0, "pltpu_device_at");
}

/* The joint size of axes[0..n) into *size, each checked (a name twice is refused: it is no mesh position). */
static void joint_axes(pl_ctx *c, const char *const *axes, int n, int64_t *size, const char *fn)
{
    if (!axes) kern_fault(c, PL_EINVAL, "%s: the array of axis names is NULL", fn);
    if (n < 1 || n > 8) kern_fault(c, PL_EINVAL, "%s: %d axis names; give 1 to 8", fn, n);
    *size = 1;
    for (int a = 0; a < n; a++) {
        int64_t s = 0;
        axis_of(c, axes[a], &s, fn);
        for (int b = 0; b < a; b++)
            if (!strcmp(axes[a], axes[b])) {
                char name[41];
                kern_fault(c, PL_EINVAL, "%s: axis \"%s\" is named twice", fn, kern_copy_name(name, sizeof name, axes[a]));
            }
        *size *= s;
    }
}

int64_t pltpu_axis_index_joint(pl_ctx *c, const char *const *axes, int n)
{
    int64_t size, flat = 0;
    joint_axes(c, axes, n, &size, "pltpu_axis_index_joint");
    for (int a = 0; a < n; a++) {
        int64_t s = 0, i = axis_of(c, axes[a], &s, "pltpu_axis_index_joint");
        flat = flat * s + i;
    }
    return flat;
}

int pltpu_device_along_joint(pl_ctx *c, const char *const *axes, int n, int64_t index)
{
    int64_t size;
    joint_axes(c, axes, n, &size, "pltpu_device_along_joint");
    if (index < 0 || index >= size)
        kern_fault(c, PL_EINVAL, "pltpu_device_along_joint(..., %lld): the joint position is off the %lld devices "
                   "of those axes (rules M11, M12)", (long long)index, (long long)size);
    int d = c->device;
    for (int a = n - 1; a >= 0; a--) { /* row-major: the last axis varies fastest */
        int64_t s = 0;
        int unused;
        axis_of(c, axes[a], &s, "pltpu_device_along_joint");
        d = c->mesh->device_at(c->mesh_run, d, NULL, axes[a], index % s, &unused);
        index /= s;
    }
    return d;
}

int pltpu_device_along(pl_ctx *c, const char *axis, int64_t index)
{
    if (!axis) axis_of(c, NULL, &(int64_t){0}, "pltpu_device_along");
    return device_at(c, NULL, axis, index, "pltpu_device_along");
}

static void check_device(pl_ctx *c, int device, const char *fn)
{
    if (device < 0 || device >= c->n_devices)
        kern_fault(c, PL_EINVAL, "%s to device %d: the mesh has devices 0 to %d (rules M9, M11)", fn, device,
                   c->n_devices - 1);
}

/* The unit (kern_mesh_ops) of core `core` of `device` (-1: this device), checked (M13). */
static int unit_of(pl_ctx *c, int device, int core, const char *fn)
{
    if (device == -1) device = c->device;
    check_device(c, device, fn);
    if (core < 0 || core >= c->dev_cores)
        kern_fault(c, PL_EINVAL, "%s to core %d of device %d: this call's devices walk on %d TensorCore%s (0 to %d; "
                   "a core gets grid points only where a parallel axis splits over the cores, rules G4, M13)", fn,
                   core, device, c->dev_cores, c->dev_cores == 1 ? "" : "s", c->dev_cores - 1);
    int unit = device * c->dev_cores + core;
    if (!c->mesh && unit != c->unit)
        kern_fault(c, PL_EINVAL, "%s to core %d: this call walks its cores one after the other, so no core can wait "
                   "for another; cores that signal each other run at once under pl_kernel (K1) or pl_mesh_call "
                   "(rule M13)", fn, core);
    return unit;
}

int pl_core_count(const pl_ctx *c)
{
    return c->target.subcores > 0 ? c->dev_cores / c->target.subcores : c->dev_cores;
}

/* "device 3" or, on devices of several cores, "core 1 of device 3" */
static const char *unit_name(const pl_ctx *c, int unit, char *buf, size_t n)
{
    if (c->dev_cores > 1) snprintf(buf, n, "core %d of device %d", unit % c->dev_cores, unit / c->dev_cores);
    else snprintf(buf, n, "device %d", unit);
    return buf;
}

/* A remote copy's two semaphores: DMA ones, or regular ones where the
 * chip's DMAs signal them, both of one kind (Mosaic: "DMA source and target
 * semaphore must have the same type"; rule M8). */
static void check_sems(pl_ctx *c, const pl_ref *send, const pl_ref *recv, const char *fn)
{
    int rs = kern_check_dma_sem(c, send, fn, "send with"), rr = kern_check_dma_sem(c, recv, fn, "receive with");
    if (rs != rr) {
        char a[96], b[96];
        kern_ref_name(c, send, a, sizeof a);
        kern_ref_name(c, recv, b, sizeof b);
        kern_fault(c, PL_ESPACE, "%s: the send semaphore %s is a %s one and the receive semaphore %s a %s one; they "
                   "must be of one kind (Mosaic: \"DMA source and target semaphore must have the same type\") "
                   "(rule M8)", fn, a, rs ? "regular" : "DMA", b, rr ? "regular" : "DMA");
    }
}

static pltpu_remote_copy make_remote(pl_ctx *c, pl_ref src, pl_ref dst, pl_ref send_sem, pl_ref recv_sem,
                                     int device_id, int core, const char *fn)
{
    check_sems(c, &send_sem, &recv_sem, fn);
    int64_t bytes = kern_copy_check(c, &src, &dst, fn, "rules M7, M11");
    unit_of(c, device_id, core, fn);
    kern_desc_made(c, &src, &dst, &send_sem, fn);
    return (pltpu_remote_copy){.src = src, .dst = dst, .send_sem = send_sem, .recv_sem = recv_sem,
                               .device = device_id == -1 ? c->device : device_id, .bytes = bytes, .core = core};
}

pltpu_remote_copy pltpu_make_async_remote_copy(pl_ctx *c, pl_ref src, pl_ref dst, pl_ref send_sem, pl_ref recv_sem,
                                               int device_id)
{
    check_device(c, device_id, "pltpu_make_async_remote_copy");
    return make_remote(c, src, dst, send_sem, recv_sem, device_id, c->unit % c->dev_cores,
                       "pltpu_make_async_remote_copy");
}

pltpu_remote_copy pltpu_make_async_remote_copy_core(pl_ctx *c, pl_ref src, pl_ref dst, pl_ref send_sem,
                                                    pl_ref recv_sem, int device_id, int core)
{
    return make_remote(c, src, dst, send_sem, recv_sem, device_id, core, "pltpu_make_async_remote_copy_core");
}

/* r on `unit` (a core of a device): the same argument and offsets there. */
static pl_ref there(pl_ctx *c, const pl_ref *r, int unit, const char *what, const char *fn)
{
    pl_ref t = *r;
    if (unit == c->unit) return t;
    void *p = NULL;
    if (!c->mesh || !c->mesh->translate(c->mesh_run, c->unit, unit, r, &p)) { /* cost-only too */
        char name[96];
        kern_ref_name(c, r, name, sizeof name);
        kern_fault(c, PL_ESPACE, "%s: the %s %s is not reachable from other devices: a remote copy or signal "
                   "reaches an ANY (HBM) operand, a VMEM block or a scratch buffer of the other device, or a "
                   "run_scoped semaphore there (rules M11, K4)", fn, what, name);
    }
    t.data = p;
    return t;
}

/* A run_scoped semaphore named for another device (K4, M11): on the chip a
 * scope's semaphores sit at the same address on every device, so it is the
 * semaphore at the same depth of that device's live run_scoped stack. */
static int scoped_sem(const pl_ctx *c, const pl_ref *sem, int unit)
{
    return unit != c->unit && sem->arg == -1 && sem->space == PL_SEMAPHORE;
}

/* That semaphore's count there, located and `add` added to it (0: only
 * located) in one hold of the mesh's lock, so that the other device cannot
 * leave the scope in between; a fault naming why when it is not inside. */
static int64_t *scoped_sem_there(pl_ctx *c, const pl_ref *sem, int unit, int64_t add, const char *fn)
{
    char why[320] = "", who[48];
    unit_name(c, unit, who, sizeof who);
    pl_ctx *peer = c->mesh && c->mesh->peer ? c->mesh->peer(c->mesh_run, unit) : NULL;
    ptrdiff_t at = c->sem_bank ? (const int64_t *)sem->data - c->sem_bank : -1;
    if (peer && peer->sem_bank && at >= 0 && at < KERN_SEM_BANK) { /* its fixed place there, in scope or not (M13) */
        int64_t *cell = peer->sem_bank + at, was = 0;
        int over = 0;
        kern_sem_lock(c);
        if (add > 0) was = *cell, over = kern_sem_add_held(c, cell, unit, add);
        kern_sem_unlock(c);
        if (over) {
            char name[96];
            kern_ref_name(c, sem, name, sizeof name);
            kern_fault(c, PL_EINVAL, "%s: %s on %s holds %lld; adding %lld would overflow its count (rule M9)", fn,
                       name, who, (long long)was, (long long)add);
        }
        return cell;
    }
    if (!peer && sem->data == (void *)kern_barrier_cell(c) && c->mesh)
        kern_fault(c, PL_ESPACE, "%s: the barrier semaphore (pltpu_get_barrier_semaphore) on %s, which runs in another "
                   "process (Open MPI): the barrier reaches only the devices of this process (rule M15); run the "
                   "mesh in one process, or hand the devices of other ranks a semaphore scratch to signal", fn, who);
    if (!peer)
        snprintf(why, sizeof why, "%s %s", who, c->mesh ? "runs in another process (Open MPI), which "
                 "run_scoped semaphores do not reach: give the call a semaphore scratch for it"
                 : "is not here: this call runs on one device");
    int64_t was = 0;
    int over = 0;
    kern_sem_lock(c);
    int64_t *cell = peer ? kern_scoped_peer(c, sem->data, peer, why, sizeof why) : NULL;
    if (cell && add > 0) was = *cell, over = kern_sem_add_held(c, cell, unit, add);
    kern_sem_unlock(c);
    char name[96];
    if (!cell || over) kern_ref_name(c, sem, name, sizeof name);
    if (!cell)
        kern_fault(c, PL_ESPACE, "%s: the run_scoped semaphore %s on %s: %s (rules K4, M11)", fn, name, who, why);
    if (over)
        kern_fault(c, PL_EINVAL, "%s: %s on %s holds %lld; adding %lld would overflow its count (rule M9)", fn, name,
                   who, (long long)was, (long long)add);
    return cell;
}

/* A run_scoped VMEM buffer named as another core's (K4, M13), as JAX's
 * test_axis_dict_with_core_multi_device copies into one: the buffer at the
 * same depth of that core's live run_scoped stack. Located, and (src) src's
 * data moved into it, in one hold of the mesh's lock, so that the other
 * core cannot leave the scope in between; a fault naming why when it is not
 * inside. */
static void *scoped_buf_there(pl_ctx *c, const pl_ref *r, int unit, const pl_ref *src, const char *fn)
{
    char why[320] = "", who[48];
    unit_name(c, unit, who, sizeof who);
    pl_ctx *peer = c->mesh && c->mesh->peer ? c->mesh->peer(c->mesh_run, unit) : NULL;
    if (!peer) snprintf(why, sizeof why, "it runs in another process (Open MPI), which run_scoped buffers do not reach");
    kern_sem_lock(c);
    void *p = peer ? kern_scoped_peer(c, r->data, peer, why, sizeof why) : NULL;
    if (p && src) {
        pl_ref t = *r;
        t.data = p;
        kern_dma_move(&t, src);
    }
    kern_sem_unlock(c);
    if (!p) {
        char name[96];
        kern_ref_name(c, r, name, sizeof name);
        kern_fault(c, PL_ESPACE, "%s: the run_scoped buffer %s on %s: %s (rules K4, M11)", fn, name, who, why);
    }
    return p;
}

/* V4 on the other device: 1 when this copy races with an earlier copy or a
 * local copy there (recorded by the mesh for the end of the call): its data
 * must not move. */
static int races_there(pl_ctx *c, const pl_ref *dst, const pl_ref *recv, int unit, const pltpu_remote_copy *cp,
                       int64_t amount)
{
    if (!c->mesh || pl_size(*dst) == 0) return 0;
    uintptr_t lo, hi;
    kern_ref_span(dst, &lo, &hi);
    /* amount: what the copy adds to its receive semaphore (its bytes, or 1 on a regular one, M8), which is
     * what the receiver's waits take off it (they were matched against bytes: a regular one never received) */
    return c->mesh->incoming(c->mesh_run, c->unit, unit, cp->dst.arg, lo, hi, (const int64_t *)recv->data, amount,
                             kern_point(c)) != 0;
}

void pltpu_remote_copy_start(pl_ctx *c, const pltpu_remote_copy *cp)
{
    const char *fn = "pltpu_remote_copy_start";
    check_sems(c, &cp->send_sem, &cp->recv_sem, fn);
    kern_desc_used(c, &cp->src, &cp->dst, &cp->send_sem);
    int64_t amount = kern_sem_amount(&cp->recv_sem, cp->bytes); /* M8: its bytes, or 1 on regular semaphores */
    int to = unit_of(c, cp->device, cp->core, fn);
    kern_copy_handle(c, &cp->src, &cp->dst, cp->bytes, fn);
    kern_copy_past(c, &cp->src, &cp->dst, fn);
    if (c->mesh) c->mesh->perturb(c->mesh_run, c->unit);
    int scoped_dst = to != c->unit && cp->dst.arg == -1; /* a run_scoped buffer there */
    pl_ref dst = cp->dst;
    if (scoped_dst) dst.data = scoped_buf_there(c, &cp->dst, to, NULL, fn);
    else dst = there(c, &cp->dst, to, "destination", fn);
    int scoped = scoped_sem(c, &cp->recv_sem, to);
    pl_ref recv = cp->recv_sem;
    if (scoped) recv.data = scoped_sem_there(c, &cp->recv_sem, to, 0, fn); /* checked now, added below */
    else recv = there(c, &cp->recv_sem, to, "receive semaphore", fn);
    int away = c->mesh && c->mesh->away(c->mesh_run, to);
    /* away: the other process looks; a scoped buffer is not tracked (no call argument names it) */
    int raced = away || scoped_dst ? 0 : races_there(c, &dst, &recv, to, cp, amount);
    int hops = cp->device == c->device || !c->mesh ? 0 : c->mesh->hops(c->mesh_run, c->unit, to);
    /* a copy to another slice is its own row of the op profile: the Megascale view's DCN traffic (M14) */
    const char *row = hops && c->mesh->dcn(c->mesh_run, c->unit, to) ? "pltpu_remote_copy_start (DCN)" : fn;
    kern_dma *m = kern_dma_push(c, &cp->src, &dst, &cp->send_sem, cp->bytes, to, hops, row);
    if (c->mesh) { /* the timing model credits the receiving semaphore there when the transfer ends */
        c->ops[c->n_ops - 1].n = cp->device;
        c->ops[c->n_ops - 1].cell = (uintptr_t)recv.data;
    }
    if (away) { /* it lands there when its message arrives, its bytes added there then */
        c->mesh->post(c->mesh_run, c->unit, to, &cp->src, &dst, &recv, amount, kern_point(c));
    } else {
        int moves = !c->cost_only && !raced && pl_size(cp->src) > 0;
        if (moves && scoped_dst) scoped_buf_there(c, &cp->dst, to, &cp->src, fn); /* lands now, still in scope */
        else if (moves) kern_dma_move_shared(c, &dst, &cp->src);                /* lands now, there */
        if (scoped) scoped_sem_there(c, &cp->recv_sem, to, amount, fn); /* M8: there, still in scope */
        else kern_sem_add(c, &cp->recv_sem, (int64_t *)recv.data, to, amount, fn); /* M8: there */
    }
    m->moved = 1;
    kern_sem_add(c, &cp->send_sem, (int64_t *)cp->send_sem.data, c->unit, amount, fn); /* here, the sent ones */
}

void pltpu_remote_copy_wait_send(pl_ctx *c, const pltpu_remote_copy *cp)
{
    kern_refuse_regular_wait(c, &cp->send_sem, "pltpu_remote_copy_wait_send");
    kern_check_sem(c, &cp->send_sem, PL_SEM_DMA, "pltpu_remote_copy_wait_send", "wait on");
    kern_copy_handle(c, &cp->src, &cp->dst, cp->bytes, "pltpu_remote_copy_wait_send");
    kern_desc_used(c, &cp->src, &cp->dst, &cp->send_sem);
    kern_dma_take(c, &cp->send_sem, cp->bytes, "pltpu_remote_copy_wait_send");
}

void pltpu_remote_copy_wait_recv(pl_ctx *c, const pltpu_remote_copy *cp)
{
    kern_refuse_regular_wait(c, &cp->recv_sem, "pltpu_remote_copy_wait_recv");
    kern_check_sem(c, &cp->recv_sem, PL_SEM_DMA, "pltpu_remote_copy_wait_recv", "wait on");
    kern_copy_handle(c, &cp->src, &cp->dst, cp->bytes, "pltpu_remote_copy_wait_recv");
    kern_desc_used(c, &cp->src, &cp->dst, &cp->send_sem);
    kern_dma_take(c, &cp->recv_sem, cp->bytes, "pltpu_remote_copy_wait_recv");
    if (c->mesh) { /* in time, too: until the bytes from the other device have landed */
        kern_op op = {.kind = KERN_OP_RECV_WAIT, .elems = cp->bytes, .cell = (uintptr_t)cp->recv_sem.data,
                      .name = "pltpu_remote_copy_wait_recv"};
        kern_record(c, &op);
    }
}

void pltpu_remote_copy_wait(pl_ctx *c, const pltpu_remote_copy *cp)
{
    pltpu_remote_copy_wait_send(c, cp);
    pltpu_remote_copy_wait_recv(c, cp);
}

static void signal_unit(pl_ctx *c, pl_ref sem, int64_t inc, int device_id, int core, const char *fn)
{
    kern_check_sem(c, &sem, PL_SEM_REGULAR, fn, "signal");
    int to = unit_of(c, device_id, core, fn);
    if (device_id == -1) device_id = c->device;
    if (inc < 0 || inc > INT32_MAX) {
        char name[96];
        kern_ref_name(c, &sem, name, sizeof name);
        kern_fault(c, PL_EINVAL, "%s on %s by %lld: the increment must be in 0..2^31-1 (rule M9)", fn, name,
                   (long long)inc);
    }
    if (c->mesh) c->mesh->perturb(c->mesh_run, c->unit);
    pl_ref t = sem;
    if (scoped_sem(c, &sem, to)) t.data = scoped_sem_there(c, &sem, to, inc, fn); /* located, added */
    else {
        t = there(c, &sem, to, "semaphore", fn);
        if (c->mesh && c->mesh->away(c->mesh_run, to))
            c->mesh->post(c->mesh_run, c->unit, to, NULL, NULL, &t, inc, "");
        else kern_sem_add(c, &sem, (int64_t *)t.data, to, inc, fn);
    }
    /* k: the ICI links it crosses to another device; the timing model delivers it as a copy's first byte */
    int hops = device_id == c->device || !c->mesh ? 0 : c->mesh->hops(c->mesh_run, c->unit, to);
    kern_op op = {.kind = KERN_OP_SEM_SIGNAL, .n = device_id, .k = hops, .elems = inc, .cell = (uintptr_t)t.data,
                  .name = fn};
    kern_record(c, &op);
}

void pltpu_semaphore_signal_device(pl_ctx *c, pl_ref sem, int64_t inc, int device_id)
{
    check_device(c, device_id, "pltpu_semaphore_signal_device");
    signal_unit(c, sem, inc, device_id, c->unit % c->dev_cores, "pltpu_semaphore_signal_device");
}

void pltpu_semaphore_signal_core(pl_ctx *c, pl_ref sem, int64_t inc, int device_id, int core)
{
    signal_unit(c, sem, inc, device_id, core, "pltpu_semaphore_signal_core");
}

pl_ref pltpu_get_barrier_semaphore(pl_ctx *c)
{
    if (!c->has_collective_id)
        kern_fault(c, PL_EINVAL, "pltpu_get_barrier_semaphore: the call sets no collective_id; Mosaic takes the "
                   "barrier semaphore only in a call whose compiler params set one (\"collective_id has to be "
                   "specified when using a custom barrier\"): set pl_call.has_collective_id = 1 and its "
                   "collective_id (rule M15)");
    c->barrier_taken = 1;
    /* a scope's semaphore at a fixed place of the bank: a signal from another device finds it there (M13) */
    return (pl_ref){.data = kern_barrier_cell(c), .dtype = PL_I32, .space = PL_SEMAPHORE, .rank = 0, .arg = -1,
                    .role = PL_ROLE_SCRATCH, .sem_kind = PL_SEM_REGULAR};
}
