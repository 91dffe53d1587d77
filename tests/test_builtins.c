/* tests/test_builtins.c: the built-in kernels as definitions (issue 10):
 * every one runs with its defaults and passes its reference (V5), runs in
 * cost-only mode, the new kernels (rmsnorm, layernorm, softmax, add and the
 * matmul variants) pass on ragged shapes (B6), broken variants fail, and
 * every check refuses inconsistent values by name. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../examples/kernels/norm.h"
#include "../examples/kernels/registry.h"
#include "../examples/kernels/softmax.h"
#include "../sim/kdef.h"
#include "helpers.h"

static const pl_kernel_def *def(const char *name)
{
    const pl_kernel_def *d = ex_kernel_find(name);
    cr_assert(d, "no built-in kernel '%s'", name);
    return d;
}

/* v = defaults with the assignments applied ("name=value"). */
static void values(const pl_kernel_def *d, int64_t *v, const char *const *set, int n)
{
    char msg[256];
    pl_kernel_defaults(d, v);
    for (int i = 0; i < n; i++) cr_assert_eq(pl_kernel_set(d, v, set[i], msg, sizeof msg), PL_OK, "%s", msg);
}

/* Run with pl_kernel_run; assert it passes, every output PASS. */
static void run_pass(const char *name, const char *const *set, int n)
{
    const pl_kernel_def *d = def(name);
    int64_t v[PL_KDEF_MAX_PARAMS];
    values(d, v, set, n);
    pl_report rep;
    pl_check chk[PL_MAX_OPERANDS];
    int rc = pl_kernel_run(d, v, NULL, &rep, chk, NULL);
    char buf[512];
    cr_assert_eq(rc, PL_OK, "%s (%s): %s", name, pl_kernel_format(d, v, buf, sizeof buf), rep.error);
    cr_assert_eq(chk[0].verdict, PL_PASS, "%s: output 0 is %s (norm err %g, worst at %lld,%lld)", name,
                 chk[0].verdict == PL_FAIL ? "FAIL" : "MARGINAL", chk[0].norm_err, (long long)chk[0].worst_row,
                 (long long)chk[0].worst_col);
    cr_assert_eq(rep.n_findings, 0, "%s: a built-in kernel has no findings (races, poison written back)", name);
}

Test(builtins, registry_lists_every_kernel)
{
    static const char *const names[] = {"matmul",         "matmul_tb",       "matmul_bias_relu", "quant_matmul",
                                        "block_sparse_matmul", "masked_matmul",
                                        "grouped_matmul", "flash_attention", "paged_attention",  "rmsnorm",
                                        "layernorm",      "softmax",         "add"};
    int n = (int)(sizeof names / sizeof names[0]);
    cr_assert_eq(ex_kernel_count(), n);
    for (int i = 0; i < n; i++) {
        const pl_kernel_def *d = ex_kernel_at(i);
        cr_assert_str_eq(d->name, names[i]);
        cr_assert_eq(ex_kernel_find(names[i]), d);
        cr_assert(d->summary && d->build && d->reference && d->check && d->flops && d->bytes,
                  "%s: every built-in has a summary, check, build, reference, flops and bytes", d->name);
        for (int p = 0; p < d->n_params; p++)
            cr_assert(d->params[p].help, "%s.%s: no help", d->name, d->params[p].name);
    }
    cr_assert_null(ex_kernel_at(n));
    cr_assert_null(ex_kernel_at(-1));
    cr_assert_null(ex_kernel_find("nope"));
    cr_assert_null(ex_kernel_find(NULL));
}

/* ---- every kernel with its defaults (V5) ----------------------------------------- */

#define DEFAULT_TEST(id, name)                                                                                     \
    Test(builtins, defaults_pass_##id) { run_pass(name, NULL, 0); }
DEFAULT_TEST(matmul, "matmul")
DEFAULT_TEST(matmul_tb, "matmul_tb")
DEFAULT_TEST(matmul_bias_relu, "matmul_bias_relu")
DEFAULT_TEST(block_sparse, "block_sparse_matmul")
DEFAULT_TEST(masked, "masked_matmul")
DEFAULT_TEST(grouped, "grouped_matmul")
DEFAULT_TEST(flash, "flash_attention")
DEFAULT_TEST(paged, "paged_attention")
DEFAULT_TEST(rmsnorm, "rmsnorm")
DEFAULT_TEST(layernorm, "layernorm")
DEFAULT_TEST(softmax, "softmax")
DEFAULT_TEST(add, "add")

/* Cost-only: no data, the same call; the definitions' tables still exist. */
Test(builtins, every_kernel_runs_cost_only)
{
    for (int i = 0; i < ex_kernel_count(); i++) {
        const pl_kernel_def *d = ex_kernel_at(i);
        int64_t v[PL_KDEF_MAX_PARAMS];
        pl_kernel_defaults(d, v);
        pl_options opt = {.cost_only = 1};
        pl_report rep;
        int rc = pl_kernel_run(d, v, &opt, &rep, NULL, NULL);
        cr_assert_eq(rc, PL_OK, "%s cost-only: %s", d->name, rep.error);
        cr_assert_gt(rep.time_s, 0, "%s: a cost-only run is timed", d->name);
        cr_assert_gt(rep.hbm_bytes, 0, "%s: and moves bytes", d->name);
        cr_assert_gt(d->flops(v), 0);
        cr_assert_gt(d->bytes(v), 0);
    }
}

/* bf16 where the kernel takes it. */
Test(builtins, bf16_variants_pass)
{
    static const char *const bf16[] = {"dtype=bf16"};
    static const char *const names[] = {"matmul", "matmul_tb", "matmul_bias_relu", "rmsnorm", "layernorm",
                                        "softmax", "add", "flash_attention", "grouped_matmul", "paged_attention"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) run_pass(names[i], bf16, 1);
}

/* ---- ragged shapes (B6) ---------------------------------------------------------- */

Test(builtins, matmul_variants_ragged_pass)
{
    static const char *const s[] = {"M=300", "N=200", "K=333", "bm=128", "bn=128", "bk=128"};
    run_pass("matmul", s, 6);
    run_pass("matmul_tb", s, 6);
    run_pass("matmul_bias_relu", s, 6);
}

Test(builtins, rmsnorm_layernorm_ragged_rows_pass)
{
    static const char *const s[] = {"rows=1000", "d=384", "br=128"};
    run_pass("rmsnorm", s, 3);
    run_pass("layernorm", s, 3);
    static const char *const t[] = {"rows=77", "d=200", "br=16", "dtype=bf16"};
    run_pass("rmsnorm", t, 4);
    run_pass("layernorm", t, 4);
}

Test(builtins, softmax_ragged_wide_rows_pass)
{
    static const char *const s[] = {"rows=100", "cols=1000", "br=16", "bc=256"};
    run_pass("softmax", s, 4);
    static const char *const one[] = {"rows=24", "cols=300", "br=8", "bc=512"}; /* one column block */
    run_pass("softmax", one, 4);
}

/* Phase 0 parks the output on block (i, 0) without writing it: each output
 * block goes to HBM exactly once, x is read twice (P4, P5). */
Test(builtins, softmax_writes_each_block_once)
{
    const pl_kernel_def *d = def("softmax");
    int64_t v[PL_KDEF_MAX_PARAMS];
    static const char *const s[] = {"rows=64", "cols=1024", "br=16", "bc=256"};
    values(d, v, s, 4);
    pl_report rep;
    cr_assert_eq(pl_kernel_run(d, v, NULL, &rep, NULL, NULL), PL_OK, "%s", rep.error);
    cr_assert_eq(rep.n_findings, 0, "no findings");
    cr_assert_eq(rep.op[1].writebacks, 4 * 4, "one write-back per output block");
    cr_assert_eq(rep.op[0].copies, 2 * 4 * 4, "x is read once per phase");
}

Test(builtins, add_ragged_pass)
{
    static const char *const s[] = {"rows=1000", "cols=1000", "br=128", "bc=256"};
    run_pass("add", s, 4);
    static const char *const h[] = {"rows=17", "cols=130", "br=8", "bc=128", "dtype=f16"};
    run_pass("add", h, 5);
}

Test(builtins, wrapped_kernels_other_shapes_pass)
{
    static const char *const fa[] = {"sq=300", "skv=200", "bq=128", "bk=128", "heads=2", "causal=1"};
    run_pass("flash_attention", fa, 6);
    static const char *const bs[] = {"density=0", "K=512"};
    run_pass("block_sparse_matmul", bs, 2);
    static const char *const gm[] = {"M=500", "G=7", "sizes_seed=3"};
    run_pass("grouped_matmul", gm, 3);
    static const char *const pa[] = {"batch=6", "max_len=50", "page=8", "lengths_seed=5"};
    run_pass("paged_attention", pa, 4);
}

/* ---- broken variants fail ---------------------------------------------------------- */

typedef void (*tweak_fn)(pl_kernel_build *b, void *user);

/* Build, allocate, fill, tweak (break the kernel or shape the inputs), run,
 * and compare with the definition's reference: the verdict. */
static pl_verdict manual_run(const pl_kernel_def *d, const int64_t *v, tweak_fn tweak, void *user)
{
    static pl_kernel_build b; /* large: not on the stack */
    char msg[256];
    memset(&b, 0, sizeof b);
    cr_assert_eq(d->build(v, &b, msg, sizeof msg), PL_OK, "%s", msg);
    void *owned[PL_KDEF_MAX_ARGS + PL_MAX_OPERANDS] = {0};
    for (int a = 0; a < b.n_args; a++)
        if (!b.args[a].data) b.args[a].data = owned[a] = calloc(1, pl_array_bytes(&b.args[a]));
    pl_array want = b.outs[0];
    b.outs[0].data = owned[PL_KDEF_MAX_ARGS] = calloc(1, pl_array_bytes(&b.outs[0]));
    want.data = calloc(1, pl_array_bytes(&want));
    cr_assert((d->inputs ? d->inputs : pl_kernel_fill_inputs)(v, &b, 1) == PL_OK);
    tweak(&b, user);
    pl_report rep;
    cr_assert_eq(pl_pallas_call(&b.call, b.args, b.outs, NULL, &rep), PL_OK, "%s", rep.error);
    cr_assert_eq(d->reference(v, &b, &want), PL_OK);
    pl_check chk;
    pl_allclose(&b.outs[0], &want, d->rtol, d->atol, &chk, NULL);
    for (int i = 0; i < PL_KDEF_MAX_ARGS + PL_MAX_OPERANDS; i++) free(owned[i]);
    free(want.data);
    return chk.verdict;
}

/* x's row 3 all zeros: rsqrt(0 + eps) is finite, rsqrt(0) is inf and 0 * inf NaN. */
static void zero_row_eps(pl_kernel_build *b, void *user)
{
    memset((float *)b->args[0].data + 3 * b->args[0].shape[1], 0, sizeof(float) * (size_t)b->args[0].shape[1]);
    norm_params *p = b->call.user;
    p->eps = *(double *)user;
}

Test(builtins, rmsnorm_without_eps_fails)
{
    const pl_kernel_def *d = def("rmsnorm");
    int64_t v[PL_KDEF_MAX_PARAMS];
    static const char *const s[] = {"rows=64", "d=256", "br=16"};
    values(d, v, s, 3);
    double eps = 1e-6, none = 0;
    cr_assert_eq(manual_run(d, v, zero_row_eps, &eps), PL_PASS, "control: the real kernel passes on a zero row");
    cr_assert_eq(manual_run(d, v, zero_row_eps, &none), PL_FAIL, "without eps a zero row is NaN");
}

/* x scaled to [-200, 200): exp overflows unless the row max is subtracted. */
static void large_inputs(pl_kernel_build *b, void *user)
{
    float *x = b->args[0].data;
    for (int64_t i = 0; i < pl_array_size(&b->args[0]); i++) x[i] *= 200.0f;
    softmax_params *p = b->call.user;
    p->no_max = *(int *)user;
}

Test(builtins, softmax_without_max_fails)
{
    const pl_kernel_def *d = def("softmax");
    int64_t v[PL_KDEF_MAX_PARAMS];
    static const char *const s[] = {"rows=32", "cols=1024", "br=8", "bc=256"};
    values(d, v, s, 4);
    int with = 0, without = 1;
    cr_assert_eq(manual_run(d, v, large_inputs, &with), PL_PASS, "control: the online max keeps exp finite");
    cr_assert_eq(manual_run(d, v, large_inputs, &without), PL_FAIL, "without the max exp overflows");
}

/* The bias is read per column block: a kernel whose bias map stuck to block 0
 * fails, unless the bias is the same in every block (the control). */
static void stuck_bias(pl_kernel_build *b, void *user)
{
    pl_array *bias = &b->args[2];
    float *x = bias->data;
    if (*(int *)user)
        for (int64_t i = 0; i < pl_array_size(bias); i++) x[i] = 0.5f;
    b->call.in[2].map = PL_MAP(PL_ZERO, PL_ZERO);
}

Test(builtins, matmul_bias_relu_with_a_stuck_bias_map_fails)
{
    const pl_kernel_def *d = def("matmul_bias_relu");
    int64_t v[PL_KDEF_MAX_PARAMS];
    static const char *const s[] = {"M=128", "N=256", "K=128", "bm=128", "bn=128", "bk=128"};
    values(d, v, s, 6);
    int constant = 1, random = 0;
    cr_assert_eq(manual_run(d, v, stuck_bias, &constant), PL_PASS, "control: a constant bias hides the bug");
    cr_assert_eq(manual_run(d, v, stuck_bias, &random), PL_FAIL, "column block 1 got block 0's bias");
}

/* ---- checks refuse bad values, by name -------------------------------------------- */

static void refused(const char *name, const char *const *set, int n, const char *needle)
{
    const pl_kernel_def *d = def(name);
    int64_t v[PL_KDEF_MAX_PARAMS];
    values(d, v, set, n);
    char msg[512] = "";
    cr_assert_eq(d->check(v, msg, sizeof msg), PL_EINVAL, "%s: check accepted bad values", name);
    cr_assert(strstr(msg, needle), "%s: the message '%s' names '%s'", name, msg, needle);
    static pl_kernel_build b;
    char bm[512] = "";
    cr_assert_eq(d->build(v, &b, bm, sizeof bm), PL_EINVAL, "%s: build refuses what check refuses", name);
    pl_report rep;
    cr_assert_neq(pl_kernel_run(d, v, NULL, &rep, NULL, NULL), PL_OK);
    cr_assert(strstr(rep.error, needle), "%s: the run says why: %s", name, rep.error);
}

Test(builtins, checks_refuse_bad_values)
{
    refused("matmul", (const char *const[]){"bm=0"}, 1, "bm");
    refused("matmul", (const char *const[]){"dtype=i32"}, 1, "dtype");
    refused("matmul_tb", (const char *const[]){"K=0"}, 1, "K");
    refused("matmul_bias_relu", (const char *const[]){"bn=0"}, 1, "bn");
    refused("rmsnorm", (const char *const[]){"br=0"}, 1, "br");
    refused("layernorm", (const char *const[]){"d=0"}, 1, "d");
    refused("layernorm", (const char *const[]){"dtype=i8"}, 1, "dtype");
    refused("softmax", (const char *const[]){"bc=0"}, 1, "bc");
    refused("add", (const char *const[]){"rows=0"}, 1, "rows");
    refused("block_sparse_matmul", (const char *const[]){"bm=100"}, 1, "bm");
    refused("block_sparse_matmul", (const char *const[]){"density=101"}, 1, "density");
    refused("grouped_matmul", (const char *const[]){"G=0"}, 1, "G");
    refused("flash_attention", (const char *const[]){"causal=2"}, 1, "causal");
    refused("flash_attention", (const char *const[]){"bq=0"}, 1, "bq");
    refused("paged_attention", (const char *const[]){"page=0"}, 1, "page");
    /* tables that would take gigabytes of host memory are refused before they are built */
    refused("block_sparse_matmul", (const char *const[]){"M=1048576", "K=1048576", "bm=8", "bk=128"}, 4, "bm or bk");
    refused("grouped_matmul", (const char *const[]){"G=1000000000"}, 1, "G =");
    refused("paged_attention", (const char *const[]){"max_len=1000000000", "page=1"}, 2, "max_len, page");
}

/* Blocks the chip cannot take are the simulator's to refuse (T1), with the rule. */
Test(builtins, illegal_block_is_rejected_by_the_call)
{
    const pl_kernel_def *d = def("add");
    int64_t v[PL_KDEF_MAX_PARAMS];
    values(d, v, (const char *const[]){"bc=100"}, 1);
    pl_report rep;
    cr_assert_lt(pl_kernel_run(d, v, NULL, &rep, NULL, NULL), 0, "%s", rep.error);
    cr_assert(strstr(rep.error, "T1"), "%s", rep.error);
}

/* A sweep over the block rows: every candidate runs, ranked by the caller. */
Test(builtins, rmsnorm_sweep_over_br)
{
    const pl_kernel_def *d = def("rmsnorm");
    const pl_kernel_param *p = &d->params[pl_kernel_param_index(d, "br")];
    int n = p->n_candidates;
    int64_t *vals = malloc(sizeof(int64_t) * (size_t)(n * d->n_params));
    pl_report *reps = calloc((size_t)n, sizeof *reps);
    for (int i = 0; i < n; i++) {
        pl_kernel_defaults(d, vals + i * d->n_params);
        vals[i * d->n_params + pl_kernel_param_index(d, "br")] = p->candidates[i];
    }
    cr_assert_eq(pl_kernel_sweep(d, n, vals, NULL, NULL, reps), PL_OK);
    for (int i = 0; i < n; i++)
        cr_assert_eq(reps[i].status, PL_OK, "br=%lld: %s", (long long)p->candidates[i], reps[i].error);
    free(vals), free(reps);
}

/* Tables made by build survive sweeps on many threads (they are interned). */
Test(builtins, table_kernels_sweep)
{
    static const char *const names[] = {"block_sparse_matmul", "grouped_matmul", "paged_attention", "flash_attention"};
    for (size_t k = 0; k < 4; k++) {
        const pl_kernel_def *d = def(names[k]);
        int n = 6;
        int64_t vals[6 * PL_KDEF_MAX_PARAMS];
        pl_report reps[6];
        for (int i = 0; i < n; i++) pl_kernel_defaults(d, vals + i * d->n_params);
        int bi = pl_kernel_param_index(d, k == 2 ? "page" : k == 3 ? "bq" : "bn");
        for (int i = 0; i < n; i++) vals[i * d->n_params + bi] = k == 2 ? 8 << (i % 3) : 128 << (i % 2);
        cr_assert_eq(pl_kernel_sweep(d, n, vals, NULL, NULL, reps), PL_OK);
        for (int i = 0; i < n; i++) cr_assert_eq(reps[i].status, PL_OK, "%s #%d: %s", d->name, i, reps[i].error);
    }
}

/* Every definition's own sweep (the product of its candidates, as `tilesim
 * sweep KERNEL` runs it): each configuration runs or is refused with a
 * reason; none crashes, and the defaults' configuration is legal. */
Test(builtins, every_candidate_product_runs_or_says_why, .timeout = 300)
{
    for (int k = 0; k < ex_kernel_count(); k++) {
        const pl_kernel_def *d = ex_kernel_at(k);
        int n = 1;
        for (int p = 0; p < d->n_params; p++) n *= d->params[p].candidates ? d->params[p].n_candidates : 1;
        int64_t *vals = malloc(sizeof(int64_t) * (size_t)(n * d->n_params));
        pl_report *reps = calloc((size_t)n, sizeof *reps);
        cr_assert(vals && reps);
        for (int i = 0; i < n; i++) {
            int64_t *v = vals + (size_t)i * (size_t)d->n_params;
            pl_kernel_defaults(d, v);
            for (int p = 0, rest = i; p < d->n_params; p++) {
                const pl_kernel_param *q = &d->params[p];
                if (!q->candidates) continue;
                v[p] = q->candidates[rest % q->n_candidates];
                rest /= q->n_candidates;
            }
        }
        cr_assert_eq(pl_kernel_sweep(d, n, vals, NULL, NULL, reps), PL_OK, "%s", d->name);
        int legal = 0;
        for (int i = 0; i < n; i++) {
            if (reps[i].status == PL_OK) legal++;
            else cr_assert(reps[i].error[0], "%s #%d: refused without a reason", d->name, i);
        }
        cr_assert_gt(legal, 0, "%s: some candidate configuration is legal", d->name);
        free(vals), free(reps);
    }
}

/* The new kernels pass their reference at every candidate block (real runs,
 * ragged small shapes: blocks larger than the array included, B6). */
Test(builtins, new_kernels_pass_at_every_candidate_block, .timeout = 300)
{
    static const struct { const char *name, *shape[2]; } cases[] = {
        {"rmsnorm", {"rows=100", "d=256"}},  {"layernorm", {"rows=100", "d=256"}},
        {"softmax", {"rows=40", "cols=700"}}, {"add", {"rows=40", "cols=700"}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const pl_kernel_def *d = def(cases[c].name);
        int br = pl_kernel_param_index(d, "br"), bc = pl_kernel_param_index(d, "bc");
        const pl_kernel_param *pr = &d->params[br], *pc = bc >= 0 ? &d->params[bc] : NULL;
        for (int i = 0; i < pr->n_candidates; i++)
            for (int j = 0; j < (pc ? pc->n_candidates : 1); j++) {
                int64_t v[PL_KDEF_MAX_PARAMS];
                values(d, v, cases[c].shape, 2);
                v[br] = pr->candidates[i];
                if (pc) v[bc] = pc->candidates[j];
                pl_report rep;
                pl_check chk[PL_MAX_OPERANDS];
                char buf[256];
                int rc = pl_kernel_run(d, v, NULL, &rep, chk, NULL);
                cr_assert_eq(rc, PL_OK, "%s: %s", pl_kernel_format(d, v, buf, sizeof buf), rep.error);
                cr_assert_eq(chk[0].verdict, PL_PASS, "%s", pl_kernel_format(d, v, buf, sizeof buf));
            }
    }
}
