/* examples/kernels/paged_attention.c: the kernel, its call, its reference. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../kernel/pltpu.h"
#include "paged_attention.h"
#include "values.h"

/* The kernel's refs, in the order of rule M3. */
enum {
    R_TABLES, R_LENGTHS,        /* scalar prefetch (SMEM) */
    R_Q, R_K, R_V,              /* inputs: q blocks (heads, dim); k, v pages in HBM */
    R_O,                        /* output block (heads, dim) */
    R_KBUF, R_VBUF, R_SEMS,     /* scratch: 2 page slots each, 4 DMA semaphores */
    R_M, R_L, R_ACC,            /* the online softmax's state, over the pages */
};

/* The copies of page p of this sequence into slot `slot`, started: k's on
 * semaphore slot, v's on slots + slot. */
static void page_copies(pl_ctx *c, pl_ref *refs, int64_t b, int64_t p, int64_t slot, pltpu_copy *k, pltpu_copy *v)
{
    int64_t page = (int64_t)pl_get_at(c, refs[R_TABLES], b, p), slots = refs[R_KBUF].shape[0];
    pl_ref sems = refs[R_SEMS];
    *k = pltpu_async_copy(c, pl_at(c, refs[R_K], page), pl_at(c, refs[R_KBUF], slot), pl_at(c, sems, slot));
    *v = pltpu_async_copy(c, pl_at(c, refs[R_V], page), pl_at(c, refs[R_VBUF], slot), pl_at(c, sems, slots + slot));
    pltpu_copy_start(c, k);
    pltpu_copy_start(c, v);
}

void pa_kernel(pl_ctx *c, pl_ref *refs)
{
    const pa_params *prm = pl_kernel_user(c);
    int64_t b = pl_program_id(c, 0);
    int64_t len = (int64_t)pl_get_at(c, refs[R_LENGTHS], b), page = refs[R_KBUF].shape[1];
    int64_t pages = (len + page - 1) / page;
    pl_ref q = refs[R_Q], o = refs[R_O], m = refs[R_M], l = refs[R_L], acc = refs[R_ACC];
    /* the scores of a page and the row statistics: values, in registers, not VMEM (values.h) */
    int64_t h = q.shape[0], d = q.shape[1];
    /* an 8-bit cache (i8, f8e4m3) is widened to q's dtype in registers on its way to the MXU, as
     * serving kernels dequantize theirs; its scale folds into the softmax's and the output's */
    int widen = refs[R_KBUF].dtype != q.dtype;
    size_t wide = widen ? 2 * ex_value_bytes(q.dtype, page, d) : 0;
    ex_values *vals = ex_values_begin(c, ex_value_bytes(PL_F32, h, page) + 3 * ex_value_bytes(PL_F32, h, 1) + wide);
    pl_ref scores = ex_value(vals, PL_F32, h, page), m_new = ex_value(vals, PL_F32, h, 1);
    pl_ref alpha = ex_value(vals, PL_F32, h, 1), rowsum = ex_value(vals, PL_F32, h, 1);
    pl_ref kw = widen ? ex_value(vals, q.dtype, page, d) : q, vw = widen ? ex_value(vals, q.dtype, page, d) : q;
    if (pages == 0) { /* an empty sequence attends to nothing */
        pl_fill(c, o, 0);
        return;
    }
    /* `ahead` pages fly while one is used (slots = ahead + 1): one hides a
     * page's transfer; more hide the DMA latency of short pages too, as
     * serving kernels fetch several pages per block */
    int64_t slots = refs[R_KBUF].shape[0], ahead = slots - 1;
    pltpu_copy k[PA_MAX_AHEAD + 1], v[PA_MAX_AHEAD + 1];
    for (int64_t p = 0; p < ahead && p < pages; p++) page_copies(c, refs, b, p, p, &k[p], &v[p]);
    pl_fill(c, m, -INFINITY);
    pl_fill(c, l, 0);
    pl_fill(c, acc, 0);
    for (int64_t p = 0; p < pages; p++) {
        int64_t slot = p % slots, valid = len - p * page < page ? len - p * page : page;
        if (p + ahead < pages) { /* into the slot the page before this one left */
            int64_t next = (p + ahead) % slots;
            page_copies(c, refs, b, p + ahead, next, &k[next], &v[next]);
        }
        pltpu_copy_wait(c, &k[slot]);
        pltpu_copy_wait(c, &v[slot]);
        /* the tokens of this page that belong to the sequence */
        pl_ref kp = pl_ds(c, pl_at(c, refs[R_KBUF], slot), 0, 0, valid);
        pl_ref vp = pl_ds(c, pl_at(c, refs[R_VBUF], slot), 0, 0, valid);
        if (widen) {
            pl_ref kv = pl_ds(c, kw, 0, 0, valid), vv = pl_ds(c, vw, 0, 0, valid);
            pl_cast(c, kv, kp), pl_cast(c, vv, vp);
            kp = kv, vp = vv;
        }
        pl_ref s = pl_ds(c, scores, 1, 0, valid);
        pl_dot(c, s, q, kp, PL_DOT_TRANS_B); /* s = q @ k^T */
        pl_scale(c, s, s, prm->scale);
        /* online softmax: m_new = max(m, rowmax(s)); p = exp(s - m_new) */
        pl_max_rows(c, m_new, s);
        pl_max(c, m_new, m_new, m);
        pl_sub_col(c, s, s, m_new);
        pl_exp(c, s, s);
        /* alpha = exp(m - m_new); l = alpha l + rowsum(p); acc = alpha acc + p @ v */
        pl_sub(c, alpha, m, m_new);
        pl_exp(c, alpha, alpha);
        pl_mul(c, l, l, alpha);
        pl_sum_rows(c, rowsum, s);
        pl_add(c, l, l, rowsum);
        pl_mul_col(c, acc, acc, alpha);
        pl_dot(c, acc, s, vp, PL_DOT_ACC);
        pl_copy(c, m, m_new);
    }
    pl_div_col(c, o, acc, l);
}

void pa_call(pl_call *call, pa_params *p, const pa_shape *s, pl_dtype kv_dtype)
{
    p->scale = 1.0 / sqrt((double)s->dim);
    int64_t h = s->heads, d = s->dim;
    int64_t slots = (p->ahead < 1 ? 1 : p->ahead > PA_MAX_AHEAD ? PA_MAX_AHEAD : p->ahead) + 1;
    *call = (pl_call){
        .name = "paged_attention",
        .kernel = pa_kernel,
        .user = p,
        .grid_rank = 1,
        .grid = {s->batch},
        .semantics = {PL_PARALLEL},
        .num_scalar_prefetch = 2,
        .n_in = 3,
        .in = {PL_BLOCK(PL_MAP(0, PL_ZERO, PL_ZERO), PL_SQUEEZED, h, d), {.space = PL_ANY}, {.space = PL_ANY}},
        .n_out = 1,
        .out = {PL_BLOCK(PL_MAP(0, PL_ZERO, PL_ZERO), PL_SQUEEZED, h, d)},
        .n_scratch = 6,
        .scratch = {PLTPU_VMEM(kv_dtype, slots, s->page, d), PLTPU_VMEM(kv_dtype, slots, s->page, d),
                    PLTPU_SEMAPHORE_DMA(2 * slots),
                    PLTPU_VMEM(PL_F32, h, 1), PLTPU_VMEM(PL_F32, h, 1), PLTPU_VMEM(PL_F32, h, d)},
    };
    call->in[0].name = "q";
    call->in[1].name = "k_pages";
    call->in[2].name = "v_pages";
    call->out[0].name = "o";
    static const char *names[] = {"k_buf", "v_buf", "sems", "m", "l", "acc"};
    for (int i = 0; i < call->n_scratch; i++) call->scratch[i].name = names[i];
}

void pa_reference(const pa_shape *s, const int32_t *tables, const int32_t *lengths, const float *q, const float *k,
                  const float *v, float *out)
{
    int64_t h = s->heads, d = s->dim, maxlen = s->pages_per_seq * s->page;
    float *keys = malloc((size_t)(maxlen * d) * sizeof *keys), *vals = malloc((size_t)(maxlen * d) * sizeof *vals);
    float *scores = malloc((size_t)(h * maxlen) * sizeof *scores);
    if (!keys || !vals || !scores) {
        free(keys), free(vals), free(scores);
        memset(out, 0xff, (size_t)(s->batch * h * d) * sizeof *out); /* NaN: the check fails, loudly */
        return;
    }
    for (int64_t b = 0; b < s->batch; b++) {
        int64_t len = lengths[b];
        float *ob = out + b * h * d;
        if (len == 0) {
            memset(ob, 0, (size_t)(h * d) * sizeof *ob);
            continue;
        }
        for (int64_t t = 0; t < len; t++) { /* gather the sequence's tokens from its pages */
            int64_t pg = tables[b * s->pages_per_seq + t / s->page], row = t % s->page;
            memcpy(keys + t * d, k + (pg * s->page + row) * d, (size_t)d * sizeof *keys);
            memcpy(vals + t * d, v + (pg * s->page + row) * d, (size_t)d * sizeof *vals);
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)h, (int)len, (int)d, (float)(1.0 / sqrt((double)d)),
                    q + b * h * d, (int)d, keys, (int)d, 0.0f, scores, (int)len);
        for (int64_t i = 0; i < h; i++) { /* softmax in double */
            double mx = -INFINITY, sum = 0;
            for (int64_t t = 0; t < len; t++) mx = fmax(mx, scores[i * len + t]);
            for (int64_t t = 0; t < len; t++) sum += exp((double)scores[i * len + t] - mx);
            for (int64_t t = 0; t < len; t++) scores[i * len + t] = (float)(exp((double)scores[i * len + t] - mx) / sum);
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)h, (int)d, (int)len, 1.0f, scores, (int)len, vals,
                    (int)d, 0.0f, ob, (int)d);
    }
    free(keys), free(vals), free(scores);
}

/* ---- a whole run: data, call, check ------------------------------------------- */

static double frand(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*s >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

/* Values rounded through dt, so that the f32 reference sees what the kernel sees. */
static void fill(float *f, void *typed, int64_t n, pl_dtype dt, uint64_t seed)
{
    size_t es = pl_dtype_size(dt);
    for (int64_t i = 0; i < n; i++) {
        pl_store_elem((char *)typed + (size_t)i * es, dt, frand(&seed));
        f[i] = (float)pl_load_elem((char *)typed + (size_t)i * es, dt);
    }
}

/* The cache for sequences of these lengths: as many block-table columns as
 * the longest needs, and a few pages nobody owns. */
pa_shape pa_shape_for(const int64_t *lengths, int64_t n_seqs, int64_t page, int64_t heads, int64_t dim)
{
    pa_shape s = {.batch = n_seqs, .heads = heads, .dim = dim, .page = page};
    int64_t total_pages = 0;
    for (int64_t b = 0; b < n_seqs; b++) {
        int64_t pages = (lengths[b] + page - 1) / page;
        if (pages > s.pages_per_seq) s.pages_per_seq = pages;
        total_pages += pages;
    }
    if (s.pages_per_seq == 0) s.pages_per_seq = 1;
    s.num_pages = total_pages + 3;
    return s;
}

double pa_host_bytes(const int64_t *lengths, int64_t n_seqs, int64_t page, int64_t heads, int64_t dim, pl_dtype dt)
{
    pa_shape s = pa_shape_for(lengths, n_seqs, page, heads, dim);
    double kv = (double)(s.num_pages * page * dim), qn = (double)(n_seqs * heads * dim), es = (double)pl_dtype_size(dt);
    /* f32 copies and reference, the dtype's arrays, and pl_check_dma_modes' second output */
    return 4 * (2 * qn + 2 * kv) + es * (3 * qn + 2 * kv) + 4.0 * (double)(n_seqs * (s.pages_per_seq + 1));
}

/* The block table and lengths: pages handed out in a scrambled order, as a
 * cache allocator would. */
void pa_fill_tables(const pa_shape *s, const int64_t *lengths, int32_t *tables, int32_t *lens)
{
    for (int64_t b = 0, next = 0; b < s->batch; b++) {
        lens[b] = (int32_t)lengths[b];
        for (int64_t p = 0; p * s->page < lengths[b]; p++, next++)
            tables[b * s->pages_per_seq + p] = (int32_t)((next * 7 + 3) % s->num_pages);
    }
}

int pa_run(const int64_t *lengths, int64_t n_seqs, int64_t page, int64_t heads, int64_t dim, pl_dtype dt,
           const pl_options *opt, pl_report *rep, pl_check *chk, FILE *f)
{
    pa_shape s = pa_shape_for(lengths, n_seqs, page, heads, dim);
    int64_t h = heads, d = dim, kv = s.num_pages * page * d, qn = n_seqs * h * d;
    size_t es = pl_dtype_size(dt);
    int32_t *tables = calloc((size_t)(n_seqs * s.pages_per_seq), sizeof *tables), *lens = calloc((size_t)n_seqs, 4);
    float *qf = malloc((size_t)qn * 4), *kf = malloc((size_t)kv * 4), *vf = malloc((size_t)kv * 4);
    float *ref = malloc((size_t)qn * 4);
    void *qt = malloc((size_t)qn * es), *kt = malloc((size_t)kv * es), *vt = malloc((size_t)kv * es);
    void *ot = calloc((size_t)qn, es);
    int rc = PL_ENOMEM;
    if (tables && lens && qf && kf && vf && ref && qt && kt && vt && ot) {
        pa_fill_tables(&s, lengths, tables, lens);
        fill(qf, qt, qn, dt, 1);
        fill(kf, kt, kv, dt, 2);
        fill(vf, vt, kv, dt, 3);
        pa_reference(&s, tables, lens, qf, kf, vf, ref);
        pa_params prm = {0};
        pl_call call;
        pa_call(&call, &prm, &s, dt);
        pl_array args[5] = {PL_ARRAY(tables, PL_I32, n_seqs, s.pages_per_seq), PL_ARRAY(lens, PL_I32, n_seqs),
                            PL_ARRAY(qt, dt, n_seqs, h, d), PL_ARRAY(kt, dt, s.num_pages, page, d),
                            PL_ARRAY(vt, dt, s.num_pages, page, d)};
        pl_array out = PL_ARRAY(ot, dt, n_seqs, h, d), want = PL_ARRAY(ref, PL_F32, n_seqs, h, d);
        rc = pl_check_dma_modes(&call, args, &out, opt, rep);
        if (!rc) {
            if (f) {
                pl_report_print(rep, f);
                fprintf(f, "  copies land the same at start and at their waits: no read before a wait (M7, M8)\n");
            }
            rc = pl_allclose(&out, &want, 0, 0, chk, f);
        }
    }
    free(tables), free(lens), free(qf), free(kf), free(vf), free(ref), free(qt), free(kt), free(vt), free(ot);
    return rc;
}
