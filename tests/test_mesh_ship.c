/* A device's report and timing records as bytes (sim/mesh/mesh_ship.c), which a
 * mesh across Open MPI ranks sends to rank 0 to replay every device's
 * timeline there (rule M11): the round trip keeps every field and array,
 * and bytes cut short are refused, never read past. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/mesh/mesh_run.h"

/* A device's records as a walk would leave them: an input's copies, a
 * step with manual copies and mesh events, per-step times and points. */
static sim_exec *recorded(void)
{
    sim_exec *x = calloc(1, sizeof *x);
    cr_assert(x);
    x->n_cores = 1;
    x->lines = calloc(1, sizeof *x->lines);
    cr_assert(x->lines);
    sim_coreline *c = &x->lines[0];
    c->n_ops = 2;
    c->op[0].rank = 2;
    c->op[1].is_out = 1;
    c->op[1].buffers = 3;
    int64_t b[2] = {4, 5};
    for (int i = 0; i < 5; i++) cr_assert_eq(sim_opline_push(&c->op[0], i, 4096 * (i + 1), i % 2, b), 0);
    cr_assert_eq(sim_opline_push(&c->manual, 1, 777, 0, NULL), 0);
    c->manual.x[0].hops = 2, c->manual.x[0].to = 3, c->manual.x[0].cell = 0x1234;
    for (int s = 0; s < 3; s++) cr_assert_eq(sim_coreline_step(c, 1e-6 * (s + 1)), 0);
    cr_assert_eq(sim_coreline_event(c, 1, (sim_kevent){.kind = SIM_KEV_START, .xfer = 0}), 0);
    cr_assert_eq(sim_coreline_event(c, 1, (sim_kevent){.kind = SIM_KEV_SIGNAL, .device = 3, .cell = 0x40, .amount = 9}),
                 0);
    c->step_point = malloc(3 * sizeof *c->step_point);
    for (int s = 0; s < 3; s++) c->step_point[s] = 10 + s;
    x->rep.time_s = 1.25e-5, x->rep.ici_copies = 7, x->rep.status = PL_OK;
    snprintf(x->rep.call_name, sizeof x->rep.call_name, "ring");
    x->dot_flops[PL_BF16] = 123.0;
    return x;
}

Test(mesh_ship, a_device_round_trips_every_field_and_array)
{
    sim_exec *x = recorded();
    sim_buf b = {0};
    sim_ship_device(&b, x, 1);
    cr_assert(!b.bad && b.n > sizeof x->rep);
    sim_exec *y = calloc(1, sizeof *y);
    const pl_chip *chip = pl_chip_default();
    y->rep.chip = chip;
    const char *at = b.p;
    cr_assert_eq(sim_unship_device(&at, b.p + b.n, y), PL_OK);
    cr_expect_eq(at, b.p + b.n, "every byte read");
    cr_expect_eq(y->rep.chip, chip, "the pointer is this process's");
    cr_expect_eq(y->rep.time_s, 1.25e-5);
    cr_expect_eq(y->rep.ici_copies, 7);
    cr_expect_str_eq(y->rep.call_name, "ring");
    cr_expect_eq(y->dot_flops[PL_BF16], 123.0);
    cr_assert_eq(y->n_cores, 1);
    const sim_coreline *c = &y->lines[0], *o = &x->lines[0];
    cr_assert_eq(c->n_ops, 2);
    cr_assert_eq(c->op[0].n, 5);
    cr_expect_eq(c->op[0].x[4].bytes, 4096 * 5);
    cr_expect_eq(c->op[0].bidx[9], 5, "the block indices of the last copy");
    cr_expect_eq(c->op[1].buffers, 3);
    cr_expect_eq(c->op[1].is_out, 1);
    cr_assert_eq(c->manual.n, 1);
    cr_expect_eq(c->manual.x[0].hops, 2);
    cr_expect_eq(c->manual.x[0].cell, 0x1234);
    cr_assert_eq(c->n_kev, 2);
    cr_expect_eq(c->kev[1].kind, SIM_KEV_SIGNAL);
    cr_expect_eq(c->kev[1].amount, 9);
    cr_expect_eq(c->cap_step_kev, o->cap_step_kev);
    cr_expect_eq(c->step_kev[1], 0);
    cr_expect_eq(c->step_kev[0], -1);
    cr_assert_eq(c->steps, 3);
    cr_expect_eq(c->step_s[2], 3e-6);
    cr_expect_eq(c->step_point[2], 12);
    sim_walk_free(x), sim_walk_free(y);
    free(x), free(y), free(b.p);
}

Test(mesh_ship, bytes_cut_short_are_refused_at_every_length)
{
    sim_exec *x = recorded();
    sim_buf b = {0};
    sim_ship_device(&b, x, 1);
    for (size_t n = 0; n < b.n; n += 1 + n / 16) {
        sim_exec *y = calloc(1, sizeof *y);
        char *cut = malloc(n ? n : 1); /* exactly n bytes: ASan sees a read past them */
        memcpy(cut, b.p, n);
        const char *at = cut;
        cr_expect_eq(sim_unship_device(&at, cut + n, y), PL_EINVAL, "%zu of %zu bytes", n, b.n);
        cr_expect(at <= cut + n);
        sim_walk_free(y);
        free(y), free(cut);
    }
    sim_walk_free(x);
    free(x), free(b.p);
}

Test(mesh_ship, a_report_without_records_has_none)
{
    sim_exec *x = recorded();
    sim_buf b = {0};
    sim_ship_device(&b, x, 0); /* the devices did not run */
    sim_exec *y = calloc(1, sizeof *y);
    const char *at = b.p;
    cr_assert_eq(sim_unship_device(&at, b.p + b.n, y), PL_OK);
    cr_expect_null(y->lines);
    cr_expect_eq(y->rep.ici_copies, 7);
    sim_walk_free(x), sim_walk_free(y);
    free(x), free(y), free(b.p);
}
