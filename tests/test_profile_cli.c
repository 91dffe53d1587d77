/* tests/test_profile_cli.c: `tilesim profile` (issue 14): every built-in
 * kernel's table and JSON, whose rows add up to the report's time; the
 * run's roofline SVG with its HBM and VMEM ceilings; the plugin; what a bad
 * command line gets. The command is this build's (tests/run.h). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../examples/kernels/registry.h"
#include "../sim/tilesim.h"
#include "run.h"

Test(profile_cli, every_builtin_kernel_prints_a_table_and_json_that_add_up)
{
    for (int i = 0; i < ex_kernel_count(); i++) {
        const char *name = ex_kernel_at(i)->name;
        th_run r = TH_RUN("profile", name);
        cr_assert_eq(r.status, 0, "%s: %s%s", name, r.out, r.err);
        cr_expect(strstr(r.out, "op profile of") && strstr(r.out, "step overhead (P9)") && strstr(r.out, "total"),
                  "%s:\n%s", name, r.out);
        th_run_free(&r);
        r = TH_RUN("profile", name, "--json", "--chip", "v5p");
        cr_assert_eq(r.status, 0, "%s: %s", name, r.err);
        json_t *j = th_json_parse(r.out, name);
        double time_s = th_json_num(j, "time_s"), total = th_json_num(j, "total_s"), sum = 0;
        json_t *rows = json_object_get(j, "rows"), *row;
        size_t k;
        cr_assert(json_array_size(rows) > 1, "%s: rows", name);
        json_array_foreach(rows, k, row) sum += th_json_num(row, "time_s");
        cr_expect(fabs(sum - time_s) <= 1e-6 * time_s && fabs(total - time_s) <= 1e-6 * time_s,
                  "%s: rows %.9g, total %.9g, time %.9g", name, sum, total, time_s);
        json_decref(j);
        th_run_free(&r);
    }
}

Test(profile_cli, roofline_svg_has_the_hbm_and_vmem_ceilings_and_the_ops)
{
    char svg[64];
    th_temp_file(svg, NULL);
    th_run r = TH_RUN("profile", "rmsnorm", "--roofline", svg);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "roofline: "), "%s", r.out);
    char *text = th_read_file(svg);
    cr_assert(text && strncmp(text, "<svg", 4) == 0, "an SVG");
    cr_expect(strstr(text, "HBM ") && strstr(text, "VMEM ") && strstr(text, "MXU peak") && strstr(text, "VPU peak"),
              "the ceilings and roofs");
    cr_expect(strstr(text, "class=\"op\"") && strstr(text, "class=\"run\""), "the ops and the run");
    cr_expect(strstr(text, "VMEM-bound"), "rmsnorm's elementwise ops are under the VMEM roof");
    cr_expect(strstr(text, "</svg>"));
    free(text);
    th_run_free(&r);
    unlink(svg);
}

Test(profile_cli, the_plugin_profiles_too)
{
    th_need_plugin();
    th_run r = TH_RUN("profile", th_plugin(), "--set", "rows=256");
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "op profile of"), "%s", r.out);
    th_run_free(&r);
}

Test(profile_cli, bad_command_lines_say_what_and_exit_2)
{
    th_run r = TH_RUN("profile", "nosuch");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "unknown kernel 'nosuch'"), "%s", r.err);
    th_run_free(&r);
    r = TH_RUN("profile", "rmsnorm", "--roofline", "/nonexistent/dir/r.svg");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "--roofline: cannot write '/nonexistent/dir/r.svg'"), "%s", r.err);
    cr_expect_eq(r.out[0], '\0', "refused before the run, no report first: %s", r.out);
    th_run_free(&r);
    r = TH_RUN("profile", "rmsnorm", "--roofline");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "--roofline: missing the file name"), "%s", r.err);
    th_run_free(&r);
    r = TH_RUN("profile", "rmsnorm", "--set", "nosuch=3");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "nosuch"), "%s", r.err);
    th_run_free(&r);
    r = TH_RUN("profile", "rmsnorm", "--trace", "x.json");
    cr_expect_eq(r.status, 2, "an option profile does not take");
    th_run_free(&r);
    r = TH_RUN("profile", "--help");
    cr_expect_eq(r.status, 0);
    cr_expect(strstr(r.out, "--roofline FILE.svg") && strstr(r.out, "XProf"), "%s", r.out);
    th_run_free(&r);
    r = TH_RUN("help", "profile");
    cr_expect_eq(r.status, 0);
    cr_expect(strstr(r.out, "tilesim profile KERNEL"), "%s", r.out);
    th_run_free(&r);
}

/* `tilesim chips` shows each preset's VMEM bandwidth, in the table and the JSON. */
Test(profile_cli, chips_show_the_vmem_bandwidth)
{
    th_run r = TH_RUN("chips");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "VMEM bandwidth, GB/s (per core)") && strstr(r.out, "18018"), "v5e: 22 x 819:\n%s", r.out);
    th_run_free(&r);
    r = TH_RUN("chips", "--json");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "\"vmem_bw\":1.8018e+13"), "%s", r.out);
    th_run_free(&r);
}

/* A remote copy's rate is against its ICI link, not HBM: ring_allreduce's copies run at 83 % of a v5e
 * link, which the row said was 5 % of HBM. */
Test(profile_cli, a_remote_copys_row_is_against_its_link)
{
    th_run r = TH_RUN("profile", "ring_allreduce");
    cr_assert_eq(r.status, 0, "%s", r.err);
    const char *row = strstr(r.out, "pltpu_remote_copy_start");
    cr_assert_not_null(row, "%s", r.out);
    const char *end = strchr(row, '\n');
    cr_expect(strstr(row, "% ICI") && strstr(row, "% ICI") < end, "%.*s", (int)(end - row), row);
    const char *local = strstr(r.out, "pltpu_copy_start");
    cr_expect(local && strstr(local, "% HBM"), "a local copy stays against HBM: %s", r.out);
    th_run_free(&r);
}

/* Copy rows whose HBM shares add past 100 % (each over its own copies'
 * time) say so: a reader summed 681 + 498 + 547 GB/s to 126 % of v6e's HBM. */
Test(profile_cli, copy_rows_whose_shares_add_past_the_peak_say_why)
{
    th_run r = TH_RUN("profile", "matmul", "--set", "M=1024", "--set", "N=2048", "--set", "K=1024", "--set", "dtype=bf16",
                      "--set", "bm=1024", "--set", "bn=2048", "--set", "bk=512", "--chip", "v6e");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "the rows' shares of the HBM do not add up"), "%s", r.out);
    th_run_free(&r);
}
