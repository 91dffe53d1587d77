/* examples/hier_allreduce.c: the program; its code is examples/kernels/hier_allreduce_prog.c, which
 * `tilesim run hier_allreduce` runs too (and, in the MPI build, across ranks). */
#include "kernels/mesh_progs.h"

int main(int argc, char **argv) { return ex_hier_allreduce_main(argc, argv); }
