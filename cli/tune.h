/* cli/tune.h: `tilesim tune KERNEL --shapes SHAPES.csv`: for each shape
 * (the values of some parameters), sweep the others (the tiling) in
 * cost-only mode and keep the best configuration, its predicted time, the
 * runner-up and the margin: one table keyed by shape, the form serving
 * stacks read tuned block sizes from. Internal to cli/.
 *
 *     tilesim tune matmul --shapes shapes.csv --csv -o tuned.csv
 *
 * tune.c drives, tune_print.c prints, tune_shapes.c reads the shapes file.
 */
#ifndef TILESIM_CLI_TUNE_H
#define TILESIM_CLI_TUNE_H

#include <stdio.h>

#include "cli.h"

#define TUNE_MAX_SHAPES 4096

/* The shapes file: n rows; row i's value of column c is
 * values[i * PL_KDEF_MAX_PARAMS + c], column c being parameter col[c]. */
typedef struct tune_shapes {
    int n_cols;
    int col[PL_KDEF_MAX_PARAMS];
    int n;
    int64_t *values;
    int line[TUNE_MAX_SHAPES]; /* each shape's line in the file, for messages */
    int repeats;               /* rows that repeat an earlier shape: not tuned again */
    int first_repeat, repeated; /* the first such row's line, and the line it repeats */
} tune_shapes;

/* Read path for kernel d; fixed[p] is set for the parameters --set or
 * --vary already give (they may not be columns too). 0, or the exit status
 * after printing an error that names the file, line and column. */
int tune_read_shapes(const cli_cmd *cmd, const char *path, const pl_kernel_def *d, const int *fixed, tune_shapes *sh);
void tune_shapes_free(tune_shapes *sh);

/* Tilings predicted within 5 % of the best are ties: against the hardware
 * autotuner's choices that is about how far tilesim's ranking can be
 * trusted (docs/CHIPS.md), so the table counts them, to be timed on the chip. */
#define TUNE_TIE 0.05

/* What one shape's sweep found. */
typedef struct tune_row {
    int legal, total;
    unsigned edge; /* bit p: the best takes the largest value of tiling parameter p tried, and twice it is faster */
    int ties; /* legal tilings within TUNE_TIE of the best, the best included */
    int64_t best[PL_KDEF_MAX_PARAMS], second[PL_KDEF_MAX_PARAMS];
    int64_t key[PL_KDEF_MAX_PARAMS]; /* every parameter's value outside the tiling (the first configuration's) */
    double best_s, second_s; /* second_s < 0: no runner-up */
    int64_t vmem_limit;      /* the scoped VMEM limit the best needs (its vmem_limit_bytes) */
    int raised;              /* 1: above the chip's default scoped limit: the call must set it */
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
    int defaulted[PL_KDEF_MAX_PARAMS]; /* the other parameters of the shape no column or --set gives (their
                                          defaults, for every shape: said in the heading) */
    tune_row *rows;
} tune_job;

/* "name=value" of parameter p (a dtype by its name) into buf. */
const char *tune_assign(const pl_kernel_def *d, int p, int64_t v, char *buf, size_t n);

/* The table of job's rows as text, CSV or JSON (tune_print.c). */
void tune_print_text(const tune_job *job, FILE *f);
void tune_print_csv(const tune_job *job, FILE *f);
void tune_print_json(const tune_job *job, FILE *f);

#endif
