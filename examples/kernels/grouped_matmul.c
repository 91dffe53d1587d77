/* examples/kernels/grouped_matmul.c: the grouped matmul kernel, its
 * table-driven index maps, the host-side tile table and the per-group check. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grouped_matmul.h"
#include "values.h"

/* ceil(a / b) without a + b - 1, which overflows for sizes near 2^63 */
static int64_t cdiv(int64_t a, int64_t b) { return a / b + (a % b != 0); }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* ---- the tile table (host) ---------------------------------------------------------- */

int gm_offsets_from_sizes(int32_t *offsets, const int64_t *sizes, int64_t groups)
{
    int64_t at = 0;
    offsets[0] = 0;
    for (int64_t g = 0; g < groups; g++) {
        if (sizes[g] < 0 || sizes[g] > INT32_MAX - at) return PL_EINVAL;
        at += sizes[g];
        offsets[g + 1] = (int32_t)at;
    }
    return PL_OK;
}

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void gm_sizes_random(int64_t *sizes, int64_t groups, int64_t m, uint64_t seed)
{
    /* groups - 1 cut points in [0, m], sorted; a quarter of the groups collapsed to empty */
    for (int64_t g = 0; g < groups; g++) sizes[g] = 0;
    int64_t *cut = malloc((size_t)(groups + 1) * sizeof *cut);
    if (!cut) { /* keep it usable: everything in the last group */
        sizes[groups - 1] = m;
        return;
    }
    cut[0] = 0;
    cut[groups] = m;
    for (int64_t g = 1; g < groups; g++) cut[g] = (int64_t)(splitmix64(&seed) % (uint64_t)(m + 1));
    for (int64_t g = 2; g < groups; g++) /* insertion sort: groups are few */
        for (int64_t h = g; h > 1 && cut[h - 1] > cut[h]; h--) {
            int64_t v = cut[h];
            cut[h] = cut[h - 1];
            cut[h - 1] = v;
        }
    for (int64_t g = 1; g < groups; g++)
        if (splitmix64(&seed) % 4 == 0) cut[g] = cut[g - 1]; /* group g - 1 empty */
    for (int64_t g = 0; g < groups; g++) sizes[g] = cut[g + 1] - cut[g];
    free(cut);
}

int gm_tiles_build(gm_tiles *t, const int32_t *offsets, int64_t groups, int64_t m, int64_t bm, char *err,
                   size_t errlen)
{
    char local[8];
    if (!err) err = local, errlen = sizeof local;
    memset(t, 0, sizeof *t);
    if (groups < 1 || m < 1 || bm < 1 || !offsets) {
        snprintf(err, errlen, "groups, M and BM must be >= 1");
        return PL_EINVAL;
    }
    if (m > INT32_MAX || groups > INT32_MAX - 1) {
        snprintf(err, errlen, "M and the group count must fit in int32 (SMEM holds 32-bit scalars, rule M1)");
        return PL_EINVAL;
    }
    if (offsets[0] != 0 || offsets[groups] != m) {
        snprintf(err, errlen, "group offsets must run from 0 to M = %lld; they run from %d to %d", (long long)m,
                 offsets[0], offsets[groups]);
        return PL_EINVAL;
    }
    int64_t n = 0;
    for (int64_t g = 0; g < groups; g++) {
        int64_t lo = offsets[g], hi = offsets[g + 1];
        if (hi < lo) {
            snprintf(err, errlen, "group %lld ends (%lld) before it starts (%lld): offsets must not decrease",
                     (long long)g, (long long)hi, (long long)lo);
            return PL_EINVAL;
        }
        if (hi > lo) n += (hi - 1) / bm - lo / bm + 1;
        else t->empty_groups++;
    }
    t->offsets = malloc((size_t)(groups + 1) * sizeof *t->offsets);
    t->tile_rb = malloc((size_t)n * sizeof *t->tile_rb);
    t->tile_group = malloc((size_t)n * sizeof *t->tile_group);
    if (!t->offsets || !t->tile_rb || !t->tile_group) {
        gm_tiles_free(t);
        snprintf(err, errlen, "out of host memory for %lld tiles", (long long)n);
        return PL_ENOMEM;
    }
    memcpy(t->offsets, offsets, (size_t)(groups + 1) * sizeof *offsets);
    int64_t at = 0;
    for (int64_t g = 0; g < groups; g++) {
        int64_t lo = offsets[g], hi = offsets[g + 1];
        if (hi == lo) continue;
        for (int64_t rb = lo / bm; rb <= (hi - 1) / bm; rb++) {
            t->tile_rb[at] = (int32_t)rb;
            t->tile_group[at] = (int32_t)g;
            at++;
        }
    }
    t->groups = groups;
    t->m = m;
    t->bm = bm;
    t->n_tiles = n;
    return PL_OK;
}

void gm_tiles_free(gm_tiles *t)
{
    free(t->offsets);
    free(t->tile_rb);
    free(t->tile_group);
    t->offsets = t->tile_rb = t->tile_group = NULL;
}

/* ---- the index maps: read the tile table (M5, B2) ------------------------------------ */

static int tile_axis(const gm_params *p) { return p->order == GM_TILES_OUTER ? 0 : 1; }
static int col_axis(const gm_params *p) { return p->order == GM_TILES_OUTER ? 1 : 0; }

static int32_t table_at(const pl_ref *prefetch, int which, int64_t t)
{
    return ((const int32_t *)prefetch[which].data)[t];
}

static void x_map(const int64_t *g, const pl_ref *prefetch, int64_t *b, void *user)
{
    const gm_params *p = user;
    b[0] = table_at(prefetch, 1, g[tile_axis(p)]); /* the tile's row block */
    b[1] = g[2];
}

static void w_map(const int64_t *g, const pl_ref *prefetch, int64_t *b, void *user)
{
    const gm_params *p = user;
    b[0] = table_at(prefetch, 2, g[tile_axis(p)]); /* squeezed: the group, an element index (B4) */
    b[1] = g[2];
    b[2] = g[col_axis(p)];
}

static void o_map(const int64_t *g, const pl_ref *prefetch, int64_t *b, void *user)
{
    const gm_params *p = user;
    b[0] = table_at(prefetch, 1, g[tile_axis(p)]);
    b[1] = g[col_axis(p)];
}

/* ---- the kernel ---------------------------------------------------------------------- */

/* refs: offsets, tile_rb, tile_group (SMEM), x (bm, bk), w (bk, bn), o (bm, bn), acc (bm, bn) f32, rows
 * (bm, 128) i32.
 * The group's first row lo comes from a table: a dynamic start, which the
 * compiler cannot prove tile-aligned (rule T9, XLA E2003), so the kernel
 * never slices at it. As megablox does, it multiplies the row block's valid
 * rows and stores with a row mask: rows >= lo (rows past the group's end
 * are the next group's, which the next tile, on the same output block,
 * overwrites). */
void gm_kernel(pl_ctx *c, pl_ref *refs)
{
    const gm_params *p = pl_kernel_user(c);
    pl_ref off = refs[0], trb = refs[1], tgr = refs[2], x = refs[3], w = refs[4], o = refs[5], acc = refs[6];
    int64_t t = pl_program_id(c, tile_axis(p)), j = pl_program_id(c, col_axis(p));
    int64_t kk = pl_program_id(c, 2), nk = pl_num_programs(c, 2);
    int64_t g = (int64_t)pl_get_at(c, tgr, t), rb = (int64_t)pl_get_at(c, trb, t);
    /* this group's rows within the row block */
    int64_t start = rb * p->bm;
    int64_t lo = max64((int64_t)pl_get_at(c, off, g), start) - start;
    int64_t vm = min64(p->bm, p->m - start); /* the row block's rows inside x (B6 edge) */
    int64_t vk = min64(p->bk, p->k - kk * p->bk), vn = min64(p->bn, p->n - j * p->bn); /* B6 edges */
    pl_ref a = pl_ds(c, pl_ds(c, acc, 0, 0, vm), 1, 0, vn);
    if (kk == 0) pl_fill(c, a, 0.0);
    pl_ref xr = pl_ds(c, pl_ds(c, x, 0, 0, vm), 1, 0, vk);
    pl_ref wr = pl_ds(c, pl_ds(c, w, 0, 0, vk), 1, 0, vn);
    pl_dot(c, a, xr, wr, PL_DOT_ACC);
    if (kk < nk - 1) return;
    ex_values *vals = ex_values_begin(c, ex_value_bytes(PL_I32, vm, 1)); /* the mask: a value, not VMEM */
    pl_ref mask = ex_value(vals, PL_I32, vm, 1); /* (vm, 1): broadcast along the columns */
    pl_iota(c, mask, 0, 0);
    pl_cmp_scalar(c, mask, mask, PL_GE, (double)lo);                      /* row >= lo */
    pl_store(c, pl_ds(c, pl_ds(c, o, 0, 0, vm), 1, 0, vn), a, &mask); /* this group's rows, and later ones' */
}

/* ---- the call -------------------------------------------------------------------------- */

int gm_call(pl_call *call, gm_params *p, const gm_tiles *t, int64_t m, int64_t n, int64_t k, int64_t bm, int64_t bn,
            int64_t bk, gm_order order, char *err, size_t errlen)
{
    char local[8];
    if (!err) err = local, errlen = sizeof local;
    if (m < 1 || n < 1 || k < 1 || bm < 1 || bn < 1 || bk < 1) {
        snprintf(err, errlen, "sizes and blocks must be >= 1");
        return PL_EINVAL;
    }
    if (!t || !t->offsets || t->m != m || t->bm != bm) {
        snprintf(err, errlen, "the tile table was built for M = %lld, BM = %lld, not M = %lld, BM = %lld",
                 t ? (long long)t->m : 0LL, t ? (long long)t->bm : 0LL, (long long)m, (long long)bm);
        return PL_EINVAL;
    }
    if (order != GM_N_OUTER && order != GM_TILES_OUTER) {
        snprintf(err, errlen, "unknown order %d", (int)order);
        return PL_EINVAL;
    }
    *p = (gm_params){.m = m, .n = n, .k = k, .bm = bm, .bn = bn, .bk = bk, .groups = t->groups, .order = order};
    int ta = order == GM_TILES_OUTER ? 0 : 1, ca = 1 - ta;
    *call = (pl_call){
        .name = "grouped_matmul",
        .kernel = gm_kernel,
        .user = p,
        .grid_rank = 3,
        .num_scalar_prefetch = 3,
        .n_in = 2,
        .in = {PL_BLOCK(PL_MAP_FN(x_map, p), bm, bk), PL_BLOCK(PL_MAP_FN(w_map, p), PL_SQUEEZED, bk, bn)},
        .n_out = 1,
        .out = {PL_BLOCK(PL_MAP_FN(o_map, p), bm, bn)},
        .n_scratch = 1,
        .scratch = {PLTPU_VMEM(PL_F32, bm, bn)},
    };
    call->grid[ta] = t->n_tiles;
    call->grid[ca] = cdiv(n, bn);
    call->grid[2] = cdiv(k, bk);
    /* columns are independent; consecutive tiles share an output block, k
     * reduces. Parallel axes form a prefix of the grid (G3): with the tiles
     * outermost, the column axis cannot be parallel. */
    call->semantics[ca] = ca == 0 ? PL_PARALLEL : PL_ARBITRARY;
    call->semantics[ta] = PL_ARBITRARY;
    call->semantics[2] = PL_ARBITRARY;
    call->in[0].name = "x";
    call->in[1].name = "w";
    call->out[0].name = "o";
    call->scratch[0].name = "acc";
    return PL_OK;
}

void gm_args(pl_array args[5], const gm_tiles *t, const pl_array *x, const pl_array *w)
{
    args[0] = PL_ARRAY(t->offsets, PL_I32, t->groups + 1);
    args[1] = PL_ARRAY(t->tile_rb, PL_I32, t->n_tiles);
    args[2] = PL_ARRAY(t->tile_group, PL_I32, t->n_tiles);
    args[3] = *x;
    args[4] = *w;
}

/* ---- the check: cblas_sgemm per group ---------------------------------------------------- */

/* How far a check is from passing: verdict first, then the error over the pass threshold. */
static double badness(const pl_check *c)
{
    return (double)c->verdict * 1e300 + (c->pass_below > 0 ? c->norm_err / c->pass_below : c->norm_err);
}

int gm_check(const gm_tiles *t, const pl_array *x, const pl_array *w, const pl_array *out, pl_check *worst,
             int64_t *worst_group, FILE *f)
{
    pl_check best = {.verdict = PL_PASS, .worst_row = -1, .worst_col = -1};
    int64_t wg = -1;
    if (!t || !x || !w || !out || x->rank != 2 || w->rank != 3 || out->rank != 2 || w->shape[0] != t->groups ||
        x->shape[0] != t->m || out->shape[0] != t->m || w->shape[1] != x->shape[1] || out->shape[1] != w->shape[2])
        return PL_EINVAL;
    int64_t k = x->shape[1], n = out->shape[1];
    size_t ex = pl_dtype_size(x->dtype), ew = pl_dtype_size(w->dtype), eo = pl_dtype_size(out->dtype);
    for (int64_t g = 0; g < t->groups; g++) {
        int64_t lo = t->offsets[g], rows = t->offsets[g + 1] - lo;
        if (rows == 0) continue;
        pl_array a = PL_ARRAY((char *)x->data + (size_t)(lo * k) * ex, x->dtype, rows, k);
        pl_array b = PL_ARRAY((char *)w->data + (size_t)(g * k * n) * ew, w->dtype, k, n);
        pl_array c = PL_ARRAY((char *)out->data + (size_t)(lo * n) * eo, out->dtype, rows, n);
        pl_check chk;
        int rc = pl_check_matmul(&a, &b, &c, &chk, NULL);
        if (rc != PL_OK && rc != PL_EVERIFY) return rc;
        if (wg < 0 || badness(&chk) > badness(&best)) {
            best = chk;
            best.worst_row += lo; /* in out's rows */
            wg = g;
        }
    }
    if (worst) *worst = best;
    if (worst_group) *worst_group = wg;
    if (f) {
        if (wg < 0) fprintf(f, "  check vs cblas_sgemm per group: every group is empty  PASS\n");
        else
            fprintf(f,
                    "  check vs cblas_sgemm per group  %lld groups (%lld empty) %s: worst in group %lld: max abs err "
                    "%.3g, normalised err %.3g (pass <= %.3g, fail > %.3g)%s  %s\n",
                    (long long)t->groups, (long long)t->empty_groups, pl_dtype_name(out->dtype), (long long)wg,
                    best.max_abs_err, best.norm_err, best.pass_below, best.fail_above,
                    best.n_nan ? ", NaN/inf where the reference is finite" : "", pl_verdict_name(best.verdict));
    }
    return best.verdict == PL_FAIL ? PL_EVERIFY : PL_OK;
}
