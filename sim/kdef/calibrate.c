/* sim/kdef/calibrate.c: least squares of a chip's timing figures against
 * measured times (sim/kdef/calibrate.h). */
#include "calibrate.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Bounds: a measured chip runs slower than its spec sheet, rarely faster,
 * so the throughputs may drop to a fifth and rise to twice the base's; the
 * fixed costs (a step, a copy's first byte) may go from almost nothing to
 * a hundred times the base's (tens of microseconds are seen on hosts that
 * launch kernels through a runtime), and to 10^4 times their floor where
 * the base has none. */
const sim_cal_param sim_cal_params[SIM_CAL_NPARAMS] = {
    {"bf16_tflops", offsetof(pl_chip, bf16_flops), 1e12, 0.2, 2.0, 1e9, "MXU peak (bf16)"},
    {"vpu_tflops", offsetof(pl_chip, vpu_flops), 1e12, 0.2, 2.0, 1e9, "VPU rate"},
    {"hbm_gbps", offsetof(pl_chip, hbm_bw), 1e9, 0.2, 2.0, 1e9, "HBM bandwidth"},
    {"vmem_gbps", offsetof(pl_chip, vmem_bw), 1e9, 0.2, 2.0, 1e9, "VMEM bandwidth"},
    {"step_overhead_us", offsetof(pl_chip, step_overhead_s), 1e-6, 0.01, 100.0, 1e-9, "grid step overhead"},
    {"dma_latency_us", offsetof(pl_chip, dma_latency_s), 1e-6, 0.01, 100.0, 1e-9, "DMA latency"},
    {"dma_issue_us", offsetof(pl_chip, dma_issue_s), 1e-6, 0.01, 100.0, 1e-9, "DMA issue / semaphore wait"},
    {"dma_row_bytes", offsetof(pl_chip, dma_row_bytes), 1, 0.05, 20.0, 8, "DMA full-bandwidth row"},
    {"mxu_fill_cycles", offsetof(pl_chip, mxu_fill_cycles), 1, 0.05, 20.0, 1, "MXU fill and drain"},
    {"prologue_us", offsetof(pl_chip, prologue_s), 1e-6, 0.01, 100.0, 1e-9, "pipeline prologue"},
    /* a mesh kernel's rows (ring_allreduce, hier_allreduce, ...) bound these */
    {"ici_gbps", offsetof(pl_chip, ici_bw), 1e9, 0.2, 2.0, 1e9, "ICI bandwidth per link"},
    {"ici_latency_us", offsetof(pl_chip, ici_latency_s), 1e-6, 0.01, 100.0, 1e-9, "ICI hop latency"},
    {"dcn_gbps", offsetof(pl_chip, dcn_bw), 1e9, 0.05, 4.0, 1e8, "DCN bandwidth per host"},
    {"dcn_latency_us", offsetof(pl_chip, dcn_latency_s), 1e-6, 0.01, 100.0, 1e-8, "DCN latency"},
};

#define MAX_ITER 40
#define FD_STEP 0.1 /* finite-difference step in log(figure): 10 %, wide enough to step over the kinks of a piecewise-smooth time */
#define MIN_SENSITIVITY 0.1  /* d log(time) / d log(figure) below this for every row: not determined */
#define MIN_INDEPENDENT 0.05 /* a column this parallel to the earlier ones: not told apart */

static double *field(pl_chip *c, int j) { return (double *)((char *)c + sim_cal_params[j].offset); }

typedef struct fit_state {
    const pl_chip *base;
    const sim_cal_row *rows;
    int n, np;
    int idx[SIM_CAL_NPARAMS];    /* the fitted figures' indices */
    int optional[SIM_CAL_NPARAMS]; /* fit[j] == 2: kept at the base's value when the rows cannot determine it */
    int bad;                     /* identifiable(): the column it refused */
    double lo[SIM_CAL_NPARAMS], hi[SIM_CAL_NPARAMS]; /* bounds of log(figure) */
    pl_report rep;
    char *msg;
    size_t msglen;
    int passes;                  /* predict() calls so far */
    double start, said;          /* when the fit began, and last said how far it is (progress) */
} fit_state;

static void chip_at(const fit_state *s, const double *theta, pl_chip *c)
{
    *c = *s->base;
    for (int k = 0; k < s->np; k++) *field(c, s->idx[k]) = exp(theta[k]);
}

static FILE *progress_to;
void sim_calibrate_progress(FILE *to) { progress_to = to; }

static double mono_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* A fit makes hundreds of passes over the rows: one of seconds (a row of
 * millions of grid steps) made calibrate run for half an hour in silence.
 * Said once after the first pass, then every 30 s. */
static void progress(fit_state *s, double pass_s, int slow_line, double slow_s)
{
    double now = mono_s();
    if (!progress_to) return;
    if (s->passes == 1 && pass_s >= 1)
        fprintf(progress_to, "calibrate: one pass over the %d rows takes %.1f s (line %d alone %.1f s); a fit makes "
                "a few hundred: rows of fewer grid steps fit faster\n", s->n, pass_s, slow_line, slow_s);
    else if (s->passes > 1 && now - s->said >= 30)
        fprintf(progress_to, "calibrate: %d passes over the rows so far, %.0f s\n", s->passes, now - s->start);
    else return;
    fflush(progress_to);
    s->said = now;
}

/* Predicted seconds of every row on the chip at theta. PL_OK or the first
 * refused row's code with msg naming its line. */
static int predict(fit_state *s, const double *theta, double *out)
{
    pl_chip c;
    chip_at(s, theta, &c);
    pl_options opt = {.chip_spec = &c, .cost_only = 1};
    double t0 = mono_s(), slow_s = 0;
    int slow_line = 0;
    if (!s->start) s->start = s->said = t0;
    for (int i = 0; i < s->n; i++) {
        double ti = mono_s();
        int rc = pl_kernel_run(s->rows[i].d, s->rows[i].v, &opt, &s->rep, NULL, NULL);
        if (mono_s() - ti > slow_s) slow_s = mono_s() - ti, slow_line = s->rows[i].line;
        if (rc != PL_OK || !(s->rep.time_s > 0)) {
            snprintf(s->msg, s->msglen, "line %d: %s: the simulator refuses this configuration: %s", s->rows[i].line,
                     s->rows[i].d->name, rc != PL_OK ? s->rep.error : "no time");
            return rc != PL_OK ? rc : PL_EINVAL;
        }
        out[i] = s->rep.time_s;
    }
    s->passes++;
    progress(s, mono_s() - t0, slow_line, slow_s);
    return PL_OK;
}

static double residuals(const fit_state *s, const double *pred, double *r)
{
    double ss = 0;
    for (int i = 0; i < s->n; i++) {
        r[i] = log(pred[i] / s->rows[i].measured_s);
        ss += r[i] * r[i];
    }
    return ss;
}

/* J[i * np + k] = d r_i / d theta_k by central differences. */
static int jacobian(fit_state *s, const double *theta, double *J, double *work)
{
    double t[SIM_CAL_NPARAMS], *up = work, *down = work + s->n;
    for (int k = 0; k < s->np; k++) {
        memcpy(t, theta, sizeof t);
        t[k] = theta[k] + FD_STEP;
        int rc = predict(s, t, up);
        t[k] = theta[k] - FD_STEP;
        if (rc == PL_OK) rc = predict(s, t, down);
        if (rc != PL_OK) return rc;
        for (int i = 0; i < s->n; i++) J[i * s->np + k] = (log(up[i]) - log(down[i])) / (2 * FD_STEP);
    }
    return PL_OK;
}

/* Refuse a figure no row depends on, or one parallel to earlier ones
 * (Gram-Schmidt over the columns in order). */
static int identifiable(fit_state *s, const double *J)
{
    double q[SIM_CAL_NPARAMS][512];
    int nq = s->n < 512 ? s->n : 512;
    for (int k = 0; k < s->np; k++) {
        const sim_cal_param *p = &sim_cal_params[s->idx[k]];
        double norm = 0, maxabs = 0;
        for (int i = 0; i < nq; i++) {
            q[k][i] = J[i * s->np + k];
            norm += q[k][i] * q[k][i];
            maxabs = fmax(maxabs, fabs(q[k][i]));
        }
        if (maxabs < MIN_SENSITIVITY) {
            s->bad = k;
            snprintf(s->msg, s->msglen, "the measurements cannot determine %s (%s): no row's time depends on it (a "
                     "10%% change in it moves no row by 1%%); add rows that it bounds, or leave it out of --fit",
                     p->key, p->what);
            return PL_EINVAL;
        }
        for (int m = 0; m < k; m++) {
            double dot = 0;
            for (int i = 0; i < nq; i++) dot += q[k][i] * q[m][i];
            for (int i = 0; i < nq; i++) q[k][i] -= dot * q[m][i];
        }
        double rest = 0;
        for (int i = 0; i < nq; i++) rest += q[k][i] * q[k][i];
        if (rest < MIN_INDEPENDENT * MIN_INDEPENDENT * norm) {
            s->bad = k;
            snprintf(s->msg, s->msglen, "the measurements cannot determine %s (%s): the rows' times depend on it "
                     "only as they depend on the figures before it in --fit; add rows where it alone bounds the "
                     "time, or leave it out of --fit", p->key, p->what);
            return PL_EINVAL;
        }
        for (int i = 0; i < nq; i++) q[k][i] /= sqrt(rest);
    }
    return PL_OK;
}

/* Solve (A + lambda diag(A)) x = b for a small symmetric A, by Gaussian
 * elimination with partial pivoting. 0, or -1 when singular. */
static int solve(int np, const double *A, double lambda, const double *b, double *x)
{
    double M[SIM_CAL_NPARAMS][SIM_CAL_NPARAMS + 1];
    for (int r = 0; r < np; r++) {
        for (int c = 0; c < np; c++) M[r][c] = A[r * np + c] + (r == c ? lambda * A[r * np + c] + 1e-12 : 0);
        M[r][np] = b[r];
    }
    for (int c = 0; c < np; c++) {
        int piv = c;
        for (int r = c + 1; r < np; r++)
            if (fabs(M[r][c]) > fabs(M[piv][c])) piv = r;
        if (fabs(M[piv][c]) < 1e-300) return -1;
        for (int k = 0; k <= np; k++) {
            double t = M[c][k];
            M[c][k] = M[piv][k], M[piv][k] = t;
        }
        for (int r = c + 1; r < np; r++) {
            double f = M[r][c] / M[c][c];
            for (int k = c; k <= np; k++) M[r][k] -= f * M[c][k];
        }
    }
    for (int r = np - 1; r >= 0; r--) {
        double v = M[r][np];
        for (int k = r + 1; k < np; k++) v -= M[r][k] * x[k];
        x[r] = v / M[r][r];
    }
    return 0;
}

/* One damped Gauss-Newton step from theta; lowers ss or raises lambda. */
static int step(fit_state *s, double *theta, double *ss, double *lambda, const double *J, const double *r,
                double *pred, double *rtry)
{
    double A[SIM_CAL_NPARAMS * SIM_CAL_NPARAMS] = {0}, g[SIM_CAL_NPARAMS] = {0}, dx[SIM_CAL_NPARAMS], t[SIM_CAL_NPARAMS];
    for (int i = 0; i < s->n; i++)
        for (int a = 0; a < s->np; a++) {
            g[a] -= J[i * s->np + a] * r[i];
            for (int b = 0; b < s->np; b++) A[a * s->np + b] += J[i * s->np + a] * J[i * s->np + b];
        }
    for (int tries = 0; tries < 12; tries++, *lambda *= 10) {
        if (solve(s->np, A, *lambda, g, dx)) continue;
        for (int k = 0; k < s->np; k++) t[k] = fmin(fmax(theta[k] + dx[k], s->lo[k]), s->hi[k]);
        int rc = predict(s, t, pred);
        if (rc != PL_OK) return rc;
        double ss_try = residuals(s, pred, rtry);
        if (ss_try < *ss) {
            memcpy(theta, t, (size_t)s->np * sizeof *t);
            *ss = ss_try;
            *lambda = fmax(*lambda / 10, 1e-6);
            return PL_OK;
        }
    }
    return 1; /* no step lowers the error: converged */
}

/* Damped Gauss-Newton from theta until no step lowers the error. */
static int gauss_newton(fit_state *s, double *theta, double *ss, double *J, double *r, double *pred, double *work,
                        int *iterations)
{
    double lambda = 1e-3;
    int rc = predict(s, theta, pred);
    if (rc == PL_OK) *ss = residuals(s, pred, r), rc = jacobian(s, theta, J, work);
    for (int it = 0; rc == PL_OK && it < MAX_ITER; it++) {
        double prev = *ss;
        int st = step(s, theta, ss, &lambda, J, r, pred, work);
        (*iterations)++;
        if (st < 0) rc = st;
        if (st != PL_OK || prev - *ss < 1e-12 * (1 + prev)) break;
        if ((rc = predict(s, theta, pred)) == PL_OK) residuals(s, pred, r), rc = jacobian(s, theta, J, work);
    }
    return rc;
}

/* A pattern search, one figure at a time, in shrinking steps of log(figure):
 * the simulated time is piecewise smooth (a copy overlaps compute or it does
 * not, a step waits or it does not), so Gauss-Newton can stop at a kink short
 * of the minimum; moving along each axis past the kink finds the way on. */
static int polish(fit_state *s, double *theta, double *ss, double *pred, double *r)
{
    for (double d = 0.2; d > 2e-3; d /= 5) {
        int moved = 1;
        for (int round = 0; moved && round < 4; round++) {
            moved = 0;
            for (int k = 0; k < s->np; k++)
                for (int sign = -1; sign <= 1; sign += 2) {
                    double t[SIM_CAL_NPARAMS];
                    memcpy(t, theta, sizeof t);
                    t[k] = fmin(fmax(theta[k] + sign * d, s->lo[k]), s->hi[k]);
                    if (t[k] == theta[k]) continue;
                    int rc = predict(s, t, pred);
                    if (rc != PL_OK) return rc;
                    double ss_try = residuals(s, pred, r);
                    if (ss_try < *ss * (1 - 1e-9)) *ss = ss_try, theta[k] = t[k], moved = 1;
                }
        }
    }
    return PL_OK;
}

/* The radical inverse of i in base b: the Halton sequence's coordinate. */
static double halton(int i, int b)
{
    double f = 1, x = 0;
    for (; i > 0; i /= b) f /= b, x += f * (i % b);
    return x;
}

/* From theta: Gauss-Newton, then past its kinks, then Gauss-Newton again. */
static int descend(fit_state *s, double *theta, double *ss, double *J, double *r, double *pred, double *work,
                   int *iterations)
{
    int rc = PL_OK;
    for (int pass = 0; rc == PL_OK && pass < 3; pass++) {
        double before = *ss;
        rc = gauss_newton(s, theta, ss, J, r, pred, work, iterations);
        if (rc == PL_OK) rc = polish(s, theta, ss, pred, r);
        if (pass > 0 && before - *ss < 1e-9 * (1 + before)) break;
    }
    return rc;
}

/* The time is piecewise smooth with more than one valley (a slower step
 * and a shorter latency can explain the same rows a while), so the fit
 * descends from the base's figures and from STARTS more points spread over
 * the bounds (a Halton sequence: deterministic, so the same file always
 * gives the same chip), and keeps the lowest. */
#define STARTS 3

static int fit(fit_state *s, double *theta, sim_cal_result *res)
{
    size_t n = (size_t)s->n;
    double *J = malloc(n * (size_t)s->np * sizeof *J), *r = malloc(n * sizeof *r), *pred = malloc(n * sizeof *pred),
           *work = malloc(2 * n * sizeof *work);
    int rc = J && r && pred && work ? PL_OK : PL_ENOMEM;
    if (rc == PL_OK) rc = predict(s, theta, res->before);
    if (rc == PL_OK) residuals(s, res->before, r), rc = jacobian(s, theta, J, work);
    /* only an undetermined figure is dropped: a row the simulator refuses
     * (predict, jacobian) is the row's error, and J is not filled then */
    int undetermined = 0;
    if (rc == PL_OK) rc = identifiable(s, J), undetermined = rc == PL_EINVAL;
    while (undetermined && rc == PL_EINVAL && s->np > 1 && s->optional[s->idx[s->bad]]) {
        /* a figure fitted by default that no row bounds: keep the base's */
        int k = s->bad;
        res->kept[s->idx[k]] = 1;
        for (int m = k; m + 1 < s->np; m++)
            s->idx[m] = s->idx[m + 1], s->lo[m] = s->lo[m + 1], s->hi[m] = s->hi[m + 1], theta[m] = theta[m + 1];
        /* the other columns are the same derivatives at the same point: drop column k, not recompute
         * (a mesh figure no single-device row depends on costs no predictions) */
        for (size_t i = 0, at = 0; i < n; i++)
            for (int m = 0; m < s->np; m++)
                if (m != k) J[at++] = J[i * (size_t)s->np + (size_t)m];
        s->np--;
        s->msg[0] = 0;
        rc = identifiable(s, J);
    }
    double best[SIM_CAL_NPARAMS], best_ss = INFINITY;
    static const int primes[SIM_CAL_NPARAMS] = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43};
    for (int start = 0; rc == PL_OK && start <= STARTS; start++) {
        double t[SIM_CAL_NPARAMS], ss = INFINITY;
        for (int k = 0; k < s->np; k++)
            t[k] = start == 0 ? theta[k] : s->lo[k] + halton(start, primes[k]) * (s->hi[k] - s->lo[k]);
        rc = descend(s, t, &ss, J, r, pred, work, &res->iterations);
        if (rc == PL_OK && ss < best_ss) best_ss = ss, memcpy(best, t, sizeof best);
    }
    if (rc == PL_OK) memcpy(theta, best, (size_t)s->np * sizeof *theta), rc = predict(s, theta, res->after);
    free(J), free(r), free(pred), free(work);
    return rc;
}

static double rms(const sim_cal_row *rows, const double *pred, int n)
{
    double ss = 0;
    for (int i = 0; i < n; i++) ss += pow(log(pred[i] / rows[i].measured_s), 2);
    return sqrt(ss / n);
}

int sim_calibrate(const pl_chip *base, const sim_cal_row *rows, int n, const int *fitmask, sim_cal_result *res,
                  char *msg, size_t msglen)
{
    memset(res, 0, sizeof *res);
    fit_state *s = calloc(1, sizeof *s);
    if (!s) return PL_ENOMEM;
    *s = (fit_state){.base = base, .rows = rows, .n = n, .msg = msg, .msglen = msglen};
    double theta[SIM_CAL_NPARAMS];
    pl_chip b = *base;
    for (int j = 0; j < SIM_CAL_NPARAMS; j++) {
        if (!fitmask[j]) continue;
        const sim_cal_param *p = &sim_cal_params[j];
        /* a figure the base sets to 0 (v6e's and v7x's step overhead) may still rise to 10^4 times its floor
         * (10 us for a time); a figure the base has keeps its hundredfold */
        /* the hundredfold floor is for fixed costs: a throughput stays within its factors of the base */
        double v = *field(&b, j), lo = fmax(v * p->lo, p->abs_lo),
               hi = v > 0 ? (p->hi >= 100 ? fmax(v * p->hi, 100 * p->abs_lo) : fmax(v * p->hi, lo)) : 1e4 * p->abs_lo;
        s->lo[s->np] = log(lo), s->hi[s->np] = log(hi);
        s->optional[j] = fitmask[j] == 2;
        /* from the base's value, or from the middle of the range where the base has none */
        theta[s->np] = v > 0 ? log(fmin(fmax(v, lo), hi)) : 0.5 * (log(lo) + log(hi));
        s->idx[s->np++] = j;
    }
    int rc = PL_OK, asked = 0; /* figures named in --fit; those fitted by default drop out when undetermined */
    for (int j = 0; j < SIM_CAL_NPARAMS; j++) asked += fitmask[j] == 1;
    if (s->np == 0) rc = PL_EINVAL, snprintf(msg, msglen, "nothing to fit: --fit names no figure");
    else if (n < (asked ? asked : 1))
        rc = PL_EINVAL, snprintf(msg, msglen, "%d measurement%s cannot determine %d figures: give at least as many "
                                 "rows as figures to fit (and more is better)", n, n == 1 ? "" : "s", asked);
    if (rc == PL_OK) {
        res->before = malloc((size_t)n * sizeof *res->before);
        res->after = malloc((size_t)n * sizeof *res->after);
        rc = res->before && res->after ? fit(s, theta, res) : PL_ENOMEM;
    }
    if (rc == PL_OK) {
        chip_at(s, theta, &res->chip);
        for (int k = 0; k < s->np; k++) /* within a thousandth of a bound */
            res->at_bound[s->idx[k]] = theta[k] <= s->lo[k] + 1e-3 ? -1 : theta[k] >= s->hi[k] - 1e-3 ? 1 : 0;
        res->rms_before = rms(rows, res->before, n);
        res->rms_after = rms(rows, res->after, n);
    } else {
        sim_cal_result_free(res);
    }
    free(s);
    return rc;
}

void sim_cal_result_free(sim_cal_result *res)
{
    free(res->before);
    free(res->after);
    res->before = res->after = NULL;
}
