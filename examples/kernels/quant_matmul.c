/* examples/kernels/quant_matmul.c: a quantized linear layer as serving
 * stacks write it (issue 15): o = (x . w_q^T) * s_x * s_w.
 *
 * x [batch, in] is bf16 and is quantized per row inside the kernel, with
 * its abs-max computed outside (a [batch, 1] f32 input: the step before the
 * layer has it for free); w_q [out, in] is int8 (v5e, v6e: int8 x int8 into
 * int32 on the MXU) or fp8 e4m3 (v7x, which has no int8 path: fp8 x fp8
 * into f32), with one f32 scale per output column (w_scale [1, out]). The
 * grid is (batch/bb, out/bo, in/bi) with the reduction last (arbitrary,
 * P3); each step quantizes its x block, x_q = round(x * qmax / absmax)
 * (qmax 127 for int8, 448 for e4m3), and accumulates x_q . w_q^T; the last
 * step applies both scales, absmax / qmax per row and w_scale per column,
 * once, so the accumulator stays exact (int32) until then. The host
 * reference repeats the quantization bit for bit. A row whose abs-max is 0
 * is the caller's to guard (serving stacks clamp it to a tiny value). */
#include <math.h>
#include <stdlib.h>

#include "kdef_util.h"
#include "registry.h"

enum { P_B, P_IN, P_OUT, P_BB, P_BO, P_BI, P_WDT };

typedef struct qmm_params {
    double qmax; /* 127 (int8) or 448 (fp8 e4m3): the largest quantized magnitude */
    int is_int8;
} qmm_params;

/* Adding then subtracting 1.5 * 2^23 in f32 rounds to an integer, ties to
 * even (jnp.round), for |v| < 2^22: how a TPU kernel rounds on the VPU. */
#define ROUND_MAGIC 12582912.0

/* Refs: x, absmax, w_q, w_scale, o, then scratch xs (f32), xq, inv, acc, accf. */
static void qmm_kernel(pl_ctx *c, pl_ref *r)
{
    pl_ref x = r[0], amax = r[1], w = r[2], ws = r[3], o = r[4];
    pl_ref xs = r[5], xq = r[6], inv = r[7], acc = r[8], accf = r[9];
    const qmm_params *p = pl_kernel_user(c);
    int64_t k = pl_program_id(c, 2), nk = pl_num_programs(c, 2);
    if (k == 0) pl_fill(c, acc, 0.0);
    pl_fill(c, inv, p->qmax);
    pl_div_col(c, inv, inv, amax); /* qmax / absmax, per row */
    pl_mul_col(c, xs, x, inv);
    if (p->is_int8) { /* round; fp8 rounds (to nearest even) in the cast */
        pl_add_scalar(c, xs, xs, ROUND_MAGIC);
        pl_add_scalar(c, xs, xs, -ROUND_MAGIC);
    }
    pl_copy(c, xq, xs);
    pl_dot(c, acc, xq, w, PL_DOT_ACC | PL_DOT_TRANS_B); /* T10 decides int32 or f32 */
    if (k == nk - 1) {
        pl_scale(c, inv, amax, 1.0 / p->qmax); /* s_x = absmax / qmax */
        pl_copy(c, accf, acc);
        pl_mul_col(c, accf, accf, inv);
        pl_mul_row(c, o, accf, ws);
    }
}

static int qmm_check(const int64_t *v, char *msg, size_t n)
{
    static const pl_dtype ok[] = {PL_I8, PL_F8E4M3};
    int rc = ex_check_positive(&ex_def_quant_matmul, v, msg, n);
    if (rc == PL_OK) rc = ex_check_dtype(&ex_def_quant_matmul, v, P_WDT, ok, 2, msg, n);
    if (rc != PL_OK) return rc;
    static const struct { int blk, dim; } div[] = {{P_BB, P_B}, {P_BO, P_OUT}, {P_BI, P_IN}};
    for (int i = 0; i < 3; i++) {
        const char *bn = ex_def_quant_matmul.params[div[i].blk].name, *dn = ex_def_quant_matmul.params[div[i].dim].name;
        if (v[div[i].dim] % v[div[i].blk] == 0) continue;
        snprintf(msg, n, "quant_matmul: %s = %lld does not divide %s = %lld (the kernel has no ragged blocks)", bn,
                 (long long)v[div[i].blk], dn, (long long)v[div[i].dim]);
        return PL_EINVAL;
    }
    return PL_OK;
}

static int qmm_build(const int64_t *v, pl_kernel_build *b, char *msg, size_t n)
{
    int rc = qmm_check(v, msg, n);
    if (rc != PL_OK) return rc;
    pl_dtype wdt = (pl_dtype)v[P_WDT];
    int64_t bb = v[P_BB], bo = v[P_BO], bi = v[P_BI];
    qmm_params *p = (qmm_params *)b->param;
    p->is_int8 = wdt == PL_I8;
    p->qmax = p->is_int8 ? 127.0 : 448.0;
    pl_dtype acc = p->is_int8 ? PL_I32 : PL_F32;
    b->call = (pl_call){
        .name = "quant_matmul", .kernel = qmm_kernel, .user = p, .grid_rank = 3,
        .grid = {v[P_B] / bb, v[P_OUT] / bo, v[P_IN] / bi},
        .semantics = {PL_PARALLEL, PL_PARALLEL, PL_ARBITRARY},
        .n_in = 4,
        .in = {PL_BLOCK(PL_MAP(0, 2), bb, bi), PL_BLOCK(PL_MAP(0, PL_ZERO), bb, 1), PL_BLOCK(PL_MAP(1, 2), bo, bi),
               PL_BLOCK(PL_MAP(PL_ZERO, 1), 1, bo)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, 1), bb, bo)},
        .n_scratch = 5,
        .scratch = {PLTPU_VMEM(PL_F32, bb, bi), PLTPU_VMEM(wdt, bb, bi), PLTPU_VMEM(PL_F32, bb, 1),
                    PLTPU_VMEM(acc, bb, bo), PLTPU_VMEM(PL_F32, bb, bo)},
    };
    static const char *in_names[] = {"x", "absmax", "w_q", "w_scale"};
    static const char *s_names[] = {"xs", "xq", "inv", "acc", "accf"};
    for (int i = 0; i < 4; i++) b->call.in[i].name = in_names[i];
    for (int i = 0; i < 5; i++) b->call.scratch[i].name = s_names[i];
    b->call.out[0].name = "o";
    b->n_args = 4;
    b->args[0] = PL_ARRAY(NULL, PL_BF16, v[P_B], v[P_IN]);
    b->args[1] = PL_ARRAY(NULL, PL_F32, v[P_B], 1);
    b->args[2] = PL_ARRAY(NULL, wdt, v[P_OUT], v[P_IN]);
    b->args[3] = PL_ARRAY(NULL, PL_F32, 1, v[P_OUT]);
    b->n_outs = 1;
    b->outs[0] = PL_ARRAY(NULL, PL_F32, v[P_B], v[P_OUT]);
    return PL_OK;
}

/* The default fill, then what is not random: each row's abs-max of x (the
 * step outside the kernel) and positive weight scales. */
static int qmm_inputs(const int64_t *v, pl_kernel_build *b, uint64_t seed)
{
    int rc = pl_kernel_fill_inputs(v, b, seed);
    if (rc != PL_OK || !b->args[0].data) return rc;
    const uint16_t *x = b->args[0].data;
    float *amax = b->args[1].data, *ws = b->args[3].data;
    for (int64_t i = 0; i < v[P_B]; i++) {
        float m = 0;
        for (int64_t k = 0; k < v[P_IN]; k++) m = fmaxf(m, fabsf(pl_bf16_to_f32(x[i * v[P_IN] + k])));
        amax[i] = m > 0 ? m : 1.0f; /* an all-zero row: any positive scale quantizes it to 0 */
    }
    for (int64_t j = 0; j < v[P_OUT]; j++) ws[j] = fabsf(ws[j]) / 64.0f + 1.0f / 512.0f;
    return PL_OK;
}

/* x quantized as the kernel does (same f32 roundings), the products summed
 * exactly (int64 for int8; double for fp8, whose products are exact), then
 * the scales with the kernel's roundings. */
static int qmm_reference(const int64_t *v, const pl_kernel_build *b, pl_array *want)
{
    int64_t nb = v[P_B], in = v[P_IN], out = v[P_OUT];
    int is_int8 = v[P_WDT] == PL_I8;
    double qmax = is_int8 ? 127.0 : 448.0;
    const uint16_t *x = b->args[0].data;
    const float *amax = b->args[1].data, *ws = b->args[3].data;
    const uint8_t *w = b->args[2].data;
    float *xq = malloc(sizeof(float) * (size_t)in), *o = malloc(sizeof(float) * (size_t)(nb * out));
    if (!xq || !o) return free(xq), free(o), PL_ENOMEM;
    for (int64_t i = 0; i < nb; i++) {
        float inv = (float)(qmax / amax[i]), sx = (float)(amax[i] * (1.0 / qmax));
        for (int64_t k = 0; k < in; k++) {
            float s = (float)(pl_bf16_to_f32(x[i * in + k]) * (double)inv);
            xq[k] = is_int8 ? rintf(s) : pl_f8e4m3_to_f32(pl_f32_to_f8e4m3(s));
        }
        for (int64_t j = 0; j < out; j++) {
            double acc = 0;
            for (int64_t k = 0; k < in; k++) {
                uint8_t c = w[j * in + k];
                acc += xq[k] * (is_int8 ? (double)(int8_t)c : (double)pl_f8e4m3_to_f32(c));
            }
            float t = (float)((double)(float)acc * sx);
            o[i * out + j] = (float)((double)t * ws[j]);
        }
    }
    ex_store_f32(&want[0], o, nb * out);
    free(xq);
    free(o);
    return PL_OK;
}

static double qmm_flops(const int64_t *v) { return 2.0 * (double)v[P_B] * (double)v[P_IN] * (double)v[P_OUT]; }
/* Ideal traffic: x, its abs-max, w_q and its scales read once, o written once. */
static double qmm_bytes(const int64_t *v)
{
    double b = (double)v[P_B], in = (double)v[P_IN], out = (double)v[P_OUT];
    return 2 * b * in + 4 * b + in * out + 4 * out + 4 * b * out;
}

static const int64_t bb_cands[] = {64, 128, 256};
static const int64_t bo_cands[] = {128, 256, 512};
static const int64_t bi_cands[] = {128, 256, 512};
static const int64_t wdt_cands[] = {PL_I8, PL_F8E4M3};

/* Tolerances: int8 matches exactly (its sums are exact); fp8's f32 sums
 * differ from the reference's order by a few ulps of the largest term. */
const pl_kernel_def ex_def_quant_matmul = {
    .name = "quant_matmul",
    .summary = "o = (x . w_q^T) * s_x * s_w, x quantized per row in the kernel, w_q int8 or fp8 (T10)",
    .n_params = 7,
    .params = {{.name = "batch", .def = 256, .help = "rows of x and o"},
               {.name = "in", .def = 1024, .help = "features in: the contraction"},
               {.name = "out", .def = 1024, .help = "features out: rows of w_q, columns of o"},
               {.name = "bb", .def = 128, .candidates = bb_cands, .n_candidates = 3, .help = "batch rows per block"},
               {.name = "bo", .def = 256, .candidates = bo_cands, .n_candidates = 3, .help = "out columns per block"},
               {.name = "bi", .def = 256, .candidates = bi_cands, .n_candidates = 3,
                .help = "contraction elements per step"},
               {.name = "wdtype", .kind = PL_PARAM_DTYPE, .def = PL_I8, .candidates = wdt_cands, .n_candidates = 2,
                .help = "of w_q: i8 (v5e, v6e) or f8e4m3 (v7x)"}},
    .check = qmm_check, .build = qmm_build, .inputs = qmm_inputs, .reference = qmm_reference,
    .rtol = 1e-4, .atol = 1e-4, .flops = qmm_flops, .bytes = qmm_bytes,
};
