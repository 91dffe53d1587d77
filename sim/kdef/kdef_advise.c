/* sim/kdef/kdef_advise.c: advice that has been simulated. A report's sentence
 * names what bounds the run; what to change is only worth saying when the
 * change is faster. So each tiling parameter of a definition (an integer
 * parameter with sweep candidates) is tried at twice and at half its value,
 * cost-only, and the report says the best that gains, with both times
 * ("bk=2048: 612.00 us instead of 677.00 us"), or that none does (issue 22:
 * "fewer, larger blocks amortize it" was advised where they gained 0.04%).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kdef.h"

/* A change that saves less than this share of the time is noise, not advice. */
#define MIN_GAIN 0.01

static int tiling_param(const pl_kernel_param *p)
{
    return p->kind == PL_PARAM_INT && (p->n_candidates > 0 || p->divides);
}

/* The time of d at v changed in parameter i to value x, cost-only; <0 when
 * the definition or the call refuses it. */
static double try_value(const pl_kernel_def *d, const int64_t *v, int i, int64_t x, const pl_options *base,
                        pl_report *scratch)
{
    int64_t w[PL_KDEF_MAX_PARAMS];
    memcpy(w, v, sizeof w[0] * (size_t)d->n_params);
    w[i] = x;
    /* the run's chip and VMEM limit (--vmem-limit): advice the user's own limit refuses is no advice */
    pl_options opt = {.chip = base ? base->chip : NULL, .chip_spec = base ? base->chip_spec : NULL,
                      .cost_only = 1, .checks_off = 1, .host_threads = base ? base->host_threads : 0,
                      .vmem_limit_bytes = base ? base->vmem_limit_bytes : 0};
    return pl_kernel_run(d, w, &opt, scratch, NULL, NULL) == PL_OK ? scratch->time_s : -1;
}

/* Does parameter i at x leave the work the same? A change of the problem
 * (a ring's devices, a matrix's size: the definition's ideal FLOPs or bytes
 * move) is not tiling advice. Unknown work: assume it does. */
static int same_problem(const pl_kernel_def *d, const int64_t *v, int i, int64_t x)
{
    int64_t w[PL_KDEF_MAX_PARAMS];
    memcpy(w, v, sizeof w[0] * (size_t)d->n_params);
    w[i] = x;
    return (!d->flops || d->flops(w) == d->flops(v)) && (!d->bytes || d->bytes(w) == d->bytes(v));
}

/* "bm, bn or bk": the names of the parameters tried. */
static void names_of(const pl_kernel_def *d, const unsigned char *tried, char *buf, size_t n)
{
    int count = 0, total = 0;
    for (int i = 0; i < d->n_params; i++) total += tried[i];
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < d->n_params && at < n; i++)
        if (tried[i])
            at += (size_t)snprintf(buf + at, n - at, "%s%s", count++ == 0 ? "" : count == total ? " or " : ", ",
                                   d->params[i].name);
}

int pl_kernel_advise(const pl_kernel_def *d, const int64_t *v, const pl_options *opt, pl_report *rep)
{
    if (!d || !v || !rep || rep->status != PL_OK || !(rep->time_s > 0)) return 0;
    pl_report *scratch = malloc(sizeof *scratch);
    if (!scratch) return 0;
    int best_i = -1;
    int64_t best_x = 0;
    double best_t = rep->time_s * (1 - MIN_GAIN);
    unsigned char tried[PL_KDEF_MAX_PARAMS] = {0};
    for (int i = 0; i < d->n_params; i++) {
        if (!tiling_param(&d->params[i])) continue;
        const int64_t tries[2] = {v[i] * 2, v[i] / 2};
        for (int k = 0; k < 2; k++) {
            if (tries[k] < 1 || tries[k] == v[i] || !same_problem(d, v, i, tries[k])) continue;
            tried[i] = 1;
            double t = try_value(d, v, i, tries[k], opt, scratch);
            if (t > 0 && t < best_t) best_t = t, best_i = i, best_x = tries[k];
        }
    }
    free(scratch);
    char a[32], b[32], names[128];
    size_t used = strlen(rep->bound_msg), room = sizeof rep->bound_msg - used;
    if (best_i >= 0) {
        snprintf(rep->bound_msg + used, room, "; simulated: %s=%lld: %s instead of %s", d->params[best_i].name,
                 (long long)best_x, pl_format_time(best_t, a, sizeof a), pl_format_time(rep->time_s, b, sizeof b));
        return 1;
    }
    names_of(d, tried, names, sizeof names);
    if (names[0])
        snprintf(rep->bound_msg + used, room, "; simulated: no %s twice or half as large is 1%% faster or more",
                 names);
    return 0;
}
