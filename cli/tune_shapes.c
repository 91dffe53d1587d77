/* cli/tune_shapes.c: the shapes file of `tilesim tune` (cli/tune.h).
 *
 * A CSV file: the first line names parameters of the kernel (the shape:
 * "M,N,K"), each following line gives their values ("4096,4096,512"), as
 * --set takes them (a dtype parameter by name). Blank lines and lines
 * starting with '#' are skipped. Every error names the file, the line and
 * the column, and echoes at most CLI_ECHO_MAX characters of what it read.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "../sim/base/common.h" /* sim_text_skip_bom */
#include "../sim/base/outfile.h" /* sim_out_protect */
#include "tune.h"

#define SHAPES_MAX_BYTES (16 << 20)

/* The whole file, NUL-terminated: a regular file of at most 16 MiB with no
 * NUL byte. NULL after printing why. */
static char *read_text(const cli_cmd *cmd, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) return cli_fail(cmd, "--shapes: cannot read '%s': %s", path, strerror(errno)), NULL;
    if (!S_ISREG(st.st_mode)) return cli_fail(cmd, "--shapes: '%s' is not a regular file", path), NULL;
    if (st.st_size > SHAPES_MAX_BYTES)
        return cli_fail(cmd, "--shapes: '%s' is %lld bytes; at most %d", path, (long long)st.st_size,
                        SHAPES_MAX_BYTES), NULL;
    FILE *f = fopen(path, "rb");
    char *text = f ? malloc((size_t)st.st_size + 1) : NULL;
    size_t got = text ? fread(text, 1, (size_t)st.st_size, f) : 0;
    if (f) fclose(f);
    if (!text) return cli_fail(cmd, "--shapes: cannot read '%s': %s", path, f ? "out of host memory" : strerror(errno)),
               NULL;
    text[got] = '\0';
    sim_out_protect(path, "the shapes file");
    if (strlen(text) != got) {
        free(text);
        return cli_fail(cmd, "--shapes: '%s' has a NUL byte: not a text file", path), NULL;
    }
    sim_text_skip_bom(text, got);
    return text;
}

/* A quoted field left open, or text after its closing quote. */
static int bad_quote(const cli_cmd *cmd, const char *path, int line)
{
    return cli_fail(cmd, "%s:%d: " CLI_CSV_BAD, path, line);
}

static int header(const cli_cmd *cmd, const char *path, int line, char *text, const pl_kernel_def *d,
                  const int *fixed, tune_shapes *sh)
{
    int bad = 0;
    for (char *at = text; at;) {
        char *name = cli_csv_field(&at, &bad);
        if (bad) return bad_quote(cmd, path, line);
        int p = pl_kernel_param_index(d, name);
        if (!name[0]) return cli_fail(cmd, "%s:%d: column %d of the header is empty", path, line, sh->n_cols + 1);
        if (p < 0 && !strcasecmp(name, "chip"))
            return cli_fail(cmd, "%s:%d: a 'chip' column: tune takes one chip a run; split the file by chip and give "
                            "each --chip (or --chip-file)", path, line);
        if (p < 0) {
            char names[512] = "";
            for (int i = 0; i < d->n_params; i++)
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
                         d->params[i].name);
            return cli_fail(cmd, "%s:%d: '%s' is not a parameter of %s; its parameters are %s", path, line,
                            CLI_CUT(name), d->name, names);
        }
        for (int c = 0; c < sh->n_cols; c++)
            if (sh->col[c] == p) return cli_fail(cmd, "%s:%d: column '%s' is given twice", path, line, name);
        if (fixed[p])
            return cli_fail(cmd, "%s:%d: '%s' is a column of the shapes and also given --set or --vary; give it "
                            "in one place", path, line, name);
        sh->col[sh->n_cols++] = p;
    }
    return 0;
}

static int row(const cli_cmd *cmd, const char *path, int line, char *text, const pl_kernel_def *d, tune_shapes *sh)
{
    if (sh->n == TUNE_MAX_SHAPES)
        return cli_fail(cmd, "%s:%d: more than %d shapes; split the file", path, line, TUNE_MAX_SHAPES);
    int64_t tmp[PL_KDEF_MAX_PARAMS], *out = sh->values + (size_t)sh->n * PL_KDEF_MAX_PARAMS;
    pl_kernel_defaults(d, tmp);
    int c = 0, bad = 0;
    for (char *at = text; at; c++) {
        char *value = cli_csv_field(&at, &bad), one[64 + CLI_ECHO_MAX * 2 + 2] /* a name (64 at most, kdef_plugin.c) = value */, msg[PL_MSG_MAX];
        if (c == sh->n_cols)
            return cli_fail(cmd, "%s:%d: more than the header's %d columns", path, line, sh->n_cols);
        if (bad) return bad_quote(cmd, path, line);
        const char *name = d->params[sh->col[c]].name;
        if (!value[0]) return cli_fail(cmd, "%s:%d: column '%s' is empty", path, line, name);
        snprintf(one, sizeof one, "%s=%.*s", name, CLI_ECHO_MAX * 2, value);
        if (strlen(value) > CLI_ECHO_MAX * 2 || pl_kernel_set(d, tmp, one, msg, sizeof msg) != PL_OK)
            return cli_fail(cmd, "%s:%d: column '%s': %s", path, line, name,
                            strlen(value) > CLI_ECHO_MAX * 2 ? "the value is too long" : msg);
        out[c] = tmp[sh->col[c]];
    }
    if (c < sh->n_cols)
        return cli_fail(cmd, "%s:%d: %d column%s where the header has %d", path, line, c, c == 1 ? "" : "s",
                        sh->n_cols);
    /* a shape given before is tuned once: the table has one row per key (4096 copies of one shape took hours) */
    for (int s = 0; s < sh->n; s++)
        if (!memcmp(sh->values + (size_t)s * PL_KDEF_MAX_PARAMS, out, (size_t)sh->n_cols * sizeof *out)) {
            if (!sh->repeats++) sh->first_repeat = line, sh->repeated = sh->line[s];
            return 0;
        }
    sh->line[sh->n++] = line;
    return 0;
}

int tune_read_shapes(const cli_cmd *cmd, const char *path, const pl_kernel_def *d, const int *fixed, tune_shapes *sh)
{
    memset(sh, 0, sizeof *sh);
    char *text = read_text(cmd, path);
    if (!text) return CLI_EXIT_USAGE;
    int rc = 0, line = 0, have_header = 0;
    for (char *at = text; at && rc == 0;) {
        char *s = at, *nl = strchr(s, '\n');
        at = nl ? nl + 1 : NULL;
        if (nl) *nl = '\0';
        line++;
        s += strspn(s, " \t\r");
        if (!*s || *s == '#') continue;
        if (!have_header) {
            rc = header(cmd, path, line, s, d, fixed, sh);
            have_header = 1;
            continue;
        }
        if (!sh->values && !(sh->values = malloc((size_t)TUNE_MAX_SHAPES * PL_KDEF_MAX_PARAMS * sizeof *sh->values)))
            rc = 1, fprintf(stderr, "tilesim %s: out of host memory\n", cmd->name);
        if (rc == 0) rc = row(cmd, path, line, s, d, sh);
    }
    free(text);
    if (rc == 0 && !have_header) rc = cli_fail(cmd, "--shapes: '%s' has no header line (the parameter names)", path);
    if (rc == 0 && sh->n == 0) rc = cli_fail(cmd, "--shapes: '%s' has a header but no shape", path);
    if (rc) tune_shapes_free(sh);
    return rc;
}

void tune_shapes_free(tune_shapes *sh)
{
    free(sh->values);
    sh->values = NULL;
    sh->n = 0;
}
