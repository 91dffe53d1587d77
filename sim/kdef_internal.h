/* sim/kdef_internal.h: what the kernel-definition drivers (kdef.c,
 * kdef_run.c, kdef_sweep.c) share. Not part of the public API. */
#ifndef TILESIM_KDEF_INTERNAL_H
#define TILESIM_KDEF_INTERNAL_H

#include "kdef.h"

/* The splitmix64 step: a small, fast, seedable generator whose streams are
 * the same on every host (inputs must not depend on the platform). */
uint64_t sim_splitmix64(uint64_t *s);

/* Check and build the call for values v into b (zeroed first). PL_OK, or an
 * error code with a message naming the kernel into msg (never empty). */
int sim_kdef_prepare(const pl_kernel_def *d, const int64_t *v, pl_kernel_build *b, char *msg, size_t n);

#endif
