/* tests/test_masked_matmul.c: the Pallas sparse guide's matmul with a
 * block-sparse output mask (examples/kernels/masked_matmul.c): o =
 * tril(x @ y), the blocks the mask zeroes skipped through prefetch maps. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../examples/kernels/registry.h"
#include "../sim/tilesim_check.h"
#include "run.h"

static int run(const char *const *sets, int n_sets, int cost_only, pl_report *rep, pl_check *chk)
{
    const pl_kernel_def *d = ex_kernel_find("masked_matmul");
    cr_assert_not_null(d, "masked_matmul is a built-in kernel");
    int64_t v[PL_KDEF_MAX_PARAMS];
    char msg[256];
    pl_kernel_defaults(d, v);
    for (int i = 0; i < n_sets; i++) {
        int rc = pl_kernel_set(d, v, sets[i], msg, sizeof msg);
        if (rc != PL_OK) return rc;
    }
    pl_options opt = {.chip = "v5e", .cost_only = cost_only};
    return pl_kernel_run(d, v, &opt, rep, chk, NULL);
}

/* Square and oblong blocks, bf16 and f32: the output is tril(x @ y). */
Test(masked_matmul, the_output_is_the_lower_triangle_of_the_product)
{
    static const char *const cases[][3] = {{"dtype=bf16", "bm=256", "bn=256"},
                                           {"dtype=f32", "bm=128", "bn=256"},
                                           {"dtype=bf16", "bm=256", "bn=128"}};
    for (int c = 0; c < 3; c++) {
        pl_report rep;
        pl_check chk[PL_MAX_OPERANDS];
        cr_assert_eq(run(cases[c], 3, 0, &rep, chk), PL_OK, "%s", rep.error);
        cr_expect_eq(chk[0].verdict, PL_PASS, "%s %s %s: max abs err %g", cases[c][0], cases[c][1], cases[c][2],
                     chk[0].max_abs_err);
    }
}

/* A zero block copies nothing and does no dot: x and y are fetched once
 * per (nonzero block, k), the MXU does the lower triangle's blocks only. */
Test(masked_matmul, zero_blocks_copy_nothing_and_skip_the_dot)
{
    static const char *const sets[] = {"M=2048", "N=2048", "K=1024", "bm=256", "bn=256", "bk=256"};
    pl_report rep;
    cr_assert_eq(run(sets, 6, 1, &rep, NULL), PL_OK, "%s", rep.error);
    int64_t nonzero = 8 * 9 / 2, nk = 4; /* 36 of the 64 blocks of an 8 x 8 grid */
    cr_expect_eq(th_operand(&rep, "x")->copies, nonzero * nk);
    cr_expect_eq(th_operand(&rep, "y")->copies, nonzero * nk);
    cr_expect_eq(th_operand(&rep, "o")->writebacks, 64, "every output block is written, the zero ones with zeros");
    cr_expect_float_eq(rep.mxu_flops, 2.0 * nonzero * nk * 256 * 256 * 256, 1);
}

/* The guide's shape on v5e: 528 of 1024 blocks computed, each over 16 k
 * steps; the mask's two distinct blocks (all ones, the diagonal triangle)
 * alternate twice a row. Its measured 28.648 ms is checked in
 * test_published_timings.c. */
Test(masked_matmul, the_guides_shape_fetches_what_the_guide_fetches)
{
    static const char *const sets[] = {"M=16384", "N=16384", "K=16384", "bm=512", "bn=512", "bk=1024"};
    pl_report rep;
    cr_assert_eq(run(sets, 6, 1, &rep, NULL), PL_OK, "%s", rep.error);
    cr_expect_eq(rep.steps, 32 * 32 * 16);
    cr_expect_eq(th_operand(&rep, "x")->copies, 528 * 16);
    cr_expect_eq(th_operand(&rep, "mask")->copies, 63, "the diagonal block and back, each row but the last, and the first");
}

Test(masked_matmul, a_block_that_does_not_divide_its_dimension_is_named)
{
    static const char *const sets[] = {"M=1000"};
    pl_report rep = {0};
    char msg[256];
    const pl_kernel_def *d = ex_kernel_find("masked_matmul");
    int64_t v[PL_KDEF_MAX_PARAMS];
    pl_kernel_defaults(d, v);
    cr_assert_eq(pl_kernel_set(d, v, sets[0], msg, sizeof msg), PL_OK);
    pl_options opt = {.chip = "v5e", .cost_only = 1};
    cr_assert_eq(pl_kernel_run(d, v, &opt, &rep, NULL, NULL), PL_EINVAL);
    cr_expect(strstr(rep.error, "bm = 256 must divide M = 1000"), "%s", rep.error);
}

/* Its tables are the definition's own (build gives their data) and it has
 * no inputs callback: verify, explain and the teaching page fill only the
 * arrays they allocate. They once filled every array, the tables too, and
 * the mask map read block 5 of 2 (B7). */
Test(masked_matmul, verify_explain_and_the_page_keep_the_definitions_tables, .timeout = 60)
{
    char page[] = "/tmp/tilesim_masked_XXXXXX";
    int fd = mkstemp(page);
    cr_assert_geq(fd, 0);
    close(fd);
    th_run r = TH_RUN("verify", "masked_matmul");
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    th_run_free(&r);
    r = TH_RUN("explain", "masked_matmul");
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    th_run_free(&r);
    r = TH_RUN("run", "masked_matmul", "--html", page);
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    th_run_free(&r);
    unlink(page);
}

/* One (16384, 16384) int32 mask block is 1 GiB: refused before any of it
 * is allocated, naming the blocks. */
Test(masked_matmul, a_mask_too_big_to_hold_is_refused_before_it_is_built)
{
    static const char *const sets[] = {"M=16384", "N=16384", "bm=16384", "bn=16384"};
    pl_report rep = {0};
    cr_assert_eq(run(sets, 4, 1, &rep, NULL), PL_EINVAL);
    cr_expect(strstr(rep.error, "(16384, 16384) int32 blocks take more than 512 MiB"), "%s", rep.error);
}

/* Blocks 8 rows tall and a whole row wide: each block row its own triangle,
 * 2^21 distinct blocks of 32 MiB. Refused once 16 have been met, at once,
 * not after a walk that compares each new block with every one before. */
Test(masked_matmul, many_distinct_mask_blocks_are_refused_early, .timeout = 10)
{
    static const char *const sets[] = {"M=16777216", "N=1048576", "bm=8", "bn=1048576"};
    pl_report rep = {0};
    cr_assert_eq(run(sets, 4, 1, &rep, NULL), PL_EINVAL);
    cr_expect(strstr(rep.error, "(16 of them at most fit in it)"), "%s", rep.error);
}
