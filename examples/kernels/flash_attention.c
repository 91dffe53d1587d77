/* examples/kernels/flash_attention.c: the flash-attention kernel, its call,
 * its inputs and its reference. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "flash_attention.h"
#include "values.h"

/* ceil(a / b) without a + b - 1, which overflows for sizes near 2^63 */
static int64_t cdiv(int64_t a, int64_t b) { return a / b + (a % b != 0); }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* The last kv block that q block qi needs: all of them, or under a causal
 * mask the one holding the diagonal of its last row. */
static int64_t last_kv_block(const fa_config *cfg, int64_t qi)
{
    int64_t nk = cdiv(cfg->skv, cfg->bk);
    if (!cfg->causal) return nk - 1;
    int64_t last_row = min64(cfg->sq, (qi + 1) * cfg->bq) - 1;
    return min64(nk - 1, last_row / cfg->bk);
}

void fa_kernel(pl_ctx *c, pl_ref *refs)
{
    const fa_params *p = pl_kernel_user(c);
    const fa_config *cfg = &p->cfg;
    pl_ref q = refs[0], k = refs[1], v = refs[2], o = refs[3];
    pl_ref m = refs[4], l = refs[5], acc = refs[6];
    int wide = cfg->dtype == PL_F32;
    size_t bytes = ex_value_bytes(PL_F32, cfg->bq, cfg->bk) + 2 * ex_value_bytes(PL_F32, cfg->bq, 1) +
                   (wide ? 0 : ex_value_bytes(cfg->dtype, cfg->bq, cfg->bk));
    ex_values *vals = ex_values_begin(c, bytes);
    pl_ref s = ex_value(vals, PL_F32, cfg->bq, cfg->bk), t = ex_value(vals, PL_F32, cfg->bq, 1);
    pl_ref alpha = ex_value(vals, PL_F32, cfg->bq, 1);
    pl_ref pv = wide ? s : ex_value(vals, cfg->dtype, cfg->bq, cfg->bk); /* p as v's dtype: p.astype(v.dtype) */
    int ax = cfg->heads > 0; /* grid (heads?, q blocks, kv blocks) */
    int64_t qi = pl_program_id(c, ax), kj = pl_program_id(c, ax + 1), nk = pl_num_programs(c, ax + 1);

    if (kj == 0) {
        pl_fill(c, m, -INFINITY);
        pl_fill(c, l, 0.0);
        pl_fill(c, acc, 0.0);
    }
    /* B6: the edge blocks' overhang is garbage; keep the rows and columns inside the arrays */
    int64_t q0 = qi * cfg->bq, k0 = kj * cfg->bk;
    int64_t rows = min64(cfg->bq, cfg->sq - q0), cols = min64(cfg->bk, cfg->skv - k0);
    if (kj <= last_kv_block(cfg, qi)) { /* a causal kernel skips the blocks above the diagonal */
        q = pl_ds(c, q, 0, 0, rows);
        k = pl_ds(c, k, 0, 0, cols);
        v = pl_ds(c, v, 0, 0, cols);
        pl_ref mr = pl_ds(c, m, 0, 0, rows), lr = pl_ds(c, l, 0, 0, rows), ar = pl_ds(c, acc, 0, 0, rows);
        pl_ref tr = pl_ds(c, t, 0, 0, rows), al = pl_ds(c, alpha, 0, 0, rows);
        pl_ref sr = pl_ds(c, pl_ds(c, s, 0, 0, rows), 1, 0, cols);
        pl_ref pr = pl_ds(c, pl_ds(c, pv, 0, 0, rows), 1, 0, cols);

        pl_dot(c, sr, q, k, PL_DOT_TRANS_B); /* s = q @ k^T * scale */
        pl_scale(c, sr, sr, p->scale);
        if (cfg->causal && k0 + cols - 1 > q0) pl_tril(c, sr, sr, q0 - k0, -INFINITY); /* j > i: -inf */
        pl_max_rows(c, tr, sr);              /* t = m_new = max(m, rowmax(s)) */
        pl_max(c, tr, tr, mr);
        pl_sub(c, al, mr, tr);               /* alpha = exp(m - m_new) */
        pl_exp(c, al, al);
        pl_sub_col(c, sr, sr, tr);           /* p = exp(s - m_new) */
        pl_exp(c, sr, sr);
        pl_copy(c, mr, tr);                  /* m = m_new */
        pl_sum_rows(c, tr, sr);              /* l = alpha * l + rowsum(p) */
        pl_mul(c, lr, lr, al);
        pl_add(c, lr, lr, tr);
        pl_mul_col(c, ar, ar, al);           /* acc = alpha * acc + p @ v */
        if (pr.data != sr.data) pl_copy(c, pr, sr);
        pl_dot(c, ar, pr, v, PL_DOT_ACC);
    }
    if (kj == nk - 1) /* o = acc / l */
        pl_div_col(c, pl_ds(c, o, 0, 0, rows), pl_ds(c, acc, 0, 0, rows), pl_ds(c, l, 0, 0, rows));
}

/* k and v under a causal mask: kv block kj, clamped to the last block q
 * block qi needs, so that the skipped steps select the block already in
 * VMEM and copy nothing (P2). */
static void kv_map(const int64_t *g, const pl_ref *prefetch, int64_t *b, void *user)
{
    (void)prefetch;
    const fa_params *p = user;
    int ax = p->cfg.heads > 0;
    if (ax) b[0] = g[0]; /* the squeezed head dimension: an element index (B4) */
    b[ax] = min64(g[ax + 1], last_kv_block(&p->cfg, g[ax]));
    b[ax + 1] = 0;
}

int fa_call(pl_call *call, fa_params *p, const fa_config *cfg)
{
    if (cfg->sq < 1 || cfg->skv < 1 || cfg->d < 1 || cfg->bq < 1 || cfg->bk < 1 || cfg->heads < 0 ||
        (cfg->dtype != PL_F32 && cfg->dtype != PL_BF16 && cfg->dtype != PL_F16))
        return PL_EINVAL;
    p->cfg = *cfg;
    p->scale = 1.0 / sqrt((double)cfg->d);
    int64_t bq = cfg->bq, bk = cfg->bk, d = cfg->d;
    *call = (pl_call){
        .name = "flash_attention",
        .kernel = fa_kernel,
        .user = p,
        .n_in = 3,
        .n_out = 1,
        .n_scratch = 3,
        .scratch = {PLTPU_VMEM(PL_F32, bq, 1), PLTPU_VMEM(PL_F32, bq, 1), PLTPU_VMEM(PL_F32, bq, d)},
    };
    pl_index_map kv = cfg->causal ? PL_MAP_FN(kv_map, p) : PL_MAP(1, PL_ZERO);
    if (cfg->heads) {
        call->grid_rank = 3;
        call->grid[0] = cfg->heads;
        call->in[0] = PL_BLOCK(PL_MAP(0, 1, PL_ZERO), PL_SQUEEZED, bq, d);
        call->in[1] = PL_BLOCK(cfg->causal ? kv : PL_MAP(0, 2, PL_ZERO), PL_SQUEEZED, bk, d);
        call->out[0] = PL_BLOCK(PL_MAP(0, 1, PL_ZERO), PL_SQUEEZED, bq, d);
    } else {
        call->grid_rank = 2;
        call->in[0] = PL_BLOCK(PL_MAP(0, PL_ZERO), bq, d);
        call->in[1] = PL_BLOCK(kv, bk, d);
        call->out[0] = PL_BLOCK(PL_MAP(0, PL_ZERO), bq, d);
    }
    int ax = call->grid_rank - 2;
    call->grid[ax] = cdiv(cfg->sq, bq);
    call->grid[ax + 1] = cdiv(cfg->skv, bk);
    for (int a = 0; a <= ax; a++) call->semantics[a] = PL_PARALLEL; /* heads and q blocks are independent */
    call->semantics[ax + 1] = PL_ARBITRARY;                          /* kv is the reduction */
    call->in[2] = call->in[1];
    static const char *in_names[] = {"q", "k", "v"};
    static const char *scratch_names[] = {"m", "l", "acc"};
    for (int i = 0; i < 3; i++) call->in[i].name = in_names[i];
    call->out[0].name = "o";
    for (int i = 0; i < call->n_scratch; i++) call->scratch[i].name = scratch_names[i];
    return PL_OK;
}

/* ---- inputs and the reference --------------------------------------------------- */

static int64_t heads_of(const fa_config *cfg) { return cfg->heads ? cfg->heads : 1; }

static pl_array fa_array(const fa_config *cfg, void *data, int64_t len)
{
    return cfg->heads ? PL_ARRAY(data, cfg->dtype, cfg->heads, len, cfg->d) : PL_ARRAY(data, cfg->dtype, len, cfg->d);
}

/* n values of a fixed pseudo-random sequence in [-amp, amp), stored as dt. */
/* n values amp * [-1, 1) stored as dt into p, from seed (a 64-bit LCG). */
static void fill_values(void *p, int64_t n, pl_dtype dt, double amp, uint64_t seed)
{
    size_t es = pl_dtype_size(dt);
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        double u = (double)(seed >> 11) / 9007199254740992.0; /* [0, 1) */
        pl_store_elem((char *)p + (size_t)i * es, dt, amp * (2.0 * u - 1.0));
    }
}

static void *random_values(int64_t n, pl_dtype dt, double amp, uint64_t seed)
{
    char *p = malloc((size_t)n * pl_dtype_size(dt));
    if (p) fill_values(p, n, dt, amp, seed);
    return p;
}

void fa_fill(const fa_config *cfg, pl_array args[3], uint64_t seed)
{
    for (int i = 0; i < 3; i++)
        if (args[i].data)
            fill_values(args[i].data, pl_array_size(&args[i]), cfg->dtype, i ? 1.0 : 4.0, seed + (uint64_t)i);
}

void fa_shapes(const fa_config *cfg, pl_array args[3], pl_array *out)
{
    args[0] = fa_array(cfg, NULL, cfg->sq);
    args[1] = fa_array(cfg, NULL, cfg->skv);
    args[2] = fa_array(cfg, NULL, cfg->skv);
    *out = fa_array(cfg, NULL, cfg->sq);
}

double fa_host_bytes(const fa_config *cfg)
{
    double h = (double)heads_of(cfg), sq = (double)cfg->sq, skv = (double)cfg->skv, d = (double)cfg->d;
    double arrays = (double)pl_dtype_size(cfg->dtype) * h * (2 * sq * d + 2 * skv * d);
    double reference = 4 * h * sq * d + 4 * (sq * d + 2 * skv * d + sq * skv) + 8 * skv; /* fa_check */
    return arrays + reference;
}

int fa_inputs(const fa_config *cfg, pl_array args[3], pl_array *out, uint64_t seed)
{
    int64_t h = heads_of(cfg), nq = h * cfg->sq * cfg->d, nkv = h * cfg->skv * cfg->d;
    args[0] = fa_array(cfg, random_values(nq, cfg->dtype, 4.0, seed), cfg->sq);
    args[1] = fa_array(cfg, random_values(nkv, cfg->dtype, 1.0, seed + 1), cfg->skv);
    args[2] = fa_array(cfg, random_values(nkv, cfg->dtype, 1.0, seed + 2), cfg->skv);
    *out = fa_array(cfg, calloc((size_t)nq, pl_dtype_size(cfg->dtype)), cfg->sq);
    if (args[0].data && args[1].data && args[2].data && out->data) return PL_OK;
    fa_free(args, out);
    return PL_ENOMEM;
}

void fa_free(pl_array args[3], pl_array *out)
{
    for (int i = 0; i < 3; i++) free(args[i].data), args[i].data = NULL;
    free(out->data);
    out->data = NULL;
}

/* n elements of a as f32 (exact for 16-bit floats). */
static void widen(float *dst, const void *src, pl_dtype dt, int64_t n)
{
    size_t es = pl_dtype_size(dt);
    for (int64_t i = 0; i < n; i++) dst[i] = (float)pl_load_elem((const char *)src + (size_t)i * es, dt);
}

int fa_reference(const fa_config *cfg, const pl_array args[3], float *ref)
{
    int64_t sq = cfg->sq, skv = cfg->skv, d = cfg->d;
    float *q = malloc((size_t)(sq * d) * sizeof *q), *k = malloc((size_t)(skv * d) * sizeof *k);
    float *v = malloc((size_t)(skv * d) * sizeof *v), *s = malloc((size_t)(sq * skv) * sizeof *s);
    double *row = malloc((size_t)skv * sizeof *row);
    int rc = q && k && v && s && row ? PL_OK : PL_ENOMEM;
    double scale = 1.0 / sqrt((double)d);
    size_t es = pl_dtype_size(cfg->dtype);
    for (int64_t h = 0; rc == PL_OK && h < heads_of(cfg); h++) {
        widen(q, (const char *)args[0].data + (size_t)(h * sq * d) * es, cfg->dtype, sq * d);
        widen(k, (const char *)args[1].data + (size_t)(h * skv * d) * es, cfg->dtype, skv * d);
        widen(v, (const char *)args[2].data + (size_t)(h * skv * d) * es, cfg->dtype, skv * d);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)sq, (int)skv, (int)d, 1.0f, q, (int)d, k, (int)d,
                    0.0f, s, (int)skv); /* S = Q K^T */
        for (int64_t i = 0; i < sq; i++) { /* P = softmax(S * scale), in double */
            int64_t n = cfg->causal ? min64(skv, i + 1) : skv;
            double mx = -INFINITY, sum = 0;
            for (int64_t j = 0; j < n; j++) {
                row[j] = (double)s[i * skv + j] * scale;
                mx = row[j] > mx ? row[j] : mx;
            }
            for (int64_t j = 0; j < n; j++) sum += row[j] = exp(row[j] - mx);
            for (int64_t j = 0; j < skv; j++) s[i * skv + j] = j < n ? (float)(row[j] / sum) : 0.0f;
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)sq, (int)d, (int)skv, 1.0f, s, (int)skv, v,
                    (int)d, 0.0f, ref + h * sq * d, (int)d); /* O = P V */
    }
    free(q), free(k), free(v), free(s), free(row);
    return rc;
}

void fa_tolerance(pl_dtype t, double *rtol, double *atol)
{
    if (t == PL_F32) {
        *rtol = 1e-5, *atol = 1e-6; /* pl_allclose's own for f32: only the order of f32 sums differs */
        return;
    }
    /* p rounds to the 16-bit dtype before p @ v while l sums the unrounded p: an absolute error up to
     * u max|v| (v in [-1, 1)); o itself rounds: u |o|. u = 2^-8 for bf16, 2^-11 for f16. */
    double u = t == PL_F16 ? 0x1p-11 : 0x1p-8;
    *rtol = 4 * u, *atol = 2 * u;
}

int fa_check(const fa_config *cfg, const pl_array args[3], const pl_array *out, pl_check *chk, FILE *f)
{
    int64_t n = heads_of(cfg) * cfg->sq * cfg->d;
    float *ref = malloc((size_t)n * sizeof *ref);
    int rc = ref ? fa_reference(cfg, args, ref) : PL_ENOMEM;
    if (rc == PL_OK) {
        pl_array want = *out;
        want.data = ref;
        want.dtype = PL_F32;
        double rtol, atol;
        fa_tolerance(cfg->dtype, &rtol, &atol);
        rc = pl_allclose(out, &want, rtol, atol, chk, f);
    }
    free(ref);
    return rc;
}
