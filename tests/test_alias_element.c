/* tests/test_alias_element.c: input_output_aliases (rule M6) and element
 * dimensions in BlockSpecs (rule B5). */
#include "helpers.h"

/* ---- M6 ------------------------------------------------------------------------ */

/* Adds one to every other row block of x, in place: blocks the kernel never
 * selects keep the input's values (M6). */
static void bump_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_ref x = refs[0], o = refs[1];
    for (int64_t i = 0; i < o.shape[0]; i++)
        for (int64_t j = 0; j < o.shape[1]; j++) pl_set_at(c, o, pl_get_at(c, x, i, j) + 1, i, j);
}

static void every_other(const int64_t *g, const pl_ref *pf, int64_t *b, void *u)
{
    (void)pf, (void)u;
    b[0] = 2 * g[0];
    b[1] = 0;
}

static pl_call bump_call(int64_t blocks)
{
    pl_call call = {
        .name = "bump", .kernel = bump_kernel, .grid_rank = 1, .grid = {blocks / 2},
        .n_in = 1, .in = {PL_BLOCK(PL_MAP_FN(every_other, NULL), 8, 128)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP_FN(every_other, NULL), 8, 128)},
        .n_alias = 1, .alias = {{.in = 0, .out = 0}},
    };
    return call;
}

Test(alias, M6_unwritten_blocks_keep_the_input)
{
    th_io io = th_io_2d(4 * 8, 128);
    pl_call call = bump_call(4);
    pl_report rep;
    cr_assert_eq(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), PL_OK, "%s", rep.error);
    for (int64_t e = 0; e < io.n; e++) {
        int64_t block = e / (8 * 128);
        float want = io.in[e] + (block % 2 == 0 ? 1.0f : 0.0f);
        cr_assert_eq(io.out[e], want, "element %lld of block %lld: %g, want %g", (long long)e, (long long)block,
                     io.out[e], want);
    }
    cr_assert_eq(io.in[8 * 128], 8 * 128 * 0.5f, "the caller's input is not written when out has its own buffer");
    th_io_free(&io);
}

Test(alias, M6_in_place_when_the_buffers_are_one)
{
    float *x = th_f32_seq(4 * 8 * 128);
    pl_array a = PL_ARRAY(x, PL_F32, 32, 128), o = a;
    pl_call call = bump_call(4);
    pl_report rep;
    cr_assert_eq(pl_pallas_call(&call, &a, &o, NULL, &rep), PL_OK, "%s", rep.error);
    cr_assert_eq(x[0], 1.0f);
    cr_assert_eq(x[8 * 128], 8 * 128 * 0.5f, "block 1 is untouched");
    free(x);
}

/* Without the alias, output blocks the grid never selects stay whatever the
 * caller had; with it they hold the input: the difference M6 makes. */
Test(alias, M6_without_alias_unselected_blocks_are_not_the_input)
{
    th_io io = th_io_2d(4 * 8, 128);
    pl_call call = bump_call(4);
    call.n_alias = 0;
    pl_report rep;
    cr_assert_eq(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), PL_OK, "%s", rep.error);
    cr_assert_eq(io.out[8 * 128], TH_SENTINEL);
    th_io_free(&io);
}

/* A revisit is an error (P5) unless the output aliases an input. */
static void revisit_map(const int64_t *g, const pl_ref *pf, int64_t *b, void *u)
{
    (void)pf, (void)u;
    b[0] = g[0] % 2;
    b[1] = 0;
}

Test(alias, P5_revisits_are_allowed_with_an_alias)
{
    th_io io = th_io_2d(2 * 8, 128);
    pl_call call = bump_call(2);
    call.grid[0] = 4; /* blocks 0, 1, 0, 1 */
    call.in[0].map = call.out[0].map = PL_MAP_FN(revisit_map, NULL);
    pl_report rep;
    cr_assert_eq(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), PL_OK, "%s", rep.error);
    /* each block was bumped twice: the second visit read the first's result from HBM */
    cr_assert_eq(io.out[0], io.in[0] + 2);
    cr_assert_eq(io.out[8 * 128], io.in[8 * 128] + 2);
    call.n_alias = 0;
    cr_assert_eq(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), PL_EREVISIT, "%s", rep.error);
    th_io_free(&io);
}

Test(alias, M6_bad_aliases_are_rejected)
{
    th_io io = th_io_2d(4 * 8, 128);
    pl_call call = bump_call(4);
    pl_report rep;
    call.alias[0].in = 1;
    cr_assert_eq(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), PL_EINVAL);
    cr_assert(strstr(rep.error, "rule M6"), "%s", rep.error);
    call.alias[0].in = 0;
    pl_array small = PL_ARRAY(io.out, PL_F32, 16, 128);
    cr_assert_eq(pl_pallas_call(&call, &io.a, &small, NULL, &rep), PL_EINVAL);
    cr_assert(strstr(rep.error, "same dtype and shape"), "%s", rep.error);
    cr_assert_eq(th_io_touched(&io), 0);
    th_io_free(&io);
}

/* ---- B5 ------------------------------------------------------------------------ */

/* Element offsets: grid point i reads rows [3i - 2, 3i + 6) of an array
 * padded by 2 rows before and 8 after; rows outside the array read poison. */
static void window_kernel(pl_ctx *c, pl_ref *refs) { pl_copy(c, refs[1], refs[0]); }

static void offset_map(const int64_t *g, const pl_ref *pf, int64_t *b, void *u)
{
    (void)pf, (void)u;
    b[0] = 3 * g[0]; /* an element offset into the padded array */
    b[1] = 0;
}

Test(element, B5_element_offsets_over_a_padded_array)
{
    enum { ROWS = 16, G = 6 };
    float *x = th_f32_seq(ROWS * 128), *o = th_f32_fill(G * 8 * 128, 0);
    pl_block_spec in = PL_BLOCK(PL_MAP_FN(offset_map, NULL), 8, 128);
    in.element[0] = in.element[1] = 1;
    in.pad_lo[0] = 2;
    in.pad_hi[0] = 8;
    pl_call call = {.name = "window", .kernel = window_kernel, .grid_rank = 1, .grid = {G}, .n_in = 1, .in = {in},
                    .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)}};
    pl_array a = PL_ARRAY(x, PL_F32, ROWS, 128), out = PL_ARRAY(o, PL_F32, G * 8, 128);
    pl_report rep;
    cr_assert_eq(pl_pallas_call(&call, &a, &out, NULL, &rep), PL_OK, "%s", rep.error);
    for (int g = 0; g < G; g++)
        for (int r = 0; r < 8; r++) {
            int64_t src = 3 * g + r - 2; /* the array row the window's row r shows */
            float got = o[(g * 8 + r) * 128 + 5];
            if (src >= 0 && src < ROWS) cr_assert_eq(got, x[src * 128 + 5], "g %d row %d", g, r);
            else cr_assert(got != got, "g %d row %d: padding must read as NaN, got %g", g, r, got);
        }
    cr_assert_geq(rep.n_findings, 1, "the padding reached HBM: a finding (V1)");
    cr_assert(strstr(rep.findings[0].msg, "padding"), "%s", rep.findings[0].msg);
    /* in-bounds bytes only: rows -2..-1 and 16.. are padding */
    int64_t rows_in = 0;
    for (int g = 0; g < G; g++)
        for (int r = 0; r < 8; r++) rows_in += 3 * g + r - 2 >= 0 && 3 * g + r - 2 < ROWS;
    cr_assert_eq(rep.op[0].bytes_in, rows_in * 128 * 4);
    free(x), free(o);
}

Test(element, B5_offsets_past_the_padded_array_are_an_error)
{
    float *x = th_f32_seq(16 * 128), *o = th_f32_fill(8 * 8 * 128, 0);
    pl_block_spec in = PL_BLOCK(PL_MAP_FN(offset_map, NULL), 8, 128);
    in.element[0] = in.element[1] = 1;
    pl_call call = {.name = "window", .kernel = window_kernel, .grid_rank = 1, .grid = {4}, .n_in = 1, .in = {in},
                    .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)}};
    pl_array a = PL_ARRAY(x, PL_F32, 16, 128), out = PL_ARRAY(o, PL_F32, 32, 128);
    pl_report rep;
    /* offsets 0, 3, 6, 9: the last block would end at row 17 of 16 */
    cr_assert_eq(pl_pallas_call(&call, &a, &out, NULL, &rep), PL_EINDEXMAP, "%s", rep.error);
    cr_assert(strstr(rep.error, "grid point (3)") && strstr(rep.error, "B5"), "%s", rep.error);
    free(x), free(o);
}

Test(element, B5_element_and_blocked_dims_do_not_mix)
{
    float *x = th_f32_seq(16 * 128), *o = th_f32_fill(16 * 128, 0);
    pl_block_spec in = PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128);
    in.element[0] = 1;
    pl_call call = {.name = "mix", .kernel = window_kernel, .grid_rank = 1, .grid = {2}, .n_in = 1, .in = {in},
                    .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)}};
    pl_array a = PL_ARRAY(x, PL_F32, 16, 128), out = PL_ARRAY(o, PL_F32, 16, 128);
    pl_report rep;
    cr_assert_eq(pl_validate(&call, &a, &out, NULL, &rep), PL_EBLOCKSHAPE);
    cr_assert(strstr(rep.error, "rule B5"), "%s", rep.error);
    in.element[1] = 1;
    in.pad_lo[0] = -1;
    call.in[0] = in;
    cr_assert_eq(pl_validate(&call, &a, &out, NULL, &rep), PL_EBLOCKSHAPE);
    cr_assert(strstr(rep.error, "padding must be >= 0"), "%s", rep.error);
    free(x), free(o);
}
