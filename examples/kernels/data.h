/* examples/kernels/data.h: test data shared by the examples, tests and
 * benches: a fixed pseudo-random sequence, so that every run of a program
 * sees the same matrices. */
#ifndef TILESIM_EXAMPLES_DATA_H
#define TILESIM_EXAMPLES_DATA_H

#include "../../kernel/pallas.h"

/* n values in [-1, 1) stored as dt (rounded to nearest even), from `seed`;
 * malloc'd, NULL when out of memory. */
void *ex_random_matrix(int64_t n, pl_dtype dt, uint64_t seed);

#endif
