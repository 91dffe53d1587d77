/* sim/verify.c: reference checks against OpenBLAS (rule V5).
 *
 * The error measure follows BLIS and ggml: the worst element's error divided
 * by what rounding alone can explain there, u * sum_k |a_ik| |b_kj|, where u
 * is the unit roundoff of the least precise of a, b and c. A correct kernel
 * lands near 1; a kernel that adds in another order than the reference drifts
 * up to about sqrt(K) (typical) or K (worst) times the fp32 roundoff relative
 * to u; a lost or doubled partial sum lands orders of magnitude higher.
 * Thresholds:
 *   PASS      norm_err <= 2 + 2 sqrt(K) r
 *   MARGINAL  norm_err <= 4 + 2 K r
 *   FAIL      otherwise, or a NaN/inf where the reference is finite
 * with r = u_f32 / u (1 for f32 data, 2^-16 for bf16).
 */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>

#include "tilesim.h"

const char *pl_verdict_name(pl_verdict v)
{
    return v == PL_PASS ? "PASS" : v == PL_MARGINAL ? "MARGINAL" : "FAIL";
}

static double unit_roundoff(pl_dtype t)
{
    switch (t) {
    case PL_BF16: return ldexp(1.0, -8);
    case PL_F16: return ldexp(1.0, -11);
    default: return ldexp(1.0, -24);
    }
}

static float *widen_abs(const pl_array *x, int take_abs)
{
    int64_t n = pl_array_size(x);
    float *p = malloc((size_t)n * sizeof *p);
    if (!p) return NULL;
    size_t es = pl_dtype_size(x->dtype);
    for (int64_t i = 0; i < n; i++) {
        float v = (float)pl_load_elem((const char *)x->data + (size_t)i * es, x->dtype);
        p[i] = take_abs ? fabsf(v) : v;
    }
    return p;
}

static int check_args(const pl_array *a, const pl_array *b, const pl_array *c)
{
    const pl_array *all[3] = {a, b, c};
    for (int i = 0; i < 3; i++)
        if (!all[i] || !all[i]->data || all[i]->rank != 2 || !pl_dtype_is_float(all[i]->dtype)) return PL_EINVAL;
    if (a->shape[1] != b->shape[0] || c->shape[0] != a->shape[0] || c->shape[1] != b->shape[1]) return PL_ESHAPE;
    return PL_OK;
}

int pl_check_matmul(const pl_array *a, const pl_array *b, const pl_array *c, pl_check *out, FILE *f)
{
    int rc = check_args(a, b, c);
    if (rc) {
        if (f) fprintf(f, "pl_check_matmul: %s (want a (m,k), b (k,n), c (m,n) float arrays)\n", pl_strerror(rc));
        return rc;
    }
    int64_t m = a->shape[0], k = a->shape[1], n = b->shape[1];
    float *A = widen_abs(a, 0), *B = widen_abs(b, 0), *absA = widen_abs(a, 1), *absB = widen_abs(b, 1);
    float *ref = malloc((size_t)(m * n) * sizeof *ref), *mag = malloc((size_t)(m * n) * sizeof *mag);
    pl_check r = {.worst_row = -1, .worst_col = -1};
    if (!A || !B || !absA || !absB || !ref || !mag) {
        rc = PL_ENOMEM;
        goto done;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)k, 1.0f, A, (int)k, B, (int)n, 0.0f,
                ref, (int)n);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)k, 1.0f, absA, (int)k, absB,
                (int)n, 0.0f, mag, (int)n);

    double u = unit_roundoff(a->dtype);
    if (unit_roundoff(b->dtype) > u) u = unit_roundoff(b->dtype);
    if (unit_roundoff(c->dtype) > u) u = unit_roundoff(c->dtype);
    double ratio = ldexp(1.0, -24) / u;
    r.pass_below = 2 + 2 * sqrt((double)k) * ratio;
    r.fail_above = 4 + 2 * (double)k * ratio;

    size_t es = pl_dtype_size(c->dtype);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double got = pl_load_elem((const char *)c->data + (size_t)(i * n + j) * es, c->dtype);
            double want = ref[i * n + j], d = fabs(got - want), e;
            if (!isfinite(got) && isfinite(want)) {
                r.n_nan++;
                e = INFINITY;
                d = INFINITY;
            } else {
                double scale = u * mag[i * n + j];
                e = d == 0 ? 0 : scale > 0 ? d / scale : INFINITY;
            }
            if (d > r.max_abs_err) r.max_abs_err = d;
            if (r.worst_row < 0 || e > r.norm_err) {
                r.norm_err = e;
                r.worst_row = i;
                r.worst_col = j;
            }
        }
    r.verdict = r.n_nan || !(r.norm_err <= r.fail_above) ? PL_FAIL : r.norm_err <= r.pass_below ? PL_PASS : PL_MARGINAL;
    rc = r.verdict == PL_FAIL ? PL_EVERIFY : PL_OK;
    if (f) {
        fprintf(f, "  check vs cblas_sgemm  %lldx%lldx%lld %s: max abs err %.3g, normalised err %.3g "
                   "(pass <= %.3g, fail > %.3g)",
                (long long)m, (long long)n, (long long)k, pl_dtype_name(c->dtype), r.max_abs_err, r.norm_err,
                r.pass_below, r.fail_above);
        if (r.n_nan) fprintf(f, ", %lld NaN/inf", (long long)r.n_nan);
        if (r.verdict != PL_PASS) fprintf(f, ", worst at (%lld, %lld)", (long long)r.worst_row, (long long)r.worst_col);
        fprintf(f, "  %s\n", pl_verdict_name(r.verdict));
    }
done:
    if (rc == PL_ENOMEM && f) fprintf(f, "pl_check_matmul: out of host memory\n");
    if (out) *out = r;
    free(A), free(B), free(absA), free(absB), free(ref), free(mag);
    return rc;
}
