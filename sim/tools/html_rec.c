/* sim/tools/html_rec.c: what the teaching page shows, recorded from one
 * cost-only walk of a kernel configuration (sim/tools/html.h).
 *
 * The pipeline's events come from the on_step recorder, as `tilesim
 * explain` gets them. A write-back reported at step n belongs to the end
 * of step n - 1 on the same core (P8), so it is stored with that step. The
 * kernel's ops of a step come from its op log: the call runs a wrapper that
 * calls the definition's kernel and then reads kern_step_ops. The timeline
 * is the run's own trace-event JSON (written to a temporary file), cut
 * after the last embedded step of each core so that a long grid does not
 * make a huge page.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../kernel/context.h"
#include "html.h"
#include "../timing/timing.h"
#include "../kdef/kdef_internal.h"
#include "../base/outfile.h"

typedef struct recorder {
    sim_page *page;
    pl_kernel_fn kernel;         /* the definition's own */
    int cur;                     /* the embedded step the kernel now runs, or -1 */
    int last[SIM_MAX_CORES];     /* each core's latest embedded step, or -1 */
    int per_core[SIM_MAX_CORES]; /* embedded steps of each core */
    int64_t ran[SIM_MAX_CORES];  /* steps each core ran */
    int oom;
} recorder;

/* The wrapper's recorder: set around the one call it serves, on this
 * thread (with on_step the walk and its kernels stay on the calling
 * thread, and host_threads is 1 anyway). */
static _Thread_local recorder *active;

static void op_words(const kern_op *o, char *buf, size_t n)
{
    switch (o->kind) {
    case KERN_OP_DOT:
        snprintf(buf, n, "pl_dot %lldx%lld @ %lldx%lld %s (MXU)", (long long)o->m, (long long)o->k, (long long)o->k,
                 (long long)o->n, pl_dtype_name((pl_dtype)o->dtype));
        break;
    case KERN_OP_VPU: snprintf(buf, n, "%s (VPU), %lld elements", o->name ? o->name : "VPU op", (long long)o->elems); break;
    case KERN_OP_EUP:
        snprintf(buf, n, "%s (EUP, transcendental), %lld elements", o->name ? o->name : "EUP op", (long long)o->elems);
        break;
    case KERN_OP_COPY: snprintf(buf, n, "%s, %lld elements", o->name ? o->name : "copy", (long long)o->elems); break;
    case KERN_OP_SCALAR: snprintf(buf, n, "%lld scalar accesses (pl_get / pl_set)", (long long)o->elems); break;
    case KERN_OP_DMA_START: snprintf(buf, n, "DMA start (copy %lld, M7)", (long long)o->dma); break;
    case KERN_OP_DMA_WAIT: snprintf(buf, n, "DMA wait (copy %lld, M7)", (long long)o->dma); break;
    default: snprintf(buf, n, "semaphore wait or signal"); break;
    }
}

static int same_op(const kern_op *a, const kern_op *b)
{
    return a->kind == b->kind && a->name == b->name && a->dtype == b->dtype && a->m == b->m && a->n == b->n && a->k == b->k &&
           a->elems == b->elems && a->kind != KERN_OP_DMA_START && a->kind != KERN_OP_DMA_WAIT;
}

/* "pl_dot 128x128 @ 128x128 f32 (MXU); VPU op, 16384 elements x 2": runs
 * of equal ops counted, cut with "..." when the text is full. */
static void summarise(const kern_op *ops, int n, char *buf, size_t cap)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < n;) {
        int j = i + 1;
        while (j < n && same_op(&ops[i], &ops[j])) j++;
        char w[120], item[140];
        op_words(&ops[i], w, sizeof w);
        snprintf(item, sizeof item, "%s%s", i ? "; " : "", w);
        if (j - i > 1) snprintf(item + strlen(item), sizeof item - strlen(item), " x %d", j - i);
        if (at + strlen(item) + 5 >= cap) {
            snprintf(buf + at, cap - at, "; ...");
            return;
        }
        at += (size_t)snprintf(buf + at, cap - at, "%s", item);
        i = j;
    }
    if (!n) snprintf(buf, cap, "no block ops");
}

void sim_step_ops_words(pl_ctx *c, char *buf, size_t cap)
{
    int n = 0;
    const kern_op *ops = kern_step_ops(c, &n);
    summarise(ops, n, buf, cap);
}

static void wrapped_kernel(pl_ctx *c, pl_ref *refs)
{
    recorder *r = active;
    r->kernel(c, refs);
    int n = 0;
    const kern_op *ops = kern_step_ops(c, &n);
    if (r->cur >= 0) summarise(ops, n, r->page->steps[r->cur].ops, sizeof r->page->steps[r->cur].ops);
}

static void on_step(const pl_step_info *s, void *user)
{
    recorder *r = user;
    sim_page *p = r->page;
    if (s->core < 0 || s->core >= SIM_MAX_CORES) return;
    int prev = r->last[s->core];
    for (int i = 0; prev >= 0 && i < s->n_operands && i < p->n_ops; i++)
        if (s->op[i].wrote_back) {
            p->steps[prev].op[i].wb = 1;
            memcpy(p->steps[prev].op[i].wb_block, s->op[i].wb_block, sizeof s->op[i].wb_block);
        }
    r->cur = -1;
    if (s->final) return;
    p->total_steps++;
    r->ran[s->core]++;
    r->last[s->core] = -1;
    if (p->n_steps == SIM_PAGE_MAX_STEPS || r->oom) return;
    sim_page_step *st = &p->steps[p->n_steps];
    if (!(st->op = calloc((size_t)(p->n_ops ? p->n_ops : 1), sizeof *st->op))) {
        r->oom = 1;
        return;
    }
    st->core = s->core;
    st->step = s->step;
    memcpy(st->idx, s->idx, sizeof st->idx);
    for (int i = 0; i < s->n_operands && i < p->n_ops; i++) {
        st->op[i].act = (int8_t)s->op[i].action;
        st->op[i].slot = (int16_t)s->op[i].slot;
        memcpy(st->op[i].block, s->op[i].block, sizeof st->op[i].block);
    }
    r->per_core[s->core]++;
    r->cur = r->last[s->core] = p->n_steps++;
}

/* ---- the operands ------------------------------------------------------------ */

static void describe_operands(sim_page *p, const pl_kernel_build *b)
{
    const pl_report *rep = &p->rep;
    p->n_ops = rep->n_operands;
    for (int i = 0; i < rep->n_operands; i++) {
        const pl_operand_report *o = &rep->op[i];
        sim_page_operand *q = &p->op[i];
        snprintf(q->name, sizeof q->name, "%s", o->name);
        q->role = o->role;
        q->space = o->space;
        q->dtype = o->dtype;
        q->rank = o->rank;
        q->buffers = o->buffers;
        memcpy(q->block, o->block, sizeof q->block);
        const pl_array *a = rep->n_operands != b->n_args + b->n_outs ? NULL
                            : i < b->n_args                        ? &b->args[i]
                                                                   : &b->outs[i - b->n_args];
        if (!a || a->rank != o->rank) continue; /* not drawn: nblocks stay 0 */
        for (int d = 0; d < o->rank; d++) {
            q->shape[d] = a->shape[d];
            q->nblocks[d] = o->block[d] > 0 ? (a->shape[d] + o->block[d] - 1) / o->block[d] : 0;
        }
    }
}

/* ---- the trace ---------------------------------------------------------------- */

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0, got;
    do {
        if (n + 65536 > cap) {
            char *nb = realloc(buf, cap = 2 * cap + 65536);
            if (!nb) return fclose(f), free(buf), NULL;
            buf = nb;
        }
        got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
    } while (got > 0);
    fclose(f);
    buf[n] = '\0';
    *len = n;
    return buf;
}

static double field(const char *line, const char *key, double dflt)
{
    const char *at = strstr(line, key);
    return at ? strtod(at + strlen(key), NULL) : dflt;
}

/* Keep the trace's events up to the end of each core's last embedded step
 * (metadata always). The lines are the trace writer's: one event a line. */
static void cut_trace(sim_page *p, const recorder *r)
{
    double cutoff[SIM_MAX_CORES];
    int seen[SIM_MAX_CORES] = {0};
    for (int c = 0; c < SIM_MAX_CORES; c++) /* a core with no embedded step: none of its events */
        cutoff[c] = r->ran[c] && !r->per_core[c] ? -1 : 1e300;
    for (char *l = p->trace, *end; l && *l; l = end ? end + 1 : l + strlen(l)) {
        /* a kernel step: "step (i, j, k)" ("step overhead (P9)" shares its track); each search stays in its
         * line (the line ends here for a moment): searching to the trace's end made the page quadratic */
        if ((end = strchr(l, '\n'))) *end = '\0';
        int pid = strncmp(l, "{\"name\":\"step (", 15) == 0 && strstr(l, "\"tid\":0,") ? (int)field(l, "\"pid\":", -1)
                                                                                     : -1;
        if (pid >= 0 && pid < SIM_MAX_CORES && ++seen[pid] == r->per_core[pid] && r->per_core[pid] < r->ran[pid])
            cutoff[pid] = field(l, "\"ts\":", 0) + field(l, "\"dur\":", 0) + 1e-9;
        if (end) *end = '\n';
    }
    char *out = p->trace, *w = p->trace;
    int kept = 0;
    for (char *l = p->trace; *l;) {
        char *end = strchr(l, '\n');
        size_t len = end ? (size_t)(end - l) : strlen(l);
        char *next = end ? end + 1 : l + len;
        int event = l[0] == '{' && strncmp(l, "{\"displayTimeUnit\"", 18) != 0;
        if (event) {
            if (end) *end = '\0'; /* the searches stay in this line */
            int pid = (int)field(l, "\"pid\":", -1);
            int meta = strstr(l, "\"ph\":\"M\"") != NULL;
            int cut = !meta && pid >= 0 && pid < SIM_MAX_CORES && field(l, "\"ts\":", 0) > cutoff[pid];
            if (end) *end = '\n';
            if (cut) {
                p->trace_cut = 1;
                l = next;
                continue;
            }
            if (len && l[len - 1] == ',') len--;
            if (kept++) *w++ = ',', *w++ = '\n';
            memmove(w, l, len);
            w += len;
        } else { /* the header line, or the closing "]}" */
            if (l[0] == ']' && kept) *w++ = '\n';
            memmove(w, l, len);
            w += len;
            if (!(l[0] == ']') && end) *w++ = '\n';
        }
        l = next;
    }
    *w = '\0';
    p->trace_len = (size_t)(w - out);
}

/* ---- the walk ---------------------------------------------------------------- */

static int walk(const pl_kernel_def *d, pl_kernel_build *b, const pl_options *base, sim_page *p, char *msg, size_t n)
{
    pl_options untraced = *base;
    untraced.trace_path = NULL; /* the page's timeline: the run's whole trace, read back (the cap applies) */
    char why[PL_MSG_MAX];
    if (sim_trace_check(&b->call, 1, &untraced, why, sizeof why))
        return snprintf(msg, n, "%s: %s", d->name, why), PL_EINVAL;
    char path[] = "/tmp/tilesim_page_XXXXXX";
    const char *tmp = getenv("TMPDIR");
    char tpath[512];
    snprintf(tpath, sizeof tpath, "%s/tilesim_page_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int fd = sim_tmp_make(tpath); /* removed on Ctrl-C too */
    if (fd < 0 && (fd = sim_tmp_make(path)) >= 0) snprintf(tpath, sizeof tpath, "%s", path);
    if (fd >= 0) close(fd);
    recorder r = {.page = p, .kernel = b->call.kernel, .cur = -1};
    memset(r.last, 0xff, sizeof r.last);
    pl_options opt = *base;
    opt.cost_only = 1;
    opt.host_threads = 1;
    opt.on_step = on_step;
    opt.on_step_user = &r;
    opt.trace_path = fd >= 0 ? tpath : NULL; /* no temporary file: a page without its timeline */
    b->call.kernel = wrapped_kernel;
    active = &r;
    int rc = pl_pallas_call(&b->call, b->args, b->outs, &opt, &p->rep);
    active = NULL;
    b->call.kernel = r.kernel;
    if (rc != PL_OK) snprintf(msg, n, "%s: %s", d->name, p->rep.error);
    else if (r.oom) snprintf(msg, n, "out of host memory for the page's steps"), rc = PL_ENOMEM;
    if (fd >= 0) {
        if (rc == PL_OK && (p->trace = read_all(tpath, &p->trace_len))) cut_trace(p, &r);
        sim_tmp_drop(tpath);
    }
    return rc;
}

int sim_page_record(const pl_kernel_def *d, const int64_t *v, const pl_options *opt, sim_page *page, char *msg,
                    size_t n)
{
    memset(page, 0, sizeof *page);
    msg[0] = '\0';
    pl_kernel_build *b = calloc(1, sizeof *b);
    void *owned[PL_KDEF_MAX_ARGS] = {0};
    if (!b || !(page->steps = calloc(SIM_PAGE_MAX_STEPS, sizeof *page->steps))) {
        free(b);
        snprintf(msg, n, "out of host memory for the page");
        return PL_ENOMEM;
    }
    int rc = sim_kdef_prepare(d, v, opt, b, msg, n);
    /* scalar-prefetch tables get data (index maps read them); the rest stays without (cost only) */
    if (rc == PL_OK) rc = sim_kdef_tables(d, v, b, opt->seed, owned);
    pl_options vopt = *opt;
    vopt.cost_only = 1;
    if (rc == PL_OK && pl_validate(&b->call, b->args, b->outs, &vopt, &page->rep) != PL_OK)
        rc = page->rep.status < 0 ? page->rep.status : PL_EINVAL, snprintf(msg, n, "%s: %s", d->name, page->rep.error);
    if (rc == PL_OK) {
        describe_operands(page, b);
        page->step_overhead_s = page->rep.chip ? page->rep.chip->step_overhead_s : 0;
        page->grid_rank = b->call.grid_rank;
        memcpy(page->grid, b->call.grid, sizeof page->grid);
        rc = walk(d, b, opt, page, msg, n);
    }
    if (rc != PL_OK && !msg[0]) snprintf(msg, n, "%s: %s", d->name, pl_strerror(rc));
    char label[512];
    snprintf(page->title, sizeof page->title, "%s %s on %s", d->name, pl_kernel_format(d, v, label, sizeof label),
             page->rep.chip ? page->rep.chip->name : "?");
    for (int a = 0; a < PL_KDEF_MAX_ARGS; a++) free(owned[a]);
    free(b);
    return rc;
}

int sim_page_check(const pl_kernel_def *d, const int64_t *v, const pl_options *opt, char *msg, size_t n)
{
    pl_kernel_build *b = calloc(1, sizeof *b);
    if (!b) return 0; /* the page itself will say it is out of memory */
    msg[0] = '\0';
    int bad = 0;
    if (sim_kdef_prepare(d, v, opt, b, msg, n) == PL_OK) {
        pl_options untraced = *opt;
        untraced.trace_path = NULL; /* as walk() checks it */
        char why[PL_MSG_MAX];
        if ((bad = sim_trace_check(&b->call, 1, &untraced, why, sizeof why) != 0)) snprintf(msg, n, "%s: %s", d->name, why);
    }
    free(b);
    return bad ? -1 : 0;
}

void sim_page_free(sim_page *page)
{
    for (int i = 0; page->steps && i < page->n_steps; i++) free(page->steps[i].op);
    free(page->steps);
    free(page->trace);
    memset(page, 0, sizeof *page);
}
