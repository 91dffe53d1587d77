/* kernel/sem.c: semaphores' counts (rules M8-M10; kernel/pltpu.h): the
 * checks that a Ref is a semaphore of the kind an op needs, adding to a
 * count (here or, on a mesh, another core's, waking its waiters), and
 * taking from one: on a mesh a wait blocks until another core adds, and a
 * count that can never be had is a deadlock, never a hang. dma.c's copies
 * and regular semaphores and remote.c's copies and signals stand on it. */
#include <stdio.h>
#include <string.h>

#include "context.h"
#include "pltpu.h"

/* verb: what fn does with the semaphore, for the message ("signal", "wait on"). */
void kern_check_sem(pl_ctx *c, const pl_ref *sem, pl_sem_kind want, const char *fn, const char *verb)
{
    char name[96];
    kern_check_ref(c, sem, fn);
    if (sem->space != PL_SEMAPHORE || sem->sem_kind != want) {
        kern_ref_name(c, sem, name, sizeof name);
        kern_fault(c, PL_ESPACE, "%s: %s is not a %s semaphore; declare it with %s (rule M%d)", fn, name,
                   want == PL_SEM_DMA ? "DMA" : "regular",
                   want == PL_SEM_DMA ? "PLTPU_SEMAPHORE_DMA" : "PLTPU_SEMAPHORE",
                   want == PL_SEM_DMA ? 8 : 9);
    }
    /* Pallas passes one semaphore, never an array: even a (1,)-shaped array
     * is refused, as Mosaic refuses it (rank 0 is what pl_at leaves). */
    if (sem->rank != 0) {
        char shape[128];
        kern_ref_name(c, sem, name, sizeof name);
        kern_format_point(sem->shape, sem->rank, shape, sizeof shape);
        kern_fault(c, PL_ESHAPE, "%s: cannot %s a semaphore array; select one with pl_at: %s has shape %s "
                   "(rule M%d)", fn, verb, name, shape, want == PL_SEM_DMA ? 8 : 9);
    }
}

int kern_check_dma_sem(pl_ctx *c, const pl_ref *sem, const char *fn, const char *verb)
{
    if (sem->space != PL_SEMAPHORE || sem->sem_kind != PL_SEM_REGULAR) {
        kern_check_sem(c, sem, PL_SEM_DMA, fn, verb);
        return 0;
    }
    kern_check_sem(c, sem, PL_SEM_REGULAR, fn, verb);
    if (c->target.chip && !c->target.dma_regular) {
        char name[96];
        kern_ref_name(c, sem, name, sizeof name);
        kern_fault(c, PL_ESPACE, "%s: %s is a regular semaphore, and a DMA on %s signals DMA semaphores only; DMAs "
                   "signal regular ones from TPU v6 on (JAX: \"Regular semaphores in DMAs require TPU v6+\"): "
                   "declare it with PLTPU_SEMAPHORE_DMA (rule M8)", fn, name, c->target.chip);
    }
    return 1;
}

void kern_refuse_regular_wait(pl_ctx *c, const pl_ref *sem, const char *fn)
{
    if (sem->space != PL_SEMAPHORE || sem->sem_kind != PL_SEM_REGULAR) return;
    char name[96];
    kern_ref_name(c, sem, name, sizeof name);
    kern_fault(c, PL_EINVAL, "%s: the copy signals the regular semaphore %s, and a DMA wait needs a DMA semaphore "
               "(JAX: \"dma_wait requires a DMA semaphore, but got a regular semaphore. Use pl.semaphore_wait() "
               "instead.\"): wait with pltpu_semaphore_wait(c, sem, 1), 1 for each copy (rule M8)", fn, name);
}

/* The count of one semaphore: 64 bits in two i32 cells (kernel/context.h). */
static int64_t *sem_cell(const pl_ref *sem) { return (int64_t *)sem->data; }

/* Add n >= 0 to a count; a count past INT64_MAX is an error, never undefined
 * behaviour (M8, M9). cell: sem's count, here or (a remote signal) on
 * another device; under the mesh's lock there. */
int kern_sem_add_held(pl_ctx *c, int64_t *cell, int owner, int64_t n)
{
    if (*cell > INT64_MAX - n) return 1;
    *cell += n;
    if (c->mesh) {
        c->mesh->added(c->mesh_run, c->unit, owner, cell, n);
        c->mesh->wake(c->mesh_run, owner); /* only a count that grew can let a wait go */
    }
    return 0;
}

void kern_sem_add(pl_ctx *c, const pl_ref *sem, int64_t *cell, int owner, int64_t n, const char *fn)
{
    kern_sem_lock(c);
    int64_t was = *cell;
    int over = kern_sem_add_held(c, cell, owner, n);
    kern_sem_unlock(c);
    if (over) {
        char name[96];
        kern_ref_name(c, sem, name, sizeof name);
        kern_fault(c, PL_EINVAL, "%s: %s holds %lld; adding %lld would overflow its count (rule M9)", fn, name,
                   (long long)was, (long long)n);
    }
}

void kern_sem_add_own(pl_ctx *c, const pl_ref *sem, int64_t n, const char *fn)
{
    kern_sem_add(c, sem, sem_cell(sem), c->unit, n, fn);
}

/* A wait, short, for a mesh's deadlock message, which lists many:
 * "at grid point (i, j): pltpu_copy_wait on 'sems' for 4096 bytes". */
void kern_wait_format(const kern_wait *w, char *buf, size_t n)
{
    char point[128];
    if (n == 0) return;
    kern_format_point(w->c->idx, w->c->grid_rank, point, sizeof point);
    size_t at = kern_append(buf, n, 0, "at grid point ");
    at = kern_append(buf, n, at, point);
    at = kern_append(buf, n, at, ": ");
    at = kern_append(buf, n, at, w->fn);
    at = kern_append(buf, n, at, w->name ? " on '" : " on ");
    at = kern_append(buf, n, at, w->name ? w->name : w->what ? w->what : "?");
    at = kern_append(buf, n, at, w->name ? "' for " : " for ");
    at = kern_append_int(buf, n, at, w->need);
    kern_append(buf, n, at, w->bytes ? " bytes" : "");
}

/* Take `need` off sem's count; on a mesh, wait for other devices to add to
 * it (kernel/remote.c). A count that can never be had is PL_EDEADLOCK: the
 * mesh's message naming every stuck device, or on one device this one's.
 * Messages are formatted only when needed: a wait that is met at once, the
 * common case on every grid step, formats nothing. bytes: a DMA semaphore. */
void kern_sem_take(pl_ctx *c, const pl_ref *sem, int64_t need, const char *fn, int bytes)
{
    int64_t *count = sem_cell(sem);
    char msg[PL_KERN_MESH_MSG];
    msg[0] = '\0'; /* not = "": that clears all 2 KiB at every wait */
    if (c->mesh) c->mesh->perturb(c->mesh_run, c->unit);
    kern_sem_lock(c);
    if (*count < need && c->mesh) {
        kern_wait what = {.c = c, .fn = fn, .need = need, .bytes = bytes,
                          .name = sem->arg >= 0 && sem->arg < KERN_MAX_ARGS ? c->arg_name[sem->arg] : NULL,
                          .what = count == kern_barrier_cell(c) ? "the barrier semaphore" : "a scoped semaphore (run_scoped or emit_pipeline)"};
        kern_guard_waiting(1); /* blocked in tilesim: not the kernel's own loop (pl_guard_stalls) */
        c->mesh->block(c->mesh_run, c->unit, count, need, &what, msg, sizeof msg);
        kern_guard_waiting(0);
    }
    int64_t held = *count;
    int ok = held >= need;
    if (ok) *count -= need;
    if (ok && c->mesh) c->mesh->taken(c->mesh_run, c->unit, count, need);
    kern_sem_unlock(c);
    if (ok) return;
    if (msg[0]) kern_fault(c, PL_EDEADLOCK, "%s", msg);
    char name[96], core[200] = "";
    kern_ref_name(c, sem, name, sizeof name);
    if (c->target.cores > 1) /* megacore: the copy or signal it waits for may be made at a point the other core runs */
        snprintf(core, sizeof core, "; this is core %d of %d, which walks its own part of the grid (rule G4): a "
                 "copy started or a signal made at a point of another core is not seen here", c->core, c->target.cores);
    if (bytes)
        kern_fault(c, PL_EDEADLOCK,
                   "%s on %s needs %lld bytes but the semaphore holds %lld and no copy in flight can add more: the "
                   "wait can never finish (deadlock, rule M10)%s",
                   fn, name, (long long)need, (long long)held, core);
    kern_fault(c, PL_EDEADLOCK,
               "%s on %s for %lld, but it holds %lld and nothing else runs on this core to signal it: the wait "
               "can never finish (deadlock, rule M10)%s",
               fn, name, (long long)need, (long long)held, core);
}

