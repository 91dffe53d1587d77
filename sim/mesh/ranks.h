/* sim/mesh/ranks.h: tilesim across host processes with Open MPI (the `make mpi`
 * build, -DTILESIM_MPI). Internal. In the default build every function here
 * is a stub for one process, so callers need no #ifdef.
 *
 * A sweep's configurations are split between the ranks (configuration i to
 * rank i % size), each rank evaluates its share on its own threads, and
 * every rank ends with every report, in configuration order: the ranked
 * output is the same as one process's.
 */
#ifndef TILESIM_SIM_RANKS_H
#define TILESIM_SIM_RANKS_H

#include "../tilesim.h"

/* This process's rank and the number of ranks (0 and 1 without MPI, or
 * when MPI is not initialised). */
int sim_mpi_rank(void);
int sim_mpi_size(void);
/* Every rank holds reports[i] for the i it evaluated (i % size == rank):
 * after this, every rank holds all n. A report's chip pointer is this
 * process's (chip: the sweep's, from its options). PL_OK or PL_ENOMEM. */
int sim_mpi_share_reports(pl_report *reports, int n, const pl_chip *chip);

#endif
