/* tests/test_cli_mesh_chip_file.c: the mesh programs take --chip-file, as
 * 'tilesim help run' says (issue 21: `tilesim run ring_allreduce --chip-file
 * F` was refused as an unknown option). The chip file is written here: v5e
 * with links ten times slower, so a ring's time shows which chip ran. */
#include <criterion/criterion.h>
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
