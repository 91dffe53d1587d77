/* sim/mesh/ranks.c: sweeps across host processes with Open MPI (ranks.h). Compiled
 * to one-process stubs unless the build defines TILESIM_MPI (`make mpi`).
 */
#include <stdlib.h>
#include <string.h>

#include "ranks.h"
#include "../tilesim_mesh.h"

void pl_mesh_local_devices(const pl_mesh *mesh, int *first, int *count)
{
    int n = mesh ? pl_mesh_devices(mesh) : 0, size = sim_mpi_size(), rank = sim_mpi_rank();
    int lo = (int)((int64_t)n * rank / size), hi = (int)((int64_t)n * (rank + 1) / size); /* as pl_mesh_call */
    if (first) *first = lo;
    if (count) *count = hi - lo;
}

#ifdef TILESIM_MPI
#include <mpi.h>

static int initialised(void)
{
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    return init && !fin;
}

int sim_mpi_rank(void)
{
    int r = 0;
    if (initialised()) MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

int sim_mpi_size(void)
{
    int s = 1;
    if (initialised()) MPI_Comm_size(MPI_COMM_WORLD, &s);
    return s;
}

int sim_mpi_share_reports(pl_report *reports, int n, const pl_chip *chip)
{
    int size = sim_mpi_size(), rank = sim_mpi_rank();
    if (size < 2 || n < 1) return PL_OK;
    /* each rank's reports packed in order, then gathered by every rank;
     * a report is plain bytes but for its chip pointer, set again below */
    int *counts = calloc((size_t)size, sizeof *counts), *displs = calloc((size_t)size, sizeof *displs);
    int mine = n / size + (rank < n % size);
    pl_report *packed = malloc((size_t)(mine ? mine : 1) * sizeof *packed);
    pl_report *all = malloc((size_t)n * sizeof *all);
    int ok = counts && displs && packed && all;
    for (int i = rank, k = 0; ok && i < n; i += size) packed[k++] = reports[i];
    for (int r = 0, at = 0; ok && r < size; r++) {
        counts[r] = (int)((n / size + (r < n % size)) * sizeof(pl_report));
        displs[r] = at;
        at += counts[r];
    }
    /* the byte counts of n reports fit an int up to some 50,000 reports */
    if (ok) ok = MPI_Allgatherv(packed, counts[rank], MPI_BYTE, all, counts, displs, MPI_BYTE, MPI_COMM_WORLD) ==
                 MPI_SUCCESS;
    for (int r = 0; ok && r < size; r++) /* rank r's k-th report is configuration r + k * size */
        for (int k = 0; k < counts[r] / (int)sizeof(pl_report); k++) {
            pl_report *rep = &reports[r + k * size];
            *rep = all[displs[r] / (int)sizeof(pl_report) + k];
            if (rep->chip) rep->chip = chip; /* another process's pointer */
        }
    free(counts);
    free(displs);
    free(packed);
    free(all);
    return ok ? PL_OK : PL_ENOMEM;
}

int pl_mesh_share(const pl_mesh *mesh, double *v, int per_device)
{
    if (!mesh || !v || per_device < 1) return PL_EINVAL;
    int size = sim_mpi_size(), n = pl_mesh_devices(mesh);
    if (size < 2) return PL_OK;
    int *counts = calloc((size_t)size, sizeof *counts), *displs = calloc((size_t)size, sizeof *displs);
    int ok = counts && displs, all = 0;
    for (int k = 0; ok && k < size; k++) {
        displs[k] = (int)((int64_t)n * k / size) * per_device;
        counts[k] = (int)((int64_t)n * (k + 1) / size) * per_device - displs[k];
    }
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (all) MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DOUBLE, v, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
    free(counts);
    free(displs);
    return all ? PL_OK : PL_ENOMEM;
}

#else

int pl_mesh_share(const pl_mesh *mesh, double *v, int per_device)
{
    return !mesh || !v || per_device < 1 ? PL_EINVAL : PL_OK;
}

int sim_mpi_rank(void) { return 0; }
int sim_mpi_size(void) { return 1; }
int sim_mpi_share_reports(pl_report *reports, int n, const pl_chip *chip)
{
    (void)reports, (void)n, (void)chip;
    return PL_OK;
}

#endif
