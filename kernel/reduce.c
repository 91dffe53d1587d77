/* kernel/reduce.c: sum, max and min of a rank-2 block along either axis,
 * with keepdims (jnp.sum(x, axis, keepdims=True), jnp.max, jnp.min): axis 1
 * reduces each row to an (r, 1) column, as pl_sum_rows / pl_max_rows; axis 0
 * reduces each column to a (1, n) row, which LayerNorm-style statistics over
 * a block's rows and masks built along the sublanes need.
 *
 * Float refs (f32, bf16, f16), accumulated in double and rounded once to
 * dst's dtype; int32 refs, as JAX's test_reduction counts masked elements,
 * exact, a sum wrapping as jnp's int32 sum does. The max of nothing is -inf
 * (the min +inf) and NaN wins, as in jnp.max; the sum of nothing is 0. Cost
 * (model choice): one VPU op per element reduced. */
#include <math.h>

#include "rows.h"

static void check_operand(pl_ctx *c, const pl_ref *r, const char *fn)
{
    kern_check_ref(c, r, fn);
    check_data(c, r, fn);
    int ok_dtype = pl_dtype_is_float(r->dtype) || r->dtype == PL_I32;
    if (ok_dtype && r->rank == 2) return; /* the usual case: no message to format */
    char name[96];
    kern_ref_name(c, r, name, sizeof name);
    if (!ok_dtype)
        kern_fault(c, PL_EDTYPE, "%s on %s: %s takes float refs (f32, bf16, f16) or int32", fn, name, fn);
    if (r->rank != 2)
        kern_fault(c, PL_ESHAPE, "%s: %s has rank %d; %s takes rank-2 refs (rows, columns)", fn, name, r->rank, fn);
}

static void check_result_shape(pl_ctx *c, const pl_ref *dst, const pl_ref *src, int axis, const char *fn)
{
    int64_t rows = axis == 0 ? 1 : src->shape[0], cols = axis == 0 ? src->shape[1] : 1;
    if (dst->shape[0] == rows && dst->shape[1] == cols) return;
    char a[96], b[96], sa[128], sb[128];
    kern_ref_name(c, dst, a, sizeof a);
    kern_ref_name(c, src, b, sizeof b);
    kern_format_point(dst->shape, 2, sa, sizeof sa);
    kern_format_point(src->shape, 2, sb, sizeof sb);
    kern_fault(c, PL_ESHAPE, "%s: %s has shape %s, but reducing %s of shape %s along axis %d with keepdims gives "
               "(%lld, %lld)", fn, a, sa, b, sb, axis, (long long)rows, (long long)cols);
}

enum { R_SUM, R_MAX, R_MIN };

static void acc_row(double *acc, const double *x, int64_t n, int how)
{
    if (how == R_SUM) {
        for (int64_t i = 0; i < n; i++) acc[i] += x[i];
        return;
    }
    for (int64_t i = 0; i < n; i++) /* NaN wins and stays, as in jnp.max */
        if (acc[i] == acc[i] && (x[i] != x[i] || (how == R_MAX ? x[i] > acc[i] : x[i] < acc[i]))) acc[i] = x[i];
}

/* An int32 sum wraps (two's complement, as jnp's); a double holds it exactly below 2^53. */
static void wrap_i32(const pl_ref *dst, double *acc, int64_t n, int how)
{
    if (dst->dtype != PL_I32 || how != R_SUM) return;
    for (int64_t i = 0; i < n; i++) acc[i] = (double)(int32_t)(uint32_t)(uint64_t)(int64_t)acc[i];
}

static void reduce(pl_ctx *c, pl_ref dst, pl_ref src, int axis, int how, const char *fn)
{
    check_operand(c, &dst, fn);
    check_operand(c, &src, fn);
    if (axis < 0) axis += 2; /* -1 is the last axis, as in jnp */
    if (axis != 0 && axis != 1)
        kern_fault(c, PL_EINVAL, "%s: axis %d of a rank-2 ref; use 0 (down the columns) or 1 (along the rows)", fn,
                   axis < 0 ? axis - 2 : axis);
    check_result_shape(c, &dst, &src, axis, fn);
    if (c->args) {
        kern_note_read(c, &src, fn);
        kern_note_write(c, &dst, fn);
    }
    int64_t rows = src.shape[0], n = src.shape[1];
    kern_op op = {.kind = KERN_OP_VPU, .dtype = (uint8_t)dst.dtype, .elems = pl_size(dst), .name = fn};
    op.flops = (double)(rows * n);
    op.vmem = kern_vmem_read(c, &src);
    op.vmem += kern_vmem_write(c, &dst);
    kern_record(c, &op);
    if (c->cost_only || op.elems == 0) return;
    double init = how == R_MAX ? -INFINITY : how == R_MIN ? INFINITY : 0.0;
    double *x = (double *)kern_tmp(c, 4 * (size_t)(n + 1)), *acc = x + n + 1;
    if (axis == 0) {
        for (int64_t i = 0; i < n; i++) acc[i] = init;
        for (int64_t r = 0; r < rows; r++) {
            load_row(x, &src, row_ptr(&src, r), n);
            acc_row(acc, x, n, how);
        }
        wrap_i32(&dst, acc, n, how);
        store_row(&dst, row_ptr(&dst, 0), acc, n);
        return;
    }
    for (int64_t r = 0; r < rows; r++) {
        load_row(x, &src, row_ptr(&src, r), n);
        acc[0] = init;
        for (int64_t i = 0; i < n; i++) acc_row(acc, x + i, 1, how);
        wrap_i32(&dst, acc, 1, how);
        store_row(&dst, row_ptr(&dst, r), acc, 1);
    }
}

void pl_reduce_sum(pl_ctx *c, pl_ref dst, pl_ref src, int axis) { reduce(c, dst, src, axis, R_SUM, "pl_reduce_sum"); }
void pl_reduce_max(pl_ctx *c, pl_ref dst, pl_ref src, int axis) { reduce(c, dst, src, axis, R_MAX, "pl_reduce_max"); }
void pl_reduce_min(pl_ctx *c, pl_ref dst, pl_ref src, int axis) { reduce(c, dst, src, axis, R_MIN, "pl_reduce_min"); }
