/* examples/kernels/data.h: test data shared by the examples, tests and
 * benches: a fixed pseudo-random sequence, so that every run of a program
 * sees the same matrices. */
#ifndef TILESIM_EXAMPLES_DATA_H
#define TILESIM_EXAMPLES_DATA_H

#include "../../kernel/pallas.h"

/* n values in [-1, 1) stored as dt (rounded to nearest even), from `seed`;
 * malloc'd, NULL when out of memory. */
void *ex_random_matrix(int64_t n, pl_dtype dt, uint64_t seed);
/* The next value in [-1, 1) with 23 fraction bits (exact in f32, so sums of
 * a few round the same everywhere) of the splitmix64 stream at *state. */
float ex_draw(uint64_t *state);

#endif
