/* tests/test_flash_attention.c: the flash-attention kernel of
 * examples/kernels/flash_attention.h against its OpenBLAS reference, over
 * square, ragged (bk not dividing the kv length, bq not dividing the query
 * length), causal and multi-head shapes, in f32, bf16 and f16, with the
 * checks on: every case must PASS with no findings (V1, V3, P4). Then what
 * the grid implies: MXU work over the unmasked blocks only, and causal steps
 * above the diagonal copying nothing (P2).
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

#include "../examples/kernels/flash_attention.h"
#include "../kernel/pallas.h"
#include "../sim/tilesim.h"

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Run cfg with the checks on and assert PASS and no findings; rep gets the report. */
static void fa_run(const fa_config *cfg, pl_report *rep)
{
    fa_params params;
    pl_call call;
    cr_assert_eq(fa_call(&call, &params, cfg), PL_OK);
    pl_array args[3], out;
    cr_assert_eq(fa_inputs(cfg, args, &out, 7), PL_OK, "out of host memory");
    int rc = pl_pallas_call(&call, args, &out, NULL, rep);
    cr_assert_eq(rc, PL_OK, "q %lld kv %lld d %lld (%lld, %lld) %s%s: %s", (long long)cfg->sq, (long long)cfg->skv,
                 (long long)cfg->d, (long long)cfg->bq, (long long)cfg->bk, pl_dtype_name(cfg->dtype),
                 cfg->causal ? " causal" : "", rep->error);
    pl_check chk;
    rc = fa_check(cfg, args, &out, &chk, NULL);
    cr_assert_neq(rc, PL_ENOMEM);
    cr_assert_eq(chk.verdict, PL_PASS,
                 "q %lld kv %lld d %lld (%lld, %lld) %s%s: %s, max abs err %.3g = %.3g of the tolerance, worst at "
                 "(%lld, %lld), %lld NaN",
                 (long long)cfg->sq, (long long)cfg->skv, (long long)cfg->d, (long long)cfg->bq, (long long)cfg->bk,
                 pl_dtype_name(cfg->dtype), cfg->causal ? " causal" : "", pl_verdict_name(chk.verdict),
                 chk.max_abs_err, chk.norm_err, (long long)chk.worst_row, (long long)chk.worst_col,
                 (long long)chk.n_nan);
    cr_assert_eq(rep->n_findings, 0, "%d findings; the first: %s", rep->n_findings,
                 rep->n_findings ? rep->findings[0].msg : "");
    fa_free(args, &out);
}

/* The MXU work of a run: q @ k^T and p @ v over every block the kernel does
 * not skip, each sliced to the rows and columns inside the arrays. */
static double want_mxu_flops(const fa_config *c)
{
    double f = 0;
    for (int64_t qi = 0; qi < cdiv(c->sq, c->bq); qi++)
        for (int64_t kj = 0; kj < cdiv(c->skv, c->bk); kj++) {
            int64_t q0 = qi * c->bq, k0 = kj * c->bk;
            int64_t rows = c->sq - q0 < c->bq ? c->sq - q0 : c->bq, cols = c->skv - k0 < c->bk ? c->skv - k0 : c->bk;
            if (c->causal && k0 > q0 + rows - 1) continue; /* above the diagonal: skipped */
            f += 2 * 2.0 * (double)rows * (double)cols * (double)c->d;
        }
    return f * (double)(c->heads ? c->heads : 1);
}

static void fa_case(fa_config cfg)
{
    pl_report rep;
    fa_run(&cfg, &rep);
    double want = want_mxu_flops(&cfg);
    cr_expect_eq(rep.mxu_flops, want, "mxu_flops %.6g, want %.6g", rep.mxu_flops, want);
    cr_expect_gt(rep.vpu_flops, 0);
    int64_t steps = (cfg.heads ? cfg.heads : 1) * cdiv(cfg.sq, cfg.bq) * cdiv(cfg.skv, cfg.bk);
    cr_expect_eq(rep.steps, steps);
    /* o (operand 3) goes to HBM once per q block: the kv axis keeps it in VMEM (P3) */
    cr_expect_eq(rep.op[3].writebacks, (cfg.heads ? cfg.heads : 1) * cdiv(cfg.sq, cfg.bq));
}

/* ---- shapes ------------------------------------------------------------------------------ */

Test(flash_attention, f32_square_512_d128_blocks_128)
{
    fa_case((fa_config){.sq = 512, .skv = 512, .d = 128, .bq = 128, .bk = 128, .dtype = PL_F32});
}

Test(flash_attention, bf16_square_512_d128_blocks_128)
{
    fa_case((fa_config){.sq = 512, .skv = 512, .d = 128, .bq = 128, .bk = 128, .dtype = PL_BF16});
}

Test(flash_attention, f32_ragged_kv_300)
{
    fa_case((fa_config){.sq = 512, .skv = 300, .d = 128, .bq = 128, .bk = 128, .dtype = PL_F32});
}

Test(flash_attention, bf16_ragged_kv_300)
{
    fa_case((fa_config){.sq = 512, .skv = 300, .d = 128, .bq = 128, .bk = 128, .dtype = PL_BF16});
}

Test(flash_attention, f32_ragged_q_and_kv_unequal_blocks_d64)
{
    fa_case((fa_config){.sq = 300, .skv = 520, .d = 64, .bq = 64, .bk = 256, .dtype = PL_F32});
}

Test(flash_attention, f32_kv_shorter_than_one_block)
{
    fa_case((fa_config){.sq = 256, .skv = 40, .d = 128, .bq = 128, .bk = 128, .dtype = PL_F32});
}

Test(flash_attention, f32_causal_512)
{
    fa_case((fa_config){.sq = 512, .skv = 512, .d = 128, .bq = 128, .bk = 128, .causal = 1, .dtype = PL_F32});
}

Test(flash_attention, bf16_causal_ragged_q_and_kv)
{
    fa_case((fa_config){.sq = 300, .skv = 300, .d = 128, .bq = 128, .bk = 128, .causal = 1, .dtype = PL_BF16});
}

Test(flash_attention, f32_causal_blocks_cut_the_diagonal_unevenly)
{
    fa_case((fa_config){.sq = 384, .skv = 500, .d = 64, .bq = 128, .bk = 192, .causal = 1, .dtype = PL_F32});
}

Test(flash_attention, f32_three_heads_causal)
{
    fa_case((fa_config){.heads = 3, .sq = 256, .skv = 256, .d = 128, .bq = 128, .bk = 64, .causal = 1,
                        .dtype = PL_F32});
}

Test(flash_attention, bf16_two_heads_ragged_kv)
{
    fa_case((fa_config){.heads = 2, .sq = 256, .skv = 300, .d = 128, .bq = 128, .bk = 128, .dtype = PL_BF16});
}

Test(flash_attention, f16_square_256)
{
    fa_case((fa_config){.sq = 256, .skv = 256, .d = 128, .bq = 128, .bk = 128, .dtype = PL_F16});
}

/* ---- what the grid implies ------------------------------------------------------------------ */

Test(flash_attention, causal_steps_above_the_diagonal_copy_nothing)
{
    /* 4 x 4 blocks per head: q block i needs kv blocks 0..i, 10 of the 16
     * steps. On the skipped steps the clamped index map selects block i
     * again, so they copy nothing; q block i + 1 then starts on block 0,
     * a copy, except after q block 0, whose steps all held block 0 already:
     * 9 copies per head. */
    fa_config cfg = {.heads = 2, .sq = 512, .skv = 512, .d = 128, .bq = 128, .bk = 128, .causal = 1,
                     .dtype = PL_F32};
    pl_report rep;
    fa_run(&cfg, &rep);
    cr_expect_eq(rep.op[1].copies, 2 * 9, "k copies %lld, want 9 per head", (long long)rep.op[1].copies);
    cr_expect_eq(rep.op[2].copies, 2 * 9, "v copies %lld, want 9 per head", (long long)rep.op[2].copies);
    cr_expect_eq(rep.op[1].copies + rep.op[1].skipped, rep.steps);
}

Test(flash_attention, cost_only_walks_the_same_grid)
{
    fa_config cfg = {.sq = 512, .skv = 300, .d = 128, .bq = 128, .bk = 128, .causal = 1, .dtype = PL_BF16};
    fa_params params;
    pl_call call;
    cr_assert_eq(fa_call(&call, &params, &cfg), PL_OK);
    pl_array args[3] = {PL_ARRAY(NULL, PL_BF16, 512, 128), PL_ARRAY(NULL, PL_BF16, 300, 128),
                        PL_ARRAY(NULL, PL_BF16, 300, 128)};
    pl_array out = PL_ARRAY(NULL, PL_BF16, 512, 128);
    pl_options opt = {.cost_only = 1};
    pl_report rep;
    int rc = pl_pallas_call(&call, args, &out, &opt, &rep);
    cr_assert_eq(rc, PL_OK, "%s", rep.error);
    cr_expect_eq(rep.mxu_flops, want_mxu_flops(&cfg));
    cr_expect_gt(rep.time_s, 0);
}

Test(flash_attention, bad_configs_are_refused)
{
    fa_params params;
    pl_call call;
    fa_config ok = {.sq = 64, .skv = 64, .d = 64, .bq = 64, .bk = 64, .dtype = PL_F32};
    cr_expect_eq(fa_call(&call, &params, &ok), PL_OK);
    fa_config bad[] = {ok, ok, ok, ok};
    bad[0].bq = 0;
    bad[1].d = -1;
    bad[2].heads = -2;
    bad[3].dtype = PL_I32;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        cr_expect_eq(fa_call(&call, &params, &bad[i]), PL_EINVAL, "config %zu accepted", i);
}
