/* examples/kernels/values.c: a host arena per thread for the values of a
 * kernel (values.h). The arena lives in thread-local storage and a pthread
 * key frees it when the thread ends (tilesim's megacore and sweep threads
 * come and go); the main thread's stays reachable until exit. */
#include <pthread.h>
#include <stdlib.h>

#include "../../kernel/context.h" /* kern_fault: PL_ENOMEM as the runtime's own allocations */
#include "values.h"

enum { ALIGN = 64 };

static _Thread_local ex_values *arena;
static pthread_key_t key;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void arena_free(void *p)
{
    ex_values *a = p;
    free(a->base);
    free(a);
    arena = NULL;
}

static void make_key(void) { pthread_key_create(&key, arena_free); }

ex_values *ex_values_begin(pl_ctx *c, size_t bytes)
{
    pthread_once(&once, make_key);
    if (!arena) {
        if (!(arena = calloc(1, sizeof *arena))) kern_fault(c, PL_ENOMEM, "out of host memory for the kernel's values");
        pthread_setspecific(key, arena);
    }
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
