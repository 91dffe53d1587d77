/* tests/helpers.h: small helpers shared by the Criterion tests.
 *
 * Everything here is static inline so that every test file can include it
 * without link conflicts and without -Wunused-function warnings. Include it
 * after <criterion/criterion.h> or on its own (it includes Criterion).
 */
#ifndef TILESIM_TEST_HELPERS_H
#define TILESIM_TEST_HELPERS_H

#include <criterion/criterion.h>
#include <jansson.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../kernel/pallas.h"
#include "../sim/tilesim.h"

/* ---- reports -------------------------------------------------------------- */

/* The operand of the report named `name`; the test fails without one. */
static inline const pl_operand_report *th_operand(const pl_report *rep, const char *name)
{
    for (int i = 0; i < rep->n_operands; i++)
        if (!strcmp(rep->op[i].name, name)) return &rep->op[i];
    cr_assert_fail("no operand '%s'", name);
    return NULL;
}

/* ---- arrays --------------------------------------------------------------- */

/* A malloc'd f32 array of n elements holding i * 0.5 (exact in f32, and in
 * bf16 for i < 512). The caller frees it. */
static inline float *th_f32_seq(int64_t n)
{
    float *p = malloc((size_t)n * sizeof *p);
    cr_assert(p, "out of host memory for %lld floats", (long long)n);
    for (int64_t i = 0; i < n; i++) p[i] = (float)i * 0.5f;
    return p;
}

/* A malloc'd f32 array of n elements all equal to v. The caller frees it. */
static inline float *th_f32_fill(int64_t n, float v)
{
    float *p = malloc((size_t)n * sizeof *p);
    cr_assert(p, "out of host memory for %lld floats", (long long)n);
    for (int64_t i = 0; i < n; i++) p[i] = v;
    return p;
}

/* Elements of a and b (n floats each) that differ bitwise. */
static inline int64_t th_f32_diff(const float *a, const float *b, int64_t n)
{
    int64_t d = 0;
    for (int64_t i = 0; i < n; i++) d += memcmp(&a[i], &b[i], sizeof a[i]) != 0;
    return d;
}

/* What an output holds before a call writes it: tests compare against it to
 * prove that a failed call left the output untouched. */
#define TH_SENTINEL (-7.25f)

/* An f32 input (i * 0.5) and an f32 output (TH_SENTINEL) of shape (m, n). */
typedef struct th_io {
    int64_t n;       /* elements of each array */
    float *in, *out; /* owned; th_io_free releases them */
    pl_array a, o;   /* the arrays over in and out */
} th_io;

static inline th_io th_io_2d(int64_t m, int64_t n)
{
    th_io io = {.n = m * n, .in = th_f32_seq(m * n), .out = th_f32_fill(m * n, TH_SENTINEL)};
    io.a = PL_ARRAY(io.in, PL_F32, m, n);
    io.o = PL_ARRAY(io.out, PL_F32, m, n);
    return io;
}

static inline void th_io_free(th_io *io)
{
    free(io->in);
    free(io->out);
    io->in = io->out = NULL;
}

/* Elements of io->out that no longer hold TH_SENTINEL. */
static inline int64_t th_io_touched(const th_io *io)
{
    int64_t d = 0;
    for (int64_t i = 0; i < io->n; i++) d += io->out[i] != TH_SENTINEL;
    return d;
}

/* ---- files and JSON ----------------------------------------------------------- */

/* A whole file, NUL-terminated; the caller frees it. Fails the test if the
 * file cannot be read. */
static inline char *th_read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    size_t cap = 65536, n = 0, got;
    char *text = malloc(cap);
    cr_assert(text, "out of host memory reading %s", path);
    while ((got = fread(text + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n + 1 == cap) {
            text = realloc(text, cap *= 2);
            cr_assert(text, "out of host memory reading %s", path);
        }
    }
    cr_assert(!ferror(f), "cannot read %s", path);
    fclose(f);
    text[n] = '\0';
    return text;
}

/* Parse text as exactly one JSON document with jansson (strict: a syntax
 * error anywhere, or anything after the document, fails the test with the
 * line and column); `what` names it in the message. json_decref it. */
static inline json_t *th_json_parse(const char *text, const char *what)
{
    json_error_t err;
    json_t *doc = json_loads(text, JSON_REJECT_DUPLICATES, &err);
    cr_assert(doc, "%s is not JSON: line %d, column %d: %s", what, err.line, err.column, err.text);
    return doc;
}

/* The same for a file. */
static inline json_t *th_json_file(const char *path)
{
    json_error_t err;
    json_t *doc = json_load_file(path, JSON_REJECT_DUPLICATES, &err);
    cr_assert(doc, "%s is not JSON: line %d, column %d: %s", path, err.line, err.column, err.text);
    return doc;
}

/* obj[key] as a number (integer or real), failing the test if it is missing
 * or not a number. */
static inline double th_json_num(const json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    cr_assert(json_is_number(v), "\"%s\" is missing or not a number", key);
    return json_number_value(v);
}

/* obj[key] as a string, failing the test if it is missing or not a string. */
static inline const char *th_json_str(const json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    cr_assert(json_is_string(v), "\"%s\" is missing or not a string", key);
    return json_string_value(v);
}

/* ---- the build directory --------------------------------------------------------- */

/* BUILD/<rel> into buf (n bytes), BUILD being the build directory of this
 * test binary (BUILD/tests/tilesim_tests): so that `make BUILD=x` tests x's
 * command, examples and plugins, not whatever build/ holds. rel "" gives
 * "BUILD/". Fails the test when /proc/self/exe cannot be read or the path
 * does not fit; whether the file exists is the caller's question. Returns buf. */
static inline const char *th_build_path(const char *rel, char *buf, size_t n)
{
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    cr_assert(len > 0, "cannot read /proc/self/exe to find the build directory");
    exe[len] = '\0';
    for (int up = 0; up < 2; up++) { /* BUILD/tests/tilesim_tests -> BUILD/tests -> BUILD */
        char *slash = strrchr(exe, '/');
        cr_assert_not_null(slash, "the test binary %s is not in BUILD/tests/", exe);
        *slash = '\0';
    }
    int k = snprintf(buf, n, "%s/%s", exe, rel);
    cr_assert(k >= 0 && (size_t)k < n, "the path %s/%s does not fit in %zu bytes", exe, rel, n);
    return buf;
}

/* The tilesim command to test: $TILESIM when set and not empty, else
 * BUILD/tilesim (th_build_path). Returns the environment's string or buf. */
static inline const char *th_tilesim_path(char *buf, size_t n)
{
    const char *env = getenv("TILESIM");
    return env && env[0] ? env : th_build_path("tilesim", buf, n);
}

/* ---- kernels --------------------------------------------------------------- */

/* out0[...] = in0[...] (refs[0] is in0, refs[1] is out0). */
static inline void th_copy_kernel(pl_ctx *c, pl_ref *refs) { pl_copy(c, refs[1], refs[0]); }

/* A kernel that does nothing. */
static inline void th_noop_kernel(pl_ctx *c, pl_ref *refs)
{
    (void)c;
    (void)refs;
}

/* th_copy_kernel that also counts its runs in the int at pl_call.user. */
static inline void th_count_copy_kernel(pl_ctx *c, pl_ref *refs)
{
    int *runs = pl_kernel_user(c);
    if (runs) ++*runs;
    pl_copy(c, refs[1], refs[0]);
}

/* ---- calls ------------------------------------------------------------------ */

/* A copy call (th_copy_kernel) of an (m, n) array in (bm, bn) blocks: grid
 * (cdiv(m, bm), cdiv(n, bn)), both operands mapped (i, j). */
static inline pl_call th_copy_call_2d(int64_t m, int64_t n, int64_t bm, int64_t bn)
{
    pl_call call = {
        .name = "copy2d",
        .kernel = th_copy_kernel,
        .grid_rank = 2,
        .grid = {(m + bm - 1) / bm, (n + bn - 1) / bn},
        .n_in = 1,
        .in = {PL_BLOCK(PL_MAP(0, 1), bm, bn)},
        .n_out = 1,
        .out = {PL_BLOCK(PL_MAP(0, 1), bm, bn)},
    };
    return call;
}

/* ---- checking results ------------------------------------------------------ */

/* Assert that a call returned PL_OK and cleared pl_last_error(). */
static inline void th_expect_ok(int rc, const pl_report *rep)
{
    cr_assert_eq(rc, PL_OK, "returned %d (%s): %s", rc, pl_strerror(rc), rep ? rep->error : pl_last_error());
    if (rep) cr_assert_eq(rep->status, PL_OK);
    cr_assert_str_empty(pl_last_error(), "pl_last_error() after a successful call: %s", pl_last_error());
}

/* Assert that a call failed with `code`: the return value and the report
 * agree, the code has a name, pl_last_error() holds the report's message,
 * and the message contains every string of the NULL-terminated list subs. */
static inline void th_expect_error(int rc, const pl_report *rep, int code, const char *const *subs)
{
    cr_assert_eq(rc, code, "returned %d (%s), want %d (%s); message: %s", rc, pl_strerror(rc), code,
                 pl_strerror(code), rep->error);
    cr_assert_eq(rep->status, code);
    const char *name = pl_strerror(code);
    cr_assert(name && name[0] && strcmp(name, "unknown status code") != 0, "pl_strerror(%d) = \"%s\"", code,
              name ? name : "(null)");
    cr_assert(rep->error[0], "empty message for code %d", code);
    cr_assert_str_eq(pl_last_error(), rep->error);
    for (; *subs; subs++) cr_assert(strstr(rep->error, *subs), "message lacks \"%s\": %s", *subs, rep->error);
}

/* TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "in0", "T1"): rep is a pl_report
 * (not a pointer); at least one substring. */
#define TH_EXPECT_ERROR(rc, rep, code, ...) \
    th_expect_error((rc), &(rep), (code), (const char *const[]){__VA_ARGS__, NULL})

#endif
