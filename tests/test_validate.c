/* tests/test_validate.c: everything pl_pallas_call checks before it runs
 * anything (PALLAS.md rules B1-B3, T1-T7, M3, M4, P6, P7) and malformed
 * calls. Each test is named after the rule it checks.
 *
 * A rejected call goes through both pl_validate and pl_pallas_call, which
 * must agree on the code and the message and run nothing (rejected()).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

#define MiB (1024LL * 1024LL)
#define S(...) ((const char *const[]){__VA_ARGS__, NULL})

/* ---- helpers ---------------------------------------------------------------- */

/* pl_validate, then pl_pallas_call, on a call that must fail validation: both
 * give the same code and message, and no grid point runs. Returns the code;
 * rep holds pl_pallas_call's report. */
static int rejected(const pl_call *call, const pl_array *args, pl_array *outs, const pl_options *opt,
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
static pl_array with_data(pl_array a)
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
static int check_input(pl_array arr, pl_block_spec spec, const pl_options *opt, pl_report *rep)
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

static void rec_kernel(pl_ctx *c, pl_ref *refs)
{
    rec *r = pl_kernel_user(c);
    if (r->runs++ == 0) memcpy(r->refs, refs, (size_t)r->n_refs * sizeof *refs);
    if (r->src < 0) pl_fill(c, refs[r->dst], 0.0);
    else pl_copy(c, refs[r->dst], refs[r->src]);
}

static void assert_ref(const pl_ref *r, int arg, pl_role role, pl_memspace space, pl_dtype dt, int rank,
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

/* ---- B1: a block has the array's rank --------------------------------------------- */

Test(validate, B1_block_rank_below_array_rank)
{
    pl_report rep;
    int rc = check_input(F32_16x256, PL_BLOCK(PL_MAP(0), 8), NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "in0", "(8)", "(16, 256)", "rank 1", "rank 2", "rule B1");
}

Test(validate, B1_block_rank_above_array_rank)
{
    pl_report rep;
    int rc = check_input(F32_16x256, PL_BLOCK(PL_MAP(0, 1, 2), 1, 8, 128), NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "in0", "(1, 8, 128)", "(16, 256)", "rule B1");
}

Test(validate, B1_block_dimension_of_size_0)
{
    pl_report rep;
    int rc = check_input(F32_16x256, PL_BLOCK(PL_MAP(0, 1), 0, 128), NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "in0", "(0, 128)", "dimension 0", "rule B1");
}

Test(validate, B1_output_block_rank_mismatch_names_the_output)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = th_copy_call_2d(16, 256, 8, 128);
    call.out[0] = PL_BLOCK(PL_MAP(0), 8);
    pl_report rep;
    int rc = rejected(&call, &io.a, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "out0", "(8)", "(16, 256)", "rule B1");
    th_io_free(&io);
}

/* A spec whose rank exceeds PL_MAX_RANK must be rejected without reading past
 * block[PL_MAX_RANK - 1] (the message formatting must not either). */
Test(validate, B1_block_rank_above_PL_MAX_RANK)
{
    pl_block_spec spec = PL_BLOCK(PL_MAP(0, 1), 8, 128);
    spec.rank = PL_MAX_RANK + 1;
    pl_report rep;
    int rc = check_input(F32_16x256, spec, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "in0", "(16, 256)", "rule B1");
}

/* ---- B2: the index map returns one block index per array dimension ---------------- */

Test(validate, B2_map_with_too_few_entries)
{
    pl_report rep;
    int rc = check_input(F32_16x256, PL_BLOCK(PL_MAP(0), 8, 128), NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINDEXMAP, "in0", "returns 1 indices", "rank 2", "rule B2");
}

Test(validate, B2_map_with_too_many_entries)
{
    pl_report rep;
    int rc = check_input(F32_16x256, PL_BLOCK(PL_MAP(0, 1, 2), 8, 128), NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINDEXMAP, "in0", "returns 3 indices", "rank 2", "rule B2");
}

Test(validate, B2_map_axis_beyond_grid_rank)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = th_copy_call_2d(16, 256, 8, 128); /* grid rank 2 */
    call.in[0].map = PL_MAP(0, 2);
    pl_report rep;
    int rc = rejected(&call, &io.a, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINDEXMAP, "in0", "entry 1", "grid axis 2", "2 axes", "rule B2");
    th_io_free(&io);
}

Test(validate, B2_map_negative_axis_other_than_PL_ZERO)
{
    pl_report rep;
    int rc = check_input(F32_16x256, PL_BLOCK(PL_MAP(0, -3), 8, 128), NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINDEXMAP, "in0", "grid axis -3", "rule B2");
}

Test(validate, B2_map_on_rank0_grid_naming_an_axis)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = th_copy_call_2d(16, 256, 16, 256);
    call.grid_rank = 0;
    pl_report rep;
    int rc = rejected(&call, &io.a, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINDEXMAP, "in0", "grid axis 0", "0 axes", "rule B2");
    th_io_free(&io);
}

Test(validate, B2_map_with_n_0_but_axes_set)
{
    pl_block_spec spec = {.rank = 2, .block = {8, 128}, .map = {.axis = {0, 1}}};
    pl_report rep;
    int rc = check_input(F32_16x256, spec, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINDEXMAP, "in0", "n = 0", "rule B2");
}

/* ---- B3: no block shape = whole array, no map = all zeros ---------------------- */

Test(validate, B3_rank0_spec_means_whole_array_copied_once)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = {
        .name = "whole", .kernel = th_copy_kernel,
        .grid_rank = 1, .grid = {3},
        .n_in = 1, .in = {{0}},
        .n_out = 1, .out = {{0}},
    };
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), &rep);
    cr_assert_eq(th_f32_diff(io.in, io.out, io.n), 0);
    cr_assert_eq(rep.steps, 3);
    for (int i = 0; i < 2; i++) {
        const pl_operand_report *o = &rep.op[i];
        cr_assert_eq(o->rank, 2);
        cr_assert_eq(o->block[0], 16, "%s block[0] = %lld", o->name, (long long)o->block[0]);
        cr_assert_eq(o->block[1], 256, "%s block[1] = %lld", o->name, (long long)o->block[1]);
        cr_assert_eq(o->block_bytes, 16 * 256 * 4);
    }
    cr_assert_eq(rep.op[0].copies, 1, "in0 copied %lld times", (long long)rep.op[0].copies);
    cr_assert_eq(rep.op[0].skipped, 2);
    cr_assert_eq(rep.op[1].writebacks, 1, "out0 written back %lld times", (long long)rep.op[1].writebacks);
    th_io_free(&io);
}

Test(validate, B3_zero_map_means_block_0_at_every_grid_point)
{
    th_io io = th_io_2d(16, 256);
    pl_block_spec spec = {.rank = 2, .block = {8, 128}}; /* map left {0} */
    pl_call call = {
        .name = "zero_map", .kernel = th_copy_kernel,
        .grid_rank = 2, .grid = {2, 2},
        .n_in = 1, .in = {spec},
        .n_out = 1, .out = {spec},
    };
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), &rep);
    for (int64_t i = 0; i < 16; i++)
        for (int64_t j = 0; j < 256; j++) {
            float want = i < 8 && j < 128 ? io.in[i * 256 + j] : TH_SENTINEL;
            cr_assert_eq(io.out[i * 256 + j], want, "out[%lld, %lld] = %g, want %g", (long long)i, (long long)j,
                         io.out[i * 256 + j], want);
        }
    cr_assert_eq(rep.steps, 4);
    cr_assert_eq(rep.op[0].copies, 1);
    cr_assert_eq(rep.op[0].skipped, 3);
    cr_assert_eq(rep.op[1].writebacks, 1);
    th_io_free(&io);
}

/* ---- T1: the (8,128) rule ------------------------------------------------------- */

Test(validate, T1_last_dim_not_multiple_of_128)
{
    pl_report rep;
    int rc = check_input(F32_16x256, PL_BLOCK(PL_MAP(0, 1), 8, 64), NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "in0", "(8, 64)", "(16, 256)", "last block dimension 64",
                    "multiple of 128", "rule T1");
}

Test(validate, T1_last_dim_multiple_of_128_is_legal)
{
    pl_report rep;
    th_expect_ok(check_input(F32_16x256, PL_BLOCK(PL_MAP(0, 1), 8, 128), NULL, &rep), &rep);
    th_expect_ok(check_input(PL_ARRAY(NULL, PL_F32, 16, 384), PL_BLOCK(PL_MAP(0, 1), 8, 256), NULL, &rep), &rep);
}

Test(validate, T1_last_dim_equal_to_array_dim_is_legal)
{
    th_io io = th_io_2d(16, 200);
    pl_call call = th_copy_call_2d(16, 200, 8, 200);
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), &rep);
    cr_assert_eq(th_f32_diff(io.in, io.out, io.n), 0);
    th_io_free(&io);
}

Test(validate, T1_last_dim_equal_to_another_dim_is_not_enough)
{
    pl_report rep; /* 16 equals the array's second-last dim, not its last */
    int rc = check_input(F32_16x256, PL_BLOCK(PL_MAP(0, 1), 8, 16), NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "last block dimension 16", "rule T1");
}

Test(validate, T1_second_last_dim_not_multiple_of_8)
{
    pl_report rep;
    int rc = check_input(F32_16x256, PL_BLOCK(PL_MAP(0, 1), 4, 128), NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "in0", "(4, 128)", "(16, 256)", "second-last block dimension 4",
                    "multiple of 8", "rule T1");
}

Test(validate, T1_second_last_dim_equal_to_array_dim_is_legal)
{
    th_io io = th_io_2d(12, 256);
    pl_call call = th_copy_call_2d(12, 256, 12, 128);
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), &rep);
    cr_assert_eq(th_f32_diff(io.in, io.out, io.n), 0);
    th_io_free(&io);
}

Test(validate, T1_second_last_dim_multiple_of_8_is_legal)
{
    pl_report rep;
    th_expect_ok(check_input(PL_ARRAY(NULL, PL_F32, 32, 256), PL_BLOCK(PL_MAP(0, 1), 16, 128), NULL, &rep), &rep);
    th_expect_ok(check_input(PL_ARRAY(NULL, PL_F32, 12, 200), PL_BLOCK(PL_MAP(0, 1), 16, 256), NULL, &rep), &rep);
}

Test(validate, T1_squeezed_last_dim_counts_as_1)
{
    pl_report rep;
    int rc = check_input(F32_16x256, PL_BLOCK(PL_MAP(0, 1), 8, PL_SQUEEZED), NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "in0", "(8, squeezed)", "last block dimension 1 (squeezed)",
                    "rule T1");
}

Test(validate, T1_squeezed_second_last_dim_counts_as_1)
{
    pl_report rep;
    int rc = check_input(PL_ARRAY(NULL, PL_F32, 16, 4, 256), PL_BLOCK(PL_MAP(0, 1, 2), 8, PL_SQUEEZED, 128),
                         NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "in0", "(8, squeezed, 128)", "(16, 4, 256)",
                    "second-last block dimension 1 (squeezed)", "rule T1");
}

Test(validate, T1_squeezed_dim_over_array_dim_1_is_legal)
{
    pl_report rep;
    th_expect_ok(check_input(PL_ARRAY(NULL, PL_F32, 16, 1, 256), PL_BLOCK(PL_MAP(0, 1, 2), 8, PL_SQUEEZED, 128),
                             NULL, &rep),
                 &rep);
}

Test(validate, T1_squeezed_leading_dim_is_legal_and_dropped_from_the_ref)
{
    float *in = th_f32_seq(4 * 16 * 256), *out = th_f32_fill(4 * 16 * 256, TH_SENTINEL);
    pl_array a = PL_ARRAY(in, PL_F32, 4, 16, 256), o = PL_ARRAY(out, PL_F32, 4, 16, 256);
    rec r = {.n_refs = 2, .src = 0, .dst = 1};
    pl_call call = {
        .name = "squeeze", .kernel = rec_kernel, .user = &r,
        .grid_rank = 3, .grid = {4, 2, 2},
        .n_in = 1, .in = {PL_BLOCK(PL_MAP(0, 1, 2), PL_SQUEEZED, 8, 128)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, 1, 2), PL_SQUEEZED, 8, 128)},
    };
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &a, &o, NULL, &rep), &rep);
    cr_assert_eq(th_f32_diff(in, out, 4 * 16 * 256), 0);
    cr_assert_eq(r.runs, 16);
    assert_ref(&r.refs[0], 0, PL_ROLE_IN, PL_VMEM, PL_F32, 2, (const int64_t[]){8, 128});
    assert_ref(&r.refs[1], 1, PL_ROLE_OUT, PL_VMEM, PL_F32, 2, (const int64_t[]){8, 128});
    free(in);
    free(out);
}

Test(validate, T1_does_not_depend_on_dtype)
{
    static const pl_dtype dts[] = {PL_F32, PL_BF16, PL_F16, PL_I32, PL_I8};
    for (size_t i = 0; i < sizeof dts / sizeof *dts; i++) {
        pl_array arr = PL_ARRAY(NULL, dts[i], 32, 256);
        pl_report rep;
        int rc = check_input(arr, PL_BLOCK(PL_MAP(0, 1), 8, 128), NULL, &rep);
        cr_assert_eq(rc, PL_OK, "%s (8, 128): %s", pl_dtype_name(dts[i]), rep.error);
        rc = check_input(arr, PL_BLOCK(PL_MAP(0, 1), 8, 64), NULL, &rep);
        cr_assert_eq(rc, PL_EBLOCKSHAPE, "%s (8, 64) returned %d", pl_dtype_name(dts[i]), rc);
        rc = check_input(arr, PL_BLOCK(PL_MAP(0, 1), 4, 128), NULL, &rep);
        cr_assert_eq(rc, PL_EBLOCKSHAPE, "%s (4, 128) returned %d", pl_dtype_name(dts[i]), rc);
        /* 16 rows is a multiple of 8 even where the native tile is 32 rows (T6) */
        rc = check_input(arr, PL_BLOCK(PL_MAP(0, 1), 16, 128), NULL, &rep);
        cr_assert_eq(rc, PL_OK, "%s (16, 128): %s", pl_dtype_name(dts[i]), rep.error);
    }
}

Test(validate, T1_applies_to_outputs)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = th_copy_call_2d(16, 256, 8, 128);
    call.out[0] = PL_BLOCK(PL_MAP(0, 1), 8, 100);
    pl_report rep;
    int rc = rejected(&call, &io.a, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "out0", "(8, 100)", "(16, 256)", "rule T1");
    th_io_free(&io);
}

/* ---- T2: rank-1 blocks ----------------------------------------------------------- */

Test(validate, T2_rank1_equal_to_array_size_is_legal)
{
    float *in = th_f32_seq(100), *out = th_f32_fill(100, TH_SENTINEL);
    pl_array a = PL_ARRAY(in, PL_F32, 100), o = PL_ARRAY(out, PL_F32, 100);
    pl_call call = {
        .name = "vec", .kernel = th_copy_kernel,
        .grid_rank = 1, .grid = {1},
        .n_in = 1, .in = {PL_BLOCK(PL_MAP(0), 100)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(0), 100)},
    };
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &a, &o, NULL, &rep), &rep);
    cr_assert_eq(th_f32_diff(in, out, 100), 0);
    free(in);
    free(out);
}

Test(validate, T2_rank1_multiple_of_1024_is_legal)
{
    pl_report rep;
    pl_array arr = PL_ARRAY(NULL, PL_I8, 8192);
    th_expect_ok(check_input(arr, PL_BLOCK(PL_MAP(0), 1024), NULL, &rep), &rep);
    th_expect_ok(check_input(arr, PL_BLOCK(PL_MAP(0), 3072), NULL, &rep), &rep); /* not a power of two */
}

Test(validate, T2_rank1_power_of_two_minimum_depends_on_dtype)
{
    static const struct { pl_dtype dt; int64_t min; } cases[] = {
        {PL_F32, 128}, {PL_I32, 128}, {PL_BF16, 256}, {PL_F16, 256}, {PL_I8, 512},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        pl_array arr = PL_ARRAY(NULL, cases[i].dt, 4096);
        const char *dt = pl_dtype_name(cases[i].dt);
        char min[32];
        snprintf(min, sizeof min, ">= %lld", (long long)cases[i].min);
        pl_report rep;
        int rc = check_input(arr, PL_BLOCK(PL_MAP(0), cases[i].min), NULL, &rep);
        cr_assert_eq(rc, PL_OK, "%s block %lld: %s", dt, (long long)cases[i].min, rep.error);
        rc = check_input(arr, PL_BLOCK(PL_MAP(0), 2 * cases[i].min), NULL, &rep);
        cr_assert_eq(rc, PL_OK, "%s block %lld: %s", dt, (long long)(2 * cases[i].min), rep.error);
        rc = check_input(arr, PL_BLOCK(PL_MAP(0), cases[i].min / 2), NULL, &rep);
        TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "in0", dt, "(4096)", min, "rule T2");
    }
}

Test(validate, T2_rank1_not_power_of_two_below_1024_is_illegal)
{
    pl_report rep;
    int rc = check_input(PL_ARRAY(NULL, PL_F32, 4096), PL_BLOCK(PL_MAP(0), 384), NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "in0", "rank-1 block (384)", "f32 array (4096)", "multiple of 1024",
                    "power of two >= 128", "rule T2");
    rc = check_input(PL_ARRAY(NULL, PL_F32, 4096), PL_BLOCK(PL_MAP(0), 1000), NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "(1000)", "rule T2");
}

Test(validate, T2_rank1_legal_block_runs)
{
    float *in = th_f32_seq(1024), *out = th_f32_fill(1024, TH_SENTINEL);
    pl_array a = PL_ARRAY(in, PL_F32, 1024), o = PL_ARRAY(out, PL_F32, 1024);
    pl_call call = {
        .name = "vec", .kernel = th_copy_kernel,
        .grid_rank = 1, .grid = {4},
        .n_in = 1, .in = {PL_BLOCK(PL_MAP(0), 256)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(0), 256)},
    };
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &a, &o, NULL, &rep), &rep);
    cr_assert_eq(th_f32_diff(in, out, 1024), 0);
    cr_assert_eq(rep.op[0].copies, 4);
    free(in);
    free(out);
}

/* ---- T3: rank-0 blocks ------------------------------------------------------------ */

Test(validate, T3_rank0_array_in_vmem_is_an_error)
{
    pl_report rep;
    pl_array scalar = {.dtype = PL_F32, .rank = 0};
    int rc = check_input(scalar, (pl_block_spec){0}, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "in0", "rank-0", "rule T3");
}

Test(validate, T3_rank0_output_in_vmem_is_an_error)
{
    int32_t x = 0; /* a legal SMEM input, so that the output is what fails */
    float y = TH_SENTINEL;
    pl_array in = {.data = &x, .dtype = PL_I32, .rank = 0}, out = {.data = &y, .dtype = PL_F32, .rank = 0};
    pl_call call = {
        .name = "scalar", .kernel = th_noop_kernel,
        .n_in = 1, .in = {{.space = PL_SMEM}},
        .n_out = 1, .out = {{0}},
    };
    pl_report rep;
    int rc = rejected(&call, &in, &out, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "out0", "rank-0", "rule T3");
    cr_assert_eq(y, TH_SENTINEL);
}

/* ---- T4: SMEM ---------------------------------------------------------------------- */

static void scalar_to_block_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_fill(c, refs[1], pl_get(c, refs[0], (const int64_t[]){0}));
}

Test(validate, T4_smem_rank0_whole_array_is_exempt)
{
    int32_t x = 42;
    float *out = th_f32_fill(8 * 128, TH_SENTINEL);
    pl_array in = {.data = &x, .dtype = PL_I32, .rank = 0}, o = PL_ARRAY(out, PL_F32, 8, 128);
    pl_call call = {
        .name = "smem_scalar", .kernel = scalar_to_block_kernel,
        .n_in = 1, .in = {{.space = PL_SMEM}},
        .n_out = 1, .out = {{0}},
    };
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &in, &o, NULL, &rep), &rep);
    for (int i = 0; i < 8 * 128; i++) cr_assert_eq(out[i], 42.0f, "out[%d] = %g", i, out[i]);
    cr_assert_eq(rep.op[0].space, PL_SMEM);
    cr_assert_eq(rep.smem_bytes, 4);
    cr_assert_eq(rep.vmem_bytes, 8 * 128 * 4, "the SMEM operand counted in VMEM: %lld", (long long)rep.vmem_bytes);
    free(out);
}

Test(validate, T4_smem_whole_array_is_exempt_and_counts_as_smem)
{
    pl_report rep;
    pl_block_spec whole = {.space = PL_SMEM};
    th_expect_ok(check_input(PL_ARRAY(NULL, PL_I32, 3, 5), whole, NULL, &rep), &rep);
    cr_assert_eq(rep.op[0].buffers, 1);
    cr_assert_eq(rep.smem_bytes, 3 * 5 * 4);
    cr_assert_eq(rep.vmem_bytes, 8 * 128 * 4);
    cr_assert_eq(rep.n_warnings, 0, "%s", rep.warnings);
}

Test(validate, T4_partial_smem_block_follows_T1)
{
    pl_array arr = PL_ARRAY(NULL, PL_I32, 16, 256);
    pl_block_spec spec = PL_BLOCK(PL_MAP(0, 1), 8, 64);
    spec.space = PL_SMEM;
    pl_report rep;
    int rc = check_input(arr, spec, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "in0", "(8, 64)", "(16, 256)", "rule T1");

    spec = PL_BLOCK(PL_MAP(0, 1), 1, 256);
    spec.space = PL_SMEM;
    rc = check_input(arr, spec, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "in0", "(1, 256)", "second-last block dimension 1", "rule T1");

    spec = PL_BLOCK(PL_MAP(0, 1), 8, 128);
    spec.space = PL_SMEM;
    th_expect_ok(check_input(arr, spec, NULL, &rep), &rep);
    cr_assert_eq(rep.smem_bytes, 2 * 8 * 128 * 4);
}

/* ---- T5: ANY takes no blocking --------------------------------------------------- */

Test(validate, T5_any_partial_block_is_an_error)
{
    pl_block_spec spec = PL_BLOCK(PL_MAP(0, 1), 8, 128);
    spec.space = PL_ANY;
    pl_report rep;
    int rc = check_input(F32_16x256, spec, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "in0", "ANY", "(8, 128)", "(16, 256)", "non-constant index map",
                    "rule T5");
}

Test(validate, T5_any_partial_block_with_constant_map_is_an_error)
{
    pl_block_spec spec = PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 8, 128);
    spec.space = PL_ANY;
    pl_report rep;
    int rc = check_input(F32_16x256, spec, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "in0", "(8, 128)", "rule T5");
    cr_assert_null(strstr(rep.error, "non-constant"), "%s", rep.error);
}

Test(validate, T5_any_whole_block_with_grid_map_is_an_error)
{
    pl_block_spec spec = PL_BLOCK(PL_MAP(0, 1), 16, 256);
    spec.space = PL_ANY;
    pl_report rep;
    int rc = check_input(F32_16x256, spec, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "in0", "(16, 256)", "non-constant index map", "rule T5");
}

Test(validate, T5_any_whole_array_with_constant_map_is_legal)
{
    pl_report rep;
    pl_block_spec spec = PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 16, 256);
    spec.space = PL_ANY;
    th_expect_ok(check_input(F32_16x256, spec, NULL, &rep), &rep);
    cr_assert_eq(rep.op[0].buffers, 0, "an ANY operand took %d VMEM buffers", rep.op[0].buffers);
    cr_assert_eq(rep.op[0].vmem_bytes, 0);
    cr_assert_eq(rep.vmem_bytes, 8 * 128 * 4, "ANY counted in VMEM: %lld", (long long)rep.vmem_bytes);
}

Test(validate, T5_any_operand_is_the_hbm_array_itself)
{
    th_io io = th_io_2d(16, 256);
    rec r = {.n_refs = 2, .src = -1, .dst = 1};
    pl_call call = {
        .name = "any", .kernel = rec_kernel, .user = &r,
        .grid_rank = 2, .grid = {2, 2},
        .n_in = 1, .in = {{.space = PL_ANY}},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, 1), 8, 128)},
    };
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), &rep);
    cr_assert_eq(r.runs, 4);
    assert_ref(&r.refs[0], 0, PL_ROLE_IN, PL_ANY, PL_F32, 2, (const int64_t[]){16, 256});
    cr_assert_eq(r.refs[0].data, (void *)io.in, "the ANY ref is not the caller's HBM array");
    cr_assert_eq(rep.op[0].copies, 0);
    th_io_free(&io);
}

/* ---- T6: native tiling is a warning --------------------------------------------- */

/* Validate a bf16 or i8 (32, 256) copy in (rows, 128) blocks on `chip`. */
static int check_tiled(pl_dtype dt, int64_t rows, const char *chip, pl_report *rep)
{
    pl_array a = with_data(PL_ARRAY(NULL, dt, 32, 256)), o = with_data(PL_ARRAY(NULL, dt, 32, 256));
    pl_call call = th_copy_call_2d(32, 256, rows, 128);
    pl_options opt = {.chip = chip};
    int rc = pl_validate(&call, &a, &o, &opt, rep);
    free(a.data);
    free(o.data);
    return rc;
}

Test(validate, T6_bf16_8_rows_on_v7x_warns_not_errors)
{
    pl_report rep;
    th_expect_ok(check_tiled(PL_BF16, 8, "v7x", &rep), &rep);
    cr_assert_eq(rep.n_warnings, 2, "want one warning per operand, got %d:\n%s", rep.n_warnings, rep.warnings);
    cr_assert(strstr(rep.warnings, "in0") && strstr(rep.warnings, "out0"), "%s", rep.warnings);
    cr_assert(strstr(rep.warnings, "rule T6"), "%s", rep.warnings);
    cr_assert(strstr(rep.warnings, "16 sublanes"), "%s", rep.warnings);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(rep.op[i].block_bytes, 8 * 128 * 2);
        cr_assert_eq(rep.op[i].vmem_bytes, 16 * 128 * 2, "padded bytes %lld", (long long)rep.op[i].vmem_bytes);
        cr_assert_gt(rep.op[i].vmem_bytes, rep.op[i].block_bytes);
    }
    cr_assert_eq(rep.vmem_bytes, 2 * 2 * 16 * 128 * 2, "the budget must count padded bytes");
}

Test(validate, T6_bf16_8_rows_before_v7_does_not_warn)
{
    static const char *chips[] = {"v4", "v5e", "v5p", "v6e"};
    for (size_t i = 0; i < sizeof chips / sizeof *chips; i++) {
        pl_report rep;
        th_expect_ok(check_tiled(PL_BF16, 8, chips[i], &rep), &rep);
        cr_assert_eq(rep.n_warnings, 0, "%s: %s", chips[i], rep.warnings);
        cr_assert_eq(rep.op[0].vmem_bytes, rep.op[0].block_bytes, "%s", chips[i]);
    }
}

Test(validate, T6_bf16_16_rows_on_v7x_does_not_warn)
{
    pl_report rep;
    th_expect_ok(check_tiled(PL_BF16, 16, "v7x", &rep), &rep);
    cr_assert_eq(rep.n_warnings, 0, "%s", rep.warnings);
    cr_assert_eq(rep.op[0].vmem_bytes, rep.op[0].block_bytes);
}

Test(validate, T6_i8_8_rows_warns_on_every_chip)
{
    for (int i = 0; i < pl_chip_count(); i++) {
        pl_report rep;
        th_expect_ok(check_tiled(PL_I8, 8, pl_chip_at(i)->name, &rep), &rep);
        cr_assert_eq(rep.n_warnings, 2, "%s: %s", pl_chip_at(i)->name, rep.warnings);
        cr_assert(strstr(rep.warnings, "32 sublanes"), "%s", rep.warnings);
        cr_assert_eq(rep.op[0].vmem_bytes, 32 * 128, "%s", pl_chip_at(i)->name);
        cr_assert_eq(rep.op[0].block_bytes, 8 * 128);
    }
}

Test(validate, T6_padding_counts_against_the_vmem_limit)
{
    uint16_t *in = calloc(32 * 256, 2), *out = calloc(32 * 256, 2);
    cr_assert(in && out);
    for (int i = 0; i < 32 * 256; i++) in[i] = pl_f32_to_bf16((float)(i % 300) * 0.5f);
    pl_array a = PL_ARRAY(in, PL_BF16, 32, 256), o = PL_ARRAY(out, PL_BF16, 32, 256);
    pl_call call = th_copy_call_2d(32, 256, 8, 128);
    pl_options opt = {.chip = "v7x"};
    pl_report rep;
    call.vmem_limit_bytes = 4 * 8 * 128 * 2; /* the logical bytes: not enough */
    int rc = rejected(&call, &a, &o, &opt, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EVMEM, "rule M4");
    call.vmem_limit_bytes = 4 * 16 * 128 * 2; /* the padded bytes */
    th_expect_ok(pl_pallas_call(&call, &a, &o, &opt, &rep), &rep);
    cr_assert_eq(memcmp(in, out, 32 * 256 * 2), 0, "a call that warns must still run correctly");
    cr_assert_eq(rep.n_warnings, 2);
    free(in);
    free(out);
}

/* ---- T7: messages name operand, block shape, array shape and rule ---------------- */

Test(validate, T7_message_names_operand_block_array_and_rule)
{
    const struct {
        pl_array arr;
        pl_block_spec spec;
        int code;
        const char *block, *array, *rule;
    } cases[] = {
        {F32_16x256, PL_BLOCK(PL_MAP(0), 8), PL_EBLOCKSHAPE, "(8)", "(16, 256)", "rule B1"},
        {F32_16x256, PL_BLOCK(PL_MAP(0, 1), 8, 64), PL_EBLOCKSHAPE, "(8, 64)", "(16, 256)", "rule T1"},
        {F32_16x256, PL_BLOCK(PL_MAP(0, 1), 4, 128), PL_EBLOCKSHAPE, "(4, 128)", "(16, 256)", "rule T1"},
        {F32_16x256, PL_BLOCK(PL_MAP(0, 1), 8, PL_SQUEEZED), PL_EBLOCKSHAPE, "(8, squeezed)", "(16, 256)",
         "rule T1"},
        {PL_ARRAY(NULL, PL_BF16, 4096), PL_BLOCK(PL_MAP(0), 200), PL_EBLOCKSHAPE, "(200)", "(4096)", "rule T2"},
        {PL_ARRAY(NULL, PL_I32, 16, 256), {.rank = 2, .block = {8, 64}, .space = PL_SMEM}, PL_EBLOCKSHAPE,
         "(8, 64)", "(16, 256)", "rule T1"},
        {F32_16x256, {.rank = 2, .block = {8, 256}, .space = PL_ANY}, PL_EBLOCKSHAPE, "(8, 256)", "(16, 256)",
         "rule T5"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        pl_block_spec spec = cases[i].spec;
        spec.name = "weights";
        pl_report rep;
        int rc = check_input(cases[i].arr, spec, NULL, &rep);
        cr_assert_eq(rc, cases[i].code, "case %zu returned %d: %s", i, rc, rep.error);
        const char *need[] = {"weights", cases[i].block, cases[i].array, cases[i].rule};
        for (size_t k = 0; k < sizeof need / sizeof *need; k++)
            cr_assert(strstr(rep.error, need[k]), "case %zu: message lacks \"%s\": %s", i, need[k], rep.error);
    }
}

/* The B1 message for a block dimension < 1 names the block shape but not the
 * array's shape, which T7 requires of every violation. */
Test(validate, T7_B1_block_dimension_of_size_0_message_names_array_shape)
{
    pl_report rep;
    int rc = check_input(F32_16x256, PL_BLOCK(PL_MAP(0, 1), 0, 128), NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "in0", "(0, 128)", "(16, 256)", "rule B1");
}

Test(validate, T7_violation_is_reported_before_anything_runs)
{
    th_io io = th_io_2d(16, 256);
    th_io io2 = th_io_2d(16, 256);
    pl_array outs[2] = {io.o, io2.o};
    int runs = 0;
    pl_call call = th_copy_call_2d(16, 256, 8, 128);
    call.kernel = th_count_copy_kernel;
    call.user = &runs;
    call.n_out = 2; /* the first output is legal, the second is not */
    call.out[1] = PL_BLOCK(PL_MAP(0, 1), 8, 64);
    pl_report rep;
    int rc = rejected(&call, &io.a, outs, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "out1", "rule T1");
    cr_assert_eq(runs, 0, "the kernel ran %d times", runs);
    cr_assert_eq(th_io_touched(&io), 0);
    cr_assert_eq(th_io_touched(&io2), 0);
    th_io_free(&io);
    th_io_free(&io2);
}

/* ---- M4: the VMEM budget ------------------------------------------------------- */

/* The 16x256 copy in (8, 128) blocks plus a 16 MiB VMEM scratch "acc":
 * 2 x 4096 + 2 x 4096 + 16 MiB = 16793600 bytes, just over v5e's 16 MiB. */
#define BUDGET_BYTES (4 * 4096 + 16 * MiB)
static pl_call budget_call(void)
{
    pl_call call = th_copy_call_2d(16, 256, 8, 128);
    call.n_scratch = 1;
    call.scratch[0] = PLTPU_VMEM(PL_F32, 2048, 2048);
    call.scratch[0].name = "acc";
    return call;
}

Test(validate, M4_over_default_scoped_limit_lists_each_buffer)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = budget_call();
    pl_report rep;
    int rc = rejected(&call, &io.a, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EVMEM, "16793600 bytes", "scoped limit of 16777216 bytes", "v5e", "rule M4",
                    "vmem_limit_bytes", "\n  in0 ", "\n  out0 ", "\n  acc ", "2 x 4096 bytes = 8192",
                    "1 x 16777216 bytes = 16777216 (scratch)");
    cr_assert_eq(rep.vmem_bytes, BUDGET_BYTES);
    cr_assert_eq(rep.vmem_limit, 16 * MiB);
    cr_assert_eq(th_io_touched(&io), 0);
    th_io_free(&io);
}

Test(validate, M4_raising_vmem_limit_makes_it_pass)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = budget_call();
    call.vmem_limit_bytes = 32 * MiB;
    pl_report rep;
    th_expect_ok(pl_validate(&call, &io.a, &io.o, NULL, &rep), &rep);
    cr_assert_eq(rep.vmem_limit, 32 * MiB);
    cr_assert_eq(rep.vmem_bytes, BUDGET_BYTES);
    th_io_free(&io);
}

Test(validate, M4_limit_is_inclusive)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = budget_call();
    pl_report rep;
    call.vmem_limit_bytes = BUDGET_BYTES;
    th_expect_ok(pl_validate(&call, &io.a, &io.o, NULL, &rep), &rep);
    call.vmem_limit_bytes = BUDGET_BYTES - 1;
    int rc = rejected(&call, &io.a, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EVMEM, "16793600 bytes", "scoped limit of 16793599 bytes", "rule M4");
    th_io_free(&io);
}

Test(validate, M4_default_limit_depends_on_chip)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = budget_call();
    pl_options opt = {.chip = "v6e"}; /* 32 MiB scoped default */
    pl_report rep;
    th_expect_ok(pl_validate(&call, &io.a, &io.o, &opt, &rep), &rep);
    cr_assert_eq(rep.vmem_limit, 32 * MiB);
    cr_assert_str_eq(rep.chip->name, "v6e");
    th_io_free(&io);
}

Test(validate, M4_limit_above_physical_vmem_fails)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = th_copy_call_2d(16, 256, 8, 128);
    pl_report rep;
    call.vmem_limit_bytes = 128 * MiB; /* v5e: all of it is allowed */
    th_expect_ok(pl_validate(&call, &io.a, &io.o, NULL, &rep), &rep);
    call.vmem_limit_bytes = 128 * MiB + 1;
    int rc = rejected(&call, &io.a, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EVMEM, "134217729", "134217728 bytes of physical VMEM", "v5e", "rule M4");

    pl_options v7x = {.chip = "v7x"}; /* 64 MiB per TensorCore */
    call.vmem_limit_bytes = 65 * MiB;
    rc = rejected(&call, &io.a, &io.o, &v7x, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EVMEM, "68157440", "67108864 bytes of physical VMEM", "v7x", "rule M4");
    cr_assert_eq(th_io_touched(&io), 0);
    th_io_free(&io);
}

Test(validate, M4_negative_limit_is_einval)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = th_copy_call_2d(16, 256, 8, 128);
    call.vmem_limit_bytes = -1;
    pl_report rep;
    int rc = rejected(&call, &io.a, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "vmem_limit_bytes = -1");
    th_io_free(&io);
}

/* A block whose byte count overflows int64 (8 x 2^59 f32 = 2^64 bytes) must
 * not wrap around to a small number and slip under the limit. */
Test(validate, M4_block_bytes_overflowing_int64_are_rejected)
{
    pl_report rep;
    int rc = check_input(F32_16x256, PL_BLOCK(PL_MAP(0, 1), 8, 1LL << 59), NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EVMEM, "rule M4");
}

/* The same for VMEM scratch: 2^31 x 2^31 f32 = 2^64 bytes. */
Test(validate, M4_scratch_bytes_overflowing_int64_are_rejected)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = th_copy_call_2d(16, 256, 8, 128);
    call.n_scratch = 1;
    call.scratch[0] = PLTPU_VMEM(PL_F32, 1LL << 31, 1LL << 31);
    pl_report rep;
    int rc = pl_validate(&call, &io.a, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EVMEM, "scratch0", "rule M4");
    th_io_free(&io);
}

/* ---- P6: buffer counts ------------------------------------------------------------- */

Test(validate, P6_three_buffers_warns_and_runs)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = th_copy_call_2d(16, 256, 8, 128);
    call.in[0].buffers = 3;
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), &rep);
    cr_assert_eq(th_f32_diff(io.in, io.out, io.n), 0);
    cr_assert_eq(rep.n_warnings, 1, "%s", rep.warnings);
    cr_assert(strstr(rep.warnings, "in0") && strstr(rep.warnings, "Buffered(3)") &&
                  strstr(rep.warnings, "rule P6"),
              "%s", rep.warnings);
    cr_assert_eq(rep.op[0].buffers, 3);
    cr_assert_eq(rep.op[1].buffers, 2);
    cr_assert_eq(rep.vmem_bytes, (3 + 2) * 4096);
    th_io_free(&io);
}

Test(validate, P6_negative_buffers_is_einval)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = th_copy_call_2d(16, 256, 8, 128);
    call.out[0].buffers = -1;
    pl_report rep;
    int rc = rejected(&call, &io.a, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "out0", "buffers = -1", "rule P6");
    th_io_free(&io);
}

Test(validate, P6_default_two_buffers_and_one_buffer_do_not_warn)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = th_copy_call_2d(16, 256, 8, 128);
    call.out[0].buffers = 1;
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), &rep);
    cr_assert_eq(th_f32_diff(io.in, io.out, io.n), 0);
    cr_assert_eq(rep.n_warnings, 0, "%s", rep.warnings);
    cr_assert_eq(rep.op[0].buffers, 2);
    cr_assert_eq(rep.op[1].buffers, 1);
    cr_assert_eq(rep.vmem_bytes, 3 * 4096);
    th_io_free(&io);
}

/* ---- P7: whole array + constant map = one buffer ----------------------------------- */

Test(validate, P7_whole_array_constant_map_gets_one_buffer)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = {
        .name = "p7", .kernel = th_copy_kernel,
        .grid_rank = 1, .grid = {4},
        .n_in = 1, .in = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 16, 256)},
        .n_out = 1, .out = {{0}},
    };
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), &rep);
    cr_assert_eq(th_f32_diff(io.in, io.out, io.n), 0);
    cr_assert_eq(rep.op[0].buffers, 1, "explicit whole block: %d buffers", rep.op[0].buffers);
    cr_assert_eq(rep.op[1].buffers, 1, "rank-0 spec: %d buffers", rep.op[1].buffers);
    cr_assert_eq(rep.op[0].copies, 1);
    cr_assert_eq(rep.op[1].writebacks, 1);
    cr_assert_eq(rep.vmem_bytes, 2 * 16 * 256 * 4);
    th_io_free(&io);
}

/* P7 is one case of P6's automatic single buffering: since Mosaic gives any
 * block that never changes over the grid one buffer, neither a whole block
 * nor a constant map is needed; an explicit count still wins. (Changing
 * blocks stay double-buffered: tests/test_jax_cores.c.) */
Test(validate, P6_P7_one_buffer_for_a_block_that_never_changes)
{
    pl_report rep;
    /* whole block, a map that follows axis 2, of size 1: it only ever picks 0 */
    th_expect_ok(check_input(F32_16x256, PL_BLOCK(PL_MAP(PL_ZERO, 2), 16, 256), NULL, &rep), &rep);
    cr_assert_eq(rep.op[0].buffers, 1);
    cr_assert(rep.op[0].single_buffered);
    /* constant map, partial block */
    th_expect_ok(check_input(F32_16x256, PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 8, 256), NULL, &rep), &rep);
    cr_assert_eq(rep.op[0].buffers, 1);
    cr_assert(rep.op[0].single_buffered);
    /* an explicit buffer count wins */
    pl_block_spec spec = PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 16, 256);
    spec.buffers = 2;
    th_expect_ok(check_input(F32_16x256, spec, NULL, &rep), &rep);
    cr_assert_eq(rep.op[0].buffers, 2);
}

/* ---- M3: kernel arguments: prefetch, inputs, outputs, scratch ----------------------- */

Test(validate, M3_refs_in_order_prefetch_inputs_outputs_scratch)
{
    int32_t table[4] = {3, 1, 4, 1};
    float *in1 = th_f32_seq(16 * 128);
    th_io io = th_io_2d(16, 256);
    pl_array args[3] = {PL_ARRAY(table, PL_I32, 4), io.a, PL_ARRAY(in1, PL_F32, 16, 128)};
    rec r = {.n_refs = 6, .src = 1, .dst = 3};
    pl_call call = {
        .name = "m3", .kernel = rec_kernel, .user = &r,
        .grid_rank = 2, .grid = {2, 2},
        .num_scalar_prefetch = 1,
        .n_in = 2,
        .in = {PL_BLOCK(PL_MAP(0, 1), 8, 128), PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, 1), 8, 128)},
        .n_scratch = 2,
        .scratch = {PLTPU_VMEM(PL_F32, 8, 256), PLTPU_SMEM(PL_I32, 5)},
    };
    call.scratch[0].name = "acc";
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, args, &io.o, NULL, &rep), &rep);
    cr_assert_eq(th_f32_diff(io.in, io.out, io.n), 0);
    cr_assert_eq(r.runs, 4);
    assert_ref(&r.refs[0], 0, PL_ROLE_PREFETCH, PL_SMEM, PL_I32, 1, (const int64_t[]){4});
    assert_ref(&r.refs[1], 1, PL_ROLE_IN, PL_VMEM, PL_F32, 2, (const int64_t[]){8, 128});
    assert_ref(&r.refs[2], 2, PL_ROLE_IN, PL_VMEM, PL_F32, 2, (const int64_t[]){8, 128});
    assert_ref(&r.refs[3], 3, PL_ROLE_OUT, PL_VMEM, PL_F32, 2, (const int64_t[]){8, 128});
    assert_ref(&r.refs[4], 4, PL_ROLE_SCRATCH, PL_VMEM, PL_F32, 2, (const int64_t[]){8, 256});
    assert_ref(&r.refs[5], 5, PL_ROLE_SCRATCH, PL_SMEM, PL_I32, 1, (const int64_t[]){5});
    cr_assert(r.refs[1].readonly && r.refs[2].readonly, "input refs must be read-only (V3)");
    cr_assert(!r.refs[3].readonly && !r.refs[4].readonly);

    cr_assert_eq(rep.n_operands, 4);
    static const char *names[] = {"prefetch0", "in0", "in1", "out0"};
    static const pl_role roles[] = {PL_ROLE_PREFETCH, PL_ROLE_IN, PL_ROLE_IN, PL_ROLE_OUT};
    for (int i = 0; i < 4; i++) {
        cr_assert_str_eq(rep.op[i].name, names[i]);
        cr_assert_eq(rep.op[i].role, roles[i], "%s", names[i]);
    }
    cr_assert_eq(rep.n_scratch, 2);
    cr_assert_str_eq(rep.scratch[0].name, "acc");
    cr_assert_str_eq(rep.scratch[1].name, "scratch1");
    cr_assert_eq(rep.scratch[0].bytes, 8 * 256 * 4);
    cr_assert_eq(rep.scratch[1].space, PL_SMEM);
    cr_assert_eq(rep.scratch[1].bytes, 5 * 4);
    cr_assert_eq(rep.vmem_bytes, 3 * 2 * 4096 + 8 * 256 * 4);
    th_io_free(&io);
    free(in1);
}

/* ---- M1: what SMEM holds -------------------------------------------------------- */

Test(validate, M1_prefetch_must_be_32bit)
{
    uint16_t table[4] = {0}; /* f16: narrow bf16 / i16 / i8 tables are accepted (M5) */
    th_io io = th_io_2d(16, 256);
    pl_array args[2] = {PL_ARRAY(table, PL_F16, 4), io.a};
    pl_call call = th_copy_call_2d(16, 256, 8, 128);
    call.num_scalar_prefetch = 1;
    call.kernel = th_noop_kernel;
    pl_report rep;
    int rc = rejected(&call, args, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EDTYPE, "prefetch0", "f16", "rule M1");
    th_io_free(&io);
}

Test(validate, M1_smem_scratch_must_be_32bit)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = th_copy_call_2d(16, 256, 8, 128);
    call.n_scratch = 1;
    call.scratch[0] = PLTPU_SMEM(PL_I8, 16);
    pl_report rep;
    int rc = rejected(&call, &io.a, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EDTYPE, "scratch0", "i8", "rule M1");
    th_io_free(&io);
}

Test(validate, M1_smem_over_capacity_is_evmem)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = th_copy_call_2d(16, 256, 8, 128);
    call.n_scratch = 1;
    call.scratch[0] = PLTPU_SMEM(PL_I32, 256 * 1024); /* exactly v5e's 1 MiB */
    pl_report rep;
    th_expect_ok(pl_validate(&call, &io.a, &io.o, NULL, &rep), &rep);
    cr_assert_eq(rep.smem_bytes, 1 * MiB);
    call.scratch[0].shape[0]++;
    int rc = rejected(&call, &io.a, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EVMEM, "SMEM use of 1048580 bytes", "1048576 bytes of SMEM", "v5e", "rule M1");
    th_io_free(&io);
}

/* SMEM holds 32-bit scalars: the validator rejects bf16 prefetch arrays and
 * SMEM scratch (PL_EDTYPE, rule M1) and should reject a bf16 SMEM block
 * operand the same way. */
Test(validate, M1_smem_block_operand_must_be_32bit)
{
    pl_report rep;
    pl_block_spec whole = {.space = PL_SMEM};
    int rc = check_input(PL_ARRAY(NULL, PL_BF16, 4, 8), whole, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EDTYPE, "in0", "bf16", "rule M1");
}

Test(validate, M1_semaphore_space_cannot_hold_a_block)
{
    pl_block_spec spec = PL_BLOCK(PL_MAP(0, 1), 8, 128);
    spec.space = PL_SEMAPHORE;
    pl_report rep;
    int rc = check_input(F32_16x256, spec, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "in0", "SEMAPHORE", "rule M1");
}

Test(validate, M2_scratch_in_any_is_einval)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = th_copy_call_2d(16, 256, 8, 128);
    call.n_scratch = 1;
    call.scratch[0] = PLTPU_VMEM(PL_F32, 8, 128);
    call.scratch[0].space = PL_ANY;
    pl_report rep;
    int rc = rejected(&call, &io.a, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "scratch0", "ANY", "rule M2");
    th_io_free(&io);
}

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
Test(validate, call_unknown_output_dtype) { bad_call(bad_out_dtype, PL_EINVAL, S("out0", "unknown dtype 6")); }
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
