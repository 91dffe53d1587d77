/* tests/test_mesh_scoped.c: run_scoped semaphores across the devices of a
 * mesh (issue 23; rules K4, M11). On the chip a scope's semaphores sit at
 * the same address on every device, so JAX's distributed kernels take their
 * send and receive semaphores from run_scoped (the distributed Pallas
 * guide's right permute; tpu_pallas_distributed_test.py's basic remote
 * DMA): a remote copy may name the other device's scoped receive semaphore,
 * and a remote signal may reach its scoped semaphore, while that device is
 * inside the same scope. A barrier (a scratch semaphore each device signals
 * once it has entered) makes sure it is. */
#include "../kernel/pltpu.h"
#include "../sim/tilesim_kernel.h"
#include "test_mesh_helpers.h"

typedef struct scoped_case {
    pl_ref *refs;     /* the call's: x, o, barrier */
    int skip_scope;   /* device 1 never enters the scope */
    int signal_only;  /* a remote signal into the scoped semaphore, no copy */
} scoped_case;

static scoped_case the_case; /* the same for every device of one test's call */

/* Inside the scope: tell the left neighbour "I am in", wait until the
 * right one is, then copy x into its o with our scoped semaphores. */
static void permute_body(pl_ctx *c, pl_ref *s, void *user)
{
    pl_ref *refs = user;
    int me = pltpu_device_id(c), n = pltpu_num_devices(c), right = (me + 1) % n, left = (me + n - 1) % n;
    if (!the_case.skip_scope) { /* the barrier; without it device 0 would wait for device 1 forever */
        pltpu_semaphore_signal_device(c, pl_at(c, refs[2], 0), 1, left);
        pltpu_semaphore_wait(c, pl_at(c, refs[2], 0), 1);
    }
    if (the_case.signal_only) {
        pltpu_semaphore_signal_device(c, pl_at(c, s[1], 0), 5, right);
        pltpu_semaphore_wait(c, pl_at(c, s[1], 0), 5);
        pl_copy(c, refs[1], refs[0]);
        return;
    }
    pltpu_remote_copy cp =
        pltpu_make_async_remote_copy(c, refs[0], refs[1], pl_at(c, s[0], 0), pl_at(c, s[0], 1), right);
    pltpu_remote_copy_start(c, &cp);
    pltpu_remote_copy_wait_send(c, &cp);
    pltpu_remote_copy_wait_recv(c, &cp);
}

static void scoped_kernel(pl_ctx *c, pl_ref *refs)
{
    if (the_case.skip_scope && pltpu_device_id(c) == 1) return;
    static const pl_scratch types[] = {PLTPU_SEMAPHORE_DMA(2), PLTPU_SEMAPHORE(1)};
    pl_run_scoped(c, types, 2, permute_body, refs);
}

static void run_case(mh_run *r, const char *mesh, const char *chip)
{
    pl_call call = {
        .name = "scoped_permute", .kernel = scoped_kernel, .grid_rank = 1, .grid = {1},
        .n_in = 1, .in = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 8, 128)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 8, 128)},
        .n_scratch = 1, .scratch = {PLTPU_SEMAPHORE(1)},
    };
    mh_alloc(r, mesh, 8, 128, 8, 128);
    pl_options opt = {.chip = chip, .strict = 1};
    mh_call(r, &call, &opt);
}

static void expect_permuted(const char *mesh, const char *chip)
{
    mh_run r;
    run_case(&r, mesh, chip);
    cr_assert_eq(r.rc, PL_OK, "%s on %s: %s", mesh, chip, r.mr.error);
    for (int d = 0; d < r.n; d++) {
        int left = (d + r.n - 1) % r.n;
        for (int i = 0; i < 8 * 128; i++)
            cr_assert_eq(r.o[d * r.o_elems + i], (float)(left * 10000 + i), "%s: device %d element %d", mesh, d, i);
    }
    mh_free(&r);
}

Test(mesh_scoped, right_permute_with_scoped_semaphores_on_a_ring_of_2) { expect_permuted("ring:2", "v5e"); }
Test(mesh_scoped, right_permute_with_scoped_semaphores_on_a_ring_of_4) { expect_permuted("ring:4", "v7x"); }

/* A remote signal into the neighbour's scoped REGULAR semaphore. */
Test(mesh_scoped, a_remote_signal_reaches_a_scoped_semaphore)
{
    the_case.signal_only = 1;
    mh_run r;
    run_case(&r, "ring:4", "v5e");
    cr_assert_eq(r.rc, PL_OK, "%s", r.mr.error);
    for (int d = 0; d < r.n; d++) cr_assert_eq(r.o[d * r.o_elems + 5], (float)(d * 10000 + 5), "device %d", d);
    mh_free(&r);
}

/* Device 1 never enters the scope. On the chip a scope's semaphores sit at
 * fixed places, so device 0's copy lands and counts there all the same
 * (M13): device 1 ends with that count unwaited, an M10 error naming the
 * run_scoped semaphore, not a write into freed memory nor a hang. Device 1
 * writes its output block back without waiting for the copy into it, so
 * where device 0's copy comes too late that block was never written (P4):
 * either way device 1 fails, by name. */
Test(mesh_scoped, a_device_that_never_enters_the_scope_ends_with_its_semaphore_unwaited)
{
    the_case.skip_scope = 1;
    mh_run r;
    run_case(&r, "ring:2", "v5e");
    cr_expect_neq(r.rc, PL_OK);
    const char *e = r.reps[1].error;
    /* which of the three depends on how the host interleaves the two
     * devices: the copy landed (M10), had not (P4), or was counted before
     * its bytes reached the block (the poison it left, V1, naming P4) */
    int found = (r.reps[1].status == PL_ESEMAPHORE && strstr(e, "run_scoped semaphore") &&
                 strstr(e, "no wait here took it") && strstr(e, "M10")) ||
                (r.reps[1].status != PL_OK && strstr(e, "no op wrote to it") && strstr(e, "P4")) ||
                (r.reps[1].status == PL_EPOISON && strstr(e, "NaN written back") && strstr(e, "rule P4"));
    cr_expect(found, "%s | %s", r.mr.error, e);
    mh_free(&r);
}
