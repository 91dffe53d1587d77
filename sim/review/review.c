/* sim/review/review.c: the design review's arithmetic (sim/tilesim_review.h).
 *
 * A configuration is (N devices in a 1 x N ring, tensor parallelism TP = N
 * over heads and FFN, Megatron style; weight dtype; KV cache bf16; decode
 * batch B). Per device and layer it runs:
 *   - QKV (d_model -> (heads + 2 kv_heads) head_dim / TP), output
 *     (heads head_dim / TP -> d_model), MLP up and gate fused in one matmul
 *     (d_model -> 2 ffn / TP for SwiGLU, ffn / TP for GELU), down
 *     (ffn / TP -> d_model): review_matmul at M = P tokens (prefill) or B
 *     (decode);
 *   - prefill attention: flash_attention, causal, heads / TP heads of one
 *     P-token sequence (GQA's shared K and V are read per query head: the
 *     kernel has no grouping; prefill is compute-bound, so this costs
 *     little);
 *   - decode attention: paged attention over B x kv_heads / TP caches, each
 *     at the average context (P + C) / 2 of a conversation that grows from
 *     P to C tokens, with the query heads of one KV head padded to a
 *     multiple of 8 (the kernel's q block, T1);
 *   - two all-reduces of the activations (M x d_model bf16: after attention
 *     and after the MLP), when TP > 1.
 * Once per step: the LM head (d_model -> vocab / TP; prefill needs only the
 * last token's logits: M = 1) and the embedding gather (closed form: M rows
 * of d_model bf16 at the HBM bandwidth; no kernel).
 * TTFT = the prefill + one decode step at batch B (the first token's).
 * TPOT = one decode step. tokens/s/chip = B / TPOT / TP x devices per chip.
 * HBM per device: params x weight bytes / TP + the batch's KV cache at the
 * full context C + activations (2 x P x (d_model + the widest projection's
 * output) x 2 bytes: the prefill's in and out of the widest matmul, and the
 * residual stream).
 * Across S slices (pipeline stages over DCN, M14): each slice holds layers
 * / S of the layers on its TP ring, so a device's weights are 1 / S of the
 * above. A token's step passes through the stages in turn (its time is the
 * same layers' time), plus S - 1 hand-offs of the activations over DCN,
 * each device sending the M x d_model bf16 rows to its peer in the next
 * slice through its host's NICs: the DCN latency plus min(TP, devices a
 * host) x the rows' bytes / the NICs' bandwidth (closed form). S
 * micro-batches of B sequences are in flight, one in each stage, as
 * pipeline-parallel serving interleaves them: every stage works all the
 * time, so S B tokens come every TPOT from S times the devices, and each
 * device keeps its layers' KV cache for all S micro-batches (the same
 * bytes as one slice's for B). tokens/s/chip counts the devices of every
 * slice. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "review.h"

enum { J_QKV, J_O, J_UP, J_DOWN, J_ATTN, J_AR, J_HEAD, J_PER_STEP }; /* prefill 0..6, decode 7..13 */

const char *pl_review_verdict_name(pl_review_verdict v)
{
    static const char *n[] = {"best", "fewer tokens/s/chip", "misses TPOT", "misses TTFT", "does not fit HBM",
                              "illegal"};
    return v >= 0 && v <= PL_RV_ILLEGAL ? n[v] : "?";
}

/* Weight elements of the per-device shard that one step's matmuls read. */
static double layer_weights(const pl_model *m, const rv_dims *d)
{
    return (double)m->d_model * d->qkv_n + (double)d->o_k * m->d_model + (double)m->d_model * d->up_n +
           (double)d->down_k * m->d_model;
}

/* Capacity: NO_FIT with the bytes missing, or 0. */
static int check_fit(const pl_review_brief *b, pl_review_config *c, const rv_dims *d)
{
    const pl_model *m = b->model;
    double wb = c->wq == PL_W_BF16 ? 2 : 1, stages = (double)c->slices;
    c->weight_bytes = m->params * wb / (double)c->chips / stages;
    /* layers / S of the layers, for the S micro-batches in flight: stages cancel */
    c->kv_bytes = (double)c->batch * b->context * 2.0 * d->kvheads * m->head_dim * m->layers *
                  (double)pl_dtype_size(c->kv);
    int64_t widest = d->qkv_n > d->up_n ? d->qkv_n : d->up_n;
    c->act_bytes = 2.0 * b->prompt * (double)(m->d_model + widest) * 2.0;
    c->hbm_bytes = (double)b->chip->hbm_bytes;
    double need = c->weight_bytes + c->kv_bytes + c->act_bytes;
    if (need <= c->hbm_bytes) return 0;
    c->verdict = PL_RV_NO_FIT;
    snprintf(c->reason, sizeof c->reason,
             "does not fit HBM: %.1f GB of weights + %.1f GB of KV cache + %.1f GB of activations = %.1f GB > "
             "%.1f GB per device (%.1f GB missing)", c->weight_bytes / 1e9, c->kv_bytes / 1e9, c->act_bytes / 1e9,
             need / 1e9, c->hbm_bytes / 1e9, (need - c->hbm_bytes) / 1e9);
    return 1;
}

/* The jobs of one step at M tokens into c->job[base ...]. */
static int add_step(pl_review_result *r, const pl_review_brief *b, pl_review_config *c, const rv_dims *d, int base)
{
    const pl_model *m = b->model;
    int pre = base == 0;
    int64_t tok = pre ? b->prompt : c->batch, D = m->d_model;
    int *j = c->job + base;
    j[J_QKV] = rv_job(r, RV_MATMUL, tok, d->qkv_n, D, c->wq, 0);
    j[J_O] = rv_job(r, RV_MATMUL, tok, D, d->o_k, c->wq, 0);
    j[J_UP] = rv_job(r, RV_MATMUL, tok, d->up_n, D, c->wq, 0);
    j[J_DOWN] = rv_job(r, RV_MATMUL, tok, D, d->down_k, c->wq, 0);
    j[J_HEAD] = rv_job(r, RV_MATMUL, pre ? 1 : tok, d->head_n, D, c->wq, 0);
    j[J_ATTN] = pre ? rv_job(r, RV_FLASH, d->qheads, b->prompt, m->head_dim, 1, 0)
                    : rv_job(r, RV_PAGED, c->batch * d->kvheads, d->group, m->head_dim, r->avg_context, c->kv);
    j[J_AR] = c->chips > 1 ? rv_job(r, RV_ALLREDUCE, c->chips, tok * D * 2, 0, 0, 0) : -1;
    for (int i = 0; i < J_PER_STEP; i++)
        if (j[i] < -1 || (j[i] == -1 && i != J_AR)) return PL_ENOMEM;
    return PL_OK;
}

static void setup_config(pl_review_result *r, const pl_review_brief *b, pl_review_config *c, int *rc)
{
    const pl_model *m = b->model;
    for (int i = 0; i < 16; i++) c->job[i] = -1;
    c->detail_job = -1;
    if (!rv_tp_ok(b, c->chips, c->reason, sizeof c->reason) || !rv_slices_ok(b, c->slices, c->reason, sizeof c->reason) ||
        !pl_review_wdtype_ok(b->chip, c->wq, c->reason, sizeof c->reason) ||
        !pl_review_kv_ok(b->chip, c->kvq, c->reason, sizeof c->reason)) {
        c->verdict = PL_RV_ILLEGAL;
        return;
    }
    rv_dims d = rv_dims_of(m, c->chips);
    if (check_fit(b, c, &d)) return;
    if (*rc == PL_OK) *rc = add_step(r, b, c, &d, 0);
    if (*rc == PL_OK) *rc = add_step(r, b, c, &d, J_PER_STEP);
}

/* prefix and the first line of msg into dst (n > strlen(prefix) + 8), without its
 * trailing ':' ("...or use smaller blocks:" announces the lines after it);
 * too long, it ends at a word with " ...": a verdict is one line, never cut
 * mid-word, and the whole message stays in its job (detail_job). */
static void first_line(char *dst, size_t n, const char *prefix, const char *msg)
{
    size_t len = strcspn(msg, "\n"), room = n - 1 - strlen(prefix);
    while (len > 0 && (msg[len - 1] == ':' || msg[len - 1] == ' ')) len--;
    int cut = len > room;
    if (cut) { /* the last space that leaves room for " ..." */
        len = room - 4;
        while (len > 0 && msg[len] != ' ') len--;
        while (len > 0 && (msg[len - 1] == ' ' || msg[len - 1] == ':' || msg[len - 1] == ';')) len--;
    }
    snprintf(dst, n, "%s%.*s%s", prefix, (int)len, msg, cut ? " ..." : "");
}

/* Sum one step's kernel times; 0, or 1 naming a job that no tiling serves. */
static int sum_step(const pl_review_result *r, const pl_review_brief *b, pl_review_config *c, int base,
                    pl_review_parts *p)
{
    const int *j = c->job + base;
    for (int i = 0; i < J_PER_STEP; i++)
        if (j[i] >= 0 && r->jobs[j[i]].status != PL_OK) {
            c->verdict = PL_RV_ILLEGAL;
            c->detail_job = j[i];
            static const char *kind[] = {"matmul", "flash attention", "paged attention", "all-reduce"};
            char prefix[64];
            snprintf(prefix, sizeof prefix, "illegal: no legal %s: ", kind[r->jobs[j[i]].kind & 3]);
            first_line(c->reason, sizeof c->reason, prefix, r->jobs[j[i]].error);
            return 1;
        }
    double t[J_PER_STEP];
    for (int i = 0; i < J_PER_STEP; i++) t[i] = j[i] >= 0 ? r->jobs[j[i]].time_s : 0;
    int64_t tok = base == 0 ? b->prompt : c->batch;
    p->proj_s = t[J_QKV] + t[J_O] + t[J_UP] + t[J_DOWN];
    p->attn_s = t[J_ATTN];
    p->comm_s = 2 * t[J_AR];
    p->head_s = t[J_HEAD];
    p->embed_s = (double)tok * b->model->d_model * 2.0 / b->chip->hbm_bw;
    p->dcn_s = rv_dcn_handoff_s(b->chip, c->chips, tok * b->model->d_model * 2) * (double)(c->slices - 1);
    p->total_s = (double)b->model->layers * (p->proj_s + p->attn_s + p->comm_s) + p->head_s + p->embed_s + p->dcn_s;
    return 0;
}

/* The ideal work and traffic of one step (per device), and its floor. */
static void roofline(const pl_review_result *r, const pl_review_brief *b, const pl_review_config *c, int pre,
                     pl_review_parts *p)
{
    const pl_model *m = b->model;
    rv_dims d = rv_dims_of(m, c->chips);
    double wb = c->wq == PL_W_BF16 ? 2 : 1, L = (double)m->layers, W = layer_weights(m, &d) * L;
    double head = (double)m->d_model * d.head_n, tok = pre ? (double)b->prompt : (double)c->batch;
    double kv_tok = 2.0 * d.kvheads * m->head_dim * L * (double)pl_dtype_size(c->kv); /* KV bytes per token per device */
    if (pre) {
        p->flops = 2 * tok * W + 2 * head + 2.0 * tok * tok * d.qheads * m->head_dim * L; /* causal: half of 4 */
        p->bytes = (W + head) * wb + tok * kv_tok;                                         /* write the KV */
    } else {
        p->flops = 2 * tok * (W + head) + 4.0 * tok * r->avg_context * d.qheads * m->head_dim * L;
        p->bytes = (W + head) * wb + tok * r->avg_context * kv_tok;
    }
    double peak = b->chip->bf16_flops * b->chip->cores_per_device;
    p->roof_s = fmax(p->flops / peak, p->bytes / b->chip->hbm_bw);
}

static void finish_config(const pl_review_result *r, const pl_review_brief *b, pl_review_config *c)
{
    if (c->verdict != PL_RV_BEST) return; /* already rejected */
    if (sum_step(r, b, c, 0, &c->prefill) || sum_step(r, b, c, J_PER_STEP, &c->decode)) return;
    roofline(r, b, c, 1, &c->prefill);
    roofline(r, b, c, 0, &c->decode);
    c->ttft_s = c->prefill.total_s + c->decode.total_s;
    c->tpot_s = c->decode.total_s;
    /* S micro-batches of B, one a stage, every TPOT, on S slices of `chips`: S cancels */
    c->tok_s_chip = (double)c->batch / c->tpot_s / (double)c->chips * b->chip->devices_per_chip;
    int ttft = c->ttft_s > b->ttft_s, tpot = c->tpot_s > b->tpot_s;
    if (ttft || tpot) {
        c->verdict = ttft ? PL_RV_MISS_TTFT : PL_RV_MISS_TPOT;
        snprintf(c->reason, sizeof c->reason, "%s%s%s", ttft ? "misses TTFT" : "", ttft && tpot ? ", " : "",
                 tpot ? "misses TPOT" : "");
    }
}

/* The recommended configuration's bottleneck, in one sentence. */
static void bottleneck(pl_review_result *r, const pl_review_brief *b)
{
    const pl_review_config *c = &r->configs[r->best];
    const pl_review_parts *p = &c->decode;
    double L = (double)b->model->layers, wb = c->wq == PL_W_BF16 ? 2 : 1;
    rv_dims d = rv_dims_of(b->model, c->chips);
    double wbytes = (layer_weights(b->model, &d) * L + (double)b->model->d_model * d.head_n) * wb;
    double kvbytes = p->bytes - wbytes;
    double peak = b->chip->bf16_flops * b->chip->cores_per_device, tot = p->total_s;
    int hbm = p->bytes / b->chip->hbm_bw >= p->flops / peak;
    snprintf(r->bottleneck, sizeof r->bottleneck,
             "decode is %s: each step reads %.1f GB of weights and %.1f GB of KV cache per device at %.1f TB/s "
             "(%.1f TFLOP at %.0f TFLOP/s), a %.2f ms floor; the simulated step takes %.2f ms: matmuls %.0f%%, "
             "attention %.0f%%, all-reduces %.0f%%", hbm ? "HBM-bound" : "compute-bound", wbytes / 1e9,
             kvbytes / 1e9, b->chip->hbm_bw / 1e12, p->flops / 1e12, peak / 1e12, p->roof_s * 1e3, tot * 1e3,
             100 * (L * p->proj_s + p->head_s) / tot, 100 * L * p->attn_s / tot, 100 * L * p->comm_s / tot);
    size_t at = strlen(r->bottleneck);
    if (c->slices > 1 && at < sizeof r->bottleneck) /* the stages' shares of that, in turn (M14) */
        snprintf(r->bottleneck + at, sizeof r->bottleneck - at, ", DCN hand-offs %.0f%% (the %lld pipeline stages "
                 "read their shares in turn)", 100 * p->dcn_s / tot, (long long)c->slices);
}

static void choose(pl_review_result *r, const pl_review_brief *b)
{
    r->best = -1;
    for (int i = 0; i < r->n_configs; i++) {
        const pl_review_config *c = &r->configs[i];
        if (c->verdict != PL_RV_BEST) continue;
        const pl_review_config *o = r->best >= 0 ? &r->configs[r->best] : NULL;
        if (!o || c->tok_s_chip > o->tok_s_chip ||
            (c->tok_s_chip == o->tok_s_chip && c->chips * c->slices < o->chips * o->slices))
            r->best = i;
    }
    for (int i = 0; i < r->n_configs && r->best >= 0; i++) {
        pl_review_config *c = &r->configs[i];
        if (c->verdict != PL_RV_BEST || i == r->best) continue;
        c->verdict = PL_RV_SLOWER;
        double top = r->configs[r->best].tok_s_chip;
        if (c->tok_s_chip >= top) /* a tie: the first weighed is recommended */
            snprintf(c->reason, sizeof c->reason, "fewer tokens/s/chip: none, it ties the recommended one at %.0f",
                     top);
        else snprintf(c->reason, sizeof c->reason, "fewer tokens/s/chip: %.0f vs %.0f", c->tok_s_chip, top);
    }
    if (r->best >= 0) bottleneck(r, b);
}

static int check_brief(const pl_review_brief *b, const pl_review_kernels *k, char *err, size_t n)
{
    if (!b || !k || !b->model || !b->chip) return snprintf(err, n, "review: no brief, model, chip or kernels"), PL_EINVAL;
    if (b->prompt < 1 || b->context < b->prompt)
        return snprintf(err, n, "review: the context (%lld) must be at least the prompt (%lld), which must be >= 1",
                        (long long)b->context, (long long)b->prompt), PL_EINVAL;
    if (!(b->ttft_s > 0) || !(b->tpot_s > 0)) return snprintf(err, n, "review: the targets must be > 0"), PL_EINVAL;
    if (b->n_chips < 1 || b->n_quant < 1 || b->n_batch < 1 || b->n_chips > PL_REVIEW_MAX_LIST ||
        b->n_quant > PL_W_COUNT || b->n_batch > PL_REVIEW_MAX_LIST || b->n_kv < 0 || b->n_kv > PL_W_COUNT)
        return snprintf(err, n, "review: empty or too long a list of chips, quantizations or batches"), PL_EINVAL;
    for (int i = 0; i < b->n_chips; i++)
        if (b->chips[i] < 1 || b->chips[i] > 256) return snprintf(err, n, "review: chips must be 1 to 256"), PL_EINVAL;
    for (int i = 0; i < b->n_batch; i++)
        if (b->batch[i] < 1 || b->batch[i] > 4096) return snprintf(err, n, "review: batch must be 1 to 4096"), PL_EINVAL;
    if (b->n_slices < 0 || b->n_slices > PL_REVIEW_MAX_LIST) return snprintf(err, n, "review: too many slices"), PL_EINVAL;
    for (int i = 0; i < b->n_slices; i++)
        if (b->slices[i] < 1 || b->slices[i] > PL_MESH_MAX_SLICES)
            return snprintf(err, n, "review: slices must be 1 to %d", PL_MESH_MAX_SLICES), PL_EINVAL;
    return PL_OK;
}

int pl_review_run(const pl_review_brief *b, const pl_review_kernels *k, pl_review_result *r, char *err, size_t n)
{
    char unused[8];
    if (!err || !n) err = unused, n = sizeof unused;
    if (!r) return snprintf(err, n, "review: no result to fill"), PL_EINVAL;
    memset(r, 0, sizeof *r);
    r->best = -1;
    int rc = check_brief(b, k, err, n);
    if (rc || (rc = pl_review_check(b, err, n))) return rc;
    r->avg_context = (b->prompt + b->context) / 2;
    int n_kv = b->n_kv > 0 ? b->n_kv : 1, n_sl = b->n_slices > 0 ? b->n_slices : 1;
    r->configs = calloc((size_t)(n_sl * b->n_chips * b->n_quant * n_kv * b->n_batch), sizeof *r->configs);
    if (!r->configs) return snprintf(err, n, "review: out of host memory"), PL_ENOMEM;
    for (int si = 0; si < n_sl; si++)
        for (int ci = 0; ci < b->n_chips; ci++)
            for (int qi = 0; qi < b->n_quant; qi++)
                for (int ki = 0; ki < n_kv; ki++)
                    for (int bi = 0; bi < b->n_batch; bi++) {
                        pl_review_config *c = &r->configs[r->n_configs++];
                        c->slices = b->n_slices > 0 ? b->slices[si] : 1;
                        c->chips = b->chips[ci], c->wq = b->quant[qi], c->batch = b->batch[bi];
                        c->kvq = b->n_kv > 0 ? b->kv[ki] : PL_W_BF16;
                        c->kv = pl_review_kv_dtype(c->kvq);
                        setup_config(r, b, c, &rc);
                    }
    if (rc == PL_ENOMEM) snprintf(err, n, "review: out of host memory");
    if (rc == PL_OK) rc = rv_jobs_run(r, b, k, err, n);
    if (rc != PL_OK) {
        pl_review_free(r);
        return rc;
    }
    for (int i = 0; i < r->n_configs; i++) finish_config(r, b, &r->configs[i]);
    choose(r, b);
    return PL_OK;
}

void pl_review_free(pl_review_result *r)
{
    if (!r) return;
    free(r->configs), free(r->jobs);
    r->configs = NULL, r->jobs = NULL, r->n_configs = r->n_jobs = 0;
}
