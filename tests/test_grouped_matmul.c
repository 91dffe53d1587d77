/* tests/test_grouped_matmul.c: the grouped (MoE-style) matmul of
 * examples/kernels/grouped_matmul.h: group offsets and a (row block, group)
 * tile table arrive by scalar prefetch (rule M5) and drive the x, w and o
 * index maps (B2, B4).
 *
 * Over several group-size patterns (empty groups first, in the middle and
 * last; groups smaller than a block; several groups inside one row block;
 * ragged M, N and K) and both dtypes: every group's rows match cblas_sgemm
 * of that group (V5) with no findings from the default checks (V1, V3, P4);
 * each output block goes to HBM once although row blocks shared by groups
 * are visited once per group (P3); the MXU does exactly 2MNK of work. The
 * tile axis outside the column axis revisits output blocks (P5).
 */
#include <cblas.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../examples/kernels/grouped_matmul.h"
#include "../kernel/pallas.h"
#include "../sim/tilesim.h"

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Pseudo-random values in [-1, 1), or small integers in [-2, 2] when exact. */
static void *random_matrix(int64_t n, pl_dtype dt, uint64_t seed, int exact)
{
    char *p = malloc((size_t)n * pl_dtype_size(dt));
    cr_assert_not_null(p);
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        double v = exact ? (double)((seed >> 33) % 5) - 2.0 : (double)(seed >> 11) / 9007199254740992.0 * 2.0 - 1.0;
        pl_store_elem(p + (size_t)i * pl_dtype_size(dt), dt, v);
    }
    return p;
}

#define MAXG 16

typedef struct gm_case {
    int64_t m, n, k, bm, bn, bk;
    pl_dtype dt;
    int64_t groups;
    int64_t sizes[MAXG];
    const char *chip;
    gm_order order;
    int exact; /* integer data: compare with a cblas_sgemm reference bit for bit */
} gm_case;

/* A case: sizes are the G group sizes; chip, order and exact default to 0. */
#define GM_CASE(M, N, K, BM, BN, BK, DT, G, ...)                                                        \
    ((gm_case){.m = (M), .n = (N), .k = (K), .bm = (BM), .bn = (BN), .bk = (BK), .dt = (DT), .groups = (G), \
               .sizes = {__VA_ARGS__}})

typedef struct gm_result {
    int rc;
    pl_report rep;
    gm_tiles tiles;
    void *x, *w, *out;
} gm_result;

static void describe(const gm_case *t, char *buf, size_t n)
{
    int at = snprintf(buf, n, "%lldx%lldx%lld %s in (%lld, %lld, %lld), sizes", (long long)t->m, (long long)t->n,
                      (long long)t->k, pl_dtype_name(t->dt), (long long)t->bm, (long long)t->bn, (long long)t->bk);
    for (int64_t g = 0; g < t->groups && at > 0 && (size_t)at < n; g++)
        at += snprintf(buf + at, n - (size_t)at, " %lld", (long long)t->sizes[g]);
}

/* Run the case (the call may fail: r->rc). */
static void gm_run(const gm_case *t, gm_result *r)
{
    char what[256], err[256];
    describe(t, what, sizeof what);
    int32_t offsets[MAXG + 1];
    cr_assert_eq(gm_offsets_from_sizes(offsets, t->sizes, t->groups), PL_OK, "%s", what);
    cr_assert_eq(offsets[t->groups], t->m, "%s: the sizes add up to %d", what, offsets[t->groups]);
    int rc = gm_tiles_build(&r->tiles, offsets, t->groups, t->m, t->bm, err, sizeof err);
    cr_assert_eq(rc, PL_OK, "%s: gm_tiles_build: %s", what, err);
    size_t es = pl_dtype_size(t->dt);
    r->x = random_matrix(t->m * t->k, t->dt, 1, t->exact);
    r->w = random_matrix(t->groups * t->k * t->n, t->dt, 2, t->exact);
    r->out = malloc((size_t)(t->m * t->n) * es);
    cr_assert_not_null(r->out);
    for (int64_t e = 0; e < t->m * t->n; e++) pl_store_elem((char *)r->out + (size_t)e * es, t->dt, NAN);
    pl_array xa = PL_ARRAY(r->x, t->dt, t->m, t->k), wa = PL_ARRAY(r->w, t->dt, t->groups, t->k, t->n);
    pl_array out = PL_ARRAY(r->out, t->dt, t->m, t->n);
    pl_array args[5];
    gm_args(args, &r->tiles, &xa, &wa);
    gm_params params;
    pl_call call;
    rc = gm_call(&call, &params, &r->tiles, t->m, t->n, t->k, t->bm, t->bn, t->bk, t->order, err, sizeof err);
    cr_assert_eq(rc, PL_OK, "%s: gm_call: %s", what, err);
    pl_options opt = {.chip = t->chip};
    r->rc = pl_pallas_call(&call, args, &out, &opt, &r->rep);
}

static void gm_free(gm_result *r)
{
    gm_tiles_free(&r->tiles);
    free(r->x);
    free(r->w);
    free(r->out);
}

/* PASS against cblas_sgemm per group, no findings, one write-back per output
 * block, 2MNK of MXU work, the tile count the sizes imply. */
static void gm_expect_pass(const gm_case *t, const gm_result *r)
{
    char what[256];
    describe(t, what, sizeof what);
    cr_assert_eq(r->rc, PL_OK, "%s: pl_pallas_call returned %d: %s", what, r->rc, r->rep.error);
    cr_assert_eq(r->rep.n_findings, 0, "%s: %d findings with the default checks:\n%s", what, r->rep.n_findings,
                 r->rep.warnings);
    pl_array xa = PL_ARRAY(r->x, t->dt, t->m, t->k), wa = PL_ARRAY(r->w, t->dt, t->groups, t->k, t->n);
    pl_array out = PL_ARRAY(r->out, t->dt, t->m, t->n);
    pl_check chk;
    int64_t wg;
    int rc = gm_check(&r->tiles, &xa, &wa, &out, &chk, &wg, NULL);
    cr_assert_eq(rc, PL_OK, "%s: gm_check returned %d", what, rc);
    cr_assert_eq(chk.verdict, PL_PASS, "%s: group %lld: %s, normalised error %g (pass <= %g) at (%lld, %lld), %lld NaN",
                 what, (long long)wg, pl_verdict_name(chk.verdict), chk.norm_err, chk.pass_below,
                 (long long)chk.worst_row, (long long)chk.worst_col, (long long)chk.n_nan);

    int64_t tiles = 0;
    for (int64_t g = 0, lo = 0; g < t->groups; lo += t->sizes[g], g++)
        if (t->sizes[g]) tiles += (lo + t->sizes[g] - 1) / t->bm - lo / t->bm + 1;
    cr_assert_eq(r->tiles.n_tiles, tiles, "%s: %lld tiles, want %lld", what, (long long)r->tiles.n_tiles,
                 (long long)tiles);
    int64_t rbs = cdiv(t->m, t->bm), nj = cdiv(t->n, t->bn), nk = cdiv(t->k, t->bk);
    cr_assert_eq(r->rep.steps, tiles * nj * nk);
    /* operands: offsets, tile_rb, tile_group, x, w, o */
    cr_assert_str_eq(r->rep.op[5].name, "o");
    cr_assert_eq(r->rep.op[5].writebacks, rbs * nj,
                 "%s: o written back %lld times, want once per output block (%lld): consecutive tiles of one row "
                 "block keep it in VMEM (P3)",
                 what, (long long)r->rep.op[5].writebacks, (long long)(rbs * nj));
    /* each tile multiplies its row block's valid rows and stores the group's
     * with a mask (a dynamic row start is E2003 on hardware, rule T9) */
    double rows = 0;
    for (int64_t i = 0; i < r->tiles.n_tiles; i++) {
        int64_t left = t->m - (int64_t)r->tiles.tile_rb[i] * t->bm;
        rows += (double)(left < t->bm ? left : t->bm);
    }
    double flops = 2.0 * rows * (double)t->n * (double)t->k;
    cr_assert_eq(r->rep.mxu_flops, flops, "%s: MXU FLOPs %g, want 2 x (tiles' rows) x N x K = %g", what,
                 r->rep.mxu_flops, flops);
    if (nk == 1) { /* one k block: copies change with the row block (x) and the group (w) only */
        int64_t nonempty = t->groups - r->tiles.empty_groups;
        cr_assert_eq(r->rep.op[3].copies, rbs == 1 ? 1 : rbs * nj, "%s: x copies %lld", what,
                     (long long)r->rep.op[3].copies);
        cr_assert_eq(r->rep.op[4].copies, nonempty * nj, "%s: w copies %lld, want %lld", what,
                     (long long)r->rep.op[4].copies, (long long)(nonempty * nj));
    }
}

static void gm_full(const gm_case *t)
{
    gm_result r = {0};
    gm_run(t, &r);
    gm_expect_pass(t, &r);
    gm_free(&r);
}

/* ---- group patterns --------------------------------------------------------------------- */

/* an empty group in the middle, one smaller than a block, groups straddling blocks */
Test(grouped_matmul, f32_empty_middle_group_and_a_small_one)
{
    gm_full(&GM_CASE(256, 256, 256, 64, 128, 128, PL_F32, 4, 100, 0, 37, 119));
}

Test(grouped_matmul, bf16_empty_middle_group_and_a_small_one)
{
    gm_full(&GM_CASE(256, 256, 256, 64, 128, 128, PL_BF16, 4, 100, 0, 37, 119));
}

/* empty groups first and last; the one non-empty group fills whole blocks */
Test(grouped_matmul, f32_empty_first_and_last_groups)
{
    gm_full(&GM_CASE(256, 256, 512, 64, 128, 256, PL_F32, 4, 0, 0, 256, 0));
}

/* six groups inside one row block: the block is visited five times */
Test(grouped_matmul, f32_many_groups_in_one_block)
{
    gm_case t = GM_CASE(64, 256, 128, 64, 128, 128, PL_F32, 6, 3, 5, 0, 1, 7, 48);
    gm_result r = {0};
    gm_run(&t, &r);
    gm_expect_pass(&t, &r);
    cr_assert_eq(r.tiles.n_tiles, 5);
    cr_assert_eq(r.rep.op[5].writebacks, 2, "one row block, two column blocks");
    gm_free(&r);
}

Test(grouped_matmul, bf16_many_groups_in_one_block)
{
    gm_full(&GM_CASE(64, 256, 128, 64, 128, 128, PL_BF16, 6, 3, 5, 0, 1, 7, 48));
}

/* group sizes that are multiples of the block: no row block is shared */
Test(grouped_matmul, f32_block_aligned_groups)
{
    gm_case t = GM_CASE(512, 128, 256, 128, 128, 128, PL_F32, 3, 128, 256, 128);
    gm_result r = {0};
    gm_run(&t, &r);
    gm_expect_pass(&t, &r);
    cr_assert_eq(r.tiles.n_tiles, 4);
    gm_free(&r);
}

/* M, N and K all ragged against their blocks (edge blocks, B6) */
Test(grouped_matmul, f32_ragged_m_n_k)
{
    gm_full(&GM_CASE(300, 200, 200, 64, 128, 128, PL_F32, 4, 120, 90, 0, 90));
}

Test(grouped_matmul, bf16_ragged_m_n_k)
{
    gm_full(&GM_CASE(300, 200, 200, 64, 128, 128, PL_BF16, 4, 120, 90, 0, 90));
}

/* one k block: the copy counts follow the row blocks and the groups */
Test(grouped_matmul, f32_one_k_block_copy_counts)
{
    gm_full(&GM_CASE(320, 256, 128, 64, 128, 128, PL_F32, 5, 70, 0, 10, 200, 40));
}

Test(grouped_matmul, f32_random_sizes)
{
    for (uint64_t seed = 1; seed <= 4; seed++) {
        gm_case t = GM_CASE(512, 256, 256, 64, 128, 128, PL_F32, 8, 0);
        gm_sizes_random(t.sizes, t.groups, t.m, seed);
        gm_full(&t);
    }
}

Test(grouped_matmul, f32_megacore_splits_the_columns)
{
    gm_case t = GM_CASE(256, 512, 256, 64, 128, 128, PL_F32, 4, 100, 0, 37, 119);
    t.chip = "v4";
    gm_result r = {0};
    gm_run(&t, &r);
    gm_expect_pass(&t, &r);
    cr_assert_eq(r.rep.cores, 2);
    gm_free(&r);
}

/* ---- an independent reference: cblas_sgemm per group, bit for bit ---------------------- */

Test(grouped_matmul, f32_exact_against_cblas_sgemm_per_group)
{
    gm_case t = GM_CASE(200, 256, 384, 64, 128, 128, PL_F32, 5, 13, 0, 64, 100, 23);
    t.exact = 1;
    gm_result r = {0};
    gm_run(&t, &r);
    gm_expect_pass(&t, &r);
    float *ref = malloc((size_t)(t.m * t.n) * sizeof *ref);
    cr_assert_not_null(ref);
    const float *x = r.x, *w = r.w, *o = r.out;
    for (int64_t g = 0, lo = 0; g < t.groups; lo += t.sizes[g], g++) {
        if (!t.sizes[g]) continue;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)t.sizes[g], (int)t.n, (int)t.k, 1.0f,
                    x + lo * t.k, (int)t.k, w + g * t.k * t.n, (int)t.n, 0.0f, ref + lo * t.n, (int)t.n);
    }
    /* small integers: every partial sum is exact, so any order gives the same bits */
    for (int64_t i = 0; i < t.m; i++)
        for (int64_t j = 0; j < t.n; j++)
            cr_assert_eq(o[i * t.n + j], ref[i * t.n + j], "out[%lld][%lld] = %g, cblas_sgemm of its group: %g",
                         (long long)i, (long long)j, o[i * t.n + j], ref[i * t.n + j]);
    free(ref);
    gm_free(&r);
}

/* ---- the order of the grid: why the tile axis sits inside the column axis ---------------- */

Test(grouped_matmul, tiles_outer_revisits_output_blocks_P5)
{
    gm_case t = GM_CASE(256, 256, 256, 64, 128, 128, PL_F32, 4, 100, 0, 37, 119);
    t.order = GM_TILES_OUTER;
    gm_result r = {0};
    gm_run(&t, &r);
    cr_assert_eq(r.rc, PL_EREVISIT, "grid (tiles, N/bn, K/bk) with two column blocks and row block 1 shared by "
                 "groups 0 and 2: want PL_EREVISIT, got %d: %s", r.rc, r.rep.error);
    cr_assert(strstr(r.rep.error, "rule P5"), "%s", r.rep.error);
    cr_assert(strstr(r.rep.error, "\"o\"") || strstr(r.rep.error, "o:"), "%s", r.rep.error);
    gm_free(&r);
}

Test(grouped_matmul, tiles_outer_is_fine_with_one_column_block)
{
    gm_case t = GM_CASE(256, 128, 256, 64, 128, 128, PL_F32, 4, 100, 0, 37, 119);
    t.order = GM_TILES_OUTER;
    gm_full(&t);
}

/* ---- order independence and the host side ------------------------------------------------ */

Test(grouped_matmul, f32_result_does_not_depend_on_the_order_of_columns)
{
    int64_t sizes[4] = {100, 0, 37, 119};
    int32_t offsets[5];
    cr_assert_eq(gm_offsets_from_sizes(offsets, sizes, 4), PL_OK);
    gm_tiles tiles;
    cr_assert_eq(gm_tiles_build(&tiles, offsets, 4, 256, 64, NULL, 0), PL_OK);
    float *x = random_matrix(256 * 256, PL_F32, 1, 0), *w = random_matrix(4 * 256 * 512, PL_F32, 2, 0);
    float *o = calloc(256 * 512, sizeof *o);
    cr_assert_not_null(o);
    pl_array xa = PL_ARRAY(x, PL_F32, 256, 256), wa = PL_ARRAY(w, PL_F32, 4, 256, 512), out = PL_ARRAY(o, PL_F32, 256, 512);
    pl_array args[5];
    gm_args(args, &tiles, &xa, &wa);
    gm_params p;
    pl_call call;
    cr_assert_eq(gm_call(&call, &p, &tiles, 256, 512, 256, 64, 128, 128, GM_N_OUTER, NULL, 0), PL_OK);
    pl_report rep;
    int rc = pl_check_order(&call, args, &out, NULL, 99, &rep);
    cr_assert_eq(rc, PL_OK, "pl_check_order: %d: %s", rc, rep.error);
    gm_tiles_free(&tiles);
    free(x), free(w), free(o);
}

Test(grouped_matmul, tile_table_and_bad_offsets)
{
    int32_t offsets[5] = {0, 100, 100, 137, 256};
    gm_tiles t;
    char err[256];
    cr_assert_eq(gm_tiles_build(&t, offsets, 4, 256, 64, err, sizeof err), PL_OK, "%s", err);
    /* group 0: rows 0-99 -> blocks 0, 1; group 2: rows 100-136 -> blocks 1, 2; group 3: rows 137-255 -> 2, 3 */
    static const int32_t rb[6] = {0, 1, 1, 2, 2, 3}, grp[6] = {0, 0, 2, 2, 3, 3};
    cr_assert_eq(t.n_tiles, 6);
    cr_assert_eq(t.empty_groups, 1);
    cr_assert_eq(memcmp(t.tile_rb, rb, sizeof rb), 0);
    cr_assert_eq(memcmp(t.tile_group, grp, sizeof grp), 0);
    gm_tiles_free(&t);

    int32_t short_end[3] = {0, 10, 50};
    cr_assert_eq(gm_tiles_build(&t, short_end, 2, 64, 64, err, sizeof err), PL_EINVAL);
    cr_assert(strstr(err, "from 0 to M = 64"), "%s", err);
    int32_t late_start[3] = {4, 10, 64};
    cr_assert_eq(gm_tiles_build(&t, late_start, 2, 64, 64, err, sizeof err), PL_EINVAL);
    int32_t backwards[4] = {0, 40, 30, 64};
    cr_assert_eq(gm_tiles_build(&t, backwards, 3, 64, 64, err, sizeof err), PL_EINVAL);
    cr_assert(strstr(err, "group 1"), "%s", err);
    int64_t neg[2] = {5, -1};
    int32_t off2[3];
    cr_assert_eq(gm_offsets_from_sizes(off2, neg, 2), PL_EINVAL);

    int64_t sizes[8];
    gm_sizes_random(sizes, 8, 1000, 3);
    int64_t total = 0;
    for (int g = 0; g < 8; g++) {
        cr_assert_geq(sizes[g], 0);
        total += sizes[g];
    }
    cr_assert_eq(total, 1000);
}
