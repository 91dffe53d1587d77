/* examples/kernels/matmul.c: the tiled matmul kernel and its call. */
#include "matmul.h"
#include "values.h"

pl_ref mm_acc(pl_ctx *c, pl_ref *refs, int acc, pl_ref o, unsigned *flags)
{
    if (pl_num_programs(c, 2) == 1) { /* one contraction step: the dot's result is a value */
        ex_values *vals = ex_values_begin(c, ex_value_bytes(PL_F32, o.shape[0], o.shape[1]));
        return ex_value(vals, PL_F32, o.shape[0], o.shape[1]);
    }
    if (pl_program_id(c, 2) == 0) pl_fill(c, refs[acc], 0.0);
    *flags |= PL_DOT_ACC;
    return refs[acc];
}

void mm_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_ref x = refs[0], y = refs[1], o = refs[2];
    const mm_params *p = pl_kernel_user(c);
    int64_t k = pl_program_id(c, 2), nk = pl_num_programs(c, 2);
    unsigned flags = 0;
    pl_ref acc = mm_acc(c, refs, 3, o, &flags);
    int64_t bk = x.shape[1], valid = p->k - k * bk;
    if (valid < bk) { /* B6: the last block's overhang is garbage; drop it */
        x = pl_ds(c, x, 1, 0, valid);
        y = pl_ds(c, y, 0, 0, valid);
    }
    pl_dot(c, acc, x, y, flags);
    if (k == nk - 1) pl_copy(c, o, acc);
}

/* ceil(a / b) without a + b - 1, which overflows for sizes near 2^63 */
static int64_t cdiv(int64_t a, int64_t b) { return a / b + (a % b != 0); }

void mm_call(pl_call *call, mm_params *p, int64_t m, int64_t n, int64_t k, int64_t bm, int64_t bn, int64_t bk)
{
    p->k = k;
    *call = (pl_call){
        .name = "matmul",
        .kernel = mm_kernel,
        .user = p,
        .grid_rank = 3,
        .grid = {cdiv(m, bm), cdiv(n, bn), cdiv(k, bk)},
        .semantics = {PL_PARALLEL, PL_PARALLEL, PL_ARBITRARY},
        .n_in = 2,
        .in = {PL_BLOCK(PL_MAP(0, 2), bm, bk), PL_BLOCK(PL_MAP(2, 1), bk, bn)},
        .n_out = 1,
        .out = {PL_BLOCK(PL_MAP(0, 1), bm, bn)},
        .n_scratch = 1,
        .scratch = {PLTPU_VMEM(PL_F32, bm, bn)},
    };
    call->in[0].name = "x";
    call->in[1].name = "y";
    call->out[0].name = "o";
    call->scratch[0].name = "acc";
    /* one contraction step: the dot's result goes straight to o (a value on
     * the way when o is not f32), as a production kernel writes it: no
     * accumulator in VMEM (issue 22) */
    if (call->grid[2] == 1) call->n_scratch = 0;
}
