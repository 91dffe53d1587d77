/* examples/kernels/mesh_cli.h: what the mesh example programs
 * (ring_allgather, ring_allreduce, collective_matmul) share: their own
 * options (--devices, --rows, --cols, --k, --seed) parsed with the common
 * ones (options.h), the chip the options name, and a device's line.
 *
 *     ex_mesh_args a = {.devices = 8, .rows = 256, .cols = 1024};
 *     int exit_code = ex_mesh_parse(&cl, argc, argv, 0, &a);
 *     if (exit_code >= 0) return exit_code;      // --help, or a usage error
 */
#ifndef TILESIM_EXAMPLES_MESH_CLI_H
#define TILESIM_EXAMPLES_MESH_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "options.h"

#include "../../sim/tilesim_mesh.h"

typedef struct ex_mesh_args {
    int devices;
    int64_t rows, cols, k, seed;
    int digest;       /* --digest: print every figure at full precision (ex_mesh_digest) */
    int with_mesh;    /* set before parsing: the program takes --mesh SPEC (any mesh; devices in number order) */
    int has_mesh;     /* --mesh was given: mesh holds it, devices its device count */
    int with_one_way; /* set before parsing: the program takes --one-way (a ring sent one way round) */
    int one_way;      /* --one-way was given */
    pl_mesh mesh;
} ex_mesh_args;

/* Parse argv into cl (common options) and a (the mesh programs' own; --k
 * only when with_k). -1 to go on, else the exit code: 0 after --help, 2
 * after a usage error (already printed). */
int ex_mesh_parse(ex_cmdline *cl, int argc, char **argv, int with_k, ex_mesh_args *a);
/* The chip opt names (chip_spec, chip, or the default). */
const pl_chip *ex_chip_of(const pl_options *opt);
/* "  device   3:      76.04 us, 4 copies started, 3 of them over ICI (3145728 bytes)", no newline. */
void ex_mesh_device_line(int dev, const pl_report *r);

/* FNV-1a of n bytes: a device's outputs, to compare runs bit for bit. */
uint64_t ex_digest(const void *p, size_t n);
/* "digest:" lines: every figure of each device's report and of the mesh's
 * at full precision, and (v not NULL) each device's output digest, kept as
 * two 32-bit halves at v[d * per + hi] and v[d * per + hi + 1] (doubles,
 * as pl_mesh_share moves them). */
struct pl_mesh_report;
void ex_mesh_digest(const struct pl_mesh_report *mr, const pl_report *reps, int n, const double *v, int per, int hi);
/* A ring of `devices` into mesh: PL_OK, or the message on stderr after "prog: ". */
int ex_ring_mesh(const char *prog, int devices, struct pl_mesh *mesh);
/* ex_check_host_memory on every process of a mesh run across MPI ranks, all
 * agreeing: 0 when every process has the memory, else 2 on all of them
 * (each process needs `bytes`; one that lacks it must not leave the others
 * waiting in pl_mesh_call). */
int ex_mesh_check_memory(const ex_cmdline *cl, const struct pl_mesh *mesh, const char *what, double bytes);
/* "  ranks: the devices ran in 4 processes, ...": only when they did (MPI). */
void ex_mesh_ranks_line(const struct pl_mesh_report *mr);

#endif
