/* tests/test_pipeline_helpers.h: host arrays and a call that must succeed,
 * shared by the tests of what happens while a call runs (test_pipeline_*.c).
 * Static inline, as in helpers.h, so that a file may use only some of them. */
#ifndef TILESIM_TEST_PIPELINE_HELPERS_H
#define TILESIM_TEST_PIPELINE_HELPERS_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "../kernel/pallas.h"
#include "../sim/tilesim.h"

/* n f32 values 0, 1, 2, ... (exact up to 2^24). */
static inline float *f32_iota(int64_t n)
{
    float *p = malloc((size_t)n * sizeof *p);
    cr_assert_not_null(p);
    for (int64_t i = 0; i < n; i++) p[i] = (float)i;
    return p;
}

static inline float *f32_const(int64_t n, float v)
{
    float *p = malloc((size_t)n * sizeof *p);
    cr_assert_not_null(p);
    for (int64_t i = 0; i < n; i++) p[i] = v;
    return p;
}

static inline int count_nan_f32(const float *p, int64_t n)
{
    int k = 0;
    for (int64_t i = 0; i < n; i++) k += isnan(p[i]) != 0;
    return k;
}

static inline void run_ok(const pl_call *call, const pl_array *args, pl_array *outs, const pl_options *opt,
                          pl_report *rep)
{
    int rc = pl_pallas_call(call, args, outs, opt, rep);
    cr_assert_eq(rc, PL_OK, "pl_pallas_call returned %d (%s): %s", rc, pl_strerror(rc), rep->error);
    cr_assert_eq(rep->status, PL_OK);
}

/* A kernel that writes nothing: its outputs keep what they started as (P4, V1). */
static inline void p4_nothing_kernel(pl_ctx *c, pl_ref *refs)
{
    (void)c;
    (void)refs;
}

#endif
