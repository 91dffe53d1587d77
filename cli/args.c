/* cli/args.c: strict parsing of the command line: options, whole numbers,
 * lists, dtypes. Every failure prints what was wrong and where, through
 * cli_fail, and returns CLI_EXIT_USAGE. */
#include <ctype.h>
#include <string.h>

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
    if (nspecs == 0) return cli_fail(cmd, "unknown option '%s'; this command takes no options", word);
    return cli_fail(cmd, "unknown option '%s'; the options are %s, --help", word, known);
}

int cli_parse(const cli_cmd *cmd, int argc, char **argv, const cli_optspec *specs, int nspecs, cli_args *out)
{
    memset(out, 0, sizeof *out);
    int only_pos = 0;
    for (int i = 0; i < argc; i++) {
        const char *w = argv[i];
        if (only_pos || !is_option(w)) {
            if (out->npos == CLI_MAX_POS) return cli_fail(cmd, "too many arguments at '%s'", w);
            out->pos[out->npos++] = w;
            continue;
        }
        if (strcmp(w, "--") == 0) {
            only_pos = 1;
            continue;
        }
        if (strcmp(w, "--help") == 0 || strcmp(w, "-h") == 0) {
            out->help = 1;
            continue;
        }
        const char *eq = strchr(w, '=');
        size_t len = eq ? (size_t)(eq - w) : strlen(w);
        int k = find_spec(specs, nspecs, w, len);
        if (k < 0) {
            char name[64];
            snprintf(name, sizeof name, "%.*s", (int)(len < 63 ? len : 63), w);
            return unknown_option(cmd, name, specs, nspecs);
        }
        const char *name = specs[k].name;
        if (out->val[k]) return cli_fail(cmd, "%s: given twice", name);
        if (!specs[k].has_value) {
            if (eq) return cli_fail(cmd, "%s: takes no value, got '%s'", name, eq + 1);
            out->val[k] = "";
            continue;
        }
        if (eq) out->val[k] = eq + 1;
        else if (i + 1 >= argc) return cli_fail(cmd, "%s: missing value", name);
        else if (is_option(argv[i + 1])) return cli_fail(cmd, "%s: missing value (got the option '%s')", name, argv[i + 1]);
        else out->val[k] = argv[++i];
        if (!out->val[k][0]) return cli_fail(cmd, "%s: empty value", name);
    }
    return 0;
}

const char *cli_opt(const cli_args *a, const cli_optspec *specs, int nspecs, const char *name)
{
    int k = find_spec(specs, nspecs, name, strlen(name));
    return k < 0 ? NULL : a->val[k];
}

/* 0: ok; 1: not a whole number; 2: zero; 3: too large */
static int whole(const char *s, size_t len, int64_t max, int64_t *out)
{
    if (len == 0) return 1;
    int64_t v = 0;
    int big = 0;
    for (size_t i = 0; i < len; i++) {
        if (!isdigit((unsigned char)s[i])) return 1;
        if (!big) {
            v = v * 10 + (s[i] - '0');
            if (v > max) big = 1;
        }
    }
    if (big) return 3;
    if (v == 0) return 2;
    *out = v;
    return 0;
}

static int all_digits(const char *s)
{
    if (!*s) return 0;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s)) return 0;
    return 1;
}

static int number_error(const cli_cmd *cmd, const char *what, const char *item, const char *whole_text, int why,
                        int64_t max)
{
    char ctx[160] = "";
    if (whole_text) snprintf(ctx, sizeof ctx, " in the list '%.120s'", whole_text);
    if (why == 1 && item[0] == '-' && all_digits(item + 1))
        return cli_fail(cmd, "%s: '%s'%s is not positive; give a positive whole number", what, item, ctx);
    if (why == 1) return cli_fail(cmd, "%s: '%s'%s is not a whole number", what, item, ctx);
    if (why == 2) return cli_fail(cmd, "%s: '%s'%s must be positive", what, item, ctx);
    return cli_fail(cmd, "%s: '%s'%s is too large; at most %lld", what, item, ctx, (long long)max);
}

int cli_start(const cli_cmd *cmd, int argc, char **argv, const cli_optspec *specs, int nspecs, cli_args *out)
{
    int rc = cli_parse(cmd, argc, argv, specs, nspecs, out);
    if (rc) return rc;
    if (!out->help) return -1;
    cli_help(cmd, stdout);
    return cli_finish_stdout(cmd, 0);
}

int cli_parse_count(const cli_cmd *cmd, const char *what, const char *s, int64_t max, int64_t *out)
{
    int why = whole(s, strlen(s), max, out);
    return why ? number_error(cmd, what, s, NULL, why, max) : 0;
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
                            what, item, s);
        if (*n == CLI_MAX_LIST) return cli_fail(cmd, "%s: '%.60s...' has more than %d items", what, s, CLI_MAX_LIST);
        char text[64];
        snprintf(text, sizeof text, "%.*s", (int)(len < 63 ? len : 63), p);
        int64_t v;
        int why = whole(p, len, max, &v);
        if (why) return number_error(cmd, what, text, strchr(s, ',') ? s : NULL, why, max);
        for (int j = 0; j < *n; j++)
            if (out[j] == v) return cli_fail(cmd, "%s: %lld appears twice in '%s'", what, (long long)v, s);
        out[(*n)++] = v;
        if (!comma) return 0;
        p = comma + 1;
    }
}

int cli_parse_dtype(const cli_cmd *cmd, const char *s, pl_dtype *out)
{
    if (strcmp(s, "f32") == 0) *out = PL_F32;
    else if (strcmp(s, "bf16") == 0) *out = PL_BF16;
    else return cli_fail(cmd, "--dtype: '%s' is not a supported dtype; use f32 or bf16", s);
    return 0;
}
