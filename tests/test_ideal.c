/* tests/test_ideal.c: a kernel definition's .flops and .bytes give the
 * efficiency against the ideal in run, sweep, profile and JSON (issue 22:
 * the callbacks were never used). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "test_run_helpers.h"

/* What printer(r, f) writes, malloc'd. */
static char *printed(void (*printer)(const pl_report *, FILE *), const pl_report *r)
{
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    printer(r, f);
    fclose(f);
    return text;
}

/* 2 x 4096^3 FLOPs at the v6e's bf16 peak, against the simulated time. */
Test(ideal, run_reports_efficiency_against_the_definitions_flops)
{
    static const char *const sets[] = {"M=4096", "N=4096", "K=4096", "bm=512", "bn=512", "bk=1024", "dtype=bf16",
                                       NULL};
    pl_report *r = th_run_builtin("matmul", "v6e", sets);
    double flops = 2.0 * 4096 * 4096 * 4096;
    cr_assert_float_eq(r->ideal_flops, flops, 1, "%g", r->ideal_flops);
    cr_assert_float_eq(r->ideal_bytes, 3.0 * 4096 * 4096 * 2, 1, "x, y and o once, bf16: %g", r->ideal_bytes);
    cr_assert_float_eq(r->ideal_s, flops / pl_chip_find("v6e")->bf16_flops, 1e-12, "%g", r->ideal_s);
    cr_assert_float_eq(r->efficiency, r->ideal_s / r->time_s, 1e-12);
    char *text = printed(pl_report_print, r), *json = printed(pl_report_json, r), *prof = printed(pl_profile_print, r);
    cr_assert_not_null(strstr(text, "  ideal: 1.374e+11 FLOPs and 96.0 MiB (the kernel's .flops, .bytes) take "
                                    "149.72 us on v6e; efficiency 34.9%"), "%s", text);
    cr_assert_not_null(strstr(json, "\"efficiency\":0.34"), "%s", json);
    cr_assert_not_null(strstr(prof, "efficiency 34.9%"), "%s", prof);
    free(text), free(json), free(prof), free(r);
}

/* A bandwidth kernel's ideal is its bytes at the HBM bandwidth; the sweep's
 * table has a %ideal column and its JSON an ideal_pct. */
Test(ideal, sweep_has_the_efficiency_column)
{
    const pl_kernel_def *d = ex_kernel_find("rmsnorm");
    int64_t v[2 * PL_KDEF_MAX_PARAMS];
    pl_kernel_defaults(d, v);
    pl_kernel_defaults(d, v + d->n_params);
    v[d->n_params + pl_kernel_param_index(d, "br")] = 64;
    pl_report *reps = calloc(2, sizeof *reps);
    pl_options opt = {.cost_only = 1};
    cr_assert_eq(pl_kernel_sweep(d, 2, v, &opt, NULL, reps), PL_OK);
    for (int i = 0; i < 2; i++) {
        cr_assert_gt(reps[i].ideal_bytes, 0);
        cr_assert_float_eq(reps[i].efficiency, reps[i].ideal_bytes / reps[i].chip->hbm_bw / reps[i].time_s, 1e-9);
    }
    char *text = NULL, *json = NULL;
    size_t n1 = 0, n2 = 0;
    FILE *f = open_memstream(&text, &n1), *g = open_memstream(&json, &n2);
    cr_assert_eq(pl_sweep_print_table(f, 2, reps, NULL, 0), PL_OK);
    cr_assert_eq(pl_sweep_print_json(g, 2, reps, NULL), PL_OK);
    fclose(f), fclose(g);
    char want[32];
    snprintf(want, sizeof want, " %6.1f  HBM", 100 * reps[0].efficiency);
    cr_assert_not_null(strstr(text, "%MXU %ideal  bound"), "%s", text);
    cr_assert_not_null(strstr(text, want), "%s in\n%s", want, text);
    cr_assert_not_null(strstr(json, "\"ideal_pct\":"), "%s", json);
    free(text), free(json), free(reps);
}
