/* sim/kdef/calibrate.h: fit a chip's timing figures to measured kernel times
 * (`tilesim calibrate`, issue 22). Internal; the command is cli/calibrate.c.
 *
 * A user with a TPU times a few kernels; the simulator predicts the same
 * configurations cost-only on a base chip, and the fit moves the figures
 * below until the predictions agree, by least squares on the log of
 * predicted over measured time (so that a 5 us kernel counts as much as a
 * 5 ms one), each figure within physical bounds around the base's:
 *
 *     sim_cal_row rows[] = {{.d = matmul, .v = {...}, .measured_s = 812e-6}, ...};
 *     int fit[SIM_CAL_NPARAMS] = {1, 1, 0, 0, 1, 1};
 *     sim_cal_result res;
 *     if (sim_calibrate(&base, rows, n, fit, &res, msg, sizeof msg)) puts(msg);
 *     // res.chip: the base with the fitted figures; res.before/after per row
 *
 * Gauss-Newton steps with a Levenberg damping on log(figure), the Jacobian
 * by finite differences (each prediction is a cost-only pl_kernel_run, a few
 * milliseconds). Before fitting, a figure that no row's time depends on, or
 * one the rows cannot tell from an earlier one (parallel columns of the
 * Jacobian), is refused by name: a fit would return any value for it.
 */
#ifndef TILESIM_SIM_CALIBRATE_H
#define TILESIM_SIM_CALIBRATE_H

#include <stdio.h>

#include "../kdef.h"

/* The figures a calibration may fit, in this order. */
typedef struct sim_cal_param {
    const char *key;  /* the chip-file key ("hbm_gbps") */
    size_t offset;    /* the pl_chip field (a double) */
    double file_unit; /* chip-file unit in model units (1e9 for GB/s) */
    double lo, hi;    /* bounds as factors of the base's value */
    double abs_lo;    /* and at least this, in model units (a base of 0 fits from here) */
    const char *what; /* for messages: "HBM bandwidth" */
} sim_cal_param;

#define SIM_CAL_NPARAMS 14
extern const sim_cal_param sim_cal_params[SIM_CAL_NPARAMS];

/* One measurement: kernel d at parameter values v took measured_s. */
typedef struct sim_cal_row {
    const pl_kernel_def *d;
    int64_t v[PL_KDEF_MAX_PARAMS];
    double measured_s;
    int line; /* of the input file, for messages */
} sim_cal_row;

typedef struct sim_cal_result {
    pl_chip chip;         /* the base with the fitted figures */
    double *before, *after; /* predicted seconds per row (malloc'd; sim_cal_result_free) */
    double rms_before, rms_after; /* root mean square of log(predicted / measured) */
    int iterations;
    int kept[SIM_CAL_NPARAMS]; /* 1: fit[j] was 2 and no row determines it: left at the base's value */
    int at_bound[SIM_CAL_NPARAMS]; /* -1, 1: the fit stopped at its lower, upper bound (the rows pull further) */
} sim_cal_result;

/* Where sim_calibrate says how long a fit will take, when one pass over the
 * rows takes a second or more, and then every 30 s how far it is (NULL: it
 * says nothing; the tilesim command passes stderr). */
void sim_calibrate_progress(FILE *to);

/* Fit the figures with fit[j] set: 1, or 2 for one that is kept at the
 * base's value (res->kept[j]) when the rows cannot determine it. PL_OK; or PL_EINVAL with msg naming a
 * figure the rows cannot determine, or a row whose configuration the
 * simulator refuses (by its line); PL_ENOMEM. */
int sim_calibrate(const pl_chip *base, const sim_cal_row *rows, int n, const int *fit, sim_cal_result *res,
                  char *msg, size_t msglen);
void sim_cal_result_free(sim_cal_result *res);

#endif
