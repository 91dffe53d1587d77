/* tests/test_mesh_runtime.c: one call run SPMD on every device of a mesh
 * (pl_mesh_call, rules M11, M12): the ring all-gather against its
 * reference, results that do not depend on the order of the device threads,
 * a barrier of remote signals, the device's place in the mesh, and a
 * 64-device ring in cost-only mode. The errors are in
 * test_mesh_runtime_errors.c. */
#include "test_mesh_helpers.h"

/* ---- the ring all-gather (M11, M12) ------------------------------------------ */

static void allgather_on(int n)
{
    mh_ring r;
    mh_ring_run(&r, n, 8, 128, NULL, NULL, 1);
    cr_assert_eq(r.rc, PL_OK, "ring of %d: %s", n, r.mr.error);
    cr_assert_eq(r.mr.status, PL_OK);
    cr_assert_eq(r.mr.n_devices, n);
    cr_assert_eq(r.mr.failed_device, -1);
    int dev;
    int64_t elem, bad = ra_mismatches(&r.d, &dev, &elem);
    cr_assert_eq(bad, 0, "ring of %d: %lld elements differ from the concatenation, the first on device %d, "
                 "element %lld",
                 n, (long long)bad, dev, (long long)elem);
    /* every device sends N - 1 shards of 8 x 128 f32 to its neighbour */
    cr_expect_eq(r.mr.remote_copies, (int64_t)n * (n - 1), "remote copies %lld", (long long)r.mr.remote_copies);
    cr_expect_eq(r.mr.ici_bytes, (int64_t)n * (n - 1) * 8 * 128 * 4, "ICI bytes %lld", (long long)r.mr.ici_bytes);
    for (int d = 0; d < n; d++) {
        cr_expect_eq(r.reps[d].status, PL_OK, "device %d: %s", d, r.reps[d].error);
        cr_expect_eq(r.reps[d].steps, n - 1, "device %d ran %lld steps", d, (long long)r.reps[d].steps);
        cr_expect_eq(r.reps[d].ici_copies, n - 1, "device %d sent %lld copies", d, (long long)r.reps[d].ici_copies);
        cr_expect_eq(r.reps[d].ici_bytes, (int64_t)(n - 1) * 8 * 128 * 4, "device %d", d);
    }
    cr_expect_gt(r.mr.time_s, 0);
    mh_ring_free(&r);
}

Test(mesh_runtime, allgather_ring_of_2_equals_the_concatenation) { allgather_on(2); }
Test(mesh_runtime, allgather_ring_of_3_equals_the_concatenation) { allgather_on(3); }
Test(mesh_runtime, allgather_ring_of_8_equals_the_concatenation) { allgather_on(8); }

/* The reference check itself fails on a wrong result: a test that cannot fail is none. */
Test(mesh_runtime, the_allgather_check_sees_a_wrong_slot)
{
    mh_ring r;
    mh_ring_run(&r, 3, 8, 128, NULL, NULL, 1);
    cr_assert_eq(r.rc, PL_OK, "%s", r.mr.error);
    r.d.o[2 * 3 * 8 * 128 + 5] += 1; /* device 2's o, element 5 */
    int dev;
    int64_t elem;
    cr_expect_eq(ra_mismatches(&r.d, &dev, &elem), 1);
    cr_expect_eq(dev, 2);
    cr_expect_eq(elem, 5);
    mh_ring_free(&r);
}

/* ---- the same results whatever the thread order (opt.seed) -------------------------- */

static void expect_same_report(const pl_report *a, const pl_report *b, int dev, uint64_t seed)
{
    cr_expect_eq(a->status, b->status, "device %d, seed %llu: status", dev, (unsigned long long)seed);
    cr_expect_str_eq(a->error, b->error, "device %d, seed %llu: error", dev, (unsigned long long)seed);
    cr_expect_eq(a->steps, b->steps, "device %d, seed %llu: steps", dev, (unsigned long long)seed);
    cr_expect_eq(a->dma_copies, b->dma_copies, "device %d, seed %llu: dma_copies", dev, (unsigned long long)seed);
    cr_expect_eq(a->dma_bytes, b->dma_bytes, "device %d, seed %llu: dma_bytes", dev, (unsigned long long)seed);
    cr_expect_eq(a->hbm_bytes, b->hbm_bytes, "device %d, seed %llu: hbm_bytes", dev, (unsigned long long)seed);
    cr_expect_eq(a->ici_copies, b->ici_copies, "device %d, seed %llu: ici_copies", dev, (unsigned long long)seed);
    cr_expect_eq(a->ici_bytes, b->ici_bytes, "device %d, seed %llu: ici_bytes", dev, (unsigned long long)seed);
    cr_expect_eq(a->scalar_ops, b->scalar_ops, "device %d, seed %llu: scalar_ops", dev, (unsigned long long)seed);
    cr_expect_eq(a->n_findings, b->n_findings, "device %d, seed %llu: findings", dev, (unsigned long long)seed);
    cr_expect_eq(a->n_warnings, b->n_warnings, "device %d, seed %llu: warnings", dev, (unsigned long long)seed);
    /* times are computed, not measured: equal to the bit */
    cr_expect_eq(a->time_s, b->time_s, "device %d, seed %llu: time %g vs %g", dev, (unsigned long long)seed,
                 a->time_s, b->time_s);
    cr_expect_eq(a->compute_s, b->compute_s, "device %d, seed %llu: compute_s", dev, (unsigned long long)seed);
    cr_expect_eq(a->overhead_s, b->overhead_s, "device %d, seed %llu: overhead_s", dev, (unsigned long long)seed);
    cr_expect_eq(a->dma_exposed_s, b->dma_exposed_s, "device %d, seed %llu: dma_exposed_s", dev,
                 (unsigned long long)seed);
    cr_expect_eq(a->n_operands, b->n_operands);
    for (int i = 0; i < a->n_operands && i < PL_MAX_CALL_OPERANDS; i++) {
        cr_expect_eq(a->op[i].copies, b->op[i].copies, "device %d, operand %d: copies", dev, i);
        cr_expect_eq(a->op[i].writebacks, b->op[i].writebacks, "device %d, operand %d: writebacks", dev, i);
        cr_expect_eq(a->op[i].bytes_in, b->op[i].bytes_in, "device %d, operand %d: bytes_in", dev, i);
        cr_expect_eq(a->op[i].bytes_out, b->op[i].bytes_out, "device %d, operand %d: bytes_out", dev, i);
    }
}

Test(mesh_runtime, seeds_change_the_thread_order_not_the_results)
{
    enum { N = 8 };
    mh_ring base;
    mh_ring_run(&base, N, 8, 128, NULL, NULL, 1);
    cr_assert_eq(base.rc, PL_OK, "%s", base.mr.error);
    static const uint64_t seeds[] = {1, 2, 99};
    for (size_t k = 0; k < sizeof seeds / sizeof *seeds; k++) {
        pl_options opt = {.seed = seeds[k]};
        mh_ring r;
        mh_ring_run(&r, N, 8, 128, &opt, NULL, 1);
        cr_assert_eq(r.rc, PL_OK, "seed %llu: %s", (unsigned long long)seeds[k], r.mr.error);
        size_t bytes = (size_t)N * N * 8 * 128 * sizeof(float);
        cr_expect_eq(memcmp(r.d.o, base.d.o, bytes), 0, "seed %llu: other outputs", (unsigned long long)seeds[k]);
        cr_expect_eq(r.mr.status, base.mr.status);
        cr_expect_eq(r.mr.remote_copies, base.mr.remote_copies, "seed %llu", (unsigned long long)seeds[k]);
        cr_expect_eq(r.mr.ici_bytes, base.mr.ici_bytes, "seed %llu", (unsigned long long)seeds[k]);
        cr_expect_eq(r.mr.time_s, base.mr.time_s, "seed %llu: mesh time %g vs %g", (unsigned long long)seeds[k],
                     r.mr.time_s, base.mr.time_s);
        for (int d = 0; d < N; d++) expect_same_report(&base.reps[d], &r.reps[d], d, seeds[k]);
        mh_ring_free(&r);
    }
    mh_ring_free(&base);
}

/* The deadlock's message and the faulting device do not depend on the order either. */
Test(mesh_runtime, seeds_do_not_change_the_deadlock_report)
{
    ra_params p = {.forgetful = 3};
    mh_ring base;
    mh_ring_run(&base, 4, 8, 128, NULL, &p, 1);
    cr_assert_eq(base.rc, PL_EDEADLOCK, "%d: %s", base.rc, base.mr.error);
    static const uint64_t seeds[] = {1, 2, 99};
    for (size_t k = 0; k < sizeof seeds / sizeof *seeds; k++) {
        pl_options opt = {.seed = seeds[k]};
        mh_ring r;
        mh_ring_run(&r, 4, 8, 128, &opt, &p, 1);
        cr_expect_eq(r.rc, PL_EDEADLOCK, "seed %llu", (unsigned long long)seeds[k]);
        cr_expect_str_eq(r.mr.error, base.mr.error, "seed %llu", (unsigned long long)seeds[k]);
        cr_expect_eq(r.mr.failed_device, base.mr.failed_device, "seed %llu", (unsigned long long)seeds[k]);
        mh_ring_free(&r);
    }
    mh_ring_free(&base);
}

/* ---- a barrier of remote signals (M9) --------------------------------------------- */

/* Each device adds me + 1 to its right neighbour's semaphore and waits for
 * exactly what its left neighbour adds: a signal that landed on the wrong
 * device would leave a count the wait does not match. o[0, 0..2]: the
 * count left after the wait, the increment waited for, and 1 once past. */
static void barrier_kernel(pl_ctx *c, pl_ref *refs)
{
    int me = pltpu_device_id(c), n = pltpu_num_devices(c), left = (me + n - 1) % n;
    pl_ref sem = pl_at(c, refs[2], 0), o = refs[1];
    pltpu_semaphore_signal_device(c, sem, me + 1, (me + 1) % n);
    pltpu_semaphore_wait(c, sem, left + 1);
    pl_fill(c, o, 0);
    pl_set_at(c, o, (double)pltpu_semaphore_read(c, sem), 0, 0);
    pl_set_at(c, o, left + 1, 0, 1);
    pl_set_at(c, o, 1, 0, 2);
}

static void barrier_on(const char *mesh)
{
    pl_call call = {
        .name = "barrier", .kernel = barrier_kernel, .grid_rank = 1, .grid = {1},
        .n_in = 1, .in = {{.space = PL_ANY}},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 8, 128)},
        .n_scratch = 1, .scratch = {PLTPU_SEMAPHORE(1)},
    };
    mh_run r;
    mh_alloc(&r, mesh, 8, 128, 8, 128);
    mh_call(&r, &call, NULL);
    cr_assert_eq(r.rc, PL_OK, "%s: %s", mesh, r.mr.error);
    for (int d = 0; d < r.n; d++) {
        const float *o = r.o + d * r.o_elems;
        int left = (d + r.n - 1) % r.n;
        cr_expect_eq(o[0], 0, "%s, device %d: %g left on the barrier semaphore", mesh, d, o[0]);
        cr_expect_eq(o[1], left + 1, "%s, device %d waited for %g", mesh, d, o[1]);
        cr_expect_eq(o[2], 1, "%s, device %d never passed the barrier", mesh, d);
    }
    mh_free(&r);
}

Test(mesh_runtime, barrier_of_remote_signals_on_a_ring_of_2) { barrier_on("ring:2"); }
Test(mesh_runtime, barrier_of_remote_signals_on_a_ring_of_5) { barrier_on("ring:5"); }

/* ---- the device's place in the mesh ------------------------------------------------ */

static void place_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_ref o = refs[1];
    pl_fill(c, o, -1);
    pl_set_at(c, o, pltpu_device_id(c), 0, 0);
    pl_set_at(c, o, pltpu_num_devices(c), 0, 1);
    pl_set_at(c, o, (double)pltpu_axis_index(c, "x"), 0, 2);
    pl_set_at(c, o, (double)pltpu_axis_size(c, "x"), 0, 3);
    pl_set_at(c, o, (double)pltpu_axis_index(c, "y"), 0, 4);
    pl_set_at(c, o, (double)pltpu_axis_size(c, "y"), 0, 5);
}

Test(mesh_runtime, device_id_and_axis_index_on_a_2x4_mesh)
{
    pl_call call = {
        .name = "place", .kernel = place_kernel, .grid_rank = 1, .grid = {1},
        .n_in = 1, .in = {{.space = PL_ANY}},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 8, 128)},
    };
    mh_run r;
    mh_alloc(&r, "2x4", 8, 128, 8, 128);
    cr_assert_eq(r.n, 8);
    mh_call(&r, &call, NULL);
    cr_assert_eq(r.rc, PL_OK, "%s", r.mr.error);
    for (int d = 0; d < 8; d++) {
        const float *o = r.o + d * r.o_elems;
        int64_t xy[PL_MESH_MAX_AXES];
        pl_mesh_coords(&r.mesh, d, xy);
        /* row-major over (x, y), y fastest */
        cr_expect_eq(xy[0], d / 4);
        cr_expect_eq(xy[1], d % 4);
        cr_expect_eq(o[0], d, "device %d says it is %g", d, o[0]);
        cr_expect_eq(o[1], 8, "device %d: %g devices", d, o[1]);
        cr_expect_eq(o[2], d / 4, "device %d: x index %g", d, o[2]);
        cr_expect_eq(o[3], 2, "device %d: x size %g", d, o[3]);
        cr_expect_eq(o[4], d % 4, "device %d: y index %g", d, o[4]);
        cr_expect_eq(o[5], 4, "device %d: y size %g", d, o[5]);
    }
    mh_free(&r);
}

/* ---- timing against the closed form (M12) -------------------------------------------------- */

/* A ring all-gather sends N - 1 shards over each device's link to the right:
 * (N - 1) / N of the total bytes over one link's one-way bandwidth. With
 * large shards the latencies, the local copy and the step overheads are a
 * small part: within 10 %, and never faster than the links allow. */
static void ring_time_near_closed_form(const char *chip, int n, int64_t rows)
{
    pl_options opt = {.cost_only = 1, .chip = chip};
    mh_ring r;
    mh_ring_run(&r, n, rows, 1024, &opt, NULL, 0);
    cr_assert_eq(r.rc, PL_OK, "%s", r.mr.error);
    double closed = ra_closed_form_s(&r.d.s, pl_chip_find(chip)), ratio = r.mr.time_s / closed;
    cr_assert_gt(closed, 0);
    cr_expect(ratio >= 0.999 && ratio <= 1.10,
              "%s, ring of %d, %lld-row shards: %.2f us simulated, %.2f us closed form (ratio %.3f)", chip, n,
              (long long)rows, r.mr.time_s * 1e6, closed * 1e6, ratio);
    mh_ring_free(&r);
}

Test(mesh_runtime, ring_allgather_of_8_within_10_percent_of_the_closed_form_on_v5e)
{
    ring_time_near_closed_form("v5e", 8, 256);
}

Test(mesh_runtime, ring_allgather_of_8_within_10_percent_of_the_closed_form_on_v5p)
{
    ring_time_near_closed_form("v5p", 8, 1024);
}

/* ---- a mesh of 64 devices, cost only -------------------------------------------------- */

Test(mesh_runtime, ring_allgather_of_64_devices_cost_only_under_10_s, .timeout = 60)
{
    pl_options opt = {.cost_only = 1};
    mh_ring r;
    mh_ring_run(&r, 64, 256, 1024, &opt, NULL, 0); /* 1 MiB shards, no data */
    cr_assert_eq(r.rc, PL_OK, "%s", r.mr.error);
    cr_expect_lt(r.seconds, 10.0, "64 devices took %.2f s on the host", r.seconds);
    cr_expect_eq(r.mr.remote_copies, 64 * 63);
    cr_expect_eq(r.mr.ici_bytes, (int64_t)64 * 63 * 256 * 1024 * 4);
    /* the ring cannot beat N - 1 shards over one link */
    cr_expect_geq(r.mr.time_s, ra_closed_form_s(&r.d.s, pl_chip_default()) * 0.999, "%g s", r.mr.time_s);
    cr_log_info("ring all-gather of 64 devices, 1 MiB shards, cost only: %.3f s on the host, %.1f us simulated",
                r.seconds, r.mr.time_s * 1e6);
    mh_ring_free(&r);
}
