/* Races between devices (rules V4, M11, M12), found in every schedule:
 * a buffer a neighbour sends into again must first be free, which only a
 * signal back from the receiver (a capacity handshake) can tell. */
#include <criterion/criterion.h>
#include <string.h>

#include "test_mesh_helpers.h"

enum { Q_X, Q_O, Q_BUF, Q_DMA, Q_FREE };

static pl_call race_call(pl_kernel_fn k, int64_t steps)
{
    pl_call call = {
        .name = "mesh_reuse", .kernel = k, .grid_rank = 1, .grid = {steps},
        .n_in = 1, .in = {{.space = PL_ANY, .name = "x"}},
        .n_out = 1, .out = {{.space = PL_ANY, .name = "o"}},
        .n_scratch = 3,
        .scratch = {PLTPU_VMEM(PL_F32, 8, 128), PLTPU_SEMAPHORE_DMA(2), PLTPU_SEMAPHORE(1)},
    };
    return call;
}

/* A remote copy of src into dst on device `to`, on the call's two DMA semaphores. */
static pltpu_remote_copy q_copy(pl_ctx *c, pl_ref *refs, pl_ref src, pl_ref dst, int to)
{
    return pltpu_make_async_remote_copy(c, src, dst, pl_at(c, refs[Q_DMA], 0), pl_at(c, refs[Q_DMA], 1), to);
}

/* Device 0 sends x into device 1's one buffer at every step; device 1
 * receives it and adds it into o. handshake: device 1 signals device 0's
 * 'free' semaphore once it has read the buffer, and device 0 waits for that
 * before sending again. */
static void reuse(pl_ctx *c, pl_ref *refs, int handshake)
{
    int me = pltpu_device_id(c);
    int64_t step = pl_program_id(c, 0);
    pltpu_remote_copy cp = q_copy(c, refs, refs[Q_X], refs[Q_BUF], 1);
    if (me == 0) {
        if (handshake && step > 0) pltpu_semaphore_wait(c, pl_at(c, refs[Q_FREE], 0), 1);
        pltpu_remote_copy_start(c, &cp);
        pltpu_remote_copy_wait_send(c, &cp);
    } else {
        pltpu_remote_copy_wait_recv(c, &cp);
        if (step == 0) pl_copy(c, refs[Q_BUF], refs[Q_BUF]); /* a read of it, as a kernel would use it */
        if (handshake && step + 1 < pl_num_programs(c, 0))
            pltpu_semaphore_signal_device(c, pl_at(c, refs[Q_FREE], 0), 1, 0);
    }
}

static void no_handshake(pl_ctx *c, pl_ref *refs) { reuse(c, refs, 0); }
static void with_handshake(pl_ctx *c, pl_ref *refs) { reuse(c, refs, 1); }

static void run(mh_run *r, pl_kernel_fn k, uint64_t seed)
{
    pl_call call = race_call(k, 3);
    pl_options opt = {.seed = seed};
    mh_alloc(r, "ring:2", 8, 128, 8, 128);
    mh_call(r, &call, &opt);
}

Test(mesh_races, a_buffer_sent_into_again_without_a_handshake_is_ERACE_in_every_schedule)
{
    char first[2048] = "";
    for (uint64_t seed = 0; seed < 6; seed++) {
        mh_run r;
        run(&r, no_handshake, seed);
        cr_assert_eq(r.rc, PL_ERACE, "seed %llu: %d %s", (unsigned long long)seed, r.rc, r.mr.error);
        cr_expect_eq(r.mr.failed_device, 0, "the sender: %s", r.mr.error);
        mh_assert_says(r.mr.error, "capacity handshake", "M12", "V4", "device 1");
        mh_expect_same_report(first, sizeof first, seed, r.mr.error);
        mh_free(&r);
    }
}

Test(mesh_races, with_the_handshake_it_runs)
{
    for (uint64_t seed = 0; seed < 4; seed++) {
        mh_run r;
        run(&r, with_handshake, seed);
        cr_expect_eq(r.rc, PL_OK, "seed %llu: %s", (unsigned long long)seed, r.mr.error);
        mh_free(&r);
    }
}

/* Device 1 copies its buffer out to o by DMA; device 0 sends into that
 * buffer. ordered: device 1 waits for its copy and then signals device 0,
 * which waits for the signal before sending. */
static void read_then_overwritten(pl_ctx *c, pl_ref *refs, int ordered)
{
    int me = pltpu_device_id(c);
    pltpu_remote_copy cp = q_copy(c, refs, refs[Q_X], refs[Q_BUF], 1);
    if (me == 1) {
        pltpu_copy out = pltpu_async_copy(c, refs[Q_BUF], refs[Q_O], pl_at(c, refs[Q_DMA], 0));
        pltpu_copy_start(c, &out);
        if (ordered) {
            pltpu_copy_wait(c, &out);
            pltpu_semaphore_signal_device(c, pl_at(c, refs[Q_FREE], 0), 1, 0);
        }
        pltpu_remote_copy_wait_recv(c, &cp);
        if (!ordered) pltpu_copy_wait(c, &out);
    } else {
        if (ordered) pltpu_semaphore_wait(c, pl_at(c, refs[Q_FREE], 0), 1);
        pltpu_remote_copy_start(c, &cp);
        pltpu_remote_copy_wait_send(c, &cp);
    }
}

static void unordered_read(pl_ctx *c, pl_ref *refs) { read_then_overwritten(c, refs, 0); }
static void ordered_read(pl_ctx *c, pl_ref *refs) { read_then_overwritten(c, refs, 1); }

Test(mesh_races, a_buffer_overwritten_while_its_own_copy_reads_it_is_ERACE_in_every_schedule, .timeout = 60)
{
    char first[2048] = "";
    for (uint64_t seed = 0; seed < 6; seed++) {
        mh_run r;
        pl_call call = race_call(unordered_read, 1);
        pl_options opt = {.seed = seed};
        mh_alloc(&r, "ring:2", 8, 128, 8, 128);
        mh_call(&r, &call, &opt);
        cr_assert_eq(r.rc, PL_ERACE, "seed %llu: %d %s", (unsigned long long)seed, r.rc, r.mr.error);
        /* found by whichever side comes second in this schedule, and reported
         * the same way in every one */
        mh_assert_says(r.mr.error, "device 0's copy into it", "device 1's local copy reading it", "'scratch0' of "
                       "device 1", "V4", "M11");
        cr_expect_eq(r.mr.failed_device, 0);
        mh_expect_same_report(first, sizeof first, seed, r.mr.error);
        mh_free(&r);
    }
}

Test(mesh_races, after_its_wait_and_a_signal_it_may_be_overwritten)
{
    for (uint64_t seed = 0; seed < 4; seed++) {
        mh_run r;
        pl_call call = race_call(ordered_read, 1);
        pl_options opt = {.seed = seed};
        mh_alloc(&r, "ring:2", 8, 128, 8, 128);
        mh_call(&r, &call, &opt);
        cr_expect_eq(r.rc, PL_OK, "seed %llu: %s", (unsigned long long)seed, r.mr.error);
        mh_free(&r);
    }
}

/* ---- a remote copy's bounds (V2, M11) ------------------------------------------ */

/* Device 0 sends 8 rows into rows 4..11 of device 1's 8-row buffer. */
static void past_the_end(pl_ctx *c, pl_ref *refs)
{
    if (pltpu_device_id(c) != 0) return;
    pltpu_remote_copy cp = q_copy(c, refs, refs[Q_X], pl_ds(c, refs[Q_O], 0, 4, 8), 1);
    pltpu_remote_copy_start(c, &cp);
}

/* One step of kernel k on mesh, x (8, 128) and o (orows, 128) per device. */
static void run_once(mh_run *r, pl_kernel_fn k, const char *mesh, int64_t orows)
{
    pl_call call = race_call(k, 1);
    mh_alloc(r, mesh, 8, 128, orows, 128);
    mh_call(r, &call, NULL);
}

Test(mesh_races, a_remote_copy_past_the_end_of_its_destination_is_EBOUNDS)
{
    mh_run r;
    run_once(&r, past_the_end, "ring:2", 8);
    cr_assert_eq(r.rc, PL_EBOUNDS, "%d %s", r.rc, r.mr.error);
    cr_expect_eq(r.mr.failed_device, 0);
    mh_assert_says(r.mr.error, "pltpu_remote_copy_start into a destination", "'o'", "grid point (0)");
    mh_free(&r);
}

/* JAX's test_race_detection: devices 0 and 1 each send their 8 rows of x
 * into their own half of device 2's 16-row o, and device 2 waits for both
 * with one descriptor over x's rows 0..15, never started: a wait takes its
 * byte count, so a handle past its Ref is fine until it is started. */
static void wait_with_one_long_handle(pl_ctx *c, pl_ref *refs)
{
    int me = pltpu_device_id(c);
    if (me == 2) { /* one descriptor for both */
        pltpu_remote_copy all = q_copy(c, refs, pl_ds(c, refs[Q_X], 0, 0, 16), refs[Q_O], 2);
        pltpu_remote_copy_wait_recv(c, &all);
        return;
    }
    pltpu_remote_copy cp = q_copy(c, refs, refs[Q_X], pl_ds(c, refs[Q_O], 0, 8 * me, 8), 2);
    pltpu_remote_copy_start(c, &cp);
    pltpu_remote_copy_wait_send(c, &cp);
}

Test(mesh_races, a_handle_past_its_ref_only_waited_on_takes_its_byte_count)
{
    mh_run r;
    run_once(&r, wait_with_one_long_handle, "ring:3", 16);
    cr_assert_eq(r.rc, PL_OK, "%d %s", r.rc, r.mr.error);
    for (int i = 0; i < 8 * 128; i++) {
        cr_assert_eq(r.o[2 * 16 * 128 + i], r.x[i], "device 0's rows first");
        cr_assert_eq(r.o[2 * 16 * 128 + 8 * 128 + i], r.x[8 * 128 + i], "device 1's rows second");
    }
    mh_free(&r);
}

/* An all-to-all: each device copies its x into row block `me` of every
 * other device's output, all copies in flight at once, then waits for
 * them. Copies into different devices never race, whatever their offsets;
 * a cost-only run, whose devices share addresses, refused it as V4. */
static void all_to_all(pl_ctx *c, pl_ref *refs)
{
    int me = pltpu_device_id(c), n = pltpu_num_devices(c);
    pltpu_remote_copy cp[8];
    for (int k = 1; k < n; k++) {
        cp[k] = pltpu_make_async_remote_copy(c, refs[0], pl_ds(c, refs[1], 0, me * 8, 8), pl_at(c, refs[2], 0),
                                             pl_at(c, refs[2], 1), (me + k) % n);
        pltpu_remote_copy_start(c, &cp[k]);
    }
    for (int k = 1; k < n; k++) pltpu_remote_copy_wait(c, &cp[k]);
}

Test(mesh_races, copies_to_different_devices_never_race_even_cost_only)
{
    for (int cost_only = 0; cost_only < 2; cost_only++) {
        mh_run r;
        mh_alloc(&r, "x=4", 8, 128, 32, 128);
        pl_call call = {.name = "a2a", .kernel = all_to_all, .n_in = 1, .n_out = 1, .n_scratch = 1,
                        .scratch = {PLTPU_SEMAPHORE_DMA(2)}};
        call.in[0].space = call.out[0].space = PL_ANY;
        pl_options opt = {.cost_only = cost_only};
        for (int d = 0; d < r.n && cost_only; d++) r.args[d].data = r.outs[d].data = NULL; /* as tilesim sweep runs it */
        mh_call(&r, &call, &opt);
        cr_expect_eq(r.rc, PL_OK, "cost_only %d: %s", cost_only, r.mr.error);
        mh_free(&r);
    }
}
