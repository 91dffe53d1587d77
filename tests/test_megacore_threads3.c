/* tests/test_megacore_threads3.c: issue 11, continued (suite megacore_threads):
 * the pipeline's features give the same results and reports bit for bit
 * whatever pl_options.host_threads is, on v5p, v4 and a 4-core what-if chip,
 * under four seeds: cost-only runs, a trace file with on_step, splits the
 * cores do not divide (G4), scalar prefetch read by an index map (M5),
 * manual DMA with semaphores (M7-M9) and input_output_aliases (M6). The
 * harness is tests/megacore_threads.h, the driver tests/megacore_cases.h.
 */
#include "../examples/kernels/matmul.h"
#include "../sim/call/exec.h"
#include "megacore_cases.h"

/* ---- cost-only, a trace, on_step, odd splits -------------------------------------------------- */

static mm_params mm_p; /* read only by the kernels */

static void matmul_case(mt_call *mc, int64_t m, int64_t n, int64_t k, int64_t b, int cost_only)
{
    mm_call(&mc->call, &mm_p, m, n, k, b, b, b);
    mc->n_args = 2, mc->n_outs = 1;
    mc->args[0] = cost_only ? PL_ARRAY(NULL, PL_BF16, m, k) : mt_array(PL_BF16, m, k, 31);
    mc->args[1] = cost_only ? PL_ARRAY(NULL, PL_BF16, k, n) : mt_array(PL_BF16, k, n, 32);
    mc->outs[0] = PL_ARRAY(NULL, PL_BF16, m, n);
    mc->opt.cost_only = cost_only;
}

static void cost_only(mt_call *mc, bug_at *at, int cores)
{
    (void)at, (void)cores;
    matmul_case(mc, 4096, 2048, 1024, 256, 1);
}

static void traced(mt_call *mc, bug_at *at, int cores)
{
    (void)at, (void)cores;
    matmul_case(mc, 512, 256, 384, 128, 0);
    mc->trace = mc->steps = 1;
}


Test(megacore_threads, cost_only_runs, .timeout = 120) { every_chip_and_seed("cost-only matmul", cost_only, expect_ok, 0); }

Test(megacore_threads, trace_file_and_on_step, .timeout = 120)
{
    every_chip_and_seed("traced matmul with on_step", traced, expect_ok, 0);
}

/* G4: an axis the cores do not divide: 3 rows on 2 cores, 5 on 4 (and 3 on 4) */
static void odd_split(mt_call *mc, bug_at *at, int cores)
{
    (void)at;
    copy_case(mc, th_copy_kernel, NULL, cores == 4 ? 5 : 3, 2);
    mc->steps = 1;
}

static void short_split(mt_call *mc, bug_at *at, int cores)
{
    (void)at, (void)cores;
    copy_case(mc, th_copy_kernel, NULL, 3, 2);
}

static void expect_copied(const char *what, int rc, const pl_report *rep, int cores, uint64_t seed)
{
    (void)seed;
    cr_assert_eq(rc, PL_OK, "%s: %s", what, rep->error);
    /* JAX's split: ceil(n / cores) consecutive rows a core, so 5 rows over 4 cores run on 3 (2, 2, 1, 0) */
    int64_t n = rep->grid[0], chunk = (n + cores - 1) / cores;
    cr_assert_eq(rep->cores, (int)((n + chunk - 1) / chunk), "%s: %d cores ran", what, rep->cores);
}

/* G4 as JAX splits a parallel axis: ceil(n / cores) consecutive indices each
 * (the core split of JAX's TPU pallas_call; 4 rows over 3 cores: 2, 2, 0). */
Test(megacore_threads, G4_split_is_ceil_n_over_cores_consecutive)
{
    int64_t lo[4], hi[4];
    cr_assert_eq(sim_split_axis(4, 3, lo, hi), 2, "4 over 3: two cores get rows");
    cr_assert(lo[0] == 0 && hi[0] == 2 && lo[1] == 2 && hi[1] == 4 && lo[2] == 4 && hi[2] == 4,
              "4 over 3: [%lld,%lld) [%lld,%lld) [%lld,%lld), want 2, 2, 0", (long long)lo[0], (long long)hi[0],
              (long long)lo[1], (long long)hi[1], (long long)lo[2], (long long)hi[2]);
    cr_assert_eq(sim_split_axis(5, 2, lo, hi), 2);
    cr_assert(hi[0] == 3 && lo[1] == 3 && hi[1] == 5, "5 over 2: 3, 2");
    cr_assert_eq(sim_split_axis(2, 4, lo, hi), 2, "an axis shorter than the cores: one index each, the rest idle");
}

Test(megacore_threads, G4_odd_splits, .timeout = 120)
{
    every_chip_and_seed("odd split", odd_split, expect_copied, 0);
    every_chip_and_seed("axis shorter than the cores", short_split, expect_copied, 0);
}

/* ---- scalar prefetch (M5), manual DMA (M7-M9), aliases (M6) ------------------------------------ */

static void table_map(const int64_t *g, const pl_ref *prefetch, int64_t *b, void *user)
{
    (void)user;
    b[0] = ((const int32_t *)prefetch[0].data)[g[0]];
    b[1] = g[1];
}

static void gather_kernel(pl_ctx *c, pl_ref *refs) { pl_copy(c, refs[2], refs[1]); }

static void prefetch(mt_call *mc, bug_at *at, int cores)
{
    (void)at, (void)cores;
    copy_case(mc, gather_kernel, NULL, G0, G1);
    static const int32_t table[G0] = {3, 3, 0, 1}; /* repeats skip copies (P2), on one core only */
    mc->args[1] = mc->args[0];
    mc->args[0] = PL_ARRAY(mt_dup(table, sizeof table), PL_I32, G0);
    mc->n_args = 2;
    mc->call.num_scalar_prefetch = 1;
    mc->call.in[0].map = PL_MAP_FN(table_map, NULL);
    mc->steps = 1;
}

Test(megacore_threads, M5_prefetch_table_read_by_the_index_map, .timeout = 120)
{
    every_chip_and_seed("prefetch gather", prefetch, expect_ok, 0);
}

static void dma_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_ref hbm = refs[0], o = refs[1], buf = refs[2], dsem = refs[3], sem = refs[4];
    int64_t i = pl_program_id(c, 0), j = pl_program_id(c, 1);
    pl_ref src = pl_ds(c, pl_ds(c, hbm, 0, i * BR, BR), 1, j * BC, BC);
    pltpu_copy cp = pltpu_async_copy(c, src, buf, pl_at(c, dsem, 0));
    pltpu_copy_start(c, &cp);
    pltpu_semaphore_signal(c, pl_at(c, sem, 0), 1);
    pltpu_copy_wait(c, &cp);
    pltpu_semaphore_wait(c, pl_at(c, sem, 0), 1);
    pl_copy(c, o, buf);
}

static void dma(mt_call *mc, bug_at *at, int cores)
{
    (void)at, (void)cores;
    copy_case(mc, dma_kernel, NULL, G0, G1);
    mc->call.in[0] = (pl_block_spec){.space = PL_ANY, .name = "x"};
    mc->call.n_scratch = 3;
    mc->call.scratch[0] = PLTPU_VMEM(PL_F32, BR, BC);
    mc->call.scratch[1] = PLTPU_SEMAPHORE_DMA(1);
    mc->call.scratch[2] = PLTPU_SEMAPHORE(1);
    mc->trace = 1;
}

static void expect_dma(const char *what, int rc, const pl_report *rep, int cores, uint64_t seed)
{
    expect_ok(what, rc, rep, cores, seed);
    cr_assert_eq(rep->dma_copies, G0 * G1, "%s", what);
}

Test(megacore_threads, M7_manual_dma_and_semaphores, .timeout = 120)
{
    every_chip_and_seed("manual DMA", dma, expect_dma, 0);
}

static void add_one_kernel(pl_ctx *c, pl_ref *refs) { pl_add_scalar(c, refs[1], refs[0], 1.0); }

static void aliased(mt_call *mc, bug_at *at, int cores)
{
    (void)at, (void)cores;
    copy_case(mc, add_one_kernel, NULL, G0, G1);
    mc->call.n_alias = 1;
    mc->call.alias[0].in = 0, mc->call.alias[0].out = 0;
}

Test(megacore_threads, M6_input_output_alias, .timeout = 120)
{
    every_chip_and_seed("aliased x -> o", aliased, expect_ok, 0);
}
