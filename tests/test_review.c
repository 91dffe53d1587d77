/* tests/test_review.c: the design review's arithmetic (issue 16,
 * sim/tilesim_review.h) on small models: a decode step is the sum of its
 * kernels' simulated times and collectives, at the shard shapes tensor
 * parallelism gives; TPOT never beats the HBM roofline; a configuration
 * that cannot hold its KV cache is rejected with the bytes missing; the
 * per-chip weight dtype rule (T10); the choice. Model files: tests/test_review_model.c. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../examples/kernels/review_defs.h"

/* 2 layers, 8 query heads sharing 2 KV heads (a group of 4, padded to 8 in
 * the paged kernel), head 128, SwiGLU 512, vocabulary 1024. */
static const pl_model tiny = {.name = "tiny", .layers = 2, .d_model = 256, .heads = 8, .kv_heads = 2,
                              .head_dim = 128, .ffn = 512, .ffn_kind = PL_FFN_SWIGLU, .vocab = 1024, .params = 2.5e6};

static pl_review_brief brief_of(const pl_model *m, const char *chip, int64_t p, int64_t c)
{
    pl_review_brief b = {.model = m, .chip = pl_chip_find(chip), .prompt = p, .context = c, .ttft_s = 10,
                         .tpot_s = 10, .n_chips = 1, .chips = {1}, .n_quant = 1, .quant = {PL_W_BF16},
                         .n_batch = 1, .batch = {4}};
    return b;
}

static pl_review_result run_ok(const pl_review_brief *b)
{
    pl_review_kernels k = ex_review_kernels();
    pl_review_result r;
    char err[512];
    int rc = pl_review_run(b, &k, &r, err, sizeof err);
    cr_assert_eq(rc, PL_OK, "%s", err);
    return r;
}

/* The simulated time of job j's chosen tiling, run again on its own. */
static double rerun(const pl_review_job *j, const pl_chip *chip)
{
    pl_review_kernels k = ex_review_kernels();
    const pl_kernel_def *d = j->kind == 0 ? k.matmul : j->kind == 1 ? k.flash : k.paged;
    pl_options opt = {.chip_spec = chip, .cost_only = 1};
    pl_report rep;
    int rc = pl_kernel_run(d, j->values, &opt, &rep, NULL, NULL);
    cr_assert_eq(rc, PL_OK, "%s: %s", j->label, rep.error);
    return rep.time_s;
}

/* matmul job j is (M, N, K) at weight dtype w */
static void expect_mm(const pl_review_result *r, int j, int64_t m, int64_t n, int64_t k, int w, const char *what)
{
    cr_assert(j >= 0 && j < r->n_jobs, "%s: a job", what);
    const int64_t *d = r->jobs[j].dims;
    cr_expect(r->jobs[j].kind == 0 && d[0] == m && d[1] == n && d[2] == k && d[3] == w,
              "%s: (%lld, %lld, %lld) w%lld, want (%lld, %lld, %lld) w%d", what, (long long)d[0], (long long)d[1],
              (long long)d[2], (long long)d[3], (long long)m, (long long)n, (long long)k, w);
}

Test(review, a_decode_step_is_the_sum_of_its_kernels_and_collectives_at_the_shard_shapes)
{
    pl_review_brief b = brief_of(&tiny, "v5e", 256, 768);
    b.n_chips = 2, b.chips[0] = 1, b.chips[1] = 2;
    pl_review_result r = run_ok(&b);
    cr_assert_eq(r.n_configs, 2);
    cr_expect_eq(r.avg_context, (256 + 768) / 2, "TPOT's context is (P + C) / 2");
    for (int i = 0; i < 2; i++) {
        const pl_review_config *c = &r.configs[i];
        int64_t tp = c->chips, B = c->batch;
        cr_assert(c->verdict == PL_RV_BEST || c->verdict == PL_RV_SLOWER, "%lld: %s", (long long)tp, c->reason);
        const int *j = c->job + 7; /* the decode step's jobs: qkv, o, up, down, attn, ar, head */
        expect_mm(&r, j[0], B, (8 + 2 * 2) * 128 / tp, 256, PL_W_BF16, "QKV");
        expect_mm(&r, j[1], B, 256, 8 * 128 / tp, PL_W_BF16, "output");
        expect_mm(&r, j[2], B, 2 * 512 / tp, 256, PL_W_BF16, "up and gate");
        expect_mm(&r, j[3], B, 256, 512 / tp, PL_W_BF16, "down");
        expect_mm(&r, j[6], B, 1024 / tp, 256, PL_W_BF16, "LM head");
        const int64_t *pa = r.jobs[j[4]].dims;
        cr_expect(r.jobs[j[4]].kind == 2 && pa[0] == B * 2 / tp && pa[1] == 8 && pa[3] == r.avg_context,
                  "paged: %lld caches of %lld heads at %lld", (long long)pa[0], (long long)pa[1], (long long)pa[3]);
        double t[7];
        for (int i2 = 0; i2 < 7; i2++) t[i2] = i2 == 5 ? 0 : rerun(&r.jobs[j[i2]], b.chip);
        char err[256] = "";
        if (tp > 1) t[5] = ex_review_allreduce_s(b.chip, (int)tp, (double)B * 256 * 2, NULL, err, sizeof err);
        cr_assert(tp == 1 ? j[5] == -1 : t[5] > 0, "the all-reduce: %s", err);
        double embed = (double)B * 256 * 2 / b.chip->hbm_bw;
        double want = 2 * (t[0] + t[1] + t[2] + t[3] + t[4] + 2 * t[5]) + t[6] + embed;
        cr_expect(fabs(c->tpot_s - want) <= 1e-12 + 1e-9 * want, "TP %lld: TPOT %.9g, kernels add to %.9g",
                  (long long)tp, c->tpot_s, want);
        cr_expect(fabs(c->decode.comm_s - 2 * t[5]) <= 1e-15, "two all-reduces per layer (Megatron)");
    }
    pl_review_free(&r);
}

Test(review, tpot_never_beats_the_hbm_roofline)
{
    const pl_model *m = pl_model_find("llama3-8b");
    cr_assert(m);
    pl_review_brief b = brief_of(m, "v6e", 512, 2048);
    b.n_chips = 3, b.chips[0] = 1, b.chips[1] = 2, b.chips[2] = 4;
    b.n_quant = 2, b.quant[1] = PL_W_INT8;
    b.n_batch = 3, b.batch[0] = 1, b.batch[1] = 8, b.batch[2] = 32;
    pl_review_result r = run_ok(&b);
    int timed = 0;
    for (int i = 0; i < r.n_configs; i++) {
        const pl_review_config *c = &r.configs[i];
        if (c->tpot_s <= 0) continue;
        timed++;
        /* the bytes one decode step must read per device, from the model alone */
        double wb = c->wq == PL_W_BF16 ? 2 : 1, tp = (double)c->chips, D = 4096, L = 32;
        double w = L * (D * (32 + 16) * 128 / tp + 32 * 128 / tp * D + D * 2 * 14336 / tp + 14336 / tp * D) +
                   D * ceil(128256 / tp);
        double kv = (double)c->batch * r.avg_context * 2 * (8 / tp) * 128 * L * 2;
        cr_expect(fabs(c->decode.bytes - (w * wb + kv)) <= 1e-9 * c->decode.bytes, "%lld %s %lld: bytes %.6g vs %.6g",
                  (long long)c->chips, pl_wdtype_name(c->wq), (long long)c->batch, c->decode.bytes, w * wb + kv);
        double floor = (w * wb + kv) / b.chip->hbm_bw;
        cr_expect(c->tpot_s >= floor && c->decode.roof_s >= floor * (1 - 1e-12),
                  "TP %lld %s batch %lld: TPOT %.6g s beats the HBM roofline %.6g s", (long long)c->chips,
                  pl_wdtype_name(c->wq), (long long)c->batch, c->tpot_s, floor);
        cr_expect(c->ttft_s >= c->prefill.roof_s, "TTFT above its roofline too");
    }
    cr_expect(timed >= 6, "%d configurations timed", timed);
    pl_review_free(&r);
}

Test(review, a_configuration_that_cannot_hold_its_kv_cache_is_rejected_with_the_bytes_missing)
{
    /* llama3-8b int8 on v5e (16 GiB): 8.03 GB of weights; each 32k-token
     * sequence's KV cache is 32768 x 2 x 8 x 128 x 32 x 2 B = 4.29 GB */
    const pl_model *m = pl_model_find("llama3-8b");
    pl_review_brief b = brief_of(m, "v5e", 1024, 32768);
    b.quant[0] = PL_W_INT8;
    b.n_batch = 2, b.batch[0] = 1, b.batch[1] = 4;
    pl_review_result r = run_ok(&b);
    cr_assert_eq(r.n_configs, 2);
    cr_expect_neq(r.configs[0].verdict, PL_RV_NO_FIT, "one sequence fits: %s", r.configs[0].reason);
    const pl_review_config *c = &r.configs[1];
    cr_assert_eq(c->verdict, PL_RV_NO_FIT, "four do not: %s", c->reason);
    double kv = 4.0 * 32768 * 2 * 8 * 128 * 32 * 2, act = 2.0 * 1024 * (4096 + 2 * 14336) * 2;
    double missing = 8.03e9 + kv + act - 16.0 * 1024 * 1024 * 1024;
    char want[64];
    snprintf(want, sizeof want, "(%.1f GB missing)", missing / 1e9);
    cr_expect(fabs(c->kv_bytes - kv) < 1, "KV %.9g vs %.9g", c->kv_bytes, kv);
    cr_expect(strstr(c->reason, "does not fit HBM") && strstr(c->reason, want), "%s (want %s)", c->reason, want);
    cr_expect(c->tpot_s == 0 && c->job[0] == -1, "nothing timed for a configuration that does not fit");
    pl_review_free(&r);
}

Test(review, weight_dtypes_follow_the_chips_mxu_rule_T10)
{
    char why[160];
    cr_expect(!pl_review_wdtype_ok(pl_chip_find("v7x"), PL_W_INT8, why, sizeof why) && strstr(why, "T10"), "%s", why);
    cr_expect(pl_review_wdtype_ok(pl_chip_find("v7x"), PL_W_FP8, why, sizeof why));
    cr_expect(!pl_review_wdtype_ok(pl_chip_find("v5e"), PL_W_FP8, why, sizeof why) && strstr(why, "no fp8 rate"), "%s", why);
    cr_expect(pl_review_wdtype_ok(pl_chip_find("v5e"), PL_W_INT8, why, sizeof why));
    pl_review_brief b = brief_of(&tiny, "v7x", 256, 512);
    b.n_quant = 2, b.quant[1] = PL_W_INT8;
    b.n_chips = 2, b.chips[1] = 4; /* 4 does not divide the 2 KV heads */
    pl_review_result r = run_ok(&b);
    cr_assert_eq(r.n_configs, 4);
    cr_expect(r.configs[1].verdict == PL_RV_ILLEGAL && strstr(r.configs[1].reason, "no int8 path"), "%s",
              r.configs[1].reason);
    cr_expect(r.configs[2].verdict == PL_RV_ILLEGAL && strstr(r.configs[2].reason, "TP 4 does not divide"), "%s",
              r.configs[2].reason);
    cr_expect_eq(r.best, 0);
    pl_review_free(&r);
}

Test(review, the_best_has_the_most_tokens_per_chip_and_the_others_say_why_they_lost)
{
    pl_review_brief b = brief_of(&tiny, "v5e", 256, 512);
    b.n_batch = 3, b.batch[0] = 1, b.batch[1] = 8, b.batch[2] = 64;
    pl_review_result r = run_ok(&b);
    cr_assert_eq(r.best, 2, "the largest batch serves the most tokens here");
    cr_expect_eq(r.configs[0].verdict, PL_RV_SLOWER);
    cr_expect(strstr(r.configs[0].reason, "fewer tokens/s/chip"), "%s", r.configs[0].reason);
    cr_expect(strstr(r.bottleneck, "decode is ") && strstr(r.bottleneck, "GB of weights"), "%s", r.bottleneck);
    double tpot1 = r.configs[0].tpot_s;
    pl_review_free(&r);
    b.tpot_s = tpot1 * 1.0001; /* only batch 1 meets it */
    r = run_ok(&b);
    cr_expect_eq(r.best, 0);
    cr_expect(r.configs[2].verdict == PL_RV_MISS_TPOT && strstr(r.configs[2].reason, "misses TPOT"), "%s",
              r.configs[2].reason);
    pl_review_free(&r);
    b.ttft_s = 1e-9;
    r = run_ok(&b);
    cr_expect_eq(r.best, -1, "none meets a 1 ns TTFT");
    cr_expect(strstr(r.configs[0].reason, "misses TTFT"), "%s", r.configs[0].reason);
    pl_review_free(&r);
}

Test(review, a_bad_brief_is_refused_with_a_message)
{
    pl_review_kernels k = ex_review_kernels();
    pl_review_result r;
    char err[256];
    pl_review_brief b = brief_of(&tiny, "v5e", 512, 256);
    cr_expect_eq(pl_review_run(&b, &k, &r, err, sizeof err), PL_EINVAL);
    cr_expect(strstr(err, "context"), "%s", err);
    b = brief_of(&tiny, "v5e", 256, 512);
    b.n_batch = 0;
    cr_expect_eq(pl_review_run(&b, &k, &r, err, sizeof err), PL_EINVAL);
    b = brief_of(&tiny, "v5e", 256, 512);
    k.paged = &ex_def_review_matmul; /* a definition without the parameters the review sets */
    cr_expect_eq(pl_review_run(&b, &k, &r, err, sizeof err), PL_EINVAL);
    cr_expect(strstr(err, "has no parameter"), "%s", err);
    cr_expect_eq(pl_review_run(NULL, &k, &r, err, sizeof err), PL_EINVAL);
}

Test(review, a_shape_too_large_to_simulate_is_refused_not_run_for_hours)
{
    /* a prompt of 1 M tokens: every tiling of its causal flash attention (8 heads) has over 2^19 grid steps.
     * (A matmul that large no longer gets this far: its weights fit no HBM, see tests/test_review_fit.c.) */
    pl_review_brief b = brief_of(&tiny, "v5e", 1 << 20, 1 << 20);
    b.batch[0] = 1;
    pl_review_result r = run_ok(&b);
    cr_assert_eq(r.n_configs, 1);
    cr_expect_eq(r.configs[0].verdict, PL_RV_ILLEGAL, "%s", r.configs[0].reason);
    cr_expect(strstr(r.configs[0].reason, "no legal flash attention") &&
              strstr(r.configs[0].reason, "grid steps or pages"), "%s", r.configs[0].reason);
    cr_expect_eq(r.best, -1);
    pl_review_free(&r);
    b = brief_of(&tiny, "v5e", 256, 512);
    b.chips[0] = 512;
    pl_review_kernels k = ex_review_kernels();
    char err[256];
    cr_expect_eq(pl_review_run(&b, &k, &r, err, sizeof err), PL_EINVAL, "a 512-device ring is refused");
    cr_expect(strstr(err, "chips must be 1 to 256"), "%s", err);
}
