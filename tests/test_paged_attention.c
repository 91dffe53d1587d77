/* tests/test_paged_attention.c: decode attention over a paged KV cache
 * (examples/kernels/paged_attention.h) against its OpenBLAS reference, with
 * scalar prefetch (M5), pages in HBM (T5) and hand-made double buffering
 * (M7, M8). */
#include "../examples/kernels/paged_attention.h"
#include "helpers.h"

static void expect_pass(const int64_t *lengths, int64_t n, int64_t page, pl_dtype dt, pl_report *rep)
{
    pl_check chk;
    int rc = pa_run(lengths, n, page, 8, 128, dt, NULL, rep, &chk, NULL);
    cr_assert_eq(rc, PL_OK, "%s: rc %d (%s): %s; worst %g of the tolerance", pl_dtype_name(dt), rc, pl_strerror(rc),
                 rep->error, chk.norm_err);
    cr_assert_eq(chk.verdict, PL_PASS);
    cr_assert_eq(rep->n_findings, 0, "%s", rep->warnings);
    int64_t pages = 0;
    for (int64_t b = 0; b < n; b++) pages += (lengths[b] + page - 1) / page;
    cr_assert_eq(rep->dma_copies, 2 * pages, "one key and one value copy per owned page, none past the length");
}

Test(paged_attention, f32_ragged_lengths)
{
    static const int64_t lens[] = {1, 37, 128, 300, 16, 17};
    pl_report rep;
    expect_pass(lens, 6, 16, PL_F32, &rep);
}

Test(paged_attention, bf16_ragged_lengths)
{
    static const int64_t lens[] = {5, 64, 100};
    pl_report rep;
    expect_pass(lens, 3, 32, PL_BF16, &rep);
}

Test(paged_attention, empty_sequences_give_zeros)
{
    static const int64_t lens[] = {0, 0, 3};
    pl_report rep;
    expect_pass(lens, 3, 16, PL_F32, &rep);
}

/* The next page's copy flies while this page is used: the copies hide
 * behind one another, so the exposed DMA time stays well under the sum of
 * every copy's own time. */
Test(paged_attention, pages_are_double_buffered_in_the_timeline)
{
    static const int64_t lens[] = {512};
    pl_report rep;
    expect_pass(lens, 1, 16, PL_F32, &rep);
    const pl_chip *chip = pl_chip_default();
    double serial = (double)rep.dma_copies * chip->dma_latency_s + (double)rep.dma_bytes / chip->hbm_bw;
    cr_assert_lt(rep.dma_exposed_s, 0.75 * serial, "exposed %g s vs %g s if every copy were waited at once",
                 rep.dma_exposed_s, serial);
}
