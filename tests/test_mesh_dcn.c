/* tests/test_mesh_dcn.c: multislice meshes (rule M14). Slices of an ICI
 * torus joined by the data-center network: the mesh spec ('dcn:4 x
 * 16x16'), the routes (a copy between slices leaves by its chip's host
 * NICs and arrives by the other's), the DCN timing against closed forms
 * (latency, then bytes at a host's NIC bandwidth, shared by the copies of
 * that host's chips and by nothing else), and a ring all-reduce over two
 * slices that still sums, DCN-bound, with its traffic per pair of slices. */
#include <math.h>
#include <stdio.h>

#include "../sim/timing/ici.h"
#include "../sim/timing/timing.h"
#include "../sim/tilesim_mesh.h"
#include "helpers.h"
#include "run.h"

static pl_mesh mesh(const char *text)
{
    pl_mesh m;
    char msg[256];
    cr_assert_eq(pl_mesh_parse(text, &m, msg, sizeof msg), PL_OK, "%s: %s", text, msg);
    return m;
}

static void refused(const char *text, const char *says)
{
    pl_mesh m;
    char msg[256] = "";
    cr_assert_eq(pl_mesh_parse(text, &m, msg, sizeof msg), PL_EINVAL, "'%s' was accepted", text);
    cr_expect(strstr(msg, says), "'%s': the message '%s' does not say '%s'", text, msg, says);
}

Test(mesh_dcn, a_multislice_spec_puts_the_dcn_axis_first)
{
    pl_mesh m = mesh("dcn:4 x 16x16");
    char buf[128];
    cr_assert_eq(m.rank, 3);
    cr_expect_eq(m.dcn, 1);
    cr_expect_eq(m.shape[0], 4);
    cr_expect_eq(m.shape[1], 16);
    cr_expect_eq(m.shape[2], 16);
    cr_expect_str_eq(m.axis[0], "dcn");
    cr_expect_str_eq(m.axis[1], "x");
    cr_expect_str_eq(m.axis[2], "y");
    cr_expect_eq(m.wrap[0], 0);
    cr_expect_eq(m.wrap[1], 1);
    cr_expect_eq(pl_mesh_devices(&m), 1024);
    cr_expect_eq(pl_mesh_slices(&m), 4);
    cr_expect_eq(pl_mesh_slice_of(&m, 255), 0);
    cr_expect_eq(pl_mesh_slice_of(&m, 256), 1);
    cr_expect_eq(pl_mesh_slice_of(&m, 1023), 3);
    cr_expect_eq(pl_mesh_slice_of(&m, 1024), -1);
    cr_expect_str_eq(pl_mesh_format(&m, buf, sizeof buf), "4 slices over DCN (dcn) x 16x16 torus (x, y)");
    pl_mesh n = mesh("dcn:data=2 x ring:8");
    cr_expect_str_eq(n.axis[0], "data");
    cr_expect_eq(pl_mesh_axis(&n, "data"), 0);
    cr_expect_eq(pl_mesh_devices(&n), 16);
    pl_mesh v = mesh("dcn:2 x 4x4x4"); /* a v5p slice is a 3-D torus: four axes in all */
    cr_expect_eq(v.rank, 4);
    pl_mesh one = mesh("8");
    cr_expect_eq(pl_mesh_slices(&one), 1);
}

Test(mesh_dcn, bad_multislice_specs_say_what_is_wrong)
{
    refused("dcn:2", "dcn:SLICES x SLICE");
    refused("dcn:2 x", "no slice after 'x'");
    refused("dcn:2 x dcn:2 x 4", "one DCN axis");
    refused("dcn:17 x 2", "at most 16");
    refused("dcn:0 x 4", "axis dcn has 0 devices");
    refused("dcn:4097 x 1", "axis dcn has 4097 devices"); /* the DCN axis by its name, not the slice's 'x' */
    refused("dcn:2 x 4x4x4x4", "at most 3 axes");
    refused("dcn:16 x 16x32", "at most 4096 devices");
    refused("dcn:x=2 x 4", "given twice");
    refused("4x4x4x4", "at most 3 axes");
    pl_mesh m = mesh("dcn:2 x 4");
    char msg[256];
    m.wrap[0] = 1; /* built by hand: a DCN axis has no ring of links */
    cr_expect_eq(pl_mesh_check(&m, msg, sizeof msg), PL_EINVAL);
    cr_expect(strstr(msg, "M14"), "%s", msg);
}

Test(mesh_dcn, a_copy_between_slices_crosses_two_dcn_ports_and_no_ici_link)
{
    pl_mesh m = mesh("dcn:2 x ring:8");
    int links[8];
    cr_expect_eq(sim_mesh_route(&m, 0, 1, links, 8), 1); /* in the slice: one ICI hop */
    cr_expect(!SIM_IS_DCN_LINK(16, links[0]));
    cr_assert_eq(sim_mesh_route(&m, 7, 8, links, 8), 2); /* 7 and 8 are neighbours by number, in two slices */
    cr_expect_eq(links[0], SIM_DCN_LINK(16, 7, 0));
    cr_expect_eq(links[1], SIM_DCN_LINK(16, 8, 1));
    cr_expect_eq(pl_mesh_hops(&m, 3, 12), 2);
    cr_expect_lt(links[1], SIM_ICI_LINKS(16));
    /* a host serves 4 devices: devices 0-3 share slice 0's first host NIC, 8-11 slice 1's first */
    cr_expect_eq(sim_links_host_port(&m, 4, SIM_DCN_LINK(16, 3, 0)), SIM_DCN_LINK(16, 0, 0));
    cr_expect_eq(sim_links_host_port(&m, 4, SIM_DCN_LINK(16, 5, 1)), SIM_DCN_LINK(16, 1, 1));
    cr_expect_eq(sim_links_host_port(&m, 4, SIM_DCN_LINK(16, 9, 1)), SIM_DCN_LINK(16, 2, 1));
    cr_expect_eq(sim_links_host_port(&m, 4, SIM_ICI_LINK(3, 1, 1)), SIM_ICI_LINK(3, 1, 1)); /* ICI: as it is */
}

/* ---- the DCN timing against closed forms ---- */

#define ICI_BW 45e9
#define DMA_LAT 0.2e-6
#define HOP 1e-6
#define DCN_BW 25e9
#define DCN_LAT 10e-6
#define B (1 << 20)

/* Time copies (device from[i] to x[i].to, issued at 0) on mesh m's links. */
static void time_copies(const pl_mesh *m, int dph, const int *from, sim_xfer *x, int n)
{
    sim_link_figures fig = {.bw = ICI_BW, .latency = DMA_LAT, .hop_latency = HOP, .dcn_bw = DCN_BW,
                            .dcn_latency = DCN_LAT, .devices_per_host = dph};
    sim_links *l = sim_links_new(m, &fig, NULL);
    cr_assert(l);
    for (int i = 0; i < n; i++) cr_assert_eq(sim_links_issue(l, from[i], &x[i], 0), 0);
    double now = 0;
    for (int guard = 0; guard < 100; guard++) {
        double t = sim_links_next(l, now);
        if (isinf(t)) break;
        cr_assert_eq(sim_links_advance(l, now, t), 0);
        now = t;
    }
    for (int i = 0; i < n; i++) cr_assert(x[i].done, "copy %d never ended", i);
    sim_links_free(l);
}

static void near(double got, double want, const char *what)
{
    cr_assert(fabs(got - want) <= 1e-6 * want, "%s: got %.9g us, want %.9g us", what, got * 1e6, want * 1e6);
}

Test(mesh_dcn, one_copy_between_slices_is_dcn_latency_plus_bytes_at_a_host_nic)
{
    pl_mesh m = mesh("dcn:2 x ring:8");
    int from[] = {0, 0};
    sim_xfer x[] = {{.to = 8, .bytes = B}, {.to = 1, .bytes = B}};
    time_copies(&m, 8, from, x, 2);
    near(x[0].t_done, DMA_LAT + DCN_LAT + B / DCN_BW, "over DCN");
    near(x[1].t_done, DMA_LAT + HOP + B / ICI_BW, "over one ICI link, beside it");
}

Test(mesh_dcn, the_chips_of_one_host_share_its_nic)
{
    pl_mesh m = mesh("dcn:2 x ring:8");
    int from[] = {0, 1};
    sim_xfer x[] = {{.to = 8, .bytes = B}, {.to = 9, .bytes = B}};
    time_copies(&m, 8, from, x, 2); /* one host per slice: both leave by one NIC and arrive by one */
    near(x[0].t_done, DMA_LAT + DCN_LAT + 2.0 * B / DCN_BW, "first");
    near(x[1].t_done, DMA_LAT + DCN_LAT + 2.0 * B / DCN_BW, "second");
}

Test(mesh_dcn, chips_of_different_hosts_do_not_share)
{
    pl_mesh m = mesh("dcn:2 x ring:8");
    int from[] = {0, 4};
    sim_xfer x[] = {{.to = 8, .bytes = B}, {.to = 12, .bytes = B}};
    time_copies(&m, 4, from, x, 2); /* 4 chips a host: 0 and 4 leave by two hosts, 8 and 12 arrive at two */
    near(x[0].t_done, DMA_LAT + DCN_LAT + B / DCN_BW, "first");
    near(x[1].t_done, DMA_LAT + DCN_LAT + B / DCN_BW, "second");
}

Test(mesh_dcn, copies_into_one_host_share_its_incoming_side)
{
    pl_mesh m = mesh("dcn:3 x ring:4");
    int from[] = {0, 4};
    sim_xfer x[] = {{.to = 8, .bytes = B}, {.to = 9, .bytes = B}}; /* from slices 0 and 1 into slice 2's host */
    time_copies(&m, 4, from, x, 2);
    near(x[0].t_done, DMA_LAT + DCN_LAT + 2.0 * B / DCN_BW, "first");
    near(x[1].t_done, DMA_LAT + DCN_LAT + 2.0 * B / DCN_BW, "second");
}

/* ---- a whole program ---- */

/* the tilesim command of this test binary's build (th_tilesim_path) */
static th_run tilesim(const char *const *args)
{
    char exe[PATH_MAX];
    return th_run_argv(th_tilesim_path(exe, sizeof exe), args);
}

Test(mesh_dcn, a_ring_all_reduce_over_two_slices_sums_and_is_dcn_bound, .timeout = 120)
{
    const char *args[] = {"run", "ring_allreduce", "--mesh", "dcn:2 x ring:4", "--rows", "64", "--cols", "128",
                          NULL};
    th_run r = tilesim(args);
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "2 slices over DCN (dcn) x ring of 4 (x)"), "%s", r.out);
    cr_expect(strstr(r.out, "PASS"), "%s", r.out);
    cr_expect(strstr(r.out, "copies between 2 slices"), "%s", r.out); /* 3 <-> 4 and 7 <-> 0 */
    th_run_free(&r);
    const char *cost[] = {"run", "ring_allreduce", "--mesh", "dcn:2 x ring:8", "--rows", "2048", "--cost-only", NULL};
    r = tilesim(cost);
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "DCN-bound"), "%s", r.out);
    th_run_free(&r);
    const char *both[] = {"run", "ring_allreduce", "--mesh", "ring:8", "--devices", "4", NULL};
    r = tilesim(both);
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "disagree"), "%s", r.err);
    th_run_free(&r);
}

/* ---- the hierarchical all-reduce (examples/kernels/hier_allreduce.c) ---- */


Test(mesh_dcn, the_hierarchical_all_reduce_sums_on_every_mesh_shape, .timeout = 120)
{
    static const char *const meshes[][2] = {{"dcn:2 x ring:4", "64"}, {"dcn:3 x 2", "48"}, {"dcn:4 x 1", "32"},
                                            {"dcn:1 x 4", "32"}, {"dcn:2 x 2x2x2", "128"}};
    for (size_t i = 0; i < sizeof meshes / sizeof *meshes; i++) {
        const char *args[] = {"run", "hier_allreduce", "--mesh", meshes[i][0], "--rows", meshes[i][1], "--cols", "128",
                              "--seed", "5", NULL};
        th_run r = tilesim(args);
        cr_expect_eq(r.status, 0, "%s: %s%s", meshes[i][0], r.out, r.err);
        cr_expect(strstr(r.out, "PASS: every device holds the sum"), "%s: %s", meshes[i][0], r.out);
        th_run_free(&r);
    }
}

/* Two slices of 16 v5e chips, two hosts each: every device sends 2 (S-1)/S
 * of its chunk over DCN, 8 devices to a host NIC; the flat ring pays the
 * DCN latency at every one of its 62 steps. */
Test(mesh_dcn, the_hierarchical_all_reduce_beats_the_flat_ring_and_meets_its_closed_form, .timeout = 120)
{
    const char *args[] = {"run", "hier_allreduce", "--cost-only", NULL};
    th_run r = tilesim(args);
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    double nic = 0, closed = 0, ratio = 0;
    const char *h = strstr(r.out, "hierarchical:"), *f = strstr(r.out, "flat ring takes"), *c = strstr(r.out, "= ");
    cr_assert(h && f && c, "%s", r.out);
    cr_assert_eq(sscanf(strstr(h, "busiest host NIC"), "busiest host NIC %lf", &nic), 1, "%s", r.out);
    cr_assert_eq(sscanf(f, "flat ring takes %lfx", &ratio), 1, "%s", r.out);
    cr_assert_eq(sscanf(strstr(r.out, "closed form of the busiest NIC"), "closed form of the busiest NIC: %*d "
                        "devices x 2 (S-1)/S x %*f bytes / %*f GB/s = %lf", &closed), 1, "%s", r.out);
    cr_expect(fabs(nic - closed) <= 0.01 * closed, "busiest NIC %.2f us, closed form %.2f us", nic, closed);
    cr_expect_gt(ratio, 1.5, "the flat ring takes only %.2fx", ratio);
    cr_expect(strstr(r.out, "slice 0 -> slice 1: 4194304 bytes"), "%s", r.out); /* 16 x 2 (1/2) x 256 KiB */
    th_run_free(&r);
}

Test(mesh_dcn, the_megascale_view_in_json_profile_and_trace, .timeout = 120)
{
    const char *json[] = {"run", "hier_allreduce", "--set", "per_slice=2", "--set", "rows=64", "--set", "cols=128",
                          "--json", NULL};
    th_run r = tilesim(json);
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    json_error_t e;
    json_t *root = json_loads(r.out, 0, &e);
    cr_assert(root, "not JSON (%s): %s", e.text, r.out);
    json_t *mesh = json_object_get(root, "mesh"), *dcn = json_object_get(mesh, "dcn");
    cr_expect_eq(json_integer_value(json_object_get(mesh, "slices")), 2);
    cr_assert(dcn, "%s", r.out);
    json_t *pairs = json_object_get(dcn, "pairs");
    cr_expect_eq(json_array_size(pairs), 2); /* 0 -> 1 and 1 -> 0 */
    cr_expect_gt(json_number_value(json_object_get(dcn, "busiest_nic_s")), 0);
    json_decref(root);
    th_run_free(&r);
    const char *prof[] = {"profile", "hier_allreduce", "--set", "per_slice=2", "--set", "rows=64", "--set", "cols=128",
                          NULL};
    r = tilesim(prof);
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "pltpu_remote_copy_start (DCN)"), "%s", r.out);
    th_run_free(&r);
    char trace[64];
    th_temp_file(trace, NULL);
    const char *tr[] = {"run", "hier_allreduce", "--mesh", "dcn:2 x ring:2", "--rows", "32", "--cols", "128", "--trace",
                        trace, NULL};
    r = tilesim(tr);
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    char *text = th_read_file(trace);
    cr_expect(text && strstr(text, "\"slice 0 DCN out\"") && strstr(text, "\"slice 1 DCN in\""), "no DCN tracks");
    free(text);
    unlink(trace);
    th_run_free(&r);
}

/* --devices alone names no slices: refused, not ignored for the default mesh */
Test(mesh_dcn, the_hierarchical_all_reduce_refuses_devices_without_a_mesh)
{
    const char *args[] = {"run", "hier_allreduce", "--devices", "8", NULL};
    th_run r = tilesim(args);
    cr_expect_eq(r.status, 2, "%s%s", r.out, r.err);
    cr_expect(strstr(r.err, "--mesh 'dcn:2 x ring:4'"), "%s", r.err);
    th_run_free(&r);
}
