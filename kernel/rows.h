/* kernel/rows.h: what the block ops share: walking a Ref row by row (the last
 * dimension), loading and storing a row through double, the operand checks
 * and the cost record. Internal to kernel/; static inline so that each op
 * file gets its own copy without link-time names.
 *
 * A Ref's last dimension is the contiguous one for every block the simulator
 * makes; views (pl_ds, pl_at) may leave gaps between rows, so ops find each
 * row with row_ptr and step through it with the inner stride.
 */
#ifndef TILESIM_KERNEL_ROWS_H
#define TILESIM_KERNEL_ROWS_H

#include <string.h>

#include "context.h"

/* dst = src + s (mul 0) or src * s (mul 1) on integer refs, wrapping at dst's
 * width (kernel/ops.c; pl_add_scalar and pl_mul_scalar call it). */
void kern_int_scalar(pl_ctx *c, pl_ref dst, pl_ref src, double s, int mul, const char *fn);

/* ---- walking rows ----------------------------------------------------------- */

static inline int64_t row_len(const pl_ref *r) { return r->rank ? r->shape[r->rank - 1] : 1; }
static inline int64_t row_count(const pl_ref *r)
{
    if (!r->rank) return 1;
    return r->shape[r->rank - 1] ? pl_size(*r) / r->shape[r->rank - 1] : 0; /* an empty view has no rows */
}
static inline int64_t inner_stride(const pl_ref *r) { return r->rank ? r->stride[r->rank - 1] : 1; }

/* Address of the first element of row `row` (rows counted in row-major order). */
static inline char *row_ptr(const pl_ref *r, int64_t row)
{
    int64_t off = 0;
    for (int d = r->rank - 2; d >= 0; d--) {
        off += (row % r->shape[d]) * r->stride[d];
        row /= r->shape[d];
    }
    return (char *)r->data + (size_t)off * pl_dtype_size(r->dtype);
}

static inline void load_row(double *out, const pl_ref *r, const char *p, int64_t n)
{
    size_t step = (size_t)inner_stride(r) * pl_dtype_size(r->dtype);
    if (r->dtype == PL_F32) {
        for (int64_t i = 0; i < n; i++, p += step) { float f; memcpy(&f, p, 4); out[i] = f; }
        return;
    }
    for (int64_t i = 0; i < n; i++, p += step) out[i] = pl_load_elem(p, r->dtype);
}

static inline void store_row(const pl_ref *r, char *p, const double *in, int64_t n)
{
    size_t step = (size_t)inner_stride(r) * pl_dtype_size(r->dtype);
    for (int64_t i = 0; i < n; i++, p += step) pl_store_elem(p, r->dtype, in[i]);
}

/* ---- checks ----------------------------------------------------------------- */

/* r holds data a block op may touch: VMEM, and a dtype tilesim knows (M1). */
static inline void check_data(pl_ctx *c, const pl_ref *r, const char *fn)
{
    char name[96];
    if (r->space == PL_ANY || r->space == PL_SEMAPHORE) {
        kern_ref_name(c, r, name, sizeof name);
        kern_fault(c, PL_ESPACE, "%s on %s: memory space %s is reachable only by DMA (rule M1)", fn, name,
                   pl_memspace_name(r->space));
    }
    if (r->space == PL_SMEM) {
        kern_ref_name(c, r, name, sizeof name);
        kern_fault(c, PL_ESPACE, "%s on %s: SMEM holds 32-bit scalars read and written one at a time; use "
                   "pl_get / pl_set (rule M1)", fn, name);
    }
    if ((unsigned)r->dtype >= PL_DTYPE_COUNT) {
        kern_ref_name(c, r, name, sizeof name);
        kern_fault(c, PL_EDTYPE, "%s on %s: unknown dtype %d", fn, name, (int)r->dtype);
    }
}

/* The checks an op that writes dst from src starts with: both are Refs of
 * this kernel (kern_check_ref) and hold data a block op may touch. */
static inline void check_pair(pl_ctx *c, const pl_ref *dst, const pl_ref *src, const char *fn)
{
    kern_check_ref(c, dst, fn);
    kern_check_ref(c, src, fn);
    check_data(c, dst, fn);
    check_data(c, src, fn);
}

/* For the checks that watch accesses (uninitialized reads, races, writes to
 * inputs): fn read src and wrote dst. */
static inline void note_pair(pl_ctx *c, const pl_ref *dst, const pl_ref *src, const char *fn)
{
    if (!c->args) return;
    kern_note_read(c, src, fn);
    kern_note_write(c, dst, fn);
}

static inline void check_same_shape(pl_ctx *c, const pl_ref *dst, const pl_ref *src, const char *fn)
{
    int same = dst->rank == src->rank;
    for (int d = 0; same && d < dst->rank; d++) same = dst->shape[d] == src->shape[d];
    if (same) return;
    char a[96], b[96], sa[128], sb[128];
    kern_ref_name(c, dst, a, sizeof a);
    kern_ref_name(c, src, b, sizeof b);
    kern_format_point(dst->shape, dst->rank, sa, sizeof sa);
    kern_format_point(src->shape, src->rank, sb, sizeof sb);
    kern_fault(c, PL_ESHAPE, "%s: %s has shape %s but %s has shape %s", fn, a, sa, b, sb);
}

/* src broadcasts to dst: same rank, each dimension equal or 1. `what`
 * prefixes src's name ("the mask "), `rule` ends the message. */
static inline void check_broadcast(pl_ctx *c, const pl_ref *src, const pl_ref *dst, const char *fn, const char *what,
                                   const char *rule)
{
    int ok = src->rank == dst->rank;
    for (int d = 0; ok && d < src->rank; d++) ok = src->shape[d] == dst->shape[d] || src->shape[d] == 1;
    if (ok) return;
    char a[96], b[96], sa[128], sb[128];
    kern_ref_name(c, src, a, sizeof a);
    kern_ref_name(c, dst, b, sizeof b);
    kern_format_point(src->shape, src->rank, sa, sizeof sa);
    kern_format_point(dst->shape, dst->rank, sb, sizeof sb);
    kern_fault(c, PL_ESHAPE, "%s: %s%s has shape %s, which does not broadcast to %s of shape %s: each dimension "
               "must match or be 1%s", fn, what, a, sa, b, sb, rule);
}

/* ---- cost ------------------------------------------------------------------- */

/* The element slots of the vector registers an array of r's shape fills:
 * its last two dims padded to (8, 128) tiles (a (128, 1) column fills 16
 * registers, one lane of each used), a rank-1 array packed 1024 to one. */
static inline int64_t kern_vreg_slots(const pl_ref *r)
{
    if (r->rank <= 1) return r->rank ? (r->shape[0] + 1023) / 1024 * 1024 : 1024;
    int64_t lead = 1, rows = r->shape[r->rank - 2], cols = r->shape[r->rank - 1];
    for (int d = 0; d < r->rank - 2; d++) lead *= r->shape[d];
    return lead * ((rows + 7) / 8 * 8) * ((cols + 127) / 128 * 128);
}

/* An op `fn` that produced every element of dst, at flops_per_elem each,
 * after reading in_bytes (kern_vmem_read of its sources). The VPU works on
 * whole registers: m, the slots dst's registers hold, prices it
 * (sim/call/oplog.c). */
static inline void record_vpu(pl_ctx *c, kern_op_kind kind, const pl_ref *dst, double flops_per_elem, const char *fn,
                              int64_t in_bytes)
{
    kern_op op = {.kind = (uint8_t)kind, .dtype = (uint8_t)dst->dtype, .elems = pl_size(*dst), .name = fn,
                  .m = kern_vreg_slots(dst), .vmem = in_bytes + kern_vmem_write(c, dst)}; /* in_bytes: the reads */
    op.flops = flops_per_elem * (double)op.elems;
    kern_record(c, &op);
}

#endif
