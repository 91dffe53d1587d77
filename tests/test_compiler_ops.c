/* tests/test_compiler_ops.c: what the compiler checks at ops inside a
 * kernel: the MXU's dtype table per chip (rule T10, XLA E2001: an int8
 * matmul rejected on v7x, accepted and exact on v5e) and dynamic slices
 * along a tiled dimension (rule T9, XLA E2003, with pl_multiple_of). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/tilesim.h"
#include "helpers.h"

/* ---- T10: the MXU's dtypes ----------------------------------------------------------- */

/* refs: a, b, o: o = a @ b */
static void dot_kernel(pl_ctx *c, pl_ref *refs) { pl_dot(c, refs[2], refs[0], refs[1], 0); }

/* a (32, 128) of ta times b (128, 128) of tb into o (32, 128) of to, whole blocks. */
static int run_dot(pl_dtype ta, pl_dtype tb, pl_dtype to, void *a, void *b, void *o, const char *chip,
                   pl_report *rep)
{
    pl_array in[2] = {PL_ARRAY(a, ta, 32, 128), PL_ARRAY(b, tb, 128, 128)}, out = PL_ARRAY(o, to, 32, 128);
    pl_call call = {
        .name = "dot", .kernel = dot_kernel,
        .n_in = 2, .in = {{0}, {0}},
        .n_out = 1, .out = {{0}},
    };
    pl_options opt = {.chip = chip};
    return pl_pallas_call(&call, in, &out, &opt, rep);
}

Test(compiler_ops, T10_int8_matmul_is_rejected_on_v7x)
{
    int8_t *a = calloc(32 * 128, 1), *b = calloc(128 * 128, 1);
    int32_t *o = calloc(32 * 128, 4);
    cr_assert(a && b && o);
    pl_report rep;
    int rc = run_dot(PL_I8, PL_I8, PL_I32, a, b, o, "v7x", &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EDTYPE, "pl_dot of i8 x i8 into i32 on v7x", "no int8 path", "E2001",
                    "rule T10");
    free(a);
    free(b);
    free(o);
}

Test(compiler_ops, T10_int8_matmul_on_v5e_accumulates_exactly_in_int32)
{
    int8_t *a = malloc(32 * 128), *b = malloc(128 * 128);
    int32_t *o = malloc(32 * 128 * 4);
    cr_assert(a && b && o);
    for (int i = 0; i < 32 * 128; i++) a[i] = (int8_t)(i % 256 - 128); /* -128 .. 127, extremes included */
    for (int i = 0; i < 128 * 128; i++) b[i] = (int8_t)((i * 7) % 256 - 128);
    pl_report rep;
    th_expect_ok(run_dot(PL_I8, PL_I8, PL_I32, a, b, o, "v5e", &rep), &rep);
    for (int i = 0; i < 32; i++)
        for (int j = 0; j < 128; j++) {
            int64_t s = 0;
            for (int p = 0; p < 128; p++) s += (int64_t)a[i * 128 + p] * b[p * 128 + j];
            cr_assert_eq(o[i * 128 + j], (int32_t)s, "o[%d, %d] = %d, want %lld", i, j, o[i * 128 + j],
                         (long long)s);
        }
    cr_assert_eq(rep.mxu_dtype, PL_I8, "timed at the int8 rate");
    free(a);
    free(b);
    free(o);
}

Test(compiler_ops, T10_int8_needs_an_int32_accumulator)
{
    int8_t *a = calloc(32 * 128, 1), *b = calloc(128 * 128, 1);
    float *o = calloc(32 * 128, 4);
    cr_assert(a && b && o);
    pl_report rep;
    int rc = run_dot(PL_I8, PL_I8, PL_F32, a, b, o, "v5e", &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EDTYPE, "int8 x int8 accumulates in int32", "E2001", "rule T10");
    free(a);
    free(b);
    free(o);
}

/* A float x int8 mix widens the int8 operand to f32 (Mosaic does), on every
 * chip, v7x included; into an int32 accumulator it is an error. */
Test(compiler_ops, T10_bf16_x_int8_widens_the_int8_on_every_chip)
{
    uint16_t *a = malloc(32 * 128 * 2);
    int8_t *b = malloc(128 * 128);
    float *o = malloc(32 * 128 * 4);
    int32_t *oi = calloc(32 * 128, 4);
    cr_assert(a && b && o && oi);
    for (int i = 0; i < 32 * 128; i++) a[i] = pl_f32_to_bf16((float)(i % 5) - 2.0f);
    for (int i = 0; i < 128 * 128; i++) b[i] = (int8_t)(i % 11 - 5);
    for (int ch = 0; ch < pl_chip_count(); ch++) {
        pl_report rep;
        th_expect_ok(run_dot(PL_BF16, PL_I8, PL_F32, a, b, o, pl_chip_at(ch)->name, &rep), &rep);
        for (int j = 0; j < 128; j++) {
            double s = 0;
            for (int p = 0; p < 128; p++) s += (double)pl_bf16_to_f32(a[p]) * b[p * 128 + j];
            cr_assert_float_eq(o[j], (float)s, 1e-3, "%s: o[0, %d]", pl_chip_at(ch)->name, j);
        }
        int rc = run_dot(PL_BF16, PL_I8, PL_I32, a, b, oi, pl_chip_at(ch)->name, &rep);
        TH_EXPECT_ERROR(rc, rep, PL_EDTYPE, "needs a float accumulator", "E2001");
    }
    free(a);
    free(b);
    free(o);
    free(oi);
}

/* ---- T9: dynamic slices along a tiled dimension ------------------------------------- */

typedef struct ds_case {
    int64_t step;     /* start = (program_id % 2) * step + fixed */
    int64_t fixed;
    int dim;          /* the sliced dimension of the scratch */
    int promise;      /* > 0: pass the start through pl_multiple_of(c, start, promise) */
} ds_case;

/* refs: x (16, 128) in, o (16, 128) out, s (64, 256) scratch: o = x through
 * a slice of s that starts at a grid-dependent row or lane. */
static void ds_kernel(pl_ctx *c, pl_ref *refs)
{
    const ds_case *k = pl_kernel_user(c);
    int64_t start = pl_program_id(c, 0) % 2 * k->step + k->fixed;
    if (k->promise) start = pl_multiple_of(c, start, k->promise);
    pl_ref s = refs[2];
    pl_ref v = k->dim == 0 ? pl_ds(c, pl_ds(c, s, 0, start, 16), 1, 0, 128)
                           : pl_ds(c, pl_ds(c, s, 0, 0, 16), 1, start, 128);
    pl_copy(c, v, refs[0]);
    pl_copy(c, refs[1], v);
}

static int run_ds_w(const ds_case *k, pl_dtype dt, const char *chip, int64_t width, pl_report *rep)
{
    size_t es = pl_dtype_size(dt);
    char *x = calloc(4 * 16 * 128, es), *o = calloc(4 * 16 * 128, es);
    cr_assert(x && o);
    pl_array in = PL_ARRAY(x, dt, 64, 128), out = PL_ARRAY(o, dt, 64, 128);
    pl_call call = {
        .name = "ds", .kernel = ds_kernel, .user = (void *)k,
        .grid_rank = 1, .grid = {4},
        .n_in = 1, .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), 16, 128)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 16, 128)},
        .n_scratch = 1, .scratch = {PLTPU_VMEM(dt, 64, width)},
    };
    pl_options opt = {.chip = chip};
    int rc = pl_pallas_call(&call, &in, &out, &opt, rep);
    free(x);
    free(o);
    return rc;
}

static int run_ds(const ds_case *k, pl_dtype dt, const char *chip, pl_report *rep)
{
    return run_ds_w(k, dt, chip, 256, rep);
}

Test(compiler_ops, T9_a_dynamic_row_start_off_the_tile_is_rejected)
{
    ds_case k = {.step = 3};
    pl_report rep;
    int rc = run_ds(&k, PL_F32, "v5e", &rep);
    TH_EXPECT_ERROR(rc, rep, PL_ETILING, "pl_ds(3, 16) on dimension 0", "starts 0 and 3", "8-row tile of f32 on v5e",
                    "E2003", "rule T9", "pl_multiple_of(c, start, 8)");
}

Test(compiler_ops, T9_dynamic_starts_on_the_tile_pass)
{
    ds_case k = {.step = 8};
    pl_report rep;
    th_expect_ok(run_ds(&k, PL_F32, "v5e", &rep), &rep);
    k.promise = 8; /* pl_multiple_of says what is true: same result */
    th_expect_ok(run_ds(&k, PL_F32, "v5e", &rep), &rep);
    k = (ds_case){.step = 128, .dim = 1}; /* lanes: multiples of 128 */
    th_expect_ok(run_ds(&k, PL_F32, "v5e", &rep), &rep);
}

/* A start that never changes is what a constant is: the compiler shifts an
 * unaligned static slice, so it passes. */
Test(compiler_ops, T9_a_constant_unaligned_start_passes)
{
    ds_case k = {.fixed = 3};
    pl_report rep;
    th_expect_ok(run_ds(&k, PL_F32, "v5e", &rep), &rep);
}

/* The tile depends on the dtype and the chip: 8 rows of bf16 align on v5e,
 * not on v7x, whose bf16 tile has 16 rows. */
Test(compiler_ops, T9_the_tile_is_the_chips_for_the_dtype)
{
    ds_case k = {.step = 8};
    pl_report rep;
    th_expect_ok(run_ds(&k, PL_BF16, "v5e", &rep), &rep);
    int rc = run_ds(&k, PL_BF16, "v7x", &rep);
    TH_EXPECT_ERROR(rc, rep, PL_ETILING, "16-row tile of bf16 on v7x", "E2003");
    k.step = 16;
    th_expect_ok(run_ds(&k, PL_BF16, "v7x", &rep), &rep);
}

Test(compiler_ops, T9_a_dynamic_lane_start_off_128_is_rejected)
{
    ds_case k = {.step = 64, .dim = 1};
    pl_report rep;
    int rc = run_ds(&k, PL_F32, "v5e", &rep);
    TH_EXPECT_ERROR(rc, rep, PL_ETILING, "on dimension 1", "128-lane tile", "E2003");
}

/* pl_multiple_of checks its promise: a false one would read the wrong
 * elements on hardware. */
Test(compiler_ops, T9_pl_multiple_of_checks_its_promise)
{
    ds_case k = {.step = 4, .promise = 8};
    pl_report rep;
    int rc = run_ds(&k, PL_F32, "v5e", &rep);
    TH_EXPECT_ERROR(rc, rep, PL_ETILING, "pl_multiple_of(4, 8)", "not a multiple of 8", "rule T9");
    k = (ds_case){.step = 8, .promise = -1};
    rc = run_ds(&k, PL_F32, "v5e", &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "pl_multiple_of(0, -1)", "must be >= 1");
}

/* A helper that slices the same Ref at two constant starts in every step:
 * both starts are constants, whether the C compiler inlines the helper into
 * one call site or keeps one (noinline here), so both pass (T9). */
__attribute__((noinline)) static pl_ref rows_at(pl_ctx *c, pl_ref s, int64_t start)
{
    return pl_ds(c, pl_ds(c, s, 0, start, 16), 1, 0, 128);
}

static void two_constants_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_copy(c, rows_at(c, refs[2], 3), refs[0]);
    pl_copy(c, rows_at(c, refs[2], 21), rows_at(c, refs[2], 3));
    pl_copy(c, refs[1], rows_at(c, refs[2], 21));
}

Test(compiler_ops, T9_one_helper_slicing_at_two_constants_passes)
{
    float *x = calloc(64 * 128, 4), *o = calloc(64 * 128, 4);
    cr_assert(x && o);
    pl_array in = PL_ARRAY(x, PL_F32, 64, 128), out = PL_ARRAY(o, PL_F32, 64, 128);
    pl_call call = {
        .name = "two", .kernel = two_constants_kernel, .grid_rank = 1, .grid = {4},
        .n_in = 1, .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), 16, 128)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 16, 128)},
        .n_scratch = 1, .scratch = {PLTPU_VMEM(PL_F32, 64, 256)},
    };
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &in, &out, NULL, &rep), &rep);
    free(x);
    free(o);
}

/* JAX's scalar-prefetch test stores one row of an f32 output at a dynamic
 * start (dst[pl.ds(s[i], 1), :], tests/pallas/tpu_pallas_test.py), and it
 * runs on TPUs: in a buffer one tile column wide (128 lanes) rows follow
 * each other and one vector load reads 8 of them from any row. Mosaic
 * refuses a dynamic row start only where tile columns interleave (the
 * (64, 256) scratch above) or where packed rows would split: bf16 packs 2
 * rows into a 32-bit sublane, so its dynamic starts must be even (T9). */
Test(compiler_ops, T9_a_dynamic_row_start_in_one_tile_column_passes_for_32_bit_types)
{
    ds_case k = {.step = 3};
    pl_report rep;
    th_expect_ok(run_ds_w(&k, PL_F32, "v5e", 128, &rep), &rep);
    th_expect_ok(run_ds_w(&k, PL_F32, "v7x", 128, &rep), &rep);
    int rc = run_ds_w(&k, PL_BF16, "v5e", 128, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_ETILING, "pl_ds(3, 16) on dimension 0", "E2003", "rule T9");
    k.step = 2;
    th_expect_ok(run_ds_w(&k, PL_BF16, "v6e", 128, &rep), &rep);
    k.step = 3; /* two tile columns: still a whole tile */
    rc = run_ds_w(&k, PL_F32, "v5e", 256, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_ETILING, "8-row tile of f32 on v5e", "E2003");
}

/* o_ref[j] on a rank-2 Ref indexes its row dimension: Pallas lowers it as
 * o_ref[pl.ds(j, 1), :], so T9 judges pl_at as it judges that pl_ds (a
 * dynamic row of a (64, 256) f32 buffer was refused as pl_ds and passed as
 * pl_at). A buffer one tile column wide takes any row, either way. */
static void at_kernel(pl_ctx *c, pl_ref *refs)
{
    int64_t row = pl_program_id(c, 0) % 2 * 3; /* 0, 3, 0, 3: dynamic, off the 8-row tile */
    pl_ref s = refs[2];
    pl_copy(c, pl_ds(c, pl_at(c, s, row), 0, 0, 128), pl_at(c, refs[0], 0));
    pl_copy(c, refs[1], refs[0]);
}

static int run_at(int64_t width, pl_report *rep)
{
    float x[16 * 128] = {0}, o[16 * 128];
    pl_array in = PL_ARRAY(x, PL_F32, 16, 128), out = PL_ARRAY(o, PL_F32, 16, 128);
    pl_call call = {.name = "at", .kernel = at_kernel, .grid_rank = 1, .grid = {2},
                    .n_in = 1, .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)},
                    .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)},
                    .n_scratch = 1, .scratch = {PLTPU_VMEM(PL_F32, 64, width)}};
    return pl_pallas_call(&call, &in, &out, NULL, rep);
}

Test(compiler_ops, T9_pl_at_of_a_dynamic_row_is_judged_as_its_pl_ds)
{
    pl_report rep;
    int rc = run_at(256, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_ETILING, "pl_at(3), a row: pl_ds(3, 1), on dimension 0", "8-row tile of f32", "E2003");
    th_expect_ok(run_at(128, &rep), &rep);
}
