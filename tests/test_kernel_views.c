/* tests/test_kernel_views.c: views (pl_ds, pl_at) and element access that
 * stay inside the Ref, and the block ops that move data: pl_fill and pl_copy
 * (with dtype conversion, equal shapes only, empty views).
 *
 * Everything here needs a running context, so it runs inside a one-step
 * pl_pallas_call (grid ()) whose kernel calls a test body (run_body() in
 * test_kernel_helpers.h); the body works on scratch buffers (which start as
 * poison, rule V1) and copies results out through a host struct. Bodies use
 * cr_expect only, never cr_assert, so that no assertion longjmps through the
 * simulator.
 */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../kernel/pallas.h"
#include "../sim/tilesim.h"
#include "test_kernel_helpers.h"

/* ---- views ---------------------------------------------------------------------- */

typedef struct view_state {
    int ok_ds_cols, ok_ds_rows, ok_chain, ok_at, ok_at_view, ok_rank3, ok_bf16, ok_empty;
    double via_view, via_base;
    int64_t sizes[4];
} view_state;

static int check_ref(const pl_ref *r, const void *base, size_t es, int64_t off, int rank, const int64_t *shape,
                     const int64_t *stride)
{
    if (r->data != (const char *)base + off * (int64_t)es) return 0;
    if (r->rank != rank) return 0;
    for (int d = 0; d < rank; d++)
        if (r->shape[d] != shape[d] || r->stride[d] != stride[d]) return 0;
    return 1;
}

static void views_body(pl_ctx *c, pl_ref *refs, void *arg)
{
    view_state *u = arg;
    pl_ref s = refs[0], s3 = refs[1], b = refs[2]; /* f32 (8, 16), f32 (2, 3, 4), bf16 (8, 16) */
    pl_ref cols = pl_ds(c, s, 1, 4, 8);
    u->ok_ds_cols = check_ref(&cols, s.data, 4, 4, 2, (int64_t[]){8, 8}, (int64_t[]){16, 1});
    pl_ref rows = pl_ds(c, s, 0, 2, 3);
    u->ok_ds_rows = check_ref(&rows, s.data, 4, 32, 2, (int64_t[]){3, 16}, (int64_t[]){16, 1});
    pl_ref both = pl_ds(c, rows, 1, 5, 6);
    u->ok_chain = check_ref(&both, s.data, 4, 2 * 16 + 5, 2, (int64_t[]){3, 6}, (int64_t[]){16, 1});
    pl_ref row3 = pl_at(c, s, 3);
    u->ok_at = check_ref(&row3, s.data, 4, 48, 1, (int64_t[]){16}, (int64_t[]){1});
    pl_ref at_view = pl_at(c, cols, 2);
    u->ok_at_view = check_ref(&at_view, s.data, 4, 2 * 16 + 4, 1, (int64_t[]){8}, (int64_t[]){1});
    pl_ref m = pl_at(c, s3, 1);
    pl_ref v = pl_at(c, m, 2);
    pl_ref e = pl_at(c, v, 3);
    pl_ref d2 = pl_ds(c, s3, 2, 1, 2);
    u->ok_rank3 = check_ref(&m, s3.data, 4, 12, 2, (int64_t[]){3, 4}, (int64_t[]){4, 1}) &&
                  check_ref(&v, s3.data, 4, 20, 1, (int64_t[]){4}, (int64_t[]){1}) &&
                  check_ref(&e, s3.data, 4, 23, 0, NULL, NULL) &&
                  check_ref(&d2, s3.data, 4, 1, 3, (int64_t[]){2, 3, 2}, (int64_t[]){12, 4, 1});
    pl_ref bv = pl_at(c, pl_ds(c, b, 1, 4, 8), 1);
    u->ok_bf16 = check_ref(&bv, b.data, 2, 16 + 4, 1, (int64_t[]){8}, (int64_t[]){1}) && bv.dtype == PL_BF16;
    pl_ref empty = pl_ds(c, s, 1, 16, 0);
    u->ok_empty = empty.shape[1] == 0 && pl_size(empty) == 0;
    u->sizes[0] = pl_size(cols);
    u->sizes[1] = pl_size(both);
    u->sizes[2] = pl_size(e);
    u->sizes[3] = pl_size(d2);
    /* a write through a view lands on the base element it covers */
    pl_set_at(c, both, 42.5, 1, 2); /* base (2 + 1, 5 + 2) */
    u->via_base = pl_get_at(c, s, 3, 7);
    pl_set_at(c, s, -1.25, 4, 9); /* seen by cols at (4, 5) */
    u->via_view = pl_get_at(c, cols, 4, 5);
}

Test(kernel, ds_and_at_views_shape_stride_offset)
{
    static view_state u;
    pl_scratch scr[3] = {PLTPU_VMEM(PL_F32, 8, 16), PLTPU_VMEM(PL_F32, 2, 3, 4), PLTPU_VMEM(PL_BF16, 8, 16)};
    pl_report rep;
    run_body_ok(views_body, &u, scr, 3, &rep);
    cr_expect(u.ok_ds_cols, "pl_ds(s, 1, 4, 8) on (8, 16): wrong shape, stride or offset");
    cr_expect(u.ok_ds_rows, "pl_ds(s, 0, 2, 3) on (8, 16): wrong shape, stride or offset");
    cr_expect(u.ok_chain, "pl_ds of a pl_ds: wrong shape, stride or offset");
    cr_expect(u.ok_at, "pl_at(s, 3) on (8, 16): wrong shape, stride or offset");
    cr_expect(u.ok_at_view, "pl_at of a column view: wrong offset");
    cr_expect(u.ok_rank3, "views of a rank-3 ref: wrong shape, stride or offset");
    cr_expect(u.ok_bf16, "bf16 view offsets must count 2-byte elements");
    cr_expect(u.ok_empty, "an empty pl_ds at the end is legal and has size 0");
    cr_expect_eq(u.sizes[0], 64);
    cr_expect_eq(u.sizes[1], 18);
    cr_expect_eq(u.sizes[2], 1);
    cr_expect_eq(u.sizes[3], 12);
    cr_expect_eq(u.via_base, 42.5);
    cr_expect_eq(u.via_view, -1.25);
    cr_expect_eq(rep.vpu_flops, 0.0, "views and element access are not block ops");
}

typedef struct bounds_state {
    int which, reached;
} bounds_state;

static void bounds_body(pl_ctx *c, pl_ref *refs, void *arg)
{
    bounds_state *u = arg;
    pl_ref s = refs[0]; /* (8, 16) */
    switch (u->which) {
    case 0: (void)pl_get_at(c, pl_ds(c, s, 1, 10, 7), 0, 6); break; /* 10 + 6 >= 16: past the Ref (V6) */
    case 1: (void)pl_ds(c, s, 2, 0, 1); break;        /* no dimension 2 */
    case 2: (void)pl_at(c, s, 8); break;
    case 3: (void)pl_get_at(c, pl_ds(c, s, 1, 4, 8), 0, 8); break; /* inside s, outside the view */
    case 4: pl_set_at(c, s, 1.0, -1, 0); break;
    }
    u->reached = 1;
}

Test(kernel, views_and_access_stay_inside_the_ref)
{
    pl_scratch scr[1] = {PLTPU_VMEM(PL_F32, 8, 16)};
    for (int w = 0; w < 5; w++) {
        static bounds_state u;
        u = (bounds_state){.which = w};
        pl_report rep;
        int rc = run_body(bounds_body, &u, scr, 1, &rep);
        cr_expect_eq(rc, PL_EBOUNDS, "case %d: got %d (%s)", w, rc, rep.error);
        cr_expect_eq(u.reached, 0, "case %d: the kernel went on after a bad access", w);
    }
}

typedef struct getset_state {
    double bf16_tie, bf16_up, i32_trunc, i32_sat, i32_max, i8_sat, f16_inf, f32_tenth, rank0;
} getset_state;

static void getset_body(pl_ctx *c, pl_ref *refs, void *arg)
{
    getset_state *u = arg;
    pl_ref b = refs[0], i = refs[1], q = refs[2], h = refs[3], f = refs[4];
    pl_set_at(c, b, 1.0 + 0x1p-8, 0, 0);
    u->bf16_tie = pl_get_at(c, b, 0, 0);
    pl_set_at(c, b, 1.0 + 3 * 0x1p-8, 1, 1);
    u->bf16_up = pl_get_at(c, b, 1, 1);
    pl_set_at(c, i, 7.9, 2, 3);
    u->i32_trunc = pl_get_at(c, i, 2, 3);
    pl_set_at(c, i, -1e12, 0, 0);
    u->i32_sat = pl_get_at(c, i, 0, 0);
    pl_set_at(c, i, 2147483647.0, 1, 0);
    u->i32_max = pl_get_at(c, i, 1, 0);
    pl_set_at(c, q, 200.0, 3, 3);
    u->i8_sat = pl_get_at(c, q, 3, 3);
    pl_set_at(c, h, 65520.0, 0, 1);
    u->f16_inf = pl_get_at(c, h, 0, 1);
    pl_set_at(c, f, 0.1, 2, 2);
    u->f32_tenth = pl_get_at(c, f, 2, 2);
    pl_ref r0 = pl_at(c, pl_at(c, f, 3), 1);
    int64_t none[1] = {0};
    pl_set(c, r0, none, 6.5);
    u->rank0 = pl_get_at(c, f, 3, 1);
}

Test(kernel, get_set_convert_to_the_ref_dtype)
{
    static getset_state u;
    pl_scratch scr[5] = {PLTPU_VMEM(PL_BF16, 4, 4), PLTPU_VMEM(PL_I32, 4, 4), PLTPU_VMEM(PL_I8, 4, 4),
                         PLTPU_VMEM(PL_F16, 4, 4), PLTPU_VMEM(PL_F32, 4, 4)};
    pl_report rep;
    run_body_ok(getset_body, &u, scr, 5, &rep);
    cr_expect_eq(u.bf16_tie, 1.0);
    cr_expect_eq(u.bf16_up, 1.0 + 0x1p-6);
    cr_expect_eq(u.i32_trunc, 7.0);
    cr_expect_eq(u.i32_sat, (double)INT32_MIN);
    cr_expect_eq(u.i32_max, 2147483647.0);
    cr_expect_eq(u.i8_sat, 127.0);
    cr_expect(isinf(u.f16_inf) && u.f16_inf > 0);
    cr_expect_eq(u.f32_tenth, (double)0.1f);
    cr_expect_eq(u.rank0, 6.5, "a rank-0 view reads and writes its one element");
}

/* ---- fill and copy ---------------------------------------------------------------- */

typedef struct fill_state {
    double s[8 * 16];
    uint16_t bf[4 * 8];
    double h, i, q;
} fill_state;

static void fill_body(pl_ctx *c, pl_ref *refs, void *arg)
{
    fill_state *u = arg;
    pl_ref s = refs[0], b = refs[1], h = refs[2], i = refs[3], q = refs[4];
    pl_fill(c, pl_ds(c, pl_ds(c, s, 0, 2, 3), 1, 4, 8), 3.5); /* rows 2..4, cols 4..11 */
    get(c, s, u->s);
    pl_fill(c, b, 0.1);
    pl_fill(c, pl_ds(c, b, 1, 2, 3), -0.1); /* non-contiguous rows of a 16-bit ref */
    memcpy(u->bf, b.data, sizeof u->bf);
    pl_fill(c, h, 1e6);
    u->h = pl_get_at(c, h, 1, 1);
    pl_fill(c, i, -2.9);
    u->i = pl_get_at(c, i, 1, 1);
    pl_fill(c, q, 300);
    u->q = pl_get_at(c, q, 1, 1);
}

Test(kernel, fill_touches_only_its_view_and_converts)
{
    static fill_state u;
    pl_scratch scr[5] = {PLTPU_VMEM(PL_F32, 8, 16), PLTPU_VMEM(PL_BF16, 4, 8), PLTPU_VMEM(PL_F16, 2, 2),
                         PLTPU_VMEM(PL_I32, 2, 2), PLTPU_VMEM(PL_I8, 2, 2)};
    pl_report rep;
    run_body_ok(fill_body, &u, scr, 5, &rep);
    for (int r = 0; r < 8; r++)
        for (int col = 0; col < 16; col++) {
            int in = r >= 2 && r < 5 && col >= 4 && col < 12;
            double v = u.s[r * 16 + col];
            cr_expect(in ? v == 3.5 : isnan(v), "s[%d][%d] = %g after filling rows 2..4, cols 4..11", r, col, v);
        }
    for (int r = 0; r < 4; r++)
        for (int col = 0; col < 8; col++) {
            uint16_t want = pl_f32_to_bf16(col >= 2 && col < 5 ? -0.1f : 0.1f);
            cr_expect_eq(u.bf[r * 8 + col], want, "bf16 [%d][%d] = 0x%04x, want 0x%04x", r, col, u.bf[r * 8 + col],
                         want);
        }
    cr_expect(isinf(u.h), "f16 fill of 1e6 must overflow to inf, got %g", u.h);
    cr_expect_eq(u.i, -2.0);
    cr_expect_eq(u.q, 127.0);
}

#define CP_N 12

static const float cp_src[CP_N] = {1.0f, 1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, -1.0f - 0x1p-8f - 0x1p-20f,
                                   0x1.fffffep127f, -0.0f, 0.1f, 1e-40f, 2.5f, -2.5f, 3e9f, -3e9f};

typedef struct copy_state {
    float src[CP_N];
    uint16_t bf[CP_N];
    double bf_back[CP_N], h[CP_N], i32[CP_N], i8[CP_N], f_from_i[CP_N];
    double views[4 * 5];
    double dst_after[6 * 16];
} copy_state;

static void copy_body(pl_ctx *c, pl_ref *refs, void *arg)
{
    copy_state *u = arg;
    pl_ref f = refs[0], b = refs[1], back = refs[2], h = refs[3], i = refs[4], q = refs[5], fi = refs[6];
    pl_ref big = refs[7], dst = refs[8];
    double v[CP_N];
    for (int e = 0; e < CP_N; e++) v[e] = cp_src[e];
    put(c, f, v);
    pl_copy(c, b, f); /* f32 -> bf16 */
    memcpy(u->bf, b.data, sizeof u->bf);
    pl_copy(c, back, b); /* bf16 -> f32 */
    get(c, back, u->bf_back);
    pl_copy(c, h, f);
    get(c, h, u->h);
    pl_copy(c, i, f);
    get(c, i, u->i32);
    pl_copy(c, q, f);
    get(c, q, u->i8);
    pl_copy(c, fi, i); /* i32 -> f32 */
    get(c, fi, u->f_from_i);
    /* between views with gaps between rows: big (4, 20) cols 3..7 -> dst (6, 16) rows 1..4, cols 10..14 */
    double w[4 * 20];
    for (int e = 0; e < 80; e++) w[e] = e;
    put(c, big, w);
    pl_copy(c, pl_ds(c, pl_ds(c, dst, 0, 1, 4), 1, 10, 5), pl_ds(c, big, 1, 3, 5));
    get(c, dst, u->dst_after);
}

Test(kernel, copy_converts_between_dtypes)
{
    static copy_state u;
    pl_scratch scr[9] = {PLTPU_VMEM(PL_F32, 3, 4),  PLTPU_VMEM(PL_BF16, 3, 4), PLTPU_VMEM(PL_F32, 3, 4),
                         PLTPU_VMEM(PL_F16, 3, 4),  PLTPU_VMEM(PL_I32, 3, 4),  PLTPU_VMEM(PL_I8, 3, 4),
                         PLTPU_VMEM(PL_F32, 3, 4),  PLTPU_VMEM(PL_F32, 4, 20), PLTPU_VMEM(PL_F32, 6, 16)};
    pl_report rep;
    run_body_ok(copy_body, &u, scr, 9, &rep);
    for (int e = 0; e < CP_N; e++) {
        float x = cp_src[e];
        cr_expect_eq(u.bf[e], pl_f32_to_bf16(x), "copy f32 %a -> bf16 0x%04x, want 0x%04x", (double)x, u.bf[e],
                     pl_f32_to_bf16(x));
        cr_expect(same(pl_bf16_to_f32(u.bf[e]), ref_bf16(x)), "copy f32 %a -> bf16 is not RNE", (double)x);
        cr_expect(same(u.bf_back[e], pl_bf16_to_f32(u.bf[e])), "copy bf16 -> f32 is not exact at %d", e);
        cr_expect(same(u.h[e], ref_f16(x)), "copy f32 %a -> f16 = %a, want %a", (double)x, u.h[e], ref_f16(x));
        double t = trunc((double)x);
        double w32 = t > INT32_MAX ? INT32_MAX : t < INT32_MIN ? INT32_MIN : t;
        double w8 = t > 127 ? 127 : t < -128 ? -128 : t;
        cr_expect_eq(u.i32[e], w32, "copy f32 %a -> i32 = %g, want %g", (double)x, u.i32[e], w32);
        cr_expect_eq(u.i8[e], w8, "copy f32 %a -> i8 = %g, want %g", (double)x, u.i8[e], w8);
        cr_expect_eq(u.f_from_i[e], (double)(float)w32);
    }
    cr_expect_eq(u.bf[1], 0x3f80, "1 + 2^-8 is a tie: even is 1.0");
    cr_expect_eq(u.bf[2], 0x3f82);
    cr_expect_eq(u.bf[4], 0x7f80, "FLT_MAX overflows bf16 to inf");
    cr_expect_eq(u.bf[5], 0x8000);
    for (int r = 0; r < 6; r++)
        for (int col = 0; col < 16; col++) {
            int in = r >= 1 && r < 5 && col >= 10 && col < 15;
            double v = u.dst_after[r * 16 + col], want = (r - 1) * 20 + 3 + (col - 10);
            cr_expect(in ? v == want : isnan(v), "dst[%d][%d] = %g after a view-to-view copy", r, col, v);
        }
    cr_expect_eq(rep.vpu_flops, 6.0 * CP_N + 4 * 5, "vpu_flops = %g: a copy counts one per element",
                 rep.vpu_flops);
}

static void copy_shape_body(pl_ctx *c, pl_ref *refs, void *arg)
{
    int *reached = arg;
    pl_copy(c, refs[0], refs[1]); /* (4, 8) <- (8, 4) */
    *reached = 1;
}

Test(kernel, copy_needs_equal_shapes)
{
    static int reached = 0;
    pl_scratch scr[2] = {PLTPU_VMEM(PL_F32, 4, 8), PLTPU_VMEM(PL_F32, 8, 4)};
    pl_report rep;
    int rc = run_body(copy_shape_body, &reached, scr, 2, &rep);
    cr_assert_eq(rc, PL_ESHAPE, "got %d: %s", rc, rep.error);
    cr_assert_eq(reached, 0);
}

/* Integer to narrower integer conversion keeps the low bits, as XLA's
 * convert (and numpy's astype) do: jnp.int32(300).astype(jnp.int8) == 44.
 * Saturation is for floats converted to integers only. */
typedef struct narrow_state {
    double i8[6];
} narrow_state;

static void narrow_body(pl_ctx *c, pl_ref *refs, void *arg)
{
    narrow_state *u = arg;
    put(c, refs[0], (double[]){300.0, -129.0, 127.0, -128.0, 256.0, -1.0});
    pl_copy(c, refs[1], refs[0]);
    get(c, refs[1], u->i8);
}

Test(kernel, copy_i32_to_i8_wraps_like_xla)
{
    static narrow_state u;
    pl_scratch scr[2] = {PLTPU_VMEM(PL_I32, 2, 3), PLTPU_VMEM(PL_I8, 2, 3)};
    pl_report rep;
    run_body_ok(narrow_body, &u, scr, 2, &rep);
    static const double want[6] = {44.0, 127.0, 127.0, -128.0, 0.0, -1.0};
    for (int e = 0; e < 6; e++)
        cr_expect_eq(u.i8[e], want[e], "i32 -> i8 element %d = %.0f, want %.0f (low 8 bits)", e, u.i8[e], want[e]);
}

/* Ops on empty views (a masked tail of length 0) must do nothing. */
typedef struct empty_state {
    double after[4 * 8];
} empty_state;

static void empty_body(pl_ctx *c, pl_ref *refs, void *arg)
{
    empty_state *u = arg;
    pl_ref s = refs[0], t = refs[1];
    pl_fill(c, s, 1.0);
    pl_fill(c, t, 2.0);
    pl_ref es = pl_ds(c, s, 1, 8, 0), et = pl_ds(c, t, 1, 3, 0), er = pl_ds(c, s, 0, 4, 0);
    pl_fill(c, es, 9.0);
    pl_fill(c, er, 9.0);
    pl_copy(c, es, et);
    pl_add(c, es, es, et);
    pl_relu(c, es, et);
    get(c, s, u->after);
}

Test(kernel, ops_on_empty_views_do_nothing)
{
    static empty_state u;
    pl_scratch scr[2] = {PLTPU_VMEM(PL_F32, 4, 8), PLTPU_VMEM(PL_F32, 4, 8)};
    pl_report rep;
    run_body_ok(empty_body, &u, scr, 2, &rep);
    for (int e = 0; e < 32; e++) cr_expect_eq(u.after[e], 1.0, "element %d changed by an op on an empty view", e);
}
