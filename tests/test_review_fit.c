/* tests/test_review_fit.c: a model whose kernels fit no configuration of
 * a review (issue 21: d_model 1 M, ffn 4 M was swept for 20 s and more) is
 * refused in closed form before any kernel is simulated: pl_review_run
 * returns PL_EINVAL naming the kernel, the dimensions and the chip's limit,
 * and its progress callback is never called (no sweep started); `tilesim
 * review` exits 2 with that message and prints no table. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../examples/kernels/review_defs.h"
#include "run.h"

static int progress_calls;

static void count_progress(int done, int total, void *user)
{
    (void)done, (void)total, (void)user;
    progress_calls++;
}

/* pl_review_run of m on v5e (TP 1 and 8, bf16 and int8, batch 1) with a progress counter. */
static int review(const pl_model *m, int64_t prompt, char *err, size_t n)
{
    pl_review_brief b = {.model = m, .chip = pl_chip_find("v5e"), .prompt = prompt, .context = 2 * prompt,
                         .ttft_s = 10, .tpot_s = 10, .n_chips = 2, .chips = {1, 8}, .n_quant = 2,
                         .quant = {PL_W_BF16, PL_W_INT8}, .n_batch = 1, .batch = {1}};
    pl_review_kernels k = ex_review_kernels();
    k.progress = count_progress;
    progress_calls = 0;
    pl_review_result r;
    int rc = pl_review_run(&b, &k, &r, err, n);
    if (rc == PL_OK) pl_review_free(&r);
    return rc;
}

/* params is a count the model file states: here far below what the shapes
 * imply, so the per-configuration HBM check (params x bytes / TP) let it through to the sweeps */
static const pl_model wide = {.name = "wide", .layers = 1, .d_model = 1 << 20, .heads = 8, .kv_heads = 8,
                              .head_dim = 128, .ffn = 1 << 22, .ffn_kind = PL_FFN_GELU, .vocab = 1024,
                              .params = 1e6};

Test(review_fit, a_model_whose_weights_fit_no_hbm_is_refused_before_any_sweep)
{
    char err[1024];
    cr_expect_eq(review(&wide, 256, err, sizeof err), PL_EINVAL, "%s", err);
    cr_expect(strstr(err, "wide cannot run on v5e in any configuration weighed") &&
              strstr(err, "MLP up+gate matmul's weights (d_model 1048576 x ffn 4194304 / TP 8, int8 at 1 byte") &&
              strstr(err, "need 512.0 GiB per device > v5e's 16.0 GiB of HBM; no preset has that much (the most: "
                          "v7x's 96.0 GiB)"), "%s", err);
    cr_expect_eq(progress_calls, 0, "refused before simulating: no sweep reported progress");
}

Test(review_fit, a_head_dim_whose_smallest_attention_blocks_fit_no_vmem_is_refused_before_any_sweep)
{
    static const pl_model deep = {.name = "deep-heads", .layers = 1, .d_model = 256, .heads = 8, .kv_heads = 8,
                                  .head_dim = 65536, .ffn = 512, .ffn_kind = PL_FFN_GELU, .vocab = 1024,
                                  .params = 1e6};
    char err[1024];
    cr_expect_eq(review(&deep, 256, err, sizeof err), PL_EINVAL, "%s", err);
    cr_expect(strstr(err, "flash attention's smallest blocks (q, k, v and o of 256 rows x head_dim 65536") &&
              strstr(err, "need 128.0 MiB per device > v5e's 16.0 MiB of scoped VMEM limit"), "%s", err);
    cr_expect_eq(progress_calls, 0, "refused before simulating: no sweep reported progress");
}

Test(review_fit, tilesim_review_refuses_the_wide_model_with_exit_2_and_no_table)
{
    char path[64];
    th_temp_file(path, "name = wide\nlayers = 2\nd_model = 1048576\nheads = 8192\nkv_heads = 8\nhead_dim = 128\n"
                       "ffn = 4194304\nffn_kind = swiglu\nvocab = 32000\nparams = 3.08e13\n");
    th_run r = TH_RUN("review", "--model", path, "--prompt", "512", "--context", "1024", "--ttft", "500ms",
                      "--tpot", "30ms");
    cr_expect_eq(r.status, 2, "%s%s", r.out, r.err);
    cr_expect(strstr(r.err, "tilesim review: --model ") &&
              strstr(r.err, "wide cannot run on v5e in any configuration weighed: the QKV matmul's weights "
                            "(d_model 1048576 x (heads 8192 + 2 x kv_heads 8) x head_dim 128 / TP 8, int8") &&
              strstr(r.err, "> v5e's 16.0 GiB of HBM"), "%s", r.err);
    cr_expect_eq(r.out[0], '\0', "nothing weighed, no table: %s", r.out);
    th_run_free(&r);
    unlink(path);
}
