/* cli/rank_watchdog.c: tilesim-mpi's progress watchdog (rank_watchdog.h).
 *
 * Heartbeats: every `period` (a quarter of the timeout, at most 1 s) rank 0
 * sends one int to every other rank and each of them one to rank 0, with
 * MPI_Isend on the watchdog's own communicator; at most one send per peer
 * is outstanding, so a stopped peer costs no more than that. Each side
 * notes when it last heard every peer. The thread needs
 * MPI_THREAD_MULTIPLE: the main thread may sit in any MPI call meanwhile.
 *
 * Stopping: the thread is joined, then the ranks exchange how many
 * heartbeats each sent each other (MPI_Ialltoall) and receive the ones
 * still in flight, so that MPI_Finalize finds no message unreceived and no
 * request open. Those waits have a deadline too (the timeout): a rank that
 * stops just then is reported without a name, never waited for forever.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rank_watchdog.h"

/* The value of --rank-timeout: seconds above 0, at most the maximum. */
static int timeout_value(const char *s, double *seconds, int print)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end != s && !*end && !errno && isfinite(v) && v > 0 && v <= CLI_RANK_TIMEOUT_MAX) {
        *seconds = v;
        return 0;
    }
    if (print)
        fprintf(stderr, "tilesim-mpi: --rank-timeout: '%s' is not a number of seconds above 0 (at most %.0f)\n", s,
                CLI_RANK_TIMEOUT_MAX);
    return CLI_EXIT_USAGE;
}

int cli_rank_timeout_option(int *argc, char **argv, double *seconds, int print)
{
    static const char opt[] = "--rank-timeout";
    const size_t len = sizeof opt - 1;
    *seconds = CLI_RANK_TIMEOUT_DEFAULT;
    int out = 1, rc = 0;
    for (int i = 1; i < *argc; i++) {
        if (!strcmp(argv[i], "--")) { /* the rest are the command's own words */
            while (i < *argc) argv[out++] = argv[i++];
            break;
        }
        if (strncmp(argv[i], opt, len) || (argv[i][len] && argv[i][len] != '=')) {
            argv[out++] = argv[i];
            continue;
        }
        const char *v = argv[i][len] == '=' ? argv[i] + len + 1 : i + 1 < *argc ? argv[++i] : NULL;
        if (!v) {
            if (print) fprintf(stderr, "tilesim-mpi: --rank-timeout needs a value: the seconds a rank may be silent\n");
            rc = CLI_EXIT_USAGE;
        } else if (!rc) {
            rc = timeout_value(v, seconds, print);
        }
    }
    *argc = out;
    argv[out] = NULL;
    return rc;
}

#ifdef TILESIM_MPI
#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

enum { TAG_BEAT = 7401 };

static struct {
    MPI_Comm comm;
    int rank, size, err_fd, running;
    double timeout, period;
    pthread_t thread;
    atomic_int stop;
    long long *sent, *got; /* heartbeats to / from each rank */
    long long *theirs;     /* at the end: how many each rank sent this one */
    MPI_Request *req;      /* the outstanding send to each rank */
    int *beat;             /* its buffer */
    double *heard;         /* when each rank was last heard */
} wd;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void nap(double s)
{
    struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&t, NULL);
}

/* Rank 0 watches every rank, the others watch rank 0. */
static int peer(int k) { return k != wd.rank && (wd.rank == 0 || k == 0); }

/* Say what happened on the stderr the process started with (the other
 * ranks' stdio points at /dev/null) and end every rank. */
static void stop_job(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void stop_job(const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ssize_t w = write(wd.err_fd, msg, strlen(msg)); /* one write: lines of two ranks do not mix */
    (void)w;                                          /* unwritten, the job ends anyway */
    MPI_Abort(MPI_COMM_WORLD, CLI_EXIT_RANK_TIMEOUT);
    _exit(CLI_EXIT_RANK_TIMEOUT); /* MPI_Abort does not return; if it did, this rank still ends */
}

static void beat_all(void)
{
    for (int k = 0; k < wd.size; k++) {
        int done = 1;
        if (!peer(k)) continue;
        if (wd.req[k] != MPI_REQUEST_NULL) MPI_Test(&wd.req[k], &done, MPI_STATUS_IGNORE);
        if (!done) continue; /* the last one is not out yet: a slow or stopped peer */
        wd.beat[k] = (int)wd.sent[k];
        MPI_Isend(&wd.beat[k], 1, MPI_INT, k, TAG_BEAT, wd.comm, &wd.req[k]);
        wd.sent[k]++;
    }
}

/* Receive what has arrived (a bounded number at a time) and note who. */
static void listen_all(double now)
{
    for (int i = 0; i < 4 * wd.size; i++) {
        int flag = 0, v;
        MPI_Status st;
        if (MPI_Iprobe(MPI_ANY_SOURCE, TAG_BEAT, wd.comm, &flag, &st) != MPI_SUCCESS || !flag) return;
        MPI_Recv(&v, 1, MPI_INT, st.MPI_SOURCE, TAG_BEAT, wd.comm, MPI_STATUS_IGNORE);
        wd.got[st.MPI_SOURCE]++;
        wd.heard[st.MPI_SOURCE] = now;
    }
}

static void *watch(void *arg)
{
    (void)arg;
    double last_beat = -1e300, tick = wd.period / 4 < 0.05 ? wd.period / 4 : 0.05, last = now_s();
    while (!atomic_load(&wd.stop)) {
        double now = now_s();
        if (now - last > wd.timeout / 2) /* this process was stopped itself (and continued): not the others' fault */
            for (int k = 0; k < wd.size; k++) wd.heard[k] = now;
        last = now;
        if (now - last_beat >= wd.period) beat_all(), last_beat = now;
        listen_all(now);
        for (int k = 0; k < wd.size; k++)
            if (peer(k) && now - wd.heard[k] > wd.timeout) {
                if (wd.rank == 0)
                    stop_job("tilesim-mpi: rank %d has not answered for %g s (stopped or hung?); stopping every "
                             "rank\n", k, wd.timeout);
                stop_job("tilesim-mpi: rank %d has not heard from rank 0 for %g s (stopped or hung?); stopping "
                         "every rank\n", wd.rank, wd.timeout);
            }
        nap(tick);
    }
    return NULL;
}

static void free_all(void)
{
    free(wd.sent), free(wd.got), free(wd.theirs), free(wd.req), free(wd.beat), free(wd.heard);
    if (wd.err_fd >= 0) close(wd.err_fd);
}

void cli_watchdog_start(double seconds)
{
    MPI_Comm_rank(MPI_COMM_WORLD, &wd.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &wd.size);
    if (wd.size < 2) return;
    wd.timeout = seconds;
    wd.period = seconds / 4 < 1 ? seconds / 4 : 1;
    wd.err_fd = dup(2);
    size_t n = (size_t)wd.size;
    wd.sent = calloc(n, sizeof *wd.sent), wd.got = calloc(n, sizeof *wd.got), wd.theirs = calloc(n, sizeof *wd.theirs);
    wd.req = malloc(n * sizeof *wd.req), wd.beat = calloc(n, sizeof *wd.beat), wd.heard = malloc(n * sizeof *wd.heard);
    int ok = wd.err_fd >= 0 && wd.sent && wd.got && wd.theirs && wd.req && wd.beat && wd.heard, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all) {
        if (wd.rank == 0) fprintf(stderr, "tilesim-mpi: out of host memory for the watchdog; it is off\n");
        free_all();
        return;
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &wd.comm);
    double t0 = now_s();
    for (int k = 0; k < wd.size; k++) wd.req[k] = MPI_REQUEST_NULL, wd.heard[k] = t0;
    atomic_store(&wd.stop, 0);
    if (pthread_create(&wd.thread, NULL, watch, NULL) != 0) {
        /* the others watch this rank: without its thread it would look stopped */
        fprintf(stderr, "tilesim-mpi: rank %d cannot start its watchdog thread\n", wd.rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    wd.running = 1;
}

/* Wait for req, at most the timeout. */
static void wait_for(MPI_Request *req)
{
    double until = now_s() + wd.timeout;
    for (int done = 0; !done;) {
        MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (done) return;
        if (now_s() > until)
            stop_job("tilesim-mpi: rank %d: the ranks did not finish together within %g s (one stopped or hung?); "
                     "stopping every rank\n", wd.rank, wd.timeout);
        nap(1e-3);
    }
}

void cli_watchdog_stop(void)
{
    if (!wd.running) return;
    atomic_store(&wd.stop, 1);
    pthread_join(wd.thread, NULL);
    wd.running = 0;
    MPI_Request r;
    MPI_Ialltoall(wd.sent, 1, MPI_LONG_LONG, wd.theirs, 1, MPI_LONG_LONG, wd.comm, &r);
    wait_for(&r);
    for (int k = 0; k < wd.size; k++)
        for (int v; peer(k) && wd.got[k] < wd.theirs[k]; wd.got[k]++) { /* those still in flight */
            MPI_Irecv(&v, 1, MPI_INT, k, TAG_BEAT, wd.comm, &r);
            wait_for(&r);
        }
    for (int k = 0; k < wd.size; k++)
        if (wd.req[k] != MPI_REQUEST_NULL) wait_for(&wd.req[k]);
    MPI_Comm_free(&wd.comm);
    free_all();
}
#endif
