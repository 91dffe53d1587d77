/* tests/test_review_cli.c: `tilesim review` (issue 16): the recommendation
 * and its bottleneck sentence, the JSON (parsed with jansson) agreeing with
 * the choice, exit codes (0 a recommendation, 1 none, 2 a bad command
 * line, each with a message naming what is wrong). This build's command
 * (tests/run.h). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run.h"

#define BRIEF8B "review", "--model", "llama3-8b", "--chip", "v6e", "--prompt", "1024", "--context", "4096", \
                "--ttft", "2s", "--tpot", "50ms", "--chips", "1,2", "--batch", "1,8,64"

/* issue 24: the table lists the ten best; the rest are one line per verdict, and --all lists them all */
static int table_rows(const char *out)
{
    int n = 0;
    const char *p = strstr(out, "tok/s/chip  verdict\n");
    for (p = p ? strchr(p, '\n') + 1 : NULL; p && *p && *p != '\n'; p = strchr(p, '\n') + 1)
        n += p[0] == ' ' && p[6] >= '0' && p[6] <= '9'; /* a row starts with the right-aligned device count */
    return n;
}

Test(review_cli, the_table_shows_the_ten_best_and_one_line_per_other_verdict)
{
    th_run r = TH_RUN(BRIEF8B);
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_expect_eq(table_rows(r.out), 10, "%s", r.out);
    cr_expect(strstr(r.out, "the other 26 configurations, by verdict (--all lists each):"), "%s", r.out);
    th_run_free(&r);
    r = TH_RUN(BRIEF8B, "--all");
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_expect_eq(table_rows(r.out), 36, "--all: every configuration weighed: %s", r.out);
    cr_expect(!strstr(r.out, "the other "), "%s", r.out);
    th_run_free(&r);
}

Test(review_cli, the_text_names_the_recommendation_its_bottleneck_and_every_configuration)
{
    th_run r = TH_RUN(BRIEF8B);
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "recommended: ") && strstr(r.out, "as a 1 x "), "%s", r.out);
    cr_expect(strstr(r.out, "bottleneck: decode is ") && strstr(r.out, "GB of KV cache per device at"), "%s", r.out);
    cr_expect(strstr(r.out, "TTFT ") && strstr(r.out, "(roofline ") && strstr(r.out, "tokens/s/chip"), "%s", r.out);
    cr_expect(strstr(r.out, "weighed 36 configurations"),
              "2 TP x 2 dtypes (bf16, int8) x 3 KV caches (bf16, int8, fp8) x 3 batches: %s", r.out);
    cr_expect(strstr(r.out, "fewer tokens/s/chip"), "%s", r.out);
    cr_expect(strstr(r.err, "review: [") == NULL, "no progress bar when stderr is not a terminal: %s", r.err);
    /* issue 24: the kernels' weight dtype by name, as every dtype parameter prints (not "wdtype=1") */
    cr_expect(strstr(r.out, "wdtype=i8") || strstr(r.out, "wdtype=bf16"), "%s", r.out);
    cr_expect(!strstr(r.out, "wdtype=0") && !strstr(r.out, "wdtype=1") && !strstr(r.out, "wdtype=2"), "%s", r.out);
    th_run_free(&r);
}

Test(review_cli, json_parses_and_the_recommended_one_has_the_most_tokens_per_chip)
{
    th_run r = TH_RUN(BRIEF8B, "--json");
    cr_assert_eq(r.status, 0, "%s", r.err);
    json_error_t e;
    json_t *j = json_loads(r.out, JSON_REJECT_DUPLICATES, &e);
    cr_assert(j, "line %d: %s", e.line, e.text);
    json_t *best = json_object_get(j, "recommended"), *configs = json_object_get(j, "configs"), *c;
    cr_assert(json_is_object(best) && json_is_array(configs));
    cr_expect_eq(json_array_size(configs), 36);
    cr_expect_eq(json_integer_value(json_object_get(j, "avg_context")), (1024 + 4096) / 2);
    double top = json_number_value(json_object_get(best, "tokens_per_s_per_chip"));
    size_t i;
    int recommended = 0;
    json_array_foreach(configs, i, c) {
        const char *v = json_string_value(json_object_get(c, "verdict"));
        cr_assert(v);
        recommended += strcmp(v, "recommended") == 0;
        if (strcmp(v, "fewer tokens/s/chip") == 0)
            cr_expect(json_number_value(json_object_get(c, "tokens_per_s_per_chip")) <= top);
        json_t *d = json_object_get(c, "decode");
        if (json_is_object(d) && json_number_value(json_object_get(c, "tpot_s")) > 0)
            cr_expect(json_number_value(json_object_get(c, "tpot_s")) >=
                      json_number_value(json_object_get(d, "roofline_s")), "TPOT above its roofline");
    }
    cr_expect_eq(recommended, 1);
    /* its decode kernels add up to its TPOT: 32 layers of projections, attention and two all-reduces, plus
     * the LM head and the embedding gather */
    json_t *kernels = json_object_get(best, "kernels"), *kk;
    double layer = 0, head = 0;
    json_array_foreach(kernels, i, kk) {
        const char *step = json_string_value(json_object_get(kk, "step"));
        const char *what = json_string_value(json_object_get(kk, "kernel"));
        double t = json_number_value(json_object_get(kk, "time_s"));
        if (strcmp(step, "decode") != 0) continue;
        if (strcmp(what, "lm_head") == 0) head += t;
        else layer += strcmp(what, "allreduce") == 0 ? 2 * t : t;
    }
    double embed = json_number_value(json_object_get(json_object_get(best, "decode"), "embed_s"));
    double tpot = json_number_value(json_object_get(best, "tpot_s")), sum = 32 * layer + head + embed;
    cr_expect(tpot > 0 && sum > 0.999999 * tpot && sum < 1.000001 * tpot, "kernels %.9g vs TPOT %.9g", sum, tpot);
    cr_expect(strstr(json_string_value(json_object_get(j, "bottleneck")), "decode is "));
    json_decref(j);
    th_run_free(&r);
}

Test(review_cli, no_configuration_meeting_the_targets_exits_1)
{
    th_run r = TH_RUN("review", "--model", "llama3-8b", "--chip", "v5e", "--prompt", "1024", "--context", "2048",
                      "--ttft", "1us", "--tpot", "50ms", "--chips", "1", "--batch", "1,2");
    cr_expect_eq(r.status, 1, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "no configuration meets the targets") && strstr(r.out, "misses TTFT"), "%s", r.out);
    th_run_free(&r);
}

Test(review_cli, a_model_file_is_read_and_its_errors_name_the_line)
{
    char path[64];
    th_temp_file(path, "name = small\nlayers = 2\nd_model = 256\nheads = 8\nkv_heads = 2\nhead_dim = 128\n"
                       "ffn = 512\nffn_kind = gelu\nvocab = 1024\nparams = 2.5M\n");
    th_run r = TH_RUN("review", "--model", path, "--prompt", "256", "--context", "512", "--ttft", "1s", "--tpot",
                      "1s", "--batch", "1,4", "--chips", "1,2");
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "review: small on v5e"), "%s", r.out);
    th_run_free(&r);
    th_temp_file(path, "layers = 2\nd_model = lots\n");
    r = TH_RUN("review", "--model", path, "--prompt", "256", "--context", "512", "--ttft", "1s", "--tpot", "1s");
    cr_expect_eq(r.status, 2);
    char want[128];
    snprintf(want, sizeof want, "%s:2: d_model: 'lots'", path);
    cr_expect(strstr(r.err, want), "%s", r.err);
    th_run_free(&r);
    unlink(path);
}

/* An FFN narrower than the TP degree left every device 0 columns (a
 * division by zero, SIGFPE): such a degree is refused by name. */
Test(review_cli, a_tp_degree_that_does_not_divide_the_ffn_is_illegal_not_a_crash)
{
    char path[64];
    th_temp_file(path, "name = tiny\nlayers = 1\nd_model = 64\nheads = 8\nkv_heads = 8\nhead_dim = 8\nffn = 4\n"
                       "ffn_kind = gelu\nvocab = 100\nparams = 25000\n"); /* what its sizes give */
    th_run r = TH_RUN("review", "--model", path, "--prompt", "16", "--context", "32", "--ttft", "1s", "--tpot", "1s",
                      "--chips", "1,8", "--batch", "1");
    cr_expect_eq(r.status, 0, "TP 1 serves it: %s%s", r.out, r.err);
    cr_expect(strstr(r.out, "illegal: TP 8 does not divide the 4 FFN columns"), "%s", r.out);
    th_run_free(&r);
    unlink(path);
}

Test(review_cli, bad_command_lines_say_what_and_exit_2)
{
    static const struct {
        const char *model, *ttft, *chip, *want;
    } cases[] = {
        {"gpt-9", "1s", "v5e", "--model 'gpt-9': not a preset (llama3-70b, llama3-8b) nor a file path"},
        {"llama3-8b", "500", "v5e", "--ttft '500': want a time from 1us to an hour (3600s) with a unit"},
        {"llama3-8b", "-1s", "v5e", "--ttft '-1s': want"},
        {"llama3-8b", "2h", "v5e", "--ttft '2h': want"},
        {"llama3-8b", "1s", "v9", "v9"},
        {"./none.model", "1s", "v5e", "./none.model: cannot open"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        th_run r = TH_RUN("review", "--model", cases[i].model, "--chip", cases[i].chip, "--prompt", "8", "--context",
                          "8", "--ttft", cases[i].ttft, "--tpot", "1s");
        cr_expect_eq(r.status, 2, "case %zu: %s", i, r.err);
        cr_expect(strstr(r.err, cases[i].want), "case %zu: got %s", i, r.err);
        th_run_free(&r);
    }
    th_run m = TH_RUN("review", "--prompt", "8", "--context", "8", "--ttft", "1s", "--tpot", "1s");
    cr_expect(m.status == 2 && strstr(m.err, "missing --model"), "%s", m.err);
    th_run_free(&m);
    th_run r = TH_RUN("review", "--model", "llama3-8b", "--prompt", "8", "--context", "4", "--ttft", "1s", "--tpot",
                      "1s");
    cr_expect(r.status == 2 && strstr(r.err, "--context 4 is shorter than --prompt 8"), "%s", r.err);
    th_run_free(&r);
    r = TH_RUN("review", "--model", "llama3-8b", "--prompt", "8", "--context", "8", "--ttft", "1s", "--tpot", "1s",
               "--quant", "bf16,int4");
    cr_expect(r.status == 2 && strstr(r.err, "--quant 'bf16,int4': want a list of bf16, int8, fp8"), "%s", r.err);
    th_run_free(&r);
    r = TH_RUN("help", "review");
    cr_expect(r.status == 0 && strstr(r.out, "--ttft T, --tpot T"), "%s", r.out);
    th_run_free(&r);
}

/* issue 26 (rule M14): 70B in bf16 does not fit a v5e TP ring of 8 (17.6 GB
 * of weights a device against 17.2 GB of HBM), and TP stops at the 8 KV
 * heads; split by layers over 2 slices joined by DCN it fits, and the
 * review recommends that, with the activations' hand-off between the
 * stages in its time. */
#define BRIEF70B_V5E "review", "--model", "llama3-70b", "--chip", "v5e", "--prompt", "2048", "--context", "4096", \
                     "--ttft", "2s", "--tpot", "100ms", "--quant", "bf16", "--kv", "bf16", "--batch", "1,8,32"

Test(review_cli, a_model_one_slice_cannot_hold_is_placed_across_slices)
{
    th_run r = TH_RUN(BRIEF70B_V5E);
    cr_expect_eq(r.status, 1, "one slice: nothing fits: %s%s", r.out, r.err);
    cr_expect(strstr(r.out, "17.6 GB of weights"), "%s", r.out);
    th_run_free(&r);
    r = TH_RUN(BRIEF70B_V5E, "--slices", "1,2,3,4", "--json");
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    json_error_t e;
    json_t *root = json_loads(r.out, 0, &e), *best = json_object_get(root, "recommended");
    cr_assert(root && best, "%s", r.out);
    cr_expect_eq(json_integer_value(json_object_get(best, "slices")), 2);
    cr_expect_eq(json_integer_value(json_object_get(best, "tp")), 8);
    cr_expect_eq(json_integer_value(json_object_get(best, "chips")), 16);
    cr_expect_str_eq(json_string_value(json_object_get(best, "mesh")), "dcn:2 x 1x8");
    double w = json_number_value(json_object_get(best, "weight_bytes"));
    cr_expect(w > 8.7e9 && w < 8.9e9, "half of 17.6 GB a device: %g", w);
    json_t *decode = json_object_get(best, "decode");
    double dcn = json_number_value(json_object_get(decode, "dcn_s"));
    /* one hand-off of 32 x 8192 bf16 rows a device, 8 devices on a v5e host's 25 GB/s NICs, after 10 us */
    double want = 10e-6 + 8.0 * 32 * 8192 * 2 / 25e9;
    cr_expect(fabs(dcn - want) < 1e-9, "decode hand-off %g s, closed form %g s", dcn, want);
    /* 2 micro-batches of the batch in flight, one a stage: 2 x batch tokens every TPOT on 2 x 8 chips, and
     * each device holds its 40 layers' KV cache for both (as one slice's 80 layers for one batch) */
    double tpot = json_number_value(json_object_get(best, "tpot_s")), tok = json_number_value(json_object_get(best, "tokens_per_s_per_chip"));
    int64_t batch = json_integer_value(json_object_get(best, "batch"));
    cr_expect(fabs(tok - 2.0 * (double)batch / tpot / 16) < 1e-6 * tok, "tok/s/chip %g, batch %lld, TPOT %g", tok,
              (long long)batch, tpot);
    double kv = json_number_value(json_object_get(best, "kv_bytes"));
    double kv_want = (double)batch * 4096 * 2 * 1 * 128 * 80 * 2; /* 8 KV heads / TP 8, head_dim 128, bf16 */
    cr_expect(fabs(kv / kv_want - 1) < 1e-9, "KV %g bytes a device, want %g", kv, kv_want);
    size_t i;
    json_t *c;
    int illegal = 0;
    json_array_foreach(json_object_get(root, "configs"), i, c)
        if (json_integer_value(json_object_get(c, "slices")) == 3)
            illegal += strstr(json_string_value(json_object_get(c, "reason")), "do not divide the 80 layers") != NULL;
    cr_expect_gt(illegal, 0, "3 stages of 80 layers are refused, with the reason");
    json_decref(root);
    th_run_free(&r);
    r = TH_RUN(BRIEF70B_V5E, "--slices", "2");
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "as a 1 x 8 ring in each of 2 slices over DCN"), "%s", r.out);
    cr_expect(strstr(r.out, "between slices: 1 hand-off of the activations over DCN a step"), "%s", r.out);
    cr_expect(strstr(r.out, "2 micro-batches of"), "%s", r.out);
    th_run_free(&r);
    r = TH_RUN(BRIEF70B_V5E, "--slices", "17");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "--slices"), "%s", r.err);
    th_run_free(&r);
}

/* A --quant list the chip serves none of is a bad option (exit 2 naming it), not 104 rows each saying
 * "no int8 path" and exit 1; a list with one it serves weighs that one. */
Test(review_cli, a_quant_list_the_chip_serves_none_of_is_refused)
{
    th_run r = TH_RUN("review", "--model", "llama3-8b", "--chip", "v7x", "--prompt", "1024", "--context", "4096",
                      "--ttft", "1s", "--tpot", "50ms", "--quant", "int8", "--batch", "8", "--chips", "1");
    cr_expect_eq(r.status, 2, "%s", r.err);
    cr_expect(strstr(r.err, "--quant int8") && strstr(r.err, "no int8 path") && strstr(r.err, "T10"), "%s", r.err);
    th_run_free(&r);
    r = TH_RUN("review", "--model", "llama3-8b", "--chip", "v7x", "--prompt", "1024", "--context", "4096", "--ttft",
               "1s", "--tpot", "50ms", "--quant", "int8,fp8", "--batch", "8", "--chips", "1");
    cr_expect_neq(r.status, 2, "%s", r.err);
    th_run_free(&r);
}
