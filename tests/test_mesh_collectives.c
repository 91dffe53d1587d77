/* tests/test_mesh_collectives.c: the collectives of issue 12 run SPMD by
 * pl_mesh_call (rules M7-M12): the bidirectional ring all-reduce
 * (examples/kernels/ring_allreduce.h) against the elementwise sum on 2, 4
 * and 8 devices, the same bits whatever the thread order, its time against
 * the closed form and on 64 devices; the collective matmul
 * (examples/kernels/collective_matmul.h), overlapped and gathered first,
 * against OpenBLAS, and the overlap's time. What the capacity handshake
 * prevents is in test_mesh_collectives_handshake.c. */
#include <math.h>

#include "../examples/kernels/collective_matmul.h"
#include "../examples/kernels/ring_allreduce.h"
#include "test_mesh_helpers.h"

/* ---- the ring all-reduce (M12) ------------------------------------------------ */

typedef struct ar_run {
    pl_mesh mesh;
    ar_data d;
    pl_report *reps;
    pl_mesh_report mr;
    int rc;
    double seconds;
} ar_run;

static void ar_run_ways(ar_run *r, int n, int64_t rows, int64_t cols, const pl_options *opt, int with_data, int dirs)
{
    char text[32];
    snprintf(text, sizeof text, "ring:%d", n);
    memset(r, 0, sizeof *r);
    r->mesh = mh_mesh(text);
    ar_shape s = {.devices = n, .rows = rows, .cols = cols, .directions = dirs};
    cr_assert_eq(ar_alloc(&r->d, &s, with_data, 42), PL_OK, "ar_alloc(%d, %lld, %lld)", n, (long long)rows,
                 (long long)cols);
    r->reps = calloc((size_t)n, sizeof *r->reps);
    cr_assert(r->reps, "out of host memory");
    pl_call call;
    ar_call(&call, &s, NULL);
    double t0 = mh_now();
    r->rc = pl_mesh_call(&r->mesh, &call, r->d.args, r->d.outs, opt, &r->mr, r->reps);
    r->seconds = mh_now() - t0;
}

static void ar_run_on(ar_run *r, int n, int64_t rows, int64_t cols, const pl_options *opt, int with_data)
{
    ar_run_ways(r, n, rows, cols, opt, with_data, 2);
}

static void ar_run_free(ar_run *r)
{
    ar_free(&r->d);
    free(r->reps);
    r->reps = NULL;
}

static void allreduce_on(int n)
{
    ar_run r;
    int64_t rows = 2 * n * 8, cols = 256; /* halves of (8, 256) */
    ar_run_on(&r, n, rows, cols, NULL, 1);
    cr_assert_eq(r.rc, PL_OK, "ring of %d: %s", n, r.mr.error);
    ar_error e;
    cr_assert_eq(ar_verify(&r.d, -1, &e), PL_OK);
    cr_expect(e.ok, "ring of %d: %lld elements differ from the sum by more than (N-1) u sum|x|, the first on device "
              "%d, element %lld; max error %g (M12)",
              n, (long long)e.bad, e.first_device, (long long)e.first_elem, e.max_abs_err);
    /* every device sends one half each way per step: 2 x 2 (N - 1) copies,
     * 2 (N - 1) / N of its bytes */
    int64_t half = rows / (2 * n) * cols * 4;
    cr_expect_eq(r.mr.remote_copies, (int64_t)n * 4 * (n - 1), "ring of %d: %lld remote copies", n,
                 (long long)r.mr.remote_copies);
    /* both directions of every link of the ring (a ring of 2 has one link each way) */
    cr_expect_eq(r.mr.links_used, n == 2 ? 2 : 2 * n, "ring of %d: %d directed links carried data", n,
                 r.mr.links_used);
    for (int d = 0; d < n; d++) {
        cr_expect_eq(r.reps[d].steps, 2 * (n - 1), "device %d ran %lld steps", d, (long long)r.reps[d].steps);
        cr_expect_eq(r.reps[d].ici_bytes, 4 * (n - 1) * half, "device %d sent %lld bytes", d,
                     (long long)r.reps[d].ici_bytes);
    }
    ar_run_free(&r);
}

Test(mesh_collectives, allreduce_ring_of_2_equals_the_sum_M12) { allreduce_on(2); }
Test(mesh_collectives, allreduce_ring_of_4_equals_the_sum_M12) { allreduce_on(4); }
Test(mesh_collectives, allreduce_ring_of_8_equals_the_sum_M12) { allreduce_on(8); }

/* The one-way ring (ar_shape.directions = 1), the textbook algorithm: the
 * same sum from half the copies, each a whole shard, over one direction of
 * each link; the capacity handshake (M12) is what keeps its slots right. */
static void one_way_on(int n)
{
    ar_run r;
    int64_t rows = n * 8, cols = 256; /* shards of (8, 256) */
    ar_run_ways(&r, n, rows, cols, NULL, 1, 1);
    cr_assert_eq(r.rc, PL_OK, "one-way ring of %d: %s", n, r.mr.error);
    ar_error e;
    cr_assert_eq(ar_verify(&r.d, -1, &e), PL_OK);
    cr_expect(e.ok, "one-way ring of %d: %lld elements wrong, max error %g (M12)", n, (long long)e.bad, e.max_abs_err);
    int64_t shard = rows / n * cols * 4;
    cr_expect_eq(r.mr.remote_copies, (int64_t)n * 2 * (n - 1), "one-way ring of %d: %lld remote copies", n,
                 (long long)r.mr.remote_copies);
    cr_expect_eq(r.mr.links_used, n, "one-way ring of %d: %d directed links carried data", n, r.mr.links_used);
    for (int d = 0; d < n; d++)
        cr_expect_eq(r.reps[d].ici_bytes, 2 * (n - 1) * shard, "device %d sent %lld bytes", d,
                     (long long)r.reps[d].ici_bytes);
    ar_run_free(&r);
}

Test(mesh_collectives, one_way_ring_of_3_equals_the_sum_M12) { one_way_on(3); }
Test(mesh_collectives, one_way_ring_of_8_equals_the_sum_M12) { one_way_on(8); }

/* One way, each link carries twice the bytes of the bidirectional ring's
 * busiest direction: the mesh takes about twice as long, within the
 * latencies, and no less than its own closed form. */
Test(mesh_collectives, one_way_ring_takes_its_one_direction_closed_form)
{
    ar_run one, two;
    ar_run_ways(&one, 8, 1024, 1024, &(pl_options){.cost_only = 1}, 0, 1);
    ar_run_ways(&two, 8, 1024, 1024, &(pl_options){.cost_only = 1}, 0, 2);
    cr_assert_eq(one.rc, PL_OK, "%s", one.mr.error);
    cr_assert_eq(two.rc, PL_OK, "%s", two.mr.error);
    double closed = ar_closed_form_s(&one.d.s, pl_chip_default(), 1);
    cr_expect_geq(one.mr.time_s, closed);
    cr_expect_lt(one.mr.time_s, 1.25 * closed, "%g us against %g us", one.mr.time_s * 1e6, closed * 1e6);
    cr_expect_gt(one.mr.time_s, 1.5 * two.mr.time_s, "one way %g us, both ways %g us", one.mr.time_s * 1e6,
                 two.mr.time_s * 1e6);
    ar_run_free(&one);
    ar_run_free(&two);
}

/* The check itself sees a wrong element, and one of every device's (a test that cannot fail is none). */
Test(mesh_collectives, the_allreduce_check_sees_a_wrong_element)
{
    ar_run r;
    ar_run_on(&r, 4, 64, 128, NULL, 1);
    cr_assert_eq(r.rc, PL_OK, "%s", r.mr.error);
    ar_error e;
    cr_assert_eq(ar_verify(&r.d, -1, &e), PL_OK);
    cr_assert(e.ok, "the run itself is right");
    float *o = r.d.o + 3 * 64 * 128 + 77; /* device 3, element 77 */
    *o = nextafterf(*o, INFINITY) + 1e-3f;
    cr_assert_eq(ar_verify(&r.d, -1, &e), PL_OK);
    cr_expect(!e.ok);
    cr_expect_eq(e.bad, 1);
    cr_expect_eq(e.first_device, 3);
    cr_expect_eq(e.first_elem, 77);
    cr_expect_eq(ar_verify(&r.d, 2, &e), PL_OK);
    cr_expect(e.ok, "device 2 alone is right");
    ar_run_free(&r);
}

/* The order of the sums is the ring's, not the threads': the same bits and times under any seed (V4). */
Test(mesh_collectives, allreduce_is_the_same_under_seeds_0_1_5)
{
    enum { N = 8, ROWS = 128, COLS = 256 };
    static const uint64_t seeds[] = {0, 1, 5};
    ar_run base;
    ar_run_on(&base, N, ROWS, COLS, &(pl_options){.seed = seeds[0]}, 1);
    cr_assert_eq(base.rc, PL_OK, "%s", base.mr.error);
    for (size_t k = 1; k < sizeof seeds / sizeof *seeds; k++) {
        ar_run r;
        ar_run_on(&r, N, ROWS, COLS, &(pl_options){.seed = seeds[k]}, 1);
        cr_assert_eq(r.rc, PL_OK, "seed %llu: %s", (unsigned long long)seeds[k], r.mr.error);
        cr_expect_eq(th_f32_diff(r.d.o, base.d.o, (int64_t)N * ROWS * COLS), 0, "seed %llu: other outputs",
                     (unsigned long long)seeds[k]);
        cr_expect_eq(r.mr.time_s, base.mr.time_s, "seed %llu: mesh time %g vs %g", (unsigned long long)seeds[k],
                     r.mr.time_s, base.mr.time_s);
        for (int d = 0; d < N; d++)
            cr_expect_eq(r.reps[d].time_s, base.reps[d].time_s, "seed %llu, device %d", (unsigned long long)seeds[k],
                         d);
        ar_run_free(&r);
    }
    ar_run_free(&base);
}

/* Both directions carry data: the time is at least the closed form over two
 * directions, and well below what one direction could do. */
Test(mesh_collectives, allreduce_uses_both_directions_of_the_links)
{
    ar_run r;
    ar_run_on(&r, 8, 1024, 1024, &(pl_options){.cost_only = 1}, 0);
    cr_assert_eq(r.rc, PL_OK, "%s", r.mr.error);
    const pl_chip *chip = pl_chip_default();
    double both = ar_closed_form_s(&r.d.s, chip, 2), one = ar_closed_form_s(&r.d.s, chip, 1);
    double lat = 2 * 7 * (chip->dma_latency_s + chip->ici_latency_s);
    cr_expect_eq(r.mr.links_used, 16, "%d directed links carried data, not the 16 of a ring of 8", r.mr.links_used);
    cr_expect_geq(r.mr.time_s, both, "%g us below the closed form %g us", r.mr.time_s * 1e6, both * 1e6);
    cr_expect_lt(r.mr.time_s, 0.75 * one, "%g us: not below 3/4 of one direction's %g us", r.mr.time_s * 1e6,
                 one * 1e6);
    /* what is left above the links' time is about a latency per step */
    cr_expect_lt(r.mr.time_s, 1.1 * (both + lat), "%g us against %g us + %g us of latency", r.mr.time_s * 1e6,
                 both * 1e6, lat * 1e6);
    ar_run_free(&r);
}

/* Issue 12: a ring all-reduce of 64 MiB per device on 64 devices, cost-only, in under 10 s. */
Test(mesh_collectives, allreduce_of_64_MiB_on_64_devices_cost_only_under_10_s)
{
    ar_run r;
    ar_run_on(&r, 64, 8192, 2048, &(pl_options){.cost_only = 1}, 0);
    cr_assert_eq(r.rc, PL_OK, "%s", r.mr.error);
    cr_expect_lt(r.seconds, 10.0, "took %.2f s of host time", r.seconds);
    double closed = ar_closed_form_s(&r.d.s, pl_chip_default(), 2);
    cr_expect_geq(r.mr.time_s, closed);
    cr_expect_lt(r.mr.time_s, 1.25 * closed, "%g us against the closed form %g us", r.mr.time_s * 1e6, closed * 1e6);
    cr_log_info("64 devices x 64 MiB all-reduce, cost-only: %.2f s of host time, %.1f us simulated (closed form "
                "%.1f us)", r.seconds, r.mr.time_s * 1e6, closed * 1e6);
    ar_run_free(&r);
}

/* A shape the halves do not divide: a message that says why, no crash. */
Test(mesh_collectives, allreduce_rows_must_split_into_2N_halves)
{
    ar_shape s = {.devices = 8, .rows = 100, .cols = 128};
    char msg[256] = "";
    cr_expect_eq(ar_shape_check(&s, msg, sizeof msg), PL_EINVAL);
    mh_assert_says(msg, "(100, 128)", "8 devices", "multiple of 2 x 8 = 16");
    ar_data d;
    cr_expect_eq(ar_alloc(&d, &s, 1, 1), PL_EINVAL);
    s = (ar_shape){.devices = 1, .rows = 16, .cols = 128};
    cr_expect_eq(ar_shape_check(&s, msg, sizeof msg), PL_EINVAL);
    mh_assert_says(msg, "devices 1");
    s = (ar_shape){.devices = 8, .rows = 12, .cols = 128, .directions = 1};
    cr_expect_eq(ar_shape_check(&s, msg, sizeof msg), PL_EINVAL);
    mh_assert_says(msg, "(12, 128)", "one way", "multiple of 8");
    s = (ar_shape){.devices = 8, .rows = 8, .cols = 128, .directions = 1};
    cr_expect_eq(ar_shape_check(&s, msg, sizeof msg), PL_OK, "%s", msg);
    s.directions = 3;
    cr_expect_eq(ar_shape_check(&s, msg, sizeof msg), PL_EINVAL);
    mh_assert_says(msg, "directions 3");
}

/* ---- the collective matmul ---------------------------------------------------- */

static void cm_run(const cm_shape *s, cm_version v, cm_data *d, const pl_options *opt, pl_mesh_report *mr,
                   pl_report *reps)
{
    char text[32];
    snprintf(text, sizeof text, "ring:%d", s->devices);
    pl_mesh mesh = mh_mesh(text);
    pl_call call;
    cm_call(&call, s, v, NULL);
    cm_reset(d);
    int rc = pl_mesh_call(&mesh, &call, d->args, d->outs, opt, mr, reps);
    cr_assert_eq(rc, PL_OK, "%s on %d devices: %s", call.name, s->devices, mr->error);
}

static void matmul_on(int n, int64_t m, int64_t k, int64_t cols)
{
    cm_shape s = {.devices = n, .rows = m, .k = k, .cols = cols};
    cm_data d;
    cr_assert_eq(cm_alloc(&d, &s, 1, 3), PL_OK);
    pl_mesh_report mr;
    for (int v = CM_OVERLAPPED; v <= CM_GATHER_FIRST; v++) {
        cm_run(&s, (cm_version)v, &d, NULL, &mr, NULL);
        for (int dev = 0; dev < n; dev++) {
            pl_check chk;
            cr_expect_eq(cm_check(&d, dev, &chk, NULL), PL_OK, "%s, device %d of %d: max error %g, normalised %g",
                         v == CM_OVERLAPPED ? "overlapped" : "gather first", dev, n, chk.max_abs_err, chk.norm_err);
        }
    }
    cm_free(&d);
}

Test(mesh_collectives, collective_matmul_on_2_devices_equals_openblas) { matmul_on(2, 8, 128, 128); }
Test(mesh_collectives, collective_matmul_on_4_devices_equals_openblas) { matmul_on(4, 16, 256, 384); }
Test(mesh_collectives, collective_matmul_on_8_devices_equals_openblas) { matmul_on(8, 8, 128, 256); }
/* shapes off the (8, 128) tiles are fine: the blocks are scratch and whole arrays */
/* 8 rows a shard: a device's shard starts at a dynamic row, which must be a
 * multiple of the 8-row f32 tile (rule T9, XLA E2003); k and the columns stay odd */
Test(mesh_collectives, collective_matmul_on_3_devices_of_odd_shapes) { matmul_on(3, 8, 7, 9); }

/* The check sees a wrong element of one device's out. */
Test(mesh_collectives, the_matmul_check_sees_a_wrong_element)
{
    cm_shape s = {.devices = 2, .rows = 8, .k = 128, .cols = 128};
    cm_data d;
    cr_assert_eq(cm_alloc(&d, &s, 1, 3), PL_OK);
    pl_mesh_report mr;
    cm_run(&s, CM_OVERLAPPED, &d, NULL, &mr, NULL);
    pl_check chk;
    cr_assert_eq(cm_check(&d, 1, &chk, NULL), PL_OK);
    d.out[2 * 8 * 128 + 5 * 128 + 3] += 0.5f; /* device 1, row 5, column 3 */
    cr_expect_eq(cm_check(&d, 1, &chk, NULL), PL_EVERIFY);
    cr_expect_eq(chk.worst_row, 5);
    cr_expect_eq(chk.worst_col, 3);
    cr_expect_eq(cm_check(&d, 0, &chk, NULL), PL_OK, "device 0 is untouched");
    cm_free(&d);
}

/* The overlap pays: on the default shape the overlapped kernel is faster
 * than gathering first, and faster than the MXU time plus the all-gather's. */
Test(mesh_collectives, overlapped_matmul_is_faster_than_gather_first)
{
    enum { N = 8 };
    cm_shape s = {.devices = N, .rows = 128, .k = 512, .cols = 2048};
    cm_data d;
    cr_assert_eq(cm_alloc(&d, &s, 0, 3), PL_OK);
    pl_options opt = {.cost_only = 1};
    pl_mesh_report ov, un;
    pl_report reps[N];
    cm_run(&s, CM_OVERLAPPED, &d, &opt, &ov, NULL);
    cm_run(&s, CM_GATHER_FIRST, &d, &opt, &un, reps);
    double compute = reps[0].mxu_s;
    cr_expect_gt(compute, 0);
    /* the communication alone: the ring all-gather of the same blocks */
    mh_ring g;
    mh_ring_run(&g, N, s.rows, s.k, &opt, NULL, 0);
    cr_assert_eq(g.rc, PL_OK, "%s", g.mr.error);
    double comm = g.mr.time_s;
    cr_expect_lt(ov.time_s, un.time_s, "overlapped %g us, gather first %g us", ov.time_s * 1e6, un.time_s * 1e6);
    cr_expect_lt(ov.time_s, compute + comm, "overlapped %g us, compute %g us + comm %g us", ov.time_s * 1e6,
                 compute * 1e6, comm * 1e6);
    /* and the gathered-first one is no faster than its parts one after the other */
    cr_expect_geq(un.time_s, compute + comm, "gather first %g us", un.time_s * 1e6);
    mh_ring_free(&g);
    cm_free(&d);
}
