/* The race detector on a thread of its own (sim/mesh/race_queue.h, issue
 * 26): events queued by a cost-only walk and applied later, in order, find
 * the same race as the detector called in the walk (rules V4, M11, M12),
 * through many blocks of events and with a walk held back by a full queue;
 * and a cost-only mesh run reports the same race as a run with data. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "../examples/kernels/ring_allreduce.h"
#include "../sim/mesh/race_queue.h"
#include "test_mesh_helpers.h"

/* Device 0 sends into the same bytes of device 1 at each of `steps` steps;
 * device 1 takes each copy (wait_recv). handshake: device 1 then signals
 * device 0, which waits for it before sending again (M12). Given to the
 * detector directly (q NULL) or through a queue. */
static void ping(sim_mesh_race *r, sim_race_queue *q, int steps, int handshake)
{
    static int64_t recv, free_sem; /* the semaphores' cells: only their addresses matter */
    for (int s = 0; s < steps; s++) {
        char point[32];
        snprintf(point, sizeof point, "(%d,)", s);
        if (handshake && s > 0) {
            if (q) sim_race_queue_taken(q, 0, &free_sem, 1);
            else sim_mesh_race_taken(r, 0, &free_sem, 1);
        }
        if (q) {
            sim_race_queue_copy(q, 0, 1, 4096, 4096 + 512, &recv, 512, point);
            sim_race_queue_added(q, 0, 1, &recv, 512);
            sim_race_queue_taken(q, 1, &recv, 512);
            if (handshake) sim_race_queue_added(q, 1, 0, &free_sem, 1);
        } else {
            sim_mesh_race_copy(r, 0, 1, 4096, 4096 + 512, &recv, 512, point);
            sim_mesh_race_added(r, 0, 1, &recv, 512);
            sim_mesh_race_taken(r, 1, &recv, 512);
            if (handshake) sim_mesh_race_added(r, 1, 0, &free_sem, 1);
        }
    }
}

static void expect_same(const sim_mesh_conflict *a, const sim_mesh_conflict *b)
{
    cr_assert(a && b, "inline found %s, queued found %s", a ? "a race" : "none", b ? "a race" : "none");
    cr_expect_eq(a->on, b->on);
    cr_expect_eq(a->key, b->key);
    cr_expect_eq(a->a.device, b->a.device);
    cr_expect_eq(a->b.device, b->b.device);
    cr_expect_eq(a->a.kind, b->a.kind);
    cr_expect_str_eq(a->a.point, b->a.point);
    cr_expect_str_eq(a->b.point, b->b.point);
}

/* 5,000 steps: 20,000 events, five blocks of the queue; a queue of 3
 * events holds the walk back at nearly every one. */
Test(mesh_race_queue, queued_events_find_the_race_the_walk_would_through_many_blocks_and_a_full_queue)
{
    long long limits[] = {SIM_RACE_QUEUE_MAX, 3};
    for (int k = 0; k < 2; k++) {
        sim_mesh_race *direct = sim_mesh_race_new(2), *queued = sim_mesh_race_new(2);
        cr_assert(direct && queued);
        ping(direct, NULL, 5000, 0);
        sim_race_queue *q = sim_race_queue_start(queued, limits[k]);
        cr_assert(q);
        ping(queued, q, 5000, 0);
        sim_race_queue_finish(q);
        expect_same(sim_mesh_race_found(direct), sim_mesh_race_found(queued));
        cr_expect_str_eq(sim_mesh_race_found(queued)->a.point, "(0,)", "the first copy, then the second");
        cr_expect_str_eq(sim_mesh_race_found(queued)->b.point, "(1,)");
        sim_mesh_race_free(direct);
        sim_mesh_race_free(queued);
    }
}

Test(mesh_race_queue, with_the_handshake_queued_events_find_no_race)
{
    sim_mesh_race *r = sim_mesh_race_new(2);
    sim_race_queue *q = sim_race_queue_start(r, 7);
    cr_assert(r && q);
    ping(r, q, 5000, 1);
    sim_race_queue_finish(q);
    cr_expect_null(sim_mesh_race_found(r));
    sim_mesh_race_free(r);
}

Test(mesh_race_queue, finishing_an_empty_queue_or_none_is_harmless)
{
    sim_mesh_race *r = sim_mesh_race_new(4);
    sim_race_queue *q = sim_race_queue_start(r, SIM_RACE_QUEUE_MAX);
    cr_assert(q);
    sim_race_queue_finish(q);
    sim_race_queue_finish(NULL);
    cr_expect_null(sim_mesh_race_found(r));
    sim_mesh_race_free(r);
    cr_expect_null(sim_race_queue_start(NULL, 1));
}

/* The single-slot all-reduce on a ring of 32 (no capacity handshake, M12):
 * cost-only, its events go through the queue; with TILESIM_RACE_INLINE=1
 * the walk calls the detector; with data, the walk must (a racing copy's
 * data does not move). All three name the same race, in every schedule. */
static int allreduce(int single_slot, int cost_only, uint64_t seed, char *msg, size_t n)
{
    ar_shape s = {.devices = 32, .rows = 64 * 8, .cols = 128};
    ar_params p = {.single_slot = single_slot};
    ar_data d;
    cr_assert_eq(ar_alloc(&d, &s, 1, 42), PL_OK);
    pl_call call;
    ar_call(&call, &s, &p);
    pl_mesh mesh = mh_mesh("ring:32");
    pl_mesh_report mr;
    int rc = pl_mesh_call(&mesh, &call, d.args, d.outs, &(pl_options){.seed = seed, .cost_only = cost_only}, &mr,
                          NULL);
    snprintf(msg, n, "%s", mr.error);
    ar_free(&d);
    return rc;
}

/* Cost-only, queued and in the walk: the same race in every schedule; with
 * the handshake none. (Under ThreadSanitizer too: nothing moves.) */
Test(mesh_race_queue, a_cost_only_ring_finds_the_same_race_queued_and_in_the_walk, .timeout = 120)
{
    char queued[2048], in_walk[2048];
    setenv("TILESIM_RACE_INLINE", "1", 1); /* this test's own process (Criterion) */
    cr_assert_eq(allreduce(1, 1, 0, in_walk, sizeof in_walk), PL_ERACE, "%s", in_walk);
    unsetenv("TILESIM_RACE_INLINE");
    mh_assert_says(in_walk, "'recv_buf' of device", "capacity handshake", "V4");
    for (uint64_t seed = 0; seed < 3; seed++) {
        cr_assert_eq(allreduce(1, 1, seed, queued, sizeof queued), PL_ERACE, "%s", queued);
        cr_expect_str_eq(queued, in_walk, "seed %llu", (unsigned long long)seed);
    }
    cr_expect_eq(allreduce(0, 1, 0, queued, sizeof queued), PL_OK, "with the handshake: %s", queued);
}

/* With data the walk asks the detector itself (a racing copy's data must not
 * move): the race it names is the one the queue found. Not under
 * ThreadSanitizer: the kernel's own loads race with the copies, on purpose
 * (Makefile, check-tsan). */
Test(mesh_race_queue_data, a_cost_only_ring_reports_the_race_a_run_with_data_does, .timeout = 120)
{
    char with_data[2048], queued[2048];
    cr_assert_eq(allreduce(1, 0, 0, with_data, sizeof with_data), PL_ERACE, "%s", with_data);
    cr_assert_eq(allreduce(1, 1, 0, queued, sizeof queued), PL_ERACE, "%s", queued);
    cr_expect_str_eq(queued, with_data);
}
