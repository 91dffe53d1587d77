/* tests/run.h: running this build's programs (the tilesim command, the
 * examples) from a test, as programs: fork and exec, stdout and stderr into
 * temporary files, the exit status back.
 *
 * The programs are those of the test binary's own build directory
 * (th_build_path), so that `make BUILD=x` tests x's programs. OpenBLAS runs
 * on one thread in them, as in the suite: results must not depend on it.
 * Static inline, as helpers.h.
 */
#ifndef TILESIM_TEST_RUN_H
#define TILESIM_TEST_RUN_H

#include <fcntl.h>
#include <jansson.h>
#include <sys/wait.h>

#include "helpers.h"

/* The most arguments a run takes after the program's name. */
#define TH_MAX_ARGS 40

/* What a program printed and how it ended. */
typedef struct th_run {
    int status; /* exit status, or -signal when killed */
    char *out;  /* stdout, NUL-terminated, owned: th_run_free */
    char *err;  /* stderr, the same */
} th_run;

/* A fresh temporary file holding contents (NULL: empty); its path is
 * written to path, which has room for at least 64 bytes. */
static inline void th_temp_file(char *path, const char *contents)
{
    strcpy(path, "/tmp/tilesim_test_XXXXXX");
    int fd = mkstemp(path);
    cr_assert(fd >= 0, "mkstemp failed");
    if (contents) cr_assert_eq(write(fd, contents, strlen(contents)), (ssize_t)strlen(contents));
    close(fd);
}

/* Run exe with the NULL-terminated argument list args. Fails the test when
 * the run cannot be made or the program is killed by a signal: a crash is a
 * failure, whatever status the test expects. */
static inline th_run th_run_argv(const char *exe, const char *const *args)
{
    char out[64], err[64];
    th_temp_file(out, NULL);
    th_temp_file(err, NULL);
    char *argv[TH_MAX_ARGS + 2] = {(char *)exe};
    int n = 1;
    for (; args[n - 1]; n++) {
        cr_assert(n <= TH_MAX_ARGS, "more than %d arguments for %s", TH_MAX_ARGS, exe);
        argv[n] = (char *)args[n - 1];
    }
    argv[n] = NULL;
    fflush(NULL); /* or the child's exit flushes the parent's buffered output again */
    pid_t pid = fork();
    cr_assert(pid >= 0, "fork failed");
    if (pid == 0) {
        int fo = open(out, O_WRONLY | O_TRUNC), fe = open(err, O_WRONLY | O_TRUNC);
        if (fo < 0 || fe < 0 || dup2(fo, 1) < 0 || dup2(fe, 2) < 0) _exit(126);
        setenv("OPENBLAS_NUM_THREADS", "1", 1);
        execv(exe, argv);
        _exit(127);
    }
    int ws;
    cr_assert_eq(waitpid(pid, &ws, 0), pid);
    th_run r = {WIFEXITED(ws) ? WEXITSTATUS(ws) : -WTERMSIG(ws), th_read_file(out), th_read_file(err)};
    unlink(out);
    unlink(err);
    cr_assert(r.status >= 0, "%s was killed by signal %d; stderr: %s", exe, -r.status, r.err);
    return r;
}

static inline void th_run_free(th_run *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

/* The tilesim command (th_tilesim_path: $TILESIM or BUILD/tilesim) with a
 * NULL-terminated argument list; a missing command fails the test saying
 * how to build it. */
static inline th_run th_run_tilesim(const char *const *args)
{
    char path[PATH_MAX];
    const char *exe = th_tilesim_path(path, sizeof path);
    cr_assert(access(exe, X_OK) == 0, "%s is missing: build it with `make %s` (or set TILESIM to the command)",
              exe, exe);
    return th_run_argv(exe, args);
}

/* TH_RUN("sweep", "add", "--csv"): th_run_tilesim over the words given. */
#define TH_RUN(...) th_run_tilesim((const char *const[]){__VA_ARGS__, NULL})

/* BUILD/examples/NAME for the BUILD this test binary was built in; the
 * environment's UX_EXAMPLES_DIR wins (to run these tests against another
 * build of the examples). A missing program fails the test saying how to
 * build it. */
static inline const char *th_example_path(const char *name, char *buf, size_t n)
{
    const char *dir = getenv("UX_EXAMPLES_DIR");
    if (dir) {
        snprintf(buf, n, "%s/%s", dir, name);
        return buf;
    }
    char rel[PATH_MAX];
    snprintf(rel, sizeof rel, "examples/%s", name);
    th_build_path(rel, buf, n);
    cr_assert_eq(access(buf, X_OK), 0, "%s is not built: make BUILD=... %s", buf, buf);
    return buf;
}

/* Run example NAME with a NULL-terminated argument list. */
static inline th_run th_run_example(const char *name, const char *const *args)
{
    char path[PATH_MAX + 64];
    return th_run_argv(th_example_path(name, path, sizeof path), args);
}

/* TH_RUN_EX("matmul", "--help"): th_run_example over the words given. */
#define TH_RUN_EX(name, ...) th_run_example(name, (const char *const[]){__VA_ARGS__, NULL})

/* The time `tilesim run KERNEL --cost-only --json` predicts for the
 * assignments in sets ("bm=512 bn=256 dtype=bf16", each a --set), on the
 * chip file chip_file (NULL: the default chip), in seconds. */
static inline double th_predicted_s(const char *kernel, const char *sets, const char *chip_file)
{
    const char *args[TH_MAX_ARGS + 1] = {"run", kernel, "--cost-only", "--json"};
    int n = 4;
    if (chip_file) args[n++] = "--chip-file", args[n++] = chip_file;
    char buf[512], *save = NULL;
    snprintf(buf, sizeof buf, "%s", sets);
    for (char *w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
        cr_assert(n + 2 <= TH_MAX_ARGS, "too many --set for %s: %s", kernel, sets);
        args[n++] = "--set", args[n++] = w;
    }
    args[n] = NULL;
    th_run r = th_run_tilesim(args);
    cr_assert_eq(r.status, 0, "%s %s: %s", kernel, sets, r.err);
    json_error_t e;
    json_t *j = json_loads(r.out, 0, &e);
    cr_assert(j, "%s %s: not JSON (%s)", kernel, sets, e.text);
    double t = json_number_value(json_object_get(json_object_get(j, "report"), "time_s"));
    json_decref(j);
    th_run_free(&r);
    return t;
}

/* The plugin template's path, BUILD/examples/plugin/rmsnorm.so. */
static inline const char *th_plugin(void)
{
    static char path[PATH_MAX];
    return th_build_path("examples/plugin/rmsnorm.so", path, sizeof path);
}

/* Skip the test when the plugin template is not built. */
static inline void th_need_plugin(void)
{
    if (access(th_plugin(), R_OK) != 0) cr_skip_test("%s is not built (make builds the plugin template)", th_plugin());
}

#endif
