/* tests/test_megacore_threads2.c: issue 11, continued (suite megacore_threads):
 * findings and errors give the same results and reports bit for bit
 * whatever pl_options.host_threads is, on v5p, v4 and a 4-core what-if chip,
 * under four seeds (G4, V4). Bugs are placed on one
 * core's part of the grid only, or on both with the later core's bug
 * earlier in its walk: the error and the findings must be those of the walk
 * in order (core 0, then core 1, ...), never those of the thread that got
 * there first. The harness is tests/megacore_threads.h, the driver
 * tests/megacore_cases.h (the pipeline's features: test_megacore_threads3.c).
 */
#include "megacore_cases.h"

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
