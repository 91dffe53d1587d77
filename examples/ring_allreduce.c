/* examples/ring_allreduce.c: the program; its code is examples/kernels/ring_allreduce_prog.c, which
 * `tilesim run ring_allreduce` runs too (and, in the MPI build, across ranks). */
#include "kernels/mesh_progs.h"

int main(int argc, char **argv) { return ex_ring_allreduce_main(argc, argv); }
