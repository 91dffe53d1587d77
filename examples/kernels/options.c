/* examples/kernels/options.c: the example programs' shared command line
 * (options.h). getopt_long does the scanning (options may follow the
 * positional arguments, --opt=value works); its own messages are off so
 * that every error reads "PROG: ..." followed by the usage. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../sim/base/outfile.h"
#include "options.h"

enum { O_CHIP = 1000, O_CHIP_FILE, O_TRACE, O_TRACE_LIMIT, O_COST_ONLY, O_NO_CHECKS, O_STRICT, O_UNINIT, O_OOB, O_JSON,
       O_HELP = 'h' };

static const struct {
    struct option opt;
    unsigned mask;
} common[] = {
    {{"chip", required_argument, NULL, O_CHIP}, EX_CHIP},
    {{"chip-file", required_argument, NULL, O_CHIP_FILE}, EX_CHIP_FILE},
    {{"trace", required_argument, NULL, O_TRACE}, EX_TRACE},
    {{"trace-limit", required_argument, NULL, O_TRACE_LIMIT}, EX_TRACE},
    {{"cost-only", no_argument, NULL, O_COST_ONLY}, EX_COST_ONLY},
    {{"no-checks", no_argument, NULL, O_NO_CHECKS}, EX_NO_CHECKS},
    {{"strict", no_argument, NULL, O_STRICT}, EX_STRICT},
    {{"uninit", required_argument, NULL, O_UNINIT}, EX_UNINIT},
    {{"oob", required_argument, NULL, O_OOB}, EX_OOB},
    {{"json", no_argument, NULL, O_JSON}, EX_JSON},
    {{"help", no_argument, NULL, O_HELP}, ~0u},
};

#define N_COMMON (sizeof common / sizeof *common)
#define MAX_LONG 48

int ex_usage_error(const ex_cmdline *cl, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", cl->prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n%s", cl->usage);
    return EX_PARSE_ERROR;
}

ex_num ex_scan_int(const char *s, size_t len, int64_t lo, int64_t hi, int64_t *out)
{
    int neg = len > 0 && s[0] == '-';
    size_t i = (size_t)neg;
    if (i == len) return EX_NUM_NOT_WHOLE;
    for (size_t j = i; j < len; j++) /* strtoll alone would take " 5", "+5" and stop at "12x" */
        if (!isdigit((unsigned char)s[j])) return EX_NUM_NOT_WHOLE;
    while (i + 1 < len && s[i] == '0') i++; /* leading zeros: the digits that count fit the buffer */
    char buf[32];
    if (len - i > 20) return neg ? EX_NUM_LOW : EX_NUM_HIGH; /* more digits than any int64 */
    snprintf(buf, sizeof buf, "%s%.*s", neg ? "-" : "", (int)(len - i), s + i);
    errno = 0;
    long long v = strtoll(buf, NULL, 10);
    if (errno == ERANGE) return neg ? EX_NUM_LOW : EX_NUM_HIGH;
    if (v < lo) return EX_NUM_LOW;
    if (v > hi) return EX_NUM_HIGH;
    *out = v;
    return EX_NUM_OK;
}

int ex_parse_int(const ex_cmdline *cl, const char *s, const char *what, int64_t lo, int64_t hi, int64_t *out)
{
    if (ex_scan_int(s, strlen(s), lo, hi, out) != EX_NUM_OK)
        return ex_usage_error(cl, "%s must be a whole number from %lld to %lld, got '%.40s%s'", what, (long long)lo,
                              (long long)hi, s, strlen(s) > 40 ? "..." : "");
    return EX_PARSE_OK;
}

int ex_scan_size(const char *s, int64_t *out) { return strcmp(s, "none") != 0 && sim_parse_size(s, out) == 0 ? 0 : -1; }

int ex_parse_size(const ex_cmdline *cl, const char *s, const char *what, int64_t *out)
{
    if (ex_scan_size(s, out) == 0) return EX_PARSE_OK;
    return ex_usage_error(cl, "%s: '%.40s%s' is not a size; " EX_SIZE_HINT, what, s, strlen(s) > 40 ? "..." : "");
}

/* --chip and --chip-file name one chip: whichever comes second is refused. */
static int load_chip_file(ex_cmdline *cl, const char *path)
{
    if (cl->opt.chip) return ex_usage_error(cl, "--chip and --chip-file exclude each other; give one");
    char err[PL_MSG_MAX];
    if (pl_chip_load(path, &cl->chip_file, err, sizeof err) != PL_OK)
        return ex_usage_error(cl, "--chip-file: %s", err);
    cl->opt.chip_spec = &cl->chip_file;
    return EX_PARSE_OK;
}

static int check_chip(ex_cmdline *cl, const char *name)
{
    if (cl->opt.chip_spec) return ex_usage_error(cl, "--chip and --chip-file exclude each other; give one");
    if (pl_chip_find(name)) {
        cl->opt.chip = name;
        return EX_PARSE_OK;
    }
    char names[128] = "";
    for (int i = 0; i < pl_chip_count(); i++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", pl_chip_at(i)->name);
    return ex_usage_error(cl, "--chip: unknown chip '%s'; the presets are %s", name, names);
}

int ex_check_writable(const ex_cmdline *cl, const char *option, const char *path)
{
    char msg[1024]; /* the checks open would make, creating and removing nothing (sim/base/outfile.h) */
    if (sim_out_probe(path, msg, sizeof msg) == 0) return EX_PARSE_OK;
    fprintf(stderr, "%s: %s: %s\n", cl->prog, option, msg);
    return EX_PARSE_ERROR;
}

static int common_option(ex_cmdline *cl, int code, const char *arg)
{
    switch (code) {
    case O_CHIP: return check_chip(cl, arg);
    case O_CHIP_FILE: return load_chip_file(cl, arg);
    case O_TRACE: cl->opt.trace_path = arg; return ex_check_writable(cl, "--trace", arg);
    case O_TRACE_LIMIT:
        if (sim_parse_size(arg, &cl->opt.trace_limit_bytes))
            return ex_usage_error(cl, "--trace-limit: want a size in bytes (1000000, 64M, 1G) or none, got '%s'", arg);
        return EX_PARSE_OK;
    case O_COST_ONLY: cl->opt.cost_only = 1; return EX_PARSE_OK;
    case O_NO_CHECKS: cl->opt.checks_off = 1; return EX_PARSE_OK;
    case O_STRICT: cl->opt.strict = 1; return EX_PARSE_OK;
    case O_JSON: cl->json = 1; return EX_PARSE_OK;
    case O_UNINIT:
        if (strcmp(arg, "nan") && strcmp(arg, "zero"))
            return ex_usage_error(cl, "--uninit takes nan or zero, got '%s'", arg);
        cl->opt.uninit = arg[0] == 'z' ? PL_UNINIT_ZERO : PL_UNINIT_NAN;
        return EX_PARSE_OK;
    case O_OOB:
        if (strcmp(arg, "raise") && strcmp(arg, "poison"))
            return ex_usage_error(cl, "--oob takes raise or poison, got '%s'", arg);
        cl->opt.oob_reads = arg[0] == 'p' ? PL_OOB_POISON : PL_OOB_RAISE;
        return EX_PARSE_OK;
    default: return -1; /* not a common option */
    }
}

/* What getopt_long refused: a missing value (':'), an unknown short option
 * (optopt holds it), or an unknown or misused long one (argv[optind - 1]). */
static int refused(ex_cmdline *cl, char **argv, int c)
{
    const char *o = argv[optind - 1];
    if (c == ':') return ex_usage_error(cl, "%s needs a value", o);
    if (optopt > 0 && optopt < 128 && isprint(optopt)) return ex_usage_error(cl, "unknown option '-%c'", optopt);
    return ex_usage_error(cl, "unknown option '%s'", o);
}

int ex_parse(ex_cmdline *cl, int argc, char **argv, const struct option *mine, ex_option_fn fn, void *user)
{
    struct option all[MAX_LONG];
    int n = 0;
    for (size_t i = 0; i < N_COMMON; i++)
        if (common[i].mask & cl->accept) all[n++] = common[i].opt;
    for (int i = 0; mine && mine[i].name && n < MAX_LONG - 1; i++) all[n++] = mine[i];
    all[n] = (struct option){0};
    opterr = 0;
    optind = 1; /* parse from the start even when called twice */
    int c;
    while ((c = getopt_long(argc, argv, ":h", all, NULL)) != -1) {
        if (c == O_HELP) {
            fputs(cl->usage, stdout);
            return EX_PARSE_HELP;
        }
        if (c == '?' || c == ':') return refused(cl, argv, c);
        int rc = common_option(cl, c, optarg);
        if (rc < 0) rc = fn ? fn(cl, c, optarg, user) : ex_usage_error(cl, "unexpected option");
        if (rc) return EX_PARSE_ERROR;
    }
    for (int i = optind; i < argc; i++) {
        if (cl->npos == EX_MAX_POS) return ex_usage_error(cl, "too many arguments ('%s')", argv[i]);
        cl->pos[cl->npos++] = argv[i];
    }
    return EX_PARSE_OK;
}

int ex_check_host_memory(const ex_cmdline *cl, const char *what, double bytes)
{
    char msg[512];
    if (pl_host_memory_check(bytes, msg, sizeof msg) == PL_OK) return 0;
    fprintf(stderr, "%s: %s %s\n%s: run it with --cost-only to time it without data\n", cl->prog, what, msg,
            cl->prog);
    return 2;
}
