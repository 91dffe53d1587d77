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
    if (v < 0)
        kern_fault(c, PL_EINVAL, "%s(%s%s%s): the mesh has no axis of that name%s", fn, axis ? "\"" : "",
                   axis ? axis : "NULL", axis ? "\"" : "",
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

static void check_device(pl_ctx *c, int device, const char *fn)
{
    if (device < 0 || device >= c->n_devices)
        kern_fault(c, PL_EINVAL, "%s to device %d: the mesh has devices 0 to %d (rules M9, M11)", fn, device,
                   c->n_devices - 1);
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

pltpu_remote_copy pltpu_make_async_remote_copy(pl_ctx *c, pl_ref src, pl_ref dst, pl_ref send_sem, pl_ref recv_sem,
                                               int device_id)
{
    const char *fn = "pltpu_make_async_remote_copy";
    check_sems(c, &send_sem, &recv_sem, fn);
    int64_t bytes = kern_copy_check(c, &src, &dst, fn, "rules M7, M11");
    check_device(c, device_id, fn);
    return (pltpu_remote_copy){.src = src, .dst = dst, .send_sem = send_sem, .recv_sem = recv_sem,
                               .device = device_id, .bytes = bytes};
}

/* r on device `device`: the same argument and offsets there. */
static pl_ref there(pl_ctx *c, const pl_ref *r, int device, const char *what, const char *fn)
{
    pl_ref t = *r;
    if (device == c->device) return t;
    void *p = NULL;
    if (!c->mesh || !c->mesh->translate(c->mesh_run, c->device, device, r, &p)) { /* cost-only too */
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
static int scoped_sem(const pl_ctx *c, const pl_ref *sem, int device)
{
    return device != c->device && sem->arg == -1 && sem->space == PL_SEMAPHORE;
}

/* That semaphore's count there, located and `add` added to it (0: only
 * located) in one hold of the mesh's lock, so that the other device cannot
 * leave the scope in between; a fault naming why when it is not inside. */
static int64_t *scoped_sem_there(pl_ctx *c, const pl_ref *sem, int device, int64_t add, const char *fn)
{
    char why[320] = "";
    pl_ctx *peer = c->mesh && c->mesh->peer ? c->mesh->peer(c->mesh_run, device) : NULL;
    if (!peer)
        snprintf(why, sizeof why, "device %d %s", device, c->mesh ? "runs in another process (Open MPI), which "
                 "run_scoped semaphores do not reach: give the call a semaphore scratch for it"
                 : "is not here: this call runs on one device");
    int64_t was = 0;
    int over = 0;
    kern_sem_lock(c);
    int64_t *cell = peer ? kern_scoped_peer(c, sem->data, peer, why, sizeof why) : NULL;
    if (cell && add > 0) was = *cell, over = kern_sem_add_held(c, cell, device, add);
    kern_sem_unlock(c);
    char name[96];
    if (!cell || over) kern_ref_name(c, sem, name, sizeof name);
    if (!cell)
        kern_fault(c, PL_ESPACE, "%s: the run_scoped semaphore %s on device %d: %s (rules K4, M11)", fn, name, device,
                   why);
    if (over)
        kern_fault(c, PL_EINVAL, "%s: %s on device %d holds %lld; adding %lld would overflow its count (rule M9)",
                   fn, name, device, (long long)was, (long long)add);
    return cell;
}

/* V4 on the other device: 1 when this copy races with an earlier copy or a
 * local copy there (recorded by the mesh for the end of the call): its data
 * must not move. */
static int races_there(pl_ctx *c, const pl_ref *dst, const pl_ref *recv, const pltpu_remote_copy *cp)
{
    if (!c->mesh || pl_size(*dst) == 0) return 0;
    uintptr_t lo, hi;
    char point[128];
    kern_ref_span(dst, &lo, &hi);
    kern_format_point(c->idx, c->grid_rank, point, sizeof point);
    return c->mesh->incoming(c->mesh_run, c->device, cp->device, cp->dst.arg, lo, hi, (const int64_t *)recv->data,
                             cp->bytes, point) != 0;
}

void pltpu_remote_copy_start(pl_ctx *c, const pltpu_remote_copy *cp)
{
    const char *fn = "pltpu_remote_copy_start";
    check_sems(c, &cp->send_sem, &cp->recv_sem, fn);
    int64_t amount = kern_sem_amount(&cp->recv_sem, cp->bytes); /* M8: its bytes, or 1 on regular semaphores */
    check_device(c, cp->device, fn);
    kern_copy_handle(c, &cp->src, &cp->dst, cp->bytes, fn);
    if (c->mesh) c->mesh->perturb(c->mesh_run, c->device);
    pl_ref dst = there(c, &cp->dst, cp->device, "destination", fn);
    int scoped = scoped_sem(c, &cp->recv_sem, cp->device);
    pl_ref recv = cp->recv_sem;
    if (scoped) recv.data = scoped_sem_there(c, &cp->recv_sem, cp->device, 0, fn); /* checked now, added below */
    else recv = there(c, &cp->recv_sem, cp->device, "receive semaphore", fn);
    int away = c->mesh && c->mesh->away(c->mesh_run, cp->device);
    int raced = away ? 0 : races_there(c, &dst, &recv, cp); /* away: the other process looks */
    int hops = cp->device == c->device || !c->mesh ? 0 : c->mesh->hops(c->mesh_run, c->device, cp->device);
    kern_dma *m = kern_dma_push(c, &cp->src, &dst, &cp->send_sem, cp->bytes, hops, fn);
    if (c->mesh) { /* the timing model credits the receiving semaphore there when the transfer ends */
        c->ops[c->n_ops - 1].n = cp->device;
        c->ops[c->n_ops - 1].cell = (uintptr_t)recv.data;
    }
    if (away) { /* it lands there when its message arrives, its bytes added there then */
        char point[128];
        kern_format_point(c->idx, c->grid_rank, point, sizeof point);
        c->mesh->post(c->mesh_run, c->device, cp->device, &cp->src, &dst, &recv, amount, point);
    } else {
        if (!c->cost_only && !raced && pl_size(cp->src) > 0) kern_dma_move(&dst, &cp->src); /* lands now, there */
        if (scoped) scoped_sem_there(c, &cp->recv_sem, cp->device, amount, fn); /* M8: there, still in scope */
        else kern_sem_add(c, &cp->recv_sem, (int64_t *)recv.data, cp->device, amount, fn); /* M8: there */
    }
    m->moved = 1;
    kern_sem_add(c, &cp->send_sem, (int64_t *)cp->send_sem.data, c->device, amount, fn); /* here, the sent ones */
}

void pltpu_remote_copy_wait_send(pl_ctx *c, const pltpu_remote_copy *cp)
{
    kern_refuse_regular_wait(c, &cp->send_sem, "pltpu_remote_copy_wait_send");
    kern_check_sem(c, &cp->send_sem, PL_SEM_DMA, "pltpu_remote_copy_wait_send", "wait on");
    kern_copy_handle(c, &cp->src, &cp->dst, cp->bytes, "pltpu_remote_copy_wait_send");
    kern_dma_take(c, &cp->send_sem, cp->bytes, "pltpu_remote_copy_wait_send");
}

void pltpu_remote_copy_wait_recv(pl_ctx *c, const pltpu_remote_copy *cp)
{
    kern_refuse_regular_wait(c, &cp->recv_sem, "pltpu_remote_copy_wait_recv");
    kern_check_sem(c, &cp->recv_sem, PL_SEM_DMA, "pltpu_remote_copy_wait_recv", "wait on");
    kern_copy_handle(c, &cp->src, &cp->dst, cp->bytes, "pltpu_remote_copy_wait_recv");
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

void pltpu_semaphore_signal_device(pl_ctx *c, pl_ref sem, int64_t inc, int device_id)
{
    const char *fn = "pltpu_semaphore_signal_device";
    kern_check_sem(c, &sem, PL_SEM_REGULAR, fn, "signal");
    check_device(c, device_id, fn);
    if (inc < 0 || inc > INT32_MAX) {
        char name[96];
        kern_ref_name(c, &sem, name, sizeof name);
        kern_fault(c, PL_EINVAL, "%s on %s by %lld: the increment must be in 0..2^31-1 (rule M9)", fn, name,
                   (long long)inc);
    }
    if (c->mesh) c->mesh->perturb(c->mesh_run, c->device);
    pl_ref t = sem;
    if (scoped_sem(c, &sem, device_id)) t.data = scoped_sem_there(c, &sem, device_id, inc, fn); /* located, added */
    else {
        t = there(c, &sem, device_id, "semaphore", fn);
        if (c->mesh && c->mesh->away(c->mesh_run, device_id))
            c->mesh->post(c->mesh_run, c->device, device_id, NULL, NULL, &t, inc, "");
        else kern_sem_add(c, &sem, (int64_t *)t.data, device_id, inc, fn);
    }
    kern_op op = {.kind = KERN_OP_SEM_SIGNAL, .n = device_id, .elems = inc, .cell = (uintptr_t)t.data, .name = fn};
    kern_record(c, &op);
}
