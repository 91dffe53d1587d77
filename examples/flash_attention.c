/* examples/flash_attention.c: attention, O = softmax(Q K^T / sqrt(d)) V, as
 * a flash-attention kernel on tilesim, verified against a reference built on
 * OpenBLAS (S = Q K^T and O = P V with cblas_sgemm, the softmax in double).
 *
 *   flash_attention                     the demo: f32 and bf16 over three shapes
 *   flash_attention SQ SKV D BQ BK [f32|bf16] [options]
 *
 * Options: --heads N (batch*heads as a leading parallel grid axis), --causal,
 * --chip NAME, --trace FILE.json, --no-checks, --strict, --cost-only (time
 * the call without data; nothing to verify). A real run that cannot fit in
 * host memory is refused at once with the bytes it needs.
 *
 * The kernel is in kernels/flash_attention.h; its call, inputs and reference
 * are those of the "flash_attention" definition (kernels/attention.c), run
 * as `tilesim run flash_attention` runs it.
 *
 * Exit status: 0 when every case passes (allclose PASS, no findings of the
 * checks), 1 when a result is wrong, 2 for a bad command line or a call
 * tilesim rejects.
 */
#include <stdio.h>

#include "../kernel/pallas.h"
#include "../sim/tilesim.h"
#include "kernels/flash_attention.h"
#include "kernels/frontend.h"
#include "kernels/options.h"
#include "kernels/registry.h"

#define USAGE                                                                                             \
    "usage: flash_attention [SQ SKV D BQ BK [f32|bf16]] [--heads N] [--causal] [--chip NAME]\n"          \
    "                       [--trace FILE.json] [--no-checks] [--strict] [--cost-only]\n"

/* cfg as the values of the "flash_attention" definition. */
static int values_of(const fa_config *cfg, const ex_cmdline *cl, int64_t *v)
{
    static const char *const names[] = {"sq", "skv", "d", "bq", "bk", "heads", "causal", "dtype"};
    int64_t vals[] = {cfg->sq, cfg->skv, cfg->d, cfg->bq, cfg->bk, cfg->heads, cfg->causal, cfg->dtype};
    return ex_def_values(cl, &ex_def_flash, v, 8, names, vals) ? 2 : 0;
}

/* Run one case through the definition; returns 0 (pass), 1 (wrong result
 * or a finding), 2 (rejected). */
static int run_case(const fa_config *cfg, const ex_cmdline *cl)
{
    int64_t v[PL_KDEF_MAX_PARAMS];
    if (values_of(cfg, cl, v)) return 2;
    if (!cl->opt.cost_only && ex_check_host_memory(cl, "a real run", fa_host_bytes(cfg))) return 2;
    printf("== flash_attention q %lld x kv %lld, d %lld, blocks (bq, bk) = (%lld, %lld), %s", (long long)cfg->sq,
           (long long)cfg->skv, (long long)cfg->d, (long long)cfg->bq, (long long)cfg->bk, pl_dtype_name(cfg->dtype));
    if (cfg->heads) printf(", %lld heads", (long long)cfg->heads);
    printf("%s\n", cfg->causal ? ", causal" : "");

    pl_report rep;
    pl_check chk[PL_MAX_OPERANDS];
    int rc = ex_def_run(cl, &ex_def_flash, v, NULL, NULL, &rep, chk), status = ex_def_status(rc, &rep);
    if (status == 2) return 2;
    if (rep.n_findings) printf("  %d finding%s of the checks\n", rep.n_findings, rep.n_findings == 1 ? "" : "s");
    printf("%s\n", status ? "FAIL" : cl->opt.cost_only ? "PASS (cost-only: not verified)" : "PASS");
    return status;
}

enum { O_HEADS = 256, O_CAUSAL };

static int own_option(ex_cmdline *cl, int code, const char *arg, void *user)
{
    fa_config *cfg = user;
    if (code == O_HEADS) return ex_parse_int(cl, arg, "--heads", 1, 1 << 20, &cfg->heads);
    cfg->causal = 1;
    return EX_PARSE_OK;
}

static int parse(fa_config *cfg, ex_cmdline *cl, int argc, char **argv)
{
    static const struct option own[] = {{"heads", required_argument, NULL, O_HEADS},
                                        {"causal", no_argument, NULL, O_CAUSAL},
                                        {0}};
    int rc = ex_parse(cl, argc, argv, own, own_option, cfg);
    if (rc || cl->npos == 0) return rc;
    if (cl->npos != 5 && cl->npos != 6)
        return ex_usage_error(cl, "want SQ SKV D BQ BK [f32|bf16], got %d positional argument%s", cl->npos,
                              cl->npos == 1 ? "" : "s");
    const char *names[5] = {"SQ", "SKV", "D", "BQ", "BK"};
    int64_t *dst[5] = {&cfg->sq, &cfg->skv, &cfg->d, &cfg->bq, &cfg->bk};
    for (int i = 0; i < 5; i++)
        if (ex_parse_int(cl, cl->pos[i], names[i], 1, 1 << 20, dst[i])) return EX_PARSE_ERROR;
    if (cl->npos == 6 && (pl_dtype_parse(cl->pos[5], &cfg->dtype) || (cfg->dtype != PL_F32 && cfg->dtype != PL_BF16)))
        return ex_usage_error(cl, "dtype must be f32 or bf16, got '%s'", cl->pos[5]);
    return EX_PARSE_OK;
}

int main(int argc, char **argv)
{
    fa_config cfg = {.dtype = PL_F32};
    ex_cmdline cl = {.prog = "flash_attention", .usage = USAGE,
                     .accept = EX_CHIP | EX_TRACE | EX_NO_CHECKS | EX_STRICT | EX_COST_ONLY};
    int rc = parse(&cfg, &cl, argc, argv);
    if (rc) return rc == EX_PARSE_HELP ? 0 : 2;
    if (cl.npos) return run_case(&cfg, &cl);
    /* the demo: square, ragged kv, causal with two heads; f32 then bf16 */
    static const fa_config demo[] = {
        {.sq = 512, .skv = 512, .d = 128, .bq = 128, .bk = 128},
        {.sq = 512, .skv = 300, .d = 128, .bq = 128, .bk = 128},
        {.heads = 2, .sq = 512, .skv = 512, .d = 128, .bq = 128, .bk = 128, .causal = 1},
    };
    int worst = 0;
    for (size_t i = 0; i < sizeof demo / sizeof *demo; i++)
        for (int b = 0; b < 2; b++) {
            fa_config d = demo[i];
            d.dtype = b ? PL_BF16 : PL_F32;
            if (cfg.heads) d.heads = cfg.heads;
            d.causal |= cfg.causal;
            int s = run_case(&d, &cl);
            worst = s > worst ? s : worst;
            printf("\n");
        }
    printf("%s\n", worst ? "some cases FAILED" : "all cases PASS");
    return worst;
}
