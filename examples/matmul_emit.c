/* examples/matmul_emit.c: C = A @ B written with pl_kernel and
 * pltpu_emit_pipeline (kernels/matmul_emit.h), verified against cblas_sgemm
 * and timed beside the equivalent pallas_call grid (kernels/matmul.h).
 *
 *   matmul_emit [CHIP [M N K BM BN BK]] [--chip NAME] [--trace FILE.json]
 *
 * default: v5e 1024 1024 1024 256 256 256. --trace writes the Chrome trace
 * of the pl_kernel call.
 *
 * f32; the tiles must divide the sizes. Exit status: 0 when the result
 * verifies, 1 when it is wrong, 2 for a bad command line or a call tilesim
 * rejects. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/tilesim_kernel.h"
#include "kernels/matmul.h"
#include "kernels/matmul_emit.h"
#include "kernels/options.h"

#define USAGE                                                                                                 \
    "usage: matmul_emit [CHIP [M N K BM BN BK]] [--chip NAME] [--trace FILE.json]\n"                           \
    "       (sizes 1..16384, tiles dividing them)\n"

/* The positional CHIP and sizes into chip and v; 0, or a usage error. */
static int parse(const ex_cmdline *cl, const char **chip, int64_t *v)
{
    static const char *const names[] = {"M", "N", "K", "BM", "BN", "BK"};
    if (cl->npos != 0 && cl->npos != 1 && cl->npos != 7)
        return ex_usage_error(cl, "give a chip, or a chip and the six sizes (got %d arguments)", cl->npos);
    if (cl->npos >= 1) {
        if (cl->opt.chip) return ex_usage_error(cl, "the chip twice: '%s' and --chip %s", cl->pos[0], cl->opt.chip);
        if (!pl_chip_find(cl->pos[0])) return ex_usage_error(cl, "unknown chip '%s'", cl->pos[0]);
        *chip = cl->pos[0];
    }
    for (int i = 0; cl->npos == 7 && i < 6; i++)
        if (ex_parse_int(cl, cl->pos[1 + i], names[i], 1, 1 << 14, &v[i])) return EX_PARSE_ERROR;
    for (int i = 0; i < 3; i++)
        if (v[i] % v[3 + i])
            return ex_usage_error(cl, "%s = %lld does not divide %s = %lld", names[3 + i], (long long)v[3 + i],
                                  names[i], (long long)v[i]);
    return 0;
}

int main(int argc, char **argv)
{
    ex_cmdline cl = {.prog = "matmul_emit", .usage = USAGE, .accept = EX_CHIP | EX_TRACE};
    int prc = ex_parse(&cl, argc, argv, NULL, NULL, NULL);
    if (prc != EX_PARSE_OK) return prc == EX_PARSE_HELP ? 0 : 2;
    const char *chip = cl.opt.chip ? cl.opt.chip : "v5e";
    int64_t v[6] = {1024, 1024, 1024, 256, 256, 256};
    if (parse(&cl, &chip, v)) return 2;
    int64_t m = v[0], n = v[1], k = v[2];
    float *a = malloc(sizeof(float) * (size_t)(m * k)), *b = malloc(sizeof(float) * (size_t)(k * n));
    float *c = calloc((size_t)(m * n), sizeof(float));
    if (!a || !b || !c) {
        fprintf(stderr, "matmul_emit: out of host memory\n");
        return 2;
    }
    for (int64_t i = 0; i < m * k; i++) a[i] = (float)((i * 7) % 13) / 13.0f - 0.5f;
    for (int64_t i = 0; i < k * n; i++) b[i] = (float)((i * 5) % 11) / 11.0f - 0.5f;
    pl_array ins[2] = {PL_ARRAY(a, PL_F32, m, k), PL_ARRAY(b, PL_F32, k, n)};
    pl_array out = PL_ARRAY(c, PL_F32, m, n);
    pl_options opt = {.chip = chip, .trace_path = cl.opt.trace_path};
    mme_params p;
    pl_kernel_spec spec;
    mme_spec(&spec, &p, m, n, k, v[3], v[4], v[5]);
    pl_report re, rg;
    int rc = pl_kernel(&spec, ins, &out, &opt, &re);
    if (rc != PL_OK) {
        fprintf(stderr, "matmul_emit: %s\n", re.error);
        free(a), free(b), free(c);
        return 2;
    }
    pl_check chk;
    int bad = pl_check_matmul(&ins[0], &ins[1], &out, &chk, stdout) != PL_OK;
    mm_params mp;
    pl_call call;
    mm_call(&call, &mp, m, n, k, v[3], v[4], v[5]);
    opt.trace_path = NULL; /* the trace is the pl_kernel call's */
    rc = pl_pallas_call(&call, ins, &out, &opt, &rg);
    if (rc != PL_OK) {
        fprintf(stderr, "matmul_emit: the pallas_call grid: %s\n", rg.error);
        free(a), free(b), free(c);
        return 2;
    }
    printf("%s, %d TensorCore%s: pl_kernel + emit_pipeline %.2f us (%lld copies), pallas_call grid (%lld, %lld, "
           "%lld) %.2f us: %+.1f %%\n", chip, re.cores, re.cores == 1 ? "" : "s", re.time_s * 1e6,
           (long long)re.dma_copies, (long long)call.grid[0], (long long)call.grid[1], (long long)call.grid[2],
           rg.time_s * 1e6, 100.0 * (re.time_s / rg.time_s - 1));
    free(a), free(b), free(c);
    return bad;
}
