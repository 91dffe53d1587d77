/* kernel/unary.c: the elementwise ops real kernels need beyond add and mul
 * (issue 10): rsqrt, sqrt, log, tanh, sigmoid, gelu, div, add and mul by a
 * scalar, comparisons into a mask, where, and iota.
 *
 * One walker serves them all: every source is viewed with dst's shape, with
 * stride 0 along the dimensions it broadcasts (size 1 where dst is wider),
 * so row_ptr / load_row walk it unchanged. Each row of every source is
 * loaded into double before the same row of dst is written, so dst may be a
 * source; a source whose rows are all one row (a (1, n) row broadcast) is
 * loaded once before the walk, so it may even alias dst's first row.
 *
 * Cost (model choice, documented in pallas.h and sim/timing/chips.c): VPU ops count
 * 1 FLOP per element produced, div 4; the transcendental ops are recorded as
 * KERN_OP_EUP, which the timing model charges like VPU work at their weight
 * and the report also counts as EUP elements.
 */
#include <math.h>

#include "rows.h"

#define MAX_SRC 3

typedef enum {
    U_RSQRT, U_SQRT, U_LOG, U_TANH, U_SIGMOID, U_GELU, /* transcendental: float only */
    U_DIV, U_ADDS, U_MULS,                             /* arithmetic: float only */
    U_CMP, U_CMPS, U_WHERE, U_IOTA                     /* any dtype */
} u_kind;

typedef struct u_op {
    u_kind kind;
    const char *fn;
    double s;       /* the scalar of add/mul/cmp_scalar */
    pl_cmp_op cmp;
    int dim;        /* iota */
    int64_t offset; /* iota */
} u_op;

static int float_only(u_kind k) { return k <= U_MULS; }

static double eup_weight(u_kind k)
{
    switch (k) {
    case U_TANH: case U_SIGMOID: return 6.0; /* the EUP push and the VPU work around it */
    case U_GELU: return 10.0;                /* tanh plus the cubic polynomial and the products */
    default: return 4.0;                     /* rsqrt, sqrt, log: one EUP push, as pl_exp */
    }
}

/* ---- checks and broadcasting ------------------------------------------------ */

static void check_operand(pl_ctx *c, const pl_ref *r, const u_op *u)
{
    kern_check_ref(c, r, u->fn);
    check_data(c, r, u->fn);
    if (!float_only(u->kind) || pl_dtype_is_float(r->dtype)) return;
    char name[96];
    kern_ref_name(c, r, name, sizeof name);
    kern_fault(c, PL_EDTYPE, "%s on %s: %s takes float refs (f32, bf16, f16)", u->fn, name, u->fn);
}

/* src seen with dst's shape: stride 0 along the dimensions it broadcasts. */
static pl_ref broadcast_to(pl_ctx *c, const pl_ref *src, const pl_ref *dst, const char *fn)
{
    check_broadcast(c, src, dst, fn, "", "");
    pl_ref v = *src;
    for (int d = 0; d < src->rank; d++)
        if (src->shape[d] != dst->shape[d]) v.shape[d] = dst->shape[d], v.stride[d] = 0;
    return v;
}

/* Every row of v is the same memory (its leading dims all broadcast). */
static int one_row(const pl_ref *v)
{
    for (int d = 0; d + 1 < v->rank; d++)
        if (v->stride[d] != 0 && v->shape[d] != 1) return 0;
    return 1;
}

/* ---- the math --------------------------------------------------------------- */

static int compare(double a, double b, pl_cmp_op op)
{
    switch (op) {
    case PL_LT: return a < b;
    case PL_LE: return a <= b;
    case PL_GT: return a > b;
    case PL_GE: return a >= b;
    case PL_EQ: return a == b;
    default: return a != b; /* PL_NE: true with NaN, as jnp */
    }
}

static double gelu(double x)
{
    const double k = 0.7978845608028654; /* sqrt(2 / pi) */
    return 0.5 * x * (1.0 + tanh(k * (x + 0.044715 * x * x * x)));
}

/* x[i] = f(x[i], y[i], z[i]) over one row; y, z are the other sources' rows. */
static void compute_row(const u_op *u, double *x, const double *y, const double *z, int64_t row0, int64_t n)
{
    switch (u->kind) {
    case U_RSQRT: for (int64_t i = 0; i < n; i++) x[i] = 1.0 / sqrt(x[i]); break;
    case U_SQRT: for (int64_t i = 0; i < n; i++) x[i] = sqrt(x[i]); break;
    case U_LOG: for (int64_t i = 0; i < n; i++) x[i] = log(x[i]); break;
    case U_TANH: for (int64_t i = 0; i < n; i++) x[i] = tanh(x[i]); break;
    case U_SIGMOID: for (int64_t i = 0; i < n; i++) x[i] = 1.0 / (1.0 + exp(-x[i])); break;
    case U_GELU: for (int64_t i = 0; i < n; i++) x[i] = gelu(x[i]); break;
    case U_DIV: for (int64_t i = 0; i < n; i++) x[i] /= y[i]; break;
    case U_ADDS: for (int64_t i = 0; i < n; i++) x[i] += u->s; break;
    case U_MULS: for (int64_t i = 0; i < n; i++) x[i] *= u->s; break;
    case U_CMP: for (int64_t i = 0; i < n; i++) x[i] = compare(x[i], y[i], u->cmp); break;
    case U_CMPS: for (int64_t i = 0; i < n; i++) x[i] = compare(x[i], u->s, u->cmp); break;
    case U_WHERE: for (int64_t i = 0; i < n; i++) x[i] = x[i] != 0 ? y[i] : z[i]; break;
    case U_IOTA: for (int64_t i = 0; i < n; i++) x[i] = (double)(u->offset + (u->dim < 0 ? i : row0)); break;
    }
}

/* ---- the walker -------------------------------------------------------------- */

/* dst = f(src[0..ns)) elementwise with broadcasting, per u. */
static void map_elems(pl_ctx *c, pl_ref dst, const pl_ref *src, int ns, const u_op *u)
{
    pl_ref v[MAX_SRC];
    check_operand(c, &dst, u);
    for (int i = 0; i < ns; i++) check_operand(c, &src[i], u);
    for (int i = 0; i < ns; i++) v[i] = broadcast_to(c, &src[i], &dst, u->fn);
    if (c->args) {
        for (int i = 0; i < ns; i++) kern_note_read(c, &src[i], u->fn);
        kern_note_write(c, &dst, u->fn);
    }
    int eup = u->kind <= U_GELU;
    kern_op op = {.kind = (uint8_t)(eup ? KERN_OP_EUP : KERN_OP_VPU), .dtype = (uint8_t)dst.dtype,
                  .elems = pl_size(dst), .name = u->fn};
    for (int i = 0; i < ns; i++) op.vmem += kern_vmem_read(c, &src[i]);
    op.vmem += kern_vmem_write(c, &dst);
    op.flops = (eup ? eup_weight(u->kind) : u->kind == U_DIV ? 4.0 : 1.0) * (double)op.elems;
    kern_record(c, &op);
    if (c->cost_only || op.elems == 0) return;
    int64_t n = row_len(&dst), rows = row_count(&dst);
    double *buf = (double *)kern_tmp(c, 2 * (size_t)(ns + 1) * (size_t)n), *row[MAX_SRC + 1];
    for (int i = 0; i <= ns; i++) row[i] = buf + (size_t)i * (size_t)n;
    int once[MAX_SRC];
    for (int i = 0; i < ns; i++)
        if ((once[i] = one_row(&v[i]))) load_row(row[i], &v[i], row_ptr(&v[i], 0), n);
    double *x = ns ? row[ns] : row[0]; /* the row computed in place; sources stay intact for the next row */
    for (int64_t r = 0; r < rows; r++) {
        for (int i = 0; i < ns; i++)
            if (!once[i]) load_row(row[i], &v[i], row_ptr(&v[i], r), n);
        if (ns) memcpy(x, row[0], (size_t)n * sizeof *x);
        int64_t row0 = 0;
        if (u->kind == U_IOTA && u->dim >= 0) { /* the index of row r along dim */
            int64_t q = r;
            for (int d = dst.rank - 2; d > u->dim; d--) q /= dst.shape[d];
            row0 = q % dst.shape[u->dim];
        }
        compute_row(u, x, ns > 1 ? row[1] : NULL, ns > 2 ? row[2] : NULL, row0, n);
        store_row(&dst, row_ptr(&dst, r), x, n);
    }
}

static void unary(pl_ctx *c, pl_ref dst, pl_ref src, u_kind k, double s, const char *fn)
{
    u_op u = {.kind = k, .fn = fn, .s = s};
    map_elems(c, dst, &src, 1, &u);
}

void pl_rsqrt(pl_ctx *c, pl_ref dst, pl_ref src) { unary(c, dst, src, U_RSQRT, 0, "pl_rsqrt"); }
void pl_sqrt(pl_ctx *c, pl_ref dst, pl_ref src) { unary(c, dst, src, U_SQRT, 0, "pl_sqrt"); }
void pl_log(pl_ctx *c, pl_ref dst, pl_ref src) { unary(c, dst, src, U_LOG, 0, "pl_log"); }
void pl_tanh(pl_ctx *c, pl_ref dst, pl_ref src) { unary(c, dst, src, U_TANH, 0, "pl_tanh"); }
void pl_sigmoid(pl_ctx *c, pl_ref dst, pl_ref src) { unary(c, dst, src, U_SIGMOID, 0, "pl_sigmoid"); }
void pl_gelu(pl_ctx *c, pl_ref dst, pl_ref src) { unary(c, dst, src, U_GELU, 0, "pl_gelu"); }
static int int_ref(pl_dtype t) { return t == PL_I32 || t == PL_I16 || t == PL_I8; }

/* integer refs as jnp has them: x + 2 stays an integer, wrapping (issue 23) */
void pl_add_scalar(pl_ctx *c, pl_ref dst, pl_ref src, double s)
{
    if (int_ref(dst.dtype)) kern_int_scalar(c, dst, src, s, 0, "pl_add_scalar");
    else unary(c, dst, src, U_ADDS, s, "pl_add_scalar");
}
void pl_mul_scalar(pl_ctx *c, pl_ref dst, pl_ref src, double s)
{
    if (int_ref(dst.dtype)) kern_int_scalar(c, dst, src, s, 1, "pl_mul_scalar");
    else unary(c, dst, src, U_MULS, s, "pl_mul_scalar");
}

void pl_div(pl_ctx *c, pl_ref dst, pl_ref a, pl_ref b)
{
    u_op u = {.kind = U_DIV, .fn = "pl_div"};
    pl_ref s[2] = {a, b};
    map_elems(c, dst, s, 2, &u);
}

static void check_cmp(pl_ctx *c, pl_cmp_op op, const char *fn)
{
    if ((unsigned)op <= PL_NE) return;
    kern_fault(c, PL_EINVAL, "%s: comparison %d is not one of PL_LT, PL_LE, PL_GT, PL_GE, PL_EQ, PL_NE", fn, (int)op);
}

void pl_cmp(pl_ctx *c, pl_ref mask, pl_ref a, pl_ref b, pl_cmp_op op)
{
    check_cmp(c, op, "pl_cmp");
    u_op u = {.kind = U_CMP, .fn = "pl_cmp", .cmp = op};
    pl_ref s[2] = {a, b};
    map_elems(c, mask, s, 2, &u);
}

void pl_cmp_scalar(pl_ctx *c, pl_ref mask, pl_ref a, pl_cmp_op op, double s)
{
    check_cmp(c, op, "pl_cmp_scalar");
    u_op u = {.kind = U_CMPS, .fn = "pl_cmp_scalar", .cmp = op, .s = s};
    map_elems(c, mask, &a, 1, &u);
}

void pl_where(pl_ctx *c, pl_ref dst, pl_ref mask, pl_ref a, pl_ref b)
{
    u_op u = {.kind = U_WHERE, .fn = "pl_where"};
    pl_ref s[3] = {mask, a, b};
    map_elems(c, dst, s, 3, &u);
}

void pl_iota(pl_ctx *c, pl_ref dst, int dim, int64_t offset)
{
    kern_check_arg(c, &dst, "pl_iota");
    if (dim < 0 || dim >= dst.rank) {
        char name[96];
        kern_ref_name(c, &dst, name, sizeof name);
        kern_fault(c, PL_EINVAL, "pl_iota along dimension %d of %s, which has rank %d", dim, name, dst.rank);
    }
    /* the last dimension counts along each row (dim -1 to compute_row) */
    u_op u = {.kind = U_IOTA, .fn = "pl_iota", .dim = dim == dst.rank - 1 ? -1 : dim, .offset = offset};
    map_elems(c, dst, NULL, 0, &u);
}
