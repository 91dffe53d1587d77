/* tests/test_prefetch_maps.c: index maps that read a block table from the
 * scalar prefetch refs (rules M5, B2).
 *
 * Index maps get the prefetch refs after the grid indices, every one in
 * order; a map sees the table as it was when its copy was issued (P8), and
 * the verification API never calls a table-driven map without them.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../kernel/pallas.h"
#include "../sim/tilesim.h"
#include "helpers.h"

/* ---- M5 / B2: index maps read a block table ------------------------------------- */

/* Block g of the output takes row block table[g] of the input. */
typedef struct table_map {
    int calls, null_prefetch;
    pl_memspace space;       /* of prefetch[0] as the map saw it */
    pl_role role;
} table_map;

static void table_row_map(const int64_t *g, const pl_ref *prefetch, int64_t *b, void *user)
{
    table_map *t = user;
    t->calls++;
    if (!prefetch) { /* would crash a real map: remember it, pick something harmless */
        t->null_prefetch++;
        b[0] = b[1] = 0;
        return;
    }
    t->space = prefetch[0].space;
    t->role = (pl_role)prefetch[0].role;
    b[0] = ((const int32_t *)prefetch[0].data)[g[0]];
    b[1] = 0;
}

/* The row block each step's kernel saw: its first element is row * 8 * 128 * 0.5. */
typedef struct rows_seen {
    int n;
    double first[16];
    int32_t table[16];      /* the kernel's own read of the table */
} rows_seen;

static void gather_kernel(pl_ctx *c, pl_ref *refs)
{
    rows_seen *r = pl_kernel_user(c);
    int64_t g = pl_program_id(c, 0);
    if (r->n < 16) {
        r->first[r->n] = pl_get_at(c, refs[1], 0, 0);
        r->table[r->n] = (int32_t)pl_get_at(c, refs[0], g);
        r->n++;
    }
    pl_copy(c, refs[2], refs[1]);
}

typedef struct actions {
    int n;
    pl_step_action x[16], table[16];
} actions;

static void record_actions(const pl_step_info *info, void *user)
{
    actions *a = user;
    if (info->final || a->n >= 16) return;
    a->table[a->n] = info->op[0].action;
    a->x[a->n] = info->op[1].action;
    a->n++;
}

Test(prefetch, M5_index_map_reads_a_block_table_and_picks_the_blocks)
{
    enum { STEPS = 7 };
    int32_t table[STEPS] = {5, 5, 2, 7, 7, 7, 0};
    float *in = th_f32_seq(64 * 128), *out = th_f32_fill(STEPS * 8 * 128, TH_SENTINEL);
    pl_array args[2] = {PL_ARRAY(table, PL_I32, STEPS), PL_ARRAY(in, PL_F32, 64, 128)};
    pl_array o = PL_ARRAY(out, PL_F32, STEPS * 8, 128);
    table_map tm = {0};
    rows_seen rs = {0};
    pl_call call = {
        .name = "gather", .kernel = gather_kernel, .user = &rs,
        .grid_rank = 1, .grid = {STEPS},
        .num_scalar_prefetch = 1,
        .n_in = 1, .in = {PL_BLOCK(PL_MAP_FN(table_row_map, &tm), 8, 128)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)},
    };
    call.in[0].name = "x";
    actions act = {0};
    pl_options opt = {.on_step = record_actions, .on_step_user = &act};
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, args, &o, &opt, &rep), &rep);

    cr_assert_eq(tm.null_prefetch, 0, "the index map was called %d times without the prefetch refs (rule B2)",
                 tm.null_prefetch);
    cr_assert_geq(tm.calls, STEPS);
    cr_assert_eq(tm.space, PL_SMEM, "the map's prefetch refs are in %s", pl_memspace_name(tm.space));
    cr_assert_eq(tm.role, PL_ROLE_PREFETCH);

    /* the data: output block g is input row block table[g] */
    for (int g = 0; g < STEPS; g++)
        for (int64_t e = 0; e < 8 * 128; e++) {
            float want = in[(int64_t)table[g] * 8 * 128 + e], got = out[(int64_t)g * 8 * 128 + e];
            cr_assert_eq(got, want, "output block %d element %lld: %g, want %g (input block %d)", g, (long long)e,
                         got, want, table[g]);
        }
    cr_assert_eq(rs.n, STEPS);
    for (int g = 0; g < STEPS; g++) {
        cr_assert_eq(rs.first[g], table[g] * 8 * 128 * 0.5, "step %d saw row block starting with %g, want block %d",
                     g, rs.first[g], table[g]);
        cr_assert_eq(rs.table[g], table[g]);
    }

    /* the copies: a new block at 5, 2, 7, 0; the repeats are skipped (P2) */
    cr_assert_str_eq(rep.op[1].name, "x");
    cr_assert_eq(rep.op[1].copies, 4, "x copies %lld, want 4 (blocks 5, 2, 7, 0)", (long long)rep.op[1].copies);
    cr_assert_eq(rep.op[1].skipped, 3, "x skipped %lld, want 3", (long long)rep.op[1].skipped);
    cr_assert_eq(rep.op[1].bytes_in, 4 * 8 * 128 * 4);
    cr_assert_eq(rep.op[0].copies, 1, "the table is copied once, whole, before the grid (M5)");
    cr_assert_eq(rep.op[2].writebacks, STEPS);
    static const pl_step_action want[STEPS] = {PL_ACT_COPY, PL_ACT_SKIP, PL_ACT_COPY, PL_ACT_COPY,
                                               PL_ACT_SKIP, PL_ACT_SKIP, PL_ACT_COPY};
    cr_assert_eq(act.n, STEPS);
    for (int g = 0; g < STEPS; g++) {
        cr_assert_eq(act.x[g], want[g], "step %d: x action %d, want %d", g, act.x[g], want[g]);
        cr_assert_eq(act.table[g], PL_ACT_NONE, "step %d: the prefetch table is not pipelined", g);
    }
    cr_assert_eq(rep.n_findings, 0, "%s", rep.warnings);
    free(in);
    free(out);
}

/* A map that reads prefetch1 (the second prefetch arg): the maps get all of
 * them, in order. */
static void second_table_map(const int64_t *g, const pl_ref *prefetch, int64_t *b, void *user)
{
    (void)user;
    b[0] = ((const int32_t *)prefetch[1].data)[g[0]];
    b[1] = ((const int32_t *)prefetch[0].data)[0];
}


/* out block g = x block (prefetch1[g], prefetch0[0]): refs are table0, table1, x, o */
static void copy_x_kernel(pl_ctx *c, pl_ref *refs) { pl_copy(c, refs[3], refs[2]); }

Test(prefetch, M5_index_maps_get_every_prefetch_ref_in_order)
{
    int32_t col[1] = {1}, rows[2] = {1, 0};
    th_io io = th_io_2d(16, 256);
    float *out = th_f32_fill(16 * 128, TH_SENTINEL);
    pl_array args[3] = {PL_ARRAY(col, PL_I32, 1), PL_ARRAY(rows, PL_I32, 2), io.a};
    pl_array o = PL_ARRAY(out, PL_F32, 16, 128);
    pl_call call = {
        .name = "two_tables", .kernel = copy_x_kernel,
        .grid_rank = 1, .grid = {2},
        .num_scalar_prefetch = 2,
        .n_in = 1, .in = {PL_BLOCK(PL_MAP_FN(second_table_map, NULL), 8, 128)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)},
    };
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, args, &o, NULL, &rep), &rep);
    for (int g = 0; g < 2; g++)
        for (int r = 0; r < 8; r++)
            for (int e = 0; e < 128; e++) {
                float want = io.in[(rows[g] * 8 + r) * 256 + 128 + e], got = out[(g * 8 + r) * 128 + e];
                cr_assert_eq(got, want, "out[%d][%d] = %g, want %g (block (%d, 1) of in)", g * 8 + r, e, got, want,
                             rows[g]);
            }
    cr_assert_eq(rep.op[2].copies, 2);
    free(out);
    th_io_free(&io);
}

/* ---- the verification API and table-driven maps ---------------------------------- */

/* pl_check_blame walks the output map to say which grid points wrote an
 * element. A map that reads a block table (M5) needs the prefetch refs,
 * which blame does not have: it must not call such a map with prefetch =
 * NULL (a real table-driven map would dereference NULL), nor name grid
 * points it cannot know; naming the block alone is right. The map here
 * records NULL calls instead of crashing. */
Test(prefetch, M5_blame_does_not_call_table_driven_maps_without_prefetch)
{
    enum { STEPS = 3 };
    int32_t table[STEPS] = {2, 0, 1};
    float *in = th_f32_seq(STEPS * 8 * 128), *out = th_f32_fill(STEPS * 8 * 128, TH_SENTINEL);
    pl_array args[2] = {PL_ARRAY(table, PL_I32, STEPS), PL_ARRAY(in, PL_F32, STEPS * 8, 128)};
    pl_array o = PL_ARRAY(out, PL_F32, STEPS * 8, 128);
    table_map tm = {0};
    pl_call call = {
        .name = "scatter", .kernel = th_noop_kernel,
        .grid_rank = 1, .grid = {STEPS},
        .num_scalar_prefetch = 1,
        .n_in = 1, .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP_FN(table_row_map, &tm), 8, 128)},
    };
    pl_report rep;
    th_expect_ok(pl_validate(&call, args, &o, NULL, &rep), &rep);
    char buf[256];
    int64_t elem[2] = {0, 0}; /* output block 0, written at grid point 1 (table[1] = 0) */
    int rc = pl_check_blame(&call, 0, &o, elem, buf, sizeof buf);
    cr_assert_eq(tm.null_prefetch, 0,
                 "pl_check_blame called a function-form index map %d times with prefetch = NULL; a map that reads "
                 "its block table (rule M5) would crash (blame said: \"%s\", rc %d)",
                 tm.null_prefetch, rc == PL_OK ? buf : "", rc);
    cr_assert_eq(rc, PL_OK);
    cr_assert(strstr(buf, "block (0, 0)"), "blame does not name the block: %s", buf);
    cr_assert(!strstr(buf, "(0) to (2)") && !strstr(buf, "never wrote"),
              "blame names grid points it cannot know (only grid point (1) writes block 0): %s", buf);
    free(in);
    free(out);
}

/* P8 with M5: step n + 1's copies are issued before kernel n runs, so a map
 * that reads the table sees a kernel's write to it two steps later, not one.
 * The kernel of step 0 points table[1] and table[2] at block 3; step 1 still
 * loads block 1 (its copy was issued before the write), step 2 loads 3. */
static void retarget_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_ref table = refs[0], x = refs[1], o = refs[2];
    if (pl_program_id(c, 0) == 0) {
        pl_set_at(c, table, 3, 1);
        pl_set_at(c, table, 3, 2);
    }
    pl_copy(c, o, x);
}

static void table_block_map(const int64_t *g, const pl_ref *prefetch, int64_t *b, void *user)
{
    (void)user;
    b[0] = (int64_t)((const int32_t *)prefetch[0].data)[g[0]];
    b[1] = 0;
}

Test(prefetch, M5_P8_maps_see_the_table_as_it_was_when_the_copy_was_issued)
{
    int32_t table[4] = {0, 1, 2, 3};
    float *in = th_f32_seq(4 * 8 * 128), *out = th_f32_fill(4 * 8 * 128, TH_SENTINEL);
    pl_array args[2] = {PL_ARRAY(table, PL_I32, 4), PL_ARRAY(in, PL_F32, 32, 128)};
    pl_array o = PL_ARRAY(out, PL_F32, 32, 128);
    pl_call call = {.name = "retarget", .kernel = retarget_kernel, .grid_rank = 1, .grid = {4},
                    .num_scalar_prefetch = 1, .n_in = 1, .in = {PL_BLOCK(PL_MAP_FN(table_block_map, NULL), 8, 128)},
                    .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)}};
    pl_report rep;
    cr_assert_eq(pl_pallas_call(&call, args, &o, NULL, &rep), PL_OK, "%s", rep.error);
    int want[4] = {0, 1, 3, 3}; /* the block each step copied */
    for (int s = 0; s < 4; s++)
        cr_assert_eq(out[s * 8 * 128], in[want[s] * 8 * 128], "step %d copied block %g, want %d", s,
                     out[s * 8 * 128] / (8 * 128 * 0.5f), want[s]);
    cr_assert_eq(table[1], 1, "the caller's table is never written");
    free(in), free(out);
}
