/* tests/test_timing_trace.c: what a call writes about its timing: the Chrome
 * trace (trace-event format) and the JSON report. */
#include <stdio.h>
#include <unistd.h>

#include "../examples/kernels/matmul.h"
#include "helpers.h"
#include "test_timing_helpers.h"

/* ---- the trace ------------------------------------------------------------------ */

/* The trace is valid JSON in the trace-event format: every event has the
 * fields its phase needs, events on one track never overlap, kernel steps
 * match the grid, and no event ends after the report's time. */
Test(trace, matmul_trace_is_well_formed)
{
    char path[] = "/tmp/tilesim_trace_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    int64_t m = 300, n = 260, k = 520;
    float *a = th_f32_seq(m * k), *b = th_f32_seq(k * n), *c = th_f32_fill(m * n, 0);
    mm_params p;
    pl_call call;
    mm_call(&call, &p, m, n, k, 128, 128, 256);
    pl_array args[2] = {PL_ARRAY(a, PL_F32, m, k), PL_ARRAY(b, PL_F32, k, n)}, out = PL_ARRAY(c, PL_F32, m, n);
    pl_options opt = {.trace_path = path};
    pl_report rep;
    cr_assert_eq(pl_pallas_call(&call, args, &out, &opt, &rep), PL_OK, "%s", rep.error);

    json_t *doc = th_json_file(path);
    json_t *ev = json_object_get(doc, "traceEvents");
    cr_assert(json_is_array(ev), "no traceEvents array");

    enum { TRACKS = 64 };
    double track_end[TRACKS];
    for (int i = 0; i < TRACKS; i++) track_end[i] = -1;
    int64_t steps = 0, dmas = 0, counters = 0;
    double t_end = rep.time_s * 1e6 + 1e-5; /* the trace prints microseconds to 6 decimals */
    size_t i;
    json_t *e;
    json_array_foreach(ev, i, e) {
        const char *ph = th_json_str(e, "ph"), *name = th_json_str(e, "name");
        th_json_num(e, "pid");
        if (strcmp(ph, "M") == 0) continue;
        double ts = th_json_num(e, "ts");
        cr_assert(ts >= 0 && ts <= t_end, "event %zu: ts %g outside [0, %g]", i, ts, t_end);
        if (strcmp(ph, "C") == 0) {
            json_t *args_ = json_object_get(e, "args");
            cr_assert(json_is_object(args_), "counter without args");
            cr_assert_leq(th_json_num(args_, "bytes"), (double)rep.vmem_bytes, "VMEM in use above the footprint");
            counters++;
            continue;
        }
        cr_assert_str_eq(ph, "X", "unexpected phase %s", ph);
        double dur = th_json_num(e, "dur"), tid = th_json_num(e, "tid");
        cr_assert_geq(dur, 0, "event %s: negative duration", name);
        cr_assert_leq(ts + dur, t_end, "event %s ends after the call", name);
        int t = (int)tid;
        cr_assert(t >= 0 && t < TRACKS);
        cr_assert_geq(ts, track_end[t] - 1e-6, "events overlap on track %d at %s", t, name);
        track_end[t] = ts + dur;
        /* before each step, and the call's prologue and epilogue: tests/test_profile.c */
        if (!strcmp(name, "step overhead (P9)") || !strcmp(name, "prologue") ||
            !strcmp(name, "epilogue: write-back waits"))
            continue;
        if (t == 0) {
            steps++;
            json_t *args_ = json_object_get(e, "args");
            cr_assert(json_object_get(args_, "grid") && json_object_get(args_, "x") && json_object_get(args_, "y") &&
                          json_object_get(args_, "o"),
                      "a kernel step names the grid point and every operand's block");
        } else dmas++;
    }
    cr_assert_eq(steps, rep.steps);
    int64_t copies = 0;
    for (int i = 0; i < rep.n_operands; i++) copies += rep.op[i].copies + rep.op[i].writebacks;
    cr_assert_eq(dmas, copies, "one DMA event per copy and write-back");
    cr_assert_gt(counters, 0);
    json_decref(doc);
    unlink(path);
    free(a), free(b), free(c);
}

/* Names are the user's: a call or operand named with a quote, a backslash,
 * a control character or markup keeps the trace valid JSON, its name
 * intact (the copy slices printed the operand's name raw). */
Test(trace, names_with_quotes_and_markup_stay_valid_json)
{
    char path[] = "/tmp/tilesim_trace_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    static const char odd[] = "x\"q\\</script>\x1b";
    pl_call call = th_copy_call_2d(16, 128, 8, 128);
    call.name = "c\"all";
    call.in[0].name = odd;
    pl_array a = PL_ARRAY(NULL, PL_F32, 16, 128), o = PL_ARRAY(NULL, PL_F32, 16, 128);
    pl_options opt = {.trace_path = path, .cost_only = 1};
    pl_report rep;
    cr_assert_eq(pl_pallas_call(&call, &a, &o, &opt, &rep), PL_OK, "%s", rep.error);
    json_t *doc = th_json_file(path), *ev = json_object_get(doc, "traceEvents");
    cr_assert(json_is_array(ev), "no traceEvents array");
    size_t i, copies = 0;
    json_t *e;
    json_array_foreach(ev, i, e) {
        const char *name = th_json_str(e, "name");
        if (!strncmp(name, odd, strlen(odd) - 1) && strstr(name, " copy ")) copies++; /* the ESC printed as '?' */
    }
    cr_expect_eq(copies, 2, "both copies of the input, named as it is but for its control character");
    json_decref(doc);
    unlink(path);
}

Test(trace, unwritable_trace_path_fails_before_running)
{
    th_io io = th_io_2d(16, 128);
    pl_call call = th_copy_call_2d(16, 128, 8, 128);
    pl_options opt = {.trace_path = "/nonexistent/dir/t.json"};
    pl_report rep;
    int rc = pl_pallas_call(&call, &io.a, &io.o, &opt, &rep);
    cr_assert_eq(rc, PL_EINVAL);
    cr_assert(strstr(rep.error, "/nonexistent/dir/t.json"), "%s", rep.error);
    cr_assert_eq(rep.steps, 0);
    cr_assert_eq(th_io_touched(&io), 0, "the output must stay untouched");
    th_io_free(&io);
}

/* ---- JSON report ---------------------------------------------------------------- */

Test(report, json_report_parses_and_carries_the_numbers)
{
    pl_report r = matmul_cost(1024, 1024, 1024, 256, 256, 256, PL_BF16, "v5e", 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    pl_report_json(&r, f);
    fclose(f);
    json_t *doc = th_json_parse(buf, "pl_report_json");
    cr_assert_eq(th_json_num(doc, "steps"), (double)r.steps);
    assert_near(th_json_num(doc, "time_s"), r.time_s, 1e-6, "time_s");
    cr_assert_str_eq(th_json_str(doc, "bound"), pl_bound_name(r.bound));
    cr_assert_eq(json_array_size(json_object_get(doc, "operands")), 3);
    json_decref(doc);
    free(buf);
}
