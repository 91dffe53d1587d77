/* tests/test_buggy.c: the buggy kernels gallery (examples/kernels/buggy.h).
 *
 * Each case is a real kernel with one mistake. For each, tilesim must say
 * so: the right status or finding kind, a message that names the operand,
 * the grid point (computed here from the case's shapes) and the rule. Then
 * the options around the checks: with checks_off the NaN-style cases go
 * unreported (so it is the checks that find them), races too (V4: nothing
 * is rejected for a race with the checks off), while the errors that are
 * not checks (P5 revisits, V2 bounds) remain; the parallel reductions, which
 * run on v5p by default, are also shown to be a warning on one core; the
 * missing store is found with uninit = zero too (it does not rely on NaN);
 * strict turns findings into errors. Last, the correct matmul produces no
 * finding at all over several shapes, ragged ones included.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../examples/kernels/buggy.h"
#include "../examples/kernels/matmul.h"
#include "helpers.h"

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* The case named `name`, run with opt; fails the test if it is missing. */
static int run_case(const char *name, const pl_options *opt, pl_report *rep)
{
    const bug_case *bc = bug_find(name);
    cr_assert_not_null(bc, "no case named %s", name);
    memset(rep, 0, sizeof *rep);
    return bc->run(opt, rep);
}

/* "(a, b, c)", as tilesim prints grid points and blocks. */
static const char *fmt_idx(char *buf, size_t n, const int64_t *idx, int rank)
{
    size_t at = (size_t)snprintf(buf, n, "(");
    for (int d = 0; d < rank; d++) at += (size_t)snprintf(buf + at, n - at, d ? ", %lld" : "%lld", (long long)idx[d]);
    snprintf(buf + at, n - at, ")");
    return buf;
}

static void expect_has(const char *msg, const char *sub)
{
    cr_assert(strstr(msg, sub), "message lacks \"%s\": %s", sub, msg);
}

/* The last grid point of output block (i, j) in the (M/bm, N/bn, nk) grid. */
static void last_point(int64_t i, int64_t j, int64_t nk, int64_t *pt)
{
    pt[0] = i, pt[1] = j, pt[2] = nk - 1;
}

/* The finding f is of kind at point pt and block (bi, bj) of output "o". */
static void expect_finding(const pl_report *rep, const pl_finding *f, pl_finding_kind kind, const char *rule,
                           const int64_t *pt, int64_t bi, int64_t bj)
{
    char p[64], b[64], s[160];
    int64_t blk[2] = {bi, bj};
    cr_assert_eq(f->kind, kind, "finding kind %d, want %d: %s", f->kind, kind, f->msg);
    cr_assert_str_eq(f->rule, rule, "finding rule %s, want %s: %s", f->rule, rule, f->msg);
    cr_assert(f->operand >= 0 && f->operand < rep->n_operands, "finding operand %d: %s", f->operand, f->msg);
    cr_assert_str_eq(rep->op[f->operand].name, "o");
    for (int a = 0; a < 3; a++)
        cr_assert_eq(f->point[a], pt[a], "finding point %s, want %s", fmt_idx(p, sizeof p, f->point, 3),
                     fmt_idx(b, sizeof b, pt, 3));
    cr_assert(f->block[0] == bi && f->block[1] == bj, "finding block %s, want (%lld, %lld)",
              fmt_idx(b, sizeof b, f->block, 2), (long long)bi, (long long)bj);
    expect_has(f->msg, "o: ");
    snprintf(s, sizeof s, "block %s", fmt_idx(b, sizeof b, blk, 2));
    expect_has(f->msg, s);
    snprintf(s, sizeof s, "after grid point %s", fmt_idx(p, sizeof p, pt, 3));
    expect_has(f->msg, s);
    snprintf(s, sizeof s, "rule %s", rule);
    expect_has(f->msg, s);
}

/* ---- the table ----------------------------------------------------------------- */

Test(buggy, table_lists_every_class_once)
{
    static const char *want[] = {"missing_zero", "missing_store", "parallel_reduction", "parallel_reduction_fn",
                                 "revisit",      "oob_index",     "read_padding",       "write_input"};
    int n = 0;
    const bug_case *cases = bug_cases(&n);
    cr_assert_eq(n, (int)(sizeof want / sizeof *want));
    for (int i = 0; i < n; i++) {
        cr_assert(cases[i].name && cases[i].bug && cases[i].rule && cases[i].run);
        cr_assert(cases[i].bug[0] && cases[i].rule[0] && !strchr(cases[i].bug, '\n'));
        cr_assert_eq(bug_find(cases[i].name), &cases[i]);
        for (int j = 0; j < i; j++) cr_assert_str_neq(cases[i].name, cases[j].name);
    }
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) cr_assert_not_null(bug_find(want[i]), "%s", want[i]);
    cr_assert_null(bug_find("no_such_bug"));
    cr_assert_null(bug_find(NULL));
}

/* Every case is caught with the default options: an error or a finding. */
Test(buggy, every_case_is_caught_by_default)
{
    int n = 0;
    const bug_case *cases = bug_cases(&n);
    for (int i = 0; i < n; i++) {
        pl_report rep;
        int rc = run_case(cases[i].name, NULL, &rep);
        cr_assert_eq(rep.status, rc);
        cr_assert(rc != PL_OK || rep.n_findings > 0, "%s went unnoticed", cases[i].name);
        cr_assert(rc == PL_OK || rep.error[0], "%s: error %d without a message", cases[i].name, rc);
    }
}

/* ---- missing_zero (V1, M2) ------------------------------------------------------- */

Test(buggy, missing_zero_reports_nan_from_an_unzeroed_accumulator)
{
    pl_report rep;
    int rc = run_case("missing_zero", NULL, &rep);
    th_expect_ok(rc, &rep);
    int64_t nm = BUG_M / BUG_BM, nn = BUG_N / BUG_BN, nk = cdiv(BUG_K, BUG_BK), pt[3];
    cr_assert_eq(rep.n_findings, nm * nn, "%d findings, want one per output block", rep.n_findings);
    last_point(0, 0, nk, pt);
    const pl_finding *f = &rep.findings[0];
    expect_finding(&rep, f, PL_FIND_POISON, "V1", pt, 0, 0);
    expect_has(f->msg, "NaN");
    expect_has(f->msg, "never zeroed");
    expect_has(f->msg, "refs[3] (scratch"); /* acc */
    expect_has(f->msg, "at grid point (0, 0, 0)"); /* the first read, before anything wrote it */
    expect_has(f->msg, "M2");
    /* the other blocks: each after its own last grid point */
    for (int i = 1; i < rep.n_findings && i < PL_MAX_FINDINGS; i++) {
        int64_t bi = i / nn, bj = i % nn;
        last_point(bi, bj, nk, pt);
        expect_finding(&rep, &rep.findings[i], PL_FIND_POISON, "V1", pt, bi, bj);
    }
}

Test(buggy, missing_zero_strict_is_an_error)
{
    pl_report rep;
    pl_options opt = {.strict = 1};
    int rc = run_case("missing_zero", &opt, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EPOISON, "o: ", "block (0, 0)", "after grid point (0, 0, 1)", "never zeroed",
                    "rule V1");
}

/* ---- missing_store (P4) -------------------------------------------------------- */

static void expect_missing_store(const pl_report *rep)
{
    int64_t nm = BUG_M / BUG_BM, nn = BUG_N / BUG_BN, nk = cdiv(BUG_K, BUG_BK), pt[3];
    cr_assert_eq(rep->n_findings, nm * nn, "%d findings, want one per output block", rep->n_findings);
    for (int i = 0; i < rep->n_findings && i < PL_MAX_FINDINGS; i++) {
        int64_t bi = i / nn, bj = i % nn;
        last_point(bi, bj, nk, pt);
        expect_finding(rep, &rep->findings[i], PL_FIND_UNWRITTEN, "P4", pt, bi, bj);
        expect_has(rep->findings[i].msg, "no op wrote");
    }
}

Test(buggy, missing_store_reports_unwritten_blocks)
{
    pl_report rep;
    int rc = run_case("missing_store", NULL, &rep);
    th_expect_ok(rc, &rep);
    expect_missing_store(&rep);
}

/* The check sees that no op wrote the block: it does not rely on NaN. */
Test(buggy, missing_store_reported_with_uninit_zero)
{
    pl_report rep;
    pl_options opt = {.uninit = PL_UNINIT_ZERO};
    int rc = run_case("missing_store", &opt, &rep);
    th_expect_ok(rc, &rep);
    expect_missing_store(&rep);
}

Test(buggy, missing_store_strict_is_an_error)
{
    pl_report rep;
    pl_options opt = {.strict = 1};
    int rc = run_case("missing_store", &opt, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EPOISON, "o: ", "block (0, 0)", "after grid point (0, 0, 1)", "rule P4");
}

/* ---- parallel_reduction (V4, G3) --------------------------------------------------- */

Test(buggy, parallel_reduction_is_rejected_before_running)
{
    pl_report rep;
    int rc = run_case("parallel_reduction", NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_ERACE, "o: ", "grid points (0, 0, 0) and (0, 0, 1)", "axis 2", "block (0, 0)",
                    "V4", "G3");
    cr_assert_eq(rep.steps, 0, "%lld grid points ran", (long long)rep.steps);
}

/* The function-form map is opaque to the validator: the race is found at the
 * second grid point that selects output block (0, 0). */
Test(buggy, parallel_reduction_fn_is_caught_while_running)
{
    pl_report rep;
    int rc = run_case("parallel_reduction_fn", NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_ERACE, "o: ", "grid points (0, 0, 0) and (0, 0, 1)", "axis 2", "block (0, 0)",
                    "V4", "G3");
    cr_assert_eq(rep.steps, 1, "%lld grid points ran, want 1 (the race is at the second)", (long long)rep.steps);
}

/* On a single-core chip the points of the parallel axis run in order: the
 * answer is right, and the race is a warning about megacore chips (V4). */
Test(buggy, parallel_reduction_is_a_warning_on_one_core)
{
    const char *cases[] = {"parallel_reduction", "parallel_reduction_fn"};
    for (int i = 0; i < 2; i++) {
        pl_report rep;
        pl_options opt = {.chip = "v5e"};
        int rc = run_case(cases[i], &opt, &rep);
        cr_assert_eq(rc, PL_OK, "%s on v5e: %s", cases[i], rep.error);
        cr_assert(strstr(rep.warnings, "o: ") && strstr(rep.warnings, "axis 2") && strstr(rep.warnings, "megacore") &&
                      strstr(rep.warnings, "V4"),
                  "%s: %s", cases[i], rep.warnings);
        cr_assert_eq(rep.n_findings, 1, "%s: one race finding", cases[i]);
        cr_assert_str_eq(rep.findings[0].rule, "V4");
    }
}

/* ---- revisit (P5) --------------------------------------------------------------- */

Test(buggy, revisit_names_both_grid_points)
{
    /* grid (nk, nm, nn), k outermost: block (0, 0) is held at (0, 0, 0), written
     * back when (0, 0, 1) selects block (0, 1), and selected again at (1, 0, 0). */
    int64_t nm = BUG_M / BUG_BM, nn = BUG_N / BUG_BN;
    cr_assert(nm * nn > 1 && BUG_K / BUG_BK > 1, "the shapes must give a revisit");
    int64_t then[3] = {0, 0, 0}, now[3] = {1, 0, 0};
    char a[64], b[64], s1[160], s2[160];
    snprintf(s1, sizeof s1, "grid point %s selects output block (0, 0) again", fmt_idx(a, sizeof a, now, 3));
    snprintf(s2, sizeof s2, "written back to HBM after grid point %s", fmt_idx(b, sizeof b, then, 3));
    pl_report rep;
    int rc = run_case("revisit", NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EREVISIT, "o: ", s1, s2, "rule P5");
    cr_assert_eq(rep.steps, nm * nn, "%lld grid points ran", (long long)rep.steps);
}

/* ---- oob_index (V2) ------------------------------------------------------------ */

Test(buggy, oob_index_names_ref_index_and_grid_point)
{
    int64_t nk = cdiv(BUG_K, BUG_BK), pt[3];
    last_point(0, 0, nk, pt);
    char p[64], s1[160], s2[64];
    snprintf(s1, sizeof s1, "at grid point %s", fmt_idx(p, sizeof p, pt, 3));
    snprintf(s2, sizeof s2, "index (%d, 0)", BUG_BM);
    pl_report rep;
    int rc = run_case("oob_index", NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBOUNDS, s1, "pl_get", s2, "refs[3] (scratch", "rule V2");
}

/* In poison mode the read returns NaN, the call succeeds and the NaN reaches
 * HBM: one finding per output block, at the last row's element (BM-1, 0). */
Test(buggy, oob_index_poison_reads_become_nan_findings)
{
    pl_options opt = {.oob_reads = PL_OOB_POISON};
    pl_report rep;
    int rc = run_case("oob_index", &opt, &rep);
    th_expect_ok(rc, &rep);
    int64_t nm = BUG_M / BUG_BM, nn = BUG_N / BUG_BN, nk = cdiv(BUG_K, BUG_BK), pt[3];
    cr_assert_eq(rep.n_findings, nm * nn);
    last_point(0, 0, nk, pt);
    expect_finding(&rep, &rep.findings[0], PL_FIND_POISON, "V1", pt, 0, 0);
    char s[64];
    snprintf(s, sizeof s, "element (%d, 0)", BUG_BM - 1);
    expect_has(rep.findings[0].msg, s);
}

/* The finding should give the cause it knows: a poison read outside a Ref
 * (rule V2), not "part of the block left unwritten (rule P4)". */
Test(buggy, oob_index_poison_finding_explains_the_read)
{
    pl_options opt = {.oob_reads = PL_OOB_POISON};
    pl_report rep;
    int rc = run_case("oob_index", &opt, &rep);
    th_expect_ok(rc, &rep);
    cr_assert_gt(rep.n_findings, 0);
    const char *msg = rep.findings[0].msg;
    expect_has(msg, "refs[3] (scratch");
    expect_has(msg, "V2");
    cr_expect(!strstr(msg, "left unwritten"), "the block was written in full; message: %s", msg);
}

/* ---- read_padding (B6, V1) ---------------------------------------------------- */

Test(buggy, read_padding_explains_the_edge_block)
{
    int64_t nk = cdiv(BUG_K_RAGGED, BUG_BK_RAGGED), valid = BUG_K_RAGGED - (nk - 1) * BUG_BK_RAGGED, pt[3];
    int64_t nm = BUG_M / BUG_BM, nn = BUG_N / BUG_BN;
    pl_report rep;
    int rc = run_case("read_padding", NULL, &rep);
    th_expect_ok(rc, &rep);
    cr_assert_eq(rep.n_findings, nm * nn);
    last_point(0, 0, nk, pt);
    const pl_finding *f = &rep.findings[0];
    expect_finding(&rep, f, PL_FIND_POISON, "V1", pt, 0, 0);
    char p[64], s[160];
    expect_has(f->msg, "edge-block padding");
    expect_has(f->msg, "rule B6");
    expect_has(f->msg, "refs[0] (input"); /* x, read first by pl_dot */
    snprintf(s, sizeof s, "read refs[0] (input, VMEM f32) 'x' at grid point %s", fmt_idx(p, sizeof p, pt, 3));
    expect_has(f->msg, s);
    snprintf(s, sizeof s, "only %lld elements", (long long)valid);
    expect_has(f->msg, s);
}

/* M, N and K all ragged (300 x 200 x 520 in 128 blocks), K unmasked: every NaN comes from the K edge.
 * The M and N edges' padding reaches only rows and columns the write-back drops, so the finding names
 * the read past K (x's dimension 1 or y's dimension 0), not the first padding read; it named x's rows
 * or y's columns in four of six blocks. */
Test(buggy, read_padding_on_every_edge_names_the_contraction_edge)
{
    pl_call call = bug_matmul_call(bug_read_padding_kernel, 300, 200, 520, 128, 128, 128);
    pl_report rep;
    th_expect_ok(bug_run_matmul(&call, 300, 200, 520, NULL, &rep), &rep);
    cr_assert_eq(rep.n_findings, 3 * 2, "one per output block");
    for (int i = 0; i < rep.n_findings; i++) {
        const char *m = rep.findings[i].msg;
        int k_edge = (strstr(m, "'x' at grid point") && strstr(m, "of dimension 1, but only 8 elements")) ||
                     (strstr(m, "'y' at grid point") && strstr(m, "of dimension 0, but only 8 elements"));
        cr_expect(k_edge && strstr(m, ", 4) up to index 127"), "finding %d: %s", i, m);
    }
}

/* Every finding explains its own block: the padding read happened at that
 * block's last grid point, not at the first block's. */
Test(buggy, read_padding_each_finding_names_its_own_grid_point)
{
    int64_t nk = cdiv(BUG_K_RAGGED, BUG_BK_RAGGED), nn = BUG_N / BUG_BN, pt[3];
    pl_report rep;
    int rc = run_case("read_padding", NULL, &rep);
    th_expect_ok(rc, &rep);
    for (int i = 0; i < rep.n_findings && i < PL_MAX_FINDINGS; i++) {
        const pl_finding *f = &rep.findings[i];
        last_point(i / nn, i % nn, nk, pt);
        expect_finding(&rep, f, PL_FIND_POISON, "V1", pt, i / nn, i % nn);
        char p[64], s[160];
        snprintf(s, sizeof s, "read refs[0] (input, VMEM f32) 'x' at grid point %s", fmt_idx(p, sizeof p, pt, 3));
        cr_expect(strstr(f->msg, s), "finding %d (block (%lld, %lld)) lacks \"%s\": %s", i, (long long)(i / nn),
                  (long long)(i % nn), s, f->msg);
    }
}

Test(buggy, read_padding_strict_is_an_error)
{
    pl_report rep;
    pl_options opt = {.strict = 1};
    int rc = run_case("read_padding", &opt, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EPOISON, "o: ", "block (0, 0)", "after grid point (0, 0, 1)", "rule V1",
                    "edge-block padding", "rule B6");
}

/* ---- write_input (V3) ------------------------------------------------------------- */

Test(buggy, write_input_is_a_finding)
{
    pl_report rep;
    int rc = run_case("write_input", NULL, &rep);
    th_expect_ok(rc, &rep);
    cr_assert_eq(rep.n_findings, 1, "%d findings", rep.n_findings);
    const pl_finding *f = &rep.findings[0];
    cr_assert_eq(f->kind, PL_FIND_INPUT_WRITE);
    cr_assert_str_eq(f->rule, "V3");
    for (int a = 0; a < 3; a++) cr_assert_eq(f->point[a], 0, "finding point axis %d = %lld", a, (long long)f->point[a]);
    expect_has(f->msg, "at grid point (0, 0, 0)");
    expect_has(f->msg, "pl_mul");
    expect_has(f->msg, "refs[0] (input");
    expect_has(f->msg, "rule V3");
}

/* The finding knows its operand: x, rep.op[0]. */
Test(buggy, write_input_finding_names_its_operand)
{
    pl_report rep;
    int rc = run_case("write_input", NULL, &rep);
    th_expect_ok(rc, &rep);
    cr_assert_gt(rep.n_findings, 0);
    const pl_finding *f = &rep.findings[0];
    cr_expect_eq(f->operand, 0, "finding operand %d, want 0 (x): %s", f->operand, f->msg);
    if (f->operand >= 0 && f->operand < rep.n_operands) cr_expect_str_eq(rep.op[f->operand].name, "x");
}

Test(buggy, write_input_strict_is_an_error)
{
    pl_report rep;
    pl_options opt = {.strict = 1};
    int rc = run_case("write_input", &opt, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EREADONLY, "at grid point (0, 0, 0)", "pl_mul", "refs[0] (input", "rule V3");
}

/* ---- checks_off: it is the checks that find the bugs ---------------------------- */

Test(buggy, checks_off_hides_the_checked_bugs_only)
{
    static const struct {
        const char *name;
        int code; /* PL_OK: a check's finding, gone without checks */
    } want[] = {
        {"missing_zero", PL_OK},           {"missing_store", PL_OK},   {"parallel_reduction", PL_OK},
        {"parallel_reduction_fn", PL_OK},  {"revisit", PL_EREVISIT},   {"oob_index", PL_EBOUNDS},
        {"read_padding", PL_OK},           {"write_input", PL_OK},
    };
    int n = 0;
    bug_cases(&n);
    cr_assert_eq(n, (int)(sizeof want / sizeof *want), "a new case needs a line here");
    pl_options opt = {.checks_off = 1};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        pl_report rep;
        int rc = run_case(want[i].name, &opt, &rep);
        cr_assert_eq(rc, want[i].code, "%s with checks off returned %d (%s), want %d: %s", want[i].name, rc,
                     pl_strerror(rc), want[i].code, rep.error);
        cr_assert_eq(rep.n_findings, 0, "%s with checks off has %d findings: %s", want[i].name, rep.n_findings,
                     rep.n_findings ? rep.findings[0].msg : "");
    }
}

/* ---- no false positives: the correct matmul ------------------------------------- */

Test(buggy, correct_matmul_has_no_findings)
{
    static const int64_t shapes[][6] = {
        /* m, n, k, bm, bn, bk */
        {256, 384, 256, 128, 128, 128}, /* as the gallery */
        {256, 256, 300, 128, 128, 256}, /* ragged K, as read_padding */
        {300, 200, 260, 128, 128, 128}, /* ragged everywhere */
        {64, 128, 1000, 64, 128, 512},  /* one output block, long ragged K */
        {200, 130, 129, 8, 128, 128},   /* thin blocks, ragged N and K */
        {128, 128, 128, 128, 128, 128}, /* one grid point */
    };
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        const int64_t *t = shapes[s];
        for (int strict = 0; strict < 2; strict++) {
            mm_params params;
            pl_call call;
            mm_call(&call, &params, t[0], t[1], t[2], t[3], t[4], t[5]);
            pl_options opt = {.strict = strict};
            pl_report rep;
            int rc = bug_run_matmul(&call, t[0], t[1], t[2], &opt, &rep);
            cr_assert_eq(rc, PL_OK, "%lldx%lldx%lld in (%lld, %lld, %lld)%s: %d %s", (long long)t[0],
                         (long long)t[1], (long long)t[2], (long long)t[3], (long long)t[4], (long long)t[5],
                         strict ? " strict" : "", rc, rep.error);
            cr_assert_eq(rep.n_findings, 0, "%lldx%lldx%lld in (%lld, %lld, %lld): false positive: %s",
                         (long long)t[0], (long long)t[1], (long long)t[2], (long long)t[3], (long long)t[4],
                         (long long)t[5], rep.findings[0].msg);
        }
    }
}
