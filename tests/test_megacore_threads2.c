/* tests/test_megacore_threads2.c: issue 11, continued (suite megacore_threads):
 * findings, errors and every pipeline feature give the same results and
 * reports bit for bit whatever pl_options.host_threads is, on v5p, v4 and a
 * 4-core what-if chip, under four seeds (G4, V4). Bugs are placed on one
 * core's part of the grid only, or on both with the later core's bug
 * earlier in its walk: the error and the findings must be those of the walk
 * in order (core 0, then core 1, ...), never those of the thread that got
 * there first. The harness is tests/megacore_threads.h.
 */
#include "megacore_threads.h"
#include "../examples/kernels/matmul.h"

/* Most cases: x (G0*8, G1*128) f32 in (8, 128) blocks, grid (G0, G1) with
 * axis 0 parallel (the cores split it) and axis 1 arbitrary. */
enum { G0 = 4, G1 = 3, BR = 8, BC = 128 };

/* Where a bug strikes: lo <= i < hi and (j < 0 or program_id(1) == j);
 * a second place lo2..hi2 at j2 (hi2 = 0: none). Read-only in kernels, which
 * may run on several threads at once. */
typedef struct bug_at {
    int64_t lo, hi, j, lo2, hi2, j2;
} bug_at;

static int bug_here(pl_ctx *c)
{
    const bug_at *w = pl_kernel_user(c);
    int64_t i = pl_program_id(c, 0), j = pl_program_id(c, 1);
    return (i >= w->lo && i < w->hi && (w->j < 0 || j == w->j)) ||
           (i >= w->lo2 && i < w->hi2 && (w->j2 < 0 || j == w->j2));
}

/* The grid rows of core k of n (an even G4 split of G0). */
static bug_at on_core(int k, int n, int64_t j)
{
    return (bug_at){.lo = k * G0 / n, .hi = (k + 1) * G0 / n, .j = j};
}

static void copy_case(mt_call *mc, pl_kernel_fn kernel, void *user, int64_t g0, int64_t g1)
{
    mc->call = (pl_call){.name = "bugs", .kernel = kernel, .user = user, .grid_rank = 2, .grid = {g0, g1},
                         .semantics = {PL_PARALLEL, PL_ARBITRARY}, .n_in = 1,
                         .in = {PL_BLOCK(PL_MAP(0, 1), BR, BC)}, .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, 1), BR, BC)}};
    mc->call.in[0].name = "x", mc->call.out[0].name = "o";
    mc->n_args = mc->n_outs = 1;
    mc->args[0] = mt_array(PL_F32, g0 * BR, g1 * BC, 21);
    mc->outs[0] = PL_ARRAY(NULL, PL_F32, g0 * BR, g1 * BC);
}

/* Run a case on every chip and seed: build(mc, chip cores) fills it, then
 * expect(rc, rep, cores) asserts what the case is about on the first run. */
typedef void (*build_fn)(mt_call *mc, bug_at *at, int cores);
typedef void (*expect_fn)(const char *what, int rc, const pl_report *rep, int cores, uint64_t seed);

static void every_chip_and_seed(const char *name, build_fn build, expect_fn expect, int strict)
{
    for (int chip = 0; chip < MT_N_CHIPS; chip++)
        for (int s = 0; s < MT_N_SEEDS; s++) {
            char what[128];
            snprintf(what, sizeof what, "%s on %s, seed %" PRIu64 "%s", name, mt_chip_name(chip), mt_seeds[s],
                     strict ? ", strict" : "");
            mt_call mc = {.what = what, .opt = mt_chip_opt(chip, mt_seeds[s])};
            mc.opt.strict = strict;
            bug_at at = {0};
            int cores = mt_cores(&mc.opt);
            build(&mc, &at, cores);
            pl_report *rep = malloc(sizeof *rep);
            cr_assert(rep);
            int rc = mt_check(&mc, rep);
            expect(what, rc, rep, cores, mt_seeds[s]);
            free(rep);
            mt_free_args(&mc);
        }
}

static int count_findings(const pl_report *rep, const char *rule)
{
    int n = 0;
    for (int i = 0; i < rep->n_findings && i < PL_MAX_FINDINGS; i++) n += strcmp(rep->findings[i].rule, rule) == 0;
    return n;
}

/* ---- kernel faults (V2) -------------------------------------------------------------------- */

static void fault_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_copy(c, refs[1], refs[0]);
    if (bug_here(c)) pl_get_at(c, refs[0], BR, 0); /* one row past the block: PL_EBOUNDS */
}

static void fault_on_core1(mt_call *mc, bug_at *at, int cores)
{
    *at = on_core(1, cores, 1);
    copy_case(mc, fault_kernel, at, G0, G1);
}

static void fault_on_core0(mt_call *mc, bug_at *at, int cores)
{
    *at = on_core(0, cores, G1 - 1);
    copy_case(mc, fault_kernel, at, G0, G1);
}

/* core 0 faults at its last step, core 1 at its first: the walk in order
 * meets core 0's fault first */
static void fault_on_both(mt_call *mc, bug_at *at, int cores)
{
    bug_at late0 = on_core(0, cores, G1 - 1), early1 = on_core(1, cores, 0);
    *at = (bug_at){.lo = late0.hi - 1, .hi = late0.hi, .j = G1 - 1, .lo2 = early1.lo, .hi2 = early1.hi, .j2 = 0};
    copy_case(mc, fault_kernel, at, G0, G1);
}

static void expect_bounds(const char *what, int rc, const pl_report *rep, int cores, uint64_t seed)
{
    (void)seed;
    (void)cores;
    cr_assert_eq(rc, PL_EBOUNDS, "%s: %d %s", what, rc, rep->error);
    cr_assert(strstr(rep->error, "V2"), "%s: %s", what, rep->error);
}

static void expect_fault_core1(const char *what, int rc, const pl_report *rep, int cores, uint64_t seed)
{
    expect_bounds(what, rc, rep, cores, seed);
    char at[32];
    snprintf(at, sizeof at, "(%d, 1)", G0 / cores); /* the first row of core 1, unshuffled */
    cr_assert(seed || strstr(rep->error, at), "%s: the fault is at %s: %s", what, at, rep->error);
}

static void expect_fault_late0(const char *what, int rc, const pl_report *rep, int cores, uint64_t seed)
{
    expect_bounds(what, rc, rep, cores, seed);
    char at[32];
    snprintf(at, sizeof at, "(%d, %d)", G0 / cores - 1, G1 - 1);
    cr_assert(seed || strstr(rep->error, at), "%s: the walk in order faults first at %s on core 0: %s", what, at, rep->error);
}

Test(megacore_threads, V2_fault_on_core_1_only, .timeout = 120)
{
    every_chip_and_seed("fault on core 1", fault_on_core1, expect_fault_core1, 0);
}

Test(megacore_threads, V2_fault_on_core_0_only, .timeout = 120)
{
    every_chip_and_seed("fault on core 0", fault_on_core0, expect_bounds, 0);
}

Test(megacore_threads, V2_faults_on_both_cores_report_core_0s, .timeout = 120)
{
    every_chip_and_seed("faults on cores 0 and 1", fault_on_both, expect_fault_late0, 0);
}

/* ---- an index map that fails on core 1's part (B2) ---------------------------------------- */

static void failing_map(const int64_t *g, const pl_ref *prefetch, int64_t *b, void *user)
{
    (void)prefetch;
    const bug_at *w = user;
    b[0] = g[0] >= w->lo && g[0] < w->hi && g[1] == w->j ? 99 : g[0];
    b[1] = g[1];
}

static void map_fails_on_core1(mt_call *mc, bug_at *at, int cores)
{
    *at = on_core(1, cores, 1);
    copy_case(mc, th_copy_kernel, NULL, G0, G1);
    mc->call.in[0].map = PL_MAP_FN(failing_map, at);
}

static void expect_indexmap(const char *what, int rc, const pl_report *rep, int cores, uint64_t seed)
{
    (void)seed;
    (void)cores;
    cr_assert_eq(rc, PL_EINDEXMAP, "%s: %d %s", what, rc, rep->error);
    cr_assert(strstr(rep->error, "x"), "%s: %s", what, rep->error);
}

Test(megacore_threads, B2_index_map_failing_on_core_1, .timeout = 120)
{
    every_chip_and_seed("index map fails on core 1", map_fails_on_core1, expect_indexmap, 0);
}

/* ---- V4: two cores write one output block, found while walking ------------------------------ */

/* i and i + G0/2 write the same block: on different cores on 2 and 4 cores */
static void shared_map(const int64_t *g, const pl_ref *prefetch, int64_t *b, void *user)
{
    (void)prefetch, (void)user;
    b[0] = g[0] % (G0 / 2);
    b[1] = g[1];
}

static void race(mt_call *mc, bug_at *at, int cores)
{
    (void)at, (void)cores;
    copy_case(mc, th_copy_kernel, NULL, G0, G1);
    mc->call.out[0].map = PL_MAP_FN(shared_map, NULL);
    mc->outs[0].shape[0] = G0 / 2 * BR;
}

static void expect_race(const char *what, int rc, const pl_report *rep, int cores, uint64_t seed)
{
    (void)seed;
    (void)cores;
    cr_assert_eq(rc, PL_ERACE, "%s: %d %s", what, rc, rep->error);
    cr_assert(strstr(rep->error, "o") && strstr(rep->error, "V4"), "%s: %s", what, rep->error);
}

Test(megacore_threads, V4_race_between_cores_with_a_map_function, .timeout = 120)
{
    every_chip_and_seed("race on o", race, expect_race, 0);
}

/* ---- findings: P4, V1, V3, and more than PL_MAX_FINDINGS ----------------------------------- */

static void unwritten_kernel(pl_ctx *c, pl_ref *refs)
{
    if (!bug_here(c)) pl_copy(c, refs[1], refs[0]);
}

static void unwritten_on_core1(mt_call *mc, bug_at *at, int cores)
{
    *at = on_core(1, cores, 1);
    copy_case(mc, unwritten_kernel, at, G0, G1);
}

static void expect_p4(const char *what, int rc, const pl_report *rep, int cores, uint64_t seed)
{
    (void)seed;
    (void)cores;
    cr_assert_eq(rc, PL_OK, "%s: %s", what, rep->error);
    cr_assert_gt(count_findings(rep, "P4"), 0, "%s: no P4 finding", what);
}

Test(megacore_threads, P4_unwritten_block_on_core_1, .timeout = 120)
{
    every_chip_and_seed("unwritten on core 1", unwritten_on_core1, expect_p4, 0);
}

/* every block but those of i = 0: more findings than the report keeps; the
 * kept ones are the first of the walk in order */
static void unwritten_everywhere(mt_call *mc, bug_at *at, int cores)
{
    (void)cores;
    *at = (bug_at){.lo = 1, .hi = G0, .j = -1};
    copy_case(mc, unwritten_kernel, at, G0, G1);
}

static void expect_many(const char *what, int rc, const pl_report *rep, int cores, uint64_t seed)
{
    expect_p4(what, rc, rep, cores, seed);
    cr_assert_gt(rep->n_findings, PL_MAX_FINDINGS, "%s: %d findings", what, rep->n_findings);
    cr_assert(seed || rep->findings[0].point[0] == 1, "%s: unshuffled, the first finding is at i = 1", what);
}

Test(megacore_threads, P4_more_findings_than_kept, .timeout = 120)
{
    every_chip_and_seed("unwritten on most rows", unwritten_everywhere, expect_many, 0);
}

/* V1: an accumulator never zeroed: the NaN it starts with (scratch is
 * poison) reaches every output block, on every core */
static void nan_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_ref x = refs[0], o = refs[1], acc = refs[2];
    pl_add(c, acc, acc, x);
    pl_copy(c, o, acc);
}

static void nan_case(mt_call *mc, bug_at *at, int cores)
{
    (void)at, (void)cores;
    copy_case(mc, nan_kernel, NULL, G0, G1);
    mc->call.n_scratch = 1;
    mc->call.scratch[0] = PLTPU_VMEM(PL_F32, BR, BC);
}

static void expect_v1(const char *what, int rc, const pl_report *rep, int cores, uint64_t seed)
{
    (void)seed;
    (void)cores;
    cr_assert_eq(rc, PL_OK, "%s: %s", what, rep->error);
    cr_assert_gt(count_findings(rep, "V1"), 0, "%s: no V1 finding", what);
}

static void expect_poison(const char *what, int rc, const pl_report *rep, int cores, uint64_t seed)
{
    (void)cores;
    cr_assert_eq(rc, PL_EPOISON, "%s: %d %s", what, rc, rep->error);
    cr_assert(seed || strstr(rep->error, "(0, 0)"), "%s: the walk in order meets core 0's first NaN first: %s", what,
              rep->error);
}

Test(megacore_threads, V1_unzeroed_accumulator, .timeout = 120)
{
    every_chip_and_seed("unzeroed accumulator", nan_case, expect_v1, 0);
    every_chip_and_seed("unzeroed accumulator", nan_case, expect_poison, 1);
}

/* V3: a write into the input block */
static void write_input_kernel(pl_ctx *c, pl_ref *refs)
{
    if (bug_here(c)) pl_fill(c, refs[0], 1.0);
    pl_copy(c, refs[1], refs[0]);
}

static void write_input_case(mt_call *mc, bug_at *at, int cores)
{
    bug_at late0 = on_core(0, cores, -1), early1 = on_core(1, cores, -1);
    *at = (bug_at){.lo = late0.hi - 1, .hi = late0.hi, .j = G1 - 1, .lo2 = early1.lo, .hi2 = early1.hi, .j2 = 0};
    copy_case(mc, write_input_kernel, at, G0, G1);
}

static void expect_v3(const char *what, int rc, const pl_report *rep, int cores, uint64_t seed)
{
    (void)seed;
    (void)cores;
    cr_assert_eq(rc, PL_OK, "%s: %s", what, rep->error);
    cr_assert_gt(count_findings(rep, "V3"), 0, "%s: no V3 finding", what);
    cr_assert(strstr(rep->warnings, "V3"), "%s: %s", what, rep->warnings);
}

static void expect_readonly(const char *what, int rc, const pl_report *rep, int cores, uint64_t seed)
{
    cr_assert_eq(rc, PL_EREADONLY, "%s: %d %s", what, rc, rep->error);
    char at[32];
    snprintf(at, sizeof at, "(%d, %d)", G0 / cores - 1, G1 - 1);
    cr_assert(seed || strstr(rep->error, at), "%s: the walk in order meets core 0's write at %s first: %s", what, at,
              rep->error);
}

Test(megacore_threads, V3_write_into_an_input_block, .timeout = 120)
{
    every_chip_and_seed("write into x", write_input_case, expect_v3, 0);
    every_chip_and_seed("write into x", write_input_case, expect_readonly, 1);
}

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

static void expect_ok(const char *what, int rc, const pl_report *rep, int cores, uint64_t seed)
{
    (void)seed;
    cr_assert_eq(rc, PL_OK, "%s: %s", what, rep->error);
    cr_assert_eq(rep->cores, cores, "%s: %d cores ran", what, rep->cores);
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
    cr_assert_eq(rep->cores, cores == 4 && rep->grid[0] == 3 ? 3 : cores, "%s: %d cores ran", what, rep->cores);
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
