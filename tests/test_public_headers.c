/* tests/test_public_headers.c: the public headers as a user meets them.
 *
 * sim/tilesim.h is the host API in the order a user needs it; the reference
 * checks and heatmaps have their own header, sim/tilesim_check.h, which
 * tilesim.h still includes so that programs written against tilesim.h alone
 * keep compiling. Internal helpers (pl_json_string) are not declared there.
 * Every public function of both headers carries its own contract comment.
 *
 * The compile tests run `cc` (and `c++`) at run time on tiny programs in a
 * temporary directory, with -I at the source tree, found by walking up from
 * the test binary (BUILD/tests/tilesim_tests inside the tree) or from the
 * current directory.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"

/* The source tree: the first directory above the test binary (or the
 * current directory) that holds sim/tilesim.h. */
static void source_root(char *root, size_t n)
{
    char path[PATH_MAX], probe[PATH_MAX + 32];
    ssize_t k = readlink("/proc/self/exe", path, sizeof path - 1);
    path[k > 0 ? k : 0] = '\0';
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1 && !getcwd(path, sizeof path)) break;
        for (char *slash; (slash = strrchr(path, '/')) != NULL;) {
            snprintf(probe, sizeof probe, "%s/sim/tilesim.h", path);
            if (access(probe, R_OK) == 0) {
                snprintf(root, n, "%s", path);
                return;
            }
            *slash = '\0';
        }
    }
    cr_assert_fail("no source tree (sim/tilesim.h) above the test binary or the current directory");
}

/* Write src to a temporary file NAME and compile it with `compiler flags`;
 * returns the compiler's exit status, its messages in log. */
static int compile(const char *compiler, const char *flags, const char *name, const char *src, char *log, size_t n)
{
    char root[PATH_MAX], dir[] = "/tmp/tilesim_hdr_XXXXXX", file[PATH_MAX], cmd[3 * PATH_MAX + 256];
    source_root(root, sizeof root);
    cr_assert(mkdtemp(dir));
    snprintf(file, sizeof file, "%s/%s", dir, name);
    FILE *f = fopen(file, "w");
    cr_assert(f);
    fputs(src, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s %s -I'%s' -c '%s' -o '%s/out.o' > '%s/log' 2>&1", compiler, flags, root, file, dir,
             dir);
    int rc = system(cmd);
    snprintf(file, sizeof file, "%s/log", dir);
    char *text = th_read_file(file);
    snprintf(log, n, "%s", text ? text : "");
    free(text);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
    return rc;
}

#define C_FLAGS "-std=c11 -Wall -Wextra -Werror -pedantic-errors"
#define CXX_FLAGS "-std=c++17 -Wall -Wextra -Werror -pedantic-errors"

/* Every function of the checks header, by address: a missing declaration
 * fails the compile. */
#define USE_CHECKS                                                                                                \
    "int main(void) {\n"                                                                                          \
    "    pl_check chk = {PL_PASS, 0, 0, 0, 0, 0, 0, 0, {0}};\n"                                                   \
    "    void (*fns[])(void) = {(void (*)(void))pl_check_matmul, (void (*)(void))pl_check_matmul_call,\n"         \
    "        (void (*)(void))pl_check_blame, (void (*)(void))pl_allclose, (void (*)(void))pl_check_heatmap,\n"    \
    "        (void (*)(void))pl_allclose_heatmap, (void (*)(void))pl_check_dma_modes,\n"                          \
    "        (void (*)(void))pl_check_order, (void (*)(void))pl_verdict_name};\n"                                 \
    "    return (int)chk.verdict + (fns[0] == 0);\n"                                                              \
    "}\n"

/* The checks header stands alone: included first and only, it compiles as
 * C and as C++ and declares the whole checks API. */
Test(public_headers, checks_header_is_self_contained)
{
    char log[4096];
    const char *src = "#include \"sim/tilesim_check.h\"\n" USE_CHECKS;
    cr_assert_eq(compile("cc", C_FLAGS, "alone.c", src, log, sizeof log), 0, "as C:\n%s", log);
    cr_assert_eq(compile("c++", CXX_FLAGS, "alone.cc", src, log, sizeof log), 0, "as C++:\n%s", log);
}

/* A program written against tilesim.h alone, as every program was before the
 * checks had their own header, still gets the checks; and both orders of
 * the two headers compile. */
Test(public_headers, tilesim_h_alone_still_declares_the_checks)
{
    char log[4096];
    const char *alone = "#include \"sim/tilesim.h\"\n" USE_CHECKS;
    cr_assert_eq(compile("cc", C_FLAGS, "old.c", alone, log, sizeof log), 0, "tilesim.h alone:\n%s", log);
    const char *both = "#include \"sim/tilesim.h\"\n#include \"sim/tilesim_check.h\"\n"
                       "#include \"sim/tilesim.h\"\n" USE_CHECKS;
    cr_assert_eq(compile("cc", C_FLAGS, "both.c", both, log, sizeof log), 0, "both headers:\n%s", log);
}

/* pl_json_string is the library's own JSON writer, not API: a user's
 * variable of that name must not clash with anything in tilesim.h. */
Test(public_headers, json_writer_is_not_public)
{
    char log[4096];
    const char *src = "#include \"sim/tilesim.h\"\nstatic int pl_json_string = 1;\n"
                      "int main(void) { return pl_json_string - 1; }\n";
    cr_assert_eq(compile("cc", C_FLAGS, "json.c", src, log, sizeof log), 0,
                 "sim/tilesim.h declares pl_json_string:\n%s", log);
}

/* ---- contract comments ---------------------------------------------------------------- */

/* A function declaration at file scope: starts in column 0 with a type and
 * names a pl_ / pltpu_ function ("int pl_validate(", "const char *pl_..."). */
static int declares_function(const char *line)
{
    if (!((line[0] >= 'a' && line[0] <= 'z') || (line[0] >= 'A' && line[0] <= 'Z'))) return 0;
    if (strncmp(line, "typedef", 7) == 0 || strncmp(line, "extern", 6) == 0 || strncmp(line, "struct", 6) == 0)
        return 0;
    const char *p = strstr(line, "pl_");
    const char *paren = strchr(line, '(');
    return p && paren && p < paren && (p == line || p[-1] == ' ' || p[-1] == '*');
}

/* A line that is only comment (its first or an inner line) and closes it: a
 * declaration's trailing comment documents that declaration, not the next. */
static int ends_comment(const char *line)
{
    line += strspn(line, " \t");
    if (line[0] != '*' && strncmp(line, "/*", 2) != 0) return 0;
    size_t n = strlen(line);
    while (n && (line[n - 1] == ' ' || line[n - 1] == '\r')) n--;
    return n >= 2 && line[n - 2] == '*' && line[n - 1] == '/';
}

/* The next line of a text cut in place: NULL at the end. */
static char *next_line(char **at)
{
    if (!*at) return NULL;
    char *line = *at, *nl = strchr(line, '\n');
    if (nl) *nl = '\0';
    *at = nl ? nl + 1 : NULL;
    return line;
}

/* Every function declared in the C part of header `rel` has a comment of its
 * own: one that ends on the line just above it, or one on its last line
 * (after the ';'). Returns how many have none and lists them in bad. */
static int undocumented(const char *rel, char *bad, size_t n)
{
    char root[PATH_MAX], path[PATH_MAX + 64];
    source_root(root, sizeof root);
    snprintf(path, sizeof path, "%s/%s", root, rel);
    char *text = th_read_file(path), *at = text, *line;
    const char *prev = "";
    cr_assert(text, "cannot read %s", path);
    int count = 0, decls = 0;
    size_t used = 0;
    bad[0] = '\0';
    while ((line = next_line(&at)) != NULL) {
        if (strncmp(line, "extern \"C++\"", 12) == 0) break; /* the C++ helpers: not API */
        if (!declares_function(line)) {
            prev = line;
            continue;
        }
        decls++;
        char *last = line; /* a declaration over several lines: its comment is on the last */
        while (!strchr(last, ';') && at) last = next_line(&at);
        const char *semi = strchr(last, ';');
        if (!ends_comment(prev) && !(semi && strstr(semi, "/*"))) {
            count++;
            if (used < n)
                used += (size_t)snprintf(bad + used, n - used, "  %.*s\n", (int)strcspn(line, "("), line);
        }
        prev = last;
    }
    free(text);
    cr_assert_gt(decls, 0, "%s declares no function?", rel);
    return count;
}

/* Every public function has a contract: what it does, its errors, who owns
 * what it returns or keeps, and from which threads it may be called. */
Test(public_headers, every_function_has_a_contract_comment)
{
    const char *headers[] = {"sim/tilesim.h", "sim/tilesim_check.h"};
    for (int i = 0; i < 2; i++) {
        char bad[4096];
        int n = undocumented(headers[i], bad, sizeof bad);
        cr_expect_eq(n, 0, "%s: %d functions without a comment of their own:\n%s", headers[i], n, bad);
    }
}
