/* tests/test_output_paths.c: no output path is ever destroyed (issue 21).
 * Every option that writes a file (--trace, --html, --svg, --heatmap,
 * --roofline, --json-file) of every verb and example, run as a program
 * against an existing file, a symbolic link, a character device made with
 * mknod in a temporary directory (never the real /dev ones) and a new path,
 * each with a failing and a succeeding run: the file keeps its contents
 * when the run fails, a link stays a link, a device stays a device, and no
 * temporary file is left behind. Then the trace's size cap (--trace-limit).
 * There is no -o FILE: verify's -o is --output NAME, an output by name. */
#define _XOPEN_SOURCE 700 /* mknod */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "run.h"

#define KEEP "the user's own file\n"

typedef struct out_case {
    const char *exe;          /* NULL: tilesim; else a program of the build ("examples/matmul") */
    const char *fail[14];     /* a run that fails; "@" is the output path */
    const char *ok[14];       /* a run that succeeds */
    const char *starts;       /* what the file written starts with */
} out_case;

static th_run run_with(const out_case *c, const char *const *words, const char *path)
{
    const char *args[TH_MAX_ARGS + 1] = {0};
    int n = 0;
    for (; words[n]; n++) args[n] = strcmp(words[n], "@") ? words[n] : path;
    if (!c->exe) return th_run_tilesim(args);
    char exe[PATH_MAX];
    return th_run_argv(th_build_path(c->exe, exe, sizeof exe), args);
}

static void write_file(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
    cr_assert_eq(chmod(path, mode), 0);
}

static void expect_text(const char *path, const char *want, const char *what)
{
    char *got = th_read_file(path);
    cr_expect(got && !strcmp(got, want), "%s: '%s' holds '%.60s', want '%s'", what, path, got ? got : "(missing)",
              want);
    free(got);
}

static void expect_written(const char *path, const char *starts, const char *what)
{
    char *got = th_read_file(path);
    cr_expect(got && !strncmp(got, starts, strlen(starts)), "%s: '%s' starts '%.40s', want '%s'", what, path,
              got ? got : "(missing)", starts);
    free(got);
}

static void expect_link(const char *link, const char *what)
{
    struct stat st;
    cr_expect(lstat(link, &st) == 0 && S_ISLNK(st.st_mode), "%s: '%s' is no longer a symbolic link", what, link);
}

static void expect_device(const char *path, const char *what)
{
    struct stat st;
    cr_expect(lstat(path, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3),
              "%s: the device node '%s' was removed or replaced", what, path);
}

static void expect_status(th_run *r, int ok, const char *what)
{
    if (ok) cr_expect_eq(r->status, 0, "%s: exit %d\n%s%s", what, r->status, r->out, r->err);
    else cr_expect_neq(r->status, 0, "%s: the failing run exited 0\n%s", what, r->out);
    th_run_free(r);
}

/* The directory holds exactly the names given: nothing left behind. */
static void expect_only(const char *dir, const char *const *names, int n)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        int known = 0;
        for (int i = 0; i < n; i++) known |= !strcmp(e->d_name, names[i]);
        cr_expect(known, "'%s' was left in %s (a temporary file?)", e->d_name, dir);
    }
    closedir(d);
}

static void check_case(const out_case *c)
{
    char dir[] = "/tmp/tilesim_outpaths_XXXXXX", file[96], target[96], link[96], dev[96], fresh[96];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(file, sizeof file, "%s/file", dir);
    snprintf(target, sizeof target, "%s/target", dir);
    snprintf(link, sizeof link, "%s/link", dir);
    snprintf(dev, sizeof dev, "%s/null", dir);
    snprintf(fresh, sizeof fresh, "%s/new", dir);

    /* (a) an existing file: a failure leaves it, a success replaces it keeping its mode */
    write_file(file, KEEP, 0640);
    th_run r = run_with(c, c->fail, file);
    expect_status(&r, 0, "existing file, failing run");
    expect_text(file, KEEP, "existing file, failing run");
    r = run_with(c, c->ok, file);
    expect_status(&r, 1, "existing file");
    expect_written(file, c->starts, "existing file");
    struct stat st;
    cr_expect(stat(file, &st) == 0 && (st.st_mode & 07777) == 0640, "the replaced file lost its mode 0640: %o",
              (unsigned)(st.st_mode & 07777));

    /* (b) a symbolic link: the link stays, its target is what is written */
    write_file(target, KEEP, 0644);
    cr_assert_eq(symlink("target", link), 0);
    r = run_with(c, c->fail, link);
    expect_status(&r, 0, "symlink, failing run");
    expect_link(link, "symlink, failing run");
    expect_text(target, KEEP, "symlink's target, failing run");
    r = run_with(c, c->ok, link);
    expect_status(&r, 1, "symlink");
    expect_link(link, "symlink");
    expect_written(target, c->starts, "symlink's target");

    /* (c) a character device (/dev/null's numbers, in our own directory) */
    int made = mknod(dev, S_IFCHR | 0666, makedev(1, 3)) == 0, why = errno;
    if (made) {
        r = run_with(c, c->fail, dev);
        expect_status(&r, 0, "device, failing run");
        expect_device(dev, "device, failing run");
        r = run_with(c, c->ok, dev);
        expect_status(&r, 1, "device");
        expect_device(dev, "device");
    }

    /* (d) a new path: written, and nothing else left in the directory */
    r = run_with(c, c->ok, fresh);
    expect_status(&r, 1, "new path");
    expect_written(fresh, c->starts, "new path");
    const char *names[] = {"file", "target", "link", "null", "new"};
    expect_only(dir, names, 5);

    unlink(file), unlink(target), unlink(link), unlink(dev), unlink(fresh), rmdir(dir);
    if (!made) cr_skip_test("mknod failed (%s): the device cases need root", strerror(why));
}

#define MM "matmul"
static const out_case memory_svg = {NULL, {"memory", MM, "--set", "bm=7", "--svg", "@"}, {"memory", MM, "--svg", "@"},
                                    "<svg"};
static const out_case memory_json = {NULL, {"memory", MM, "--set", "bm=7", "--json-file", "@"},
                                     {"memory", MM, "--json-file", "@"}, "{"};
static const out_case run_trace = {NULL, {"run", MM, "--cost-only", "--set", "bm=7", "--trace", "@"},
                                   {"run", MM, "--cost-only", "--trace", "@"}, "{\"displayTimeUnit\""};
static const out_case run_html = {NULL, {"run", MM, "--cost-only", "--set", "bm=7", "--html", "@"},
                                  {"run", MM, "--cost-only", "--html", "@"}, "<!DOCTYPE html>"};
static const out_case explain_html = {NULL, {"explain", MM, "--set", "bm=7", "--html", "@"},
                                      {"explain", MM, "--html", "@"}, "<!DOCTYPE html>"};
static const out_case verify_heatmap = {NULL, {"verify", MM, "--set", "bm=7", "--heatmap", "@"},
                                        {"verify", MM, "--heatmap", "@"}, "<svg"};
static const out_case profile_roofline = {NULL, {"profile", MM, "--set", "bm=7", "--roofline", "@"},
                                          {"profile", MM, "--roofline", "@"}, "<svg"};
static const out_case sweep_svg = {NULL, {"sweep", MM, "--vary", "bm=128,256", "--svg", "@", "--top", "0"},
                                   {"sweep", MM, "--vary", "bm=128,256", "--set", "dtype=f32", "--svg", "@"}, "<svg"};
static const out_case sweep_matmul_svg = {
    NULL, {"sweep", MM, "256", "256", "256", "--svg", "@", "--top", "0"},
    {"sweep", MM, "256", "256", "256", "--bm", "128", "--bn", "128", "--bk", "128", "--svg", "@"}, "<svg"};
static const out_case example_trace = {"examples/matmul", {"512", "512", "512", "7", "128", "128", "--trace", "@"},
                                       {"256", "256", "256", "128", "128", "128", "--trace", "@"},
                                       "{\"displayTimeUnit\""};
static const out_case example_heatmap = {"examples/matmul",
                                         {"512", "512", "512", "7", "128", "128", "--heatmap", "@"},
                                         {"256", "256", "256", "128", "128", "128", "--heatmap", "@"}, "<svg"};
static const out_case example_mesh_trace = {"examples/ring_allreduce", {"--rows", "3", "--trace", "@"},
                                            {"--trace", "@"}, "{\"displayTimeUnit\""};

/* one test per case, named as its case */
#define OUT_TEST(c) \
    Test(output_paths, c) { check_case(&c); }
OUT_TEST(memory_svg)
OUT_TEST(memory_json)
OUT_TEST(run_trace)
OUT_TEST(run_html)
OUT_TEST(explain_html)
OUT_TEST(verify_heatmap)
OUT_TEST(profile_roofline)
OUT_TEST(sweep_svg)
OUT_TEST(sweep_matmul_svg)
OUT_TEST(example_trace)
OUT_TEST(example_heatmap)
OUT_TEST(example_mesh_trace)

/* A call that fails after its trace file was opened (a fault at its third
 * grid point) leaves an existing trace as it was, and no temporary file. */
static void fault_at_third_point(pl_ctx *c, pl_ref *refs)
{
    if (pl_program_id(c, 0) == 1) (void)pl_get_at(c, refs[0], 8, 0);
    pl_copy(c, refs[1], refs[0]);
}

Test(output_paths, failed_call_keeps_the_old_trace)
{
    char dir[] = "/tmp/tilesim_outpaths_XXXXXX", path[96];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/trace.json", dir);
    write_file(path, KEEP, 0644);
    th_io io = th_io_2d(16, 256);
    pl_call call = th_copy_call_2d(16, 256, 8, 128);
    call.kernel = fault_at_third_point;
    pl_options opt = {.trace_path = path};
    pl_report rep;
    cr_expect_eq(pl_pallas_call(&call, &io.a, &io.o, &opt, &rep), PL_EBOUNDS, "%s", rep.error);
    expect_text(path, KEEP, "trace of a failed call");
    const char *names[] = {"trace.json"};
    expect_only(dir, names, 1);
    th_io_free(&io);
    unlink(path), rmdir(dir);
}

/* A write error at the end (a full device: /dev/full's numbers, mknod'd in
 * our own directory, never the real one) is reported, and the node kept. */
Test(output_paths, full_device_is_an_error)
{
    char dir[] = "/tmp/tilesim_outpaths_XXXXXX", full[96];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(full, sizeof full, "%s/full", dir);
    if (mknod(full, S_IFCHR | 0666, makedev(1, 7)) != 0) {
        int why = errno;
        rmdir(dir);
        cr_skip_test("mknod failed (%s): the device cases need root", strerror(why));
    }
    th_run r = TH_RUN("memory", MM, "--svg", full);
    cr_expect_eq(r.status, 2, "exit %d: %s", r.status, r.err);
    cr_expect(strstr(r.err, "--svg") && strstr(r.err, full), "%s", r.err);
    th_run_free(&r);
    r = TH_RUN("run", MM, "--cost-only", "--trace", full);
    cr_expect_eq(r.status, 2, "exit %d: %s", r.status, r.err);
    cr_expect(strstr(r.err, "trace") && strstr(r.err, full), "%s", r.err);
    cr_expect(strstr(r.err, strerror(ENOSPC)), "the system's reason, not a guess: %s", r.err);
    th_run_free(&r);
    struct stat st;
    cr_expect(lstat(full, &st) == 0 && S_ISCHR(st.st_mode), "the device node '%s' was removed", full);
    unlink(full), rmdir(dir);
}

/* --json-file /dev/stdout with stdout a regular file (a shell's `> out`):
 * written through, never replaced by a rename, which would unlink the file
 * the shell opened from under the program. */
Test(output_paths, dev_stdout_is_written_through)
{
    char out[64], exe[PATH_MAX];
    th_temp_file(out, "PRECIOUS\n");
    th_tilesim_path(exe, sizeof exe);
    int fd = open(out, O_WRONLY | O_APPEND); /* a shell's `>> out` */
    struct stat before, after;
    cr_assert(fd >= 0 && fstat(fd, &before) == 0);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        int nul = open("/dev/null", O_WRONLY);
        if (dup2(fd, 1) < 0 || nul < 0 || dup2(nul, 2) < 0) _exit(126);
        setenv("OPENBLAS_NUM_THREADS", "1", 1);
        execl(exe, exe, "memory", MM, "--json-file", "/dev/stdout", (char *)NULL);
        _exit(127);
    }
    int ws;
    cr_assert_eq(waitpid(pid, &ws, 0), pid);
    cr_expect(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "exit status %d", ws);
    cr_expect(fstat(fd, &after) == 0 && after.st_nlink == 1, "the file behind /dev/stdout was replaced");
    cr_expect(stat(out, &after) == 0 && after.st_ino == before.st_ino, "'%s' is another file now", out);
    /* reopening /dev/stdout with "w" truncated what the shell had opened to append to */
    char head[16] = "";
    FILE *f = fopen(out, "r");
    cr_assert(f);
    cr_expect(fgets(head, sizeof head, f) && !strcmp(head, "PRECIOUS\n"), "the file's first line is '%s'", head);
    cr_expect(fgets(head, sizeof head, f) && head[0] == '{', "the JSON follows it: '%s'", head);
    fclose(f);
    close(fd);
    unlink(out);
}

/* An output FIFO no process reads is an error at once (opened without
 * blocking: ENXIO), where it blocked before any work, with no message. */
Test(output_paths, a_fifo_nobody_reads_is_refused_not_waited_on, .timeout = 30)
{
    char dir[] = "/tmp/tilesim_fifo_XXXXXX", fifo[64];
    cr_assert(mkdtemp(dir));
    snprintf(fifo, sizeof fifo, "%s/f", dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    th_run r = TH_RUN("run", "matmul", "--cost-only", "--trace", fifo);
    cr_expect_eq(r.status, 2, "exit %d: %s", r.status, r.err);
    cr_expect(strstr(r.err, "FIFO no process reads"), "%s", r.err);
    th_run_free(&r);
    unlink(fifo), rmdir(dir);
}

/* ---- the trace's size cap -------------------------------------------------------- */

/* 2^26 grid steps: a trace of tens of GB, refused at once (on a v5p, whose
 * 95 GiB of HBM hold the 32 GiB of arrays: rule P1) */
#define HUGE_GRID "--set", "M=65536", "--set", "N=65536", "--set", "K=32768", "--set", "bm=128", "--set", "bn=128", \
                  "--set", "bk=128", "--chip", "v5p"

Test(output_paths, trace_over_the_limit_is_refused_before_writing, .timeout = 60)
{
    char dir[] = "/tmp/tilesim_outpaths_XXXXXX", path[96];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/t.json", dir);
    th_run r = TH_RUN("run", MM, "--cost-only", HUGE_GRID, "--trace", path, "--trace-limit", "1000000");
    cr_expect_eq(r.status, 2, "exit %d: %s", r.status, r.err);
    cr_expect(strstr(r.err, "would take about") && strstr(r.err, "GiB") && strstr(r.err, "67108864 grid steps"),
              "the message gives the estimate: %s", r.err);
    cr_expect(strstr(r.err, "976.6 KiB") && strstr(r.err, "--trace-limit") && strstr(r.err, "larger blocks"),
              "the message gives the limit and how to get a smaller trace: %s", r.err);
    cr_expect(access(path, F_OK) != 0, "the refused trace '%s' exists", path);
    th_run_free(&r);
    /* the default limit (256 MiB) applies without the option */
    r = TH_RUN("run", MM, "--cost-only", HUGE_GRID, "--trace", path);
    cr_expect_eq(r.status, 2, "exit %d: %s", r.status, r.err);
    cr_expect(strstr(r.err, "256.0 MiB"), "the default limit: %s", r.err);
    cr_expect(access(path, F_OK) != 0, "the refused trace '%s' exists", path);
    th_run_free(&r);
    /* a small run under the limit writes its trace; 64M is read as 64 MiB */
    r = TH_RUN("run", MM, "--cost-only", "--trace", path, "--trace-limit", "64M");
    cr_expect_eq(r.status, 0, "exit %d: %s", r.status, r.err);
    expect_written(path, "{\"displayTimeUnit\"", "a trace under the limit");
    th_run_free(&r);
    unlink(path), rmdir(dir);
}

/* The estimate before the run counts grid steps, not manual copies or a mesh's links, so it is low on
 * purpose; the size written is checked too. paged_attention (its pages copied by hand) was estimated at
 * 2.3 KiB and wrote 17 KiB under a 10 KiB limit; a ring of 64 wrote 7.3 MiB under 3 MiB. Both are
 * refused now, and an existing file stays as it was. */
Test(output_paths, a_trace_over_the_limit_after_the_run_is_dropped, .timeout = 60)
{
    char path[64];
    th_temp_file(path, "old");
    th_run r = TH_RUN("run", "paged_attention", "--cost-only", "--trace", path, "--trace-limit", "10K");
    cr_expect_eq(r.status, 2, "exit %d: %s", r.status, r.err);
    cr_expect(strstr(r.err, "came to") && strstr(r.err, "over the trace limit of 10.0 KiB"), "%s", r.err);
    th_run_free(&r);
    char *text = th_read_file(path);
    cr_expect_str_eq(text, "old", "the file is as it was");
    free(text);
    r = TH_RUN("run", "ring_allreduce", "--devices", "16", "--cost-only", "--trace", path, "--trace-limit", "200K");
    cr_expect_eq(r.status, 2, "exit %d: %s", r.status, r.err);
    cr_expect(strstr(r.err, "came to") && strstr(r.err, "over the trace limit"), "%s", r.err);
    th_run_free(&r);
    text = th_read_file(path);
    cr_expect_str_eq(text, "old", "the file is as it was");
    free(text);
    unlink(path);
}

Test(output_paths, trace_limit_values)
{
    th_run r = TH_RUN("run", MM, "--cost-only", "--trace-limit", "lots");
    cr_expect_eq(r.status, 2, "exit %d", r.status);
    cr_expect(strstr(r.err, "--trace-limit") && strstr(r.err, "'lots'"), "%s", r.err);
    th_run_free(&r);
    /* a page's timeline is a trace: explain --html takes the limit too */
    char dir[] = "/tmp/tilesim_outpaths_XXXXXX", path[96];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/p.html", dir);
    r = TH_RUN("explain", MM, "--html", path, "--trace-limit", "100");
    cr_expect_eq(r.status, 2, "exit %d: %s", r.status, r.err);
    cr_expect(strstr(r.err, "timeline") && strstr(r.err, "100 B"), "%s", r.err);
    cr_expect(access(path, F_OK) != 0, "the refused page '%s' exists", path);
    th_run_free(&r);
    /* the examples and a mesh (every device's steps counted) */
    char exe[PATH_MAX];
    snprintf(path, sizeof path, "%s/m.json", dir);
    r = th_run_argv(th_build_path("examples/ring_allreduce", exe, sizeof exe),
                    (const char *const[]){"--trace", path, "--trace-limit", "1K", NULL});
    cr_expect_eq(r.status, 2, "exit %d: %s", r.status, r.err);
    cr_expect(strstr(r.err, "8 devices") && strstr(r.err, "1.0 KiB"), "%s", r.err);
    cr_expect(access(path, F_OK) != 0, "the refused trace '%s' exists", path);
    th_run_free(&r);
    r = th_run_argv(th_build_path("examples/ring_allreduce", exe, sizeof exe),
                    (const char *const[]){"--trace", path, "--trace-limit", "none", NULL});
    cr_expect_eq(r.status, 0, "exit %d: %s", r.status, r.err);
    th_run_free(&r);
    unlink(path), rmdir(dir);
}

/* Ctrl-C or a timeout's SIGTERM while an output is being written: the old
 * file stays and no temporary file is left beside it (one was), and the
 * process still ends by the signal. */
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>

#include "../sim/base/outfile.h"

Test(output_paths, a_stop_signal_while_writing_leaves_no_temporary_file)
{
    static const int sigs[] = {SIGINT, SIGTERM};
    for (size_t s = 0; s < sizeof sigs / sizeof *sigs; s++) {
        char dir[] = "/tmp/tilesim_stopsig_XXXXXX", path[96];
        cr_assert_not_null(mkdtemp(dir));
        snprintf(path, sizeof path, "%s/t.json", dir);
        FILE *f = fopen(path, "w");
        cr_assert(f);
        fputs("precious\n", f);
        fclose(f);
        pid_t pid = fork();
        cr_assert(pid >= 0);
        if (pid == 0) {
            char err[256];
            sim_out *o = sim_out_open(path, err, sizeof err);
            if (!o) _exit(9);
            fputs("half a trace", o->f);
            fflush(o->f);
            raise(sigs[s]);
            _exit(8); /* not reached: the signal ends the process */
        }
        int status;
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        cr_expect(WIFSIGNALED(status) && WTERMSIG(status) == sigs[s], "status %d", status);
        char *text = th_read_file(path);
        cr_expect_str_eq(text, "precious\n");
        free(text);
        int files = 0;
        DIR *d = opendir(dir);
        for (struct dirent *e; d && (e = readdir(d));) files += e->d_name[0] != '.' || strlen(e->d_name) > 2;
        if (d) closedir(d);
        cr_expect_eq(files, 1, "a temporary file was left in %s", dir);
        unlink(path);
        rmdir(dir);
    }
}

/* The program's own temporary files (the teaching page's trace, read back)
 * go on a stop signal too: interrupted `run --html` left them in $TMPDIR. */
Test(output_paths, a_stop_signal_removes_the_programs_own_temporary_files)
{
    char dir[] = "/tmp/tilesim_stoptmp_XXXXXX", tmpl[96];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(tmpl, sizeof tmpl, "%s/tilesim_page_XXXXXX", dir);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        if (sim_tmp_make(tmpl) < 0) _exit(9);
        raise(SIGINT);
        _exit(8);
    }
    int status, files = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_expect(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT, "status %d", status);
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) files += e->d_name[0] != '.' || strlen(e->d_name) > 2;
    if (d) closedir(d);
    cr_expect_eq(files, 0, "a temporary file was left in %s", dir);
    rmdir(dir);
}

/* ---- an output naming an input ---------------------------------------------------- */

/* Every output option, pointed at the chip file the same command reads
 * (--chip-file @ ... --OPTION @), is refused before anything is written,
 * and the chip file keeps its text: writing there would lose the user's
 * input (a trace written over the chip file it was timed on). */
Test(output_paths, no_output_replaces_the_chip_file_it_read)
{
    static const char *const cases[][12] = {
        {"run", MM, "--cost-only", "--chip-file", "@", "--trace", "@"},
        {"run", MM, "--cost-only", "--chip-file", "@", "--html", "@"},
        {"verify", MM, "--chip-file", "@", "--heatmap", "@"},
        {"sweep", MM, "--vary", "bm=128,256", "--chip-file", "@", "--svg", "@"},
        {"sweep", MM, "256", "256", "256", "--chip-file", "@", "--svg", "@"},
        {"profile", MM, "--chip-file", "@", "--roofline", "@"},
        {"memory", MM, "--chip-file", "@", "--svg", "@"},
        {"memory", MM, "--chip-file", "@", "--json-file", "@"},
        {"explain", MM, "--set", "M=256", "--chip-file", "@", "--html", "@"},
        {"tune", MM, "--shapes", "SHAPES", "--chip-file", "@", "-o", "@"},
        {"calibrate", "MEASURED", "--chip-file", "@", "-o", "@"},
    };
    char dir[] = "/tmp/tilesim_inout_XXXXXX", chip[96], shapes[96];
    cr_assert(mkdtemp(dir));
    snprintf(chip, sizeof chip, "%s/mine.chip", dir);
    snprintf(shapes, sizeof shapes, "%s/shapes.csv", dir);
    write_file(shapes, "M,N,K\n256,256,256\n", 0644);
    char measured[96];
    snprintf(measured, sizeof measured, "%s/measured.csv", dir);
    write_file(measured, "kernel,chip,time_us,params\nmatmul,v5e,20,M=512 N=512 K=512\n", 0644);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        write_file(chip, "base = v5e\n", 0644);
        const char *args[16] = {0};
        int n = 0;
        for (; cases[c][n]; n++)
            args[n] = !strcmp(cases[c][n], "@")          ? chip
                      : !strcmp(cases[c][n], "SHAPES")   ? shapes
                      : !strcmp(cases[c][n], "MEASURED") ? measured
                                                         : cases[c][n];
        th_run r = th_run_tilesim(args);
        cr_expect_eq(r.status, 2, "%s %s: exit %d\n%s%s", args[0], args[n - 2], r.status, r.out, r.err);
        cr_expect(strstr(r.err, "it is the chip file this command reads"), "%s %s: %s", args[0], args[n - 2], r.err);
        expect_text(chip, "base = v5e\n", args[0]);
        th_run_free(&r);
    }
    unlink(chip), unlink(shapes), unlink(measured), rmdir(dir);
}

/* The plugin the command loads is an input too: `run ./k.so --trace k.so`
 * left a JSON trace where the user's shared object was. */
Test(output_paths, no_output_replaces_the_plugin_it_loaded)
{
    char dir[] = "/tmp/tilesim_inout_XXXXXX", so[96], cmd[PATH_MAX + 160], plugin[PATH_MAX];
    cr_assert(mkdtemp(dir));
    snprintf(so, sizeof so, "%s/k.so", dir);
    th_build_path("examples/plugin/rmsnorm.so", plugin, sizeof plugin);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", plugin, so);
    cr_assert_eq(system(cmd), 0);
    const char *opts[][2] = {{"run", "--trace"}, {"run", "--html"}, {"sweep", "--svg"}, {"memory", "--json-file"}};
    for (size_t c = 0; c < sizeof opts / sizeof opts[0]; c++) {
        int cost = !strcmp(opts[c][0], "run"); /* sweep and memory take no --cost-only */
        const char *args[] = {opts[c][0], so, cost ? "--cost-only" : "--set", cost ? opts[c][1] : "br=8",
                              cost ? so : opts[c][1], cost ? NULL : so, NULL};
        th_run r = th_run_tilesim(args);
        cr_expect_eq(r.status, 2, "%s %s: exit %d\n%s", opts[c][0], opts[c][1], r.status, r.err);
        cr_expect(strstr(r.err, "it is the plugin this command reads"), "%s %s: %s", opts[c][0], opts[c][1], r.err);
        th_run_free(&r);
        snprintf(cmd, sizeof cmd, "cmp -s '%s' '%s'", plugin, so);
        cr_expect_eq(system(cmd), 0, "%s %s replaced the plugin", opts[c][0], opts[c][1]);
    }
    unlink(so), rmdir(dir);
}

/* However many plugins a measurements file names, none may be calibrate's
 * -o: the inputs were remembered up to 32, and the 33rd and later were
 * replaced by the chip file. */
Test(output_paths, calibrate_keeps_the_40th_plugin_its_rows_name)
{
    char dir[] = "/tmp/tilesim_inout_XXXXXX", plugin[PATH_MAX], path[160], cmd[PATH_MAX + 200];
    cr_assert(mkdtemp(dir));
    th_build_path("examples/plugin/rmsnorm.so", plugin, sizeof plugin);
    char *csv = malloc(16384);
    cr_assert(csv);
    int at = snprintf(csv, 16384, "kernel,chip,time_us,params\n");
    for (int i = 0; i < 40; i++) {
        snprintf(path, sizeof path, "%s/k%d.so", dir, i);
        snprintf(cmd, sizeof cmd, "cp '%s' '%s'", plugin, path);
        cr_assert_eq(system(cmd), 0);
        at += snprintf(csv + at, (size_t)(16384 - at), "%s,v5e,%d,br=%d\n", path, 20 + i, i % 2 ? 128 : 256);
    }
    char measured[160];
    snprintf(measured, sizeof measured, "%s/m.csv", dir);
    write_file(measured, csv, 0644);
    free(csv);
    snprintf(path, sizeof path, "%s/k39.so", dir);
    const char *args[] = {"calibrate", measured, "--chip", "v5e", "-o", path, NULL};
    th_run r = th_run_tilesim(args);
    cr_expect_eq(r.status, 2, "exit %d: %s", r.status, r.err);
    cr_expect(strstr(r.err, "it is the plugin this command reads"), "%s", r.err);
    th_run_free(&r);
    snprintf(cmd, sizeof cmd, "cmp -s '%s' '%s'", plugin, path);
    cr_expect_eq(system(cmd), 0, "k39.so was replaced");
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

/* Two outputs naming one file not there yet, spelled two ways: the second
 * would replace the first (the inode check needs an existing file). */
Test(output_paths, two_outputs_naming_one_new_file_two_ways_are_refused)
{
    char dir[] = "/tmp/tilesim_inout_XXXXXX", a[96], b[96], sub[96];
    cr_assert(mkdtemp(dir));
    snprintf(sub, sizeof sub, "%s/d", dir);
    cr_assert_eq(mkdir(sub, 0755), 0);
    snprintf(a, sizeof a, "%s/new", dir);
    snprintf(b, sizeof b, "%s/d/../new", dir);
    const char *args[] = {"run", "matmul", "--cost-only", "--trace", a, "--html", b, NULL};
    th_run r = th_run_tilesim(args);
    cr_expect_eq(r.status, 2, "exit %d: %s", r.status, r.err);
    cr_expect(strstr(r.err, "--trace and --html name the same file"), "%s", r.err);
    th_run_free(&r);
    cr_expect_neq(access(a, F_OK), 0, "nothing written");
    rmdir(sub), rmdir(dir);
}
