/* sim/kdef/kdef_run.c: pl_kernel_run, one configuration of a kernel definition
 * built, run and checked against the definition's reference (V5). */
#include <stdlib.h>
#include <string.h>

#include "kdef_internal.h"

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
        if (!want[o].data) rc = sim_kdef_fail(rep, PL_ENOMEM, "out of host memory for the reference outputs");
    }
    if (rc == PL_OK) {
        int r = sim_kdef_call_reference(d, v, b, want);
        if (r != PL_OK) {
            char m[256];
            snprintf(m, sizeof m, "kernel '%s': its reference failed: %s", d->name ? d->name : "?", pl_strerror(r));
            rc = sim_kdef_fail(rep, r < 0 ? r : PL_EINVAL, m);
        }
    }
    for (int o = 0; o < b->n_outs && rc == PL_OK; o++) {
        pl_check k;
        double rtol, atol;
        int r = sim_kdef_check_output(d, &b->outs[o], &want[o], &k, &rtol, &atol);
        if (r == PL_ESHAPE) {
            rc = sim_kdef_fail(rep, PL_ESHAPE, "the reference output does not match the output's shape");
            break;
        }
        if (k.verdict != PL_PASS) {
            int64_t elem[PL_MAX_RANK] = {0};
            sim_kdef_unravel(&b->outs[o], k.worst_row, k.worst_col, elem);
            pl_check_blame(&b->call, o, &b->outs[o], elem, k.blame, sizeof k.blame);
        }
        sim_kdef_verdict_line(f, b, o, &k, rtol, atol, "");
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
    rc = opt && opt->check_dma_modes && !cost_only ? pl_check_dma_modes(&b->call, b->args, b->outs, opt, rep)
                                                   : pl_pallas_call(&b->call, b->args, b->outs, opt, rep);
    if (rc == PL_OK && !cost_only) {
        if (want) rc = verify(d, v, b, check, f, rep);
        else if (f)
            fprintf(f, "  verify: kernel '%s' defines no reference; outputs not checked\n", d->name ? d->name : "?");
    }
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
