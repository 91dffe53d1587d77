/* sim/mesh/mesh_mpi_end.c: the end of a mesh across Open MPI ranks
 * (mesh_mpi.c runs it): the races each rank found meet on every rank, and
 * the devices' reports and timing records meet on rank 0, which replays
 * them all at once (the timing is a function of the records alone, so it
 * equals the one-process run's) and sends every rank the reports. Stubs
 * unless the build defines TILESIM_MPI. */
#include <stdlib.h>
#include <string.h>

#include "../call/core.h"
#include "mesh_mpi.h"

#ifdef TILESIM_MPI

void sim_mesh_mpi_races(mesh_run *r)
{
    sim_mesh_conflict mine = {0}, *all = calloc((size_t)r->ranks, sizeof *all);
    const sim_mesh_conflict *f = sim_mesh_race_found(r->race);
    if (f) mine = *f;
    if (!sim_mesh_mpi_agree(r, all != NULL)) {
        free(all);
        return;
    }
    MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all, sizeof mine, MPI_BYTE, r->mpi->comm);
    for (int k = 0; k < r->ranks; k++) sim_mesh_race_consider(r->race, &all[k]);
    free(all);
}

/* This rank's devices as bytes (each: 1 and its report and records, or 0). */
static void ship(const mesh_run *r, sim_exec **xs, int ran, sim_buf *b)
{
    for (int d = r->first; d < r->first + r->count; d++) {
        char has = xs[d] != NULL;
        sim_buf_put(b, &has, 1);
        if (has) sim_ship_device(b, xs[d], ran);
    }
}

/* Rank 0: every rank's devices' reports and records in place of the shadows'. */
static int unship(const mesh_run *r, sim_exec **xs, const char *all, const int *counts, const int *displs)
{
    int rc = PL_OK;
    for (int k = 1; k < r->ranks && !rc; k++) {
        const char *at = all + displs[k], *end = at + counts[k];
        for (int d = first_of(r, k); d < first_of(r, k + 1) && !rc; d++) {
            if (at >= end) return PL_EINVAL;
            char has = *at++;
            if (has && xs[d]) rc = sim_unship_device(&at, end, xs[d]);
            else if (has) return PL_ENOMEM;
        }
    }
    return rc;
}

/* The devices' bytes meet on rank 0; PL_OK there when all arrived */
static int gather(mesh_run *r, sim_exec **xs, int ran)
{
    sim_buf b = {0};
    ship(r, xs, ran, &b);
    int len = b.bad || b.n > (size_t)INT32_MAX ? -1 : (int)b.n, *counts = NULL, *displs = NULL;
    char *all = NULL;
    if (r->rank == 0) {
        counts = calloc((size_t)r->ranks, sizeof *counts);
        displs = calloc((size_t)r->ranks, sizeof *displs);
    }
    int ok = len >= 0 && (r->rank || (counts && displs));
    ok = sim_mesh_mpi_agree(r, ok);
    if (ok) MPI_Gather(&len, 1, MPI_INT, counts, 1, MPI_INT, 0, r->mpi->comm);
    int64_t total = 0;
    for (int k = 0; ok && r->rank == 0 && k < r->ranks; k++) {
        displs[k] = (int)total;
        total += counts[k];
    }
    if (r->rank == 0 && ok) ok = total <= INT32_MAX && (all = malloc(total ? (size_t)total : 1));
    ok = sim_mesh_mpi_agree(r, ok);
    if (ok) MPI_Gatherv(b.p, len, MPI_BYTE, all, counts, displs, MPI_BYTE, 0, r->mpi->comm);
    int rc = ok ? PL_OK : PL_ENOMEM;
    if (ok && r->rank == 0) rc = unship(r, xs, all, counts, displs);
    free(b.p);
    free(all);
    free(counts);
    free(displs);
    return rc;
}

void sim_mesh_mpi_finish(mesh_run *r, sim_exec **xs, int ran, pl_mesh_report *mr, sim_link_stats *stats)
{
    int rc = r->mpi ? gather(r, xs, ran) : PL_ENOMEM;
    if (r->rank == 0 && rc == PL_OK) {
        if (ran) sim_exec_finish_mesh(xs, r->n, r->mesh, stats);
        sim_mesh_report(mr, xs, r->n, r->mesh, stats);
    }
    size_t each = sizeof(pl_report);
    pl_report *reps = calloc((size_t)r->n, each);
    int ok = r->mpi && sim_mesh_mpi_agree(r, reps != NULL && rc == PL_OK);
    if (!ok) {
        memset(mr, 0, sizeof *mr);
        mr->failed_device = -1;
        mr->status = PL_ENOMEM;
        snprintf(mr->error, sizeof mr->error, "pl_mesh_call: out of host memory to gather the devices' reports "
                 "on rank 0");
        free(reps);
        return;
    }
    for (int d = 0; r->rank == 0 && d < r->n; d++)
        if (xs[d]) reps[d] = xs[d]->rep;
    MPI_Bcast(mr, sizeof *mr, MPI_BYTE, 0, r->mpi->comm);
    long long sent = r->mpi->sent, all = 0;
    MPI_Allreduce(&sent, &all, 1, MPI_LONG_LONG, MPI_SUM, r->mpi->comm);
    mr->ranks = r->ranks;
    mr->rank_messages = all;
    for (int d = 0; d < r->n; d += 1024) { /* in parts: a count is an int */
        int k = r->n - d < 1024 ? r->n - d : 1024;
        MPI_Bcast(reps + d, (int)((size_t)k * each), MPI_BYTE, 0, r->mpi->comm);
    }
    for (int d = 0; r->rank && d < r->n; d++) {
        if (!xs[d]) continue;
        const pl_chip *chip = xs[d]->rep.chip;
        xs[d]->rep = reps[d];
        xs[d]->rep.chip = chip; /* rank 0's pointer means nothing here */
    }
    free(reps);
}

#else /* one process: mesh_run.c never has other ranks */

void sim_mesh_mpi_races(mesh_run *r) { (void)r; }
void sim_mesh_mpi_finish(mesh_run *r, sim_exec **xs, int ran, pl_mesh_report *mr, sim_link_stats *stats)
{
    (void)r, (void)xs, (void)ran, (void)mr, (void)stats;
}

#endif
