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
 * --heatmap FILE.svg (the error per output block).
 *
 * The kernel and its call are in kernels/matmul.h.
 *
 * Exit status: 0 when every check passes, 1 when a result is wrong, 2 for a
 * bad command line or a call tilesim rejects.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/data.h"
#include "../kernel/pallas.h"
#include "../sim/tilesim.h"
#include "kernels/matmul.h"

typedef struct mm_case {
    int64_t m, n, k, bm, bn, bk;
    pl_dtype dt;
    int64_t vmem_limit;
    int json;
    pl_options opt;      /* chip, trace, cost-only and the checks */
    int64_t seed;        /* nonzero: also check order-independence (V4) */
    const char *heatmap; /* write the error heatmap here */
} mm_case;

/* Run one case; returns 0 (pass), 1 (wrong result or a finding), 2 (rejected). */
static int run_case(const mm_case *mc)
{
    mm_params params;
    pl_call call;
    mm_call(&call, &params, mc->m, mc->n, mc->k, mc->bm, mc->bn, mc->bk);
    call.vmem_limit_bytes = mc->vmem_limit;
    int cost_only = mc->opt.cost_only;

    void *a = NULL, *b = NULL, *c = NULL;
    if (!cost_only) {
        a = ex_random_matrix(mc->m * mc->k, mc->dt, 1);
        b = ex_random_matrix(mc->k * mc->n, mc->dt, 2);
        c = calloc((size_t)(mc->m * mc->n), pl_dtype_size(mc->dt));
        if (!a || !b || !c) {
            fprintf(stderr, "matmul: out of memory for %lldx%lldx%lld\n", (long long)mc->m, (long long)mc->n,
                    (long long)mc->k);
            free(a), free(b), free(c);
            return 2;
        }
    }
    pl_array args[2] = {PL_ARRAY(a, mc->dt, mc->m, mc->k), PL_ARRAY(b, mc->dt, mc->k, mc->n)};
    pl_array out = PL_ARRAY(c, mc->dt, mc->m, mc->n);
    pl_report rep;
    FILE *text = mc->json ? NULL : stdout;

    if (text)
        printf("== matmul %lldx%lldx%lld %s, blocks (bm, bn, bk) = (%lld, %lld, %lld)\n", (long long)mc->m,
               (long long)mc->n, (long long)mc->k, pl_dtype_name(mc->dt), (long long)mc->bm, (long long)mc->bn,
               (long long)mc->bk);
    int rc = mc->seed ? pl_check_order(&call, args, &out, &mc->opt, (uint64_t)mc->seed, &rep)
                      : pl_pallas_call(&call, args, &out, &mc->opt, &rep);
    int status = 0;
    if (rc == PL_ERACE && mc->seed) {
        fprintf(stderr, "matmul: %s\n", rep.error);
        status = 1;
    } else if (rc != PL_OK) {
        fprintf(stderr, "matmul: %s\n", rep.error);
        status = 2;
    } else {
        if (text) pl_report_print(&rep, stdout);
        else pl_report_json(&rep, stdout);
        if (text && mc->seed)
            printf("  order check: same bits with the parallel axes shuffled (seed %lld)\n", (long long)mc->seed);
        if (!cost_only && pl_check_matmul_call(&call, &args[0], &args[1], &out, NULL, text) != PL_OK) status = 1;
        if (rep.n_findings) status = 1;
        if (!cost_only && mc->heatmap) {
            char msg[256];
            if (pl_check_heatmap(&args[0], &args[1], &out, mc->bm, mc->bn, mc->heatmap, msg, sizeof msg)) {
                fprintf(stderr, "matmul: %s\n", msg);
                status = 2;
            } else if (text) printf("  %s\n", msg);
        }
    }
    free(a), free(b), free(c);
    return status;
}

static int parse_int(const char *s, const char *what, int64_t *out)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || v < 1 || v > (1LL << 31)) {
        fprintf(stderr, "matmul: %s must be a whole number from 1 to 2^31, got '%s'\n", what, s);
        return -1;
    }
    *out = v;
    return 0;
}

static int usage(FILE *f, int status)
{
    fprintf(f, "usage: matmul [M N K BM BN BK [f32|bf16]] [--chip NAME] [--vmem-limit BYTES] [--json]\n"
               "              [--trace FILE.json] [--cost-only] [--uninit nan|zero] [--oob raise|poison]\n"
               "              [--no-checks] [--strict] [--seed N] [--heatmap FILE.svg]\n");
    return status;
}

/* One option; returns 0, or 2 after printing what is wrong. *i advances past a value. */
static int parse_option(mm_case *mc, int argc, char **argv, int *i)
{
    const char *o = argv[*i];
    static const char *with_value[] = {"--chip", "--trace", "--vmem-limit", "--uninit", "--oob", "--seed", "--heatmap"};
    const char *v = NULL;
    for (size_t k = 0; k < sizeof with_value / sizeof *with_value; k++)
        if (strcmp(o, with_value[k]) == 0) {
            if (*i + 1 >= argc) {
                fprintf(stderr, "matmul: %s needs a value\n", o);
                return usage(stderr, 2);
            }
            v = argv[++*i];
        }
    if (strcmp(o, "--chip") == 0) mc->opt.chip = v;
    else if (strcmp(o, "--trace") == 0) mc->opt.trace_path = v;
    else if (strcmp(o, "--heatmap") == 0) mc->heatmap = v;
    else if (strcmp(o, "--vmem-limit") == 0) return parse_int(v, o, &mc->vmem_limit) ? 2 : 0;
    else if (strcmp(o, "--seed") == 0) return parse_int(v, o, &mc->seed) ? 2 : 0;
    else if (strcmp(o, "--uninit") == 0 && (strcmp(v, "nan") == 0 || strcmp(v, "zero") == 0))
        mc->opt.uninit = v[0] == 'z' ? PL_UNINIT_ZERO : PL_UNINIT_NAN;
    else if (strcmp(o, "--oob") == 0 && (strcmp(v, "raise") == 0 || strcmp(v, "poison") == 0))
        mc->opt.oob_reads = v[0] == 'p' ? PL_OOB_POISON : PL_OOB_RAISE;
    else if (v) {
        fprintf(stderr, "matmul: %s takes %s, got '%s'\n", o, o[2] == 'u' ? "nan or zero" : "raise or poison", v);
        return 2;
    } else if (strcmp(o, "--json") == 0) mc->json = 1;
    else if (strcmp(o, "--cost-only") == 0) mc->opt.cost_only = 1;
    else if (strcmp(o, "--no-checks") == 0) mc->opt.checks_off = 1;
    else if (strcmp(o, "--strict") == 0) mc->opt.strict = 1;
    else {
        fprintf(stderr, "matmul: unknown option '%s'\n", o);
        return usage(stderr, 2);
    }
    return 0;
}

int main(int argc, char **argv)
{
    mm_case mc = {.dt = PL_F32};
    const char *pos[7];
    int npos = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) return usage(stdout, 0);
        if (argv[i][0] == '-' && argv[i][1]) {
            int rc = parse_option(&mc, argc, argv, &i);
            if (rc) return rc;
        } else if (npos < 7) pos[npos++] = argv[i];
        else return usage(stderr, 2);
    }
    if (npos == 0) { /* the demo */
        int worst = 0;
        pl_dtype dts[2] = {PL_F32, PL_BF16};
        for (int i = 0; i < 2; i++) {
            mm_case d = mc;
            d.m = d.n = d.k = 1024;
            d.bm = d.bn = 256;
            d.bk = 512;
            d.dt = dts[i];
            int s = run_case(&d);
            worst = s > worst ? s : worst;
            if (!mc.json) printf("\n");
        }
        return worst;
    }
    if (npos != 6 && npos != 7) return usage(stderr, 2);
    const char *names[6] = {"M", "N", "K", "BM", "BN", "BK"};
    int64_t *dst[6] = {&mc.m, &mc.n, &mc.k, &mc.bm, &mc.bn, &mc.bk};
    for (int i = 0; i < 6; i++)
        if (parse_int(pos[i], names[i], dst[i])) return 2;
    if (npos == 7 && (pl_dtype_parse(pos[6], &mc.dt) || (mc.dt != PL_F32 && mc.dt != PL_BF16))) {
        fprintf(stderr, "matmul: dtype must be f32 or bf16, got '%s'\n", pos[6]);
        return 2;
    }
    return run_case(&mc);
}
