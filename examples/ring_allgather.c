/* examples/ring_allgather.c: the program; its code is examples/kernels/ring_allgather_prog.c, which
 * `tilesim run ring_allgather` runs too (and, in the MPI build, across ranks). */
#include "kernels/mesh_progs.h"

int main(int argc, char **argv) { return ex_ring_allgather_main(argc, argv); }
