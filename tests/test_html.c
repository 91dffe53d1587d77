/* tests/test_html.c: the teaching page, `--html FILE` on `tilesim run` and
 * `tilesim explain` (issue 14, "The page"; sim/tools/html.h).
 *
 * The commands run as programs (tests/run.h). The page must be one file
 * that opens without the network, hold a cell per block of each operand's
 * array (B1, B6), one entry per grid step (G1) with what the pipeline did
 * (P1-P5) and the kernel's ops, and the timeline's trace events; a path it
 * cannot write is a message and exit status 2. What the page shows once a
 * browser runs its script is tests/browser/test_browser.sh's part.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../examples/kernels/registry.h"
#include "../sim/tools/html.h"
#include "run.h"

static int count(const char *text, const char *sub)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, sub)); p += strlen(sub)) n++;
    return n;
}

/* A fresh path for a page (the file does not exist yet). */
static void page_path(char *path)
{
    th_temp_file(path, NULL);
    unlink(path);
}

/* Run tilesim with args (the last two: --html and the page's path filled
 * in), expect exit 0, return the page's text. */
static char *page_of(const char *const *args, th_run *r)
{
    *r = th_run_tilesim(args);
    cr_assert_eq(r->status, 0, "exit %d; stderr: %s", r->status, r->err);
    int n = 0;
    while (args[n]) n++;
    char *text = th_read_file(args[n - 1]);
    cr_assert(text, "%s was not written", args[n - 1]);
    unlink(args[n - 1]);
    return text;
}

static void expect_self_contained(const char *html)
{
    cr_expect(strncmp(html, "<!DOCTYPE html>", 15) == 0, "not an HTML document: %.40s", html);
    const char *remote[] = {"src=\"http", "href=\"http", "src='http", "href='http", "src=\"//", "href=\"//",
                            "url(http", "url(//", "@import", "<link", "<script src", "<iframe"};
    for (size_t i = 0; i < sizeof remote / sizeof *remote; i++)
        cr_expect(!strstr(html, remote[i]), "the page fetches something: it holds '%s'", remote[i]);
    /* a URL elsewhere (an inlined SVG's xmlns) fetches nothing */
    cr_expect(strstr(html, "<style>") && strstr(html, "<script>\n"), "the style and the script are not inline");
}

/* matmul M=512 N=512 K=1024 in 256-blocks: grid (2, 2, 4), x 2 x 4 blocks, y 4 x 2, o 2 x 2 */
#define MATMUL "matmul", "--set", "M=512", "--set", "N=512", "--set", "K=1024", "--set", "bm=256", "--set", \
               "bn=256", "--set", "bk=256"

Test(html, run_writes_one_self_contained_page)
{
    char path[64];
    page_path(path);
    th_run r;
    char *html = page_of((const char *const[]){"run", MATMUL, "--html", path, NULL}, &r);
    expect_self_contained(html);
    cr_expect(strstr(r.out, "PASS"), "the run itself is still reported:\n%s", r.out);
    cr_expect(strstr(r.out, "page: "), "no 'page:' line:\n%s", r.out);
    th_run_free(&r);
    free(html);
}

Test(html, the_cells_are_the_blocks_of_each_array)
{
    char path[64];
    page_path(path);
    th_run r;
    char *html = page_of((const char *const[]){"run", MATMUL, "--cost-only", "--html", path, NULL}, &r);
    cr_expect_eq(count(html, "<div class=\"cell\" id=\"c"), 8 + 8 + 4, "cells: one per block of x, y and o (B1)");
    cr_expect(strstr(html, "title=\"x block (1, 3)\""), "the last block of x is not drawn");
    cr_expect(strstr(html, "title=\"o block (1, 1)\""), "the last block of o is not drawn");
    cr_expect(!strstr(html, "capnote"), "16 steps are not capped");
    th_run_free(&r);
    free(html);
}

Test(html, every_step_is_embedded_with_its_events_and_ops)
{
    char path[64];
    page_path(path);
    th_run r;
    char *html = page_of((const char *const[]){"run", MATMUL, "--cost-only", "--html", path, NULL}, &r);
    cr_expect_eq(count(html, "{\"c\":0,\"s\":"), 16, "one entry per grid step (G1)");
    cr_expect(strstr(html, "max=\"15\""), "the slider does not run over the 16 steps");
    cr_expect(strstr(html, "\"total_steps\":16"), "total steps");
    /* step 5 is grid point (0, 1, 1): x (0, 1) copied into slot 1 (P1), o (0, 1) kept (P3, action 4) */
    cr_expect(strstr(html, "{\"c\":0,\"s\":5,\"g\":[0,1,1],\"k\":\"pl_dot 256x256 @ 256x256 f32 (MXU)\",\"o\":"
                           "[[1,[0,1],1,0],[1,[1,1],1,0],[4,[0,1],1,0]]}"),
              "step 5 is not as explain narrates it");
    /* o (0, 0) goes back to HBM after step 3, the last k of (0, 0) (P3) */
    cr_expect(strstr(html, "\"s\":3,\"g\":[0,0,3]"), "step 3");
    cr_expect(strstr(html, "[4,[0,0],0,[0,0]]"), "the write-back after step 3 is not with step 3");
    cr_expect(strstr(html, "\"traceEvents\":["), "no timeline data");
    cr_expect(strstr(html, "\"name\":\"step (0, 1, 1)\""), "the timeline lacks step (0, 1, 1)");
    th_run_free(&r);
    free(html);
}

Test(html, explain_writes_the_page_after_its_narration)
{
    char path[64];
    page_path(path);
    th_run r;
    char *html = page_of((const char *const[]){"explain", "add", "--set", "rows=512", "--set", "cols=1024", "--set",
                                               "br=256", "--set", "bc=512", "--html", path, NULL}, &r);
    expect_self_contained(html);
    cr_expect(strstr(r.out, "step 3") && strstr(r.out, "page: "), "the narration or the page line is missing:\n%s",
              r.out);
    cr_expect_eq(count(html, "<div class=\"cell\" id=\"c"), 3 * 4, "x, y, z: 2 x 2 blocks each");
    cr_expect(strstr(html, "tilesim explain ... --html"), "the page does not say which command wrote it");
    cr_expect(strstr(html, "pl_add (VPU), 131072 elements"), "the kernel's ops are missing");
    th_run_free(&r);
    free(html);
}

Test(html, a_long_grid_is_capped_and_says_so)
{
    char path[64];
    page_path(path);
    th_run r;
    char *html = page_of((const char *const[]){"run", "matmul", "--set", "M=1024", "--set", "N=1024", "--set",
                                               "K=2048", "--set", "bm=128", "--set", "bn=128", "--set", "bk=128",
                                               "--cost-only", "--html", path, NULL}, &r);
    cr_expect_eq(count(html, "{\"c\":0,\"s\":"), SIM_PAGE_MAX_STEPS, "embedded steps");
    cr_expect(strstr(html, "max=\"511\""), "the slider");
    cr_expect(strstr(html, "The run has 1024 steps; this page embeds the first 512"), "no note of the cap");
    cr_expect(strstr(html, "\"trace_cut\":1"), "the timeline was not cut after the embedded steps");
    cr_expect(!strstr(html, "\"name\":\"step (4, 0, 0)\""), "a step past the cap is in the timeline");
    cr_expect(strstr(html, "\"name\":\"step (3, 7, 15)\""), "the last embedded step is not in the timeline");
    cr_expect(strstr(r.out, "page: ") && strstr(r.out, "512 of 1024 steps"), "%s", r.out);
    th_run_free(&r);
    free(html);
}

Test(html, both_cores_of_a_megacore_chip_are_shown)
{
    char path[64];
    page_path(path);
    th_run r;
    char *html = page_of((const char *const[]){"run", MATMUL, "--chip", "v4", "--cost-only", "--html", path, NULL},
                         &r);
    /* G4: the 16 steps split over two cores, 8 each, each core numbering its own */
    cr_expect_eq(count(html, "{\"c\":0,\"s\":"), 8, "core 0's steps");
    cr_expect_eq(count(html, "{\"c\":1,\"s\":"), 8, "core 1's steps");
    cr_expect(strstr(html, "TensorCore 1"), "the timeline lacks core 1");
    th_run_free(&r);
    free(html);
}

Test(html, json_stays_one_json_object)
{
    char path[64];
    page_path(path);
    th_run r;
    char *html = page_of((const char *const[]){"run", MATMUL, "--json", "--html", path, NULL}, &r);
    json_t *j = th_json_parse(r.out, "run --json --html");
    cr_expect(j && json_is_object(j), "stdout is not one JSON object");
    json_decref(j);
    th_run_free(&r);
    free(html);
}

Test(html, a_path_that_cannot_be_written_is_exit_2_naming_it)
{
    const char *bad = "/nonexistent_tilesim_dir/page.html";
    th_run r = TH_RUN("run", MATMUL, "--cost-only", "--html", bad);
    cr_expect_eq(r.status, 2, "run: exit %d", r.status);
    cr_expect(strstr(r.err, "tilesim run: --html: cannot write '/nonexistent_tilesim_dir/page.html'"), "%s", r.err);
    th_run_free(&r);
    r = TH_RUN("explain", "add", "--html", bad);
    cr_expect_eq(r.status, 2, "explain: exit %d", r.status);
    cr_expect(strstr(r.err, "tilesim explain: --html: cannot write"), "%s", r.err);
    th_run_free(&r);
    r = TH_RUN("explain", "add", "--html=");
    cr_expect_eq(r.status, 2, "empty name: exit %d", r.status);
    cr_expect(strstr(r.err, "--html") && strstr(r.err, "empty"), "%s", r.err);
    th_run_free(&r);
    r = TH_RUN("run", "add", "--html");
    cr_expect_eq(r.status, 2, "no value: exit %d", r.status);
    cr_expect(strstr(r.err, "--html"), "%s", r.err);
    th_run_free(&r);
}

Test(html, a_rejected_configuration_writes_no_page)
{
    char path[64];
    page_path(path);
    th_run r = TH_RUN("run", "matmul", "--set", "bm=100", "--cost-only", "--html", path);
    cr_expect_eq(r.status, 2, "exit %d; stderr %s", r.status, r.err);
    cr_expect(access(path, F_OK) != 0, "a page was written for a rejected configuration");
    unlink(path);
    th_run_free(&r);
}

/* ---- the C API: the sections other tools fill, and escaping ---------------------- */

static char *write_page(const sim_page *p, const sim_page_extras *x)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert(f);
    cr_assert_eq(sim_page_write(p, x, f), 0);
    fclose(f);
    return buf;
}

Test(html, the_tool_sections_take_fragments_or_say_not_available)
{
    const pl_kernel_def *d = ex_kernel_find("add");
    cr_assert(d);
    int64_t v[PL_KDEF_MAX_PARAMS];
    pl_kernel_defaults(d, v);
    sim_page *p = calloc(1, sizeof *p);
    char msg[PL_MSG_MAX];
    pl_options opt = {0};
    cr_assert_eq(sim_page_record(d, v, &opt, p, msg, sizeof msg), PL_OK, "%s", msg);
    char *none = write_page(p, NULL);
    cr_expect_eq(count(none, "<p class=\"na\">not available</p>"), 3, "op profile, roofline, memory viewer");
    sim_page_extras x = {.op_profile = "<table id=\"prof\"></table>", .roofline = "<svg id=\"roof\"></svg>",
                         .memory_viewer = "<svg id=\"mem\"></svg>", .n_more = 1, .more_title = {"a <b> title"},
                         .more_html = {"<p id=\"more\">more</p>"}};
    char *some = write_page(p, &x);
    cr_expect_eq(count(some, "<p class=\"na\">not available</p>"), 0);
    const char *want[] = {"<section id=\"op-profile\"", "<table id=\"prof\"></table>", "<section id=\"roofline\"",
                          "<svg id=\"roof\"></svg>", "<section id=\"memory-viewer\"", "<svg id=\"mem\"></svg>",
                          "<h2>a &lt;b&gt; title</h2>", "<p id=\"more\">more</p>"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) cr_expect(strstr(some, want[i]), "lacks %s", want[i]);
    free(none);
    free(some);
    sim_page_free(p);
    free(p);
}

Test(html, no_name_can_end_the_data_script)
{
    sim_page p;
    memset(&p, 0, sizeof p);
    snprintf(p.title, sizeof p.title, "evil</script><script>alert(1)</script>");
    p.n_ops = 1;
    snprintf(p.op[0].name, sizeof p.op[0].name, "</script><b>");
    char *html = write_page(&p, NULL);
    cr_expect(!strstr(html, "</script><script>alert"), "the title ends a script element");
    cr_expect(!strstr(html, "</script><b>"), "an operand name ends a script element");
    cr_expect(strstr(html, "evil<\\/script>"), "the title is not in the data, escaped");
    cr_expect(strstr(html, "<title>tilesim: evil&lt;/script&gt;"), "the title is not escaped as HTML");
    free(html);
}

/* A page refused for its timeline's size (the trace limit) is refused before the run: the whole report
 * went to stdout first, then the refusal and exit 2. */
Test(html, a_page_over_the_trace_limit_is_refused_before_the_run)
{
    th_run r = TH_RUN("run", "matmul", "--set", "M=16384", "--set", "N=16384", "--set", "K=16384", "--set", "bm=128",
                      "--set", "bn=128", "--set", "bk=128", "--cost-only", "--html", "/tmp/tilesim_never_written.html");
    cr_expect_eq(r.status, 2, "%s", r.err);
    cr_expect(strstr(r.err, "--html") && strstr(r.err, "trace limit"), "%s", r.err);
    cr_expect_str_empty(r.out, "nothing ran first: %.200s", r.out);
    cr_expect_neq(access("/tmp/tilesim_never_written.html", F_OK), 0);
    th_run_free(&r);
}
