/* kernel/dot.c: pl_dot, the MXU op, on the VMEM copies through OpenBLAS.
 *
 * The MXU multiplies bf16 (or f32, in several bf16 passes) and accumulates in
 * fp32. Debian's OpenBLAS has no bf16 GEMM, so bf16 and f16 operands are
 * widened to f32 first: a product of two bf16 values is exact in f32, so the
 * result equals an fp32-accumulating bf16 matmul up to the order of additions.
 */
#include <cblas.h>
#include <limits.h>
#include <string.h>

#include "context.h"

/* A rank-2 operand seen as a row-major f32 matrix for sgemm. */
typedef struct f32_mat {
    float *p;
    int ld;
    int packed; /* p is a converted copy in host scratch */
} f32_mat;

static int is_direct_f32(const pl_ref *r) { return r->dtype == PL_F32 && r->stride[1] == 1; }

static int64_t ld_of(const pl_ref *r) { return r->stride[0] > r->shape[1] ? r->stride[0] : r->shape[1]; }

/* Convert r into the packed row-major buffer dst (shape[0] x shape[1]). */
static void widen(float *dst, const pl_ref *r)
{
    int64_t rows = r->shape[0], cols = r->shape[1];
    size_t es = kern_dtype_size(r->dtype);
    for (int64_t i = 0; i < rows; i++) {
        const char *src = (const char *)r->data + (size_t)(i * r->stride[0]) * es;
        float *d = dst + i * cols;
        if (r->dtype == PL_BF16 && r->stride[1] == 1) {
            const uint16_t *s = (const uint16_t *)src;
            for (int64_t j = 0; j < cols; j++) {
                uint32_t u = (uint32_t)s[j] << 16;
                memcpy(&d[j], &u, 4);
            }
        } else {
            for (int64_t j = 0; j < cols; j++)
                d[j] = (float)pl_load_elem(src + (size_t)(j * r->stride[1]) * es, r->dtype);
        }
    }
}

static void narrow(const pl_ref *r, const float *src)
{
    int64_t rows = r->shape[0], cols = r->shape[1];
    size_t es = kern_dtype_size(r->dtype);
    for (int64_t i = 0; i < rows; i++) {
        char *dst = (char *)r->data + (size_t)(i * r->stride[0]) * es;
        for (int64_t j = 0; j < cols; j++)
            pl_store_elem(dst + (size_t)(j * r->stride[1]) * es, r->dtype, src[i * cols + j]);
    }
}

static void check_operand(pl_ctx *c, const pl_ref *r, const char *what)
{
    int bad_space = r->space != PL_VMEM;
    /* before the hot path: OpenBLAS is not instrumented, so a view past its
     * Ref (V6) would let cblas_sgemm write past the buffer unseen (F3) */
    kern_check_ref(c, r, "pl_dot");
    int acc = what[0] == 'a'; /* "accumulator": int32 holds int8 products; operands are int8 (T10) */
    int typed = kern_dtype_is_float(r->dtype) || r->dtype == (acc ? PL_I32 : PL_I8); /* T10 decides the mix */
    if (!bad_space && r->rank == 2 && typed) return; /* the hot path: no formatting */
    char name[96];
    kern_ref_name(c, r, name, sizeof name);
    if (bad_space)
        kern_fault(c, PL_ESPACE, "pl_dot %s is %s: the MXU reads VMEM only; %s (rule M1)", what, name,
                   r->space == PL_SMEM ? "SMEM holds scalars" : "this memory space is reachable only by DMA");
    if (r->rank != 2)
        kern_fault(c, PL_ESHAPE, "pl_dot %s is %s of rank %d; pl_dot takes rank-2 refs", what, name, r->rank);
    kern_fault(c, PL_EDTYPE, "pl_dot %s is %s: pl_dot takes f32, bf16 or f16 (or int8 x int8 into an int32 "
               "accumulator, rule T10)", what, name);
}

static int is_fp8(pl_dtype t) { return t == PL_F8E4M3 || t == PL_F8E5M2; }

/* T10, the MXU's dtype table as Mosaic applies it: float x float into a
 * float accumulator; int8 x int8 into int32 only where the chip's MXU has an
 * int8 path (not v7x); a float x int mix converts the int operand to f32
 * first, into a float accumulator; fp8 x fp8 into a float accumulator where
 * the chip takes fp8 operands (v5e, v5p, v6e, v7x; not v4), at the fp8 rate
 * where it has one (v7x) and widened to bf16 elsewhere; fp8 x another float
 * by widening the fp8 operand. Everything else is rejected (XLA E2001).
 * Returns the dtype the MXU runs at (the cost model's rate). */
static pl_dtype check_mxu_dtypes(pl_ctx *c, const pl_ref *acc, const pl_ref *a, const pl_ref *b)
{
    int fa = kern_dtype_is_float(a->dtype), fb = kern_dtype_is_float(b->dtype), facc = kern_dtype_is_float(acc->dtype);
    const char *why = NULL;
    if (is_fp8(a->dtype) && is_fp8(b->dtype)) {
        if (!facc)
            why = "fp8 x fp8 accumulates in f32: give a float accumulator";
        else if (c->target.chip && !c->target.mxu_fp8_in)
            why = "this chip's MXU takes no fp8 operands (v5e and later do); quantize to int8 or multiply in bf16";
        else if (c->target.chip && !c->target.mxu_fp8)
            return PL_BF16; /* no fp8 rate here (v5e, v5p, v6e): widened to bf16, at its rate */
        else
            return a->dtype; /* timed at the fp8 rate */
    } else if (fa && fb && facc) {
        /* fp8 x another float: the fp8 operand widened to the other's type */
        return is_fp8(a->dtype) ? b->dtype : a->dtype;
    }
    if (why) {
        /* fp8 refused above */
    } else if (!fa && !fb) {
        if (acc->dtype != PL_I32)
            why = "int8 x int8 accumulates in int32: give an int32 accumulator";
        else if (c->target.chip && !c->target.mxu_int8)
            why = "this chip's MXU has no int8 path; quantize to fp8 (v7x) or multiply in bf16";
        else
            return PL_I8;
    } else if (!facc) {
        why = "a float x int matmul converts the int operand to f32 and needs a float accumulator";
    } else {
        return PL_F32; /* the int operand widened to f32 (Mosaic's canonicalization) */
    }
    kern_fault(c, PL_EDTYPE, "pl_dot of %s x %s into %s%s%s: %s (XLA E2001, unsupported dtype; rule T10)",
               pl_dtype_name(a->dtype), pl_dtype_name(b->dtype), pl_dtype_name(acc->dtype),
               c->target.chip ? " on " : "", c->target.chip ? c->target.chip : "", why);
    return PL_F32;
}

/* int8 x int8 into int32, exact, wrapping as 32-bit accumulation does. */
static void dot_int8(const pl_ref *acc, const pl_ref *a, const pl_ref *b, int tb, int add)
{
    int64_t m = a->shape[0], k = a->shape[1], n = acc->shape[1];
    const int8_t *pa = a->data, *pb = b->data;
    int32_t *pc = acc->data;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            int32_t *out = pc + i * acc->stride[0] + j * acc->stride[1];
            uint32_t s = add ? (uint32_t)*out : 0u;
            for (int64_t p = 0; p < k; p++) {
                int64_t bi = tb ? j * b->stride[0] + p * b->stride[1] : p * b->stride[0] + j * b->stride[1];
                s += (uint32_t)((int32_t)pa[i * a->stride[0] + p * a->stride[1]] * (int32_t)pb[bi]);
            }
            *out = (int32_t)s;
        }
}

/* cblas_sgemm takes int sizes and leading dimensions: a larger one would
 * wrap (to INT_MIN, or to a small positive size and a wrong product). */
static void check_int_dims(pl_ctx *c, const pl_ref *acc, const pl_ref *a, const pl_ref *b)
{
    const pl_ref *all[3] = {acc, a, b};
    for (int i = 0; i < 3; i++) {
        int64_t big = all[i]->shape[0] > ld_of(all[i]) ? all[i]->shape[0] : ld_of(all[i]);
        if (big <= INT_MAX) continue;
        char name[96];
        kern_ref_name(c, all[i], name, sizeof name);
        kern_fault(c, PL_ESHAPE, "pl_dot %s is %s of shape (%lld, %lld) and row stride %lld: the MXU's host model "
                   "(OpenBLAS) takes sizes up to %d", i == 0 ? "accumulator" : i == 1 ? "left operand" : "right operand",
                   name, (long long)all[i]->shape[0], (long long)all[i]->shape[1], (long long)all[i]->stride[0],
                   INT_MAX);
    }
}

/* Do the elements of x and y share memory? An accumulator that is also an
 * operand must reach sgemm as a copy: sgemm writes C while reading A and B. */
static int overlaps(const pl_ref *x, const pl_ref *y)
{
    const pl_ref *r[2] = {x, y};
    uintptr_t lo[2], hi[2];
    for (int i = 0; i < 2; i++) {
        size_t es = kern_dtype_size(r[i]->dtype);
        int64_t last = (r[i]->shape[0] - 1) * r[i]->stride[0] + (r[i]->shape[1] - 1) * r[i]->stride[1];
        lo[i] = (uintptr_t)r[i]->data;
        hi[i] = lo[i] + (uintptr_t)(last + 1) * es;
    }
    return lo[0] < hi[1] && lo[1] < hi[0];
}

/* OpenBLAS is not instrumented: in an AddressSanitizer build, check for it
 * that every element it may touch is addressable, so that a wrong shape or
 * leading dimension is a report at once, not a corrupted heap later (F3).
 * An invariant of the simulator, never user input: the ops above refuse
 * what a kernel can get wrong. */
#include "sanitizers.h"
#if TILESIM_ASAN
#include <sanitizer/asan_interface.h>
#include <stdio.h>
#include <stdlib.h>
static void sgemm_span(const float *p, int64_t rows, int64_t cols, int ld, const char *what)
{
    size_t bytes = ((size_t)(rows - 1) * (size_t)ld + (size_t)cols) * sizeof *p;
    void *bad = __asan_region_is_poisoned((void *)(uintptr_t)p, bytes);
    if (!bad) return;
    fprintf(stderr, "tilesim: pl_dot would let cblas_sgemm touch %s at %p, outside its buffer (%lld x %lld, ld %d "
            "from %p)\n", what, bad, (long long)rows, (long long)cols, ld, (const void *)p);
    abort();
}
#else
#define sgemm_span(p, rows, cols, ld, what) ((void)0)
#endif

void pl_dot(pl_ctx *c, pl_ref acc, pl_ref a, pl_ref b, unsigned flags)
{
    if (c->target.subcores > 0)
        kern_fault(c, PL_EINVAL, "pl_dot on %s: a SparseCore subcore has no MXU (rule K5); run the matmul in a "
                   "TensorCore kernel (pl_kernel's default mesh)", c->target.chip ? c->target.chip : "a subcore");
    check_operand(c, &acc, "accumulator");
    check_operand(c, &a, "left operand");
    check_operand(c, &b, "right operand");
    pl_dtype mxu = check_mxu_dtypes(c, &acc, &a, &b);
    int tb = (flags & PL_DOT_TRANS_B) != 0;
    int64_t m = a.shape[0], k = a.shape[1];
    int64_t kb = tb ? b.shape[1] : b.shape[0], n = tb ? b.shape[0] : b.shape[1];
    if (kb != k || acc.shape[0] != m || acc.shape[1] != n)
        kern_fault(c, PL_ESHAPE,
                   "pl_dot shapes do not match: acc (%lld, %lld) %s= a (%lld, %lld) @ b%s (%lld, %lld)",
                   (long long)acc.shape[0], (long long)acc.shape[1], (flags & PL_DOT_ACC) ? "+" : "",
                   (long long)m, (long long)k, tb ? "^T" : "", (long long)b.shape[0], (long long)b.shape[1]);

    if (c->args) {
        /* a's rows and b's columns past an edge reach only acc's rows and columns past it (dropped) */
        kern_note_read_spare(c, &a, "pl_dot", 1u << 0);
        kern_note_read_spare(c, &b, "pl_dot", tb ? 1u << 0 : 1u << 1);
        if (flags & PL_DOT_ACC) kern_note_read(c, &acc, "pl_dot");
        kern_note_write(c, &acc, "pl_dot");
    }
    /* the MXU streams its operands whatever holds them (op->vmem below);
     * a value it reads is a use, a value it writes is fresh (kern_vmem_read) */
    if (kern_is_value(&a)) kern_value_read(c, &a, 0);
    if (kern_is_value(&b)) kern_value_read(c, &b, 0);
    if (kern_is_value(&acc)) {
        if (flags & PL_DOT_ACC) kern_value_read(c, &acc, 0);
        kern_value_write(c, &acc, 0);
    }
    kern_op *op = kern_record_slot(c); /* built in place (kernel/context.h says why) */
    op->kind = KERN_OP_DOT, op->dtype = (uint8_t)mxu, op->m = m, op->n = n, op->k = k, op->name = "pl_dot";
    op->flops = 2.0 * (double)m * (double)n * (double)k;
    op->vmem = (int64_t)kern_dtype_size(a.dtype) * m * k + (int64_t)kern_dtype_size(b.dtype) * k * n +
               (int64_t)kern_dtype_size(acc.dtype) * m * n;
    kern_record_done(c);
    if (c->cost_only || m == 0 || n == 0) return;
    check_int_dims(c, &acc, &a, &b);
    if (mxu == PL_I8) {
        dot_int8(&acc, &a, &b, tb, (flags & PL_DOT_ACC) != 0);
        return;
    }
    if (k == 0) { /* an empty contraction adds nothing */
        if (!(flags & PL_DOT_ACC)) pl_fill(c, acc, 0.0);
        return;
    }

    /* One scratch allocation holds every operand that needs widening. */
    int acc_f32 = is_direct_f32(&acc);
    int a_direct = is_direct_f32(&a) && !(acc_f32 && overlaps(&acc, &a));
    int b_direct = is_direct_f32(&b) && !(acc_f32 && overlaps(&acc, &b));
    size_t need = 0;
    need += a_direct ? 0 : (size_t)(m * k);
    need += b_direct ? 0 : (size_t)(b.shape[0] * b.shape[1]);
    need += acc_f32 ? 0 : (size_t)(m * n);
    float *tmp = need ? kern_tmp(c, need) : NULL;

    f32_mat A = {a.data, (int)ld_of(&a), 0}, B = {b.data, (int)ld_of(&b), 0}, C = {acc.data, (int)ld_of(&acc), 0};
    if (!a_direct) { widen(tmp, &a); A = (f32_mat){tmp, (int)k, 1}; tmp += m * k; }
    if (!b_direct) {
        widen(tmp, &b);
        B = (f32_mat){tmp, (int)b.shape[1], 1};
        tmp += b.shape[0] * b.shape[1];
    }
    if (!acc_f32) {
        if (flags & PL_DOT_ACC) widen(tmp, &acc);
        C = (f32_mat){tmp, (int)n, 1};
    }
    sgemm_span(A.p, m, k, A.ld, "A");
    sgemm_span(B.p, tb ? n : k, tb ? k : n, B.ld, "B");
    sgemm_span(C.p, m, n, C.ld, "C");
    cblas_sgemm(CblasRowMajor, CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k, 1.0f, A.p,
                A.ld, B.p, B.ld, (flags & PL_DOT_ACC) ? 1.0f : 0.0f, C.p, C.ld);
    if (!acc_f32) narrow(&acc, C.p);
}
