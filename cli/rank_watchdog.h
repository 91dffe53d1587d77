/* cli/rank_watchdog.h: tilesim-mpi's progress watchdog (--rank-timeout).
 *
 * A rank killed by a signal ends an Open MPI job at once, but one that is
 * stopped (SIGSTOP, a debugger, a frozen machine) leaves the others waiting
 * in an MPI call forever. So every rank runs a watchdog thread on a
 * communicator of its own: rank 0 and each other rank exchange a heartbeat
 * several times per timeout, independent of what the main thread is doing
 * (a long computation is not silence). When rank 0 has not heard from rank k
 * for the timeout it says so ("tilesim-mpi: rank k has not answered for
 * 60 s (stopped or hung?); stopping every rank") and ends the job with
 * MPI_Abort and CLI_EXIT_RANK_TIMEOUT, which mpirun returns; a rank that no
 * longer hears rank 0 does the same, naming rank 0.
 */
#ifndef TILESIM_CLI_RANK_WATCHDOG_H
#define TILESIM_CLI_RANK_WATCHDOG_H

/* The exit status of a job the watchdog stopped (README "Across machines"). */
#define CLI_EXIT_RANK_TIMEOUT 4
#define CLI_RANK_TIMEOUT_DEFAULT 60.0
#define CLI_RANK_TIMEOUT_MAX 1e6

/* Take "--rank-timeout S" or "--rank-timeout=S" out of argv (anywhere
 * before a "--"), closing the gap. *seconds: S, or the default when absent.
 * Returns 0, or CLI_EXIT_USAGE after printing, on rank 0 only (print), what
 * is wrong with the value. */
int cli_rank_timeout_option(int *argc, char **argv, double *seconds, int print);

#ifdef TILESIM_MPI
/* Start the watchdog (after MPI_Init_thread gave MPI_THREAD_MULTIPLE;
 * collective over MPI_COMM_WORLD). Its messages go to the stderr this
 * process has now, even if stderr is redirected later. */
void cli_watchdog_start(double seconds);
/* Stop it and drain its messages (collective), before MPI_Finalize. */
void cli_watchdog_stop(void);
#endif

#endif
