/* cli/review_print.c: what `tilesim review` prints: the recommendation, its
 * bottleneck sentence, and every configuration weighed with its verdict
 * (text), or all of it as one JSON object (--json). */
#include <stdlib.h>
#include <string.h>

#include "../sim/tilesim_review.h"
#include "../sim/base/json.h"
#include "cli.h"

static const char *ms(double s, char *buf, size_t n)
{
    if (s > 0) snprintf(buf, n, "%.2f ms", s * 1e3);
    else snprintf(buf, n, "-");
    return buf;
}

/* Each kernel of the recommended configuration with the tiling its sweep picked. */
static void print_kernels(FILE *f, const pl_review_result *r, const pl_review_config *c)
{
    static const char *what[] = {"QKV", "output", "MLP up+gate", "MLP down", "attention", "all-reduce", "LM head"};
    fprintf(f, "kernels (per device, fastest tiling of each shape's sweep):\n");
    for (int i = 0; i < 14; i++) {
        if (c->job[i] < 0) continue;
        const pl_review_job *j = &r->jobs[c->job[i]];
        char t[32];
        fprintf(f, "  %-7s %-11s %10s  %s\n", i < 7 ? "prefill" : "decode", what[i % 7], ms(j->time_s, t, sizeof t),
                j->label);
    }
    fprintf(f, "\n");
}

static void print_best(FILE *f, const pl_review_brief *b, const pl_review_result *r)
{
    const pl_review_config *c = &r->configs[r->best];
    char t1[32], t2[32], t3[32], t4[32];
    int dpc = b->chip->devices_per_chip;
    long long devs = (long long)(c->chips * c->slices);
    char across[128] = "";
    if (c->slices > 1) /* pipeline stages over DCN (M14) */
        snprintf(across, sizeof across, " in each of %lld slices over DCN (pipeline stages of %lld layers)",
                 (long long)c->slices, (long long)(b->model->layers / c->slices));
    fprintf(f, "recommended: %lld device%s (%.1f chip%s of %s) as a 1 x %lld ring%s, TP %lld, weights %s, KV cache %s, "
            "batch %lld\n", devs, devs == 1 ? "" : "s", (double)devs / dpc, devs == dpc ? "" : "s", b->chip->name,
            (long long)c->chips, across, (long long)c->chips, pl_wdtype_name(c->wq), pl_wdtype_name(c->kvq),
            (long long)c->batch);
    fprintf(f, "  TTFT  %10s  (roofline %s; prefill %s + first decode step %s)\n", ms(c->ttft_s, t1, sizeof t1),
            ms(c->prefill.roof_s + c->decode.roof_s, t2, sizeof t2), ms(c->prefill.total_s, t3, sizeof t3),
            ms(c->decode.total_s, t4, sizeof t4));
    fprintf(f, "  TPOT  %10s  (roofline %s, at the average context %lld)\n", ms(c->tpot_s, t1, sizeof t1),
            ms(c->decode.roof_s, t2, sizeof t2), (long long)r->avg_context);
    char micro[96] = "";
    if (c->slices > 1)
        snprintf(micro, sizeof micro, ": %lld micro-batches of %lld, one in each stage", (long long)c->slices,
                 (long long)c->batch);
    fprintf(f, "  tokens/s/chip  %.0f  (%lld sequences every %.2f ms on %.1f chips%s)\n", c->tok_s_chip,
            (long long)(c->batch * c->slices), c->tpot_s * 1e3, (double)devs / dpc, micro);
    if (c->slices > 1)
        fprintf(f, "  between slices: %lld hand-off%s of the activations over DCN a step, %s a decode step, %s the "
                "prefill\n", (long long)(c->slices - 1), c->slices == 2 ? "" : "s", ms(c->decode.dcn_s, t1, sizeof t1),
                ms(c->prefill.dcn_s, t2, sizeof t2));
    fprintf(f, "  HBM per device: %.1f GB weights + %.1f GB KV cache + %.1f GB activations of %.1f GB\n",
            c->weight_bytes / 1e9, c->kv_bytes / 1e9, c->act_bytes / 1e9, c->hbm_bytes / 1e9);
    fprintf(f, "  decode step per layer: projections %s, paged attention %s, all-reduces %s; LM head %s\n",
            ms(c->decode.proj_s, t1, sizeof t1), ms(c->decode.attn_s, t2, sizeof t2),
            ms(c->decode.comm_s, t3, sizeof t3), ms(c->decode.head_s, t4, sizeof t4));
    fprintf(f, "  prefill per layer: projections %s, flash attention (causal) %s, all-reduces %s\n",
            ms(c->prefill.proj_s, t1, sizeof t1), ms(c->prefill.attn_s, t2, sizeof t2),
            ms(c->prefill.comm_s, t3, sizeof t3));
    fprintf(f, "bottleneck: %s\n", r->bottleneck);
    print_kernels(f, r, c);
}

/* A target as given, never shown as "0 ms": three significant digits in ms
 * from 1 ms (500 ms, 30.0 ms), pl_format_time's units below. */
static const char *target(double s, char *buf, size_t n)
{
    if (s < 1e-3) return pl_format_time(s, buf, n);
    snprintf(buf, n, "%.*f ms", s >= 0.1 ? 0 : s >= 0.01 ? 1 : 2, s * 1e3);
    return buf;
}

#define VERDICT_MAX 120 /* characters of a verdict before it stops at its first sentence */

/* Under a verdict, indented: the whole message of the kernel that had no
 * legal tiling (once per kernel shape: the rows after the first that share
 * it repeat its verdict only), or the whole reason when the verdict line
 * stopped at its first sentence. */
static void print_detail(FILE *f, const pl_review_result *r, const pl_review_config *c, const char *verdict,
                         char *shown)
{
    const char *text = c->reason;
    if (c->detail_job >= 0 && c->detail_job < r->n_jobs) {
        if (shown[c->detail_job]) return;
        shown[c->detail_job] = 1;
        text = r->jobs[c->detail_job].error;
    } else if (strlen(verdict) == strlen(text)) {
        return;
    }
    for (const char *p = text; *p;) {
        size_t len = strcspn(p, "\n");
        if (len) fprintf(f, "%9s%.*s\n", "", (int)len, p);
        p += len + (p[len] == '\n');
    }
}

enum { SHOWN_BEST = 10 }; /* configurations the text lists without --all */

/* The ten best, into pick (the recommendation, then those meeting the
 * targets, then the misses, each by tokens/s/chip); the count. Those with
 * no time (illegal, do not fit) are left to the verdict lines. */
static int best_ten(const pl_review_result *r, int *pick)
{
    int n = 0;
    for (int i = 0; i < r->n_configs; i++) {
        const pl_review_config *c = &r->configs[i];
        if (!(c->tok_s_chip > 0) && i != r->best) continue;
        int at = n < SHOWN_BEST ? n++ : SHOWN_BEST;
        while (at > 0) { /* insertion, best first: by verdict (the recommendation, those meeting the targets,
                          * then the misses), then by tokens/s/chip */
            const pl_review_config *p = &r->configs[pick[at - 1]];
            int pv = pick[at - 1] == r->best ? -1 : (int)p->verdict, cv = i == r->best ? -1 : (int)c->verdict;
            if (pv < cv || (pv == cv && p->tok_s_chip >= c->tok_s_chip)) break;
            if (at < SHOWN_BEST) pick[at] = pick[at - 1];
            at--;
        }
        if (at < SHOWN_BEST) pick[at] = i;
    }
    return n;
}

/* The rest, one line per kind of verdict: how many, and the first of them as an example. */
static void print_classes(FILE *f, const pl_review_result *r, const int *pick, int n_pick, char *shown)
{
    static const char *what[] = {"recommended", "fewer tokens/s/chip", "miss TPOT", "miss TTFT", "do not fit HBM",
                                 "illegal (no legal tiling)"};
    char *listed = calloc((size_t)r->n_configs + 1, 1);
    if (!listed) return;
    for (int k = 0; k < n_pick; k++) listed[pick[k]] = 1;
    int rest = 0;
    for (int v = PL_RV_SLOWER; v <= PL_RV_ILLEGAL; v++) {
        int count = 0, first = -1;
        for (int i = 0; i < r->n_configs; i++)
            if (!listed[i] && r->configs[i].verdict == (pl_review_verdict)v && count++ == 0) first = i;
        if (!count) continue;
        if (!rest++) fprintf(f, "the other %d configurations, by verdict (--all lists each):\n",
                             r->n_configs - n_pick);
        const pl_review_config *c = &r->configs[first];
        char e[sizeof c->reason];
        cli_first_sentence(c->reason, VERDICT_MAX, e, sizeof e);
        fprintf(f, "  %-26s %4d, e.g. %lld device%s, %s weights, batch %lld: %s\n", what[v], count,
                (long long)c->chips, c->chips == 1 ? "" : "s", pl_wdtype_name(c->wq), (long long)c->batch, e);
        if (shown) print_detail(f, r, c, e, shown); /* an illegal kernel's whole message, once */
    }
    free(listed);
}

void cli_review_print(FILE *f, const pl_review_brief *b, const pl_review_result *r, double wall_s, int all)
{
    char tt[32], tp[32];
    fprintf(f, "review: %s on %s (%.1f GB HBM at %.2f TB/s per device, %d device%s per chip); prompt %lld, "
            "context %lld; targets TTFT %s, TPOT %s\n", b->model->name, b->chip->name,
            (double)b->chip->hbm_bytes / 1e9, b->chip->hbm_bw / 1e12, b->chip->devices_per_chip,
            b->chip->devices_per_chip == 1 ? "" : "s", (long long)b->prompt, (long long)b->context,
            target(b->ttft_s, tt, sizeof tt), target(b->tpot_s, tp, sizeof tp));
    fprintf(f, "weighed %d configurations: %d kernel shapes, %d tilings simulated, in %.1f s\n\n", r->n_configs,
            r->n_jobs, r->kernel_runs, wall_s);
    if (r->best >= 0) print_best(f, b, r);
    else fprintf(f, "no configuration meets the targets and fits HBM: see the reasons below\n\n");
    int pp = 0; /* a column of pipeline stages only when more than one slice was weighed */
    for (int i = 0; i < b->n_slices; i++) pp |= b->slices[i] > 1;
    fprintf(f, "%7s %4s%s %7s %4s %6s %11s %11s %11s  %s\n", "devices", "TP", pp ? "   PP" : "", "weights", "KV",
            "batch", "TTFT", "TPOT", "tok/s/chip", "verdict");
    char *shown = calloc((size_t)r->n_jobs + 1, 1); /* the kernel shapes whose detail is printed */
    all |= r->best < 0; /* nothing meets the targets: every configuration's reason is the answer */
    int pick[SHOWN_BEST], n_pick = all ? r->n_configs : best_ten(r, pick);
    for (int k = 0; k < n_pick; k++) {
        int i = all ? k : pick[k];
        const pl_review_config *c = &r->configs[i];
        char t1[32], t2[32], tok[32], verdict[sizeof c->reason];
        snprintf(tok, sizeof tok, c->tok_s_chip > 0 ? "%.0f" : "-", c->tok_s_chip);
        cli_first_sentence(i == r->best ? "recommended" : c->reason, VERDICT_MAX, verdict, sizeof verdict);
        char stages[16] = "";
        if (pp) snprintf(stages, sizeof stages, " %4lld", (long long)c->slices);
        fprintf(f, "%7lld %4lld%s %7s %4s %6lld %11s %11s %11s  %s\n", (long long)(c->chips * c->slices),
                (long long)c->chips, stages, pl_wdtype_name(c->wq), pl_wdtype_name(c->kvq), (long long)c->batch,
                ms(c->ttft_s, t1, sizeof t1), ms(c->tpot_s, t2, sizeof t2), tok, verdict);
        if (i != r->best && shown) print_detail(f, r, c, verdict, shown);
    }
    if (!all && n_pick < r->n_configs) fputc('\n', f), print_classes(f, r, pick, n_pick, shown);
    free(shown);
}

static void json_parts(FILE *f, const char *name, const pl_review_parts *p)
{
    fprintf(f, "\"%s\": {\"proj_s\": ", name);
    cli_json_number(f, p->proj_s);
    fprintf(f, ", \"attn_s\": "), cli_json_number(f, p->attn_s);
    fprintf(f, ", \"comm_s\": "), cli_json_number(f, p->comm_s);
    fprintf(f, ", \"head_s\": "), cli_json_number(f, p->head_s);
    fprintf(f, ", \"embed_s\": "), cli_json_number(f, p->embed_s);
    fprintf(f, ", \"dcn_s\": "), cli_json_number(f, p->dcn_s);
    fprintf(f, ", \"total_s\": "), cli_json_number(f, p->total_s);
    fprintf(f, ", \"roofline_s\": "), cli_json_number(f, p->roof_s);
    fprintf(f, ", \"flops\": "), cli_json_number(f, p->flops);
    fprintf(f, ", \"bytes\": "), cli_json_number(f, p->bytes);
    fprintf(f, "}");
}

/* the recommended configuration's kernels with their tilings */
static void json_kernels(FILE *f, const pl_review_result *r, const pl_review_config *c)
{
    static const char *what[] = {"qkv", "output", "mlp_up_gate", "mlp_down", "attention", "allreduce", "lm_head"};
    fprintf(f, ", \"kernels\": [");
    for (int i = 0, n = 0; i < 14; i++) {
        if (c->job[i] < 0) continue;
        const pl_review_job *j = &r->jobs[c->job[i]];
        fprintf(f, "%s{\"step\": \"%s\", \"kernel\": \"%s\", \"time_s\": ", n++ ? ", " : "",
                i < 7 ? "prefill" : "decode", what[i % 7]);
        cli_json_number(f, j->time_s);
        fprintf(f, ", \"tiling\": "), pl_json_string(f, j->label);
        fprintf(f, "}");
    }
    fprintf(f, "]");
}

static void json_config(FILE *f, const pl_review_result *r, const pl_review_config *c, int best)
{
    char mesh[48];
    if (c->slices > 1) snprintf(mesh, sizeof mesh, "dcn:%lld x 1x%lld", (long long)c->slices, (long long)c->chips);
    else snprintf(mesh, sizeof mesh, "1x%lld", (long long)c->chips);
    fprintf(f, "{\"chips\": %lld, \"tp\": %lld, \"slices\": %lld, \"mesh\": \"%s\", \"weights\": \"%s\", "
            "\"kv\": \"%s\", \"batch\": %lld, \"verdict\": ", (long long)(c->chips * c->slices), (long long)c->chips,
            (long long)c->slices, mesh, pl_wdtype_name(c->wq), pl_wdtype_name(c->kvq), (long long)c->batch);
    pl_json_string(f, best ? "recommended" : pl_review_verdict_name(c->verdict));
    fprintf(f, ", \"reason\": "), pl_json_string(f, best ? "" : c->reason);
    fprintf(f, ", \"detail\": "), /* the whole message the one-line reason starts */
        pl_json_string(f, !best && c->detail_job >= 0 && c->detail_job < r->n_jobs ? r->jobs[c->detail_job].error : "");
    fprintf(f, ", \"ttft_s\": "), cli_json_number(f, c->ttft_s);
    fprintf(f, ", \"tpot_s\": "), cli_json_number(f, c->tpot_s);
    fprintf(f, ", \"tokens_per_s_per_chip\": "), cli_json_number(f, c->tok_s_chip);
    fprintf(f, ", \"weight_bytes\": "), cli_json_number(f, c->weight_bytes);
    fprintf(f, ", \"kv_bytes\": "), cli_json_number(f, c->kv_bytes);
    fprintf(f, ", \"act_bytes\": "), cli_json_number(f, c->act_bytes);
    fprintf(f, ", \"hbm_bytes\": "), cli_json_number(f, c->hbm_bytes);
    fprintf(f, ", "), json_parts(f, "prefill", &c->prefill);
    fprintf(f, ", "), json_parts(f, "decode", &c->decode);
    if (best == 1) json_kernels(f, r, c);
    fprintf(f, "}");
}

void cli_review_json(FILE *f, const pl_review_brief *b, const pl_review_result *r, double wall_s)
{
    fprintf(f, "{\"model\": "), pl_json_string(f, b->model->name);
    fprintf(f, ", \"chip\": "), pl_json_string(f, b->chip->name);
    fprintf(f, ", \"prompt\": %lld, \"context\": %lld, \"avg_context\": %lld, \"ttft_target_s\": ",
            (long long)b->prompt, (long long)b->context, (long long)r->avg_context);
    cli_json_number(f, b->ttft_s);
    fprintf(f, ", \"tpot_target_s\": "), cli_json_number(f, b->tpot_s);
    fprintf(f, ", \"kernel_shapes\": %d, \"tilings_simulated\": %d, \"wall_s\": ", r->n_jobs, r->kernel_runs);
    cli_json_number(f, wall_s);
    fprintf(f, ", \"bottleneck\": ");
    pl_json_string(f, r->best >= 0 ? r->bottleneck : "");
    fprintf(f, ", \"recommended\": ");
    if (r->best >= 0) json_config(f, r, &r->configs[r->best], 1);
    else fprintf(f, "null");
    fprintf(f, ", \"configs\": [");
    for (int i = 0; i < r->n_configs; i++) {
        fprintf(f, "%s\n  ", i ? "," : "");
        json_config(f, r, &r->configs[i], i == r->best ? 2 : 0); /* 2: no kernels again */
    }
    fprintf(f, "]}\n");
}
