/* tests/test_memview_cli.c: `tilesim memory KERNEL` (cli/memview.c, issue 14)
 * on every built-in kernel: text, --json, --svg, --json-file; and the
 * messages of a bad path, an unknown kernel, a rejected configuration (M4).
 * The command is BUILD/tilesim (tests/run.h). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../examples/kernels/registry.h"
#include "run.h"
#include "test_memview.h"

Test(memview_cli, every_builtin_kernel_text_json_and_svg)
{
    char svg[64], js[64];
    th_temp_file(svg, NULL);
    th_temp_file(js, NULL);
    for (int i = 0; i < ex_kernel_count(); i++) {
        const char *k = ex_kernel_at(i)->name;
        th_run r = TH_RUN("memory", k, "--svg", svg, "--json-file", js);
        cr_expect_eq(r.status, 0, "%s: %s%s", k, r.out, r.err);
        cr_expect(strstr(r.out, "peak") && strstr(r.out, "scoped VMEM limit"), "%s:\n%s", k, r.out);
        char *s = th_read_file(svg), why[128] = "";
        cr_expect(tags_balance(s, why, sizeof why) && strstr(s, "limit-physical"), "%s: %s", k, why);
        json_t *j = th_json_file(js);
        cr_expect_str_eq(th_json_str(j, "call"), k);
        cr_expect_leq(th_json_num(j, "peak_bytes"), th_json_num(j, "reserved_bytes"), "%s", k);
        if (peak_is_budget(k)) cr_expect_eq(th_json_num(j, "peak_bytes"), th_json_num(j, "reserved_bytes"), "%s", k);
        json_decref(j);
        free(s);
        th_run_free(&r);
    }
    unlink(svg);
    unlink(js);
}

Test(memview_cli, json_on_stdout_and_errors)
{
    th_run r = TH_RUN("memory", "rmsnorm", "--json");
    cr_assert_eq(r.status, 0, "%s", r.err);
    json_t *j = th_json_parse(r.out, "memory --json");
    cr_expect(json_is_array(json_object_get(j, "live_at_peak")));
    json_decref(j);
    th_run_free(&r);
    r = TH_RUN("memory", "rmsnorm", "--svg", "/nonexistent/dir/m.svg");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "/nonexistent/dir/m.svg"), "names the file: %s", r.err);
    th_run_free(&r);
    r = TH_RUN("memory", "nosuchkernel");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "nosuchkernel"), "%s", r.err);
    th_run_free(&r);
    char svg[64]; /* a path that does not exist yet (an existing one is kept as it was: test_output_paths.c) */
    th_temp_file(svg, NULL);
    unlink(svg);
    r = TH_RUN("memory", "add", "--set", "br=100000", "--svg", svg);
    cr_expect_eq(r.status, 2, "a rejected configuration: %s", r.err);
    cr_expect(strstr(r.err, "M4"), "the budget's message: %s", r.err);
    cr_expect_neq(access(svg, F_OK), 0, "no empty chart is left behind a rejected run");
    th_run_free(&r);
    /* --svg and --json-file into one file: the JSON replaced the chart, exit 0 */
    th_temp_file(svg, "keep");
    r = TH_RUN("memory", "rmsnorm", "--svg", svg, "--json-file", svg);
    cr_expect_eq(r.status, 2, "%s", r.err);
    cr_expect(strstr(r.err, "--svg and --json-file name the same file"), "%s", r.err);
    th_run_free(&r);
    char *kept = th_read_file(svg);
    cr_expect_str_eq(kept, "keep", "the file is as it was");
    free(kept);
    unlink(svg);
    r = TH_RUN("help", "memory");
    cr_expect_eq(r.status, 0);
    cr_expect(strstr(r.out, "--svg") && strstr(r.out, "peak"), "%s", r.out);
    th_run_free(&r);
}

/* A grid past the viewer's 2^20 steps is refused before the walk (8
 * million steps walked for up to 51 s and 1.65 GB before the refusal). */
Test(memview_cli, a_grid_past_the_viewers_steps_is_refused_at_once, .timeout = 20)
{
    th_run r = TH_RUN("memory", "matmul", "--set", "M=67108864", "--set", "N=128", "--set", "K=128", "--set", "bm=8",
                      "--set", "bn=128", "--set", "bk=128", "--chip", "v5p");
    cr_expect_eq(r.status, 2, "exit %d: %s", r.status, r.err);
    cr_expect(strstr(r.err, "keeps at most 1048576 steps and this configuration has 8388608"), "%s", r.err);
    th_run_free(&r);
}
