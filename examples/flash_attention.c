/* examples/flash_attention.c: attention, O = softmax(Q K^T / sqrt(d)) V, as
 * a flash-attention kernel on tilesim, verified against a reference built on
 * OpenBLAS (S = Q K^T and O = P V with cblas_sgemm, the softmax in double).
 *
 *   flash_attention                     the demo: f32 and bf16 over three shapes
 *   flash_attention SQ SKV D BQ BK [f32|bf16] [options]
 *
 * Options: --heads N (batch*heads as a leading parallel grid axis), --causal,
 * --chip NAME, --trace FILE.json, --no-checks.
 *
 * The kernel and its call are in kernels/flash_attention.h.
 *
 * Exit status: 0 when every case passes (allclose PASS, no findings of the
 * checks), 1 when a result is wrong, 2 for a bad command line or a call
 * tilesim rejects.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernel/pallas.h"
#include "../sim/tilesim.h"
#include "kernels/flash_attention.h"

/* Run one case; returns 0 (pass), 1 (wrong result or a finding), 2 (rejected). */
static int run_case(const fa_config *cfg, const pl_options *opt)
{
    fa_params params;
    pl_call call;
    if (fa_call(&call, &params, cfg) != PL_OK) {
        fprintf(stderr, "flash_attention: sizes must be at least 1 and the dtype f32 or bf16\n");
        return 2;
    }
    printf("== flash_attention q %lld x kv %lld, d %lld, blocks (bq, bk) = (%lld, %lld), %s", (long long)cfg->sq,
           (long long)cfg->skv, (long long)cfg->d, (long long)cfg->bq, (long long)cfg->bk, pl_dtype_name(cfg->dtype));
    if (cfg->heads) printf(", %lld heads", (long long)cfg->heads);
    printf("%s\n", cfg->causal ? ", causal" : "");

    pl_array args[3], out;
    if (fa_inputs(cfg, args, &out, 1) != PL_OK) {
        fprintf(stderr, "flash_attention: out of host memory for the inputs\n");
        return 2;
    }
    pl_report rep;
    int rc = pl_pallas_call(&call, args, &out, opt, &rep), status = 0;
    if (rc != PL_OK) {
        fprintf(stderr, "flash_attention: %s\n", rep.error);
        status = 2;
    } else {
        pl_report_print(&rep, stdout);
        pl_check chk;
        rc = fa_check(cfg, args, &out, &chk, stdout);
        if (rc == PL_ENOMEM) {
            fprintf(stderr, "flash_attention: out of host memory for the reference\n");
            status = 2;
        } else if (chk.verdict != PL_PASS || rep.n_findings) {
            status = 1;
        }
        if (rep.n_findings) printf("  %d finding%s of the checks\n", rep.n_findings, rep.n_findings == 1 ? "" : "s");
        if (status != 2) printf("%s\n", status ? "FAIL" : "PASS");
    }
    fa_free(args, &out);
    return status;
}

static int parse_int(const char *s, const char *what, int64_t *out)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || v < 1 || v > (1LL << 20)) {
        fprintf(stderr, "flash_attention: %s must be a whole number from 1 to 2^20, got '%s'\n", what, s);
        return -1;
    }
    *out = v;
    return 0;
}

static int usage(FILE *f, int status)
{
    fprintf(f, "usage: flash_attention [SQ SKV D BQ BK [f32|bf16]] [--heads N] [--causal] [--chip NAME]\n"
               "                       [--trace FILE.json] [--no-checks]\n");
    return status;
}

int main(int argc, char **argv)
{
    fa_config cfg = {.dtype = PL_F32};
    pl_options opt = {0};
    const char *pos[6];
    int npos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) return usage(stdout, 0);
        if (strcmp(a, "--heads") == 0 || strcmp(a, "--chip") == 0 || strcmp(a, "--trace") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "flash_attention: %s needs a value\n", a);
                return usage(stderr, 2);
            }
            const char *v = argv[++i];
            if (a[2] == 'h' && parse_int(v, "--heads", &cfg.heads)) return 2;
            if (a[2] == 'c') opt.chip = v;
            if (a[2] == 't') opt.trace_path = v;
        } else if (strcmp(a, "--causal") == 0) cfg.causal = 1;
        else if (strcmp(a, "--no-checks") == 0) opt.checks_off = 1;
        else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "flash_attention: unknown option '%s'\n", a);
            return usage(stderr, 2);
        } else if (npos < 6) pos[npos++] = a;
        else {
            fprintf(stderr, "flash_attention: too many arguments ('%s')\n", a);
            return usage(stderr, 2);
        }
    }
    if (opt.chip && !pl_chip_find(opt.chip)) {
        fprintf(stderr, "flash_attention: unknown chip '%s'\n", opt.chip);
        return 2;
    }
    if (npos == 0) { /* the demo: square, ragged kv, causal with two heads; f32 then bf16 */
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
                int s = run_case(&d, &opt);
                worst = s > worst ? s : worst;
                printf("\n");
            }
        printf("%s\n", worst ? "some cases FAILED" : "all cases PASS");
        return worst;
    }
    if (npos != 5 && npos != 6) {
        fprintf(stderr, "flash_attention: want SQ SKV D BQ BK [f32|bf16], got %d positional argument%s\n", npos,
                npos == 1 ? "" : "s");
        return usage(stderr, 2);
    }
    const char *names[5] = {"SQ", "SKV", "D", "BQ", "BK"};
    int64_t *dst[5] = {&cfg.sq, &cfg.skv, &cfg.d, &cfg.bq, &cfg.bk};
    for (int i = 0; i < 5; i++)
        if (parse_int(pos[i], names[i], dst[i])) return 2;
    if (npos == 6 && (pl_dtype_parse(pos[5], &cfg.dtype) || (cfg.dtype != PL_F32 && cfg.dtype != PL_BF16))) {
        fprintf(stderr, "flash_attention: dtype must be f32 or bf16, got '%s'\n", pos[5]);
        return 2;
    }
    return run_case(&cfg, &opt);
}
