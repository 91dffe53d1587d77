/* tests/test_common.c: the helpers of sim/common and what they replaced
 * (issue 11): the op log of a step becomes timing events with no fixed
 * limit, a step's time grows with its ops; the one grid iterator. */
#include "../kernel/pltpu.h"
#include "../sim/base/common.h"
#include "helpers.h"

enum { ROWS = 8, COLS = 128, STEPS = 2 };

/* How many fill + copy rounds one grid step issues (set by each test). */
static int rounds;

/* Each round fills the output block, starts a copy from HBM, fills again and
 * waits: four timing events per round (compute, start, compute, wait). */
static void many_ops_kernel(pl_ctx *c, pl_ref *refs)
{
    int64_t i = pl_program_id(c, 0);
    for (int r = 0; r < rounds; r++) {
        pl_fill(c, refs[1], (double)r);
        pltpu_copy cp =
            pltpu_async_copy(c, pl_ds(c, refs[0], 0, i * ROWS, ROWS), pl_at(c, refs[2], 0), pl_at(c, refs[3], 0));
        pltpu_copy_start(c, &cp);
        pl_fill(c, refs[1], (double)r + 0.5);
        pltpu_copy_wait(c, &cp);
    }
    pl_copy(c, refs[1], pl_at(c, refs[2], 0));
}

static int run_rounds(int n, pl_report *rep)
{
    rounds = n;
    th_io io = th_io_2d(ROWS * STEPS, COLS);
    pl_call call = {
        .name = "many_ops",
        .kernel = many_ops_kernel,
        .grid_rank = 1,
        .grid = {STEPS},
        .n_in = 1,
        .in = {{.space = PL_ANY}},
        .n_out = 1,
        .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), ROWS, COLS)},
        .n_scratch = 2,
        .scratch = {PLTPU_VMEM(PL_F32, 1, ROWS, COLS), PLTPU_SEMAPHORE_DMA(1)},
    };
    int rc = pl_pallas_call(&call, &io.a, &io.o, NULL, rep);
    if (rc == PL_OK) cr_expect_eq(th_f32_diff(io.in, io.out, io.n), 0, "the output must equal the input");
    th_io_free(&io);
    return rc;
}

/* More than 256 timing events in one step (300 fills and 150 copies, 600
 * events): the translation grows its list instead of refusing the kernel,
 * and the step's time grows with its ops (M7, M8). */
Test(common, op_log_grows_past_256_events)
{
    pl_report small, big;
    cr_assert_eq(run_rounds(10, &small), PL_OK, "%s", small.error);
    cr_assert_eq(run_rounds(150, &big), PL_OK, "%s", big.error);
    cr_expect_eq(big.dma_copies, 150 * STEPS, "every copy is counted: %lld", (long long)big.dma_copies);
    cr_expect_gt(big.time_s, small.time_s * 10, "15x the ops take much longer: %g s vs %g s", big.time_s,
                 small.time_s);
    /* 15x the fills; the one pl_copy per step, now timed by its VMEM bytes (issue 22), is in both */
    cr_expect_gt(big.compute_s, small.compute_s * 12, "compute grows with the fills: %g s vs %g s", big.compute_s,
                 small.compute_s);
}

/* G1: the iterator visits every point of a 2x3 grid once, last axis fastest,
 * then says there is no next point and is back at the first. */
Test(common, grid_iter_walks_in_g1_order)
{
    const int64_t grid[2] = {2, 3};
    sim_grid_iter it;
    sim_grid_iter_init(&it, 2, grid);
    cr_assert_not(sim_grid_iter_empty(&it));
    int n = 0;
    for (int more = 1; more; more = sim_grid_iter_next(&it), n++) {
        cr_assert_lt(n, 6, "more than 6 points");
        cr_expect_eq(it.pos[0], n / 3, "point %d: axis 0 is %lld", n, (long long)it.pos[0]);
        cr_expect_eq(it.pos[1], n % 3, "point %d: axis 1 is %lld", n, (long long)it.pos[1]);
    }
    cr_expect_eq(n, 6);
    cr_expect(it.pos[0] == 0 && it.pos[1] == 0, "back at the first point");
}

/* G4: one TensorCore's chunk [2, 4) of axis 0 of a (5, 2) grid: four points,
 * (2, 0) (2, 1) (3, 0) (3, 1). */
Test(common, grid_iter_walks_a_megacore_chunk)
{
    const int64_t lo[2] = {2, 0}, hi[2] = {4, 2};
    sim_grid_iter it;
    sim_grid_iter_box(&it, 2, lo, hi);
    char got[128] = "", p[32];
    for (int more = !sim_grid_iter_empty(&it); more; more = sim_grid_iter_next(&it)) {
        sim_format_idx(it.pos, 2, p, sizeof p);
        strncat(got, p, sizeof got - strlen(got) - 1);
    }
    cr_expect_str_eq(got, "(2, 0)(2, 1)(3, 0)(3, 1)");
}

/* A grid with an axis of size 0 (a call not validated, as pl_check_blame may
 * get) has no point; a grid of rank 0 has one. */
Test(common, grid_iter_empty_and_rank_zero)
{
    const int64_t grid[2] = {3, 0};
    sim_grid_iter it;
    sim_grid_iter_init(&it, 2, grid);
    cr_expect(sim_grid_iter_empty(&it));
    sim_grid_iter_init(&it, 0, grid);
    cr_expect_not(sim_grid_iter_empty(&it));
    cr_expect_not(sim_grid_iter_next(&it), "rank 0: one point, no next");
}

/* Messages print tuples one way: "(1, 2, 3)". */
Test(common, format_idx_prints_a_tuple)
{
    const int64_t idx[3] = {1, 2, 3};
    char buf[32];
    sim_format_idx(idx, 3, buf, sizeof buf);
    cr_expect_str_eq(buf, "(1, 2, 3)");
}

/* One splitmix64 for the definitions' inputs: its stream is the published
 * one (seed 0 gives 0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4), the same on
 * every host, so a seed names the same inputs everywhere. */
Test(common, splitmix64_is_the_published_stream)
{
    uint64_t s = 0;
    cr_expect_eq(sim_splitmix64(&s), 0xe220a8397b1dcdafULL);
    cr_expect_eq(sim_splitmix64(&s), 0x6e789e6aa1b965f4ULL);
}

/* G1: linear index 7 of a (2, 3, 2) grid is the point (1, 0, 1). */
Test(common, grid_point_of_a_linear_index)
{
    const int64_t grid[3] = {2, 3, 2};
    int64_t idx[3];
    sim_grid_point(3, grid, 7, idx);
    cr_expect(idx[0] == 1 && idx[1] == 0 && idx[2] == 1, "got (%lld, %lld, %lld)", (long long)idx[0],
              (long long)idx[1], (long long)idx[2]);
}

/* A text file of exactly 65535 bytes is the largest taken, not "larger than
 * 65535 bytes"; one byte more is refused. */
Test(common, text_load_takes_exactly_its_limit)
{
    char path[] = "/tmp/tilesim_test_textload_XXXXXX", err[256];
    int fd = mkstemp(path), rc;
    cr_assert(fd >= 0);
    static char text[65536];
    memset(text, 'a', sizeof text);
    cr_assert_eq(write(fd, text, 65535), 65535);
    char *got = sim_text_load(path, "test", err, sizeof err, &rc);
    cr_expect(got && rc == PL_OK && strlen(got) == 65535, "%s", got ? "" : err);
    free(got);
    cr_assert_eq(write(fd, text, 1), 1);
    got = sim_text_load(path, "test", err, sizeof err, &rc);
    cr_expect(!got && strstr(err, "larger than 65535 bytes"), "%s", err);
    free(got);
    close(fd);
    unlink(path);
}

/* A full warning list keeps whole lines and says there are more: a warning that does not fit is left
 * out, not cut mid-word, and n_warnings counts every one. */
Test(common, a_full_warning_list_ends_with_a_note_not_a_cut_line)
{
    static pl_report rep;
    memset(&rep, 0, sizeof rep);
    for (int i = 0; i < 100; i++)
        sim_warn(&rep, "warning %d: block (1, 128) has 1 row where the native tile has 8 sublanes (rule T6)", i);
    cr_expect_eq(rep.n_warnings, 100);
    size_t n = strlen(rep.warnings);
    cr_assert_lt(n, sizeof rep.warnings);
    cr_expect_eq(rep.warnings[n - 1], '\n', "the list ends with a whole line");
    const char *last = rep.warnings + n - 1;
    while (last > rep.warnings && last[-1] != '\n') last--;
    cr_expect(strncmp(last, "(more warnings not shown", 24) == 0, "%s", last);
    int lines = 0;
    for (const char *p = rep.warnings; (p = strchr(p, '\n')); p++) lines++;
    for (const char *p = rep.warnings; p < last; p = strchr(p, '\n') + 1)
        cr_expect(strstr(p, "(rule T6)\n") == strchr(p, '\n') - 9, "a whole line: %.60s", p);
    cr_expect_lt(lines, 100);
    sim_warn(&rep, "one more");
    cr_expect_eq(strlen(rep.warnings), n, "nothing after the note");
    cr_expect_eq(rep.n_warnings, 101);
}
