/* tests/test_prefetch_refs.c: what a kernel gets of scalar prefetch (rule
 * M5) and what SMEM holds (M1).
 *
 * The first num_scalar_prefetch args of a call are copied whole into SMEM
 * before the grid: the kernel gets them first among its refs (M3). SMEM holds
 * 32-bit scalars read and written one at a time (M1): other dtypes are
 * refused before anything runs, vector ops on an SMEM ref fault with
 * PL_ESPACE, and scalar access outside the ref with PL_EBOUNDS.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../kernel/pallas.h"
#include "../sim/tilesim.h"
#include "helpers.h"
#include "test_prefetch_helpers.h"

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
