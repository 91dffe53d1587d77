/* cli/tune.c: `tilesim tune` (cli/tune.h): the best tiling per shape.
 *
 * Each shape is one sweep, exactly as `tilesim sweep KERNEL --set` each
 * shape value would run it (cli_sweep_values, pl_kernel_sweep: cost-only,
 * on every host core, and across the ranks of the MPI build, which split
 * every shape's configurations between them). The tiling is every
 * parameter that takes more than one value in those sweeps. A dtype
 * parameter is not tiling but part of the shape (a tuned table is keyed
 * by its dtypes): unless the shapes, --set or --vary give it, it keeps its
 * default instead of being swept over its candidates. */
#include <stdlib.h>
#include <string.h>

#include "../sim/base/json.h"
#include "../sim/base/outfile.h"
#include "../sim/mesh/ranks.h"
#include "tune.h"

#define TUNE_MASK (K_SET | K_VARY | K_CHIP | K_CHIP_FILE | K_JSON | K_CSV | K_THREADS | K_SHAPES | K_OUT_FILE)

const cli_cmd cli_tune_cmd = {
    "tune", "tilesim tune KERNEL --shapes SHAPES.csv [--csv | --json] [-o FILE]",
    "tilesim tune KERNEL|PLUGIN.so[:NAME] --shapes SHAPES.csv [--vary name=v1,v2,...] [--set name=value ...] "
    "[--chip NAME | --chip-file FILE] [--csv | --json] [-o FILE] [--threads N]",
    NULL, cli_tune_help};

void cli_tune_help(const cli_cmd *cmd, FILE *f)
{
    (void)cmd;
    fprintf(f, "usage: %s\n\n", cli_tune_cmd.synopsis);
    fprintf(f, "For each shape in SHAPES.csv, sweep the kernel's other parameters (the tiling: their --vary\n"
               "lists, or the candidates 'tilesim list' shows) in cost-only mode, and write the best\n"
               "configuration, its predicted time, the runner-up and the margin: one table keyed by shape.\n"
               "A dtype parameter is part of the shape, not the tiling: give it as a column, --set or\n"
               "--vary, or it keeps its default.\n"
               "SHAPES.csv: a header of parameter names (M,N,K), then one line of values per shape; '#'\n"
               "lines and blank lines are skipped; a field may be in double quotes.\n");
    cli_kopt_help(TUNE_MASK, f);
    fprintf(f, "Exit status: 0 every shape has a legal tiling, 1 some shape has none (its row says why),\n"
               "2 a bad command line or shapes file.\n");
}

/* Tilings predicted within 5 % of the best are ties: against the hardware
 * autotuner's choices that is about how far tilesim's ranking can be
 * trusted (docs/CHIPS.md), so the table counts them, to be timed on the chip. */
#define TUNE_TIE 0.05

/* What one shape's sweep found. */
typedef struct tune_row {
    int legal, total;
    int ties; /* legal tilings within TUNE_TIE of the best, the best included */
    int64_t best[PL_KDEF_MAX_PARAMS], second[PL_KDEF_MAX_PARAMS];
    int64_t key[PL_KDEF_MAX_PARAMS]; /* every parameter's value outside the tiling (the first configuration's) */
    double best_s, second_s; /* second_s < 0: no runner-up */
    char reason[200];        /* none legal: the first configuration's reason */
} tune_row;

typedef struct tune_job {
    const cli_cmd *cmd;
    const pl_kernel_def *d;
    const cli_kopts *o;
    pl_options opt;
    const tune_shapes *sh;
    int tiling[PL_KDEF_MAX_PARAMS]; /* 1: takes several values in the sweeps */
    int kept[PL_KDEF_MAX_PARAMS]; /* the dtypes no column, --set or --vary gives: the sweeps keep their defaults */
    tune_row *rows;
} tune_job;

/* "name=value" of parameter p (a dtype by its name) into buf. */
static const char *assign(const pl_kernel_def *d, int p, int64_t v, char *buf, size_t n)
{
    if (d->params[p].kind == PL_PARAM_DTYPE) snprintf(buf, n, "%s=%s", d->params[p].name, pl_dtype_name((pl_dtype)v));
    else snprintf(buf, n, "%s=%lld", d->params[p].name, (long long)v);
    return buf;
}

static const char *value_text(const pl_kernel_def *d, int p, int64_t v, char *buf, size_t n)
{
    const char *a = assign(d, p, v, buf, n);
    return a + strlen(d->params[p].name) + 1;
}

/* Sweep shape i into job->rows[i]. 0, or an exit status. */
static int tune_one(tune_job *job, int i)
{
    const pl_kernel_def *d = job->d;
    cli_kopts o = *job->o;
    char sets[PL_KDEF_MAX_PARAMS][96];
    for (int c = 0; c < job->sh->n_cols; c++) {
        if (o.n_sets == CLI_MAX_SETS) return cli_fail(job->cmd, "too many --set options with the shape's columns");
        o.sets[o.n_sets++] = assign(d, job->sh->col[c], job->sh->values[(size_t)i * PL_KDEF_MAX_PARAMS + c], sets[c],
                                    sizeof sets[c]);
    }
    int n = 0, rc;
    int64_t *values = NULL;
    /* every shape has the same columns, so the first says which dtypes are kept */
    if ((rc = cli_sweep_values(job->cmd, d, &o, job->opt.chip_spec, &values, &n, i == 0 ? job->kept : NULL))) {
        fprintf(stderr, "tilesim tune: (the shape of %s:%d)\n", job->o->shapes, job->sh->line[i]);
        return rc;
    }
    pl_report *reps = calloc((size_t)n, sizeof *reps);
    tune_row *r = &job->rows[i];
    *r = (tune_row){.total = n, .second_s = -1};
    if (n > 0) memcpy(r->key, values, (size_t)d->n_params * sizeof *values);
    pl_sweep_options so = {.threads = (int)job->o->threads};
    rc = reps ? pl_kernel_sweep(d, n, values, &job->opt, &so, reps) : PL_ENOMEM;
    int best = -1, second = -1;
    for (int k = 0; rc == PL_OK && k < n; k++) {
        for (int p = 0; p < d->n_params; p++)
            if (values[(size_t)k * (size_t)d->n_params + p] != values[p]) job->tiling[p] = 1;
        if (reps[k].status != PL_OK) {
            if (!r->reason[0]) snprintf(r->reason, sizeof r->reason, "%s", reps[k].error);
            continue;
        }
        r->legal++;
        if (best < 0 || reps[k].time_s < reps[best].time_s) second = best, best = k;
        else if (second < 0 || reps[k].time_s < reps[second].time_s) second = k;
    }
    if (best >= 0) {
        memcpy(r->best, values + (size_t)best * (size_t)d->n_params, (size_t)d->n_params * sizeof *values);
        r->best_s = reps[best].time_s;
        for (int k = 0; k < n; k++) r->ties += reps[k].status == PL_OK && reps[k].time_s <= r->best_s * (1 + TUNE_TIE);
    }
    if (second >= 0) {
        memcpy(r->second, values + (size_t)second * (size_t)d->n_params, (size_t)d->n_params * sizeof *values);
        r->second_s = reps[second].time_s;
    }
    free(reps), free(values);
    if (rc != PL_OK) fprintf(stderr, "tilesim tune: %s: the sweep failed: %s\n", d->name, pl_strerror(rc));
    return rc == PL_OK ? 0 : 1;
}

/* ---- printing -------------------------------------------------------------------------- */

/* The parameters of v that are in mask, "bm=256 bn=512", into buf. */
static const char *params_text(const pl_kernel_def *d, const int *mask, const int64_t *v, const char *sep, char *buf,
                               size_t n)
{
    buf[0] = '\0';
    for (int p = 0; p < d->n_params; p++) {
        char one[96];
        if (mask[p] && strlen(buf) + 1 < n)
            snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", buf[0] ? sep : "", assign(d, p, v[p], one, sizeof one));
    }
    return buf;
}

static void shape_mask(const tune_job *job, int *mask)
{
    memset(mask, 0, PL_KDEF_MAX_PARAMS * sizeof *mask);
    for (int c = 0; c < job->sh->n_cols; c++) mask[job->sh->col[c]] = 1;
}

/* The dtypes outside the shape columns and the tiling (--set, or kept at
 * their defaults): the CSV and JSON tables name them beside the shape, as
 * a tuned table is keyed by its dtypes. */
static void dtype_key_mask(const tune_job *job, int *mask)
{
    int shape[PL_KDEF_MAX_PARAMS];
    shape_mask(job, shape);
    for (int p = 0; p < job->d->n_params; p++)
        mask[p] = job->d->params[p].kind == PL_PARAM_DTYPE && !shape[p] && !job->tiling[p];
}

/* The shape of row i ("M=8 N=4096 K=4096") into buf. */
static const char *shape_text(const tune_job *job, const int *shape, int i, char *buf, size_t n)
{
    int64_t v[PL_KDEF_MAX_PARAMS] = {0};
    for (int k = 0; k < job->sh->n_cols; k++) v[job->sh->col[k]] = job->sh->values[(size_t)i * PL_KDEF_MAX_PARAMS + k];
    return params_text(job->d, shape, v, " ", buf, n);
}

/* Column widths: the widest shape and the widest configuration, at least
 * the old fixed widths, so that every row lines up under its heading. */
static void text_widths(const tune_job *job, const int *shape, int *ws, int *wc)
{
    char a[256];
    *ws = 28, *wc = 30;
    for (int i = 0; i < job->sh->n; i++) {
        const tune_row *r = &job->rows[i];
        int n = (int)strlen(shape_text(job, shape, i, a, sizeof a));
        if (n > *ws) *ws = n;
        if (!r->legal) continue;
        if ((n = (int)strlen(params_text(job->d, job->tiling, r->best, " ", a, sizeof a))) > *wc) *wc = n;
        if (r->second_s >= 0 && (n = (int)strlen(params_text(job->d, job->tiling, r->second, " ", a, sizeof a))) > *wc)
            *wc = n;
    }
}

static void print_text(const tune_job *job, FILE *f)
{
    const pl_kernel_def *d = job->d;
    int shape[PL_KDEF_MAX_PARAMS], ws, wc;
    shape_mask(job, shape);
    text_widths(job, shape, &ws, &wc);
    char a[256] = "", b[256], c[256], t1[32], t2[32];
    for (int p = 0; p < d->n_params; p++)
        if (job->tiling[p]) snprintf(a + strlen(a), sizeof a - strlen(a), "%s%s", a[0] ? ", " : "", d->params[p].name);
    char kept[256];
    cli_kept_text(d, job->kept, job->rows[0].key, "give it as a column, --set or --vary", kept, sizeof kept);
    fprintf(f, "tune: %s on %s: %d shape%s, tiling (%s) swept per shape%s, cost only\n\n", d->name,
            job->opt.chip_spec->name, job->sh->n, job->sh->n == 1 ? "" : "s", a[0] ? a : "nothing varies", kept);
    fprintf(f, "  %-*s %-*s %10s  %-*s %10s %7s %5s\n", ws, "shape", wc, "best", "time", wc, "runner-up", "time", "margin",
            "ties");
    for (int i = 0; i < job->sh->n; i++) {
        const tune_row *r = &job->rows[i];
        shape_text(job, shape, i, a, sizeof a);
        if (!r->legal) {
            fprintf(f, "  %-*s none of %d tilings is legal: %.160s\n", ws, a, r->total, r->reason);
            continue;
        }
        params_text(d, job->tiling, r->best, " ", b, sizeof b);
        fprintf(f, "  %-*s %-*s %10s", ws, a, wc, b, pl_format_time(r->best_s, t1, sizeof t1));
        if (r->second_s >= 0)
            fprintf(f, "  %-*s %10s %6.1f%% %5d\n", wc, params_text(d, job->tiling, r->second, " ", c, sizeof c),
                    pl_format_time(r->second_s, t2, sizeof t2), 100.0 * (r->second_s - r->best_s) / r->best_s,
                    r->ties);
        else fprintf(f, "  %-*s %10s %7s %5d\n", wc, "(none)", "", "", r->ties);
    }
    fprintf(f, "\n  ties: the tilings predicted within %.0f %% of the best, the best included: read them as equal "
               "and time\n  them on the chip (a hardware autotuner's choice is usually among them: docs/CHIPS.md)\n",
            100 * TUNE_TIE);
}

static void print_csv(const tune_job *job, FILE *f)
{
    const pl_kernel_def *d = job->d;
    char buf[96], a[256];
    int dkey[PL_KDEF_MAX_PARAMS];
    dtype_key_mask(job, dkey);
    for (int c = 0; c < job->sh->n_cols; c++) fprintf(f, "%s,", d->params[job->sh->col[c]].name);
    for (int p = 0; p < d->n_params; p++)
        if (dkey[p]) fprintf(f, "%s,", d->params[p].name);
    for (int p = 0; p < d->n_params; p++)
        if (job->tiling[p]) fprintf(f, "%s,", d->params[p].name);
    fprintf(f, "time_us,runner_up,runner_up_us,margin_pct,ties,legal,tried,why\n");
    for (int i = 0; i < job->sh->n; i++) {
        const tune_row *r = &job->rows[i];
        for (int c = 0; c < job->sh->n_cols; c++)
            fprintf(f, "%s,", value_text(d, job->sh->col[c], job->sh->values[(size_t)i * PL_KDEF_MAX_PARAMS + c], buf,
                                         sizeof buf));
        for (int p = 0; p < d->n_params; p++)
            if (dkey[p]) fprintf(f, "%s,", value_text(d, p, r->key[p], buf, sizeof buf));
        for (int p = 0; p < d->n_params; p++)
            if (job->tiling[p]) fprintf(f, "%s,", r->legal ? value_text(d, p, r->best[p], buf, sizeof buf) : "");
        if (r->legal) fprintf(f, "%.4f,", r->best_s * 1e6);
        else fprintf(f, ",");
        if (r->second_s >= 0)
            fprintf(f, "%s,%.4f,%.2f,", params_text(d, job->tiling, r->second, " ", a, sizeof a), r->second_s * 1e6,
                    100.0 * (r->second_s - r->best_s) / r->best_s);
        else fprintf(f, ",,,");
        fprintf(f, "%d,%d,%d,", r->ties, r->legal, r->total);
        /* a shape with no legal tiling says why (the first refusal), quoted as CSV quotes a field */
        if (!r->legal && r->reason[0]) {
            fputc('"', f);
            for (const char *q = r->reason; *q; q++) {
                if (*q == '"') fputc('"', f);
                fputc(*q == '\n' ? ' ' : *q, f);
            }
            fputc('"', f);
        }
        fputc('\n', f);
    }
}

/* {"bm":256,"dtype":"bf16"} of the parameters in mask */
static void json_params(const pl_kernel_def *d, const int *mask, const int64_t *v, FILE *f)
{
    int first = 1;
    fputc('{', f);
    for (int p = 0; p < d->n_params; p++) {
        if (!mask[p]) continue;
        fprintf(f, "%s", first ? "" : ",");
        pl_json_string(f, d->params[p].name);
        if (d->params[p].kind == PL_PARAM_DTYPE) fputc(':', f), pl_json_string(f, pl_dtype_name((pl_dtype)v[p]));
        else fprintf(f, ":%lld", (long long)v[p]);
        first = 0;
    }
    fputc('}', f);
}

static void print_json(const tune_job *job, FILE *f)
{
    const pl_kernel_def *d = job->d;
    int shape[PL_KDEF_MAX_PARAMS], dkey[PL_KDEF_MAX_PARAMS];
    shape_mask(job, shape);
    dtype_key_mask(job, dkey);
    for (int p = 0; p < d->n_params; p++) shape[p] |= dkey[p];
    fprintf(f, "{\"kernel\":");
    pl_json_string(f, d->name);
    fprintf(f, ",\"chip\":");
    pl_json_string(f, job->opt.chip_spec->name);
    fprintf(f, ",\"shapes\":[");
    for (int i = 0; i < job->sh->n; i++) {
        const tune_row *r = &job->rows[i];
        int64_t v[PL_KDEF_MAX_PARAMS] = {0};
        memcpy(v, r->key, sizeof v);
        for (int k = 0; k < job->sh->n_cols; k++) v[job->sh->col[k]] = job->sh->values[(size_t)i * PL_KDEF_MAX_PARAMS + k];
        fprintf(f, "%s{\"shape\":", i ? "," : "");
        json_params(d, shape, v, f);
        fprintf(f, ",\"legal\":%d,\"tried\":%d,\"best\":", r->legal, r->total);
        if (r->legal) json_params(d, job->tiling, r->best, f), fprintf(f, ",\"time_us\":%.6g", r->best_s * 1e6);
        else fprintf(f, "null,\"time_us\":null");
        fprintf(f, ",\"runner_up\":");
        if (r->second_s >= 0)
            json_params(d, job->tiling, r->second, f), fprintf(f, ",\"runner_up_us\":%.6g,\"margin\":%.6g",
                                                              r->second_s * 1e6, (r->second_s - r->best_s) / r->best_s);
        else fprintf(f, "null,\"runner_up_us\":null,\"margin\":null");
        fprintf(f, ",\"ties\":%d", r->ties);
        fprintf(f, ",\"reason\":");
        if (r->legal) fprintf(f, "null");
        else pl_json_string(f, r->reason);
        fputc('}', f);
    }
    fprintf(f, "]}\n");
}

/* ---- the verb ----------------------------------------------------------------------------- */

static int write_out(const tune_job *job)
{
    const cli_kopts *o = job->o;
    void (*print)(const tune_job *, FILE *) = o->json ? print_json : o->csv ? print_csv : print_text;
    if (!o->out_file) {
        print(job, stdout);
        return 0;
    }
    if (sim_mpi_rank() != 0) return 0; /* rank 0 speaks for all, as on stdout */
    char err[PL_MSG_MAX];
    sim_out *out = sim_out_open(o->out_file, err, sizeof err);
    if (!out) return fprintf(stderr, "tilesim tune: -o: %s\n", err), CLI_EXIT_USAGE;
    print(job, out->f);
    if (sim_out_commit(out, err, sizeof err)) return fprintf(stderr, "tilesim tune: -o: %s\n", err), CLI_EXIT_USAGE;
    printf("tune: %d shape%s written to %s\n", job->sh->n, job->sh->n == 1 ? "" : "s", o->out_file);
    return 0;
}

static int run_all(tune_job *job)
{
    cli_progress bar;
    int tty = cli_progress_start(&bar, "tune", "shapes", 1.0);
    int rc = 0, none = 0;
    for (int i = 0; i < job->sh->n && !rc; i++) {
        rc = tune_one(job, i);
        none += !rc && !job->rows[i].legal;
        if (tty) cli_progress_show(i + 1, job->sh->n, &bar);
    }
    cli_progress_end(&bar);
    if (!rc) rc = write_out(job);
    return rc ? rc : none ? 1 : 0;
}

int cli_tune(int argc, char **argv)
{
    const cli_cmd *cmd = &cli_tune_cmd;
    cli_kopts o;
    const pl_kernel_def *d;
    pl_chip file_chip;
    tune_job job = {.cmd = cmd, .o = &o};
    int rc = cli_kparse(cmd, TUNE_MASK, argc + 1, argv - 1, &o);
    if (rc >= 0) return rc;
    if (o.npos == 0) return cli_fail(cmd, "missing the kernel: give a name from 'tilesim list' or PLUGIN.so[:NAME]");
    if (o.npos > 1) return cli_fail(cmd, "unexpected argument '%s' after the kernel", CLI_CUT(o.pos[1]));
    if (!o.shapes) return cli_fail(cmd, "missing --shapes SHAPES.csv: the shapes to tune, one per line");
    if ((rc = cli_find_kernel(cmd, o.pos[0], &d))) return rc;
    if ((rc = cli_kernel_options(cmd, &o, &file_chip, &job.opt))) return rc;
    char why[PL_MSG_MAX]; /* before the sweeps: fail fast, creating nothing (sim/base/outfile.h) */
    if (o.out_file && sim_out_probe(o.out_file, why, sizeof why)) return cli_fail(cmd, "-o: %s", why);
    int fixed[PL_KDEF_MAX_PARAMS] = {0};
    for (int i = 0; i < o.n_sets + o.n_varies; i++) {
        const char *a = i < o.n_sets ? o.sets[i] : o.varies[i - o.n_sets];
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)strcspn(a, "="), a);
        int p = pl_kernel_param_index(d, name);
        if (p >= 0) fixed[p] = 1;
    }
    tune_shapes sh;
    if ((rc = tune_read_shapes(cmd, o.shapes, d, fixed, &sh))) return rc;
    job.d = d;
    job.sh = &sh;
    job.opt.cost_only = 1;
    job.rows = calloc((size_t)sh.n, sizeof *job.rows);
    rc = job.rows ? run_all(&job) : (fprintf(stderr, "tilesim tune: out of host memory\n"), 1);
    free(job.rows);
    tune_shapes_free(&sh);
    return cli_finish_stdout(cmd, rc);
}
