/* examples/kernels/kdef_util.c: helpers of the built-in definitions. */
#include <cblas.h>
#include <pthread.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "kdef_util.h"

int ex_check_positive(const pl_kernel_def *d, const int64_t *v, char *msg, size_t n)
{
    for (int i = 0; i < d->n_params; i++) {
        if (d->params[i].kind != PL_PARAM_INT || v[i] >= 1) continue;
        snprintf(msg, n, "%s: %s = %lld must be >= 1", d->name, d->params[i].name, (long long)v[i]);
        return PL_EINVAL;
    }
    return PL_OK;
}

int ex_check_dtype(const pl_kernel_def *d, const int64_t *v, int i, const pl_dtype *ok, int n_ok, char *msg,
                   size_t n)
{
    for (int j = 0; j < n_ok; j++)
        if (v[i] == (int64_t)ok[j]) return PL_OK;
    char list[64] = "";
    for (int j = 0; j < n_ok; j++) {
        strncat(list, j ? ", " : "", sizeof list - strlen(list) - 1);
        strncat(list, pl_dtype_name(ok[j]), sizeof list - strlen(list) - 1);
    }
    snprintf(msg, n, "%s: %s = %s is not supported (use %s)", d->name, d->params[i].name,
             pl_dtype_name((pl_dtype)v[i]), list);
    return PL_EINVAL;
}

float *ex_widen(const pl_array *a)
{
    int64_t n = pl_array_size(a);
    float *f = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    if (!f) return NULL;
    size_t es = pl_dtype_size(a->dtype);
    for (int64_t i = 0; i < n; i++) f[i] = (float)pl_load_elem((const char *)a->data + (size_t)i * es, a->dtype);
    return f;
}

int ex_ref_gemm(const pl_array *a, const pl_array *b, int trans_b, float *c, int64_t m, int64_t n, int64_t k)
{
    float *fa = ex_widen(a), *fb = ex_widen(b);
    if (!fa || !fb) {
        free(fa), free(fb);
        return PL_ENOMEM;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k, 1.0f, fa,
                (int)k, fb, trans_b ? (int)k : (int)n, 0.0f, c, (int)n);
    free(fa), free(fb);
    return PL_OK;
}

void ex_store(pl_array *arr, const double *vals, int64_t n)
{
    size_t es = pl_dtype_size(arr->dtype);
    for (int64_t i = 0; i < n; i++) pl_store_elem((char *)arr->data + (size_t)i * es, arr->dtype, vals[i]);
}

void ex_store_f32(pl_array *arr, const float *vals, int64_t n)
{
    size_t es = pl_dtype_size(arr->dtype);
    for (int64_t i = 0; i < n; i++) pl_store_elem((char *)arr->data + (size_t)i * es, arr->dtype, vals[i]);
}

/* Interned blocks: a list guarded by a mutex (sweeps build on many threads). */
typedef struct interned {
    struct interned *next;
    size_t n;
    max_align_t vals[]; /* aligned for any parameter struct */
} interned;

static interned *tables;
static pthread_mutex_t tables_lock = PTHREAD_MUTEX_INITIALIZER;

const void *ex_intern(const void *p, size_t n)
{
    const void *found = NULL;
    pthread_mutex_lock(&tables_lock);
    for (interned *t = tables; t && !found; t = t->next)
        if (t->n == n && memcmp(t->vals, p, n) == 0) found = t->vals;
    if (!found) {
        interned *t = malloc(sizeof *t + (n > 0 ? n : 1));
        if (t) {
            t->n = n;
            memcpy(t->vals, p, n);
            t->next = tables;
            tables = t;
            found = t->vals;
        }
    }
    pthread_mutex_unlock(&tables_lock);
    return found;
}

int ex_fill_data_inputs(const int64_t *v, pl_kernel_build *b, uint64_t seed)
{
    void *saved[PL_KDEF_MAX_ARGS];
    int np = b->call.num_scalar_prefetch;
    for (int a = 0; a < np && a < PL_KDEF_MAX_ARGS; a++) saved[a] = b->args[a].data, b->args[a].data = NULL;
    int rc = pl_kernel_fill_inputs(v, b, seed);
    for (int a = 0; a < np && a < PL_KDEF_MAX_ARGS; a++) b->args[a].data = saved[a];
    return rc;
}
