/* tests/test_records_pool.c: a sweep's host thread hands the record
 * buffers one configuration frees to the next (sim_records_pool, records.c):
 * the same memory comes back, a spare larger than asked for is used whole
 * (its traced block indices too), and nothing is kept once the pool is off. */
#include <criterion/criterion.h>
#include <malloc.h> /* malloc_usable_size: glibc's, and ASan's */
#include <stdint.h>
#include <string.h>

#include "../sim/timing/timing.h"

enum { STEPS = 1 << 18 }; /* 2 MiB of step times, 16 MiB of copies: over the pool's 1 MiB floor */

Test(records_pool, a_freed_line_serves_the_next_reservation_while_on)
{
    sim_records_pool(1);
    sim_coreline c = {.n_ops = 1};
    cr_assert_eq(sim_coreline_reserve(&c, STEPS), 0);
    cr_assert_eq(sim_opline_reserve(&c.op[0], STEPS, 0), 0);
    void *steps = c.step_s, *copies = c.op[0].x;
    sim_coreline_free(&c);
    c = (sim_coreline){.n_ops = 1};
    cr_assert_eq(sim_opline_reserve(&c.op[0], STEPS / 2, 0), 0);
    cr_expect_eq(c.op[0].x, copies, "the smallest spare that holds the request");
    cr_expect_eq(c.op[0].cap, STEPS, "a spare is used whole");
    cr_assert_eq(sim_coreline_reserve(&c, STEPS / 4), 0);
    cr_expect_eq(c.step_s, steps);
    sim_coreline_free(&c);
    sim_records_pool(0);
}

/* A traced line keeps rank block indices per transfer: a spare with room
 * for more transfers than asked gets indices for all of them (pushing to
 * its capacity stays inside them, which ASan also checks in make check-asan). */
Test(records_pool, a_spare_for_a_traced_line_gets_indices_for_its_whole_capacity)
{
    sim_records_pool(1);
    sim_coreline c = {.n_ops = 1};
    cr_assert_eq(sim_opline_reserve(&c.op[0], STEPS, 0), 0);
    sim_coreline_free(&c);
    c = (sim_coreline){.n_ops = 1};
    c.op[0].rank = 2;
    cr_assert_eq(sim_opline_reserve(&c.op[0], 1000, 1), 0);
    cr_assert_eq(c.op[0].cap, STEPS);
    cr_assert_geq(malloc_usable_size(c.op[0].bidx), (size_t)STEPS * 2 * sizeof *c.op[0].bidx,
                  "indices for the spare's whole capacity, not the 1000 asked for");
    int64_t bidx[2] = {3, 4};
    for (int64_t i = 0; i < c.op[0].cap; i++) cr_assert_eq(sim_opline_push(&c.op[0], i, 64, 0, bidx), 0);
    cr_expect_eq(c.op[0].n, STEPS);
    cr_expect_eq(c.op[0].bidx[2 * (STEPS - 1) + 1], 4);
    sim_coreline_free(&c);
    sim_records_pool(0);
}

/* Off (the default, and after the last off of nested ons) a freed line is
 * freed: the next reservation is the allocator's, not a spare. */
Test(records_pool, off_keeps_nothing_and_nested_ons_keep_the_pool)
{
    sim_records_pool(1);
    sim_records_pool(1);
    sim_records_pool(0); /* an inner sweep ends: the outer one still pools */
    sim_coreline c = {.n_ops = 1};
    cr_assert_eq(sim_opline_reserve(&c.op[0], STEPS, 0), 0);
    sim_coreline_free(&c);
    c = (sim_coreline){.n_ops = 1};
    cr_assert_eq(sim_opline_reserve(&c.op[0], STEPS / 2, 0), 0);
    cr_expect_eq(c.op[0].cap, STEPS, "still pooled after the inner off");
    sim_coreline_free(&c);
    sim_records_pool(0);
    c = (sim_coreline){.n_ops = 1};
    cr_assert_eq(sim_opline_reserve(&c.op[0], STEPS / 2, 0), 0);
    cr_expect_eq(c.op[0].cap, STEPS / 2, "off: a fresh block of the size asked");
    sim_coreline_free(&c);
}
