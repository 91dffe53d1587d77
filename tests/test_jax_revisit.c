/* tests/test_jax_revisit.c: output revisits under RevisitMode.ANY (rule P5),
 * issue 9.
 *
 * JAX's TPU interpret mode checks that an output block is not selected again
 * after it was written back (jax-ml/jax PR #30581, "Adds a TPU interpret mode
 * check for output revisiting", tests/pallas/tpu_pallas_interpret_test.py);
 * the issue asks for Pallas's opt-in RevisitMode.ANY on an output BlockSpec:
 * the block is written back when the grid leaves it and fetched back from HBM
 * when a later, non-consecutive grid point selects it again. The first visit
 * still starts as garbage (P4). The default (immediate) keeps PL_EREVISIT.
 *
 * The kernel under test is a matmul whose contraction axis k is the OUTER
 * grid axis: grid (K/bk, M/bm, N/bn), o block (i, j) revisited once per k.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../examples/kernels/data.h"
#include "helpers.h"

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* refs: x, y, o. k is grid axis 0: o = x @ y at k == 0 (a first visit starts
 * as garbage, P4), o += x @ y after. */
static void kouter_kernel(pl_ctx *c, pl_ref *r)
{
    pl_dot(c, r[2], r[0], r[1], pl_program_id(c, 0) == 0 ? 0u : PL_DOT_ACC);
}

/* The control: k is the last axis (2), as in examples/kernels/matmul.h. */
static void kinner_kernel(pl_ctx *c, pl_ref *r)
{
    pl_dot(c, r[2], r[0], r[1], pl_program_id(c, 2) == 0 ? 0u : PL_DOT_ACC);
}

/* refs: x, y, c0, o (o aliases c0): o = c0 + x @ y, k outer. */
static void kouter_alias_kernel(pl_ctx *c, pl_ref *r)
{
    if (pl_program_id(c, 0) == 0) pl_copy(c, r[3], r[2]);
    pl_dot(c, r[3], r[0], r[1], PL_DOT_ACC);
}

/* A bug: accumulates into the first visit's garbage (P4). */
static void no_init_kernel(pl_ctx *c, pl_ref *r) { pl_dot(c, r[2], r[0], r[1], PL_DOT_ACC); }

typedef struct rv {
    int64_t m, n, k, bm, bn, bk;
    float *a, *b, *c;
    pl_array args[2], out;
    pl_call call;
} rv;

static rv rv_make(int64_t m, int64_t n, int64_t k, int64_t bm, int64_t bn, int64_t bk, int kouter)
{
    rv t = {.m = m, .n = n, .k = k, .bm = bm, .bn = bn, .bk = bk};
    t.a = ex_random_matrix(m * k, PL_F32, 1);
    t.b = ex_random_matrix(k * n, PL_F32, 2);
    t.c = th_f32_fill(m * n, TH_SENTINEL);
    cr_assert(t.a && t.b);
    t.args[0] = PL_ARRAY(t.a, PL_F32, m, k);
    t.args[1] = PL_ARRAY(t.b, PL_F32, k, n);
    t.out = PL_ARRAY(t.c, PL_F32, m, n);
    int64_t gm = cdiv(m, bm), gn = cdiv(n, bn), gk = cdiv(k, bk);
    if (kouter) {
        t.call = (pl_call){
            .name = "kouter", .kernel = kouter_kernel, .grid_rank = 3, .grid = {gk, gm, gn},
            .n_in = 2, .in = {PL_BLOCK(PL_MAP(1, 0), bm, bk), PL_BLOCK(PL_MAP(0, 2), bk, bn)},
            .n_out = 1, .out = {PL_BLOCK(PL_MAP(1, 2), bm, bn)},
        };
    } else {
        t.call = (pl_call){
            .name = "kinner", .kernel = kinner_kernel, .grid_rank = 3, .grid = {gm, gn, gk},
            .semantics = {PL_PARALLEL, PL_PARALLEL, PL_ARBITRARY},
            .n_in = 2, .in = {PL_BLOCK(PL_MAP(0, 2), bm, bk), PL_BLOCK(PL_MAP(2, 1), bk, bn)},
            .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, 1), bm, bn)},
        };
    }
    t.call.out[0].name = "o";
    return t;
}

static void rv_free(rv *t) { free(t->a), free(t->b), free(t->c); }

static void expect_matmul_pass(rv *t, const char *what)
{
    pl_check chk;
    int rc = pl_check_matmul(&t->args[0], &t->args[1], &t->out, &chk, NULL);
    cr_assert_eq(rc, PL_OK, "%s: pl_check_matmul returned %d", what, rc);
    cr_assert_eq(chk.verdict, PL_PASS, "%s: verdict %s, normalised error %.3g, %lld NaN/inf, worst at (%lld, %lld)",
                 what, pl_verdict_name(chk.verdict), chk.norm_err, (long long)chk.n_nan, (long long)chk.worst_row,
                 (long long)chk.worst_col);
}

/* ---- the default keeps PL_EREVISIT; the opt-in gives the right answer --------- */

/* JAX: tpu_pallas_interpret_test.py, the output-revisiting check of PR #30581. */
Test(jax_revisit, P5_default_immediate_rejects_kouter_reduction)
{
    rv t = rv_make(256, 256, 512, 128, 128, 128, 1);
    pl_report rep;
    int rc = pl_pallas_call(&t.call, t.args, &t.out, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EREVISIT, "o: grid point (1, 0, 0) selects output block (0, 0) again",
                    "after grid point (0, 0, 0)", "rule P5", "PL_REVISIT_ANY");
    rv_free(&t);
}

Test(jax_revisit, P5_any_kouter_reduction_matches_openblas)
{
    /* ragged m: the edge block's overhang is poison on every fetch-back too (B6) */
    const int64_t shapes[][6] = {{256, 256, 512, 128, 128, 128}, {200, 384, 256, 64, 128, 128}};
    for (int s = 0; s < 2; s++) {
        const int64_t *v = shapes[s];
        rv t = rv_make(v[0], v[1], v[2], v[3], v[4], v[5], 1);
        t.call.out[0].revisit = PL_REVISIT_ANY;
        pl_report rep;
        int rc = pl_pallas_call(&t.call, t.args, &t.out, NULL, &rep);
        cr_assert_eq(rc, PL_OK, "shape %d: %s", s, rep.error);
        cr_assert_eq(rep.n_findings, 0, "shape %d: %s", s, rep.warnings);
        expect_matmul_pass(&t, "k-outer with RevisitMode.ANY");
        rv_free(&t);
    }
}

/* ---- traffic: every visit after the first fetches the block back -------------- */

Test(jax_revisit, P5_any_counts_fetchbacks_and_their_bytes)
{
    int64_t m = 256, n = 384, k = 512, bm = 128, bn = 128, bk = 128;
    int64_t gm = m / bm, gn = n / bn, gk = k / bk, steps = gm * gn * gk, blk = bm * bn * 4;
    for (int cost_only = 0; cost_only < 2; cost_only++) {
        rv t = rv_make(m, n, k, bm, bn, bk, 1);
        t.call.out[0].revisit = PL_REVISIT_ANY;
        pl_options opt = {.cost_only = cost_only};
        pl_report rep;
        cr_assert_eq(pl_pallas_call(&t.call, t.args, &t.out, &opt, &rep), PL_OK, "%s", rep.error);
        const pl_operand_report *o = &rep.op[2];
        cr_assert_eq(o->buffers, 1, "RevisitMode.ANY takes one buffer (P5), got %d", o->buffers);
        /* o's block changes at every step: each step ends with a write-back */
        cr_assert_eq(o->writebacks, steps, "writebacks = %lld, want %lld", (long long)o->writebacks, (long long)steps);
        cr_assert_eq(o->fetchbacks, (gk - 1) * gm * gn, "fetchbacks = %lld, want %lld", (long long)o->fetchbacks,
                     (long long)((gk - 1) * gm * gn));
        cr_assert_eq(o->bytes_in, o->fetchbacks * blk, "bytes_in = %lld", (long long)o->bytes_in);
        cr_assert_eq(o->bytes_out, steps * blk, "bytes_out = %lld", (long long)o->bytes_out);
        cr_assert_eq(o->copies, 0, "an output's fetch-backs are not input copies");
        int64_t want_hbm = rep.op[0].bytes_in + rep.op[1].bytes_in + o->bytes_in + o->bytes_out;
        cr_assert_eq(rep.hbm_bytes, want_hbm, "the fetch-backs count in the HBM traffic");

        /* printed and in the JSON */
        char *txt = NULL, *js = NULL;
        size_t ntxt = 0, njs = 0;
        FILE *f = open_memstream(&txt, &ntxt);
        pl_report_print(&rep, f);
        fclose(f);
        cr_assert(strstr(txt, "fetched back") && strstr(txt, "P5"), "the report does not show fetch-backs:\n%s", txt);
        f = open_memstream(&js, &njs);
        pl_report_json(&rep, f);
        fclose(f);
        json_t *doc = th_json_parse(js, "pl_report_json");
        json_t *fb = json_object_get(json_array_get(json_object_get(doc, "operands"), 2), "fetchbacks");
        cr_assert(json_is_integer(fb) && json_integer_value(fb) == o->fetchbacks, "JSON fetchbacks: %s", js);
        json_decref(doc);
        free(txt), free(js);
        rv_free(&t);
    }
}

/* The control: the same reduction with k innermost visits each block in
 * consecutive steps and needs no fetch-back. */
Test(jax_revisit, P5_control_kinner_needs_no_fetchback)
{
    rv t = rv_make(256, 384, 512, 128, 128, 128, 0);
    pl_report rep;
    cr_assert_eq(pl_pallas_call(&t.call, t.args, &t.out, NULL, &rep), PL_OK, "%s", rep.error);
    cr_assert_eq(rep.op[2].fetchbacks, 0);
    cr_assert_eq(rep.op[2].bytes_in, 0);
    cr_assert_eq(rep.op[2].writebacks, 2 * 3);
    expect_matmul_pass(&t, "k-inner");
    /* the opt-in changes nothing where nothing is revisited */
    t.call.out[0].revisit = PL_REVISIT_ANY;
    cr_assert_eq(pl_pallas_call(&t.call, t.args, &t.out, NULL, &rep), PL_OK, "%s", rep.error);
    cr_assert_eq(rep.op[2].fetchbacks, 0);
    rv_free(&t);
}

/* ---- timing: the extra copies cost time --------------------------------------- */

Test(jax_revisit, P5_any_timing_includes_the_fetchbacks)
{
    /* memory-bound: a thin contraction block, many revisits of large o blocks */
    int64_t m = 2048, n = 2048, k = 2048, bm = 512, bn = 512, bk = 128;
    pl_options opt = {.cost_only = 1};
    pl_report outer, inner;
    rv a = rv_make(m, n, k, bm, bn, bk, 1), b = rv_make(m, n, k, bm, bn, bk, 0);
    a.call.out[0].revisit = PL_REVISIT_ANY;
    cr_assert_eq(pl_pallas_call(&a.call, a.args, &a.out, &opt, &outer), PL_OK, "%s", outer.error);
    cr_assert_eq(pl_pallas_call(&b.call, b.args, &b.out, &opt, &inner), PL_OK, "%s", inner.error);
    cr_assert_gt(outer.op[2].fetchbacks, 0);
    cr_assert_eq(outer.mxu_flops, inner.mxu_flops, "the same work either way");
    /* the extra bytes: every fetch-back plus a write-back per step instead of per block */
    cr_assert_gt(outer.hbm_bytes, inner.hbm_bytes);
    cr_assert_gt(outer.time_s, inner.time_s, "k outer with fetch-backs: %.3g s, k inner: %.3g s", outer.time_s,
                 inner.time_s);
    /* the model charges at least the fetch-back bytes at HBM bandwidth */
    double fetch_s = (double)outer.op[2].bytes_in / outer.chip->hbm_bw;
    cr_assert_gt(outer.time_s, fetch_s, "time %.3g s < the fetch-backs alone %.3g s", outer.time_s, fetch_s);
    rv_free(&a), rv_free(&b);
}

/* ---- aliased outputs, buffers, and bad specs ---------------------------------- */

Test(jax_revisit, P5_any_with_an_aliased_output)
{
    int64_t m = 256, n = 256, k = 384, bm = 128, bn = 128, bk = 128;
    rv t = rv_make(m, n, k, bm, bn, bk, 1);
    float *c0 = ex_random_matrix(m * n, PL_F32, 3), *want = malloc((size_t)(m * n) * sizeof *want);
    cr_assert(c0 && want);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = c0[i * n + j];
            for (int64_t p = 0; p < k; p++) s += (double)t.a[i * k + p] * (double)t.b[p * n + j];
            want[i * n + j] = (float)s;
        }
    pl_array args[3] = {t.args[0], t.args[1], PL_ARRAY(c0, PL_F32, m, n)};
    t.call.kernel = kouter_alias_kernel;
    t.call.n_in = 3;
    t.call.in[2] = PL_BLOCK(PL_MAP(1, 2), bm, bn);
    t.call.n_alias = 1;
    t.call.alias[0] = (struct pl_alias){.in = 2, .out = 0};
    t.call.out[0].revisit = PL_REVISIT_ANY;
    pl_report rep;
    cr_assert_eq(pl_pallas_call(&t.call, args, &t.out, NULL, &rep), PL_OK, "%s", rep.error);
    cr_assert_eq(rep.op[3].fetchbacks, (k / bk - 1) * (m / bm) * (n / bn), "fetchbacks = %lld",
                 (long long)rep.op[3].fetchbacks);
    pl_array w = PL_ARRAY(want, PL_F32, m, n);
    pl_check chk;
    cr_assert_eq(pl_allclose(&t.out, &w, 1e-4, 1e-3, &chk, NULL), PL_OK, "o = c0 + x @ y: worst error %.3g at (%lld, "
                 "%lld)", chk.max_abs_err, (long long)chk.worst_row, (long long)chk.worst_col);
    free(c0), free(want);
    rv_free(&t);
}

Test(jax_revisit, P5_any_with_two_buffers_is_rejected)
{
    rv t = rv_make(256, 256, 512, 128, 128, 128, 1);
    t.call.out[0].revisit = PL_REVISIT_ANY;
    t.call.out[0].buffers = 2;
    pl_report rep;
    int rc = pl_pallas_call(&t.call, t.args, &t.out, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "o", "RevisitMode.ANY", "one buffer", "rule P5");
    for (int64_t e = 0; e < t.m * t.n; e++)
        cr_assert_eq(t.c[e], TH_SENTINEL, "a rejected call leaves the output untouched (element %lld)", (long long)e);
    t.call.out[0].buffers = 1; /* an explicit Buffered(1) is fine */
    cr_assert_eq(pl_pallas_call(&t.call, t.args, &t.out, NULL, &rep), PL_OK, "%s", rep.error);
    rv_free(&t);
}

Test(jax_revisit, P5_any_on_an_input_or_a_bad_value_is_rejected)
{
    rv t = rv_make(256, 256, 512, 128, 128, 128, 1);
    t.call.in[0].revisit = PL_REVISIT_ANY;
    t.call.in[0].name = "x";
    pl_report rep;
    int rc = pl_pallas_call(&t.call, t.args, &t.out, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "x", "output", "rule P5");
    t.call.in[0].revisit = PL_REVISIT_IMMEDIATE;
    t.call.out[0].revisit = (pl_revisit)7;
    rc = pl_pallas_call(&t.call, t.args, &t.out, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "o", "revisit = 7", "rule P5");
    rv_free(&t);
}

/* ---- checks: P4 on the first visit, V1 at every write-back, V4 ---------------- */

/* The first visit of a block is not loaded from HBM (P4): a kernel that
 * accumulates without initializing writes poison back at its first
 * write-back, which strict mode makes an error (V1). */
Test(jax_revisit, P4_first_visit_starts_as_garbage_under_any)
{
    rv t = rv_make(256, 256, 512, 128, 128, 128, 1);
    t.call.kernel = no_init_kernel;
    t.call.out[0].revisit = PL_REVISIT_ANY;
    pl_options opt = {.strict = 1};
    pl_report rep;
    int rc = pl_pallas_call(&t.call, t.args, &t.out, &opt, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EPOISON, "o: NaN written back", "block (0, 0)", "after grid point (0, 0, 0)", "V1");
    /* not strict: a finding at every write-back of a poisoned block, revisits included */
    opt.strict = 0;
    cr_assert_eq(pl_pallas_call(&t.call, t.args, &t.out, &opt, &rep), PL_OK, "%s", rep.error);
    cr_assert_eq(rep.n_findings, rep.op[2].writebacks, "%d findings for %lld write-backs", rep.n_findings,
                 (long long)rep.op[2].writebacks);
    rv_free(&t);
}

/* JAX: tpu_pallas_interpret_test.py, test_two_cores_along_parallel_dimension_with_race:
 * a revisited block written from two TensorCores is still a race (V4). */
static void kmap(const int64_t *g, const pl_ref *pf, int64_t *b, void *u)
{
    (void)pf, (void)u;
    b[0] = g[1], b[1] = g[2];
}

Test(jax_revisit, V4_parallel_axis_over_a_revisited_block_races_on_megacore)
{
    for (int fn = 0; fn < 2; fn++) {
        rv t = rv_make(256, 256, 512, 128, 128, 128, 1);
        t.call.out[0].revisit = PL_REVISIT_ANY;
        t.call.semantics[0] = PL_PARALLEL; /* k: a reduction marked parallel */
        if (fn) t.call.out[0].map = PL_MAP_FN(kmap, NULL);
        pl_options opt = {.chip = "v5p"};
        pl_report rep;
        int rc = pl_pallas_call(&t.call, t.args, &t.out, &opt, &rep);
        TH_EXPECT_ERROR(rc, rep, PL_ERACE, "o", "V4");
        rv_free(&t);
    }
}

/* ---- the recorder and the trace show each fetch-back ---------------------------- */

static void count_fetches(const pl_step_info *s, void *user)
{
    int64_t *n = user;
    if (!s->final && s->op[2].action == PL_ACT_FETCH) {
        cr_assert_gt(s->op[2].bytes, 0, "a fetch-back moves bytes");
        cr_assert_gt(s->idx[0], 0, "only a revisit (k > 0) fetches back; the first visit starts as garbage (P4)");
        n[0]++;
    }
    if (!s->final && s->op[2].action == PL_ACT_NEW) n[1]++;
}

Test(jax_revisit, P5_any_recorder_and_trace_show_fetchbacks)
{
    rv t = rv_make(256, 256, 512, 128, 128, 128, 1);
    t.call.out[0].revisit = PL_REVISIT_ANY;
    char path[] = "/tmp/tilesim_revisit_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    int64_t n[2] = {0, 0};
    pl_options opt = {.trace_path = path, .on_step = count_fetches, .on_step_user = n};
    pl_report rep;
    cr_assert_eq(pl_pallas_call(&t.call, t.args, &t.out, &opt, &rep), PL_OK, "%s", rep.error);
    cr_assert_eq(n[0], rep.op[2].fetchbacks, "recorder saw %lld fetch-backs, report %lld", (long long)n[0],
                 (long long)rep.op[2].fetchbacks);
    cr_assert_eq(n[1], 2 * 2, "one new (garbage) buffer per output block, at k == 0");
    json_t *doc = th_json_file(path);
    json_t *ev = json_object_get(doc, "traceEvents"), *e;
    size_t i;
    int64_t fetch_events = 0;
    json_array_foreach(ev, i, e) {
        const char *name = json_string_value(json_object_get(e, "name"));
        if (name && strncmp(name, "o fetch-back ", 13) == 0) fetch_events++;
    }
    cr_assert_eq(fetch_events, rep.op[2].fetchbacks, "trace has %lld fetch-back events", (long long)fetch_events);
    json_decref(doc);
    close(fd);
    unlink(path);
    expect_matmul_pass(&t, "k-outer, traced");
    rv_free(&t);
}

/* ---- V4 by cores with the opt-in ---------------------------------------------- */

/* JAX: tpu_pallas_interpret_test.py, test_two_cores_along_parallel_dimension_with_race
 * (races need two cores). On a single-core chip a reduction axis marked
 * parallel runs in order: with RevisitMode.ANY the sequential answer is right,
 * and the race is a warning that megacore chips would race (V4); strict makes
 * it an error. With more cores (a what-if v5e with 4) it stays PL_ERACE. */
Test(jax_revisit, V4_single_core_parallel_reduction_with_any_is_a_warning_and_right)
{
    rv t = rv_make(256, 256, 512, 128, 128, 128, 1);
    t.call.out[0].revisit = PL_REVISIT_ANY;
    t.call.semantics[0] = PL_PARALLEL;
    pl_options opt = {.chip = "v5e"};
    pl_report rep;
    cr_assert_eq(pl_pallas_call(&t.call, t.args, &t.out, &opt, &rep), PL_OK, "%s", rep.error);
    int race = 0;
    for (int i = 0; i < rep.n_findings && i < PL_MAX_FINDINGS; i++) race |= rep.findings[i].kind == PL_FIND_RACE;
    cr_assert(race, "a race finding (V4) on a single-core chip: %s", rep.warnings);
    cr_assert_gt(rep.op[2].fetchbacks, 0);
    expect_matmul_pass(&t, "single core, k parallel, RevisitMode.ANY");
    opt.strict = 1;
    int rc = pl_pallas_call(&t.call, t.args, &t.out, &opt, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_ERACE, "o", "V4");
    pl_chip four = *pl_chip_find("v5e");
    four.cores_per_device = 4;
    snprintf(four.name, sizeof four.name, "v5e-4core");
    pl_options o4 = {.chip_spec = &four};
    rc = pl_pallas_call(&t.call, t.args, &t.out, &o4, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_ERACE, "o", "V4");
    rv_free(&t);
}

/* P10 under RevisitMode.ANY: write-backs no longer count distinct blocks. A
 * (384, 128) output in (128, 128) blocks, grid (2, 2) selecting block (j, 0):
 * blocks 0, 1, 0, 1 make 4 write-backs, one more than the 3 blocks, yet
 * block (2, 0) is never selected and keeps whatever HBM held. */
Test(jax_revisit, P10_any_revisits_do_not_hide_an_unselected_block)
{
    pl_call call = {
        .name = "revisit_short", .kernel = th_copy_kernel, .grid_rank = 2, .grid = {2, 2},
        .n_in = 1, .in = {PL_BLOCK(PL_MAP(1, PL_ZERO), 128, 128)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(1, PL_ZERO), 128, 128)},
    };
    call.out[0].revisit = PL_REVISIT_ANY;
    pl_array in = PL_ARRAY(NULL, PL_F32, 256, 128), out = PL_ARRAY(NULL, PL_F32, 384, 128);
    pl_options opt = {.cost_only = 1, .strict = 1};
    pl_report rep;
    int rc = pl_pallas_call(&call, &in, &out, &opt, &rep);
    cr_assert_eq(rep.op[1].writebacks, 4, "writebacks %lld", (long long)rep.op[1].writebacks);
    TH_EXPECT_ERROR(rc, rep, PL_EPOISON, "(2, 0)", "P10");
}
