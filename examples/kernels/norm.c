/* examples/kernels/norm.c: RMSNorm, LayerNorm and an elementwise add, with
 * their definitions (registry.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "kdef_util.h"
#include "norm.h"
#include "registry.h"
#include "values.h"

enum { P_ROWS, P_D, P_BR, P_DT };

static const int64_t br_cands[] = {8, 16, 32, 64, 128, 256, 512, 1024};
static const int64_t dt_cands[] = {PL_F32, PL_BF16};
static const pl_dtype float_dts[] = {PL_F32, PL_BF16};

/* This grid point's values: n (br, d) f32 rows, then r (br, 1). */
static void norm_values(pl_ctx *c, const norm_params *p, int n, pl_ref *rows, pl_ref *r)
{
    ex_values *vals = ex_values_begin(c, (size_t)n * ex_value_bytes(PL_F32, p->br, p->d) +
                                             ex_value_bytes(PL_F32, p->br, 1));
    for (int i = 0; i < n; i++) rows[i] = ex_value(vals, PL_F32, p->br, p->d);
    *r = ex_value(vals, PL_F32, p->br, 1);
}

void rmsnorm_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_ref x = refs[0], gamma = refs[1], o = refs[2], t, r;
    const norm_params *p = pl_kernel_user(c);
    norm_values(c, p, 1, &t, &r);
    pl_mul(c, t, x, x);
    pl_sum_rows(c, r, t);
    pl_mul_scalar(c, r, r, p->inv_d); /* mean(x^2) */
    pl_add_scalar(c, r, r, p->eps);
    pl_rsqrt(c, r, r);
    pl_mul_col(c, t, x, r);
    pl_mul_row(c, o, t, gamma);
}

void layernorm_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_ref x = refs[0], gamma = refs[1], beta = refs[2], o = refs[3], tu[2], r;
    const norm_params *p = pl_kernel_user(c);
    norm_values(c, p, 2, tu, &r);
    pl_ref t = tu[0], u = tu[1];
    pl_sum_rows(c, r, x);
    pl_mul_scalar(c, r, r, p->inv_d);
    pl_sub_col(c, t, x, r); /* centred first: var = mean((x - mean)^2) does not cancel */
    pl_mul(c, u, t, t);
    pl_sum_rows(c, r, u);
    pl_mul_scalar(c, r, r, p->inv_d);
    pl_add_scalar(c, r, r, p->eps);
    pl_rsqrt(c, r, r);
    pl_mul_col(c, t, t, r);
    pl_mul_row(c, t, t, gamma);
    pl_add_row(c, o, t, beta);
}

static int norm_check(const pl_kernel_def *d, const int64_t *v, char *msg, size_t n)
{
    int rc = ex_check_positive(d, v, msg, n);
    return rc == PL_OK ? ex_check_dtype(d, v, P_DT, float_dts, 2, msg, n) : rc;
}
static int rms_check(const int64_t *v, char *msg, size_t n) { return norm_check(&ex_def_rmsnorm, v, msg, n); }
static int ln_check(const int64_t *v, char *msg, size_t n) { return norm_check(&ex_def_layernorm, v, msg, n); }

static void norm_build_common(const int64_t *v, pl_kernel_build *b, int layer)
{
    int64_t rows = v[P_ROWS], d = v[P_D], br = v[P_BR];
    pl_dtype dt = (pl_dtype)v[P_DT];
    norm_params *p = (norm_params *)b->param;
    *p = (norm_params){.eps = layer ? 1e-5 : 1e-6, .inv_d = 1.0 / (double)d, .br = br, .d = d};
    pl_call *call = &b->call;
    *call = (pl_call){
        .name = layer ? "layernorm" : "rmsnorm", .kernel = layer ? layernorm_kernel : rmsnorm_kernel,
        .user = p, .grid_rank = 1, .grid = {ex_cdiv(rows, br)}, .semantics = {PL_PARALLEL},
        .n_in = layer ? 3 : 2,
        .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), br, d), PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 1, d),
               PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 1, d)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), br, d)},
    };
    call->in[0].name = "x", call->in[1].name = "gamma", call->in[2].name = "beta", call->out[0].name = "o";
    b->n_args = call->n_in;
    b->args[0] = PL_ARRAY(NULL, dt, rows, d);
    b->args[1] = PL_ARRAY(NULL, dt, 1, d);
    b->args[2] = PL_ARRAY(NULL, dt, 1, d);
    b->n_outs = 1;
    b->outs[0] = PL_ARRAY(NULL, dt, rows, d);
}

static int rms_build(const int64_t *v, pl_kernel_build *b, char *msg, size_t n)
{
    int rc = rms_check(v, msg, n);
    if (rc == PL_OK) norm_build_common(v, b, 0);
    return rc;
}
static int ln_build(const int64_t *v, pl_kernel_build *b, char *msg, size_t n)
{
    int rc = ln_check(v, msg, n);
    if (rc == PL_OK) norm_build_common(v, b, 1);
    return rc;
}

/* The reference in double, row by row; eps from the build (so a test can
 * break the kernel's eps and not the reference's, see test_builtins.c). */
static int norm_reference(const int64_t *v, const pl_kernel_build *b, pl_array *want, int layer)
{
    int64_t rows = v[P_ROWS], d = v[P_D];
    double eps = layer ? 1e-5 : 1e-6;
    float *x = ex_widen(&b->args[0]), *g = ex_widen(&b->args[1]), *be = layer ? ex_widen(&b->args[2]) : NULL;
    double *y = malloc(sizeof(double) * (size_t)(rows * d));
    int rc = x && g && y && (!layer || be) ? PL_OK : PL_ENOMEM;
    for (int64_t i = 0; rc == PL_OK && i < rows; i++) {
        const float *xr = x + i * d;
        double mean = 0, ss = 0;
        if (layer) {
            for (int64_t j = 0; j < d; j++) mean += xr[j];
            mean /= (double)d;
        }
        for (int64_t j = 0; j < d; j++) ss += (xr[j] - mean) * (xr[j] - mean);
        double inv = 1.0 / sqrt(ss / (double)d + eps);
        for (int64_t j = 0; j < d; j++) y[i * d + j] = (xr[j] - mean) * inv * g[j] + (layer ? be[j] : 0.0);
    }
    if (rc == PL_OK) ex_store(&want[0], y, rows * d);
    free(x), free(g), free(be), free(y);
    return rc;
}
static int rms_reference(const int64_t *v, const pl_kernel_build *b, pl_array *want)
{
    return norm_reference(v, b, want, 0);
}
static int ln_reference(const int64_t *v, const pl_kernel_build *b, pl_array *want)
{
    return norm_reference(v, b, want, 1);
}

static double rms_flops(const int64_t *v) { return 4.0 * (double)v[P_ROWS] * (double)v[P_D]; }
static double ln_flops(const int64_t *v) { return 7.0 * (double)v[P_ROWS] * (double)v[P_D]; }
/* Ideal traffic: x read once, y written once, the (1, d) rows once. */
static double rms_bytes(const int64_t *v)
{
    return (double)pl_dtype_size((pl_dtype)v[P_DT]) * (2.0 * (double)v[P_ROWS] * v[P_D] + (double)v[P_D]);
}
static double ln_bytes(const int64_t *v) { return rms_bytes(v) + (double)pl_dtype_size((pl_dtype)v[P_DT]) * v[P_D]; }

#define NORM_PARAMS                                                                                               \
    .n_params = 4,                                                                                                \
    .params = {{.name = "rows", .def = 1024, .help = "rows of x (tokens)"},                                      \
               {.name = "d", .def = 512, .help = "row length (hidden size); one block holds whole rows"},        \
               {.name = "br", .def = 128, .candidates = br_cands, .n_candidates = 8, .help = "rows per block"}, \
               {.name = "dtype", .kind = PL_PARAM_DTYPE, .def = PL_F32, .candidates = dt_cands, .n_candidates = 2, \
                .help = "of x, gamma, beta and y: f32 or bf16 (statistics in f32)"}}

const pl_kernel_def ex_def_rmsnorm = {
    .name = "rmsnorm", .summary = "y = x * rsqrt(mean(x^2) + 1e-6) * gamma, (br, d) row blocks", NORM_PARAMS,
    .check = rms_check, .build = rms_build, .reference = rms_reference, .flops = rms_flops, .bytes = rms_bytes,
};
const pl_kernel_def ex_def_layernorm = {
    .name = "layernorm", .summary = "y = (x - mean) * rsqrt(var + 1e-5) * gamma + beta, (br, d) row blocks",
    NORM_PARAMS, .check = ln_check, .build = ln_build, .reference = ln_reference, .flops = ln_flops,
    .bytes = ln_bytes,
};
