/* sim/review_fit.c: pl_review_check, the refusal of a model that no
 * configuration of a review can run, in closed form and before any kernel
 * is simulated (issue 21: a model 1 M wide was swept for minutes and then
 * every configuration failed).
 *
 * The most favourable configuration the brief weighs bounds every other
 * one: the largest legal TP degree (it divides the KV heads and the FFN,
 * and the chip can connect that many devices) shards each weight the most,
 * the narrowest legal weight dtype stores it in the fewest bytes, and the
 * smallest blocks the review's sweeps try (review_jobs.c: 256 rows, pages
 * of 128 tokens, or the whole dimension when smaller) need the least VMEM.
 * A kernel that does not fit even then fits in no configuration: its
 * weights in the device's HBM, its attention blocks (head_dim is never
 * split) in the scoped VMEM limit. The figures are lower bounds (one
 * buffer per block, no scratch), so a model refused here can never run;
 * one that passes may still have configurations that do not fit, which
 * the review reports one by one as before. The matmul tiles (at most 512 x
 * 256) are not checked: they fit every chip's VMEM. */
#include <stdio.h>

#include "common.h" /* sim_chip_devices_ok */
#include "review.h"

/* The largest TP degree of b that setup_config (review.c) would not call illegal; 0: none. */
static int64_t most_sharding(const pl_review_brief *b)
{
    const pl_model *m = b->model;
    int64_t best = 0;
    char why[200];
    for (int i = 0; i < b->n_chips; i++) {
        int64_t tp = b->chips[i];
        if (tp > best && m->kv_heads % tp == 0 && m->ffn % tp == 0 && sim_chip_devices_ok(b->chip, tp, why, sizeof why))
            best = tp;
    }
    return best;
}

/* The fewest bytes per weight among b's dtypes that the chip serves; 0: none. */
static int fewest_weight_bytes(const pl_review_brief *b, pl_wdtype *w)
{
    int best = 0;
    char why[160];
    for (int i = 0; i < b->n_quant; i++) {
        int bytes = b->quant[i] == PL_W_BF16 ? 2 : 1;
        if (pl_review_wdtype_ok(b->chip, b->quant[i], why, sizeof why) && (!best || bytes < best))
            best = bytes, *w = b->quant[i];
    }
    return best;
}

/* The message of a kernel that does not fit: what needs how much of which limit. */
static int refuse(const pl_review_brief *b, const char *what, double need, double limit, const char *memory,
                  char *err, size_t n)
{
    char a[32], c[32];
    return snprintf(err, n, "review: %s cannot run on %s in any configuration weighed: %s need %s per device > %s's "
                    "%s of %s", b->model->name, b->chip->name, what, pl_format_bytes(need, a, sizeof a),
                    b->chip->name, pl_format_bytes(limit, c, sizeof c), memory), PL_EINVAL;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

int pl_review_check(const pl_review_brief *b, char *err, size_t n)
{
    char unused[8];
    if (!err || !n) err = unused, n = sizeof unused;
    if (!b || !b->model || !b->chip) return snprintf(err, n, "review: no brief, model or chip"), PL_EINVAL;
    const pl_model *m = b->model;
    pl_wdtype w = PL_W_BF16;
    int64_t tp = most_sharding(b);
    int wb = fewest_weight_bytes(b, &w);
    if (tp < 1 || wb < 1) return PL_OK; /* every configuration is illegal, with its reason; none is simulated */
    rv_dims d = rv_dims_of(m, tp);
    const long long D = (long long)m->d_model, T = (long long)tp;
    char what[320];
    struct { const char *kernel; double elems; char shape[128]; } mats[] = {
        {"QKV", (double)m->d_model * (double)d.qkv_n, ""},   {"output", (double)d.o_k * (double)m->d_model, ""},
        {"MLP up+gate", (double)m->d_model * (double)d.up_n, ""}, {"MLP down", (double)d.down_k * (double)m->d_model, ""},
        {"LM head", (double)m->d_model * (double)d.head_n, ""},
    };
    snprintf(mats[0].shape, sizeof mats[0].shape, "d_model %lld x (heads %lld + 2 x kv_heads %lld) x head_dim %lld "
             "/ TP %lld", D, (long long)m->heads, (long long)m->kv_heads, (long long)m->head_dim, T);
    snprintf(mats[1].shape, sizeof mats[1].shape, "heads %lld x head_dim %lld / TP %lld x d_model %lld",
             (long long)m->heads, (long long)m->head_dim, T, D);
    snprintf(mats[2].shape, sizeof mats[2].shape, "d_model %lld x %sffn %lld / TP %lld", D,
             m->ffn_kind == PL_FFN_SWIGLU ? "2 x " : "", (long long)m->ffn, T);
    snprintf(mats[3].shape, sizeof mats[3].shape, "ffn %lld / TP %lld x d_model %lld", (long long)m->ffn, T, D);
    snprintf(mats[4].shape, sizeof mats[4].shape, "d_model %lld x vocab %lld / TP %lld", D, (long long)m->vocab, T);
    for (size_t i = 0; i < sizeof mats / sizeof *mats; i++) {
        double need = mats[i].elems * wb;
        if (need <= (double)b->chip->hbm_bytes) continue;
        snprintf(what, sizeof what, "the %s matmul's weights (%s, %s at %d byte%s each: the most sharding and the "
                 "narrowest dtype weighed)", mats[i].kernel, mats[i].shape, pl_wdtype_name(w), wb, wb == 1 ? "" : "s");
        return refuse(b, what, need, (double)b->chip->hbm_bytes, "HBM", err, n);
    }
    /* attention: head_dim is whole in every block; q, k, v and o blocks of
     * the smallest flash block, a K and a V page of the smallest page */
    double limit = (double)b->chip->vmem_default_limit, hd = (double)m->head_dim;
    int64_t rows = min64(256, b->prompt), page = min64(128, (b->prompt + b->context) / 2);
    if (4.0 * (double)rows * hd * 2 > limit) {
        snprintf(what, sizeof what, "flash attention's smallest blocks (q, k, v and o of %lld rows x head_dim %lld "
                 "in bf16)", (long long)rows, (long long)m->head_dim);
        return refuse(b, what, 4.0 * (double)rows * hd * 2, limit, "scoped VMEM limit", err, n);
    }
    if (2.0 * (double)page * hd * 2 > limit) {
        snprintf(what, sizeof what, "paged attention's smallest pages (a K and a V page of %lld tokens x head_dim "
                 "%lld in bf16)", (long long)page, (long long)m->head_dim);
        return refuse(b, what, 2.0 * (double)page * hd * 2, limit, "scoped VMEM limit", err, n);
    }
    return PL_OK;
}
