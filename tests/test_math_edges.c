/* tests/test_math_edges.c: the softmax ops of kernel/math.c at their edges:
 * NaN, infinities, empty rows and diagonals at INT64_MIN / INT64_MAX; their
 * faults (PL_ESHAPE, PL_EDTYPE, PL_ESPACE) and messages; and what they tell
 * the checks (writes into an input block, reads of unwritten scratch).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../kernel/pallas.h"
#include "../sim/tilesim.h"
#include "helpers.h"

/* ---- edge values --------------------------------------------------------------------- */

/* The kernel works on VMEM scratch and reports through this. */
typedef struct edge_out {
    double max_nan, max_inf, max_empty, sum_empty;
    double tril_below, tril_above, tril_min; /* tril with k = -5, INT64_MAX, INT64_MIN */
    double strict[4][4];                     /* tril with k = -1 */
} edge_out;

static void edge_kernel(pl_ctx *c, pl_ref *refs)
{
    edge_out *e = pl_kernel_user(c);
    pl_ref x = refs[0], col = refs[1];
    pl_fill(c, x, 1.0);
    pl_set_at(c, x, NAN, 0, 2);                  /* row 0: a NaN among finite values */
    pl_set_at(c, x, 5.0, 0, 3);                  /* a larger value after the NaN: still NaN */
    pl_fill(c, pl_ds(c, x, 0, 1, 1), -INFINITY); /* row 1: all -inf */
    pl_max_rows(c, col, x);
    e->max_nan = pl_get_at(c, col, 0, 0);
    e->max_inf = pl_get_at(c, col, 1, 0);
    pl_ref empty = pl_ds(c, x, 1, 0, 0); /* (4, 0): the max of nothing is -inf, the sum 0 */
    pl_max_rows(c, col, empty);
    e->max_empty = pl_get_at(c, col, 3, 0);
    pl_sum_rows(c, col, empty);
    e->sum_empty = pl_get_at(c, col, 3, 0);
    pl_max_rows(c, pl_ds(c, col, 0, 0, 0), pl_ds(c, x, 0, 0, 0)); /* (0, 4): no rows, nothing to do */

    pl_fill(c, x, 2.0);
    pl_tril(c, x, x, -5, 0.0); /* below the last row: everything masked */
    e->tril_below = pl_get_at(c, x, 3, 0);
    pl_fill(c, x, 2.0);
    pl_tril(c, x, x, INT64_MAX, 0.0); /* nothing masked, no overflow */
    e->tril_above = pl_get_at(c, x, 0, 3);
    pl_tril(c, x, x, INT64_MIN, 0.0);
    e->tril_min = pl_get_at(c, x, 3, 0);
    pl_fill(c, x, 2.0);
    pl_tril(c, x, x, -1, 0.0); /* strictly lower */
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) e->strict[i][j] = pl_get_at(c, x, i, j);
}

/* Run edge_kernel on a (4, 4) and a (4, 1) scratch. */
static edge_out run_edges(void)
{
    static edge_out e;
    memset(&e, 0, sizeof e);
    pl_call call = {.name = "edges", .kernel = edge_kernel, .user = &e, .n_scratch = 2,
                    .scratch = {PLTPU_VMEM(PL_F32, 4, 4), PLTPU_VMEM(PL_F32, 4, 1)}};
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, NULL, NULL, NULL, &rep), &rep);
    return e;
}

Test(math, max_propagates_nan_and_empty_rows_reduce_to_identities)
{
    edge_out e = run_edges();
    cr_expect(isnan(e.max_nan), "max of a row with a NaN is %g", e.max_nan);
    cr_expect(isinf(e.max_inf) && e.max_inf < 0, "max of an all -inf row is %g", e.max_inf);
    cr_expect(isinf(e.max_empty) && e.max_empty < 0, "max of an empty row is %g, want -inf", e.max_empty);
    cr_expect_eq(e.sum_empty, 0.0);
}

Test(math, tril_masks_above_diagonal_k_without_overflow)
{
    edge_out e = run_edges();
    cr_expect_eq(e.tril_below, 0.0, "tril(k = -5) at (3, 0) is %g", e.tril_below);
    cr_expect_eq(e.tril_above, 2.0, "tril(k = INT64_MAX) at (0, 3) is %g", e.tril_above);
    cr_expect_eq(e.tril_min, 0.0, "tril(k = INT64_MIN) at (3, 0) is %g", e.tril_min);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            cr_expect_eq(e.strict[i][j], j < i ? 2.0 : 0.0, "tril(k = -1) at (%d, %d) is %g", i, j, e.strict[i][j]);
}

/* ---- faults ---------------------------------------------------------------------------- */

typedef enum {
    BAD_SUB_SHAPES, BAD_SUB_COL_SHAPE, BAD_ADD_ROW_SHAPE, BAD_MAX_ROWS_DST, BAD_SUM_ROWS_RANK, BAD_TRIL_RANK,
    BAD_EXP_INT, BAD_DIV_COL_INT, BAD_SCALE_SMEM, BAD_MUL_COL_ANY, BAD_EXP_DST_SHAPE,
} bad_kind;

static void bad_kernel(pl_ctx *c, pl_ref *refs)
{
    const bad_kind *k = pl_kernel_user(c);
    pl_ref any = refs[0], x = refs[1], y = refs[2], col = refs[3], i32 = refs[4], smem = refs[5], x3 = refs[6];
    switch (*k) {
    case BAD_SUB_SHAPES: pl_sub(c, x, x, y); break;                             /* (16, 128) - (8, 128) */
    case BAD_SUB_COL_SHAPE: pl_sub_col(c, x, x, pl_ds(c, x, 1, 0, 2)); break;  /* col (16, 2) */
    case BAD_ADD_ROW_SHAPE: pl_add_row(c, x, x, pl_ds(c, x, 0, 0, 2)); break;  /* row (2, 128) */
    case BAD_MAX_ROWS_DST: pl_max_rows(c, y, x); break;                        /* dst (8, 128) */
    case BAD_SUM_ROWS_RANK: pl_sum_rows(c, col, x3); break;                    /* src rank 3 */
    case BAD_TRIL_RANK: pl_tril(c, x3, x3, 0, 0.0); break;
    case BAD_EXP_INT: pl_exp(c, x, i32); break;
    case BAD_DIV_COL_INT: pl_div_col(c, x, x, pl_ds(c, i32, 1, 0, 1)); break;
    case BAD_SCALE_SMEM: pl_scale(c, smem, smem, 2.0); break;
    case BAD_MUL_COL_ANY: pl_mul_col(c, x, x, any); break;
    case BAD_EXP_DST_SHAPE: pl_exp(c, col, x); break;
    }
}

/* Run bad_kernel with refs: an ANY input (16, 1), then scratch x (16, 128),
 * y (8, 128), col (16, 1), i32 (16, 128), SMEM (16, 1) f32, x3 (2, 8, 128). */
static int run_bad(bad_kind k, pl_report *rep)
{
    static bad_kind kind;
    kind = k;
    static float any_data[16];
    pl_call call = {
        .name = "bad", .kernel = bad_kernel, .user = &kind, .n_in = 1, .n_scratch = 6,
        .scratch = {PLTPU_VMEM(PL_F32, 16, 128), PLTPU_VMEM(PL_F32, 8, 128), PLTPU_VMEM(PL_F32, 16, 1),
                    PLTPU_VMEM(PL_I32, 16, 128), PLTPU_SMEM(PL_F32, 16, 1), PLTPU_VMEM(PL_F32, 2, 8, 128)},
    };
    call.in[0].space = PL_ANY;
    pl_array any = PL_ARRAY(any_data, PL_F32, 16, 1);
    return pl_pallas_call(&call, &any, NULL, NULL, rep);
}

/* Each misuse, its code, and what its message must say. */
static const struct {
    bad_kind kind;
    int code;
    const char *subs[7]; /* NULL-terminated */
} BAD[] = {
    {BAD_SUB_SHAPES, PL_ESHAPE,
     {"kernel bad at grid point ()", "pl_sub", "refs[1] (scratch", "(16, 128)", "refs[2] (scratch", "(8, 128)"}},
    {BAD_SUB_COL_SHAPE, PL_ESHAPE,
     {"pl_sub_col", "(16, 2)", "a column broadcast across refs[1]", "must have shape (16, 1)"}},
    {BAD_ADD_ROW_SHAPE, PL_ESHAPE, {"pl_add_row", "(2, 128)", "a row broadcast across", "must have shape (1, 128)"}},
    {BAD_MAX_ROWS_DST, PL_ESHAPE, {"pl_max_rows", "refs[2] (scratch", "(8, 128)", "keepdims", "(16, 1)"}},
    {BAD_SUM_ROWS_RANK, PL_ESHAPE, {"pl_sum_rows", "refs[6] (scratch", "rank 3", "rank-2"}},
    {BAD_TRIL_RANK, PL_ESHAPE, {"pl_tril", "rank 3"}},
    {BAD_EXP_DST_SHAPE, PL_ESHAPE, {"pl_exp", "refs[3] (scratch", "(16, 1)", "(16, 128)"}},
    {BAD_EXP_INT, PL_EDTYPE, {"pl_exp on refs[4] (scratch, VMEM i32)", "float"}},
    {BAD_DIV_COL_INT, PL_EDTYPE, {"pl_div_col on refs[4]", "i32"}},
    {BAD_SCALE_SMEM, PL_ESPACE, {"pl_scale on refs[5]", "SMEM", "pl_get / pl_set", "rule M1"}},
    {BAD_MUL_COL_ANY, PL_ESPACE, {"pl_mul_col on refs[0] (input", "ANY", "rule M1"}},
};

Test(math, faults_name_the_op_the_refs_and_their_shapes)
{
    for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++) {
        pl_report rep;
        int rc = run_bad(BAD[i].kind, &rep);
        cr_expect_eq(rc, BAD[i].code, "case %zu (%s): returned %d, want %d", i, BAD[i].subs[0], rc, BAD[i].code);
        th_expect_error(rc, &rep, BAD[i].code, BAD[i].subs);
    }
}

/* ---- what the checks see -------------------------------------------------------------- */

static void write_input_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_scale(c, refs[0], refs[0], 2.0); /* into the input block: never reaches HBM (V3) */
    pl_copy(c, refs[1], refs[0]);
}

Test(math, writes_into_an_input_block_are_noted)
{
    th_io io = th_io_2d(8, 128);
    pl_call call = {.name = "wi", .kernel = write_input_kernel, .n_in = 1, .n_out = 1};
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), &rep);
    cr_assert_eq(rep.n_findings, 1);
    cr_expect_eq(rep.findings[0].kind, PL_FIND_INPUT_WRITE);
    cr_expect(strstr(rep.findings[0].msg, "pl_scale"), "finding: %s", rep.findings[0].msg);
    pl_options strict = {.strict = 1};
    int rc = pl_pallas_call(&call, &io.a, &io.o, &strict, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EREADONLY, "pl_scale writes into refs[0] (input", "rule V3");
    th_io_free(&io);
}

static void uninit_read_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_ref col = refs[2];                  /* scratch (8, 1), never written */
    pl_sub_col(c, refs[1], refs[0], col);  /* reads poison: NaN reaches HBM */
}

Test(math, reads_of_unwritten_scratch_explain_the_nan)
{
    th_io io = th_io_2d(8, 128);
    pl_call call = {.name = "ur", .kernel = uninit_read_kernel, .n_in = 1, .n_out = 1, .n_scratch = 1,
                    .scratch = {PLTPU_VMEM(PL_F32, 8, 1)}};
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), &rep);
    cr_assert_eq(rep.n_findings, 1);
    cr_expect_eq(rep.findings[0].kind, PL_FIND_POISON);
    cr_expect(strstr(rep.findings[0].msg, "pl_sub_col read refs[2] (scratch"), "finding: %s", rep.findings[0].msg);
    th_io_free(&io);
}
