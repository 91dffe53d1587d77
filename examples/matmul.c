/* examples/matmul.c: the tiled matmul of the Pallas TPU docs, run on tilesim
 * and verified against cblas_sgemm.
 *
 *   matmul                              the demo: 1024^3 in f32, then in bf16
 *   matmul M N K BM BN BK [f32|bf16] [options]
 *
 * Options: --chip NAME, --vmem-limit BYTES, --json, --trace FILE.json,
 * --cost-only (time it, touch no data), and the verification options of
 * pl_options: --uninit nan|zero, --oob raise|poison, --no-checks, --strict,
 * --seed N (shuffle the parallel axes and compare with the in-order run),
 * --heatmap FILE.svg (the error per output block). Every option and the
 * output files are checked before anything runs. --json prints one object
 * per case: the report with a "verification" member (verdict, max abs err,
 * normalised err). A real run that cannot fit in host memory is refused at
 * once with the bytes it needs; --cost-only needs no data.
 *
 * The kernel is in kernels/matmul.h; the call and the inputs are those of
 * the "matmul" definition (kernels/matmul_ext.c), checked against its
 * reference and, as before, by the BLIS-style check against cblas_sgemm.
 *
 * Exit status: 0 when every check passes, 1 when a result is wrong, 2 for a
 * bad command line or a call tilesim rejects.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernel/pallas.h"
#include "../sim/tilesim.h"
#include "kernels/matmul.h"
#include "kernels/frontend.h"
#include "kernels/options.h"
#include "kernels/registry.h"

#define USAGE                                                                                                 \
    "usage: matmul [M N K BM BN BK [f32|bf16]] [--chip NAME | --chip-file F] [--vmem-limit BYTES]\n"                \
    "              [--trace FILE.json] [--cost-only] [--uninit nan|zero] [--oob raise|poison]\n"             \
    "              [--no-checks] [--strict] [--seed N] [--heatmap FILE.svg] [--json]\n"

typedef struct mm_case {
    int64_t m, n, k, bm, bn, bk;
    pl_dtype dt;
    int64_t vmem_limit;
    int json;
    pl_options opt;      /* chip, trace, cost-only and the checks */
    int64_t seed;        /* nonzero: also check order-independence (V4) */
    const char *heatmap; /* write the error heatmap here */
} mm_case;

/* Host memory a real run of mc takes at its peak: a, b and c, the seeded
 * rerun's copy of c, the definition's reference output, and the reference
 * check (pl_check_matmul: a and b widened to f32 twice, the reference and
 * magnitudes in f32, the error per element in double). The simulated VMEM
 * is the library's to check. */
static double host_bytes(const mm_case *mc)
{
    double m = (double)mc->m, n = (double)mc->n, k = (double)mc->k, es = (double)pl_dtype_size(mc->dt);
    return es * (m * k + k * n + m * n * (mc->seed ? 3 : 2)) + 8 * (m * k + k * n) + 16 * m * n;
}

/* The definition's verdict (its reference, its tolerances), then the
 * matmul's own BLIS-style check against cblas_sgemm, which --json reports.
 * Returns 0, 1 (a check fails) or 2 (out of memory). */
static int check_result(const int64_t *v, const pl_kernel_build *b, pl_check *chk, FILE *text)
{
    const pl_kernel_def *d = &ex_def_matmul;
    pl_array want = b->outs[0];
    want.data = calloc(1, pl_array_bytes(&want) + 1);
    int status = want.data ? 0 : 2;
    if (!status) {
        pl_check k;
        if (d->reference(v, b, &want) != PL_OK) status = 2;
        else if (pl_allclose(&b->outs[0], &want, d->rtol, d->atol, &k, text) != PL_OK) status = 1;
    }
    free(want.data);
    if (status == 2) fprintf(stderr, "matmul: out of host memory for the reference\n");
    else if (pl_check_matmul_call(&b->call, &b->args[0], &b->args[1], &b->outs[0], chk, text) != PL_OK) status = 1;
    return status;
}

/* Print the report and the checks, as text or as one JSON object. */
static int print_result(const mm_case *mc, const int64_t *v, const pl_kernel_build *b, const pl_report *rep)
{
    int status = rep->n_findings ? 1 : 0, cost_only = mc->opt.cost_only;
    pl_check chk;
    FILE *text = mc->json ? NULL : stdout;
    if (text) pl_report_print(rep, stdout);
    if (text && mc->seed)
        printf("  order check: same bits with the parallel axes shuffled (seed %lld)\n", (long long)mc->seed);
    if (!cost_only) {
        int s = check_result(v, b, &chk, text);
        if (s == 2) return 2;
        status = s > status ? s : status;
    }
    if (!text) pl_report_json_with(rep, cost_only ? NULL : &chk, stdout);
    if (!cost_only && mc->heatmap) {
        char msg[512];
        int rc = pl_check_heatmap(&b->args[0], &b->args[1], &b->outs[0], mc->bm, mc->bn, mc->heatmap, msg, sizeof msg);
        if (rc != PL_OK && rc != PL_EVERIFY) {
            fprintf(stderr, "matmul: %s\n", msg);
            return 2;
        }
        if (text) printf("  %s\n", msg);
    }
    return status;
}

/* The call and the arrays from the "matmul" definition: its build, then,
 * for a real run, data allocated and filled by its inputs (the program keeps
 * the arrays: the order check, the BLIS-style check and the heatmap read
 * them). Returns 0, or 2 after saying why. */
static int build_case(const mm_case *mc, const ex_cmdline *cl, int64_t *v, pl_kernel_build *b)
{
    static const char *const names[] = {"M", "N", "K", "bm", "bn", "bk", "dtype"};
    int64_t vals[] = {mc->m, mc->n, mc->k, mc->bm, mc->bn, mc->bk, mc->dt};
    const pl_kernel_def *d = &ex_def_matmul;
    char msg[PL_MSG_MAX];
    if (ex_def_values(cl, d, v, 7, names, vals)) return 2;
    if (d->build(v, b, msg, sizeof msg) != PL_OK) {
        fprintf(stderr, "matmul: %s\n", msg);
        return 2;
    }
    b->call.vmem_limit_bytes = mc->vmem_limit;
    if (mc->opt.cost_only) return 0;
    char what[128];
    snprintf(what, sizeof what, "a real run of %lldx%lldx%lld %s", (long long)mc->m, (long long)mc->n,
             (long long)mc->k, pl_dtype_name(mc->dt));
    if (ex_check_host_memory(cl, what, host_bytes(mc))) return 2;
    for (int a = 0; a < b->n_args; a++) b->args[a].data = calloc(1, pl_array_bytes(&b->args[a]) + 1);
    b->outs[0].data = calloc(1, pl_array_bytes(&b->outs[0]) + 1);
    if (!b->args[0].data || !b->args[1].data || !b->outs[0].data) {
        fprintf(stderr, "matmul: out of memory for %lldx%lldx%lld\n", (long long)mc->m, (long long)mc->n,
                (long long)mc->k);
        return 2;
    }
    int rc = d->inputs ? d->inputs(v, b, 0) : pl_kernel_fill_inputs(v, b, 0);
    return rc == PL_OK ? 0 : 2;
}

/* Run one case; returns 0 (pass), 1 (wrong result or a finding), 2 (rejected). */
static int run_case(const mm_case *mc, const ex_cmdline *cl)
{
    pl_kernel_build *b = calloc(1, sizeof *b);
    int64_t v[PL_KDEF_MAX_PARAMS];
    int status = b ? build_case(mc, cl, v, b) : 2;
    if (status == 0) {
        if (!mc->json)
            printf("== matmul %lldx%lldx%lld %s, blocks (bm, bn, bk) = (%lld, %lld, %lld)\n", (long long)mc->m,
                   (long long)mc->n, (long long)mc->k, pl_dtype_name(mc->dt), (long long)mc->bm, (long long)mc->bn,
                   (long long)mc->bk);
        pl_report rep;
        int rc = mc->seed ? pl_check_order(&b->call, b->args, b->outs, &mc->opt, (uint64_t)mc->seed, &rep)
                          : pl_pallas_call(&b->call, b->args, b->outs, &mc->opt, &rep);
        if (rc != PL_OK) {
            fprintf(stderr, "matmul: %s\n", rep.error);
            status = rc == PL_ERACE && mc->seed ? 1 : 2;
        } else {
            status = print_result(mc, v, b, &rep);
        }
    }
    if (b) {
        for (int a = 0; a < b->n_args; a++) free(b->args[a].data);
        free(b->outs[0].data);
    }
    free(b);
    return status;
}

enum { O_VMEM_LIMIT = 256, O_SEED, O_HEATMAP };

static int own_option(ex_cmdline *cl, int code, const char *arg, void *user)
{
    mm_case *mc = user;
    switch (code) {
    case O_VMEM_LIMIT: return ex_parse_size(cl, arg, "--vmem-limit", &mc->vmem_limit);
    case O_SEED: return ex_parse_int(cl, arg, "--seed", 1, INT64_MAX, &mc->seed);
    case O_HEATMAP: mc->heatmap = arg; return ex_check_writable(cl, "--heatmap", arg);
    default: return ex_usage_error(cl, "unexpected option");
    }
}

/* The command line into mc; returns EX_PARSE_*. Everything is checked here,
 * before anything is printed or allocated. */
static int parse(mm_case *mc, ex_cmdline *cl, int argc, char **argv)
{
    static const struct option own[] = {{"vmem-limit", required_argument, NULL, O_VMEM_LIMIT},
                                        {"seed", required_argument, NULL, O_SEED},
                                        {"heatmap", required_argument, NULL, O_HEATMAP},
                                        {0}};
    int rc = ex_parse(cl, argc, argv, own, own_option, mc);
    if (rc) return rc;
    mc->opt = cl->opt;
    mc->json = cl->json;
    if (cl->npos == 0) return EX_PARSE_OK; /* the demo */
    if (cl->npos != 6 && cl->npos != 7)
        return ex_usage_error(cl, "want M N K BM BN BK [f32|bf16], got %d argument%s", cl->npos,
                              cl->npos == 1 ? "" : "s");
    const char *names[6] = {"M", "N", "K", "BM", "BN", "BK"};
    int64_t *dst[6] = {&mc->m, &mc->n, &mc->k, &mc->bm, &mc->bn, &mc->bk};
    for (int i = 0; i < 6; i++)
        if (ex_parse_int(cl, cl->pos[i], names[i], 1, 1LL << 31, dst[i])) return EX_PARSE_ERROR;
    if (cl->npos == 7 && (pl_dtype_parse(cl->pos[6], &mc->dt) || (mc->dt != PL_F32 && mc->dt != PL_BF16)))
        return ex_usage_error(cl, "dtype must be f32 or bf16, got '%s'", cl->pos[6]);
    return EX_PARSE_OK;
}

int main(int argc, char **argv)
{
    mm_case mc = {.dt = PL_F32};
    ex_cmdline cl = {.prog = "matmul", .usage = USAGE, .accept = ~0u};
    int rc = parse(&mc, &cl, argc, argv);
    if (rc) return rc == EX_PARSE_HELP ? 0 : 2;
    if (cl.npos) return run_case(&mc, &cl);
    int worst = 0; /* the demo: 1024^3 in f32, then in bf16 */
    pl_dtype dts[2] = {PL_F32, PL_BF16};
    for (int i = 0; i < 2; i++) {
        mm_case d = mc;
        d.m = d.n = d.k = 1024;
        d.bm = d.bn = 256;
        d.bk = 512;
        d.dt = dts[i];
        int s = run_case(&d, &cl);
        worst = s > worst ? s : worst;
        if (!mc.json) printf("\n");
    }
    return worst;
}
