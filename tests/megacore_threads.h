/* tests/megacore_threads.h: the harness of the megacore_threads suite
 * (tests/test_megacore_threads*.c), issue 11.
 *
 * On a megacore chip (G4: v4, v5p, what-if chips with more cores) a call may
 * walk each TensorCore's part of the grid on its own host thread
 * (pl_options.host_threads: 0 one per TensorCore up to the host's cores, 1
 * the cores one after the other). The promise: everything the caller gets is
 * the same bit for bit whatever host_threads is. mt_check runs one call with
 * host_threads 1, then 0, 2 (and 3 on chips with more than two cores) and
 * compares everything: the code, pl_last_error, every field of the report
 * (doubles by their bits), its findings and operand rows, its JSON, every
 * output byte (outputs start as a 0xA5 pattern, so a block written on one
 * side only shows), the inputs after the call, the trace file and what
 * on_step saw, per core in order.
 *
 * Everything is static: each test file includes it on its own.
 */
#ifndef TILESIM_TEST_MEGACORE_THREADS_H
#define TILESIM_TEST_MEGACORE_THREADS_H

#include <inttypes.h>
#include <pthread.h>
#include <unistd.h>

#include "../kernel/pltpu.h"
#include "helpers.h"

#define MT_MAX_ARGS (2 * PL_MAX_OPERANDS)
#define MT_OUT_BYTE 0xA5 /* what outputs hold before a call */

/* ---- what on_step saw ---------------------------------------------------------------- */

/* One call of on_step, copied field by field into zeroed memory, so that
 * two records compare with memcmp. */
typedef struct mt_step {
    int64_t seq; /* arrival order in the run; sorted on, never compared */
    int core, final, grid_rank, n_operands;
    int64_t step, idx[PL_MAX_GRID];
    int actions[3 * PL_MAX_OPERANDS], slots[3 * PL_MAX_OPERANDS], wrote_back[3 * PL_MAX_OPERANDS];
    int64_t blocks[3 * PL_MAX_OPERANDS][PL_MAX_RANK], bytes[3 * PL_MAX_OPERANDS];
    int64_t wb_blocks[3 * PL_MAX_OPERANDS][PL_MAX_RANK], wb_bytes[3 * PL_MAX_OPERANDS];
} mt_step;

/* on_step may run on several host threads at once: the log has a mutex. */
typedef struct mt_steplog {
    pthread_mutex_t mu;
    mt_step *v;
    int64_t n, cap;
} mt_steplog;

static inline void mt_record_step(const pl_step_info *s, void *user)
{
    mt_steplog *log = user;
    pthread_mutex_lock(&log->mu);
    if (log->n == log->cap) {
        log->cap = log->cap ? 2 * log->cap : 64;
        log->v = realloc(log->v, (size_t)log->cap * sizeof *log->v);
    }
    if (log->v) {
        mt_step *r = &log->v[log->n];
        memset(r, 0, sizeof *r);
        r->seq = log->n++;
        r->core = s->core, r->final = s->final, r->grid_rank = s->grid_rank, r->n_operands = s->n_operands;
        r->step = s->step;
        for (int a = 0; a < s->grid_rank && a < PL_MAX_GRID; a++) r->idx[a] = s->idx[a];
        for (int o = 0; o < s->n_operands && o < 3 * PL_MAX_OPERANDS; o++) {
            const pl_step_operand *p = &s->op[o];
            r->actions[o] = (int)p->action, r->slots[o] = p->slot, r->wrote_back[o] = p->wrote_back;
            r->bytes[o] = p->bytes, r->wb_bytes[o] = p->wb_bytes;
            for (int d = 0; d < s->ranks[o] && d < PL_MAX_RANK; d++)
                r->blocks[o][d] = p->block[d], r->wb_blocks[o][d] = p->wb_block[d];
        }
    }
    pthread_mutex_unlock(&log->mu);
}

/* Per core in the order that core ran its steps: threads may interleave
 * the cores, never a core's own steps. */
static inline int mt_step_cmp(const void *x, const void *y)
{
    const mt_step *a = x, *b = y;
    if (a->core != b->core) return a->core < b->core ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* ---- one call, and one run of it ------------------------------------------------------- */

typedef struct mt_call {
    const char *what;  /* names the case in messages */
    pl_call call;
    int n_args, n_outs;
    pl_array args[MT_MAX_ARGS];      /* data: the pristine inputs (copied for each run), or NULL */
    pl_array outs[PL_MAX_OPERANDS];  /* dtype and shape; data allocated per run unless cost-only */
    pl_options opt;                  /* host_threads, trace_path and on_step are set per run */
    int trace, steps;                /* 1: write and compare a trace file / the on_step log */
} mt_call;

typedef struct mt_run {
    int threads, rc;
    pl_report *rep;
    char *json, *last_error, *trace;
    size_t json_len, trace_len;
    unsigned char *outs[PL_MAX_OPERANDS], *args[MT_MAX_ARGS];
    mt_steplog log;
} mt_run;

static inline void *mt_dup(const void *p, size_t n)
{
    void *q = malloc(n ? n : 1);
    cr_assert(q, "out of host memory for %zu bytes", n);
    if (n) memcpy(q, p, n);
    return q;
}

static inline char *mt_report_json(const pl_report *r, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    cr_assert(f, "open_memstream failed");
    pl_report_json(r, f);
    fclose(f);
    return buf;
}

static inline char *mt_read_bytes(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f, "the trace %s was not written", path);
    char *buf = NULL;
    size_t cap = 0;
    FILE *m = open_memstream(&buf, &cap);
    cr_assert(m);
    char chunk[65536];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) fwrite(chunk, 1, got, m);
    fclose(f);
    fclose(m);
    *len = cap;
    return buf;
}

static inline mt_run mt_run_once(const mt_call *mc, int threads)
{
    mt_run r = {.threads = threads};
    pthread_mutex_init(&r.log.mu, NULL);
    pl_array args[MT_MAX_ARGS], outs[PL_MAX_OPERANDS];
    memcpy(args, mc->args, sizeof args);
    memcpy(outs, mc->outs, sizeof outs);
    for (int a = 0; a < mc->n_args; a++) /* a fresh copy: an aliased or written input must not leak into the next run */
        if (mc->args[a].data) r.args[a] = args[a].data = mt_dup(mc->args[a].data, pl_array_bytes(&mc->args[a]));
    for (int o = 0; o < mc->n_outs && !mc->opt.cost_only; o++) {
        size_t n = pl_array_bytes(&outs[o]);
        r.outs[o] = outs[o].data = malloc(n ? n : 1);
        cr_assert(r.outs[o], "out of host memory");
        memset(r.outs[o], MT_OUT_BYTE, n);
    }
    pl_options opt = mc->opt;
    opt.host_threads = threads;
    char path[] = "/tmp/tilesim_mt_trace_XXXXXX";
    if (mc->trace) {
        int fd = mkstemp(path);
        cr_assert(fd >= 0, "mkstemp failed");
        close(fd);
        opt.trace_path = path;
    }
    if (mc->steps) opt.on_step = mt_record_step, opt.on_step_user = &r.log;
    r.rep = malloc(sizeof *r.rep);
    cr_assert(r.rep);
    memset(r.rep, 0x5A, sizeof *r.rep); /* whatever the call leaves unset shows as a difference of bytes */
    r.rc = pl_pallas_call(&mc->call, args, outs, &opt, r.rep);
    r.last_error = mt_dup(pl_last_error(), strlen(pl_last_error()) + 1);
    r.json = mt_report_json(r.rep, &r.json_len);
    if (mc->trace) {
        r.trace = mt_read_bytes(path, &r.trace_len);
        unlink(path);
    }
    if (r.log.n) qsort(r.log.v, (size_t)r.log.n, sizeof *r.log.v, mt_step_cmp); /* qsort(NULL, 0) is UB */
    return r;
}

static inline void mt_run_free(mt_run *r)
{
    for (int i = 0; i < MT_MAX_ARGS; i++) free(r->args[i]);
    for (int i = 0; i < PL_MAX_OPERANDS; i++) free(r->outs[i]);
    free(r->rep), free(r->json), free(r->last_error), free(r->trace), free(r->log.v);
    pthread_mutex_destroy(&r->log.mu);
}

/* ---- comparing two runs -------------------------------------------------------------------- */

#define MT_WHERE "%s, host_threads %d vs 1: "
#define MT_I(f)                                                                                                 \
    cr_assert(a->f == b->f, MT_WHERE #f " is %lld, %lld with host_threads 1", mc->what, th, (long long)b->f,    \
              (long long)a->f)
#define MT_D(f)                                                                                                 \
    cr_assert(memcmp(&a->f, &b->f, sizeof a->f) == 0, MT_WHERE #f " is %a, %a with host_threads 1", mc->what,  \
              th, (double)b->f, (double)a->f)
#define MT_S(f)                                                                                                 \
    cr_assert(strcmp(a->f, b->f) == 0, MT_WHERE #f " differs:\n  \"%s\"\nwith host_threads 1:\n  \"%s\"",      \
              mc->what, th, b->f, a->f)

static inline void mt_same_operand(const mt_call *mc, int th, int o, const pl_operand_report *a, const pl_operand_report *b)
{
    cr_assert_str_eq(a->name, b->name, MT_WHERE "operand %d's name", mc->what, th, o);
    MT_I(role); MT_I(space); MT_I(dtype); MT_I(rank); MT_I(buffers); MT_I(block_bytes); MT_I(vmem_bytes);
    MT_I(copies); MT_I(skipped); MT_I(writebacks); MT_I(bytes_in); MT_I(bytes_out); MT_I(fetchbacks);
    MT_I(single_buffered); MT_I(array_bytes);
    for (int d = 0; d < PL_MAX_RANK; d++) MT_I(block[d]);
}

static inline void mt_same_finding(const mt_call *mc, int th, const pl_finding *a, const pl_finding *b)
{
    MT_I(kind); MT_I(operand);
    MT_S(rule); MT_S(msg);
    for (int d = 0; d < PL_MAX_GRID; d++) MT_I(point[d]);
    for (int d = 0; d < PL_MAX_RANK; d++) MT_I(block[d]);
}

static inline void mt_same_timing(const mt_call *mc, int th, const pl_report *a, const pl_report *b)
{
    MT_I(cores); MT_D(time_s); MT_D(compute_s); MT_D(mxu_s); MT_D(vpu_s); MT_D(scalar_s); MT_I(scalar_ops);
    MT_I(eup_elems); MT_D(overhead_s); MT_D(dma_exposed_s); MT_D(mxu_flops_padded); MT_I(mxu_dtype);
    MT_D(flops_per_s); MT_D(peak_fraction); MT_D(intensity); MT_D(critical_intensity); MT_D(hbm_bw_achieved);
    MT_D(hbm_bw_fraction); MT_D(vpu_fraction); MT_I(mxu_light); MT_I(slowest_core); MT_D(core_compute_s);
    MT_D(core_exposed_s); MT_D(core_overhead_s); MT_I(bound);
    MT_S(bound_msg);
}

static inline void mt_same_report(const mt_call *mc, int th, const pl_report *a, const pl_report *b)
{
    MT_I(status); MT_S(error); MT_S(warnings); MT_I(n_warnings); MT_S(call_name);
    cr_assert(a->chip == b->chip, MT_WHERE "the report names another chip", mc->what, th);
    MT_I(grid_rank); MT_I(steps); MT_I(n_operands); MT_I(n_scratch);
    for (int g = 0; g < PL_MAX_GRID; g++) MT_I(grid[g]);
    for (int o = 0; o < a->n_operands && o < 3 * PL_MAX_OPERANDS; o++) mt_same_operand(mc, th, o, &a->op[o], &b->op[o]);
    for (int s = 0; s < a->n_scratch && s < PL_MAX_SCRATCH; s++) {
        MT_S(scratch[s].name); MT_I(scratch[s].space); MT_I(scratch[s].dtype); MT_I(scratch[s].bytes);
    }
    MT_I(vmem_bytes); MT_I(vmem_limit); MT_I(smem_bytes); MT_D(mxu_flops); MT_D(vpu_flops); MT_I(hbm_bytes);
    MT_I(dma_copies); MT_I(dma_bytes);
    mt_same_timing(mc, th, a, b);
    MT_I(n_findings);
    for (int i = 0; i < a->n_findings && i < PL_MAX_FINDINGS; i++) mt_same_finding(mc, th, &a->findings[i], &b->findings[i]);
    /* anything not named above: the whole report, byte for byte */
    const unsigned char *x = (const void *)a, *y = (const void *)b;
    size_t at = 0;
    while (at < sizeof *a && x[at] == y[at]) at++;
    cr_assert(at == sizeof *a, MT_WHERE "the reports differ at byte %zu of %zu (a field or padding the checks above do not name)",
              mc->what, th, at, sizeof *a);
}

static inline void mt_same_bytes(const mt_call *mc, int th, const char *what, const void *a, const void *b, size_t n)
{
    const unsigned char *x = a, *y = b;
    size_t at = 0;
    while (at < n && x[at] == y[at]) at++;
    cr_assert(at == n, MT_WHERE "%s differs first at byte %zu of %zu (0x%02x, 0x%02x with host_threads 1)", mc->what,
              th, what, at, n, at < n ? y[at] : 0, at < n ? x[at] : 0);
}

static inline void mt_same_run(const mt_call *mc, const mt_run *one, const mt_run *r)
{
    int th = r->threads;
    cr_assert(r->rc == one->rc, MT_WHERE "returned %d (%s), %d (%s) with host_threads 1: %s", mc->what, th, r->rc,
              pl_strerror(r->rc), one->rc, pl_strerror(one->rc), r->rep->error);
    cr_assert(strcmp(r->last_error, one->last_error) == 0, MT_WHERE "pl_last_error differs: \"%s\" vs \"%s\"", mc->what,
              th, r->last_error, one->last_error);
    mt_same_report(mc, th, one->rep, r->rep);
    cr_assert(r->json_len == one->json_len && memcmp(r->json, one->json, r->json_len) == 0,
              MT_WHERE "the JSON report differs:\n%s\nwith host_threads 1:\n%s", mc->what, th, r->json, one->json);
    char what[64];
    for (int o = 0; o < mc->n_outs && !mc->opt.cost_only; o++) {
        snprintf(what, sizeof what, "output %d", o);
        mt_same_bytes(mc, th, what, one->outs[o], r->outs[o], pl_array_bytes(&mc->outs[o]));
    }
    for (int a = 0; a < mc->n_args; a++)
        if (mc->args[a].data) {
            snprintf(what, sizeof what, "argument %d after the call", a);
            mt_same_bytes(mc, th, what, one->args[a], r->args[a], pl_array_bytes(&mc->args[a]));
        }
    if (mc->trace) {
        cr_assert_gt(one->trace_len, 0, "%s: the trace is empty", mc->what);
        cr_assert(r->trace_len == one->trace_len, MT_WHERE "the trace has %zu bytes, %zu with host_threads 1", mc->what,
                  th, r->trace_len, one->trace_len);
        mt_same_bytes(mc, th, "the trace file", one->trace, r->trace, r->trace_len);
    }
    if (mc->steps) {
        cr_assert_gt(one->log.n, 0, "%s: on_step never ran", mc->what);
        cr_assert(r->log.n == one->log.n, MT_WHERE "on_step ran %lld times, %lld with host_threads 1", mc->what, th,
                  (long long)r->log.n, (long long)one->log.n);
        for (int64_t i = 0; i < r->log.n; i++) {
            mt_step x = one->log.v[i], y = r->log.v[i];
            x.seq = y.seq = 0;
            cr_assert(memcmp(&x, &y, sizeof x) == 0, MT_WHERE "on_step call %lld of core %d (step %lld) differs",
                      mc->what, th, (long long)i, y.core, (long long)y.step);
        }
    }
}

/* The chip the options name: its cores decide the host_threads tried. */
static inline int mt_cores(const pl_options *opt)
{
    const pl_chip *chip = opt->chip_spec ? opt->chip_spec : pl_chip_find(opt->chip ? opt->chip : "v5e");
    cr_assert(chip, "no chip %s", opt->chip);
    return chip->cores_per_device;
}

/* Run mc with host_threads 1, 0, 2 (and 3 on chips with more than two
 * cores), compare every run with the first, and return the first's report
 * in *rep (may be NULL) and its code: the caller asserts the case did what
 * it is about (an error, a finding), so that the comparison is not vacuous. */
static inline int mt_check(const mt_call *mc, pl_report *rep)
{
    static const int threads[] = {0, 2, 3};
    int n = mt_cores(&mc->opt) > 2 ? 3 : 2;
    mt_run one = mt_run_once(mc, 1);
    for (int i = 0; i < n; i++) {
        mt_run r = mt_run_once(mc, threads[i]);
        mt_same_run(mc, &one, &r);
        mt_run_free(&r);
    }
    int rc = one.rc;
    if (rep) *rep = *one.rep;
    mt_run_free(&one);
    return rc;
}

/* ---- chips and data ---------------------------------------------------------------------- */

/* A what-if chip with four TensorCores (G4), from the v5p preset. */
static inline const pl_chip *mt_chip4(void)
{
    static pl_chip chip;
    char err[256];
    cr_assert_eq(pl_chip_parse("base = v5p\ncores_per_device = 4\n", "mt4", &chip, err, sizeof err), PL_OK, "%s", err);
    return &chip;
}

/* The options of chip i of the suite: v5p, v4, the 4-core what-if chip. */
#define MT_N_CHIPS 3
static inline pl_options mt_chip_opt(int i, uint64_t seed)
{
    pl_options opt = {.seed = seed};
    if (i == 0) opt.chip = "v5p";
    else if (i == 1) opt.chip = "v4";
    else opt.chip_spec = mt_chip4();
    return opt;
}

static inline const char *mt_chip_name(int i) { return i == 0 ? "v5p" : i == 1 ? "v4" : "what-if 4 cores"; }

static const uint64_t mt_seeds[] = {0, 1, 7, 12345};
#define MT_N_SEEDS 4

/* A malloc'd array of dt and shape (rows, cols) with values k/32 in
 * [-1, 1), exact in every float dtype, from seed. */
static inline pl_array mt_array(pl_dtype dt, int64_t rows, int64_t cols, uint64_t seed)
{
    pl_array a = PL_ARRAY(NULL, dt, rows, cols);
    size_t es = pl_dtype_size(dt);
    a.data = malloc((size_t)(rows * cols) * es + 1);
    cr_assert(a.data, "out of host memory");
    for (int64_t i = 0; i < rows * cols; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        pl_store_elem((char *)a.data + (size_t)i * es, dt, (double)((int64_t)(seed >> 58) - 32) / 32.0);
    }
    return a;
}

static inline void mt_free_args(mt_call *mc)
{
    for (int a = 0; a < mc->n_args; a++) free(mc->args[a].data), mc->args[a].data = NULL;
}

#endif
