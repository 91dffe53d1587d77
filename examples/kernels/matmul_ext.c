/* examples/kernels/matmul_ext.c: the matmul family as definitions: the
 * tiled matmul of matmul.h, and two variants real models use, C = A @ B^T
 * (B given (N, K), as a linear layer stores its weight) and a fused
 * epilogue C = relu(A @ B + bias) applied on the last contraction step, so
 * the pre-activation never goes to HBM. All three share the grid
 * (M/bm, N/bn, K/bk) with k last and arbitrary (P3) and mask the ragged
 * contraction block (B6). */
#include <stdio.h>
#include <stdlib.h>

#include "kdef_util.h"
#include "matmul.h"
#include "registry.h"

enum { P_M, P_N, P_K, P_BM, P_BN, P_BK, P_DT };

static const int64_t blk_cands[] = {128, 256, 512};
static const int64_t dt_cands[] = {PL_F32, PL_BF16};

#define MM_PARAMS                                                                                                \
    .n_params = 7,                                                                                               \
    .params = {{.name = "M", .def = 512, .help = "rows of A and C"},                                             \
               {.name = "N", .def = 512, .help = "columns of B and C"},                                          \
               {.name = "K", .def = 512, .help = "the contraction length"},                                      \
               {.name = "bm", .def = 256, .candidates = blk_cands, .n_candidates = 3, .help = "rows per block"}, \
               {.name = "bn", .def = 256, .candidates = blk_cands, .n_candidates = 3, .help = "columns per block"}, \
               {.name = "bk", .def = 256, .candidates = blk_cands, .n_candidates = 3,                            \
                .help = "contraction elements per step"},                                                        \
               {.name = "dtype", .kind = PL_PARAM_DTYPE, .def = PL_F32, .candidates = dt_cands, .n_candidates = 2, \
                .help = "of A, B and C: f32 or bf16 (accumulated in f32)"}}

static int mm_check(const pl_kernel_def *d, const int64_t *v, char *msg, size_t n)
{
    static const pl_dtype ok[] = {PL_F32, PL_BF16};
    int rc = ex_check_positive(d, v, msg, n);
    if (rc == PL_OK) rc = ex_check_dtype(d, v, P_DT, ok, 2, msg, n);
    return rc;
}

static int matmul_check(const int64_t *v, char *msg, size_t n) { return mm_check(&ex_def_matmul, v, msg, n); }
static int tb_check(const int64_t *v, char *msg, size_t n) { return mm_check(&ex_def_matmul_tb, v, msg, n); }
static int br_check(const int64_t *v, char *msg, size_t n) { return mm_check(&ex_def_matmul_bias_relu, v, msg, n); }

/* The shared part: x (M, K), y (K, N) or (N, K), o (M, N). */
static void mm_build_common(const int64_t *v, pl_kernel_build *b, int trans_b)
{
    pl_dtype dt = (pl_dtype)v[P_DT];
    mm_call(&b->call, (mm_params *)b->param, v[P_M], v[P_N], v[P_K], v[P_BM], v[P_BN], v[P_BK]);
    b->call.user = b->param;
    b->n_args = 2;
    b->args[0] = PL_ARRAY(NULL, dt, v[P_M], v[P_K]);
    b->args[1] = trans_b ? PL_ARRAY(NULL, dt, v[P_N], v[P_K]) : PL_ARRAY(NULL, dt, v[P_K], v[P_N]);
    b->n_outs = 1;
    b->outs[0] = PL_ARRAY(NULL, dt, v[P_M], v[P_N]);
}

static int matmul_build(const int64_t *v, pl_kernel_build *b, char *msg, size_t n)
{
    int rc = matmul_check(v, msg, n);
    if (rc != PL_OK) return rc;
    mm_build_common(v, b, 0);
    return PL_OK;
}

/* acc += x @ y^T: y's block is (bn, bk) at (j, k); both operands lose the
 * ragged contraction tail. */
static void tb_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_ref x = refs[0], y = refs[1], o = refs[2];
    const mm_params *p = pl_kernel_user(c);
    int64_t k = pl_program_id(c, 2), nk = pl_num_programs(c, 2);
    unsigned flags = PL_DOT_TRANS_B;
    pl_ref acc = mm_acc(c, refs, 3, o, &flags);
    int64_t bk = x.shape[1], valid = p->k - k * bk;
    if (valid < bk) { /* B6 */
        x = pl_ds(c, x, 1, 0, valid);
        y = pl_ds(c, y, 1, 0, valid);
    }
    pl_dot(c, acc, x, y, flags);
    if (k == nk - 1) pl_copy(c, o, acc);
}

static int tb_build(const int64_t *v, pl_kernel_build *b, char *msg, size_t n)
{
    int rc = tb_check(v, msg, n);
    if (rc != PL_OK) return rc;
    mm_build_common(v, b, 1);
    b->call.name = "matmul_tb";
    b->call.kernel = tb_kernel;
    b->call.in[1] = PL_BLOCK(PL_MAP(1, 2), v[P_BN], v[P_BK]);
    b->call.in[1].name = "y";
    return PL_OK;
}

/* The epilogue: acc + bias (a (1, bn) row), then relu into o, once, at the
 * last k step. Refs: x, y, bias, o, acc. */
static void br_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_ref x = refs[0], y = refs[1], bias = refs[2], o = refs[3];
    const mm_params *p = pl_kernel_user(c);
    int64_t k = pl_program_id(c, 2), nk = pl_num_programs(c, 2);
    unsigned flags = 0;
    pl_ref acc = mm_acc(c, refs, 4, o, &flags);
    int64_t bk = x.shape[1], valid = p->k - k * bk;
    if (valid < bk) { /* B6 */
        x = pl_ds(c, x, 1, 0, valid);
        y = pl_ds(c, y, 0, 0, valid);
    }
    pl_dot(c, acc, x, y, flags);
    if (k == nk - 1) {
        pl_add_row(c, acc, acc, bias);
        pl_relu(c, o, acc);
    }
}

static int br_build(const int64_t *v, pl_kernel_build *b, char *msg, size_t n)
{
    int rc = br_check(v, msg, n);
    if (rc != PL_OK) return rc;
    mm_build_common(v, b, 0);
    b->call.name = "matmul_bias_relu";
    b->call.kernel = br_kernel;
    b->call.n_in = 3;
    b->call.in[2] = PL_BLOCK(PL_MAP(PL_ZERO, 1), 1, v[P_BN]);
    b->call.in[2].name = "bias";
    b->n_args = 3;
    b->args[2] = PL_ARRAY(NULL, (pl_dtype)v[P_DT], 1, v[P_N]);
    return PL_OK;
}

/* C = A @ B (or B^T) through cblas_sgemm, then the epilogue on the host. */
static int mm_reference_common(const int64_t *v, const pl_kernel_build *b, pl_array *want, int trans_b, int epi)
{
    int64_t m = v[P_M], n = v[P_N];
    float *c = malloc(sizeof(float) * (size_t)(m * n));
    if (!c) return PL_ENOMEM;
    int rc = ex_ref_gemm(&b->args[0], &b->args[1], trans_b, c, m, n, v[P_K]);
    if (rc == PL_OK && epi) {
        float *bias = ex_widen(&b->args[2]);
        if (!bias) rc = PL_ENOMEM;
        for (int64_t i = 0; bias && i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                float t = c[i * n + j] + bias[j];
                c[i * n + j] = t > 0 ? t : 0;
            }
        free(bias);
    }
    if (rc == PL_OK) ex_store_f32(&want[0], c, m * n);
    free(c);
    return rc;
}

static int matmul_reference(const int64_t *v, const pl_kernel_build *b, pl_array *want)
{
    return mm_reference_common(v, b, want, 0, 0);
}
static int tb_reference(const int64_t *v, const pl_kernel_build *b, pl_array *want)
{
    return mm_reference_common(v, b, want, 1, 0);
}
static int br_reference(const int64_t *v, const pl_kernel_build *b, pl_array *want)
{
    return mm_reference_common(v, b, want, 0, 1);
}

static double mm_flops(const int64_t *v) { return 2.0 * (double)v[P_M] * (double)v[P_N] * (double)v[P_K]; }
/* Ideal traffic: read A and B once, write C once. */
static double mm_bytes(const int64_t *v)
{
    double es = (double)pl_dtype_size((pl_dtype)v[P_DT]);
    return es * ((double)v[P_M] * v[P_K] + (double)v[P_K] * v[P_N] + (double)v[P_M] * v[P_N]);
}
static double br_bytes(const int64_t *v) { return mm_bytes(v) + (double)pl_dtype_size((pl_dtype)v[P_DT]) * v[P_N]; }

/* Tolerances: loose enough for bf16 outputs (rounded to 8 bits), tight
 * enough that a missing k step or a wrong block is far outside. */
const pl_kernel_def ex_def_matmul = {
    .name = "matmul", .summary = "C = A @ B, tiled (bm, bn, bk), f32 accumulator in VMEM", MM_PARAMS,
    .check = matmul_check, .build = matmul_build, .reference = matmul_reference,
    .rtol = 1.6e-2, .atol = 1e-2, .flops = mm_flops, .bytes = mm_bytes,
};
const pl_kernel_def ex_def_matmul_tb = {
    .name = "matmul_tb", .summary = "C = A @ B^T with B given (N, K), as a linear layer's weight", MM_PARAMS,
    .check = tb_check, .build = tb_build, .reference = tb_reference,
    .rtol = 1.6e-2, .atol = 1e-2, .flops = mm_flops, .bytes = mm_bytes,
};
const pl_kernel_def ex_def_matmul_bias_relu = {
    .name = "matmul_bias_relu", .summary = "C = relu(A @ B + bias), the epilogue fused at the last k step",
    MM_PARAMS, .check = br_check, .build = br_build, .reference = br_reference,
    .rtol = 1.6e-2, .atol = 1e-2, .flops = mm_flops, .bytes = br_bytes,
};
