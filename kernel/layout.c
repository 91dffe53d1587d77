/* kernel/layout.c: ops that move elements to other positions: a 2-D
 * transpose (pl_transpose, as x.T or jnp.transpose in a kernel) and the
 * widening of packed fp4 (pl_unpack_f4). Elementwise ops are in ops.c.
 *
 * Reshapes need no op: a Ref view (pl_ds, pl_at, or a Ref made from a
 * block's public shape and strides) re-reads the same bytes in another
 * shape, as a reshape that keeps the last dimension does in Mosaic.
 */
#include <string.h>

#include "rows.h"

/* ---- transpose ------------------------------------------------------------- */

void pl_transpose(pl_ctx *c, pl_ref dst, pl_ref src)
{
    const char *fn = "pl_transpose";
    check_pair(c, &dst, &src, fn);
    char a[96], b[96];
    if (src.rank != 2 || dst.rank != 2) {
        kern_ref_name(c, src.rank != 2 ? &src : &dst, a, sizeof a);
        kern_fault(c, PL_ESHAPE, "%s: %s has rank %d; it transposes 2-D blocks (take a 2-D view with pl_at or pl_ds "
                   "first)", fn, a, src.rank != 2 ? src.rank : dst.rank);
    }
    if (dst.shape[0] != src.shape[1] || dst.shape[1] != src.shape[0]) {
        kern_ref_name(c, &dst, a, sizeof a);
        kern_ref_name(c, &src, b, sizeof b);
        kern_fault(c, PL_ESHAPE, "%s: %s is (%lld, %lld) but the transpose of %s (%lld, %lld) is (%lld, %lld)", fn, a,
                   (long long)dst.shape[0], (long long)dst.shape[1], b, (long long)src.shape[0],
                   (long long)src.shape[1], (long long)src.shape[1], (long long)src.shape[0]);
    }
    note_pair(c, &dst, &src, fn);
    /* Cost (model choice, docs/CHIPS.md): the XLU turns whole (8, 128)
     * tiles while the vector slots stream them: one op per element, and no
     * faster than its bytes in and out of VMEM, the cost of a copy. */
    record_vpu(c, KERN_OP_VPU, &dst, 1, fn, kern_vmem_read(c, &src));
    if (c->cost_only) return;
    int64_t m = src.shape[0], n = src.shape[1];
    /* through a buffer, so that dst may be src itself (a square block in place) */
    double *buf = (double *)kern_tmp(c, 2 * (size_t)(m * n));
    for (int64_t r = 0; r < m; r++) load_row(buf + r * n, &src, row_ptr(&src, r), n);
    size_t es = pl_dtype_size(dst.dtype), sd = (size_t)inner_stride(&dst) * es;
    for (int64_t k = 0; k < n; k++) {
        char *d = row_ptr(&dst, k);
        for (int64_t r = 0; r < m; r++, d += sd) pl_store_elem(d, dst.dtype, buf[r * n + k]);
    }
}

/* ---- packed fp4 ------------------------------------------------------------ */

/* dst (..., 2n) = the fp4 e2m1 values packed in the bytes of src (..., n):
 * element 2k from byte k's low nibble, 2k + 1 from its high one (the
 * layout pl_f4_store writes), converted to dst's dtype. */
void pl_unpack_f4(pl_ctx *c, pl_ref dst, pl_ref src)
{
    const char *fn = "pl_unpack_f4";
    check_pair(c, &dst, &src, fn);
    if (src.dtype != PL_I8) {
        char a[96];
        kern_ref_name(c, &src, a, sizeof a);
        kern_fault(c, PL_EDTYPE, "%s: %s is %s; packed fp4 lives in int8 bytes, two values each", fn, a,
                   pl_dtype_name(src.dtype));
    }
    int same = dst.rank == src.rank && dst.rank > 0 && dst.shape[dst.rank - 1] == 2 * src.shape[src.rank - 1];
    for (int d = 0; same && d + 1 < dst.rank; d++) same = dst.shape[d] == src.shape[d];
    if (!same) {
        char a[96], b[96], sa[128], sb[128];
        kern_ref_name(c, &dst, a, sizeof a);
        kern_ref_name(c, &src, b, sizeof b);
        kern_format_point(dst.shape, dst.rank, sa, sizeof sa);
        kern_format_point(src.shape, src.rank, sb, sizeof sb);
        kern_fault(c, PL_ESHAPE, "%s: %s has shape %s, but the bytes of %s %s hold twice its last dimension in "
                   "values: dst must have src's shape with the last dimension doubled", fn, a, sa, b, sb);
    }
    note_pair(c, &dst, &src, fn);
    /* Cost (model choice, docs/CHIPS.md): one VPU op per value. The nibble
     * masks and shifts work on whole 32-bit words, 8 values each, and the
     * e2m1 -> wider conversion is a few word ops more: about one op per
     * value in all, where a float-arithmetic decode would take 15. */
    record_vpu(c, KERN_OP_VPU, &dst, 1, fn, kern_vmem_read(c, &src));
    if (c->cost_only) return;
    int64_t n = row_len(&src), rows = row_count(&dst);
    double *buf = (double *)kern_tmp(c, 4 * (size_t)n); /* 2n doubles, in floats */
    size_t ss = (size_t)inner_stride(&src);
    for (int64_t r = 0; r < rows; r++) {
        const uint8_t *p = (const uint8_t *)row_ptr(&src, r);
        for (int64_t k = 0; k < n; k++) {
            uint8_t b = p[(size_t)k * ss];
            buf[2 * k] = pl_f4e2m1_to_f32(b & 15);
            buf[2 * k + 1] = pl_f4e2m1_to_f32(b >> 4);
        }
        store_row(&dst, row_ptr(&dst, r), buf, 2 * n);
    }
}
