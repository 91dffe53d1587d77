/* kernel/masked.c: masked loads and stores (rule V6), as pl.load(ref, idx,
 * mask=, other=) and pl.store(ref, idx, val, mask=).
 *
 * A ragged array's last block is read and written through a pl_ds range
 * that runs past the end of the Ref (ref.c keeps how many elements of each
 * dimension lie past it in pl_ref.past). Only these ops take such a view:
 * they visit element by element and never touch an element past the end
 * unless the mask turns it on, in which case a store fails (PL_EBOUNDS) and a
 * load fails too, or reads poison under oob_reads = poison (V2). So a kernel
 * that masks its tail never reads or writes host memory past its buffers.
 */
#include <stdio.h>

#include "rows.h"

/* The part of view r that lies inside its Ref, for the checks (V1, V3). */
static pl_ref inside_part(const pl_ref *r)
{
    pl_ref v = *r;
    for (int d = 0; d < v.rank; d++) v.shape[d] -= v.past[d], v.past[d] = 0;
    return v;
}

static char *elem_at(const pl_ref *r, const int64_t *idx)
{
    int64_t off = 0;
    for (int d = 0; d < r->rank; d++) off += idx[d] * r->stride[d];
    return (char *)r->data + (size_t)off * pl_dtype_size(r->dtype);
}

static int is_inside(const pl_ref *r, const int64_t *idx)
{
    for (int d = 0; d < r->rank; d++)
        if (idx[d] >= r->shape[d] - r->past[d]) return 0;
    return 1;
}

/* The mask's element for dst's element idx, broadcasting its size-1 dims. */
static int mask_on(const pl_ref *m, const int64_t *idx)
{
    if (!m) return 1;
    int64_t off = 0;
    for (int d = 0; d < m->rank; d++) off += (m->shape[d] == 1 ? 0 : idx[d]) * m->stride[d];
    return pl_load_elem((const char *)m->data + (size_t)off * pl_dtype_size(m->dtype), m->dtype) != 0;
}

static void check_mask(pl_ctx *c, const pl_ref *m, const pl_ref *dst, const char *fn)
{
    kern_check_ref(c, m, fn);
    check_data(c, m, fn);
    check_broadcast(c, m, dst, fn, "the mask ", " (rule V6)");
}

/* An unmasked element past the end of view r, at idx. */
static void past_fault(pl_ctx *c, const pl_ref *r, const int64_t *idx, const char *fn, const char *what)
{
    char name[96], at[128];
    kern_ref_name(c, r, name, sizeof name);
    kern_format_point(idx, r->rank, at, sizeof at);
    kern_fault(c, PL_EBOUNDS, "%s %s element %s of a view of %s that lies past the Ref, and the mask does not "
               "exclude it: mask the ragged tail (pl_mask_lt) (rules V2, V6)", fn, what, at, name);
}

static int next_index(int64_t *idx, const pl_ref *r)
{
    for (int d = r->rank - 1; d >= 0; d--) {
        if (++idx[d] < r->shape[d]) return 1;
        idx[d] = 0;
    }
    return 0;
}

/* Remember the first poison read to explain a NaN that reaches HBM (V1). */
static void note_poison(pl_ctx *c, const pl_ref *src, const int64_t *idx)
{
    if (c->oob_read[0]) return;
    char name[96], at[128], point[128];
    kern_ref_name(c, src, name, sizeof name);
    kern_format_point(idx, src->rank, at, sizeof at);
    kern_format_point(c->idx, c->grid_rank, point, sizeof point);
    snprintf(c->oob_read, sizeof c->oob_read,
             "pl_load read element %s of a view of %s past the Ref at grid point %s and got poison (rule V2)", at,
             name, point);
}

void pl_load(pl_ctx *c, pl_ref dst, pl_ref src, const pl_ref *mask, double other)
{
    kern_check_ref(c, &dst, "pl_load");
    kern_check_arg(c, &src, "pl_load");
    check_data(c, &dst, "pl_load");
    check_data(c, &src, "pl_load");
    check_same_shape(c, &dst, &src, "pl_load");
    if (mask) check_mask(c, mask, &dst, "pl_load");
    if (c->args) {
        pl_ref in = inside_part(&src);
        kern_note_read(c, &in, "pl_load");
        if (mask) kern_note_read(c, mask, "pl_load");
        kern_note_write(c, &dst, "pl_load");
    }
    record_vpu(c, KERN_OP_VPU, &dst, 1, "pl_load", kern_vmem_read(c, &src) + (mask ? kern_vmem_read(c, mask) : 0));
    if (c->cost_only || pl_size(dst) == 0) return;
    int64_t idx[PL_MAX_RANK] = {0};
    do {
        double v = other;
        if (mask_on(mask, idx)) {
            if (is_inside(&src, idx)) v = pl_load_elem(elem_at(&src, idx), src.dtype);
            else if (c->oob_poison) v = kern_poison_value(c, src.dtype), note_poison(c, &src, idx);
            else past_fault(c, &src, idx, "pl_load", "reads");
        }
        pl_store_elem(elem_at(&dst, idx), dst.dtype, v);
    } while (next_index(idx, &dst));
}

void pl_store(pl_ctx *c, pl_ref dst, pl_ref src, const pl_ref *mask)
{
    kern_check_arg(c, &dst, "pl_store");
    kern_check_ref(c, &src, "pl_store");
    check_data(c, &dst, "pl_store");
    check_data(c, &src, "pl_store");
    check_same_shape(c, &dst, &src, "pl_store");
    if (mask) check_mask(c, mask, &dst, "pl_store");
    /* every unmasked element must be inside before any is written: a failed
     * store leaves dst as it was */
    int64_t idx[PL_MAX_RANK] = {0};
    if (!c->cost_only && kern_is_past(&dst) && pl_size(dst) > 0)
        do
            if (!is_inside(&dst, idx) && mask_on(mask, idx)) past_fault(c, &dst, idx, "pl_store", "writes");
        while (next_index(idx, &dst));
    if (c->args) {
        pl_ref out = inside_part(&dst);
        kern_note_read(c, &src, "pl_store");
        if (mask) kern_note_read(c, mask, "pl_store");
        kern_note_write(c, &out, "pl_store");
    }
    record_vpu(c, KERN_OP_VPU, &dst, 1, "pl_store", kern_vmem_read(c, &src) + (mask ? kern_vmem_read(c, mask) : 0));
    if (c->cost_only || pl_size(dst) == 0) return;
    for (int d = 0; d < PL_MAX_RANK; d++) idx[d] = 0;
    do
        if (mask_on(mask, idx))
            pl_store_elem(elem_at(&dst, idx), dst.dtype, pl_load_elem(elem_at(&src, idx), src.dtype));
    while (next_index(idx, &dst));
}

void pl_mask_lt(pl_ctx *c, pl_ref mask, int dim, int64_t n)
{
    kern_check_ref(c, &mask, "pl_mask_lt");
    check_data(c, &mask, "pl_mask_lt");
    if (dim < 0 || dim >= mask.rank) {
        char name[96];
        kern_ref_name(c, &mask, name, sizeof name);
        kern_fault(c, PL_EINVAL, "pl_mask_lt on dimension %d of %s, which has rank %d (rule V6)", dim, name,
                   mask.rank);
    }
    if (c->args) kern_note_write(c, &mask, "pl_mask_lt");
    record_vpu(c, KERN_OP_VPU, &mask, 1, "pl_mask_lt", 0);
    if (c->cost_only || pl_size(mask) == 0) return;
    int64_t idx[PL_MAX_RANK] = {0};
    do
        pl_store_elem(elem_at(&mask, idx), mask.dtype, idx[dim] < n ? 1 : 0);
    while (next_index(idx, &mask));
}
