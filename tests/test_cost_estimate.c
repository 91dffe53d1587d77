/* The cost estimate of a run (issue 15): the pl.CostEstimate line a user
 * pastes into the real pallas_call, from what the run counted: FLOPs (MXU
 * and VPU), transcendentals (EUP elements), HBM bytes moved. */
#include <criterion/criterion.h>
#include <string.h>

#include "helpers.h"

static void exp_kernel(pl_ctx *c, pl_ref *refs) { pl_exp(c, refs[1], refs[0]); }

static void dot_kernel(pl_ctx *c, pl_ref *refs) { pl_dot(c, refs[2], refs[0], refs[1], 0); }

Test(cost_estimate, exp_counts_every_element_as_a_transcendental_and_the_bytes_moved)
{
    enum { M = 64, N = 256 };
    static float x[M * N], y[M * N];
    pl_call call = {.name = "exp", .kernel = exp_kernel, .grid_rank = 2, .grid = {M / 8, N / 128},
                    .n_in = 1, .in = {PL_BLOCK(PL_MAP(0, 1), 8, 128)},
                    .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, 1), 8, 128)}};
    pl_array in = PL_ARRAY(x, PL_F32, M, N), out = PL_ARRAY(y, PL_F32, M, N);
    pl_report rep;
    cr_assert_eq(pl_pallas_call(&call, &in, &out, NULL, &rep), PL_OK, "%s", rep.error);
    char buf[160], want[160];
    snprintf(want, sizeof want, "pl.CostEstimate(flops=%.0f, transcendentals=%d, bytes_accessed=%d)", rep.vpu_flops,
             M * N, 2 * M * N * 4); /* every element read once and written once */
    int len = pl_cost_estimate(&rep, buf, sizeof buf);
    cr_expect_str_eq(buf, want);
    cr_expect_eq(len, (int)strlen(want));
    cr_expect_gt(rep.vpu_flops, 0, "exp is VPU work too");
}

Test(cost_estimate, a_matmul_is_2mnk_plus_its_vpu_work_and_its_refetched_bytes)
{
    enum { M = 256, N = 256, K = 256, B = 128 };
    static float a[M * K], b[K * N], o[M * N];
    pl_call call = {.name = "dot", .kernel = dot_kernel, .grid_rank = 2, .grid = {M / B, N / B},
                    .n_in = 2, .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), B, K), PL_BLOCK(PL_MAP(PL_ZERO, 1), K, B)},
                    .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, 1), B, B)}};
    pl_array in[2] = {PL_ARRAY(a, PL_F32, M, K), PL_ARRAY(b, PL_F32, K, N)}, out = PL_ARRAY(o, PL_F32, M, N);
    pl_report rep;
    cr_assert_eq(pl_pallas_call(&call, in, &out, NULL, &rep), PL_OK, "%s", rep.error);
    cr_expect_eq(rep.mxu_flops, 2.0 * M * N * K);
    /* grid (i, j), j fastest: a's row panel is fetched once per i (skipped while j moves, P2),
     * b's column panel at every step; o written once */
    int64_t bytes = (int64_t)M * K * 4 + (int64_t)(M / B) * K * N * 4 + (int64_t)M * N * 4;
    char buf[160], want[160];
    snprintf(want, sizeof want, "pl.CostEstimate(flops=%.0f, transcendentals=0, bytes_accessed=%lld)",
             2.0 * M * N * K + rep.vpu_flops, (long long)bytes);
    pl_cost_estimate(&rep, buf, sizeof buf);
    cr_expect_str_eq(buf, want);
}

Test(cost_estimate, the_report_prints_and_writes_it)
{
    pl_report rep = {.mxu_flops = 100, .vpu_flops = 20, .eup_elems = 3, .hbm_bytes = 4096};
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    pl_report_json(&rep, f);
    fclose(f);
    json_error_t err;
    json_t *doc = json_loads(text, 0, &err);
    cr_assert(doc, "the report's JSON parses: %s", err.text);
    json_t *ce = json_object_get(doc, "cost_estimate");
    cr_assert(json_is_object(ce), "cost_estimate is an object");
    cr_expect_eq(json_number_value(json_object_get(ce, "flops")), 120);
    cr_expect_eq(json_integer_value(json_object_get(ce, "transcendentals")), 3);
    cr_expect_eq(json_integer_value(json_object_get(ce, "bytes_accessed")), 4096);
    json_decref(doc);
    free(text);
}

Test(cost_estimate, a_short_buffer_is_cut_and_terminated_and_null_is_safe)
{
    pl_report rep = {.mxu_flops = 1e9, .eup_elems = 7, .hbm_bytes = 1 << 20};
    char buf[16];
    memset(buf, 'x', sizeof buf);
    int need = pl_cost_estimate(&rep, buf, sizeof buf);
    cr_expect_gt(need, (int)sizeof buf - 1, "the length it needs");
    cr_expect_eq(buf[sizeof buf - 1], '\0');
    cr_expect_eq(strncmp(buf, "pl.CostEstimate", 15), 0);
    cr_expect_eq(pl_cost_estimate(NULL, buf, sizeof buf), 0);
    cr_expect_str_eq(buf, "");
    cr_expect_gt(pl_cost_estimate(&rep, NULL, 0), 0, "NULL buffer: only the length");
}
