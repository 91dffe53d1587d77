/* tests/test_matmul.c: the tiled matmul of examples/ against OpenBLAS
 * (pl_check_matmul, rule V5), in f32 and bf16, over square, rectangular and
 * ragged shapes, and the copy counts its grid implies (P1-P3).
 *
 * The kernel is the shared one of examples/kernels/matmul.h, which the
 * example program, the CLI and the benches run too.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../examples/kernels/data.h"
#include "../examples/kernels/matmul.h"
#include "../kernel/pallas.h"
#include "../sim/tilesim.h"

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

typedef struct tm_case {
    int64_t m, n, k, bm, bn, bk;
    pl_dtype dt;
} tm_case;

/* Run the case; the caller frees *c_out when it is not NULL. */
static void tm_run(const tm_case *t, void **c_out)
{
    int64_t m = t->m, n = t->n, k = t->k;
    size_t es = pl_dtype_size(t->dt);
    void *a = ex_random_matrix(m * k, t->dt, 1), *b = ex_random_matrix(k * n, t->dt, 2);
    void *c = malloc((size_t)(m * n) * es);
    cr_assert_not_null(c);
    memset(c, 0, (size_t)(m * n) * es);
    mm_params params;
    pl_call call;
    mm_call(&call, &params, m, n, k, t->bm, t->bn, t->bk);
    pl_array args[2] = {PL_ARRAY(a, t->dt, m, k), PL_ARRAY(b, t->dt, k, n)};
    pl_array out = PL_ARRAY(c, t->dt, m, n);
    pl_report rep;
    int rc = pl_pallas_call(&call, args, &out, NULL, &rep);
    cr_assert_eq(rc, PL_OK, "%lldx%lldx%lld %s: pl_pallas_call returned %d: %s", (long long)m, (long long)n,
                 (long long)k, pl_dtype_name(t->dt), rc, rep.error);

    pl_check chk;
    rc = pl_check_matmul(&args[0], &args[1], &out, &chk, NULL);
    cr_assert_eq(rc, PL_OK, "%lldx%lldx%lld %s: pl_check_matmul returned %d", (long long)m, (long long)n,
                 (long long)k, pl_dtype_name(t->dt), rc);
    cr_assert_eq(chk.verdict, PL_PASS,
                 "%lldx%lldx%lld %s: verdict %s, normalised error %.3g (pass <= %.3g), %lld NaN/inf, worst at "
                 "(%lld, %lld)",
                 (long long)m, (long long)n, (long long)k, pl_dtype_name(t->dt), pl_verdict_name(chk.verdict),
                 chk.norm_err, chk.pass_below, (long long)chk.n_nan, (long long)chk.worst_row,
                 (long long)chk.worst_col);
    cr_assert_eq(chk.n_nan, 0);

    /* what the grid implies: k is the fastest axis, so x (i, k) and y (k, j)
     * change at every step; o (i, j) is written back once per block */
    int64_t gm = cdiv(m, t->bm), gn = cdiv(n, t->bn), gk = cdiv(k, t->bk), steps = gm * gn * gk;
    cr_assert_gt(gk, 1, "the case must have more than one k step for these counts");
    cr_assert_eq(rep.steps, steps);
    cr_assert_eq(rep.op[0].copies, steps, "x copies = %lld, want one per grid step (%lld)",
                 (long long)rep.op[0].copies, (long long)steps);
    cr_assert_eq(rep.op[0].skipped, 0);
    cr_assert_eq(rep.op[1].copies, steps, "y copies = %lld, want %lld", (long long)rep.op[1].copies, (long long)steps);
    cr_assert_eq(rep.op[2].writebacks, gm * gn, "o writebacks = %lld, want one per output block (%lld)",
                 (long long)rep.op[2].writebacks, (long long)(gm * gn));
    /* edge blocks move only their in-bounds bytes (B6): x is read once per
     * column of blocks, y once per row of blocks, o written once */
    cr_assert_eq(rep.op[0].bytes_in, gn * m * k * (int64_t)es, "x bytes_in = %lld", (long long)rep.op[0].bytes_in);
    cr_assert_eq(rep.op[1].bytes_in, gm * k * n * (int64_t)es, "y bytes_in = %lld", (long long)rep.op[1].bytes_in);
    cr_assert_eq(rep.op[2].bytes_out, m * n * (int64_t)es, "o bytes_out = %lld", (long long)rep.op[2].bytes_out);
    /* every step's dot is (bm, bn) over the valid part of k */
    cr_assert_eq(rep.mxu_flops, 2.0 * (double)(gm * t->bm) * (double)(gn * t->bn) * (double)k, "mxu_flops = %g",
                 rep.mxu_flops);
    free(a), free(b);
    if (c_out) *c_out = c;
    else free(c);
}

/* ---- square, rectangular, ragged ---------------------------------------------- */

Test(matmul, f32_square_256_blocks_128) { tm_run(&(tm_case){256, 256, 256, 128, 128, 128, PL_F32}, NULL); }

Test(matmul, bf16_square_256_blocks_128) { tm_run(&(tm_case){256, 256, 256, 128, 128, 128, PL_BF16}, NULL); }

Test(matmul, f32_rectangular_384x256x640) { tm_run(&(tm_case){384, 256, 640, 128, 128, 128, PL_F32}, NULL); }

Test(matmul, bf16_rectangular_384x256x640) { tm_run(&(tm_case){384, 256, 640, 128, 128, 128, PL_BF16}, NULL); }

Test(matmul, f32_ragged_1000x520x300_blocks_256) { tm_run(&(tm_case){1000, 520, 300, 256, 256, 256, PL_F32}, NULL); }

Test(matmul, bf16_ragged_1000x520x300_blocks_256)
{
    tm_run(&(tm_case){1000, 520, 300, 256, 256, 256, PL_BF16}, NULL);
}

Test(matmul, f32_ragged_130x260x129_blocks_128) { tm_run(&(tm_case){130, 260, 129, 128, 128, 128, PL_F32}, NULL); }

Test(matmul, bf16_ragged_130x260x129_blocks_128)
{
    tm_run(&(tm_case){130, 260, 129, 128, 128, 128, PL_BF16}, NULL);
}
