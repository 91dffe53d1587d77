/* examples/kernels/add.c: z = x + y over (rows, cols) in (br, bc) blocks,
 * the smallest kernel that is all HBM traffic (definition "add"). */
#include <stdio.h>
#include <stdlib.h>

#include "kdef_util.h"
#include "registry.h"

enum { P_ROWS, P_COLS, P_BR, P_BC, P_DT };

static const int64_t br_cands[] = {8, 16, 32, 64, 128, 256, 512};
static const int64_t bc_cands[] = {128, 256, 512, 1024};
static const int64_t dt_cands[] = {PL_F32, PL_BF16};

static void add_kernel(pl_ctx *c, pl_ref *refs) { pl_add(c, refs[2], refs[0], refs[1]); }

static int add_check(const int64_t *v, char *msg, size_t n)
{
    static const pl_dtype ok[] = {PL_F32, PL_BF16, PL_F16};
    int rc = ex_check_positive(&ex_def_add, v, msg, n);
    return rc == PL_OK ? ex_check_dtype(&ex_def_add, v, P_DT, ok, 3, msg, n) : rc;
}

static int add_build(const int64_t *v, pl_kernel_build *b, char *msg, size_t n)
{
    int rc = add_check(v, msg, n);
    if (rc != PL_OK) return rc;
    int64_t rows = v[P_ROWS], cols = v[P_COLS], br = v[P_BR], bc = v[P_BC];
    pl_dtype dt = (pl_dtype)v[P_DT];
    b->call = (pl_call){
        .name = "add", .kernel = add_kernel, .grid_rank = 2, .grid = {ex_cdiv(rows, br), ex_cdiv(cols, bc)},
        .semantics = {PL_PARALLEL, PL_PARALLEL},
        .n_in = 2, .in = {PL_BLOCK(PL_MAP(0, 1), br, bc), PL_BLOCK(PL_MAP(0, 1), br, bc)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, 1), br, bc)},
    };
    b->call.in[0].name = "x", b->call.in[1].name = "y", b->call.out[0].name = "z";
    b->n_args = 2;
    b->args[0] = PL_ARRAY(NULL, dt, rows, cols);
    b->args[1] = PL_ARRAY(NULL, dt, rows, cols);
    b->n_outs = 1;
    b->outs[0] = PL_ARRAY(NULL, dt, rows, cols);
    return PL_OK;
}

static int add_reference(const int64_t *v, const pl_kernel_build *b, pl_array *want)
{
    int64_t n = v[P_ROWS] * v[P_COLS];
    float *x = ex_widen(&b->args[0]), *y = ex_widen(&b->args[1]);
    double *z = malloc(sizeof(double) * (size_t)n);
    int rc = x && y && z ? PL_OK : PL_ENOMEM;
    for (int64_t i = 0; rc == PL_OK && i < n; i++) z[i] = (double)x[i] + (double)y[i];
    if (rc == PL_OK) ex_store(&want[0], z, n);
    free(x), free(y), free(z);
    return rc;
}

static double add_flops(const int64_t *v) { return (double)v[P_ROWS] * (double)v[P_COLS]; }
static double add_bytes(const int64_t *v)
{
    return 3.0 * (double)pl_dtype_size((pl_dtype)v[P_DT]) * (double)v[P_ROWS] * (double)v[P_COLS];
}

const pl_kernel_def ex_def_add = {
    .name = "add", .summary = "z = x + y, elementwise, (br, bc) blocks",
    .n_params = 5,
    .params = {{.name = "rows", .def = 1024, .help = "rows of x, y and z"},
               {.name = "cols", .def = 1024, .help = "columns of x, y and z"},
               {.name = "br", .def = 256, .candidates = br_cands, .n_candidates = 7, .help = "rows per block"},
               {.name = "bc", .def = 512, .candidates = bc_cands, .n_candidates = 4, .help = "columns per block"},
               {.name = "dtype", .kind = PL_PARAM_DTYPE, .def = PL_F32, .candidates = dt_cands, .n_candidates = 2,
                .help = "of x, y and z: f32, bf16 or f16"}},
    .check = add_check, .build = add_build, .reference = add_reference, .flops = add_flops, .bytes = add_bytes,
};
