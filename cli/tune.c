/* cli/tune.c: `tilesim tune` (cli/tune.h): the best tiling per shape.
 *
 * Each shape is one sweep, exactly as `tilesim sweep KERNEL --set` each
 * shape value would run it (cli_sweep_values, pl_kernel_sweep: cost-only,
 * on every host core, and across the ranks of the MPI build, which split
 * every shape's configurations between them). The tiling is every
 * integer parameter with sweep candidates that no column or --set gives,
 * and every --vary: the same columns whatever the shapes. A dtype
 * parameter is not tiling but part of the shape (a tuned table is keyed
 * by its dtypes): unless the shapes, --set or --vary give it, it keeps its
 * default instead of being swept over its candidates. */
#include <stdlib.h>
#include <string.h>

#include "../sim/base/outfile.h"
#include "../sim/mesh/ranks.h"
#include "tune.h"

#define TUNE_MASK \
    (K_SET | K_VARY | K_CHIP | K_CHIP_FILE | K_JSON | K_CSV | K_THREADS | K_SHAPES | K_OUT_FILE | K_VMEM_LIMIT)

const cli_cmd cli_tune_cmd = {
    "tune", "tilesim tune KERNEL --shapes SHAPES.csv [--csv | --json] [-o FILE]",
    "tilesim tune KERNEL|PLUGIN.so[:NAME] --shapes SHAPES.csv [--vary name=v1,v2,...] [--set name=value ...] "
    "[--chip NAME | --chip-file FILE] [--vmem-limit BYTES] [--csv | --json] [-o FILE] [--threads N]",
    NULL, cli_tune_help};

void cli_tune_help(const cli_cmd *cmd, FILE *f)
{
    (void)cmd;
    fprintf(f, "usage: %s\n\n", cli_tune_cmd.synopsis);
    fprintf(f, "For each shape in SHAPES.csv, sweep the kernel's other parameters (the tiling: their --vary\n"
               "lists, or the candidates 'tilesim list' shows) in cost-only mode, and write the best\n"
               "configuration, its predicted time, the runner-up and the margin: one table keyed by shape.\n"
               "A dtype parameter is part of the shape, not the tiling: give it as a column, --set or\n"
               "--vary, or it keeps its default. As in 'tilesim sweep', each tiling may raise the call's\n"
               "VMEM limit up to the chip's physical VMEM, unless the kernel sets its own limit or\n"
               "--vmem-limit pins it.\n"
               "SHAPES.csv: a header of parameter names (M,N,K), then one line of values per shape; '#'\n"
               "lines and blank lines are skipped; a field may be in double quotes.\n");
    cli_kopt_help(TUNE_MASK, f);
    fprintf(f, "Exit status: 0 every shape has a legal tiling, 1 some shape has none (its row says why),\n"
               "2 a bad command line or shapes file.\n");
}

/* The tiling: every --vary, and every integer parameter with sweep candidates that no column or --set gives;
 * the same columns whatever the shapes (a batch under 128 rows gives bb one candidate, and the column went).
 * defaulted: the other integer parameters no column or --set gives, each at its default for every shape. */
static void plan_columns(tune_job *job, const int *fixed, const int *varied)
{
    const pl_kernel_def *d = job->d;
    int col[PL_KDEF_MAX_PARAMS] = {0};
    for (int c = 0; c < job->sh->n_cols; c++) col[job->sh->col[c]] = 1;
    for (int p = 0; p < d->n_params; p++) {
        const pl_kernel_param *q = &d->params[p];
        int candidates = q->kind == PL_PARAM_INT && (q->n_candidates > 0 || q->divides);
        job->tiling[p] = varied[p] || (!col[p] && !fixed[p] && candidates);
        job->defaulted[p] = q->kind == PL_PARAM_INT && !col[p] && !fixed[p] && !job->tiling[p];
    }
}

/* Is the best, with tiling parameter p twice its value (past the list tried), legal and faster by 1 % or
 * more? Simulated as the sweep ran it: the note under the table is advice, said only where it gains. */
static int past_the_end_gains(const tune_job *job, const pl_sweep_options *so, const tune_row *r, int p)
{
    int64_t w[PL_KDEF_MAX_PARAMS];
    memcpy(w, r->best, sizeof w);
    if (w[p] > INT64_MAX / 2) return 0;
    w[p] *= 2;
    pl_report *one = malloc(sizeof *one); /* a report is large: not on a stack */
    int gains = one && pl_kernel_sweep(job->d, 1, w, &job->opt, so, one) == PL_OK && one->status == PL_OK &&
                one->time_s < r->best_s * 0.99;
    free(one);
    return gains;
}

/* Sweep shape i into job->rows[i]. 0, or an exit status. */
static int tune_one(tune_job *job, int i)
{
    const pl_kernel_def *d = job->d;
    cli_kopts o = *job->o;
    char sets[PL_KDEF_MAX_PARAMS][96];
    for (int c = 0; c < job->sh->n_cols; c++) {
        if (o.n_sets == CLI_MAX_SETS) return cli_fail(job->cmd, "too many --set options with the shape's columns");
        o.sets[o.n_sets++] = tune_assign(d, job->sh->col[c], job->sh->values[(size_t)i * PL_KDEF_MAX_PARAMS + c], sets[c],
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
    /* as `tilesim sweep` searches: a tiling may raise its limit, as an autotuner's may, unless --vmem-limit pins
     * it or the kernel sets its own (quant_matmul's min(estimate, cap), as the production kernel does): a tiling
     * over that limit does not compile, and an autotuner times it as failed */
    int own = d->vmem_limit_bytes > 0 || d->vmem_limit;
    pl_sweep_options so = {.threads = (int)job->o->threads, .vmem_limit_auto = !job->o->vmem_limit && !own};
    rc = reps ? pl_kernel_sweep(d, n, values, &job->opt, &so, reps) : PL_ENOMEM;
    int best = -1, second = -1;
    int64_t top[PL_KDEF_MAX_PARAMS]; /* the largest value tried of each parameter */
    memcpy(top, values, (size_t)d->n_params * sizeof *top);
    for (int k = 0; rc == PL_OK && k < n; k++) {
        for (int p = 0; p < d->n_params; p++) {
            int64_t v = values[(size_t)k * (size_t)d->n_params + p];
            if (v != values[p]) job->tiling[p] = 1;
            if (v > top[p]) top[p] = v;
        }
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
        r->vmem_limit = reps[best].vmem_limit; /* a serving stack sets it as the call's vmem_limit_bytes */
        r->raised = job->opt.chip_spec && reps[best].vmem_limit > job->opt.chip_spec->vmem_default_limit;
        for (int p = 0; p < d->n_params && p < 32; p++) /* the best at the end of its list */
            if (job->tiling[p] && d->params[p].kind == PL_PARAM_INT && r->best[p] == top[p] && top[p] != values[p] &&
                past_the_end_gains(job, &so, r, p))
                r->edge |= 1u << p;
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

/* ---- the verb ----------------------------------------------------------------------------- */

static int write_out(const tune_job *job)
{
    const cli_kopts *o = job->o;
    void (*print)(const tune_job *, FILE *) = o->json ? tune_print_json : o->csv ? tune_print_csv : tune_print_text;
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
    if (o.out_file && cli_same_file(o.out_file, o.shapes))
        return cli_fail(cmd, "-o '%s' is the shapes file: the table would replace the shapes; give -o another path",
                        CLI_CUT(o.out_file));
    int fixed[PL_KDEF_MAX_PARAMS] = {0}, varied[PL_KDEF_MAX_PARAMS] = {0};
    for (int i = 0; i < o.n_sets + o.n_varies; i++) {
        const char *a = i < o.n_sets ? o.sets[i] : o.varies[i - o.n_sets];
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)strcspn(a, "="), a);
        int p = pl_kernel_param_index(d, name);
        if (p >= 0) fixed[p] = 1, varied[p] |= i >= o.n_sets;
    }
    tune_shapes sh;
    if ((rc = tune_read_shapes(cmd, o.shapes, d, fixed, &sh))) return rc;
    if (sh.repeats)
        fprintf(stderr, "tilesim tune: %d row%s of %s repeat%s a shape given before (line %d repeats line %d): each "
                "shape is tuned once, in one row\n", sh.repeats, sh.repeats == 1 ? "" : "s", o.shapes,
                sh.repeats == 1 ? "s" : "", sh.first_repeat, sh.repeated);
    job.d = d;
    job.sh = &sh;
    plan_columns(&job, fixed, varied);
    job.opt.cost_only = 1;
    job.rows = calloc((size_t)sh.n, sizeof *job.rows);
    rc = job.rows ? run_all(&job) : (fprintf(stderr, "tilesim tune: out of host memory\n"), 1);
    free(job.rows);
    tune_shapes_free(&sh);
    return cli_finish_stdout(cmd, rc);
}
