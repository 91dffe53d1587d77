/* sim/kdef_internal.h: what the kernel-definition drivers (kdef.c,
 * kdef_run.c, kdef_sweep.c) share. Not part of the public API. */
#ifndef TILESIM_KDEF_INTERNAL_H
#define TILESIM_KDEF_INTERNAL_H

#include "kdef.h"

/* The splitmix64 step (kdef.c): one generator for inputs (and, later, the
 * executor's shuffles and the example kernels' tables, which still keep
 * copies): its streams are the same on every host. */
uint64_t sim_splitmix64(uint64_t *s);

/* Check and build the call for values v into b (zeroed first). PL_OK, or an
 * error code with a message naming the kernel into msg (never empty). */
int sim_kdef_prepare(const pl_kernel_def *d, const int64_t *v, pl_kernel_build *b, char *msg, size_t n);

/* Fill the inputs: d->inputs, or pl_kernel_fill_inputs over the arrays
 * with owned[a] set (those the driver allocated). */
int sim_kdef_inputs(const pl_kernel_def *d, const int64_t *v, pl_kernel_build *b, uint64_t seed,
                    const unsigned char *owned);

#endif
