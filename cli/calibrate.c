/* cli/calibrate.c: `tilesim calibrate MEASURED.csv [--chip BASE] [-o CHIP_FILE]`
 * (issue 22): fit a chip's timing figures to kernel times measured on a
 * real TPU (sim/kdef/calibrate.h), print each row's error before and after, and
 * write a what-if chip file that --chip-file takes.
 *
 * MEASURED.csv: a header naming the columns kernel, chip, time_us and
 * params (any order), then one measurement per line:
 *
 *     kernel,chip,time_us,params
 *     matmul,v5e,812.4,M=4096 N=4096 K=4096 bm=512 bn=512 bk=1024 dtype=bf16
 *
 * params are the kernel's parameter values as --set takes them, separated
 * by spaces; '#' lines and blank lines are skipped. Every error names the
 * file and line. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../examples/kernels/registry.h"
#include "../sim/kdef/calibrate.h"
#include "../sim/base/common.h"
#include "../sim/base/outfile.h"
#include "cli.h"

#define CAL_MASK (K_CHIP | K_CHIP_FILE | K_OUT_FILE | K_FIT)
#define CAL_MAX_ROWS 512

const cli_cmd cli_calibrate_cmd = {
    "calibrate", "tilesim calibrate MEASURED.csv [--chip BASE | --chip-file FILE] [--fit LIST] [-o CHIP_FILE]",
    "tilesim calibrate MEASURED.csv [--chip BASE | --chip-file FILE] [--fit LIST] [-o CHIP_FILE]",
    NULL, cli_calibrate_help};

void cli_calibrate_help(const cli_cmd *cmd, FILE *f)
{
    (void)cmd;
    fprintf(f, "usage: %s\n\n", cli_calibrate_cmd.synopsis);
    fprintf(f, "Fit the base chip's timing figures to kernel times you measured on a TPU: each row's\n"
               "configuration is predicted cost-only and the figures move, within physical bounds, to minimise\n"
               "the squared log of predicted over measured time. Prints each row's error before and after and\n"
               "the fitted figures; -o writes them as a chip file for --chip-file.\n"
               "MEASURED.csv: a header 'kernel,chip,time_us,params', then one row per measurement, params as\n"
               "--set takes them separated by spaces ('M=4096 N=4096 K=4096 bm=512 bn=512 bk=512'); a field\n"
               "may be in double quotes, as spreadsheets write them.\n");
    cli_kopt_help(CAL_MASK, f);
    fprintf(f, "Figures (--fit): ");
    for (int j = 0; j < SIM_CAL_NPARAMS; j++) fprintf(f, "%s%s", j ? ", " : "", sim_cal_params[j].key);
    fprintf(f, "\nExit status: 0 fitted, 2 a bad file or option, or figures the rows cannot determine.\n");
}

/* ---- the measurements ------------------------------------------------------------------ */

enum { COL_KERNEL, COL_CHIP, COL_TIME, COL_PARAMS, N_COLS };
static const char *const col_names[N_COLS] = {"kernel", "chip", "time_us", "params"};

typedef struct cal_input {
    const char *path;
    char chip[32];         /* the chip every row names */
    sim_cal_row rows[CAL_MAX_ROWS];
    int n;
} cal_input;

/* The fields of one line (CSV, quotes allowed), trimmed, into f (at most
 * n); the count, or -1 when a quoted field is not closed. */
static int split(char *line, char **f, int n)
{
    int k = 0, bad = 0;
    for (char *at = line; at && k < n + 1; k++) {
        char *field = cli_csv_field(&at, &bad);
        if (k < n) f[k] = field;
    }
    return bad ? -1 : k;
}

static int find_kernel(const cli_cmd *cmd, const cal_input *in, int line, const char *name, const pl_kernel_def **d)
{
    if (!strstr(name, ".so")) {
        if ((*d = ex_kernel_find(name)) || (*d = ex_mesh_kernel_find(name))) return 0; /* mesh rows fit ICI, DCN */
        return cli_fail(cmd, "%s:%d: unknown kernel '%s' (see 'tilesim list', or give PLUGIN.so[:NAME])", in->path,
                        line, CLI_CUT(name));
    }
    int rc = cli_find_kernel(cmd, name, d);
    if (rc) fprintf(stderr, "tilesim calibrate: (the kernel of %s:%d)\n", in->path, line);
    return rc;
}

static int parse_row(const cli_cmd *cmd, cal_input *in, int line, char **f, const pl_chip *base)
{
    if (in->n == CAL_MAX_ROWS) return cli_fail(cmd, "%s:%d: more than %d rows", in->path, line, CAL_MAX_ROWS);
    sim_cal_row *r = &in->rows[in->n];
    int rc = find_kernel(cmd, in, line, f[COL_KERNEL], &r->d);
    if (rc) return rc;
    /* the base's name, or for a chip file the preset it starts from (its rows say v5e, the file 'custom') */
    const char *preset = pl_chip_preset_of(base)->name;
    if (strcmp(f[COL_CHIP], base->name) != 0 && strcmp(f[COL_CHIP], preset) != 0)
        return cli_fail(cmd, "%s:%d: measured on '%s', but the base chip is '%s'%s%s%s: calibrate one chip at a time "
                        "(--chip or --chip-file names the base)", in->path, line, CLI_CUT(f[COL_CHIP]), base->name,
                        strcmp(preset, base->name) ? " (from " : "", strcmp(preset, base->name) ? preset : "",
                        strcmp(preset, base->name) ? ")" : "");
    if (in->n > 0 && strcmp(f[COL_CHIP], in->chip) != 0)
        return cli_fail(cmd, "%s:%d: measured on '%s', but line %d on '%s': calibrate one chip at a time", in->path,
                        line, CLI_CUT(f[COL_CHIP]), in->rows[0].line, in->chip);
    snprintf(in->chip, sizeof in->chip, "%s", f[COL_CHIP]);
    char *end;
    errno = 0;
    /* decimal only (strtod takes hex and "infinity"); a kernel takes no less than a nanosecond */
    double us = f[COL_TIME][strspn(f[COL_TIME], "0123456789.eE+-")] ? NAN : strtod(f[COL_TIME], &end);
    if (isnan(us) || end == f[COL_TIME] || *end || errno || !(us >= 1e-3) || !isfinite(us) || us > 1e12)
        return cli_fail(cmd, "%s:%d: time_us '%s' is not a measured time: give microseconds, a decimal number from "
                        "0.001 (a nanosecond) to 1e12", in->path, line, CLI_CUT(f[COL_TIME]));
    r->measured_s = us * 1e-6;
    r->line = line;
    pl_kernel_defaults_on(r->d, base, r->v); /* the measured chip's defaults (f8e4m3 weights on v7x) */
    char *save = NULL, msg[PL_MSG_MAX];
    unsigned char given[PL_KDEF_MAX_PARAMS] = {0};
    for (char *a = strtok_r(f[COL_PARAMS], " \t", &save); a; a = strtok_r(NULL, " \t", &save)) {
        if (pl_kernel_set(r->d, r->v, a, msg, sizeof msg) != PL_OK)
            return cli_fail(cmd, "%s:%d: params: %s", in->path, line, msg);
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)strcspn(a, "="), a);
        int p = pl_kernel_param_index(r->d, name);
        if (p >= 0 && given[p]++) /* the second value would win quietly */
            return cli_fail(cmd, "%s:%d: params: '%s' given twice; give it once", in->path, line, name);
    }
    in->n++;
    return 0;
}

/* The header's column order into order[col] = field index. */
static int header(const cli_cmd *cmd, const cal_input *in, int line, char **f, int nf, int *order)
{
    for (int c = 0; c < N_COLS; c++) order[c] = -1;
    for (int k = 0; k < nf && k < N_COLS; k++) {
        int c = 0;
        while (c < N_COLS && strcmp(f[k], col_names[c])) c++;
        if (c == N_COLS || order[c] >= 0)
            return cli_fail(cmd, "%s:%d: header column '%s': want each of kernel, chip, time_us, params once",
                            in->path, line, CLI_CUT(f[k]));
        order[c] = k;
    }
    for (int c = 0; c < N_COLS; c++)
        if (order[c] < 0) return cli_fail(cmd, "%s:%d: the header has no column '%s'", in->path, line, col_names[c]);
    return 0;
}

static int read_input(const cli_cmd *cmd, cal_input *in, const pl_chip *base)
{
    char err[PL_MSG_MAX];
    int lrc;
    char *text = sim_text_load(in->path, "measurements", err, sizeof err, &lrc);
    if (!text) return cli_fail(cmd, "%s", err);
    sim_out_protect(in->path, "the measurements file");
    int rc = 0, line = 0, order[N_COLS], have_header = 0;
    for (char *at = text; at && rc == 0;) {
        char *s = at, *nl = strchr(s, '\n'), *f[N_COLS + 1], *g[N_COLS];
        at = nl ? nl + 1 : NULL;
        if (nl) *nl = '\0';
        line++;
        s = sim_text_trim(s);
        if (!*s || *s == '#') continue;
        int nf = split(s, f, N_COLS + 1);
        if (nf < 0) {
            rc = cli_fail(cmd, "%s:%d: " CLI_CSV_BAD, in->path, line);
            break;
        }
        if (!have_header) {
            rc = nf > N_COLS ? cli_fail(cmd, "%s:%d: more than 4 header columns", in->path, line)
                             : header(cmd, in, line, f, nf, order);
            have_header = 1;
            continue;
        }
        if (nf != N_COLS) {
            rc = cli_fail(cmd, "%s:%d: %d fields where the header has 4 (params are separated by spaces, not commas)",
                          in->path, line, nf);
            break;
        }
        for (int c = 0; c < N_COLS; c++) g[c] = f[order[c]];
        rc = parse_row(cmd, in, line, g, base);
    }
    free(text);
    if (rc == 0 && in->n == 0) rc = cli_fail(cmd, "%s: no measurements (a header line, then one row each)", in->path);
    return rc;
}

/* ---- figures, printing, the chip file ---------------------------------------------------- */

/* --fit LIST into fit[]; default: every figure the base chip has (not 0),
 * and every fixed cost even at 0 (v6e's and v7x's step overhead: a chip
 * of yours may have one), each kept at the base's value if the rows cannot
 * determine it (2). A rate at 0 is a part the chip lacks (no ICI links). */
static int fit_list(const cli_cmd *cmd, const char *list, const pl_chip *base, int *fit)
{
    for (int j = 0; j < SIM_CAL_NPARAMS; j++) {
        double v = *(const double *)((const char *)base + sim_cal_params[j].offset);
        int fixed_cost = sim_cal_params[j].lo <= 0.01; /* the latencies and overheads: bounds of 1/100 to 100x */
        fit[j] = !list && (v > 0 || fixed_cost) ? 2 : 0;
    }
    if (!list) return 0;
    char buf[1024];
    if (strlen(list) >= sizeof buf) return cli_fail(cmd, "--fit: a list of %zu characters; the figures' names "
                                                    "take fewer than %zu", strlen(list), sizeof buf);
    snprintf(buf, sizeof buf, "%s", list);
    char *save = NULL;
    for (char *k = strtok_r(buf, ",", &save); k; k = strtok_r(NULL, ",", &save)) {
        int j = 0;
        while (j < SIM_CAL_NPARAMS && strcmp(k, sim_cal_params[j].key)) j++;
        if (j == SIM_CAL_NPARAMS) {
            char names[256] = "";
            for (int i = 0; i < SIM_CAL_NPARAMS; i++)
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
                         sim_cal_params[i].key);
            return cli_fail(cmd, "--fit: '%s' is not a figure; the figures are %s", CLI_CUT(k), names);
        }
        /* a fixed cost (the figures that may grow a hundredfold) of 0 is a value to fit from:
         * v6e and v7x have no fixed step overhead; a throughput or a row size of 0 means none */
        if (!(*(const double *)((const char *)base + sim_cal_params[j].offset) > 0) && sim_cal_params[j].hi < 100)
            return cli_fail(cmd, "--fit: %s is 0 on %s (the chip has none): nothing to calibrate", k, base->name);
        fit[j] = 1;
    }
    return 0;
}

static double figure(const pl_chip *c, int j)
{
    return *(const double *)((const char *)c + sim_cal_params[j].offset) / sim_cal_params[j].file_unit;
}

/* "matmul M=1024 ... dtype=bf16": a row's kernel and every parameter, into buf. */
static const char *row_config(const sim_cal_row *r, char *buf, size_t n)
{
    char label[160];
    pl_kernel_format(r->d, r->v, label, sizeof label);
    snprintf(buf, n, "%s %s", r->d->name, label);
    return buf;
}

static void print_result(const cal_input *in, const pl_chip *base, const int *fit, const sim_cal_result *res)
{
    char cfg[200], t0[32], t1[32], t2[32];
    printf("calibrate: %d measurement%s on %s, %d iteration%s\n\n", in->n, in->n == 1 ? "" : "s", base->name,
           res->iterations, res->iterations == 1 ? "" : "s");
    int w = 13; /* the widest configuration: each shown whole (they were cut at 44 characters) */
    for (int i = 0; i < in->n; i++) {
        int n = (int)strlen(row_config(&in->rows[i], cfg, sizeof cfg));
        if (n > w) w = n;
    }
    printf("  %-5s %-*s %11s %11s %7s %11s %7s\n", "line", w, "configuration", "measured", "before", "error", "after",
           "error");
    for (int i = 0; i < in->n; i++) {
        const sim_cal_row *r = &in->rows[i];
        printf("  %-5d %-*s %11s %11s %+6.1f%% %11s %+6.1f%%\n", r->line, w, row_config(r, cfg, sizeof cfg),
               pl_format_time(r->measured_s, t0, sizeof t0), pl_format_time(res->before[i], t1, sizeof t1),
               100 * (res->before[i] / r->measured_s - 1), pl_format_time(res->after[i], t2, sizeof t2),
               100 * (res->after[i] / r->measured_s - 1));
    }
    printf("\n  RMS log error: %.1f%% before, %.1f%% after\n\n", 100 * res->rms_before, 100 * res->rms_after);
    for (int j = 0; j < SIM_CAL_NPARAMS; j++)
        if (fit[j] && !res->kept[j])
            printf("  %-18s %12.6g -> %-12.6g (%s)%s\n", sim_cal_params[j].key, figure(base, j),
                   figure(&res->chip, j), sim_cal_params[j].what,
                   res->at_bound[j] ? res->at_bound[j] < 0 ? "  at its lower bound: the rows pull it further"
                                                           : "  at its upper bound: the rows pull it further"
                                    : "");
    for (int j = 0; j < SIM_CAL_NPARAMS; j++)
        if (res->kept[j])
            printf("  %-18s %12.6g    kept: these rows cannot tell it apart (none depends on it, or only as "
                   "on the figures above) (%s)\n",
                   sim_cal_params[j].key, figure(base, j), sim_cal_params[j].what);
}

static int write_chip(const char *path, const cal_input *in, const pl_chip *base, const int *fit,
                      const sim_cal_result *res)
{
    char err[PL_MSG_MAX];
    sim_out *o = sim_out_open(path, err, sizeof err);
    if (!o) return fprintf(stderr, "tilesim calibrate: -o: %s\n", err), CLI_EXIT_USAGE;
    fprintf(o->f, "# tilesim calibrate: %s fitted to the %d measurements of %s\n", base->name, in->n, in->path);
    fprintf(o->f, "# RMS log error %.2f%% before, %.2f%% after (least squares on log time; figures within physical "
            "bounds)\n", 100 * res->rms_before, 100 * res->rms_after);
    fprintf(o->f, "# fitted:");
    for (int j = 0; j < SIM_CAL_NPARAMS; j++)
        if (fit[j] && !res->kept[j]) fprintf(o->f, " %s", sim_cal_params[j].key);
    fprintf(o->f, "; the others as the base had them\n");
    /* every figure off the preset, so that the file is the fitted chip whatever the base was (a chip file too) */
    pl_chip out = res->chip;
    size_t len = strlen(base->name);
    if (len < 4 || strcmp(base->name + len - 4, "-cal")) snprintf(out.name, sizeof out.name, "%.27s-cal", base->name);
    pl_chip_write(o->f, &out);
    if (sim_out_commit(o, err, sizeof err)) return fprintf(stderr, "tilesim calibrate: -o: %s\n", err), CLI_EXIT_USAGE;
    printf("\nwrote %s: use it with --chip-file\n", path);
    return 0;
}

int cli_calibrate(int argc, char **argv)
{
    const cli_cmd *cmd = &cli_calibrate_cmd;
    cli_kopts o;
    pl_chip file_chip;
    pl_options opt;
    int rc = cli_kparse(cmd, CAL_MASK, argc + 1, argv - 1, &o);
    if (rc >= 0) return rc;
    if (o.npos != 1) return cli_fail(cmd, "give one MEASURED.csv (got %d arguments)", o.npos);
    if ((rc = cli_kernel_options(cmd, &o, &file_chip, &opt))) return rc;
    char why[PL_MSG_MAX];
    if (o.out_file && sim_out_probe(o.out_file, why, sizeof why)) return cli_fail(cmd, "-o: %s", why);
    if (o.out_file && cli_same_file(o.out_file, o.pos[0]))
        return cli_fail(cmd, "-o '%s' is the measurements file: the chip file would replace them; give -o another path",
                        CLI_CUT(o.out_file));
    const pl_chip *base = opt.chip_spec;
    int fit[SIM_CAL_NPARAMS];
    if ((rc = fit_list(cmd, o.fit, base, fit))) return rc;
    cal_input *in = calloc(1, sizeof *in);
    if (!in) return fprintf(stderr, "tilesim calibrate: out of host memory\n"), 1;
    in->path = o.pos[0];
    sim_cal_result res;
    char msg[PL_MSG_MAX];
    rc = read_input(cmd, in, base);
    /* again, now that the rows' plugins are loaded: -o may name one of them */
    if (!rc && o.out_file && sim_out_probe(o.out_file, why, sizeof why)) rc = cli_fail(cmd, "-o: %s", why);
    if (rc == 0) {
        sim_calibrate_progress(stderr);
        int frc = sim_calibrate(base, in->rows, in->n, fit, &res, msg, sizeof msg);
        if (frc == PL_ENOMEM) rc = 1, fprintf(stderr, "tilesim calibrate: out of host memory\n");
        else if (frc != PL_OK) rc = cli_fail(cmd, "%s: %s", in->path, msg);
        else {
            print_result(in, base, fit, &res);
            if (o.out_file) rc = write_chip(o.out_file, in, base, fit, &res);
            sim_cal_result_free(&res);
        }
    }
    free(in);
    return cli_finish_stdout(cmd, rc);
}
