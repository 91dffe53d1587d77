/* tests/test_run_helpers.h: a built-in kernel run cost-only, for the tests
 * that read its report (test_profile.c, test_bound.c). */
#ifndef TILESIM_TEST_RUN_HELPERS_H
#define TILESIM_TEST_RUN_HELPERS_H

#include <criterion/criterion.h>
#include <stdlib.h>

#include "../examples/kernels/registry.h"
#include "../sim/kdef.h"

/* Kernel `name` at its defaults (then the assignments in sets, NULL-ended),
 * cost-only on chip: its report, calloc'd. */
static inline pl_report *th_run_builtin(const char *name, const char *chip, const char *const *sets)
{
    const pl_kernel_def *d = ex_kernel_find(name);
    cr_assert(d, "no built-in %s", name);
    int64_t v[PL_KDEF_MAX_PARAMS];
    char msg[256];
    pl_kernel_defaults(d, v);
    for (int i = 0; sets && sets[i]; i++) cr_assert_eq(pl_kernel_set(d, v, sets[i], msg, sizeof msg), PL_OK, "%s", msg);
    pl_options opt = {.chip = chip, .cost_only = 1};
    pl_report *r = calloc(1, sizeof *r);
    cr_assert(r);
    int rc = pl_kernel_run(d, v, &opt, r, NULL, NULL);
    cr_assert_eq(rc, PL_OK, "%s on %s: %s", name, chip, r->error);
    return r;
}

#endif
