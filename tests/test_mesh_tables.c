/* The tables a big mesh lives on. The replay's semaphore counts (sim/timing/credit.c): a count back at 0
 * leaves the open-addressing table (issue 26: a ring of N devices touches
 * 2 N^2 semaphores), and deleting one must leave every other count
 * reachable. Checked against a plain array, over many semaphores whose
 * slots collide, added and taken in a shuffled order. */
#include <criterion/criterion.h>
#include <stdint.h>

#include "../sim/base/common.h"
#include "../sim/timing/timing.h"

#define DEVICES 7
#define CELLS 300

/* A count per (device, cell) kept by hand, beside the table. */
static int64_t want[DEVICES][CELLS];

static uintptr_t cell_of(int i) { return (uintptr_t)0x1000 + (uintptr_t)i * 8; }

Test(mesh_tables, counts_survive_every_deletion_around_them)
{
    sim_credits *c = sim_credits_new(DEVICES);
    cr_assert(c);
    uint64_t rng = 12345;
    for (int round = 0; round < 200000; round++) {
        int d = (int)(sim_splitmix64(&rng) % DEVICES), i = (int)(sim_splitmix64(&rng) % CELLS);
        int64_t amount = 1 + (int64_t)(sim_splitmix64(&rng) % 3);
        if (sim_splitmix64(&rng) % 2) {
            cr_assert_eq(sim_credit_add(c, d, cell_of(i), amount), 0);
            want[d][i] += amount;
        } else {
            int ok = sim_credit_take(c, d, cell_of(i), amount);
            cr_assert_eq(ok, want[d][i] >= amount, "round %d: device %d cell %d holds %lld, take %lld: %d", round, d,
                         i, (long long)want[d][i], (long long)amount, ok);
            if (ok) want[d][i] -= amount;
        }
    }
    /* every count as kept by hand, then all taken back to 0 */
    for (int d = 0; d < DEVICES; d++)
        for (int i = 0; i < CELLS; i++) {
            if (want[d][i]) cr_assert(sim_credit_take(c, d, cell_of(i), want[d][i]), "device %d cell %d", d, i);
            cr_assert_not(sim_credit_take(c, d, cell_of(i), 1), "device %d cell %d is empty", d, i);
        }
    sim_credits_free(c);
}

/* A wait that comes before its add: the count it found empty fills later. */
Test(mesh_tables, a_take_before_the_add_waits_then_succeeds)
{
    sim_credits *c = sim_credits_new(4);
    cr_assert(c);
    cr_expect_not(sim_credit_take(c, 3, cell_of(1), 4096));
    int dev;
    cr_expect_not(sim_credits_news(c, &dev), "a take that finds too little is no news");
    cr_expect_eq(sim_credit_add(c, 3, cell_of(1), 2048), 0);
    cr_expect(sim_credits_news(c, &dev) && dev == 3, "an add is news to the device's waiting takes");
    cr_expect_not(sim_credits_news(c, &dev), "and to no other device's");
    cr_expect_not(sim_credit_take(c, 3, cell_of(1), 4096));
    cr_expect_eq(sim_credit_add(c, 3, cell_of(1), 2048), 0);
    cr_expect(sim_credit_take(c, 3, cell_of(1), 4096));
    cr_expect_not(sim_credit_take(c, 3, cell_of(1), 1));
    cr_expect_not(sim_credit_take(c, 2, cell_of(1), 1), "another device's semaphore at the same address");
    sim_credits_free(c);
}

/* ---- the race checker's index of landed regions (sim/mesh/mesh_race.c) ---------------- */

#include "../sim/mesh/mesh_race.h"

/* Copies from device 0 into device 1 that nothing orders (no wait takes
 * them): each races with every live region it overlaps, and a region a
 * later copy covers whole is gone. A plain list beside the checker says
 * which, over shapes that share starts, nest, straddle and cover several. */
Test(mesh_tables, the_race_index_agrees_with_a_plain_list)
{
    enum { MAXR = 4096 };
    static uintptr_t lo_of[MAXR], hi_of[MAXR];
    int n = 0;
    sim_mesh_race *r = sim_mesh_race_new(2);
    cr_assert(r);
    uint64_t rng = 99;
    static const int sem;
    for (int round = 0; round < 20000; round++) {
        uintptr_t lo = 64 * (sim_splitmix64(&rng) % 64), len = 64 * (1 + sim_splitmix64(&rng) % 6), hi = lo + len;
        int want = 0;
        for (int i = 0; i < n; i++) want |= lo < hi_of[i] && lo_of[i] < hi;
        int got = sim_mesh_race_copy(r, 0, 1, lo, hi, &sem, (int64_t)len, "(0,)");
        cr_assert_eq(got, want, "round %d: [%lu, %lu) against %d live regions", round, (unsigned long)lo,
                     (unsigned long)hi, n);
        int k = 0;
        for (int i = 0; i < n; i++)
            if (!(lo <= lo_of[i] && hi_of[i] <= hi)) lo_of[k] = lo_of[i], hi_of[k] = hi_of[i], k++;
        cr_assert_lt(k, MAXR);
        lo_of[k] = lo, hi_of[k] = hi, n = k + 1;
    }
    sim_mesh_race_free(r);
}
