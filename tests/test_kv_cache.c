/* tests/test_kv_cache.c: 8-bit KV caches (issue 24). paged_attention's
 * pages may be i8 or f8e4m3 with q and o bf16: the kernel widens each page
 * in registers on its way to the MXU (a VPU cast per element, no VMEM
 * buffer), reads half the bytes from HBM, and still matches the reference;
 * `tilesim review` weighs bf16, fp8 and (where the MXU has an int8 path)
 * int8 caches, the 8-bit ones at half the bytes of HBM.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <string.h>

#include "../examples/kernels/registry.h"
#include "helpers.h"
#include "run.h"

/* paged_attention's parameters, with q and o bf16 */
enum { A_BATCH, A_HEADS, A_DIM, A_PAGE, A_MAXLEN, A_LSEED, A_DT };

static pl_dtype kv_of_test = PL_BF16;
static int ahead_of_test = 1;
static int64_t max_len_of_test = 200;

static int build_kv(const int64_t *v, pl_kernel_build *b, char *msg, size_t n)
{
    return ex_paged_build_kv(v, NULL, kv_of_test, ahead_of_test, b, msg, n);
}

/* paged_attention with its pages in kv, `ahead` in flight: run, checked against the reference */
static pl_report run_ahead(pl_dtype kv, int ahead, pl_check *check, int cost_only)
{
    kv_of_test = kv, ahead_of_test = ahead;
    pl_kernel_def d = ex_def_paged;
    d.build = build_kv;
    int64_t v[PL_KDEF_MAX_PARAMS];
    pl_kernel_defaults(&d, v);
    v[A_BATCH] = 3, v[A_PAGE] = 32, v[A_MAXLEN] = max_len_of_test, v[A_DT] = PL_BF16;
    pl_options opt = {.chip = "v6e", .cost_only = cost_only};
    pl_report r;
    int rc = pl_kernel_run(&d, v, &opt, &r, check, NULL);
    cr_assert_eq(rc, PL_OK, "%s: %s", pl_dtype_name(kv), r.error);
    return r;
}

static pl_report run_kv(pl_dtype kv, pl_check *check, int cost_only) { return run_ahead(kv, 1, check, cost_only); }

Test(kv_cache, an_fp8_and_an_int8_cache_match_the_reference_through_the_widened_pages)
{
    const pl_dtype kvs[] = {PL_F8E4M3, PL_I8};
    for (size_t i = 0; i < 2; i++) {
        pl_check check[PL_MAX_OPERANDS];
        run_kv(kvs[i], check, 0);
        cr_expect_eq(check[0].verdict, PL_PASS, "%s: worst %.3g of the tolerance", pl_dtype_name(kvs[i]),
                     check[0].norm_err);
    }
}

Test(kv_cache, an_8_bit_cache_reads_half_the_page_bytes_and_pays_a_cast_per_element)
{
    pl_report bf = run_kv(PL_BF16, NULL, 1), f8 = run_kv(PL_F8E4M3, NULL, 1);
    /* q and o are bf16 in both; the pages dominate the traffic */
    cr_expect_lt(f8.hbm_bytes, 0.6 * (double)bf.hbm_bytes, "fp8 %lld bytes, bf16 %lld", (long long)f8.hbm_bytes,
                 (long long)bf.hbm_bytes);
    cr_expect_gt(f8.vpu_flops, bf.vpu_flops, "the widening is VPU work: %g vs %g", f8.vpu_flops, bf.vpu_flops);
    cr_expect_lt(f8.vmem_bytes, bf.vmem_bytes, "the page slots hold bytes, not bf16: %lld vs %lld",
                 (long long)f8.vmem_bytes, (long long)bf.vmem_bytes);
}

/* Short pages wait on their DMA latency one at a time: with 8 in flight the
 * same kernel hides it behind the pages before (21 % faster here, where the
 * per-page dots and softmax take the rest), reads the same bytes, and still
 * passes. */
Test(kv_cache, pages_in_flight_hide_the_dma_latency_of_short_pages)
{
    pl_check check[PL_MAX_OPERANDS];
    run_ahead(PL_BF16, 8, check, 0);
    cr_expect_eq(check[0].verdict, PL_PASS, "worst %.3g of the tolerance", check[0].norm_err);
    max_len_of_test = 4096; /* 128 pages of 32 tokens a sequence */
    pl_report one = run_ahead(PL_BF16, 1, NULL, 1), eight = run_ahead(PL_BF16, 8, NULL, 1);
    cr_expect_eq(eight.hbm_bytes, one.hbm_bytes);
    cr_expect_lt(eight.time_s, 0.85 * one.time_s, "8 pages in flight %g us, 1: %g us", eight.time_s * 1e6,
                 one.time_s * 1e6);
    cr_expect_gt(eight.vmem_bytes, one.vmem_bytes, "9 page slots, not 2");
}

#define BRIEF "review", "--model", "llama3-8b", "--prompt", "1024", "--context", "4096", "--ttft", "2s", "--tpot", \
              "50ms", "--chips", "1", "--batch", "8", "--quant", "bf16", "--json"

static json_t *config_with_kv(json_t *configs, const char *kv)
{
    size_t i;
    json_t *c;
    json_array_foreach(configs, i, c)
        if (!strcmp(json_string_value(json_object_get(c, "kv")), kv)) return c;
    return NULL;
}

Test(kv_cache, review_weighs_8_bit_caches_at_half_the_bytes_and_refuses_int8_where_the_mxu_has_none)
{
    th_run r = TH_RUN(BRIEF, "--chip", "v6e");
    cr_assert_eq(r.status, 0, "%s", r.err);
    json_error_t e;
    json_t *j = json_loads(r.out, 0, &e), *configs = json_object_get(j, "configs");
    cr_assert(j, "%s", e.text);
    cr_assert_eq(json_array_size(configs), 3, "bf16, int8 and fp8 caches on v6e");
    json_t *bf = config_with_kv(configs, "bf16"), *i8 = config_with_kv(configs, "int8"),
           *f8 = config_with_kv(configs, "fp8");
    cr_assert(bf && i8 && f8);
    double kb = json_number_value(json_object_get(bf, "kv_bytes"));
    cr_expect_float_eq(json_number_value(json_object_get(f8, "kv_bytes")), kb / 2, kb * 1e-9);
    cr_expect_float_eq(json_number_value(json_object_get(i8, "kv_bytes")), kb / 2, kb * 1e-9);
    cr_expect_lt(json_number_value(json_object_get(f8, "tpot_s")), json_number_value(json_object_get(bf, "tpot_s")),
                 "half the cache bytes: a faster decode step");
    json_decref(j);
    th_run_free(&r);
    r = TH_RUN(BRIEF, "--chip", "v7x", "--kv", "bf16,int8,fp8");
    cr_assert_eq(r.status, 0, "%s", r.err);
    j = json_loads(r.out, 0, &e), configs = json_object_get(j, "configs");
    json_t *no = config_with_kv(configs, "int8");
    cr_assert(no);
    cr_expect_str_eq(json_string_value(json_object_get(no, "verdict")), "illegal");
    cr_expect(strstr(json_string_value(json_object_get(no, "reason")), "an int8 KV cache is weighed only where the "
                                                                        "MXU has an int8 path; v7x has none"));
    json_decref(j);
    th_run_free(&r);
    r = TH_RUN("review", "--model", "llama3-8b", "--prompt", "1024", "--context", "4096", "--ttft", "2s", "--tpot",
               "50ms", "--kv", "bf16,nf4");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "--kv 'bf16,nf4': want a list of bf16, int8, fp8"), "%s", r.err);
    th_run_free(&r);
}
