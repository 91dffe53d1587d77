/* tests/test_mesh_geometry.c: meshes of devices (rules M11, M12): parsing a
 * mesh and its errors, device numbers and coordinates, hop counts, and the
 * links a copy's route crosses (sim/timing/mesh.c). The ICI link model is in
 * test_mesh_ici.c. */
#include <stdio.h>

#include "../sim/timing/ici.h"
#include "../sim/tilesim_mesh.h"
#include "helpers.h"

static pl_mesh parse_ok(const char *text)
{
    pl_mesh m;
    char msg[256] = "";
    cr_assert_eq(pl_mesh_parse(text, &m, msg, sizeof msg), PL_OK, "'%s': %s", text, msg);
    cr_assert_eq(pl_mesh_check(&m, msg, sizeof msg), PL_OK, "'%s' parses to a mesh that fails its check: %s", text,
                 msg);
    return m;
}

/* The message of a mesh that must not parse; it must quote the text and
 * contain `says`. */
static void parse_bad(const char *text, const char *says)
{
    pl_mesh m;
    memset(&m, 0x5a, sizeof m);
    pl_mesh before = m;
    char msg[256] = "";
    cr_assert_eq(pl_mesh_parse(text, &m, msg, sizeof msg), PL_EINVAL, "'%s' parsed", text);
    char quoted[128];
    snprintf(quoted, sizeof quoted, "'%s'", text);
    cr_assert(strstr(msg, quoted), "'%s': the message does not quote the text: %s", text, msg);
    cr_assert(strstr(msg, says), "'%s': the message does not say '%s': %s", text, says, msg);
    cr_assert(memcmp(&m, &before, sizeof m) == 0, "'%s': a failed parse wrote the mesh", text);
}

static void expect_shape(const pl_mesh *m, int rank, const int64_t *shape, const char *const *names, int wrap)
{
    cr_assert_eq(m->rank, rank);
    for (int a = 0; a < rank; a++) {
        cr_assert_eq(m->shape[a], shape[a], "axis %d", a);
        cr_assert_str_eq(m->axis[a], names[a]);
        cr_assert_eq(m->wrap[a], wrap, "axis %d wrap", a);
    }
}

Test(mesh_geometry, parses_every_form)
{
    const char *xyz[] = {"x", "y", "z"};
    pl_mesh m = parse_ok("8");
    expect_shape(&m, 1, (int64_t[]){8}, xyz, 1);
    m = parse_ok("ring:8");
    expect_shape(&m, 1, (int64_t[]){8}, xyz, 1);
    m = parse_ok("line:8");
    expect_shape(&m, 1, (int64_t[]){8}, xyz, 0);
    m = parse_ok("4x4");
    expect_shape(&m, 2, (int64_t[]){4, 4}, xyz, 1);
    m = parse_ok("4x4x4");
    expect_shape(&m, 3, (int64_t[]){4, 4, 4}, xyz, 1);
    cr_assert_eq(pl_mesh_devices(&m), 64);
    m = parse_ok("x=4,y=4");
    expect_shape(&m, 2, (int64_t[]){4, 4}, xyz, 1);
    m = parse_ok("ring:x=8");
    expect_shape(&m, 1, (int64_t[]){8}, xyz, 1);
    m = parse_ok("data=2,model=4");
    expect_shape(&m, 2, (int64_t[]){2, 4}, (const char *[]){"data", "model"}, 1);
    cr_assert_eq(pl_mesh_axis(&m, "model"), 1);
    cr_assert_eq(pl_mesh_axis(&m, "data"), 0);
    cr_assert_eq(pl_mesh_axis(&m, "x"), -1);
    cr_assert_eq(pl_mesh_axis(&m, NULL), -1);
    m = parse_ok("mesh:2x3x5");
    expect_shape(&m, 3, (int64_t[]){2, 3, 5}, xyz, 0);
    m = parse_ok("torus:4x8");
    expect_shape(&m, 2, (int64_t[]){4, 8}, xyz, 1);
    m = parse_ok("1");
    cr_assert_eq(pl_mesh_devices(&m), 1);
    m = parse_ok("64x64");
    cr_assert_eq(pl_mesh_devices(&m), PL_MESH_MAX_DEVICES, "the largest mesh");
}

/* issue 21: "x4" said "'' is not an axis size"; an empty size says where it is missing */
Test(mesh_geometry, a_missing_axis_size_says_where)
{
    parse_bad("x4", "mesh 'x4': an axis size is missing before 'x'");
    parse_bad("4x", "mesh '4x': an axis size is missing after the last 'x'");
    parse_bad("4xx4", "mesh '4xx4': an axis size is missing between two 'x'");
    parse_bad("torus:x4", "an axis size is missing before 'x'");
    parse_bad("ring:", "mesh 'ring:': no axes after 'ring:'");
    parse_bad("x=4,", "an axis is missing");
}

Test(mesh_geometry, parse_errors_quote_the_text_and_say_what_is_wrong)
{
    parse_bad("", "empty");
    parse_bad("ring:", "no axes");
    parse_bad("tube:8", "unknown kind 'tube'");
    parse_bad("0", "axis x has 0 devices");
    parse_bad("4x0", "axis y has 0 devices");
    parse_bad("4xa", "'a' is not an axis size");
    parse_bad("8.5", "not an axis size");
    parse_bad("-8", "not an axis size");
    parse_bad("2x2x2x2", "at most 3 axes");
    parse_bad("128x64", "8192 devices");
    parse_bad("99999999999999999999", "at most 4096 devices");
    parse_bad("65536x65536x65536", "at most 4096 devices");
    parse_bad("x=4,x=2", "axis name 'x' is given twice");
    parse_bad("x=4,4", "name=size");
    parse_bad("1x=4", "not an axis name");
    parse_bad("=4", "not an axis name");
    parse_bad("abcdefghijklmnopq=4", "at most 15 characters");
    parse_bad("x=", "axis x has no size after '='");
    parse_bad("ring:4x4", "a ring has one axis");
    parse_bad("line:2x2", "a line has one axis");
    parse_bad("8 8", "not an axis size");
    parse_bad("x=4,,y=4", "an axis is missing (an empty item between commas)");
    pl_mesh m;
    char msg[128] = "";
    cr_assert_eq(pl_mesh_parse(NULL, &m, msg, sizeof msg), PL_EINVAL);
    cr_assert(strstr(msg, "no mesh"), "%s", msg);
    cr_assert_eq(pl_mesh_parse("8", NULL, msg, sizeof msg), PL_EINVAL);
    cr_assert_eq(pl_mesh_parse("0", &m, NULL, 0), PL_EINVAL, "no message buffer is fine");
    /* control characters are escaped, never printed */
    cr_assert_eq(pl_mesh_parse("8\x1b[2J", &m, msg, sizeof msg), PL_EINVAL);
    cr_assert(!strchr(msg, '\x1b') && strstr(msg, "\\x1b"), "%s", msg);
}

Test(mesh_geometry, check_refuses_meshes_built_wrong)
{
    pl_mesh good = parse_ok("4x4"), m;
    char msg[256];
    m = good, m.rank = 0;
    cr_assert_eq(pl_mesh_check(&m, msg, sizeof msg), PL_EINVAL);
    cr_assert(strstr(msg, "rank 0"), "%s", msg);
    m = good, m.rank = 4;
    cr_assert_eq(pl_mesh_check(&m, msg, sizeof msg), PL_EINVAL);
    m = good, m.shape[1] = 0;
    cr_assert_eq(pl_mesh_check(&m, msg, sizeof msg), PL_EINVAL);
    cr_assert(strstr(msg, "axis y has 0 devices"), "%s", msg);
    m = good, m.shape[0] = INT64_MAX, m.shape[1] = INT64_MAX;
    cr_assert_eq(pl_mesh_check(&m, msg, sizeof msg), PL_EINVAL, "no overflow");
    cr_assert(strstr(msg, "at most 4096 devices"), "%s", msg);
    m = good, snprintf(m.axis[1], sizeof m.axis[1], "x");
    cr_assert_eq(pl_mesh_check(&m, msg, sizeof msg), PL_EINVAL);
    cr_assert(strstr(msg, "'x' is given twice"), "%s", msg);
    m = good, memset(m.axis[0], 'a', sizeof m.axis[0]);
    cr_assert_eq(pl_mesh_check(&m, msg, sizeof msg), PL_EINVAL, "an unterminated name");
    m = good, m.wrap[0] = 2;
    cr_assert_eq(pl_mesh_check(&m, msg, sizeof msg), PL_EINVAL);
    cr_assert_eq(pl_mesh_check(NULL, msg, sizeof msg), PL_EINVAL);
    cr_assert_eq(pl_mesh_devices(NULL), 0);
    m = good, m.rank = 0;
    cr_assert_eq(pl_mesh_devices(&m), 0, "a bad mesh has no devices");
    cr_assert_eq(pl_mesh_hops(&m, 0, 1), -1);
}

Test(mesh_geometry, format_names_kind_shape_and_axes)
{
    char buf[64];
    pl_mesh m = parse_ok("ring:8");
    cr_assert_str_eq(pl_mesh_format(&m, buf, sizeof buf), "ring of 8 (x)");
    m = parse_ok("line:8");
    cr_assert_str_eq(pl_mesh_format(&m, buf, sizeof buf), "line of 8 (x)");
    m = parse_ok("4x4");
    cr_assert_str_eq(pl_mesh_format(&m, buf, sizeof buf), "4x4 torus (x, y)");
    m = parse_ok("mesh:data=2,model=4");
    cr_assert_str_eq(pl_mesh_format(&m, buf, sizeof buf), "2x4 mesh (data, model)");
    m.wrap[1] = 1;
    cr_assert_str_eq(pl_mesh_format(&m, buf, sizeof buf), "2x4 mesh (data, model wraps)");
    char small[6];
    cr_assert_str_eq(pl_mesh_format(&m, small, sizeof small), "2x4 m", "truncated, terminated");
    m.rank = 0;
    cr_assert(strstr(pl_mesh_format(&m, buf, sizeof buf), "invalid"), "%s", buf);
}

/* Every device's coordinates map back to it, row-major, last axis fastest. */
Test(mesh_geometry, coords_round_trip_on_every_device)
{
    const char *meshes[] = {"8", "4x4", "4x4x4", "mesh:2x3x5"};
    for (int i = 0; i < 4; i++) {
        pl_mesh m = parse_ok(meshes[i]);
        int n = pl_mesh_devices(&m);
        for (int d = 0; d < n; d++) {
            int64_t c[PL_MESH_MAX_AXES] = {-1, -1, -1}, flat = 0;
            pl_mesh_coords(&m, d, c);
            for (int a = 0; a < m.rank; a++) {
                cr_assert(c[a] >= 0 && c[a] < m.shape[a], "%s device %d axis %d: %lld", meshes[i], d, a,
                          (long long)c[a]);
                flat = flat * m.shape[a] + c[a];
            }
            cr_assert_eq(flat, d, "%s: device %d is not row-major", meshes[i], d);
            cr_assert_eq(pl_mesh_device(&m, c), d, "%s device %d", meshes[i], d);
        }
    }
    pl_mesh m = parse_ok("mesh:2x3x5");
    int64_t c[3];
    pl_mesh_coords(&m, 29, c);
    cr_assert(c[0] == 1 && c[1] == 2 && c[2] == 4);
    pl_mesh_coords(&m, 30, c);
    cr_assert(c[0] == -1 && c[1] == -1 && c[2] == -1, "out of range: -1");
    cr_assert_eq(pl_mesh_device(&m, (int64_t[]){2, 0, 0}), -1);
    cr_assert_eq(pl_mesh_device(&m, (int64_t[]){0, -1, 0}), -1);
    cr_assert_eq(pl_mesh_device(&m, NULL), -1);
    /* a bad mesh of rank 1: -1 on its one axis, nothing past it */
    pl_mesh one = parse_ok("ring:4");
    one.shape[0] = 0;
    int64_t room[3] = {7, 7, 7};
    pl_mesh_coords(&one, 0, room);
    cr_assert(room[0] == -1 && room[1] == 7 && room[2] == 7, "wrote past the mesh's rank");
    pl_mesh_coords(NULL, 0, room);
    pl_mesh_coords(&one, 0, NULL);
}

Test(mesh_geometry, hops_take_the_shorter_way_round)
{
    pl_mesh r = parse_ok("ring:8");
    cr_assert_eq(pl_mesh_hops(&r, 0, 0), 0);
    cr_assert_eq(pl_mesh_hops(&r, 3, 4), 1, "right neighbour");
    cr_assert_eq(pl_mesh_hops(&r, 3, 2), 1, "left neighbour");
    cr_assert_eq(pl_mesh_hops(&r, 7, 0), 1, "the wrap-around link");
    cr_assert_eq(pl_mesh_hops(&r, 0, 4), 4, "the opposite device of a ring of 8");
    cr_assert_eq(pl_mesh_hops(&r, 1, 6), 3);
    pl_mesh l = parse_ok("line:8");
    cr_assert_eq(pl_mesh_hops(&l, 7, 0), 7, "no wrap: the straight way");
    cr_assert_eq(pl_mesh_hops(&l, 2, 5), 3);
    pl_mesh t = parse_ok("4x4");
    cr_assert_eq(pl_mesh_hops(&t, 0, 15), 2, "corner to corner of a 4x4 torus: one wrap link per axis");
    cr_assert_eq(pl_mesh_hops(&t, 0, 10), 4, "(0,0) to (2,2): two each way");
    cr_assert_eq(pl_mesh_hops(&t, 5, 6), 1);
    pl_mesh c = parse_ok("4x4x4");
    cr_assert_eq(pl_mesh_hops(&c, 0, 63), 3);
    cr_assert_eq(pl_mesh_hops(&c, 0, 42), 6, "(0,0,0) to (2,2,2): the diameter");
    pl_mesh g = parse_ok("mesh:2x3x5");
    cr_assert_eq(pl_mesh_hops(&g, 0, 29), 1 + 2 + 4);
    cr_assert_eq(pl_mesh_hops(&r, -1, 0), -1);
    cr_assert_eq(pl_mesh_hops(&r, 0, 8), -1);
}

/* Route of from -> to equals want[0..n). */
static void expect_route(const pl_mesh *m, int from, int to, const int *want, int n)
{
    int got[64];
    cr_assert_eq(sim_mesh_route(m, from, to, got, 64), n, "%d -> %d: hops", from, to);
    cr_assert_eq(pl_mesh_hops(m, from, to), n);
    for (int i = 0; i < n; i++) cr_assert_eq(got[i], want[i], "%d -> %d: link %d is %d, want %d", from, to, i,
                                             got[i], want[i]);
}

#define L(d, a, pos) SIM_ICI_LINK(d, a, pos)

Test(mesh_geometry, routes_cross_the_links_in_dimension_order)
{
    cr_assert_eq(L(1, 0, 1), 8, "link numbers: device * 2 * 4 + axis * 2 + (positive ? 0 : 1)");
    cr_assert_eq(L(2, 1, 0), 2 * 8 + 2 + 1);
    pl_mesh r = parse_ok("ring:8");
    expect_route(&r, 3, 4, (int[]){L(3, 0, 1)}, 1);
    expect_route(&r, 3, 2, (int[]){L(3, 0, 0)}, 1);
    expect_route(&r, 7, 0, (int[]){L(7, 0, 1)}, 1);
    expect_route(&r, 6, 1, (int[]){L(6, 0, 1), L(7, 0, 1), L(0, 0, 1)}, 3);
    expect_route(&r, 0, 4, (int[]){L(0, 0, 1), L(1, 0, 1), L(2, 0, 1), L(3, 0, 1)}, 4); /* tie: positive */
    expect_route(&r, 2, 0, (int[]){L(2, 0, 0), L(1, 0, 0)}, 2);
    expect_route(&r, 5, 5, NULL, 0);
    pl_mesh two = parse_ok("ring:2");
    expect_route(&two, 1, 0, (int[]){L(1, 0, 1)}, 1); /* a ring of 2: the tie goes the positive way too */
    pl_mesh l = parse_ok("line:4");
    expect_route(&l, 3, 0, (int[]){L(3, 0, 0), L(2, 0, 0), L(1, 0, 0)}, 3);
    /* 4x4: (3,1) -> (0,3): axis 0 first, +1 over the wrap, then axis 1 +2 */
    pl_mesh t = parse_ok("4x4");
    expect_route(&t, 13, 3, (int[]){L(13, 0, 1), L(1, 1, 1), L(2, 1, 1)}, 3);
    /* (0,0) -> (3,3): both axes the short way, backwards over the wrap */
    expect_route(&t, 0, 15, (int[]){L(0, 0, 0), L(12, 1, 0)}, 2);
    pl_mesh g = parse_ok("mesh:2x3x5");
    expect_route(&g, 0, 16, (int[]){L(0, 0, 1), L(15, 2, 1)}, 2); /* (0,0,0) -> (1,0,1) */
    /* a short buffer: the count, the first links only */
    int few[2] = {-7, -7}, three = sim_mesh_route(&r, 6, 1, few, 1);
    cr_assert_eq(three, 3);
    cr_assert(few[0] == L(6, 0, 1) && few[1] == -7, "wrote past max");
    cr_assert_eq(sim_mesh_route(&r, 6, 1, NULL, 0), 3);
    cr_assert_eq(sim_mesh_route(&r, 0, 9, few, 2), -1);
    cr_assert_eq(sim_mesh_route(NULL, 0, 1, few, 2), -1);
}

/* A route only crosses links that exist, and ends where it should. */
Test(mesh_geometry, every_route_of_a_small_torus_is_connected)
{
    const char *meshes[] = {"4x4x4", "mesh:2x3x5", "ring:5"};
    for (int k = 0; k < 3; k++) {
        pl_mesh m = parse_ok(meshes[k]);
        int n = pl_mesh_devices(&m);
        for (int a = 0; a < n; a++)
            for (int b = 0; b < n; b++) {
                int links[64], h = sim_mesh_route(&m, a, b, links, 64), at = a;
                cr_assert(h >= 0 && h <= 64);
                for (int i = 0; i < h; i++) {
                    int dev = links[i] / (2 * PL_MESH_MAX_AXES), ax = links[i] % (2 * PL_MESH_MAX_AXES) / 2;
                    int pos = links[i] % 2 == 0;
                    cr_assert_eq(dev, at, "%s %d -> %d: link %d leaves %d, not %d", meshes[k], a, b, i, dev, at);
                    int64_t c[PL_MESH_MAX_AXES];
                    pl_mesh_coords(&m, at, c);
                    c[ax] += pos ? 1 : -1;
                    if (m.wrap[ax]) c[ax] = (c[ax] + m.shape[ax]) % m.shape[ax];
                    at = pl_mesh_device(&m, c);
                    cr_assert(at >= 0, "%s %d -> %d: link %d leaves the mesh", meshes[k], a, b, i);
                }
                cr_assert_eq(at, b, "%s %d -> %d ends at %d", meshes[k], a, b, at);
            }
    }
}
