/* cli/cli.h: what the files of the `tilesim` command share.
 *
 * The command is a thin layer over the host API of sim/tilesim.h. main.c
 * dispatches on the first word (chips, sweep, explain, help) and owns the
 * usage text. Each command parses its own arguments with the strict helpers
 * of args.c: a value that is not exactly a positive whole number, a list
 * with an empty or repeated item, an unknown option or a missing value is a
 * user error. A user error prints one message naming the command, the
 * option or argument and the offending text ("tilesim sweep: --bm: '12x' is
 * not a whole number"), then a one-line usage hint, all on stderr, and the
 * command exits 2. Output goes to stdout; nothing else is ever printed on
 * stderr except the progress bar of sweep and review on a terminal (progress.c).
 *
 * Exit status: 0 success, 1 a run that found nothing to report (a sweep in
 * which no configuration is legal), a wrong result, or a host failure (the
 * command's own allocation failing part way), 2 a user error or a call
 * tilesim rejects, including a configuration refused because it would need
 * more host memory than this machine has (run and the mesh programs alike).
 */
#ifndef TILESIM_CLI_H
#define TILESIM_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "../sim/tilesim.h"

#define CLI_EXIT_USAGE 2

/* ---- commands and their usage (help.c: the bottom of cli/, which every verb uses) ---- */

/* A command: its name and its one-line synopsis, for messages, and its help. */
typedef struct cli_cmd {
    const char *name;     /* "sweep" */
    const char *brief;    /* "tilesim sweep matmul M N K [options]": the usage hint */
    const char *synopsis; /* every option, for help */
    const char *help;     /* what `tilesim help NAME` prints after the synopsis */
    /* or this prints the whole help instead (a verb whose help is built) */
    void (*print_help)(const struct cli_cmd *cmd, FILE *f);
} cli_cmd;

extern const cli_cmd cli_chips_cmd, cli_sweep_cmd, cli_explain_cmd;

/* Print the long help of a command (NULL: of the whole tool) on f. */
void cli_help(const cli_cmd *cmd, FILE *f);

/* Print "tilesim CMD: <message>" and the usage hint on stderr; returns
 * CLI_EXIT_USAGE so that callers can `return cli_fail(...)`. */
int cli_fail(const cli_cmd *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

int cli_chips(int argc, char **argv);
int cli_sweep(int argc, char **argv);
int cli_explain(int argc, char **argv);
/* The whole command (main.c): argv[0] is the program name. Returns the exit
 * status; never calls exit(), so that tests/fuzz/ can call it in-process. */
int tilesim_main(int argc, char **argv);

/* ---- strict argument parsing (args.c) ------------------------------------ */

#define CLI_MAX_POS 16
#define CLI_MAX_OPTS 16
#define CLI_MAX_LIST 64

/* An option a command accepts: "--bm" with a value, or "--json" alone. */
typedef struct cli_optspec {
    const char *name;
    int has_value;
} cli_optspec;

/* argv split into positional words and option values (NULL: not given;
 * flags get ""). */
typedef struct cli_args {
    int npos;
    const char *pos[CLI_MAX_POS];
    const char *val[CLI_MAX_OPTS]; /* indexed like the spec table */
    int help;                      /* --help or -h was given */
} cli_args;

/* Split argv[0..argc) by the spec table. Accepts "--opt value" and
 * "--opt=value"; a word starting with "-" and a digit is positional (so that
 * "-5" is reported as a non-positive number, not as an unknown option).
 * Returns 0, or CLI_EXIT_USAGE after printing the error. */
int cli_parse(const cli_cmd *cmd, int argc, char **argv, const cli_optspec *specs, int nspecs, cli_args *out);
/* cli_parse, then --help: returns -1 when the command should go on, else
 * the exit status (a parse error, or 0 after printing the help). */
int cli_start(const cli_cmd *cmd, int argc, char **argv, const cli_optspec *specs, int nspecs, cli_args *out);

/* The value of option `name` in a, or NULL. */
const char *cli_opt(const cli_args *a, const cli_optspec *specs, int nspecs, const char *name);

/* Every whole number of the command goes through here (and through
 * ex_scan_int, examples/kernels/options.h, which the example programs share):
 * decimal digits, a '-' only before a negative number, no '+', no spaces, no
 * "0x", in [lo, hi] however many digits it has. `what` names it in messages
 * ("--seed", "M"). Returns 0 or CLI_EXIT_USAGE. */
int cli_parse_int(const cli_cmd *cmd, const char *what, const char *s, int64_t lo, int64_t hi, int64_t *out);
/* cli_parse_int from 1: a positive whole number of at most max. */
int cli_parse_count(const cli_cmd *cmd, const char *what, const char *s, int64_t max, int64_t *out);
/* --vmem-limit's value: bytes, or a size in K, M or G (powers of 1024, an
 * optional "iB" or "B": 96M, 96MiB). 0, or the exit status after the message. */
int cli_parse_vmem_limit(const cli_cmd *cmd, const char *s, int64_t *out);
/* --vmem-limit's value against chip: at most its physical VMEM, the most a
 * call can set (M4). 0, or the exit status after the message. */
int cli_check_vmem_limit(const cli_cmd *cmd, int64_t limit, const pl_chip *chip);

/* User text a message echoes is cut to its first CLI_ECHO_MAX characters and
 * "..." (a 49 KB --vary list must not come back whole). cli_cut returns s
 * itself when short enough, else buf (n >= CLI_ECHO_MAX + 4); CLI_CUT gives
 * it a buffer that lives until the end of the enclosing statement's block. */
#define CLI_ECHO_MAX 40
const char *cli_cut(const char *s, char *buf, size_t n);
/* Do paths a and b name one file (the same path, or links to one)? For -o against an input. */
int cli_same_file(const char *a, const char *b);
/* The next field of a CSV line at *at, NUL-terminated in place and trimmed;
 * a field in double quotes loses them ("" is one quote inside, RFC 4180).
 * *at moves past the comma, or to NULL at the line's end. Sets *bad (and
 * leaves it set) when a quoted field is not closed or text follows its
 * closing quote. */
char *cli_csv_field(char **at, int *bad);
/* What a line with *bad set is told, after its file and line. */
#define CLI_CSV_BAD "a quoted field has no closing quote, or text follows it"
/* The items of a comma-separated list: one more than its commas. */
int cli_count_items(const char *s);
#define CLI_CUT(s) cli_cut((s), (char[CLI_ECHO_MAX + 4]){0}, CLI_ECHO_MAX + 4)

/* A comma-separated list of distinct positive whole numbers of at most max,
 * at most CLI_MAX_LIST of them. Returns 0 or CLI_EXIT_USAGE. */
int cli_parse_list(const cli_cmd *cmd, const char *what, const char *s, int64_t max, int64_t *out, int *n);

/* "f32" or "bf16" (the dtypes the matmul example supports). */
int cli_parse_dtype(const cli_cmd *cmd, const char *s, pl_dtype *out);

/* ---- chips (chips.c) ------------------------------------------------------ */

/* The chip named by --chip or read from --chip-file (at most one of them;
 * neither: the default preset). file_chip is storage for a loaded chip.
 * Returns 0 or CLI_EXIT_USAGE after printing the error. */
int cli_select_chip(const cli_cmd *cmd, const char *name, const char *file, pl_chip *file_chip,
                    const pl_chip **out);

/* ---- formatting (fmt.c) --------------------------------------------------- */

/* sizes and times: pl_format_bytes, pl_format_time (sim/tilesim.h) */
/* (0, 1, 1) */
const char *cli_tuple(const int64_t *v, int n, char *buf, size_t len);
/* A JSON number, or null when not finite. */
void cli_json_number(FILE *f, double v);
/* The first line of msg, cut at its first "; " or ". " when longer than
 * max characters (the rule citation before the cut is kept). */
const char *cli_first_sentence(const char *msg, size_t max, char *buf, size_t n);
/* After a refusal over the scoped VMEM limit (rep->status PL_EVMEM, M4):
 * the --vmem-limit that runs the configuration when it fits the chip's
 * physical VMEM, else that no limit does; nothing for other failures. */
void cli_vmem_hint(const pl_report *rep, FILE *f);
/* Flush stdout; on a write error print it and return CLI_EXIT_USAGE. */
int cli_finish_stdout(const cli_cmd *cmd, int status);

/* ---- the progress bar of long commands (progress.c) ----------------------- */

#include <time.h>

/* "sweep [####....] 12/40 configurations" on stderr, redrawn when the count
 * changes, erased at the end. */
typedef struct cli_progress {
    const char *what, *unit; /* "sweep", "configurations" */
    double delay_s;          /* no bar before this much time: a short run draws none */
    struct timespec start;
    int drawn, last;         /* last: the count drawn */
} cli_progress;

/* Start the clock; returns 1 when stderr is a terminal, the only place a
 * bar is drawn (callers install cli_progress_show only then). */
int cli_progress_start(cli_progress *p, const char *what, const char *unit, double delay_s);
/* A progress callback (pl_sweep_options.progress): user is the cli_progress. */
void cli_progress_show(int done, int total, void *user);
/* Erase the bar if drawn (a run that stopped early leaves no line behind). */
void cli_progress_end(cli_progress *p);
/* Seconds since cli_progress_start. */
double cli_progress_elapsed(const cli_progress *p);

/* ---- the sweep (sweep.c, sweep_print.c, svg.c) ---------------------------- */

/* One configuration of a sweep and what the simulator said about it. */
typedef struct cli_sweep_row {
    int64_t bm, bn, bk;
    int64_t steps;        /* grid points, computed before running */
    pl_report *rep;       /* status < 0: rejected, the reason in rep->error */
    int too_many_steps;   /* rejected by the sweep itself, not run */
} cli_sweep_row;

typedef enum cli_format { CLI_TEXT = 0, CLI_CSV, CLI_JSON } cli_format;

/* Everything a sweep prints about. */
typedef struct cli_sweep_result {
    int64_t m, n, k;
    pl_dtype dtype;
    const pl_chip *chip;
    int64_t vmem_limit;   /* 0: the chip's default */
    cli_format format;
    int64_t top;          /* legal rows to print; 0: all */
    int n_rows;
    cli_sweep_row *rows;  /* the configurations in list order */
    pl_report *reports;   /* one per row: those run first, in pl_sweep's order */
    int n_legal;
    int *legal;           /* indexes into rows, fastest first */
    int n_rejected;
    int *rejected;        /* indexes into rows, in list order */
    double wall_s;        /* host time the sweep took */
} cli_sweep_result;

/* AI column: bm * bn / (bm + bn). */
double cli_tile_intensity(const cli_sweep_row *r);
/* "over budget" for PL_EVMEM, "too many steps", else "illegal". */
const char *cli_reject_kind(const cli_sweep_row *r);

void cli_sweep_print_text(const cli_sweep_result *s, FILE *f);
void cli_sweep_print_csv(const cli_sweep_result *s, FILE *f);
void cli_sweep_print_json(const cli_sweep_result *s, FILE *f);
/* The roofline plot; returns 0, or -1 on a write error. */
int cli_sweep_svg(const cli_sweep_result *s, FILE *f);

/* ---- any kernel (kernels.c, kverbs.c, ksweep.c, kexplain.c) ------------------ */

#include "../sim/kdef.h"

extern const cli_cmd cli_list_cmd, cli_run_cmd, cli_verify_cmd;

/* The options the kernel verbs take (a bit each); kernels.c parses them all
 * with getopt_long and refuses those the verb does not take. */
enum {
    K_SET = 1 << 0, K_VARY = 1 << 1, K_CHIP = 1 << 2, K_CHIP_FILE = 1 << 3, K_COST = 1 << 4, K_JSON = 1 << 5,
    K_CSV = 1 << 6, K_TRACE = 1 << 7, K_STRICT = 1 << 8, K_SEED = 1 << 9, K_SVG = 1 << 10, K_TOP = 1 << 11,
    K_HEATMAP = 1 << 12, K_THREADS = 1 << 13, K_OUTPUT = 1 << 14, K_HOST_THREADS = 1 << 15, K_HTML = 1 << 16,
    K_VMEM_REPORT = 1 << 17, K_VMEM_LIMIT = 1 << 18, K_SHAPES = 1 << 20, K_OUT_FILE = 1 << 21, K_FIT = 1 << 22,
    K_DMA_MODES = 1 << 23,
    K_RUN_OPTS = K_SET | K_CHIP | K_CHIP_FILE | K_COST | K_JSON | K_TRACE | K_STRICT | K_SEED | K_HOST_THREADS |
                 K_HTML | K_VMEM_REPORT | K_VMEM_LIMIT | K_DMA_MODES,
    K_VERIFY_OPTS = K_SET | K_CHIP | K_CHIP_FILE | K_SEED | K_HEATMAP | K_OUTPUT | K_HOST_THREADS | K_VMEM_LIMIT |
                    K_DMA_MODES | K_STRICT,
};

#define CLI_MAX_SETS 64

typedef struct cli_kopts {
    int npos;
    const char *pos[4];
    int n_sets, n_varies;
    const char *sets[CLI_MAX_SETS], *varies[CLI_MAX_SETS];
    const char *chip, *chip_file, *trace, *svg, *heatmap, *output, *html;
    int cost_only, json, csv, strict, has_seed, vmem_report;
    int64_t seed, top, threads, host_threads;
    int64_t trace_limit; /* --trace-limit: pl_options.trace_limit_bytes (0: the default) */
    const char *shapes, *out_file; /* tune: --shapes FILE, -o FILE */
    const char *fit;               /* calibrate: --fit LIST */
    int64_t vmem_limit; /* --vmem-limit: 0, the call's own (the definition's, or the chip's default) */
    int check_dma_modes; /* --check-dma-modes: pl_options.check_dma_modes */
} cli_kopts;

/* Parse a kernel verb's arguments (argv[0] is the verb's own name, as
 * getopt_long wants). Returns -1 to go on, 0 after --help, else the exit
 * status of a usage error (printed). */
int cli_kparse(const cli_cmd *cmd, unsigned allowed, int argc, char **argv, cli_kopts *o);
/* The verb's help: synopsis, what it does, each option it takes. */
void cli_khelp(const cli_cmd *cmd, FILE *f);
/* Each option of mask, with its sentence, one a line. */
void cli_kopt_help(unsigned mask, FILE *f);
/* The definition a KERNEL word names: a built-in ("rmsnorm"), a plugin
 * ("x.so", one kernel) or one kernel of it ("x.so:NAME"). */
int cli_find_kernel(const cli_cmd *cmd, const char *spec, const pl_kernel_def **out);
/* The defaults on chip (pl_kernel_defaults_on; NULL: the chip-free ones),
 * then every --set in order. */
int cli_kernel_values(const cli_cmd *cmd, const pl_kernel_def *d, const cli_kopts *o, const pl_chip *chip,
                      int64_t *v);
/* The pl_options a kernel verb runs with (chip into file_chip storage). */
int cli_kernel_options(const cli_cmd *cmd, const cli_kopts *o, pl_chip *file_chip, pl_options *opt);
/* What run, verify and explain do first: parse (argv[0] is the first word
 * after the verb), find the one KERNEL, its values and options. Returns -1
 * to go on, else the exit status (0 after --help). */
int cli_kernel_setup(const cli_cmd *cmd, unsigned mask, int argc, char **argv, cli_kopts *o, const pl_kernel_def **d,
                     int64_t *v, pl_chip *file_chip, pl_options *opt);

int cli_list(int argc, char **argv);
int cli_run(int argc, char **argv);
int cli_verify(int argc, char **argv);
int cli_ksweep(int argc, char **argv);   /* sweep KERNEL: argv as cli_sweep's */
/* The configurations a sweep of d runs under o (--set, --vary, the
 * definition's candidates, a dtype its default on chip; ksweep.c): *n rows of d->n_params values each,
 * the last parameter fastest, in *values (malloc'd: the caller frees).
 * 0, or the exit status after printing the error. */
int cli_sweep_values(const cli_cmd *cmd, const pl_kernel_def *d, const cli_kopts *o, const pl_chip *chip,
                     int64_t **values, int *n, int *kept);
/* The dtypes such a sweep kept at the chip's default (kept[p], values v),
 * for a heading: ", wdtype=f8e4m3 kept (a dtype: WHY)", or "" when none. */
const char *cli_kept_text(const pl_kernel_def *d, const int *kept, const int64_t *v, const char *why, char *buf,
                          size_t n);
int cli_kexplain(int argc, char **argv); /* explain KERNEL */

/* --html FILE (html.c): write the teaching page of kernel d at values v
 * (sim/tools/html.h; extras: the sections other tools give, or NULL). quiet: no
 * 'page:' line on stdout (--json). 0, 1 out of memory, 2 bad path/config. */
struct sim_page_extras;
int cli_html(const cli_cmd *cmd, const pl_kernel_def *d, const int64_t *v, const pl_options *opt, const char *path,
             const struct sim_page_extras *extras, int quiet);

/* --html FILE of a mesh kernel (mesh_page.c): every device's timeline and
 * the links, from the run's trace. 0, 1 out of memory, 2 bad path/config. */
int cli_mesh_page(const cli_cmd *cmd, const pl_kernel_def *d, const int64_t *v, const pl_options *opt,
                  const char *path, int quiet);

/* profile KERNEL (profile.c): the op profile of one run and its roofline */
extern const cli_cmd cli_profile_cmd;
int cli_profile(int argc, char **argv);
void cli_profile_help(const cli_cmd *cmd, FILE *f);

/* memory KERNEL (memview.c): the memory viewer of one configuration (sim/tilesim_memview.h) */
extern const cli_cmd cli_memory_cmd;
int cli_memory(int argc, char **argv);
void cli_memory_help(const cli_cmd *cmd, FILE *f);
/* d at v with opt (made cost-only) and the memory viewer's recorder: the view
 * in mv (pl_memview_free it always); PL_OK or a code, rep->error says why */
struct pl_memview;
int cli_memview_of(const pl_kernel_def *d, const int64_t *v, pl_options *opt, struct pl_memview *mv,
                   pl_report *rep);

/* tune KERNEL --shapes FILE (tune.c): the best tiling per shape */
extern const cli_cmd cli_tune_cmd;
int cli_tune(int argc, char **argv);
void cli_tune_help(const cli_cmd *cmd, FILE *f);

/* calibrate MEASURED.csv (calibrate.c): fit a chip's timing figures to measured times */
extern const cli_cmd cli_calibrate_cmd;
int cli_calibrate(int argc, char **argv);
void cli_calibrate_help(const cli_cmd *cmd, FILE *f);

/* hlo TEXT (hlo.c): read one HLO instruction and explain it */
extern const cli_cmd cli_hlo_cmd;
int cli_hlo(int argc, char **argv);

/* review (review.c, review_print.c): the design review of a served model */
extern const cli_cmd cli_review_cmd;
int cli_review(int argc, char **argv);
void cli_review_help(const cli_cmd *cmd, FILE *f);

/* ---- explain.c: the narration both forms of `tilesim explain` print ---------- */

typedef struct cli_narrator {
    FILE *f;
    int64_t nk;   /* grid size of the contraction axis */
    int megacore; /* the chip splits a parallel axis over two cores (G4) */
    int generic;  /* any kernel: no matmul-specific lines */
    /* to say which blocks are edge blocks (B6): the blocks' sizes (a validated report) and the arrays, in
     * the report's operand order (NULL: not said) */
    const pl_report *blocks;
    const pl_array *arrays[PL_MAX_CALL_OPERANDS];
} cli_narrator;
#define CLI_MAX_EXPLAIN_STEPS 512
extern const char cli_axis_letter[PL_MAX_GRID]; /* i, j, k, ... */
/* The BlockSpecs of a call, as sentences (generic: no matmul-specific lines). */
void cli_explain_specs(const pl_call *call, const pl_report *v, int generic, FILE *f);
/* pl_options.on_step: what the pipeline did at a grid point, with the rules (user: a cli_narrator). */
void cli_explain_step(const pl_step_info *s, void *user);
/* The copies per operand and the predicted time. */
void cli_explain_summary(const pl_report *r, int generic, FILE *f);

#endif
