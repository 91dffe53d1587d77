/* tests/test_harden_ux.c: issue 8: the trace writer with many scratch
 * buffers, output blocks no grid point selects (P10), host memory, the
 * heatmap's verdict and the example programs' front ends, chip files.
 *
 * Example programs are run as programs, from the build directory of this
 * test binary (BUILD/tests/tilesim_tests -> BUILD/examples/NAME), so that a
 * private build tests its own examples.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "run.h"

/* ---- JSON ------------------------------------------------------------------------ */

/* Parse text as one JSON document (jansson), failing the test if it is not. */
static json_t *ux_json(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, 0, &e);
    cr_assert_not_null(v, "not JSON (line %d: %s): ...%s", e.line, e.text,
                       text + (strlen(text) > 300 ? strlen(text) - 300 : 0));
    return v;
}

/* ---- the trace (issue 8, item 1) ---------------------------------------------- */

/* Copies in0 to out0; touches every scratch buffer so that none is dead. */
static void scratch_copy_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_copy(c, refs[1], refs[0]);
    for (int i = 0; i < PL_MAX_SCRATCH; i++) pl_fill(c, refs[2 + i], 0);
}

/* The trace writer sized its VMEM-delta buffer without the scratch buffers:
 * 3 or more overflowed the heap (malloc(): corrupted top size) and left a
 * truncated file. With the full 16 the overflow is large enough to crash a
 * build without ASan too. */
Test(harden_ux, trace_with_many_scratch_buffers_is_complete_json)
{
    th_io io = th_io_2d(8, 128);
    pl_call call = th_copy_call_2d(8, 128, 8, 128);
    call.kernel = scratch_copy_kernel;
    call.n_scratch = PL_MAX_SCRATCH;
    for (int i = 0; i < PL_MAX_SCRATCH; i++) call.scratch[i] = PLTPU_VMEM(PL_F32, 8, 128);
    char path[64];
    th_temp_file(path, NULL);
    pl_options opt = {.trace_path = path};
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &io.a, &io.o, &opt, &rep), &rep);
    char *text = th_read_file(path);
    cr_assert_not_null(text);
    json_t *v = ux_json(text);
    json_t *ev = json_object_get(v, "traceEvents");
    cr_assert(json_is_array(ev) && json_array_size(ev) > 0);
    /* the first VMEM sample holds at least all scratch: 16 x 4 KiB */
    double first = -1;
    for (size_t i = 0; i < json_array_size(ev) && first < 0; i++) {
        const char *name = json_string_value(json_object_get(json_array_get(ev, i), "name"));
        if (name && strcmp(name, "VMEM in use") == 0)
            first = json_number_value(json_object_get(json_object_get(json_array_get(ev, i), "args"), "bytes"));
    }
    cr_assert_geq(first, PL_MAX_SCRATCH * 4096.0, "first VMEM sample %g", first);
    json_decref(v);
    free(text);
    unlink(path);
    th_io_free(&io);
}

/* ---- output blocks no grid point selects (issue 8, item 3; rule P10) ---------- */

static const pl_finding *find_kind(const pl_report *rep, pl_finding_kind k)
{
    int kept = rep->n_findings < PL_MAX_FINDINGS ? rep->n_findings : PL_MAX_FINDINGS;
    for (int i = 0; i < kept; i++)
        if (rep->findings[i].kind == k) return &rep->findings[i];
    return NULL;
}

/* A copy of (64, 128) in (8, 128) blocks with the grid one step short. */
static pl_call short_copy_call(void)
{
    pl_call call = th_copy_call_2d(64, 128, 8, 128);
    call.grid[0] -= 1; /* M/BM - 1 */
    return call;
}

static void expect_unselected(const pl_report *rep, const char *operand, const char *block)
{
    const pl_finding *f = find_kind(rep, PL_FIND_UNSELECTED);
    cr_assert_not_null(f, "no finding for the unselected block; %d findings, warnings: %s", rep->n_findings,
                       rep->warnings);
    cr_assert_str_eq(f->rule, "P10");
    cr_assert(strstr(f->msg, operand) && strstr(f->msg, block), "the finding names %s and %s: %s", operand, block,
              f->msg);
    cr_assert(strstr(rep->warnings, f->msg), "the finding is also a warning line: %s", rep->warnings);
}

Test(harden_ux, grid_one_step_short_reports_the_first_unselected_block)
{
    th_io io = th_io_2d(64, 128);
    pl_call call = short_copy_call();
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), &rep);
    expect_unselected(&rep, "out0", "(7, 0)");
    cr_assert(strstr(rep.findings[0].msg, "1 of 8"), "%s", rep.findings[0].msg);
    cr_assert_eq(rep.findings[0].block[0], 7);
    th_io_free(&io);
}

Test(harden_ux, unselected_block_is_an_error_under_strict)
{
    th_io io = th_io_2d(64, 128);
    pl_call call = short_copy_call();
    pl_options opt = {.strict = 1};
    pl_report rep;
    int rc = pl_pallas_call(&call, &io.a, &io.o, &opt, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EPOISON, "out0", "(7, 0)", "P10");
    th_io_free(&io);
}

static void row_map(const int64_t *g, const pl_ref *pf, int64_t *b, void *user)
{
    (void)pf, (void)user;
    b[0] = g[0];
    b[1] = 0;
}

Test(harden_ux, unselected_block_with_a_function_map)
{
    th_io io = th_io_2d(64, 128);
    pl_call call = short_copy_call();
    call.in[0].map = PL_MAP_FN(row_map, NULL);
    call.out[0].map = PL_MAP_FN(row_map, NULL);
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), &rep);
    expect_unselected(&rep, "out0", "(7, 0)");
    th_io_free(&io);
}

Test(harden_ux, unselected_block_in_cost_only_mode)
{
    pl_call call = short_copy_call();
    pl_array in = PL_ARRAY(NULL, PL_F32, 64, 128), out = PL_ARRAY(NULL, PL_F32, 64, 128);
    pl_options opt = {.cost_only = 1};
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &in, &out, &opt, &rep), &rep);
    expect_unselected(&rep, "out0", "(7, 0)");
}

/* On a megacore chip the cores split the parallel axis (G4): blocks written
 * by either core count, the missing one is still found. */
Test(harden_ux, unselected_block_on_a_megacore_chip)
{
    th_io io = th_io_2d(64, 256);
    pl_call call = th_copy_call_2d(64, 256, 8, 128);
    call.grid[1] = 1; /* column block 1 is never selected */
    call.semantics[0] = PL_PARALLEL;
    pl_options opt = {.chip = "v4"};
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &io.a, &io.o, &opt, &rep), &rep);
    cr_assert_eq(rep.cores, 2);
    expect_unselected(&rep, "out0", "(0, 1)");
    cr_assert(strstr(rep.findings[0].msg, "8 of 16"), "%s", rep.findings[0].msg);
    th_io_free(&io);
}

/* Full coverage, an aliased output (its unselected blocks keep the input, M6)
 * and a broadcast along a PL_ZERO dimension that covers everything: silent. */
Test(harden_ux, covered_and_aliased_outputs_are_silent)
{
    th_io io = th_io_2d(64, 128);
    pl_call full = th_copy_call_2d(64, 128, 8, 128);
    pl_report rep;
    th_expect_ok(pl_pallas_call(&full, &io.a, &io.o, NULL, &rep), &rep);
    cr_assert_eq(rep.n_findings, 0, "%s", rep.warnings);

    pl_call aliased = short_copy_call();
    aliased.n_alias = 1;
    aliased.alias[0].in = 0;
    aliased.alias[0].out = 0;
    pl_options strict = {.strict = 1};
    th_expect_ok(pl_pallas_call(&aliased, &io.a, &io.o, &strict, &rep), &rep);
    cr_assert_eq(rep.n_findings, 0, "%s", rep.warnings);
    th_io_free(&io);
}

/* A PL_ZERO dimension selects only block 0 of an array with more blocks. */
Test(harden_ux, constant_zero_dimension_leaves_blocks_unselected)
{
    th_io io = th_io_2d(64, 256);
    pl_call call = th_copy_call_2d(64, 256, 8, 128);
    call.grid[1] = 1;
    call.in[0].map = PL_MAP(0, PL_ZERO);
    call.out[0].map = PL_MAP(0, PL_ZERO);
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), &rep);
    expect_unselected(&rep, "out0", "(0, 1)");
    th_io_free(&io);
}

/* ---- host memory (issue 8, item 2) ---------------------------------------------- */

Test(harden_ux, host_memory_check_refuses_what_cannot_fit)
{
    char msg[512];
    cr_assert_eq(pl_host_memory_check(1e18, msg, sizeof msg), PL_ENOMEM);
    cr_assert(strstr(msg, "host memory") && strstr(msg, "1000000000000000000 bytes") && strstr(msg, "cost-only"),
              "the message names the bytes and the way out: %s", msg);
    cr_assert_eq(pl_host_memory_check(4096, msg, sizeof msg), PL_OK, "%s", msg);
    cr_assert_eq(pl_host_memory_check(-1, msg, sizeof msg), PL_EINVAL);
    cr_assert_eq(pl_host_memory_check(NAN, NULL, 0), PL_EINVAL, "no message buffer is fine");
    cr_assert_gt(pl_host_memory_available(), 1e6);
}

/* A what-if chip with 4 TiB of VMEM and a 2 TiB scratch buffer: legal on the
 * chip, impossible on the host. Refused before anything is allocated, with
 * the bytes and the hint; before, malloc failed with a bare "out of host
 * memory" (or, for sizes the host overcommits, the process was killed). */
Test(harden_ux, pallas_call_refuses_vmem_beyond_host_memory)
{
    pl_chip big = *pl_chip_find("v5e");
    big.vmem_bytes = big.vmem_default_limit = 1LL << 42;
    th_io io = th_io_2d(8, 128);
    pl_call call = th_copy_call_2d(8, 128, 8, 128);
    call.n_scratch = 1;
    call.scratch[0] = PLTPU_VMEM(PL_F32, 1LL << 20, 1LL << 19);
    pl_options opt = {.chip_spec = &big};
    pl_report rep;
    int rc = pl_pallas_call(&call, &io.a, &io.o, &opt, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_ENOMEM, "host memory", "2199023", "available", "cost_only");
    cr_assert_eq(th_io_touched(&io), 0, "a refused call leaves the output alone");
    th_io_free(&io);
}

/* ---- the heatmap's verdict and the JSON report (issue 8, item 4) ------------------ */

/* c = a @ I with one element broken: a FAIL verdict. */
Test(harden_ux, heatmap_returns_everify_on_a_fail_verdict)
{
    enum { N = 128 };
    float *a = th_f32_seq(N * N), *b = th_f32_fill(N * N, 0), *c = malloc(N * N * sizeof *c);
    for (int i = 0; i < N; i++) b[i * N + i] = 1;
    memcpy(c, a, N * N * sizeof *c);
    pl_array A = PL_ARRAY(a, PL_F32, N, N), B = PL_ARRAY(b, PL_F32, N, N), C = PL_ARRAY(c, PL_F32, N, N);
    char path[64], msg[512];
    th_temp_file(path, NULL);
    cr_assert_eq(pl_check_heatmap(&A, &B, &C, 64, 64, path, msg, sizeof msg), PL_OK, "%s", msg);
    c[100 * N + 3] += 1000;
    cr_assert_eq(pl_check_heatmap(&A, &B, &C, 64, 64, path, msg, sizeof msg), PL_EVERIFY, "%s", msg);
    cr_assert(strstr(msg, path) && strstr(msg, "FAIL"), "the heatmap is still written: %s", msg);
    /* well-formed XML: every '<' opens a tag (the legend's "error <= 1" was written bare, and a browser
     * refused the whole file) */
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    static char svg[1 << 16];
    size_t n = fread(svg, 1, sizeof svg - 1, f);
    fclose(f);
    svg[n] = '\0';
    for (const char *q = svg; (q = strchr(q, '<')); q++)
        cr_assert(q[1] == '/' || q[1] == '?' || q[1] == '!' || (q[1] >= 'a' && q[1] <= 'z'), "a bare '<' at: %.40s", q);
    cr_expect(strstr(svg, "error &lt;= 1"), "the legend escapes it");
    unlink(path);
    cr_assert_eq(pl_check_heatmap(&A, &B, &C, 64, 64, "/nonexistent/dir/h.svg", msg, sizeof msg), PL_EINVAL);
    cr_assert(strstr(msg, "/nonexistent/dir/h.svg") && strstr(msg, strerror(ENOENT)), "the reason: %s", msg);
    free(a), free(b), free(c);
}

Test(harden_ux, report_json_with_a_verification_member)
{
    th_io io = th_io_2d(8, 128);
    pl_call call = th_copy_call_2d(8, 128, 8, 128);
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), &rep);
    pl_check chk;
    cr_assert_eq(pl_allclose(&io.o, &io.a, 0, 0, &chk, NULL), PL_OK);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    pl_report_json_with(&rep, &chk, f);
    fclose(f);
    json_t *v = ux_json(buf);
    json_t *ver = json_object_get(v, "verification");
    cr_assert(json_is_object(ver), "no verification member: %s", buf);
    cr_assert_str_eq(json_string_value(json_object_get(ver, "verdict")), "PASS");
    cr_assert_eq(json_number_value(json_object_get(ver, "max_abs_err")), 0);
    cr_assert_not_null(json_object_get(ver, "norm_err"));
    cr_assert_not_null(json_object_get(v, "steps"), "the report's members are all still there");
    json_decref(v);
    free(buf);
    th_io_free(&io);
}

/* ---- chip files (issue 8, item 5) ---------------------------------------------- */

Test(harden_ux, chip_file_without_base_says_it_starts_from_v5e)
{
    pl_chip c;
    char err[512] = "";
    cr_assert_eq(pl_chip_parse("hbm_gbps = 100\n", "f.chip", &c, err, sizeof err), PL_OK, "%s", err);
    cr_assert_eq(c.bf16_flops, pl_chip_find("v5e")->bf16_flops);
    cr_assert(strstr(err, "f.chip") && strstr(err, "base") && strstr(err, "v5e"), "no note: '%s'", err);
    cr_assert_eq(pl_chip_parse("base = v4\nhbm_gbps = 100\n", "f.chip", &c, err, sizeof err), PL_OK, "%s", err);
    cr_assert_str_empty(err, "with a base there is nothing to say: %s", err);
}

Test(harden_ux, chip_load_of_a_directory_says_so)
{
    pl_chip c;
    char err[512];
    cr_assert_eq(pl_chip_load("/tmp", &c, err, sizeof err), PL_EINVAL);
    cr_assert(strstr(err, "/tmp") && strstr(err, "directory"), "%s", err);
    cr_assert_null(strstr(err, "larger than"), "%s", err);
}

static int has_control_bytes(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f) return 1;
    return 0;
}

Test(harden_ux, chip_errors_escape_nonprintable_bytes)
{
    pl_chip c;
    char err[1024];
    const char *bad[] = {"base = v5e\nhbm\x01gbps = 3\n", "base = v5e\nhbm_gbps = \x1b[31m\n", "base = v\x7f\n",
                         "base = v5e\n\x02junk\n", "base = v5e\nname = a\x03z\n"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cr_assert_eq(pl_chip_parse(bad[i], "f", &c, err, sizeof err), PL_EINVAL, "case %zu", i);
        cr_assert_not(has_control_bytes(err), "case %zu echoes raw bytes: %s", i, err);
        cr_assert(strstr(err, "\\x"), "case %zu: escaped as \\xNN: %s", i, err);
    }
}

/* ---- the example programs (issue 8, items 2 and 4) --------------------------------- */

#define RUN_EX TH_RUN_EX

static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

/* 2^21 cubed: 176 TiB of arrays. Refused at once, before printing the
 * header, with the bytes and the way out; before, malloc failed with a bare
 * "out of memory" (and sizes the host overcommits were killed part way). */
Test(harden_ux, matmul_refuses_a_run_beyond_host_memory)
{
    th_run r = RUN_EX("matmul", "2097152", "2097152", "2097152", "512", "512", "512");
    cr_assert_eq(r.status, 2, "exit %d; stderr: %s", r.status, r.err);
    cr_assert(strstr(r.err, "host memory") && strstr(r.err, "bytes") && strstr(r.err, "--cost-only"),
              "the bytes and the hint: %s", r.err);
    cr_assert_str_empty(r.out, "nothing printed before the refusal: %s", r.out);
    th_run_free(&r);
}

/* The same size class cost-only needs no data and runs: on a chip whose
 * HBM holds its 16.2 GiB (a v5e's 16 GiB does not: rule P1). */
Test(harden_ux, matmul_cost_only_of_a_huge_shape_runs)
{
    th_run r = RUN_EX("matmul", "65536", "65536", "512", "512", "512", "512", "--cost-only", "--chip", "v5p");
    cr_assert_eq(r.status, 0, "exit %d; stderr: %s", r.status, r.err);
    cr_assert(strstr(r.out, "16384 steps"), "%s", r.out);
    th_run_free(&r);
    r = RUN_EX("matmul", "65536", "65536", "512", "512", "512", "512", "--chip", "v5p");
    cr_assert_eq(r.status, 2, "a real run is refused: exit %d; stderr: %s", r.status, r.err);
    cr_assert(strstr(r.err, "--cost-only"), "%s", r.err);
    th_run_free(&r);
}

Test(harden_ux, every_example_takes_cost_only)
{
    const char *names[] = {"matmul", "flash_attention", "paged_attention", "grouped_matmul", "block_sparse_matmul"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        th_run r = RUN_EX(names[i], "--help");
        cr_assert_eq(r.status, 0, "%s --help: exit %d", names[i], r.status);
        cr_assert(strstr(r.out, "--cost-only"), "%s --help lacks --cost-only: %s", names[i], r.out);
        th_run_free(&r);
        r = RUN_EX(names[i], "--cost-only");
        cr_assert_eq(r.status, 0, "%s --cost-only: exit %d; stderr: %s", names[i], r.status, r.err);
        cr_assert_str_empty(r.err, "%s --cost-only: %s", names[i], r.err);
        th_run_free(&r);
    }
}

/* An unknown chip: one message, before the demo prints anything. */
Test(harden_ux, matmul_unknown_chip_is_said_once_before_anything)
{
    th_run r = RUN_EX("matmul", "--chip", "v9");
    cr_assert_eq(r.status, 2);
    cr_assert_eq(count_of(r.err, "'v9'"), 1, "said once: %s", r.err);
    cr_assert_str_empty(r.out, "no header before the error: %s", r.out);
    th_run_free(&r);
}

/* An unwritable heatmap path fails before the run, with the system's reason. */
Test(harden_ux, matmul_bad_heatmap_path_fails_before_running)
{
    th_run r = RUN_EX("matmul", "256", "256", "256", "128", "128", "128", "--heatmap", "/nonexistent/dir/h.svg");
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "/nonexistent/dir/h.svg") && strstr(r.err, strerror(ENOENT)), "%s", r.err);
    cr_assert_null(strstr(r.out, "== matmul"), "it ran first: %s", r.out);
    th_run_free(&r);
}

/* The same for `tilesim verify` and `run`: every output path is probed before the run (it ran the whole
 * check, printed its verdict, and only then failed on --heatmap). */
Test(harden_ux, cli_bad_output_paths_fail_before_running)
{
    const char *opts[][2] = {{"verify", "--heatmap"}, {"run", "--trace"}, {"run", "--html"}};
    for (int i = 0; i < 3; i++) {
        th_run r = TH_RUN(opts[i][0], "matmul", opts[i][1], "/nonexistent/dir/out.file");
        cr_assert_eq(r.status, 2, "%s %s: %s", opts[i][0], opts[i][1], r.err);
        cr_expect(strstr(r.err, opts[i][1]) && strstr(r.err, "/nonexistent/dir") && strstr(r.err, strerror(ENOENT)),
                  "%s", r.err);
        cr_expect_null(strstr(r.out, "PASS"), "it ran first: %s", r.out);
        cr_expect_null(strstr(r.out, "time on"), "it ran first: %s", r.out);
        th_run_free(&r);
    }
}

Test(harden_ux, matmul_json_has_the_verdict)
{
    th_run r = RUN_EX("matmul", "256", "256", "256", "128", "128", "128", "--json");
    cr_assert_eq(r.status, 0, "%s", r.err);
    json_t *v = ux_json(r.out);
    json_t *ver = json_object_get(v, "verification");
    cr_assert(json_is_object(ver), "no verification: %s", r.out);
    cr_assert_str_eq(json_string_value(json_object_get(ver, "verdict")), "PASS");
    cr_assert(json_is_number(json_object_get(ver, "max_abs_err")) && json_is_number(json_object_get(ver, "norm_err")));
    json_decref(v);
    th_run_free(&r);
}

/* The crash, through the program: flash attention has six VMEM
 * scratch buffers. */
Test(harden_ux, flash_attention_trace_is_complete_json)
{
    char path[64];
    th_temp_file(path, NULL);
    th_run r = RUN_EX("flash_attention", "256", "256", "128", "128", "128", "--trace", path);
    cr_assert_eq(r.status, 0, "exit %d; stderr: %s", r.status, r.err);
    char *text = th_read_file(path);
    cr_assert_not_null(text);
    json_t *v = ux_json(text);
    cr_assert(json_array_size(json_object_get(v, "traceEvents")) > 0);
    json_decref(v);
    free(text);
    unlink(path);
    th_run_free(&r);
}
