/* The mesh's timing (issue 12): the devices' timelines are replayed
 * together, so a device that waits for another's copy or signal waits in
 * simulated time too, until that copy has crossed its links or that signal
 * was made (rules M8, M9, M11). */
#include <criterion/criterion.h>
#include <string.h>

#include "test_mesh_helpers.h"

enum { T_X, T_O, T_ACC, T_DMA, T_SEM };

static pl_call timing_call(pl_kernel_fn k)
{
    pl_call call = {
        .name = "mesh_timing", .kernel = k, .grid_rank = 1, .grid = {1},
        .n_in = 1, .in = {{.space = PL_ANY, .name = "x"}},
        .n_out = 1, .out = {{.space = PL_ANY, .name = "o"}},
        .n_scratch = 3,
        .scratch = {PLTPU_VMEM(PL_F32, 512, 512), PLTPU_SEMAPHORE_DMA(2), PLTPU_SEMAPHORE(1)},
    };
    return call;
}

/* Run kernel k (timing_call's refs) cost-only on `mesh`, x (8, 128), o (16, 128); asserts it ran. */
static void run_timing(mh_run *r, pl_kernel_fn k, const char *mesh)
{
    pl_call call = timing_call(k);
    pl_options opt = {.cost_only = 1};
    mh_alloc(r, mesh, 8, 128, 16, 128);
    mh_call(r, &call, &opt);
    cr_assert_eq(r->rc, PL_OK, "%s", r->mr.error);
}

/* Device 0 works (64 dots of 512^3) and then sends rows 0..7 of x to device
 * 1, which only waits for them. */
static void busy_sender(pl_ctx *c, pl_ref *refs)
{
    int me = pltpu_device_id(c);
    pltpu_remote_copy cp = pltpu_make_async_remote_copy(c, refs[T_X], pl_ds(c, refs[T_O], 0, 0, 8),
                                                        pl_at(c, refs[T_DMA], 0), pl_at(c, refs[T_DMA], 1), 1);
    if (me == 0) {
        for (int i = 0; i < 64; i++) pl_dot(c, refs[T_ACC], refs[T_ACC], refs[T_ACC], 0);
        pltpu_remote_copy_start(c, &cp);
        pltpu_remote_copy_wait_send(c, &cp);
    } else {
        pltpu_remote_copy_wait_recv(c, &cp);
    }
}

Test(mesh_timing, a_receiver_waits_for_its_busy_sender_M11)
{
    mh_run r;
    run_timing(&r, busy_sender, "line:2");
    double compute = r.reps[0].compute_s;
    cr_assert_gt(compute, 1e-5, "device 0 computes: %g s", compute);
    cr_expect_geq(r.reps[1].time_s, compute, "device 1 waits in time until device 0's copy arrives: %g s < %g s",
                  r.reps[1].time_s, compute);
    double link = 8.0 * 128 * 4 / pl_chip_default()->ici_bw;
    cr_expect_geq(r.reps[1].time_s, compute + link, "and until the copy crossed the link");
    cr_expect_geq(r.reps[1].remote_wait_s, compute, "device 1's report says it waited: %g s", r.reps[1].remote_wait_s);
    cr_expect_lt(r.reps[0].remote_wait_s, 1e-9, "device 0 waited for nobody: %g s", r.reps[0].remote_wait_s);
    cr_expect_eq(r.mr.remote_wait_s, r.reps[1].remote_wait_s);
    cr_expect_eq(r.mr.time_s, r.reps[0].time_s > r.reps[1].time_s ? r.reps[0].time_s : r.reps[1].time_s);
    mh_free(&r);
}

/* Device 1 works, then signals device 0's semaphore; device 0 waits on it. */
static void busy_signaller(pl_ctx *c, pl_ref *refs)
{
    if (pltpu_device_id(c) == 1) {
        for (int i = 0; i < 32; i++) pl_dot(c, refs[T_ACC], refs[T_ACC], refs[T_ACC], 0);
        pltpu_semaphore_signal_device(c, pl_at(c, refs[T_SEM], 0), 1, 0);
    } else {
        pltpu_semaphore_wait(c, pl_at(c, refs[T_SEM], 0), 1);
    }
}

Test(mesh_timing, a_waiter_waits_for_a_late_signal_M9)
{
    mh_run r;
    run_timing(&r, busy_signaller, "ring:2");
    cr_expect_gt(r.reps[1].compute_s, 1e-5);
    cr_expect_geq(r.reps[0].time_s, r.reps[1].compute_s, "device 0 waits until device 1 signals: %g s < %g s",
                  r.reps[0].time_s, r.reps[1].compute_s);
    cr_expect_lt(r.reps[0].compute_s, r.reps[1].compute_s / 10, "device 0 itself computes little");
    mh_free(&r);
}

/* Ten round trips of a signal between devices 0 and 3 of a line of 4 (3 hops each way): a signal crosses
 * the links as a copy's first byte does, after the DMA latency and a latency per hop, so the trips take
 * at least 20 x (latency + 3 hops). Before, a signal reached its device the instant it was made, and the
 * ten trips took a few issue slots (barriers and handshakes cost nothing). */
static void ping_pong(pl_ctx *c, pl_ref *refs)
{
    int me = pltpu_device_id(c);
    pl_ref s = pl_at(c, refs[T_SEM], 0);
    if (me != 0 && me != 3) return;
    for (int i = 0; i < 10; i++) {
        if (me == 0) pltpu_semaphore_signal_device(c, s, 1, 3), pltpu_semaphore_wait(c, s, 1);
        else pltpu_semaphore_wait(c, s, 1), pltpu_semaphore_signal_device(c, s, 1, 0);
    }
}

Test(mesh_timing, a_signal_to_another_device_takes_the_latency_of_its_hops_M9)
{
    mh_run r;
    run_timing(&r, ping_pong, "line:4");
    const pl_chip *chip = pl_chip_default();
    double trip = chip->dma_latency_s + 3 * chip->ici_latency_s;
    cr_assert_gt(trip, 1e-7, "the chip has DMA and hop latencies: %g s", trip);
    cr_expect_geq(r.mr.time_s, 20 * trip, "20 one-way signals of %g s: the mesh took %g s", trip, r.mr.time_s);
    cr_expect_lt(r.mr.time_s, 20 * trip + 20 * 2 * chip->dma_issue_s + 1e-6, "and little else: %g s",
                 r.mr.time_s);
    cr_expect_geq(r.reps[0].remote_wait_s, 10 * 2 * trip - 10 * 2 * chip->dma_issue_s - 1e-9,
                  "device 0 waits for each answer: %g s", r.reps[0].remote_wait_s);
    mh_free(&r);
}

/* The same kernel without the wait: device 1 finishes at once. The wait,
 * not something else, is what makes it late above. */
static void no_wait(pl_ctx *c, pl_ref *refs)
{
    if (pltpu_device_id(c) == 1)
        for (int i = 0; i < 32; i++) pl_dot(c, refs[T_ACC], refs[T_ACC], refs[T_ACC], 0);
}

Test(mesh_timing, without_the_wait_nobody_waits)
{
    mh_run r;
    run_timing(&r, no_wait, "ring:2");
    cr_expect_lt(r.reps[0].time_s, r.reps[1].compute_s / 10, "device 0: %g s", r.reps[0].time_s);
    mh_free(&r);
}

/* ---- links (dimension-ordered routes share links) ------------------------------ */

static pl_call two_senders_call(pl_kernel_fn k)
{
    pl_call call = {
        .name = "mesh_links", .kernel = k, .grid_rank = 1, .grid = {1},
        .n_in = 1, .in = {{.space = PL_ANY, .name = "x"}},
        .n_out = 1, .out = {{.space = PL_ANY, .name = "o"}},
        .n_scratch = 1, .scratch = {PLTPU_SEMAPHORE_DMA(3)},
    };
    return call;
}

/* Devices a and b each send all of x to device `to`, into rows of o of their
 * own; `to` waits for both. */
static void send_pair(pl_ctx *c, pl_ref *refs, int a, int b, int to)
{
    int me = pltpu_device_id(c);
    int64_t rows = refs[0].shape[0];
    for (int s = 0; s < 2; s++) {
        int from = s ? b : a;
        pltpu_remote_copy cp = pltpu_make_async_remote_copy(c, refs[0], pl_ds(c, refs[1], 0, s * rows, rows),
                                                            pl_at(c, refs[2], 0), pl_at(c, refs[2], 1 + s), to);
        if (me == from) {
            pltpu_remote_copy_start(c, &cp);
            pltpu_remote_copy_wait_send(c, &cp);
        }
        if (me == to) pltpu_remote_copy_wait_recv(c, &cp);
    }
}

static void shared_link(pl_ctx *c, pl_ref *refs) { send_pair(c, refs, 0, 1, 2); }   /* 0->1->2 and 1->2 */
static void disjoint_links(pl_ctx *c, pl_ref *refs) { send_pair(c, refs, 0, 2, 1); } /* 0->1 and 2->1 */

static double receiver_time(pl_kernel_fn k, int to)
{
    pl_call call = two_senders_call(k);
    pl_options opt = {.cost_only = 1};
    mh_run r;
    mh_alloc(&r, "line:3", 1024, 1024, 2048, 1024); /* 4 MiB per copy */
    mh_call(&r, &call, &opt);
    cr_assert_eq(r.rc, PL_OK, "%s", r.mr.error);
    double t = r.reps[to].time_s;
    mh_free(&r);
    return t;
}

Test(mesh_timing, copies_share_the_links_of_their_routes_M11)
{
    double one = 1024.0 * 1024 * 4 / pl_chip_default()->ici_bw;
    double shared = receiver_time(shared_link, 2), disjoint = receiver_time(disjoint_links, 1);
    /* 0 -> 2 crosses links (0,+x) and (1,+x); 1 -> 2 crosses (1,+x): they
     * share one link, each at half its bandwidth */
    cr_expect_geq(shared, 2 * one, "shared link: %g s, want >= %g s", shared, 2 * one);
    cr_expect_lt(shared, 2 * one * 1.1, "shared link: %g s", shared);
    /* 0 -> 1 on (0,+x) and 2 -> 1 on (2,-x): both at full bandwidth */
    cr_expect_geq(disjoint, one, "disjoint: %g s", disjoint);
    cr_expect_lt(disjoint, one * 1.1, "disjoint links: %g s, want about %g s", disjoint, one);
}

/* ---- the mesh's report -------------------------------------------------------- */

Test(mesh_timing, a_ring_all_gather_is_ici_bound_and_says_so)
{
    pl_options opt = {.cost_only = 1};
    mh_ring r;
    mh_ring_run(&r, 8, 256, 1024, &opt, NULL, 0);
    cr_assert_eq(r.rc, PL_OK, "%s", r.mr.error);
    cr_expect_eq(r.mr.links_used, 8, "a ring of 8 sending right uses its 8 links one way");
    cr_expect_eq(r.mr.link_bytes, 8.0 * 7 * 256 * 1024 * 4, "every copy crosses one link");
    cr_expect(r.mr.ici_bound, "%s", r.mr.bound_msg);
    cr_expect(strstr(r.mr.bound_msg, "ICI-bound") && strstr(r.mr.bound_msg, "M11"), "%s", r.mr.bound_msg);
    cr_expect(r.mr.ici_bw_fraction > 0.8 && r.mr.ici_bw_fraction <= 1.0, "links at %.2f of peak",
              r.mr.ici_bw_fraction);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    pl_mesh_report_print(&r.mr, r.reps, f);
    fclose(f);
    cr_expect(strstr(text, "device   7:") && strstr(text, "mesh: 8 devices") && strstr(text, "bound: ICI-bound"),
              "%s", text);
    free(text);
    mh_ring_free(&r);
}

Test(mesh_timing, a_busy_sender_is_not_ici_bound)
{
    mh_run r;
    run_timing(&r, busy_sender, "line:2");
    cr_expect(!r.mr.ici_bound, "%s", r.mr.bound_msg);
    cr_expect(strstr(r.mr.bound_msg, "compute"), "%s", r.mr.bound_msg);
    cr_expect_gt(r.mr.compute_s, r.mr.busiest_link_s);
    mh_free(&r);
}

Test(mesh_timing, tiny_copies_are_latency_bound_not_ici_bound)
{
    pl_options opt = {.cost_only = 1};
    mh_ring r;
    mh_ring_run(&r, 4, 8, 128, &opt, NULL, 0); /* 4 KiB shards: 91 ns on a link, 1.2 us of latency per hop */
    cr_assert_eq(r.rc, PL_OK, "%s", r.mr.error);
    cr_expect(!r.mr.ici_bound, "%s", r.mr.bound_msg);
    cr_expect(strstr(r.mr.bound_msg, "latency-bound") && strstr(r.mr.bound_msg, "P9"), "%s", r.mr.bound_msg);
    mh_ring_free(&r);
}
