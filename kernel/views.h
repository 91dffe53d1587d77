/* kernel/views.h: do two views of memory touch a common element? Shared
 * by the DMA layer (a copy started over one in flight, V4) and the checks
 * (a vector read of a copy's destination before its wait, M7). Internal to
 * kernel/; static inline, so that neither file calls the other.
 */
#ifndef TILESIM_KERNEL_VIEWS_H
#define TILESIM_KERNEL_VIEWS_H

#include <stdint.h>

#include "context.h"

/* Does view b touch an element of view a? Views of one buffer with the same
 * strides are compared per dimension; anything else by the bytes they span. */
static inline int kern_views_overlap(const pl_ref *a, const pl_ref *b)
{
    size_t es = pl_dtype_size(a->dtype);
    /* addresses as integers: cost-only ANY views are offsets from NULL (ref.c) */
    uintptr_t pa = (uintptr_t)a->data, pb = (uintptr_t)b->data;
    int64_t span_a = 1, span_b = 1;
    for (int d = 0; d < a->rank; d++) span_a += (a->shape[d] - 1) * a->stride[d];
    for (int d = 0; d < b->rank; d++) span_b += (b->shape[d] - 1) * b->stride[d];
    for (int d = 0; d < a->rank; d++)
        if (a->shape[d] == 0) return 0; /* an empty view touches nothing */
    for (int d = 0; d < b->rank; d++)
        if (b->shape[d] == 0) return 0;
    if (pb >= pa + (uintptr_t)span_a * es || pa >= pb + (uintptr_t)span_b * pl_dtype_size(b->dtype)) return 0;
    int same = a->rank == b->rank && a->dtype == b->dtype;
    for (int d = 0; same && d < a->rank; d++) same = a->stride[d] == b->stride[d];
    if (!same) return 1; /* spans overlap; be conservative */
    int64_t off = (int64_t)(pb - pa) / (int64_t)es; /* b's start relative to a's, in elements */
    for (int d = 0; d < a->rank; d++) { /* strides descend in the layouts tilesim makes */
        int64_t delta = off >= 0 ? off / a->stride[d] : -((-off + a->stride[d] - 1) / a->stride[d]);
        off -= delta * a->stride[d];
        if (delta + b->shape[d] <= 0 || delta >= a->shape[d]) return 0;
    }
    return 1;
}

#endif
