/* examples/kernels/mesh_progs.c: the table of mesh example programs (mesh_progs.h). */
#include <string.h>

#include "mesh_progs.h"

const ex_mesh_prog ex_mesh_progs[] = {
    {"ring_allreduce", ex_ring_allreduce_main, "a bidirectional ring all-reduce, checked against the sum"},
    {"ring_allgather", ex_ring_allgather_main, "a ring all-gather, checked on every device"},
    {"collective_matmul", ex_collective_matmul_main, "an all-gather matmul overlapped with its copies"},
    {"hier_allreduce", ex_hier_allreduce_main,
     "a hierarchical all-reduce over slices joined by DCN, against a flat ring"},
    {"deadlock", ex_deadlock_main, "a ring all-gather whose last device forgets to send: the deadlock report"},
    {NULL, NULL, NULL},
};

const ex_mesh_prog *ex_mesh_prog_find(const char *name)
{
    for (const ex_mesh_prog *p = ex_mesh_progs; name && p->name; p++)
        if (strcmp(p->name, name) == 0) return p;
    return NULL;
}
