/* Semaphores as pallas_call operands (rule M16): one call returns a
 * regular semaphore (out_specs memory_space=SEMAPHORE, out_shape
 * SemaphoreType.REGULAR), the next takes it as an input and signals and
 * waits on it, as JAX's tpu_pallas_distributed_test.py test_no_barrier_semaphore
 * does across devices. tilesim holds a semaphore operand as an int32 array
 * of counts: an input's counts are the semaphores' at the start, an
 * output's are what the kernel leaves (core 0's). */
#include <criterion/criterion.h>
#include <string.h>

#include "../kernel/pltpu.h"
#include "test_mesh_helpers.h"

/* ---- one device ---------------------------------------------------------------------- */

static void leave_two(pl_ctx *c, pl_ref *refs)
{
    pl_ref s = pl_at(c, refs[0], 0);
    pltpu_semaphore_signal(c, s, 3);
    pltpu_semaphore_wait(c, s, 1);
}

static void take_two(pl_ctx *c, pl_ref *refs)
{
    pltpu_semaphore_wait(c, pl_at(c, refs[1], 0), 2);
    pl_add_scalar(c, refs[2], refs[0], 1.0);
}

static pl_call use_call(void)
{
    pl_call call = {.name = "use_sem", .kernel = take_two, .n_in = 2, .n_out = 1};
    call.in[1].space = PL_SEMAPHORE;
    return call;
}

Test(sem_operands, M16_a_semaphore_one_call_leaves_is_the_next_calls_input)
{
    int32_t sem[1] = {77};
    pl_array o = PL_ARRAY(sem, PL_I32, 1);
    pl_call make = {.name = "alloc_sem", .kernel = leave_two, .n_out = 1};
    make.out[0].space = PL_SEMAPHORE;
    pl_report rep;
    th_expect_ok(pl_pallas_call(&make, NULL, &o, NULL, &rep), &rep);
    cr_assert_eq(sem[0], 2, "an output semaphore starts at 0: 3 signalled, 1 taken");
    cr_expect_eq(rep.op[0].bytes_out, 0, "no HBM traffic");
    float *x = th_f32_seq(1024), *y = th_f32_fill(1024, TH_SENTINEL);
    pl_array in[2] = {PL_ARRAY(x, PL_F32, 8, 128), PL_ARRAY(sem, PL_I32, 1)}, out = PL_ARRAY(y, PL_F32, 8, 128);
    pl_call use = use_call();
    th_expect_ok(pl_pallas_call(&use, in, &out, NULL, &rep), &rep);
    for (int i = 0; i < 1024; i++) cr_assert_eq(y[i], x[i] + 1);
    sem[0] = 1; /* one count short: the wait never ends */
    int rc = pl_pallas_call(&use, in, &out, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EDEADLOCK, "'in1'", "holds 1", "M10");
    free(x), free(y);
}

Test(sem_operands, M16_a_semaphore_operand_is_an_int32_array_taken_whole)
{
    float f[8] = {0};
    int32_t s[8] = {0};
    pl_array fo = PL_ARRAY(f, PL_F32, 8), so = PL_ARRAY(s, PL_I32, 8);
    pl_call make = {.name = "alloc_sem", .kernel = leave_two, .n_out = 1};
    make.out[0].space = PL_SEMAPHORE;
    pl_report rep;
    int rc = pl_pallas_call(&make, NULL, &fo, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EDTYPE, "out0", "int32 array of counts", "f32", "M16");
    make.grid_rank = 1, make.grid[0] = 2;
    make.out[0] = PL_BLOCK(PL_MAP(0), 4);
    make.out[0].space = PL_SEMAPHORE;
    rc = pl_pallas_call(&make, NULL, &so, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "out0", "memory space SEMAPHORE takes no blocking", "M16");
    static int32_t many[65537];
    pl_array big = PL_ARRAY(many, PL_I32, 65537);
    pl_call one = {.name = "alloc_sem", .kernel = leave_two, .n_out = 1};
    one.out[0].space = PL_SEMAPHORE;
    rc = pl_pallas_call(&one, NULL, &big, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "out0", "65537 semaphores", "1 to 65536");
}

/* ---- JAX's test_no_barrier_semaphore, on a ring ------------------------------------------ */

/* every device signals the barrier of every device and waits for all */
static void alloc_sem(pl_ctx *c, pl_ref *refs)
{
    (void)refs;
    int n = pltpu_num_devices(c);
    pl_ref b = pltpu_get_barrier_semaphore(c);
    for (int i = 0; i < n; i++) pltpu_semaphore_signal_device(c, b, 1, i);
    pltpu_semaphore_wait(c, b, n);
}

/* the same over the semaphore the first call returned, then y = x + 1 */
static void barrier_kernel(pl_ctx *c, pl_ref *refs)
{
    int n = pltpu_num_devices(c);
    for (int i = 0; i < n; i++) pltpu_semaphore_signal_device(c, refs[1], 1, i);
    pltpu_semaphore_wait(c, refs[1], n);
    pl_add_scalar(c, refs[2], refs[0], 1.0);
}

Test(sem_operands, M16_jax_no_barrier_semaphore_on_a_ring_of_4)
{
    for (uint64_t seed = 0; seed < 4; seed++) {
        pl_mesh mesh = mh_mesh("ring:4");
        int32_t sems[4] = {5, 5, 5, 5};
        pl_array so[4];
        pl_report reps[4];
        pl_mesh_report mr;
        for (int d = 0; d < 4; d++) so[d] = PL_ARRAY(&sems[d], PL_I32); /* SemaphoreType.REGULAR(()) */
        pl_call make = {.name = "alloc_sem", .kernel = alloc_sem, .n_out = 1, .has_collective_id = 1};
        make.out[0].space = PL_SEMAPHORE;
        pl_options opt = {.seed = seed};
        int rc = pl_mesh_call(&mesh, &make, NULL, so, &opt, &mr, reps);
        cr_assert_eq(rc, PL_OK, "%s", mr.error);
        for (int d = 0; d < 4; d++) cr_assert_eq(sems[d], 0, "device %d: every signal taken", d);
        mh_run r;
        mh_alloc(&r, "ring:4", 8, 128, 8, 128);
        pl_array ins[8];
        for (int d = 0; d < 4; d++) ins[2 * d] = r.args[d], ins[2 * d + 1] = so[d];
        pl_call use = {.name = "barrier_kernel", .kernel = barrier_kernel, .n_in = 2, .n_out = 1};
        use.in[1].space = PL_SEMAPHORE;
        rc = pl_mesh_call(&r.mesh, &use, ins, r.outs, &opt, &r.mr, r.reps);
        cr_assert_eq(rc, PL_OK, "seed %llu: %s", (unsigned long long)seed, r.mr.error);
        for (int64_t i = 0; i < 4 * 1024; i++) cr_assert_eq(r.o[i], r.x[i] + 1, "element %lld", (long long)i);
        mh_free(&r);
    }
}

/* ---- semaphore arrays of any shape (M2) --------------------------------------------------- */

/* JAX's test_can_read_semaphore: REGULAR((2, 3)), sem[i, j] signalled i * 3 + j
 * times and read back; a REGULAR semaphore of shape () beside it */
static void read_2d(pl_ctx *c, pl_ref *refs)
{
    pl_ref sems = refs[1], one = refs[2];
    for (int64_t i = 0; i < 2; i++)
        for (int64_t j = 0; j < 3; j++) {
            pl_ref s = pl_at(c, pl_at(c, sems, i), j);
            if (i * 3 + j) pltpu_semaphore_signal(c, s, (int)(i * 3 + j));
            pl_set_at(c, refs[0], (double)pltpu_semaphore_read(c, s), i, j);
            if (i * 3 + j) pltpu_semaphore_wait(c, s, (int)(i * 3 + j));
        }
    pltpu_semaphore_signal(c, one, 1);
    pltpu_semaphore_wait(c, one, 1);
}

Test(sem_operands, M2_a_semaphore_array_may_have_any_shape)
{
    int32_t y[6] = {0};
    pl_array o = PL_ARRAY(y, PL_I32, 2, 3);
    pl_call call = {.name = "read_2d", .kernel = read_2d, .n_out = 1, .n_scratch = 2,
                    .scratch = {{.space = PL_SEMAPHORE, .dtype = PL_I32, .rank = 2, .shape = {2, 3},
                                 .sem_kind = PL_SEM_REGULAR},
                                {.space = PL_SEMAPHORE, .dtype = PL_I32, .rank = 0, .sem_kind = PL_SEM_REGULAR}}};
    call.out[0].space = PL_SMEM;
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, NULL, &o, NULL, &rep), &rep);
    for (int i = 0; i < 6; i++) cr_expect_eq(y[i], i, "y[%d]", i);
    call.scratch[0].shape[1] = 0;
    int rc = pl_pallas_call(&call, NULL, &o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "scratch0", "no semaphores", "M2");
}

/* An array of three semaphores as an output: each keeps its own count */
static void leave_on_the_middle_one(pl_ctx *c, pl_ref *refs)
{
    pltpu_semaphore_signal(c, pl_at(c, refs[0], 1), 5);
    pltpu_semaphore_signal(c, pl_at(c, refs[0], 2), 7);
    pltpu_semaphore_wait(c, pl_at(c, refs[0], 2), 7);
}

static void take_the_middle_one(pl_ctx *c, pl_ref *refs)
{
    pltpu_semaphore_wait(c, pl_at(c, refs[0], 1), 5);
    pltpu_semaphore_signal(c, pl_at(c, refs[0], 2), 1);
    pltpu_semaphore_wait(c, pl_at(c, refs[0], 2), 2); /* 1 from the array, 1 signalled here */
}

Test(sem_operands, M16_each_semaphore_of_an_operand_array_keeps_its_own_count)
{
    int32_t sem[3] = {9, 9, 9};
    pl_array o = PL_ARRAY(sem, PL_I32, 3);
    pl_call make = {.name = "alloc_sems", .kernel = leave_on_the_middle_one, .n_out = 1};
    make.out[0].space = PL_SEMAPHORE;
    pl_report rep;
    th_expect_ok(pl_pallas_call(&make, NULL, &o, NULL, &rep), &rep);
    cr_expect(sem[0] == 0 && sem[1] == 5 && sem[2] == 0, "counts %d %d %d", sem[0], sem[1], sem[2]);
    sem[2] = 1;
    pl_array in = PL_ARRAY(sem, PL_I32, 3);
    pl_call use = {.name = "use_sems", .kernel = take_the_middle_one, .n_in = 1};
    use.in[0].space = PL_SEMAPHORE;
    th_expect_ok(pl_pallas_call(&use, &in, NULL, NULL, &rep), &rep);
}

/* ---- DMA semaphores as operands: a copy one call starts and the next waits ---------- */

/* JAX's test_output_dma_semaphore_ref (tpu_pallas_test.py) and the async
 * pattern of tpu_pallas_async_test.py: call 1 starts a copy whose DMA
 * semaphore it returns (memory_space=SEMAPHORE, out_shape
 * SemaphoreType.DMA) and ends with the copy in flight; call 2 takes the
 * semaphore and the destination (aliased to its output) and waits. */
static void start_only(pl_ctx *c, pl_ref *refs) /* x (ANY) | y (ANY), sem (DMA) */
{
    pltpu_copy cp = pltpu_async_copy(c, refs[0], refs[1], refs[2]);
    pltpu_copy_start(c, &cp);
}

static void wait_only(pl_ctx *c, pl_ref *refs) /* x, y, sem | y (aliased) */
{
    pltpu_copy cp = pltpu_async_copy(c, refs[0], refs[1], refs[2]);
    pltpu_copy_wait(c, &cp);
}

static int start_then_wait(const char *chip, int dma_mode, float *x, float *y, int32_t *sem, pl_report *rep)
{
    pl_options opt = {.chip = chip, .dma_mode = dma_mode};
    pl_call a = {.name = "start", .kernel = start_only, .n_in = 1, .in = {{.space = PL_ANY}},
                 .n_out = 2, .out = {{.space = PL_ANY}, {.space = PL_SEMAPHORE_DMA}}};
    pl_array in = PL_ARRAY(x, PL_F32, 8, 128);
    pl_array outs[2] = {PL_ARRAY(y, PL_F32, 8, 128), {.data = sem, .dtype = PL_I32, .rank = 0}};
    int rc = pl_pallas_call(&a, &in, outs, &opt, rep);
    if (rc != PL_OK) return rc;
    cr_expect_eq(*sem, 8 * 128 * 4, "the semaphore holds the copy's bytes when the first call returns (M8)");
    pl_call b = {.name = "wait", .kernel = wait_only, .n_in = 3,
                 .in = {{.space = PL_ANY}, {.space = PL_ANY}, {.space = PL_SEMAPHORE_DMA}},
                 .n_out = 1, .out = {{.space = PL_ANY}}, .n_alias = 1, .alias = {{.in = 1, .out = 0}}};
    pl_array ins[3] = {in, PL_ARRAY(y, PL_F32, 8, 128), {.data = sem, .dtype = PL_I32, .rank = 0}};
    pl_array o = PL_ARRAY(y, PL_F32, 8, 128);
    return pl_pallas_call(&b, ins, &o, &opt, rep);
}

Test(sem_operands, M16_a_copy_one_call_starts_the_next_call_waits)
{
    const char *chips[] = {"v5e", "v6e"};
    for (int k = 0; k < 2; k++)
        for (int mode = PL_DMA_EAGER; mode <= PL_DMA_ON_WAIT; mode++) {
            float x[1024], y[1024];
            int32_t sem = 0;
            for (int i = 0; i < 1024; i++) x[i] = (float)i, y[i] = -1;
            pl_report rep;
            int rc = start_then_wait(chips[k], mode, x, y, &sem, &rep);
            cr_expect_eq(rc, PL_OK, "%s, mode %d: %s", chips[k], mode, rep.error);
            cr_expect_eq(memcmp(x, y, sizeof x), 0, "%s, mode %d: the copy landed", chips[k], mode);
        }
}

/* A regular semaphore output is still no DMA semaphore: the copy that
 * signals it is refused where DMAs signal DMA semaphores only (v5e, M8),
 * and where they may signal a regular one (v6e) it is M10's copy never
 * waited, as before. */
Test(sem_operands, M16_a_copy_left_on_a_regular_semaphore_output_is_not_handed_over)
{
    float x[1024] = {0}, y[1024];
    int32_t sem = 0;
    pl_options opt = {.chip = "v6e"};
    pl_call a = {.name = "start", .kernel = start_only, .n_in = 1, .in = {{.space = PL_ANY}},
                 .n_out = 2, .out = {{.space = PL_ANY}, {.space = PL_SEMAPHORE}}};
    pl_array in = PL_ARRAY(x, PL_F32, 8, 128);
    pl_array outs[2] = {PL_ARRAY(y, PL_F32, 8, 128), {.data = &sem, .dtype = PL_I32, .rank = 0}};
    pl_report rep;
    cr_expect_eq(pl_pallas_call(&a, &in, outs, &opt, &rep), PL_ESEMAPHORE, "%s", rep.error);
    cr_expect(strstr(rep.error, "was never waited"), "%s", rep.error);
}

/* ---- counts taken when the whole call is done ------------------------------------------- */

/* On a mesh each device signals its right neighbour's semaphore output once
 * and ends: every device holds 1, whichever device ends first. The counts
 * were taken when each device's own walk ended, so a signal from a device
 * that ran later was lost (about half of them, differently each run). */
static void signal_right(pl_ctx *c, pl_ref *refs)
{
    int me = pltpu_device_id(c), n = pltpu_num_devices(c);
    pltpu_semaphore_signal_device(c, refs[0], 1, (me + 1) % n);
}

Test(sem_operands, M16_a_signal_after_the_receiver_ended_is_in_its_output)
{
    for (uint64_t seed = 0; seed < 6; seed++) {
        pl_mesh mesh = mh_mesh("ring:8");
        int32_t sems[8];
        pl_array so[8];
        pl_report reps[8];
        pl_mesh_report mr;
        for (int d = 0; d < 8; d++) sems[d] = -7, so[d] = PL_ARRAY(&sems[d], PL_I32);
        pl_call call = {.name = "signal_right", .kernel = signal_right, .n_out = 1};
        call.out[0].space = PL_SEMAPHORE;
        pl_options opt = {.seed = seed};
        cr_assert_eq(pl_mesh_call(&mesh, &call, NULL, so, &opt, &mr, reps), PL_OK, "%s", mr.error);
        for (int d = 0; d < 8; d++) cr_expect_eq(sems[d], 1, "seed %llu: device %d", (unsigned long long)seed, d);
    }
}

/* On a megacore chip each core leaves a copy in flight on the DMA semaphore
 * the call returns: the output counts the bytes of both (it kept core 0's,
 * and the next call's wait for both halves deadlocked). */
static void half_each(pl_ctx *c, pl_ref *refs) /* x (ANY) | y (ANY), sem (DMA) */
{
    int64_t i = pl_program_id(c, 0);
    pltpu_copy cp = pltpu_async_copy(c, pl_ds(c, refs[0], 0, i * 8, 8), pl_ds(c, refs[1], 0, i * 8, 8), refs[2]);
    pltpu_copy_start(c, &cp);
}

Test(sem_operands, M16_a_dma_semaphore_output_counts_every_cores_copies)
{
    float x[2048], y[2048];
    for (int i = 0; i < 2048; i++) x[i] = (float)i, y[i] = -1;
    int32_t sem = 99;
    pl_options opt = {.chip = "v5p"};
    pl_call a = {.name = "halves", .kernel = half_each, .grid_rank = 1, .grid = {2}, .semantics = {PL_PARALLEL},
                 .n_in = 1, .in = {{.space = PL_ANY}}, .n_out = 2, .out = {{.space = PL_ANY}, {.space = PL_SEMAPHORE_DMA}}};
    pl_array in = PL_ARRAY(x, PL_F32, 16, 128);
    pl_array outs[2] = {PL_ARRAY(y, PL_F32, 16, 128), {.data = &sem, .dtype = PL_I32, .rank = 0}};
    pl_report rep;
    cr_assert_eq(pl_pallas_call(&a, &in, outs, &opt, &rep), PL_OK, "%s", rep.error);
    cr_expect_eq(rep.cores, 2);
    cr_expect_eq(sem, 2 * 8 * 128 * 4, "both cores' copies, in bytes");
    cr_expect_eq(memcmp(x, y, sizeof x), 0);
}

/* A count past int32 (the semaphore array's dtype, as Pallas's) cannot be
 * handed back: the output holds INT32_MAX and the report says why, rather
 * than a wrong count passing silently. */
static void signal_past_int32(pl_ctx *c, pl_ref *refs)
{
    pltpu_semaphore_signal(c, refs[0], 2147483647);
    pltpu_semaphore_signal(c, refs[0], 2);
}

Test(sem_operands, M16_a_count_past_int32_is_clipped_and_said)
{
    int32_t sem = 5;
    pl_call make = {.name = "big", .kernel = signal_past_int32, .n_out = 1};
    make.out[0].space = PL_SEMAPHORE;
    pl_array o = {.data = &sem, .dtype = PL_I32, .rank = 0};
    pl_report rep;
    th_expect_ok(pl_pallas_call(&make, NULL, &o, NULL, &rep), &rep);
    cr_expect_eq(sem, 2147483647);
    cr_expect(strstr(rep.warnings, "reached 2147483649") && strstr(rep.warnings, "M16"),
              "a warning names the count and M16: %s", rep.warnings);
}
