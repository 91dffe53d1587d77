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

/* The devices' reports and records travel to rank 0 one device at a time,
 * each in parts of at most part_bytes(): no buffer holds a whole rank's
 * records (gigabytes at a few thousand devices), and no MPI count (an int)
 * overflows. Per device: its size (int64, -1 when this rank could not
 * write it down), then its bytes: a 1 and its report and records, or a 0
 * for a device this rank does not have. Messages of one sender and tag
 * arrive in order, so rank 0 reads them rank by rank, device by device. */
static int64_t part_bytes(void)
{
    /* TILESIM_MPI_PART_BYTES: smaller parts, for tests of the reassembly */
    const char *e = getenv("TILESIM_MPI_PART_BYTES");
    long long v = e ? atoll(e) : 0;
    return v > 0 && v <= (1 << 30) ? (int64_t)v : (int64_t)1 << 26;
}

static int send_device(mesh_run *r, const sim_exec *x, int ran, int64_t part)
{
    sim_buf b = {0};
    char has = x != NULL;
    sim_buf_put(&b, &has, 1);
    if (has) sim_ship_device(&b, x, ran);
    int64_t n = b.bad ? -1 : (int64_t)b.n;
    MPI_Send(&n, 1, MPI_INT64_T, 0, TAG_RECORDS, r->mpi->comm);
    for (int64_t at = 0; at < n; at += part)
        MPI_Send(b.p + at, (int)(n - at < part ? n - at : part), MPI_BYTE, 0, TAG_RECORDS, r->mpi->comm);
    free(b.p);
    return n < 0 ? PL_ENOMEM : PL_OK;
}

/* Rank 0: device d's bytes from rank `from`, in place of its shadow. When
 * they cannot be kept, the parts are still taken (into *drop), so that the
 * next device's arrive where they are expected. -1 when not even a part
 * could be taken: reading on would take a part for the next size, so the
 * caller stops (the sender waits; the ranks' watchdog ends the run). */
static int recv_device(mesh_run *r, int from, sim_exec *x, int64_t part, char **drop)
{
    int64_t n = -1;
    MPI_Recv(&n, 1, MPI_INT64_T, from, TAG_RECORDS, r->mpi->comm, MPI_STATUS_IGNORE);
    if (n < 0) return PL_ENOMEM;
    char *buf = malloc(n ? (size_t)n : 1);
    if (!buf && !*drop) *drop = malloc((size_t)part);
    for (int64_t at = 0; at < n; at += part) {
        int len = (int)(n - at < part ? n - at : part);
        char *to = buf ? buf + at : *drop;
        if (!to) return -1;
        MPI_Recv(to, len, MPI_BYTE, from, TAG_RECORDS, r->mpi->comm, MPI_STATUS_IGNORE);
    }
    int rc = buf ? PL_OK : PL_ENOMEM;
    if (!rc) {
        const char *at = buf, *end = buf + n;
        if (n < 1) rc = PL_EINVAL; /* not even the byte that says whether it ran */
        else if (*at++) rc = x ? sim_unship_device(&at, end, x) : PL_ENOMEM;
    }
    free(buf);
    return rc;
}

/* The devices' bytes meet on rank 0; PL_OK on every rank when all arrived */
static int gather(mesh_run *r, sim_exec **xs, int ran)
{
    int64_t part = part_bytes();
    int rc = PL_OK;
    if (r->rank) {
        for (int d = r->first; d < r->first + r->count; d++) {
            int e = send_device(r, xs[d], ran, part);
            if (!rc) rc = e;
            /* rank 0 replays them; here they are done: the memory goes back
             * while rank 0's grows (a rank held about 600 bytes a copy) */
            for (int c = 0; xs[d] && xs[d]->lines && c < xs[d]->n_cores; c++) sim_coreline_free(&xs[d]->lines[c]);
        }
    } else {
        char *drop = NULL;
        int lost = 0;
        for (int k = 1; k < r->ranks && !lost; k++)
            for (int d = first_of(r, k); d < first_of(r, k + 1) && !lost; d++) {
                int e = recv_device(r, k, xs[d], part, &drop);
                lost = e < 0;
                if (!rc) rc = lost ? PL_ENOMEM : e;
            }
        free(drop);
    }
    return sim_mesh_mpi_agree(r, rc == PL_OK) ? PL_OK : PL_ENOMEM;
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
