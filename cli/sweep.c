/* cli/sweep.c: `tilesim sweep matmul M N K`: parse, run every (bm, bn, bk)
 * through pl_sweep in cost-only mode, sort, hand over to the printers.
 *
 * Configurations whose grid has more than MAX_STEPS points are not run: the
 * walk's records grow with the step count (about 130 bytes a step), and such
 * tiny blocks are step-overhead-bound anyway. They are still validated, so
 * an illegal one is reported with its rule.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../examples/kernels/matmul.h"
#include "../sim/base/outfile.h"
#include "cli.h"

#define MAX_SIZE (1LL << 24)    /* M, N, K and block sizes */
#define MAX_CONFIGS 4096        /* reports are about 13 KB each */
#define MAX_STEPS (1LL << 21)   /* grid points of one configuration */
#define DEFAULT_TOP 20

static const cli_optspec specs[] = {
    {"--dtype", 1}, {"--chip", 1}, {"--chip-file", 1}, {"--bm", 1},   {"--bn", 1},      {"--bk", 1},
    {"--vmem-limit", 1}, {"--csv", 0}, {"--json", 0}, {"--top", 1}, {"--svg", 1}, {"--threads", 1},
};
enum { NSPECS = sizeof specs / sizeof *specs };

#define OPT(a, name) cli_opt((a), specs, NSPECS, (name))

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Grid points, saturating at INT64_MAX / 2. */
static int64_t grid_steps(const cli_sweep_result *s, const cli_sweep_row *r)
{
    int64_t g[3] = {cdiv(s->m, r->bm), cdiv(s->n, r->bn), cdiv(s->k, r->bk)}, steps = 1;
    for (int a = 0; a < 3; a++) steps = steps > INT64_MAX / 2 / g[a] ? INT64_MAX / 2 : steps * g[a];
    return steps;
}

/* ---- running ----------------------------------------------------------------- */

typedef struct run_ctx {
    cli_sweep_result *s;
    int *todo; /* row of each configuration handed to pl_sweep */
} run_ctx;

static void describe(const cli_sweep_result *s, const cli_sweep_row *r, pl_call *call, pl_array *args, pl_array *outs,
                     mm_params *p)
{
    mm_call(call, p, s->m, s->n, s->k, r->bm, r->bn, r->bk);
    call->vmem_limit_bytes = s->vmem_limit;
    args[0] = PL_ARRAY(NULL, s->dtype, s->m, s->k);
    args[1] = PL_ARRAY(NULL, s->dtype, s->k, s->n);
    outs[0] = PL_ARRAY(NULL, s->dtype, s->m, s->n);
}

static int build(int i, pl_call *call, pl_array *args, pl_array *outs, void *param, void *user)
{
    run_ctx *rc = user;
    describe(rc->s, &rc->s->rows[rc->todo[i]], call, args, outs, param);
    return PL_OK;
}

/* Configurations small enough to run get reports[0..n) in list order (what
 * pl_sweep fills); the others get the reports after them. */
static int run(cli_sweep_result *s, const pl_options *opt, int64_t threads)
{
    int *todo = malloc((size_t)s->n_rows * sizeof *todo);
    s->reports = calloc((size_t)s->n_rows, sizeof *s->reports);
    if (!todo || !s->reports) {
        free(todo);
        return -1;
    }
    int n = 0, skipped = 0;
    for (int i = 0; i < s->n_rows; i++)
        if (s->rows[i].steps <= MAX_STEPS) todo[n++] = i;
    for (int i = 0; i < s->n_rows; i++) {
        cli_sweep_row *r = &s->rows[i];
        if (r->steps <= MAX_STEPS) continue;
        r->rep = &s->reports[n + skipped++];
        /* not run; validated only, so that an illegal block still names its rule */
        pl_call call;
        pl_array args[2], outs[1];
        mm_params p;
        describe(s, r, &call, args, outs, &p);
        if (r->steps < (1LL << 40) && pl_validate(&call, args, outs, opt, r->rep) != PL_OK) continue;
        r->too_many_steps = 1;
        r->rep->status = PL_EINVAL;
        snprintf(r->rep->error, sizeof r->rep->error,
                 "grid of %lld steps; the sweep runs at most %lld: use larger blocks", (long long)r->steps,
                 (long long)MAX_STEPS);
    }
    for (int i = 0; i < n; i++) s->rows[todo[i]].rep = &s->reports[i];
    run_ctx rc = {s, todo};
    cli_progress prog;
    pl_sweep_options so = {.threads = (int)threads};
    if (cli_progress_start(&prog, "sweep", "configurations", 1.0))
        so.progress = cli_progress_show, so.progress_user = &prog;
    int st = pl_sweep(n, build, &rc, opt, &so, s->reports);
    cli_progress_end(&prog);
    s->wall_s = cli_progress_elapsed(&prog);
    free(todo);
    return st == PL_OK ? 0 : -1;
}

/* qsort has no user pointer in C11: the comparator reads this thread's */
static _Thread_local const cli_sweep_result *sort_ctx;

static int by_time(const void *pa, const void *pb)
{
    const cli_sweep_row *a = &sort_ctx->rows[*(const int *)pa], *b = &sort_ctx->rows[*(const int *)pb];
    if (a->rep->time_s != b->rep->time_s) return a->rep->time_s < b->rep->time_s ? -1 : 1;
    if (a->bm != b->bm) return a->bm < b->bm ? -1 : 1;
    if (a->bn != b->bn) return a->bn < b->bn ? -1 : 1;
    return (a->bk > b->bk) - (a->bk < b->bk);
}

static int classify(cli_sweep_result *s)
{
    s->legal = malloc((size_t)s->n_rows * sizeof *s->legal);
    s->rejected = malloc((size_t)s->n_rows * sizeof *s->rejected);
    if (!s->legal || !s->rejected) return -1;
    for (int i = 0; i < s->n_rows; i++) {
        if (s->rows[i].rep->status == PL_OK) s->legal[s->n_legal++] = i;
        else s->rejected[s->n_rejected++] = i;
    }
    sort_ctx = s;
    qsort(s->legal, (size_t)s->n_legal, sizeof *s->legal, by_time);
    return 0;
}

/* ---- the command ---------------------------------------------------------------- */

static int parse_lists(const cli_cmd *cmd, const cli_args *a, int64_t lists[3][CLI_MAX_LIST], int counts[3])
{
    static const char *names[3] = {"--bm", "--bn", "--bk"};
    for (int d = 0; d < 3; d++) {
        const char *v = OPT(a, names[d]);
        if (!v) {
            counts[d] = 0;
            for (int64_t b = 128; b <= 2048; b *= 2) lists[d][counts[d]++] = b;
            continue;
        }
        int rc = cli_parse_list(cmd, names[d], v, MAX_SIZE, lists[d], &counts[d]);
        if (rc) return rc;
    }
    int64_t total = (int64_t)counts[0] * counts[1] * counts[2];
    if (total > MAX_CONFIGS)
        return cli_fail(cmd, "--bm, --bn, --bk: %d x %d x %d = %lld configurations; a sweep takes at most %d",
                        counts[0], counts[1], counts[2], (long long)total, MAX_CONFIGS);
    return 0;
}

static int parse(const cli_cmd *cmd, const cli_args *a, cli_sweep_result *s, int64_t *threads)
{
    int rc;
    if (a->npos == 0) return cli_fail(cmd, "missing the kernel: give 'matmul M N K'");
    if (strcmp(a->pos[0], "matmul") != 0)
        return cli_fail(cmd, "unknown kernel '%s'; the sweep knows: matmul", CLI_CUT(a->pos[0]));
    if (a->npos < 4) return cli_fail(cmd, "missing %s: give matmul M N K", a->npos == 1 ? "M, N and K" : a->npos == 2 ? "N and K" : "K");
    if (a->npos > 4) return cli_fail(cmd, "unexpected argument '%s' after matmul M N K", CLI_CUT(a->pos[4]));
    int64_t *dims[3] = {&s->m, &s->n, &s->k};
    static const char *dim_names[3] = {"M", "N", "K"};
    for (int d = 0; d < 3; d++)
        if ((rc = cli_parse_count(cmd, dim_names[d], a->pos[1 + d], MAX_SIZE, dims[d]))) return rc;
    s->dtype = PL_F32;
    if (OPT(a, "--dtype") && (rc = cli_parse_dtype(cmd, OPT(a, "--dtype"), &s->dtype))) return rc;
    if (OPT(a, "--csv") && OPT(a, "--json")) return cli_fail(cmd, "--csv and --json exclude each other; give one");
    s->format = OPT(a, "--csv") ? CLI_CSV : OPT(a, "--json") ? CLI_JSON : CLI_TEXT;
    s->top = s->format == CLI_TEXT ? DEFAULT_TOP : 0;
    if (OPT(a, "--top") && (rc = cli_parse_count(cmd, "--top", OPT(a, "--top"), MAX_CONFIGS * 16, &s->top)))
        return rc;
    *threads = 0;
    if (OPT(a, "--threads") && (rc = cli_parse_count(cmd, "--threads", OPT(a, "--threads"), 1024, threads)))
        return rc;
    if (OPT(a, "--vmem-limit")) {
        if ((rc = cli_parse_vmem_limit(cmd, OPT(a, "--vmem-limit"), &s->vmem_limit))) return rc;
        if ((rc = cli_check_vmem_limit(cmd, s->vmem_limit, s->chip))) return rc;
    }
    return 0;
}

static void free_sweep(cli_sweep_result *s)
{
    free(s->rows);
    free(s->reports);
    free(s->legal);
    free(s->rejected);
}

int cli_sweep(int argc, char **argv)
{
    const cli_cmd *cmd = &cli_sweep_cmd;
    cli_args a;
    int rc = cli_start(cmd, argc, argv, specs, NSPECS, &a);
    if (rc >= 0) return rc;
    cli_sweep_result s = {0};
    pl_chip file_chip;
    int64_t threads, lists[3][CLI_MAX_LIST];
    int counts[3];
    if ((rc = cli_select_chip(cmd, OPT(&a, "--chip"), OPT(&a, "--chip-file"), &file_chip, &s.chip))) return rc;
    if ((rc = parse(cmd, &a, &s, &threads)) || (rc = parse_lists(cmd, &a, lists, counts))) return rc;

    const char *svg_path = OPT(&a, "--svg");
    sim_out *svg = NULL; /* opened before the sweep (fail fast) as a temporary file beside it (sim/base/outfile.h) */
    char msg[PL_MSG_MAX];
    if (svg_path && !(svg = sim_out_open(svg_path, msg, sizeof msg))) return cli_fail(cmd, "--svg: %s", msg);

    s.n_rows = counts[0] * counts[1] * counts[2];
    s.rows = calloc((size_t)s.n_rows, sizeof *s.rows);
    if (!s.rows) goto oom;
    for (int i = 0, x = 0; x < counts[0]; x++)
        for (int y = 0; y < counts[1]; y++)
            for (int z = 0; z < counts[2]; z++, i++) {
                cli_sweep_row *r = &s.rows[i];
                r->bm = lists[0][x], r->bn = lists[1][y], r->bk = lists[2][z];
                r->steps = grid_steps(&s, r);
            }
    pl_options opt = {.chip_spec = s.chip, .cost_only = 1};
    if (run(&s, &opt, threads) || classify(&s)) goto oom;

    if (s.format == CLI_CSV) cli_sweep_print_csv(&s, stdout);
    else if (s.format == CLI_JSON) cli_sweep_print_json(&s, stdout);
    else cli_sweep_print_text(&s, stdout);
    int status = s.n_legal ? 0 : 1;
    if (svg && !s.n_legal) { /* nothing to plot: a failed sweep leaves the file as it was */
        sim_out_abort(svg);
        fprintf(stderr, "tilesim sweep: --svg: no legal configuration to plot; '%s' not written\n", svg_path);
        svg = NULL;
    }
    if (svg) {
        if (cli_sweep_svg(&s, svg->f)) {
            sim_out_abort(svg);
            fprintf(stderr, "tilesim sweep: --svg: writing '%s' failed (disk full?)\n", svg_path);
            status = CLI_EXIT_USAGE;
        } else if (sim_out_commit(svg, msg, sizeof msg))
            fprintf(stderr, "tilesim sweep: --svg: %s\n", msg), status = CLI_EXIT_USAGE;
        svg = NULL;
    }
    free_sweep(&s);
    return cli_finish_stdout(cmd, status);
oom:
    fprintf(stderr, "tilesim sweep: out of host memory for %d configurations\n", s.n_rows);
    sim_out_abort(svg);
    free_sweep(&s);
    return 1;
}
