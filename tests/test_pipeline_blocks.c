/* tests/test_pipeline_blocks.c: BlockSpec details that only show at run
 * time: squeezed dimensions (B4) and edge blocks that hang over the array
 * (B6).
 *
 * Each test is named after the rule of docs/PALLAS.md it checks. Kernels
 * never assert: they record what they saw into a host struct reached through
 * pl_kernel_user, and the test asserts after the call, so a failure names the
 * rule rather than a longjmp out of the simulator.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../kernel/pallas.h"
#include "../sim/tilesim.h"
#include "test_pipeline_helpers.h"

/* ---- B4: squeezed dimensions -------------------------------------------------- */

typedef struct b4_state {
    const float *x;      /* (4, 16, 128) */
    int bad_rank;
    int64_t bad;
    int64_t seen;
} b4_state;

/* squeezed dim: element index 3 - g0 */
static void b4_map(const int64_t *g, const pl_ref *prefetch, int64_t *b, void *user)
{
    (void)prefetch;
    (void)user;
    b[0] = 3 - g[0];
    b[1] = g[1];
    b[2] = 0;
}

static void b4_kernel(pl_ctx *c, pl_ref *refs)
{
    b4_state *u = pl_kernel_user(c);
    pl_ref x = refs[0], y = refs[1], o = refs[2];
    int64_t i = pl_program_id(c, 0), j = pl_program_id(c, 1);
    for (int k = 0; k < 3; k++)
        if (refs[k].rank != 2 || refs[k].shape[0] != 8 || refs[k].shape[1] != 128 || refs[k].stride[0] != 128 ||
            refs[k].stride[1] != 1)
            u->bad_rank = 1;
    if (u->bad_rank) return;
    for (int64_t r = 0; r < 8; r++)
        for (int64_t col = 0; col < 128; col++) {
            u->bad += pl_get_at(c, x, r, col) != u->x[(i * 16 + j * 8 + r) * 128 + col];
            u->bad += pl_get_at(c, y, r, col) != u->x[((3 - i) * 16 + j * 8 + r) * 128 + col];
            u->seen += 2;
        }
    pl_copy(c, o, y);
}

Test(pipeline, B4_squeezed_dimension_is_dropped_and_indexes_elements)
{
    float *x = f32_iota(4 * 16 * 128), *o = f32_const(4 * 16 * 128, -1.0f);
    static b4_state u;
    u = (b4_state){.x = x};
    pl_call call = {.kernel = b4_kernel, .user = &u, .grid_rank = 2, .grid = {4, 2}, .n_in = 2,
                    .in = {PL_BLOCK(PL_MAP(0, 1, PL_ZERO), PL_SQUEEZED, 8, 128),
                           PL_BLOCK(PL_MAP_FN(b4_map, NULL), PL_SQUEEZED, 8, 128)},
                    .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, 1, PL_ZERO), PL_SQUEEZED, 8, 128)}};
    pl_array args[2] = {PL_ARRAY(x, PL_F32, 4, 16, 128), PL_ARRAY(x, PL_F32, 4, 16, 128)};
    pl_array out = PL_ARRAY(o, PL_F32, 4, 16, 128);
    pl_report rep;
    run_ok(&call, args, &out, NULL, &rep);
    cr_assert_eq(u.bad_rank, 0, "a squeezed Ref is not rank 2 (8, 128) with strides (128, 1)");
    cr_assert_eq(u.seen, 8 * 2 * 8 * 128);
    cr_assert_eq(u.bad, 0, "%lld elements differ from the slice selected by the squeezed index", (long long)u.bad);
    for (int i = 0; i < 3; i++) {
        cr_expect_eq(rep.op[i].rank, 3);
        cr_expect(rep.op[i].block[0] == 1 && rep.op[i].block[1] == 8 && rep.op[i].block[2] == 128,
                  "%s: report block (%lld, %lld, %lld), want (1, 8, 128)", rep.op[i].name,
                  (long long)rep.op[i].block[0], (long long)rep.op[i].block[1], (long long)rep.op[i].block[2]);
        cr_expect_eq(rep.op[i].block_bytes, 8 * 128 * 4);
    }
    /* o[i] = x[3 - i] */
    for (int i = 0; i < 4; i++)
        for (int e = 0; e < 16 * 128; e++)
            cr_assert_eq(o[i * 2048 + e], x[(3 - i) * 2048 + e], "o[%d] elem %d", i, e);
    cr_assert_eq(rep.op[2].writebacks, 8);
    free(x), free(o);
}

typedef struct b4b_state {
    const float *x; /* (2, 3, 8, 128) */
    int bad_rank;
    int64_t bad;
} b4b_state;

static void b4b_kernel(pl_ctx *c, pl_ref *refs)
{
    b4b_state *u = pl_kernel_user(c);
    int64_t i = pl_program_id(c, 0), j = pl_program_id(c, 1);
    if (refs[0].rank != 2 || refs[0].shape[0] != 8 || refs[0].shape[1] != 128) {
        u->bad_rank = 1;
        return;
    }
    for (int64_t r = 0; r < 8; r++)
        for (int64_t col = 0; col < 128; col++)
            u->bad += pl_get_at(c, refs[0], r, col) != u->x[((i * 3 + j) * 8 + r) * 128 + col];
}

Test(pipeline, B4_two_squeezed_dimensions)
{
    float *x = f32_iota(2 * 3 * 8 * 128);
    static b4b_state u;
    u = (b4b_state){.x = x};
    pl_call call = {.kernel = b4b_kernel, .user = &u, .grid_rank = 2, .grid = {2, 3}, .n_in = 1,
                    .in = {PL_BLOCK(PL_MAP(0, 1, PL_ZERO, PL_ZERO), PL_SQUEEZED, PL_SQUEEZED, 8, 128)}};
    pl_array args[1] = {PL_ARRAY(x, PL_F32, 2, 3, 8, 128)};
    pl_report rep;
    run_ok(&call, args, NULL, NULL, &rep);
    cr_assert_eq(u.bad_rank, 0);
    cr_assert_eq(u.bad, 0);
    cr_assert_eq(rep.op[0].copies, 6);
    free(x);
}

/* ---- B6: edge blocks ------------------------------------------------------------ */

#define B6_M 20
#define B6_N 200
#define B6_GUARD 300

typedef struct b6_state {
    const float *x;
    int64_t inb_bad, pad_bad, pad_seen, inb_seen;
    double pad_want; /* NaN: poison */
} b6_state;

static void b6_kernel(pl_ctx *c, pl_ref *refs)
{
    b6_state *u = pl_kernel_user(c);
    pl_ref x = refs[0], o = refs[1];
    int64_t i = pl_program_id(c, 0), j = pl_program_id(c, 1);
    for (int64_t r = 0; r < 8; r++)
        for (int64_t col = 0; col < 128; col++) {
            int64_t gr = i * 8 + r, gc = j * 128 + col;
            double v = pl_get_at(c, x, r, col);
            if (gr < B6_M && gc < B6_N) {
                u->inb_bad += v != u->x[gr * B6_N + gc];
                u->inb_seen++;
            } else {
                u->pad_bad += isnan(u->pad_want) ? !isnan(v) : v != u->pad_want;
                u->pad_seen++;
            }
        }
    pl_fill(c, o, (double)(i * 10 + j + 1)); /* also over the overhang */
}

static void b6_run(pl_uninit uninit)
{
    float *x = f32_iota(B6_M * B6_N);
    /* the output lives inside a larger allocation: the guard after it must
     * survive the write-back of the edge blocks */
    float *o = f32_const(B6_M * B6_N + B6_GUARD, -1.0f);
    static b6_state u;
    u = (b6_state){.x = x, .pad_want = uninit == PL_UNINIT_ZERO ? 0.0 : NAN};
    pl_call call = {.kernel = b6_kernel, .user = &u, .grid_rank = 2, .grid = {3, 2}, .n_in = 1,
                    .in = {PL_BLOCK(PL_MAP(0, 1), 8, 128)}, .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, 1), 8, 128)}};
    pl_array args[1] = {PL_ARRAY(x, PL_F32, B6_M, B6_N)};
    pl_array out = PL_ARRAY(o, PL_F32, B6_M, B6_N);
    pl_options opt = {.uninit = uninit};
    pl_report rep;
    run_ok(&call, args, &out, &opt, &rep);
    cr_assert_eq(u.inb_seen, B6_M * B6_N, "in-bounds elements seen: %lld", (long long)u.inb_seen);
    cr_assert_eq(u.inb_bad, 0, "%lld in-bounds elements of edge blocks are wrong", (long long)u.inb_bad);
    cr_assert_eq(u.pad_seen, 3 * 2 * 8 * 128 - B6_M * B6_N);
    cr_assert_eq(u.pad_bad, 0, "%lld of %lld padding elements are not %s", (long long)u.pad_bad,
                 (long long)u.pad_seen, uninit == PL_UNINIT_ZERO ? "zero" : "poison (NaN)");
    /* writes past the edge are dropped: every element holds its own block's value */
    for (int r = 0; r < B6_M; r++)
        for (int col = 0; col < B6_N; col++)
            cr_assert_eq(o[r * B6_N + col], (float)((r / 8) * 10 + col / 128 + 1),
                         "o[%d][%d] = %g: an edge block's overhang was written into a neighbour", r, col,
                         o[r * B6_N + col]);
    for (int g = 0; g < B6_GUARD; g++)
        cr_assert_eq(o[B6_M * B6_N + g], -1.0f, "write past the end of the output array (guard %d)", g);
    cr_assert_eq(rep.op[0].copies, 6);
    cr_assert_eq(rep.op[0].bytes_in, B6_M * B6_N * 4, "bytes_in = %lld, want only in-bounds bytes %d",
                 (long long)rep.op[0].bytes_in, B6_M * B6_N * 4);
    cr_assert_eq(rep.op[1].writebacks, 6);
    cr_assert_eq(rep.op[1].bytes_out, B6_M * B6_N * 4, "bytes_out = %lld, want only in-bounds bytes %d",
                 (long long)rep.op[1].bytes_out, B6_M * B6_N * 4);
    cr_assert_eq(rep.hbm_bytes, 2 * B6_M * B6_N * 4);
    free(x), free(o);
}

Test(pipeline, B6_edge_blocks_poison_padding_and_drop_overhang) { b6_run(PL_UNINIT_NAN); }

Test(pipeline, B6_edge_blocks_zero_padding_with_uninit_zero) { b6_run(PL_UNINIT_ZERO); }

/* Edge block whose block is larger than the whole array (128 > 100 columns). */
static void b6_copy_kernel(pl_ctx *c, pl_ref *refs) { pl_copy(c, refs[1], refs[0]); }

Test(pipeline, B6_block_wider_than_array)
{
    float *x = f32_iota(24 * 100), *o = f32_const(24 * 100 + 64, -1.0f);
    pl_call call = {.kernel = b6_copy_kernel, .grid_rank = 1, .grid = {3}, .n_in = 1,
                    .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)}, .n_out = 1,
                    .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)}};
    pl_array args[1] = {PL_ARRAY(x, PL_F32, 24, 100)};
    pl_array out = PL_ARRAY(o, PL_F32, 24, 100);
    pl_report rep;
    run_ok(&call, args, &out, NULL, &rep);
    for (int e = 0; e < 24 * 100; e++) cr_assert_eq(o[e], (float)e, "o[%d] = %g", e, o[e]);
    for (int g = 0; g < 64; g++) cr_assert_eq(o[24 * 100 + g], -1.0f);
    cr_assert_eq(rep.op[0].bytes_in, 24 * 100 * 4);
    cr_assert_eq(rep.op[1].bytes_out, 24 * 100 * 4);
    free(x), free(o);
}
