/* tests/test_examples_cli.c: every example program takes the shared command
 * line (examples/kernels/options.h): --help prints the usage and exits 0,
 * an unknown option exits 2 with a message, and a program whose --help
 * lists --trace writes a trace there (issue 21: sc_gather ignored all its
 * arguments, matmul_emit refused --help). CI decides from `--help | grep --
 * --trace` whether to run an example with --trace, so the usage must say.
 *
 * The table names every example; a test checks that it names every program
 * built in BUILD/examples, so that a new example cannot be left out.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run.h"

static const struct {
    const char *name;
    int trace; /* takes --trace FILE.json */
} examples[] = {
    {"block_sparse_matmul", 1}, {"buggy", 0},     {"collective_matmul", 0}, {"core_ring", 1}, {"deadlock", 0},
    {"flash_attention", 1},     {"grouped_matmul", 1}, {"hier_allreduce", 1}, {"matmul", 1}, {"matmul_emit", 1},
    {"paged_attention", 1},     {"ring_allgather", 1}, {"ring_allreduce", 1}, {"sc_gather", 1},
};

#define N_EXAMPLES (sizeof examples / sizeof *examples)

static int in_table(const char *name)
{
    for (size_t i = 0; i < N_EXAMPLES; i++)
        if (!strcmp(examples[i].name, name)) return 1;
    return 0;
}

Test(examples_cli, table_names_every_built_example)
{
    char dir[PATH_MAX];
    th_example_path("matmul", dir, sizeof dir);
    *strrchr(dir, '/') = '\0';
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "cannot list %s", dir);
    int seen = 0;
    for (struct dirent *e; (e = readdir(d));) {
        char path[PATH_MAX + 256];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        /* the programs: executable regular files (not objects, .d files or plugin/) */
        if (stat(path, &st) || !S_ISREG(st.st_mode) || !(st.st_mode & S_IXUSR)) continue;
        cr_expect(in_table(e->d_name), "example %s is missing from this test's table", e->d_name);
        seen++;
    }
    closedir(d);
    cr_expect_geq(seen, (int)N_EXAMPLES, "only %d programs in %s", seen, dir);
}

Test(examples_cli, help_exits_0_and_prints_the_usage)
{
    for (size_t i = 0; i < N_EXAMPLES; i++) {
        const char *name = examples[i].name;
        th_run r = TH_RUN_EX(name, "--help");
        char usage[128];
        snprintf(usage, sizeof usage, "usage: %s", name);
        cr_expect_eq(r.status, 0, "%s --help: exit %d; stderr: %s", name, r.status, r.err);
        cr_expect(strstr(r.out, usage), "%s --help prints no \"%s\" on stdout:\n%s", name, usage, r.out);
        cr_expect_eq(strstr(r.out, "--trace") != NULL, examples[i].trace, "%s --help %s --trace:\n%s", name,
                     examples[i].trace ? "does not list" : "lists", r.out);
        th_run_free(&r);
    }
}

Test(examples_cli, unknown_option_exits_2_naming_it)
{
    for (size_t i = 0; i < N_EXAMPLES; i++) {
        const char *name = examples[i].name;
        th_run r = TH_RUN_EX(name, "--bogus");
        cr_expect_eq(r.status, 2, "%s --bogus: exit %d; stdout: %s", name, r.status, r.out);
        cr_expect(strstr(r.err, "--bogus"), "%s --bogus: the message does not name it: %s", name, r.err);
        th_run_free(&r);
    }
}

/* With its defaults, as CI runs it: the trace is a JSON document. */
Test(examples_cli, trace_writes_a_trace, .timeout = 120)
{
    char dir[] = "/tmp/tilesim_test_trace_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    for (size_t i = 0; i < N_EXAMPLES; i++) {
        if (!examples[i].trace) continue;
        const char *name = examples[i].name;
        char path[sizeof dir + 64];
        snprintf(path, sizeof path, "%s/%s.json", dir, name);
        th_run r = TH_RUN_EX(name, "--trace", path);
        struct stat st;
        cr_expect_eq(r.status, 0, "%s --trace: exit %d; stderr: %s", name, r.status, r.err);
        cr_expect(stat(path, &st) == 0 && st.st_size > 0, "%s --trace %s wrote nothing", name, path);
        json_error_t err;
        json_t *doc = json_load_file(path, 0, &err);
        cr_expect_not_null(doc, "%s: the trace is not JSON: %s (line %d)", name, err.text, err.line);
        json_decref(doc);
        unlink(path);
        th_run_free(&r);
    }
    rmdir(dir);
}

/* M13: the two cores of one v5p device pass their slabs to each other (a
 * copy between cores of one device, no ICI), and 3 devices make a ring of 6. */
Test(examples_cli, core_ring_passes_slabs_between_the_cores_of_one_device_and_of_several, .timeout = 120)
{
    th_run r = TH_RUN_EX("core_ring", "1");
    cr_expect_eq(r.status, 0, "exit %d: %s%s", r.status, r.out, r.err);
    cr_expect(strstr(r.out, "ring of 2 cores") && strstr(r.out, "(0 between devices") && strstr(r.out, "PASS"), "%s",
              r.out);
    th_run_free(&r);
    th_run q = TH_RUN_EX("core_ring", "3");
    cr_expect_eq(q.status, 0, "exit %d: %s%s", q.status, q.out, q.err);
    cr_expect(strstr(q.out, "ring of 6 cores") && strstr(q.out, "(3 between devices") && strstr(q.out, "PASS"), "%s",
              q.out);
    th_run_free(&q);
}

/* matmul's --vmem-limit takes a size as tilesim's does: 1M is 1048576
 * bytes, over the 448 KiB that (128, 128, 128) f32 blocks and their
 * accumulator take; 256K is under it (M4); what is not a size is refused
 * by name. */
Test(examples_cli, matmul_vmem_limit_takes_a_size)
{
    th_run r = TH_RUN_EX("matmul", "256", "256", "256", "128", "128", "128", "--cost-only", "--vmem-limit", "1M");
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    th_run_free(&r);
    r = TH_RUN_EX("matmul", "256", "256", "256", "128", "128", "128", "--cost-only", "--vmem-limit", "256K");
    cr_expect_eq(r.status, 2, "%s%s", r.out, r.err);
    cr_expect(strstr(r.err, "rule M4"), "%s", r.err);
    th_run_free(&r);
    r = TH_RUN_EX("matmul", "--vmem-limit", "1X");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "--vmem-limit: '1X' is not a size"), "%s", r.err);
    th_run_free(&r);
}
