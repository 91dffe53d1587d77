/* tests/test_mesh_vmem.c: a remote copy into another device's VMEM block
 * (issue 23, rule M11), the distributed Pallas guide's right permute and
 * JAX's basic_remote_vmem_dma (tests/pallas/tpu_pallas_distributed_test.py):
 * each device copies its input block, in VMEM, into its right neighbour's
 * output block, in VMEM, and both wait. The copy lands in the same slot of
 * the other device (the same VMEM address on the chip); the output then
 * goes to HBM as the neighbour's, and the checks see it written (V1, P4).
 */
#include "../kernel/pltpu.h"
#include "test_mesh_helpers.h"

static int g_handshake; /* the entry handshake (M15), on a second scratch: a regular semaphore */

static void permute_kernel(pl_ctx *c, pl_ref *refs)
{
    int me = pltpu_device_id(c), n = pltpu_num_devices(c);
    pl_ref send = pl_at(c, refs[2], 0), recv = pl_at(c, refs[2], 1);
    if (g_handshake) { /* as JAX's test does: my left neighbour copies into me once I say I am here */
        pl_ref ready = pl_at(c, refs[3], 0);
        pltpu_semaphore_signal_device(c, ready, 1, (me + n - 1) % n);
        pltpu_semaphore_wait(c, ready, 1);
    }
    pltpu_remote_copy cp = pltpu_make_async_remote_copy(c, refs[0], refs[1], send, recv, (me + 1) % n);
    pltpu_remote_copy_start(c, &cp);
    pltpu_remote_copy_wait_send(c, &cp);
    pltpu_remote_copy_wait_recv(c, &cp);
}

/* x's VMEM block into the right neighbour's VMEM output block; scratch: send and receive, and ready (M15) */
static pl_call permute_call(void)
{
    pl_call call = {
        .name = "right_permute", .kernel = permute_kernel, .grid_rank = 1, .grid = {1},
        .n_in = 1, .in = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 8, 128)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 8, 128)},
        .n_scratch = 2, .scratch = {PLTPU_SEMAPHORE_DMA(2), PLTPU_SEMAPHORE(1)},
    };
    return call;
}

static void permute_on(const char *mesh, const char *chip)
{
    pl_call call = permute_call();
    mh_run r;
    g_handshake = 1;
    mh_alloc(&r, mesh, 8, 128, 8, 128);
    for (int d = 0; d < r.n; d++)
        for (int i = 0; i < 8 * 128; i++) r.x[d * r.x_elems + i] = (float)(d * 10000 + i);
    pl_options opt = {.chip = chip, .strict = 1};
    mh_call(&r, &call, &opt);
    cr_assert_eq(r.rc, PL_OK, "%s on %s: %s", mesh, chip, r.mr.error);
    for (int d = 0; d < r.n; d++) {
        int left = (d + r.n - 1) % r.n;
        for (int i = 0; i < 8 * 128; i++)
            cr_assert_eq(r.o[d * r.o_elems + i], (float)(left * 10000 + i), "%s: device %d element %d", mesh, d, i);
        cr_expect_eq(r.reps[d].n_findings, 0, "device %d: %s", d, r.reps[d].n_findings ? r.reps[d].findings[0].msg : "");
    }
    mh_free(&r);
}

Test(mesh_vmem, right_permute_into_the_neighbours_vmem_output_on_a_ring_of_2) { permute_on("ring:2", "v5e"); }
Test(mesh_vmem, right_permute_into_the_neighbours_vmem_output_on_a_ring_of_4) { permute_on("ring:4", "v5p"); }

/* Without the handshake the copy lands (tilesim's devices all start the
 * call together) but on a TPU the neighbour may not have entered the
 * kernel: a finding on each sender, naming the block and rule M15. */
Test(mesh_vmem, a_copy_into_a_neighbours_vmem_block_before_a_handshake_is_a_finding)
{
    g_handshake = 0;
    pl_call call = permute_call();
    mh_run r;
    mh_alloc(&r, "ring:4", 8, 128, 8, 128);
    mh_call(&r, &call, NULL);
    cr_assert_eq(r.rc, PL_OK, "%s", r.mr.error);
    for (int d = 0; d < r.n; d++) {
        cr_assert_eq(r.reps[d].n_findings, 1, "device %d", d);
        cr_expect_eq(r.reps[d].findings[0].kind, PL_FIND_NO_HANDSHAKE);
        cr_expect_str_eq(r.reps[d].findings[0].rule, "M15");
        cr_expect(strstr(r.reps[d].findings[0].msg, "copies into out0 of device") &&
                      strstr(r.reps[d].findings[0].msg, "before anything of device"),
                  "%s", r.reps[d].findings[0].msg);
    }
    mh_free(&r);
}

/* An SMEM block is not reachable: the same copy into it is refused by name. */
Test(mesh_vmem, a_remote_copy_into_an_smem_block_is_refused)
{
    pl_call call = {
        .name = "smem", .kernel = permute_kernel, .grid_rank = 1, .grid = {1},
        .n_in = 1, .in = {{.space = PL_SMEM}},
        .n_out = 1, .out = {{.space = PL_SMEM}},
        .n_scratch = 1, .scratch = {PLTPU_SEMAPHORE_DMA(2)},
    };
    mh_run r;
    mh_alloc(&r, "ring:2", 1, 16, 1, 16);
    mh_call(&r, &call, NULL);
    cr_expect_eq(r.rc, PL_ESPACE, "%d: %s", r.rc, r.mr.error);
    cr_expect(strstr(r.mr.error, "'out0' is not reachable from other devices") && strstr(r.mr.error, "M11"), "%s",
              r.mr.error);
    mh_free(&r);
}

/* Only the first of two output blocks is filled, by the neighbour: the
 * second, which nobody wrote, is still found unwritten (P4), block by
 * block, not hidden by the copy that filled the first. */
static void first_block_kernel(pl_ctx *c, pl_ref *refs)
{
    if (pl_program_id(c, 0) != 0) return;
    permute_kernel(c, refs);
}

Test(mesh_vmem, a_block_no_device_filled_is_still_unwritten)
{
    pl_call call = {
        .name = "first_block", .kernel = first_block_kernel, .grid_rank = 1, .grid = {2},
        .n_in = 1, .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)},
        .n_scratch = 1, .scratch = {PLTPU_SEMAPHORE_DMA(2)},
    };
    mh_run r;
    mh_alloc(&r, "ring:2", 16, 128, 16, 128);
    mh_call(&r, &call, NULL);
    cr_assert_eq(r.rc, PL_OK, "%s", r.mr.error);
    for (int d = 0; d < r.n; d++) {
        int p4 = 0, first = 0;
        for (int i = 0; i < r.reps[d].n_findings && i < PL_MAX_FINDINGS; i++) {
            const char *m = r.reps[d].findings[i].msg;
            if (!strstr(m, "no op wrote to it")) continue;
            p4++;
            first |= strstr(m, "block (0, 0)") != NULL;
        }
        cr_expect_eq(p4, 1, "device %d: block (1, 0) alone is unwritten: %d findings, first %s", d, r.reps[d].n_findings, r.reps[d].n_findings ? r.reps[d].findings[0].msg : "");
        cr_expect(!first, "device %d: block (0, 0) was filled by the neighbour", d);
    }
    mh_free(&r);
}
