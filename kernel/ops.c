/* kernel/ops.c: elementwise block ops (fill, copy with conversion, add, mul,
 * max, relu).
 *
 * Every op walks its operands row by row (the last dimension), because a Ref's
 * last dimension is the contiguous one for every block the simulator makes;
 * views may leave gaps between rows (kernel/rows.h). Common cases (same-dtype
 * copies, f32 fills, f32 -> bf16 casts) take fast paths; everything else goes
 * through double, which is exact for every dtype tilesim has.
 */
#include <math.h>
#include <string.h>

#include "rows.h"

typedef enum { EW_ADD, EW_MUL, EW_MAX, EW_COPY } ew_kind;

static int is_int(pl_dtype t) { return t == PL_I32 || t == PL_I8 || t == PL_I16; }

/* Store r at d, wrapped to t's width: every integer dtype is_int accepts has its own case (an
 * i16 once fell through to the i8 store and kept one byte of each element). */
static void store_int(char *d, pl_dtype t, int64_t r)
{
    if (t == PL_I32) { int32_t v = (int32_t)(uint32_t)r; memcpy(d, &v, 4); }
    else if (t == PL_I16) { int16_t v = (int16_t)(uint16_t)r; memcpy(d, &v, 2); }
    else *(int8_t *)d = (int8_t)(uint8_t)r;
}

/* Integer arithmetic (and integer narrowing) wraps at the dtype's width, as XLA's does; it goes
 * through uint64 so that i32 products stay exact before wrapping. */
static void int_row(const pl_ref *dst, char *d, const pl_ref *a, const char *pa, const pl_ref *b, const char *pb,
                    int64_t n, ew_kind kind)
{
    size_t sd = (size_t)inner_stride(dst) * pl_dtype_size(dst->dtype);
    size_t sa = (size_t)inner_stride(a) * pl_dtype_size(a->dtype);
    size_t sb = b ? (size_t)inner_stride(b) * pl_dtype_size(b->dtype) : 0;
    for (int64_t i = 0; i < n; i++, d += sd, pa += sa) { /* pb may be NULL (a copy): never offset it */
        int64_t x = (int64_t)pl_load_elem(pa, a->dtype), r;
        int64_t y = b ? (int64_t)pl_load_elem(pb + (size_t)i * sb, b->dtype) : 0;
        switch (kind) {
        case EW_COPY: r = x; break;
        case EW_ADD: r = (int64_t)((uint64_t)x + (uint64_t)y); break;
        case EW_MUL: r = (int64_t)((uint64_t)x * (uint64_t)y); break;
        default: r = x > y ? x : y; break;
        }
        store_int(d, dst->dtype, r);
    }
}

/* dst = src + s or src * s on integer refs (pl_add_scalar, pl_mul_scalar of
 * kernel/unary.c): jnp's integer array with a Python int, the result wrapping
 * at dst's width. A fractional scalar would make jnp's result float, which an
 * integer ref cannot hold: refused, naming the cast. */
void kern_int_scalar(pl_ctx *c, pl_ref dst, pl_ref src, double s, int mul, const char *fn)
{
    check_pair(c, &dst, &src, fn);
    char name[96];
    if (!is_int(src.dtype)) {
        kern_ref_name(c, &src, name, sizeof name);
        kern_fault(c, PL_EDTYPE, "%s: %s is %s but the destination is an integer ref; cast it first (pl_cast)", fn,
                   name, pl_dtype_name(src.dtype));
    }
    if (!(s == floor(s)) || fabs(s) > 9.2e18) {
        kern_ref_name(c, &dst, name, sizeof name);
        kern_fault(c, PL_EINVAL, "%s on %s (%s): the scalar %g is not a whole number; jnp would make the result "
                   "float, which an integer ref cannot hold: cast to a float ref first", fn, name,
                   pl_dtype_name(dst.dtype), s);
    }
    check_same_shape(c, &dst, &src, fn);
    note_pair(c, &dst, &src, fn);
    record_vpu(c, KERN_OP_VPU, &dst, 1, fn, kern_vmem_read(c, &src));
    if (c->cost_only) return;
    int64_t n = row_len(&dst), rows = row_count(&dst), k = (int64_t)s;
    size_t sd = (size_t)inner_stride(&dst) * pl_dtype_size(dst.dtype);
    size_t ss = (size_t)inner_stride(&src) * pl_dtype_size(src.dtype);
    for (int64_t r = 0; r < rows; r++) {
        char *d = row_ptr(&dst, r);
        const char *p = row_ptr(&src, r);
        for (int64_t i = 0; i < n; i++, d += sd, p += ss) {
            uint64_t x = (uint64_t)(int64_t)pl_load_elem(p, src.dtype);
            store_int(d, dst.dtype, (int64_t)(mul ? x * (uint64_t)k : x + (uint64_t)k));
        }
    }
}

/* ---- fill and copy --------------------------------------------------------- */

void pl_fill(pl_ctx *c, pl_ref dst, double value)
{
    kern_check_ref(c, &dst, "pl_fill");
    check_data(c, &dst, "pl_fill");
    if (c->args) kern_note_write(c, &dst, "pl_fill");
    record_vpu(c, KERN_OP_VPU, &dst, 1, "pl_fill", 0);
    if (c->cost_only) return;
    int64_t n = row_len(&dst), rows = row_count(&dst);
    if (dst.dtype == PL_F32 && inner_stride(&dst) == 1) {
        float f = (float)value;
        for (int64_t r = 0; r < rows; r++) {
            float *p = (float *)row_ptr(&dst, r);
            for (int64_t i = 0; i < n; i++) p[i] = f;
        }
        return;
    }
    char one[8];
    pl_store_elem(one, dst.dtype, value);
    size_t es = pl_dtype_size(dst.dtype), step = (size_t)inner_stride(&dst) * es;
    for (int64_t r = 0; r < rows; r++) {
        char *p = row_ptr(&dst, r);
        for (int64_t i = 0; i < n; i++, p += step) memcpy(p, one, es);
    }
}

/* pl_copy and pl_cast (its jnp name): fn names the one the kernel called. */
static void copy_as(pl_ctx *c, pl_ref dst, pl_ref src, const char *fn)
{
    check_pair(c, &dst, &src, fn);
    check_same_shape(c, &dst, &src, fn);
    note_pair(c, &dst, &src, fn);
    record_vpu(c, KERN_OP_COPY, &dst, 1, fn, kern_vmem_read(c, &src));
    if (c->cost_only) return;
    int64_t n = row_len(&dst), rows = row_count(&dst);
    int unit = inner_stride(&dst) == 1 && inner_stride(&src) == 1;
    if (unit && dst.dtype == src.dtype) {
        size_t bytes = (size_t)n * pl_dtype_size(dst.dtype);
        for (int64_t r = 0; r < rows; r++) memmove(row_ptr(&dst, r), row_ptr(&src, r), bytes);
        return;
    }
    if (unit && dst.dtype == PL_BF16 && src.dtype == PL_F32) {
        for (int64_t r = 0; r < rows; r++) {
            uint16_t *d = (uint16_t *)row_ptr(&dst, r);
            const float *s = (const float *)row_ptr(&src, r);
            for (int64_t i = 0; i < n; i++) d[i] = pl_f32_to_bf16(s[i]);
        }
        return;
    }
    if (is_int(dst.dtype) && is_int(src.dtype)) { /* integer narrowing keeps the low bits, as XLA does */
        for (int64_t r = 0; r < rows; r++)
            int_row(&dst, row_ptr(&dst, r), &src, row_ptr(&src, r), NULL, NULL, n, EW_COPY);
        return;
    }
    double *buf = (double *)kern_tmp(c, 2 * (size_t)n);
    for (int64_t r = 0; r < rows; r++) {
        load_row(buf, &src, row_ptr(&src, r), n);
        store_row(&dst, row_ptr(&dst, r), buf, n);
    }
}

void pl_copy(pl_ctx *c, pl_ref dst, pl_ref src) { copy_as(c, dst, src, "pl_copy"); }
void pl_cast(pl_ctx *c, pl_ref dst, pl_ref src) { copy_as(c, dst, src, "pl_cast"); }

/* ---- elementwise arithmetic ------------------------------------------------ */

static void elementwise(pl_ctx *c, pl_ref dst, pl_ref a, pl_ref b, ew_kind kind, const char *fn)
{
    kern_check_ref(c, &dst, fn);
    kern_check_ref(c, &a, fn);
    kern_check_ref(c, &b, fn);
    check_data(c, &dst, fn);
    check_data(c, &a, fn);
    check_data(c, &b, fn);
    check_same_shape(c, &dst, &a, fn);
    check_same_shape(c, &dst, &b, fn);
    if (c->args) {
        kern_note_read(c, &a, fn);
        kern_note_read(c, &b, fn);
        kern_note_write(c, &dst, fn);
    }
    record_vpu(c, KERN_OP_VPU, &dst, 1, fn, kern_vmem_read(c, &a) + kern_vmem_read(c, &b));
    if (c->cost_only) return;
    int64_t n = row_len(&dst), rows = row_count(&dst);
    if (is_int(dst.dtype) && is_int(a.dtype) && is_int(b.dtype)) {
        for (int64_t r = 0; r < rows; r++)
            int_row(&dst, row_ptr(&dst, r), &a, row_ptr(&a, r), &b, row_ptr(&b, r), n, kind);
        return;
    }
    double *x = (double *)kern_tmp(c, 4 * (size_t)n), *y = x + n;
    for (int64_t r = 0; r < rows; r++) {
        load_row(x, &a, row_ptr(&a, r), n);
        load_row(y, &b, row_ptr(&b, r), n);
        for (int64_t i = 0; i < n; i++)
            switch (kind) {
            case EW_ADD: x[i] += y[i]; break;
            case EW_MUL: x[i] *= y[i]; break;
            /* NaN propagates, as jnp.maximum does */
            case EW_MAX: x[i] = (x[i] != x[i] || x[i] > y[i]) ? x[i] : y[i]; break;
            case EW_COPY: break;
            }
        store_row(&dst, row_ptr(&dst, r), x, n);
    }
}

void pl_add(pl_ctx *c, pl_ref dst, pl_ref a, pl_ref b) { elementwise(c, dst, a, b, EW_ADD, "pl_add"); }
void pl_mul(pl_ctx *c, pl_ref dst, pl_ref a, pl_ref b) { elementwise(c, dst, a, b, EW_MUL, "pl_mul"); }
void pl_max(pl_ctx *c, pl_ref dst, pl_ref a, pl_ref b) { elementwise(c, dst, a, b, EW_MAX, "pl_max"); }

void pl_relu(pl_ctx *c, pl_ref dst, pl_ref src)
{
    kern_check_ref(c, &dst, "pl_relu");
    kern_check_ref(c, &src, "pl_relu");
    check_data(c, &dst, "pl_relu");
    check_data(c, &src, "pl_relu");
    check_same_shape(c, &dst, &src, "pl_relu");
    if (c->args) {
        kern_note_read(c, &src, "pl_relu");
        kern_note_write(c, &dst, "pl_relu");
    }
    record_vpu(c, KERN_OP_VPU, &dst, 1, "pl_relu", kern_vmem_read(c, &src));
    if (c->cost_only) return;
    int64_t n = row_len(&dst), rows = row_count(&dst);
    double *x = (double *)kern_tmp(c, 2 * (size_t)n);
    for (int64_t r = 0; r < rows; r++) {
        load_row(x, &src, row_ptr(&src, r), n);
        for (int64_t i = 0; i < n; i++) x[i] = x[i] != x[i] || x[i] > 0 ? x[i] : 0.0;
        store_row(&dst, row_ptr(&dst, r), x, n);
    }
}

