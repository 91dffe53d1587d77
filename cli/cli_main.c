/* cli/cli_main.c: the `tilesim` command's main(). The work is in
 * tilesim_main (main.c), which the fuzz harness calls in-process.
 *
 * The MPI build (`make mpi`, build/tilesim-mpi) runs the same command on
 * every rank: a sweep splits its configurations between the ranks
 * (sim/mesh/ranks.h), and rank 0 alone prints. Every rank must be given the same
 * command line (checked: a rank that differs stops all of them), and every
 * rank exits with the worst code any rank had. A rank that stops answering
 * (--rank-timeout SECONDS, default 60) ends the job (rank_watchdog.h).
 *
 * Exit status (README "Exit status"): 0 success, 1 a wrong result or
 * nothing to report, 2 a user error or a rejected call, 3 the kernel
 * crashed (PL_EXIT_KERNEL_CRASHED), 4 a rank stopped answering
 * (CLI_EXIT_RANK_TIMEOUT). */
#include <stdio.h>
#include <stdlib.h>

#include "../sim/base/outfile.h" /* sim_parse_size */
#include "cli.h"
#include "rank_watchdog.h"

/* A kernel stuck in a loop of its own C code makes no tilesim call: after
 * TILESIM_KERNEL_TIMEOUT seconds (60 by default; 0: never) it is reported
 * as the crash reports are, exit 3 (pl_guard_stalls). Long legitimate
 * kernels call tilesim all the time (each op, each pl_get): they never
 * trip it. 0, or 2 after a bad value (said on stderr). */
static int stall_watch(const char *prog, int speak)
{
    const char *env = getenv("TILESIM_KERNEL_TIMEOUT");
    double seconds = 60;
    if (env) {
        char *end = NULL;
        seconds = strtod(env, &end);
        if (end == env || *end || !(seconds >= 0) || seconds > 1e9) {
            if (speak)
                fprintf(stderr, "%s: TILESIM_KERNEL_TIMEOUT='%s': give the seconds a kernel may run without a "
                        "tilesim call before it is taken for an endless loop (a number >= 0; 0: never)\n", prog, env);
            return 2;
        }
    }
    pl_guard_stalls(seconds, "; TILESIM_KERNEL_TIMEOUT=S waits S seconds, 0 for ever");
    /* TILESIM_HOST_MEMORY caps the host memory runs may take (sim/base/host.c): a value it cannot read would
     * leave no cap, silently */
    const char *cap = getenv("TILESIM_HOST_MEMORY");
    int64_t bytes;
    if (cap && (sim_parse_size(cap, &bytes) || bytes <= 0)) {
        if (speak)
            fprintf(stderr, "%s: TILESIM_HOST_MEMORY='%s': give the host memory runs may take, in bytes or with K, "
                    "M, G or T (powers of 1024): 16G, 512M\n", prog, cap);
        return 2;
    }
    /* the mesh's knobs (docs/meshes.md): a value they cannot read was ignored without a word */
    static const struct { const char *name; long lo, hi; const char *what; } knobs[] = {
        {"TILESIM_MESH_THREADS", 0, 1, "1 runs each mesh device on a thread of its own, 0 on fibers"},
        {"TILESIM_MESH_STACK_MB", 1, 1024, "a mesh device's stack in MiB, 1 to 1024"},
        {"TILESIM_MESH_POOL", 1, 4096, "the threads a mesh's fibers run on, 1 to 4096"},
    };
    for (size_t i = 0; i < sizeof knobs / sizeof *knobs; i++) {
        const char *e = getenv(knobs[i].name);
        char *end = NULL;
        long v = e && *e ? strtol(e, &end, 10) : 0;
        if (!e || !*e || (!*end && v >= knobs[i].lo && v <= knobs[i].hi)) continue;
        if (speak) fprintf(stderr, "%s: %s='%.40s': give %s\n", prog, knobs[i].name, e, knobs[i].what);
        return 2;
    }
    return 0;
}

#ifdef TILESIM_MPI
#include <limits.h>
#include <mpi.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdint.h>
#include <stdio.h>

#define FNV_START 1469598103934665603ULL

/* FNV-1a: h after n more bytes. */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    for (size_t i = 0; i < n; i++) h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ULL;
    return h;
}

/* The words and their boundaries. */
static uint64_t argv_hash(int argc, char **argv)
{
    uint64_t h = FNV_START;
    for (int i = 0; i < argc; i++) h = fnv(fnv(h, argv[i], strlen(argv[i])), "\xff", 1);
    return h;
}

/* The contents of every argument that names a regular file
 * (a chip file, a plugin, a shapes or measurements CSV): ranks started in
 * different directories read different files under one command line, and
 * a sweep mixed rows timed on two chips, or deadlocked when only one rank
 * refused its file. (A file a CSV names inside it is not followed.) */
static uint64_t files_hash(int argc, char **argv)
{
    uint64_t h = FNV_START;
    for (int i = 1; i < argc; i++) {
        const char *path = argv[i], *eq = strchr(argv[i], '=');
        if (path[0] == '-' && eq) path = eq + 1; /* --chip-file=F */
        struct stat st;
        FILE *f = stat(path, &st) == 0 && S_ISREG(st.st_mode) ? fopen(path, "rb") : NULL;
        if (!f) continue;
        unsigned char buf[1 << 16];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, f)) > 0) h = fnv(h, buf, n);
        fclose(f);
        h = fnv(h, &i, sizeof i); /* which argument it was */
    }
    return h;
}

/* The first rank whose command line (its hash: mine) differs from rank 0's, or -1. */
static int differing_rank(unsigned long long mine, int rank)
{
    unsigned long long root = mine;
    MPI_Bcast(&root, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    int bad = mine != root ? rank : INT_MAX, first;
    MPI_Allreduce(&bad, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return first == INT_MAX ? -1 : first;
}

/* A rank other than 0 that failed where rank 0 did not (its own input,
 * its own crash of a callback) says why, each line prefixed with its rank:
 * its messages went to `said`, not to the terminal. */
static void relay(FILE *said, int real_err, int rank, int show)
{
    fflush(stderr);
    if (show && real_err >= 0 && fseek(said, 0, SEEK_SET) == 0) {
        FILE *to = fdopen(dup(real_err), "w");
        char line[4096];
        int start = 1;
        while (to && fgets(line, sizeof line, said)) {
            if (start) fprintf(to, "rank %d: ", rank);
            fputs(line, to);
            start = strchr(line, '\n') != NULL;
        }
        if (to) fclose(to);
    }
    if (real_err >= 0) dup2(real_err, 2), close(real_err);
    fclose(said);
}

int main(int argc, char **argv)
{
    int rank = 0, rc;
    /* a mesh run moves its messages on this thread while devices run on
     * others (FUNNELED would do); the watchdog's thread needs MULTIPLE */
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    unsigned long long hash = argv_hash(argc, argv); /* the whole command line, --rank-timeout too */
    double timeout;
    int bad_timeout = cli_rank_timeout_option(&argc, argv, &timeout, rank == 0);
    if (provided >= MPI_THREAD_MULTIPLE) cli_watchdog_start(timeout);
    else if (rank == 0)
        fprintf(stderr, "tilesim-mpi: this MPI library gives no MPI_THREAD_MULTIPLE: no --rank-timeout watchdog\n");
    int differs = differing_rank(hash, rank), files_differ = differs < 0 ? differing_rank(files_hash(argc, argv), rank) : -1;
    int real_err = -1;
    FILE *said = NULL;
    if (differs >= 0 || files_differ >= 0) {
        if (rank == 0 && differs >= 0)
            fprintf(stderr, "tilesim-mpi: rank %d was given another command line than rank 0: every rank must run "
                    "the same command (mpirun -n R tilesim-mpi ...)\n", differs);
        else if (rank == 0)
            fprintf(stderr, "tilesim-mpi: rank %d reads other files than rank 0 under the same command line (a "
                    "chip file, plugin or CSV it names differs, as in another working directory): every rank must "
                    "read the same files\n", files_differ);
        rc = 2;
    } else if (bad_timeout) {
        rc = bad_timeout;
    } else {
        if (rank != 0) { /* rank 0 speaks for all; what another says is kept, shown if it ends otherwise */
            said = tmpfile();
            real_err = said ? dup(2) : -1;
            if (!freopen("/dev/null", "w", stdout) || (said && dup2(fileno(said), 2) < 0)) return 1;
            if (!said && !freopen("/dev/null", "w", stderr)) return 1;
        }
        pl_guard_kernels("tilesim-mpi"); /* a plugin kernel's crash is reported, not silent */
        rc = stall_watch("tilesim-mpi", 1); /* another rank's words are kept in `said` */
        /* every rank must run the command or none: a rank that refused its environment alone, skipping it,
         * left the others in the run's collectives for ever (it says why below, as `rank N:`) */
        int env_rc = rc;
        MPI_Allreduce(&rc, &env_rc, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (!env_rc) rc = tilesim_main(argc, argv);
    }
    int root_rc = rc;
    MPI_Bcast(&root_rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (said) relay(said, real_err, rank, rc != root_rc && rc != 0);
    int worst = rc;
    MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    cli_watchdog_stop();
    MPI_Finalize();
    return worst;
}
#else
int main(int argc, char **argv)
{
    /* A plugin's kernel is the user's C code in this process: its crash,
     * exit() or pthread_exit() is reported with the grid point and exits
     * PL_EXIT_KERNEL_CRASHED (sim/tilesim.h). Here, not in tilesim_main:
     * the fuzz harness calls that in-process and must see a crash as one. */
    pl_guard_kernels("tilesim");
    if (stall_watch("tilesim", 1)) return 2;
    return tilesim_main(argc, argv);
}
#endif
