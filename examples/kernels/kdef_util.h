/* examples/kernels/kdef_util.h: what the built-in definitions share: the
 * checks of sizes and dtypes, host references through OpenBLAS, and
 * scalar-prefetch tables that outlive the build that made them. */
#ifndef TILESIM_EXAMPLES_KDEF_UTIL_H
#define TILESIM_EXAMPLES_KDEF_UTIL_H

#include <stddef.h>

#include "../../sim/kdef.h"

/* The most entries a scalar-prefetch table of a built-in may have: SMEM is
 * small on a real chip, and a table is built on the host at every build. */
#define EX_MAX_TABLE (1 << 22)

/* a >= 0, b >= 1; no a + b - 1 that overflows for a size near 2^63. */
static inline int64_t ex_cdiv(int64_t a, int64_t b) { return a / b + (a % b != 0); }

/* PL_OK when every value named in names (a space-separated list, in the
 * order of v's entries from first) is >= 1; else PL_EINVAL with a message
 * naming the first that is not. */
int ex_check_positive(const pl_kernel_def *d, const int64_t *v, char *msg, size_t n);
/* PL_OK when v[i] (a dtype parameter) is one of the n_ok dtypes. */
int ex_check_dtype(const pl_kernel_def *d, const int64_t *v, int i, const pl_dtype *ok, int n_ok, char *msg,
                   size_t n);

/* A malloc'd f32 copy of a (bf16 and f16 widened exactly); NULL: no memory. */
float *ex_widen(const pl_array *a);
/* c (m, n) = a (m, k) @ b, b given (k, n) or, with trans_b, (n, k): both
 * widened to f32, then cblas_sgemm. PL_OK or PL_ENOMEM. */
int ex_ref_gemm(const pl_array *a, const pl_array *b, int trans_b, float *c, int64_t m, int64_t n, int64_t k);
/* Store n doubles into arr (its dtype, rounded once). */
void ex_store(pl_array *arr, const double *vals, int64_t n);
void ex_store_f32(pl_array *arr, const float *vals, int64_t n);

/* A copy of n bytes that lives until the process ends (identical contents
 * are shared, so repeated builds add nothing): scalar-prefetch tables must
 * exist when build returns, in cost-only runs too, and index maps keep a
 * pointer to their parameters; a build may be copied (sweeps), so neither
 * can live in the build itself. NULL: no memory. */
const void *ex_intern(const void *p, size_t n);

/* pl_kernel_fill_inputs for every argument but the scalar-prefetch tables,
 * which build made (interned) and which must keep their contents. */
int ex_fill_data_inputs(const int64_t *v, pl_kernel_build *b, uint64_t seed);

#endif
