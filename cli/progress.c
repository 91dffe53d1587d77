/* cli/progress.c: the progress bar of the long commands (sweep, review):
 * one line on stderr, redrawn in place when the count changes and erased
 * at the end, so that what stays on the terminal is the output alone. The
 * commands install it only when stderr is a terminal: pipes, files and the
 * tests see a clean stderr. */
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static double since(const struct timespec *t0)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) * 1e-9;
}

int cli_progress_start(cli_progress *p, const char *what, const char *unit, double delay_s)
{
    *p = (cli_progress){.what = what, .unit = unit, .delay_s = delay_s};
    clock_gettime(CLOCK_MONOTONIC, &p->start);
    return isatty(STDERR_FILENO);
}

double cli_progress_elapsed(const cli_progress *p) { return since(&p->start); }

void cli_progress_end(cli_progress *p)
{
    if (p->drawn) fputs("\r\033[K", stderr), fflush(stderr);
    p->drawn = 0;
}

void cli_progress_show(int done, int total, void *user)
{
    cli_progress *p = user;
    if (done >= total) {
        cli_progress_end(p);
        return;
    }
    if ((!p->drawn && since(&p->start) < p->delay_s) || (p->drawn && done == p->last)) return;
    enum { W = 40 };
    int fill = total ? (int)((int64_t)W * done / total) : W;
    char bar[W + 1];
    for (int i = 0; i < W; i++) bar[i] = i < fill ? '#' : '.';
    bar[W] = '\0';
    fprintf(stderr, "\r\033[K%s [%s] %d/%d %s", p->what, bar, done, total, p->unit);
    fflush(stderr);
    p->drawn = 1;
    p->last = done;
}
