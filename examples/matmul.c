/* examples/matmul.c: the tiled matmul of the Pallas TPU docs, run on tilesim
 * and verified against cblas_sgemm.
 *
 *   matmul                              the demo: 1024^3 in f32, then in bf16
 *   matmul M N K BM BN BK [f32|bf16] [--chip NAME] [--vmem-limit BYTES]
 *          [--json] [--trace FILE.json] [--cost-only]
 *
 * The kernel and its call are in kernels/matmul.h.
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

/* Fill with a fixed pseudo-random sequence in [-1, 1), converted to dt. */
static void *random_matrix(int64_t n, pl_dtype dt, uint64_t seed)
{
    char *p = malloc((size_t)n * pl_dtype_size(dt));
    if (!p) return NULL;
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        double v = (double)(seed >> 11) / 9007199254740992.0 * 2.0 - 1.0;
        pl_store_elem(p + (size_t)i * pl_dtype_size(dt), dt, v);
    }
    return p;
}

typedef struct mm_case {
    int64_t m, n, k, bm, bn, bk;
    pl_dtype dt;
    const char *chip;
    int64_t vmem_limit;
    int json, cost_only;
    const char *trace;
} mm_case;

/* Run one case; returns 0 (pass), 1 (wrong result), 2 (rejected). */
static int run_case(const mm_case *mc)
{
    mm_params params;
    pl_call call;
    mm_call(&call, &params, mc->m, mc->n, mc->k, mc->bm, mc->bn, mc->bk);
    call.vmem_limit_bytes = mc->vmem_limit;

    void *a = NULL, *b = NULL, *c = NULL;
    if (!mc->cost_only) {
        a = random_matrix(mc->m * mc->k, mc->dt, 1);
        b = random_matrix(mc->k * mc->n, mc->dt, 2);
        c = calloc((size_t)(mc->m * mc->n), pl_dtype_size(mc->dt));
    }
    if (!mc->cost_only && (!a || !b || !c)) {
        fprintf(stderr, "matmul: out of memory for %lldx%lldx%lld\n", (long long)mc->m, (long long)mc->n,
                (long long)mc->k);
        free(a), free(b), free(c);
        return 2;
    }
    pl_array args[2] = {PL_ARRAY(a, mc->dt, mc->m, mc->k), PL_ARRAY(b, mc->dt, mc->k, mc->n)};
    pl_array out = PL_ARRAY(c, mc->dt, mc->m, mc->n);
    pl_options opt = {.chip = mc->chip, .cost_only = mc->cost_only, .trace_path = mc->trace};
    pl_report rep;

    if (!mc->json)
        printf("== matmul %lldx%lldx%lld %s, blocks (bm, bn, bk) = (%lld, %lld, %lld)\n", (long long)mc->m,
           (long long)mc->n, (long long)mc->k, pl_dtype_name(mc->dt), (long long)mc->bm, (long long)mc->bn,
           (long long)mc->bk);
    int rc = pl_pallas_call(&call, args, &out, &opt, &rep), status;
    if (rc != PL_OK) {
        fprintf(stderr, "matmul: %s\n", rep.error);
        status = 2;
    } else if (mc->json) {
        pl_report_json(&rep, stdout);
        status = mc->cost_only ? 0 : pl_check_matmul(&args[0], &args[1], &out, NULL, NULL) == PL_OK ? 0 : 1;
    } else {
        pl_report_print(&rep, stdout);
        status = mc->cost_only ? 0 : pl_check_matmul(&args[0], &args[1], &out, NULL, stdout) == PL_OK ? 0 : 1;
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

static int usage(void)
{
    fprintf(stderr, "usage: matmul [M N K BM BN BK [f32|bf16]] [--chip NAME] [--vmem-limit BYTES] [--json]\n"
                    "              [--trace FILE.json] [--cost-only]\n");
    return 2;
}

int main(int argc, char **argv)
{
    mm_case mc = {.dt = PL_F32};
    const char *pos[7];
    int npos = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--chip") == 0 && i + 1 < argc) mc.chip = argv[++i];
        else if (strcmp(argv[i], "--trace") == 0 && i + 1 < argc) mc.trace = argv[++i];
        else if (strcmp(argv[i], "--json") == 0) mc.json = 1;
        else if (strcmp(argv[i], "--cost-only") == 0) mc.cost_only = 1;
        else if (strcmp(argv[i], "--vmem-limit") == 0 && i + 1 < argc) {
            if (parse_int(argv[++i], "--vmem-limit", &mc.vmem_limit)) return 2;
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage();
            return 0;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "matmul: unknown option '%s'\n", argv[i]);
            return usage();
        } else if (npos < 7) pos[npos++] = argv[i];
        else return usage();
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
            printf("\n");
        }
        return worst;
    }
    if (npos != 6 && npos != 7) return usage();
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
