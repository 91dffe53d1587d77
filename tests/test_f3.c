/* tests/test_f3.c: what pl_dot hands to cblas_sgemm (FINDINGS.md F3).
 *
 * OpenBLAS is not instrumented: a wrong shape or leading dimension passed to
 * cblas_sgemm writes out of bounds without a sanitizer report, and corrupts
 * the heap for a later free (F3's "kAllocBegMagic" CHECK). So these tests
 * call pl_dot on a context of their own (kernel/context.h) over buffers that
 * sit between guard bytes, and over a conversion scratch (c->tmp) of exactly
 * the size pl_dot asks for, also guarded; after the dot every guard byte and
 * every element of a parent buffer outside the view must be unchanged.
 *
 * Shapes: plain, views inside wider buffers (pl_ds on the non-last dim: the
 * leading dimension is the parent's width), rank-3 parents (pl_at), B^T,
 * bf16 / f16 operands widened through c->tmp, zero-size m, n, k, an
 * accumulator that is also an operand, and views past the end of their Ref
 * (V2, V6), which pl_dot must refuse before OpenBLAS writes past the buffer.
 */
#include <criterion/criterion.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../kernel/sanitizers.h"
#include "../kernel/context.h"
#include "../sim/tilesim.h"

#define GUARD 256          /* guard bytes on each side of a buffer */
#define GUARD_BYTE 0xA5
#define OUTSIDE 99.0       /* parent elements outside a view */

/* ---- guarded buffers ----------------------------------------------------------- */

typedef struct gbuf {
    unsigned char *mem; /* GUARD, bytes, GUARD */
    void *p;
    size_t bytes;
} gbuf;

static gbuf gb_new(size_t bytes)
{
    gbuf g = {.mem = malloc(bytes + 2 * GUARD), .bytes = bytes};
    cr_assert(g.mem, "out of host memory");
    memset(g.mem, GUARD_BYTE, bytes + 2 * GUARD);
    g.p = g.mem + GUARD;
    return g;
}

/* Guard bytes that changed. */
static int gb_broken(const gbuf *g)
{
    int bad = 0;
    for (size_t i = 0; i < GUARD; i++) bad += (g->mem[i] != GUARD_BYTE) + (g->mem[GUARD + g->bytes + i] != GUARD_BYTE);
    return bad;
}

/* ---- the context ----------------------------------------------------------------- */

static pl_ctx ctx; /* zero: checks off, not cost-only, no fault target until run_dot */

/* A rank-2 VMEM ref over data, row-major with leading dimension ld. */
static pl_ref ref2(void *data, pl_dtype dt, int64_t rows, int64_t cols, int64_t ld)
{
    pl_ref r = {.data = data, .dtype = dt, .space = PL_VMEM, .rank = 2, .arg = -1, .role = PL_ROLE_SCRATCH};
    r.shape[0] = rows, r.shape[1] = cols, r.stride[0] = ld, r.stride[1] = 1;
    return r;
}

typedef struct dot_run {
    int code;          /* the fault's code, 0 if none */
    char msg[512];
    int tmp_realloc;   /* pl_dot asked for more conversion space than the test computed */
} dot_run;

/* pl_dot on the test's context, with tmp (tmp_floats, may be NULL) as its
 * conversion space; a fault comes back as a code and a message. */
static dot_run run_dot(pl_ref acc, pl_ref a, pl_ref b, unsigned flags, float *tmp, size_t tmp_floats)
{
    static jmp_buf jb;
    static dot_run out;
    memset(&out, 0, sizeof out);
    ctx.kernel_name = "f3";
    ctx.fault = &jb;
    ctx.tmp = tmp;
    ctx.tmp_cap = tmp_floats;
    if (setjmp(jb) == 0) pl_dot(&ctx, acc, a, b, flags);
    else out.code = ctx.fault_code, snprintf(out.msg, sizeof out.msg, "%.*s", (int)sizeof out.msg - 1, ctx.fault_msg);
    if (ctx.tmp != tmp) out.tmp_realloc = 1, free(ctx.tmp);
    ctx.tmp = NULL, ctx.tmp_cap = 0, ctx.fault = NULL;
    free(ctx.ops);
    ctx.ops = NULL, ctx.n_ops = ctx.cap_ops = 0;
    return out;
}

/* ---- one operand: a view inside a guarded parent ------------------------------------ */

typedef struct opnd {
    gbuf g;
    pl_ref parent; /* rank 2, or rank 3 with the view in its last slab */
    pl_ref view;   /* rows x cols at (r0, c0) of the parent's (last) matrix */
    int64_t rows, cols, r0, c0;
} opnd;

/* rows x cols of dtype dt inside a parent (rows + pad, cols + pad), as a
 * slab of a rank-3 parent (3, ...) when rank3; pad also offsets the view. */
static opnd op_new(pl_dtype dt, int64_t rows, int64_t cols, int64_t pad, int rank3)
{
    opnd o = {.rows = rows, .cols = cols, .r0 = pad ? 1 : 0, .c0 = pad ? 2 : 0};
    int64_t pr = rows + pad, pc = cols + pad, slabs = rank3 ? 3 : 1;
    size_t es = pl_dtype_size(dt);
    o.g = gb_new((size_t)(slabs * pr * pc) * es + 1); /* + 1: never a zero-size malloc */
    for (int64_t i = 0; i < slabs * pr * pc; i++) pl_store_elem((char *)o.g.p + (size_t)i * es, dt, OUTSIDE);
    pl_ref base = ref2(o.g.p, dt, pr, pc, pc);
    if (rank3) {
        pl_ref r3 = {.data = o.g.p, .dtype = dt, .space = PL_VMEM, .rank = 3, .arg = -1, .role = PL_ROLE_SCRATCH};
        r3.shape[0] = slabs, r3.shape[1] = pr, r3.shape[2] = pc;
        r3.stride[0] = pr * pc, r3.stride[1] = pc, r3.stride[2] = 1;
        o.parent = r3;
        base = pl_at(&ctx, r3, slabs - 1);
    } else {
        o.parent = base;
    }
    o.view = pl_ds(&ctx, pl_ds(&ctx, base, 0, o.r0, rows), 1, o.c0, cols);
    return o;
}

static double op_get(const opnd *o, int64_t i, int64_t j)
{
    const pl_ref *v = &o->view;
    return pl_load_elem((const char *)v->data + (size_t)(i * v->stride[0] + j * v->stride[1]) * pl_dtype_size(v->dtype),
                        v->dtype);
}

static void op_set(opnd *o, int64_t i, int64_t j, double x)
{
    const pl_ref *v = &o->view;
    pl_store_elem((char *)v->data + (size_t)(i * v->stride[0] + j * v->stride[1]) * pl_dtype_size(v->dtype),
                  v->dtype, x);
}

/* Small integers: every product and partial sum is exact in bf16 inputs and f32 sums. */
static void op_fill(opnd *o, int salt)
{
    for (int64_t i = 0; i < o->rows; i++)
        for (int64_t j = 0; j < o->cols; j++) op_set(o, i, j, (double)((i * 7 + j * 3 + salt) % 5 - 2));
}

/* Parent elements outside the view that are no longer OUTSIDE. */
static int64_t op_outside_changed(const opnd *o)
{
    int64_t n = pl_size(o->parent), changed = 0;
    const char *view0 = o->view.data;
    size_t es = pl_dtype_size(o->parent.dtype);
    int64_t pc = o->parent.shape[o->parent.rank - 1];
    for (int64_t e = 0; e < n; e++) {
        const char *p = (const char *)o->g.p + (size_t)e * es;
        int64_t off = (int64_t)((p - view0) / (ptrdiff_t)es);
        int64_t i = off >= 0 ? off / pc : -1, j = off >= 0 ? off % pc : -1;
        int inside = off >= 0 && i < o->rows && j < o->cols;
        if (!inside && pl_load_elem(p, o->parent.dtype) != OUTSIDE) changed++;
    }
    return changed;
}

static void op_free(opnd *o) { free(o->g.mem); }

/* ---- a whole case ------------------------------------------------------------------ */

typedef struct dcase {
    int64_t m, n, k;
    pl_dtype dc, da, db;
    unsigned flags;
    int64_t pad;
    int rank3;
} dcase;

/* The floats pl_dot converts through: each operand that is not unit-stride f32. */
static size_t tmp_need(const dcase *t)
{
    size_t need = 0;
    need += t->da == PL_F32 ? 0 : (size_t)(t->m * t->k);
    need += t->db == PL_F32 ? 0 : (size_t)(t->k * t->n);
    need += t->dc == PL_F32 ? 0 : (size_t)(t->m * t->n);
    return need;
}

static void check_case(const dcase *t)
{
    int tb = (t->flags & PL_DOT_TRANS_B) != 0, acc_in = (t->flags & PL_DOT_ACC) != 0;
    opnd A = op_new(t->da, t->m, t->k, t->pad, t->rank3);
    opnd B = tb ? op_new(t->db, t->n, t->k, t->pad, t->rank3) : op_new(t->db, t->k, t->n, t->pad, t->rank3);
    opnd C = op_new(t->dc, t->m, t->n, t->pad, t->rank3);
    op_fill(&A, 1), op_fill(&B, 2), op_fill(&C, 3);
    double *want = calloc((size_t)(t->m * t->n) + 1, sizeof *want);
    cr_assert(want);
    for (int64_t i = 0; i < t->m; i++)
        for (int64_t j = 0; j < t->n; j++) {
            double s = acc_in ? op_get(&C, i, j) : 0.0;
            for (int64_t p = 0; p < t->k; p++) s += op_get(&A, i, p) * (tb ? op_get(&B, j, p) : op_get(&B, p, j));
            want[i * t->n + j] = s;
        }
    size_t need = tmp_need(t);
    gbuf T = gb_new(need * sizeof(float) + 1);
    dot_run r = run_dot(C.view, A.view, B.view, t->flags, need ? T.p : NULL, need);
    char what[160];
    snprintf(what, sizeof what, "pl_dot (%lld, %lld) %s= (%lld, %lld) @ %s, %s/%s/%s, pad %lld%s", (long long)t->m,
             (long long)t->n, acc_in ? "+" : "", (long long)t->m, (long long)t->k, tb ? "B^T" : "B",
             pl_dtype_name(t->dc), pl_dtype_name(t->da), pl_dtype_name(t->db), (long long)t->pad,
             t->rank3 ? ", rank-3 parents" : "");
    cr_expect_eq(r.code, 0, "%s faulted: %s", what, r.msg);
    cr_expect_eq(r.tmp_realloc, 0, "%s asked for more than %zu floats of conversion space", what, need);
    cr_expect_eq(gb_broken(&A.g) + gb_broken(&B.g) + gb_broken(&C.g), 0, "%s wrote past a buffer", what);
    cr_expect_eq(gb_broken(&T), 0, "%s wrote past its conversion space (%zu floats)", what, need);
    cr_expect_eq(op_outside_changed(&A) + op_outside_changed(&B), 0, "%s changed an operand", what);
    cr_expect_eq(op_outside_changed(&C), 0, "%s wrote accumulator elements outside its view", what);
    int64_t bad = 0;
    for (int64_t i = 0; i < t->m; i++)
        for (int64_t j = 0; j < t->n; j++) bad += op_get(&C, i, j) != want[i * t->n + j];
    cr_expect_eq(bad, 0, "%s: %lld elements differ from the triple loop", what, (long long)bad);
    free(want), free(T.mem);
    op_free(&A), op_free(&B), op_free(&C);
}

/* ---- shapes OpenBLAS must get right -------------------------------------------------- */

Test(f3, f32_plain_and_inside_wider_buffers)
{
    for (unsigned fl = 0; fl < 4; fl++) { /* PL_DOT_ACC, PL_DOT_TRANS_B */
        check_case(&(dcase){5, 3, 7, PL_F32, PL_F32, PL_F32, fl, 0, 0});
        check_case(&(dcase){5, 3, 7, PL_F32, PL_F32, PL_F32, fl, 4, 0}); /* ld = parent width */
        check_case(&(dcase){5, 3, 7, PL_F32, PL_F32, PL_F32, fl, 3, 1}); /* pl_at of a rank-3 parent */
        check_case(&(dcase){1, 1, 1, PL_F32, PL_F32, PL_F32, fl, 2, 0});
        check_case(&(dcase){9, 130, 17, PL_F32, PL_F32, PL_F32, fl, 5, 1});
    }
}

Test(f3, widened_operands_use_exactly_the_conversion_space)
{
    static const pl_dtype mix[][3] = {{PL_F32, PL_BF16, PL_BF16}, {PL_BF16, PL_BF16, PL_BF16},
                                      {PL_F16, PL_F16, PL_F32},   {PL_BF16, PL_F32, PL_F16},
                                      {PL_F32, PL_F32, PL_BF16},  {PL_F16, PL_F32, PL_F32}};
    for (size_t i = 0; i < sizeof mix / sizeof *mix; i++)
        for (unsigned fl = 0; fl < 4; fl++)
            for (int64_t pad = 0; pad <= 3; pad += 3) {
                check_case(&(dcase){6, 5, 4, mix[i][0], mix[i][1], mix[i][2], fl, pad, (int)pad & 1});
                check_case(&(dcase){3, 129, 2, mix[i][0], mix[i][1], mix[i][2], fl, pad, 0});
            }
}

/* ld must be >= max(1, cols): zero-size dims never reach OpenBLAS with a zero ld. */
Test(f3, zero_size_dims)
{
    static const int64_t dims[][3] = {{0, 3, 4}, {3, 0, 4}, {3, 4, 0}, {0, 0, 0}, {1, 1, 0}};
    for (size_t i = 0; i < sizeof dims / sizeof *dims; i++)
        for (unsigned fl = 0; fl < 4; fl++)
            for (int64_t pad = 0; pad <= 2; pad += 2) {
                check_case(&(dcase){dims[i][0], dims[i][1], dims[i][2], PL_F32, PL_F32, PL_F32, fl, pad, 0});
                check_case(&(dcase){dims[i][0], dims[i][1], dims[i][2], PL_BF16, PL_BF16, PL_F32, fl, pad, 1});
            }
}

/* ---- views past the end of their Ref (V2, V6) ----------------------------------------- */

/* pl_dot where operand `which` (0 acc, 1 a, 2 b) is a view one row (dim 0)
 * or column (dim 1) longer than its Ref; the other operands are big enough to
 * match. Refused with PL_EBOUNDS before anything is written. */
static void check_past(int which, int dim, unsigned flags)
{
    int tb = (flags & PL_DOT_TRANS_B) != 0;
    /* the logical dimension (0 m, 1 n, 2 k) of each operand's dims */
    int lg[3][2] = {{0, 1}, {0, 2}, {tb ? 1 : 2, tb ? 2 : 1}};
    int64_t base[3] = {4, 8, 6}, big[3] = {4, 8, 6};
    big[lg[which][dim]]++;
    gbuf g[3];
    pl_ref r[3];
    for (int i = 0; i < 3; i++) {
        const int64_t *own = i == which ? base : big; /* only `which` is too small */
        int64_t rows = own[lg[i][0]], cols = own[lg[i][1]];
        g[i] = gb_new((size_t)(rows * cols) * sizeof(float));
        for (int64_t e = 0; e < rows * cols; e++) ((float *)g[i].p)[e] = 1.0f;
        r[i] = ref2(g[i].p, PL_F32, rows, cols, cols);
        r[i] = pl_ds(&ctx, pl_ds(&ctx, r[i], 0, 0, big[lg[i][0]]), 1, 0, big[lg[i][1]]);
    }
    cr_assert(kern_is_past(&r[which]), "the test's view of operand %d is not past its Ref", which);
    int64_t acc_elems = which == 0 ? base[0] * base[1] : big[0] * big[1];
    dot_run d = run_dot(r[0], r[1], r[2], flags, NULL, 0);
    static const char *names[] = {"accumulator", "left operand", "right operand"};
    cr_expect_eq(d.code, PL_EBOUNDS, "pl_dot on a %s one %s past its Ref (flags %u): code %d, want PL_EBOUNDS "
                 "(V2); message: %s", names[which], dim ? "column" : "row", flags, d.code, d.msg);
    cr_expect(strstr(d.msg, "pl_dot") && strstr(d.msg, "V2"), "message: %s", d.msg);
    int64_t written = 0;
    for (int64_t e = 0; e < acc_elems; e++) written += ((float *)g[0].p)[e] != 1.0f;
    cr_expect_eq(written, 0, "pl_dot wrote %lld accumulator elements before refusing", (long long)written);
    for (int i = 0; i < 3; i++) cr_expect_eq(gb_broken(&g[i]), 0, "pl_dot wrote past buffer %d", i);
    for (int i = 0; i < 3; i++) free(g[i].mem);
}

Test(f3, accumulator_past_its_ref_is_refused)
{
    for (unsigned fl = 0; fl < 4; fl++) {
        check_past(0, 0, fl);
        check_past(0, 1, fl);
    }
}

Test(f3, operands_past_their_ref_are_refused)
{
    for (unsigned fl = 0; fl < 4; fl++)
        for (int which = 1; which <= 2; which++) {
            check_past(which, 0, fl);
            check_past(which, 1, fl);
        }
}

/* The same through pl_pallas_call: a kernel that widens its accumulator scratch
 * by one row with pl_ds (legal as a view, V6) and hands it to pl_dot. */
static void past_acc_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_ref acc = pl_ds(c, refs[2], 0, 0, 9); /* scratch (8, 128): one row past */
    pl_dot(c, acc, pl_ds(c, refs[0], 0, 0, 9), refs[1], 0);
}

Test(f3, pallas_call_dot_into_a_view_past_the_scratch)
{
    pl_call call = {.name = "past_acc", .kernel = past_acc_kernel, .n_scratch = 3};
    call.scratch[0] = (pl_scratch){.space = PL_VMEM, .dtype = PL_F32, .rank = 2, .shape = {16, 8}};
    call.scratch[1] = (pl_scratch){.space = PL_VMEM, .dtype = PL_F32, .rank = 2, .shape = {8, 128}};
    call.scratch[2] = (pl_scratch){.space = PL_VMEM, .dtype = PL_F32, .rank = 2, .shape = {8, 128}};
    pl_report rep;
    int rc = pl_pallas_call(&call, NULL, NULL, NULL, &rep);
    cr_expect_eq(rc, PL_EBOUNDS, "returned %d (%s): %s", rc, pl_strerror(rc), rep.error);
    cr_expect(strstr(rep.error, "pl_dot") && strstr(rep.error, "refs[2]") && strstr(rep.error, "V2"),
              "message: %s", rep.error);
}

/* ---- an accumulator that is also an operand ------------------------------------------- */

/* X = X @ ones(4, 4): every element becomes its row's sum. OpenBLAS must not
 * see C overlap A (it would read rows it already overwrote, or zero C first). */
Test(f3, accumulator_that_is_also_an_operand)
{
    for (unsigned acc = 0; acc <= PL_DOT_ACC; acc += PL_DOT_ACC) {
        float x[16], ones[16], want[16];
        for (int i = 0; i < 16; i++) x[i] = (float)(i % 5), ones[i] = 1.0f;
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++) {
                float s = acc ? x[i * 4 + j] : 0.0f;
                for (int p = 0; p < 4; p++) s += x[i * 4 + p];
                want[i * 4 + j] = s;
            }
        pl_ref X = ref2(x, PL_F32, 4, 4, 4), O = ref2(ones, PL_F32, 4, 4, 4);
        dot_run r = run_dot(X, X, O, acc, NULL, 0);
        cr_expect_eq(r.code, 0, "%s", r.msg);
        for (int e = 0; e < 16; e++)
            cr_expect_eq(x[e], want[e], "X %s= X @ ones: element %d is %g, want %g", acc ? "+" : "", e, x[e], want[e]);
        /* and as the right operand: X = ones @ X (column sums) */
        for (int i = 0; i < 16; i++) x[i] = (float)(i % 5);
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++) {
                float s = acc ? x[i * 4 + j] : 0.0f;
                for (int p = 0; p < 4; p++) s += x[p * 4 + j];
                want[i * 4 + j] = s;
            }
        r = run_dot(X, O, X, acc, NULL, 0);
        cr_expect_eq(r.code, 0, "%s", r.msg);
        for (int e = 0; e < 16; e++)
            cr_expect_eq(x[e], want[e], "X %s= ones @ X: element %d is %g, want %g", acc ? "+" : "", e, x[e], want[e]);
    }
}

/* ---- dimensions OpenBLAS cannot take ------------------------------------------------- */

/* cblas_sgemm takes int sizes: a (1, 2^31) accumulator would reach it as
 * INT_MIN (or, at 2^32 + 1, as 1: a silently wrong product). */
Test(f3, dimensions_beyond_int_are_refused)
{
    static const int64_t big[] = {(int64_t)1 << 31, ((int64_t)1 << 32) + 1};
    float a = 1, b[4] = {0}, acc[4] = {0};
    for (int i = 0; i < 2; i++) {
        pl_ref A = ref2(&a, PL_F32, 1, 1, 1), B = ref2(b, PL_F32, 1, big[i], big[i]);
        pl_ref C = ref2(acc, PL_F32, 1, big[i], big[i]);
        dot_run r = run_dot(C, A, B, 0, NULL, 0);
        cr_expect_eq(r.code, PL_ESHAPE, "a dot of n = %lld: code %d, want PL_ESHAPE; message: %s", (long long)big[i],
                     r.code, r.msg);
        cr_expect(strstr(r.msg, "pl_dot") && strstr(r.msg, "2147483647"), "message: %s", r.msg);
    }
}

/* ---- cost-only VMEM under AddressSanitizer ------------------------------------------- */


/* Cost-only runs take big VMEM buffers from mmap, which has no redzones; in
 * an ASan build they come from calloc, so that a write past one is a report,
 * not a silent overwrite of whatever is mapped next (F3). */
#if TILESIM_ASAN
#include <sanitizer/asan_interface.h>

static int past_end_poisoned = -1;

static void probe_kernel(pl_ctx *c, pl_ref *refs)
{
    (void)c;
    const char *end = (const char *)refs[0].data + (size_t)pl_size(refs[0]) * sizeof(float);
    past_end_poisoned = __asan_address_is_poisoned(end);
}

Test(f3, cost_only_vmem_has_redzones_under_asan)
{
    pl_call call = {.name = "probe", .kernel = probe_kernel, .n_scratch = 1};
    call.scratch[0] = (pl_scratch){.space = PL_VMEM, .dtype = PL_F32, .rank = 2, .shape = {256, 128}}; /* 128 KiB */
    pl_options opt = {.cost_only = 1};
    pl_report rep;
    int rc = pl_pallas_call(&call, NULL, NULL, &opt, &rep);
    cr_assert_eq(rc, PL_OK, "%s", rep.error);
    cr_expect_eq(past_end_poisoned, 1, "the byte past a 128 KiB cost-only scratch is not poisoned (%d): ASan cannot "
                 "see a write past it", past_end_poisoned);
}
#else
Test(f3, cost_only_vmem_has_redzones_under_asan) { cr_skip_test("not an AddressSanitizer build"); }
#endif
