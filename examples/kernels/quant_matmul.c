/* examples/kernels/quant_matmul.c: a quantized linear layer as serving
 * stacks write it (issue 15), the w8a8 kernel of JAX/vLLM on TPU (issue
 * 22): o = ((x_q . w_q^T) * s_w * s_x).astype(bf16).
 *
 * x [batch, in] is bf16 and is quantized per row inside the kernel, with
 * its abs-max computed outside (an f32 input: the step before the layer has
 * it for free). Production passes it as a [1, batch] row, blocks (1, bb),
 * which the kernel transposes to a column on the XLU; so does this one
 * wherever T1 takes that block (bb a multiple of 128, or the whole batch).
 * A block of fewer than 128 rows of a larger batch, which T1 refuses as a
 * row but the hardware table has once (bench/data: v7x 256 x 1792 x 6144,
 * bb = 64), takes a [batch, 1] column instead, (bb, 1) blocks: the same
 * values, 128 lanes of VMEM a row instead of 8 rows a block. w_q [out, in] is int8 (v5e, v6e: int8 x int8 into
 * int32 on the MXU) or fp8 e4m3 (v7x, which has no int8 path: fp8 x fp8
 * into f32), with one f32 scale per output column (w_scale [1, out]); o is
 * bf16, x's dtype. The grid is (batch/bb, out/bo, in/bi), the contraction
 * last (arbitrary, P3); x_q = round(x * qmax / absmax) (qmax 127 for int8,
 * 448 for e4m3). What the production kernel keeps in VMEM beside its
 * blocks, and nothing more:
 *   - an accumulator (bb, bo) only when the contraction takes several
 *     steps (in > bi); with one step the dot's result is a value;
 *   - x_q (bb, bi) and its scale s_x (bb, 1) only when the contraction is
 *     one step and there are several output blocks: x is then quantized
 *     once per batch block, at j == 0, and both are reused (so axis j is
 *     arbitrary: a core must see j == 0 first); otherwise they are values,
 *     computed where they are used.
 * Values (values.h) are what Mosaic holds in vector registers: their ops
 * are counted, their bytes are in no budget. Both scales are applied once,
 * at the last contraction step, so the int32 accumulator stays exact until
 * then. The host reference repeats every rounding. A row whose abs-max is 0
 * is the caller's to guard (serving stacks clamp it).
 *
 * wdtype=f4e2m1 (v7x): fp4 weights, stored packed as on hardware: w_q is an
 * int8 array of [out, in/2] bytes, weight 2k in the low nibble of byte k
 * (pl_f4_store), half of fp8's HBM and VMEM bytes, marked packed4 so that
 * its blocks obey the rules of the fp4 array the production BlockSpec
 * names (bi a multiple of 128 weights, 64 bytes; T1, T8, T6). v7x's MXU has no fp4
 * path (bf16 and fp8 only), so the packed block is widened to fp8 e4m3 on
 * its way to the MXU, in vector registers (values): VPU work, counted
 * (pl_unpack_f4, every value exact in e4m3), no VMEM; x is quantized to fp8.
 *
 * The call sets vmem_limit_bytes as the production kernel does: its own
 * estimate of its VMEM, capped (qmm_vmem_limit). */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>

#include "kdef_util.h"
#include "registry.h"
#include "values.h"

enum { P_B, P_IN, P_OUT, P_BB, P_BO, P_BI, P_WDT };

typedef struct qmm_params {
    double qmax;          /* 127 (int8) or 448 (fp8 e4m3, also x's type with fp4 weights): the largest magnitude */
    int is_int8, is_fp4;
    int save_acc, save_xq; /* the one scratch buffer the call may have: acc or x_q, never both */
    int amax_row;          /* absmax is production's (1, batch) row (a (1, bb) block), else a (batch, 1) column */
    int64_t bb, bo, bi;
    pl_dtype xdt, accdt;
} qmm_params;

/* Adding then subtracting 1.5 * 2^23 in f32 rounds to an integer, ties to
 * even (jnp.round), for |v| < 2^22: how a TPU kernel rounds on the VPU. */
#define ROUND_MAGIC 12582912.0

/* Host bytes of one grid point's values (the most it takes: fp4 and all). */
static size_t values_bytes(const qmm_params *p)
{
    size_t b = 4 * ex_value_bytes(PL_F32, p->bb, 1) + ex_value_bytes(PL_F32, p->bb, p->bi) +
               ex_value_bytes(p->xdt, p->bb, p->bi) + 2 * ex_value_bytes(PL_F32, p->bb, p->bo);
    if (p->is_fp4) b += ex_value_bytes(PL_F8E4M3, p->bo, p->bi);
    return b;
}

/* xq = round(x * qmax / absmax), per row (fp8 rounds to nearest even in
 * the cast), and sx = absmax / qmax, the scale of the output; amax is the
 * block of abs-maxes, a (1, bb) row (amax_row) or a (bb, 1) column. */
static void quantize_x(pl_ctx *c, pl_ref xq, pl_ref sx, pl_ref x, pl_ref amax, const qmm_params *p, ex_values *vals)
{
    if (p->amax_row) { /* to the column the rows divide by: the production kernel's jnp.transpose, on the XLU */
        pl_ref col = ex_value(vals, PL_F32, p->bb, 1);
        pl_transpose(c, col, amax);
        amax = col;
    }
    pl_ref inv = ex_value(vals, PL_F32, p->bb, 1), xs = ex_value(vals, PL_F32, p->bb, p->bi);
    pl_scale(c, sx, amax, 1.0 / p->qmax);
    pl_fill(c, inv, p->qmax);
    pl_div_col(c, inv, inv, amax); /* qmax / absmax, per row */
    pl_mul_col(c, xs, x, inv);
    if (p->is_int8) {
        pl_add_scalar(c, xs, xs, ROUND_MAGIC);
        pl_add_scalar(c, xs, xs, -ROUND_MAGIC);
    }
    pl_copy(c, xq, xs);
}

/* o = ((acc * w_scale) * s_x).astype(bf16), s_x = absmax / qmax: the
 * production kernel's order, each product rounded to f32. */
static void write_out(pl_ctx *c, pl_ref o, pl_ref acc, pl_ref sx, pl_ref ws, const qmm_params *p, ex_values *vals)
{
    pl_ref f = ex_value(vals, PL_F32, p->bb, p->bo);
    pl_copy(c, f, acc); /* int32 to f32 (a no-op cast for fp8's f32 result) */
    pl_mul_row(c, f, f, ws);
    pl_mul_col(c, f, f, sx);
    pl_copy(c, o, f);
}

/* Refs: x, absmax, w_q, w_scale, o, then the scratch: acc (save_acc), or
 * x_q and s_x (save_xq), or none. */
static void qmm_kernel(pl_ctx *c, pl_ref *r)
{
    pl_ref x = r[0], amax = r[1], w = r[2], ws = r[3], o = r[4];
    const qmm_params *p = pl_kernel_user(c);
    ex_values *vals = ex_values_begin(c, values_bytes(p));
    int64_t j = pl_program_id(c, 1), k = pl_program_id(c, 2), nk = pl_num_programs(c, 2);
    pl_ref xq = p->save_xq ? r[5] : ex_value(vals, p->xdt, p->bb, p->bi);
    pl_ref sx = p->save_xq ? r[6] : ex_value(vals, PL_F32, p->bb, 1);
    if (!p->save_xq || j == 0) quantize_x(c, xq, sx, x, amax, p, vals);
    if (p->is_fp4) {
        pl_ref wu = ex_value(vals, PL_F8E4M3, p->bo, p->bi);
        pl_unpack_f4(c, wu, w);
        w = wu;
    }
    pl_ref acc = p->save_acc ? r[5] : ex_value(vals, p->accdt, p->bb, p->bo);
    pl_dot(c, acc, xq, w, (k > 0 ? PL_DOT_ACC : 0) | PL_DOT_TRANS_B); /* T10 decides int32 or f32 */
    if (k == nk - 1) write_out(c, o, acc, sx, ws, p, vals);
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

/* The parameters the kernel reads, from the values. */
static void qmm_setup(const int64_t *v, qmm_params *p)
{
    pl_dtype wdt = (pl_dtype)v[P_WDT];
    p->is_int8 = wdt == PL_I8;
    p->is_fp4 = wdt == PL_F4E2M1;
    p->qmax = p->is_int8 ? 127.0 : 448.0;
    p->xdt = p->is_fp4 ? PL_F8E4M3 : wdt;
    p->accdt = p->is_int8 ? PL_I32 : PL_F32;
    p->bb = v[P_BB], p->bo = v[P_BO], p->bi = v[P_BI];
    int64_t nk = v[P_IN] / p->bi, nj = v[P_OUT] / p->bo;
    p->save_acc = nk > 1;
    p->save_xq = nk == 1 && nj > 1;
    p->amax_row = p->bb % 128 == 0 || p->bb == v[P_B]; /* where T1 takes a (1, bb) block */
}

static int qmm_build(const int64_t *v, pl_kernel_build *b, char *msg, size_t n)
{
    int rc = qmm_check(v, msg, n);
    if (rc != PL_OK) return rc;
    qmm_params *p = (qmm_params *)b->param;
    qmm_setup(v, p);
    int64_t bb = p->bb, bo = p->bo, bi = p->bi;
    int64_t pack = p->is_fp4 ? 2 : 1; /* fp4: the HBM array and its blocks are bytes, two weights each */
    b->call = (pl_call){
        .name = "quant_matmul", .kernel = qmm_kernel, .user = p, .grid_rank = 3,
        .grid = {v[P_B] / bb, v[P_OUT] / bo, v[P_IN] / bi},
        /* j is arbitrary when x_q is kept over it: each core must start its row block at j == 0 */
        .semantics = {PL_PARALLEL, p->save_xq ? PL_ARBITRARY : PL_PARALLEL, PL_ARBITRARY},
        .n_in = 4,
        .in = {PL_BLOCK(PL_MAP(0, 2), bb, bi),
               p->amax_row ? PL_BLOCK(PL_MAP(PL_ZERO, 0), 1, bb) : PL_BLOCK(PL_MAP(0, PL_ZERO), bb, 1),
               PL_BLOCK(PL_MAP(1, 2), bo, bi / pack), PL_BLOCK(PL_MAP(PL_ZERO, 1), 1, bo)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, 1), bb, bo)},
    };
    if (p->save_acc) b->call.scratch[0] = PLTPU_VMEM(p->accdt, bb, bo), b->call.scratch[0].name = "acc";
    if (p->save_xq) {
        b->call.scratch[0] = PLTPU_VMEM(p->xdt, bb, bi), b->call.scratch[0].name = "x_q";
        b->call.scratch[1] = PLTPU_VMEM(PL_F32, bb, 1), b->call.scratch[1].name = "x_scale";
    }
    b->call.n_scratch = p->save_acc ? 1 : p->save_xq ? 2 : 0;
    static const char *in_names[] = {"x", "absmax", "w_q", "w_scale"};
    for (int i = 0; i < 4; i++) b->call.in[i].name = in_names[i];
    b->call.out[0].name = "o";
    b->n_args = 4;
    b->args[0] = PL_ARRAY(NULL, PL_BF16, v[P_B], v[P_IN]);
    b->args[1] = p->amax_row ? PL_ARRAY(NULL, PL_F32, 1, v[P_B]) : PL_ARRAY(NULL, PL_F32, v[P_B], 1);
    b->args[2] = PL_ARRAY(NULL, p->is_fp4 ? PL_I8 : p->xdt, v[P_OUT], v[P_IN] / pack);
    b->args[2].packed4 = p->is_fp4; /* its blocks follow the fp4 rules: bi a multiple of 128 weights (T1) */
    b->args[3] = PL_ARRAY(NULL, PL_F32, 1, v[P_OUT]);
    b->n_outs = 1;
    b->outs[0] = PL_ARRAY(NULL, PL_BF16, v[P_B], v[P_OUT]);
    return PL_OK;
}

/* The limit the production kernel sets: min(its estimate, a cap). Its
 * estimate (vLLM's TPU quantized_matmul, get_vmem_limit): every block
 * twice ("compute and vreg spills"), a second buffer for each block whose
 * index changes, and the scratch it keeps twice; bits of each dtype, to
 * bytes at the end, no tile padding. The cap: 96 MiB, or 48 MiB on v7x
 * (64 MiB of VMEM), the figures the production kernel asks for (issue
 * 22): three quarters of the physical VMEM on both. */
static int64_t qmm_vmem_limit(const int64_t *v, const pl_chip *chip)
{
    qmm_params p;
    qmm_setup(v, &p);
    if (p.bb <= 0 || p.bo <= 0 || p.bi <= 0) return 0;
    int64_t ni = v[P_B] / p.bb, nj = v[P_OUT] / p.bo, nk = v[P_IN] / p.bi;
    double x = (double)(p.bb * p.bi) * 16, amax = (double)p.bb * 32, out = (double)(p.bb * p.bo) * 16;
    double w = (double)(p.bo * p.bi) * pl_dtype_bits((pl_dtype)v[P_WDT]), ws = (double)p.bo * 32;
    double bits = 2 * (x + amax + w + ws + out);
    bits += (ni > 1 || nk > 1 ? x : 0) + (ni > 1 ? amax : 0) + (nj > 1 || nk > 1 ? w : 0) + (nj > 1 ? ws : 0) +
            (ni > 1 || nj > 1 ? out : 0);
    if (p.save_acc) bits += 2 * (double)(p.bb * p.bo) * 32;
    if (p.save_xq) bits += 2 * ((double)(p.bb * p.bi) * pl_dtype_bits(p.xdt) + (double)p.bb * 32);
    int64_t est = (int64_t)(bits / 8), cap = chip->vmem_bytes / 4 * 3;
    return est < cap ? est : cap;
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

/* Rows [j0, j0 + n) of w_q as doubles: a code's value from lut (int8,
 * fp8), a packed fp4 weight by pl_f4_load. */
static void decode_w(const uint8_t *w, pl_dtype wdt, int64_t in, int64_t j0, int64_t n, const double *lut,
                     double *dst)
{
    for (int64_t j = 0; j < n; j++) {
        double *row = dst + j * in;
        if (wdt == PL_F4E2M1)
            for (int64_t k = 0; k < in; k++) row[k] = pl_f4_load(w + (j0 + j) * (in / 2), k);
        else
            for (int64_t k = 0; k < in; k++) row[k] = lut[w[(j0 + j) * in + k]];
    }
}

/* x quantized as the kernel does (same f32 roundings), the products summed
 * exactly, then the scales with the kernel's roundings, and bf16 at last.
 * The sums are cblas_dgemm's over blocks of QMM_REF_ROWS rows: products of
 * int8, fp8 or fp4 values are exact in double, and so is any order of
 * summing them (at most 2^36 between the largest and smallest and 2^13
 * terms fit the 53 bits), so blocking changes no bit. Per element it was
 * minutes for a 1024 x 5120 x 5120 call; this is a second. */
enum { QMM_REF_ROWS = 512 };
static int qmm_reference(const int64_t *v, const pl_kernel_build *b, pl_array *want)
{
    int64_t nb = v[P_B], in = v[P_IN], out = v[P_OUT], ch = QMM_REF_ROWS;
    pl_dtype wdt = (pl_dtype)v[P_WDT];
    int is_int8 = wdt == PL_I8;
    double qmax = is_int8 ? 127.0 : 448.0, lut[256];
    for (int c = 0; c < 256; c++) lut[c] = is_int8 ? (double)(int8_t)c : (double)pl_f8e4m3_to_f32((uint8_t)c);
    const uint16_t *x = b->args[0].data;
    const float *amax = b->args[1].data, *ws = b->args[3].data;
    const uint8_t *w = b->args[2].data;
    size_t tile = sizeof(double) * (size_t)ch * (size_t)in;
    double *xq = malloc(tile), *wd = malloc(tile), *acc = malloc(sizeof(double) * (size_t)(ch * ch));
    float *o = malloc(sizeof(float) * (size_t)(nb * out));
    if (!xq || !wd || !acc || !o) return free(xq), free(wd), free(acc), free(o), PL_ENOMEM;
    for (int64_t i0 = 0; i0 < nb; i0 += ch) {
        int64_t ni = nb - i0 < ch ? nb - i0 : ch;
        for (int64_t i = 0; i < ni; i++) {
            float inv = (float)(qmax / amax[i0 + i]);
            for (int64_t k = 0; k < in; k++) {
                float s = (float)(pl_bf16_to_f32(x[(i0 + i) * in + k]) * (double)inv);
                xq[i * in + k] = is_int8 ? rintf(s) : pl_f8e4m3_to_f32(pl_f32_to_f8e4m3(s));
            }
        }
        for (int64_t j0 = 0; j0 < out; j0 += ch) {
            int64_t nj = out - j0 < ch ? out - j0 : ch;
            decode_w(w, wdt, in, j0, nj, lut, wd);
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)ni, (int)nj, (int)in, 1.0, xq, (int)in, wd,
                        (int)in, 0.0, acc, (int)nj);
            for (int64_t i = 0; i < ni; i++) {
                double sx = (double)(float)(amax[i0 + i] * (1.0 / qmax));
                for (int64_t j = 0; j < nj; j++) {
                    float t = (float)((double)(float)acc[i * nj + j] * ws[j0 + j]); /* w_scale first, as the kernel */
                    o[(i0 + i) * out + j0 + j] = (float)((double)t * sx); /* rounded to bf16 by the store */
                }
            }
        }
    }
    ex_store_f32(&want[0], o, nb * out);
    free(xq), free(wd), free(acc), free(o);
    return PL_OK;
}

static double qmm_flops(const int64_t *v) { return 2.0 * (double)v[P_B] * (double)v[P_IN] * (double)v[P_OUT]; }
/* Ideal traffic: x, its abs-max, w_q (half a byte a weight for fp4) and
 * its scales read once, o (bf16) written once. */
static double qmm_bytes(const int64_t *v)
{
    double b = (double)v[P_B], in = (double)v[P_IN], out = (double)v[P_OUT];
    double wbytes = v[P_WDT] == PL_F4E2M1 ? in * out / 2 : in * out;
    return 2 * b * in + 4 * b + wbytes + 4 * out + 2 * b * out;
}

/* A sweep tries every block that divides its dimension, as the hardware
 * autotuner behind vLLM's tuned table does (its autotune.py, make_configs;
 * bench/autotune_agree): bb, bo and bi multiples of 128, and the whole
 * batch when it is under 128 rows (no multiple of 128 divides it). The
 * lists below are what it tries when that dimension is itself swept. */
static const int64_t bb_cands[] = {64, 128, 256};
static const int64_t bo_cands[] = {128, 256, 512};
static const int64_t bi_cands[] = {128, 256, 512};
static const int64_t wdt_cands[] = {PL_I8, PL_F8E4M3, PL_F4E2M1};

/* The weights' default dtype is one the chip's MXU multiplies (T10): int8
 * where it has an int8 path (v5e, v6e), fp8 where it has none but takes fp8
 * (v7x), as the production kernel's tuned tables key v6e by int8 and v7x
 * by fp8. A chip with neither keeps int8, and the run says why it fails. */
static void qmm_chip_defaults(int64_t *v, const pl_chip *chip)
{
    if (chip->int8_ops <= 0 && chip->mxu_fp8_operands) v[P_WDT] = PL_F8E4M3;
}

/* Tolerances: int8 matches exactly (its sums are exact); fp8's f32 sums
 * differ from the reference's order by a few f32 ulps, which can move the
 * bf16 output by one of its ulps (2^-7 relative at most). */
const pl_kernel_def ex_def_quant_matmul = {
    .name = "quant_matmul",
    .summary = "o = bf16((x . w_q^T) * s_w * s_x), x quantized per row in the kernel, w_q int8, fp8 or packed fp4 "
               "(T10), vmem_limit_bytes as production sets it",
    .n_params = 7,
    .params = {{.name = "batch", .def = 256, .help = "rows of x and o"},
               {.name = "in", .def = 1024, .help = "features in: the contraction"},
               {.name = "out", .def = 1024, .help = "features out: rows of w_q, columns of o"},
               {.name = "bb", .def = 128, .candidates = bb_cands, .n_candidates = 3, .help = "batch rows per block",
                .divides = "batch", .multiple = 128},
               {.name = "bo", .def = 256, .candidates = bo_cands, .n_candidates = 3, .help = "out columns per block",
                .divides = "out", .multiple = 128},
               {.name = "bi", .def = 256, .candidates = bi_cands, .n_candidates = 3,
                .help = "contraction elements per step", .divides = "in", .multiple = 128},
               {.name = "wdtype", .kind = PL_PARAM_DTYPE, .def = PL_I8, .candidates = wdt_cands, .n_candidates = 3,
                .help = "of w_q: i8 (v5e, v6e), f8e4m3 or f4e2m1 (v7x; packed in VMEM, widened to fp8 in registers); "
                        "the default is f8e4m3 on a chip with no int8 MXU path (v7x)"}},
    .check = qmm_check, .build = qmm_build, .inputs = qmm_inputs, .reference = qmm_reference,
    .rtol = 1.0 / 128, .atol = 1e-4, .flops = qmm_flops, .bytes = qmm_bytes, .vmem_limit = qmm_vmem_limit,
    .chip_defaults = qmm_chip_defaults,
};
