/* examples/kernels/attention.c: the definitions of flash attention
 * (flash_attention.h) and paged decode attention (paged_attention.h), over
 * their own builders and references. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flash_attention.h"
#include "kdef_util.h"
#include "paged_attention.h"
#include "registry.h"

static const int64_t blk_cands[] = {64, 128, 256, 512};
static const int64_t dt_cands[] = {PL_F32, PL_BF16};

/* ---- flash attention ---------------------------------------------------------- */

enum { F_SQ, F_SKV, F_D, F_BQ, F_BK, F_HEADS, F_CAUSAL, F_DT };

static fa_config fa_cfg(const int64_t *v)
{
    return (fa_config){.heads = v[F_HEADS], .sq = v[F_SQ], .skv = v[F_SKV], .d = v[F_D], .bq = v[F_BQ],
                       .bk = v[F_BK], .causal = (int)v[F_CAUSAL], .dtype = (pl_dtype)v[F_DT]};
}

static int fad_check(const int64_t *v, char *msg, size_t n)
{
    static const pl_dtype ok[] = {PL_F32, PL_BF16, PL_F16};
    const pl_kernel_def *d = &ex_def_flash;
    for (int i = F_SQ; i <= F_BK; i++)
        if (v[i] < 1) {
            snprintf(msg, n, "%s: %s = %lld must be >= 1", d->name, d->params[i].name, (long long)v[i]);
            return PL_EINVAL;
        }
    if (v[F_HEADS] < 0) {
        snprintf(msg, n, "%s: heads = %lld must be >= 0 (0: one head, arrays (s, d))", d->name,
                 (long long)v[F_HEADS]);
        return PL_EINVAL;
    }
    if (v[F_CAUSAL] != 0 && v[F_CAUSAL] != 1) {
        snprintf(msg, n, "%s: causal = %lld must be 0 or 1", d->name, (long long)v[F_CAUSAL]);
        return PL_EINVAL;
    }
    return ex_check_dtype(d, v, F_DT, ok, 3, msg, n);
}

static int fad_build(const int64_t *v, pl_kernel_build *b, char *msg, size_t n)
{
    int rc = fad_check(v, msg, n);
    if (rc != PL_OK) return rc;
    fa_config cfg = fa_cfg(v);
    fa_params p;
    if ((rc = fa_call(&b->call, &p, &cfg)) != PL_OK) {
        snprintf(msg, n, "flash_attention: the call cannot be built (%s)", pl_strerror(rc));
        return rc;
    }
    /* the causal kv maps keep a pointer to p: give them a lasting copy */
    void *pp = (void *)ex_intern(&p, sizeof p);
    if (!pp) return PL_ENOMEM;
    b->call.user = pp;
    for (int i = 0; i < b->call.n_in; i++)
        if (b->call.in[i].map.fn) b->call.in[i].map.user = pp;
    if (b->call.out[0].map.fn) b->call.out[0].map.user = pp;
    fa_shapes(&cfg, b->args, &b->outs[0]);
    b->n_args = 3;
    b->n_outs = 1;
    return PL_OK;
}

/* q in [-4, 4), k and v in [-1, 1), as the example program's (fa_fill). */
static int fad_inputs(const int64_t *v, pl_kernel_build *b, uint64_t seed)
{
    fa_config cfg = fa_cfg(v);
    fa_fill(&cfg, b->args, seed);
    return PL_OK;
}

static int fad_reference(const int64_t *v, const pl_kernel_build *b, pl_array *want)
{
    fa_config cfg = fa_cfg(v);
    int64_t heads = cfg.heads ? cfg.heads : 1, n = heads * cfg.sq * cfg.d;
    float *ref = malloc(sizeof(float) * (size_t)n);
    int rc = ref ? fa_reference(&cfg, b->args, ref) : PL_ENOMEM;
    if (rc == PL_OK) ex_store_f32(&want[0], ref, n);
    free(ref);
    return rc;
}

/* Q K^T and P V, each 2 sq skv d, halved when causal. */
static double fad_flops(const int64_t *v)
{
    double f = 4.0 * (v[F_HEADS] ? v[F_HEADS] : 1) * (double)v[F_SQ] * v[F_SKV] * v[F_D];
    return v[F_CAUSAL] ? f / 2 : f;
}
static double fad_bytes(const int64_t *v)
{
    double es = (double)pl_dtype_size((pl_dtype)v[F_DT]), h = v[F_HEADS] ? (double)v[F_HEADS] : 1;
    return es * h * v[F_D] * (2.0 * v[F_SQ] + 2.0 * v[F_SKV]);
}

const pl_kernel_def ex_def_flash = {
    .name = "flash_attention", .summary = "O = softmax(Q K^T / sqrt(d)) V, online softmax over kv blocks",
    .n_params = 8,
    .params = {{.name = "sq", .def = 512, .help = "query length"},
               {.name = "skv", .def = 512, .help = "key/value length"},
               {.name = "d", .def = 128, .help = "head dimension"},
               {.name = "bq", .def = 128, .candidates = blk_cands, .n_candidates = 4, .help = "query rows per block"},
               {.name = "bk", .def = 128, .candidates = blk_cands, .n_candidates = 4, .help = "keys per block"},
               {.name = "heads", .def = 0, .help = "batch*heads as a leading parallel axis; 0: arrays (s, d)"},
               {.name = "causal", .def = 0, .help = "1: row i attends to keys j <= i (blocks above skipped)"},
               {.name = "dtype", .kind = PL_PARAM_DTYPE, .def = PL_F32, .candidates = dt_cands, .n_candidates = 2,
                .help = "of q, k, v and o: f32, bf16 or f16"}},
    .check = fad_check, .build = fad_build, .inputs = fad_inputs,
    .reference = fad_reference, .flops = fad_flops, .bytes = fad_bytes,
};

/* ---- paged attention ------------------------------------------------------------ */

enum { A_BATCH, A_HEADS, A_DIM, A_PAGE, A_MAXLEN, A_LSEED, A_DT };

/* Sequence lengths: the first is max_len (it sets the table's width), the
 * others a fixed function of lengths_seed in 0..max_len (0: an empty
 * sequence, whose output is zeros). */
static void pad_lengths(const int64_t *v, int64_t *len)
{
    uint64_t s = (uint64_t)v[A_LSEED];
    for (int64_t b = 0; b < v[A_BATCH]; b++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        len[b] = b == 0 ? v[A_MAXLEN] : (int64_t)((s >> 33) % (uint64_t)(v[A_MAXLEN] + 1));
    }
}

static int pad_check(const int64_t *v, char *msg, size_t n)
{
    int rc = ex_check_positive(&ex_def_paged, v, msg, n);
    if (rc == PL_OK && v[A_BATCH] > 4096) {
        snprintf(msg, n, "paged_attention: batch = %lld is more than 4096 sequences", (long long)v[A_BATCH]);
        return PL_EINVAL;
    }
    if (rc == PL_OK && ex_cdiv(v[A_MAXLEN], v[A_PAGE]) > EX_MAX_TABLE / v[A_BATCH]) {
        snprintf(msg, n, "paged_attention: batch x cdiv(max_len, page) = %lld x %lld is more than the %d entries a "
                 "block table may hold; use larger pages", (long long)v[A_BATCH],
                 (long long)ex_cdiv(v[A_MAXLEN], v[A_PAGE]), EX_MAX_TABLE);
        return PL_EINVAL;
    }
    return rc == PL_OK ? ex_check_dtype(&ex_def_paged, v, A_DT, (const pl_dtype[]){PL_F32, PL_BF16}, 2, msg, n) : rc;
}

int ex_paged_build(const int64_t *v, const int64_t *lengths, pl_kernel_build *b, char *msg, size_t n)
{
    return ex_paged_build_kv(v, lengths, (pl_dtype)v[A_DT], 1, b, msg, n);
}

int ex_paged_build_kv(const int64_t *v, const int64_t *lengths, pl_dtype kv, int ahead, pl_kernel_build *b,
                      char *msg, size_t n)
{
    int rc = pad_check(v, msg, n);
    if (rc != PL_OK) return rc;
    int64_t batch = v[A_BATCH], *len = malloc(sizeof(int64_t) * (size_t)batch);
    if (!len) return PL_ENOMEM;
    if (lengths) memcpy(len, lengths, sizeof(int64_t) * (size_t)batch);
    else pad_lengths(v, len);
    pa_shape s = pa_shape_for(len, batch, v[A_PAGE], v[A_HEADS], v[A_DIM]);
    int32_t *tables = calloc((size_t)(batch * s.pages_per_seq), sizeof *tables);
    int32_t *lens = calloc((size_t)batch, sizeof *lens);
    const void *t = NULL, *l = NULL;
    if (tables && lens) {
        pa_fill_tables(&s, len, tables, lens);
        t = ex_intern(tables, sizeof *tables * (size_t)(batch * s.pages_per_seq));
        l = ex_intern(lens, sizeof *lens * (size_t)batch);
    }
    free(len), free(tables), free(lens);
    if (!t || !l) return PL_ENOMEM;
    pl_dtype dt = (pl_dtype)v[A_DT];
    ((pa_params *)b->param)->ahead = ahead;
    pa_call(&b->call, (pa_params *)b->param, &s, kv);
    b->call.user = b->param;
    b->n_args = 5;
    b->args[0] = PL_ARRAY((void *)t, PL_I32, batch, s.pages_per_seq);
    b->args[1] = PL_ARRAY((void *)l, PL_I32, batch);
    b->args[2] = PL_ARRAY(NULL, dt, batch, s.heads, s.dim);
    b->args[3] = PL_ARRAY(NULL, kv, s.num_pages, s.page, s.dim);
    b->args[4] = PL_ARRAY(NULL, kv, s.num_pages, s.page, s.dim);
    b->n_outs = 1;
    b->outs[0] = PL_ARRAY(NULL, dt, batch, s.heads, s.dim);
    return PL_OK;
}

static int pad_build(const int64_t *v, pl_kernel_build *b, char *msg, size_t n)
{
    return ex_paged_build(v, NULL, b, msg, n);
}

static int pad_reference(const int64_t *v, const pl_kernel_build *b, pl_array *want)
{
    const pl_array *a = b->args;
    pa_shape s = {.batch = v[A_BATCH], .heads = v[A_HEADS], .dim = v[A_DIM], .page = v[A_PAGE],
                  .pages_per_seq = a[0].shape[1], .num_pages = a[3].shape[0]};
    float *q = ex_widen(&a[2]), *k = ex_widen(&a[3]), *vv = ex_widen(&a[4]);
    float *out = malloc(sizeof(float) * (size_t)pl_array_size(&want[0]));
    int rc = q && k && vv && out ? PL_OK : PL_ENOMEM;
    if (rc == PL_OK) {
        pa_reference(&s, a[0].data, a[1].data, q, k, vv, out);
        ex_store_f32(&want[0], out, pl_array_size(&want[0]));
    }
    free(q), free(k), free(vv), free(out);
    return rc;
}

/* At most max_len tokens per sequence: q k^T and p v over them. */
static double pad_flops(const int64_t *v)
{
    return 4.0 * v[A_BATCH] * (double)v[A_HEADS] * v[A_DIM] * v[A_MAXLEN];
}
static double pad_bytes(const int64_t *v)
{
    double es = (double)pl_dtype_size((pl_dtype)v[A_DT]);
    return es * v[A_BATCH] * (2.0 * v[A_HEADS] * v[A_DIM] + 2.0 * v[A_MAXLEN] * v[A_DIM]);
}

const pl_kernel_def ex_def_paged = {
    .name = "paged_attention", .summary = "decode attention over a paged KV cache, pages by hand-written DMA",
    .n_params = 7,
    .params = {{.name = "batch", .def = 4, .help = "sequences, one grid point each"},
               {.name = "heads", .def = 8, .help = "query heads sharing a KV head (a multiple of 8)"},
               {.name = "dim", .def = 128, .help = "head dimension (a multiple of 128)"},
               {.name = "page", .def = 16, .candidates = (const int64_t[]){8, 16, 32, 64}, .n_candidates = 4,
                .help = "tokens per page"},
               {.name = "max_len", .def = 300, .help = "length of the longest sequence (the first)"},
               {.name = "lengths_seed", .def = 1, .help = "the other sequences' lengths, 0..max_len"},
               {.name = "dtype", .kind = PL_PARAM_DTYPE, .def = PL_F32, .candidates = dt_cands, .n_candidates = 2,
                .help = "of q, the pages and o: f32 or bf16"}},
    .check = pad_check, .build = pad_build, .inputs = ex_fill_data_inputs, .reference = pad_reference,
    .flops = pad_flops, .bytes = pad_bytes,
};
