/* examples/kernels/matmul.c: the tiled matmul kernel and its call. */
#include "matmul.h"

void mm_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_ref x = refs[0], y = refs[1], o = refs[2], acc = refs[3];
    const mm_params *p = pl_kernel_user(c);
    int64_t k = pl_program_id(c, 2), nk = pl_num_programs(c, 2);
    if (k == 0) pl_fill(c, acc, 0.0);
    int64_t bk = x.shape[1], valid = p->k - k * bk;
    if (valid < bk) { /* B6: the last block's overhang is garbage; drop it */
        x = pl_ds(c, x, 1, 0, valid);
        y = pl_ds(c, y, 0, 0, valid);
    }
    pl_dot(c, acc, x, y, PL_DOT_ACC);
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
}
