/* Device ids as JAX's DeviceIdType.MESH gives them (rules M11, M12):
 * pltpu_device_at takes a tuple of mesh coordinates, pltpu_device_along
 * this device's with one axis set (a partial dict, device_id={'x': i}).
 * JAX's tpu_pallas_distributed_test.py test_pallas_call_axis_index_2d_mesh:
 * on a (y=2, x=4) mesh every device copies x to its neighbour along x in
 * its own row, device_id=(y, neighbour). */
#include <criterion/criterion.h>

#include "test_mesh_helpers.h"

static int g_left, g_form;

static void permute_2d(pl_ctx *c, pl_ref *refs)
{
    int64_t y = pltpu_axis_index(c, "y"), x = pltpu_axis_index(c, "x"), nx = pltpu_axis_size(c, "x");
    int64_t nb = g_left ? (x + nx - 1) % nx : (x + 1) % nx;
    int to = g_form ? pltpu_device_along(c, "x", nb) : pltpu_device_at(c, (int64_t[]){y, nb});
    pltpu_remote_copy cp = pltpu_make_async_remote_copy(c, refs[0], refs[1], pl_at(c, refs[2], 0),
                                                        pl_at(c, refs[2], 1), to);
    pltpu_remote_copy_start(c, &cp);
    pltpu_remote_copy_wait(c, &cp);
}

Test(mesh_device_ids, jax_axis_index_2d_mesh_permutes_along_x_in_each_row)
{
    for (g_form = 0; g_form < 2; g_form++)
        for (g_left = 0; g_left < 2; g_left++) {
            mh_run r;
            mh_alloc(&r, "y=2,x=4", 8, 128, 8, 128);
            pl_call call = {.name = "permute_2d", .kernel = permute_2d, .n_in = 1, .n_out = 1, .n_scratch = 1,
                            .scratch = {PLTPU_SEMAPHORE_DMA(2)}};
            call.in[0].space = call.out[0].space = PL_ANY;
            mh_call(&r, &call, NULL);
            cr_assert_eq(r.rc, PL_OK, "%s", r.mr.error);
            for (int d = 0; d < 8; d++) {
                int y = d / 4, x = d % 4, from = y * 4 + (g_left ? (x + 1) % 4 : (x + 3) % 4);
                for (int i = 0; i < 1024; i++)
                    cr_assert_eq(r.o[d * 1024 + i], r.x[from * 1024 + i], "device %d holds device %d's x", d, from);
            }
            mh_free(&r);
        }
}

static int g_bad;

static void bad_ids(pl_ctx *c, pl_ref *refs)
{
    (void)refs;
    if (g_bad == 0) pltpu_device_along(c, "z", 0);
    if (g_bad == 1) pltpu_device_along(c, "x", 4);
    if (g_bad == 2) pltpu_device_at(c, (int64_t[]){2, 0});
}

Test(mesh_device_ids, an_unknown_axis_or_a_coordinate_off_the_mesh_is_EINVAL)
{
    static const char *const says[3][2] = {{"pltpu_device_along(\"z\")", "no axis of that name"},
                                           {"index 4 is off the mesh's axis \"x\" of 4 devices", "M11"},
                                           {"pltpu_device_at((2, 0))", "off the mesh"}};
    for (g_bad = 0; g_bad < 3; g_bad++) {
        mh_run r;
        mh_alloc(&r, "y=2,x=4", 8, 128, 8, 128);
        pl_call call = {.name = "bad_ids", .kernel = bad_ids, .n_in = 1, .n_out = 1};
        mh_call(&r, &call, NULL);
        cr_expect_eq(r.rc, PL_EINVAL, "case %d: %s", g_bad, r.mr.error);
        mh_assert_says(r.mr.error, says[g_bad][0], says[g_bad][1]);
        mh_free(&r);
    }
}

/* JAX's test_device_id_as_axis_dict with joint_axis=True: on a (z=2, x=2,
 * y=2) mesh, lax.axis_index(("x", "y")) is x * 2 + y, and device_id=
 * {("x", "y"): k} the device at that joint position with z kept. Each
 * device copies to the device one joint position on (k + 1) % 4 in its own
 * z plane; each holds the x of the one before it. */
static void joint_shift(pl_ctx *c, pl_ref *refs)
{
    static const char *const xy[] = {"x", "y"};
    int64_t k = pltpu_axis_index_joint(c, xy, 2);
    int to = pltpu_device_along_joint(c, xy, 2, (k + 1) % 4);
    pltpu_remote_copy cp = pltpu_make_async_remote_copy(c, refs[0], refs[1], pl_at(c, refs[2], 0),
                                                        pl_at(c, refs[2], 1), to);
    pltpu_remote_copy_start(c, &cp);
    pltpu_remote_copy_wait(c, &cp);
}

Test(mesh_device_ids, jax_joint_axis_index_and_device_id)
{
    mh_run r;
    mh_alloc(&r, "z=2,x=2,y=2", 8, 128, 8, 128);
    pl_call call = {.name = "joint", .kernel = joint_shift, .n_in = 1, .n_out = 1, .n_scratch = 1,
                    .scratch = {PLTPU_SEMAPHORE_DMA(2)}};
    call.in[0].space = call.out[0].space = PL_ANY;
    mh_call(&r, &call, NULL);
    cr_assert_eq(r.rc, PL_OK, "%s", r.mr.error);
    for (int d = 0; d < 8; d++) {
        int z = d / 4, k = d % 4, from = z * 4 + (k + 3) % 4;
        for (int i = 0; i < 1024; i++)
            cr_assert_eq(r.o[d * 1024 + i], r.x[from * 1024 + i], "device %d holds device %d's x", d, from);
    }
    mh_free(&r);
}
