/* kernel/math.c: the block ops softmax and attention kernels need: exp,
 * scale, sub, row reductions with keepdims (max, sum), a column or a row
 * broadcast across a block, and a triangular (causal) mask.
 *
 * They take float refs (f32, bf16, f16), in any mix: an integer ref faults
 * with PL_EDTYPE. Each row of every source is loaded into double, computed,
 * and rounded once to dst's dtype. dst may be one of the sources (in place):
 * the broadcast row is read before the walk, and each row of the sources is
 * read before the same row of dst is written.
 *
 * Cost (model choice): one VPU FLOP per element produced for sub, scale,
 * add, mul and the mask; four for exp and division, which go through the
 * transcendental unit (exp, or a reciprocal and a multiply). A reduction
 * produces one element per row but counts one FLOP per element it reduces.
 */
#include <math.h>

#include "rows.h"

#define FLOPS_SIMPLE 1.0         /* add, sub, mul, scale, mask: one VPU op per element */
#define FLOPS_TRANSCENDENTAL 4.0 /* exp, division */

/* ---- checks ----------------------------------------------------------------- */

static void check_float(pl_ctx *c, const pl_ref *r, const char *fn)
{
    kern_check_ref(c, r, fn);
    check_data(c, r, fn);
    if (pl_dtype_is_float(r->dtype)) return;
    char name[96];
    kern_ref_name(c, r, name, sizeof name);
    kern_fault(c, PL_EDTYPE, "%s on %s: %s takes float refs (f32, bf16, f16)", fn, name, fn);
}

static void check_rank2(pl_ctx *c, const pl_ref *r, const char *fn)
{
    if (r->rank == 2) return;
    char name[96];
    kern_ref_name(c, r, name, sizeof name);
    kern_fault(c, PL_ESHAPE, "%s: %s has rank %d; %s takes rank-2 refs (rows, columns)", fn, name, r->rank, fn);
}

/* r (rank 2) must have shape (rows, cols); `what` says why, in terms of the ref `of`. */
static void check_shape_2d(pl_ctx *c, const pl_ref *r, int64_t rows, int64_t cols, const char *what, const pl_ref *of,
                           const char *fn)
{
    if (r->shape[0] == rows && r->shape[1] == cols) return;
    char a[96], b[96], sa[128], sb[128];
    kern_ref_name(c, r, a, sizeof a);
    kern_ref_name(c, of, b, sizeof b);
    kern_format_point(r->shape, r->rank, sa, sizeof sa);
    kern_format_point(of->shape, of->rank, sb, sizeof sb);
    kern_fault(c, PL_ESHAPE, "%s: %s has shape %s, but %s %s of shape %s must have shape (%lld, %lld)", fn, a, sa,
               what, b, sb, (long long)rows, (long long)cols);
}

/* ---- elementwise, with broadcasting ---------------------------------------- */

typedef enum { M_EXP, M_SCALE, M_TRIL, M_SUB, M_ADD, M_MUL, M_DIV } map_kind;
typedef enum { BC_SAME, BC_COL, BC_ROW } bcast;

/* dst = op(a) when b is NULL; otherwise dst = a op b, with b of a's shape
 * (BC_SAME), a (rows, 1) column (BC_COL) or a (1, cols) row (BC_ROW)
 * broadcast across a. s is the scale (M_SCALE) or the fill value (M_TRIL);
 * diag is the last kept diagonal (M_TRIL). */
static void map_rows(pl_ctx *c, pl_ref dst, pl_ref a, const pl_ref *b, bcast bc, map_kind k, double s, int64_t diag,
                     const char *fn)
{
    check_float(c, &dst, fn);
    check_float(c, &a, fn);
    if (b) check_float(c, b, fn);
    check_same_shape(c, &dst, &a, fn);
    if (b && bc == BC_SAME) check_same_shape(c, &dst, b, fn);
    if (bc != BC_SAME || k == M_TRIL) {
        check_rank2(c, &a, fn);
        if (b) check_rank2(c, b, fn);
    }
    if (bc == BC_COL) check_shape_2d(c, b, a.shape[0], 1, "a column broadcast across", &a, fn);
    if (bc == BC_ROW) check_shape_2d(c, b, 1, a.shape[1], "a row broadcast across", &a, fn);
    if (c->args) {
        kern_note_read(c, &a, fn);
        if (b) kern_note_read(c, b, fn);
        kern_note_write(c, &dst, fn);
    }
    /* exp runs on the EUP (counted in the report's eup_elems); its time is VPU time at 4 per element */
    record_vpu(c, k == M_EXP ? KERN_OP_EUP : KERN_OP_VPU, &dst,
               k == M_EXP || k == M_DIV ? FLOPS_TRANSCENDENTAL : FLOPS_SIMPLE, fn,
               kern_vmem_read(c, &a) + (b ? kern_vmem_read(c, b) : 0));
    if (c->cost_only) return;
    int64_t n = row_len(&dst), rows = row_count(&dst);
    if (!n || !rows) return;
    double *x = (double *)kern_tmp(c, 4 * (size_t)n), *y = x + n;
    int64_t ys = bc == BC_COL ? 0 : 1; /* a column's one value serves the whole row */
    if (bc == BC_ROW) load_row(y, b, row_ptr(b, 0), n);
    if (diag > n) diag = n; /* keeps r + diag + 1 from overflowing: nothing or everything is masked */
    if (diag < -rows - 1) diag = -rows - 1;
    for (int64_t r = 0; r < rows; r++) {
        load_row(x, &a, row_ptr(&a, r), n);
        if (bc == BC_SAME && b) load_row(y, b, row_ptr(b, r), n);
        if (bc == BC_COL) load_row(y, b, row_ptr(b, r), 1);
        switch (k) {
        case M_EXP: for (int64_t i = 0; i < n; i++) x[i] = exp(x[i]); break;
        case M_SCALE: for (int64_t i = 0; i < n; i++) x[i] *= s; break;
        case M_TRIL: /* columns past diagonal r + diag take the fill value */
            for (int64_t i = r + diag + 1 > 0 ? r + diag + 1 : 0; i < n; i++) x[i] = s;
            break;
        case M_SUB: for (int64_t i = 0; i < n; i++) x[i] -= y[i * ys]; break;
        case M_ADD: for (int64_t i = 0; i < n; i++) x[i] += y[i * ys]; break;
        case M_MUL: for (int64_t i = 0; i < n; i++) x[i] *= y[i * ys]; break;
        case M_DIV: for (int64_t i = 0; i < n; i++) x[i] /= y[i * ys]; break;
        }
        store_row(&dst, row_ptr(&dst, r), x, n);
    }
}

void pl_exp(pl_ctx *c, pl_ref dst, pl_ref src) { map_rows(c, dst, src, NULL, BC_SAME, M_EXP, 0, 0, "pl_exp"); }
void pl_scale(pl_ctx *c, pl_ref dst, pl_ref src, double s)
{
    map_rows(c, dst, src, NULL, BC_SAME, M_SCALE, s, 0, "pl_scale");
}
void pl_sub(pl_ctx *c, pl_ref dst, pl_ref a, pl_ref b) { map_rows(c, dst, a, &b, BC_SAME, M_SUB, 0, 0, "pl_sub"); }
void pl_sub_col(pl_ctx *c, pl_ref dst, pl_ref a, pl_ref col)
{
    map_rows(c, dst, a, &col, BC_COL, M_SUB, 0, 0, "pl_sub_col");
}
void pl_mul_col(pl_ctx *c, pl_ref dst, pl_ref a, pl_ref col)
{
    map_rows(c, dst, a, &col, BC_COL, M_MUL, 0, 0, "pl_mul_col");
}
void pl_div_col(pl_ctx *c, pl_ref dst, pl_ref a, pl_ref col)
{
    map_rows(c, dst, a, &col, BC_COL, M_DIV, 0, 0, "pl_div_col");
}
void pl_add_row(pl_ctx *c, pl_ref dst, pl_ref a, pl_ref row)
{
    map_rows(c, dst, a, &row, BC_ROW, M_ADD, 0, 0, "pl_add_row");
}
void pl_mul_row(pl_ctx *c, pl_ref dst, pl_ref a, pl_ref row)
{
    map_rows(c, dst, a, &row, BC_ROW, M_MUL, 0, 0, "pl_mul_row");
}
void pl_tril(pl_ctx *c, pl_ref dst, pl_ref src, int64_t k, double value)
{
    map_rows(c, dst, src, NULL, BC_SAME, M_TRIL, value, k, "pl_tril");
}

/* ---- reductions along the last axis ------------------------------------------ */

static void reduce_rows(pl_ctx *c, pl_ref dst, pl_ref src, int is_max, const char *fn)
{
    check_float(c, &dst, fn);
    check_float(c, &src, fn);
    check_rank2(c, &src, fn);
    check_rank2(c, &dst, fn);
    check_shape_2d(c, &dst, src.shape[0], 1, "the keepdims result of reducing", &src, fn);
    note_pair(c, &dst, &src, fn);
    int64_t n = src.shape[1], rows = src.shape[0];
    kern_op op = {.kind = KERN_OP_VPU, .dtype = (uint8_t)dst.dtype, .elems = rows, .name = fn};
    op.flops = FLOPS_SIMPLE * (double)(rows * n);
    op.vmem = kern_vmem_read(c, &src);
    op.vmem += kern_vmem_write(c, &dst);
    kern_record(c, &op);
    if (c->cost_only) return;
    double *x = n ? (double *)kern_tmp(c, 2 * (size_t)n) : NULL;
    for (int64_t r = 0; r < rows; r++) {
        load_row(x, &src, row_ptr(&src, r), n);
        double acc = is_max ? -INFINITY : 0.0; /* the empty row's result: max's and sum's identity */
        if (is_max) {
            for (int64_t i = 0; i < n && acc == acc; i++) /* NaN wins and stays, as in jnp.max */
                if (x[i] != x[i] || x[i] > acc) acc = x[i];
        } else {
            for (int64_t i = 0; i < n; i++) acc += x[i];
        }
        store_row(&dst, row_ptr(&dst, r), &acc, 1);
    }
}

void pl_max_rows(pl_ctx *c, pl_ref dst, pl_ref src) { reduce_rows(c, dst, src, 1, "pl_max_rows"); }
void pl_sum_rows(pl_ctx *c, pl_ref dst, pl_ref src) { reduce_rows(c, dst, src, 0, "pl_sum_rows"); }
