/* tests/test_validate_helpers.h: what the tests of pl_pallas_call's checks
 * before it runs (test_validate_*.c) share: rejected(), probe calls and a
 * kernel that records its Refs. Static inline, as in helpers.h, so that a
 * file may use only some of them. */
#ifndef TILESIM_TEST_VALIDATE_HELPERS_H
#define TILESIM_TEST_VALIDATE_HELPERS_H

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

#define MiB (1024LL * 1024LL)
#define S(...) ((const char *const[]){__VA_ARGS__, NULL})

/* pl_validate, then pl_pallas_call, on a call that must fail validation: both
 * give the same code and message, and no grid point runs. Returns the code;
 * rep holds pl_pallas_call's report. */
static inline int rejected(const pl_call *call, const pl_array *args, pl_array *outs, const pl_options *opt,
                           pl_report *rep)
{
    pl_report v;
    int rv = pl_validate(call, args, outs, opt, &v);
    cr_assert_neq(rv, PL_OK, "pl_validate accepted the call");
    cr_assert_str_eq(pl_last_error(), v.error, "pl_validate did not set pl_last_error()");
    int rc = pl_pallas_call(call, args, outs, opt, rep);
    cr_assert_eq(rc, rv, "pl_pallas_call returned %d, pl_validate %d", rc, rv);
    cr_assert_str_eq(rep->error, v.error);
    cr_assert_eq(rep->steps, 0, "%lld grid points ran", (long long)rep->steps);
    return rc;
}

/* a with freshly allocated data (bytes i & 0x3f); free(a.data) after. */
static inline pl_array with_data(pl_array a)
{
    size_t bytes = pl_array_bytes(&a);
    unsigned char *p = malloc(bytes ? bytes : 1);
    cr_assert(p);
    for (size_t i = 0; i < bytes; i++) p[i] = (unsigned char)(i & 0x3f);
    a.data = p;
    return a;
}

/* Validate a call of th_noop_kernel on a (2, 2, 2) grid whose only input is
 * `arr` with `spec` and whose output is a legal whole f32 (8, 128) block.
 * When validation fails, rejected() also checks pl_pallas_call. */
static inline int check_input(pl_array arr, pl_block_spec spec, const pl_options *opt, pl_report *rep)
{
    pl_array in = with_data(arr), out = with_data(PL_ARRAY(NULL, PL_F32, 8, 128));
    pl_call call = {
        .name = "probe", .kernel = th_noop_kernel,
        .grid_rank = 3, .grid = {1, 1, 1}, /* one point: a probe must not run past any array (B7) */
        .n_in = 1, .in = {spec},
        .n_out = 1, .out = {{0}},
    };
    int rc = pl_validate(&call, &in, &out, opt, rep);
    if (rc != PL_OK) rc = rejected(&call, &in, &out, opt, rep);
    else cr_assert_str_empty(pl_last_error());
    free(in.data);
    free(out.data);
    return rc;
}

#define F32_16x256 PL_ARRAY(NULL, PL_F32, 16, 256)

/* Records the Refs of the kernel's first run and counts runs. */
typedef struct rec {
    int runs;
    int n_refs;     /* refs to record */
    pl_ref refs[8]; /* as the first run saw them */
    int src, dst;   /* each run: refs[dst] = refs[src]; src < 0: refs[dst] = 0 */
} rec;

static inline void rec_kernel(pl_ctx *c, pl_ref *refs)
{
    rec *r = pl_kernel_user(c);
    if (r->runs++ == 0) memcpy(r->refs, refs, (size_t)r->n_refs * sizeof *refs);
    if (r->src < 0) pl_fill(c, refs[r->dst], 0.0);
    else pl_copy(c, refs[r->dst], refs[r->src]);
}

static inline void assert_ref(const pl_ref *r, int arg, pl_role role, pl_memspace space, pl_dtype dt, int rank,
                              const int64_t *shape)
{
    cr_assert_eq(r->arg, arg, "refs[%d].arg = %d", arg, r->arg);
    cr_assert_eq(r->role, role, "refs[%d].role = %d, want %d", arg, r->role, role);
    cr_assert_eq(r->space, space, "refs[%d].space = %s", arg, pl_memspace_name(r->space));
    cr_assert_eq(r->dtype, dt, "refs[%d].dtype = %s", arg, pl_dtype_name(r->dtype));
    cr_assert_eq(r->rank, rank, "refs[%d].rank = %d, want %d", arg, r->rank, rank);
    for (int d = 0; d < rank; d++)
        cr_assert_eq(r->shape[d], shape[d], "refs[%d].shape[%d] = %lld, want %lld", arg, d, (long long)r->shape[d],
                     (long long)shape[d]);
}

#endif
