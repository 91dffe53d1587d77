/* tests/test_cli.c: the `tilesim` command, run as a program.
 *
 * Each test runs the tilesim of the suite's own build directory (the test
 * binary is BUILD/tests/tilesim_tests, the command BUILD/tilesim; $TILESIM
 * overrides it) with fork/exec, its stdout and stderr going to temporary
 * files, and checks the exit status and what was printed. Problems are small
 * so that every run takes milliseconds. A missing binary fails every test
 * with a message saying how to build it.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run.h"

static void expect_has(const char *text, const char *sub, const char *what)
{
    cr_expect(strstr(text, sub), "%s lacks \"%s\":\n%s", what, sub, text);
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

/* ---- the build directory ------------------------------------------------------------ */

/* th_build_path finds this test binary's own build directory: BUILD/tests/
 * tilesim_tests there is this very file, whatever BUILD is. */
Test(cli, build_path_names_this_test_binary)
{
    char path[PATH_MAX];
    struct stat self, found;
    th_build_path("tests/tilesim_tests", path, sizeof path);
    cr_assert_eq(stat("/proc/self/exe", &self), 0);
    cr_assert_eq(stat(path, &found), 0, "%s: no such file", path);
    cr_assert(self.st_dev == found.st_dev && self.st_ino == found.st_ino, "%s is not this test binary", path);
    cr_assert_str_eq(th_build_path("", path, sizeof path) + strlen(path) - 1, "/");
}

/* ---- chips ------------------------------------------------------------------------ */

Test(cli, chips_table_lists_every_preset)
{
    th_run r = TH_RUN("chips");
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    const char *names[] = {"v4", "v5e", "v5p", "v6e", "v7x"};
    for (int i = 0; i < 5; i++) expect_has(r.out, names[i], "chips");
    expect_has(r.out, "critical intensity", "chips");
    expect_has(r.out, "v5e is the default", "chips");
    expect_has(r.out, "4x16x8", "chips: v5p's SparseCores (K5)");
    cr_expect_str_empty(r.err);
    th_run_free(&r);
}

Test(cli, chips_json_and_chip_file)
{
    th_run r = TH_RUN("chips", "--json");
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    json_t *doc = th_json_parse(r.out, "chips --json");
    json_t *chips = json_object_get(doc, "chips");
    cr_assert(json_is_array(chips), "no \"chips\" array:\n%s", r.out);
    cr_assert_eq((int)json_array_size(chips), pl_chip_count());
    cr_assert_str_eq(th_json_str(json_array_get(chips, json_array_size(chips) - 1), "name"), "v7x");
    /* K5: the SparseCore figures pl_kernel's subcore mesh uses (v7x: 2 x 16 subcores of 16 lanes, 512 KiB) */
    json_t *v7x = json_array_get(chips, json_array_size(chips) - 1);
    cr_assert_eq(json_integer_value(json_object_get(v7x, "sc_cores")), 2);
    cr_assert_eq(json_integer_value(json_object_get(v7x, "sc_lanes")), 16);
    cr_assert_eq(json_integer_value(json_object_get(v7x, "sc_vmem_bytes")), 512 * 1024);
    json_decref(doc);
    th_run_free(&r);

    char chip[64];
    th_temp_file(chip, "base = v5e\nname = whatif\nvmem_limit_mib = 64\n");
    r = TH_RUN("chips", "--chip-file", chip);
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    expect_has(r.out, "whatif", "chips --chip-file");
    expect_has(r.out, "v5e", "chips --chip-file");
    th_run_free(&r);
    unlink(chip);
}

/* ---- sweep ------------------------------------------------------------------------ */

#define SMALL "sweep", "matmul", "1024", "1024", "1024", "--bm", "128,256", "--bn", "128,256", "--bk", "128,4096"

Test(cli, sweep_ranks_legal_and_rejects_over_budget)
{
    th_run r = TH_RUN(SMALL);
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    cr_expect_str_empty(r.err, "stderr is not a terminal: no progress bar, nothing else");
    /* (256, 256, 4096) in f32: x and y take 2 x 4 MiB each, o 2 x 256 KiB,
     * over the 16 MiB default; one contraction step, so no accumulator */
    expect_has(r.out, "rejected (1)", "sweep");
    expect_has(r.out, "   256    256   4096  over budget: needs 16.5 MiB of VMEM, over the 16.0 MiB scoped limit", "sweep");
    expect_has(r.out, "rule M4", "sweep");
    expect_has(r.out, "8 configurations evaluated in", "sweep");
    expect_has(r.out, " s, 7 legal; best", "sweep");
    for (int rank = 1; rank <= 7; rank++) {
        char row[16];
        snprintf(row, sizeof row, "\n%5d ", rank);
        expect_has(r.out, row, "sweep");
    }
    th_run_free(&r);
}

/* A small problem rejects most of the default grid: the text lists as many
 * rejections as ranked rows (at least 20) and counts the rest, which the
 * CSV still lists, every one; --top shows more. */
Test(cli, sweep_text_cuts_a_long_rejected_list_the_csv_does_not)
{
    th_run r = TH_RUN("sweep", "matmul", "512", "512", "512", "--vmem-limit", "2M");
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    const char *rejected = strstr(r.out, "rejected (108):");
    cr_assert(rejected, "no heading: %s", r.out);
    expect_has(r.out, "      ... 88 more rejected (--top N shows more; --csv and --json list every one)", "sweep");
    cr_expect_eq(count_lines(rejected), 1 + 1 + 20 + 1 + 3, "%s", r.out);
    th_run_free(&r);
    r = TH_RUN("sweep", "matmul", "512", "512", "512", "--vmem-limit", "2M", "--top", "200");
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    cr_expect(!strstr(r.out, "more rejected"), "%s", r.out);
    expect_has(r.out, "  2048   2048   2048  over budget", "sweep --top 200: the last one");
    th_run_free(&r);
    r = TH_RUN("sweep", "matmul", "512", "512", "512", "--vmem-limit", "2M", "--csv");
    cr_expect_eq(count_lines(r.out), 1 + 125, "%s", r.out);
    th_run_free(&r);
    /* a kernel definition's sweep: i8 weights are refused on v7x (T10) */
    r = TH_RUN("sweep", "quant_matmul", "--chip", "v7x", "--top", "3", "--vary", "wdtype=i8,f8e4m3,f4e2m1");
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    expect_has(r.out, "rejected (32):", "ksweep");
    expect_has(r.out, "      ... 12 more rejected configurations (the CSV and JSON list every one)", "ksweep");
    th_run_free(&r);
}

/* A sweep varies the tiling, not the data's dtype (as tune, and as an
 * autotuner does): a dtype parameter keeps the chip's default unless
 * --vary or --set names it, and the heading says so. */
Test(cli, a_sweep_keeps_a_dtype_at_the_chips_default)
{
    th_run r = TH_RUN("sweep", "quant_matmul", "--chip", "v7x", "--csv");
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    cr_expect(strstr(r.out, "wdtype=f8e4m3"), "%.300s", r.out);
    cr_expect_null(strstr(r.out, "wdtype=i8"), "%.300s", r.out);
    cr_expect_null(strstr(r.out, "wdtype=f4e2m1"), "%.300s", r.out);
    cr_expect_eq(count_lines(r.out), 1 + 32, "bb 2 x bo 4 x bi 4: %s", r.out);
    th_run_free(&r);
    r = TH_RUN("sweep", "add", "--top", "1");
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    expect_has(r.out, "28 configurations, dtype=f32 kept (a dtype: compare with --vary), cost only", "sweep add");
    th_run_free(&r);
    r = TH_RUN("sweep", "add", "--top", "1", "--vary", "dtype=f32,bf16");
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    expect_has(r.out, "56 configurations, cost only", "sweep add --vary dtype");
    th_run_free(&r);
}

Test(cli, sweep_csv_rows_sorted_by_time)
{
    th_run r = TH_RUN(SMALL, "--csv");
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    cr_expect_eq(count_lines(r.out), 1 + 8, "a header and one row per configuration:\n%s", r.out);
    cr_expect(strncmp(r.out, "bm,bn,bk,status,", 16) == 0, "header: %s", r.out);
    /* legal rows come first, fastest first */
    double last = 0;
    int ok = 0;
    for (const char *line = strchr(r.out, '\n') + 1; *line; line = strchr(line, '\n') + 1) {
        long long bm, bn, bk, vmem, steps;
        char status[16];
        double ai, t;
        if (sscanf(line, "%lld,%lld,%lld,%15[^,],%lf,%lld,yes,%lld,%lf", &bm, &bn, &bk, status, &ai, &vmem, &steps,
                   &t) == 8 &&
            strcmp(status, "ok") == 0) {
            cr_expect(t >= last, "row %d (%lld, %lld, %lld) at %g s comes after %g s", ok + 1, bm, bn, bk, t, last);
            last = t;
            ok++;
        } else {
            expect_has(line, "over budget", "rejected CSV row");
        }
    }
    cr_expect_eq(ok, 7, "legal rows: %d\n%s", ok, r.out);
    th_run_free(&r);
}

/* --json is one JSON document (jansson parses it strictly): the legal
 * configurations fastest first, the rejected ones with their reason, the
 * counts agreeing with the lists, and the best one first among the legal. */
Test(cli, sweep_json_has_legal_and_rejected)
{
    th_run r = TH_RUN(SMALL, "--json");
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    json_t *doc = th_json_parse(r.out, "sweep --json");
    json_t *legal = json_object_get(doc, "legal"), *rejected = json_object_get(doc, "rejected");
    cr_assert(json_is_array(legal) && json_is_array(rejected), "no legal or rejected array:\n%s", r.out);
    cr_assert_eq(json_array_size(legal), 7);
    cr_assert_eq(json_array_size(rejected), 1);
    cr_assert_eq(th_json_num(doc, "n_legal"), 7);
    cr_assert_eq(th_json_num(doc, "n_rejected"), 1);
    cr_assert_eq(th_json_num(doc, "evaluated"), 8);
    double last = 0;
    size_t i;
    json_t *row;
    json_array_foreach(legal, i, row) {
        double t = th_json_num(row, "time_s");
        cr_expect(t > 0 && t >= last, "legal row %zu at %g s after %g s", i, t, last);
        cr_expect(json_is_true(json_object_get(row, "fits")), "legal row %zu does not fit", i);
        th_json_str(row, "bound");
        last = t;
    }
    json_t *rej = json_array_get(rejected, 0);
    cr_assert_str_eq(th_json_str(rej, "kind"), "over budget");
    expect_has(th_json_str(rej, "reason"), "rule M4", "the rejected row's reason");
    json_t *best = json_object_get(doc, "best");
    cr_assert(json_is_object(best), "no best configuration");
    cr_assert(json_equal(best, json_array_get(legal, 0)), "best is not the first legal row");
    json_decref(doc);
    th_run_free(&r);
}

Test(cli, sweep_svg_writes_a_roofline)
{
    char svg[64];
    th_temp_file(svg, NULL);
    th_run r = TH_RUN(SMALL, "--svg", svg);
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    char *text = th_read_file(svg);
    cr_expect(strncmp(text, "<svg", 4) == 0, "the file starts with: %.40s", text);
    expect_has(text, "</svg>", "svg");
    expect_has(text, "arithmetic intensity", "svg");
    expect_has(text, "<circle", "svg");
    free(text);
    unlink(svg);
    th_run_free(&r);
}

Test(cli, sweep_legality_filter_cites_rule_t1)
{
    th_run r = TH_RUN("sweep", "matmul", "1024", "1024", "1024", "--bm", "100,128", "--bn", "128", "--bk", "128");
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    expect_has(r.out, "   100    128    128  illegal: x: block (100, 128)", "sweep");
    expect_has(r.out, "rule T1", "sweep");
    expect_has(r.out, " s, 1 legal; best", "sweep");
    th_run_free(&r);

    r = TH_RUN("sweep", "matmul", "1024", "1024", "1024", "--bm", "100", "--bn", "128", "--bk", "128");
    cr_expect_eq(r.status, 1, "nothing legal: exit 1");
    expect_has(r.out, "rule T1", "sweep");
    th_run_free(&r);
}

/* ---- explain ------------------------------------------------------------------------ */

Test(cli, explain_2x2x2_narrates_copies_and_write_backs)
{
    th_run r = TH_RUN("explain", "matmul", "256", "256", "256", "128", "128", "128");
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    expect_has(r.out, "x: block (128, 128) at block index (i, k)", "explain");
    expect_has(r.out, "y: block (128, 128) at block index (k, j)", "explain");
    expect_has(r.out, "step 3  grid (0, 1, 1):", "explain");
    expect_has(r.out, "copied HBM -> VMEM slot 1 (new block, rule P1)", "explain");
    expect_has(r.out, "kept in VMEM: same output block, the kernel accumulates into it (rule P3)", "explain");
    expect_has(r.out, "o   block (0, 0)   written back to HBM: the next step selects another block (rule P3)",
               "explain");
    expect_has(r.out, "starts as garbage: the kernel must write all of it (rule P4)", "explain");
    expect_has(r.out, "after the last step:", "explain");
    expect_has(r.out, "predicted time", "explain");
    th_run_free(&r);
}

/* On a (2, 2, 2) grid x and y change block at every step (k is the fastest
 * axis); with one contraction block x stays put while j runs. */
Test(cli, explain_skip_cites_rule_p2)
{
    th_run r = TH_RUN("explain", "matmul", "256", "256", "128", "128", "128", "128", "--dtype", "bf16");
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    expect_has(r.out, "x   block (0, 0)   skipped: same block as the previous step (rule P2)", "explain");
    expect_has(r.out, "x   2 copies HBM -> VMEM", "explain");
    th_run_free(&r);
}

Test(cli, explain_refuses_large_and_illegal_grids)
{
    th_run r = TH_RUN("explain", "matmul", "8192", "8192", "8192", "128", "128", "128");
    cr_expect_eq(r.status, 2);
    expect_has(r.err, "262144 steps", "explain");
    expect_has(r.err, "larger blocks", "explain");
    cr_expect_str_empty(r.out);
    th_run_free(&r);

    r = TH_RUN("explain", "matmul", "256", "256", "256", "100", "128", "128");
    cr_expect_eq(r.status, 2);
    expect_has(r.err, "rule T1", "explain");
    th_run_free(&r);
}

/* ---- usage errors ------------------------------------------------------------------------ */

typedef struct bad_case {
    const char *args[16];
    const char *says; /* expected in stderr */
} bad_case;

#define SW "sweep", "matmul", "256", "256", "256"

Test(cli, bad_arguments_exit_2_with_a_message)
{
    char bad_chip[64];
    th_temp_file(bad_chip, "base = v5e\nbf16_tflops = fast\n");
    static bad_case cases[] = {
        {{NULL}, "no command given"},
        {{"frobnicate"}, "unknown command 'frobnicate'"},
        {{"chips", "--bogus"}, "unknown option '--bogus'"},
        {{"chips", "--json=yes"}, "--json: takes no value"},
        {{"chips", "--chip-file", "/nonexistent/chip.txt"}, "cannot open"},
        {{"chips", "--chip-file"}, "--chip-file: missing value"},
        {{"sweep"}, "missing the kernel"},
        {{"sweep", "conv", "1", "2", "3"}, "unknown kernel 'conv'"},
        {{"sweep", "matmul", "256", "256"}, "missing K"},
        {{"sweep", "matmul", "256", "abc", "256"}, "N: 'abc' is not a whole number"},
        {{"sweep", "matmul", "0", "256", "256"}, "M: '0' must be positive"},
        {{SW, "--fast"}, "unknown option '--fast'"},
        {{SW, "--bm"}, "--bm: missing value"},
        {{SW, "--bm", "--bn", "128"}, "--bm: missing value"},
        {{SW, "--bm", "12x"}, "--bm: '12x' is not a whole number"},
        {{SW, "--bm", "-128"}, "--bm: '-128' is not positive"},
        {{SW, "--bm", "128,,256"}, "--bm: item 2 of '128,,256' is empty"},
        {{SW, "--bk", "128,"}, "--bk: item 2 of '128,' is empty"},
        {{SW, "--bn", "128,x"}, "--bn: 'x' in the list '128,x' is not a whole number"},
        {{SW, "--bn", "128,128"}, "appears twice"},
        {{SW, "--top", "0"}, "--top: '0' must be positive"},
        {{SW, "--threads", "two"}, "--threads: 'two' is not a whole number"},
        {{SW, "--vmem-limit", "1e6"}, "--vmem-limit: '1e6' is not a size"},
        {{SW, "--dtype", "f64"}, "--dtype: 'f64'"},
        {{SW, "--chip", "v9"}, "unknown chip 'v9'"},
        {{SW, "--chip", "v5e", "--chip-file", "x"}, "exclude each other"},
        {{SW, "--chip-file", "/nonexistent/chip.txt"}, "/nonexistent/chip.txt: cannot open"},
        {{SW, "--csv", "--json"}, "exclude each other"},
        {{SW, "--svg", "/nonexistent/dir/plot.svg"}, "--svg: cannot write '/nonexistent/dir/plot.svg'"},
        {{"explain", "matmul", "256", "256", "256", "128", "128"}, "missing BK"},
        {{"explain", "matmul", "256", "256", "256", "128", "128", "x"}, "BK: 'x' is not a whole number"},
        {{"explain", "matmul", "256", "256", "256", "128", "128", "128", "--chip", "nope"}, "unknown chip 'nope'"},
        {{"help", "nope"}, "unknown command 'nope'"},
    };
    size_t n = sizeof cases / sizeof *cases;
    for (size_t i = 0; i <= n; i++) {
        /* the last case: a chip file that does not parse, named with its line */
        const char *chip_args[] = {"chips", "--chip-file", bad_chip, NULL};
        const char *const *args = i < n ? cases[i].args : chip_args;
        const char *says = i < n ? cases[i].says : ":2: bf16_tflops = 'fast'";
        th_run r = th_run_tilesim(args);
        char line[256] = "";
        for (int a = 0; args[a]; a++) snprintf(line + strlen(line), sizeof line - strlen(line), " %s", args[a]);
        cr_expect_eq(r.status, 2, "tilesim%s: exit %d, want 2; stderr: %s", line, r.status, r.err);
        cr_expect(strstr(r.err, says), "tilesim%s: stderr lacks \"%s\":\n%s", line, says, r.err);
        cr_expect(strstr(r.err, "\nusage: tilesim"), "tilesim%s: no usage hint:\n%s", line, r.err);
        cr_expect(strncmp(r.err, "tilesim", 7) == 0, "tilesim%s: the message names the tool:\n%s", line, r.err);
        cr_expect_str_empty(r.out, "tilesim%s: printed on stdout: %s", line, r.out);
        th_run_free(&r);
    }
    unlink(bad_chip);
}

Test(cli, help_exits_0)
{
    const char *const helps[][3] = {{"help", NULL}, {"--help", NULL}, {"help", "sweep"}, {"sweep", "--help"},
                                    {"explain", "-h"}, {"help", "help"}};
    for (size_t i = 0; i < sizeof helps / sizeof *helps; i++) {
        th_run r = th_run_tilesim(helps[i]);
        cr_expect_eq(r.status, 0, "%s %s: exit %d", helps[i][0], helps[i][1] ? helps[i][1] : "", r.status);
        expect_has(r.out, "usage", "help");
        cr_expect_str_empty(r.err);
        th_run_free(&r);
    }
}
