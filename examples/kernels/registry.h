/* examples/kernels/registry.h: every built-in kernel as a definition
 * (sim/kdef.h), so that the `tilesim` verbs, the tests and the example
 * programs build each call one way.
 *
 *     const pl_kernel_def *d = ex_kernel_find("rmsnorm");
 *     int64_t v[PL_KDEF_MAX_PARAMS];
 *     pl_kernel_defaults(d, v);
 *     pl_kernel_run(d, v, NULL, &rep, chk, stdout);
 */
#ifndef TILESIM_EXAMPLES_REGISTRY_H
#define TILESIM_EXAMPLES_REGISTRY_H

#include "../../sim/kdef.h"

#ifdef __cplusplus
extern "C" {
#endif

int ex_kernel_count(void);
/* The i-th definition (0 <= i < ex_kernel_count()), or NULL. */
const pl_kernel_def *ex_kernel_at(int i);
/* The definition named name, or NULL. */
const pl_kernel_def *ex_kernel_find(const char *name);

/* The definitions, one per kernel (defined next to their kernels). */
extern const pl_kernel_def ex_def_matmul, ex_def_matmul_tb, ex_def_matmul_bias_relu;
extern const pl_kernel_def ex_def_block_sparse, ex_def_grouped, ex_def_flash, ex_def_paged;
extern const pl_kernel_def ex_def_rmsnorm, ex_def_layernorm, ex_def_softmax, ex_def_add;
extern const pl_kernel_def ex_def_quant_matmul, ex_def_masked_matmul;

/* The built-in ring programs (mesh_progs.h) as mesh kernel definitions
 * (mesh_defs.c): not among ex_kernel_at's, whose kernels run on one
 * device; found by name for the verbs (`tilesim sweep ring_allreduce`). */
extern const pl_kernel_def ex_def_ring_allreduce, ex_def_ring_allgather, ex_def_collective_matmul,
    ex_def_hier_allreduce;
const pl_kernel_def *ex_mesh_kernel_find(const char *name);

/* The builds of two definitions with their tables given rather than drawn
 * from a parameter, for the example programs that take them on the command
 * line (the rest of the definition applies unchanged: its inputs and
 * reference read the tables from the build):
 * block_sparse_matmul with X's present blocks a fraction `density` (0 to 1)
 * of all, not a whole percentage; grouped_matmul with the G group sizes
 * given (summing to M), or, sizes NULL, those of sizes_seed;
 * paged_attention with the batch sequence lengths given (each 0 to max_len),
 * or, lengths NULL, those of lengths_seed. */
int ex_block_sparse_build(const int64_t *v, double density, pl_kernel_build *b, char *msg, size_t n);
int ex_grouped_build(const int64_t *v, const int64_t *sizes, pl_kernel_build *b, char *msg, size_t n);
int ex_paged_build(const int64_t *v, const int64_t *lengths, pl_kernel_build *b, char *msg, size_t n);
/* paged_attention's build with the KV pages in kv (the dtype parameter's,
 * or an 8-bit cache, i8 or f8e4m3, that the kernel widens to q's dtype)
 * and `ahead` pages in flight while one is used (1: double-buffered). */
int ex_paged_build_kv(const int64_t *v, const int64_t *lengths, pl_dtype kv, int ahead, pl_kernel_build *b,
                      char *msg, size_t n);

#ifdef __cplusplus
}
#endif
#endif
