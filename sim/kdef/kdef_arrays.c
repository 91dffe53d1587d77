/* sim/kdef/kdef_arrays.c: what the run drivers of kernel definitions share
 * (kdef_run.c for one device, kdef_mesh.c for a mesh): a failure into the
 * report, the host bytes a run needs, the arrays allocated and freed, and
 * an output's verdict line (kdef_internal.h). */
#include <stdlib.h>
#include <string.h>

#include "kdef_internal.h"
#include "../../kernel/guard.h"

int sim_kdef_fail(pl_report *rep, int code, const char *msg)
{
    rep->status = code;
    snprintf(rep->error, sizeof rep->error, "%s", msg);
    return code;
}

/* An array build described that cannot be sized (a rank out of range, a
 * dimension below 1, an unknown dtype): named in msg, before the host
 * bytes are counted from it (a negative size read as 16 million TiB). */
int sim_kdef_bad_arrays(const pl_kernel_def *d, const pl_kernel_build *b, char *msg, size_t n)
{
    for (int k = 0; k < b->n_args + b->n_outs; k++) {
        const pl_array *a = k < b->n_args ? &b->args[k] : &b->outs[k - b->n_args];
        const char *what = k < b->n_args ? "argument" : "output";
        int i = k < b->n_args ? k : k - b->n_args;
        if (a->rank < 0 || a->rank > PL_MAX_RANK || (unsigned)a->dtype >= PL_DTYPE_COUNT)
            return snprintf(msg, n, "kernel '%s': build's %s %d has rank %d and dtype %d; a rank is 0 to %d, a dtype "
                            "a pl_dtype", d->name ? d->name : "?", what, i, a->rank, (int)a->dtype, PL_MAX_RANK), 1;
        for (int dim = 0; dim < a->rank; dim++)
            if (a->shape[dim] < 1)
                return snprintf(msg, n, "kernel '%s': build's %s %d has dimension %d of size %lld; sizes must be >= 1",
                                d->name ? d->name : "?", what, i, dim, (long long)a->shape[dim]), 1;
    }
    return 0;
}

/* Bytes the run allocates on the host: arguments, outputs and, when a
 * reference runs, one more copy of the outputs. */
double sim_kdef_host_bytes(const pl_kernel_build *b, int cost_only, int with_want)
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
int sim_kdef_allocate(pl_kernel_build *b, int cost_only, unsigned char *owned)
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

void sim_kdef_release(pl_kernel_build *b, const unsigned char *owned)
{
    for (int a = 0; a < b->n_args; a++)
        if (owned[a]) free(b->args[a].data);
    for (int o = 0; o < b->n_outs; o++)
        if (owned[PL_KDEF_MAX_ARGS + o]) free(b->outs[o].data);
}

/* The flat index of element (row, col) as pl_allclose counts it, unravelled. */
void sim_kdef_unravel(const pl_array *a, int64_t row, int64_t col, int64_t *elem)
{
    int64_t last = a->rank ? a->shape[a->rank - 1] : 1, flat = row * last + col;
    for (int d = a->rank - 1; d >= 0; d--) {
        elem[d] = a->shape[d] ? flat % a->shape[d] : 0;
        flat = a->shape[d] ? flat / a->shape[d] : 0;
    }
}

void sim_kdef_verdict_line(FILE *f, const pl_kernel_build *b, int o, const pl_check *k, double rtol, double atol,
                           const char *where)
{
    if (!f) return;
    const pl_array *a = &b->outs[o];
    char shown[64]; /* a plugin's name for it: no control character reaches the terminal */
    const char *name = b->call.out[o].name ? kern_copy_name(shown, sizeof shown, b->call.out[o].name) : NULL;
    char shape[96] = "";
    for (int d = 0, at = 0; d < a->rank && at < (int)sizeof shape; d++)
        at += snprintf(shape + at, sizeof shape - (size_t)at, "%s%lld", d ? "x" : "", (long long)a->shape[d]);
    if (rtol < 0) /* a dot (pl_want_dot): the normalised error and its thresholds */
        fprintf(f, "  verify output %d '%s' (%s %s)%s vs op(a) @ op(b): max abs err %.3g, normalised error %.3g "
                "(pass below %.3g, fail above %.3g: the rounding the contraction explains)", o, name ? name : "out",
                pl_dtype_name(a->dtype), shape, where, k->max_abs_err, k->norm_err, k->pass_below, k->fail_above);
    else
        fprintf(f, "  verify output %d '%s' (%s %s)%s vs reference: max abs err %.3g, worst %.3g of the tolerance", o,
                name ? name : "out", pl_dtype_name(a->dtype), shape, where, k->max_abs_err, k->norm_err);
    if (rtol > 0 || atol > 0) fprintf(f, " (rtol %.3g, atol %.3g)", rtol, atol);
    if (k->n_nan) fprintf(f, ", %lld NaN/inf", (long long)k->n_nan);
    fprintf(f, "  %s\n", pl_verdict_name(k->verdict));
    if (k->blame[0]) fprintf(f, "    the worst element is in %s\n", k->blame);
    sim_kdef_rounding_hint(f, o, a->dtype, k, rtol);
}

void sim_kdef_rounding_hint(FILE *f, int o, pl_dtype t, const pl_check *k, double rtol)
{
    /* a few times the tolerance with no NaN is what rounding looks like after a long contraction with an
     * epilogue (bias, activation) that pl_want_dot does not fit: say how to tell the reference so */
    if (f && k->verdict == PL_FAIL && rtol >= 0 && !k->n_nan && k->norm_err < 10 && pl_dtype_is_float(t))
        fprintf(f, "    within 10x of the tolerance and no NaN: if that is rounding (a long contraction, then an "
                "epilogue), the reference can set this output's tolerance: pl_want_tolerance(&want[%d], rtol, "
                "atol), or pl_want_dot for a plain dot; a wrong kernel errs by far more\n", o);
}
