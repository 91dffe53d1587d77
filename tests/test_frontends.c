/* tests/test_frontends.c: the example programs are thin front ends over the
 * built-in kernel definitions (issue 10): a program and `tilesim run` given
 * the same configuration build the same call over the same inputs and check
 * it against the same reference, so their verdict lines agree byte for byte
 * (V5). Both binaries are those of this test binary's build directory. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"

/* BUILD/<rel> for the build directory of this test binary, built. */
static void build_path(const char *rel, char *out, size_t n)
{
    th_build_path(rel, out, n);
    cr_assert_eq(access(out, X_OK), 0, "%s is not built", out);
}

/* The lines of stdout of `BUILD/<rel> args` (simple words only) that contain
 * `marker`, concatenated; the exit status in *status. */
static char *lines_of(const char *rel, const char *args, const char *marker, int *status)
{
    char path[PATH_MAX], cmd[PATH_MAX + 512], line[4096];
    build_path(rel, path, sizeof path);
    snprintf(cmd, sizeof cmd, "OPENBLAS_NUM_THREADS=1 %s %s 2>/dev/null", path, args);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p, "cannot run %s", cmd);
    size_t cap = 1 << 16, used = 0;
    char *out = calloc(1, cap);
    cr_assert_not_null(out);
    while (fgets(line, sizeof line, p))
        if (strstr(line, marker) && used + strlen(line) < cap) used += (size_t)sprintf(out + used, "%s", line);
    int st = pclose(p);
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return out;
}

/* The program's verdict lines equal those of `tilesim run` over the same
 * configuration, and both pass. */
static void same_verdicts(const char *program, const char *prog_args, const char *run_args)
{
    int ps, rs;
    char *prog = lines_of(program, prog_args, "verify output", &ps);
    char *run = lines_of("tilesim", run_args, "verify output", &rs);
    cr_assert_eq(ps, 0, "%s %s: exit %d", program, prog_args, ps);
    cr_assert_eq(rs, 0, "tilesim %s: exit %d", run_args, rs);
    cr_assert(run[0], "tilesim %s printed no verdict", run_args);
    cr_assert_str_eq(prog, run, "%s %s and tilesim %s disagree:\n%s---\n%s", program, prog_args, run_args, prog, run);
    free(prog);
    free(run);
}

Test(frontends, flash_attention_is_the_definition_run)
{
    same_verdicts("examples/flash_attention", "256 200 128 128 64 --causal",
                  "run flash_attention --set sq=256 --set skv=200 --set bq=128 --set bk=64 --set causal=1");
    same_verdicts("examples/flash_attention", "128 128 64 64 64 bf16 --heads 2",
                  "run flash_attention --set sq=128 --set skv=128 --set d=64 --set bq=64 --set bk=64 --set heads=2 "
                  "--set dtype=bf16");
}

/* The group sizes drawn from --seed are those of sizes_seed. */
Test(frontends, grouped_matmul_is_the_definition_run)
{
    same_verdicts("examples/grouped_matmul", "512 256 256 4 128 128 128 --seed 3",
                  "run grouped_matmul --set sizes_seed=3");
    same_verdicts("examples/grouped_matmul", "300 256 384 5 64 128 128 bf16 --seed 9",
                  "run grouped_matmul --set M=300 --set K=384 --set G=5 --set bm=64 --set sizes_seed=9 --set dtype=bf16");
}

/* Sizes given with --sizes (an empty group, one smaller than a block) build
 * the definition's call over them: the definition's verdict, PASS. */
Test(frontends, grouped_matmul_sizes_given)
{
    int st;
    char *out = lines_of("examples/grouped_matmul", "400 256 256 4 128 128 128 --sizes 0,37,300,63", "verify output",
                         &st);
    cr_assert_eq(st, 0, "exit %d", st);
    cr_assert(strstr(out, "verify output 0 'o' (f32 400x256) vs reference") && strstr(out, "PASS"), "%s", out);
    free(out);
}

/* --seed is pattern_seed; a density in whole percent is the definition's. */
Test(frontends, block_sparse_matmul_is_the_definition_run)
{
    same_verdicts("examples/block_sparse_matmul", "512 256 1024 128 128 256 0.25 --seed 4",
                  "run block_sparse_matmul --set N=256 --set bn=128 --set pattern_seed=4");
    same_verdicts("examples/block_sparse_matmul", "256 384 512 64 128 128 0.5 bf16",
                  "run block_sparse_matmul --set M=256 --set N=384 --set K=512 --set bm=64 --set bn=128 --set bk=128 "
                  "--set density=50 --set dtype=bf16");
}

/* A density that is no whole percentage keeps its exact fraction: 1 of the
 * 3 x 2 blocks present, checked by the definition's reference. */
Test(frontends, block_sparse_matmul_density_fraction)
{
    int st;
    char *out = lines_of("examples/block_sparse_matmul", "384 256 256 128 128 128 0.1667", "present", &st);
    cr_assert_eq(st, 0, "exit %d", st);
    cr_assert(strstr(out, "X: 1 of 6 blocks present"), "%s", out);
    free(out);
    out = lines_of("examples/block_sparse_matmul", "384 256 256 128 128 128 0.1667", "verify output", &st);
    cr_assert(strstr(out, "verify output 0 'o' (f32 384x256) vs reference") && strstr(out, "PASS"), "%s", out);
    free(out);
}

/* One sequence of length max_len is the definition's batch of one. */
Test(frontends, paged_attention_is_the_definition_run)
{
    same_verdicts("examples/paged_attention", "300", "run paged_attention --set batch=1 --set max_len=300");
    same_verdicts("examples/paged_attention", "77 --page 8 --heads 16 --dtype bf16",
                  "run paged_attention --set batch=1 --set max_len=77 --set page=8 --set heads=16 --set dtype=bf16");
}

/* Lengths given (an empty sequence among them) build the definition's call
 * over them; the run with copies landing at their waits passes too (M7). */
Test(frontends, paged_attention_lengths_given)
{
    int st;
    char *out = lines_of("examples/paged_attention", "5,0,40 --page 16", "  ", &st);
    cr_assert_eq(st, 0, "exit %d", st);
    cr_assert(strstr(out, "verify output 0 'o' (f32 3x8x128) vs reference") && strstr(out, "PASS"), "%s", out);
    cr_assert(strstr(out, "copies landing only at their waits give a result that passes too"), "%s", out);
    free(out);
}

/* "max abs err E, worst W of the tolerance" from the first line of text
 * that has it. */
static void err_part(const char *text, char *out, size_t n)
{
    const char *a = strstr(text, "max abs err"), *z = a ? strstr(a, "of the tolerance") : NULL;
    cr_assert(a && z, "no verdict in: %s", text);
    snprintf(out, n, "%.*s", (int)(z - a), a);
}

/* The matmul program keeps its arrays (for --seed, --heatmap and its
 * BLIS-style check) but its call, inputs and reference are the matmul
 * definition's: its allclose verdict has the numbers `tilesim run` gets. */
Test(frontends, matmul_is_the_definition_run)
{
    const char *cases[][2] = {
        {"300 200 260 128 128 128", "run matmul --set M=300 --set N=200 --set K=260 --set bm=128 --set bn=128 --set bk=128"},
        {"256 384 512 128 128 256 bf16", "run matmul --set M=256 --set N=384 --set bm=128 --set bn=128 --set dtype=bf16"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int ps, rs;
        char pe[256], re[256];
        char *prog = lines_of("examples/matmul", cases[i][0], "allclose", &ps);
        char *run = lines_of("tilesim", cases[i][1], "verify output", &rs);
        cr_assert_eq(ps, 0, "matmul %s: exit %d", cases[i][0], ps);
        cr_assert_eq(rs, 0, "tilesim %s: exit %d", cases[i][1], rs);
        err_part(prog, pe, sizeof pe);
        err_part(run, re, sizeof re);
        cr_assert_str_eq(pe, re, "matmul %s: %s; tilesim %s: %s", cases[i][0], prog, cases[i][1], run);
        free(prog);
        free(run);
    }
}
