/* tests/megacore_cases.h: what the case files of the megacore_threads suite
 * (test_megacore_threads2.c, test_megacore_threads3.c) share: a small copy
 * call whose kernel may carry a bug at chosen grid points, and a driver that
 * runs a case through mt_check (megacore_threads.h) on every chip and seed.
 */
#ifndef TILESIM_TEST_MEGACORE_CASES_H
#define TILESIM_TEST_MEGACORE_CASES_H

#include "megacore_threads.h"

/* Most cases: x (G0*8, G1*128) f32 in (8, 128) blocks, grid (G0, G1) with
 * axis 0 parallel (the cores split it) and axis 1 arbitrary. */
enum { G0 = 4, G1 = 3, BR = 8, BC = 128 };

/* Where a bug strikes: lo <= i < hi and (j < 0 or program_id(1) == j);
 * a second place lo2..hi2 at j2 (hi2 = 0: none). Read-only in kernels, which
 * may run on several threads at once. */
typedef struct bug_at {
    int64_t lo, hi, j, lo2, hi2, j2;
} bug_at;

static inline int bug_here(pl_ctx *c)
{
    const bug_at *w = pl_kernel_user(c);
    int64_t i = pl_program_id(c, 0), j = pl_program_id(c, 1);
    return (i >= w->lo && i < w->hi && (w->j < 0 || j == w->j)) ||
           (i >= w->lo2 && i < w->hi2 && (w->j2 < 0 || j == w->j2));
}

/* The grid rows of core k of n (an even G4 split of G0). */
static inline bug_at on_core(int k, int n, int64_t j)
{
    return (bug_at){.lo = k * G0 / n, .hi = (k + 1) * G0 / n, .j = j};
}

static inline void copy_case(mt_call *mc, pl_kernel_fn kernel, void *user, int64_t g0, int64_t g1)
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

static inline void every_chip_and_seed(const char *name, build_fn build, expect_fn expect, int strict)
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

static inline void expect_ok(const char *what, int rc, const pl_report *rep, int cores, uint64_t seed)
{
    (void)seed;
    cr_assert_eq(rc, PL_OK, "%s: %s", what, rep->error);
    cr_assert_eq(rep->cores, cores, "%s: %d cores ran", what, rep->cores);
}

#endif
