/* tests/test_mesh_cores.c: devices with several TensorCores (issue 23,
 * rule M13), as JAX's tests address (device, core) pairs. On v5p a device
 * has 2 TensorCores; pl_kernel runs its body on both at once, so that one
 * may wait for the other's signal (test_can_signal_cores), a mesh of such
 * devices runs every core of every device at once
 * (test_multi_device_core_local_kernel), and a remote copy names the core
 * of the device it lands on (test_axis_dict_with_core_multi_device). A
 * wait no core can satisfy is a deadlock naming the core, never a hang. */
#include "../kernel/pltpu.h"
#include "../sim/tilesim_kernel.h"
#include "test_mesh_helpers.h"

/* ---- cores of one device signal each other (JAX: test_can_signal_cores) ---- */

typedef struct sig_case {
    int skip_core;    /* this core never signals (-1: all do) */
} sig_case;
static sig_case sig;

static void barrier_then_copy(pl_ctx *c, pl_ref *s, void *user)
{
    pl_ref *refs = user;
    int n = pl_core_count(c);
    if (pl_core_index(c) != sig.skip_core)
        for (int k = 0; k < n; k++) pltpu_semaphore_signal_core(c, pl_at(c, s[0], 0), 1, -1, k);
    pltpu_semaphore_wait(c, pl_at(c, s[0], 0), n);
    pltpu_sync_copy(c, refs[0], refs[1]);
}

static void signal_cores(pl_ctx *c, pl_ref *refs)
{
    static const pl_scratch types[] = {PLTPU_SEMAPHORE(1)};
    pl_run_scoped(c, types, 1, barrier_then_copy, refs);
}

static int run_signal_cores(const char *chip, int skip_core, float *y, pl_report *rep)
{
    sig.skip_core = skip_core;
    static float x[8 * 128];
    for (int i = 0; i < 8 * 128; i++) x[i] = (float)i, y[i] = -1.0f;
    pl_array in = PL_ARRAY(x, PL_F32, 8, 128), out = PL_ARRAY(y, PL_F32, 8, 128);
    pl_kernel_spec k = {.name = "can_signal_cores", .body = signal_cores, .n_in = 1, .n_out = 1};
    pl_options opt = {.chip = chip};
    return pl_kernel(&k, &in, &out, &opt, rep);
}

Test(mesh_cores, the_two_cores_of_a_v5p_device_signal_each_other)
{
    float y[8 * 128];
    pl_report rep;
    int rc = run_signal_cores("v5p", -1, y, &rep);
    cr_assert_eq(rc, PL_OK, "%s", rep.error); /* walked one after the other, core 0 waited for core 1 forever */
    cr_expect_eq(rep.cores, 2);
    for (int i = 0; i < 8 * 128; i++) cr_assert_eq(y[i], (float)i, "element %d", i);
    cr_expect_gt(rep.time_s, 0.0);
}

Test(mesh_cores, a_single_core_chip_signals_itself)
{
    float y[8 * 128];
    pl_report rep;
    cr_assert_eq(run_signal_cores("v5e", -1, y, &rep), PL_OK, "%s", rep.error);
    cr_expect_eq(rep.cores, 1);
    cr_expect_eq(y[1000], 1000.0f);
}

/* Core 1 never signals: both wait for a count that cannot come. */
Test(mesh_cores, a_core_that_never_signals_is_a_deadlock_naming_the_cores)
{
    float y[8 * 128];
    pl_report rep;
    int rc = run_signal_cores("v5p", 1, y, &rep);
    cr_assert_eq(rc, PL_EDEADLOCK, "%d %s", rc, rep.error);
    cr_expect(strstr(rep.error, "core 0 of device 0") && strstr(rep.error, "core 1 of device 0") &&
                  strstr(rep.error, "M10"),
              "%s", rep.error);
}

/* Asked to walk the cores one after the other, a cross-core signal cannot
 * be waited for, and says so instead of hanging. */
Test(mesh_cores, cores_walked_in_order_refuse_a_signal_to_another_core)
{
    sig.skip_core = -1;
    static float x[8 * 128], y[8 * 128];
    pl_array in = PL_ARRAY(x, PL_F32, 8, 128), out = PL_ARRAY(y, PL_F32, 8, 128);
    pl_kernel_spec k = {.name = "can_signal_cores", .body = signal_cores, .n_in = 1, .n_out = 1};
    pl_options opt = {.chip = "v5p", .host_threads = 1};
    pl_report rep;
    int rc = pl_kernel(&k, &in, &out, &opt, &rep);
    cr_assert_eq(rc, PL_EINVAL, "%d %s", rc, rep.error);
    cr_expect(strstr(rep.error, "one after the other") && strstr(rep.error, "M13"), "%s", rep.error);
}

/* A core index the device does not have. */
static void signal_core_7(pl_ctx *c, pl_ref *refs)
{
    pltpu_semaphore_signal_core(c, pl_at(c, refs[1], 0), 1, -1, 7);
}

Test(mesh_cores, a_core_the_device_lacks_is_named)
{
    pl_kernel_spec k = {.name = "bad_core", .body = signal_core_7, .n_out = 1, .n_scratch = 1,
                        .scratch = {PLTPU_SEMAPHORE(1)}};
    static float y[8 * 128];
    pl_array out = PL_ARRAY(y, PL_F32, 8, 128);
    pl_options opt = {.chip = "v5p"};
    pl_report rep;
    int rc = pl_kernel(&k, NULL, &out, &opt, &rep);
    cr_assert_eq(rc, PL_EINVAL, "%d %s", rc, rep.error);
    cr_expect(strstr(rep.error, "core 7 of device 0") && strstr(rep.error, "0 to 1"), "%s", rep.error);
}

/* ---- a mesh of 2-core devices (JAX: test_multi_device_core_local_kernel) ---- */

/* x, y: (cores, 8, 128) per device; each core copies its own slab after a
 * barrier of the device's cores. */
static void core_local(pl_ctx *c, pl_ref *s, void *user)
{
    pl_ref *refs = user;
    int n = pl_core_count(c), me = pl_core_index(c);
    for (int k = 0; k < n; k++) pltpu_semaphore_signal_core(c, pl_at(c, s[0], 0), 1, -1, k);
    pltpu_semaphore_wait(c, pl_at(c, s[0], 0), n);
    pltpu_sync_copy(c, pl_at(c, refs[0], me), pl_at(c, refs[1], me));
}

static void core_local_kernel(pl_ctx *c, pl_ref *refs)
{
    static const pl_scratch types[] = {PLTPU_SEMAPHORE(1)};
    pl_run_scoped(c, types, 1, core_local, refs);
}

/* The core-local copy on a ring of 2 devices of `cores` TensorCores each:
 * every element of x reaches y and each device reports its cores. */
static void expect_core_local(const pl_options *opt, int cores)
{
    enum { D = 2, MAXC = 4, E = 8 * 128 };
    static float x[D * MAXC * E], y[D * MAXC * E];
    int64_t per = (int64_t)cores * E;
    pl_array ins[D], outs[D];
    for (int d = 0; d < D; d++) {
        for (int64_t i = 0; i < per; i++) x[d * per + i] = (float)(d * 100000 + i), y[d * per + i] = -1.0f;
        ins[d] = PL_ARRAY(x + d * per, PL_F32, cores, 8, 128);
        outs[d] = PL_ARRAY(y + d * per, PL_F32, cores, 8, 128);
    }
    pl_mesh mesh = mh_mesh("ring:2");
    pl_kernel_spec k = {.name = "core_local", .body = core_local_kernel, .n_in = 1, .n_out = 1};
    pl_mesh_report mr;
    pl_report reps[D];
    cr_assert_eq(pl_kernel_mesh_call(&mesh, &k, ins, outs, opt, &mr, reps), PL_OK, "%s", mr.error);
    for (int64_t i = 0; i < D * per; i++) cr_assert_eq(y[i], x[i], "element %lld", (long long)i);
    for (int d = 0; d < D; d++) cr_expect_eq(reps[d].cores, cores, "device %d", d);
}

Test(mesh_cores, every_core_of_every_device_runs_at_once)
{
    pl_options opt = {.chip = "v5p"};
    expect_core_local(&opt, 2);
}

/* JAX runs shard_map of core_map on 2 and 4 cores: a what-if v5p of 4. */
Test(mesh_cores, four_cores_a_device_on_a_what_if_chip)
{
    pl_chip four = *pl_chip_find("v5p");
    four.cores_per_device = 4;
    snprintf(four.name, sizeof four.name, "v5p with 4 cores");
    pl_options opt = {.chip_spec = &four};
    expect_core_local(&opt, 4);
}

/* pl_kernel's cores run as a mesh of one device; a refusal of that mesh
 * before any device ran (a trace file that cannot be written) is reported
 * as pallas_call reports it, not an uninitialized report. */
Test(mesh_cores, a_trace_that_cannot_be_written_is_refused_by_name)
{
    float y[8 * 128];
    static float x[8 * 128];
    pl_array in = PL_ARRAY(x, PL_F32, 8, 128), out = PL_ARRAY(y, PL_F32, 8, 128);
    pl_kernel_spec k = {.name = "can_signal_cores", .body = signal_cores, .n_in = 1, .n_out = 1};
    pl_options opt = {.chip = "v5p", .trace_path = "/nonexistent-dir/trace.json"};
    pl_report rep;
    memset(&rep, 0x5a, sizeof rep); /* what an uninitialized report would hold */
    sig.skip_core = -1;
    int rc = pl_kernel(&k, &in, &out, &opt, &rep);
    cr_assert_eq(rc, PL_EINVAL, "%d %s", rc, rep.error);
    cr_expect_eq(rep.status, PL_EINVAL);
    cr_expect(strstr(rep.error, "trace file") && strstr(rep.error, "nonexistent-dir") &&
                  !strstr(rep.error, "pl_mesh_call"),
              "%s", rep.error);
    cr_expect(strstr(pl_last_error(), "trace file"), "%s", pl_last_error());
    cr_expect_str_eq(rep.call_name, "can_signal_cores");
}

/* ---- (device, core) ids across devices (JAX: test_axis_dict_with_core_multi_device) ---- */

/* in, out: (8, 256) i32 per device, each core owning 128 columns; refs[2]
 * the barrier. After a barrier of every core of every device, each core
 * copies its slice through; then core 0 of device 0 copies its slice into
 * a run_scoped VMEM buffer of core 1 of device 1, which writes it out. */
static void axis_dict(pl_ctx *c, pl_ref *s, void *user)
{
    pl_ref *refs = user;
    int cores = pl_core_count(c), core = pl_core_index(c), dev = pltpu_device_id(c), devs = pltpu_num_devices(c);
    pl_ref in = pl_ds(c, refs[0], 1, core * 128, 128), out = pl_ds(c, refs[1], 1, core * 128, 128);
    for (int k = 0; k < cores; k++) pltpu_semaphore_signal_core(c, pl_at(c, s[0], 0), 1, -1, k);
    pltpu_semaphore_wait(c, pl_at(c, s[0], 0), cores); /* every core of this device is in the scope */
    for (int d = 0; d < devs; d++)
        for (int k = 0; k < cores; k++) pltpu_semaphore_signal_core(c, pl_at(c, refs[2], 0), 1, d, k);
    pltpu_semaphore_wait(c, pl_at(c, refs[2], 0), devs * cores); /* and of every device */
    pltpu_sync_copy(c, in, out);
    pltpu_remote_copy cp = pltpu_make_async_remote_copy_core(c, in, s[1], pl_at(c, s[2], 0), pl_at(c, s[2], 1), 1, 1);
    if (dev == 0 && core == 0) {
        pltpu_remote_copy_start(c, &cp);
        pltpu_remote_copy_wait_send(c, &cp);
    }
    if (dev == 1 && core == 1) {
        pltpu_remote_copy_wait_recv(c, &cp);
        pltpu_sync_copy(c, s[1], out);
    }
}

static void axis_dict_kernel(pl_ctx *c, pl_ref *refs)
{
    static const pl_scratch types[] = {PLTPU_SEMAPHORE(1), PLTPU_VMEM(PL_I32, 8, 128), PLTPU_SEMAPHORE_DMA(2)};
    pl_run_scoped(c, types, 3, axis_dict, refs);
}

Test(mesh_cores, a_remote_copy_lands_on_the_core_it_names)
{
    enum { D = 2, E = 8 * 256 };
    static int32_t x[D * E], y[D * E];
    pl_array ins[D], outs[D];
    for (int d = 0; d < D; d++) {
        for (int i = 0; i < E; i++) x[d * E + i] = d * E + i, y[d * E + i] = -1;
        ins[d] = PL_ARRAY(x + d * E, PL_I32, 8, 256);
        outs[d] = PL_ARRAY(y + d * E, PL_I32, 8, 256);
    }
    pl_mesh mesh = mh_mesh("ring:2");
    pl_kernel_spec k = {.name = "axis_dict_with_core", .body = axis_dict_kernel, .n_in = 1, .n_out = 1,
                        .n_scratch = 1, .scratch = {PLTPU_SEMAPHORE(1)}};
    pl_options opt = {.chip = "v5p"};
    pl_mesh_report mr;
    pl_report reps[D];
    int rc = pl_kernel_mesh_call(&mesh, &k, ins, outs, &opt, &mr, reps);
    cr_assert_eq(rc, PL_OK, "%s", mr.error);
    for (int d = 0; d < D; d++)
        for (int r = 0; r < 8; r++)
            for (int j = 0; j < 256; j++) {
                /* device 1's core-1 slice holds device 0's core-0 slice; everything else is its own input */
                int32_t want = d == 1 && j >= 128 ? x[r * 256 + (j - 128)] : x[d * E + r * 256 + j];
                cr_assert_eq(y[d * E + r * 256 + j], want, "device %d row %d column %d", d, r, j);
            }
    cr_expect_gt(mr.time_s, 0.0);
}

/* The same on one process, every schedule: a seed perturbs the threads. */
Test(mesh_cores, the_result_does_not_depend_on_the_schedule)
{
    enum { D = 2, E = 8 * 256 };
    static int32_t x[D * E], y[D * E];
    pl_array ins[D], outs[D];
    for (int d = 0; d < D; d++) {
        for (int i = 0; i < E; i++) x[d * E + i] = d * E + i;
        ins[d] = PL_ARRAY(x + d * E, PL_I32, 8, 256);
        outs[d] = PL_ARRAY(y + d * E, PL_I32, 8, 256);
    }
    pl_mesh mesh = mh_mesh("ring:2");
    pl_kernel_spec k = {.name = "axis_dict_with_core", .body = axis_dict_kernel, .n_in = 1, .n_out = 1,
                        .n_scratch = 1, .scratch = {PLTPU_SEMAPHORE(1)}};
    double t0 = -1;
    for (uint64_t seed = 1; seed <= 6; seed++) {
        memset(y, 0xff, sizeof y);
        pl_options opt = {.chip = "v5p", .seed = seed};
        pl_mesh_report mr;
        cr_assert_eq(pl_kernel_mesh_call(&mesh, &k, ins, outs, &opt, &mr, NULL), PL_OK, "seed %llu: %s",
                     (unsigned long long)seed, mr.error);
        cr_assert_eq(y[E + 3 * 256 + 130], x[3 * 256 + 2], "seed %llu", (unsigned long long)seed);
        if (t0 < 0) t0 = mr.time_s;
        cr_assert_eq(mr.time_s, t0, "seed %llu: %.9g vs %.9g", (unsigned long long)seed, mr.time_s, t0);
    }
}
