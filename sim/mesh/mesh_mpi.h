/* sim/mesh/mesh_mpi.h: what mesh_mpi.c (the messages while the devices run)
 * and mesh_mpi_end.c (what meets at the end) share: the state of a mesh
 * across Open MPI ranks. Internal; only in the MPI build (TILESIM_MPI). */
#ifndef TILESIM_MESH_MPI_H
#define TILESIM_MESH_MPI_H

#include "mesh_run.h"

#ifdef TILESIM_MPI
#include <mpi.h>

enum { TAG_DATA = 7301, TAG_PROBE, TAG_STATUS, TAG_END, TAG_RECORDS };

/* The head of a copy's or signal's message; the sender's clock and the
 * copy's elements follow. */
typedef struct wire {
    int32_t from, to, sem_arg, is_copy;
    int32_t n_clock, has_data;
    int64_t sem_off, dst_off, amount;
    pl_ref dst;              /* shape, strides and dtype there (its data: meaningless here) */
    char point[64];
} wire;

typedef struct outmsg {
    char *buf;
    int len, dest;
    MPI_Request req;
    struct outmsg *next;
} outmsg;

/* A rank's answer to a wave. */
typedef struct status {
    int64_t wave, sent, applied, blocked;
    int64_t idle;
} status;

/* A stuck device's wait, for the deadlock message on every rank. */
typedef struct stuck {
    int64_t blocked, held;
    char what[SIM_MESH_WHAT];
} stuck;

struct sim_mesh_mpi {
    MPI_Comm comm;
    outmsg *queue, *queue_tail;   /* posted by the device threads (lock) */
    outmsg *pending;         /* sent, maybe not complete (calling thread) */
    int64_t sent, applied;
    /* rank 0's waves */
    int64_t wave, got;
    status sum, prev;
    int waving, have_prev;
    double last_wave;
};

/* The first device of rank `rank`: ranks hold contiguous blocks. */
static inline int first_of(const mesh_run *r, int rank) { return (int)((int64_t)r->n * rank / r->ranks); }

#endif
#endif
