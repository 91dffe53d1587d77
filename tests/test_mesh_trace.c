/* A mesh's trace (issue 12): one Chrome trace-event file with a process for
 * the ICI links (a track per directed link that carried copies) and one per
 * device, whose waits are slices of their own, so that a synchronous
 * collective (a long wait with nothing beside it) shows (rule M11). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_mesh_helpers.h"

/* Events of trace t with "ph" ph in process pid (-1: any) whose "name" (or,
 * for metadata, args.name) contains `has`. */
static int count_events(const json_t *t, const char *ph, int pid, const char *has)
{
    const json_t *ev = json_object_get(t, "traceEvents"), *e;
    size_t i;
    int n = 0;
    json_array_foreach(ev, i, e) {
        if (strcmp(th_json_str(e, "ph"), ph) != 0) continue;
        if (pid >= 0 && json_integer_value(json_object_get(e, "pid")) != pid) continue;
        const char *name = th_json_str(e, "name");
        if (!strcmp(ph, "M")) name = json_string_value(json_object_get(json_object_get(e, "args"), "name"));
        if (name && strstr(name, has)) n++;
    }
    return n;
}

Test(mesh_trace, a_ring_all_gather_shows_its_links_devices_and_waits)
{
    char path[64] = "/tmp/tilesim_mesh_trace_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    pl_options opt = {.cost_only = 1, .trace_path = path};
    mh_ring r;
    mh_ring_run(&r, 4, 64, 1024, &opt, NULL, 0);
    cr_assert_eq(r.rc, PL_OK, "%s", r.mr.error);
    json_t *t = th_json_file(path);
    cr_expect_str_eq(th_json_str(json_object_get(t, "otherData"), "mesh"), "ring of 4 (x)");
    cr_expect_eq(count_events(t, "M", 0, "ICI links"), 1, "a process for the links");
    cr_expect_eq(count_events(t, "M", 0, "+x"), 4, "4 directed links carried copies (all to the right)");
    cr_expect_eq(count_events(t, "X", 0, "copy "), 4 * 3, "each of the 12 copies on its one link");
    for (int d = 0; d < 4; d++) {
        char name[32];
        snprintf(name, sizeof name, "device %d", d);
        cr_expect_eq(count_events(t, "M", 1 + d * 64, name), 1, "a process for %s", name);
        cr_expect_eq(count_events(t, "X", 1 + d * 64, "step ("), 3, "%s: its 3 grid steps", name);
        cr_expect_geq(count_events(t, "X", 1 + d * 64, "wait: "), 1, "%s: its waits as slices", name);
    }
    /* a wait for a copy of the core's own names that copy, as its slice is named */
    const json_t *ev = json_object_get(t, "traceEvents"), *e;
    size_t i;
    int named = 0;
    json_array_foreach(ev, i, e) {
        const char *nm = th_json_str(e, "name");
        if (!nm || strncmp(nm, "wait: copy ", 11) != 0) continue;
        json_t *args = json_object_get(e, "args");
        cr_expect_eq(json_integer_value(json_object_get(args, "copy")), atoll(nm + 11), "%s", nm);
        cr_expect_gt(json_integer_value(json_object_get(args, "bytes")), 0, "%s", nm);
        json_int_t pid = json_integer_value(json_object_get(e, "pid"));
        char slice[32];
        snprintf(slice, sizeof slice, "copy %s", nm + 11);
        const json_t *f;
        size_t j;
        int own = 0; /* the copy's own slice, by its exact name, in the same process */
        json_array_foreach(ev, j, f) own += json_integer_value(json_object_get(f, "pid")) == pid &&
                                            !strcmp(th_json_str(f, "ph"), "X") && !strcmp(th_json_str(f, "name"), slice);
        cr_expect_eq(own, 1, "the copy's own slice beside its wait: %s", slice);
        named++;
    }
    cr_expect_gt(named, 0, "the waits name their copies");
    json_decref(t);
    unlink(path);
    mh_ring_free(&r);
}

Test(mesh_trace, an_unwritable_trace_path_is_refused_before_running)
{
    pl_options opt = {.cost_only = 1, .trace_path = "/nonexistent-dir/trace.json"};
    mh_ring r;
    mh_ring_run(&r, 2, 8, 128, &opt, NULL, 0);
    cr_expect_eq(r.rc, PL_EINVAL);
    cr_expect(strstr(r.mr.error, "/nonexistent-dir/trace.json") && strstr(r.mr.error, "No such file"), "%s",
              r.mr.error);
    mh_ring_free(&r);
}
