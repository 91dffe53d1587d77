/* tests/test_errors_kernel.c: the error model, part two: faults inside the
 * kernel (PL_EBOUNDS, PL_EINVAL, PL_ESHAPE, PL_ESPACE, PL_EDTYPE; rule V2)
 * with messages that name the op, the refs and the grid point, and the
 * promises after one: the process goes on, the report may be NULL, and
 * pl_last_error() holds the message per thread.
 *
 * PL_ERACE, PL_EDEADLOCK and PL_ENOMEM are tested with the features that
 * raise them: test_dma.c (M10 deadlocks, DMA races), test_jax_cores.c
 * (megacore races, V4) and test_harden_ux.c (the host running out).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

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
