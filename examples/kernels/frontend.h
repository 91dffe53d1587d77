/* examples/kernels/frontend.h: what the example programs share as thin
 * front ends over the built-in definitions (registry.h): a program maps its
 * command line onto the definition's parameters and runs it here, so that
 * the call, the inputs and the reference come from the definition only.
 *
 *     int64_t v[PL_KDEF_MAX_PARAMS];
 *     ex_def_values(&cl, &ex_def_flash, v, 1, (const char *[]){"sq"}, (int64_t[]){512});
 *     int rc = ex_def_run(&cl, &ex_def_flash, v, NULL, NULL, &rep, chk);
 */
#ifndef TILESIM_EXAMPLES_FRONTEND_H
#define TILESIM_EXAMPLES_FRONTEND_H

#include "../../sim/kdef.h"
#include "options.h"

/* v[parameter `name` of d] = value. PL_OK, or PL_EINVAL after saying on
 * stderr that d has no such parameter (a program out of step with its
 * definition). */
int ex_def_set(const ex_cmdline *cl, const pl_kernel_def *d, int64_t *v, const char *name, int64_t value);
/* v = d's defaults, then parameter names[i] = vals[i] for i < n. PL_OK, or
 * PL_EINVAL as ex_def_set. */
int ex_def_values(const ex_cmdline *cl, const pl_kernel_def *d, int64_t *v, int n, const char *const *names,
                  const int64_t *vals);

/* How a program shows the report of a run: called after a call that ran. */
typedef void (*ex_show_fn)(const pl_report *rep, void *user);

/* Run d at v with the program's options (pl_kernel_run): show the report
 * (show(rep, user), or pl_report_print when show is NULL) and then the
 * verdict line of each output on stdout, in that order, as the programs
 * always did. rep and chk (PL_MAX_OPERANDS
 * entries, or NULL) are filled as pl_kernel_run fills them. A call refused
 * or failing for another reason than a wrong output is said on stderr as
 * "PROG: reason". Returns pl_kernel_run's code (PL_EVERIFY: an output is
 * wrong). */
int ex_def_run(const ex_cmdline *cl, const pl_kernel_def *d, const int64_t *v, ex_show_fn show, void *user,
               pl_report *rep, pl_check *chk);

/* The exit status of a run: 0 pass, 1 a wrong output, a race or a finding
 * of the checks, 2 refused. */
int ex_def_status(int rc, const pl_report *rep);

#endif
