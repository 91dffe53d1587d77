/* examples/kernels/frontend.c: running a built-in definition for an example
 * program (frontend.h). */
#include <stdlib.h>
#include <string.h>

#include "frontend.h"

int ex_def_set(const ex_cmdline *cl, const pl_kernel_def *d, int64_t *v, const char *name, int64_t value)
{
    int i = pl_kernel_param_index(d, name);
    if (i < 0) {
        fprintf(stderr, "%s: the definition '%s' has no parameter '%s'\n", cl->prog, d->name, name);
        return PL_EINVAL;
    }
    v[i] = value;
    return PL_OK;
}

int ex_def_values(const ex_cmdline *cl, const pl_kernel_def *d, int64_t *v, int n, const char *const *names,
                  const int64_t *vals)
{
    pl_kernel_defaults_on(d, cl->opt.chip_spec, v);
    for (int i = 0; i < n; i++)
        if (ex_def_set(cl, d, v, names[i], vals[i]) != PL_OK) return PL_EINVAL;
    return PL_OK;
}

/* pl_kernel_run writes the verdict lines while it runs, before the report
 * can be printed: they are kept in memory and printed after it. */
int ex_def_run(const ex_cmdline *cl, const pl_kernel_def *d, const int64_t *v, ex_show_fn show, void *user,
               pl_report *rep, pl_check *chk)
{
    char *verdicts = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&verdicts, &len);
    int rc = pl_kernel_run(d, v, &cl->opt, rep, chk, mem ? mem : stdout);
    if (mem) fclose(mem);
    if (rc != PL_OK && rc != PL_EVERIFY) {
        fprintf(stderr, "%s: %s\n", cl->prog, rep->error[0] ? rep->error : pl_strerror(rc));
    } else {
        if (show) show(rep, user);
        else pl_report_print(rep, stdout);
        if (verdicts) fputs(verdicts, stdout);
    }
    free(verdicts);
    return rc;
}

int ex_def_status(int rc, const pl_report *rep)
{
    if (rc == PL_EVERIFY || rc == PL_ERACE) return 1;
    if (rc != PL_OK) return 2;
    return rep->n_findings ? 1 : 0;
}
