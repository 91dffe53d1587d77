/* examples/kernels/data.c: the fixed pseudo-random test data (a 64-bit LCG). */
#include <stdlib.h>

#include "data.h"

void *ex_random_matrix(int64_t n, pl_dtype dt, uint64_t seed)
{
    char *p = malloc((size_t)n * pl_dtype_size(dt));
    if (!p) return NULL;
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        double v = (double)(seed >> 11) / 9007199254740992.0 * 2.0 - 1.0;
        pl_store_elem(p + (size_t)i * pl_dtype_size(dt), dt, v);
    }
    return p;
}

float ex_draw(uint64_t *st)
{
    uint64_t z = (*st += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return (float)((int64_t)(z >> 40) - (1 << 23)) / (float)(1 << 23);
}
