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
 * once, so the accumulator stays exact (int32) until then. x's inverse
 * scale qmax / absmax depends on the row block only, so the first reduction
 * step of each output block computes it into a scratch and the later steps
 * reuse it. The host reference repeats the quantization bit for bit. A row
 * whose abs-max is 0 is the caller's to guard (serving stacks clamp it).
 *
 * wdtype=f4e2m1 (v7x): fp4 weights, stored packed as on hardware: w_q is an
 * int8 array of [out, in/2] bytes, weight 2k in the low nibble of byte k
 * (pl_f4_store), half of fp8's HBM bytes. v7x's MXU has no fp4 path (bf16
 * and fp8 only), so each step unpacks its (bo, bi/2) bytes into an fp8 e4m3
 * (bo, bi) scratch with VPU ops (fp4_unpack, every value exact in e4m3),
 * then multiplies fp8 x fp8 as the fp8 weights do; x is quantized to fp8. */
#include <math.h>
#include <stdlib.h>

#include "kdef_util.h"
#include "registry.h"

enum { P_B, P_IN, P_OUT, P_BB, P_BO, P_BI, P_WDT };

typedef struct qmm_params {
    double qmax; /* 127 (int8) or 448 (fp8 e4m3, also x's type with fp4 weights): the largest magnitude */
    int is_int8, is_fp4;
} qmm_params;

/* Scratch, after the 5 operands: x scaled (f32), x quantized, x's inverse
 * scale, the accumulator and its f32 copy; with fp4 weights also the
 * unpacked fp8 weights and four f32 (bo, bi/2) temporaries of the unpack. */
enum { S_XS, S_XQ, S_INV, S_ACC, S_ACCF, S_WU, S_T, S_H, S_S, S_A, S_COUNT };

/* Adding then subtracting 1.5 * 2^23 in f32 rounds to an integer, ties to
 * even (jnp.round), for |v| < 2^22: how a TPU kernel rounds on the VPU. */
#define ROUND_MAGIC 12582912.0

/* ref[:, pl.ds(start, n / 2, stride=2)]: every other lane of a rank-2 Ref,
 * as pl.ds with a stride spells it; tilesim's pl_ds has no stride, so the
 * view is made from the Ref's public shape and strides (inside r). */
static pl_ref lane_view(pl_ref r, int start)
{
    r.data = (char *)r.data + (size_t)start * pl_dtype_size(r.dtype);
    r.shape[1] /= 2;
    r.stride[1] *= 2;
    return r;
}

/* dst = the fp4 value of each nibble in code: 0..15 (unsigned: the low
 * nibble) or -8..7 (signed: the high one, after an arithmetic shift). The
 * sign s is the code's bit 3, the magnitude index m = code & 7, and
 * 2|v| = max(m, 2m - 4, 4m - 16) gives 0, 1, 2, 3, 4, 6, 8, 12 for m = 0..7
 * (values 0 .. 6). 12 VPU ops; code, s and a are overwritten. */
static void fp4_decode(pl_ctx *c, pl_ref dst, pl_ref code, int is_signed, pl_ref s, pl_ref a)
{
    pl_cmp_scalar(c, s, code, is_signed ? PL_LT : PL_GE, is_signed ? 0.0 : 8.0);
    pl_scale(c, a, s, is_signed ? 8.0 : -8.0);
    pl_add(c, code, code, a); /* m = code & 7 */
    pl_scale(c, a, code, 2.0);
    pl_add_scalar(c, a, a, -4.0);
    pl_max(c, code, code, a); /* max(m, 2m - 4) */
    pl_scale(c, a, a, 2.0);
    pl_add_scalar(c, a, a, -8.0);
    pl_max(c, code, code, a); /* 2|v| */
    pl_scale(c, s, s, -1.0);
    pl_add_scalar(c, s, s, 0.5); /* +0.5, or -0.5 for a set sign bit */
    pl_mul(c, dst, code, s);
}

/* Unpack the packed fp4 weights w (bo, bi/2 bytes) into wu (bo, bi, fp8):
 * the VPU work a kernel does where the MXU has no fp4 input (v7x), with
 * f32 arithmetic standing in for the shifts and masks: the high nibble is
 * floor(b / 16) (rounded by the 1.5 * 2^23 trick, as x is), the low one
 * b - 16 floor(b / 16). 6 ops per byte, then 12 per nibble (fp4_decode):
 * about 15 VPU ops per weight, more than a bit-level unpack would take. */
static void fp4_unpack(pl_ctx *c, pl_ref wu, pl_ref w, const pl_ref *r)
{
    pl_ref t = r[5 + S_T], h = r[5 + S_H], s = r[5 + S_S], a = r[5 + S_A];
    pl_copy(c, t, w); /* the byte, signed: -128..127 */
    pl_scale(c, h, t, 1.0 / 16);
    pl_add_scalar(c, h, h, ROUND_MAGIC - 15.0 / 32); /* b / 16 - 15/32 rounds to floor(b / 16), no ties */
    pl_add_scalar(c, h, h, -ROUND_MAGIC);
    pl_scale(c, a, h, -16.0);
    pl_add(c, t, t, a);
    fp4_decode(c, lane_view(wu, 0), t, 0, s, a); /* weight 2k: the low nibble */
    fp4_decode(c, lane_view(wu, 1), h, 1, s, a);
}

/* Refs: x, absmax, w_q, w_scale, o, then the scratch (S_*). */
static void qmm_kernel(pl_ctx *c, pl_ref *r)
{
    pl_ref x = r[0], amax = r[1], w = r[2], ws = r[3], o = r[4];
    pl_ref xs = r[5 + S_XS], xq = r[5 + S_XQ], inv = r[5 + S_INV], acc = r[5 + S_ACC], accf = r[5 + S_ACCF];
    const qmm_params *p = pl_kernel_user(c);
    int64_t k = pl_program_id(c, 2), nk = pl_num_programs(c, 2);
    if (k == 0) { /* absmax's block is (i, 0): the scale holds for every step of this output block */
        pl_fill(c, acc, 0.0);
        pl_fill(c, inv, p->qmax);
        pl_div_col(c, inv, inv, amax); /* qmax / absmax, per row */
    }
    pl_mul_col(c, xs, x, inv);
    if (p->is_int8) { /* round; fp8 rounds (to nearest even) in the cast */
        pl_add_scalar(c, xs, xs, ROUND_MAGIC);
        pl_add_scalar(c, xs, xs, -ROUND_MAGIC);
    }
    pl_copy(c, xq, xs);
    if (p->is_fp4) {
        fp4_unpack(c, r[5 + S_WU], w, r);
        w = r[5 + S_WU];
    }
    pl_dot(c, acc, xq, w, PL_DOT_ACC | PL_DOT_TRANS_B); /* T10 decides int32 or f32 */
    if (k == nk - 1) { /* inv is free now: the next output block's first step computes it again */
        pl_scale(c, inv, amax, 1.0 / p->qmax); /* s_x = absmax / qmax */
        pl_copy(c, accf, acc);
        pl_mul_col(c, accf, accf, inv);
        pl_mul_row(c, o, accf, ws);
    }
}

static int qmm_check(const int64_t *v, char *msg, size_t n)
{
    static const pl_dtype ok[] = {PL_I8, PL_F8E4M3, PL_F4E2M1};
    int rc = ex_check_positive(&ex_def_quant_matmul, v, msg, n);
    if (rc == PL_OK) rc = ex_check_dtype(&ex_def_quant_matmul, v, P_WDT, ok, 3, msg, n);
    if (rc != PL_OK) return rc;
    if (v[P_WDT] == PL_F4E2M1 && v[P_BI] % 2) {
        snprintf(msg, n, "quant_matmul: bi = %lld is odd; f4e2m1 weights are packed two per byte, so a block "
                 "holds an even number of them", (long long)v[P_BI]);
        return PL_EINVAL;
    }
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

/* The scratch of S_*: the fp4 unpack's only with fp4 weights. */
static void qmm_scratch(pl_call *call, pl_dtype wdt, int64_t bb, int64_t bo, int64_t bi)
{
    static const char *names[S_COUNT] = {"xs", "xq", "inv", "acc", "accf", "wu", "t", "h", "s", "a"};
    int fp4 = wdt == PL_F4E2M1;
    pl_dtype xdt = fp4 ? PL_F8E4M3 : wdt, acc = wdt == PL_I8 ? PL_I32 : PL_F32;
    call->scratch[S_XS] = PLTPU_VMEM(PL_F32, bb, bi);
    call->scratch[S_XQ] = PLTPU_VMEM(xdt, bb, bi);
    call->scratch[S_INV] = PLTPU_VMEM(PL_F32, bb, 1);
    call->scratch[S_ACC] = PLTPU_VMEM(acc, bb, bo);
    call->scratch[S_ACCF] = PLTPU_VMEM(PL_F32, bb, bo);
    call->scratch[S_WU] = PLTPU_VMEM(PL_F8E4M3, bo, bi);
    for (int i = S_T; i <= S_A; i++) call->scratch[i] = PLTPU_VMEM(PL_F32, bo, bi / 2);
    call->n_scratch = fp4 ? S_COUNT : S_WU;
    for (int i = 0; i < call->n_scratch; i++) call->scratch[i].name = names[i];
}

static int qmm_build(const int64_t *v, pl_kernel_build *b, char *msg, size_t n)
{
    int rc = qmm_check(v, msg, n);
    if (rc != PL_OK) return rc;
    pl_dtype wdt = (pl_dtype)v[P_WDT];
    int64_t bb = v[P_BB], bo = v[P_BO], bi = v[P_BI];
    qmm_params *p = (qmm_params *)b->param;
    p->is_int8 = wdt == PL_I8;
    p->is_fp4 = wdt == PL_F4E2M1;
    p->qmax = p->is_int8 ? 127.0 : 448.0;
    int64_t pack = p->is_fp4 ? 2 : 1; /* fp4: the HBM array and its blocks are bytes, two weights each */
    b->call = (pl_call){
        .name = "quant_matmul", .kernel = qmm_kernel, .user = p, .grid_rank = 3,
        .grid = {v[P_B] / bb, v[P_OUT] / bo, v[P_IN] / bi},
        .semantics = {PL_PARALLEL, PL_PARALLEL, PL_ARBITRARY},
        .n_in = 4,
        .in = {PL_BLOCK(PL_MAP(0, 2), bb, bi), PL_BLOCK(PL_MAP(0, PL_ZERO), bb, 1),
               PL_BLOCK(PL_MAP(1, 2), bo, bi / pack), PL_BLOCK(PL_MAP(PL_ZERO, 1), 1, bo)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, 1), bb, bo)},
    };
    qmm_scratch(&b->call, wdt, bb, bo, bi);
    static const char *in_names[] = {"x", "absmax", "w_q", "w_scale"};
    for (int i = 0; i < 4; i++) b->call.in[i].name = in_names[i];
    b->call.out[0].name = "o";
    b->n_args = 4;
    b->args[0] = PL_ARRAY(NULL, PL_BF16, v[P_B], v[P_IN]);
    b->args[1] = PL_ARRAY(NULL, PL_F32, v[P_B], 1);
    b->args[2] = PL_ARRAY(NULL, p->is_fp4 ? PL_I8 : wdt, v[P_OUT], v[P_IN] / pack);
    b->args[3] = PL_ARRAY(NULL, PL_F32, 1, v[P_OUT]);
    b->n_outs = 1;
    b->outs[0] = PL_ARRAY(NULL, PL_F32, v[P_B], v[P_OUT]);
    return PL_OK;
}

/* fp4 weights: every byte random, so that both nibbles take all 16 codes
 * (the default fill draws int8 values in -8..7, whose high nibble is 0 or
 * 15). splitmix64 of the seed, as the default fill. */
static void fill_fp4(uint8_t *w, int64_t n, uint64_t seed)
{
    uint64_t s = seed ^ 0x6a09e667f3bcc908ULL;
    for (int64_t i = 0; i < n; i++) {
        uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        w[i] = (uint8_t)((z ^ (z >> 31)) >> 56);
    }
}

/* The default fill, then what is not random: each row's abs-max of x (the
 * step outside the kernel) and positive weight scales. */
static int qmm_inputs(const int64_t *v, pl_kernel_build *b, uint64_t seed)
{
    int rc = pl_kernel_fill_inputs(v, b, seed);
    if (rc != PL_OK || !b->args[0].data) return rc;
    if (v[P_WDT] == PL_F4E2M1) fill_fp4(b->args[2].data, pl_array_size(&b->args[2]), seed);
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

/* Weight (j, k) of the packed or byte-per-element w_q. */
static double weight(const uint8_t *w, pl_dtype wdt, int64_t in, int64_t j, int64_t k)
{
    if (wdt == PL_F4E2M1) return pl_f4_load(w + j * (in / 2), k);
    uint8_t c = w[j * in + k];
    return wdt == PL_I8 ? (double)(int8_t)c : (double)pl_f8e4m3_to_f32(c);
}

/* x quantized as the kernel does (same f32 roundings), the products summed
 * exactly (int64 for int8; double for fp8 and fp4, whose products are
 * exact), then the scales with the kernel's roundings. */
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
                acc += xq[k] * weight(w, (pl_dtype)v[P_WDT], in, j, k);
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
/* Ideal traffic: x, its abs-max, w_q (half a byte a weight for fp4) and
 * its scales read once, o written once. */
static double qmm_bytes(const int64_t *v)
{
    double b = (double)v[P_B], in = (double)v[P_IN], out = (double)v[P_OUT];
    double wbytes = v[P_WDT] == PL_F4E2M1 ? in * out / 2 : in * out;
    return 2 * b * in + 4 * b + wbytes + 4 * out + 4 * b * out;
}

static const int64_t bb_cands[] = {64, 128, 256};
static const int64_t bo_cands[] = {128, 256, 512};
static const int64_t bi_cands[] = {128, 256, 512};
static const int64_t wdt_cands[] = {PL_I8, PL_F8E4M3, PL_F4E2M1};

/* Tolerances: int8 matches exactly (its sums are exact); fp8's f32 sums
 * differ from the reference's order by a few ulps of the largest term. */
const pl_kernel_def ex_def_quant_matmul = {
    .name = "quant_matmul",
    .summary = "o = (x . w_q^T) * s_x * s_w, x quantized per row in the kernel, w_q int8, fp8 or packed fp4 (T10)",
    .n_params = 7,
    .params = {{.name = "batch", .def = 256, .help = "rows of x and o"},
               {.name = "in", .def = 1024, .help = "features in: the contraction"},
               {.name = "out", .def = 1024, .help = "features out: rows of w_q, columns of o"},
               {.name = "bb", .def = 128, .candidates = bb_cands, .n_candidates = 3, .help = "batch rows per block"},
               {.name = "bo", .def = 256, .candidates = bo_cands, .n_candidates = 3, .help = "out columns per block"},
               {.name = "bi", .def = 256, .candidates = bi_cands, .n_candidates = 3,
                .help = "contraction elements per step"},
               {.name = "wdtype", .kind = PL_PARAM_DTYPE, .def = PL_I8, .candidates = wdt_cands, .n_candidates = 3,
                .help = "of w_q: i8 (v5e, v6e), f8e4m3 or f4e2m1 (v7x; packed, unpacked to fp8 in VMEM)"}},
    .check = qmm_check, .build = qmm_build, .inputs = qmm_inputs, .reference = qmm_reference,
    .rtol = 1e-4, .atol = 1e-4, .flops = qmm_flops, .bytes = qmm_bytes,
};
