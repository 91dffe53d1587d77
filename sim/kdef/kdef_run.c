/* sim/kdef/kdef_run.c: pl_kernel_run, one configuration of a kernel definition
 * built, run and checked against the definition's reference (V5). */
#include <stdlib.h>
#include <string.h>

#include "kdef_internal.h"

/* The reference's outputs into want (allocated here; free them with free_want), before the call runs:
 * a reference that crashes or fails then ends the run before the call writes any file (a --trace, say),
 * so a failed run leaves the user's files as they were. */
static int reference_outputs(const pl_kernel_def *d, const int64_t *v, pl_kernel_build *b, pl_array *want,
                             pl_report *rep)
{
    memset(want, 0, sizeof *want * PL_MAX_OPERANDS);
    for (int o = 0; o < b->n_outs; o++) {
        want[o] = b->outs[o];
        want[o].data = calloc(1, pl_array_bytes(&b->outs[o]) + 1);
        if (!want[o].data) return sim_kdef_fail(rep, PL_ENOMEM, "out of host memory for the reference outputs");
    }
    int r = sim_kdef_call_reference(d, v, b, want);
    if (r == PL_OK) return PL_OK;
    char m[256];
    snprintf(m, sizeof m, "kernel '%s': its reference failed: %s", d->name ? d->name : "?", pl_strerror(r));
    return sim_kdef_fail(rep, r < 0 ? r : PL_EINVAL, m);
}

static void free_want(pl_array *want, int n)
{
    for (int o = 0; o < n; o++) free(want[o].data);
}

/* Compare every output with the reference's; PL_EVERIFY when one FAILs. */
static int verify(const pl_kernel_def *d, pl_kernel_build *b, const pl_array *want, pl_check *check, FILE *f,
                  pl_report *rep)
{
    for (int o = 0; o < b->n_outs; o++) {
        pl_check k;
        double rtol, atol;
        if (sim_kdef_check_output(d, &b->outs[o], &want[o], &k, &rtol, &atol) == PL_ESHAPE)
            return sim_kdef_fail(rep, PL_ESHAPE, "the reference output does not match the output's shape");
        if (k.verdict != PL_PASS) {
            int64_t elem[PL_MAX_RANK] = {0};
            sim_kdef_unravel(&b->outs[o], k.worst_row, k.worst_col, elem);
            pl_check_blame(&b->call, o, &b->outs[o], elem, k.blame, sizeof k.blame);
        }
        sim_kdef_verdict_line(f, b, o, &k, rtol, atol, "");
        if (check) check[o] = k;
        if (k.verdict == PL_FAIL) rep->status = PL_EVERIFY;
    }
    if (rep->status == PL_EVERIFY && !rep->error[0])
        snprintf(rep->error, sizeof rep->error, "kernel '%s': an output does not match the reference (V5)",
                 d->name ? d->name : "?");
    return rep->status;
}

static int run_built(const pl_kernel_def *d, const int64_t *v, pl_kernel_build *b, const pl_options *opt,
                     pl_report *rep, pl_check *check, FILE *f)
{
    int cost_only = opt && opt->cost_only, want = d->reference && !cost_only;
    char msg[PL_MSG_MAX];
    if (sim_kdef_bad_arrays(d, b, msg, sizeof msg)) return sim_kdef_fail(rep, PL_EINVAL, msg);
    int rc = pl_host_memory_check(sim_kdef_host_bytes(b, cost_only, want), msg, sizeof msg);
    if (rc != PL_OK) return sim_kdef_fail(rep, rc, msg);
    unsigned char owned[PL_KDEF_MAX_ARGS + PL_MAX_OPERANDS] = {0};
    rc = sim_kdef_allocate(b, cost_only, owned);
    if (rc != PL_OK) {
        sim_kdef_release(b, owned);
        return sim_kdef_fail(rep, rc, "out of host memory for the kernel's arrays");
    }
    rc = sim_kdef_inputs(d, v, b, opt ? opt->seed : 0, owned);
    if (rc != PL_OK) {
        snprintf(msg, sizeof msg, "kernel '%s': its inputs function failed: %s", d->name ? d->name : "?",
                 pl_strerror(rc));
        sim_kdef_release(b, owned);
        return sim_kdef_fail(rep, rc < 0 ? rc : PL_EINVAL, msg);
    }
    pl_array expect[PL_MAX_OPERANDS];
    memset(expect, 0, sizeof expect);
    if (want) rc = reference_outputs(d, v, b, expect, rep);
    if (rc == PL_OK)
        rc = opt && opt->check_dma_modes && !cost_only ? pl_check_dma_modes(&b->call, b->args, b->outs, opt, rep)
                                                       : pl_pallas_call(&b->call, b->args, b->outs, opt, rep);
    if (rc == PL_OK && !cost_only) {
        if (want) rc = verify(d, b, expect, check, f, rep);
        else if (f)
            fprintf(f, "  verify: kernel '%s' defines no reference; outputs not checked\n", d->name ? d->name : "?");
    }
    free_want(expect, b->n_outs);
    sim_kdef_release(b, owned);
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
    if (d && d->mesh) { /* every device's arrays and pl_mesh_call (kdef_mesh.c) */
        free(b);
        int rc = pl_kernel_run_mesh(d, v, NULL, opt, rep, check, f, NULL, NULL);
        free(own);
        return rc;
    }
    char msg[PL_MSG_MAX];
    int rc = sim_kdef_prepare(d, v, opt, b, msg, sizeof msg);
    if (rc != PL_OK) sim_kdef_fail(rep, rc, msg);
    else rc = run_built(d, v, b, opt, rep, check, f);
    sim_kdef_ideal(d, v, rep);
    free(b);
    free(own);
    return rc;
}
