/* The kernel's own loads and stores against remote copies (rules V4, M11,
 * M12). A device whose kernel stores into, or loads from, bytes another
 * device's copy lands in, with nothing ordering the two, computes whatever
 * the schedule gives; on a TPU the answer changes from run to run. JAX's
 * TPU interpret mode (detect_races=True) checks every load and store
 * against DMAs with vector clocks; tilesim does the same, in every schedule
 * alike: which of the two the host ran first does not matter.
 *
 * The kernels are JAX's own: tpu_pallas_distributed_test.py's
 * test_interpret_remote_dma_ppermute zeroes o_ref and then copies into the
 * neighbour's o_ref with no barrier between (JAX runs it under HLO
 * interpret, where the copy is a collective; on a chip, and in tilesim,
 * that is a race), and the same kernel with the barrier that makes it
 * right. */
#include <criterion/criterion.h>
#include <string.h>

#include "../sim/mesh/mesh_race.h"
#include "test_mesh_helpers.h"

enum { STORE_BEFORE, LOAD_BEFORE, STORE_AFTER, LOAD_AFTER };
static int g_case;

/* device 0 copies x into device 1's o; device 1 touches o before or after its wait_recv */
static void one_way(pl_ctx *c, pl_ref *refs)
{
    pl_ref o = refs[1], tmp = refs[3];
    pltpu_remote_copy cp = pltpu_make_async_remote_copy(c, refs[0], o, pl_at(c, refs[2], 0), pl_at(c, refs[2], 1), 1);
    if (pltpu_device_id(c) == 0) {
        pltpu_remote_copy_start(c, &cp);
        pltpu_remote_copy_wait_send(c, &cp);
        return;
    }
    if (g_case == STORE_BEFORE) pl_fill(c, o, 0.0);
    if (g_case == LOAD_BEFORE) pl_copy(c, tmp, o);
    pltpu_remote_copy_wait_recv(c, &cp);
    if (g_case == STORE_AFTER) pl_fill(c, o, 2.0);
    if (g_case == LOAD_AFTER) {
        pl_copy(c, tmp, o);
        pl_copy(c, o, tmp);
    }
}

static void run_one_way(int which, uint64_t seed, pl_dma_mode mode, mh_run *r)
{
    g_case = which;
    mh_alloc(r, "ring:2", 8, 128, 8, 128);
    pl_call call = {.name = "one_way", .kernel = one_way, .n_in = 1, .n_out = 1, .n_scratch = 2,
                    .scratch = {PLTPU_SEMAPHORE_DMA(2), PLTPU_VMEM(PL_F32, 8, 128)}};
    pl_options opt = {.chip = "v5e", .seed = seed, .dma_mode = mode};
    r->rc = pl_mesh_call(&r->mesh, &call, r->args, r->outs, &opt, &r->mr, r->reps);
}

static void expect_race(const mh_run *r, const char *what)
{
    cr_expect_eq(r->rc, PL_ERACE, "%s", r->mr.error);
    cr_expect(strstr(r->mr.error, what), "names \"%s\": %s", what, r->mr.error);
    cr_expect(strstr(r->mr.error, "device 0's copy into it"), "%s", r->mr.error);
    cr_expect(strstr(r->mr.error, "'out0' of device 1"), "%s", r->mr.error);
    cr_expect(strstr(r->mr.error, "V4"), "%s", r->mr.error);
}

/* The access and the copy in either order (seeds move the host's
 * schedule), with copies that land at their start or at their wait:
 * always the race, named alike. */
static void expect_race_in_every_schedule(int which, const char *what)
{
    for (uint64_t seed = 0; seed < 6; seed++)
        for (int m = 0; m < 2; m++) {
            mh_run r;
            run_one_way(which, seed, m ? PL_DMA_ON_WAIT : PL_DMA_EAGER, &r);
            expect_race(&r, what);
            mh_free(&r);
        }
}

Test(mesh_kernel_races, a_store_before_wait_recv_races_with_the_copy_in_every_schedule)
{
    expect_race_in_every_schedule(STORE_BEFORE, "device 1's kernel writing it");
}

Test(mesh_kernel_races, a_load_before_wait_recv_races_with_the_copy_in_every_schedule)
{
    expect_race_in_every_schedule(LOAD_BEFORE, "device 1's kernel reading it");
}

/* after wait_recv the copy is the kernel's: no race, and the data is right */
Test(mesh_kernel_races, loads_and_stores_after_wait_recv_are_ordered)
{
    for (uint64_t seed = 0; seed < 4; seed++) {
        mh_run r;
        run_one_way(STORE_AFTER, seed, PL_DMA_EAGER, &r);
        th_expect_ok(r.rc, &r.reps[0]);
        cr_expect_eq(r.rc, PL_OK, "%s", r.mr.error);
        for (int i = 0; i < 1024; i++) cr_assert_eq(r.o[1024 + i], 2.0f);
        mh_free(&r);
        run_one_way(LOAD_AFTER, seed, PL_DMA_EAGER, &r);
        cr_expect_eq(r.rc, PL_OK, "%s", r.mr.error);
        for (int i = 0; i < 1024; i++) cr_assert_eq(r.o[1024 + i], r.x[i], "device 0's x arrived whole");
        mh_free(&r);
    }
}

/* ---- JAX's ppermute kernel, without and with the barrier ------------------------------ */

static int g_barrier;

static void ppermute(pl_ctx *c, pl_ref *refs)
{
    int me = (int)pltpu_axis_index(c, "x"), n = (int)pltpu_axis_size(c, "x");
    int right = (me + 1) % n, left = (me + n - 1) % n;
    pl_fill(c, refs[1], 0.0); /* o_ref[...] = zeros */
    if (g_barrier) { /* tell the left neighbour, whose copy comes here, that o is zeroed */
        pl_ref b = pltpu_get_barrier_semaphore(c);
        pltpu_semaphore_signal_device(c, b, 1, left);
        pltpu_semaphore_wait(c, b, 1);
    }
    pltpu_remote_copy cp = pltpu_make_async_remote_copy(c, refs[0], refs[1], pl_at(c, refs[2], 0),
                                                        pl_at(c, refs[2], 1), right);
    pltpu_remote_copy_start(c, &cp);
    pltpu_remote_copy_wait(c, &cp);
}

static void run_ppermute(int barrier, uint64_t seed, mh_run *r)
{
    g_barrier = barrier;
    mh_alloc(r, "ring:4", 8, 128, 8, 128);
    pl_call call = {.name = "ppermute", .kernel = ppermute, .n_in = 1, .n_out = 1, .n_scratch = 1,
                    .scratch = {PLTPU_SEMAPHORE_DMA(2)}, .has_collective_id = barrier};
    call.in[0].space = PL_ANY; /* x in ANY, o in VMEM, as the JAX test */
    pl_options opt = {.chip = "v5e", .seed = seed};
    r->rc = pl_mesh_call(&r->mesh, &call, r->args, r->outs, &opt, &r->mr, r->reps);
}

/* the same race named in every schedule: the first in the canonical order */
Test(mesh_kernel_races, jax_ppermute_zeroing_its_output_with_no_barrier_is_a_race)
{
    static char first[PL_MSG_MAX];
    for (uint64_t seed = 0; seed < 6; seed++) {
        mh_run r;
        run_ppermute(0, seed, &r);
        cr_expect_eq(r.rc, PL_ERACE, "seed %llu: %s", (unsigned long long)seed, r.mr.error);
        cr_expect(strstr(r.mr.error, "kernel writing it") && strstr(r.mr.error, "copy into it"), "%s", r.mr.error);
        mh_expect_same_report(first, sizeof first, seed, r.mr.error);
        mh_free(&r);
    }
}

Test(mesh_kernel_races, jax_ppermute_with_the_barrier_is_ordered_and_right)
{
    for (uint64_t seed = 0; seed < 6; seed++) {
        mh_run r;
        run_ppermute(1, seed, &r);
        cr_assert_eq(r.rc, PL_OK, "seed %llu: %s", (unsigned long long)seed, r.mr.error);
        for (int d = 0; d < 4; d++)
            for (int i = 0; i < 1024; i++)
                cr_assert_eq(r.o[d * 1024 + i], r.x[((d + 3) % 4) * 1024 + i], "device %d holds its left's x", d);
        mh_free(&r);
    }
}

/* ---- the detector itself: epochs -------------------------------------------------------- */

/* Device 1's store, then device 0's copy into the same bytes: a race unless
 * device 0 waited for a signal device 1 sent after the store. */
Test(mesh_kernel_races, a_signal_after_the_store_orders_the_copy_one_before_does_not)
{
    for (int ordered = 0; ordered < 2; ordered++) {
        sim_mesh_race *r = sim_mesh_race_new(2);
        cr_assert(r);
        int64_t sem0 = 0, recv1 = 0, early = 0;
        /* a signal before the store carries nothing of it */
        sim_mesh_race_added(r, 1, 0, &early, 1);
        sim_mesh_race_taken(r, 0, &early, 1);
        cr_expect_eq(sim_mesh_race_access(r, 1, 4096, 4096 + 512, 1, "(0,)"), 0, "nothing landed yet");
        if (ordered) {
            sim_mesh_race_added(r, 1, 0, &sem0, 1);
            sim_mesh_race_taken(r, 0, &sem0, 1);
        }
        int raced = sim_mesh_race_copy(r, 0, 1, 4096 + 256, 4096 + 768, &recv1, 512, "(0,)");
        cr_expect_eq(raced, !ordered, "ordered %d", ordered);
        cr_expect_eq(sim_mesh_race_found(r) != NULL, !ordered);
        if (!ordered) {
            const sim_mesh_conflict *f = sim_mesh_race_found(r);
            cr_expect_eq(f->on, 1);
            cr_expect_eq(f->key, 4096 + 256, "the first byte both touch");
            cr_expect(f->a.kind == 0 && f->b.kind == 4, "a copy and a store: %d %d", f->a.kind, f->b.kind);
        }
        sim_mesh_race_free(r);
    }
}

/* A copy lands; a load of its bytes races until wait_recv took them, and
 * not after; bytes beside the copy's never race. */
Test(mesh_kernel_races, a_load_races_with_a_landed_copy_until_its_receive)
{
    sim_mesh_race *r = sim_mesh_race_new(2);
    cr_assert(r);
    int64_t recv1 = 0;
    cr_expect_eq(sim_mesh_race_copy(r, 0, 1, 1000, 2000, &recv1, 1000, "(0,)"), 0);
    cr_expect_eq(sim_mesh_race_access(r, 1, 2000, 3000, 0, "(0,)"), 0, "beside it");
    sim_mesh_race_added(r, 0, 1, &recv1, 1000);
    sim_mesh_race_taken(r, 1, &recv1, 1000);
    cr_expect_eq(sim_mesh_race_access(r, 1, 1500, 1600, 0, "(1,)"), 0, "received");
    cr_expect_null(sim_mesh_race_found(r));
    cr_expect_eq(sim_mesh_race_copy(r, 0, 1, 5000, 6000, &recv1, 1000, "(1,)"), 0);
    cr_expect_eq(sim_mesh_race_access(r, 1, 5500, 5504, 0, "(1,)"), 1, "not received yet");
    const sim_mesh_conflict *f = sim_mesh_race_found(r);
    cr_assert(f);
    cr_expect_eq(f->b.kind, 3, "the kernel's load");
    sim_mesh_race_free(r);
}
