/* tests/test_dma_regular.c: DMAs that signal a regular semaphore (issue 23;
 * rule M8). JAX's tpu_pallas_test.py: test_dma_with_regular_semaphore
 * copies HBM -> VMEM -> HBM with pltpu.async_copy on a REGULAR semaphore
 * and waits with pl.semaphore_wait (a count of 1 per copy), on TPU v6 and
 * later ("Regular semaphores in DMAs require TPU v6+");
 * test_dma_wait_with_regular_semaphore_raises refuses .wait() on such a
 * copy ("dma_wait requires a DMA semaphore"). Mosaic's verifier wants a
 * remote copy's two semaphores of one kind, and no regular semaphore for a
 * DMA touching SMEM. */
#include <criterion/criterion.h>
#include <string.h>

#include "../kernel/pltpu.h"
#include "helpers.h"
#include "test_mesh_helpers.h"

enum { X, O, BUF, SEM };
static int use_copy_wait; /* wait with pltpu_copy_wait instead of pltpu_semaphore_wait */

static void hbm_vmem_hbm(pl_ctx *c, pl_ref *r)
{
    pl_ref sem = pl_at(c, r[SEM], 0);
    pltpu_copy in = pltpu_async_copy(c, r[X], r[BUF], sem);
    pltpu_copy_start(c, &in);
    if (use_copy_wait) pltpu_copy_wait(c, &in);
    pltpu_semaphore_wait(c, sem, 1); /* one copy ended */
    pltpu_copy out = pltpu_async_copy(c, r[BUF], r[O], sem);
    pltpu_copy_start(c, &out);
    pltpu_semaphore_wait(c, sem, 1);
}

static int run_copy(const char *chip, pl_sem_kind kind, int64_t rows, pl_report *rep, th_io *io)
{
    *io = th_io_2d(rows, 128);
    pl_call call = {.name = "regular_dma", .kernel = hbm_vmem_hbm, .n_in = 1, .in = {{.space = PL_ANY}},
                    .n_out = 1, .out = {{.space = PL_ANY}}, .n_scratch = 2,
                    .scratch = {PLTPU_VMEM(PL_F32, rows, 128), PLTPU_SEMAPHORE(1)}};
    call.scratch[1].sem_kind = kind;
    pl_options opt = {.chip = chip, .strict = 1};
    return pl_pallas_call(&call, &io->a, &io->o, &opt, rep);
}

Test(dma_regular, a_copy_signals_a_regular_semaphore_by_one_on_v6e_and_v7x)
{
    static const char *const chips[] = {"v6e", "v7x"};
    for (int i = 0; i < 2; i++) {
        pl_report rep;
        th_io io;
        int rc = run_copy(chips[i], PL_SEM_REGULAR, 8, &rep, &io);
        cr_assert_eq(rc, PL_OK, "%s: %s", chips[i], rep.error);
        cr_assert_eq(th_f32_diff(io.in, io.out, io.n), 0, "%s: the copies arrive", chips[i]);
        cr_assert_eq(rep.dma_copies, 2);
        th_io_free(&io);
    }
}

Test(dma_regular, refused_before_v6_by_chip)
{
    static const char *const chips[] = {"v5e", "v5p"};
    for (int i = 0; i < 2; i++) {
        pl_report rep;
        th_io io;
        int rc = run_copy(chips[i], PL_SEM_REGULAR, 8, &rep, &io);
        TH_EXPECT_ERROR(rc, rep, PL_ESPACE, "regular semaphore", chips[i], "TPU v6", "PLTPU_SEMAPHORE_DMA", "M8");
        th_io_free(&io);
    }
}

Test(dma_regular, a_dma_wait_on_a_regular_semaphore_is_refused)
{
    use_copy_wait = 1;
    pl_report rep;
    th_io io;
    int rc = run_copy("v6e", PL_SEM_REGULAR, 8, &rep, &io);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "pltpu_copy_wait", "dma_wait requires a DMA semaphore",
                    "pltpu_semaphore_wait", "M8");
    th_io_free(&io);
}

/* In time too: the semaphore wait waits for the copy to end, as the DMA
 * semaphore's wait does: the same 4 MiB round trip takes the same time. */
static void dma_sem_kernel(pl_ctx *c, pl_ref *r)
{
    pl_ref sem = pl_at(c, r[SEM], 0);
    pltpu_copy in = pltpu_async_copy(c, r[X], r[BUF], sem);
    pltpu_copy_start(c, &in);
    pltpu_copy_wait(c, &in);
    pltpu_copy out = pltpu_async_copy(c, r[BUF], r[O], sem);
    pltpu_copy_start(c, &out);
    pltpu_copy_wait(c, &out);
}

Test(dma_regular, the_wait_lasts_until_the_copy_ends)
{
    pl_report reg, dma;
    th_io io;
    cr_assert_eq(run_copy("v6e", PL_SEM_REGULAR, 8192, &reg, &io), PL_OK, "%s", reg.error);
    th_io_free(&io);
    io = th_io_2d(8192, 128);
    pl_call call = {.name = "dma_sem", .kernel = dma_sem_kernel, .n_in = 1, .in = {{.space = PL_ANY}},
                    .n_out = 1, .out = {{.space = PL_ANY}}, .n_scratch = 2,
                    .scratch = {PLTPU_VMEM(PL_F32, 8192, 128), PLTPU_SEMAPHORE_DMA(1)}};
    pl_options opt = {.chip = "v6e"};
    cr_assert_eq(pl_pallas_call(&call, &io.a, &io.o, &opt, &dma), PL_OK, "%s", dma.error);
    th_io_free(&io);
    double hbm = 2.0 * 8192 * 128 * 4 / 1638e9;
    cr_expect_geq(reg.time_s, hbm, "%g s: at least the bytes at HBM bandwidth (%g s)", reg.time_s, hbm);
    cr_expect(reg.time_s > 0.99 * dma.time_s && reg.time_s < 1.01 * dma.time_s, "regular %g s, DMA %g s",
              reg.time_s, dma.time_s);
}

/* Mosaic: "Non-DMA semaphores are not supported for DMAs involving SMEM". */
static void smem_kernel(pl_ctx *c, pl_ref *r)
{
    pltpu_copy cp = pltpu_async_copy(c, r[X], r[BUF], pl_at(c, r[SEM], 0));
    pltpu_copy_start(c, &cp);
    pltpu_semaphore_wait(c, pl_at(c, r[SEM], 0), 1);
    pl_copy(c, r[O], r[X]);
}

Test(dma_regular, not_for_a_copy_into_smem)
{
    th_io io = th_io_2d(8, 128);
    pl_call call = {.name = "smem", .kernel = smem_kernel, .n_in = 1, .in = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 8, 128)},
                    .n_out = 1, .out = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 8, 128)}, .n_scratch = 2,
                    .scratch = {PLTPU_SMEM(PL_F32, 8, 128), PLTPU_SEMAPHORE(1)}};
    pl_options opt = {.chip = "v7x"};
    pl_report rep;
    int rc = pl_pallas_call(&call, &io.a, &io.o, &opt, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_ESPACE, "into SMEM", "Non-DMA semaphores", "M8");
    th_io_free(&io);
}

/* ---- remote copies ---------------------------------------------------------------- */

static int mixed_kinds; /* the receive semaphore a DMA one */

static void remote_kernel(pl_ctx *c, pl_ref *refs)
{
    int me = pltpu_device_id(c), n = pltpu_num_devices(c);
    pl_ref send = pl_at(c, refs[2], 0), recv = mixed_kinds ? pl_at(c, refs[3], 0) : pl_at(c, refs[2], 1);
    pltpu_remote_copy cp = pltpu_make_async_remote_copy(c, refs[0], refs[1], send, recv, (me + 1) % n);
    pltpu_remote_copy_start(c, &cp);
    pltpu_semaphore_wait(c, send, 1); /* mine has left */
    pltpu_semaphore_wait(c, recv, 1); /* my left neighbour's has landed */
}

static void remote_on(const char *chip, mh_run *r)
{
    pl_call call = {
        .name = "regular_permute", .kernel = remote_kernel, .grid_rank = 1, .grid = {1},
        .n_in = 1, .in = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 8, 128)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 8, 128)},
        .n_scratch = 2, .scratch = {PLTPU_SEMAPHORE(2), PLTPU_SEMAPHORE_DMA(1)},
    };
    mh_alloc(r, "ring:4", 8, 128, 8, 128);
    pl_options opt = {.chip = chip, .strict = 1};
    mh_call(r, &call, &opt);
}

Test(dma_regular, a_remote_copy_on_regular_semaphores_on_v6e)
{
    mh_run r;
    remote_on("v6e", &r);
    cr_assert_eq(r.rc, PL_OK, "%s", r.mr.error);
    for (int d = 0; d < r.n; d++)
        for (int i = 0; i < 8 * 128; i++)
            cr_assert_eq(r.o[d * r.o_elems + i], (float)(((d + 3) % 4) * 10000 + i), "device %d element %d", d, i);
    cr_expect_gt(r.mr.time_s, 0);
    mh_free(&r);
}

Test(dma_regular, a_remote_copy_on_regular_semaphores_is_refused_on_v5e)
{
    mh_run r;
    remote_on("v5e", &r);
    cr_expect_eq(r.rc, PL_ESPACE, "%s", r.mr.error);
    cr_expect(strstr(r.mr.error, "TPU v6") && strstr(r.mr.error, "M8"), "%s", r.mr.error);
    mh_free(&r);
}

Test(dma_regular, a_remote_copy_wants_both_semaphores_of_one_kind)
{
    mixed_kinds = 1;
    mh_run r;
    remote_on("v7x", &r);
    cr_expect_eq(r.rc, PL_ESPACE, "%s", r.mr.error);
    cr_expect(strstr(r.mr.error, "must be of one kind") && strstr(r.mr.error, "same type"), "%s", r.mr.error);
    mh_free(&r);
}

/* The receiver reads what landed after its wait on the regular semaphore
 * (semaphore_wait(recv, 1), as M8 has it): ordered, no race. The wait took
 * 1 off the semaphore and the race check matched it against the copy's
 * bytes, so the copy stayed unreceived and the read was called a race. */
static void remote_then_read(pl_ctx *c, pl_ref *refs)
{
    remote_kernel(c, refs);
    pl_add_scalar(c, refs[1], refs[1], 1.0);
}

Test(dma_regular, what_a_remote_copy_on_a_regular_semaphore_landed_is_read_after_its_wait)
{
    mh_run r;
    pl_call call = {
        .name = "regular_then_read", .kernel = remote_then_read, .grid_rank = 1, .grid = {1},
        .n_in = 1, .in = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 8, 128)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 8, 128)},
        .n_scratch = 2, .scratch = {PLTPU_SEMAPHORE(2), PLTPU_SEMAPHORE_DMA(1)},
    };
    mh_alloc(&r, "ring:4", 8, 128, 8, 128);
    pl_options opt = {.chip = "v6e", .strict = 1};
    mh_call(&r, &call, &opt);
    cr_assert_eq(r.rc, PL_OK, "%s", r.mr.error);
    for (int d = 0; d < r.n; d++)
        for (int i = 0; i < 8 * 128; i++)
            cr_assert_eq(r.o[d * r.o_elems + i], (float)(((d + 3) % 4) * 10000 + i) + 1, "device %d element %d", d, i);
    mh_free(&r);
}
