/* tests/test_review_verdict.c: a review verdict is one line, never cut
 * mid-word, with the whole message below it (issue 21: a configuration
 * whose flash attention had no tiling within VMEM printed "...or use
 * smaller blocks:" and then "  q  2 x 4194304 b" on a line of its own).
 * The model: head_dim 4096, whose flash blocks need 42.5 MB of VMEM for
 * 16 MiB of scoped limit on v5e (more than pl_review_check's lower bound,
 * so the sweep finds it). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../examples/kernels/review_defs.h"
#include "run.h"

static const pl_model heads4k = {.name = "widehead", .layers = 1, .d_model = 1024, .heads = 8, .kv_heads = 8,
                                 .head_dim = 4096, .ffn = 1024, .ffn_kind = PL_FFN_GELU, .vocab = 1024,
                                 .params = 1e8};

#define MODEL_FILE "name = widehead\nlayers = 1\nd_model = 1024\nheads = 8\nkv_heads = 8\nhead_dim = 4096\n" \
                   "ffn = 1024\nffn_kind = gelu\nvocab = 1024\nparams = 1e8\n"

Test(review_verdict, the_reason_is_one_line_of_whole_words_and_its_job_keeps_the_whole_message)
{
    pl_review_brief b = {.model = &heads4k, .chip = pl_chip_find("v5e"), .prompt = 512, .context = 1024,
                         .ttft_s = 1, .tpot_s = 1, .n_chips = 1, .chips = {1}, .n_quant = 1, .quant = {PL_W_BF16},
                         .n_batch = 1, .batch = {1}};
    pl_review_kernels k = ex_review_kernels();
    pl_review_result r;
    char err[512];
    cr_assert_eq(pl_review_run(&b, &k, &r, err, sizeof err), PL_OK, "%s", err);
    const pl_review_config *c = &r.configs[0];
    cr_assert_eq(c->verdict, PL_RV_ILLEGAL, "%s", c->reason);
    cr_expect(!strchr(c->reason, '\n'), "one line: %s", c->reason);
    cr_expect(strstr(c->reason, "illegal: no legal flash attention: VMEM budget exceeded: 42467328 bytes") &&
              strstr(c->reason, "or use smaller blocks") && c->reason[strlen(c->reason) - 1] == 's',
              "the whole first line, without its ':': %s", c->reason);
    cr_assert(c->detail_job >= 0 && c->detail_job < r.n_jobs);
    const char *whole = r.jobs[c->detail_job].error;
    cr_expect(strstr(whole, "\n  q            2 x 4194304 bytes = 8388608\n") &&
              strstr(whole, "\n  acc          1 x 8388608 bytes = 8388608 (scratch)"), "every buffer: %s", whole);
    pl_review_free(&r);
}

/* Each line of text after the row of a verdict, up to the next row: indented, and a whole buffer line. */
static void expect_details(const char *p, int *buffers)
{
    while (*p && strncmp(p, "         ", 9) == 0) {
        size_t len = strcspn(p, "\n");
        char line[512], name[32], tail[32] = "";
        snprintf(line, sizeof line, "%.*s", (int)len, p);
        int count, used = 0;
        long long bytes, total;
        if (sscanf(line, " %31s %d x %lld bytes = %lld%n", name, &count, &bytes, &total, &used) == 4) {
            snprintf(tail, sizeof tail, "%s", line + used);
            cr_expect(count * bytes == total && (!*tail || strcmp(tail, " (scratch)") == 0), "a whole line: %s",
                      line);
            ++*buffers;
        } else {
            cr_expect(strstr(line, "VMEM budget exceeded: ") && strstr(line, "or use smaller blocks:"),
                      "the message's first line: %s", line);
        }
        p += len + (p[len] == '\n');
    }
}

Test(review_verdict, tilesim_review_prints_each_verdict_on_one_line_and_the_detail_below)
{
    char path[64];
    th_temp_file(path, MODEL_FILE);
    th_run r = TH_RUN("review", "--model", path, "--prompt", "512", "--context", "1024", "--ttft", "1s", "--tpot",
                      "1s", "--chips", "1", "--batch", "1", "--quant", "bf16,int8", "--kv", "bf16");
    cr_expect_eq(r.status, 1, "nothing is legal: %s%s", r.out, r.err);
    int rows = 0, buffers = 0;
    for (const char *p = strstr(r.out, "\n      1    1 "); p; p = strstr(p, "\n      1    1 ")) {
        p++;
        size_t len = strcspn(p, "\n");
        char row[512];
        snprintf(row, sizeof row, "%.*s", (int)len, p);
        cr_expect(strstr(row, "  illegal: no legal flash attention: VMEM budget exceeded: 42467328 bytes of "
                              "buffers over the scoped limit of 16777216 bytes on v5e (rule M4)") &&
                  strcmp(row + strlen(row) - 9, "(rule M4)") == 0,
                  "the verdict, to its first sentence, on the row: %s", row);
        rows++;
        expect_details(p + len + (p[len] == '\n'), &buffers);
    }
    cr_expect_eq(rows, 2, "a row per configuration: %s", r.out);
    cr_expect_eq(buffers, 7, "the 4 blocks and 3 scratch buffers (m, l, acc) of flash attention, once: %s", r.out);
    th_run_free(&r);
    r = TH_RUN("review", "--model", path, "--prompt", "512", "--context", "1024", "--ttft", "1s", "--tpot", "1s",
               "--chips", "1", "--batch", "1", "--json");
    json_error_t e;
    json_t *j = json_loads(r.out, 0, &e);
    cr_assert(j, "line %d: %s", e.line, e.text);
    const char *detail = json_string_value(json_object_get(json_array_get(json_object_get(j, "configs"), 0), "detail"));
    cr_expect(detail && strstr(detail, "or use smaller blocks:\n  q ") && strstr(detail, "(scratch)"), "%s",
              detail ? detail : "(none)");
    json_decref(j);
    th_run_free(&r);
    unlink(path);
}
