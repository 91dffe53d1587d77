/* tests/test_jax_cores.c: issue 9, where tilesim agrees with JAX's own Pallas
 * TPU tests about cores: races only between points that can run on different
 * TensorCores (V4), parallel axes as a prefix of the grid (G3), what-if chips
 * with more than two cores (G4) and automatic single buffering (P6).
 * Each test names the JAX test (jax-ml/jax, tests/pallas/) whose facts it
 * mirrors; the C is written from what that test asserts. */
#include <math.h>

#include "../kernel/pltpu.h"
#include "helpers.h"

enum { R = 8, L = 128, G = 4 };

/* ---- a parallel reduction: every point adds its x block into one output block ---- */

static void reduce_kernel(pl_ctx *c, pl_ref *refs)
{
    if (pl_program_id(c, 0) == 0) pl_fill(c, refs[1], 0);
    pl_add(c, refs[1], refs[1], refs[0]);
}

static void zero_map_fn(const int64_t *g, const pl_ref *prefetch, int64_t *b, void *user)
{
    (void)g, (void)prefetch, (void)user;
    b[0] = b[1] = 0;
}

/* grid (G,) over x (G*R, L) into o (R, L); fn: the output map as a function */
static pl_call reduce_call(int fn)
{
    pl_call call = {.name = "reduce", .kernel = reduce_kernel, .grid_rank = 1, .grid = {G},
                    .semantics = {PL_PARALLEL}, .n_in = 1, .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), R, L)},
                    .n_out = 1, .out = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), R, L)}};
    call.in[0].name = "x";
    call.out[0].name = "o";
    if (fn) call.out[0].map = PL_MAP_FN(zero_map_fn, NULL);
    return call;
}

/* Run the reduction; *sum_ok: o holds the sequential answer. */
static int run_reduce(int fn, const pl_options *opt, pl_report *rep, int *sum_ok)
{
    float *x = th_f32_seq(G * R * L), *o = th_f32_fill(R * L, TH_SENTINEL);
    pl_array in = PL_ARRAY(x, PL_F32, G * R, L), out = PL_ARRAY(o, PL_F32, R, L);
    pl_call call = reduce_call(fn);
    int rc = pl_pallas_call(&call, &in, &out, opt, rep);
    *sum_ok = 1;
    for (int e = 0; e < R * L; e++) {
        float want = 0;
        for (int g = 0; g < G; g++) want += x[g * R * L + e];
        *sum_ok &= o[e] == want;
    }
    free(x), free(o);
    return rc;
}

static int has_finding(const pl_report *rep, pl_finding_kind kind, const char *rule)
{
    for (int i = 0; i < rep->n_findings && i < PL_MAX_FINDINGS; i++)
        if (rep->findings[i].kind == kind && strcmp(rep->findings[i].rule, rule) == 0) return 1;
    return 0;
}

/* ---- V4: races depend on cores ------------------------------------------------------- */

/* tpu_pallas_interpret_test.py, test_two_cores_along_parallel_dimension_with_race:
 * a race needs two cores. On one core (v5e) a parallel reduction runs in
 * order: the sequential answer, a warning that megacore chips would race (V4). */
Test(jax_cores, V4_single_core_parallel_reduction_is_a_warning)
{
    for (int fn = 0; fn <= 1; fn++) {
        pl_report rep;
        pl_options opt = {.chip = "v5e"};
        int ok, rc = run_reduce(fn, &opt, &rep, &ok);
        cr_assert_eq(rc, PL_OK, "fn %d: %s", fn, rep.error);
        cr_assert(ok, "fn %d: one core gives the sequential answer", fn);
        cr_assert(strstr(rep.warnings, "o: ") && strstr(rep.warnings, "axis 0") &&
                      strstr(rep.warnings, "megacore") && strstr(rep.warnings, "V4"),
                  "fn %d: %s", fn, rep.warnings);
        cr_assert_eq(rep.n_warnings, 1, "fn %d: said once, not per grid point: %s", fn, rep.warnings);
        cr_assert(has_finding(&rep, PL_FIND_RACE, "V4"), "fn %d: a race finding", fn);
    }
}

Test(jax_cores, V4_single_core_race_is_an_error_under_strict)
{
    for (int fn = 0; fn <= 1; fn++) {
        pl_report rep;
        pl_options opt = {.chip = "v6e", .strict = 1};
        int ok, rc = run_reduce(fn, &opt, &rep, &ok);
        TH_EXPECT_ERROR(rc, rep, PL_ERACE, "o: ", "axis 0", "megacore", "V4");
    }
}

/* The megacore chips and a what-if chip with 4 cores: still an error. */
Test(jax_cores, V4_multi_core_race_stays_an_error)
{
    pl_chip more = *pl_chip_find("v5e");
    for (int fn = 0; fn <= 1; fn++) {
        const char *chips[] = {"v4", "v5p"};
        for (int i = 0; i < 2; i++) {
            pl_report rep;
            pl_options opt = {.chip = chips[i]};
            int ok, rc = run_reduce(fn, &opt, &rep, &ok);
            TH_EXPECT_ERROR(rc, rep, PL_ERACE, "o: ", "axis 0", "block (0, 0)", "V4", "G3");
        }
        for (more.cores_per_device = 3; more.cores_per_device <= 4; more.cores_per_device++) {
            pl_report rep;
            pl_options opt = {.chip_spec = &more};
            int ok, rc = run_reduce(fn, &opt, &rep, &ok);
            TH_EXPECT_ERROR(rc, rep, PL_ERACE, "o: ", more.cores_per_device == 3 ? "3 TensorCores" : "4 TensorCores",
                            "V4");
        }
    }
}

/* tpu_pallas_interpret_test.py, test_race_detection (detect_races off): with
 * the checks off nothing is rejected for a race, on any chip. */
Test(jax_cores, V4_checks_off_rejects_no_race)
{
    for (int fn = 0; fn <= 1; fn++) {
        pl_report rep;
        pl_options opt = {.chip = "v5p", .checks_off = 1};
        int ok, rc = run_reduce(fn, &opt, &rep, &ok);
        cr_assert_eq(rc, PL_OK, "fn %d: %s", fn, rep.error);
        cr_assert(!strstr(rep.warnings, "V4"), "fn %d: %s", fn, rep.warnings);
        rc = pl_validate((pl_call[]){reduce_call(fn)}, (pl_array[]){PL_ARRAY(NULL, PL_F32, G * R, L)},
                         (pl_array[]){PL_ARRAY(NULL, PL_F32, R, L)}, &(pl_options){.chip = "v5p", .checks_off = 1,
                                                                                  .cost_only = 1}, &rep);
        cr_assert_eq(rc, PL_OK, "fn %d: pl_validate: %s", fn, rep.error);
    }
}

/* The control of test_two_cores_along_parallel_dimension_no_race: each point
 * writes its own block; nothing is reported on any chip. */
Test(jax_cores, V4_race_free_kernel_reports_nothing_on_every_chip)
{
    pl_chip three = *pl_chip_find("v5e");
    three.cores_per_device = 3;
    for (int i = 0; i <= pl_chip_count(); i++) {
        th_io io = th_io_2d(G * R, L);
        pl_call call = th_copy_call_2d(G * R, L, R, L);
        call.semantics[0] = PL_PARALLEL;
        pl_options opt = {.chip_spec = i < pl_chip_count() ? pl_chip_at(i) : &three};
        pl_report rep;
        int rc = pl_pallas_call(&call, &io.a, &io.o, &opt, &rep);
        cr_assert_eq(rc, PL_OK, "%s: %s", opt.chip_spec->name, rep.error);
        cr_assert_eq(rep.n_warnings, 0, "%s: %s", opt.chip_spec->name, rep.warnings);
        cr_assert_eq(rep.n_findings, 0, "%s", opt.chip_spec->name);
        cr_assert_eq(th_f32_diff(io.in, io.out, io.n), 0, "%s: a copy", opt.chip_spec->name);
        th_io_free(&io);
    }
}

/* ---- G3: parallel axes form a prefix of the grid -------------------------------------- */

Test(jax_cores, G3_parallel_after_arbitrary_is_rejected)
{
    th_io io = th_io_2d(2 * R, 2 * L);
    pl_call call = th_copy_call_2d(2 * R, 2 * L, R, L);
    call.semantics[0] = PL_ARBITRARY;
    call.semantics[1] = PL_PARALLEL;
    pl_report rep;
    int rc = pl_pallas_call(&call, &io.a, &io.o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "axis 1 is parallel", "axis 0", "must come first", "G3");
    cr_assert_eq(rep.steps, 0, "rejected before running");
    cr_assert_eq(th_io_touched(&io), 0, "nothing written");
    /* controls: (parallel, arbitrary) and (parallel, parallel) are fine */
    call.semantics[0] = PL_PARALLEL;
    call.semantics[1] = PL_ARBITRARY;
    cr_assert_eq(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), PL_OK, "%s", rep.error);
    call.semantics[1] = PL_PARALLEL;
    cr_assert_eq(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), PL_OK, "%s", rep.error);
    th_io_free(&io);
}

/* ---- G4: more than two TensorCores on a what-if chip ------------------------------------ */

enum { MB = 256, NB = 12 };

static void dot_kernel(pl_ctx *c, pl_ref *refs) { pl_dot(c, refs[2], refs[0], refs[1], 0); }

/* o = x @ w over NB row blocks of x, the first axis parallel; compute-bound
 * on a chip whose MXU is slowed to 1 TFLOP/s. */
static pl_report run_dot(int cores, const float *x, const float *w, float *o, int expect_rc)
{
    pl_chip chip = *pl_chip_find("v5e");
    chip.cores_per_device = cores;
    chip.bf16_flops = 1e12;
    snprintf(chip.name, sizeof chip.name, "v5e-%dcore", cores);
    pl_call call = {.name = "dot", .kernel = dot_kernel, .grid_rank = 1, .grid = {NB}, .semantics = {PL_PARALLEL},
                    .n_in = 2, .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), MB, MB), PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), MB, MB)},
                    .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), MB, MB)}};
    pl_array in[2] = {PL_ARRAY((void *)x, PL_F32, NB * MB, MB), PL_ARRAY((void *)w, PL_F32, MB, MB)};
    pl_array out = PL_ARRAY(o, PL_F32, NB * MB, MB);
    pl_options opt = {.chip_spec = &chip};
    pl_report rep;
    int rc = pl_pallas_call(&call, in, &out, &opt, &rep);
    cr_assert_eq(rc, expect_rc, "%d cores: %s", cores, rep.error);
    return rep;
}

Test(jax_cores, G4_three_and_four_cores_split_time_and_agree)
{
    float *x = th_f32_seq(NB * MB * MB), *w = th_f32_fill(MB * MB, 0.25f);
    float *o1 = th_f32_fill(NB * MB * MB, TH_SENTINEL), *on = th_f32_fill(NB * MB * MB, TH_SENTINEL);
    pl_report one = run_dot(1, x, w, o1, PL_OK);
    cr_assert_eq(one.cores, 1);
    for (int cores = 3; cores <= 4; cores++) {
        for (int64_t i = 0; i < NB * MB * MB; i++) on[i] = TH_SENTINEL;
        pl_report r = run_dot(cores, x, w, on, PL_OK);
        cr_assert_eq(r.cores, cores, "every core walks a share (G4)");
        cr_assert_eq(r.steps, NB, "every grid point runs once");
        cr_assert_eq(r.op[2].writebacks, NB, "every output block is written back");
        cr_assert_eq(th_f32_diff(o1, on, NB * MB * MB), 0, "%d cores give the 1-core result", cores);
        double ratio = r.time_s / one.time_s;
        cr_assert(fabs(ratio * cores - 1) < 0.1, "%d cores: time %g of the 1-core %g (ratio %g, want ~1/%d)",
                  cores, r.time_s, one.time_s, ratio, cores);
    }
    free(x), free(w), free(o1), free(on);
}

/* A core count beyond the limit is refused with the chip's figure. */
Test(jax_cores, G4_core_count_limit)
{
    th_io io = th_io_2d(G * R, L);
    pl_call call = th_copy_call_2d(G * R, L, R, L);
    pl_chip chip = *pl_chip_find("v5p");
    pl_report rep;
    int bad[] = {0, 65, 1000};
    for (int i = 0; i < 3; i++) {
        chip.cores_per_device = bad[i];
        char want[64];
        snprintf(want, sizeof want, "cores_per_device = %d", bad[i]);
        int rc = pl_pallas_call(&call, &io.a, &io.o, &(pl_options){.chip_spec = &chip}, &rep);
        TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "v5p", want, "1 to 64");
    }
    chip.cores_per_device = 64; /* the limit itself runs: 4 points on 4 of them */
    call.semantics[0] = PL_PARALLEL;
    cr_assert_eq(pl_pallas_call(&call, &io.a, &io.o, &(pl_options){.chip_spec = &chip}, &rep), PL_OK, "%s",
                 rep.error);
    cr_assert_eq(rep.cores, G);
    cr_assert_eq(th_f32_diff(io.in, io.out, io.n), 0);
    pl_chip parsed;
    char err[256];
    cr_assert_eq(pl_chip_parse("base = v5e\ncores_per_device = 4\n", "what-if", &parsed, err, sizeof err), PL_OK,
                 "%s", err);
    cr_assert_eq(parsed.cores_per_device, 4);
    cr_assert_eq(pl_chip_parse("base = v5e\ncores_per_device = 65\n", "what-if", &parsed, err, sizeof err),
                 PL_EINVAL);
    cr_assert(strstr(err, "cores_per_device") && strstr(err, "64"), "%s", err);
    th_io_free(&io);
}

/* ---- P6: automatic single buffering ---------------------------------------------------- */

static void add_kernel(pl_ctx *c, pl_ref *refs) { pl_add(c, refs[2], refs[0], refs[1]); }

static void copy_x_kernel(pl_ctx *c, pl_ref *refs) { pl_copy(c, refs[2], refs[0]); }

static void const_map_fn(const int64_t *g, const pl_ref *prefetch, int64_t *b, void *user)
{
    (void)g, (void)prefetch, (void)user;
    b[0] = 1, b[1] = 0;
}

static void row_map_fn(const int64_t *g, const pl_ref *prefetch, int64_t *b, void *user)
{
    (void)prefetch, (void)user;
    b[0] = g[0], b[1] = 0;
}

/* grid (G, 1): x changes with i; w's map (j, 0) reads only the size-1 axis. */
static pl_call add_call(void)
{
    pl_call call = {.name = "add", .kernel = add_kernel, .grid_rank = 2, .grid = {G, 1},
                    .semantics = {PL_PARALLEL, PL_ARBITRARY}, .n_in = 2,
                    .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), R, L), PL_BLOCK(PL_MAP(1, PL_ZERO), R, L)},
                    .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), R, L)}};
    call.in[0].name = "x";
    call.in[1].name = "w";
    return call;
}

static void expect_add(const pl_call *call, int x_bufs, int w_bufs)
{
    float *x = th_f32_seq(G * R * L), *w = th_f32_seq(2 * R * L), *o = th_f32_fill(G * R * L, TH_SENTINEL);
    pl_array in[2] = {PL_ARRAY(x, PL_F32, G * R, L), PL_ARRAY(w, PL_F32, 2 * R, L)};
    pl_array out = PL_ARRAY(o, PL_F32, G * R, L);
    pl_report rep;
    int rc = pl_pallas_call(call, in, &out, &(pl_options){.chip = "v5e"}, &rep);
    cr_assert_eq(rc, PL_OK, "%s", rep.error);
    cr_assert_eq(rep.op[0].buffers, x_bufs, "x: %d buffers", rep.op[0].buffers);
    cr_assert_eq(rep.op[1].buffers, w_bufs, "w: %d buffers", rep.op[1].buffers);
    cr_assert_eq(rep.op[0].single_buffered, 0, "x changes: not single-buffered");
    cr_assert_eq(rep.op[1].single_buffered, w_bufs == 1 && !call->in[1].buffers);
    cr_assert_eq(rep.op[1].copies, 1, "w is copied in once");
    for (int e = 0; e < G * R * L; e++) cr_assert_eq(o[e], x[e] + w[e % (R * L)], "element %d", e);
    free(x), free(w), free(o);
}

/* tpu_pallas_pipeline_test.py, test_single_buffered_output (Buffered(1) on a
 * block that stays put): Mosaic now picks one buffer itself when the block
 * index never changes over the grid; a changing window keeps two. */
Test(jax_cores, P6_never_changing_block_gets_one_buffer)
{
    pl_call call = add_call();
    expect_add(&call, 2, 1);
    call.in[1].map = PL_MAP_FN(const_map_fn, NULL); /* (1, 0) at every point: probed */
    float *x = th_f32_seq(G * R * L), *w = th_f32_seq(2 * R * L), *o = th_f32_fill(G * R * L, TH_SENTINEL);
    pl_array in[2] = {PL_ARRAY(x, PL_F32, G * R, L), PL_ARRAY(w, PL_F32, 2 * R, L)};
    pl_array out = PL_ARRAY(o, PL_F32, G * R, L);
    pl_report rep;
    cr_assert_eq(pl_pallas_call(&call, in, &out, NULL, &rep), PL_OK, "%s", rep.error);
    cr_assert_eq(rep.op[1].buffers, 1, "a constant function map: one buffer");
    cr_assert(rep.op[1].single_buffered);
    for (int e = 0; e < G * R * L; e++) cr_assert_eq(o[e], x[e] + w[R * L + e % (R * L)], "element %d", e);
    call.in[0].map = PL_MAP_FN(row_map_fn, NULL); /* a changing function map keeps two */
    cr_assert_eq(pl_pallas_call(&call, in, &out, NULL, &rep), PL_OK, "%s", rep.error);
    cr_assert_eq(rep.op[0].buffers, 2);
    cr_assert_eq(rep.op[0].single_buffered, 0);
    free(x), free(w), free(o);
}

/* Controls: an explicit Buffered(k) wins. */
Test(jax_cores, P6_explicit_buffers_win)
{
    pl_call call = add_call();
    call.in[1].buffers = 2;
    expect_add(&call, 2, 2);
    call.in[0].buffers = 1;
    call.in[1].buffers = 1;
    expect_add(&call, 1, 1);
}

/* M4 counts a single-buffered block once: a call that fits only so is
 * accepted; the same call with Buffered(2) spelled out is over budget. */
Test(jax_cores, P6_budget_counts_a_never_changing_block_once)
{
    enum { WR = 3072, WL = 1024 }; /* 12 MiB of f32: once fits v5e's 16 MiB, twice does not */
    pl_call call = add_call();
    call.kernel = copy_x_kernel;
    call.in[0].block[1] = call.out[0].block[1] = WL;
    call.in[1].block[0] = WR;
    call.in[1].block[1] = WL;
    pl_array in[2] = {PL_ARRAY(NULL, PL_F32, G * R, WL), PL_ARRAY(NULL, PL_F32, 2 * WR, WL)};
    pl_array out = PL_ARRAY(NULL, PL_F32, G * R, WL);
    pl_options opt = {.chip = "v5e", .cost_only = 1};
    pl_report rep;
    int rc = pl_pallas_call(&call, in, &out, &opt, &rep);
    cr_assert_eq(rc, PL_OK, "%s", rep.error);
    cr_assert_eq(rep.op[1].buffers, 1);
    cr_assert_lt(rep.vmem_bytes, rep.vmem_limit);
    call.in[1].buffers = 2;
    rc = pl_pallas_call(&call, in, &out, &opt, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EVMEM, "w", "2 x", "M4");
}

/* One buffer for a block copied once costs nothing: the time is the
 * double-buffered one. An accumulator output that never moves is
 * single-buffered too and still gives the sum. */
Test(jax_cores, P6_single_buffering_keeps_the_timing_and_outputs)
{
    pl_call call = add_call();
    pl_array in[2] = {PL_ARRAY(NULL, PL_F32, G * R, L), PL_ARRAY(NULL, PL_F32, 2 * R, L)};
    pl_array out = PL_ARRAY(NULL, PL_F32, G * R, L);
    pl_options opt = {.chip = "v5e", .cost_only = 1};
    pl_report one, two;
    cr_assert_eq(pl_pallas_call(&call, in, &out, &opt, &one), PL_OK, "%s", one.error);
    call.in[1].buffers = 2;
    cr_assert_eq(pl_pallas_call(&call, in, &out, &opt, &two), PL_OK, "%s", two.error);
    cr_assert_eq(one.op[1].buffers, 1);
    cr_assert(fabs(one.time_s - two.time_s) <= 1e-3 * two.time_s, "time %g with one buffer, %g with two",
              one.time_s, two.time_s);

    pl_report rep;
    pl_options arb = {.chip = "v5e"};
    float *x = th_f32_seq(G * R * L), *o = th_f32_fill(R * L, TH_SENTINEL);
    pl_array xin = PL_ARRAY(x, PL_F32, G * R, L), oout = PL_ARRAY(o, PL_F32, R, L);
    pl_call red = reduce_call(0);
    red.semantics[0] = PL_ARBITRARY;
    cr_assert_eq(pl_pallas_call(&red, &xin, &oout, &arb, &rep), PL_OK, "%s", rep.error);
    cr_assert_eq(rep.op[1].buffers, 1, "the accumulator output never moves");
    cr_assert(rep.op[1].single_buffered);
    cr_assert_eq(rep.op[1].writebacks, 1);
    for (int e = 0; e < R * L; e++) {
        float want = 0;
        for (int g = 0; g < G; g++) want += x[g * R * L + e];
        cr_assert_eq(o[e], want, "element %d", e);
    }
    free(x), free(o);
}

/* The printed report says which operands were single-buffered and why. */
Test(jax_cores, P6_report_names_single_buffered_operands)
{
    pl_call call = add_call();
    pl_array in[2] = {PL_ARRAY(NULL, PL_F32, G * R, L), PL_ARRAY(NULL, PL_F32, 2 * R, L)};
    pl_array out = PL_ARRAY(NULL, PL_F32, G * R, L);
    pl_report rep;
    cr_assert_eq(pl_pallas_call(&call, in, &out, &(pl_options){.cost_only = 1}, &rep), PL_OK, "%s", rep.error);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    pl_report_print(&rep, f);
    fclose(f);
    char *vmem = strstr(text, "  VMEM:");
    cr_assert(vmem, "%s", text);
    const char *wl = strstr(vmem, "\n    w "), *xl = strstr(vmem, "\n    x ");
    cr_assert(wl && xl, "%s", text);
    char w[256], x[256]; /* each line on its own */
    snprintf(w, sizeof w, "%.*s", (int)strcspn(wl + 1, "\n"), wl + 1);
    snprintf(x, sizeof x, "%.*s", (int)strcspn(xl + 1, "\n"), xl + 1);
    cr_assert(strstr(w, "single-buffered") && strstr(w, "never changes") && strstr(w, "P6"), "%s", w);
    cr_assert(!strstr(x, "single-buffered"), "x changes: %s", x);
    free(text);
}

/* ---- scratch is per core: an init at grid point (0, 0) never reaches core 1 ---- */

/* acc is zeroed only at grid point (0, 0); on v5p the first parallel axis
 * is split over the two cores (G4), so core 1 starts at (1, 0) and adds
 * into a scratch nobody on it initialized. The finding says so (core 1's
 * first grid point, scratch per core) instead of "an accumulator that was
 * never zeroed", which the author did zero (issue 23; JAX's megacore tests,
 * tests/pallas/tpu_pallas_test.py, initialize scratch per core). */
static void zero_once_kernel(pl_ctx *c, pl_ref *refs)
{
    if (pl_program_id(c, 0) == 0 && pl_program_id(c, 1) == 0) pl_fill(c, refs[2], 0);
    pl_add(c, refs[2], refs[2], refs[0]);
    pl_copy(c, refs[1], refs[2]);
}

Test(jax_cores, scratch_zeroed_at_one_point_is_named_per_core_on_core_1)
{
    static float x[2 * R * 2 * L], o[2 * R * 2 * L];
    for (int i = 0; i < 2 * R * 2 * L; i++) x[i] = 1;
    pl_call call = th_copy_call_2d(2 * R, 2 * L, R, L);
    call.kernel = zero_once_kernel;
    call.semantics[0] = PL_PARALLEL, call.semantics[1] = PL_ARBITRARY;
    call.n_scratch = 1;
    call.scratch[0] = PLTPU_VMEM(PL_F32, R, L);
    pl_array a = PL_ARRAY(x, PL_F32, 2 * R, 2 * L), out = PL_ARRAY(o, PL_F32, 2 * R, 2 * L);
    static const char *chips[] = {"v5p", "v4"};
    for (int ci = 0; ci < 2; ci++) {
        pl_options opt = {.chip = chips[ci]};
        pl_report rep;
        cr_assert_eq(pl_pallas_call(&call, &a, &out, &opt, &rep), PL_OK, "%s", rep.error);
        int found = 0;
        for (int i = 0; i < rep.n_findings && i < PL_MAX_FINDINGS; i++) {
            const char *m = rep.findings[i].msg;
            if (strcmp(rep.findings[i].rule, "V1") != 0) continue;
            found = 1;
            cr_expect(strstr(m, "core 1") && strstr(m, "its first grid point") && strstr(m, "per core"), "%s: %s",
                      chips[ci], m);
            cr_expect(!strstr(m, "never zeroed"), "%s: %s", chips[ci], m);
        }
        cr_expect(found, "%s: core 1's rows are NaN: a V1 finding", chips[ci]);
    }
    /* on one core (0, 0) is the only start: every read follows the zeroing */
    pl_options one = {.chip = "v5e"};
    pl_report rep;
    cr_assert_eq(pl_pallas_call(&call, &a, &out, &one, &rep), PL_OK, "%s", rep.error);
    cr_expect_eq(rep.n_findings, 0, "%s", rep.n_findings ? rep.findings[0].msg : "");
}

/* A copy started at a grid point of core 0 and waited at the next point, which core 1 runs: the M10
 * error names the core and says why (each core walks its own part, G4). */
static void cross_core_kernel(pl_ctx *c, pl_ref *refs)
{
    int64_t i = pl_program_id(c, 0);
    pltpu_copy cp = pltpu_async_copy(c, pl_ds(c, refs[0], 0, 0, 8), refs[2], pl_at(c, refs[3], 0));
    if (i == 0) pltpu_copy_start(c, &cp);
    if (i == 1) pltpu_copy_wait(c, &cp);
    pl_fill(c, refs[1], 0.0);
}

/* grid (2,) parallel over x (16, 128) in HBM, o blocks (8, 128), a VMEM buffer and a DMA semaphore; run
 * with kernel k on chip: its status, rep filled */
static int two_point_call(pl_kernel_fn k, const char *chip, pl_report *rep)
{
    float *x = th_f32_seq(16 * 128), *o = th_f32_fill(16 * 128, 0);
    pl_call call = {.kernel = k, .grid_rank = 1, .grid = {2}, .semantics = {PL_PARALLEL},
                    .n_in = 1, .in = {{.space = PL_ANY}}, .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)},
                    .n_scratch = 2, .scratch = {PLTPU_VMEM(PL_F32, 8, 128), PLTPU_SEMAPHORE_DMA(1)}};
    pl_array a = PL_ARRAY(x, PL_F32, 16, 128), out = PL_ARRAY(o, PL_F32, 16, 128);
    int rc = pl_pallas_call(&call, &a, &out, &(pl_options){.chip = chip}, rep);
    free(x), free(o);
    return rc;
}

Test(jax_cores, M10_a_copy_waited_on_the_other_core_names_the_core)
{
    pl_report rep;
    cr_assert_neq(two_point_call(cross_core_kernel, "v5p", &rep), PL_OK);
    cr_expect(strstr(rep.error, "core") && strstr(rep.error, "G4"), "%s", rep.error);
}

/* A wait at a point of core 1 for a copy that core 0 would start at its own point: a deadlock that says
 * which core waits and why the copy is not seen there (G4). */
static void wait_other_core_kernel(pl_ctx *c, pl_ref *refs)
{
    int64_t i = pl_program_id(c, 0);
    pltpu_copy cp = pltpu_async_copy(c, pl_ds(c, refs[0], 0, 0, 8), refs[2], pl_at(c, refs[3], 0));
    if (i == 1) pltpu_copy_wait(c, &cp); /* nothing on core 1 started it */
    pl_fill(c, refs[1], 0.0);
}

Test(jax_cores, M10_a_wait_for_another_cores_copy_names_the_core)
{
    pl_report rep;
    cr_assert_eq(two_point_call(wait_other_core_kernel, "v5p", &rep), PL_EDEADLOCK, "%s", rep.error);
    cr_expect(strstr(rep.error, "core 1 of 2") && strstr(rep.error, "G4"), "%s", rep.error);
    cr_assert_eq(two_point_call(wait_other_core_kernel, "v5e", &rep), PL_EDEADLOCK, "%s", rep.error);
    cr_expect_null(strstr(rep.error, "G4"), "one core: no word of cores: %s", rep.error);
}
