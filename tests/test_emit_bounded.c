/* pl.BoundedSlice in emit_pipeline (rule K8), as JAX's
 * tpu_pallas_pipeline_test.py PallasCallBoundedSliceIndexingTest has it: a
 * block dimension of at most n elements whose index map gives
 * pl.ds(start, size) in elements (PL_DS here); the body's ref along it is
 * the bound long ("statically sized (but partially populated)", JAX's
 * test_compute_slice_bounded_slice_vmem), and only the slice's `size`
 * elements are copied in and written back. */
#include <criterion/criterion.h>
#include <string.h>

#include "../sim/tilesim_kernel.h"
#include "helpers.h"

static pltpu_pipeline g_pipe;
static const int32_t *g_slices; /* (start, end) per inner point */
static int64_t g_seen[8];       /* the body ref's length along dimension 0, per point */

static void copy_body(pl_ctx *c, pl_ref *refs, const int64_t *idx, void *user)
{
    (void)user;
    if (idx[0] < 8) g_seen[idx[0]] = refs[0].shape[0];
    pl_copy(c, refs[1], refs[0]);
}

static void ds_static(const int64_t *g, const pl_ref *pf, int64_t *bi, void *u)
{
    (void)g, (void)pf, (void)u;
    bi[0] = PL_DS(4, 8), bi[1] = bi[2] = 0;
}

static void ds_from_table(const int64_t *g, const pl_ref *pf, int64_t *bi, void *u)
{
    (void)pf, (void)u;
    bi[0] = PL_DS(g_slices[2 * g[0]], g_slices[2 * g[0] + 1] - g_slices[2 * g[0]]), bi[1] = bi[2] = 0;
}

static void plain_index(const int64_t *g, const pl_ref *pf, int64_t *bi, void *u)
{
    (void)g, (void)pf, (void)u;
    bi[0] = bi[1] = bi[2] = 0; /* "first index needs to be a pl.ds" */
}

static void body(pl_ctx *c, pl_ref *refs) { pltpu_emit_pipeline(c, &g_pipe, &refs[0], &refs[1], copy_body, NULL); }

static int run(int64_t out_rows, int32_t *x, int32_t *y, pl_report *rep)
{
    pl_array a = PL_ARRAY(x, PL_I32, 16, 8, 128), o = PL_ARRAY(y, PL_I32, out_rows, 8, 128);
    pl_kernel_spec k = {.name = "bounded", .body = body, .n_in = 1, .n_out = 1};
    return pl_kernel(&k, &a, &o, &(pl_options){.chip = "v5e", .strict = 1}, rep);
}

static int32_t *iota(int64_t n)
{
    int32_t *x = malloc((size_t)n * sizeof *x);
    for (int64_t i = 0; i < n; i++) x[i] = (int32_t)i;
    return x;
}

static pl_block_spec bounded_spec(int64_t bound, pl_index_map_fn f)
{
    pl_block_spec s = PL_BLOCK(PL_MAP_FN(f, NULL), bound, 8, 128);
    s.bounded[0] = 1;
    return s;
}

/* test_block_spec_bounded_slice_static: pl.ds(4, 8) of a (16, 8, 128) input
 * into an (8, 8, 128) output gives x[4:12] */
Test(emit_bounded, K8_a_static_slice_copies_rows_4_to_12)
{
    int32_t *x = iota(16 * 1024), *y = calloc(8 * 1024, sizeof *y);
    g_pipe = (pltpu_pipeline){.grid_rank = 1, .grid = {1}, .n_in = 1, .n_out = 1,
                            .in = {bounded_spec(8, ds_static)}, .out = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO, PL_ZERO), 8, 8, 128)}};
    pl_report rep;
    th_expect_ok(run(8, x, y, &rep), &rep);
    for (int i = 0; i < 8 * 1024; i++) cr_assert_eq(y[i], x[4 * 1024 + i], "element %d", i);
    cr_expect_eq(g_seen[0], 8);
    free(x), free(y);
}

/* test_block_spec_bounded_slice_dynamic: slices from a table, in reverse
 * order, of sizes 5, 3, 5, 3 under a bound of 16: the output is x; the
 * body's ref was the bound long at every point, each slice copied at its
 * own length */
Test(emit_bounded, K8_slices_from_a_table_copy_each_at_its_own_length)
{
    static const int32_t slices[] = {11, 16, 8, 11, 3, 8, 0, 3};
    g_slices = slices;
    int32_t *x = iota(16 * 1024), *y = malloc(16 * 1024 * sizeof *y);
    for (int i = 0; i < 16 * 1024; i++) y[i] = -1;
    pl_block_spec s = bounded_spec(16, ds_from_table);
    g_pipe = (pltpu_pipeline){.grid_rank = 1, .grid = {4}, .n_in = 1, .n_out = 1, .in = {s}, .out = {s}};
    pl_report rep;
    th_expect_ok(run(16, x, y, &rep), &rep);
    for (int i = 0; i < 16 * 1024; i++) cr_assert_eq(y[i], x[i], "element %d", i);
    for (int k = 0; k < 4; k++) cr_expect_eq(g_seen[k], 16, "point %d: the body's ref is the bound long", k);
    free(x), free(y);
}

/* test_block_spec_bounded_slice_invalid_index; a slice over its bound or
 * past the ref; and pallas_call, whose blocks are static */
Test(emit_bounded, K8_a_plain_index_a_slice_over_its_bound_or_past_the_ref_is_refused)
{
    int32_t *x = iota(16 * 1024), *y = calloc(16 * 1024, sizeof *y);
    g_pipe = (pltpu_pipeline){.grid_rank = 1, .grid = {1}, .n_in = 1, .n_out = 1,
                            .in = {bounded_spec(8, plain_index)}, .out = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO, PL_ZERO), 8, 8, 128)}};
    pl_report rep;
    int rc = run(8, x, y, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINDEXMAP, "in_specs[0]", "BoundedSlice(8)", "a plain index",
                    "Must return a pl.ds from the index_map for a BoundedSlice dimension", "K8");
    static const int32_t over[] = {0, 12}, past[] = {10, 17};
    g_slices = over;
    g_pipe.in[0] = bounded_spec(8, ds_from_table);
    rc = run(8, x, y, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINDEXMAP, "PL_DS(0, 12)", "over the bound", "K8");
    g_slices = past;
    g_pipe.in[0] = bounded_spec(8, ds_from_table);
    rc = run(8, x, y, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINDEXMAP, "PL_DS(10, 7)", "past the ref's end", "K8");
    static const int32_t negative[] = {-1, 3}; /* PL_DS(-1, 4): out of range, not a slice at 0 */
    g_slices = negative;
    g_pipe.in[0] = bounded_spec(8, ds_from_table);
    rc = run(8, x, y, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINDEXMAP, "PL_DS with a start or size out of range", "K8");
    pl_call call = th_copy_call_2d(16, 128, 8, 128);
    call.in[0].bounded[0] = 1;
    float *fx = th_f32_seq(16 * 128), *fy = th_f32_fill(16 * 128, 0);
    pl_array fa = PL_ARRAY(fx, PL_F32, 16, 128), fo = PL_ARRAY(fy, PL_F32, 16, 128);
    rc = pl_pallas_call(&call, &fa, &fo, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "in0", "BoundedSlice", "only pltpu_emit_pipeline", "K8");
    free(x), free(y), free(fx), free(fy);
}
