/* tests/test_errors_verify.c: the error model, part three: the reference
 * checks (rule V5). pl_check_matmul reports a wrong or NaN result as
 * PL_EVERIFY and refuses bad arguments.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

/* ---- V5: reference checks ---------------------------------------------------- */

/* a (8, 16) @ b (16, 8) with small integers: exact in f32 whatever the order. */
typedef struct mm {
    float a[8 * 16], b[16 * 8], c[8 * 8];
    pl_array A, B, C;
} mm;

static void mm_init(mm *m)
{
    for (int i = 0; i < 8; i++)
        for (int k = 0; k < 16; k++) m->a[i * 16 + k] = (float)((i + 2 * k) % 5 - 2);
    for (int k = 0; k < 16; k++)
        for (int j = 0; j < 8; j++) m->b[k * 8 + j] = (float)((3 * k + j) % 7 - 3);
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++) {
            double s = 0;
            for (int k = 0; k < 16; k++) s += (double)m->a[i * 16 + k] * m->b[k * 8 + j];
            m->c[i * 8 + j] = (float)s;
        }
    m->A = PL_ARRAY(m->a, PL_F32, 8, 16);
    m->B = PL_ARRAY(m->b, PL_F32, 16, 8);
    m->C = PL_ARRAY(m->c, PL_F32, 8, 8);
}

Test(errors, EVERIFY_check_matmul_on_a_wrong_C)
{
    mm m;
    mm_init(&m);
    pl_check chk;
    cr_assert_eq(pl_check_matmul(&m.A, &m.B, &m.C, &chk, NULL), PL_OK, "the exact product must pass");
    cr_assert_eq(chk.verdict, PL_PASS);
    cr_assert_eq(chk.max_abs_err, 0.0);

    m.c[3 * 8 + 5] += 1.0f;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert(f);
    int rc = pl_check_matmul(&m.A, &m.B, &m.C, &chk, f);
    fclose(f);
    cr_assert_eq(rc, PL_EVERIFY);
    cr_assert(pl_strerror(PL_EVERIFY)[0]);
    cr_assert_eq(chk.verdict, PL_FAIL);
    cr_assert_eq(chk.worst_row, 3);
    cr_assert_eq(chk.worst_col, 5);
    cr_assert_float_eq(chk.max_abs_err, 1.0, 1e-9);
    cr_assert(strstr(text, "FAIL") && strstr(text, "worst at (3, 5)"), "verdict line: %s", text);
    free(text);
}

Test(errors, EVERIFY_check_matmul_on_a_NaN)
{
    mm m;
    mm_init(&m);
    m.c[7] = NAN;
    pl_check chk;
    cr_assert_eq(pl_check_matmul(&m.A, &m.B, &m.C, &chk, NULL), PL_EVERIFY);
    cr_assert_eq(chk.verdict, PL_FAIL);
    cr_assert_eq(chk.n_nan, 1);
}

Test(errors, check_matmul_bad_arguments)
{
    mm m;
    mm_init(&m);
    pl_array wrong = PL_ARRAY(m.c, PL_F32, 8, 4); /* c must be (8, 8) */
    cr_assert_eq(pl_check_matmul(&m.A, &m.B, &wrong, NULL, NULL), PL_ESHAPE);
    cr_assert_eq(pl_check_matmul(&m.A, &m.A, &m.C, NULL, NULL), PL_ESHAPE); /* k mismatch */
    cr_assert_eq(pl_check_matmul(&m.A, &m.B, NULL, NULL, NULL), PL_EINVAL);
    int32_t ints[64] = {0};
    pl_array ic = PL_ARRAY(ints, PL_I32, 8, 8);
    cr_assert_eq(pl_check_matmul(&m.A, &m.B, &ic, NULL, NULL), PL_EINVAL);
}
