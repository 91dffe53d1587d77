/* sim/call/verify.c: reference checks against OpenBLAS (rule V5).
 *
 * The error measure follows BLIS and ggml: each element's error divided by
 * what rounding alone can explain there, u * sum_k |a_ik| |b_kj|, where u is
 * the unit roundoff of the least precise of a, b and c. A correct kernel
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
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../base/sim.h"

static double unit_roundoff(pl_dtype t)
{
    switch (t) {
    case PL_BF16: return ldexp(1.0, -8);
    case PL_F16: return ldexp(1.0, -11);
    case PL_F8E4M3: return ldexp(1.0, -4);
    case PL_F8E5M2: return ldexp(1.0, -3);
    default: return ldexp(1.0, -24);
    }
}

float *sim_widen(const pl_array *x, int take_abs)
{
    int64_t n = pl_array_size(x);
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    if (!p) return NULL;
    size_t es = pl_dtype_size(x->dtype);
    for (int64_t i = 0; i < n; i++) {
        float v = (float)pl_load_elem((const char *)x->data + (size_t)i * es, x->dtype);
        p[i] = take_abs ? fabsf(v) : v;
    }
    return p;
}

int sim_matmul_args(const pl_array *a, const pl_array *b, const pl_array *c)
{
    const pl_array *all[3] = {a, b, c};
    for (int i = 0; i < 3; i++)
        if (!all[i] || !all[i]->data || all[i]->rank != 2 || !pl_dtype_is_float(all[i]->dtype) ||
            pl_dtype_bits(all[i]->dtype) == 4) /* fp4: packed, no byte per element to read */
            return PL_EINVAL;
    if (a->shape[1] != b->shape[0] || c->shape[0] != a->shape[0] || c->shape[1] != b->shape[1]) return PL_ESHAPE;
    return PL_OK;
}

/* ---- the normalised error of every element ------------------------------------ */

/* err[i*n+j] = |c - a@b| / (u * |a|@|b|), INFINITY for a NaN/inf where the
 * reference is finite. Fills the scalar fields of r. Returns PL_OK,
 * PL_ENOMEM. The caller frees *err. */
int sim_matmul_errors(const pl_array *a, const pl_array *b, const pl_array *c, double **err, pl_check *r)
{
    int64_t m = a->shape[0], k = a->shape[1], n = b->shape[1];
    float *A = sim_widen(a, 0), *B = sim_widen(b, 0), *absA = sim_widen(a, 1), *absB = sim_widen(b, 1);
    float *ref = malloc((size_t)(m * n) * sizeof *ref), *mag = malloc((size_t)(m * n) * sizeof *mag);
    double *e = malloc((size_t)(m * n) * sizeof *e);
    int rc = PL_ENOMEM;
    *r = (pl_check){.worst_row = -1, .worst_col = -1};
    if (A && B && absA && absB && ref && mag && e) {
        rc = PL_OK;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)k, 1.0f, A, (int)k, B, (int)n,
                    0.0f, ref, (int)n);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)k, 1.0f, absA, (int)k, absB,
                    (int)n, 0.0f, mag, (int)n);
        double u = unit_roundoff(a->dtype);
        if (unit_roundoff(b->dtype) > u) u = unit_roundoff(b->dtype);
        if (unit_roundoff(c->dtype) > u) u = unit_roundoff(c->dtype);
        double ratio = ldexp(1.0, -24) / u;
        r->pass_below = 2 + 2 * sqrt((double)k) * ratio;
        r->fail_above = 4 + 2 * (double)k * ratio;
        size_t es = pl_dtype_size(c->dtype);
        for (int64_t i = 0; i < m * n; i++) {
            double got = pl_load_elem((const char *)c->data + (size_t)i * es, c->dtype), want = ref[i];
            double d = fabs(got - want), scale = u * mag[i];
            if (!isfinite(got) && isfinite(want)) {
                r->n_nan++;
                d = e[i] = INFINITY;
            } else e[i] = d == 0 ? 0 : scale > 0 ? d / scale : INFINITY;
            if (d > r->max_abs_err) r->max_abs_err = d;
            if (r->worst_row < 0 || e[i] > r->norm_err) {
                r->norm_err = e[i];
                r->worst_row = i / n;
                r->worst_col = i % n;
            }
        }
        r->verdict = r->n_nan || !(r->norm_err <= r->fail_above) ? PL_FAIL
                     : r->norm_err <= r->pass_below             ? PL_PASS
                                                                : PL_MARGINAL;
    }
    free(A), free(B), free(absA), free(absB), free(ref), free(mag);
    if (rc) free(e);
    else *err = e;
    return rc;
}

/* ---- blame: which grid points wrote an element --------------------------------- */

int pl_check_blame(const pl_call *call, int out, const pl_array *arr, const int64_t *elem, char *buf, size_t n)
{
    if (!call || !arr || !elem || !buf || n == 0 || out < 0 || out >= call->n_out) return PL_EINVAL;
    const pl_block_spec *s = &call->out[out];
    int64_t blk[PL_MAX_RANK];
    for (int d = 0; d < arr->rank; d++) {
        int64_t b = s->rank ? s->block[d] : arr->shape[d];
        if (elem[d] < 0 || elem[d] >= arr->shape[d] || (b < 1 && b != PL_SQUEEZED)) return PL_EINVAL;
        blk[d] = b == PL_SQUEEZED ? elem[d] : elem[d] / b;
    }
    char b[128];
    sim_format_idx(blk, arr->rank, b, sizeof b);
    if (s->map.fn && call->num_scalar_prefetch > 0) {
        /* the map may read its block table (M5), which only a running call has */
        snprintf(buf, n, "block %s (its index map reads scalar prefetch, so the grid points that wrote it are not "
                 "known here)", b);
        return PL_OK;
    }
    /* every grid point whose output map selects that block, in walk order */
    int64_t got[PL_MAX_RANK], first = -1, count = 0;
    int g = call->grid_rank;
    int64_t firstp[PL_MAX_GRID] = {0}, lastp[PL_MAX_GRID] = {0};
    sim_grid_iter it;
    sim_grid_iter_init(&it, g, call->grid);
    const int64_t *idx = it.pos;
    int64_t st = 0;
    for (int more = !sim_grid_iter_empty(&it); more; more = sim_grid_iter_next(&it), st++) {
        const pl_index_map *m = &s->map;
        if (m->fn) m->fn(idx, NULL, got, m->user);
        else
            for (int d = 0; d < arr->rank; d++) got[d] = (m->n == 0 || m->axis[d] == PL_ZERO) ? 0 : idx[m->axis[d]];
        if (memcmp(got, blk, (size_t)arr->rank * sizeof *got) == 0) {
            if (first < 0) first = st, memcpy(firstp, idx, sizeof firstp);
            memcpy(lastp, idx, sizeof lastp);
            count++;
        }
    }
    char p0[128], p1[128];
    if (first < 0) {
        snprintf(buf, n, "block %s, which no grid point selects: the kernel never wrote it", b);
        return PL_OK;
    }
    sim_format_idx(firstp, g, p0, sizeof p0);
    sim_format_idx(lastp, g, p1, sizeof p1);
    if (count == 1) snprintf(buf, n, "block %s, written at grid point %s", b, p0);
    else snprintf(buf, n, "block %s, written at the %lld grid points from %s to %s (stored at the last)", b,
                  (long long)count, p0, p1);
    return PL_OK;
}

/* ---- pl_check_matmul ------------------------------------------------------------ */

int pl_check_matmul_call(const pl_call *call, const pl_array *a, const pl_array *b, const pl_array *c, pl_check *out,
                         FILE *f)
{
    pl_check r = {.worst_row = -1, .worst_col = -1};
    double *err = NULL;
    int rc = sim_matmul_args(a, b, c);
    if (!rc) rc = sim_matmul_errors(a, b, c, &err, &r);
    free(err);
    if (rc) {
        if (f) fprintf(f, "pl_check_matmul: %s (want a (m,k), b (k,n), c (m,n) float arrays with data)\n",
                       pl_strerror(rc));
        if (out) *out = r;
        return rc;
    }
    if (call && r.verdict != PL_PASS) {
        int64_t at[2] = {r.worst_row, r.worst_col};
        pl_check_blame(call, 0, c, at, r.blame, sizeof r.blame);
    }
    if (f) {
        fprintf(f, "  check vs cblas_sgemm  %lldx%lldx%lld %s: max abs err %.3g, normalised err %.3g "
                   "(pass <= %.3g, fail > %.3g)",
                (long long)a->shape[0], (long long)b->shape[1], (long long)a->shape[1], pl_dtype_name(c->dtype),
                r.max_abs_err, r.norm_err, r.pass_below, r.fail_above);
        if (r.n_nan) fprintf(f, ", %lld NaN/inf", (long long)r.n_nan);
        if (r.verdict != PL_PASS) fprintf(f, ", worst at (%lld, %lld)", (long long)r.worst_row, (long long)r.worst_col);
        fprintf(f, "  %s\n", pl_verdict_name(r.verdict));
        if (r.blame[0]) fprintf(f, "    the worst element is in %s\n", r.blame);
    }
    if (out) *out = r;
    return r.verdict == PL_FAIL ? PL_EVERIFY : PL_OK;
}

int pl_check_matmul(const pl_array *a, const pl_array *b, const pl_array *c, pl_check *out, FILE *f)
{
    return pl_check_matmul_call(NULL, a, b, c, out, f);
}

/* ---- pl_allclose ------------------------------------------------------------------ */

/* Default tolerances: a few units in the last place of the dtype. */
static void default_tolerance(pl_dtype t, double *rtol, double *atol)
{
    switch (t) {
    case PL_BF16: *rtol = 1.6e-2, *atol = 1e-2; break;
    case PL_F16: *rtol = 2e-3, *atol = 1e-3; break;
    case PL_F32: *rtol = 1e-5, *atol = 1e-6; break;
    case PL_F8E4M3: *rtol = 0.125, *atol = 0x1p-9; break; /* an ulp (3 mantissa bits), the least subnormal */
    case PL_F8E5M2: *rtol = 0.25, *atol = 0x1p-16; break;  /* 2 mantissa bits */
    default: *rtol = 0, *atol = 0; break; /* integers: exact */
    }
}

int sim_allclose_errors(const pl_array *got, const pl_array *want, double *rtol, double *atol, double **err,
                        pl_check *out)
{
    pl_check r = {.worst_row = -1, .worst_col = -1};
    int same = got && want && got->data && want->data && got->rank == want->rank;
    same = same && pl_dtype_bits(got->dtype) != 4 && pl_dtype_bits(want->dtype) != 4; /* int4, fp4: no byte each */
    for (int d = 0; same && d < got->rank; d++) same = got->shape[d] == want->shape[d];
    if (!same) {
        *out = r;
        return PL_ESHAPE;
    }
    double drt, dat;
    default_tolerance(got->dtype, &drt, &dat);
    if (*rtol < 0 || *atol < 0 || (*rtol == 0 && *atol == 0 && pl_dtype_is_float(got->dtype))) *rtol = drt, *atol = dat;
    int64_t n = pl_array_size(got), worst = -1;
    double *ev = err ? malloc((size_t)(n ? n : 1) * sizeof *ev) : NULL;
    if (err && !ev) return PL_ENOMEM;
    size_t eg = pl_dtype_size(got->dtype), ew = pl_dtype_size(want->dtype);
    for (int64_t i = 0; i < n; i++) {
        double g = pl_load_elem((const char *)got->data + (size_t)i * eg, got->dtype);
        double w = pl_load_elem((const char *)want->data + (size_t)i * ew, want->dtype);
        double d = fabs(g - w), tol = *atol + *rtol * fabs(w), e;
        if (isnan(g) != isnan(w) || (!isfinite(g) && g != w)) {
            r.n_nan++;
            e = d = INFINITY;
        } else e = d == 0 || (isnan(g) && isnan(w)) ? 0 : tol > 0 ? d / tol : INFINITY;
        if (ev) ev[i] = e;
        if (d > r.max_abs_err) r.max_abs_err = d;
        if (worst < 0 || e > r.norm_err) r.norm_err = e, worst = i;
    }
    r.pass_below = 1;
    r.fail_above = 4;
    int64_t last = got->rank ? got->shape[got->rank - 1] : 1;
    r.worst_row = worst / last;
    r.worst_col = worst % last;
    r.verdict = r.n_nan || !(r.norm_err <= r.fail_above) ? PL_FAIL : r.norm_err <= 1 ? PL_PASS : PL_MARGINAL;
    *out = r;
    if (err) *err = ev;
    return PL_OK;
}

int pl_allclose(const pl_array *got, const pl_array *want, double rtol, double atol, pl_check *out, FILE *f)
{
    pl_check r;
    if (sim_allclose_errors(got, want, &rtol, &atol, NULL, &r) != PL_OK) {
        if (f) fprintf(f, "pl_allclose: the arrays must have data, the same shape and a byte or more per element "
                          "(not int4 or fp4)\n");
        if (out) *out = r;
        return PL_ESHAPE;
    }
    if (f)
        fprintf(f, "  allclose %s (rtol %.3g, atol %.3g): max abs err %.3g, worst %.3g of the tolerance%s  %s\n",
                pl_dtype_name(got->dtype), rtol, atol, r.max_abs_err, r.norm_err,
                r.n_nan ? ", NaN/inf mismatch" : "", pl_verdict_name(r.verdict));
    if (out) *out = r;
    return r.verdict == PL_FAIL ? PL_EVERIFY : PL_OK;
}

/* ---- the error heatmap (drawn by heatmap.c) ------------------------------------- */

