/* kernel/dma.c: asynchronous copies and regular semaphores (rules M7-M10,
 * V4), as kernel/pltpu.h describes them; the counts are kernel/sem.c's.
 *
 * The context keeps the copies in flight (started, not yet waited). In eager
 * mode a copy moves its data and adds its bytes to its semaphore at start();
 * in on_wait mode both happen when a wait needs them, in start order. A wait
 * takes the copies in flight on its semaphore, oldest first, until their
 * bytes cover what it needs; if even all of them cannot, nothing ever will:
 * that is a deadlock, reported instead of a hang. Starts and waits are
 * recorded in the op log so that the timing model can place them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "pltpu.h"
#include "views.h"

/* ---- copies' checks ------------------------------------------------------------- */

static void check_side(pl_ctx *c, const pl_ref *r, const char *side, const char *fn)
{
    kern_check_arg(c, r, fn);
    if (r->space == PL_SEMAPHORE) {
        char name[96];
        kern_ref_name(c, r, name, sizeof name);
        kern_fault(c, PL_ESPACE, "%s: the %s %s is a semaphore (rule M7)", fn, side, name);
    }
}

/* Mosaic's verifier: "Non-DMA semaphores are not supported for DMAs involving SMEM" (M8). */
static void check_regular_spaces(pl_ctx *c, const pl_ref *src, const pl_ref *dst, const char *fn)
{
    if (src->space != PL_SMEM && dst->space != PL_SMEM) return;
    kern_fault(c, PL_ESPACE, "%s: a copy %s SMEM signals a DMA semaphore only (Mosaic: \"Non-DMA semaphores are not "
               "supported for DMAs involving SMEM\"): declare it with PLTPU_SEMAPHORE_DMA (rule M8)", fn,
               src->space == PL_SMEM ? "from" : "into");
}

/* ---- descriptors made and never used ------------------------------------------------ */

void kern_desc_made(pl_ctx *c, const pl_ref *src, const pl_ref *dst, const pl_ref *sem, const char *fn)
{
    if (c->n_desc == (int)(sizeof c->desc / sizeof c->desc[0])) return; /* a finding needs only one */
    c->desc[c->n_desc++] = (struct kern_desc){src->data, dst->data, sem->data, dst->arg, src->arg, fn};
}

static int site_index(const struct kern_desc_site *s, int n, const struct kern_desc_site *k)
{
    for (int i = 0; i < n; i++)
        if (s[i].fn == k->fn && s[i].src == k->src && s[i].dst == k->dst && s[i].sem == k->sem) return i;
    return -1;
}

void kern_desc_used(pl_ctx *c, const pl_ref *src, const pl_ref *dst, const pl_ref *sem)
{
    for (int i = 0; i < c->n_desc; i++)
        if (c->desc[i].src == src->data && c->desc[i].dst == dst->data && c->desc[i].sem == sem->data) {
            struct kern_desc_site k = {c->desc[i].fn, c->desc[i].src_arg, c->desc[i].arg, c->desc[i].sem};
            if (site_index(c->used_site, c->n_used_site, &k) < 0) {
                if (c->n_used_site < (int)(sizeof c->used_site / sizeof *c->used_site)) c->used_site[c->n_used_site++] = k;
                else c->sites_lost = 1; /* too many kinds to tell: no finding rather than a false one */
            }
            c->desc[i] = c->desc[--c->n_desc];
            return;
        }
}

void kern_desc_step_end(pl_ctx *c)
{
    for (int i = 0; i < c->n_desc; i++) {
        struct kern_desc_site k = {c->desc[i].fn, c->desc[i].src_arg, c->desc[i].arg, c->desc[i].sem};
        if (site_index(c->idle_site, c->n_idle_site, &k) >= 0) continue;
        if (c->n_idle_site < (int)(sizeof c->idle_site / sizeof *c->idle_site)) c->idle_site[c->n_idle_site++] = k;
    }
    c->n_desc = 0;
}

void kern_desc_walk_end(pl_ctx *c)
{
    if (c->sites_lost) return;
    for (int i = 0; i < c->n_idle_site; i++) {
        const struct kern_desc_site *k = &c->idle_site[i];
        if (site_index(c->used_site, c->n_used_site, k) >= 0) continue; /* made at some steps, used at others */
        const char *src = k->src >= 0 && k->src < KERN_MAX_ARGS ? c->arg_name[k->src] : NULL;
        const char *dst = k->dst >= 0 && k->dst < KERN_MAX_ARGS ? c->arg_name[k->dst] : NULL;
        kern_warn(c, k->dst, "M7", KERN_WARN_UNUSED_COPY,
                  "%s made copy descriptors%s%s%s%s%s%s that were never started or waited at any grid point (JAX logs "
                  "\"AsyncCopyDescriptor was not used\"): the copy they describe never happens (rule M7)",
                  k->fn, src ? " from '" : "", src ? src : "", src ? "'" : "", dst ? " into '" : "", dst ? dst : "",
                  dst ? "'" : "");
        break; /* one finding says it */
    }
    c->n_idle_site = c->n_used_site = 0;
}

pltpu_copy pltpu_async_copy(pl_ctx *c, pl_ref src, pl_ref dst, pl_ref sem)
{
    if (kern_check_dma_sem(c, &sem, "pltpu_async_copy", "copy with")) check_regular_spaces(c, &src, &dst, "pltpu_async_copy");
    kern_desc_made(c, &src, &dst, &sem, "pltpu_async_copy");
    return (pltpu_copy){.src = src, .dst = dst, .sem = sem,
                        .bytes = kern_copy_check(c, &src, &dst, "pltpu_async_copy", "rule M7")};
}

/* kern_copy_check's faults, out of its hot path. */
static void copy_mismatch(pl_ctx *c, const pl_ref *src, const pl_ref *dst, const char *fn, const char *rule,
                          int same_shape)
{
    char a[96], b[96], sa[128], sb[128];
    kern_ref_name(c, src, a, sizeof a);
    kern_ref_name(c, dst, b, sizeof b);
    if (!same_shape) {
        kern_format_point(src->shape, src->rank, sa, sizeof sa);
        kern_format_point(dst->shape, dst->rank, sb, sizeof sb);
        kern_fault(c, PL_ESHAPE, "%s from %s of shape %s into %s of shape %s: shapes differ (%s)", fn, a, sa, b, sb,
                   rule);
    }
    kern_fault(c, PL_EDTYPE, "%s from %s into %s: a DMA does not convert dtypes (%s)", fn, a, b, rule);
}

/* V2 when the copy moves data: a source that runs past its Ref reads
 * poison there under oob_reads = poison; a destination past the end is
 * always an error. A handle only waited on is its byte count (JAX's
 * interpret mode waits by size: test_race_detection waits for several
 * copies with one descriptor longer than its Ref, never started). */
void kern_copy_past(pl_ctx *c, const pl_ref *src, const pl_ref *dst, const char *fn)
{
    char what[160];
    if (kern_is_past(src) && !c->oob_poison) {
        snprintf(what, sizeof what, "%s from a source", fn);
        kern_past_ref_fix(c, src, what, "a copy has no mask; end the slice at the Ref's edge, or run with "
                          "out-of-bounds reads as poison (pl_options.oob_reads = PL_OOB_POISON), "
                          "as JAX's interpret mode reads them with out_of_bounds_reads = \"uninitialized\"");
    }
    if (kern_is_past(dst)) {
        snprintf(what, sizeof what, "%s into a destination", fn);
        kern_past_ref_fix(c, dst, what, "a copy has no mask and a write past the end is always an error; end the "
                          "slice at the Ref's edge");
    }
}

/* The refs by pointer, not copied: this runs at every copy's make and start. */
int64_t kern_copy_check(pl_ctx *c, const pl_ref *src, const pl_ref *dst, const char *fn, const char *rule)
{
    check_side(c, src, "source", fn);
    check_side(c, dst, "destination", fn);
    int same = src->rank == dst->rank;
    for (int d = 0; same && d < src->rank; d++) same = src->shape[d] == dst->shape[d];
    if (!same || src->dtype != dst->dtype) copy_mismatch(c, src, dst, fn, rule, same);
    return pl_size(*src) * (int64_t)pl_dtype_size(src->dtype);
}

/* ---- moving data ----------------------------------------------------------------- */

/* Strided copy of equal shapes and dtypes, row by row over the last dim. */
void kern_dma_move(const pl_ref *dst, const pl_ref *src)
{
    int rank = src->rank;
    size_t es = pl_dtype_size(src->dtype);
    int64_t n = rank ? src->shape[rank - 1] : 1, rows = 1, idx[PL_MAX_RANK] = {0};
    for (int d = 0; d + 1 < rank; d++) rows *= src->shape[d];
    if (n == 0 || rows == 0) return;
    int64_t ss = rank ? src->stride[rank - 1] : 1, ds = rank ? dst->stride[rank - 1] : 1;
    for (int64_t r = 0; r < rows; r++) {
        int64_t so = 0, dof = 0;
        for (int d = 0; d + 1 < rank; d++) so += idx[d] * src->stride[d], dof += idx[d] * dst->stride[d];
        const char *s = (const char *)src->data + (size_t)so * es;
        char *t = (char *)dst->data + (size_t)dof * es;
        if (ss == 1 && ds == 1) memmove(t, s, (size_t)n * es);
        else
            for (int64_t i = 0; i < n; i++) memmove(t + (size_t)(i * ds) * es, s + (size_t)(i * ss) * es, es);
        for (int d = rank - 2; d >= 0; d--) {
            if (++idx[d] < src->shape[d]) break;
            idx[d] = 0;
        }
    }
}

/* move() for a source that runs past its Ref (V2, poison mode): element by
 * element, the part inside copied, the part past it poison. */
static void move_past(pl_ctx *c, const pl_ref *dst, const pl_ref *src)
{
    int rank = src->rank;
    int64_t idx[PL_MAX_RANK] = {0}, n = pl_size(*src);
    size_t es = pl_dtype_size(src->dtype);
    double poison = kern_poison_value(c, src->dtype);
    for (int64_t e = 0; e < n; e++) {
        int64_t so = 0, dof = 0, inside = 1;
        for (int d = 0; d < rank; d++) {
            so += idx[d] * src->stride[d], dof += idx[d] * dst->stride[d];
            inside &= idx[d] < src->shape[d] - src->past[d];
        }
        char *t = (char *)dst->data + (size_t)dof * es;
        if (inside) memmove(t, (const char *)src->data + (size_t)so * es, es);
        else pl_store_elem(t, dst->dtype, poison);
        for (int d = rank - 1; d >= 0; d--) {
            if (++idx[d] < src->shape[d]) break;
            idx[d] = 0;
        }
    }
    if (!c->oob_read[0]) {
        char name[96], point[128];
        kern_ref_name(c, src, name, sizeof name);
        kern_format_point(c->idx, c->grid_rank, point, sizeof point);
        snprintf(c->oob_read, sizeof c->oob_read, "a copy from a view of %s that runs past it, at grid point %s, "
                 "read poison (rule V2)", name, point);
    }
}

/* The units of a mesh run on host threads at once (M13): two cores may
 * copy into the same place, as JAX's test_can_signal_cores does (the same
 * values, harmless on the chip), and a device's copy may land in another
 * device's block while that one writes the block back (a race the mesh
 * reports). Every move in a mesh takes the mesh's lock, as its write-backs
 * do (sim/call/pipeline.c), so the host sees no data race. */
void kern_dma_move_shared(pl_ctx *c, const pl_ref *dst, const pl_ref *src)
{
    int shared = c->mesh != NULL;
    if (shared) c->mesh->lock(c->mesh_run);
    kern_dma_move(dst, src);
    if (shared) c->mesh->unlock(c->mesh_run);
}

static void land(pl_ctx *c, kern_dma *m)
{
    if (m->moved) return;
    if (!c->cost_only && !m->nomove && kern_is_past(&m->src)) move_past(c, &m->dst, &m->src);
    else if (!c->cost_only && !m->nomove) kern_dma_move_shared(c, &m->dst, &m->src);
    kern_sem_add_own(c, &m->sem, kern_sem_amount(&m->sem, m->bytes), "a finished copy"); /* M8: its bytes, or 1 */
    m->moved = 1;
}

/* ---- copies ------------------------------------------------------------------------ */

/* A copy of `bytes` from src to dst, its bytes counted on sem, enters the
 * copies in flight (and the op log, at its start); remote: dst is on another
 * device (kernel/remote.c), where only its own copies are compared (V4). */
kern_dma *kern_dma_push(pl_ctx *c, const pl_ref *src, const pl_ref *dst, const pl_ref *sem, int64_t bytes,
                        int to, int hops, const char *fn)
{
    if (to < 0) to = c->unit;
    int remote = to != c->unit;
    if (c->n_dma >= KERN_MAX_DMA_IN_FLIGHT) {
        char first[128];
        kern_format_point(c->dma[0].point, c->grid_rank, first, sizeof first);
        kern_fault(c, PL_ESEMAPHORE,
                   "%s: %d copies are already in flight, started and never waited (the oldest at grid "
                   "point %s): wait for each copy (pltpu_copy_wait) before starting more; a DMA engine queues a "
                   "bounded number of copies (rule M10)",
                   fn, KERN_MAX_DMA_IN_FLIGHT, first);
    }
    for (int i = 0; i < c->n_dma && !c->races_off; i++) { /* checks_off: no race is refused (V4) */
        /* only copies into one unit's memory can race: a cost-only mesh gives every device the same addresses */
        if (c->dma[i].to != to || !kern_views_overlap(&c->dma[i].dst, dst)) continue;
        char name[96], then[128];
        kern_ref_name(c, dst, name, sizeof name);
        kern_format_point(c->dma[i].point, c->grid_rank, then, sizeof then);
        kern_fault(c, PL_ERACE,
                   "%s into %s, whose bytes copy %lld (started at grid point %s) is still writing: "
                   "wait for it before starting another copy there (rule V4)",
                   fn, name, (long long)c->dma[i].id, then);
    }
    if (c->n_dma == c->cap_dma) {
        int cap = c->cap_dma ? 2 * c->cap_dma : 8;
        kern_dma *d = realloc(c->dma, (size_t)cap * sizeof *d);
        if (!d) kern_fault(c, PL_ENOMEM, "out of host memory for copies in flight");
        c->dma = d;
        c->cap_dma = cap;
    }
    if (c->args) {
        kern_note_read(c, src, fn);
        if (!remote) kern_note_write(c, dst, fn);
    }
    kern_dma *m = &c->dma[c->n_dma++];
    *m = (kern_dma){.src = *src, .dst = *dst, .sem = *sem, .bytes = bytes, .id = c->next_dma++,
                    .remote = (uint8_t)(remote != 0), .to = to};
    memcpy(m->point, c->idx, sizeof m->point);
    kern_op op = {.kind = KERN_OP_DMA_START, .dtype = (uint8_t)src->dtype, .elems = bytes, .dma = m->id,
                  .regular = sem->sem_kind == PL_SEM_REGULAR,
                  .m = !remote && (src->space == PL_ANY || dst->space == PL_ANY), .k = hops, .name = fn};
    kern_record(c, &op);
    return m;
}

void kern_ref_span(const pl_ref *r, uintptr_t *lo, uintptr_t *hi)
{
    int64_t last = 0;
    for (int d = 0; d < r->rank; d++) last += (r->shape[d] - 1) * r->stride[d];
    *lo = (uintptr_t)r->data;
    *hi = *lo + (uintptr_t)((last + 1) * (int64_t)pl_dtype_size(r->dtype));
}

void kern_copy_handle(pl_ctx *c, const pl_ref *src, const pl_ref *dst, int64_t bytes, const char *fn)
{
    int64_t have = kern_copy_check(c, src, dst, fn, "rule M7");
    if (have != bytes)
        kern_fault(c, PL_EINVAL, "%s: the copy's handle was changed after it was made: it says %lld bytes, but its "
                   "source and destination hold %lld; make a new handle instead (rule M7)", fn, (long long)bytes,
                   (long long)have);
}

void pltpu_copy_start(pl_ctx *c, const pltpu_copy *cp)
{
    if (kern_check_dma_sem(c, &cp->sem, "pltpu_copy_start", "start a copy on"))
        check_regular_spaces(c, &cp->src, &cp->dst, "pltpu_copy_start");
    kern_copy_handle(c, &cp->src, &cp->dst, cp->bytes, "pltpu_copy_start"); /* a handle is a value the kernel may change */
    kern_desc_used(c, &cp->src, &cp->dst, &cp->sem);
    kern_copy_past(c, &cp->src, &cp->dst, "pltpu_copy_start");
    kern_dma *m = kern_dma_push(c, &cp->src, &cp->dst, &cp->sem, cp->bytes, -1, 0, "pltpu_copy_start");
    if (c->mesh && pl_size(cp->src) > 0) /* other devices must not touch its bytes until its wait (V4) */
        m->nomove = (uint8_t)(c->mesh->local_copy(c->mesh_run, c->unit, &cp->src, &cp->dst,
                                                  (const int64_t *)cp->sem.data, kern_sem_amount(&cp->sem, cp->bytes),
                                                  kern_point(c)) != 0); /* what its wait takes: bytes, or 1 (M8) */
    if (!c->dma_on_wait) land(c, m);
}

/* G4: a copy started at one grid point and waited at another that differs
 * along a parallel axis runs on one TensorCore only while the chip has one:
 * a megacore chip splits that axis between its cores, and the wait there
 * never finishes (M10). Said once a call; an error under strict. */
static void check_parallel_wait(pl_ctx *c, const kern_dma *m, const char *fn)
{
    if (!c->parallel_axes || c->chain_warned) return;
    for (int a = 0; a < c->grid_rank && a < 32; a++) {
        if (!(c->parallel_axes >> a & 1) || m->point[a] == c->idx[a]) continue;
        char name[96], from[128], at[128], msg[700];
        kern_ref_name(c, &m->dst, name, sizeof name);
        kern_format_point(m->point, c->grid_rank, from, sizeof from);
        kern_format_point(c->idx, c->grid_rank, at, sizeof at);
        snprintf(msg, sizeof msg, "%s: copy %lld into %s was started at grid point %s and is waited at %s; the two "
                 "differ along axis %d, which is parallel: on a megacore chip (v4, v5p) the two points may run on "
                 "different TensorCores and this wait would never finish (rules G4, M10). Mark axis %d arbitrary, "
                 "or start and wait each copy at one grid point", fn, (long long)m->id, name, from, at, a, a);
        c->chain_warned = 1;
        if (c->strict) kern_fault(c, PL_ESEMAPHORE, "%s", msg);
        kern_warn(c, m->dst.arg, "G4", KERN_WARN_PARALLEL_WAIT, "%s", msg);
        return;
    }
}

int kern_dma_hand_over(pl_ctx *c, int arg)
{
    int n = 0;
    for (int i = 0; i < c->n_dma;) {
        kern_dma *m = &c->dma[i];
        if (m->sem.arg != arg) {
            i++;
            continue;
        }
        land(c, m); /* on_wait mode: its data moves now; its bytes are on the semaphore either way */
        memmove(m, m + 1, (size_t)(c->n_dma - i - 1) * sizeof *m);
        c->n_dma--;
        n++;
    }
    return n;
}

/* Take copies in flight on sem off the list, oldest first, until what they
 * add to it (their bytes, or 1 each on a regular semaphore, M8) covers
 * `need`: their data lands (on_wait mode), and the timing model waits for
 * each. Returns what they cover. */
static int64_t take_in_flight(pl_ctx *c, const pl_ref *sem, int64_t need, const char *fn)
{
    int64_t covered = 0;
    int waits = 0;
    for (int i = 0; i < c->n_dma && covered < need;) {
        kern_dma *m = &c->dma[i];
        if (m->sem.data != sem->data) {
            i++;
            continue;
        }
        land(c, m);
        check_parallel_wait(c, m, fn);
        covered += kern_sem_amount(&m->sem, m->bytes);
        /* m: the same wait as the copy before (one semaphore read for all it covers, dma_issue_us once) */
        kern_op op = {.kind = KERN_OP_DMA_WAIT, .elems = m->bytes, .dma = m->id, .m = waits++ > 0, .name = fn};
        kern_record(c, &op);
        memmove(m, m + 1, (size_t)(c->n_dma - i - 1) * sizeof *m);
        c->n_dma--;
    }
    return covered;
}

void kern_dma_take(pl_ctx *c, const pl_ref *sem, int64_t need, const char *fn)
{
    take_in_flight(c, sem, need, fn);
    kern_sem_take(c, sem, need, fn, 1);
}

void pltpu_copy_wait(pl_ctx *c, const pltpu_copy *cp)
{
    kern_refuse_regular_wait(c, &cp->sem, "pltpu_copy_wait");
    kern_check_sem(c, &cp->sem, PL_SEM_DMA, "pltpu_copy_wait", "wait on");
    kern_copy_handle(c, &cp->src, &cp->dst, cp->bytes, "pltpu_copy_wait");
    kern_desc_used(c, &cp->src, &cp->dst, &cp->sem);
    kern_dma_take(c, &cp->sem, cp->bytes, "pltpu_copy_wait");
}

/* ---- regular semaphores -------------------------------------------------------------- */

void pltpu_semaphore_signal(pl_ctx *c, pl_ref sem, int64_t inc)
{
    kern_check_sem(c, &sem, PL_SEM_REGULAR, "pltpu_semaphore_signal", "signal");
    if (inc < 0 || inc > INT32_MAX) {
        char name[96];
        kern_ref_name(c, &sem, name, sizeof name);
        kern_fault(c, PL_EINVAL, "pltpu_semaphore_signal on %s by %lld: the increment must be in 0..2^31-1 (rule M9)",
                   name, (long long)inc);
    }
    kern_sem_add_own(c, &sem, inc, "pltpu_semaphore_signal");
    if (c->mesh) { /* another device may wait for it: the timing model needs it */
        kern_op op = {.kind = KERN_OP_SEM_SIGNAL, .n = c->device, .elems = inc, .cell = (uintptr_t)sem.data,
                      .name = "pltpu_semaphore_signal"};
        kern_record(c, &op);
    }
}

void pltpu_semaphore_wait(pl_ctx *c, pl_ref sem, int64_t value)
{
    kern_check_sem(c, &sem, PL_SEM_REGULAR, "pltpu_semaphore_wait", "wait on");
    if (value < 0) {
        char name[96];
        kern_ref_name(c, &sem, name, sizeof name);
        kern_fault(c, PL_EINVAL, "pltpu_semaphore_wait on %s for %lld: the value must be >= 0 (rule M9)", name,
                   (long long)value);
    }
    /* copies signalling it (M8: 1 each) are taken as a DMA wait takes its bytes; in time, until they end */
    int64_t copies = take_in_flight(c, &sem, value, "pltpu_semaphore_wait");
    kern_sem_take(c, &sem, value, "pltpu_semaphore_wait", 0);
    if (c->mesh && value > copies) { /* in time, too: until the signals it takes were made */
        kern_op op = {.kind = KERN_OP_SEM_WAIT, .elems = value - copies, .cell = (uintptr_t)sem.data,
                      .name = "pltpu_semaphore_wait"};
        kern_record(c, &op);
    }
}

int64_t pltpu_semaphore_read(pl_ctx *c, pl_ref sem)
{
    kern_check_sem(c, &sem, sem.sem_kind == PL_SEM_DMA ? PL_SEM_DMA : PL_SEM_REGULAR, "pltpu_semaphore_read", "read");
    kern_sem_lock(c);
    int64_t v = *(const int64_t *)sem.data; /* 64 bits in two i32 cells */
    kern_sem_unlock(c);
    if (c->mesh && c->mesh->poll(c->mesh_run, c->unit, (const int64_t *)sem.data, v)) {
        char name[96];
        kern_ref_name(c, &sem, name, sizeof name);
        kern_fault(c, PL_EDEADLOCK, "pltpu_semaphore_read polls %s, which holds %lld, while every other device "
                   "of the mesh waits, polls or has ended: nothing can change it any more, so the loop never ends "
                   "(deadlock, rule M10)", name, (long long)v);
    }
    return v;
}
