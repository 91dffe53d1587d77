/* kernel/values.c: host memory for the values a kernel holds (pallas.h,
 * pl_value). The arena is the running core's (pl_ctx.values, freed with its
 * context), not its host thread's: the cores of a mesh run as fibers that
 * share a few threads, and a core that parks in a semaphore wait keeps its
 * values live while another core's kernel runs. */
#include <stdlib.h>

#include "context.h"

enum { ALIGN = 64 };

size_t pl_value_bytes(pl_dtype t, int64_t rows, int64_t cols)
{
    if (rows <= 0 || cols <= 0 || (int)t < 0 || (int)t >= PL_DTYPE_COUNT) return 0;
    size_t es = pl_dtype_size(t);
    if ((uint64_t)rows > SIZE_MAX / 2 / (uint64_t)cols / es) return SIZE_MAX; /* no host holds it */
    size_t b = (size_t)rows * (size_t)cols * es;
    return (b + ALIGN - 1) / ALIGN * ALIGN;
}

struct kern_arena *kern_values_begin(pl_ctx *c, size_t bytes)
{
    struct kern_arena *arena = &c->values;
    if (arena->cap < bytes) {
        free(arena->base);
        arena->base = bytes < SIZE_MAX - ALIGN ? aligned_alloc(ALIGN, (bytes + ALIGN - 1) / ALIGN * ALIGN) : NULL;
        arena->cap = arena->base ? bytes : 0;
        if (!arena->base)
            kern_fault(c, PL_ENOMEM, "out of host memory for the kernel's values (%zu bytes, in registers on a TPU)",
                       bytes);
    }
    arena->used = 0;
    return arena;
}

pl_ref kern_arena_value(struct kern_arena *a, pl_dtype t, int64_t rows, int64_t cols)
{
    pl_ref r = {.data = a->base + a->used, .dtype = t, .space = PL_VMEM, .rank = 2, .shape = {rows, cols},
                .stride = {cols, 1}, .arg = -1, .role = PL_ROLE_NONE};
    a->used += pl_value_bytes(t, rows, cols);
    return r;
}

void pl_values_begin(pl_ctx *c, size_t bytes) { (void)kern_values_begin(c, bytes); }

pl_ref pl_value(pl_ctx *c, pl_dtype t, int64_t rows, int64_t cols)
{
    struct kern_arena *a = &c->values;
    if (rows <= 0 || cols <= 0 || (int)t < 0 || (int)t >= PL_DTYPE_COUNT || pl_dtype_bits(t) < 8)
        kern_fault(c, PL_EINVAL, "pl_value(%lld, %lld) of dtype %d: a value has at least one row and one column of "
                   "a dtype of 8 bits or more", (long long)rows, (long long)cols, (int)t);
    size_t need = pl_value_bytes(t, rows, cols);
    if (need > a->cap - a->used)
        kern_fault(c, PL_EINVAL, "pl_value(%lld, %lld) of %s needs %zu bytes, but this grid point's "
                   "pl_values_begin left %zu of %zu: reserve, at each grid point, the sum of pl_value_bytes of the "
                   "values it takes",
                   (long long)rows, (long long)cols, pl_dtype_name(t), need, a->cap - a->used, a->cap);
    return kern_arena_value(a, t, rows, cols);
}
