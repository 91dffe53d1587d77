/* tests/test_timing_helpers.h: cost-only calls shared by the timing tests
 * (test_timing_model.c, test_timing_chips.c, test_timing_trace.c). Static
 * inline, as in helpers.h, so that a file may use only some of them. */
#ifndef TILESIM_TEST_TIMING_HELPERS_H
#define TILESIM_TEST_TIMING_HELPERS_H

#include <math.h>

#include "../examples/kernels/matmul.h"
#include "helpers.h"

/* A cost-only matmul report (no data). */
static inline pl_report matmul_cost(int64_t m, int64_t n, int64_t k, int64_t bm, int64_t bn, int64_t bk, pl_dtype dt,
                                    const char *chip, int64_t vmem_limit)
{
    mm_params p;
    pl_call call;
    mm_call(&call, &p, m, n, k, bm, bn, bk);
    call.vmem_limit_bytes = vmem_limit;
    pl_array args[2] = {PL_ARRAY(NULL, dt, m, k), PL_ARRAY(NULL, dt, k, n)};
    pl_array out = PL_ARRAY(NULL, dt, m, n);
    pl_options opt = {.chip = chip, .cost_only = 1};
    pl_report rep;
    int rc = pl_pallas_call(&call, args, &out, &opt, &rep);
    cr_assert_eq(rc, PL_OK, "%s", rep.error);
    return rep;
}

/* out = in, in (8*steps... ) blocks of (bm, bn) f32 over a (bm*steps, bn) array. */
static inline pl_report copy_cost(int64_t steps, int64_t bm, int64_t bn, const char *chip)
{
    pl_call call = th_copy_call_2d(bm * steps, bn, bm, bn);
    pl_array in = PL_ARRAY(NULL, PL_F32, bm * steps, bn), out = PL_ARRAY(NULL, PL_F32, bm * steps, bn);
    pl_options opt = {.chip = chip, .cost_only = 1};
    pl_report rep;
    int rc = pl_pallas_call(&call, &in, &out, &opt, &rep);
    cr_assert_eq(rc, PL_OK, "%s", rep.error);
    return rep;
}

static inline void assert_near(double got, double want, double rel, const char *what)
{
    cr_assert(fabs(got - want) <= rel * want, "%s: got %.6g, want %.6g within %.0f%%", what, got, want, 100 * rel);
}

#endif
