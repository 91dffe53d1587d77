/* kernel/checks.c: what block ops tell the checks about their reads and
 * writes (rules V1, V3 of PALLAS.md).
 *
 * Hardware cannot tell a kernel that it wrote into an input block (the write
 * never reaches HBM), that it read an accumulator nobody zeroed, or that it
 * read the garbage past the edge of an edge block: the results are just
 * wrong later. The executor describes each argument's buffer in c->args;
 * block ops call kern_note_write / kern_note_read with the views they touch,
 * and the first suspicious read is kept to explain a NaN that reaches HBM.
 */
#include <stdio.h>
#include <string.h>

#include "context.h"
#include "views.h"

static kern_arg *arg_of(pl_ctx *c, const pl_ref *r)
{
    return c->args && r->arg >= 0 && r->arg < c->n_args ? &c->args[r->arg] : NULL;
}

void kern_check_span(pl_ctx *c, const pl_ref *r, const char *fn)
{
    const kern_arg *a = arg_of(c, r);
    if (!a || !a->base || !r->data) return;
    int64_t lo = 0, hi = 0, cap = 0; /* the view's first and last element, from its start; the buffer's last */
    for (int d = 0; d < r->rank; d++) {
        if (r->shape[d] <= 0) return; /* empty: names no element */
        int64_t e = (r->shape[d] - 1) * r->stride[d];
        if (e < 0) lo += e;
        else hi += e;
    }
    for (int d = 0; d < a->tmpl.rank; d++) cap += (a->tmpl.shape[d] - 1) * a->tmpl.stride[d];
    size_t es = pl_dtype_size(r->dtype);
    int64_t off = ((const char *)r->data - a->base) / (int64_t)(es ? es : 1);
    if ((const char *)r->data >= a->base && off + lo >= 0 && off + hi <= cap) return;
    char name[96], shape[128], stride[128];
    kern_ref_name(c, r, name, sizeof name);
    kern_format_point(r->shape, r->rank, shape, sizeof shape);
    kern_format_point(r->stride, r->rank, stride, sizeof stride);
    kern_fault(c, PL_EBOUNDS, "%s on a view of %s with shape %s and strides %s: some of the elements it names lie "
               "outside that Ref's buffer (rule V2); a view made by hand (a transpose: shape and strides swapped) "
               "must stay inside its Ref", fn, name, shape, stride);
}

void kern_warn(pl_ctx *c, int arg, const char *rule, kern_warning what, const char *fmt, ...)
{
    if (!c->warn) return;
    char point[128], msg[512];
    kern_format_point(c->idx, c->grid_rank, point, sizeof point);
    int at = snprintf(msg, sizeof msg, "kernel %s at grid point %s: ", c->kernel_name ? c->kernel_name : "?", point);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + at, sizeof msg - (size_t)at, fmt, ap);
    va_end(ap);
    c->warn(c->warn_sink, arg, rule, what, msg);
}

/* Where view v starts inside its argument's buffer, per dimension of the
 * buffer's Ref, and how far it reaches: lo[d] <= index < hi[d]. Views only
 * offset the pointer, narrow dimensions (pl_ds) or drop leading ones (pl_at),
 * so the offset decomposes over the buffer's strides. */
static void view_extent(const kern_arg *a, const pl_ref *v, int64_t *lo, int64_t *hi)
{
    const pl_ref *t = &a->tmpl;
    size_t es = pl_dtype_size(t->dtype);
    int64_t off = es ? (int64_t)(((const char *)v->data - a->base) / (ptrdiff_t)es) : 0;
    int dropped = t->rank - v->rank;
    for (int d = 0; d < t->rank; d++) {
        lo[d] = t->shape[d] ? off / t->stride[d] % t->shape[d] : 0;
        hi[d] = lo[d] + (d >= dropped ? v->shape[d - dropped] : 1);
    }
}

static int covers_all(const kern_arg *a, const pl_ref *v)
{
    int64_t lo[PL_MAX_RANK], hi[PL_MAX_RANK];
    if (v->data != a->base || v->rank != a->tmpl.rank) return 0;
    view_extent(a, v, lo, hi);
    for (int d = 0; d < a->tmpl.rank; d++)
        if (lo[d] != 0 || hi[d] != a->tmpl.shape[d]) return 0;
    return 1;
}

/* On a mesh, other devices' copies may land in what the kernel touches (V4). */
static void mesh_access(pl_ctx *c, const pl_ref *r, int write)
{
    if (c->mesh && c->mesh->access && r->arg >= 0) c->mesh->access(c->mesh_run, c->unit, r, write, kern_point(c));
}

/* Copy m and a kernel op on r (fn, verb: "read", "wrote") overlap before m's wait: a finding naming both
 * (rule M7), an error under strict as every finding is; once a copy and a direction. */
static void report_in_flight(pl_ctx *c, const kern_dma *m, const pl_ref *r, const char *fn, const char *verb,
                             const char *doing, const char *outcome, const char *advice)
{
    char name[96], at[128], from[128], msg[512];
    kern_ref_name(c, r, name, sizeof name);
    kern_format_point(c->idx, c->grid_rank, at, sizeof at);
    kern_format_point(m->point, c->grid_rank, from, sizeof from);
    snprintf(msg, sizeof msg, "%s %s %s at grid point %s while copy %lld (started at grid point %s, %lld bytes) was "
             "still %s it: on a TPU %s; %s (rules M7, M8)", fn, verb, name, at, (long long)m->id, from,
             (long long)m->bytes, doing, outcome, advice);
    if (c->strict) kern_fault(c, PL_ERACE, "%s", msg);
    kern_warn(c, r->arg, "M7", KERN_WARN_DMA_INFLIGHT, "%s", msg);
}

/* A kernel op writes dst while a copy still reads its source there, or still lands in it: the copy carries
 * old or new values, or the landing bytes overwrite the store, by timing alone (M7). A remote copy's source
 * is free at its wait_send. */
static void check_write_in_flight(pl_ctx *c, const pl_ref *dst, const char *fn)
{
    for (int i = 0; i < c->n_dma; i++) {
        kern_dma *m = &c->dma[i];
        int src = kern_views_overlap(&m->src, dst), lands = !m->remote && kern_views_overlap(&m->dst, dst);
        if (m->written_early || (!src && !lands)) continue;
        m->written_early = 1;
        report_in_flight(c, m, dst, fn, "wrote", src ? "reading" : "writing",
                         src ? "the copy carries the old or the new values"
                             : "the copy's bytes or the store's win by timing alone",
                         m->remote ? "wait for the copy (wait_send) before writing there"
                                   : "wait for the copy (pltpu_copy_wait) before writing there");
    }
}

int kern_dma_refill_conflict(pl_ctx *c, const pl_ref *block, char *msg, size_t n)
{
    for (int i = 0; i < c->n_dma; i++) {
        kern_dma *m = &c->dma[i];
        int src = kern_views_overlap(&m->src, block), lands = !m->remote && kern_views_overlap(&m->dst, block);
        if (m->written_early || (!src && !lands)) continue;
        m->written_early = 1;
        char name[96], from[128];
        kern_ref_name(c, block, name, sizeof name);
        kern_format_point(m->point, c->grid_rank, from, sizeof from);
        snprintf(msg, n, "the pipeline copies the next block into the buffer of %s while copy %lld (started at grid "
                 "point %s, %lld bytes) is still %s it: on a TPU the copy carries that block's values, or its "
                 "bytes and the block's land in either order; wait for the copy before the step whose block "
                 "takes that buffer (rules M7, P1)", name, (long long)m->id, from, (long long)m->bytes,
                 src ? "reading" : "writing");
        return 1;
    }
    return 0;
}

void kern_note_write(pl_ctx *c, const pl_ref *dst, const char *fn)
{
    if (c->n_dma) check_write_in_flight(c, dst, fn);
    mesh_access(c, dst, 1);
    kern_arg *a = arg_of(c, dst);
    if (!a) return;
    a->written = 1;
    if ((dst->role == PL_ROLE_SCRATCH || dst->role == PL_ROLE_OUT) && !a->initialized && covers_all(a, dst))
        a->initialized = 1;
    if (!dst->readonly) return;
    char name[96];
    kern_ref_name(c, dst, name, sizeof name);
    if (c->strict)
        kern_fault(c, PL_EREADONLY, "%s writes into %s, an input block: the write never reaches HBM (rule V3)", fn,
                   name);
    if (!a->warned) {
        a->warned = 1;
        kern_warn(c, dst->arg, "V3", KERN_WARN_INPUT_WRITE, "%s writes into %s, an input block: the write never reaches HBM (rule V3)", fn, name);
    }
}

void kern_note_read(pl_ctx *c, const pl_ref *src, const char *fn) { kern_note_read_spare(c, src, fn, 0); }

void kern_note_read_spare(pl_ctx *c, const pl_ref *src, const char *fn, unsigned spare)
{
    if (c->n_dma) kern_check_read_in_flight(c, src, fn);
    mesh_access(c, src, 0);
    kern_arg *a = arg_of(c, src);
    if (!a) return;
    char name[96], point[128];
    if (src->role == PL_ROLE_SCRATCH && !a->initialized && !c->uninit_read[0]) {
        kern_ref_name(c, src, name, sizeof name);
        kern_format_point(c->idx, c->grid_rank, point, sizeof point);
        if (c->core > 0) { /* megacore: core 0's init at its first point never reaches this core */
            char nth[48];
            if (c->step == 0) snprintf(nth, sizeof nth, "its first grid point");
            else snprintf(nth, sizeof nth, "its grid point number %lld", (long long)c->step + 1);
            c->uninit_core = 1;
            snprintf(c->uninit_read, sizeof c->uninit_read,
                     "%s read %s at grid point %s, %s on core %d, before any op on core %d wrote all of it: "
                     "scratch is per core (rules G4, M2), so what core 0 wrote at its own first point is not "
                     "there; initialize scratch where each core starts its walk (when the reduction index is 0), "
                     "not at one grid point",
                     fn, name, point, nth, c->core, c->core);
        } else
            snprintf(c->uninit_read, sizeof c->uninit_read,
                     "%s read %s at grid point %s before any op wrote all of it (scratch starts uninitialized, "
                     "rule M2)",
                     fn, name, point);
    }
    if (src->role == PL_ROLE_OUT && !a->initialized && !c->out_read[0]) { /* o += x with no zeroing first */
        kern_ref_name(c, src, name, sizeof name);
        kern_format_point(c->idx, c->grid_rank, point, sizeof point);
        snprintf(c->out_read, sizeof c->out_read,
                 "%s read %s at grid point %s before any op wrote all of it: an output block is not fetched from "
                 "HBM, it starts as garbage (rule P4); zero it where its reduction starts (when the reduction "
                 "index is 0) before adding into it",
                 fn, name, point);
    }
    if (a->clipped && (!c->padding_read[0] || c->padding_spare)) {
        int64_t lo[PL_MAX_RANK], hi[PL_MAX_RANK];
        view_extent(a, src, lo, hi);
        for (int d = 0; d < a->tmpl.rank; d++) {
            if (lo[d] >= a->vlo[d] && hi[d] <= a->vhi[d]) continue;
            int vd = d - (a->tmpl.rank - src->rank), harmless = vd >= 0 && (spare >> vd & 1u);
            if (c->padding_read[0] && harmless) continue; /* a spare one is there already, or a real one */
            c->padding_spare = harmless;
            c->padding_past = a->vhi[d] <= a->vlo[d];
            kern_ref_name(c, src, name, sizeof name);
            kern_format_point(c->idx, c->grid_rank, point, sizeof point);
            if (c->padding_past) /* nothing of it inside: a block past the end, read as poison (B7) */
                snprintf(c->padding_read, sizeof c->padding_read,
                         "%s read %s at grid point %s, a block that lies wholly past the array's end along "
                         "dimension %d: its index map selected a block out of range, which out-of-bounds reads as "
                         "poison let run (rule B7)",
                         fn, name, point, d);
            else if (a->vlo[d] == 0)
                snprintf(c->padding_read, sizeof c->padding_read,
                         "%s read %s at grid point %s up to index %lld of dimension %d, but only %lld elements there "
                         "are inside the array: the rest of an edge block is garbage (rule B6)",
                         fn, name, point, (long long)hi[d] - 1, d, (long long)a->vhi[d]);
            else
                snprintf(c->padding_read, sizeof c->padding_read,
                         "%s read %s at grid point %s over indices %lld..%lld of dimension %d, but only %lld..%lld "
                         "there are inside the array: the rest is element padding, garbage (rules B5, B6)",
                         fn, name, point, (long long)lo[d], (long long)hi[d] - 1, d, (long long)a->vlo[d],
                         (long long)a->vhi[d] - 1);
            if (!harmless) break; /* a spare one may give way to a real one of a later dimension */
        }
    }
}

void kern_check_read_in_flight(pl_ctx *c, const pl_ref *src, const char *fn)
{
    for (int i = 0; i < c->n_dma; i++) {
        kern_dma *m = &c->dma[i];
        if (m->remote || m->read_early || !kern_views_overlap(&m->dst, src)) continue;
        m->read_early = 1;
        report_in_flight(c, m, src, fn, "read", "writing", "the read sees old or partial data",
                         "wait for the copy before reading its destination");
    }
}
