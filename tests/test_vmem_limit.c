/* tests/test_vmem_limit.c: the scoped VMEM limit a call sets (rule M4,
 * issue 22). A kernel definition declares its vmem_limit_bytes, as a
 * production kernel's compiler_params do: a constant or a function of its
 * values and the chip; pl_options.vmem_limit_bytes (`--vmem-limit` of run,
 * verify, sweep, profile, memory and explain) overrides it; a sweep of a
 * definition searches, by default, every configuration that fits the
 * chip's physical VMEM under the limit it would set, shows that limit and
 * marks the rows above the default scoped limit. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <string.h>

#include "../examples/kernels/registry.h"
#include "helpers.h"
#include "run.h"

#define MiB (1024 * 1024)

/* add at its defaults on chip, with opt's limit; the report in rep */
static int run_add(const pl_kernel_def *d, const char *chip, int64_t opt_limit, pl_report *rep)
{
    int64_t v[PL_KDEF_MAX_PARAMS];
    pl_kernel_defaults(d, v);
    pl_options opt = {.chip = chip, .cost_only = 1, .vmem_limit_bytes = opt_limit};
    return pl_kernel_run(d, v, &opt, rep, NULL, NULL);
}

static int64_t half_the_chip(const int64_t *v, const pl_chip *chip)
{
    (void)v;
    return chip->vmem_bytes / 2;
}

Test(vmem_limit, a_definition_declares_a_constant_limit)
{
    pl_kernel_def d = ex_def_add;
    d.vmem_limit_bytes = 3 * MiB;
    pl_report rep;
    cr_assert_eq(run_add(&d, "v5e", 0, &rep), PL_OK, "%s", rep.error);
    cr_expect_eq(rep.vmem_limit, 3 * MiB, "the call's limit is the definition's, not the default 16 MiB");
}

Test(vmem_limit, a_definition_computes_its_limit_from_the_chip)
{
    pl_kernel_def d = ex_def_add;
    d.vmem_limit_bytes = 3 * MiB; /* the function wins */
    d.vmem_limit = half_the_chip;
    pl_report rep;
    cr_assert_eq(run_add(&d, "v5e", 0, &rep), PL_OK, "%s", rep.error);
    cr_expect_eq(rep.vmem_limit, 64 * MiB);
    cr_assert_eq(run_add(&d, "v7x", 0, &rep), PL_OK, "%s", rep.error);
    cr_expect_eq(rep.vmem_limit, 32 * MiB);
}

Test(vmem_limit, a_declared_limit_below_the_buffers_is_M4)
{
    pl_kernel_def d = ex_def_add;
    d.vmem_limit_bytes = 64 * 1024;
    pl_report rep;
    int rc = run_add(&d, "v5e", 0, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EVMEM, "scoped limit of 65536 bytes", "rule M4");
}

Test(vmem_limit, the_options_limit_overrides_the_definitions)
{
    pl_kernel_def d = ex_def_add;
    d.vmem_limit_bytes = 64 * 1024; /* too small, but overridden */
    pl_report rep;
    cr_assert_eq(run_add(&d, "v5e", 20 * MiB, &rep), PL_OK, "%s", rep.error);
    cr_expect_eq(rep.vmem_limit, 20 * MiB);
    int rc = run_add(&ex_def_add, "v7x", 65 * MiB, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EVMEM, "exceeds the 67108864 bytes of physical VMEM", "v7x", "rule M4");
    rc = run_add(&ex_def_add, "v5e", -1, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "options: vmem_limit_bytes = -1");
}

/* ---- --vmem-limit on every verb ------------------------------------------------------- */

/* add's buffers take 2 MiB at its defaults: 4096 bytes is far too little. */
Test(vmem_limit, every_kernel_verb_takes_vmem_limit)
{
    static const char *const verbs[] = {"run", "verify", "profile", "memory", "explain"};
    for (size_t i = 0; i < sizeof verbs / sizeof *verbs; i++) {
        th_run r = TH_RUN(verbs[i], "add", "--vmem-limit", "4096");
        cr_expect_eq(r.status, 2, "%s: %s%s", verbs[i], r.out, r.err);
        cr_expect(strstr(r.err, "scoped limit of 4096 bytes") && strstr(r.err, "rule M4"), "%s: %s", verbs[i],
                  r.err);
        th_run_free(&r);
        r = TH_RUN(verbs[i], "add", "--vmem-limit", "33554432");
        cr_expect_eq(r.status, 0, "%s: %s%s", verbs[i], r.out, r.err);
        th_run_free(&r);
    }
    th_run r = TH_RUN("run", "add", "--cost-only", "--json", "--vmem-limit", "33554432");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "\"vmem_limit\":33554432"), "%s", r.out);
    th_run_free(&r);
    r = TH_RUN("sweep", "add", "--vmem-limit", "4096", "--json");
    cr_expect_eq(r.status, 1, "nothing legal: %s", r.err);
    cr_expect(strstr(r.out, "\"n_legal\":0"), "%s", r.out);
    th_run_free(&r);
}

Test(vmem_limit, a_limit_over_physical_vmem_is_refused_by_name)
{
    th_run r = TH_RUN("run", "add", "--chip", "v7x", "--vmem-limit", "67108865");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "--vmem-limit 67108865") && strstr(r.err, "physical VMEM") && strstr(r.err, "v7x"),
              "%s", r.err);
    th_run_free(&r);
    r = TH_RUN("sweep", "add", "--vmem-limit", "lots");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "--vmem-limit"), "%s", r.err);
    th_run_free(&r);
}

/* A limit is bytes, as vmem_limit_bytes takes it, or a size as people
 * write it: 32M, 32MiB, 32m and 33554432 are one limit on every verb; what is
 * not a size is refused by name. */
Test(vmem_limit, a_limit_may_be_written_with_a_unit)
{
    static const char *const verbs[] = {"run", "verify", "profile", "memory", "explain", "sweep"};
    static const char *const same[] = {"32M", "32MiB", "32768K", "32MB", "32m", "32mb"}; /* 32m: as people type it */
    for (size_t i = 0; i < sizeof verbs / sizeof *verbs; i++)
        for (size_t k = 0; k < sizeof same / sizeof *same; k++) {
            int run = !strcmp(verbs[i], "run");
            th_run r = run ? TH_RUN("run", "add", "--cost-only", "--json", "--vmem-limit", same[k])
                           : TH_RUN(verbs[i], "add", "--vmem-limit", same[k]);
            cr_expect_eq(r.status, 0, "%s %s: %s", verbs[i], same[k], r.err);
            if (run) cr_expect(strstr(r.out, "\"vmem_limit\":33554432"), "%s: %s", same[k], r.out);
            th_run_free(&r);
        }
    static const char *const bad[] = {"32X", "-32M", "0", "M", "none", "1.5M", "32 M"};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        th_run r = TH_RUN("run", "add", "--cost-only", "--vmem-limit", bad[k]);
        cr_expect_eq(r.status, 2, "'%s': %s", bad[k], r.out);
        int nonpositive = bad[k][0] == '-' || bad[k][0] == '0';
        cr_expect(strstr(r.err, "--vmem-limit") && strstr(r.err, nonpositive ? "is not a limit: it must be more "
                                                                               "than 0 bytes" : "is not a size"),
                  "'%s': %s", bad[k], r.err);
        th_run_free(&r);
    }
    th_run r = TH_RUN("run", "add", "--chip", "v7x", "--vmem-limit", "65G");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "physical VMEM"), "%s", r.err);
    th_run_free(&r);
}

/* ---- the sweep: the limit each configuration needs -------------------------------------- */

/* rmsnorm's f32 rows on v5e: br=512 and br=1024 need 20.3 and 40.6 MiB,
 * over the default 16 MiB, well under the 128 MiB of physical VMEM. */
#define RMS_BIG "rmsnorm", "--set", "rows=4096", "--set", "d=2048", "--set", "dtype=f32", "--vary", "br=256,512,1024"

Test(vmem_limit, a_sweep_lists_configurations_that_need_a_raised_limit)
{
    th_run r = TH_RUN("sweep", RMS_BIG, "--json");
    cr_assert_eq(r.status, 0, "%s", r.err);
    json_t *doc = th_json_parse(r.out, "sweep --json");
    json_t *legal = json_object_get(doc, "legal");
    cr_assert_eq(json_array_size(legal), 3, "every configuration fits v5e's 128 MiB: %s", r.out);
    int raised = 0;
    for (size_t i = 0; i < json_array_size(legal); i++) {
        json_t *row = json_array_get(legal, i);
        double used = th_json_num(row, "vmem_bytes"), lim = th_json_num(row, "vmem_limit");
        cr_expect_geq(lim, used, "the limit holds the buffers");
        if (json_is_true(json_object_get(row, "above_default_limit"))) {
            raised++;
            cr_expect_gt(used, 16.0 * MiB, "above the default scoped limit of v5e");
            cr_expect_eq(lim, MiB * ((int64_t)used / MiB + 1), "the buffers' bytes rounded up to a MiB");
        }
    }
    cr_expect_eq(raised, 2, "br=512 and br=1024: %s", r.out);
    json_decref(doc);
    th_run_free(&r);

    r = TH_RUN("sweep", RMS_BIG);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, " limit ") && strstr(r.out, "MiB*"), "%s", r.out);
    cr_expect(strstr(r.out, "33.0 MiB*"), "br=1024: 32.1 MiB of buffers: %s", r.out);
    cr_expect(strstr(r.out, "* needs vmem_limit_bytes above the default 16.0 MiB of v5e"), "%s", r.out);
    th_run_free(&r);

    r = TH_RUN("sweep", RMS_BIG, "--csv");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "vmem_bytes,vmem_limit,above_default_limit,"), "%s", r.out);
    th_run_free(&r);
}

/* --vmem-limit pins the limit: what needs more is over budget (M4). */
Test(vmem_limit, a_pinned_limit_rejects_what_needs_more)
{
    th_run r = TH_RUN("sweep", RMS_BIG, "--vmem-limit", "16777216", "--json");
    cr_assert_eq(r.status, 0, "%s", r.err);
    json_t *doc = th_json_parse(r.out, "sweep --json");
    json_t *legal = json_object_get(doc, "legal"), *rej = json_object_get(doc, "rejected");
    cr_expect_eq(json_array_size(rej), 2, "%s", r.out);
    for (size_t i = 0; i < json_array_size(rej); i++)
        cr_expect_str_eq(th_json_str(json_array_get(rej, i), "kind"), "over budget");
    for (size_t i = 0; i < json_array_size(legal); i++)
        cr_expect_eq(th_json_num(json_array_get(legal, i), "vmem_limit"), 16.0 * MiB);
    json_decref(doc);
    th_run_free(&r);
}

/* A configuration over the call's own limit but within physical VMEM: the
 * refusal says which --vmem-limit runs it, and that limit does. The
 * hardware ran this quant_matmul tiling on v7x (bench/data), over the 48 MiB
 * the production call sets today. Past physical VMEM it says no limit fits. */
Test(vmem_limit, a_refusal_names_the_limit_that_runs_it)
{
    static const char *const verbs[] = {"run", "verify", "profile", "memory", "explain"};
    for (size_t i = 0; i < sizeof verbs / sizeof *verbs; i++) {
        th_run r = TH_RUN(verbs[i], "quant_matmul", "--chip", "v7x", "--set", "batch=1024", "--set", "out=5120",
                          "--set", "in=5120", "--set", "bb=512", "--set", "bo=5120", "--set", "bi=2560");
        cr_assert_eq(r.status, 2, "%s: %s%s", verbs[i], r.out, r.err);
        const char *hint = strstr(r.err, "--vmem-limit ");
        cr_assert(hint, "%s: %s", verbs[i], r.err);
        char limit[32];
        cr_assert_eq(sscanf(hint, "--vmem-limit %31s", limit), 1);
        cr_expect_str_eq(limit, "51M", "%s: 50.2 MiB of buffers: %s", verbs[i], r.err);
        th_run_free(&r);
        if (!strcmp(verbs[i], "verify")) continue; /* it runs the data: minutes at this size */
        r = !strcmp(verbs[i], "run")
                ? TH_RUN("run", "quant_matmul", "--chip", "v7x", "--cost-only", "--set", "batch=1024", "--set",
                         "out=5120", "--set", "in=5120", "--set", "bb=512", "--set", "bo=5120", "--set", "bi=2560",
                         "--vmem-limit", limit)
                : TH_RUN(verbs[i], "quant_matmul", "--chip", "v7x", "--set", "batch=1024", "--set", "out=5120",
                         "--set", "in=5120", "--set", "bb=512", "--set", "bo=5120", "--set", "bi=2560", "--vmem-limit",
                         limit);
        cr_expect_eq(r.status, 0, "%s: %s", verbs[i], r.err);
        th_run_free(&r);
    }
    th_run r = TH_RUN("run", "matmul", "--cost-only", "--set", "M=4096", "--set", "N=4096", "--set", "K=4096", "--set",
                      "bm=4096", "--set", "bn=4096", "--set", "bk=2048");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "no limit fits it") && !strstr(r.err, "--vmem-limit "), "%s", r.err);
    th_run_free(&r);
}
