/* examples/kernels/values.c: the built-ins' values (values.h), in the
 * running core's arena of the kernel layer (kernel/values.c, pl_value). */
#include "../../kernel/context.h"
#include "values.h"

ex_values *ex_values_begin(pl_ctx *c, size_t bytes) { return kern_values_begin(c, bytes); }

size_t ex_value_bytes(pl_dtype t, int64_t rows, int64_t cols) { return pl_value_bytes(t, rows, cols); }

pl_ref ex_value(ex_values *a, pl_dtype t, int64_t rows, int64_t cols) { return kern_arena_value(a, t, rows, cols); }
