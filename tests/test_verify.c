/* tests/test_verify.c: the reference checks (rule V5), order-dependence
 * (V4), and the options of the checks (V1, V2). */
#include <math.h>
#include <unistd.h>

#include "../examples/kernels/matmul.h"
#include "helpers.h"

/* A matmul of the given shape, run for real; the caller frees a, b, c. */
typedef struct mm_run {
    float *a, *b, *c;
    pl_array args[2], out;
    pl_call call;
    mm_params p;
    pl_report rep;
} mm_run;

static void run_matmul(mm_run *r, int64_t m, int64_t n, int64_t k, int64_t bm, int64_t bn, int64_t bk)
{
    r->a = th_f32_seq(m * k);
    r->b = th_f32_seq(k * n);
    r->c = th_f32_fill(m * n, 0);
    for (int64_t i = 0; i < m * k; i++) r->a[i] = (float)((i * 7) % 13) - 6;
    for (int64_t i = 0; i < k * n; i++) r->b[i] = (float)((i * 5) % 11) - 5;
    r->args[0] = PL_ARRAY(r->a, PL_F32, m, k);
    r->args[1] = PL_ARRAY(r->b, PL_F32, k, n);
    r->out = PL_ARRAY(r->c, PL_F32, m, n);
    mm_call(&r->call, &r->p, m, n, k, bm, bn, bk);
    cr_assert_eq(pl_pallas_call(&r->call, r->args, &r->out, NULL, &r->rep), PL_OK, "%s", r->rep.error);
}

static void free_run(mm_run *r) { free(r->a), free(r->b), free(r->c); }

/* ---- V5: the matmul check names the block and the grid points ----------------- */

Test(verify, V5_correct_matmul_passes_with_no_blame)
{
    mm_run r;
    run_matmul(&r, 200, 300, 260, 128, 128, 128);
    pl_check chk;
    cr_assert_eq(pl_check_matmul_call(&r.call, &r.args[0], &r.args[1], &r.out, &chk, NULL), PL_OK);
    cr_assert_eq(chk.verdict, PL_PASS);
    cr_assert_str_empty(chk.blame);
    free_run(&r);
}

Test(verify, V5_wrong_element_fails_and_names_block_and_grid_points)
{
    mm_run r;
    run_matmul(&r, 200, 300, 260, 128, 128, 128);
    r.c[150 * 300 + 140] += 1000; /* row 150, col 140: block (1, 1) */
    pl_check chk;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    int rc = pl_check_matmul_call(&r.call, &r.args[0], &r.args[1], &r.out, &chk, f);
    fclose(f);
    cr_assert_eq(rc, PL_EVERIFY);
    cr_assert_eq(chk.verdict, PL_FAIL);
    cr_assert_eq(chk.worst_row, 150);
    cr_assert_eq(chk.worst_col, 140);
    /* the k axis has 3 blocks: grid points (1, 1, 0) .. (1, 1, 2) wrote it */
    cr_assert(strstr(chk.blame, "block (1, 1)") && strstr(chk.blame, "(1, 1, 0)") && strstr(chk.blame, "(1, 1, 2)"),
              "%s", chk.blame);
    cr_assert(strstr(buf, "FAIL") && strstr(buf, "block (1, 1)"), "%s", buf);
    free(buf);
    free_run(&r);
}

Test(verify, V5_bf16_rounding_is_not_an_error)
{
    int64_t m = 64, n = 128, k = 256;
    uint16_t *a = malloc((size_t)(m * k) * 2), *b = malloc((size_t)(k * n) * 2), *c = malloc((size_t)(m * n) * 2);
    for (int64_t i = 0; i < m * k; i++) a[i] = pl_f32_to_bf16((float)sin((double)i));
    for (int64_t i = 0; i < k * n; i++) b[i] = pl_f32_to_bf16((float)cos((double)i));
    mm_params p;
    pl_call call;
    mm_call(&call, &p, m, n, k, 64, 128, 128);
    pl_array args[2] = {PL_ARRAY(a, PL_BF16, m, k), PL_ARRAY(b, PL_BF16, k, n)}, out = PL_ARRAY(c, PL_BF16, m, n);
    pl_report rep;
    cr_assert_eq(pl_pallas_call(&call, args, &out, NULL, &rep), PL_OK);
    pl_check chk;
    cr_assert_eq(pl_check_matmul(&args[0], &args[1], &out, &chk, NULL), PL_OK);
    cr_assert_eq(chk.verdict, PL_PASS, "bf16 output rounding: norm %g", chk.norm_err);
    cr_assert_gt(chk.max_abs_err, 0, "bf16 output must differ from the f32 reference somewhere");
    free(a), free(b), free(c);
}

Test(verify, V5_bad_arguments_are_errors_not_crashes)
{
    float x[4] = {0};
    pl_array a = PL_ARRAY(x, PL_F32, 2, 2), b = PL_ARRAY(x, PL_F32, 3, 2), i32 = PL_ARRAY(x, PL_I32, 2, 2);
    pl_array nodata = PL_ARRAY(NULL, PL_F32, 2, 2);
    cr_assert_eq(pl_check_matmul(&a, &b, &a, NULL, NULL), PL_ESHAPE);
    cr_assert_eq(pl_check_matmul(&a, &a, &i32, NULL, NULL), PL_EINVAL);
    cr_assert_eq(pl_check_matmul(&a, &a, &nodata, NULL, NULL), PL_EINVAL);
    cr_assert_eq(pl_check_matmul(NULL, &a, &a, NULL, NULL), PL_EINVAL);
    char buf[64];
    int64_t e[2] = {5, 0};
    pl_call call = th_copy_call_2d(2, 2, 2, 2);
    cr_assert_eq(pl_check_blame(&call, 0, &a, e, buf, sizeof buf), PL_EINVAL, "element outside the array");
    cr_assert_eq(pl_check_blame(&call, 1, &a, e, buf, sizeof buf), PL_EINVAL, "no output 1");
}

/* ---- pl_allclose ---------------------------------------------------------------- */

Test(verify, allclose_uses_dtype_tolerances)
{
    float w[4] = {1, 2, 3, 4}, g[4] = {1, 2, 3, 4.00001f};
    pl_array want = PL_ARRAY(w, PL_F32, 2, 2), got = PL_ARRAY(g, PL_F32, 2, 2);
    pl_check chk;
    cr_assert_eq(pl_allclose(&got, &want, 0, 0, &chk, NULL), PL_OK);
    cr_assert_eq(chk.verdict, PL_PASS, "norm %g", chk.norm_err);
    g[3] = 4.01f;
    cr_assert_eq(pl_allclose(&got, &want, 0, 0, &chk, NULL), PL_EVERIFY);
    cr_assert_eq(chk.worst_row, 1);
    cr_assert_eq(chk.worst_col, 1);
    cr_assert_eq(pl_allclose(&got, &want, 1e-2, 0, &chk, NULL), PL_OK, "explicit tolerances win");
    g[3] = NAN;
    cr_assert_eq(pl_allclose(&got, &want, 1, 1, &chk, NULL), PL_EVERIFY, "NaN never matches a number");
    cr_assert_eq(chk.n_nan, 1);
    pl_array other = PL_ARRAY(w, PL_F32, 4);
    cr_assert_eq(pl_allclose(&got, &other, 0, 0, NULL, NULL), PL_ESHAPE);
    int32_t iw[2] = {1, 2}, ig[2] = {1, 3};
    pl_array wi = PL_ARRAY(iw, PL_I32, 2), gi = PL_ARRAY(ig, PL_I32, 2);
    cr_assert_eq(pl_allclose(&gi, &wi, 0, 0, NULL, NULL), PL_EVERIFY, "integers compare exactly");
}

/* ---- the heatmap ----------------------------------------------------------------- */

Test(verify, heatmap_marks_the_bad_block)
{
    mm_run r;
    run_matmul(&r, 256, 256, 128, 128, 128, 128);
    r.c[200 * 256 + 10] = 1e6f; /* block (1, 0) */
    char path[] = "/tmp/tilesim_heat_XXXXXX", msg[256];
    int fd = mkstemp(path);
    close(fd);
    /* a FAIL verdict: PL_EVERIFY, and the heatmap is written all the same */
    cr_assert_eq(pl_check_heatmap(&r.args[0], &r.args[1], &r.out, 128, 128, path, msg, sizeof msg), PL_EVERIFY, "%s",
                 msg);
    char *svg = th_read_file(path);
    cr_assert(svg && strncmp(svg, "<svg", 4) == 0);
    cr_assert(strstr(svg, "block (1, 0)") && strstr(svg, "FAIL"));
    /* the bad block takes the FAIL step of the palette (issue 10: viridis steps, colour-blind safe), the others a
     * passing one */
    const char *bad = strstr(svg, "<title>block (1, 0)");
    const char *rect = bad;
    while (rect > svg && strncmp(rect, "<rect", 5) != 0) rect--;
    cr_assert(strstr(rect, "fill=\"#440154\"") && strstr(rect, "fill=\"#440154\"") < bad, "the bad block is not FAIL");
    cr_assert(strstr(svg, "#FDE725\" stroke") || strstr(svg, "#7AD151\" stroke") || strstr(svg, "#22A884\" stroke"),
              "good blocks pass");
    free(svg);
    unlink(path);
    cr_assert_eq(pl_check_heatmap(&r.args[0], &r.args[1], &r.out, 128, 128, "/nonexistent/x.svg", msg, sizeof msg),
                 PL_EINVAL);
    cr_assert(strstr(msg, "/nonexistent/x.svg"), "%s", msg);
    free_run(&r);
}

/* ---- V4: order-dependence ---------------------------------------------------------- */

/* Each grid point adds one to a counter in SMEM scratch and stores it: the
 * result depends on the order the points run in, which a parallel axis
 * does not fix. */
static void counter_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_ref o = refs[0], count = refs[1];
    int64_t zero[1] = {0};
    if (pl_program_id(c, 0) == 0) pl_set(c, count, zero, 0);
    double n = pl_get(c, count, zero) + 1;
    pl_set(c, count, zero, n);
    pl_fill(c, o, n);
}

Test(verify, V4_order_dependence_is_reported)
{
    enum { G = 8 };
    float *o = th_f32_fill(G * 8 * 128, 0);
    pl_call call = {.name = "counter", .kernel = counter_kernel, .grid_rank = 1, .grid = {G},
                    .semantics = {PL_PARALLEL}, .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)},
                    .n_scratch = 1, .scratch = {PLTPU_SMEM(PL_I32, 1)}};
    pl_array out = PL_ARRAY(o, PL_F32, G * 8, 128);
    pl_report rep;
    int rc = pl_check_order(&call, NULL, &out, NULL, 42, &rep);
    cr_assert_eq(rc, PL_ERACE, "%s", rep.error);
    cr_assert(strstr(rep.error, "depends on their order") && strstr(rep.error, "seed 42") && strstr(rep.error, "V4"),
              "%s", rep.error);
    cr_assert(strstr(rep.error, "written at grid point"), "names the grid point: %s", rep.error);
    for (int i = 0; i < G; i++) cr_assert_eq(o[i * 8 * 128], (float)(i + 1), "the in-order result stays in outs");
    free(o);
}

Test(verify, V4_independent_kernel_is_order_free)
{
    mm_run r;
    run_matmul(&r, 256, 384, 256, 128, 128, 128);
    pl_report rep;
    cr_assert_eq(pl_check_order(&r.call, r.args, &r.out, NULL, 99, &rep), PL_OK, "%s", rep.error);
    free_run(&r);
}

/* A seed permutes the visiting order of parallel axes only. */
typedef struct order_log {
    int n;
    int64_t pts[64][2];
} order_log;

static void log_step(const pl_step_info *info, void *user)
{
    order_log *l = user;
    if (info->final || l->n >= 64) return;
    l->pts[l->n][0] = info->idx[0];
    l->pts[l->n][1] = info->idx[1];
    l->n++;
}

Test(verify, V4_seed_shuffles_parallel_axes_only)
{
    th_io io = th_io_2d(64, 128 * 4);
    pl_call call = th_copy_call_2d(64, 128 * 4, 8, 128); /* grid (8, 4) */
    call.semantics[0] = PL_PARALLEL;
    order_log plain = {0}, shuffled = {0};
    pl_options opt = {.on_step = log_step, .on_step_user = &plain};
    pl_report rep;
    cr_assert_eq(pl_pallas_call(&call, &io.a, &io.o, &opt, &rep), PL_OK);
    opt.seed = 3;
    opt.on_step_user = &shuffled;
    cr_assert_eq(pl_pallas_call(&call, &io.a, &io.o, &opt, &rep), PL_OK);
    cr_assert_eq(plain.n, 32);
    cr_assert_eq(shuffled.n, 32);
    int moved = 0, seen[8] = {0};
    for (int s = 0; s < 32; s++) {
        cr_assert_eq(plain.pts[s][1], s % 4, "in order, axis 1 runs fastest");
        cr_assert_eq(shuffled.pts[s][1], s % 4, "axis 1 is arbitrary: never shuffled");
        moved |= shuffled.pts[s][0] != plain.pts[s][0];
        seen[shuffled.pts[s][0]]++;
    }
    cr_assert(moved, "seed 3 left the parallel axis in order");
    for (int i = 0; i < 8; i++) cr_assert_eq(seen[i], 4, "each index of axis 0 still runs once per j");
    cr_assert_eq(th_f32_diff(io.in, io.out, io.n), 0, "a correct kernel gives the same result");
    th_io_free(&io);
}

/* ---- V2 options: out-of-bounds reads raise or read poison ------------------------ */

static void oob_kernel(pl_ctx *c, pl_ref *refs)
{
    double v = pl_get_at(c, refs[0], 8, 0); /* row 8 of an (8, 128) block */
    pl_fill(c, refs[1], v);
}

Test(verify, V2_oob_read_raises_by_default_and_reads_poison_on_request)
{
    th_io io = th_io_2d(8, 128);
    pl_call call = th_copy_call_2d(8, 128, 8, 128);
    call.kernel = oob_kernel;
    pl_report rep;
    int rc = pl_pallas_call(&call, &io.a, &io.o, NULL, &rep);
    cr_assert_eq(rc, PL_EBOUNDS);
    cr_assert(strstr(rep.error, "(8, 0)") && strstr(rep.error, "refs[0]") && strstr(rep.error, "input") &&
                  strstr(rep.error, "grid point (0, 0)") && strstr(rep.error, "V2"),
              "%s", rep.error);
    cr_assert_eq(th_io_touched(&io), 0, "nothing was written back");
    pl_options opt = {.oob_reads = PL_OOB_POISON};
    rc = pl_pallas_call(&call, &io.a, &io.o, &opt, &rep);
    cr_assert_eq(rc, PL_OK, "%s", rep.error);
    cr_assert(isnan(io.out[0]), "poison is NaN");
    cr_assert_geq(rep.n_findings, 1, "the NaN reaching HBM is a finding (V1)");
    opt.uninit = PL_UNINIT_ZERO;
    rc = pl_pallas_call(&call, &io.a, &io.o, &opt, &rep);
    cr_assert_eq(rc, PL_OK);
    cr_assert_eq(io.out[0], 0.0f, "zero poison");
    th_io_free(&io);
}

/* ---- checks off: faster, and silent ---------------------------------------------- */

static void nothing_kernel(pl_ctx *c, pl_ref *refs) { (void)c, (void)refs; }

Test(verify, checks_off_skips_the_findings)
{
    th_io io = th_io_2d(16, 128);
    pl_call call = th_copy_call_2d(16, 128, 8, 128);
    call.kernel = nothing_kernel;
    pl_report rep;
    cr_assert_eq(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), PL_OK);
    cr_assert_eq(rep.n_findings, 2, "two output blocks never written (P4)");
    cr_assert_eq(rep.findings[0].kind, PL_FIND_UNWRITTEN);
    cr_assert_str_eq(rep.findings[0].rule, "P4");
    pl_options off = {.checks_off = 1};
    cr_assert_eq(pl_pallas_call(&call, &io.a, &io.o, &off, &rep), PL_OK);
    cr_assert_eq(rep.n_findings, 0);
    pl_options strict = {.strict = 1};
    cr_assert_eq(pl_pallas_call(&call, &io.a, &io.o, &strict, &rep), PL_EPOISON);
    cr_assert(strstr(rep.error, "rule P4"), "%s", rep.error);
    th_io_free(&io);
}
