/* sim/kdef_run.c: pl_kernel_run, one configuration of a kernel definition
 * built, run and checked against the definition's reference (V5). */
#include <stdlib.h>
#include <string.h>

#include "kdef_internal.h"

static int fail(pl_report *rep, int code, const char *msg)
{
    rep->status = code;
    snprintf(rep->error, sizeof rep->error, "%s", msg);
    return code;
}

/* Bytes the run allocates on the host: arguments, outputs and, when a
 * reference runs, one more copy of the outputs. */
static double host_bytes(const pl_kernel_build *b, int cost_only, int with_want)
{
    double sum = 0;
    for (int a = 0; a < b->n_args; a++)
        if (!b->args[a].data && (!cost_only || a < b->call.num_scalar_prefetch)) sum += (double)pl_array_bytes(&b->args[a]);
    if (!cost_only)
        for (int o = 0; o < b->n_outs; o++) sum += (double)pl_array_bytes(&b->outs[o]) * (with_want ? 2 : 1);
    return sum;
}

/* Allocate the arrays build left without data; which ones get freed is
 * recorded in owned (args first, then outputs). In cost-only mode only the
 * scalar-prefetch tables, which index maps read. */
static int allocate(pl_kernel_build *b, int cost_only, unsigned char *owned)
{
    for (int a = 0; a < b->n_args; a++) {
        if (b->args[a].data || (cost_only && a >= b->call.num_scalar_prefetch)) continue;
        b->args[a].data = calloc(1, pl_array_bytes(&b->args[a]) + 1);
        if (!b->args[a].data) return PL_ENOMEM;
        owned[a] = 1;
    }
    for (int o = 0; o < b->n_outs && !cost_only; o++) {
        if (b->outs[o].data) continue;
        b->outs[o].data = calloc(1, pl_array_bytes(&b->outs[o]) + 1);
        if (!b->outs[o].data) return PL_ENOMEM;
        owned[PL_KDEF_MAX_ARGS + o] = 1;
    }
    return PL_OK;
}

static void release(pl_kernel_build *b, const unsigned char *owned)
{
    for (int a = 0; a < b->n_args; a++)
        if (owned[a]) free(b->args[a].data);
    for (int o = 0; o < b->n_outs; o++)
        if (owned[PL_KDEF_MAX_ARGS + o]) free(b->outs[o].data);
}

/* The flat index of element (row, col) as pl_allclose counts it, unravelled. */
static void unravel(const pl_array *a, int64_t row, int64_t col, int64_t *elem)
{
    int64_t last = a->rank ? a->shape[a->rank - 1] : 1, flat = row * last + col;
    for (int d = a->rank - 1; d >= 0; d--) {
        elem[d] = a->shape[d] ? flat % a->shape[d] : 0;
        flat = a->shape[d] ? flat / a->shape[d] : 0;
    }
}

static void verdict_line(FILE *f, const pl_kernel_build *b, int o, const pl_check *k, double rtol, double atol)
{
    if (!f) return;
    const pl_array *a = &b->outs[o];
    const char *name = b->call.out[o].name;
    char shape[96] = "";
    for (int d = 0, at = 0; d < a->rank && at < (int)sizeof shape; d++)
        at += snprintf(shape + at, sizeof shape - (size_t)at, "%s%lld", d ? "x" : "", (long long)a->shape[d]);
    if (rtol < 0) /* a dot (pl_want_dot): the normalised error and its thresholds */
        fprintf(f, "  verify output %d '%s' (%s %s) vs op(a) @ op(b): max abs err %.3g, normalised error %.3g "
                "(pass below %.3g, fail above %.3g: the rounding the contraction explains)", o, name ? name : "out",
                pl_dtype_name(a->dtype), shape, k->max_abs_err, k->norm_err, k->pass_below, k->fail_above);
    else
        fprintf(f, "  verify output %d '%s' (%s %s) vs reference: max abs err %.3g, worst %.3g of the tolerance", o,
                name ? name : "out", pl_dtype_name(a->dtype), shape, k->max_abs_err, k->norm_err);
    if (rtol > 0 || atol > 0) fprintf(f, " (rtol %.3g, atol %.3g)", rtol, atol);
    if (k->n_nan) fprintf(f, ", %lld NaN/inf", (long long)k->n_nan);
    fprintf(f, "  %s\n", pl_verdict_name(k->verdict));
    if (k->blame[0]) fprintf(f, "    the worst element is in %s\n", k->blame);
}

/* Compare every output with the reference; PL_EVERIFY when one FAILs. */
static int verify(const pl_kernel_def *d, const int64_t *v, pl_kernel_build *b, pl_check *check, FILE *f,
                  pl_report *rep)
{
    pl_array want[PL_MAX_OPERANDS];
    memset(want, 0, sizeof want);
    int rc = PL_OK;
    for (int o = 0; o < b->n_outs && rc == PL_OK; o++) {
        want[o] = b->outs[o];
        want[o].data = calloc(1, pl_array_bytes(&b->outs[o]) + 1);
        if (!want[o].data) rc = fail(rep, PL_ENOMEM, "out of host memory for the reference outputs");
    }
    if (rc == PL_OK) {
        int r = sim_kdef_call_reference(d, v, b, want);
        if (r != PL_OK) {
            char m[256];
            snprintf(m, sizeof m, "kernel '%s': its reference failed: %s", d->name ? d->name : "?", pl_strerror(r));
            rc = fail(rep, r < 0 ? r : PL_EINVAL, m);
        }
    }
    for (int o = 0; o < b->n_outs && rc == PL_OK; o++) {
        pl_check k;
        double rtol, atol;
        int r = sim_kdef_check_output(d, &b->outs[o], &want[o], &k, &rtol, &atol);
        if (r == PL_ESHAPE) {
            rc = fail(rep, PL_ESHAPE, "the reference output does not match the output's shape");
            break;
        }
        if (k.verdict != PL_PASS) {
            int64_t elem[PL_MAX_RANK] = {0};
            unravel(&b->outs[o], k.worst_row, k.worst_col, elem);
            pl_check_blame(&b->call, o, &b->outs[o], elem, k.blame, sizeof k.blame);
        }
        verdict_line(f, b, o, &k, rtol, atol);
        if (check) check[o] = k;
        if (k.verdict == PL_FAIL) rep->status = PL_EVERIFY;
    }
    for (int o = 0; o < b->n_outs; o++) free(want[o].data);
    if (rc == PL_OK && rep->status == PL_EVERIFY && !rep->error[0])
        snprintf(rep->error, sizeof rep->error, "kernel '%s': an output does not match the reference (V5)",
                 d->name ? d->name : "?");
    return rc != PL_OK ? rc : rep->status;
}

static int run_built(const pl_kernel_def *d, const int64_t *v, pl_kernel_build *b, const pl_options *opt,
                     pl_report *rep, pl_check *check, FILE *f)
{
    int cost_only = opt && opt->cost_only, want = d->reference && !cost_only;
    char msg[PL_MSG_MAX];
    int rc = pl_host_memory_check(host_bytes(b, cost_only, want), msg, sizeof msg);
    if (rc != PL_OK) return fail(rep, rc, msg);
    unsigned char owned[PL_KDEF_MAX_ARGS + PL_MAX_OPERANDS] = {0};
    rc = allocate(b, cost_only, owned);
    if (rc != PL_OK) {
        release(b, owned);
        return fail(rep, rc, "out of host memory for the kernel's arrays");
    }
    rc = sim_kdef_inputs(d, v, b, opt ? opt->seed : 0, owned);
    if (rc != PL_OK) {
        snprintf(msg, sizeof msg, "kernel '%s': its inputs function failed: %s", d->name ? d->name : "?",
                 pl_strerror(rc));
        release(b, owned);
        return fail(rep, rc < 0 ? rc : PL_EINVAL, msg);
    }
    rc = opt && opt->check_dma_modes && !cost_only ? pl_check_dma_modes(&b->call, b->args, b->outs, opt, rep)
                                                   : pl_pallas_call(&b->call, b->args, b->outs, opt, rep);
    if (rc == PL_OK && !cost_only) {
        if (want) rc = verify(d, v, b, check, f, rep);
        else if (f)
            fprintf(f, "  verify: kernel '%s' defines no reference; outputs not checked\n", d->name ? d->name : "?");
    }
    release(b, owned);
    return rc;
}

int pl_kernel_run(const pl_kernel_def *d, const int64_t *v, const pl_options *opt, pl_report *rep, pl_check *check,
                  FILE *f)
{
    pl_report *own = NULL;
    if (!rep) rep = own = calloc(1, sizeof *rep);
    pl_kernel_build *b = calloc(1, sizeof *b);
    if (!rep || !b) {
        free(own);
        free(b);
        return PL_ENOMEM;
    }
    memset(rep, 0, sizeof *rep);
    if (check) memset(check, 0, sizeof *check * PL_MAX_OPERANDS);
    char msg[PL_MSG_MAX];
    int rc = sim_kdef_prepare(d, v, opt, b, msg, sizeof msg);
    if (rc != PL_OK) fail(rep, rc, msg);
    else rc = run_built(d, v, b, opt, rep, check, f);
    sim_kdef_ideal(d, v, rep);
    free(b);
    free(own);
    return rc;
}
