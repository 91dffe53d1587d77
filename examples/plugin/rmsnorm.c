/* examples/plugin/rmsnorm.c: RMSNorm as a tilesim plugin, the template for
 * your own kernel. Copy this file, change the kernel, the build and the
 * reference, and every tool works on it:
 *
 *     cc -shared -fPIC -O2 -Wall -Wextra -I. examples/plugin/rmsnorm.c -o rmsnorm.so
 *     (installed: cc -shared -fPIC -O2 -Wall -Wextra $(pkg-config --cflags tilesim) rmsnorm.c -o rmsnorm.so)
 *     tilesim list rmsnorm.so
 *     tilesim run rmsnorm.so --set br=128 --set dtype=bf16
 *     tilesim sweep rmsnorm.so --vary br=8,16,32,64,128,256,512,1024 --json
 *
 * Do not link the library into the plugin: the program that loads it (the
 * tilesim command, or yours, linked with -rdynamic) provides every pl_*.
 *
 * The kernel: y = x * rsqrt(mean(x^2, axis=-1) + eps) * gamma over x of
 * shape (rows, d), in (br, d) row blocks on a grid of (rows / br,) points;
 * gamma (1, d) is the same block at every point, so it is copied once. The
 * math runs in f32 whatever the dtype, as a real TPU kernel does for bf16,
 * on values (pl_value): what a Pallas kernel names as Python variables
 * lives in vector registers, not in VMEM scratch of the call, so it adds
 * nothing to the call's VMEM. Declare scratch only for what outlives a grid
 * point (an accumulator, a running max).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernel/pallas.h"
#include "sim/kdef.h"

#define EPS 1e-6

/* Parameters, in the order of rmsnorm_def.params: the values arrive as v[]. */
enum { P_ROWS, P_D, P_BR, P_DTYPE };

/* ---- the kernel: what runs at each grid point ------------------------------ */

/* refs in the order of rule M3: inputs (x, gamma), outputs (y); no scratch. */
static void rmsnorm_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_ref x = refs[0], gamma = refs[1], y = refs[2];
    const int64_t *v = pl_kernel_user(c);       /* the parameters, from build */
    int64_t br = x.shape[0], d = x.shape[1];
    /* this grid point's values: xf and x^2 (br, d) and ms (br, 1), all f32 */
    pl_values_begin(c, 2 * pl_value_bytes(PL_F32, br, d) + pl_value_bytes(PL_F32, br, 1));
    pl_ref xf = pl_value(c, PL_F32, br, d), sq = pl_value(c, PL_F32, br, d), ms = pl_value(c, PL_F32, br, 1);
    pl_cast(c, xf, x);                          /* xf = x.astype(f32) */
    pl_mul(c, sq, xf, xf);                      /* sq = xf * xf */
    pl_reduce_sum(c, ms, sq, 1);                /* ms = sum(x^2, axis=-1, keepdims) */
    pl_mul_scalar(c, ms, ms, 1.0 / (double)v[P_D]); /* mean */
    pl_add_scalar(c, ms, ms, EPS);
    pl_rsqrt(c, ms, ms);                        /* 1 / sqrt(mean + eps), on the EUP */
    pl_mul_col(c, xf, xf, ms);                  /* each row by its scale */
    pl_mul_row(c, y, xf, gamma);                /* each column by gamma, rounded to y's dtype */
}

/* ---- the definition: parameters -> a pl_call ---------------------------------- */

/* Constraints between parameters, each refused with a message that names
 * them; tilesim sweep lists refused configurations with this reason. */
static int rmsnorm_check(const int64_t *v, char *msg, size_t n)
{
    if (v[P_ROWS] < 1 || v[P_D] < 1 || v[P_BR] < 1) {
        snprintf(msg, n, "rows, d and br must be at least 1");
        return PL_EINVAL;
    }
    if (v[P_ROWS] % v[P_BR] != 0) {
        snprintf(msg, n, "br=%lld does not divide rows=%lld", (long long)v[P_BR], (long long)v[P_ROWS]);
        return PL_EINVAL;
    }
    if (!pl_dtype_is_float((pl_dtype)v[P_DTYPE])) {
        snprintf(msg, n, "dtype=%s: RMSNorm takes a float dtype", pl_dtype_name((pl_dtype)v[P_DTYPE]));
        return PL_EINVAL;
    }
    return PL_OK;
}

static int rmsnorm_build(const int64_t *v, pl_kernel_build *b, char *msg, size_t n)
{
    (void)msg, (void)n; /* nothing to refuse beyond rmsnorm_check; the call's own rules are checked by the run */
    int64_t rows = v[P_ROWS], d = v[P_D], br = v[P_BR];
    pl_dtype t = (pl_dtype)v[P_DTYPE];
    /* the kernel reads its parameters through call.user: copy them into
     * b->param, which lives as long as the call (also in a sweep) */
    memcpy(b->param, v, 4 * sizeof *v);
    b->call = (pl_call){
        .name = "rmsnorm",
        .kernel = rmsnorm_kernel,
        .user = b->param,
        .grid_rank = 1,
        .grid = {rows / br},
        .semantics = {PL_PARALLEL}, /* rows are independent: megacore chips split them */
        .n_in = 2,
        .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), br, d), PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 1, d)},
        .n_out = 1,
        .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), br, d)},
    };
    b->call.in[0].name = "x";
    b->call.in[1].name = "gamma";
    b->call.out[0].name = "y";
    /* shapes and dtypes only: the driver allocates data (or not, cost-only) */
    b->n_args = 2;
    b->args[0] = PL_ARRAY(NULL, t, rows, d);
    b->args[1] = PL_ARRAY(NULL, t, 1, d);
    b->n_outs = 1;
    b->outs[0] = PL_ARRAY(NULL, t, rows, d);
    return PL_OK;
}

/* The expected output, from the inputs the driver filled (b->args): the
 * library's reference RMSNorm (sim/tilesim_check.h), in double, rounded
 * once to the output's dtype. pl_ref_matmul, pl_ref_softmax and
 * pl_ref_layernorm serve other kernels the same way. */
static int rmsnorm_reference(const int64_t *v, const pl_kernel_build *b, pl_array *want)
{
    (void)v;
    return pl_ref_rmsnorm(&b->args[0], &b->args[1], EPS, &want[0], NULL, 0);
}

/* Ideal work and traffic of RMSNorm, whatever the tiling: per element a
 * square, an add, a scale and a multiply by gamma; x read and y written
 * once, gamma read once. The report's efficiency is measured against these. */
static double rmsnorm_flops(const int64_t *v) { return 4.0 * (double)v[P_ROWS] * (double)v[P_D]; }
static double rmsnorm_bytes(const int64_t *v)
{
    return (2.0 * (double)v[P_ROWS] + 1.0) * (double)v[P_D] * (double)pl_dtype_size((pl_dtype)v[P_DTYPE]);
}

/* What `tilesim sweep --vary br=...` tries when not told. */
static const int64_t br_candidates[] = {8, 16, 32, 64, 128, 256, 512, 1024};
static const int64_t dtype_candidates[] = {PL_F32, PL_BF16};

static const pl_kernel_def rmsnorm_def = {
    .name = "rmsnorm",
    .summary = "RMSNorm y = x * rsqrt(mean(x^2) + eps) * gamma over (rows, d), (br, d) row blocks",
    .n_params = 4,
    .params =
        {
            [P_ROWS] = {.name = "rows", .def = 2048, .help = "rows of x and y"},
            [P_D] = {.name = "d", .def = 1024, .help = "the normalised (last) dimension"},
            [P_BR] = {.name = "br", .def = 256, .candidates = br_candidates, .n_candidates = 8,
                      .help = "rows per block (divides rows)"},
            [P_DTYPE] = {.name = "dtype", .kind = PL_PARAM_DTYPE, .def = PL_F32, .candidates = dtype_candidates,
                         .n_candidates = 2, .help = "dtype of x, gamma and y (f32, bf16)"},
        },
    .check = rmsnorm_check,
    .build = rmsnorm_build,
    .inputs = NULL, /* pl_kernel_fill_inputs: values in [-1, 1) from the seed */
    .reference = rmsnorm_reference,
    .rtol = 0, .atol = 0, /* the dtype's defaults (pl_allclose) */
    .flops = rmsnorm_flops,
    .bytes = rmsnorm_bytes,
};

/* ---- the export: the one symbol tilesim looks for ------------------------------- */

static const pl_kernel_def *const kernels[] = {&rmsnorm_def};

int tilesim_kernels(int abi, const pl_kernel_def *const **defs)
{
    if (abi != PL_KERNEL_ABI) return -1; /* built against another sim/kdef.h */
    *defs = kernels;
    return (int)(sizeof kernels / sizeof kernels[0]);
}
