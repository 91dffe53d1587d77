/* kernel/scoped.c: pl_run_scoped (K4), pltpu_sync_copy (K2), pl_core_index
 * (K1), and the scoped VMEM that emit_pipeline's buffers come from. */
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "scoped.h"

/* One live allocation; its data follows the header at a 64-byte boundary
 * (any dtype, and semaphore counts as int64_t, are aligned there). */
typedef struct kern_scoped {
    struct kern_scoped *prev;
    int64_t counted;
    size_t bytes;
    char what[64]; /* for the VMEM report's listing at the peak */
} kern_scoped;
enum { SCOPED_HEADER = 128 };
_Static_assert(sizeof(kern_scoped) <= SCOPED_HEADER, "the header holds the allocation's record");

/* A new scoped VMEM peak: remember what is live, oldest first, for the report (K4). */
static void note_peak(pl_ctx *c)
{
    c->scoped_peak = c->scoped_bytes;
    int n = 0;
    for (const kern_scoped *s = c->scoped; s; s = s->prev) n++;
    int skip = n > KERN_SCOPED_PEAK ? n - KERN_SCOPED_PEAK : 0; /* the newest are kept */
    c->n_scoped_peak = n - skip;
    int i = c->n_scoped_peak;
    for (const kern_scoped *s = c->scoped; s && i > 0; s = s->prev) {
        i--;
        snprintf(c->scoped_peak_what[i], sizeof c->scoped_peak_what[i], "%s", s->what);
        c->scoped_peak_bytes[i] = s->counted;
    }
}

static char *scoped_data(kern_scoped *s) { return (char *)s + SCOPED_HEADER; }

/* on a vector-subcore mesh (K5) the cores of the call are its subcores, SparseCore by SparseCore */
int pl_core_index(const pl_ctx *c) { return c->target.subcores > 0 ? c->core / c->target.subcores : c->core; }

void kern_kernel_trampoline(pl_ctx *c, pl_ref *refs)
{
    /* the body sees its own user pointer (pl_kernel_user), as pallas_call kernels do */
    kern_kernel_wrap *w = (kern_kernel_wrap *)c->user;
    c->user = w->user;
    w->body(c, refs);
    c->user = w;
}

int64_t kern_laid_out_bytes(const pl_ctx *c, const int64_t *shape, int rank, pl_dtype t)
{
    int64_t bits = pl_dtype_bits(t), n = 1;
    for (int d = 0; d < rank; d++) {
        int64_t e = shape[d];
        if (d == rank - 1) e = (e + 127) / 128 * 128; /* lanes */
        if (d == rank - 2 && rank >= 2) {
            int64_t r = kern_tile_rows(&c->target, (int)bits, shape[d]);
            e = (e + r - 1) / r * r; /* sublanes of the dtype's memory tile (T8) */
        }
        n = e > 0 && n > INT64_MAX / e ? INT64_MAX : n * e;
    }
    return n > INT64_MAX / 8 ? INT64_MAX : (n * bits + 7) / 8;
}

void *kern_scoped_push(pl_ctx *c, size_t bytes, int64_t counted, const char *what)
{
    if (c->target.chip && counted > c->target.vmem_free - c->scoped_bytes)
        kern_fault(c, PL_EVMEM, "%s: %lld bytes of VMEM do not fit: the call's own buffers leave %lld bytes of "
                   "the scoped VMEM limit on %s, and run_scoped allocations still live take %lld (rules M4, K4)",
                   what, (long long)counted, (long long)c->target.vmem_free, c->target.chip,
                   (long long)c->scoped_bytes);
    kern_scoped *s = bytes > SIZE_MAX - SCOPED_HEADER ? NULL : calloc(1, SCOPED_HEADER + bytes);
    if (!s) kern_fault(c, PL_ENOMEM, "%s: out of host memory for %zu bytes", what, bytes);
    s->prev = c->scoped;
    s->counted = counted;
    s->bytes = bytes;
    kern_sem_lock(c); /* other devices of a mesh read the stack (kern_scoped_peer) */
    c->scoped = s;
    kern_sem_unlock(c);
    c->scoped_release = kern_scoped_free_all; /* kern_ctx_free calls it after a fault */
    snprintf(s->what, sizeof s->what, "%s", what);
    c->scoped_bytes += counted;
    if (c->scoped_bytes > c->scoped_peak) note_peak(c);
    return scoped_data(s);
}

static int inside(const pl_ref *r, uintptr_t lo, uintptr_t hi)
{
    uintptr_t a, b;
    kern_ref_span(r, &a, &b);
    return a < hi && b > lo;
}

void kern_scoped_pop(pl_ctx *c, const char *fn)
{
    kern_scoped *s = c->scoped;
    if (!s) return;
    uintptr_t lo = (uintptr_t)scoped_data(s), hi = lo + s->bytes;
    for (int i = 0; i < c->n_dma; i++) {
        const kern_dma *m = &c->dma[i];
        uintptr_t sem = (uintptr_t)m->sem.data;
        if (inside(&m->src, lo, hi) || inside(&m->dst, lo, hi) || (sem >= lo && sem < hi))
            kern_fault(c, PL_ESEMAPHORE, "%s: copy #%lld of %lld bytes is still in flight when its run_scoped "
                       "buffer or semaphore goes out of scope: wait for it inside the scope (rules M10, K4)", fn,
                       (long long)m->id, (long long)m->bytes);
    }
    kern_sem_lock(c); /* unlinked under the lock: no other device finds it from here on */
    c->scoped = s->prev;
    kern_sem_unlock(c);
    c->scoped_bytes -= s->counted;
    free(s);
}

void kern_scoped_free_all(pl_ctx *c)
{
    while (c->scoped) {
        kern_scoped *s = c->scoped;
        kern_sem_lock(c);
        c->scoped = s->prev;
        kern_sem_unlock(c);
        free(s);
    }
    c->scoped_bytes = 0;
}

static int depth_of(const pl_ctx *c)
{
    int n = 0;
    for (const kern_scoped *s = c->scoped; s; s = s->prev) n++;
    return n;
}

void *kern_scoped_peer(const pl_ctx *c, const void *p, const pl_ctx *peer, char *why, size_t n)
{
    int depth = depth_of(c), m = depth_of(peer);
    const kern_scoped *mine = c->scoped;
    uintptr_t q = (uintptr_t)p, lo = 0;
    for (; mine; mine = mine->prev) { /* from the newest: depth counts from the oldest, 0 */
        depth--;
        lo = (uintptr_t)scoped_data((kern_scoped *)mine);
        if (q >= lo && q < lo + mine->bytes) break;
    }
    if (!mine) return snprintf(why, n, "it lies in no run_scoped allocation live here"), NULL;
    if (m <= depth)
        return snprintf(why, n, "it is not inside that run_scoped now (it has %d run_scoped allocation%s live, "
                        "this one is number %d): enter the scope on every device and core before one signals into "
                        "another (a barrier), and leave it only after the last wait", m, m == 1 ? "" : "s",
                        depth + 1), NULL;
    const kern_scoped *s = peer->scoped;
    for (int k = m - 1; k > depth; k--) s = s->prev;
    if (s->bytes != mine->bytes)
        return snprintf(why, n, "it holds another allocation at that depth (%s, %zu bytes, not %s, %zu)", s->what,
                        s->bytes, mine->what, mine->bytes), NULL;
    return scoped_data((kern_scoped *)s) + (q - lo);
}

void pltpu_sync_copy(pl_ctx *c, pl_ref src, pl_ref dst)
{
    /* a DMA semaphore of its own, as sync_copy allocates one: the copy is waited before returning */
    _Alignas(8) int64_t cell = 0;
    pl_ref sem = {.data = &cell, .dtype = PL_I32, .space = PL_SEMAPHORE, .arg = -1, .role = PL_ROLE_SCRATCH,
                  .sem_kind = PL_SEM_DMA};
    pltpu_copy cp = {.src = src, .dst = dst, .sem = sem,
                     .bytes = kern_copy_check(c, &src, &dst, "pltpu_sync_copy", "rules M7, K2")};
    kern_copy_past(c, &src, &dst, "pltpu_sync_copy");
    pltpu_copy_start(c, &cp);
    pltpu_copy_wait(c, &cp);
}

int kern_scratch_rules(const pl_scratch *s, const char *who, char *msg, size_t n)
{
    if (s->space != PL_VMEM && s->space != PL_SMEM && s->space != PL_SEMAPHORE)
        return snprintf(msg, n, "%s: scratch cannot live in memory space %s (rule M2)%s", who,
                        pl_memspace_name(s->space),
                        s->space == PL_SEMAPHORE_DMA ? "; DMA semaphore scratch is PL_SEMAPHORE with .sem_kind = "
                                                       "PL_SEM_DMA (PLTPU_SEMAPHORE_DMA(n)); PL_SEMAPHORE_DMA is for a "
                                                       "call's operands (M16)" : ""), PL_EINVAL;
    if (s->space == PL_SEMAPHORE && (s->dtype != PL_I32 || s->rank < 0 || s->rank > PL_MAX_RANK ||
                                     (s->sem_kind != PL_SEM_REGULAR && s->sem_kind != PL_SEM_DMA)))
        return snprintf(msg, n, "%s: declare semaphore scratch with PLTPU_SEMAPHORE(n) or PLTPU_SEMAPHORE_DMA(n), "
                        "or an int32 array of any shape with .sem_kind (rule M2)", who), PL_EINVAL;
    int64_t sems = 1; /* SemaphoreType.REGULAR((4, 3)) is an array of 12; REGULAR one, rank 0 */
    for (int d = 0; s->space == PL_SEMAPHORE && d < s->rank; d++)
        sems = s->shape[d] < 1 || s->shape[d] > 65536 ? 0 : sems * s->shape[d];
    if (s->space == PL_SEMAPHORE && (sems < 1 || sems > 65536))
        return snprintf(msg, n, "%s: a semaphore array of %s semaphores; it holds 1 to 65536, each dimension >= 1 "
                        "(rule M2)", who, sems < 1 ? "no" : "more than 65536"), PL_EINVAL;
    if (s->space == PL_SMEM && pl_dtype_bits(s->dtype) != 32 && pl_dtype_bits(s->dtype) != 16 &&
        pl_dtype_bits(s->dtype) != 8)
        return snprintf(msg, n, "%s: SMEM holds scalars of 8, 16 or 32 bits, each in a 32-bit word; got %s (rule "
                        "M1)", who, pl_dtype_name(s->dtype)), PL_EDTYPE;
    return PL_OK;
}

/* One run_scoped type checked: scratch's rules (kern_scratch_rules), a valid shape. */
static void check_type(pl_ctx *c, const pl_scratch *t, int i)
{
    char who[64], msg[256];
    snprintf(who, sizeof who, "pl_run_scoped: types[%d]", i);
    int rc = kern_scratch_rules(t, who, msg, sizeof msg);
    if (rc) kern_fault(c, rc, "%s", msg);
    if (pl_dtype_size(t->dtype) == 0 || t->rank < 0 || t->rank > PL_MAX_RANK)
        kern_fault(c, PL_EINVAL, "pl_run_scoped: types[%d] has an invalid dtype or rank %d (rule K4)", i, t->rank);
    for (int d = 0; d < t->rank; d++)
        if (t->shape[d] < 0)
            kern_fault(c, PL_EINVAL, "pl_run_scoped: types[%d] has dimension %d of size %lld (rule K4)", i, d,
                       (long long)t->shape[d]);
}

/* The Ref of one scoped buffer at data, row-major; semaphores take KERN_SEM_STRIDE cells each. */
static pl_ref scoped_ref(const pl_scratch *t, void *data)
{
    pl_ref r = {.data = data, .dtype = t->space == PL_SEMAPHORE ? PL_I32 : t->dtype, .space = t->space,
                .rank = t->rank, .arg = -1, .role = PL_ROLE_SCRATCH,
                .sem_kind = (uint8_t)(t->space == PL_SEMAPHORE ? t->sem_kind : PL_SEM_NONE)};
    int64_t stride = t->space == PL_SEMAPHORE ? KERN_SEM_STRIDE : 1;
    for (int d = t->rank - 1; d >= 0; d--) {
        r.shape[d] = t->shape[d];
        r.stride[d] = stride;
        stride *= t->shape[d];
    }
    return r;
}

static int64_t elems_of(const pl_scratch *t)
{
    int64_t n = t->space == PL_SEMAPHORE ? KERN_SEM_STRIDE : 1;
    for (int d = 0; d < t->rank; d++) n = t->shape[d] > 0 && n > (INT64_MAX / 16) / t->shape[d] ? INT64_MAX / 16
                                                                                                 : n * t->shape[d];
    return n;
}

void pl_run_scoped(pl_ctx *c, const pl_scratch *types, int n, pl_scoped_fn body, void *user)
{
    if (!body || n < 0 || n > PL_MAX_SCRATCH || (n > 0 && !types))
        kern_fault(c, PL_EINVAL, "pl_run_scoped: %s (rule K4)", !body ? "body is NULL"
                   : n < 0 || n > PL_MAX_SCRATCH ? "n must be 0 to PL_MAX_SCRATCH (16)" : "types is NULL");
    pl_ref refs[PL_MAX_SCRATCH];
    int banked[PL_MAX_SCRATCH] = {0}; /* semaphores of types[i] in c->sem_bank */
    for (int i = n; i < PL_MAX_SCRATCH; i++) /* past the last: an error that says so when used, not garbage */
        refs[i] = (pl_ref){.arg = (int16_t)(KERN_ARG_MISSING - i)};
    for (int i = 0; i < n; i++) {
        const pl_scratch *t = &types[i];
        check_type(c, t, i);
        int64_t elems = elems_of(t);
        size_t bytes = (size_t)elems * pl_dtype_size(t->space == PL_SEMAPHORE ? PL_I32 : t->dtype);
        int64_t counted = t->space == PL_VMEM ? kern_laid_out_bytes(c, t->shape, t->rank, t->dtype) : 0;
        char what[96];
        snprintf(what, sizeof what, "pl_run_scoped: types[%d] (%s %s%s%s)", i, pl_memspace_name(t->space),
                 pl_dtype_name(t->dtype), t->name ? " " : "", t->name ? t->name : "");
        refs[i] = scoped_ref(t, kern_scoped_push(c, bytes, counted, what));
        int64_t sems = t->space == PL_SEMAPHORE ? elems / KERN_SEM_STRIDE : 0;
        if (sems && c->sem_bank && sems <= KERN_SEM_BARRIER - c->sem_bank_top) { /* fixed places (M13) */
            refs[i].data = c->sem_bank + c->sem_bank_top; /* 0, or what other cores signalled before we came */
            c->sem_bank_top += (int)sems; /* this core's alone: others find a place by its offset in the bank */
            banked[i] = (int)sems;
        }
        if (t->space != PL_SEMAPHORE && !c->cost_only) /* uninitialized memory reads as poison (V1) */
            for (int64_t e = 0; e < elems; e++)
                pl_store_elem((char *)refs[i].data + e * (int64_t)pl_dtype_size(t->dtype), t->dtype,
                              kern_poison_value(c, t->dtype));
    }
    body(c, refs, user);
    for (int i = n - 1; i >= 0; i--) {
        if (types[i].space == PL_SEMAPHORE)
            for (int64_t s = 0; s < elems_of(&types[i]) / KERN_SEM_STRIDE; s++)
                if (((const int64_t *)refs[i].data)[s] != 0)
                    kern_fault(c, PL_ESEMAPHORE, "pl_run_scoped: semaphore %lld of types[%d] holds %lld when its "
                               "scope ends; it must be 0 (rules M10, K4)", (long long)s, i,
                               (long long)((const int64_t *)refs[i].data)[s]);
        kern_scoped_pop(c, "pl_run_scoped");
        c->sem_bank_top -= banked[i];
    }
}
