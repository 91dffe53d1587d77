/* tests/test_review_progress.c: `tilesim review` shows the sweep's progress
 * bar (cli/progress.c, issue 21) on stderr when stderr is a terminal, and
 * nothing when it is not. The terminal is a pseudo-terminal the test opens
 * (posix_openpt): the command's stderr is its slave side, and what the
 * command drew is read from the master side. No timing is asserted: the
 * review reports a count at the end of each kernel's sweep, so a bar is
 * drawn whatever the speed of the host. */
#define _XOPEN_SOURCE 700 /* posix_openpt, grantpt, unlockpt, ptsname */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run.h"

#define BRIEF "review", "--model", "llama3-8b", "--chip", "v6e", "--prompt", "1024", "--context", "2048", \
              "--ttft", "2s", "--tpot", "50ms", "--chips", "1,2", "--batch", "1,8"

/* Run tilesim with args, stderr on a pseudo-terminal, stdout into a file:
 * what the terminal received (NUL-terminated, malloc'd) and the exit status. */
static char *on_terminal(const char *const *args, int *status, char **out)
{
    int master = posix_openpt(O_RDWR | O_NOCTTY);
    if (master < 0) /* a container without /dev/ptmx: nothing to test the terminal case on */
        cr_skip_test("no pseudo-terminal on this host: %s", strerror(errno));
    cr_assert(grantpt(master) == 0 && unlockpt(master) == 0, "pseudo-terminal: %s", strerror(errno));
    const char *slave = ptsname(master);
    cr_assert(slave);
    char exe[PATH_MAX], outp[64];
    th_tilesim_path(exe, sizeof exe);
    th_temp_file(outp, NULL);
    char *argv[TH_MAX_ARGS + 2] = {exe};
    for (int i = 0; args[i]; i++) argv[i + 1] = (char *)args[i];
    fflush(NULL);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        int s = open(slave, O_RDWR | O_NOCTTY), o = open(outp, O_WRONLY | O_TRUNC), in = open("/dev/null", O_RDONLY);
        if (s < 0 || o < 0 || in < 0 || dup2(in, 0) < 0 || dup2(o, 1) < 0 || dup2(s, 2) < 0) _exit(126);
        close(master), close(s), close(o), close(in);
        setenv("OPENBLAS_NUM_THREADS", "1", 1);
        execv(exe, argv);
        _exit(127);
    }
    size_t len = 0, cap = 1 << 16;
    char *got = malloc(cap);
    cr_assert(got);
    for (;;) { /* until the command's end closes the slave side (EIO) */
        if (cap - len < 4096) cr_assert((got = realloc(got, cap *= 2)));
        ssize_t k = read(master, got + len, cap - len - 1);
        if (k > 0) len += (size_t)k;
        else if (k < 0 && errno == EINTR) continue;
        else break;
    }
    got[len] = '\0';
    close(master);
    int ws;
    cr_assert_eq(waitpid(pid, &ws, 0), pid);
    cr_assert(WIFEXITED(ws), "killed by signal %d", WTERMSIG(ws));
    *status = WEXITSTATUS(ws);
    *out = th_read_file(outp);
    unlink(outp);
    return got;
}

Test(review_progress, on_a_terminal_the_sweeps_bar_is_drawn_on_stderr_and_erased_at_the_end)
{
    int status;
    char *out;
    char *tty = on_terminal((const char *const[]){BRIEF, NULL}, &status, &out);
    cr_expect_eq(status, 0, "%s", tty);
    /* the sweep's frames: "\r\033[Kreview [##..] n/N tilings", each count drawn once */
    const char *frame = "\r\033[Kreview [";
    int frames = 0;
    long last = -1;
    for (const char *p = strstr(tty, frame); p; p = strstr(p + 1, frame)) {
        long done = -1, total = -1;
        const char *close = strchr(p, ']');
        cr_assert(close && sscanf(close, "] %ld/%ld tilings", &done, &total) == 2, "a frame: %.80s", p);
        cr_expect(done < total && done != last, "frame %d draws %ld/%ld after %ld", frames, done, total, last);
        last = done, frames++;
    }
    cr_expect(frames >= 1, "a bar on the terminal: %s", tty);
    size_t n = strlen(tty);
    cr_expect(n >= 4 && strcmp(tty + n - 4, "\r\033[K") == 0, "the bar is erased at the end: ...%s",
              tty + (n > 60 ? n - 60 : 0));
    cr_expect(strstr(out, "recommended: ") && !strchr(out, '\033'), "stdout is the review alone: %s", out);
    free(tty), free(out);
}

Test(review_progress, without_a_terminal_stderr_stays_empty)
{
    th_run r = TH_RUN(BRIEF);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect_str_eq(r.err, "", "no bar on a pipe or file");
    th_run_free(&r);
}
