/* cli/memview.c: `tilesim memory KERNEL`: the memory viewer of one
 * configuration (sim/tilesim_memview.h): VMEM live over the grid steps, the
 * peak and what is live at it, against the scoped limit and the physical
 * VMEM; the HBM arrays. Text (or --json) on stdout, --svg FILE for the
 * chart, --json-file FILE for the JSON beside the text.
 *
 * A verb of its own rather than options of `run`: the view needs only the
 * walk, so it runs cost-only (any size, no data, no reference check) and
 * its output replaces the report rather than following it; `run` stays as
 * it was. --svg and --json-file are taken out of argv here, before the
 * shared parser sees the options common to the kernel verbs.
 *
 * Exit status: 0 success, 1 out of host memory, 2 a bad command line, an
 * unwritable file or a configuration the call rejects (its rule named). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/kdef/kdef_internal.h"
#include "../sim/base/outfile.h"
#include "../sim/tilesim_memview.h"
#include "cli.h"

#define MEM_OPTS (K_SET | K_CHIP | K_CHIP_FILE | K_JSON | K_VMEM_LIMIT)

const cli_cmd cli_memory_cmd = {
    "memory", "tilesim memory KERNEL [--set name=value ...] [--svg FILE] [--json | --json-file FILE]",
    "tilesim memory KERNEL|PLUGIN.so[:NAME] [--set name=value ...] [--chip NAME | --chip-file F] [--json] "
    "[--svg FILE] [--json-file FILE] [--vmem-limit BYTES]",
    NULL, cli_memory_help};

void cli_memory_help(const cli_cmd *cmd, FILE *f)
{
    (void)cmd;
    fprintf(f, "usage: %s\n\n", cli_memory_cmd.synopsis);
    fprintf(f, "The memory viewer of one configuration, as XProf's: VMEM in use over the grid steps (program\n"
               "order), each buffer slot of each operand (two under double buffering) and each scratch buffer;\n"
               "the peak, the step it is reached at and what is live there; against the scoped VMEM limit and\n"
               "the physical VMEM; and the HBM arrays of the call. Runs cost-only: no data, no reference check.\n");
    cli_kopt_help(MEM_OPTS, f);
    fprintf(f, "  %-24s %s\n  %-24s %s\n", "--svg FILE", "write the chart: VMEM per step, stacked, the limits, the peak",
            "--json-file FILE", "write the view as JSON (the text still goes to stdout)");
    fprintf(f, "KERNEL is a built-in name ('tilesim list'), PLUGIN.so (a plugin with one kernel) or\n"
               "PLUGIN.so:NAME.\n");
}

/* Take "--svg F", "--svg=F", "--json-file F", "--json-file=F" out of argv
 * into *svg and *json; the rest go to out (n of them). A value of --set,
 * --chip or --chip-file is skipped over, whatever it looks like. */
static int take_files(int argc, char **argv, char **out, int *n, const char **svg, const char **json)
{
    static const char *const names[] = {"--svg", "--json-file"};
    *n = 0;
    for (int i = 0; i < argc; i++) {
        int hit = -1;
        size_t len = 0;
        for (int k = 0; k < 2; k++) {
            len = strlen(names[k]);
            if (strncmp(argv[i], names[k], len) == 0 && (argv[i][len] == '\0' || argv[i][len] == '=')) {
                hit = k;
                break;
            }
        }
        if (hit < 0) {
            out[(*n)++] = argv[i];
            int takes = !strcmp(argv[i], "--set") || !strcmp(argv[i], "--chip") || !strcmp(argv[i], "--chip-file");
            if (takes && i + 1 < argc) out[(*n)++] = argv[++i];
            continue;
        }
        const char *v = argv[i][len] == '=' ? argv[i] + len + 1 : i + 1 < argc ? argv[++i] : NULL;
        if (!v || !v[0]) return cli_fail(&cli_memory_cmd, "%s: missing value; see 'tilesim memory --help'", names[hit]);
        const char **dst = hit == 0 ? svg : json;
        if (*dst) return cli_fail(&cli_memory_cmd, "%s given twice", names[hit]);
        *dst = v;
    }
    return 0;
}

/* Opened before the run (a bad path fails at once) as a temporary file
 * beside it (sim/base/outfile.h): a failed run leaves the path as it was. */
static sim_out *open_out(const char *path, const char *what, int *rc)
{
    if (!path) return NULL;
    char msg[PL_MSG_MAX];
    sim_out *f = sim_out_open(path, msg, sizeof msg);
    if (!f) *rc = cli_fail(&cli_memory_cmd, "%s: %s", what, msg);
    return f;
}

/* Write one file of the complete view and put it in place; on any failure
 * before, only the temporary file goes. */
static int finish_out(sim_out *f, const char *what, int rc, int (*draw)(const pl_memview *, FILE *),
                      const pl_memview *mv)
{
    if (!f) return rc;
    if (rc) return sim_out_abort(f), rc;
    char msg[PL_MSG_MAX];
    if (draw(mv, f->f) != PL_OK) {
        rc = cli_fail(&cli_memory_cmd, "%s: error writing '%s'", what, f->path);
        sim_out_abort(f);
    } else if (sim_out_commit(f, msg, sizeof msg))
        rc = cli_fail(&cli_memory_cmd, "%s: %s", what, msg);
    return rc;
}

/* Run d at v cost-only with the recorder, then build the view; on failure
 * rep->error says why (the teaching page's memory viewer too: cli/html.c). */
int cli_memview_of(const pl_kernel_def *d, const int64_t *v, pl_options *opt, pl_memview *mv, pl_report *rep)
{
    opt->cost_only = 1;
    int st = pl_memview_recorder(mv, opt);
    if (st != PL_OK) return snprintf(rep->error, sizeof rep->error, "%s", mv->error), st;
    pl_kernel_build *b = calloc(1, sizeof *b);
    if (!b) return snprintf(rep->error, sizeof rep->error, "out of host memory"), PL_ENOMEM;
    st = sim_kdef_prepare(d, v, opt, b, rep->error, sizeof rep->error); /* the arrays' shapes and aliases */
    /* the viewer keeps at most 2^20 steps: a grid past that is refused before a walk of minutes */
    double steps = 1;
    for (int a = 0; st == PL_OK && a < b->call.grid_rank; a++) steps *= (double)b->call.grid[a];
    if (st == PL_OK && steps > (double)(1 << 20))
        st = PL_EINVAL, snprintf(rep->error, sizeof rep->error, "the memory viewer keeps at most %d steps and this "
                                 "configuration has %.0f; view one with larger blocks (fewer grid steps)", 1 << 20,
                                 steps);
    if (st == PL_OK) st = pl_kernel_run(d, v, opt, rep, NULL, NULL);
    if (st == PL_OK && (st = pl_memview_finish(mv, &b->call, b->args, b->outs, rep)) != PL_OK)
        snprintf(rep->error, sizeof rep->error, "%s", mv->error);
    free(b);
    return st;
}

int cli_memory(int argc, char **argv)
{
    const cli_cmd *cmd = &cli_memory_cmd;
    char **rest = calloc((size_t)argc + 2, sizeof *rest); /* rest[0]: the verb, as the parser wants */
    if (!rest) return fprintf(stderr, "tilesim memory: out of host memory\n"), 1;
    const char *svg_path = NULL, *js_path = NULL;
    rest[0] = argv[-1];
    int n, rc = take_files(argc, argv, rest + 1, &n, &svg_path, &js_path);
    cli_kopts o;
    const pl_kernel_def *d;
    int64_t v[PL_KDEF_MAX_PARAMS];
    pl_chip file_chip;
    pl_options opt;
    if (!rc) rc = cli_kernel_setup(cmd, MEM_OPTS, n, rest + 1, &o, &d, v, &file_chip, &opt);
    free(rest);
    if (rc >= 0) return rc;
    if (o.json && js_path) return cli_fail(cmd, "--json and --json-file exclude each other; give one");
    if (svg_path && js_path && cli_same_file(svg_path, js_path)) /* the second would replace the first */
        return cli_fail(cmd, "--svg and --json-file name the same file '%s': give each its own", CLI_CUT(js_path));
    rc = 0;
    sim_out *svg = open_out(svg_path, "--svg", &rc), *js = rc ? NULL : open_out(js_path, "--json-file", &rc);
    pl_report *rep = rc ? NULL : calloc(1, sizeof *rep);
    pl_memview mv;
    memset(&mv, 0, sizeof mv);
    if (!rc && !rep) rc = 1, fprintf(stderr, "tilesim memory: out of host memory\n");
    int st = rc ? PL_OK : cli_memview_of(d, v, &opt, &mv, rep);
    if (!rc && st != PL_OK) {
        char label[512];
        pl_kernel_format(d, v, label, sizeof label);
        fprintf(stderr, "tilesim memory: %s %s: %s\n", d->name, label, rep->error);
        cli_vmem_hint(rep, stderr);
        rc = st == PL_ENOMEM ? 1 : 2;
    }
    rc = finish_out(svg, "--svg", rc, pl_memview_svg, &mv);
    rc = finish_out(js, "--json-file", rc, pl_memview_json, &mv);
    if (!rc) {
        if (o.json) pl_memview_json(&mv, stdout);
        else {
            pl_mesh mesh;
            char shape[64], msg[PL_MSG_MAX];
            if (d->mesh && pl_kernel_def_mesh(d, v, &mesh, msg, sizeof msg) == PL_OK) /* SPMD: one device's */
                fprintf(stdout, "mesh kernel on a %s: device 0's memory (every device holds the same buffers)\n\n",
                        pl_mesh_format(&mesh, shape, sizeof shape));
            pl_memview_print(&mv, stdout);
        }
        if (!o.json && svg_path) fprintf(stdout, "\nchart: %s\n", svg_path);
        if (!o.json && js_path) fprintf(stdout, "%sjson: %s\n", svg_path ? "" : "\n", js_path);
    }
    pl_memview_free(&mv);
    free(rep);
    return cli_finish_stdout(cmd, rc);
}
