/* cli/args.c: strict parsing of the command line (getopt_long underneath):
 * options, whole numbers, lists, dtypes. Every failure prints what was wrong and where, through
 * cli_fail, and returns CLI_EXIT_USAGE. */
#define _DEFAULT_SOURCE /* realpath */
#include <limits.h>
#include <ctype.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../examples/kernels/options.h"
#include "../kernel/guard.h"
#include "cli.h"

static int is_option(const char *s)
{
    return s[0] == '-' && s[1] != '\0' && !isdigit((unsigned char)s[1]);
}

static int find_spec(const cli_optspec *specs, int nspecs, const char *name, size_t len)
{
    for (int i = 0; i < nspecs; i++)
        if (strlen(specs[i].name) == len && strncmp(specs[i].name, name, len) == 0) return i;
    return -1;
}

static int unknown_option(const cli_cmd *cmd, const char *word, const cli_optspec *specs, int nspecs)
{
    char known[512] = "";
    size_t at = 0;
    for (int i = 0; i < nspecs && at < sizeof known; i++)
        at += (size_t)snprintf(known + at, sizeof known - at, "%s%s", i ? ", " : "", specs[i].name);
    if (nspecs == 0) return cli_fail(cmd, "unknown option '%s'; this command takes no options", CLI_CUT(word));
    return cli_fail(cmd, "unknown option '%s'; the options are %s, --help", CLI_CUT(word), known);
}

/* A word getopt_long must see as an operand: "-5", "-" (so that "-5" is
 * reported as a non-positive number, not as an unknown option). */
static const char operand_mark[] = "<operand>";

static int option_value(const cli_cmd *cmd, const char *word, int k, const cli_optspec *specs, cli_args *out)
{
    const char *name = specs[k].name;
    if (out->val[k]) return cli_fail(cmd, "%s: given twice", name);
    if (!specs[k].has_value) {
        out->val[k] = "";
        return 0;
    }
    /* "--bm --bn 128": getopt_long takes "--bn" as the value; it is a missing one */
    if (!strchr(word, '=') && is_option(optarg))
        return cli_fail(cmd, "%s: missing value (got the option '%s')", name, CLI_CUT(optarg));
    if (!optarg[0]) return cli_fail(cmd, "%s: empty value", name);
    out->val[k] = optarg;
    return 0;
}

/* getopt_long in its in-order mode ("-": operands come back as code 1), so
 * that nothing is permuted and av[before] is the word just read. Options
 * must be spelled out: getopt_long's unique prefixes ("--thr") are refused
 * as unknown, as they always were. */
static int parse_words(const cli_cmd *cmd, int argc, char **av, const cli_optspec *specs, int nspecs,
                       cli_args *out, char **orig)
{
    struct option longs[CLI_MAX_OPTS + 2];
    int n = 0;
    for (int i = 0; i < nspecs && i < CLI_MAX_OPTS; i++)
        longs[n++] = (struct option){specs[i].name + 2, specs[i].has_value ? required_argument : no_argument, 0,
                                     256 + i};
    longs[n++] = (struct option){"help", no_argument, 0, 'h'};
    longs[n] = (struct option){0, 0, 0, 0};
    optind = 0; /* glibc: start afresh (tilesim_main runs many times in one process) */
    opterr = 0;
    for (;;) {
        int before = optind ? optind : 1, code = getopt_long(argc, av, "-:h", longs, NULL);
        if (code == -1) break;
        const char *word = av[before];
        size_t len = strcspn(word, "=");
        if (code == 1) {
            if (out->npos == CLI_MAX_POS) return cli_fail(cmd, "too many arguments at '%s'", CLI_CUT(orig[before]));
            out->pos[out->npos++] = orig[before];
        } else if (code == 'h') out->help = 1;
        else if (code == ':') return cli_fail(cmd, "%.*s: missing value", (int)len, word);
        else if (code >= 256 && strlen(specs[code - 256].name) == len) {
            if (optarg == operand_mark) optarg = orig[optind - 1]; /* "--bm -128": the value is unmasked */
            int rc = option_value(cmd, word, code - 256, specs, out);
            if (rc) return rc;
        } else {
            char name[64];
            snprintf(name, sizeof name, "%.*s", (int)(len < 63 ? len : 63), word);
            int k = find_spec(specs, nspecs, word, len);
            if (k >= 0 && !specs[k].has_value && word[len] == '=')
                return cli_fail(cmd, "%s: takes no value, got '%s'", specs[k].name, CLI_CUT(word + len + 1));
            return unknown_option(cmd, name, specs, nspecs);
        }
    }
    for (int i = optind; i < argc; i++) { /* after "--" */
        if (out->npos == CLI_MAX_POS) return cli_fail(cmd, "too many arguments at '%s'", CLI_CUT(orig[i]));
        out->pos[out->npos++] = orig[i];
    }
    return 0;
}

int cli_parse(const cli_cmd *cmd, int argc, char **argv, const cli_optspec *specs, int nspecs, cli_args *out)
{
    memset(out, 0, sizeof *out);
    if (nspecs > CLI_MAX_OPTS) nspecs = CLI_MAX_OPTS;
    /* av = {"tilesim", argv...} with "-5" and "-" masked as operands; orig maps back */
    char **av = malloc((size_t)(argc + 2) * sizeof *av), **orig = malloc((size_t)(argc + 2) * sizeof *orig);
    if (!av || !orig) {
        free(av), free(orig);
        fprintf(stderr, "tilesim %s: out of host memory\n", cmd->name);
        return CLI_EXIT_USAGE;
    }
    av[0] = orig[0] = (char *)"tilesim";
    for (int i = 0; i < argc; i++) {
        orig[i + 1] = argv[i];
        av[i + 1] = argv[i][0] == '-' && !is_option(argv[i]) ? (char *)operand_mark : argv[i];
    }
    av[argc + 1] = orig[argc + 1] = NULL;
    int rc = parse_words(cmd, argc + 1, av, specs, nspecs, out, orig);
    free(av), free(orig);
    return rc;
}

const char *cli_opt(const cli_args *a, const cli_optspec *specs, int nspecs, const char *name)
{
    int k = find_spec(specs, nspecs, name, strlen(name));
    return k < 0 ? NULL : a->val[k];
}

/* A path not there yet as its directory's real path and its last name
 * ("d/../new" and "./new" are one new file); "" when the directory is not. */
static void new_path(const char *p, char *out, size_t n)
{
    char dir[PATH_MAX], real[PATH_MAX];
    const char *slash = strrchr(p, '/'), *name = slash ? slash + 1 : p;
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - p) + (slash == p) : 1, slash ? p : ".");
    if (!realpath(dir, real)) {
        out[0] = '\0';
        return;
    }
    snprintf(out, n, "%s/%s", real, name);
}

int cli_same_file(const char *a, const char *b)
{
    if (!a || !b) return 0;
    if (!strcmp(a, b)) return 1;
    struct stat sa, sb;
    int ha = !stat(a, &sa), hb = !stat(b, &sb);
    if (ha && hb) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    if (ha || hb) return 0; /* one is there, the other not yet */
    char pa[PATH_MAX + 256], pb[PATH_MAX + 256];
    new_path(a, pa, sizeof pa);
    new_path(b, pb, sizeof pb);
    return pa[0] && !strcmp(pa, pb);
}

const char *cli_cut(const char *s, char *buf, size_t n)
{
    /* what the user typed or a file held, for a message: at most CLI_ECHO_MAX characters, and a control
     * character (a CR-only CSV's line ends) as '?', never sent to the terminal */
    size_t len = strlen(s);
    int plain = len <= CLI_ECHO_MAX;
    for (size_t i = 0; plain && i < len; i++) plain = (unsigned char)s[i] >= 0x20 && s[i] != 0x7f;
    if (plain || n < 4) return s;
    size_t keep = len < CLI_ECHO_MAX ? len : CLI_ECHO_MAX;
    if (keep > n - 4) keep = n - 4;
    kern_copy_name(buf, keep + 1, s); /* the kernel layer's printable copy: control characters as '?' */
    if (keep < len) strcat(buf, "...");
    return buf;
}

static int number_error(const cli_cmd *cmd, const char *what, const char *item, const char *whole_text, ex_num why,
                        int64_t lo, int64_t hi)
{
    char ctx[CLI_ECHO_MAX + 32] = "", cut[CLI_ECHO_MAX + 4];
    if (whole_text) snprintf(ctx, sizeof ctx, " in the list '%s'", cli_cut(whole_text, cut, sizeof cut));
    char item_cut[CLI_ECHO_MAX + 4];
    item = cli_cut(item, item_cut, sizeof item_cut);
    if (why == EX_NUM_NOT_WHOLE) return cli_fail(cmd, "%s: '%s'%s is not a whole number", what, item, ctx);
    if (why == EX_NUM_HIGH)
        return cli_fail(cmd, "%s: '%s'%s is too large; at most %lld", what, item, ctx, (long long)hi);
    if (lo == 1 && item[0] == '-')
        return cli_fail(cmd, "%s: '%s'%s is not positive; give a positive whole number", what, item, ctx);
    if (lo == 1) return cli_fail(cmd, "%s: '%s'%s must be positive", what, item, ctx);
    return cli_fail(cmd, "%s: '%s'%s is too small; give a whole number from %lld to %lld", what, item, ctx,
                    (long long)lo, (long long)hi);
}

int cli_start(const cli_cmd *cmd, int argc, char **argv, const cli_optspec *specs, int nspecs, cli_args *out)
{
    int rc = cli_parse(cmd, argc, argv, specs, nspecs, out);
    if (rc) return rc;
    if (!out->help) return -1;
    cli_help(cmd, stdout);
    return cli_finish_stdout(cmd, 0);
}

int cli_parse_int(const cli_cmd *cmd, const char *what, const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    ex_num why = ex_scan_int(s, strlen(s), lo, hi, out);
    return why ? number_error(cmd, what, s, NULL, why, lo, hi) : 0;
}

int cli_parse_count(const cli_cmd *cmd, const char *what, const char *s, int64_t max, int64_t *out)
{
    return cli_parse_int(cmd, what, s, 1, max, out);
}

int cli_count_items(const char *s)
{
    int n = 1;
    for (; *s; s++) n += *s == ',';
    return n;
}

int cli_parse_list(const cli_cmd *cmd, const char *what, const char *s, int64_t max, int64_t *out, int *n)
{
    *n = 0;
    const char *p = s;
    for (int item = 1;; item++) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == 0)
            return cli_fail(cmd, "%s: item %d of '%s' is empty; give comma-separated whole numbers like 128,256",
                            what, item, CLI_CUT(s));
        if (*n == CLI_MAX_LIST) return cli_fail(cmd, "%s: %d items; at most %d", what, cli_count_items(s), CLI_MAX_LIST);
        char text[64];
        snprintf(text, sizeof text, "%.*s", (int)(len < 63 ? len : 63), p);
        int64_t v;
        ex_num why = ex_scan_int(p, len, 1, max, &v);
        if (why) return number_error(cmd, what, text, strchr(s, ',') ? s : NULL, why, 1, max);
        for (int j = 0; j < *n; j++)
            if (out[j] == v) return cli_fail(cmd, "%s: %lld appears twice in '%s'", what, (long long)v, CLI_CUT(s));
        out[(*n)++] = v;
        if (!comma) return 0;
        p = comma + 1;
    }
}

int cli_parse_dtype(const cli_cmd *cmd, const char *s, pl_dtype *out)
{
    if (strcmp(s, "f32") == 0) *out = PL_F32;
    else if (strcmp(s, "bf16") == 0) *out = PL_BF16;
    else return cli_fail(cmd, "--dtype: '%s' is not a supported dtype; use f32 or bf16", CLI_CUT(s));
    return 0;
}

int cli_parse_vmem_limit(const cli_cmd *cmd, const char *s, int64_t *out)
{
    if (ex_scan_size(s, out) == 0) return 0; /* as examples/matmul takes it */
    /* a number of at most 0, with or without sim_parse_size's unit: say what a limit can be */
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end != s && v <= 0 && strchr("KMGT", *end))
        return cli_fail(cmd, "--vmem-limit: '%s' is not a limit: it must be more than 0 bytes; leave the option out "
                        "for the limit the call sets itself; " EX_SIZE_HINT, CLI_CUT(s));
    return cli_fail(cmd, "--vmem-limit: '%s' is not a size; " EX_SIZE_HINT, CLI_CUT(s));
}

int cli_check_vmem_limit(const cli_cmd *cmd, int64_t limit, const pl_chip *chip)
{
    if (limit <= chip->vmem_bytes) return 0;
    return cli_fail(cmd, "--vmem-limit %lld exceeds the %lld bytes of physical VMEM of a %s TensorCore, the most a "
                         "call can set (rule M4)", (long long)limit, (long long)chip->vmem_bytes, chip->name);
}
