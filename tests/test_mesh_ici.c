/* tests/test_mesh_ici.c: the ICI link model (sim/timing/ici.c) against closed
 * forms, and the per-hop ICI latency of the chips (sim/timing/chips.c, `tilesim
 * chips`). Copies cross the links of their routes (rule M11); a ring
 * collective is N - 1 rounds of neighbour copies (M12). */
#include <math.h>
#include <stdio.h>
#include <time.h>

#include "../kernel/sanitizers.h"
#include "../sim/timing/ici.h"
#include "../sim/tilesim_mesh.h"
#include "helpers.h"
#include "run.h"

#define BW 45e9
#define LAT 1e-6
#define S (1 << 20)

static pl_mesh mesh(const char *text)
{
    pl_mesh m;
    char msg[256];
    cr_assert_eq(pl_mesh_parse(text, &m, msg, sizeof msg), PL_OK, "%s", msg);
    return m;
}

static void near(double got, double want, const char *what)
{
    cr_assert(fabs(got - want) <= 1e-9 * fabs(want), "%s: got %.17g, want %.17g", what, got, want);
}

static void ici_ok(const pl_mesh *m, sim_ici_xfer *x, int n)
{
    cr_assert_eq(sim_ici_time(m, BW, LAT, x, n), 0);
}

Test(mesh_ici, one_copy_one_hop_is_latency_plus_bytes_over_bandwidth)
{
    pl_mesh m = mesh("ring:8");
    sim_ici_xfer x = {.from = 2, .to = 3, .bytes = S, .t_ready = 5e-6};
    ici_ok(&m, &x, 1);
    near(x.t_start, 5e-6 + LAT, "first byte");
    near(x.t_done, 5e-6 + LAT + S / BW, "last byte");
}

Test(mesh_ici, a_route_of_three_hops_pays_three_latencies)
{
    pl_mesh m = mesh("line:8");
    sim_ici_xfer x = {.from = 0, .to = 3, .bytes = S};
    ici_ok(&m, &x, 1);
    near(x.t_start, 3 * LAT, "first byte after 3 hops");
    near(x.t_done, 3 * LAT + S / BW, "bandwidth does not depend on the hops");
}

Test(mesh_ici, copies_on_one_link_share_it)
{
    pl_mesh m = mesh("ring:8");
    enum { K = 4 };
    sim_ici_xfer x[K];
    for (int i = 0; i < K; i++) x[i] = (sim_ici_xfer){.from = 6, .to = 7, .bytes = S};
    ici_ok(&m, x, K);
    for (int i = 0; i < K; i++) near(x[i].t_done, LAT + K * (double)S / BW, "k copies: k * S / bw");

    /* the second starts d later: the first runs alone, then both at half
     * rate; the link is busy throughout, so the last ends at 2 S / bw */
    double d = 0.25 * S / BW;
    sim_ici_xfer y[2] = {{.from = 0, .to = 1, .bytes = S}, {.from = 0, .to = 1, .bytes = S, .t_ready = d}};
    ici_ok(&m, y, 2);
    near(y[0].t_done, LAT + d + 2 * (S - d * BW) / BW, "shared after the second starts");
    near(y[1].t_done, LAT + 2.0 * S / BW, "alone again after the first ends");
}

Test(mesh_ici, copies_on_disjoint_routes_do_not_slow_each_other)
{
    pl_mesh m = mesh("ring:8");
    /* 0 -> 1 and 1 -> 0 use the two directions of one cable: separate links */
    sim_ici_xfer x[3] = {{.from = 0, .to = 1, .bytes = S}, {.from = 1, .to = 0, .bytes = S},
                         {.from = 4, .to = 6, .bytes = S}};
    ici_ok(&m, x, 3);
    near(x[0].t_done, LAT + S / BW, "0 -> 1");
    near(x[1].t_done, LAT + S / BW, "1 -> 0");
    near(x[2].t_done, 2 * LAT + S / BW, "4 -> 6");
}

/* A copy drains at its smallest share over its links, not its first link's. */
Test(mesh_ici, a_copy_drains_at_its_most_crowded_link)
{
    pl_mesh m = mesh("line:4");
    sim_ici_xfer x[3] = {{.from = 0, .to = 2, .bytes = S}, {.from = 1, .to = 2, .bytes = S},
                         {.from = 1, .to = 2, .bytes = S}};
    cr_assert_eq(sim_ici_time(&m, BW, 0, x, 3), 0);
    for (int i = 0; i < 3; i++) near(x[i].t_done, 3.0 * S / BW, "three copies on link 1 -> 2");
}

/* Ring all-gather: N - 1 rounds; in round r every device sends S bytes to
 * its right neighbour as soon as the previous round's incoming copy landed. */
Test(mesh_ici, ring_all_gather_takes_n_minus_1_rounds_of_latency_plus_shard)
{
    enum { N = 8 };
    pl_mesh m = mesh("ring:8");
    double landed[N] = {0}; /* when device d's incoming copy of the last round was done */
    for (int r = 0; r < N - 1; r++) {
        sim_ici_xfer x[N];
        for (int d = 0; d < N; d++) x[d] = (sim_ici_xfer){.from = d, .to = (d + 1) % N, .bytes = S,
                                                          .t_ready = landed[d]};
        ici_ok(&m, x, N);
        for (int d = 0; d < N; d++) landed[(d + 1) % N] = x[d].t_done;
    }
    for (int d = 0; d < N; d++) near(landed[d], (N - 1) * (LAT + S / BW), "(N - 1) (latency + S / bw)");
}

Test(mesh_ici, empty_and_local_copies)
{
    pl_mesh m = mesh("4x4");
    sim_ici_xfer x[2] = {{.from = 3, .to = 3, .bytes = S, .t_ready = 1e-3}, {.from = 0, .to = 5, .bytes = 0}};
    ici_ok(&m, x, 2);
    cr_assert(x[0].t_start == 1e-3 && x[0].t_done == 1e-3, "a copy to its own device crosses no link");
    near(x[1].t_done, 2 * LAT, "no bytes: done at the first byte");
    cr_assert_eq(sim_ici_time(&m, BW, LAT, NULL, 0), 0, "nothing to time");
}

Test(mesh_ici, bad_figures_are_refused)
{
    pl_mesh m = mesh("ring:4"), bad = m;
    bad.rank = 0;
    sim_ici_xfer ok = {.from = 0, .to = 1, .bytes = 8}, x;
    double bws[] = {0, -1, NAN, INFINITY}, lats[] = {-1e-6, NAN, INFINITY};
    for (int i = 0; i < 4; i++) cr_assert_eq(sim_ici_time(&m, bws[i], LAT, (x = ok, &x), 1), -2, "bw %g", bws[i]);
    for (int i = 0; i < 3; i++) cr_assert_eq(sim_ici_time(&m, BW, lats[i], (x = ok, &x), 1), -2, "lat %g", lats[i]);
    cr_assert_eq(sim_ici_time(&bad, BW, LAT, (x = ok, &x), 1), -2, "bad mesh");
    cr_assert_eq(sim_ici_time(NULL, BW, LAT, (x = ok, &x), 1), -2);
    x = ok, x.to = 4;
    cr_assert_eq(sim_ici_time(&m, BW, LAT, &x, 1), -2, "device out of range");
    x = ok, x.from = -1;
    cr_assert_eq(sim_ici_time(&m, BW, LAT, &x, 1), -2);
    x = ok, x.bytes = -1;
    cr_assert_eq(sim_ici_time(&m, BW, LAT, &x, 1), -2, "negative bytes");
    x = ok, x.t_ready = NAN;
    cr_assert_eq(sim_ici_time(&m, BW, LAT, &x, 1), -2, "t_ready NaN");
    x = ok, x.t_ready = -1;
    cr_assert_eq(sim_ici_time(&m, BW, LAT, &x, 1), -2, "t_ready negative");
    cr_assert_eq(sim_ici_time(&m, BW, LAT, NULL, 1), -2);
    cr_assert_eq(sim_ici_time(&m, BW, LAT, &x, -1), -2);
}

/* Many copies of awkward sizes at awkward times, some far out where a byte
 * is below the rounding of the clock: the model ends, and every copy keeps
 * to its floor (its latencies plus its bytes at the full link rate). */
Test(mesh_ici, always_terminates_and_keeps_each_copy_s_floor)
{
    pl_mesh m = mesh("4x4x4");
    enum { N = 3000 };
    sim_ici_xfer *x = calloc(N, sizeof *x);
    cr_assert(x);
    uint64_t s = 12345;
    for (int i = 0; i < N; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        x[i] = (sim_ici_xfer){.from = (int)(s >> 33) % 64, .to = (int)(s >> 45) % 64,
                              .bytes = (int64_t)(s >> 20) % 100000 + (i % 7 == 0),
                              .t_ready = i % 5 == 0 ? 1e9 + (double)(i % 3) * 1e-12 : (double)(s % 1000) * 1e-7};
    }
    cr_assert_eq(sim_ici_time(&m, BW, LAT, x, N), 0);
    for (int i = 0; i < N; i++) {
        int hops = pl_mesh_hops(&m, x[i].from, x[i].to);
        cr_assert(isfinite(x[i].t_done), "copy %d never ended", i);
        near(x[i].t_start, x[i].t_ready + hops * LAT, "first byte");
        double floor_s = x[i].t_start + (hops ? (double)x[i].bytes / BW : 0);
        cr_assert(x[i].t_done >= floor_s * (1 - 1e-12), "copy %d ended at %.17g before its floor %.17g", i,
                  x[i].t_done, floor_s);
    }
    free(x);
}

#define SLOW (TILESIM_ASAN || TILESIM_TSAN ? 10 : 1) /* sanitizers: the bound below, ten times over */

/* 20000 copies in flight at once on a 4x4x4 torus, each of its own size so
 * that each ends at an event of its own: an event must cost the copies on
 * the links it changes, not every copy in flight (that was 20000^2 work,
 * seconds), so that a mesh run of many copies stays quick. */
Test(mesh_ici, an_event_costs_only_the_copies_on_the_links_it_changes)
{
    pl_mesh m = mesh("4x4x4");
    enum { N = 20000 };
    sim_ici_xfer *x = calloc(N, sizeof *x);
    cr_assert(x);
    for (int i = 0; i < N; i++)
        x[i] = (sim_ici_xfer){.from = i % 64, .to = (i * 7 + 1) % 64, .bytes = 1000000 + 37 * (int64_t)i};
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    cr_assert_eq(sim_ici_time(&m, BW, LAT, x, N), 0);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double host = (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec);
    cr_assert(host < 1.0 * SLOW, "%d copies took %.2f s of host time", N, host);
    /* a link moves at most bw: the last copy over it ends no sooner than its bytes over bw */
    double *bytes = calloc(SIM_ICI_LINKS(64), sizeof *bytes), *last = calloc(SIM_ICI_LINKS(64), sizeof *last);
    cr_assert(bytes && last);
    for (int i = 0; i < N; i++) {
        int links[16], h = sim_mesh_route(&m, x[i].from, x[i].to, links, 16);
        for (int k = 0; k < h; k++) {
            bytes[links[k]] += (double)x[i].bytes;
            if (x[i].t_done > last[links[k]]) last[links[k]] = x[i].t_done;
        }
    }
    for (int l = 0; l < SIM_ICI_LINKS(64); l++)
        cr_assert(last[l] >= bytes[l] / BW * (1 - 1e-9), "link %d: %.6g bytes done by %.6g s", l, bytes[l], last[l]);
    free(bytes);
    free(last);
    free(x);
}

/* ---- the chips' per-hop latency ----------------------------------------------- */

Test(mesh_ici, every_preset_has_a_hop_latency)
{
    for (int i = 0; i < pl_chip_count(); i++) {
        const pl_chip *c = pl_chip_at(i);
        cr_assert(c->ici_latency_s > 0 && c->ici_latency_s < 1e-5, "%s: ici_latency_s %g", c->name,
                  c->ici_latency_s);
    }
}

Test(mesh_ici, chip_files_set_and_refuse_the_hop_latency)
{
    pl_chip c;
    char err[512];
    cr_assert_eq(pl_chip_parse("base = v5p\nici_latency_us = 2.5\n", "f", &c, err, sizeof err), PL_OK, "%s", err);
    near(c.ici_latency_s, 2.5e-6, "ici_latency_us = 2.5"); /* 2.5 * 1e-6 is not 2.5e-6 to the last bit */
    cr_assert_eq(pl_chip_parse("base = v5p\nici_latency_us = 0\n", "f", &c, err, sizeof err), PL_OK, "%s", err);
    const char *bad[] = {"-1", "nan", "inf", "-inf", "1e300", "soon", ""};
    for (int i = 0; i < 7; i++) {
        char text[96];
        snprintf(text, sizeof text, "base = v5e\n\nici_latency_us = %s\n", bad[i]);
        cr_assert_eq(pl_chip_parse(text, "my.chip", &c, err, sizeof err), PL_EINVAL, "'%s' accepted", bad[i]);
        cr_assert(strstr(err, "my.chip:3") && strstr(err, "ici_latency_us"), "%s", err);
    }
}

Test(mesh_ici, tilesim_chips_shows_the_hop_latency)
{
    th_run r = TH_RUN("chips");
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    cr_assert(strstr(r.out, "ICI hop latency, us"), "%s", r.out);
    th_run_free(&r);
    r = TH_RUN("chips", "--json");
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    json_t *doc = th_json_parse(r.out, "chips --json");
    json_t *chips = json_object_get(doc, "chips");
    for (size_t i = 0; i < json_array_size(chips); i++) {
        const pl_chip *c = pl_chip_at((int)i);
        cr_assert_eq(th_json_num(json_array_get(chips, i), "ici_latency_s"), c->ici_latency_s, "%s", c->name);
    }
    json_decref(doc);
    th_run_free(&r);
}
