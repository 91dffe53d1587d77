/* sim/review/review_fit.c: what a review configuration may be, as rules that
 * review.c applies and nothing it calls back (tools/layering.sh): the
 * legal TP degrees, the weight dtypes a chip serves (T10), the shapes of a
 * device's shard, and pl_review_check, the refusal of a model that no
 * configuration can run, in closed form and before any kernel is
 * simulated (issue 21: a model 1 M wide was swept for minutes and then
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
#include <string.h>

#include "../base/common.h" /* sim_chip_devices_ok */
#include "review.h"

const char *pl_wdtype_name(pl_wdtype w)
{
    static const char *n[] = {"bf16", "int8", "fp8"};
    return w >= 0 && w < PL_W_COUNT ? n[w] : "?";
}

int pl_wdtype_parse(const char *s, pl_wdtype *out)
{
    for (int w = 0; s && w < PL_W_COUNT; w++)
        if (strcmp(s, pl_wdtype_name((pl_wdtype)w)) == 0) return *out = (pl_wdtype)w, PL_OK;
    return PL_EINVAL;
}

pl_dtype pl_review_kv_dtype(pl_wdtype w) { return w == PL_W_INT8 ? PL_I8 : w == PL_W_FP8 ? PL_F8E4M3 : PL_BF16; }

/* KV caches: bf16, or 8-bit pages the attention kernel widens to bf16 in
 * registers (a VPU cast; the scales fold into the softmax's and the
 * output's). fp8 is a storage format on any chip; int8 is weighed where
 * the chip's MXU has an int8 path, as serving stacks offer it (issue 24). */
int pl_review_kv_ok(const pl_chip *chip, pl_wdtype w, char *msg, size_t n)
{
    if (w != PL_W_INT8 || chip->int8_ops > 0) return 1;
    snprintf(msg, n, "an int8 KV cache is weighed only where the MXU has an int8 path; %s has none (fp8 instead)",
             chip->name);
    return 0;
}

/* The one rule for weight dtypes per chip (T10): int8 needs an int8 MXU
 * path (int8_ops > 0: v5e to v6e), fp8 an fp8 rate (fp8_ops > 0: v7x; the
 * chips that take fp8 operands without one widen them to bf16, so the
 * review does not weigh fp8 there). */
int pl_review_wdtype_ok(const pl_chip *chip, pl_wdtype w, char *msg, size_t n)
{
    if (w == PL_W_INT8 && chip->int8_ops <= 0)
        return snprintf(msg, n, "int8 weights: %s's MXU has no int8 path (T10); use %s", chip->name,
                        chip->fp8_ops > 0 ? "fp8 or bf16" : "bf16"), 0;
    if (w == PL_W_FP8 && chip->fp8_ops <= 0)
        return snprintf(msg, n, "fp8 weights: %s's MXU has no fp8 rate (T10: it would widen them to bf16); use "
                        "int8 or bf16", chip->name), 0;
    return 1;
}

/* A device's shard at TP degree tp: Megatron style, heads and FFN columns split, the LM head's
 * vocabulary rounded up (review.c's header says which matmul is which). */
rv_dims rv_dims_of(const pl_model *m, int64_t tp)
{
    rv_dims d = {.qkv_n = (m->heads + 2 * m->kv_heads) * m->head_dim / tp, .o_k = m->heads * m->head_dim / tp,
                 .up_n = (m->ffn_kind == PL_FFN_SWIGLU ? 2 : 1) * m->ffn / tp, .down_k = m->ffn / tp,
                 .head_n = (m->vocab + tp - 1) / tp, .qheads = m->heads / tp, .kvheads = m->kv_heads / tp};
    d.group = (m->heads / m->kv_heads + 7) / 8 * 8;
    return d;
}

int rv_tp_ok(const pl_review_brief *b, int64_t tp, char *why, size_t n)
{
    const pl_model *m = b->model;
    char msg[200];
    if (tp < 1) return snprintf(why, n, "illegal: TP %lld", (long long)tp), 0;
    if (m->kv_heads % tp || m->ffn % tp) /* each device its equal share of heads and FFN */
        return snprintf(why, n, "illegal: TP %lld does not divide the %lld %s", (long long)tp,
                        (long long)(m->kv_heads % tp ? m->kv_heads : m->ffn),
                        m->kv_heads % tp ? "KV heads" : "FFN columns"), 0;
    if (!sim_chip_devices_ok(b->chip, tp, msg, sizeof msg)) /* no ICI: 1 device only */
        return snprintf(why, n, "illegal: %s", msg), 0;
    return 1;
}

/* S pipeline stages over DCN (M14): an equal share of the layers each, and
 * a chip whose hosts have DCN figures. */
int rv_slices_ok(const pl_review_brief *b, int64_t slices, char *why, size_t n)
{
    if (slices == 1) return 1;
    if (b->model->layers % slices)
        return snprintf(why, n, "illegal: %lld slices do not divide the %lld layers (pipeline stages of equal "
                        "layers)", (long long)slices, (long long)b->model->layers), 0;
    if (!(b->chip->dcn_bw > 0) || b->chip->chips_per_host < 1)
        return snprintf(why, n, "illegal: %s has no data-center network figures (dcn_gbps, chips_per_host) to "
                        "join slices (M14)", b->chip->name), 0;
    return 1;
}

/* One hand-off between pipeline stages: each of the TP devices sends `bytes`
 * to its peer in the next slice; a host's devices share its NICs. */
double rv_dcn_handoff_s(const pl_chip *chip, int64_t tp, int64_t bytes)
{
    if (!(chip->dcn_bw > 0)) return 0;
    int64_t dph = pl_chip_devices_per_host(chip), on_host = tp < dph ? tp : dph;
    return chip->dcn_latency_s + (double)on_host * (double)bytes / chip->dcn_bw;
}

/* The largest legal TP degree of b; 0: none. */
static int64_t most_sharding(const pl_review_brief *b)
{
    int64_t best = 0;
    char why[256];
    for (int i = 0; i < b->n_chips && i < PL_REVIEW_MAX_LIST; i++)
        if (b->chips[i] > best && rv_tp_ok(b, b->chips[i], why, sizeof why)) best = b->chips[i];
    return best;
}

/* The fewest bytes per weight among b's dtypes that the chip serves; 0: none. */
static int fewest_weight_bytes(const pl_review_brief *b, pl_wdtype *w)
{
    int best = 0;
    char why[160];
    for (int i = 0; i < b->n_quant && i < PL_W_COUNT; i++) {
        int bytes = b->quant[i] == PL_W_BF16 ? 2 : 1;
        if (pl_review_wdtype_ok(b->chip, b->quant[i], why, sizeof why) && (!best || bytes < best))
            best = bytes, *w = b->quant[i];
    }
    return best;
}

/* The message of a kernel that does not fit: what needs how much of which limit. HBM: and whether
 * any preset has that much (the chip may be a what-if one or a small preset). */
static int refuse(const pl_review_brief *b, const char *what, double need, int hbm, char *err, size_t n)
{
    double limit = hbm ? (double)b->chip->hbm_bytes : (double)b->chip->vmem_default_limit;
    char a[32], c[32], most[128] = "";
    const pl_chip *big = pl_chip_at(0);
    for (int i = 1; i < pl_chip_count(); i++)
        if (pl_chip_at(i)->hbm_bytes > big->hbm_bytes) big = pl_chip_at(i);
    if (hbm && need > (double)big->hbm_bytes)
        snprintf(most, sizeof most, "; no preset has that much (the most: %s's %s)", big->name,
                 pl_format_bytes((double)big->hbm_bytes, c, sizeof c));
    return snprintf(err, n, "review: %s cannot run on %s in any configuration weighed: %s need %s per device > %s's "
                    "%s of %s%s", b->model->name, b->chip->name, what, pl_format_bytes(need, a, sizeof a),
                    b->chip->name, pl_format_bytes(limit, c, sizeof c), hbm ? "HBM" : "scoped VMEM limit", most),
           PL_EINVAL;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

int pl_review_check(const pl_review_brief *b, char *err, size_t n)
{
    char unused[8];
    if (!err || !n) err = unused, n = sizeof unused;
    if (!b || !b->model || !b->chip) return snprintf(err, n, "review: no brief, model or chip"), PL_EINVAL;
    const pl_model *m = b->model;
    if (m->layers < 1 || m->d_model < 1 || m->heads < 1 || m->kv_heads < 1 || m->head_dim < 1 || m->ffn < 1 ||
        m->vocab < 1) /* what pl_model_parse guarantees, for a model built in C */
        return snprintf(err, n, "review: model %s: layers, d_model, heads, kv_heads, head_dim, ffn and vocab must "
                        "be >= 1", m->name), PL_EINVAL;
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
        return refuse(b, what, need, 1, err, n);
    }
    /* attention: head_dim is whole in every block; q, k, v and o blocks of
     * the smallest flash block, a K and a V page of the smallest page */
    double limit = (double)b->chip->vmem_default_limit, hd = (double)m->head_dim;
    int64_t rows = min64(256, b->prompt), page = min64(128, (b->prompt + b->context) / 2);
    double flash = 4.0 * (double)rows * hd * 2, paged = 2.0 * (double)page * hd * 2;
    if (flash > limit) {
        snprintf(what, sizeof what, "flash attention's smallest blocks (q, k, v and o of %lld rows x head_dim %lld "
                 "in bf16)", (long long)rows, (long long)m->head_dim);
        return refuse(b, what, flash, 0, err, n);
    }
    if (paged > limit) {
        snprintf(what, sizeof what, "paged attention's smallest pages (a K and a V page of %lld tokens x head_dim "
                 "%lld in bf16)", (long long)page, (long long)m->head_dim);
        return refuse(b, what, paged, 0, err, n);
    }
    return PL_OK;
}
