/* tests/test_timing.c: the timing model against closed-form expectations
 * (rules P6, P8, P9 and the chip figures), the chip presets and what-if
 * chip files, and the Chrome trace format. */
#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "../examples/kernels/matmul.h"
#include "../sim/timing.h"
#include "helpers.h"

/* ---- helpers ------------------------------------------------------------------ */

/* A cost-only matmul report (no data). */
static pl_report matmul_cost(int64_t m, int64_t n, int64_t k, int64_t bm, int64_t bn, int64_t bk, pl_dtype dt,
                             const char *chip, int64_t vmem_limit)
{
    mm_params p;
    pl_call call;
    mm_call(&call, &p, m, n, k, bm, bn, bk);
    call.vmem_limit_bytes = vmem_limit;
    pl_array args[2] = {PL_ARRAY(NULL, dt, m, k), PL_ARRAY(NULL, dt, k, n)};
    pl_array out = PL_ARRAY(NULL, dt, m, n);
    pl_options opt = {.chip = chip, .cost_only = 1};
    pl_report rep;
    int rc = pl_pallas_call(&call, args, &out, &opt, &rep);
    cr_assert_eq(rc, PL_OK, "%s", rep.error);
    return rep;
}

/* out = in, in (8*steps... ) blocks of (bm, bn) f32 over a (bm*steps, bn) array. */
static pl_report copy_cost(int64_t steps, int64_t bm, int64_t bn, const char *chip)
{
    pl_call call = th_copy_call_2d(bm * steps, bn, bm, bn);
    pl_array in = PL_ARRAY(NULL, PL_F32, bm * steps, bn), out = PL_ARRAY(NULL, PL_F32, bm * steps, bn);
    pl_options opt = {.chip = chip, .cost_only = 1};
    pl_report rep;
    int rc = pl_pallas_call(&call, &in, &out, &opt, &rep);
    cr_assert_eq(rc, PL_OK, "%s", rep.error);
    return rep;
}

static void assert_near(double got, double want, double rel, const char *what)
{
    cr_assert(fabs(got - want) <= rel * want, "%s: got %.6g, want %.6g within %.0f%%", what, got, want, 100 * rel);
}

/* ---- regimes ------------------------------------------------------------------ */

/* Large tiles on a large matmul: the MXU is the bottleneck, and the time is
 * the FLOPs over the peak, plus little. */
Test(timing, large_tiles_approach_flops_over_peak)
{
    const pl_chip *v5e = pl_chip_find("v5e");
    pl_report r = matmul_cost(8192, 8192, 8192, 1024, 1024, 1024, PL_BF16, "v5e", 0);
    double ideal = 2.0 * 8192 * 8192 * 8192 / v5e->bf16_flops;
    assert_near(r.time_s, ideal, 0.05, "8192^3 bf16 in 1024-tiles on v5e");
    cr_assert(r.time_s >= ideal, "nothing beats the peak: %g < %g", r.time_s, ideal);
    cr_assert_eq(r.bound, PL_BOUND_COMPUTE, "bound: %s", r.bound_msg);
    cr_assert_gt(r.peak_fraction, 0.9);
    cr_assert_leq(r.peak_fraction, 1.0);
}

/* The same on v6e: 256-wide MXUs, 918 TFLOP/s. f32 runs at 1/3 of bf16. */
Test(timing, f32_matmul_runs_at_a_third_of_bf16)
{
    pl_report b = matmul_cost(4096, 4096, 4096, 512, 512, 512, PL_BF16, "v6e", 0);
    pl_report f = matmul_cost(4096, 4096, 4096, 512, 512, 512, PL_F32, "v6e", 0);
    assert_near(f.compute_s, 3 * b.compute_s, 0.02, "f32 compute vs 3x bf16");
}

/* Tiny blocks: each step moves a few KiB and computes nothing, so the fixed
 * per-step cost (P9) is the time. */
Test(timing, tiny_blocks_are_step_overhead_bound)
{
    const pl_chip *v5e = pl_chip_find("v5e");
    pl_report r = copy_cost(1000, 8, 128, "v5e");
    double ideal = 1000 * v5e->step_overhead_s;
    assert_near(r.time_s, ideal, 0.05, "1000 steps of (8,128) copies");
    cr_assert_eq(r.bound, PL_BOUND_OVERHEAD, "bound: %s", r.bound_msg);
    cr_assert(strstr(r.bound_msg, "rule P9"), "%s", r.bound_msg);
}

/* Big blocks, no compute: the HBM bandwidth is the time. */
Test(timing, big_copies_are_hbm_bound)
{
    const pl_chip *v5e = pl_chip_find("v5e");
    pl_report r = copy_cost(64, 512, 1024, "v5e");
    double bytes = 2.0 * 64 * 512 * 1024 * 4; /* in and out */
    cr_assert_eq((double)r.hbm_bytes, bytes);
    assert_near(r.time_s, bytes / v5e->hbm_bw, 0.05, "64 x 2 MiB in and out");
    cr_assert_eq(r.bound, PL_BOUND_HBM, "bound: %s", r.bound_msg);
    cr_assert(strstr(r.bound_msg, "HBM-bound"), "%s", r.bound_msg);
}

/* Padding (CHIPS.md): a dot of 100-wide operands costs as much as a
 * 128-wide one on a 128-wide MXU. */
Test(timing, mxu_pads_to_its_width)
{
    pl_report a = matmul_cost(1024, 100, 100, 1024, 100, 100, PL_BF16, "v5e", 0);
    pl_report b = matmul_cost(1024, 128, 128, 1024, 128, 128, PL_BF16, "v5e", 0);
    assert_near(a.mxu_s, b.mxu_s, 1e-9, "100-wide vs 128-wide");
    cr_assert_lt(a.mxu_flops, b.mxu_flops);
    assert_near(a.mxu_flops_padded, b.mxu_flops, 1e-9, "padded work");
}

/* Rule P6: with two buffers the next step's copies overlap this step's
 * compute; with one they cannot, and when copies and compute take about
 * as long (512-tiles of a bf16 matmul on v5e: ~1.3 us each) the time nearly
 * doubles. */
Test(timing, single_buffering_exposes_copies)
{
    mm_params p;
    pl_call call;
    mm_call(&call, &p, 2048, 2048, 2048, 512, 512, 512);
    pl_array args[2] = {PL_ARRAY(NULL, PL_BF16, 2048, 2048), PL_ARRAY(NULL, PL_BF16, 2048, 2048)};
    pl_array out = PL_ARRAY(NULL, PL_BF16, 2048, 2048);
    pl_options opt = {.cost_only = 1};
    pl_report two, one;
    cr_assert_eq(pl_pallas_call(&call, args, &out, &opt, &two), PL_OK, "%s", two.error);
    call.in[0].buffers = call.in[1].buffers = 1;
    cr_assert_eq(pl_pallas_call(&call, args, &out, &opt, &one), PL_OK, "%s", one.error);
    cr_assert_gt(one.time_s, 1.5 * two.time_s, "Buffered(1) %g vs Buffered(2) %g", one.time_s, two.time_s);
    cr_assert_gt(one.dma_exposed_s, 5 * two.dma_exposed_s, "exposed %g vs %g", one.dma_exposed_s,
                 two.dma_exposed_s);
    cr_assert_eq(one.compute_s, two.compute_s);
}

/* The time splits into compute + exposed DMA + overhead on one core. */
Test(timing, time_is_compute_plus_exposed_plus_overhead)
{
    pl_report r = matmul_cost(2048, 2048, 2048, 256, 512, 256, PL_F32, "v5e", 0);
    assert_near(r.compute_s + r.dma_exposed_s + r.overhead_s, r.time_s, 1e-9, "sum of parts");
    cr_assert_eq(r.cores, 1);
}

/* G4: on a megacore chip (v5p) the first parallel axis is split over two
 * TensorCores; a compute-bound matmul then takes about half as long as with
 * every axis arbitrary, which keeps it on one core (G3). */
Test(timing, megacore_splits_the_first_parallel_axis)
{
    mm_params p;
    pl_call call;
    mm_call(&call, &p, 4096, 4096, 4096, 512, 512, 512);
    pl_array args[2] = {PL_ARRAY(NULL, PL_BF16, 4096, 4096), PL_ARRAY(NULL, PL_BF16, 4096, 4096)};
    pl_array out = PL_ARRAY(NULL, PL_BF16, 4096, 4096);
    pl_options opt = {.chip = "v5p", .cost_only = 1};
    pl_report two, one;
    cr_assert_eq(pl_pallas_call(&call, args, &out, &opt, &two), PL_OK, "%s", two.error);
    call.semantics[0] = call.semantics[1] = PL_ARBITRARY;
    cr_assert_eq(pl_pallas_call(&call, args, &out, &opt, &one), PL_OK, "%s", one.error);
    cr_assert_eq(two.cores, 2);
    cr_assert_eq(one.cores, 1);
    cr_assert_eq(two.steps, one.steps, "the same grid points run, split over cores");
    assert_near(two.compute_s, one.compute_s, 1e-9, "compute is summed over cores");
    assert_near(two.time_s, one.time_s / 2, 0.1, "two cores vs one");
    /* on a single-core chip the marking changes nothing (G3) */
    opt.chip = "v5e";
    cr_assert_eq(pl_pallas_call(&call, args, &out, &opt, &one), PL_OK);
    call.semantics[0] = call.semantics[1] = PL_PARALLEL;
    cr_assert_eq(pl_pallas_call(&call, args, &out, &opt, &two), PL_OK);
    cr_assert_eq(one.time_s, two.time_s);
}

/* Results never depend on the chip; timing never on the data: a real run
 * and a cost-only run predict the same time. */
Test(timing, cost_only_predicts_the_same_time_as_a_real_run)
{
    int64_t m = 256, n = 384, k = 300;
    float *a = th_f32_seq(m * k), *b = th_f32_seq(k * n), *c5 = th_f32_fill(m * n, 0), *c6 = th_f32_fill(m * n, 0);
    mm_params p;
    pl_call call;
    mm_call(&call, &p, m, n, k, 128, 128, 128);
    pl_array args[2] = {PL_ARRAY(a, PL_F32, m, k), PL_ARRAY(b, PL_F32, k, n)};
    pl_array o5 = PL_ARRAY(c5, PL_F32, m, n), o6 = PL_ARRAY(c6, PL_F32, m, n);
    pl_options v5e = {.chip = "v5e"}, v6e = {.chip = "v6e"}, cost = {.chip = "v5e", .cost_only = 1};
    pl_report r5, r6, rc;
    cr_assert_eq(pl_pallas_call(&call, args, &o5, &v5e, &r5), PL_OK);
    cr_assert_eq(pl_pallas_call(&call, args, &o6, &v6e, &r6), PL_OK);
    cr_assert_eq(th_f32_diff(c5, c6, m * n), 0, "results differ between chips");
    pl_array none[2] = {PL_ARRAY(NULL, PL_F32, m, k), PL_ARRAY(NULL, PL_F32, k, n)};
    pl_array onone = PL_ARRAY(NULL, PL_F32, m, n);
    cr_assert_eq(pl_pallas_call(&call, none, &onone, &cost, &rc), PL_OK, "%s", rc.error);
    cr_assert_eq(rc.time_s, r5.time_s);
    cr_assert_eq(rc.hbm_bytes, r5.hbm_bytes);
    cr_assert_neq(r5.time_s, r6.time_s);
    free(a), free(b), free(c5), free(c6);
}

/* Two TensorCores (megacore) share one HBM: two HBM-bound timelines take
 * twice as long as one; two compute-bound ones take as long as one. */
static void fill_line(sim_coreline *cl, int64_t steps, int64_t bytes, double compute)
{
    memset(cl, 0, sizeof *cl);
    cl->n_ops = 2;
    cl->op[0].buffers = cl->op[1].buffers = 2;
    cl->op[1].is_out = 1;
    for (int64_t s = 0; s < steps; s++) {
        cr_assert_eq(sim_opline_push(&cl->op[0], s, bytes, (int)(s % 2), NULL), 0);
        cr_assert_eq(sim_opline_push(&cl->op[1], s, bytes, (int)(s % 2), NULL), 0);
        cr_assert_eq(sim_coreline_step(cl, compute), 0);
    }
}

Test(timing, two_cores_share_hbm_bandwidth)
{
    const pl_chip *v5p = pl_chip_find("v5p");
    sim_coreline lines[2];
    sim_time_result one, two;
    fill_line(&lines[0], 100, 4 << 20, 1e-9);
    cr_assert_eq(sim_time_run(lines, 1, v5p, &one), 0);
    fill_line(&lines[1], 100, 4 << 20, 1e-9);
    cr_assert_eq(sim_time_run(lines, 2, v5p, &two), 0);
    assert_near(two.total_s, 2 * one.total_s, 0.03, "two HBM-bound cores");
    sim_coreline_free(&lines[0]);
    sim_coreline_free(&lines[1]);

    fill_line(&lines[0], 100, 4096, 50e-6);
    cr_assert_eq(sim_time_run(lines, 1, v5p, &one), 0);
    fill_line(&lines[1], 100, 4096, 50e-6);
    cr_assert_eq(sim_time_run(lines, 2, v5p, &two), 0);
    assert_near(two.total_s, one.total_s, 0.01, "two compute-bound cores");
    assert_near(two.compute_s, 2 * one.compute_s, 1e-9, "compute summed over cores");
    sim_coreline_free(&lines[0]);
    sim_coreline_free(&lines[1]);
}

/* ---- chips -------------------------------------------------------------------- */

Test(chips, presets_carry_the_chips_md_figures)
{
    cr_assert_eq(pl_chip_count(), 5);
    const pl_chip *d = pl_chip_default();
    cr_assert_str_eq(d->name, "v5e");
    cr_assert_eq(d->bf16_flops, 197e12);
    cr_assert_eq(d->hbm_bw, 819e9);
    cr_assert_eq(d->vmem_bytes, 128LL << 20);
    cr_assert_eq(d->vmem_default_limit, 16LL << 20);
    const pl_chip *v5p = pl_chip_find("v5p"), *v7x = pl_chip_find("v7x"), *v6e = pl_chip_find("v6e");
    cr_assert_eq(v5p->cores_per_device, 2, "v5p is megacore");
    cr_assert_eq(v5p->bf16_flops, 459e12 / 2, "per TensorCore");
    cr_assert_eq(v7x->devices_per_chip, 2);
    cr_assert_eq(v7x->hbm_bw, 7380e9 / 2, "a v7x device has half the chip");
    cr_assert_eq(v7x->sublanes_16bit, 16);
    cr_assert_eq(v6e->mxu_width, 256);
    cr_assert_null(pl_chip_find("v9z"));
    for (int i = 0; i < pl_chip_count(); i++) {
        const pl_chip *c = pl_chip_at(i);
        cr_assert_lt(c->dma_latency_s, c->step_overhead_s, "%s: latency must hide under a step", c->name);
        cr_assert_leq(c->vmem_default_limit, c->vmem_bytes, "%s", c->name);
        /* critical intensity as CHIPS.md quotes it: 240 on v5e, 560 on v6e, ... */
        double crit = c->bf16_flops * c->cores_per_device / c->hbm_bw;
        cr_assert(crit > 150 && crit < 600, "%s: critical intensity %g", c->name, crit);
    }
}

Test(chips, a_what_if_chip_file_overrides_a_preset)
{
    pl_chip c;
    char err[512];
    const char *text = "# v5e with twice the bandwidth\nbase = v5e\nname = v5e-2x\nhbm_gbps = 1638 # doubled\n"
                       "step_overhead_us = 0.1\n";
    cr_assert_eq(pl_chip_parse(text, "what-if", &c, err, sizeof err), PL_OK, "%s", err);
    cr_assert_str_eq(c.name, "v5e-2x");
    cr_assert_eq(c.hbm_bw, 1638e9);
    cr_assert_eq(c.step_overhead_s, 0.1e-6);
    cr_assert_eq(c.bf16_flops, 197e12, "unset figures come from the base");

    pl_report fast = copy_cost(64, 512, 1024, "v5e");
    pl_options opt = {.chip_spec = &c, .cost_only = 1};
    pl_call call = th_copy_call_2d(64 * 512, 1024, 512, 1024);
    pl_array in = PL_ARRAY(NULL, PL_F32, 64 * 512, 1024), out = PL_ARRAY(NULL, PL_F32, 64 * 512, 1024);
    pl_report r;
    cr_assert_eq(pl_pallas_call(&call, &in, &out, &opt, &r), PL_OK, "%s", r.error);
    assert_near(r.time_s, fast.time_s / 2, 0.05, "HBM-bound copy on a chip with twice the bandwidth");
}

Test(chips, chip_file_errors_name_file_line_and_key)
{
    pl_chip c;
    char err[512];
    cr_assert_eq(pl_chip_parse("base = v5e\nhbm_gbs = 100\n", "my.chip", &c, err, sizeof err), PL_EINVAL);
    cr_assert(strstr(err, "my.chip:2") && strstr(err, "unknown key 'hbm_gbs'") && strstr(err, "hbm_gbps"), "%s", err);
    cr_assert_eq(pl_chip_parse("hbm_gbps = fast\n", "f", &c, err, sizeof err), PL_EINVAL);
    cr_assert(strstr(err, "f:1") && strstr(err, "hbm_gbps = 'fast'"), "%s", err);
    cr_assert_eq(pl_chip_parse("hbm_gbps = -3\n", "f", &c, err, sizeof err), PL_EINVAL);
    cr_assert_eq(pl_chip_parse("mxu_width = 128.5\n", "f", &c, err, sizeof err), PL_EINVAL);
    cr_assert(strstr(err, "whole number"), "%s", err);
    cr_assert_eq(pl_chip_parse("hbm_gbps 100\n", "f", &c, err, sizeof err), PL_EINVAL);
    cr_assert(strstr(err, "expected 'key = value'"), "%s", err);
    cr_assert_eq(pl_chip_parse("hbm_gbps = 100\nbase = v4\n", "f", &c, err, sizeof err), PL_EINVAL);
    cr_assert(strstr(err, "base must be the first key"), "%s", err);
    cr_assert_eq(pl_chip_parse("base = v99\n", "f", &c, err, sizeof err), PL_EINVAL);
    cr_assert_eq(pl_chip_parse("vmem_mib = 8\nvmem_limit_mib = 16\n", "f", &c, err, sizeof err), PL_EINVAL);
    cr_assert(strstr(err, "rule M4"), "%s", err);
    cr_assert_eq(pl_chip_load("/nonexistent/dir/x.chip", &c, err, sizeof err), PL_EINVAL);
    cr_assert(strstr(err, "/nonexistent/dir/x.chip: cannot open"), "%s", err);
}

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

/* NULL where a pointer belongs is an error, never a crash. */
Test(chips, null_arguments_are_errors)
{
    pl_chip c;
    char err[256];
    cr_assert_eq(pl_chip_parse(NULL, "x", &c, err, sizeof err), PL_EINVAL);
    cr_assert_eq(pl_chip_parse("base = v5e\n", "x", NULL, err, sizeof err), PL_EINVAL);
    cr_assert_eq(pl_chip_parse("bogus = 1\n", NULL, &c, NULL, 0), PL_EINVAL, "no message buffer is fine");
    cr_assert_eq(pl_chip_load(NULL, &c, err, sizeof err), PL_EINVAL);
    pl_report_print(NULL, stdout);
    pl_report_json(NULL, stdout);
}
