/* tests/test_robust.c: nothing a user writes may crash the process. Thousands
 * of random, mostly malformed calls (ranks, block shapes, index maps, spaces,
 * buffers, scratch, aliases, element dimensions, grids) go through
 * pl_validate and pl_pallas_call; each must return PL_OK or a known error
 * code with a message, and a rejected call must leave the output untouched.
 * The suite runs again under AddressSanitizer (make check-asan), which turns
 * any out-of-bounds access on the way into a failure. */
#include "helpers.h"

static uint64_t rng = 0x1234567;

static int64_t pick(int64_t n) /* 0 .. n-1 */
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (int64_t)((rng >> 33) % (uint64_t)n);
}

static int64_t odd_size(void)
{
    static const int64_t sizes[] = {-5, -1, 0, 1, 2, 7, 8, 16, 100, 128, 256, 1024, 1LL << 40, INT64_MAX};
    return sizes[pick(sizeof sizes / sizeof *sizes)];
}

/* Copies its input block to its output block, then pokes at the edges of
 * its refs; faults are fine, crashes are not. user: the prefetch count. */
static void random_kernel(pl_ctx *c, pl_ref *refs)
{
    int pf = *(const int *)pl_kernel_user(c);
    pl_ref in = refs[pf], out = refs[pf + 1];
    pl_copy(c, out, in);
    if (out.rank == 2 && out.shape[0] > 1) pl_set_at(c, out, pl_get_at(c, in, 1, 0) + 1, 1, 0);
    if (in.rank == 2) pl_add(c, out, pl_ds(c, in, 0, 0, out.shape[0]), out);
}

static void random_map(const int64_t *g, const pl_ref *pf, int64_t *b, void *user)
{
    (void)pf;
    int64_t how = (int64_t)(intptr_t)user;
    b[0] = how == 0 ? g[0] : how == 1 ? -g[0] : how == 2 ? 1000 : g[0] / 2;
    if (how != 3) b[1] = 0; /* how == 3 leaves a dimension unset */
}

/* A legal spec, (8, 128) blocks at (i, j), with a few random mutations. */
static pl_block_spec random_spec(int rank)
{
    pl_block_spec s = PL_BLOCK(PL_MAP(0, 1), 8, 128);
    if (pick(10) == 0) s.rank = (int)pick(9) - 1;
    for (int d = 0; d < PL_MAX_RANK; d++)
        if (pick(12) == 0) s.block[d] = pick(3) == 0 ? PL_SQUEEZED : odd_size();
    switch (pick(12)) {
    case 0: s.map = (pl_index_map){0}; break;
    case 1: s.map = PL_MAP(0, PL_ZERO); break;
    case 2: s.map = PL_MAP_FN(random_map, (void *)(intptr_t)pick(4)); break;
    case 3:
        s.map.n = (int)pick(8) - 1;
        for (int d = 0; d < PL_MAX_RANK; d++) s.map.axis[d] = (int8_t)(pick(6) - 2);
        break;
    default: break;
    }
    if (pick(12) == 0) s.space = (pl_memspace)pick(5);
    if (pick(8) == 0) s.buffers = (int)pick(5) - 1;
    if (pick(12) == 0) {
        for (int d = 0; d < PL_MAX_RANK; d++) s.element[d] = (uint8_t)pick(2);
        s.pad_lo[0] = pick(3) - 1;
        s.pad_hi[0] = pick(3) - 1;
    }
    (void)rank;
    return s;
}

Test(robust, random_calls_never_crash, .timeout = 120)
{
    enum { ROWS = 32, COLS = 256, CALLS = 3000 };
    const char *seed = getenv("TILESIM_ROBUST_SEED"); /* to explore other sequences by hand */
    if (seed) rng = strtoull(seed, NULL, 10);
    float *in = th_f32_seq(ROWS * COLS), *out = th_f32_fill(ROWS * COLS, TH_SENTINEL);
    int32_t table[8] = {0};
    int hist[1 - PL_STATUS_MIN] = {0};
    for (int t = 0; t < CALLS; t++) {
        pl_call call = {.name = "random", .kernel = random_kernel, .grid_rank = 2, .grid = {4, 2}};
        if (pick(8) == 0) call.grid_rank = (int)pick(4);
        for (int a = 0; a < call.grid_rank; a++) {
            if (pick(10) == 0) call.grid[a] = pick(3) == 0 ? odd_size() : 1 + pick(5);
            if (call.grid[a] > 1024 && call.grid[a] <= (1LL << 32)) call.grid[a] = 1024; /* legal but slow */
            if (call.grid[a] == 0 && a >= 2) call.grid[a] = 1;
            call.semantics[a] = (pl_semantics)(pick(15) == 0 ? 5 : pick(2));
        }
        call.num_scalar_prefetch = pick(8) == 0 ? 1 : 0;
        call.user = &call.num_scalar_prefetch;
        call.n_in = 1;
        call.n_out = 1;
        int rank = 2;
        call.in[0] = random_spec(rank);
        call.out[0] = random_spec(rank);
        call.n_scratch = (int)pick(3);
        for (int i = 0; i < call.n_scratch; i++) {
            call.scratch[i] = pick(4) == 0 ? PLTPU_SEMAPHORE_DMA(2) : PLTPU_VMEM(PL_F32, 8, 128);
            if (pick(8) == 0) call.scratch[i].space = (pl_memspace)pick(5);
            if (pick(8) == 0) call.scratch[i].shape[0] = odd_size();
            if (pick(10) == 0) call.scratch[i].rank = (int)pick(9) - 1;
        }
        if (pick(8) == 0) {
            call.n_alias = 1;
            call.alias[0].in = (int)pick(4) - 1;
            call.alias[0].out = (int)pick(3) - 1;
        }
        if (pick(10) == 0) call.vmem_limit_bytes = odd_size();
        pl_array args[2], arr = PL_ARRAY(in, PL_F32, ROWS, COLS), o = PL_ARRAY(out, PL_F32, ROWS, COLS);
        if (pick(12) == 0) arr.dtype = (pl_dtype)pick(7);
        if (pick(12) == 0) { /* never larger than the buffer: a caller that lies about its memory is beyond help */
            static const int64_t cols[] = {-3, 0, 1, 100, 128, 255};
            o.shape[1] = cols[pick(6)];
        }
        int a = 0;
        if (call.num_scalar_prefetch) args[a++] = PL_ARRAY(table, pick(4) ? PL_I32 : PL_BF16, 8);
        args[a] = arr;
        pl_options opt = {0};
        if (pick(4) == 0) opt.cost_only = 1;
        if (pick(6) == 0) opt.checks_off = 1;
        if (pick(6) == 0) opt.strict = 1;
        if (pick(6) == 0) opt.dma_mode = PL_DMA_ON_WAIT;
        if (pick(6) == 0) opt.chip = pick(2) ? "v5p" : "no-such-chip";
        if (pick(6) == 0) opt.seed = (uint64_t)pick(100);
        pl_report rep;
        for (int e = 0; e < ROWS * COLS; e++) out[e] = TH_SENTINEL;
        int v = pl_validate(&call, args, &o, &opt, &rep);
        cr_assert(v <= 0 && v >= PL_STATUS_MIN, "call %d: pl_validate returned %d", t, v);
        if (v) {
            cr_assert(rep.error[0], "call %d: error %d without a message", t, v);
            cr_assert_str_neq(pl_strerror(v), "unknown status code");
        }
        int rc = pl_pallas_call(&call, args, &o, &opt, &rep);
        if (rc <= 0 && rc >= PL_STATUS_MIN) hist[-rc]++;
        cr_assert(rc <= 0 && rc >= PL_STATUS_MIN, "call %d: pl_pallas_call returned %d", t, rc);
        if (v) {
            cr_assert_eq(rc, v, "call %d: validation said %d, the call %d: %s", t, v, rc, rep.error);
            for (int e = 0; e < ROWS * COLS; e++)
                cr_assert_eq(out[e], TH_SENTINEL, "call %d: a rejected call wrote its output", t);
        }
    }
    if (getenv("TILESIM_ROBUST_SEED"))
        for (int c = 0; c <= -PL_STATUS_MIN; c++)
            if (hist[c]) fprintf(stderr, "%3d %-45s %d\n", -c, pl_strerror(-c), hist[c]);
    free(in), free(out);
}

/* A call's and its operands' names reach terminals and fixed-width tables:
 * a control byte in one (an ANSI escape, a newline from a plugin) is '?'
 * in the report, which prints them. */
Test(robust, control_bytes_in_names_do_not_reach_the_report)
{
    th_io io = th_io_2d(8, 128);
    pl_call call = {.name = "k\nx", .kernel = th_copy_kernel, .grid_rank = 1, .grid = {1}, .n_in = 1,
                    .in = {PL_BLOCK(PL_MAP(0, 0), 8, 128)}, .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, 0), 8, 128)}};
    call.in[0].name = "\x1b[31mred\nrow";
    pl_report rep;
    cr_assert_eq(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), PL_OK, "%s", rep.error);
    cr_expect_str_eq(rep.call_name, "k?x");
    cr_expect_str_eq(rep.op[0].name, "?[31mred?row");
    th_io_free(&io);
}
