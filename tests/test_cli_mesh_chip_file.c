/* tests/test_cli_mesh_chip_file.c: the mesh programs take --chip-file, as
 * 'tilesim help run' says (issue 21: `tilesim run ring_allreduce --chip-file
 * F` was refused as an unknown option). The chip file is written here: v5e
 * with links ten times slower, so a ring's time shows which chip ran. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run.h"

static const char slow_links[] = "base = v5e\nname = slowici\nici_gbps = 4.5\n";

Test(cli_mesh_chip_file, every_mesh_program_runs_on_a_chip_file)
{
    char chip[64];
    th_temp_file(chip, slow_links);
    static const char *const progs[] = {"ring_allreduce", "ring_allgather", "collective_matmul"};
    for (size_t i = 0; i < sizeof progs / sizeof *progs; i++) {
        th_run preset = TH_RUN("run", progs[i], "--cost-only");
        th_run r = TH_RUN("run", progs[i], "--chip-file", chip, "--cost-only");
        cr_expect_eq(r.status, 0, "%s --chip-file: exit %d: %s", progs[i], r.status, r.err);
        cr_expect(strcmp(r.out, preset.out) != 0, "%s: the chip file changed nothing:\n%s", progs[i], r.out);
        th_run_free(&preset);
        th_run_free(&r);
    }
    th_run r = TH_RUN("run", "ring_allreduce", "--chip-file", chip, "--cost-only");
    cr_expect(strstr(r.out, "closed form on slowici: "), "the report names the file's chip:\n%s", r.out);
    th_run_free(&r);
    r = TH_RUN("run", "deadlock", "--chip-file", chip);
    cr_expect_eq(r.status, 0, "deadlock --chip-file: exit %d: %s", r.status, r.err);
    cr_expect(strstr(r.out, "the deadlock was reported"), "%s", r.out);
    th_run_free(&r);
    unlink(chip);
}

Test(cli_mesh_chip_file, a_bad_chip_file_or_both_chip_options_exit_2)
{
    char chip[64], bad[64];
    th_temp_file(chip, slow_links);
    th_temp_file(bad, "base = v5e\nici_gbps = fast\n");
    static const struct { const char *args[8], *says; } cases[] = {
        {{"run", "ring_allreduce", "--chip-file", NULL}, "--chip-file: "}, /* path filled below */
        {{"run", "ring_allgather", "--chip", "v5e", "--chip-file", NULL}, "--chip and --chip-file exclude each other"},
        {{"run", "collective_matmul", "--chip-file", "/nonexistent/chip.txt"}, "cannot open"},
        {{"run", "deadlock", "--chip-file"}, "--chip-file needs a value"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *args[9] = {0};
        int n = 0;
        for (; cases[i].args[n]; n++) args[n] = cases[i].args[n];
        if (i == 0) args[n] = bad;
        if (i == 1) args[n] = chip;
        th_run r = th_run_tilesim(args);
        cr_expect_eq(r.status, 2, "case %zu: exit %d: %s", i, r.status, r.err);
        cr_expect(strstr(r.err, cases[i].says), "case %zu: stderr lacks \"%s\": %s", i, cases[i].says, r.err);
        th_run_free(&r);
    }
    unlink(chip);
    unlink(bad);
}

/* A chip file may leave a single device without links (ici_gbps = 0); a
 * mesh on it says which figure stops it, as the file spells it. */
Test(cli_mesh_chip_file, a_mesh_on_a_chip_without_link_bandwidth_names_ici_gbps)
{
    char chip[64];
    th_temp_file(chip, "base = v5e\nici_gbps = 0\n");
    th_run r = TH_RUN("run", "ring_allreduce", "--chip-file", chip, "--cost-only");
    cr_expect_neq(r.status, 0, "%s", r.out);
    cr_expect(strstr(r.out, "ici_gbps = 0") || strstr(r.err, "ici_gbps = 0"), "%s%s", r.out, r.err);
    th_run_free(&r);
    unlink(chip);
}

/* A chip's name is the user's text: the trace quotes it as JSON (a '"' in
 * it made the trace unreadable) */
Test(cli_mesh_chip_file, a_chip_name_with_quotes_keeps_the_trace_json)
{
    char chip[64], trace[] = "/tmp/tilesim_test_qtrace_XXXXXX";
    th_temp_file(chip, "base = v5e\nname = a\"b\\c\n");
    int fd = mkstemp(trace);
    cr_assert(fd >= 0);
    close(fd);
    th_run r = TH_RUN("run", "matmul", "--chip-file", chip, "--cost-only", "--trace", trace);
    cr_assert_eq(r.status, 0, "%s", r.err);
    char *text = th_read_file(trace);
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    cr_expect(j, "the trace is not JSON: %s (line %d)", e.text, e.line);
    if (j) cr_expect_str_eq(json_string_value(json_object_get(json_object_get(j, "otherData"), "chip")), "a\"b\\c");
    json_decref(j);
    free(text);
    th_run_free(&r);
    unlink(chip), unlink(trace);
}
