/* examples/kernels/matmul_emit.c: pl_kernel + emit_pipeline matmul (see matmul_emit.h). */
#include "matmul_emit.h"

typedef struct mme_state {
    const mme_params *p;
    pl_ref *refs;   /* a, b, c in HBM */
    pl_ref acc;     /* (bm, bn) f32, scoped */
    int one_panel;  /* a pallas_call grid point: only the panel of its program id */
} mme_state;

/* One inner step (j, k) of a panel: acc (+)= x @ y; the last k stores it. */
static void tile_body(pl_ctx *c, pl_ref *refs, const int64_t *idx, void *user)
{
    const mme_state *s = user;
    pl_ref x = refs[0], y = refs[1], o = refs[2];
    if (idx[1] == 0) pl_fill(c, s->acc, 0.0);
    pl_dot(c, s->acc, x, y, PL_DOT_ACC);
    if (idx[1] == s->p->k / s->p->bk - 1) pl_copy(c, o, s->acc);
}

/* With the accumulator live: this core's row panels, one nested pipeline each. */
static void panels(pl_ctx *c, pl_ref *scoped, void *user)
{
    mme_state *s = user;
    const mme_params *p = s->p;
    s->acc = scoped[0];
    pltpu_pipeline pipe = {
        .grid_rank = 2,
        .grid = {p->n / p->bn, p->k / p->bk},
        .n_in = 2,
        .in = {PL_BLOCK(PL_MAP(PL_ZERO, 1), p->bm, p->bk), PL_BLOCK(PL_MAP(1, 0), p->bk, p->bn)},
        .n_out = 1,
        .out = {PL_BLOCK(PL_MAP(PL_ZERO, 0), p->bm, p->bn)},
    };
    /* pl_kernel: this core's panels, core, core + cores, ...; a pallas_call over panels: its grid point's */
    int64_t first = s->one_panel ? pl_program_id(c, 0) : pl_core_index(c);
    int64_t stride = s->one_panel ? p->m : pl_num_programs(c, 0);
    for (int64_t i = first; i < p->m / p->bm; i += stride) {
        int64_t row = pl_multiple_of(c, i * p->bm, p->bm);
        pl_ref ins[2] = {pl_ds(c, s->refs[0], 0, row, p->bm), s->refs[1]};
        pl_ref out = pl_ds(c, s->refs[2], 0, row, p->bm);
        pltpu_emit_pipeline(c, &pipe, ins, &out, tile_body, s);
    }
}

void mme_kernel(pl_ctx *c, pl_ref *refs)
{
    const mme_params *p = pl_kernel_user(c);
    mme_state s = {.p = p, .refs = refs};
    pl_scratch acc = PLTPU_VMEM(PL_F32, p->bm, p->bn);
    acc.name = "acc";
    pl_run_scoped(c, &acc, 1, panels, &s);
}

void mme_panel_kernel(pl_ctx *c, pl_ref *refs)
{
    const mme_params *p = pl_kernel_user(c);
    mme_state s = {.p = p, .refs = refs, .one_panel = 1};
    pl_scratch acc = PLTPU_VMEM(PL_F32, p->bm, p->bn);
    acc.name = "acc";
    pl_run_scoped(c, &acc, 1, panels, &s);
}

void mme_call(pl_call *call, mme_params *p, int64_t m, int64_t n, int64_t kk, int64_t bm, int64_t bn, int64_t bk)
{
    *p = (mme_params){.m = m, .n = n, .k = kk, .bm = bm, .bn = bn, .bk = bk};
    *call = (pl_call){.name = "matmul_panels", .kernel = mme_panel_kernel, .user = p, .grid_rank = 1,
                      .grid = {m / bm}, .semantics = {PL_PARALLEL}, .n_in = 2,
                      .in = {{.space = PL_ANY, .name = "a"}, {.space = PL_ANY, .name = "b"}}, .n_out = 1,
                      .out = {{.space = PL_ANY, .name = "c"}}};
}

void mme_spec(pl_kernel_spec *k, mme_params *p, int64_t m, int64_t n, int64_t kk, int64_t bm, int64_t bn,
              int64_t bk)
{
    *p = (mme_params){.m = m, .n = n, .k = kk, .bm = bm, .bn = bn, .bk = bk};
    *k = (pl_kernel_spec){.name = "matmul_emit", .body = mme_kernel, .user = p, .n_in = 2, .n_out = 1,
                          .in_names = {"a", "b"}, .out_names = {"c"}};
}
