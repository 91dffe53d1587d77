/* tests/test_views_by_hand.c: a Ref a kernel makes itself from a block's
 * shape and strides (issue 24: "a view with swapped shape and strides works
 * silently but is undocumented"). A transposed view (shape and strides
 * swapped) is a view like pl_ds's: ops honour its strides. One whose
 * elements reach outside its Ref's buffer is PL_EBOUNDS naming it (V2), not
 * a read of the host's memory past the buffer. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "helpers.h"

static int64_t stride1; /* the hand-made view's second stride: 16 keeps it inside, 17 runs past the block */

/* o = x^T through a view: x is a (16, 128) block, its transposed view
 * (128, 16) with strides (1, 128); copied into a (128, 16) scratch, then
 * back through the output's own transposed view. */
static void transpose_by_views(pl_ctx *c, pl_ref *r)
{
    pl_ref t = r[0];
    t.shape[0] = 128, t.shape[1] = 16, t.stride[0] = 1, t.stride[1] = 128 + (stride1 - 16);
    pl_copy(c, r[2], t); /* scratch[i][j] = x[j][i] */
    pl_ref ot = r[1];
    ot.shape[0] = 128, ot.shape[1] = 16, ot.stride[0] = 1, ot.stride[1] = 128;
    pl_copy(c, ot, r[2]); /* o[j][i] = scratch[i][j] = x[j][i] */
}

static int run(pl_report *rep, th_io *io)
{
    *io = th_io_2d(16, 128);
    pl_call call = {.name = "views", .kernel = transpose_by_views, .grid_rank = 1, .grid = {1}, .n_in = 1,
                    .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), 16, 128)}, .n_out = 1,
                    .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 16, 128)}, .n_scratch = 1,
                    .scratch = {PLTPU_VMEM(PL_F32, 128, 16)}};
    return pl_pallas_call(&call, &io->a, &io->o, NULL, rep);
}

Test(views_by_hand, a_transposed_view_is_honoured_by_the_ops)
{
    stride1 = 16;
    pl_report rep;
    th_io io;
    th_expect_ok(run(&rep, &io), &rep);
    cr_assert_eq(th_f32_diff(io.in, io.out, io.n), 0, "x^T^T == x, element by element through the strides");
    th_io_free(&io);
}

Test(views_by_hand, a_view_reaching_outside_its_ref_is_refused_V2)
{
    stride1 = 17; /* the last column of the view starts 15 elements past the block's end */
    pl_report rep;
    th_io io;
    int rc = run(&rep, &io);
    TH_EXPECT_ERROR(rc, rep, PL_EBOUNDS, "pl_copy", "strides (1, 129)", "outside that Ref's buffer", "V2");
    th_io_free(&io);
}
