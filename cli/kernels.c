/* cli/kernels.c: what the verbs over any kernel share: options parsed with
 * getopt_long (one table, each option with its sentence for --help), the
 * kernel a KERNEL word names (built-in or plugin), parameter values from
 * --set, the run options; and `tilesim list`.
 *
 * getopt_long keeps state between calls; tilesim_main may run many times in
 * one process (the fuzz harness), so every parse starts with optind = 0,
 * which makes glibc reinitialise it. opterr is 0: errors are ours, naming
 * the option and pointing to 'tilesim VERB --help'. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../examples/kernels/registry.h"
#include "../examples/kernels/mesh_progs.h"
#include "../sim/base/outfile.h"
#include "cli.h"

const cli_cmd cli_list_cmd = {"list", "tilesim list [KERNEL | PLUGIN.so]", "tilesim list [KERNEL | PLUGIN.so]", NULL, cli_khelp};
const cli_cmd cli_run_cmd = {"run", "tilesim run KERNEL [--set name=value ...] [options]",
                             "tilesim run KERNEL|PLUGIN.so[:NAME] [--set name=value ...] [--chip NAME | --chip-file F] "
                             "[--cost-only] [--json] [--trace FILE] [--html FILE] [--trace-limit BYTES] [--vmem-report] "
                             "[--vmem-limit BYTES] [--strict] [--seed N] [--host-threads N] [--check-dma-modes]", NULL, cli_khelp};
const cli_cmd cli_verify_cmd = {"verify", "tilesim verify KERNEL [--set name=value ...] [options]",
                                "tilesim verify KERNEL|PLUGIN.so[:NAME] [--set name=value ...] [--chip NAME | "
                                "--chip-file F] [--seed N] [--heatmap FILE.svg] [--output NAME] [--host-threads N] "
                                "[--vmem-limit BYTES] [--check-dma-modes] [--strict]", NULL, cli_khelp};

typedef struct kopt {
    struct option o;
    unsigned mask;
    const char *arg, *help;
} kopt;

static const kopt table[] = {
    {{"set", 1, 0, 's'}, K_SET, "NAME=VALUE", "set a parameter (repeatable; see 'tilesim list' for the names)"},
    {{"vary", 1, 0, 'v'}, K_VARY, "NAME=V1,V2,...", "sweep a parameter over these values (repeatable; the product "
                                                    "of all --vary lists is run; a parameter not varied keeps its "
                                                    "--set value or its default)"},
    {{"chip", 1, 0, 'c'}, K_CHIP, "NAME", "a chip preset (see 'tilesim chips'; default v5e)"},
    {{"chip-file", 1, 0, 'f'}, K_CHIP_FILE, "FILE", "a what-if chip file instead of a preset"},
    {{"cost-only", 0, 0, 'C'}, K_COST, NULL, "model the time and traffic only: no data, no reference check"},
    {{"json", 0, 0, 'j'}, K_JSON, NULL, "print one JSON object instead of text"},
    {{"csv", 0, 0, 'v' + 256}, K_CSV, NULL, "print CSV, one row per configuration"},
    {{"trace", 1, 0, 't'}, K_TRACE, "FILE", "write a Chrome trace-event JSON (open it in Perfetto)"},
    {{"html", 1, 0, 'w'}, K_HTML, "FILE", "write the teaching page: the grid walk step by step, the timeline "
                                          "(one self-contained HTML file)"},
    {{"trace-limit", 1, 0, 't' + 256}, K_TRACE | K_HTML, "BYTES", "refuse a trace (or a page's timeline) "
                                                                   "estimated larger than this, before writing "
                                                                   "anything (64M, 1G, none; default 256M)"},
    {{"vmem-report", 0, 0, 'V'}, K_VMEM_REPORT, NULL, "list the scoped VMEM allocations as XLA does when a "
                                                       "program runs out of VMEM (always printed when it does)"},
    {{"vmem-limit", 1, 0, 'L'}, K_VMEM_LIMIT, "BYTES", "the scoped VMEM limit of the call (its vmem_limit_bytes, "
                                                      "rule M4), in place of the one the kernel sets or the chip's "
                                                      "default; at most the chip's physical VMEM (bytes, or 96M, 96MiB)"},
    {{"strict", 0, 0, 'S'}, K_STRICT, NULL, "make every warning of the checks an error, and a MARGINAL "
                                             "result exit 1 (rule V5)"},
    {{"check-dma-modes", 0, 0, 'D'}, K_DMA_MODES, NULL, "run twice, manual copies moving their data at start and "
                                                        "when waited: outputs that differ mean a read before a "
                                                        "wait (M7, M8; exit 1)"},
    {{"seed", 1, 0, 'e'}, K_SEED, "N", "seed of the generated inputs (default 0); nonzero also visits each parallel axis in an order shuffled by it, which shows grid points that wrongly depend on one another (rule V4)"},
    {{"svg", 1, 0, 'g'}, K_SVG, "FILE", "also write a roofline plot of the legal configurations"},
    {{"top", 1, 0, 'T'}, K_TOP, "N", "show only the N fastest legal configurations"},
    {{"heatmap", 1, 0, 'H'}, K_HEATMAP, "FILE.svg", "write the error per output block as an SVG heatmap"},
    {{"threads", 1, 0, 'n'}, K_THREADS, "N", "host threads (default: one per core)"},
    {{"host-threads", 1, 0, 'n' + 256}, K_HOST_THREADS, "N", "host threads for a megacore chip's TensorCores (G4; "
                                                            "default one per core, up to the host's; 1 walks them "
                                                            "in order): the results are the same"},
    {{"output", 1, 0, 'o'}, K_OUTPUT, "NAME", "the output the heatmap draws, by name or index (default 0)"},
    {{"shapes", 1, 0, 'P'}, K_SHAPES, "FILE.csv", "the shapes to tune: a header of parameter names, then one line "
                                                  "of values per shape"},
    {{"out", 1, 0, 'O'}, K_OUT_FILE, "FILE", "(or -o FILE) write the result to FILE (tune: the table; calibrate: "
                                              "the chip file)"},
    {{"fit", 1, 0, 'F'}, K_FIT, "LIST", "the figures to fit, comma-separated (default: every one the chip has)"},
    {{"help", 0, 0, 'h'}, 0, NULL, "print this help"},
};
enum { NTABLE = sizeof table / sizeof *table };

static const char *verb_text(const cli_cmd *cmd)
{
    if (cmd == &cli_list_cmd)
        return "List the built-in kernels (one of them, given its name; or a plugin's), each with its summary and\n"
               "parameters: name, default, the candidates a sweep tries, and what it means.\n";
    if (cmd == &cli_run_cmd)
        return "Run one configuration of a kernel (its defaults, changed by --set), check every output against\n"
               "the kernel's reference (the verdict, and the worst block with the grid points that wrote it)\n"
               "and print the report. Exit 0 PASS (or MARGINAL: its last line says so; --strict: 1), 1 wrong\n"
               "result, 2 rejected or a bad command line.\n";
    if (cmd == &cli_verify_cmd)
        return "Run one configuration and compare every output with the kernel's reference, output by output;\n"
               "--heatmap draws the worst error per output block. Exit 0 PASS (or MARGINAL; --strict: 1), 1 FAIL,\n"
               "2 rejected.\n";
    return "";
}

void cli_kopt_help(unsigned mask, FILE *f)
{
    for (int i = 0; i < NTABLE; i++) {
        if (table[i].mask && !(table[i].mask & mask)) continue;
        char left[64];
        snprintf(left, sizeof left, "--%s%s%s", table[i].o.name, table[i].arg ? " " : "",
                 table[i].arg ? table[i].arg : "");
        fprintf(f, "  %-24s %s\n", left, table[i].help);
    }
}

void cli_khelp(const cli_cmd *cmd, FILE *f)
{
    static const unsigned masks[] = {0, K_RUN_OPTS, K_VERIFY_OPTS};
    unsigned mask = cmd == &cli_run_cmd ? masks[1] : cmd == &cli_verify_cmd ? masks[2] : masks[0];
    fprintf(f, "usage: %s\n\n%s", cmd->synopsis, verb_text(cmd));
    cli_kopt_help(mask, f);
    if (cmd != &cli_list_cmd)
        fprintf(f, "KERNEL is a built-in name ('tilesim list'), PLUGIN.so (a plugin with one kernel) or\n"
                   "PLUGIN.so:NAME.\n");
    if (cmd != &cli_run_cmd) return;
    fprintf(f, "\nThe mesh programs run too, with their own options ('tilesim run NAME --help'), and in the\n"
               "MPI build across ranks ('mpirun -n 4 tilesim-mpi run ring_allreduce --devices 64'):\n");
    for (const ex_mesh_prog *p = ex_mesh_progs; p->name; p++)
        fprintf(f, "  %-18s %s%s\n", p->name, p->summary,
                ex_mesh_kernel_find(p->name) ? " (also a mesh kernel: sweep, profile, run --set, --html)" : "");
}

static int store(const cli_cmd *cmd, int code, const char *arg, cli_kopts *o)
{
    int rc = 0;
    switch (code) {
    case 's':
    case 'v': {
        int *n = code == 's' ? &o->n_sets : &o->n_varies;
        if (*n == CLI_MAX_SETS) return cli_fail(cmd, "--%s: given more than %d times", code == 's' ? "set" : "vary",
                                                CLI_MAX_SETS);
        (code == 's' ? o->sets : o->varies)[(*n)++] = arg;
        break;
    }
    case 'c': o->chip = arg; break;
    case 'f': o->chip_file = arg; break;
    case 'C': o->cost_only = 1; break;
    case 'j': o->json = 1; break;
    case 'v' + 256: o->csv = 1; break;
    case 't': o->trace = arg; break;
    case 'w': o->html = arg; break;
    case 't' + 256:
        if (sim_parse_size(arg, &o->trace_limit))
            rc = cli_fail(cmd, "--trace-limit: want a size in bytes (1000000, 64M, 1G) or none, got '%s'", arg);
        break;
    case 'V': o->vmem_report = 1; break;
    case 'S': o->strict = 1; break;
    case 'D': o->check_dma_modes = 1; break;
    case 'g': o->svg = arg; break;
    case 'H': o->heatmap = arg; break;
    case 'o': o->output = arg; break;
    case 'P': o->shapes = arg; break;
    case 'O': o->out_file = arg; break;
    case 'F': o->fit = arg; break;
    /* 0 is the default the help states, so it can be given too */
    case 'e': rc = cli_parse_int(cmd, "--seed", arg, 0, INT64_MAX / 2, &o->seed), o->has_seed = 1; break;
    case 'T': rc = cli_parse_count(cmd, "--top", arg, 1 << 20, &o->top); break;
    case 'n': rc = cli_parse_count(cmd, "--threads", arg, 1024, &o->threads); break;
    case 'n' + 256: rc = cli_parse_count(cmd, "--host-threads", arg, 1024, &o->host_threads); break;
    case 'L': rc = cli_parse_vmem_limit(cmd, arg, &o->vmem_limit); break;
    }
    return rc;
}

int cli_kparse(const cli_cmd *cmd, unsigned allowed, int argc, char **argv, cli_kopts *o)
{
    struct option longs[NTABLE + 1];
    for (int i = 0; i < NTABLE; i++) longs[i] = table[i].o;
    memset(&longs[NTABLE], 0, sizeof longs[NTABLE]);
    memset(o, 0, sizeof *o);
    optind = 0; /* glibc: start afresh, whatever an earlier call left */
    opterr = 0;
    int code, idx, help = 0;
    unsigned char seen[512] = {0}; /* by code: a value given twice is refused, not the last one taken */
    /* -o is short for --out where a verb writes a file (tune); verify's --output has no short form */
    const char *shorts = allowed & K_OUT_FILE ? ":ho:" : ":h";
    while ((idx = -1, code = getopt_long(argc, argv, shorts, longs, &idx)) != -1) {
        if (code == 'o' && idx < 0) code = 'O';
        char opt_name[64] = ""; /* for a long option its name, not its value */
        if (idx >= 0) snprintf(opt_name, sizeof opt_name, "--%s", longs[idx].name);
        else if (code == 'O') snprintf(opt_name, sizeof opt_name, "-o"); /* its value may be '' */
        /* a letter of "-xy": optind still points at the cluster until its last letter */
        else if (optopt > 0 && optopt < 128 && strncmp(argv[optind - 1], "--", 2) != 0)
            snprintf(opt_name, sizeof opt_name, "-%c", optopt);
        const char *word = idx >= 0 || opt_name[0] == '-' ? opt_name : argv[optind - 1];
        /* the word as typed (getopt_long has moved it just before optind): unique prefixes
         * ("--he" for --heatmap) are refused, so that a typo never names another option */
        const char *typed = optarg && optind >= 2 && argv[optind - 1] == optarg ? argv[optind - 2] : argv[optind - 1];
        if (idx >= 0 && strncmp(typed, "--", 2) == 0 && strcspn(typed + 2, "=") != strlen(longs[idx].name))
            return cli_fail(cmd, "unknown option '%.*s'; see 'tilesim %s --help'", (int)strcspn(typed, "="), typed,
                            cmd->name);
        if (code == '?' && strncmp(word, "--", 2) == 0 && strchr(word, '='))
            return cli_fail(cmd, "%.*s: takes no value, got '%s'; see 'tilesim %s --help'",
                            (int)(strchr(word, '=') - word), word, CLI_CUT(strchr(word, '=') + 1), cmd->name);
        if (code == '?') return cli_fail(cmd, "unknown option '%s'; see 'tilesim %s --help'", CLI_CUT(word), cmd->name);
        if (code == ':') return cli_fail(cmd, "%s: missing value; see 'tilesim %s --help'", word, cmd->name);
        if (code == 'h') {
            help = 1;
            continue;
        }
        unsigned mask = 0;
        for (int i = 0; i < NTABLE; i++)
            if (table[i].o.val == code) mask = table[i].mask;
        if (!(mask & allowed))
            return cli_fail(cmd, "'%s' is not an option of %s; see 'tilesim %s --help'", CLI_CUT(word), cmd->name,
                            cmd->name);
        if (optarg && !optarg[0])
            return cli_fail(cmd, "%s: empty value", word);
        if (optarg && code != 's' && code != 'v' && code >= 0 && code < 512 && seen[code]++)
            return cli_fail(cmd, "%s: given twice; give it once (--set and --vary repeat)", word);
        int rc = store(cmd, code, optarg, o);
        if (rc) return rc;
    }
    for (int i = optind; i < argc; i++) {
        if (o->npos == 4) return cli_fail(cmd, "unexpected argument '%s'", CLI_CUT(argv[i]));
        o->pos[o->npos++] = argv[i];
    }
    if (help) {
        cli_help(cmd, stdout);
        return cli_finish_stdout(cmd, 0);
    }
    if (o->csv && o->json) return cli_fail(cmd, "--csv and --json exclude each other; give one");
    /* a parameter set twice would take the last value quietly: refused, as any other option given twice */
    for (int i = 0; i < o->n_sets + o->n_varies; i++)
        for (int j = i + 1; j < o->n_sets + o->n_varies; j++) {
            const char *a = i < o->n_sets ? o->sets[i] : o->varies[i - o->n_sets];
            const char *b = j < o->n_sets ? o->sets[j] : o->varies[j - o->n_sets];
            size_t la = strcspn(a, "="), lb = strcspn(b, "=");
            if (la == lb && !strncmp(a, b, la) && (strcmp(a, b) || j >= o->n_sets)) /* the same --set again is harmless */
                return cli_fail(cmd, "%s %s and %s %s: '%.*s' given twice; give it once",
                                i < o->n_sets ? "--set" : "--vary", CLI_CUT(a), j < o->n_sets ? "--set" : "--vary",
                                CLI_CUT(b), (int)la, a);
        }
    return -1;
}

/* ---- which kernel ------------------------------------------------------------------ */

static void builtin_names(char *buf, size_t n)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < ex_kernel_count() && at < n; i++)
        at += (size_t)snprintf(buf + at, n - at, "%s%s", i ? ", " : "", ex_kernel_at(i)->name);
}

/* "x.so" or "x.so:NAME": a path to a shared object. */
static int is_plugin(const char *spec) { return strstr(spec, ".so") != NULL || strchr(spec, '/') != NULL; }

static int cli_plugin_defs(const cli_cmd *cmd, const char *path, const pl_kernel_def *const **defs, int *n)
{
    char msg[PL_MSG_MAX];
    *n = pl_plugin_load(path, defs, msg, sizeof msg);
    if (*n < 0) return cli_fail(cmd, "%s", msg);
    if (*n == 0) return cli_fail(cmd, "plugin '%s' defines no kernel", path);
    return 0;
}

int cli_find_kernel(const cli_cmd *cmd, const char *spec, const pl_kernel_def **out)
{
    if (!is_plugin(spec)) {
        if ((*out = ex_kernel_find(spec)) || (*out = ex_mesh_kernel_find(spec))) return 0;
        char names[512];
        builtin_names(names, sizeof names);
        return cli_fail(cmd, "unknown kernel '%s'; the kernels are %s (or give PLUGIN.so[:NAME]; see 'tilesim list')",
                        CLI_CUT(spec), names);
    }
    char path[1024];
    const char *colon = strrchr(spec, ':'), *name = NULL;
    if (colon && colon > strstr(spec, ".so")) name = colon + 1;
    snprintf(path, sizeof path, "%.*s", name ? (int)(colon - spec) : (int)strlen(spec), spec);
    const pl_kernel_def *const *defs;
    int n, rc = cli_plugin_defs(cmd, path, &defs, &n);
    if (rc) return rc;
    char names[512] = "";
    for (int i = 0, at = 0; i < n && at < (int)sizeof names; i++) {
        if (name && strcmp(defs[i]->name, name) == 0) return *out = defs[i], 0;
        at += snprintf(names + at, sizeof names - (size_t)at, "%s%s", i ? ", " : "", defs[i]->name);
    }
    if (name) return cli_fail(cmd, "plugin '%s' has no kernel '%s'; it has %s", path, name, names);
    if (n > 1) return cli_fail(cmd, "plugin '%s' has %d kernels (%s): name one as %s:NAME", path, n, names, path);
    *out = defs[0];
    return 0;
}

int cli_kernel_values(const cli_cmd *cmd, const pl_kernel_def *d, const cli_kopts *o, const pl_chip *chip,
                      int64_t *v)
{
    char msg[PL_MSG_MAX];
    pl_kernel_defaults_on(d, chip, v);
    for (int i = 0; i < o->n_sets; i++)
        if (pl_kernel_set(d, v, o->sets[i], msg, sizeof msg) != PL_OK)
            return cli_fail(cmd, "--set %s: %s; see 'tilesim list' for %s's parameters", CLI_CUT(o->sets[i]), msg,
                            d->name);
    return 0;
}

int cli_kernel_options(const cli_cmd *cmd, const cli_kopts *o, pl_chip *file_chip, pl_options *opt)
{
    const pl_chip *chip;
    /* two outputs into one file: the second would replace the first, silently */
    const char *outs[] = {o->trace, o->html, o->svg, o->heatmap, o->out_file};
    const char *names[] = {"--trace", "--html", "--svg", "--heatmap", "-o"};
    for (int i = 0; i < 5; i++)
        for (int j = i + 1; j < 5; j++) {
            if (outs[i] && outs[j] && cli_same_file(outs[i], outs[j]))
                return cli_fail(cmd, "%s and %s name the same file '%s': give each its own", names[i], names[j],
                                CLI_CUT(outs[j]));
        }
    int rc = cli_select_chip(cmd, o->chip, o->chip_file, file_chip, &chip);
    if (rc) return rc;
    /* a path that cannot be written is said before the run, not after it (a missing directory, or an input
     * read above: the chip file, the plugin) */
    for (int i = 0; i < 5; i++) {
        char why[512];
        if (outs[i] && sim_out_probe(outs[i], why, sizeof why)) return cli_fail(cmd, "%s: %s", names[i], why);
    }
    memset(opt, 0, sizeof *opt);
    opt->chip_spec = chip;
    opt->cost_only = o->cost_only;
    opt->strict = o->strict;
    opt->seed = (uint64_t)o->seed;
    opt->trace_path = o->trace;
    opt->trace_limit_bytes = o->trace_limit;
    opt->host_threads = (int)o->host_threads;
    opt->vmem_limit_bytes = o->vmem_limit;
    opt->check_dma_modes = o->check_dma_modes;
    return cli_check_vmem_limit(cmd, o->vmem_limit, chip); /* refused before any run */
}

/* ---- tilesim list ------------------------------------------------------------------- */

/* The presets whose defaults differ from the declared ones (chip_defaults):
 * "  on v7x: wdtype = f8e4m3" */
static void print_chip_defaults(const pl_kernel_def *d, FILE *f)
{
    if (!d->chip_defaults) return;
    int64_t base[PL_KDEF_MAX_PARAMS], v[PL_KDEF_MAX_PARAMS];
    pl_kernel_defaults(d, base);
    for (int i = 0; pl_chip_at(i); i++) {
        pl_kernel_defaults_on(d, pl_chip_at(i), v);
        int said = 0;
        for (int p = 0; p < d->n_params; p++) {
            if (v[p] == base[p]) continue;
            char val[32];
            if (d->params[p].kind == PL_PARAM_DTYPE) snprintf(val, sizeof val, "%s", pl_dtype_name((pl_dtype)v[p]));
            else snprintf(val, sizeof val, "%lld", (long long)v[p]);
            if (!said++) fprintf(f, "  defaults on %s: ", pl_chip_at(i)->name);
            else fputs(", ", f);
            fprintf(f, "%s = %s", d->params[p].name, val);
        }
        if (said) fputc('\n', f);
    }
}

static void print_def(const pl_kernel_def *d, FILE *f)
{
    int w = 4;
    for (int p = 0; p < d->n_params; p++)
        if (d->params[p].name && (int)strlen(d->params[p].name) > w) w = (int)strlen(d->params[p].name);
    fprintf(f, "%s: %s\n", d->name, d->summary ? d->summary : "");
    if (d->mesh) {
        int64_t v[PL_KDEF_MAX_PARAMS];
        pl_mesh mesh;
        char shape[64], msg[PL_MSG_MAX];
        pl_kernel_defaults(d, v);
        fprintf(f, "  a mesh kernel: runs SPMD on every device of its mesh (%s at the defaults)\n",
                pl_kernel_def_mesh(d, v, &mesh, msg, sizeof msg) == PL_OK ? pl_mesh_format(&mesh, shape, sizeof shape)
                                                                       : "none");
    }
    for (int p = 0; p < d->n_params; p++) {
        const pl_kernel_param *q = &d->params[p];
        char def[32];
        if (q->kind == PL_PARAM_DTYPE) snprintf(def, sizeof def, "%s", pl_dtype_name((pl_dtype)q->def));
        else snprintf(def, sizeof def, "%lld", (long long)q->def);
        fprintf(f, "  %-*s = %-6s  %s", w, q->name, def, q->help ? q->help : "");
        if (q->divides && q->multiple > 1)
            fprintf(f, " (sweep: the multiples of %lld dividing %s)", (long long)q->multiple, q->divides);
        else if (q->divides) fprintf(f, " (sweep: the divisors of %s)", q->divides);
        else if (q->n_candidates > 0) {
            /* a sweep keeps a dtype at its default: its list is what --vary compares */
            fprintf(f, q->kind == PL_PARAM_DTYPE ? " (compare: --vary %s=" : " (sweep:", q->name);
            for (int c = 0; c < q->n_candidates; c++)
                if (q->kind == PL_PARAM_DTYPE) fprintf(f, "%s%s", c ? "," : "", pl_dtype_name((pl_dtype)q->candidates[c]));
                else fprintf(f, "%s%lld", c ? "," : " ", (long long)q->candidates[c]);
            fputc(')', f);
        }
        fputc('\n', f);
    }
    print_chip_defaults(d, f);
}

int cli_list(int argc, char **argv)
{
    const cli_cmd *cmd = &cli_list_cmd;
    cli_kopts o;
    int rc = cli_kparse(cmd, 0, argc + 1, argv - 1, &o);
    if (rc >= 0) return rc;
    if (o.npos > 1) return cli_fail(cmd, "unexpected argument '%s'; give at most one PLUGIN.so", CLI_CUT(o.pos[1]));
    /* a built-in's name (no path, no .so): that kernel alone, as the full list shows it */
    const pl_kernel_def *builtin = o.npos == 1 && !strchr(o.pos[0], '/') && !strstr(o.pos[0], ".so")
                                       ? ex_kernel_find(o.pos[0]) : NULL;
    if (!builtin && o.npos == 1 && !strchr(o.pos[0], '/') && !strstr(o.pos[0], ".so"))
        builtin = ex_mesh_kernel_find(o.pos[0]); /* ring_allreduce: its definition, as 'run --set' takes it */
    if (builtin) {
        fprintf(stdout, "built-in kernel (parameter = default, what it is, the values a sweep tries when not told):\n\n");
        print_def(builtin, stdout);
        fprintf(stdout, "\nChange a parameter with --set name=value; sweep one with --vary name=v1,v2,...\n");
        return cli_finish_stdout(cmd, 0);
    }
    if (o.npos == 1 && !builtin && !strchr(o.pos[0], '/') && !strstr(o.pos[0], ".so") && access(o.pos[0], F_OK)) {
        char names[1024] = "";
        int at = 0;
        for (int i = 0; i < ex_kernel_count() && at < (int)sizeof names; i++)
            at += snprintf(names + at, sizeof names - (size_t)at, "%s%s", i ? ", " : "", ex_kernel_at(i)->name);
        for (const ex_mesh_prog *p = ex_mesh_progs; p->name && at < (int)sizeof names; p++)
            if (ex_mesh_kernel_find(p->name)) at += snprintf(names + at, sizeof names - (size_t)at, ", %s", p->name);
        return cli_fail(cmd, "'%s' is neither a built-in kernel (%s) nor a plugin file", CLI_CUT(o.pos[0]), names);
    }
    if (o.npos == 1) {
        const pl_kernel_def *const *defs;
        int n;
        if ((rc = cli_plugin_defs(cmd, o.pos[0], &defs, &n))) return rc;
        fprintf(stdout, "kernels of %s (run one as %s:NAME):\n\n", o.pos[0], o.pos[0]);
        for (int i = 0; i < n; i++) print_def(defs[i], stdout), fputc('\n', stdout);
        return cli_finish_stdout(cmd, 0);
    }
    fprintf(stdout, "built-in kernels (parameter = default, what it is, the values a sweep tries when not told):\n\n");
    for (int i = 0; i < ex_kernel_count(); i++) print_def(ex_kernel_at(i), stdout), fputc('\n', stdout);
    fprintf(stdout, "built-in mesh kernels (also programs with their own options: 'tilesim run NAME --devices N'):\n\n");
    for (const ex_mesh_prog *p = ex_mesh_progs; p->name; p++)
        if (ex_mesh_kernel_find(p->name)) print_def(ex_mesh_kernel_find(p->name), stdout), fputc('\n', stdout);
    fprintf(stdout, "Change a parameter with --set name=value; sweep one with --vary name=v1,v2,...\n");
    return cli_finish_stdout(cmd, 0);
}

int cli_kernel_setup(const cli_cmd *cmd, unsigned mask, int argc, char **argv, cli_kopts *o, const pl_kernel_def **d,
                     int64_t *v, pl_chip *file_chip, pl_options *opt)
{
    int rc = cli_kparse(cmd, mask, argc + 1, argv - 1, o);
    if (rc >= 0) return rc;
    if (o->npos == 0) return cli_fail(cmd, "missing the kernel: give a name from 'tilesim list' or PLUGIN.so[:NAME]");
    if ((rc = cli_find_kernel(cmd, o->pos[0], d))) return rc;
    if (o->npos > 1) return cli_fail(cmd, "unexpected argument '%s' after the kernel; parameters go in --set",
                                        CLI_CUT(o->pos[1]));
    /* the chip first: a definition's defaults may depend on it (chip_defaults) */
    if ((rc = cli_kernel_options(cmd, o, file_chip, opt)) ||
        (rc = cli_kernel_values(cmd, *d, o, opt->chip_spec, v)))
        return rc;
    /* a mesh kernel (kdef_mesh.c) runs (every device checked) and sweeps;
     * the single-device views do not draw a mesh yet: say so, run nothing */
    if ((*d)->mesh && !strcmp(cmd->name, "explain") && o->html)
        return cli_fail(cmd, "kernel '%s' is a mesh kernel: 'explain --html' walks one device's grid; 'tilesim "
                        "run --html' draws every device and link", (*d)->name);
    return -1;
}
