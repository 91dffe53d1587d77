/* examples/kernels/options.h: the command line shared by the example
 * programs: getopt_long over the common options plus the program's own,
 * positional arguments collected in order, and every option checked before
 * the program prints or allocates anything.
 *
 * Common options (each program picks the ones it takes with a mask):
 *   --chip NAME        a chip preset (checked here: an unknown name is a usage error)
 *   --chip-file FILE   a what-if chip file (pl_chip_load; read here, into chip_file)
 *   --trace FILE.json  write a Chrome trace of the call (pl_options.trace_path; checked writable)
 *   --trace-limit N    refuse a trace estimated larger (pl_options.trace_limit_bytes; 64M, 1G, none)
 *   --cost-only        time the call without data (pl_options.cost_only)
 *   --no-checks        pl_options.checks_off
 *   --strict           pl_options.strict
 *   --uninit nan|zero  pl_options.uninit
 *   --oob raise|poison pl_options.oob_reads
 *   --json             print the report as JSON
 *   -h, --help         print the usage and exit 0
 *
 *     static const struct option mine[] = {{"heads", required_argument, NULL, 'H'}, {0}};
 *     ex_cmdline cl = {.prog = "flash_attention", .usage = USAGE, .accept = EX_CHIP | EX_COST_ONLY};
 *     int rc = ex_parse(&cl, argc, argv, mine, my_option, &cfg);
 *     if (rc != EX_PARSE_OK) return rc == EX_PARSE_HELP ? 0 : 2;
 *     ... cl.opt, cl.pos[0 .. cl.npos - 1]
 */
#ifndef TILESIM_EXAMPLES_OPTIONS_H
#define TILESIM_EXAMPLES_OPTIONS_H

#include <getopt.h>
#include <stdio.h>

#include "../../sim/tilesim.h"

enum {
    EX_CHIP = 1 << 0,
    EX_TRACE = 1 << 1,
    EX_COST_ONLY = 1 << 2,
    EX_NO_CHECKS = 1 << 3,
    EX_STRICT = 1 << 4,
    EX_UNINIT = 1 << 5,
    EX_OOB = 1 << 6,
    EX_JSON = 1 << 7,
    EX_CHIP_FILE = 1 << 8,
};

enum { EX_PARSE_OK = 0, EX_PARSE_HELP = 1, EX_PARSE_ERROR = 2 };

#define EX_MAX_POS 16

typedef struct ex_cmdline {
    const char *prog;   /* for messages: "matmul" */
    const char *usage;  /* the whole usage text, printed on -h and after a usage error */
    unsigned accept;    /* EX_* of the common options this program takes */
    /* filled by ex_parse */
    pl_options opt;
    pl_chip chip_file; /* --chip-file's chip: opt.chip_spec points here */
    int json;
    int npos;
    const char *pos[EX_MAX_POS];
} ex_cmdline;

/* The program's own option `code` (the val of its struct option) with its
 * argument (NULL for none). Return 0, or EX_PARSE_ERROR after printing what
 * is wrong with ex_usage_error. */
typedef int (*ex_option_fn)(ex_cmdline *cl, int code, const char *arg, void *user);

/* Parse argv. mine: the program's own options (NULL or ending in {0}); their
 * val must be >= 256 or a letter other than 'h'. Returns EX_PARSE_OK,
 * EX_PARSE_HELP (usage printed on stdout) or EX_PARSE_ERROR (one message
 * naming the option and the usage, on stderr). */
int ex_parse(ex_cmdline *cl, int argc, char **argv, const struct option *mine, ex_option_fn fn, void *user);

/* Print "PROG: <message>" and the usage on stderr; returns EX_PARSE_ERROR. */
int ex_usage_error(const ex_cmdline *cl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The one reader of whole numbers on the command lines (the examples' and
 * tilesim's, cli/args.c): s[0..len) as decimal digits, with a leading '-'
 * only for a negative number (no '+', no spaces, no "0x"), read by strtoll
 * with errno so that nothing overflows, then checked against [lo, hi].
 * EX_NUM_LOW / EX_NUM_HIGH: a number below lo / above hi (however long). */
typedef enum { EX_NUM_OK = 0, EX_NUM_NOT_WHOLE, EX_NUM_LOW, EX_NUM_HIGH } ex_num;
ex_num ex_scan_int(const char *s, size_t len, int64_t lo, int64_t hi, int64_t *out);

/* s as a whole number in [lo, hi] (ex_scan_int), or a usage error naming `what`. */
int ex_parse_int(const ex_cmdline *cl, const char *s, const char *what, int64_t lo, int64_t hi, int64_t *out);
/* A size in bytes, or with K, M or G in either case (powers of 1024, an optional "iB" or
 * "B": 96M, 96MiB), as --trace-limit takes it but positive and never
 * "none": 0 and *out, or -1. EX_SIZE_HINT says what it takes, for messages. */
int ex_scan_size(const char *s, int64_t *out);
#define EX_SIZE_HINT "give bytes (100663296) or a size with K, M or G (96M, 96MiB: powers of 1024)"
/* ex_scan_size, or a usage error naming `what` (tilesim's --vmem-limit says the same). */
int ex_parse_size(const ex_cmdline *cl, const char *s, const char *what, int64_t *out);

/* Can path be opened for writing? Checked before a run, so that a bad
 * output path fails at once with the system's reason, not after the run.
 * Creates, truncates and removes nothing (sim_out_probe). Returns 0, or
 * EX_PARSE_ERROR after "PROG: OPTION: cannot write 'path': reason". */
int ex_check_writable(const ex_cmdline *cl, const char *option, const char *path);

/* Refuse a real run that needs more host memory than there is: prints
 * "PROG: <what> needs ... ; run it with --cost-only" and returns 2; 0 when
 * it fits. Call before allocating. */
int ex_check_host_memory(const ex_cmdline *cl, const char *what, double bytes);

#endif
