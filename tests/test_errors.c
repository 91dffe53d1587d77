/* tests/test_errors.c: the error model. Every PL_E* code a user can cause
 * with a deliberately bad call, the messages that come with them (rules B2,
 * B7, M1, M4, P5, T1, V2, V5), and the promises around them: a call that
 * fails validation leaves its outputs untouched, pl_last_error() holds the
 * message (per thread), and the process goes on after a kernel fault.
 *
 * Not covered, because no call can cause them yet: PL_ERACE and PL_EDEADLOCK
 * (no megacore split or DMA so far) and PL_ENOMEM (the host running out).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

#define MiB (1024LL * 1024LL)
#define S(...) ((const char *const[]){__VA_ARGS__, NULL})

/* ---- the status codes ------------------------------------------------------------ */

/* Every code from PL_OK down to PL_STATUS_MIN has its own name, never the
 * text of an unknown code; the code just past PL_STATUS_MIN has none, so a
 * code added without moving PL_STATUS_MIN (or without a name) fails here. */
Test(errors, every_status_code_has_a_distinct_name)
{
    const char *unknown = pl_strerror(12345);
    cr_assert(unknown && unknown[0]);
    cr_assert(PL_STATUS_MIN < PL_OK);
    for (int a = PL_OK; a >= PL_STATUS_MIN; a--) {
        const char *na = pl_strerror(a);
        cr_assert(na && na[0], "pl_strerror(%d) is empty", a);
        cr_assert_str_neq(na, unknown, "pl_strerror(%d) names no code: \"%s\"", a, na);
        for (int b = a - 1; b >= PL_STATUS_MIN; b--)
            cr_assert_str_neq(na, pl_strerror(b), "codes %d and %d share the name \"%s\"", a, b, na);
    }
    cr_assert_str_eq(pl_strerror(PL_STATUS_MIN - 1), unknown,
                     "pl_strerror(%d) has a name: PL_STATUS_MIN (%d) is not the last code", PL_STATUS_MIN - 1,
                     PL_STATUS_MIN);
    cr_assert_str_eq(pl_strerror(1), unknown, "positive codes are not status codes");
}

/* ---- failures found before running: nothing runs, outputs stay untouched --------- */

/* Run the 16x256 copy call in (8, 128) blocks after `mutate`; validation must
 * fail with `code` and the substrings, the kernel must never run, and the
 * output must still hold TH_SENTINEL everywhere. */
static void expect_rejected(void (*mutate)(pl_call *, pl_options *), int code, const char *const *subs)
{
    th_io io = th_io_2d(16, 256);
    int runs = 0;
    pl_call call = th_copy_call_2d(16, 256, 8, 128);
    call.kernel = th_count_copy_kernel;
    call.user = &runs;
    pl_options opt = {0};
    mutate(&call, &opt);
    pl_report rep;
    int rc = pl_pallas_call(&call, &io.a, &io.o, &opt, &rep);
    th_expect_error(rc, &rep, code, subs);
    cr_assert_eq(runs, 0, "the kernel ran %d times", runs);
    cr_assert_eq(rep.steps, 0);
    cr_assert_eq(th_io_touched(&io), 0, "a rejected call wrote %lld output elements", (long long)th_io_touched(&io));
    th_io_free(&io);
}

static void grid_axis_0(pl_call *c, pl_options *o) { (void)o, c->grid[0] = 0; }
static void unknown_chip(pl_call *c, pl_options *o) { (void)c, o->chip = "tpu-v0"; }
static void out_block_64_wide(pl_call *c, pl_options *o) { (void)o, c->out[0] = PL_BLOCK(PL_MAP(0, 1), 8, 64); }
static void map_axis_3(pl_call *c, pl_options *o) { (void)o, c->out[0].map = PL_MAP(3, 1); }
static void smem_bf16_scratch(pl_call *c, pl_options *o)
{
    (void)o;
    c->n_scratch = 1;
    c->scratch[0] = PLTPU_SMEM(PL_BF16, 8);
}
static void scratch_16MiB(pl_call *c, pl_options *o)
{
    (void)o;
    c->n_scratch = 1;
    c->scratch[0] = PLTPU_VMEM(PL_F32, 2048, 2048);
}

Test(errors, EINVAL_rejected_call_leaves_output_untouched)
{
    expect_rejected(grid_axis_0, PL_EINVAL, S("copy2d", "grid axis 0 has size 0"));
    expect_rejected(unknown_chip, PL_EINVAL, S("unknown chip 'tpu-v0'"));
}

Test(errors, EBLOCKSHAPE_rejected_call_leaves_output_untouched)
{
    expect_rejected(out_block_64_wide, PL_EBLOCKSHAPE, S("out0", "(8, 64)", "(16, 256)", "rule T1"));
}

Test(errors, EINDEXMAP_B2_rejected_call_leaves_output_untouched)
{
    expect_rejected(map_axis_3, PL_EINDEXMAP, S("out0", "grid axis 3", "rule B2"));
}

Test(errors, EVMEM_rejected_call_leaves_output_untouched)
{
    expect_rejected(scratch_16MiB, PL_EVMEM, S("VMEM budget exceeded", "scratch0", "rule M4"));
}

Test(errors, EDTYPE_rejected_call_leaves_output_untouched)
{
    expect_rejected(smem_bf16_scratch, PL_EDTYPE, S("scratch0", "bf16", "rule M1"));
}

/* ---- index maps at run time: B2 and B7 ------------------------------------------- */

/* A 1-D grid over a (16, 128) f32 copy in (8, 128) blocks; the input's map
 * is `in_map`, the output's a constant block (0, 0) so that it stays legal. */
static int run_map(pl_index_map in_map, int64_t steps, th_io *io, pl_report *rep)
{
    *io = th_io_2d(16, 128);
    pl_call call = {
        .name = "maps", .kernel = th_copy_kernel,
        .grid_rank = 1, .grid = {steps},
        .n_in = 1, .in = {PL_BLOCK(in_map, 8, 128)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 8, 128)},
    };
    return pl_pallas_call(&call, &io->a, &io->o, NULL, rep);
}

Test(errors, EINDEXMAP_B7_block_index_past_the_array)
{
    th_io io;
    pl_report rep;
    int rc = run_map(PL_MAP(0, PL_ZERO), 3, &io, &rep); /* 2 row blocks; grid point (2) asks for a third */
    TH_EXPECT_ERROR(rc, rep, PL_EINDEXMAP, "in0", "grid point (2)", "block index (2, 0)", "dimension 0",
                    "0..1", "rule B7");
    cr_assert_eq(rep.steps, 0, "a declarative map is checked before anything runs (T7): %lld steps ran",
                 (long long)rep.steps);
    th_io_free(&io);
}

static void past_end_map(const int64_t *g, const pl_ref *pf, int64_t *b, void *u)
{
    (void)pf, (void)u;
    b[0] = g[0];
    b[1] = 0;
}

/* A function-form map can only be checked as it runs: the grid points
 * before the bad one run, and the error names the one that failed. */
Test(errors, EINDEXMAP_B7_function_map_caught_at_run_time)
{
    th_io io;
    pl_report rep;
    int rc = run_map(PL_MAP_FN(past_end_map, NULL), 3, &io, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINDEXMAP, "in0", "grid point (2)", "block index (2, 0)", "dimension 0", "0..1",
                    "rule B7");
    cr_assert_eq(rep.steps, 2, "grid points before the bad one must run: %lld", (long long)rep.steps);
    th_io_free(&io);
}

static void negative_map(const int64_t *g, const pl_ref *pf, int64_t *b, void *u)
{
    (void)pf, (void)u;
    b[0] = g[0] - 1;
    b[1] = 0;
}

Test(errors, EINDEXMAP_B7_negative_block_index)
{
    th_io io;
    pl_report rep;
    int rc = run_map(PL_MAP_FN(negative_map, NULL), 2, &io, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINDEXMAP, "in0", "grid point (0)", "block index (-1, 0)", "rule B7");
    cr_assert_eq(rep.steps, 0);
    th_io_free(&io);
}

static void half_map(const int64_t *g, const pl_ref *pf, int64_t *b, void *u)
{
    (void)pf, (void)u;
    b[0] = g[0]; /* dimension 1 left unset */
}

Test(errors, EINDEXMAP_B2_function_map_leaves_a_dimension_unset)
{
    th_io io;
    pl_report rep;
    int rc = run_map(PL_MAP_FN(half_map, NULL), 2, &io, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINDEXMAP, "in0", "grid point (0)", "left dimension 1 unset", "rule B2");
    th_io_free(&io);
}

/* ---- P5: revisiting an output block after its write-back --------------------------- */

/* Output block row per grid point: 1, 2, then 1 again. */
static void revisit_map(const int64_t *g, const pl_ref *pf, int64_t *b, void *u)
{
    (void)pf, (void)u;
    static const int64_t rows[] = {1, 2, 1};
    b[0] = rows[g[0]];
    b[1] = 0;
}

Test(errors, EREVISIT_names_both_grid_points)
{
    th_io io = th_io_2d(24, 128);
    pl_call call = {
        .name = "revisit", .kernel = th_copy_kernel,
        .grid_rank = 1, .grid = {3},
        .n_in = 1, .in = {PL_BLOCK(PL_MAP_FN(revisit_map, NULL), 8, 128)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP_FN(revisit_map, NULL), 8, 128)},
    };
    call.out[0].name = "acc_out";
    pl_report rep;
    int rc = pl_pallas_call(&call, &io.a, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EREVISIT, "acc_out", "grid point (2) selects output block (1, 0) again",
                    "after grid point (0)", "rule P5");
    cr_assert_eq(rep.steps, 2);
    cr_assert_eq(rep.op[1].writebacks, 2);
    th_io_free(&io);
}

/* The control: an output block visited at consecutive grid points (the
 * reduction axis last) is one visit, not a revisit. */
static void strip_kernel(pl_ctx *c, pl_ref *refs)
{
    int64_t j = pl_program_id(c, 1);
    pl_copy(c, pl_ds(c, refs[1], 1, j * 128, 128), refs[0]);
}

Test(errors, EREVISIT_not_raised_for_consecutive_visits)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = {
        .name = "strips", .kernel = strip_kernel,
        .grid_rank = 2, .grid = {2, 2},
        .n_in = 1, .in = {PL_BLOCK(PL_MAP(0, 1), 8, 128)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 256)},
    };
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), &rep);
    cr_assert_eq(th_f32_diff(io.in, io.out, io.n), 0);
    cr_assert_eq(rep.op[1].writebacks, 2);
    th_io_free(&io);
}

/* ---- faults inside the kernel ---------------------------------------------------- */

typedef enum fault {
    F_GET, F_SET, F_DS, F_DS_DIM, F_AT, F_COPY_SHAPE, F_DOT_SHAPE, F_PROGRAM_ID, F_ANY_GET, F_ANY_COPY
} fault;

/* Copies in0 to out0 (or zeroes out0 when in0 is in ANY) and commits `fault`
 * at grid point (1, 0), after two clean points. */
static void fault_kernel(pl_ctx *c, pl_ref *refs)
{
    const fault *f = pl_kernel_user(c);
    pl_ref in = refs[0], out = refs[1];
    if (pl_program_id(c, 0) == 1 && pl_program_id(c, 1) == 0) switch (*f) {
        case F_GET: (void)pl_get_at(c, in, 8, 0); break;
        case F_SET: pl_set_at(c, out, 1.0, 0, -1); break;
        case F_DS: (void)pl_get_at(c, pl_ds(c, in, 1, 100, 64), 0, 40); break; /* refused where used (V6) */
        case F_DS_DIM: (void)pl_ds(c, in, 2, 0, 1); break;
        case F_AT: (void)pl_at(c, in, 8); break;
        case F_COPY_SHAPE: pl_copy(c, out, pl_ds(c, in, 0, 0, 4)); break;
        case F_DOT_SHAPE: pl_dot(c, out, in, in, PL_DOT_ACC); break;
        case F_PROGRAM_ID: (void)pl_program_id(c, 5); break;
        case F_ANY_GET: (void)pl_get_at(c, in, 0, 0); break;
        case F_ANY_COPY: pl_copy(c, out, in); break;
        }
    if (in.space == PL_ANY) pl_fill(c, out, 0.0);
    else pl_copy(c, out, in);
}

/* Run fault_kernel on the 16x256 copy call in (8, 128) blocks (the input in
 * ANY for the F_ANY_* faults); check that two grid points ran. */
static int run_fault(fault f, pl_report *rep)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = th_copy_call_2d(16, 256, 8, 128);
    call.kernel = fault_kernel;
    call.user = &f;
    if (f == F_ANY_GET || f == F_ANY_COPY) call.in[0] = (pl_block_spec){.space = PL_ANY};
    int rc = pl_pallas_call(&call, &io.a, &io.o, NULL, rep);
    cr_assert_eq(rep->steps, 2, "the fault must end the call at its grid point: %lld steps ran",
                 (long long)rep->steps);
    th_io_free(&io);
    return rc;
}

#define POINT "kernel copy2d at grid point (1, 0)"

Test(errors, EBOUNDS_pl_get_out_of_range)
{
    pl_report rep;
    int rc = run_fault(F_GET, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBOUNDS, POINT, "pl_get index (8, 0)", "refs[0] (input, VMEM f32)",
                    "dimension 0 has size 8", "rule V2");
}

Test(errors, EBOUNDS_pl_set_negative_index)
{
    pl_report rep;
    int rc = run_fault(F_SET, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBOUNDS, POINT, "pl_set index (0, -1)", "refs[1] (output, VMEM f32)",
                    "dimension 1 has size 128", "rule V2");
}

Test(errors, EBOUNDS_pl_ds_past_the_end)
{
    pl_report rep;
    int rc = run_fault(F_DS, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBOUNDS, POINT, "pl_get index (0, 40) of a view of refs[0]", "lies past the Ref",
                    "first 28 of dimension 1's 64", "rule V2");
}

Test(errors, EBOUNDS_pl_ds_on_a_missing_dimension)
{
    pl_report rep;
    int rc = run_fault(F_DS_DIM, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBOUNDS, POINT, "pl_ds on dimension 2", "rank 2", "rule V2");
}

Test(errors, EBOUNDS_pl_at_out_of_range)
{
    pl_report rep;
    int rc = run_fault(F_AT, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBOUNDS, POINT, "pl_at(8)", "refs[0]", "leading size 8", "rule V2");
}

Test(errors, EINVAL_pl_program_id_on_a_missing_axis)
{
    pl_report rep;
    int rc = run_fault(F_PROGRAM_ID, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, POINT, "pl_program_id(5)", "2 axes", "rule G2");
}

Test(errors, ESHAPE_pl_copy_mismatched_shapes)
{
    pl_report rep;
    int rc = run_fault(F_COPY_SHAPE, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_ESHAPE, POINT, "pl_copy", "refs[1] (output, VMEM f32) 'out0' has shape (8, 128)",
                    "refs[0] (input, VMEM f32) 'in0' has shape (4, 128)");
}

Test(errors, ESHAPE_pl_dot_mismatched_shapes)
{
    pl_report rep;
    int rc = run_fault(F_DOT_SHAPE, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_ESHAPE, POINT, "pl_dot shapes do not match",
                    "acc (8, 128) += a (8, 128) @ b (8, 128)");
}

Test(errors, ESPACE_element_access_on_an_ANY_ref)
{
    pl_report rep;
    int rc = run_fault(F_ANY_GET, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_ESPACE, POINT, "pl_get on refs[0] (input, ANY f32)", "only by DMA", "rule M1");
}

Test(errors, ESPACE_block_op_on_an_ANY_ref)
{
    pl_report rep;
    int rc = run_fault(F_ANY_COPY, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_ESPACE, POINT, "pl_copy on refs[0] (input, ANY f32)", "rule M1");
}

/* acc (f32 scratch) = in @ in with in an i32 (8, 8) array. */
static void dot_i32_kernel(pl_ctx *c, pl_ref *refs) { pl_dot(c, refs[2], refs[0], refs[0], 0); }

Test(errors, EDTYPE_pl_dot_on_i32)
{
    int32_t a[64], o[64];
    for (int i = 0; i < 64; i++) a[i] = i, o[i] = -7;
    pl_array in = PL_ARRAY(a, PL_I32, 8, 8), out = PL_ARRAY(o, PL_I32, 8, 8);
    pl_call call = {
        .name = "dot_i32", .kernel = dot_i32_kernel,
        .n_in = 1, .in = {{0}},
        .n_out = 1, .out = {{0}},
        .n_scratch = 1, .scratch = {PLTPU_VMEM(PL_F32, 8, 8)},
    };
    pl_report rep;
    int rc = pl_pallas_call(&call, &in, &out, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EDTYPE, "kernel dot_i32 at grid point ()", "pl_dot left operand",
                    "refs[0] (input, VMEM i32)", "f32, bf16 or f16");
    cr_assert_eq(rep.steps, 0);
}

/* ---- after a fault -------------------------------------------------------------- */

Test(errors, process_keeps_running_after_a_kernel_fault)
{
    pl_report rep;
    int rc = run_fault(F_GET, &rep);
    cr_assert_eq(rc, PL_EBOUNDS);
    cr_assert_str_neq(pl_last_error(), "");

    th_io io = th_io_2d(16, 256);
    pl_call call = th_copy_call_2d(16, 256, 8, 128);
    th_expect_ok(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), &rep); /* also clears pl_last_error() */
    cr_assert_eq(th_f32_diff(io.in, io.out, io.n), 0);
    cr_assert_eq(rep.steps, 4);
    cr_assert_str_empty(rep.error);
    th_io_free(&io);

    rc = run_fault(F_DOT_SHAPE, &rep); /* and faults again, with the new message */
    TH_EXPECT_ERROR(rc, rep, PL_ESHAPE, "pl_dot");
}

Test(errors, report_may_be_NULL_on_failure)
{
    th_io io = th_io_2d(16, 256);
    pl_call call = th_copy_call_2d(16, 256, 8, 64);
    int rc = pl_pallas_call(&call, &io.a, &io.o, NULL, NULL);
    cr_assert_eq(rc, PL_EBLOCKSHAPE);
    cr_assert(strstr(pl_last_error(), "rule T1"), "pl_last_error() = \"%s\"", pl_last_error());
    cr_assert_eq(th_io_touched(&io), 0);
    th_io_free(&io);
}

static void *other_thread(void *arg)
{
    *(int *)arg = pl_last_error()[0] == '\0';
    return NULL;
}

Test(errors, last_error_is_per_thread)
{
    pl_report rep;
    cr_assert_eq(run_fault(F_AT, &rep), PL_EBOUNDS);
    int empty = 0;
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, other_thread, &empty), 0);
    cr_assert_eq(pthread_join(t, NULL), 0);
    cr_assert(empty, "another thread sees this thread's error");
    cr_assert_str_eq(pl_last_error(), rep.error);
}

/* ---- V5: reference checks ---------------------------------------------------- */

/* a (8, 16) @ b (16, 8) with small integers: exact in f32 whatever the order. */
typedef struct mm {
    float a[8 * 16], b[16 * 8], c[8 * 8];
    pl_array A, B, C;
} mm;

static void mm_init(mm *m)
{
    for (int i = 0; i < 8; i++)
        for (int k = 0; k < 16; k++) m->a[i * 16 + k] = (float)((i + 2 * k) % 5 - 2);
    for (int k = 0; k < 16; k++)
        for (int j = 0; j < 8; j++) m->b[k * 8 + j] = (float)((3 * k + j) % 7 - 3);
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++) {
            double s = 0;
            for (int k = 0; k < 16; k++) s += (double)m->a[i * 16 + k] * m->b[k * 8 + j];
            m->c[i * 8 + j] = (float)s;
        }
    m->A = PL_ARRAY(m->a, PL_F32, 8, 16);
    m->B = PL_ARRAY(m->b, PL_F32, 16, 8);
    m->C = PL_ARRAY(m->c, PL_F32, 8, 8);
}

Test(errors, EVERIFY_check_matmul_on_a_wrong_C)
{
    mm m;
    mm_init(&m);
    pl_check chk;
    cr_assert_eq(pl_check_matmul(&m.A, &m.B, &m.C, &chk, NULL), PL_OK, "the exact product must pass");
    cr_assert_eq(chk.verdict, PL_PASS);
    cr_assert_eq(chk.max_abs_err, 0.0);

    m.c[3 * 8 + 5] += 1.0f;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert(f);
    int rc = pl_check_matmul(&m.A, &m.B, &m.C, &chk, f);
    fclose(f);
    cr_assert_eq(rc, PL_EVERIFY);
    cr_assert(pl_strerror(PL_EVERIFY)[0]);
    cr_assert_eq(chk.verdict, PL_FAIL);
    cr_assert_eq(chk.worst_row, 3);
    cr_assert_eq(chk.worst_col, 5);
    cr_assert_float_eq(chk.max_abs_err, 1.0, 1e-9);
    cr_assert(strstr(text, "FAIL") && strstr(text, "worst at (3, 5)"), "verdict line: %s", text);
    free(text);
}

Test(errors, EVERIFY_check_matmul_on_a_NaN)
{
    mm m;
    mm_init(&m);
    m.c[7] = NAN;
    pl_check chk;
    cr_assert_eq(pl_check_matmul(&m.A, &m.B, &m.C, &chk, NULL), PL_EVERIFY);
    cr_assert_eq(chk.verdict, PL_FAIL);
    cr_assert_eq(chk.n_nan, 1);
}

Test(errors, check_matmul_bad_arguments)
{
    mm m;
    mm_init(&m);
    pl_array wrong = PL_ARRAY(m.c, PL_F32, 8, 4); /* c must be (8, 8) */
    cr_assert_eq(pl_check_matmul(&m.A, &m.B, &wrong, NULL, NULL), PL_ESHAPE);
    cr_assert_eq(pl_check_matmul(&m.A, &m.A, &m.C, NULL, NULL), PL_ESHAPE); /* k mismatch */
    cr_assert_eq(pl_check_matmul(&m.A, &m.B, NULL, NULL, NULL), PL_EINVAL);
    int32_t ints[64] = {0};
    pl_array ic = PL_ARRAY(ints, PL_I32, 8, 8);
    cr_assert_eq(pl_check_matmul(&m.A, &m.B, &ic, NULL, NULL), PL_EINVAL);
}
