/* examples/kernels/softmax.c: the two-phase online row softmax and its
 * definition (the design is in softmax.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "kdef_util.h"
#include "registry.h"
#include "softmax.h"
#include "values.h"

enum { P_ROWS, P_COLS, P_BR, P_BC, P_DT };

static const int64_t br_cands[] = {8, 16, 32, 64, 128, 256};
static const int64_t bc_cands[] = {128, 256, 512, 1024, 2048};
static const int64_t dt_cands[] = {PL_F32, PL_BF16};

/* Phase 0 at column block j: fold the block into (m, s). */
static void softmax_stats(pl_ctx *c, pl_ref x, pl_ref m, pl_ref s, pl_ref mx, pl_ref t, int no_max)
{
    if (no_max) {
        pl_fill(c, mx, 0.0);
    } else {
        pl_max_rows(c, mx, x);
        pl_max(c, mx, mx, m); /* m_new */
    }
    pl_sub(c, m, m, mx);
    pl_exp(c, m, m);      /* alpha = exp(m_old - m_new): 0 at j = 0, where m_old = -inf */
    pl_mul(c, s, s, m);   /* rescale the sum so far to the new max */
    pl_sub_col(c, t, x, mx);
    pl_exp(c, t, t);
    pl_sum_rows(c, m, t); /* m as a temporary: the block's sum */
    pl_add(c, s, s, m);
    pl_copy(c, m, mx);
}

void softmax_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_ref x = refs[0], o = refs[1], m = refs[2], s = refs[3];
    const softmax_params *p = pl_kernel_user(c);
    ex_values *vals = ex_values_begin(c, ex_value_bytes(PL_F32, p->br, 1) + ex_value_bytes(PL_F32, p->br, p->bc));
    pl_ref mx = ex_value(vals, PL_F32, p->br, 1), t = ex_value(vals, PL_F32, p->br, p->bc);
    int64_t phase = pl_program_id(c, 1), j = pl_program_id(c, 2);
    int64_t bc = x.shape[1], valid = p->cols - j * bc;
    if (valid < bc) { /* B6: the overhang columns are poison; leave them out */
        x = pl_ds(c, x, 1, 0, valid);
        o = pl_ds(c, o, 1, 0, valid);
        t = pl_ds(c, t, 1, 0, valid);
    }
    if (phase == 0) {
        if (j == 0) {
            pl_fill(c, m, p->no_max ? 0.0 : -INFINITY);
            pl_fill(c, s, 0.0);
        }
        softmax_stats(c, x, m, s, mx, t, p->no_max);
        return;
    }
    pl_sub_col(c, t, x, m);
    pl_exp(c, t, t);
    pl_div_col(c, o, t, s);
}

/* (i, phase * j): phase 0 parks on the block phase 1 writes first. */
static void out_map(const int64_t *g, const pl_ref *prefetch, int64_t *blk, void *user)
{
    (void)prefetch, (void)user;
    blk[0] = g[0];
    blk[1] = g[1] ? g[2] : 0;
}

static int softmax_check(const int64_t *v, char *msg, size_t n)
{
    static const pl_dtype ok[] = {PL_F32, PL_BF16};
    int rc = ex_check_positive(&ex_def_softmax, v, msg, n);
    return rc == PL_OK ? ex_check_dtype(&ex_def_softmax, v, P_DT, ok, 2, msg, n) : rc;
}

static int softmax_build(const int64_t *v, pl_kernel_build *b, char *msg, size_t n)
{
    int rc = softmax_check(v, msg, n);
    if (rc != PL_OK) return rc;
    int64_t rows = v[P_ROWS], cols = v[P_COLS], br = v[P_BR], bc = v[P_BC];
    pl_dtype dt = (pl_dtype)v[P_DT];
    softmax_params *p = (softmax_params *)b->param;
    *p = (softmax_params){.cols = cols, .br = br, .bc = bc};
    b->call = (pl_call){
        .name = "softmax", .kernel = softmax_kernel, .user = p,
        .grid_rank = 3, .grid = {ex_cdiv(rows, br), 2, ex_cdiv(cols, bc)},
        .semantics = {PL_PARALLEL, PL_ARBITRARY, PL_ARBITRARY},
        .n_in = 1, .in = {PL_BLOCK(PL_MAP(0, 2), br, bc)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP_FN(out_map, NULL), br, bc)},
        .n_scratch = 2, .scratch = {PLTPU_VMEM(PL_F32, br, 1), PLTPU_VMEM(PL_F32, br, 1)},
    };
    b->call.in[0].name = "x", b->call.out[0].name = "y";
    b->call.scratch[0].name = "m", b->call.scratch[1].name = "s";
    b->n_args = 1;
    b->args[0] = PL_ARRAY(NULL, dt, rows, cols);
    b->n_outs = 1;
    b->outs[0] = PL_ARRAY(NULL, dt, rows, cols);
    return PL_OK;
}

/* In double, row by row, with the max subtracted. */
static int softmax_reference(const int64_t *v, const pl_kernel_build *b, pl_array *want)
{
    int64_t rows = v[P_ROWS], cols = v[P_COLS];
    float *x = ex_widen(&b->args[0]);
    double *y = malloc(sizeof(double) * (size_t)(rows * cols));
    int rc = x && y ? PL_OK : PL_ENOMEM;
    for (int64_t i = 0; rc == PL_OK && i < rows; i++) {
        const float *xr = x + i * cols;
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < cols; j++) mx = xr[j] > mx ? xr[j] : mx;
        for (int64_t j = 0; j < cols; j++) sum += exp(xr[j] - mx);
        for (int64_t j = 0; j < cols; j++) y[i * cols + j] = exp(xr[j] - mx) / sum;
    }
    if (rc == PL_OK) ex_store(&want[0], y, rows * cols);
    free(x), free(y);
    return rc;
}

/* max, subtract, exp (4), sum, divide (4) per element; x read once, y written once */
static double softmax_flops(const int64_t *v) { return 11.0 * (double)v[P_ROWS] * (double)v[P_COLS]; }
static double softmax_bytes(const int64_t *v)
{
    return 2.0 * (double)pl_dtype_size((pl_dtype)v[P_DT]) * (double)v[P_ROWS] * (double)v[P_COLS];
}

const pl_kernel_def ex_def_softmax = {
    .name = "softmax", .summary = "row softmax over rows wider than a block: online max/sum, then normalise",
    .n_params = 5,
    .params = {{.name = "rows", .def = 512, .help = "rows of x and y"},
               {.name = "cols", .def = 4096, .help = "row length (may exceed bc)"},
               {.name = "br", .def = 64, .candidates = br_cands, .n_candidates = 6, .help = "rows per block"},
               {.name = "bc", .def = 512, .candidates = bc_cands, .n_candidates = 5, .help = "columns per block"},
               {.name = "dtype", .kind = PL_PARAM_DTYPE, .def = PL_F32, .candidates = dt_cands, .n_candidates = 2,
                .help = "of x and y: f32 or bf16 (max and sum in f32)"}},
    .check = softmax_check, .build = softmax_build, .reference = softmax_reference,
    .flops = softmax_flops, .bytes = softmax_bytes,
};
