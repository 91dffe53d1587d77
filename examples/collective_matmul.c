/* examples/collective_matmul.c: the program; its code is examples/kernels/collective_matmul_prog.c, which
 * `tilesim run collective_matmul` runs too (and, in the MPI build, across ranks). */
#include "kernels/mesh_progs.h"

int main(int argc, char **argv) { return ex_collective_matmul_main(argc, argv); }
