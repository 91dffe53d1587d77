/* tests/test_mesh_barrier.c: the barrier semaphore (rule M15), as JAX's
 * tpu_pallas_distributed_test.py uses it (test_barrier_semaphore,
 * test_right_permute_example): every device signals the barrier semaphore
 * of its neighbours, waits for their two signals, and only then copies into
 * its right neighbour, whose buffers are then known to be ready. Mosaic
 * takes the barrier only in a call that sets collective_id
 * (tpu_custom_call.py: "collective_id has to be specified when using a
 * custom barrier"); a signal left unwaited on it is M10's error. */
#include "../kernel/pltpu.h"
#include "../sim/tilesim_kernel.h"
#include "test_mesh_helpers.h"

static int extra_signal; /* device 0 signals its right neighbour's barrier once more, never waited */

static void barrier_permute(pl_ctx *c, pl_ref *s, void *user)
{
    pl_ref *refs = user;
    int me = pltpu_device_id(c), n = pltpu_num_devices(c), right = (me + 1) % n, left = (me + n - 1) % n;
    pl_ref barrier = pltpu_get_barrier_semaphore(c);
    pltpu_semaphore_signal_device(c, barrier, 1, left);
    pltpu_semaphore_signal_device(c, barrier, 1, right);
    pltpu_semaphore_wait(c, barrier, 2);
    pltpu_remote_copy cp =
        pltpu_make_async_remote_copy(c, refs[0], refs[1], pl_at(c, s[0], 0), pl_at(c, s[0], 1), right);
    pltpu_remote_copy_start(c, &cp);
    pltpu_remote_copy_wait(c, &cp);
    if (extra_signal && me == 0) pltpu_semaphore_signal_device(c, barrier, 1, right);
}

static void barrier_kernel(pl_ctx *c, pl_ref *refs)
{
    static const pl_scratch types[] = {PLTPU_SEMAPHORE_DMA(2)};
    pl_run_scoped(c, types, 1, barrier_permute, refs);
}

static void run_barrier(mh_run *r, const char *mesh, int collective)
{
    pl_call call = {
        .name = "barrier_permute", .kernel = barrier_kernel, .grid_rank = 1, .grid = {1},
        .n_in = 1, .in = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 8, 128)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 8, 128)},
        .has_collective_id = collective, .collective_id = 0,
    };
    mh_alloc(r, mesh, 8, 128, 8, 128);
    pl_options opt = {.chip = "v5e", .strict = 1};
    mh_call(r, &call, &opt);
}

Test(mesh_barrier, M15_the_barrier_orders_a_right_permute_on_rings_of_2_to_8)
{
    static const char *const meshes[] = {"ring:2", "ring:4", "ring:8"};
    for (int m = 0; m < 3; m++) {
        mh_run r;
        run_barrier(&r, meshes[m], 1);
        cr_assert_eq(r.rc, PL_OK, "%s: %s", meshes[m], r.mr.error);
        for (int d = 0; d < r.n; d++) {
            int left = (d + r.n - 1) % r.n;
            for (int i = 0; i < 8 * 128; i++)
                cr_assert_eq(r.o[d * r.o_elems + i], (float)(left * 10000 + i), "%s: device %d element %d",
                             meshes[m], d, i);
        }
        mh_free(&r);
    }
}

Test(mesh_barrier, M15_without_collective_id_the_barrier_is_refused_by_name)
{
    mh_run r;
    run_barrier(&r, "ring:2", 0);
    cr_assert_eq(r.rc, PL_EINVAL, "%s", r.mr.error);
    cr_expect(strstr(r.mr.error, "pltpu_get_barrier_semaphore") && strstr(r.mr.error, "collective_id") &&
                  strstr(r.mr.error, "M15"),
              "%s", r.mr.error);
    mh_free(&r);
}

Test(mesh_barrier, M10_a_signal_left_on_the_barrier_is_an_error)
{
    extra_signal = 1;
    mh_run r;
    run_barrier(&r, "ring:2", 1);
    cr_assert_eq(r.rc, PL_ESEMAPHORE, "%s", r.mr.error);
    cr_expect(strstr(r.reps[1].error, "barrier semaphore holds 1"), "%s", r.reps[1].error);
    mh_free(&r);
}

/* test_barrier_semaphore_no_axis_name on one device: it signals its own
 * barrier and waits. */
static void self_barrier(pl_ctx *c, pl_ref *refs)
{
    pl_ref barrier = pltpu_get_barrier_semaphore(c);
    pltpu_semaphore_signal_device(c, barrier, 1, pltpu_device_id(c));
    pltpu_semaphore_wait(c, barrier, 1);
    pl_copy(c, refs[1], refs[0]);
}

Test(mesh_barrier, M15_one_device_signals_its_own_barrier)
{
    float x[8 * 128], o[8 * 128];
    for (int i = 0; i < 8 * 128; i++) x[i] = (float)i;
    pl_array a = PL_ARRAY(x, PL_F32, 8, 128), out = PL_ARRAY(o, PL_F32, 8, 128);
    pl_call call = {.name = "self_barrier", .kernel = self_barrier, .n_in = 1,
                    .in = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 8, 128)}, .n_out = 1,
                    .out = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 8, 128)}, .has_collective_id = 1, .collective_id = 7};
    pl_report rep;
    cr_assert_eq(pl_pallas_call(&call, &a, &out, &(pl_options){.strict = 1}, &rep), PL_OK, "%s", rep.error);
    for (int i = 0; i < 8 * 128; i++) cr_assert_eq(o[i], x[i]);
}

/* Mosaic refuses a collective_id no barrier uses ("collective_id has to be
 * unspecified or None when not using a custom barrier"), unless the call
 * allows it; on a mesh, one device's use is the kernel's. */
static void no_barrier(pl_ctx *c, pl_ref *refs) { pl_copy(c, refs[1], refs[0]); }

static void barrier_on_device_0_only(pl_ctx *c, pl_ref *refs)
{
    if (pltpu_device_id(c) == 0) self_barrier(c, refs);
    else pl_copy(c, refs[1], refs[0]);
}

static int run_collective(pl_kernel_fn k, const char *mesh, int allow, mh_run *r)
{
    mh_alloc(r, mesh, 8, 128, 8, 128);
    pl_call call = {.name = "collective", .kernel = k, .n_in = 1, .n_out = 1, .has_collective_id = 1,
                    .collective_id = 3, .allow_collective_id_without_custom_barrier = allow};
    mh_call(r, &call, NULL);
    return r->rc;
}

Test(mesh_barrier, M15_a_collective_id_no_barrier_uses_is_refused_unless_allowed)
{
    mh_run r;
    cr_expect_eq(run_collective(no_barrier, "ring:2", 0, &r), PL_EINVAL, "%s", r.mr.error);
    mh_assert_says(r.mr.error, "collective_id 3", "never took the barrier semaphore",
                   "collective_id has to be unspecified or None when not using a custom barrier",
                   "allow_collective_id_without_custom_barrier", "M15");
    mh_free(&r);
    cr_expect_eq(run_collective(no_barrier, "ring:2", 1, &r), PL_OK, "%s", r.mr.error);
    mh_free(&r);
    cr_expect_eq(run_collective(barrier_on_device_0_only, "ring:4", 0, &r), PL_OK, "%s", r.mr.error);
    for (int i = 0; i < 4 * 1024; i++) cr_assert_eq(r.o[i], r.x[i]);
    mh_free(&r);
    /* one device, through pl_pallas_call */
    float x[8 * 128] = {0}, o[8 * 128];
    pl_array a = PL_ARRAY(x, PL_F32, 8, 128), out = PL_ARRAY(o, PL_F32, 8, 128);
    pl_call call = {.name = "collective", .kernel = no_barrier, .n_in = 1, .n_out = 1, .has_collective_id = 1};
    pl_report rep;
    int rc = pl_pallas_call(&call, &a, &out, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "never took the barrier semaphore", "M15");
}
