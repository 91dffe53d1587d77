/* examples/kernels/registry.c: the list of built-in definitions, in the
 * order `tilesim list` shows them. */
#include <string.h>

#include "registry.h"
#include "review_defs.h"

static const pl_kernel_def *const defs[] = {
    &ex_def_matmul,  &ex_def_matmul_tb, &ex_def_matmul_bias_relu, &ex_def_quant_matmul, &ex_def_block_sparse,
    &ex_def_masked_matmul,
    &ex_def_grouped, &ex_def_flash,     &ex_def_paged,            &ex_def_rmsnorm,
    &ex_def_layernorm, &ex_def_softmax, &ex_def_add,
};

int ex_kernel_count(void) { return (int)(sizeof defs / sizeof defs[0]); }

const pl_kernel_def *ex_kernel_at(int i) { return i >= 0 && i < ex_kernel_count() ? defs[i] : NULL; }

/* The design review's own definitions: not listed, but found by name, so
 * that `tilesim run review_paged --set ...` re-runs a line of its report. */
static const pl_kernel_def *const review_defs[] = {&ex_def_review_matmul, &ex_def_review_paged};

const pl_kernel_def *ex_kernel_find(const char *name)
{
    if (!name) return NULL;
    for (int i = 0; i < ex_kernel_count(); i++)
        if (strcmp(defs[i]->name, name) == 0) return defs[i];
    for (size_t i = 0; i < sizeof review_defs / sizeof *review_defs; i++)
        if (strcmp(review_defs[i]->name, name) == 0) return review_defs[i];
    return NULL;
}
