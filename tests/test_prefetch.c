/* tests/test_prefetch.c: scalar prefetch (rule M5) and what SMEM holds (M1).
 *
 * The first num_scalar_prefetch args of a call are copied whole into SMEM
 * before the grid: the kernel gets them first among its refs (M3), index maps
 * get them after the grid indices (B2), and they are writable and persist
 * from one grid point to the next, while the caller's arrays stay as they
 * were. SMEM holds 32-bit scalars read and written one at a time (M1): other
 * dtypes are refused before anything runs, and vector ops on an SMEM ref
 * fault with PL_ESPACE.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../kernel/pallas.h"
#include "../sim/tilesim.h"
#include "helpers.h"

/* ---- M5 / M3: what the kernel gets --------------------------------------------- */

typedef struct seen {
    int runs;
    pl_ref refs[4];     /* refs[0..3] at the first run */
    int32_t ints[3];    /* prefetch0 read with pl_get */
    float floats[2];    /* prefetch1 read with pl_get */
} seen;

static void record_kernel(pl_ctx *c, pl_ref *refs)
{
    seen *s = pl_kernel_user(c);
    if (s->runs++ == 0) {
        memcpy(s->refs, refs, sizeof s->refs);
        for (int64_t i = 0; i < 3; i++) s->ints[i] = (int32_t)pl_get_at(c, refs[0], i);
        for (int64_t i = 0; i < 2; i++) s->floats[i] = (float)pl_get_at(c, refs[1], i);
    }
    pl_copy(c, refs[3], refs[2]);
}

Test(prefetch, M5_prefetch_args_arrive_in_smem_first_among_the_refs)
{
    int32_t ints[3] = {3, -1, 7};
    float floats[2] = {0.5f, -2.25f};
    th_io io = th_io_2d(16, 256);
    pl_array args[3] = {PL_ARRAY(ints, PL_I32, 3), PL_ARRAY(floats, PL_F32, 2), io.a};
    seen s = {0};
    pl_call call = th_copy_call_2d(16, 256, 8, 128);
    call.kernel = record_kernel;
    call.user = &s;
    call.num_scalar_prefetch = 2;
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, args, &io.o, NULL, &rep), &rep);
    cr_assert_eq(th_f32_diff(io.in, io.out, io.n), 0, "the input after the prefetch args is in0");
    cr_assert_eq(s.runs, 4);

    const pl_ref *p0 = &s.refs[0], *p1 = &s.refs[1];
    cr_assert_eq(p0->space, PL_SMEM, "prefetch0 in %s, want SMEM (rule M5)", pl_memspace_name(p0->space));
    cr_assert_eq(p1->space, PL_SMEM, "prefetch1 in %s, want SMEM (rule M5)", pl_memspace_name(p1->space));
    cr_assert_eq(p0->role, PL_ROLE_PREFETCH);
    cr_assert_eq(p1->role, PL_ROLE_PREFETCH);
    cr_assert_eq(p0->arg, 0);
    cr_assert_eq(p1->arg, 1);
    cr_assert_eq(p0->dtype, PL_I32);
    cr_assert_eq(p1->dtype, PL_F32);
    cr_assert_eq(p0->rank, 1);
    cr_assert_eq(p0->shape[0], 3, "prefetch0 is copied whole: shape %lld", (long long)p0->shape[0]);
    cr_assert_eq(p1->shape[0], 2);
    cr_assert(!p0->readonly && !p1->readonly, "prefetch refs are writable (rule M5)");
    cr_assert_neq(p0->data, (void *)ints, "the kernel must see an SMEM copy, not the caller's array");
    cr_assert_neq(p1->data, (void *)floats);
    /* after the prefetch refs: inputs, outputs (M3) */
    cr_assert_eq(s.refs[2].role, PL_ROLE_IN);
    cr_assert_eq(s.refs[2].arg, 2);
    cr_assert_eq(s.refs[3].role, PL_ROLE_OUT);
    cr_assert_eq(s.refs[3].arg, 3);

    for (int i = 0; i < 3; i++) cr_assert_eq(s.ints[i], ints[i], "prefetch0[%d] = %d", i, s.ints[i]);
    for (int i = 0; i < 2; i++) cr_assert_eq(s.floats[i], floats[i], "prefetch1[%d] = %g", i, s.floats[i]);

    /* the report: prefetch first, in SMEM, copied once whole */
    cr_assert_eq(rep.n_operands, 4);
    cr_assert_str_eq(rep.op[0].name, "prefetch0");
    cr_assert_str_eq(rep.op[1].name, "prefetch1");
    cr_assert_eq(rep.op[0].role, PL_ROLE_PREFETCH);
    cr_assert_eq(rep.op[0].space, PL_SMEM);
    cr_assert_eq(rep.op[0].copies, 1);
    cr_assert_eq(rep.op[0].bytes_in, 12);
    cr_assert_eq(rep.op[1].copies, 1);
    cr_assert_eq(rep.op[1].bytes_in, 8);
    cr_assert_eq(rep.smem_bytes, 12 + 8, "SMEM use %lld, want the 20 bytes of prefetch", (long long)rep.smem_bytes);
    cr_assert_eq(rep.n_findings, 0, "%s", rep.warnings);
    th_io_free(&io);
}

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

/* ---- M5: writable, persistent across grid points ---------------------------------- */

/* o[...] = counter; counter += 1 (refs: counter, o). */
static void count_kernel(pl_ctx *c, pl_ref *refs)
{
    double v = pl_get_at(c, refs[0], 0);
    pl_fill(c, refs[1], v);
    pl_set_at(c, refs[0], v + 1, 0);
}

static pl_call count_call(int64_t gi, int64_t gj)
{
    pl_call call = {
        .name = "count", .kernel = count_kernel,
        .grid_rank = 2, .grid = {gi, gj},
        .num_scalar_prefetch = 1,
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, 1), 8, 128)},
    };
    return call;
}

/* Element (0, 0) of output block (i, j) of a (gi*8, gj*128) f32 array. */
static float block_value(const float *out, int64_t gj, int64_t i, int64_t j)
{
    return out[i * 8 * gj * 128 + j * 128];
}

Test(prefetch, M5_prefetch_is_writable_and_persists_across_grid_points)
{
    int32_t counter[1] = {100};
    float *out = th_f32_fill(3 * 8 * 4 * 128, TH_SENTINEL);
    pl_array o = PL_ARRAY(out, PL_F32, 3 * 8, 4 * 128);
    pl_call call = count_call(3, 4);
    pl_array args[1] = {PL_ARRAY(counter, PL_I32, 1)};
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, args, &o, NULL, &rep), &rep);
    for (int64_t i = 0; i < 3; i++)
        for (int64_t j = 0; j < 4; j++) {
            float want = (float)(100 + i * 4 + j), got = block_value(out, 4, i, j);
            cr_assert_eq(got, want, "block (%lld, %lld) saw counter %g, want %g: a pl_set on a prefetch ref must "
                         "persist to the next grid point (rule M5)", (long long)i, (long long)j, got, want);
        }
    cr_assert_eq(counter[0], 100, "the caller's prefetch array changed to %d", counter[0]);
    cr_assert_eq(rep.n_findings, 0, "%s", rep.warnings);

    /* a second call starts again from the caller's value */
    for (int64_t e = 0; e < 3 * 8 * 4 * 128; e++) out[e] = TH_SENTINEL;
    th_expect_ok(pl_pallas_call(&call, args, &o, NULL, &rep), &rep);
    cr_assert_eq(block_value(out, 4, 0, 0), 100.0f);
    cr_assert_eq(block_value(out, 4, 2, 3), 111.0f);
    free(out);
}

/* A model choice of walk.c: on a megacore chip each TensorCore has its own
 * SMEM, so each starts from the caller's values. */
Test(prefetch, M5_each_core_of_a_megacore_starts_from_the_callers_values)
{
    int32_t counter[1] = {7};
    float *out = th_f32_fill(2 * 8 * 3 * 128, TH_SENTINEL);
    pl_array o = PL_ARRAY(out, PL_F32, 2 * 8, 3 * 128);
    pl_call call = count_call(2, 3);
    call.semantics[0] = PL_PARALLEL;
    pl_array args[1] = {PL_ARRAY(counter, PL_I32, 1)};
    pl_options opt = {.chip = "v4"};
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, args, &o, &opt, &rep), &rep);
    cr_assert_eq(rep.cores, 2);
    for (int64_t i = 0; i < 2; i++)
        for (int64_t j = 0; j < 3; j++)
            cr_assert_eq(block_value(out, 3, i, j), (float)(7 + j), "core %lld block (%lld, %lld): %g", (long long)i,
                         (long long)i, (long long)j, block_value(out, 3, i, j));
    cr_assert_eq(counter[0], 7);
    free(out);
}

/* ---- M5: the caller's array is never modified, the SMEM copy is ------------------ */

/* Scribble over the whole table, then copy what the table held at step 0
 * into the output (refs: table, o). */
typedef struct scribble {
    int32_t first[4], later[4];
} scribble;

static void scribble_kernel(pl_ctx *c, pl_ref *refs)
{
    scribble *s = pl_kernel_user(c);
    int64_t g = pl_program_id(c, 0);
    for (int64_t i = 0; i < 4; i++) {
        int32_t v = (int32_t)pl_get_at(c, refs[0], i);
        if (g == 0) s->first[i] = v;
        else s->later[i] = v;
        pl_set_at(c, refs[0], -1000 - i - 10 * (double)g, i);
    }
    pl_fill(c, refs[1], 1.0);
}

Test(prefetch, M5_caller_prefetch_array_is_never_modified)
{
    int32_t table[4] = {4, 3, 2, 1};
    float *out = th_f32_fill(16 * 128, TH_SENTINEL);
    pl_array args[1] = {PL_ARRAY(table, PL_I32, 4)};
    pl_array o = PL_ARRAY(out, PL_F32, 16, 128);
    scribble s;
    memset(&s, 0, sizeof s);
    pl_call call = {
        .name = "scribble", .kernel = scribble_kernel, .user = &s,
        .grid_rank = 1, .grid = {2},
        .num_scalar_prefetch = 1,
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)},
    };
    for (int mode = 0; mode < 2; mode++) { /* with data, then cost-only */
        pl_options opt = {.cost_only = mode};
        pl_report rep;
        th_expect_ok(pl_pallas_call(&call, args, &o, &opt, &rep), &rep);
        for (int i = 0; i < 4; i++) {
            cr_assert_eq(table[i], 4 - i, "%s: caller's table[%d] is %d, want %d (rule M5: the kernel writes the "
                         "SMEM copy)", mode ? "cost-only" : "run", i, table[i], 4 - i);
            cr_assert_eq(s.first[i], 4 - i, "%s: step 0 read table[%d] = %d", mode ? "cost-only" : "run", i,
                         s.first[i]);
            cr_assert_eq(s.later[i], -1000 - i, "%s: step 1 read table[%d] = %d, want the -%d step 0 wrote",
                         mode ? "cost-only" : "run", i, s.later[i], 1000 + i);
        }
    }
    free(out);
}

/* A failed call leaves the caller's prefetch array alone too. */
static void set_then_fault_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_set_at(c, refs[0], 99, 0);
    pl_get_at(c, refs[0], 4); /* outside the table: faults (V2) */
}

Test(prefetch, M5_a_kernel_fault_leaves_the_callers_prefetch_alone)
{
    int32_t table[4] = {1, 2, 3, 4};
    float *out = th_f32_fill(8 * 128, TH_SENTINEL);
    pl_array args[1] = {PL_ARRAY(table, PL_I32, 4)};
    pl_array o = PL_ARRAY(out, PL_F32, 8, 128);
    pl_call call = {
        .name = "fault", .kernel = set_then_fault_kernel,
        .num_scalar_prefetch = 1,
        .n_out = 1, .out = {{0}},
    };
    pl_report rep;
    int rc = pl_pallas_call(&call, args, &o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBOUNDS, "pl_get", "scalar-prefetch", "rule V2");
    cr_assert_eq(table[0], 1, "a failed call changed the caller's table to %d", table[0]);
    cr_assert_eq(out[0], TH_SENTINEL);
    free(out);
}

Test(prefetch, M5_cost_only_still_needs_the_prefetch_data)
{
    pl_array args[1] = {PL_ARRAY(NULL, PL_I32, 4)};
    pl_array o = PL_ARRAY(NULL, PL_F32, 8, 128);
    pl_call call = count_call(1, 1);
    pl_options opt = {.cost_only = 1};
    pl_report rep;
    int rc = pl_pallas_call(&call, args, &o, &opt, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "prefetch0", "NULL");
}

/* ---- M1: SMEM holds 32-bit scalars ------------------------------------------------ */

Test(prefetch, M1_prefetch_dtypes_other_than_32bit_are_rejected)
{
    static const pl_dtype bad[] = {PL_F16}; /* bf16, i16 and i8 tables widen (M5) */
    int32_t ok_table[2] = {0, 0};
    char bytes[64] = {0};
    int runs = 0;
    float *out = th_f32_fill(8 * 128, TH_SENTINEL);
    pl_array o = PL_ARRAY(out, PL_F32, 8, 128);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        pl_array args[2] = {PL_ARRAY(ok_table, PL_I32, 2), PL_ARRAY(bytes, bad[i], 4)};
        pl_call call = count_call(1, 1);
        call.kernel = th_count_copy_kernel;
        call.user = &runs;
        call.num_scalar_prefetch = 2;
        pl_report rep;
        int rc = pl_pallas_call(&call, args, &o, NULL, &rep);
        TH_EXPECT_ERROR(rc, rep, PL_EDTYPE, "prefetch1", pl_dtype_name(bad[i]), "SMEM", "rule M1");
        rc = pl_validate(&call, args, &o, NULL, &rep);
        TH_EXPECT_ERROR(rc, rep, PL_EDTYPE, "prefetch1", pl_dtype_name(bad[i]), "rule M1");
    }
    cr_assert_eq(runs, 0, "the kernel ran %d times for a call that fails validation", runs);
    cr_assert_eq(out[0], TH_SENTINEL);

    /* both 32-bit dtypes are fine */
    float f_table[2] = {1.5f, 2.5f};
    pl_array good[2] = {PL_ARRAY(ok_table, PL_I32, 2), PL_ARRAY(f_table, PL_F32, 2)};
    pl_call call = count_call(1, 1);
    call.num_scalar_prefetch = 2;
    pl_report rep;
    th_expect_ok(pl_validate(&call, good, &o, NULL, &rep), &rep);
    free(out);
}

/* Vector ops on a prefetch ref: pl_fill(refs[0]), pl_copy from it, pl_copy
 * into it, pl_add with it, pl_dot with it (refs: f32 table (8, 128), o). */
typedef enum { VOP_FILL, VOP_COPY_FROM, VOP_COPY_INTO, VOP_ADD, VOP_DOT, VOP_N } vop;

static void vector_op_kernel(pl_ctx *c, pl_ref *refs)
{
    const vop *op = pl_kernel_user(c);
    pl_ref t = refs[0], o = refs[1];
    switch (*op) {
    case VOP_FILL: pl_fill(c, t, 0.0); break;
    case VOP_COPY_FROM: pl_copy(c, o, t); break;
    case VOP_COPY_INTO: pl_copy(c, t, o); break;
    case VOP_ADD: pl_add(c, o, o, t); break;
    case VOP_DOT: pl_dot(c, o, o, pl_ds(c, t, 0, 0, 8), 0); break;
    default: break;
    }
}

Test(prefetch, M1_vector_op_on_a_prefetch_ref_is_espace)
{
    static const char *fn[VOP_N] = {"pl_fill", "pl_copy", "pl_copy", "pl_add", "pl_dot"};
    float *table = th_f32_fill(128 * 128, 1.0f);
    float *out = th_f32_fill(8 * 128, TH_SENTINEL);
    for (vop v = 0; v < VOP_N; v++) {
        pl_array args[1] = {PL_ARRAY(table, PL_F32, 128, 128)};
        pl_array o = PL_ARRAY(out, PL_F32, 8, 128);
        pl_call call = {
            .name = "vector_on_smem", .kernel = vector_op_kernel, .user = &v,
            .grid_rank = 2, .grid = {1, 1},
            .num_scalar_prefetch = 1,
            .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, 1), 8, 128)},
        };
        pl_report rep;
        int rc = pl_pallas_call(&call, args, &o, NULL, &rep);
        TH_EXPECT_ERROR(rc, rep, PL_ESPACE, fn[v], "refs[0]", "scalar-prefetch", "SMEM", "rule M1",
                        "vector_on_smem", "(0, 0)");
        cr_assert_eq(out[0], TH_SENTINEL, "%s: a failed call wrote the output", fn[v]);
        cr_assert_eq(table[0], 1.0f, "%s: the caller's prefetch array changed", fn[v]);
    }
    free(table);
    free(out);
}

/* pl_get / pl_set are the way in, and they check bounds like any Ref (V2). */
static void oob_set_kernel(pl_ctx *c, pl_ref *refs) { pl_set_at(c, refs[0], 1, 3); }

Test(prefetch, M1_scalar_access_outside_a_prefetch_ref_is_ebounds)
{
    int32_t table[3] = {0};
    float *out = th_f32_fill(8 * 128, TH_SENTINEL);
    pl_array args[1] = {PL_ARRAY(table, PL_I32, 3)};
    pl_array o = PL_ARRAY(out, PL_F32, 8, 128);
    pl_call call = {
        .name = "oob_smem", .kernel = oob_set_kernel,
        .num_scalar_prefetch = 1,
        .n_out = 1, .out = {{0}},
    };
    pl_report rep;
    int rc = pl_pallas_call(&call, args, &o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBOUNDS, "pl_set", "(3)", "scalar-prefetch", "size 3", "rule V2");
    free(out);
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
