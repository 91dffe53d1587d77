/* examples/kernels/mesh_progs.h: the mesh example programs as functions, so
 * that each runs as its own program (examples/ring_allreduce.c, ...) and as
 * `tilesim run NAME ...` (cli/kverbs.c), which the MPI build runs across
 * ranks: `mpirun -n 4 build/tilesim-mpi run ring_allreduce --devices 64`.
 *
 *     const ex_mesh_prog *p = ex_mesh_prog_find("ring_allreduce");
 *     if (p) return p->main(argc, argv);   // argv[0]: the program's name
 *
 * Each returns its exit status and never calls exit().
 */
#ifndef TILESIM_EXAMPLES_MESH_PROGS_H
#define TILESIM_EXAMPLES_MESH_PROGS_H

typedef struct ex_mesh_prog {
    const char *name;
    int (*main)(int argc, char **argv);
    const char *summary;
} ex_mesh_prog;

int ex_ring_allreduce_main(int argc, char **argv);
int ex_ring_allgather_main(int argc, char **argv);
int ex_collective_matmul_main(int argc, char **argv);
int ex_deadlock_main(int argc, char **argv);
int ex_hier_allreduce_main(int argc, char **argv);

/* The programs, NULL-terminated by name. */
extern const ex_mesh_prog ex_mesh_progs[];
/* The program called name, or NULL. */
const ex_mesh_prog *ex_mesh_prog_find(const char *name);

#endif
