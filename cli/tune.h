/* cli/tune.h: `tilesim tune KERNEL --shapes SHAPES.csv`: for each shape
 * (the values of some parameters), sweep the others (the tiling) in
 * cost-only mode and keep the best configuration, its predicted time, the
 * runner-up and the margin: one table keyed by shape, the form serving
 * stacks read tuned block sizes from. Internal to cli/.
 *
 *     tilesim tune matmul --shapes shapes.csv --csv -o tuned.csv
 *
 * tune.c drives and prints, tune_shapes.c reads the shapes file.
 */
#ifndef TILESIM_CLI_TUNE_H
#define TILESIM_CLI_TUNE_H

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
} tune_shapes;

/* Read path for kernel d; fixed[p] is set for the parameters --set or
 * --vary already give (they may not be columns too). 0, or the exit status
 * after printing an error that names the file, line and column. */
int tune_read_shapes(const cli_cmd *cmd, const char *path, const pl_kernel_def *d, const int *fixed, tune_shapes *sh);
void tune_shapes_free(tune_shapes *sh);

#endif
