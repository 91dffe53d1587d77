/* tests/test_mesh_runtime_errors.c: what pl_mesh_call says when a kernel on
 * one device gets the mesh wrong (rules M9-M11, V2, V4): the code, the
 * failing device, and a message naming the device, the grid point and the
 * rule. Each returns promptly: a wait that nothing can satisfy is reported,
 * never a hang. */
#include "../sim/tilesim_kernel.h"
#include "test_mesh_helpers.h"

/* The kernels below: x (8, 128) and o (16, 128) f32 in HBM (ANY) on every
 * device; scratch: a bf16 and an f32 VMEM buffer (8, 128), two DMA
 * semaphores, one regular semaphore. */
enum { R_X, R_O, R_BF, R_F32, R_DMA, R_SEM };

static pl_call err_call(pl_kernel_fn k)
{
    pl_call call = {
        .name = "mesh_err", .kernel = k, .grid_rank = 1, .grid = {1},
        .n_in = 1, .in = {{.space = PL_ANY, .name = "x"}},
        .n_out = 1, .out = {{.space = PL_ANY, .name = "o"}},
        .n_scratch = 4,
        .scratch = {PLTPU_VMEM(PL_BF16, 8, 128), PLTPU_VMEM(PL_F32, 8, 128), PLTPU_SEMAPHORE_DMA(2),
                    PLTPU_SEMAPHORE(1)},
    };
    return call;
}

/* Run k on a ring of 4; assert the code and that the message names the device. */
static void run_err(mh_run *r, pl_kernel_fn k, int want, int dev)
{
    pl_call call = err_call(k);
    mh_alloc(r, "ring:4", 8, 128, 16, 128);
    mh_call(r, &call, NULL);
    cr_assert_eq(r->rc, want, "want %s, got %d (%s): %s", pl_strerror(want), r->rc, pl_strerror(r->rc), r->mr.error);
    cr_expect_eq(r->mr.status, want);
    cr_expect_eq(r->mr.failed_device, dev, "failed device %d, want %d: %s", r->mr.failed_device, dev, r->mr.error);
    cr_expect(mh_names_device(r->mr.error, dev), "the message should name device %d: %s", dev, r->mr.error);
    cr_expect_lt(r->seconds, 1.0, "took %.3f s", r->seconds);
}

/* Device 2 copies to the x of each device, then the copy pair: a remote
 * copy of x into o rows 0..7 of the right neighbour with its wait. */
static void copy_right(pl_ctx *c, pl_ref *refs, int to)
{
    pltpu_remote_copy cp = pltpu_make_async_remote_copy(c, refs[R_X], pl_ds(c, refs[R_O], 0, 0, 8),
                                                        pl_at(c, refs[R_DMA], 0), pl_at(c, refs[R_DMA], 1), to);
    pltpu_remote_copy_start(c, &cp);
    pltpu_remote_copy_wait(c, &cp);
}

/* ---- device ids (M11) -------------------------------------------------------------- */

static void bad_device_kernel(pl_ctx *c, pl_ref *refs)
{
    int me = pltpu_device_id(c), n = pltpu_num_devices(c);
    copy_right(c, refs, me == 2 ? 7 : (me + 1) % n);
}

Test(mesh_runtime, remote_copy_to_a_device_outside_the_mesh_is_EINVAL)
{
    mh_run r;
    run_err(&r, bad_device_kernel, PL_EINVAL, 2);
    mh_assert_says(r.mr.error, "7", "grid point (0)", "M11");
    mh_free(&r);
}

static void bad_signal_kernel(pl_ctx *c, pl_ref *refs)
{
    if (pltpu_device_id(c) == 1) pltpu_semaphore_signal_device(c, pl_at(c, refs[R_SEM], 0), 1, -1);
}

Test(mesh_runtime, remote_signal_to_device_minus_1_is_EINVAL)
{
    mh_run r;
    run_err(&r, bad_signal_kernel, PL_EINVAL, 1);
    mh_assert_says(r.mr.error, "-1", "grid point (0)", "M9");
    mh_free(&r);
}

static void bad_axis_kernel(pl_ctx *c, pl_ref *refs)
{
    (void)refs;
    if (pltpu_device_id(c) == 3) (void)pltpu_axis_index(c, "z");
}

Test(mesh_runtime, an_axis_the_mesh_does_not_have_is_EINVAL)
{
    mh_run r;
    run_err(&r, bad_axis_kernel, PL_EINVAL, 3);
    mh_assert_says(r.mr.error, "\"z\"", "grid point (0)");
    mh_free(&r);
}

/* ---- what a remote copy checks (M11) -------------------------------------------------- */

static void shape_kernel(pl_ctx *c, pl_ref *refs)
{
    int me = pltpu_device_id(c), n = pltpu_num_devices(c);
    if (me != 1) return;
    pltpu_remote_copy cp = pltpu_make_async_remote_copy(c, refs[R_X], refs[R_O], pl_at(c, refs[R_DMA], 0),
                                                        pl_at(c, refs[R_DMA], 1), (me + 1) % n);
    pltpu_remote_copy_start(c, &cp);
}

Test(mesh_runtime, remote_copy_of_another_shape_is_ESHAPE)
{
    mh_run r;
    run_err(&r, shape_kernel, PL_ESHAPE, 1);
    mh_assert_says(r.mr.error, "(8, 128)", "(16, 128)", "grid point (0)", "M11");
    mh_free(&r);
}

static void dtype_kernel(pl_ctx *c, pl_ref *refs)
{
    int me = pltpu_device_id(c), n = pltpu_num_devices(c);
    if (me != 0) return;
    pl_fill(c, refs[R_BF], 1);
    pl_ref send = pl_at(c, refs[R_DMA], 0), recv = pl_at(c, refs[R_DMA], 1);
    pltpu_remote_copy cp =
        pltpu_make_async_remote_copy(c, refs[R_BF], pl_ds(c, refs[R_O], 0, 0, 8), send, recv, (me + 1) % n);
    pltpu_remote_copy_start(c, &cp);
}

Test(mesh_runtime, remote_copy_of_another_dtype_is_EDTYPE)
{
    mh_run r;
    run_err(&r, dtype_kernel, PL_EDTYPE, 0);
    mh_assert_says(r.mr.error, "grid point (0)", "M11");
    mh_free(&r);
}

/* A pipelined VMEM block is reachable slot for slot (issue 23, M11; JAX's
 * basic_remote_vmem_dma): device 2 copies its input block into device 3's
 * output block, with data and cost-only alike (cost-only operands have no
 * address, so reachability is not read off a pointer). The other devices
 * write their own output. */
static void vmem_block_dst_kernel(pl_ctx *c, pl_ref *refs)
{
    int me = pltpu_device_id(c), n = pltpu_num_devices(c);
    if (me != 3) pl_fill(c, refs[1], me);
    pltpu_remote_copy cp = pltpu_make_async_remote_copy(c, refs[0], refs[1], pl_at(c, refs[2], 0),
                                                        pl_at(c, refs[2], 1), (me + 1) % n);
    if (me == 3) pltpu_remote_copy_wait_recv(c, &cp); /* the receiver waits for the bytes (M8) */
    if (me != 2) return;
    pltpu_remote_copy_start(c, &cp);
    pltpu_remote_copy_wait_send(c, &cp);
}

Test(mesh_runtime, remote_copy_into_a_pipelined_vmem_block_lands_there)
{
    pl_call call = {
        .name = "mesh_vmem", .kernel = vmem_block_dst_kernel, .grid_rank = 1, .grid = {1},
        .n_in = 1, .in = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 8, 128)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 8, 128)},
        .n_scratch = 1, .scratch = {PLTPU_SEMAPHORE_DMA(2)},
    };
    call.out[0].name = "o";
    for (int cost = 0; cost < 2; cost++) {
        mh_run r;
        mh_alloc(&r, "ring:4", 8, 128, 8, 128);
        mh_call(&r, &call, &(pl_options){.cost_only = cost});
        cr_assert_eq(r.rc, PL_OK, "cost_only %d: %s", cost, r.mr.error);
        for (int i = 0; !cost && i < 8 * 128; i++) {
            cr_assert_eq(r.o[3 * r.o_elems + i], r.x[2 * r.x_elems + i], "device 3 holds device 2's block");
            cr_assert_eq(r.o[1 * r.o_elems + i], 1.0f);
        }
        mh_free(&r);
    }
}

/* ---- semaphores left non-zero (M10) ---------------------------------------------------- */

static void leftover_local_kernel(pl_ctx *c, pl_ref *refs)
{
    if (pltpu_device_id(c) == 2) pltpu_semaphore_signal(c, pl_at(c, refs[R_SEM], 0), 3);
}

Test(mesh_runtime, a_semaphore_left_non_zero_on_one_device_is_ESEMAPHORE)
{
    mh_run r;
    run_err(&r, leftover_local_kernel, PL_ESEMAPHORE, 2);
    mh_assert_says(r.mr.error, "M10");
    mh_free(&r);
}

/* Device 1 signals device 3, which never waits: the count is left on
 * device 3, possibly after device 3's kernel has finished. */
static void leftover_remote_kernel(pl_ctx *c, pl_ref *refs)
{
    if (pltpu_device_id(c) == 1) pltpu_semaphore_signal_device(c, pl_at(c, refs[R_SEM], 0), 1, 3);
}

Test(mesh_runtime, a_remote_signal_nobody_waits_for_is_ESEMAPHORE_on_the_target)
{
    mh_run r;
    run_err(&r, leftover_remote_kernel, PL_ESEMAPHORE, 3);
    mh_assert_says(r.mr.error, "M10");
    mh_free(&r);
}

/* ---- deadlocks and faults (M10) -------------------------------------------------------- */

Test(mesh_runtime, deadlock_names_every_stuck_device_within_a_second)
{
    ra_params p = {.forgetful = 3}; /* device 3 never sends; 0, 1 and 2 wait for ever */
    mh_ring r;
    mh_ring_run(&r, 4, 8, 128, NULL, &p, 1);
    cr_assert_eq(r.rc, PL_EDEADLOCK, "got %d: %s", r.rc, r.mr.error);
    cr_expect_lt(r.seconds, 1.0, "the deadlock took %.3f s to report", r.seconds);
    /* where each waits: device 0 at step 0, device 1 at step 1, device 2 at step 2 */
    for (int d = 0; d < 3; d++) {
        char point[16];
        snprintf(point, sizeof point, "(%d)", d);
        cr_expect(mh_names_device_at(r.mr.error, d, point),
                  "the message should name stuck device %d at grid point %s: %s", d, point, r.mr.error);
    }
    mh_assert_says(r.mr.error, "M10");
    mh_ring_free(&r);
}

/* Seven stuck devices, each with its wait: the message must hold them all. */
Test(mesh_runtime, deadlock_on_a_ring_of_8_names_all_7_stuck_devices)
{
    ra_params p = {.forgetful = 7};
    mh_ring r;
    mh_ring_run(&r, 8, 8, 128, NULL, &p, 1);
    cr_assert_eq(r.rc, PL_EDEADLOCK, "got %d: %s", r.rc, r.mr.error);
    for (int d = 0; d < 7; d++) {
        char point[16];
        snprintf(point, sizeof point, "(%d)", d);
        cr_expect(mh_names_device_at(r.mr.error, d, point),
                  "the message should name stuck device %d at grid point %s: %s", d, point, r.mr.error);
    }
    mh_ring_free(&r);
}

Test(mesh_runtime, deadlock_on_64_devices_within_a_second)
{
    ra_params p = {.forgetful = 63};
    mh_ring r;
    mh_ring_run(&r, 64, 8, 128, NULL, &p, 1);
    cr_assert_eq(r.rc, PL_EDEADLOCK, "got %d: %s", r.rc, r.mr.error);
    cr_expect_lt(r.seconds, 1.0, "the deadlock took %.3f s to report", r.seconds);
    cr_expect(mh_names_device(r.mr.error, 0), "%s", r.mr.error);
    mh_ring_free(&r);
}

/* Every device of a ring of 8 with data deadlocks, again and again: the fiber that finds the deadlock
 * wakes every blocked one, and was once among them; queued while it ran, it was switched to again
 * after it had ended and its stack was gone (SIGSEGV in 6 of 10 runs of `tilesim run ring_allgather
 * --set forgetful=3`). Criterion runs this in a process of its own: a crash fails it. */
Test(mesh_runtime, repeated_deadlocks_of_every_device_with_data_end_in_a_report_not_a_crash)
{
    for (int i = 0; i < 12; i++) {
        ra_params p = {.forgetful = 3};
        mh_ring r;
        mh_ring_run(&r, 8, 256, 1024, NULL, &p, 1);
        cr_assert_eq(r.rc, PL_EDEADLOCK, "run %d: got %d: %s", i, r.rc, r.mr.error);
        mh_ring_free(&r);
    }
}

/* Each device signals both neighbours once and waits for 3 on the barrier semaphore: each holds 2 when
 * the deadlock is found, whatever the schedule. The message said what each held when it began to wait
 * (0, 1 or 2, by the seed), and named the barrier semaphore '?'. */
static void short_barrier_kernel(pl_ctx *c, pl_ref *refs)
{
    (void)refs;
    int me = pltpu_device_id(c), n = pltpu_num_devices(c);
    pl_ref b = pltpu_get_barrier_semaphore(c);
    pltpu_semaphore_signal_device(c, b, 1, (me + 1) % n);
    pltpu_semaphore_signal_device(c, b, 1, (me + n - 1) % n);
    pltpu_semaphore_wait(c, b, 3);
}

Test(mesh_runtime, a_deadlock_says_what_each_semaphore_holds_when_it_is_found)
{
    for (uint64_t seed = 1; seed <= 4; seed++) {
        mh_run r;
        pl_call call = err_call(short_barrier_kernel);
        call.has_collective_id = 1;
        pl_options opt = {.seed = seed};
        mh_alloc(&r, "ring:4", 8, 128, 16, 128);
        mh_call(&r, &call, &opt);
        cr_assert_eq(r.rc, PL_EDEADLOCK, "seed %llu: %s", (unsigned long long)seed, r.mr.error);
        const char *m = r.mr.error;
        int twos = 0;
        for (const char *at = m; (at = strstr(at, "holds ")); at += 6) {
            cr_expect(strncmp(at, "holds 2", 7) == 0, "seed %llu: %s", (unsigned long long)seed, m);
            twos++;
        }
        cr_expect_eq(twos, 4, "seed %llu: every device listed: %s", (unsigned long long)seed, m);
        cr_expect(strstr(m, "pltpu_semaphore_wait on the barrier semaphore for 3"), "%s", m);
        mh_free(&r);
    }
}

/* Device 0 polls its semaphore with pltpu_semaphore_read until device 2 has signalled it, then takes
 * the signal: a correct kernel. On one pool thread of fibers (as on a host of one CPU), device 0 ran
 * first and spun for ever, and device 2, on the same thread, never ran: a hang. */
static void poll_kernel(pl_ctx *c, pl_ref *refs)
{
    int me = pltpu_device_id(c);
    pl_ref s = pl_at(c, refs[R_SEM], 0);
    if (me == 2) pltpu_semaphore_signal_device(c, s, 1, 0);
    if (me != 0) return;
    while (pltpu_semaphore_read(c, s) < 1) {}
    pltpu_semaphore_wait(c, s, 1);
    pl_fill(c, refs[R_F32], 1.0);
    pltpu_sync_copy(c, refs[R_F32], pl_ds(c, refs[R_O], 0, 0, 8));
}

Test(mesh_runtime, a_kernel_polling_a_semaphore_lets_the_others_run, .timeout = 30)
{
    setenv("TILESIM_MESH_POOL", "1", 1); /* every device on one host thread */
    mh_run r;
    pl_call call = err_call(poll_kernel);
    mh_alloc(&r, "ring:4", 8, 128, 16, 128);
    mh_call(&r, &call, NULL);
    cr_assert_eq(r.rc, PL_OK, "%s", r.mr.error);
    cr_expect_eq(r.o[0], 1.0f, "device 0 went past its poll");
    mh_free(&r);
}

/* Every device polls a semaphore nobody signals: a deadlock, reported at once, not a hang. */
static void poll_forever_kernel(pl_ctx *c, pl_ref *refs)
{
    while (pltpu_semaphore_read(c, pl_at(c, refs[R_SEM], 0)) < 1) {}
}

Test(mesh_runtime, devices_polling_what_nobody_signals_are_a_deadlock, .timeout = 30)
{
    mh_run r;
    pl_call call = err_call(poll_forever_kernel);
    mh_alloc(&r, "ring:4", 8, 128, 16, 128);
    mh_call(&r, &call, NULL);
    cr_assert_eq(r.rc, PL_EDEADLOCK, "%s", r.mr.error);
    mh_assert_says(r.mr.error, "pltpu_semaphore_read polls", "holds 0", "M10");
    cr_expect_lt(r.seconds, 5.0, "took %.3f s", r.seconds);
    mh_free(&r);
}

/* A store into the source of a remote copy before its wait_send: the copy may carry the old values or the
 * new (M7). A finding on the sender, naming wait_send; after the wait_send the same store is clean. */
static int store_after_send;

static void store_into_sent_kernel(pl_ctx *c, pl_ref *refs)
{
    int me = pltpu_device_id(c), n = pltpu_num_devices(c);
    pl_fill(c, refs[R_F32], 1.0);
    pltpu_remote_copy cp = pltpu_make_async_remote_copy(c, refs[R_F32], pl_ds(c, refs[R_O], 0, 0, 8),
                                                        pl_at(c, refs[R_DMA], 0), pl_at(c, refs[R_DMA], 1),
                                                        (me + 1) % n);
    pltpu_remote_copy_start(c, &cp);
    if (!store_after_send) pl_fill(c, refs[R_F32], 2.0);
    pltpu_remote_copy_wait_send(c, &cp);
    if (store_after_send) pl_fill(c, refs[R_F32], 2.0);
    pltpu_remote_copy_wait_recv(c, &cp);
}

Test(mesh_runtime, a_store_into_a_remote_copys_source_before_wait_send_is_found)
{
    for (store_after_send = 0; store_after_send < 2; store_after_send++) {
        mh_run r;
        pl_call call = err_call(store_into_sent_kernel);
        mh_alloc(&r, "ring:4", 8, 128, 16, 128);
        mh_call(&r, &call, NULL);
        cr_assert_eq(r.rc, PL_OK, "%s", r.mr.error);
        int found = 0;
        for (int i = 0; i < r.reps[0].n_findings && i < PL_MAX_FINDINGS; i++)
            found += r.reps[0].findings[i].kind == PL_FIND_DMA_INFLIGHT &&
                     strstr(r.reps[0].findings[i].msg, "was still reading it") &&
                     strstr(r.reps[0].findings[i].msg, "wait_send");
        cr_expect_eq(found, !store_after_send, "store %s wait_send: %d findings", store_after_send ? "after" : "before",
                     found);
        mh_free(&r);
    }
}

/* Device 2 reads past a buffer before it sends; its right neighbour waits for
 * that send, and the others for theirs in turn. */
static void fault_kernel(pl_ctx *c, pl_ref *refs)
{
    int me = pltpu_device_id(c), n = pltpu_num_devices(c);
    if (me == 2) (void)pl_get_at(c, refs[R_F32], 8, 0);
    copy_right(c, refs, (me + 1) % n);
}

Test(mesh_runtime, a_fault_on_one_device_is_returned_while_the_others_wait)
{
    mh_run r;
    run_err(&r, fault_kernel, PL_EBOUNDS, 2);
    mh_assert_says(r.mr.error, "grid point (0)", "V2");
    mh_free(&r);
}

/* ---- two senders into one buffer (V4) -------------------------------------------------- */

/* Devices 0 and 2 both copy into rows 0..7 of device 1's o; device 1 waits
 * for both, so the second copy lands on bytes the first still writes. */
static void two_senders_kernel(pl_ctx *c, pl_ref *refs)
{
    int me = pltpu_device_id(c);
    pltpu_remote_copy cp = pltpu_make_async_remote_copy(c, refs[R_X], pl_ds(c, refs[R_O], 0, 0, 8),
                                                        pl_at(c, refs[R_DMA], 0), pl_at(c, refs[R_DMA], 1), 1);
    if (me == 0 || me == 2) {
        pltpu_remote_copy_start(c, &cp);
        pltpu_remote_copy_wait_send(c, &cp);
    }
    if (me == 1) {
        pltpu_remote_copy_wait_recv(c, &cp);
        pltpu_remote_copy_wait_recv(c, &cp);
    }
}

Test(mesh_runtime, two_senders_into_one_buffer_is_ERACE)
{
    pl_call call = err_call(two_senders_kernel);
    mh_run r;
    mh_alloc(&r, "ring:4", 8, 128, 16, 128);
    mh_call(&r, &call, NULL);
    cr_assert_eq(r.rc, PL_ERACE, "got %d: %s", r.rc, r.mr.error);
    cr_expect(r.mr.failed_device == 0 || r.mr.failed_device == 2, "failed device %d", r.mr.failed_device);
    cr_expect(mh_names_device(r.mr.error, 1), "the message should name the target, device 1: %s", r.mr.error);
    mh_assert_says(r.mr.error, "V4");
    cr_expect_lt(r.seconds, 1.0);
    mh_free(&r);
    /* checks off too: on a mesh the two copies land from two host threads, which would write the same
     * bytes at once; the race stays an error there (docs/verifying.md) */
    mh_alloc(&r, "ring:4", 8, 128, 16, 128);
    mh_call(&r, &call, &(pl_options){.checks_off = 1});
    cr_expect_eq(r.rc, PL_ERACE, "checks off: %s", r.mr.error);
    mh_free(&r);
}
