/* tests/test_dma.c: manual copies and semaphores (rules M7-M10, T5, V4),
 * and their place in the timeline. */
#include <unistd.h>

#include "../kernel/pltpu.h"
#include "../sim/kdef.h"
#include "helpers.h"

/* The input stays in HBM (ANY, rule T5); each grid point copies its rows
 * into VMEM scratch by hand, waits, and stores them to the output block. */
enum { ROWS = 8, COLS = 128, STEPS = 4 };

static pl_call paging_call(pl_kernel_fn kernel)
{
    pl_call call = {
        .name = "paging",
        .kernel = kernel,
        .grid_rank = 1,
        .grid = {STEPS},
        .n_in = 1,
        .in = {{.space = PL_ANY}},
        .n_out = 1,
        .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), ROWS, COLS)},
        .n_scratch = 2,
        .scratch = {PLTPU_VMEM(PL_F32, 2, ROWS, COLS), PLTPU_SEMAPHORE_DMA(2)},
    };
    return call;
}

static pltpu_copy page(pl_ctx *c, pl_ref *refs, int64_t i, int64_t slot)
{
    pl_ref hbm = refs[0], buf = refs[2], sems = refs[3];
    return pltpu_async_copy(c, pl_ds(c, hbm, 0, i * ROWS, ROWS), pl_at(c, buf, slot), pl_at(c, sems, slot));
}

/* Start and wait in the same step: correct, nothing overlaps. */
static void serial_kernel(pl_ctx *c, pl_ref *refs)
{
    int64_t i = pl_program_id(c, 0);
    pltpu_copy cp = page(c, refs, i, 0);
    pltpu_copy_start(c, &cp);
    pltpu_copy_wait(c, &cp);
    pl_copy(c, refs[1], pl_at(c, refs[2], 0));
}

/* Double-buffered by hand: step i starts the copy for i + 1 into the other
 * slot, then waits for its own (started by the previous step). */
static void double_buffered_kernel(pl_ctx *c, pl_ref *refs)
{
    int64_t i = pl_program_id(c, 0), n = pl_num_programs(c, 0), slot = i % 2;
    if (i == 0) {
        pltpu_copy first = page(c, refs, 0, 0);
        pltpu_copy_start(c, &first);
    }
    if (i + 1 < n) {
        pltpu_copy next = page(c, refs, i + 1, 1 - slot);
        pltpu_copy_start(c, &next);
    }
    pltpu_copy mine = page(c, refs, i, slot);
    pltpu_copy_wait(c, &mine);
    pl_copy(c, refs[1], pl_at(c, refs[2], slot));
}

/* The paging call of kernel, on fresh arrays: its return code. */
static int run_paging(pl_kernel_fn kernel, const pl_options *opt, pl_report *rep)
{
    th_io io = th_io_2d(ROWS * STEPS, COLS);
    pl_call call = paging_call(kernel);
    int rc = pl_pallas_call(&call, &io.a, &io.o, opt, rep);
    th_io_free(&io);
    return rc;
}

static void run_ok(pl_kernel_fn kernel, const pl_options *opt, pl_report *rep)
{
    th_io io = th_io_2d(ROWS * STEPS, COLS);
    pl_call call = paging_call(kernel);
    int rc = pl_pallas_call(&call, &io.a, &io.o, opt, rep);
    cr_assert_eq(rc, PL_OK, "%s", rep->error);
    cr_assert_eq(th_f32_diff(io.in, io.out, io.n), 0, "the output must equal the input");
    th_io_free(&io);
}

Test(dma, M7_copy_from_hbm_into_vmem)
{
    pl_report rep;
    run_ok(serial_kernel, NULL, &rep);
    cr_assert_eq(rep.dma_copies, STEPS);
    cr_assert_eq(rep.dma_bytes, STEPS * ROWS * COLS * 4, "every copy reads HBM");
    cr_assert_eq(rep.op[0].copies, 0, "an ANY operand is never copied by the pipeline (T5)");
    cr_assert_eq(rep.n_findings, 0);
}

Test(dma, M7_copies_may_span_grid_points)
{
    pl_report rep;
    run_ok(double_buffered_kernel, NULL, &rep);
    pl_options on_wait = {.dma_mode = PL_DMA_ON_WAIT};
    run_ok(double_buffered_kernel, &on_wait, &rep);
}

/* Timing: the hand-made double buffering overlaps each copy with the
 * previous step, so it beats start-then-wait on HBM-bound pages. */
Test(dma, manual_double_buffering_shows_as_overlap)
{
    pl_report serial, overlapped;
    run_ok(serial_kernel, NULL, &serial);
    run_ok(double_buffered_kernel, NULL, &overlapped);
    cr_assert_lt(overlapped.time_s, serial.time_s, "double-buffered %g vs serial %g", overlapped.time_s,
                 serial.time_s);
    cr_assert_lt(overlapped.dma_exposed_s, serial.dma_exposed_s);
    cr_assert_gt(serial.dma_exposed_s, 0, "start-then-wait exposes every copy");
}

Test(dma, manual_copies_appear_in_the_trace)
{
    char path[] = "/tmp/tilesim_dma_trace_XXXXXX";
    close(mkstemp(path));
    th_io io = th_io_2d(ROWS * STEPS, COLS);
    pl_call call = paging_call(double_buffered_kernel);
    pl_options opt = {.trace_path = path};
    pl_report rep;
    cr_assert_eq(pl_pallas_call(&call, &io.a, &io.o, &opt, &rep), PL_OK, "%s", rep.error);
    char *text = th_read_file(path);
    json_t *doc = th_json_parse(text, path);
    json_t *ev = json_object_get(doc, "traceEvents");
    cr_assert(json_is_array(ev), "no traceEvents array");
    int copies = 0;
    size_t i;
    json_t *e;
    json_array_foreach(ev, i, e) {
        const char *name = th_json_str(e, "name");
        copies += strncmp(name, "copy ", 5) == 0 && strcmp(th_json_str(e, "ph"), "X") == 0;
    }
    cr_assert_eq(copies, STEPS);
    cr_assert_not_null(strstr(text, "manual DMA 0"));
    json_decref(doc);
    free(text);
    unlink(path);
    th_io_free(&io);
}

/* ---- M7: what a copy may not be ---------------------------------------------------- */

static int expect_fault(pl_kernel_fn kernel, int code, const char *what)
{
    th_io io = th_io_2d(ROWS * STEPS, COLS);
    pl_call call = paging_call(kernel);
    pl_report rep;
    int rc = pl_pallas_call(&call, &io.a, &io.o, NULL, &rep);
    cr_assert_eq(rc, code, "want %s (%d), got %d: %s", pl_strerror(code), code, rc, rep.error);
    cr_assert(strstr(rep.error, what), "message lacks '%s': %s", what, rep.error);
    cr_assert(strstr(rep.error, "grid point"), "message lacks the grid point: %s", rep.error);
    th_io_free(&io);
    return rc;
}

static void shape_kernel(pl_ctx *c, pl_ref *refs)
{
    pltpu_copy cp = pltpu_async_copy(c, pl_ds(c, refs[0], 0, 0, ROWS / 2), pl_at(c, refs[2], 0), pl_at(c, refs[3], 0));
    (void)cp;
}

static void sem_kind_kernel(pl_ctx *c, pl_ref *refs)
{
    pltpu_copy cp = pltpu_async_copy(c, pl_ds(c, refs[0], 0, 0, ROWS), pl_at(c, refs[2], 0), pl_at(c, refs[2], 1));
    (void)cp;
}

static void sem_array_kernel(pl_ctx *c, pl_ref *refs)
{
    pltpu_copy cp = pltpu_async_copy(c, pl_ds(c, refs[0], 0, 0, ROWS), pl_at(c, refs[2], 0), refs[3]);
    (void)cp;
}

Test(dma, M7_shapes_must_match) { expect_fault(shape_kernel, PL_ESHAPE, "shapes differ (rule M7)"); }
Test(dma, M8_the_semaphore_must_be_a_dma_semaphore) { expect_fault(sem_kind_kernel, PL_ESPACE, "not a DMA semaphore"); }
Test(dma, M8_one_semaphore_not_an_array) { expect_fault(sem_array_kernel, PL_ESHAPE, "select one with pl_at"); }

static void dtype_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_ref wrong = refs[2];
    wrong.dtype = PL_I32; /* same bytes, other dtype */
    pltpu_copy cp = pltpu_async_copy(c, pl_ds(c, refs[0], 0, 0, ROWS), pl_at(c, wrong, 0), pl_at(c, refs[3], 0));
    (void)cp;
}

Test(dma, M7_dtypes_must_match) { expect_fault(dtype_kernel, PL_EDTYPE, "does not convert dtypes"); }

/* ---- M8: a DMA semaphore counts bytes --------------------------------------------------- */

static int64_t seen_after_start = -1, seen_after_wait = -1;

static void counting_kernel(pl_ctx *c, pl_ref *refs)
{
    pltpu_copy cp = page(c, refs, pl_program_id(c, 0), 0);
    pltpu_copy_start(c, &cp);
    seen_after_start = pltpu_semaphore_read(c, pl_at(c, refs[3], 0));
    pltpu_copy_wait(c, &cp);
    seen_after_wait = pltpu_semaphore_read(c, pl_at(c, refs[3], 0));
    pl_copy(c, refs[1], pl_at(c, refs[2], 0));
}

Test(dma, M8_dma_semaphores_count_bytes)
{
    pl_report rep;
    run_ok(counting_kernel, NULL, &rep);
    cr_assert_eq(seen_after_start, ROWS * COLS * 4, "eager: the copy landed and added its bytes");
    cr_assert_eq(seen_after_wait, 0, "the wait subtracts the copy's size");
    pl_options on_wait = {.dma_mode = PL_DMA_ON_WAIT};
    run_ok(counting_kernel, &on_wait, &rep);
    cr_assert_eq(seen_after_start, 0, "on_wait: nothing landed before the wait");
}

/* ---- M9: regular semaphores ----------------------------------------------------------- */

static void regular_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_ref s = pl_at(c, refs[2], 0);
    pltpu_semaphore_signal(c, s, 3);
    pltpu_semaphore_signal(c, s, 2);
    int64_t v = pltpu_semaphore_read(c, s);
    pltpu_semaphore_wait(c, s, 5);
    pl_fill(c, refs[1], (double)(v * 10 + pltpu_semaphore_read(c, s)));
}

Test(dma, M9_signal_wait_read)
{
    th_io io = th_io_2d(ROWS, COLS);
    pl_call call = {.name = "sem", .kernel = regular_kernel, .grid_rank = 1, .grid = {1}, .n_in = 1,
                    .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), ROWS, COLS)}, .n_out = 1,
                    .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), ROWS, COLS)}, .n_scratch = 1,
                    .scratch = {PLTPU_SEMAPHORE(2)}};
    pl_report rep;
    cr_assert_eq(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), PL_OK, "%s", rep.error);
    cr_assert_eq(io.out[0], 50.0f, "read 5 before the wait, 0 after");
    th_io_free(&io);
}

/* ---- M10: deadlocks and leftovers ---------------------------------------------------------- */

static void wait_first_kernel(pl_ctx *c, pl_ref *refs)
{
    pltpu_copy cp = page(c, refs, pl_program_id(c, 0), 0);
    pltpu_copy_wait(c, &cp); /* nothing started: can never finish */
}

static void never_waited_kernel(pl_ctx *c, pl_ref *refs)
{
    pltpu_copy cp = page(c, refs, pl_program_id(c, 0), pl_program_id(c, 0) % 2);
    if (pl_program_id(c, 0) == STEPS - 1) pltpu_copy_start(c, &cp);
    pl_fill(c, refs[1], 0);
}

static void regular_wait_kernel(pl_ctx *c, pl_ref *refs)
{
    (void)refs;
    pltpu_semaphore_wait(c, pl_at(c, refs[3], 0), 1);
}

Test(dma, M10_a_wait_nothing_can_satisfy_is_a_deadlock)
{
    expect_fault(wait_first_kernel, PL_EDEADLOCK, "deadlock, rule M10");
    expect_fault(wait_first_kernel, PL_EDEADLOCK, "refs[3]");
}

Test(dma, M10_a_regular_wait_on_a_dma_semaphore_is_refused)
{
    expect_fault(regular_wait_kernel, PL_ESPACE, "not a regular semaphore");
}

Test(dma, M10_a_copy_never_waited_is_an_error)
{
    th_io io = th_io_2d(ROWS * STEPS, COLS);
    pl_call call = paging_call(never_waited_kernel);
    pl_report rep;
    int rc = pl_pallas_call(&call, &io.a, &io.o, NULL, &rep);
    cr_assert_eq(rc, PL_ESEMAPHORE, "%s", rep.error);
    cr_assert(strstr(rep.error, "never waited") && strstr(rep.error, "grid point (3)") && strstr(rep.error, "M10"),
              "%s", rep.error);
    th_io_free(&io);
}

static void signal_only_kernel(pl_ctx *c, pl_ref *refs)
{
    pltpu_semaphore_signal(c, pl_at(c, refs[2], 1), 1);
    pl_fill(c, refs[1], 0);
}

Test(dma, M10_a_semaphore_left_nonzero_is_an_error)
{
    th_io io = th_io_2d(ROWS, COLS);
    pl_call call = {.name = "sem", .kernel = signal_only_kernel, .grid_rank = 1, .grid = {1}, .n_in = 1,
                    .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), ROWS, COLS)}, .n_out = 1,
                    .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), ROWS, COLS)}, .n_scratch = 1,
                    .scratch = {PLTPU_SEMAPHORE(2)}};
    pl_report rep;
    cr_assert_eq(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), PL_ESEMAPHORE);
    cr_assert(strstr(rep.error, "semaphore 1") && strstr(rep.error, "holds 1") && strstr(rep.error, "M10"), "%s",
              rep.error);
    th_io_free(&io);
}

/* ---- V4: two copies into the same bytes -------------------------------------------------- */

static void racing_kernel(pl_ctx *c, pl_ref *refs)
{
    pltpu_copy a = page(c, refs, 0, 0), b = page(c, refs, 1, 0);
    b.sem = pl_at(c, refs[3], 1);
    pltpu_copy_start(c, &a);
    pltpu_copy_start(c, &b); /* the same slot, no wait between */
}

static void disjoint_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_ref hbm = refs[0], buf = pl_at(c, refs[2], 0), sems = refs[3];
    /* two halves of one slot, by columns: disjoint although their spans interleave */
    pltpu_copy a = pltpu_async_copy(c, pl_ds(c, pl_ds(c, hbm, 0, 0, ROWS), 1, 0, COLS / 2), pl_ds(c, buf, 1, 0, COLS / 2),
                                    pl_at(c, sems, 0));
    pltpu_copy b = pltpu_async_copy(c, pl_ds(c, pl_ds(c, hbm, 0, 0, ROWS), 1, COLS / 2, COLS / 2),
                                    pl_ds(c, buf, 1, COLS / 2, COLS / 2), pl_at(c, sems, 1));
    pltpu_copy_start(c, &a);
    pltpu_copy_start(c, &b);
    pltpu_copy_wait(c, &a);
    pltpu_copy_wait(c, &b);
    pl_fill(c, refs[1], 0);
}

Test(dma, V4_two_copies_into_the_same_bytes_race)
{
    expect_fault(racing_kernel, PL_ERACE, "still writing");
    th_io io = th_io_2d(ROWS * STEPS, COLS);
    pl_call call = paging_call(disjoint_kernel);
    pl_report rep;
    cr_assert_eq(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), PL_OK, "disjoint halves: %s", rep.error);
    th_io_free(&io);
}

/* ---- a missing wait shows as a difference between the DMA modes --------------------------- */

static void early_read_kernel(pl_ctx *c, pl_ref *refs)
{
    int64_t i = pl_program_id(c, 0);
    pltpu_copy cp = page(c, refs, i, 0);
    pltpu_copy_start(c, &cp);
    pl_copy(c, refs[1], pl_at(c, refs[2], 0)); /* reads before the wait */
    pltpu_copy_wait(c, &cp);
}

Test(dma, M8_a_read_before_the_wait_differs_between_modes)
{
    th_io io = th_io_2d(ROWS * STEPS, COLS);
    pl_call call = paging_call(early_read_kernel);
    pl_options zero = {.uninit = PL_UNINIT_ZERO};
    pl_report rep;
    int rc = pl_check_dma_modes(&call, &io.a, &io.o, &zero, &rep);
    cr_assert_eq(rc, PL_ERACE, "%s", rep.error);
    cr_assert(strstr(rep.error, "before waiting") && strstr(rep.error, "block (0, 0)"), "%s", rep.error);
    call.kernel = double_buffered_kernel;
    cr_assert_eq(pl_check_dma_modes(&call, &io.a, &io.o, NULL, &rep), PL_OK, "%s", rep.error);
    th_io_free(&io);
}

/* ---- T5 / M1: ANY refs are reachable only by DMA ------------------------------------------ */

static void touch_any_kernel(pl_ctx *c, pl_ref *refs) { pl_fill(c, refs[1], pl_get_at(c, refs[0], 0, 0)); }

Test(dma, T5_an_any_operand_is_reachable_only_by_dma)
{
    expect_fault(touch_any_kernel, PL_ESPACE, "reachable only by DMA");
}

/* ---- a read of a copy's destination before its wait (issue 23) ------------------ */

/* Reads its slot, then waits: on a TPU the read races the copy. Every
 * checked run says so, naming the copy (M7, M8), not only
 * pl_check_dma_modes; the double-buffered kernel above, which reads the
 * other slot while the next copy lands, is clean. */
static void read_before_wait_kernel(pl_ctx *c, pl_ref *refs)
{
    int64_t i = pl_program_id(c, 0);
    pltpu_copy cp = page(c, refs, i, 0);
    pltpu_copy_start(c, &cp);
    pl_copy(c, refs[1], pl_at(c, refs[2], 0)); /* too early */
    pltpu_copy_wait(c, &cp);
}

static int early_reads(const pl_report *rep)
{
    int n = 0;
    for (int i = 0; i < rep->n_findings && i < PL_MAX_FINDINGS; i++)
        n += strstr(rep->findings[i].msg, "was still writing it") != NULL;
    return n;
}

Test(dma, M7_a_read_before_the_wait_is_found_in_every_checked_run)
{
    th_io io = th_io_2d(ROWS * STEPS, COLS);
    pl_call call = paging_call(read_before_wait_kernel);
    pl_report rep;
    cr_assert_eq(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), PL_OK, "%s", rep.error);
    cr_assert_eq(early_reads(&rep), STEPS, "one per copy read early");
    const pl_finding *f = NULL;
    for (int i = 0; i < rep.n_findings; i++)
        if (strstr(rep.findings[i].msg, "was still writing it")) f = f ? f : &rep.findings[i];
    cr_expect(strstr(f->msg, "pl_copy read") && strstr(f->msg, "copy 0") && strstr(f->msg, "M7"), "%s", f->msg);
    /* a finding of its own kind and rule, not a write into an input block (V3) */
    cr_expect_eq(f->kind, PL_FIND_DMA_INFLIGHT);
    cr_expect_str_eq(f->rule, "M7");
    /* strict: every finding is an error, this one too */
    pl_options strict = {.strict = 1};
    cr_assert_eq(pl_pallas_call(&call, &io.a, &io.o, &strict, &rep), PL_ERACE, "%s", rep.error);
    cr_expect(strstr(rep.error, "was still writing it") && strstr(rep.error, "grid point (0)"), "%s", rep.error);
    th_io_free(&io);
    pl_report ok;
    run_ok(double_buffered_kernel, NULL, &ok);
    cr_expect_eq(early_reads(&ok), 0, "%s", ok.n_findings ? ok.findings[0].msg : "");
    run_ok(serial_kernel, NULL, &ok);
    cr_expect_eq(early_reads(&ok), 0);
}

/* A store into a copy's destination, or into its source, before its wait: the copy's bytes and the store
 * race (M7). Each is a finding naming the copy (an error under strict); a store into the other slot, or
 * after the wait, is clean. */
static void store_into_landing_kernel(pl_ctx *c, pl_ref *refs)
{
    pltpu_copy cp = page(c, refs, pl_program_id(c, 0), 0);
    pltpu_copy_start(c, &cp);
    pl_fill(c, pl_at(c, refs[2], 0), 1.0); /* the copy still lands here */
    pltpu_copy_wait(c, &cp);
    pl_copy(c, refs[1], pl_at(c, refs[2], 0));
}

static void store_into_source_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_fill(c, pl_at(c, refs[2], 1), 2.0);
    pltpu_copy out = pltpu_async_copy(c, pl_at(c, refs[2], 1), pl_at(c, refs[2], 0), pl_at(c, refs[3], 0));
    pltpu_copy_start(c, &out);
    pl_fill(c, pl_at(c, refs[2], 1), 3.0); /* the copy may still read it */
    pltpu_copy_wait(c, &out);
    pl_copy(c, refs[1], pl_at(c, refs[2], 0));
}

static void store_elsewhere_kernel(pl_ctx *c, pl_ref *refs)
{
    pltpu_copy cp = page(c, refs, pl_program_id(c, 0), 0);
    pltpu_copy_start(c, &cp);
    pl_fill(c, pl_at(c, refs[2], 1), 1.0); /* the other slot */
    pltpu_copy_wait(c, &cp);
    pl_copy(c, refs[1], pl_at(c, refs[2], 0));
}

static const char *in_flight_finding(const pl_report *rep, const char *what)
{
    for (int i = 0; i < rep->n_findings && i < PL_MAX_FINDINGS; i++)
        if (rep->findings[i].kind == PL_FIND_DMA_INFLIGHT && strstr(rep->findings[i].msg, what))
            return rep->findings[i].msg;
    return NULL;
}

Test(dma, M7_a_store_into_a_copys_bytes_before_its_wait_is_found)
{
    th_io io = th_io_2d(ROWS * STEPS, COLS);
    pl_report rep;
    pl_call call = paging_call(store_into_landing_kernel);
    cr_assert_eq(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), PL_OK, "%s", rep.error);
    const char *m = in_flight_finding(&rep, "was still writing it");
    cr_expect(m && strstr(m, "pl_fill wrote") && strstr(m, "copy 0") && strstr(m, "pltpu_copy_wait"), "%s",
              m ? m : "no finding");
    call.kernel = store_into_source_kernel;
    cr_assert_eq(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), PL_OK, "%s", rep.error);
    m = in_flight_finding(&rep, "was still reading it");
    cr_expect(m && strstr(m, "old or the new values"), "%s", m ? m : "no finding");
    pl_options strict = {.strict = 1};
    cr_assert_eq(pl_pallas_call(&call, &io.a, &io.o, &strict, &rep), PL_ERACE, "%s", rep.error);
    call.kernel = store_elsewhere_kernel;
    cr_assert_eq(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), PL_OK, "%s", rep.error);
    cr_expect_null(in_flight_finding(&rep, "copy"), "the other slot is clean");
    th_io_free(&io);
}

/* pl_kernel_run with check_dma_modes (`tilesim run --check-dma-modes`)
 * runs the call twice, copies moving at start and at their waits: the
 * early read gives different outputs, PL_ERACE; the serial kernel agrees. */
static int paging_build(const int64_t *v, pl_kernel_build *b, char *msg, size_t n)
{
    (void)msg, (void)n;
    b->call = paging_call(v[0] ? read_before_wait_kernel : serial_kernel);
    b->n_args = 1, b->n_outs = 1;
    b->args[0] = PL_ARRAY(NULL, PL_F32, ROWS * STEPS, COLS);
    b->outs[0] = PL_ARRAY(NULL, PL_F32, ROWS * STEPS, COLS);
    return PL_OK;
}

static int paging_reference(const int64_t *v, const pl_kernel_build *b, pl_array *want)
{
    (void)v;
    memcpy(want[0].data, b->args[0].data, sizeof(float) * ROWS * STEPS * COLS);
    return PL_OK;
}

static const pl_kernel_def paging_def = {
    .name = "paging", .summary = "copy rows by hand", .n_params = 1,
    .params = {{.name = "early", .def = 0, .help = "read before the wait"}},
    .build = paging_build, .reference = paging_reference,
};

Test(dma, M7_check_dma_modes_on_a_kernel_run_fails_the_early_read)
{
    int64_t v[1] = {1};
    pl_options opt = {.check_dma_modes = 1};
    pl_report rep;
    cr_assert_eq(pl_kernel_run(&paging_def, v, &opt, &rep, NULL, NULL), PL_ERACE, "%s", rep.error);
    v[0] = 0;
    cr_assert_eq(pl_kernel_run(&paging_def, v, &opt, &rep, NULL, NULL), PL_OK, "%s", rep.error);
}

/* Two local copies into one buffer at once are a race (V4), refused; with checks off nothing is rejected
 * for a race (docs/verifying.md), this one included: it was refused all the same. */
static void two_copies_kernel(pl_ctx *c, pl_ref *refs)
{
    pltpu_copy a = page(c, refs, 0, 0), b = pltpu_async_copy(c, pl_ds(c, refs[0], 0, ROWS, ROWS),
                                                             pl_at(c, refs[2], 0), pl_at(c, refs[3], 1));
    pltpu_copy_start(c, &a);
    pltpu_copy_start(c, &b);
    pltpu_copy_wait(c, &a);
    pltpu_copy_wait(c, &b);
    pl_copy(c, refs[1], pl_at(c, refs[2], 0));
}

Test(dma, V4_two_copies_into_one_buffer_are_refused_unless_checks_are_off)
{
    pl_report rep;
    cr_assert_eq(run_paging(two_copies_kernel, NULL, &rep), PL_ERACE, "%s", rep.error);
    cr_expect(strstr(rep.error, "still writing") && strstr(rep.error, "V4"), "%s", rep.error);
    cr_expect_eq(run_paging(two_copies_kernel, &(pl_options){.checks_off = 1}, &rep), PL_OK, "%s", rep.error);
}

/* G4: the double-buffered kernel waits at step i + 1 for what step i
 * started. Along an arbitrary axis that is right; along a parallel one a
 * megacore chip may run the two steps on different cores and the wait never
 * ends, so a one-core chip says so (a finding; an error under strict). */
Test(dma, G4_a_copy_waited_across_a_parallel_axis_is_a_finding)
{
    th_io io = th_io_2d(ROWS * STEPS, COLS);
    pl_call call = paging_call(double_buffered_kernel);
    pl_report rep;
    cr_assert_eq(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), PL_OK, "%s", rep.error);
    cr_expect_eq(rep.n_findings, 0, "an arbitrary axis: %s", rep.n_findings ? rep.findings[0].msg : "");
    call.semantics[0] = PL_PARALLEL;
    cr_assert_eq(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), PL_OK, "%s", rep.error);
    cr_assert_eq(rep.n_findings, 1);
    cr_expect_eq(rep.findings[0].kind, PL_FIND_PARALLEL_WAIT);
    cr_expect_str_eq(rep.findings[0].rule, "G4");
    cr_expect(strstr(rep.findings[0].msg, "started at grid point (0) and is waited at (1)") &&
                  strstr(rep.findings[0].msg, "axis 0, which is parallel"),
              "%s", rep.findings[0].msg);
    pl_options strict = {.strict = 1};
    cr_expect_eq(pl_pallas_call(&call, &io.a, &io.o, &strict, &rep), PL_ESEMAPHORE, "%s", rep.error);
    th_io_free(&io);
}

/* M7, P1: a copy from the input block's buffer started at step 0 and
 * waited at step 2, when the pipeline has refilled that buffer (two
 * buffers, grid 3): on a TPU the copy races the refill. A finding; an
 * error under strict (in on_wait mode the copy even carried block 2). */
static void copy_block_late(pl_ctx *c, pl_ref *refs) /* x block | o block, buf (VMEM), sem (DMA) */
{
    int64_t i = pl_program_id(c, 0);
    pltpu_copy cp = pltpu_async_copy(c, refs[0], refs[2], pl_at(c, refs[3], 0));
    if (i == 0) pltpu_copy_start(c, &cp);
    if (i == 2) pltpu_copy_wait(c, &cp);
    pl_copy(c, refs[1], refs[0]);
}

Test(dma, M7_a_copy_from_an_input_buffer_the_pipeline_refills_is_a_finding)
{
    th_io io = th_io_2d(3 * ROWS, COLS);
    pl_call call = {.name = "late", .kernel = copy_block_late, .grid_rank = 1, .grid = {3},
                    .n_in = 1, .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), ROWS, COLS)},
                    .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), ROWS, COLS)},
                    .n_scratch = 2, .scratch = {PLTPU_VMEM(PL_F32, ROWS, COLS), PLTPU_SEMAPHORE_DMA(1)}};
    pl_report rep;
    cr_assert_eq(pl_pallas_call(&call, &io.a, &io.o, NULL, &rep), PL_OK, "%s", rep.error);
    int found = 0;
    for (int i = 0; i < rep.n_findings && i < PL_MAX_FINDINGS; i++)
        found |= strstr(rep.findings[i].msg, "the pipeline copies the next block into the buffer of") != NULL;
    cr_expect(found, "no finding for the refilled buffer (%d findings)", rep.n_findings);
    pl_options strict = {.strict = 1};
    cr_expect_eq(pl_pallas_call(&call, &io.a, &io.o, &strict, &rep), PL_ERACE, "%s", rep.error);
    th_io_free(&io);
}

/* A wait whose descriptor is half the copy's size leaves half the bytes on
 * the DMA semaphore: M10 at the end, saying how that happens (the count is
 * in bytes, the two sides' descriptors differ). */
static void half_wait_kernel(pl_ctx *c, pl_ref *refs)
{
    int64_t i = pl_program_id(c, 0);
    pltpu_copy cp = page(c, refs, i, 0);
    pltpu_copy_start(c, &cp);
    pl_ref half_buf = pl_ds(c, pl_at(c, refs[2], 0), 0, 0, ROWS / 2);
    pltpu_copy half = pltpu_async_copy(c, pl_ds(c, refs[0], 0, i * ROWS, ROWS / 2), half_buf, pl_at(c, refs[3], 0));
    pltpu_copy_wait(c, &half);
    pl_copy(c, refs[1], pl_at(c, refs[2], 0));
}

Test(dma, M10_bytes_left_by_a_smaller_wait_are_explained)
{
    pl_report rep;
    cr_assert_eq(run_paging(half_wait_kernel, NULL, &rep), PL_ESEMAPHORE, "%s", rep.error);
    cr_expect(strstr(rep.error, "holds") && strstr(rep.error, "a wait's descriptor was smaller than the copies"),
              "%s", rep.error);
}
