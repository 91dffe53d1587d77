/* cli/ksweep.c: `tilesim sweep KERNEL`: the cartesian product of parameter
 * values, each configuration in cost-only mode on every host core
 * (pl_kernel_sweep), ranked by predicted time by the public printers
 * (pl_sweep_print_table / _csv / _json, pl_roofline_svg).
 *
 * Which values: a parameter given --vary takes that list; one given --set
 * takes that value; any other takes its definition's candidates (the values
 * "a sweep tries when not told", sim/kdef.h), or its default when it has
 * none. `tilesim sweep matmul M N K ...` (positional sizes) is the older
 * matmul sweep of sweep.c, unchanged. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/base/outfile.h"
#include "cli.h"

#define MAX_CONFIGS 4096
#define SWEEP_MASK (K_SET | K_VARY | K_CHIP | K_CHIP_FILE | K_JSON | K_CSV | K_SVG | K_TOP | K_THREADS | K_VMEM_LIMIT)

typedef struct axis_list {
    int n;
    int64_t v[CLI_MAX_LIST];
} axis_list;

/* "name=v1,v2,...": the values, parsed as --set would parse each. */
static int parse_vary(const cli_cmd *cmd, const pl_kernel_def *d, const char *text, axis_list *lists, int *seen)
{
    const char *eq = strchr(text, '=');
    char name[64], msg[PL_MSG_MAX], one[160];
    snprintf(name, sizeof name, "%.*s", eq ? (int)(eq - text) < 63 ? (int)(eq - text) : 63 : 0, text);
    int p = eq ? pl_kernel_param_index(d, name) : -1;
    if (!eq || !eq[1]) return cli_fail(cmd, "--vary %s: want NAME=V1,V2,... (e.g. --vary %s=8,16,32)", CLI_CUT(text),
                                       d->n_params ? d->params[0].name : "br");
    if (p < 0) {
        int64_t tmp[PL_KDEF_MAX_PARAMS];
        pl_kernel_defaults(d, tmp);
        pl_kernel_set(d, tmp, text, msg, sizeof msg); /* its message lists the parameters */
        return cli_fail(cmd, "--vary %s: %s", CLI_CUT(text), msg);
    }
    if (seen[p])
        return cli_fail(cmd, "--vary %s: parameter '%s' is given twice (by --vary or --set)", CLI_CUT(text), name);
    seen[p] = 1;
    axis_list *l = &lists[p];
    l->n = 0;
    for (const char *s = eq + 1;;) {
        size_t len = strcspn(s, ",");
        if (len == 0) return cli_fail(cmd, "--vary %s: an empty item; give comma-separated values", CLI_CUT(text));
        if (l->n == CLI_MAX_LIST) /* the count, not the list: a 10,000-value list is 49 KB */
            return cli_fail(cmd, "--vary %s: %d values; at most %d", name, cli_count_items(eq + 1), CLI_MAX_LIST);
        int64_t tmp[PL_KDEF_MAX_PARAMS];
        pl_kernel_defaults(d, tmp);
        snprintf(one, sizeof one, "%s=%.*s", name, (int)(len < 100 ? len : 100), s);
        if (pl_kernel_set(d, tmp, one, msg, sizeof msg) != PL_OK)
            return cli_fail(cmd, "--vary %s: %s", CLI_CUT(text), msg);
        for (int j = 0; j < l->n; j++)
            if (l->v[j] == tmp[p]) return cli_fail(cmd, "--vary %s: '%.*s' appears twice", CLI_CUT(text),
                                                   (int)(len < CLI_ECHO_MAX ? len : CLI_ECHO_MAX), s);
        l->v[l->n++] = tmp[p];
        if (!s[len]) break;
        s += len + 1;
    }
    return 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* The multiples of m that divide dim, ascending, at most max of them (the
 * smallest): trial division of dim / m up to its square root, stopped at
 * 2^20 trials so that a huge --set value cannot stall the sweep. */
static int divisor_list(int64_t dim, int64_t m, int64_t *out, int max)
{
    if (dim <= 0 || m <= 0 || dim % m) return 0;
    int64_t k = dim / m, found[2 * CLI_MAX_LIST];
    int n = 0;
    for (int64_t i = 1; i <= k / i && i <= (1 << 20) && n + 2 <= 2 * CLI_MAX_LIST; i++)
        if (k % i == 0) {
            found[n++] = i * m;
            if (i != k / i) found[n++] = k / i * m;
        }
    qsort(found, (size_t)n, sizeof *found, cmp_i64);
    if (n > max) n = max;
    memcpy(out, found, (size_t)n * sizeof *out);
    return n;
}

/* Every parameter's list of values; the product's size in *total; in kept
 * (when not NULL) 1 for each dtype parameter with candidates that no
 * --set or --vary names, kept at the chip's default. */
static int value_lists(const cli_cmd *cmd, const pl_kernel_def *d, const cli_kopts *o, const pl_chip *chip,
                       axis_list *lists, int64_t *total, int *kept)
{
    int seen[PL_KDEF_MAX_PARAMS] = {0}, rc;
    int64_t base[PL_KDEF_MAX_PARAMS];
    if ((rc = cli_kernel_values(cmd, d, o, chip, base))) return rc;
    for (int i = 0; i < o->n_sets; i++) {
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)strcspn(o->sets[i], "="), o->sets[i]);
        int p = pl_kernel_param_index(d, name);
        if (p >= 0) seen[p] = 2;
    }
    for (int i = 0; i < o->n_varies; i++)
        if ((rc = parse_vary(cmd, d, o->varies[i], lists, seen))) return rc;
    *total = 1;
    for (int p = 0; p < d->n_params; p++) {
        const pl_kernel_param *q = &d->params[p];
        int t = q->divides ? pl_kernel_param_index(d, q->divides) : -1;
        if (kept) kept[p] = !seen[p] && q->kind == PL_PARAM_DTYPE && q->n_candidates > 1;
        if (!seen[p] && t >= 0 && !(seen[t] == 1 && lists[t].n > 1)) {
            /* every multiple of q->multiple dividing the dimension it tiles */
            int64_t dim = seen[t] == 1 ? lists[t].v[0] : base[t], m = q->multiple > 0 ? q->multiple : 1;
            lists[p].n = divisor_list(dim, m, lists[p].v, CLI_MAX_LIST);
            /* no multiple of m divides it (batch 64, bb in 128s): the whole
             * dimension, the one block the (8, 128) rule always allows */
            if (!lists[p].n) lists[p].n = 1, lists[p].v[0] = dim > 0 ? dim : base[p];
        } else if (!seen[p] && q->candidates && q->n_candidates > 0 && q->kind != PL_PARAM_DTYPE) {
            /* a dtype is the data's, not the tiling's (tune keys its tables by
             * it): kept at the chip's default below unless --vary names it */
            lists[p].n = q->n_candidates < CLI_MAX_LIST ? q->n_candidates : CLI_MAX_LIST;
            memcpy(lists[p].v, q->candidates, (size_t)lists[p].n * sizeof *lists[p].v);
        } else if (seen[p] != 1) lists[p].n = 1, lists[p].v[0] = base[p];
        *total *= lists[p].n;
        if (*total > MAX_CONFIGS)
            return cli_fail(cmd, "more than %d configurations (the candidates of every parameter not given --set "
                                 "are swept): fix some with --set or narrow them with --vary", MAX_CONFIGS);
    }
    return 0;
}

static void expand(const pl_kernel_def *d, const axis_list *lists, int64_t total, int64_t *values)
{
    for (int64_t i = 0; i < total; i++) {
        int64_t rest = i; /* the last parameter fastest */
        for (int p = d->n_params - 1; p >= 0; p--) {
            values[i * d->n_params + p] = lists[p].v[rest % lists[p].n];
            rest /= lists[p].n;
        }
    }
}

int cli_sweep_values(const cli_cmd *cmd, const pl_kernel_def *d, const cli_kopts *o, const pl_chip *chip,
                     int64_t **values, int *n, int *kept)
{
    *values = NULL;
    *n = 0;
    axis_list *lists = calloc(PL_KDEF_MAX_PARAMS, sizeof *lists);
    int64_t total = 0;
    if (!lists) return fprintf(stderr, "tilesim %s: out of host memory\n", cmd->name), 1;
    int rc = value_lists(cmd, d, o, chip, lists, &total, kept);
    if (rc == 0) {
        *values = calloc((size_t)total * (size_t)(d->n_params ? d->n_params : 1), sizeof **values);
        if (*values) expand(d, lists, total, *values), *n = (int)total;
        else rc = 1, fprintf(stderr, "tilesim %s: out of host memory for %lld configurations\n", cmd->name,
                             (long long)total);
    }
    free(lists);
    return rc;
}

/* The fastest legal row, whose sentence the table's summary repeats, gets
 * the advice `run` gives: only a simulated gain (issue 22). */
static void advise_best(const pl_kernel_def *d, const int64_t *values, const pl_options *opt, int n, pl_report *reps)
{
    int best = -1;
    for (int i = 0; i < n; i++)
        if (reps[i].status == PL_OK && (best < 0 || reps[i].time_s < reps[best].time_s)) best = i;
    if (best >= 0) pl_kernel_advise(d, values + (size_t)best * (size_t)d->n_params, opt, &reps[best]);
}

const char *cli_kept_text(const pl_kernel_def *d, const int *kept, const int64_t *v, const char *why, char *buf,
                          size_t n)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int p = 0; p < d->n_params && at < n; p++)
        if (kept[p])
            at += (size_t)snprintf(buf + at, n - at, "%s%s=%s", at ? " " : ", ", d->params[p].name,
                                   pl_dtype_name((pl_dtype)v[p]));
    if (at && at < n) snprintf(buf + at, n - at, " kept (a dtype: %s)", why);
    return buf;
}

static int print_all(const cli_kopts *o, const pl_kernel_def *d, const pl_chip *chip, int n, const pl_report *reps,
                     const char *const *labels, const char *kept)
{
    if (o->json) return pl_sweep_print_json(stdout, n, reps, labels);
    if (o->csv) return pl_sweep_print_csv(stdout, n, reps, labels);
    fprintf(stdout, "sweep: %s on %s: %d configuration%s%s, cost only, ranked by predicted time\n\n", d->name,
            chip->name, n, n == 1 ? "" : "s", kept);
    return pl_sweep_print_table(stdout, n, reps, labels, o->top ? (int)o->top : 20);
}

int cli_ksweep(int argc, char **argv)
{
    const cli_cmd *cmd = &cli_sweep_cmd;
    cli_kopts o;
    const pl_kernel_def *d;
    pl_chip file_chip;
    pl_options opt;
    int rc = cli_kparse(cmd, SWEEP_MASK, argc + 1, argv - 1, &o);
    if (rc >= 0) return rc;
    if (o.npos == 0) return cli_fail(cmd, "missing the kernel: give a name from 'tilesim list' or PLUGIN.so[:NAME]");
    if ((rc = cli_find_kernel(cmd, o.pos[0], &d))) return rc;
    if (o.npos > 1) return cli_fail(cmd, "unexpected argument '%s' after the kernel; use --vary and --set", CLI_CUT(o.pos[1]));
    axis_list *lists = calloc(PL_KDEF_MAX_PARAMS, sizeof *lists);
    int64_t total = 0;
    int kept[PL_KDEF_MAX_PARAMS];
    if (!lists) return fprintf(stderr, "tilesim sweep: out of host memory\n"), 1;
    if ((rc = cli_kernel_options(cmd, &o, &file_chip, &opt)) ||
        (rc = value_lists(cmd, d, &o, opt.chip_spec, lists, &total, kept))) {
        free(lists);
        return rc;
    }
    char why[PL_MSG_MAX]; /* before the sweep: fail fast, creating and truncating nothing (sim/base/outfile.h) */
    if (o.svg && sim_out_probe(o.svg, why, sizeof why)) {
        free(lists);
        return cli_fail(cmd, "--svg: %s", why);
    }
    int n = (int)total;
    int64_t *values = calloc((size_t)n * (size_t)(d->n_params ? d->n_params : 1), sizeof *values);
    pl_report *reps = calloc((size_t)n, sizeof *reps);
    char **labels = calloc((size_t)n, sizeof *labels);
    int status = 1;
    if (values && reps && labels) {
        expand(d, lists, total, values);
        for (int i = 0; i < n; i++)
            if ((labels[i] = malloc(256))) pl_kernel_format(d, values + (size_t)i * (size_t)d->n_params, labels[i], 256);
        /* no --vmem-limit: each configuration may raise its limit, as an autotuner's may */
        pl_sweep_options so = {.threads = (int)o.threads, .vmem_limit_auto = !o.vmem_limit};
        opt.cost_only = 1;
        rc = pl_kernel_sweep(d, n, values, &opt, &so, reps);
        if (rc == PL_OK) {
            int legal = 0;
            for (int i = 0; i < n; i++) legal += reps[i].status == PL_OK;
            /* the neighbours tried at the limit the rows had: raised as far as the chip's VMEM when not pinned */
            pl_options aopt = opt;
            if (so.vmem_limit_auto && opt.chip_spec) aopt.vmem_limit_bytes = opt.chip_spec->vmem_bytes;
            advise_best(d, values, &aopt, n, reps);
            char said[256];
            cli_kept_text(d, kept, values, "compare with --vary", said, sizeof said);
            print_all(&o, d, opt.chip_spec, n, reps, (const char *const *)labels, said);
            status = legal ? 0 : 1;
            char msg[PL_MSG_MAX];
            /* nothing legal, nothing to plot: a failed sweep leaves the file as it was */
            if (o.svg && !legal) fprintf(stderr, "tilesim sweep: --svg: no legal configuration to plot; '%s' not "
                                         "written\n", o.svg);
            else if (o.svg && pl_roofline_svg(o.svg, n, reps, (const char *const *)labels, opt.chip_spec, d->name,
                                              msg, sizeof msg) != PL_OK)
                fprintf(stderr, "tilesim sweep: --svg: %s\n", msg), status = CLI_EXIT_USAGE;
        } else fprintf(stderr, "tilesim sweep: %s: the sweep failed: %s\n", d->name, pl_strerror(rc));
    } else fprintf(stderr, "tilesim sweep: out of host memory for %d configurations\n", n);
    for (int i = 0; labels && i < n; i++) free(labels[i]);
    free(labels), free(reps), free(values), free(lists);
    return cli_finish_stdout(cmd, status);
}
