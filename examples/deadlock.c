/* examples/deadlock.c: the program; its code is examples/kernels/deadlock_prog.c, which
 * `tilesim run deadlock` runs too (and, in the MPI build, across ranks). */
#include "kernels/mesh_progs.h"

int main(int argc, char **argv) { return ex_deadlock_main(argc, argv); }
