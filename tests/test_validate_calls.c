/* tests/test_validate_calls.c: malformed calls (a NULL kernel, grid axes of
 * size 0, too many operands, unknown chips and dtypes, NULL data ...) are
 * rejected before anything runs, with a message naming what is wrong.
 *
 * A rejected call goes through both pl_validate and pl_pallas_call, which
 * must agree on the code and the message and run nothing (rejected() in
 * test_validate_helpers.h). Each test is named after the rule it checks.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "test_validate_helpers.h"

/* ---- malformed calls ----------------------------------------------------------- */

/* Run the 16x256 copy call after `mutate`, expecting validation to fail with
 * `code` and the given substrings. */
static void bad_call(void (*mutate)(pl_call *, th_io *, pl_options *), int code, const char *const *subs)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = th_copy_call_2d(16, 256, 8, 128);
    pl_options opt = {0};
    mutate(&call, &io, &opt);
    pl_report rep;
    int rc = rejected(&call, &io.a, &io.o, &opt, &rep);
    th_expect_error(rc, &rep, code, subs);
    cr_assert_eq(th_io_touched(&io), 0);
    th_io_free(&io);
}

/* MUTATOR(name, statement): a bad_call mutation of c (the call), io or o (options). */
#define MUTATOR(name, stmt)                                           \
    static void name(pl_call *c, th_io *io, pl_options *o)            \
    {                                                                 \
        (void)c, (void)io, (void)o;                                   \
        stmt;                                                         \
    }
MUTATOR(null_kernel, c->kernel = NULL)
MUTATOR(grid_0, c->grid[1] = 0)
MUTATOR(grid_neg, c->grid[0] = -2)
MUTATOR(grid_rank_7, c->grid_rank = PL_MAX_GRID + 1)
MUTATOR(bad_semantics, c->semantics[1] = (pl_semantics)7)
MUTATOR(many_inputs, c->n_in = PL_MAX_OPERANDS + 1)
MUTATOR(many_outputs, c->n_out = PL_MAX_OPERANDS + 1)
MUTATOR(many_scratch, c->n_scratch = PL_MAX_SCRATCH + 1)
MUTATOR(neg_prefetch, c->num_scalar_prefetch = -1)
MUTATOR(null_in_data, io->a.data = NULL)
MUTATOR(null_out_data, io->o.data = NULL)
MUTATOR(bad_chip, o->chip = "v99")
MUTATOR(bad_uninit, o->uninit = (pl_uninit)5)
MUTATOR(bad_in_dtype, io->a.dtype = (pl_dtype)42)
MUTATOR(bad_out_dtype, io->o.dtype = PL_DTYPE_COUNT)
MUTATOR(in_dim_0, io->a.shape[1] = 0)
MUTATOR(in_rank_7, io->a.rank = PL_MAX_RANK + 1)
MUTATOR(bad_scratch_dtype, c->n_scratch = 1; c->scratch[0] = PLTPU_VMEM((pl_dtype)-1, 8, 128))

Test(validate, call_NULL_kernel) { bad_call(null_kernel, PL_EINVAL, S("copy2d", "kernel is NULL")); }
Test(validate, call_grid_size_0) { bad_call(grid_0, PL_EINVAL, S("grid axis 1 has size 0", "rule G1")); }
Test(validate, call_grid_size_negative) { bad_call(grid_neg, PL_EINVAL, S("grid axis 0 has size -2")); }
Test(validate, call_grid_rank_above_max) { bad_call(grid_rank_7, PL_EINVAL, S("grid_rank 7")); }
Test(validate, call_unknown_semantics) { bad_call(bad_semantics, PL_EINVAL, S("grid axis 1", "semantics 7")); }
Test(validate, call_too_many_inputs) { bad_call(many_inputs, PL_EINVAL, S("operand counts", "in 17")); }
Test(validate, call_too_many_outputs) { bad_call(many_outputs, PL_EINVAL, S("operand counts", "out 17")); }
Test(validate, call_too_many_scratch) { bad_call(many_scratch, PL_EINVAL, S("operand counts", "scratch 17")); }
Test(validate, call_negative_prefetch_count) { bad_call(neg_prefetch, PL_EINVAL, S("prefetch -1")); }
Test(validate, call_NULL_input_data) { bad_call(null_in_data, PL_EINVAL, S("in0", "data is NULL")); }
Test(validate, call_NULL_output_data) { bad_call(null_out_data, PL_EINVAL, S("out0", "data is NULL")); }
Test(validate, call_unknown_chip) { bad_call(bad_chip, PL_EINVAL, S("unknown chip 'v99'", "v5e", "v7x")); }
Test(validate, call_unknown_uninit_option) { bad_call(bad_uninit, PL_EINVAL, S("uninit = 5", "rule V1")); }
Test(validate, call_unknown_input_dtype) { bad_call(bad_in_dtype, PL_EINVAL, S("in0", "unknown dtype 42")); }
Test(validate, call_unknown_output_dtype) { bad_call(bad_out_dtype, PL_EINVAL, S("out0", "unknown dtype 10")); }
Test(validate, call_unknown_scratch_dtype) { bad_call(bad_scratch_dtype, PL_EINVAL, S("scratch0", "unknown dtype -1")); }
Test(validate, call_array_dimension_0) { bad_call(in_dim_0, PL_EINVAL, S("in0", "dimension 1 has size 0")); }
Test(validate, call_array_rank_above_max) { bad_call(in_rank_7, PL_EINVAL, S("in0", "rank 7")); }

Test(validate, call_NULL_call)
{
    pl_report rep;
    int rc = pl_pallas_call(NULL, NULL, NULL, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "call is NULL");
    rc = pl_validate(NULL, NULL, NULL, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "call is NULL");
}

Test(validate, call_NULL_args_with_inputs)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = th_copy_call_2d(16, 256, 8, 128);
    pl_report rep;
    int rc = rejected(&call, NULL, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "copy2d", "args is NULL");
    rc = rejected(&call, &io.a, NULL, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "copy2d", "outs is NULL");
    cr_assert_eq(th_io_touched(&io), 0);
    th_io_free(&io);
}

Test(validate, call_NULL_report_and_options_are_allowed)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = th_copy_call_2d(16, 256, 8, 128);
    cr_assert_eq(pl_pallas_call(&call, &io.a, &io.o, NULL, NULL), PL_OK, "%s", pl_last_error());
    cr_assert_eq(th_f32_diff(io.in, io.out, io.n), 0);
    call.grid[0] = 0;
    cr_assert_eq(pl_pallas_call(&call, &io.a, &io.o, NULL, NULL), PL_EINVAL);
    cr_assert(strstr(pl_last_error(), "grid axis 0 has size 0"), "pl_last_error() = %s", pl_last_error());
    th_io_free(&io);
}
