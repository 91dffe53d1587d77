/* tests/test_megacore_threads.c: issue 11, a megacore chip's TensorCores
 * walked on host threads (G4, pl_options.host_threads). Whatever
 * host_threads is, a call gives the same results and reports bit for bit
 * (the harness, tests/megacore_threads.h, says what is compared). Here: real
 * matmuls on v5p, v4 and a 4-core what-if chip under four seeds, every
 * built-in kernel, and that the threads are really there. The findings and
 * errors are in test_megacore_threads2.c, the pipeline's features in
 * test_megacore_threads3.c.
 */
#include <hwloc.h>

#include "../examples/kernels/matmul.h"
#include "../examples/kernels/registry.h"
#include "../sim/kdef.h"
#include "megacore_threads.h"

/* ---- real matmuls: a parallel axis the cores split, an arbitrary K axis ------------------- */

enum { MM_M = 512, MM_N = 256, MM_K = 384, MM_B = 128 }; /* grid (4, 2, 3): 4 splits on 2 and 4 cores */

static void matmul_case(mt_call *mc, mm_params *p, pl_dtype dt, int64_t m, int64_t n, int64_t k, int64_t b)
{
    mm_call(&mc->call, p, m, n, k, b, b, b);
    mc->n_args = 2, mc->n_outs = 1;
    mc->args[0] = mt_array(dt, m, k, 11);
    mc->args[1] = mt_array(dt, k, n, 12);
    mc->outs[0] = PL_ARRAY(NULL, dt, m, n);
}

static void check_matmuls(pl_dtype dt)
{
    for (int chip = 0; chip < MT_N_CHIPS; chip++)
        for (int s = 0; s < MT_N_SEEDS; s++) {
            char what[96];
            snprintf(what, sizeof what, "%s matmul on %s, seed %" PRIu64, pl_dtype_name(dt), mt_chip_name(chip),
                     mt_seeds[s]);
            mt_call mc = {.what = what, .opt = mt_chip_opt(chip, mt_seeds[s])};
            mm_params p;
            matmul_case(&mc, &p, dt, MM_M, MM_N, MM_K, MM_B);
            pl_report rep;
            int rc = mt_check(&mc, &rep);
            cr_assert_eq(rc, PL_OK, "%s: %s", what, rep.error);
            cr_assert_eq(rep.cores, chip == 2 ? 4 : 2, "%s: the cores split the grid (G4)", what);
            cr_assert_eq(rep.steps, 4 * 2 * 3);
            mt_free_args(&mc);
        }
}

Test(megacore_threads, f32_matmul_is_the_same_on_any_host_threads) { check_matmuls(PL_F32); }
Test(megacore_threads, bf16_matmul_is_the_same_on_any_host_threads) { check_matmuls(PL_BF16); }

/* The result is also right (V5): the threads compute what one thread does,
 * and that is the matmul. */
Test(megacore_threads, threaded_matmul_matches_openblas)
{
    mt_call mc = {.what = "f32 matmul on v5p", .opt = mt_chip_opt(0, 0)};
    mm_params p;
    matmul_case(&mc, &p, PL_F32, MM_M, MM_N, MM_K, MM_B);
    mt_run r = mt_run_once(&mc, 0);
    cr_assert_eq(r.rc, PL_OK, "%s", r.rep->error);
    pl_array c = mc.outs[0];
    c.data = r.outs[0];
    pl_check chk;
    cr_assert_eq(pl_check_matmul(&mc.args[0], &mc.args[1], &c, &chk, NULL), PL_OK, "norm_err %g", chk.norm_err);
    mt_run_free(&r);
    mt_free_args(&mc);
}

/* ---- every built-in kernel, real runs on v5p ----------------------------------------------- */

/* Build definition d with its defaults and fill its inputs as pl_kernel_run
 * does; the build must outlive the call (user pointers point into it). */
static void builtin_case(const pl_kernel_def *d, pl_kernel_build *b, mt_call *mc)
{
    int64_t v[PL_KDEF_MAX_PARAMS];
    char msg[512] = "";
    pl_kernel_defaults(d, v);
    cr_assert_eq(d->check ? d->check(v, msg, sizeof msg) : PL_OK, PL_OK, "%s: %s", d->name, msg);
    cr_assert_eq(d->build(v, b, msg, sizeof msg), PL_OK, "%s: %s", d->name, msg);
    if (!b->call.name) b->call.name = d->name;
    void *kept[PL_KDEF_MAX_ARGS] = {0}, *mine[PL_KDEF_MAX_ARGS] = {0};
    for (int a = 0; a < b->n_args; a++) {
        kept[a] = b->args[a].data;
        if (!kept[a]) b->args[a].data = mine[a] = calloc(1, pl_array_bytes(&b->args[a]) + 1);
        cr_assert(b->args[a].data, "out of host memory");
    }
    if (d->inputs) cr_assert_eq(d->inputs(v, b, 3), PL_OK, "%s: inputs", d->name);
    else { /* the default generator fills what the driver allocated, as pl_kernel_run has it */
        for (int a = 0; a < b->n_args; a++) b->args[a].data = mine[a];
        cr_assert_eq(pl_kernel_fill_inputs(v, b, 3), PL_OK, "%s: inputs", d->name);
        for (int a = 0; a < b->n_args; a++) b->args[a].data = kept[a] ? kept[a] : mine[a];
    }
    mc->call = b->call;
    mc->n_args = b->n_args, mc->n_outs = b->n_outs;
    for (int a = 0; a < b->n_args; a++) {
        mc->args[a] = b->args[a];
        /* mc owns every argument's data: a copy of what build set, or the filled array */
        if (kept[a]) mc->args[a].data = mt_dup(kept[a], pl_array_bytes(&b->args[a]));
        b->args[a].data = kept[a];
    }
    for (int o = 0; o < b->n_outs; o++) mc->outs[o] = b->outs[o];
}

Test(megacore_threads, every_builtin_kernel_is_the_same_on_any_host_threads, .timeout = 300)
{
    int parallel = 0;
    for (int k = 0; k < ex_kernel_count(); k++) {
        const pl_kernel_def *d = ex_kernel_at(k);
        for (int s = 0; s < 2; s++) {
            char what[96];
            snprintf(what, sizeof what, "built-in %s on v5p, seed %d", d->name, s ? 7 : 0);
            pl_kernel_build *b = calloc(1, sizeof *b);
            cr_assert(b);
            mt_call mc = {.what = what, .opt = mt_chip_opt(0, s ? 7 : 0)};
            builtin_case(d, b, &mc);
            pl_report rep;
            int rc = mt_check(&mc, &rep);
            cr_assert_eq(rc, PL_OK, "%s: %s", what, rep.error);
            parallel += rep.cores == 2;
            mt_free_args(&mc);
            free(b);
        }
    }
    /* most of them have a parallel axis the two cores split */
    cr_assert_geq(parallel, ex_kernel_count(), "only %d runs used both cores", parallel);
}

/* pl_kernel_run (build, inputs, run, verify against the reference): the
 * same reports and verdicts on any host_threads. */
Test(megacore_threads, builtin_runs_and_verdicts_are_the_same, .timeout = 300)
{
    for (int k = 0; k < ex_kernel_count(); k++) {
        const pl_kernel_def *d = ex_kernel_at(k);
        int64_t v[PL_KDEF_MAX_PARAMS];
        pl_kernel_defaults(d, v);
        pl_report *rep = malloc(2 * sizeof *rep);
        pl_check chk[2][PL_MAX_OPERANDS];
        cr_assert(rep);
        int rc[2];
        for (int t = 0; t < 2; t++) {
            pl_options opt = {.chip = "v5p", .seed = 12345, .host_threads = t ? 0 : 1};
            rc[t] = pl_kernel_run(d, v, &opt, &rep[t], chk[t], NULL);
        }
        mt_call mc = {.what = d->name};
        cr_assert_eq(rc[0], PL_OK, "%s: %s", d->name, rep[0].error);
        cr_assert_eq(rc[1], rc[0], "%s: %s", d->name, rep[1].error);
        mt_same_report(&mc, 0, &rep[0], &rep[1]);
        cr_assert(memcmp(chk[0], chk[1], sizeof chk[0]) == 0, "%s: the verdicts differ with host_threads 0",
                  d->name);
        free(rep);
    }
}

/* ---- the threads are really used ----------------------------------------------------------- */

/* NOTE: this test FAILS until the lead lands the threads of issue 11 (the
 * cores are walked one after the other today). It is the only one of the
 * suite that does: the others hold now and guard the threaded code. */

enum { TH_G0 = 4, TH_G1 = 8 };

typedef struct thread_log {
    pthread_mutex_t mu;
    int n;
    pthread_t tid[TH_G0 * TH_G1];
    int64_t i[TH_G0 * TH_G1];
} thread_log;

static void thread_kernel(pl_ctx *c, pl_ref *refs)
{
    thread_log *log = pl_kernel_user(c); /* the kernel may run on two threads at once */
    pthread_mutex_lock(&log->mu);
    if (log->n < TH_G0 * TH_G1) log->tid[log->n] = pthread_self(), log->i[log->n++] = pl_program_id(c, 0);
    pthread_mutex_unlock(&log->mu);
    pl_copy(c, refs[1], refs[0]);
}

static int host_cores(void)
{
    hwloc_topology_t topo;
    cr_assert_eq(hwloc_topology_init(&topo), 0);
    cr_assert_eq(hwloc_topology_load(topo), 0);
    int n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    hwloc_topology_destroy(topo);
    return n < 1 ? 1 : n;
}

/* Distinct threads among the steps with i in [lo, hi) (all: lo 0, hi TH_G0). */
static int distinct_threads(const thread_log *log, int64_t lo, int64_t hi, pthread_t *first)
{
    pthread_t seen[TH_G0 * TH_G1];
    int n = 0;
    for (int s = 0; s < log->n; s++) {
        if (log->i[s] < lo || log->i[s] >= hi) continue;
        int known = 0;
        for (int k = 0; k < n; k++) known |= pthread_equal(seen[k], log->tid[s]);
        if (!known) seen[n++] = log->tid[s];
    }
    if (first && n) *first = seen[0];
    return n;
}

static void run_threads(int host_threads, thread_log *log)
{
    th_io io = th_io_2d(TH_G0 * 8, TH_G1 * 128);
    pl_call call = th_copy_call_2d(TH_G0 * 8, TH_G1 * 128, 8, 128);
    call.kernel = thread_kernel, call.user = log;
    call.semantics[0] = call.semantics[1] = PL_PARALLEL;
    memset(log, 0, sizeof *log);
    pthread_mutex_init(&log->mu, NULL);
    pl_options opt = {.chip = "v5p", .host_threads = host_threads};
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &io.a, &io.o, &opt, &rep), &rep);
    cr_assert_eq(rep.cores, 2);
    cr_assert_eq(log->n, TH_G0 * TH_G1, "every step ran once");
    cr_assert_eq(th_f32_diff(io.in, io.out, io.n), 0);
    pthread_mutex_destroy(&log->mu);
    th_io_free(&io);
}

Test(megacore_threads, the_cores_run_on_their_own_host_threads)
{
    thread_log log;
    run_threads(1, &log);
    cr_assert_eq(distinct_threads(&log, 0, TH_G0, NULL), 1, "host_threads 1: one thread walks both cores");

    run_threads(0, &log);
    if (host_cores() < 2) {
        cr_assert_eq(distinct_threads(&log, 0, TH_G0, NULL), 1, "a one-core host: one thread");
        return;
    }
    /* G4: core 0 walks i in {0, 1}, core 1 i in {2, 3} */
    pthread_t t0, t1;
    cr_assert_eq(distinct_threads(&log, 0, TH_G0 / 2, &t0), 1, "core 0's steps ran on one thread");
    cr_assert_eq(distinct_threads(&log, TH_G0 / 2, TH_G0, &t1), 1, "core 1's steps ran on one thread");
    cr_assert(!pthread_equal(t0, t1), "host_threads 0 on a %d-core host: the two TensorCores ran on one thread "
              "(issue 11: expected one host thread per TensorCore)", host_cores());
}

/* A negative host_threads is a mistake of the caller, said as such. */
Test(megacore_threads, negative_host_threads_is_refused)
{
    th_io io = th_io_2d(32, 256);
    pl_call call = th_copy_call_2d(32, 256, 8, 128);
    pl_options opt = {.chip = "v5p", .host_threads = -1};
    pl_report rep;
    TH_EXPECT_ERROR(pl_pallas_call(&call, &io.a, &io.o, &opt, &rep), rep, PL_EINVAL, "host_threads", "-1");
    cr_assert_eq(th_io_touched(&io), 0, "a refused call writes nothing");
    th_io_free(&io);
}
