/* cli/review.c: `tilesim review`: the design review of a served model
 * (issue 16, sim/tilesim_review.h). Weighs every (devices, weight dtype,
 * batch) configuration from simulated kernels (examples/kernels/review_defs.h)
 * and prints the recommended one, its bottleneck in one sentence and the
 * table of the others with the reason each lost. Exit 0 with a
 * recommendation, 1 when no configuration meets the targets, 2 on a bad
 * command line or a model no configuration can run (pl_review_check). */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "../examples/kernels/review_defs.h"
#include "cli.h"

const cli_cmd cli_review_cmd = {
    "review", "tilesim review --model NAME|FILE --chip NAME --prompt P --context C --ttft T --tpot T [options]",
    "tilesim review --model NAME|FILE [--chip NAME | --chip-file FILE] --prompt P --context C --ttft 500ms "
    "--tpot 30ms [--quant bf16,int8,fp8] [--kv bf16,int8,fp8] [--chips LIST] [--batch LIST] [--slices LIST] [--all] [--json] [--threads N]",
    NULL, cli_review_help};

void cli_review_help(const cli_cmd *cmd, FILE *f)
{
    (void)cmd;
    fprintf(f, "usage: %s\n\n", cli_review_cmd.synopsis);
    fprintf(f,
            "Serve a model on a chip: weigh every configuration (devices in a 1 x N ring with tensor parallelism\n"
            "TP = N, weight dtype, decode batch) from the kernels themselves, each projection, attention and\n"
            "all-reduce timed cost-only on the chip with tile sizes picked by a sweep (one per distinct shape),\n"
            "and recommend the one with the most tokens/s/chip that meets both targets and fits HBM.\n"
            "  --model NAME|FILE  a preset (llama3-70b, llama3-8b) or a model file of 'key = value' lines\n"
            "  --chip NAME        a preset (default v5e); --chip-file FILE a what-if chip\n"
            "  --prompt P         prompt tokens (TTFT = their prefill + the first decode step)\n"
            "  --context C        the longest conversation; the KV cache must hold C tokens per sequence,\n"
            "                     and TPOT is a decode step at the average context (P + C) / 2\n"
            "  --ttft T, --tpot T targets, with a unit: 500ms, 0.5s, 800us (from 1us to an hour)\n"
            "  --quant LIST       weight dtypes among bf16,int8,fp8 (default: those the chip's MXU serves, T10)\n"
            "  --kv LIST          KV cache dtypes among bf16,int8,fp8 (default: bf16 and fp8, and int8 where the\n"
            "                     MXU has an int8 path; 8-bit pages are widened in registers by the attention kernel)\n"
            "  --chips LIST       TP degrees to weigh (default 1,2,4,8; 1 on a chip with ici_links = 0)\n"
            "  --batch LIST       decode batches to weigh (default 1,2,4,8,16,24,32,48,64,96,128,192,256)\n"
            "  --slices LIST      pipeline stages to weigh, each a slice of the TP ring holding an equal share of\n"
            "                     the layers, joined by the data-center network (rule M14; default 1: one slice)\n"
            "  --all              list every configuration weighed (default: the ten with the most tokens/s/chip,\n"
            "                     then one line per kind of verdict for the rest)\n"
            "  --json             one JSON object instead of the text (every configuration)\n"
            "  --threads N        host threads for the sweeps (default: one per core)\n"
            "A chip is the simulator's device (v7x: 2 devices per chip package); tokens/s/chip counts packages.\n"
            "Exit status: 0 a recommendation, 1 none meets the targets, 2 a bad command line or a model whose\n"
            "kernels fit no configuration (refused before simulating: the kernel, its dimensions, the limit).\n");
}

/* A time target's range: below a microsecond no kernel step is measured (the
 * report would show 1e-300s as "0 ms"), above an hour is no serving target. */
#define TIME_MIN_S 1e-6
#define TIME_MAX_S 3600.0

/* "500ms", "0.5s", "800us": seconds into *out. Digits (and a '.') first: no
 * sign, no space, no hex float, no inf or nan, which strtod would take. */
static int parse_duration(const cli_cmd *cmd, const char *what, const char *s, double *out)
{
    char *end;
    int plain = (isdigit((unsigned char)s[0]) || s[0] == '.') && !strpbrk(s, "xXpP");
    double v = plain ? strtod(s, &end) : 0;
    double unit = !plain                     ? 0
                  : strcmp(end, "s") == 0  ? 1
                  : strcmp(end, "ms") == 0 ? 1e-3
                  : strcmp(end, "us") == 0 ? 1e-6
                                           : 0;
    double t = v * unit;
    /* the floor with a rounding margin: "0.001ms" is 1 us though v * unit may come out a hair below */
    if (unit == 0 || !(t >= TIME_MIN_S * (1 - 1e-9)) || !(t <= TIME_MAX_S))
        return cli_fail(cmd, "%s '%s': want a time from 1us to an hour (3600s) with a unit (500ms, 0.5s, 800us)",
                        what, CLI_CUT(s));
    *out = t;
    return 0;
}

/* --quant or --kv: a list of bf16, int8, fp8 into out[0 .. *n-1] */
static int parse_wlist(const cli_cmd *cmd, const char *opt, const char *s, pl_wdtype *out, int *n)
{
    *n = 0;
    for (const char *p = s;;) {
        size_t len = strcspn(p, ",");
        char one[16];
        snprintf(one, sizeof one, "%.*s", (int)(len < 15 ? len : 15), p);
        pl_wdtype w;
        if (len == 0 || len > 15 || pl_wdtype_parse(one, &w) != PL_OK)
            return cli_fail(cmd, "%s '%s': want a list of bf16, int8, fp8", opt, CLI_CUT(s));
        for (int i = 0; i < *n; i++)
            if (out[i] == w) return cli_fail(cmd, "%s '%s': %s appears twice", opt, CLI_CUT(s), one);
        out[(*n)++] = w;
        if (!p[len]) return 0;
        p += len + 1;
    }
}

static int load_model(const cli_cmd *cmd, const char *spec, pl_model *m)
{
    const pl_model *p = pl_model_find(spec);
    if (p) return *m = *p, 0;
    char err[1024];
    if (!strchr(spec, '/') && !strchr(spec, '.'))
        return cli_fail(cmd, "--model '%s': not a preset (llama3-70b, llama3-8b) nor a file path", CLI_CUT(spec));
    if (pl_model_load(spec, m, err, sizeof err) != PL_OK) return cli_fail(cmd, "--model: %s", err);
    return 0;
}

enum { O_MODEL, O_CHIP, O_CHIP_FILE, O_PROMPT, O_CONTEXT, O_TTFT, O_TPOT, O_QUANT, O_CHIPS, O_BATCH, O_JSON, O_THREADS,
       O_ALL, O_KV, O_SLICES };
static const cli_optspec specs[] = {{"--model", 1}, {"--chip", 1}, {"--chip-file", 1}, {"--prompt", 1},
                                    {"--context", 1}, {"--ttft", 1}, {"--tpot", 1}, {"--quant", 1},
                                    {"--chips", 1}, {"--batch", 1}, {"--json", 0}, {"--threads", 1}, {"--all", 0},
                                    {"--kv", 1}, {"--slices", 1}};
#define NSPECS ((int)(sizeof specs / sizeof *specs))

static int lists(const cli_cmd *cmd, const cli_args *a, pl_review_brief *b)
{
    int rc, n;
    /* a chip without ICI links is a single device: weigh no ring by default */
    const char *chips = a->val[O_CHIPS] ? a->val[O_CHIPS] : b->chip->ici_links == 0 ? "1" : "1,2,4,8";
    const char *batch = a->val[O_BATCH] ? a->val[O_BATCH] : "1,2,4,8,16,24,32,48,64,96,128,192,256";
    if ((rc = cli_parse_list(cmd, "--chips", chips, 256, b->chips, &n))) return rc;
    b->n_chips = n;
    if ((rc = cli_parse_list(cmd, "--batch", batch, 4096, b->batch, &n))) return rc;
    b->n_batch = n;
    if (a->val[O_SLICES]) {
        if ((rc = cli_parse_list(cmd, "--slices", a->val[O_SLICES], PL_MESH_MAX_SLICES, b->slices, &n))) return rc;
        b->n_slices = n;
    }
    if (a->val[O_QUANT] && (rc = parse_wlist(cmd, "--quant", a->val[O_QUANT], b->quant, &b->n_quant))) return rc;
    if (a->val[O_KV] && (rc = parse_wlist(cmd, "--kv", a->val[O_KV], b->kv, &b->n_kv))) return rc;
    /* a list the chip serves none of is a bad option, not a table of refusals (an int8-only --quant on v7x) */
    int served = 0;
    char why[160] = "";
    for (int i = 0; i < b->n_quant; i++) served += pl_review_wdtype_ok(b->chip, b->quant[i], why, sizeof why);
    if (a->val[O_QUANT] && !served) return cli_fail(cmd, "--quant %s: %s", CLI_CUT(a->val[O_QUANT]), why);
    served = 0;
    for (int i = 0; i < b->n_kv; i++) served += pl_review_kv_ok(b->chip, b->kv[i], why, sizeof why);
    if (a->val[O_KV] && !served) return cli_fail(cmd, "--kv %s: %s", CLI_CUT(a->val[O_KV]), why);
    for (int w = 0; w < PL_W_COUNT; w++) {
        char why[160];
        if (!a->val[O_QUANT] && pl_review_wdtype_ok(b->chip, (pl_wdtype)w, why, sizeof why))
            b->quant[b->n_quant++] = (pl_wdtype)w;
        if (!a->val[O_KV] && pl_review_kv_ok(b->chip, (pl_wdtype)w, why, sizeof why)) b->kv[b->n_kv++] = (pl_wdtype)w;
    }
    return 0;
}

static int parse(const cli_cmd *cmd, const cli_args *a, pl_model *m, pl_chip *fc, pl_review_brief *b)
{
    static const int need[] = {O_MODEL, O_PROMPT, O_CONTEXT, O_TTFT, O_TPOT};
    int rc;
    for (size_t i = 0; i < sizeof need / sizeof *need; i++)
        if (!a->val[need[i]]) return cli_fail(cmd, "missing %s", specs[need[i]].name);
    if (a->npos) return cli_fail(cmd, "unexpected argument '%s'; every input is an option", CLI_CUT(a->pos[0]));
    if ((rc = load_model(cmd, a->val[O_MODEL], m))) return rc;
    if ((rc = cli_select_chip(cmd, a->val[O_CHIP], a->val[O_CHIP_FILE], fc, &b->chip))) return rc;
    b->model = m;
    if ((rc = cli_parse_count(cmd, "--prompt", a->val[O_PROMPT], 1 << 20, &b->prompt)) ||
        (rc = cli_parse_count(cmd, "--context", a->val[O_CONTEXT], 1 << 22, &b->context)) ||
        (rc = parse_duration(cmd, "--ttft", a->val[O_TTFT], &b->ttft_s)) ||
        (rc = parse_duration(cmd, "--tpot", a->val[O_TPOT], &b->tpot_s)))
        return rc;
    if (b->context < b->prompt)
        return cli_fail(cmd, "--context %lld is shorter than --prompt %lld: a conversation starts with its prompt",
                        (long long)b->context, (long long)b->prompt);
    return lists(cmd, a, b);
}

void cli_review_print(FILE *f, const pl_review_brief *b, const pl_review_result *r, double wall_s, int all);
void cli_review_json(FILE *f, const pl_review_brief *b, const pl_review_result *r, double wall_s);

int cli_review(int argc, char **argv)
{
    const cli_cmd *cmd = &cli_review_cmd;
    cli_args a;
    int rc = cli_start(cmd, argc, argv, specs, NSPECS, &a);
    if (rc >= 0) return rc;
    pl_model m;
    pl_chip fc;
    pl_review_brief b = {0};
    if ((rc = parse(cmd, &a, &m, &fc, &b))) return rc;
    pl_review_kernels k = ex_review_kernels();
    int64_t threads = 0;
    if (a.val[O_THREADS] && (rc = cli_parse_count(cmd, "--threads", a.val[O_THREADS], 64, &threads))) return rc;
    k.threads = (int)threads;
    /* the sweep's bar, drawn from the first count as the review's bar always was (the sweep waits
     * 1 s so that its many short runs draw none; a review is seconds of sweeps). k.user is only
     * the bar's: the all-reduce cost (ex_review_allreduce_s) ignores it. */
    cli_progress prog;
    if (cli_progress_start(&prog, "review", "tilings", 0)) k.progress = cli_progress_show, k.user = &prog;
    pl_review_result r;
    char err[1024];
    /* a model no configuration can run is the user's error, refused before the sweeps */
    if (pl_review_check(&b, err, sizeof err) != PL_OK)
        return cli_fail(cmd, "--model %s: %s", a.val[O_MODEL], strncmp(err, "review: ", 8) ? err : err + 8);
    int rc_run = pl_review_run(&b, &k, &r, err, sizeof err);
    cli_progress_end(&prog);
    if (rc_run != PL_OK) return fprintf(stderr, "tilesim review: %s\n", err), 1;
    double wall = cli_progress_elapsed(&prog);
    if (a.val[O_JSON]) cli_review_json(stdout, &b, &r, wall);
    else cli_review_print(stdout, &b, &r, wall, a.val[O_ALL] != NULL);
    int status = r.best >= 0 ? 0 : 1;
    pl_review_free(&r);
    return cli_finish_stdout(cmd, status);
}
