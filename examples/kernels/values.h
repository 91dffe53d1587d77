/* examples/kernels/values.h: the arrays a kernel holds as jnp values (the
 * built-ins' names for pl_value, kernel/pallas.h).
 *
 * Pallas code names intermediate arrays as Python variables (x_q =
 * quantize(x_ref[...]), acc = jnp.dot(...)); Mosaic keeps them in vector
 * registers and moves them through its own internal scratch, not in a VMEM
 * buffer the kernel allocates, so they count against no scoped limit (M4).
 * tilesim's block ops take Refs, so a value here is a Ref over host memory
 * that is no operand and no scratch of the call: the ops on it are counted
 * (VPU, MXU) as on any Ref, its bytes in no budget. Each core of a call
 * has one arena, reused at every grid point. */
#ifndef TILESIM_EXAMPLES_VALUES_H
#define TILESIM_EXAMPLES_VALUES_H

#include <stddef.h>

#include "../../kernel/pallas.h"

struct kern_arena;

typedef struct kern_arena ex_values; /* base, used, cap (kernel/context.h) */

/* The running core's arena, emptied, with room for `bytes` (the sum of
 * ex_value_bytes of the values the grid point takes). Without the host
 * memory for it the call ends with PL_ENOMEM, naming the bytes, as the
 * runtime's own allocations do: never a run with work left out. */
ex_values *ex_values_begin(pl_ctx *c, size_t bytes);
/* Bytes a (rows, cols) value of dtype t takes in the arena (aligned). */
size_t ex_value_bytes(pl_dtype t, int64_t rows, int64_t cols);
/* The next (rows, cols) value of dtype t: a row-major VMEM-space Ref that
 * belongs to no operand (arg -1). Its contents are what the last grid point
 * left: write before reading, as with any jnp value. */
pl_ref ex_value(ex_values *a, pl_dtype t, int64_t rows, int64_t cols);

#endif
