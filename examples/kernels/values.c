/* examples/kernels/values.c: host memory for the values of a kernel
 * (values.h). The arena is the running core's (pl_ctx.values, freed with
 * its context), not its host thread's: the cores of a mesh run as fibers
 * that share a few threads, and a core that parks in a semaphore wait keeps
 * its values live while another core's kernel runs. */
#include <stdlib.h>

#include "../../kernel/context.h" /* kern_fault: PL_ENOMEM as the runtime's own allocations */
#include "values.h"

enum { ALIGN = 64 };

ex_values *ex_values_begin(pl_ctx *c, size_t bytes)
{
    ex_values *arena = &c->values;
    if (arena->cap < bytes) {
        free(arena->base);
        arena->base = aligned_alloc(ALIGN, (bytes + ALIGN - 1) / ALIGN * ALIGN);
        arena->cap = arena->base ? bytes : 0;
        if (!arena->base)
            kern_fault(c, PL_ENOMEM, "out of host memory for the kernel's values (%zu bytes, in registers on a TPU)",
                       bytes);
    }
    arena->used = 0;
    return arena;
}

size_t ex_value_bytes(pl_dtype t, int64_t rows, int64_t cols)
{
    size_t b = (size_t)rows * (size_t)cols * pl_dtype_size(t);
    return (b + ALIGN - 1) / ALIGN * ALIGN;
}

pl_ref ex_value(ex_values *a, pl_dtype t, int64_t rows, int64_t cols)
{
    pl_ref r = {.data = a->base + a->used, .dtype = t, .space = PL_VMEM, .rank = 2, .shape = {rows, cols},
                .stride = {cols, 1}, .arg = -1, .role = PL_ROLE_NONE};
    a->used += ex_value_bytes(t, rows, cols);
    return r;
}
