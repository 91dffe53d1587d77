/* sim/call/reference.c: the references a kernel definition's `reference`
 * function computes its outputs with (sim/tilesim_check.h, issue 24), so
 * that a plugin need not write a naive triple loop: a 2048^3 bf16 matmul
 * in a plugin's own loops took 32.8 s, against 0.7 s through OpenBLAS.
 * Inputs of any float dtype (and int8) are widened exactly to f32 or
 * double; each output element is rounded to its dtype once. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/sim.h"
#include "../tilesim.h"

/* An array a reference reads or writes: data, a dtype of whole bytes, rank >= 1. */
static int usable(const pl_array *a, const char *what, char *msg, size_t n)
{
    if (!a || !a->data || a->rank < 1 || a->rank > PL_MAX_RANK || pl_dtype_size(a->dtype) == 0 ||
        (unsigned)a->dtype >= PL_DTYPE_COUNT)
        return snprintf(msg, n, "%s: an array with data, a dtype of whole bytes and rank 1 to %d is needed", what,
                        PL_MAX_RANK), PL_EINVAL;
    return PL_OK;
}

int pl_ref_matmul(const pl_array *a, const pl_array *b, int trans_a, int trans_b, pl_array *out, char *msg,
                  size_t n)
{
    char dummy[8];
    if (!msg) msg = dummy, n = sizeof dummy;
    int rc = usable(a, "pl_ref_matmul: a", msg, n);
    if (!rc) rc = usable(b, "pl_ref_matmul: b", msg, n);
    if (!rc) rc = usable(out, "pl_ref_matmul: out", msg, n);
    if (rc) return rc;
    if (a->rank != 2 || b->rank != 2 || out->rank != 2)
        return snprintf(msg, n, "pl_ref_matmul: a, b and out must be of rank 2 (got %d, %d, %d)", a->rank, b->rank,
                        out->rank), PL_ESHAPE;
    int64_t m = trans_a ? a->shape[1] : a->shape[0], k = trans_a ? a->shape[0] : a->shape[1];
    int64_t kb = trans_b ? b->shape[1] : b->shape[0], nn = trans_b ? b->shape[0] : b->shape[1];
    if (k != kb || out->shape[0] != m || out->shape[1] != nn)
        return snprintf(msg, n, "pl_ref_matmul: op(a) is %lldx%lld, op(b) %lldx%lld and out %lldx%lld: they do not "
                        "multiply", (long long)m, (long long)k, (long long)kb, (long long)nn,
                        (long long)out->shape[0], (long long)out->shape[1]), PL_ESHAPE;
    if (m > INT32_MAX || nn > INT32_MAX || k > INT32_MAX)
        return snprintf(msg, n, "pl_ref_matmul: a dimension past 2^31 - 1"), PL_ESHAPE;
    float *fa = sim_widen(a, 0), *fb = sim_widen(b, 0), *fc = malloc(sizeof *fc * (size_t)(m * nn > 0 ? m * nn : 1));
    if (!fa || !fb || !fc) {
        free(fa), free(fb), free(fc);
        return snprintf(msg, n, "pl_ref_matmul: out of host memory"), PL_ENOMEM;
    }
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, (int)m,
                (int)nn, (int)k, 1.0f, fa, (int)a->shape[1], fb, (int)b->shape[1], 0.0f, fc, (int)nn);
    size_t es = pl_dtype_size(out->dtype);
    for (int64_t i = 0; i < m * nn; i++) pl_store_elem((char *)out->data + (size_t)i * es, out->dtype, fc[i]);
    free(fa), free(fb), free(fc);
    return PL_OK;
}

/* rows of the last dimension: x and out of one shape; vec (gamma, beta) of the last dimension's size */
static int rows_of(const pl_array *x, const pl_array *out, const pl_array *const *vecs, int n_vecs, const char *fn,
                   int64_t *rows, int64_t *d, char *msg, size_t n)
{
    int rc = usable(x, fn, msg, n);
    if (!rc) rc = usable(out, fn, msg, n);
    if (rc) return rc;
    int same = x->rank == out->rank;
    for (int i = 0; same && i < x->rank; i++) same = x->shape[i] == out->shape[i];
    if (!same) return snprintf(msg, n, "%s: x and out must have one shape", fn), PL_ESHAPE;
    *d = x->shape[x->rank - 1];
    *rows = pl_array_size(x) / (*d > 0 ? *d : 1);
    for (int v = 0; v < n_vecs; v++) {
        if (!vecs[v]) continue;
        if ((rc = usable(vecs[v], fn, msg, n))) return rc;
        if (pl_array_size(vecs[v]) != *d)
            return snprintf(msg, n, "%s: gamma and beta hold %lld elements, the last dimension's size", fn,
                            (long long)*d), PL_ESHAPE;
    }
    return PL_OK;
}

static double at(const pl_array *a, int64_t i)
{
    return pl_load_elem((const char *)a->data + (size_t)i * pl_dtype_size(a->dtype), a->dtype);
}
static void put(pl_array *a, int64_t i, double v)
{
    pl_store_elem((char *)a->data + (size_t)i * pl_dtype_size(a->dtype), a->dtype, v);
}

int pl_ref_softmax(const pl_array *x, pl_array *out, char *msg, size_t n)
{
    char dummy[8];
    if (!msg) msg = dummy, n = sizeof dummy;
    int64_t rows, d;
    int rc = rows_of(x, out, NULL, 0, "pl_ref_softmax", &rows, &d, msg, n);
    for (int64_t r = 0; !rc && r < rows; r++) {
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < d; j++) mx = fmax(mx, at(x, r * d + j));
        for (int64_t j = 0; j < d; j++) sum += exp(at(x, r * d + j) - mx);
        for (int64_t j = 0; j < d; j++) put(out, r * d + j, exp(at(x, r * d + j) - mx) / sum);
    }
    return rc;
}

int pl_ref_rmsnorm(const pl_array *x, const pl_array *gamma, double eps, pl_array *out, char *msg, size_t n)
{
    char dummy[8];
    if (!msg) msg = dummy, n = sizeof dummy;
    int64_t rows, d;
    const pl_array *v[] = {gamma};
    int rc = rows_of(x, out, v, 1, "pl_ref_rmsnorm", &rows, &d, msg, n);
    for (int64_t r = 0; !rc && r < rows; r++) {
        double ss = 0;
        for (int64_t j = 0; j < d; j++) ss += at(x, r * d + j) * at(x, r * d + j);
        double inv = 1.0 / sqrt(ss / (double)d + eps);
        for (int64_t j = 0; j < d; j++) put(out, r * d + j, at(x, r * d + j) * inv * (gamma ? at(gamma, j) : 1.0));
    }
    return rc;
}

int pl_ref_layernorm(const pl_array *x, const pl_array *gamma, const pl_array *beta, double eps, pl_array *out,
                     char *msg, size_t n)
{
    char dummy[8];
    if (!msg) msg = dummy, n = sizeof dummy;
    int64_t rows, d;
    const pl_array *v[] = {gamma, beta};
    int rc = rows_of(x, out, v, 2, "pl_ref_layernorm", &rows, &d, msg, n);
    for (int64_t r = 0; !rc && r < rows; r++) {
        double mean = 0, var = 0;
        for (int64_t j = 0; j < d; j++) mean += at(x, r * d + j);
        mean /= (double)d;
        for (int64_t j = 0; j < d; j++) var += (at(x, r * d + j) - mean) * (at(x, r * d + j) - mean);
        double inv = 1.0 / sqrt(var / (double)d + eps);
        for (int64_t j = 0; j < d; j++)
            put(out, r * d + j,
                (at(x, r * d + j) - mean) * inv * (gamma ? at(gamma, j) : 1.0) + (beta ? at(beta, j) : 0.0));
    }
    return rc;
}

/* a's elements with its two dimensions swapped, in its own dtype (bytes moved, not converted), or NULL */
static void *transposed(const pl_array *a)
{
    int64_t r = a->shape[0], c = a->shape[1];
    size_t es = pl_dtype_size(a->dtype);
    char *t = malloc(es * (size_t)(r * c > 0 ? r * c : 1));
    for (int64_t i = 0; t && i < r; i++)
        for (int64_t j = 0; j < c; j++)
            memcpy(t + (size_t)(j * r + i) * es, (const char *)a->data + (size_t)(i * c + j) * es, es);
    return t;
}

int pl_check_dot(const pl_array *got, const pl_array *a, const pl_array *b, int trans_a, int trans_b, pl_check *out,
                 FILE *f)
{
    pl_array ta = a ? *a : (pl_array){0}, tb = b ? *b : (pl_array){0};
    void *pa = NULL, *pb = NULL;
    if (trans_a && a && a->rank == 2 && a->data) {
        if (!(pa = transposed(a))) return PL_ENOMEM;
        ta = PL_ARRAY(pa, a->dtype, a->shape[1], a->shape[0]);
    }
    if (trans_b && b && b->rank == 2 && b->data) {
        if (!(pb = transposed(b))) return free(pa), PL_ENOMEM;
        tb = PL_ARRAY(pb, b->dtype, b->shape[1], b->shape[0]);
    }
    int rc = pl_check_matmul(&ta, &tb, got, out, f);
    free(pa), free(pb);
    return rc;
}
