/* examples/kernels/buggy_table.c: the table of the buggy kernels gallery and
 * what its cases share (the arrays and the matmul call they mutate). */
#include <stdlib.h>
#include <string.h>

#include "buggy.h"
#include "matmul.h"

static const bug_case cases[] = {
    {"missing_zero", "the accumulator is never zeroed (no pl_fill at k == 0), so NaN garbage is summed", "V1, M2",
     bug_run_missing_zero},
    {"missing_store", "the final pl_copy(o, acc) is missing, so the output block is never written", "P4",
     bug_run_missing_store},
    {"parallel_reduction", "the reduction axis k is marked PL_PARALLEL", "V4, G3", bug_run_parallel_reduction},
    {"parallel_reduction_fn", "the reduction axis k is marked PL_PARALLEL, output map in function form",
     "V4, G3", bug_run_parallel_reduction_fn},
    {"revisit", "the grid puts k outermost, so output blocks are revisited after write-back", "P5",
     bug_run_revisit},
    {"oob_index", "the epilogue reads acc[i + 1][0] for every row i, one row past the block on the last",
     "V2", bug_run_oob_index},
    {"read_padding", "K = 300 with bk = 256 and no pl_ds mask: the edge block's padding is summed", "B6, V1",
     bug_run_read_padding},
    {"write_input", "the kernel squares its input block in place (pl_mul(c, x, x, x))", "V3",
     bug_run_write_input},
};

const bug_case *bug_cases(int *n)
{
    if (n) *n = (int)(sizeof cases / sizeof *cases);
    return cases;
}

const bug_case *bug_find(const char *name)
{
    if (!name) return NULL;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        if (strcmp(cases[i].name, name) == 0) return &cases[i];
    return NULL;
}

/* ---- shared ---------------------------------------------------------------------- */


/* A fixed pseudo-random sequence in [-1, 1): no NaN in the inputs, so any
 * NaN in an output comes from the kernel. */
static float *random_f32(int64_t n, uint64_t seed)
{
    float *p = malloc((size_t)n * sizeof *p);
    if (!p) return NULL;
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        p[i] = (float)((double)(seed >> 11) / 9007199254740992.0 * 2.0 - 1.0);
    }
    return p;
}

int bug_run_matmul(const pl_call *call, int64_t m, int64_t n, int64_t k, const pl_options *opt, pl_report *rep)
{
    float *a = random_f32(m * k, 1), *b = random_f32(k * n, 2), *c = calloc((size_t)(m * n), sizeof *c);
    int rc;
    if (!a || !b || !c) {
        rc = PL_ENOMEM;
        if (rep) {
            memset(rep, 0, sizeof *rep);
            rep->status = rc;
            strcpy(rep->error, "out of host memory for the case's arrays");
        }
    } else {
        pl_array args[2] = {PL_ARRAY(a, PL_F32, m, k), PL_ARRAY(b, PL_F32, k, n)};
        pl_array out = PL_ARRAY(c, PL_F32, m, n);
        rc = pl_pallas_call(call, args, &out, opt, rep);
    }
    free(a);
    free(b);
    free(c);
    return rc;
}

pl_call bug_matmul_call(pl_kernel_fn kernel, int64_t m, int64_t n, int64_t k, int64_t bm, int64_t bn, int64_t bk)
{
    /* the correct call of examples/kernels/matmul.h with a mutated kernel;
     * the buggy kernels take no parameters */
    static mm_params unused;
    pl_call call;
    mm_call(&call, &unused, m, n, k, bm, bn, bk);
    call.kernel = kernel;
    call.user = NULL;
    return call;
}
