/* cli/main.c: `tilesim COMMAND ...`: dispatch, usage and help.
 *
 * The command's main() is a one-liner in cli_main.c that calls tilesim_main:
 * the fuzz harness of tests/fuzz/ calls tilesim_main in-process, many times,
 * so nothing here may call exit() or keep state from one call to the next. */
#include <stdarg.h>
#include <string.h>

#include "cli.h"

const cli_cmd cli_chips_cmd = {"chips", "tilesim chips [--json] [--chip-file FILE]",
                                "tilesim chips [--json] [--chip-file FILE]"};
const cli_cmd cli_sweep_cmd = {
    "sweep", "tilesim sweep KERNEL [--vary name=v1,v2,...] [options] | tilesim sweep matmul M N K [options]",
    "tilesim sweep KERNEL|PLUGIN.so[:NAME] [--vary name=v1,v2,...] [--set name=value ...] [--chip NAME | --chip-file FILE] "
    "[--vmem-limit BYTES] [--csv | --json] [--svg FILE] [--top N] [--threads N]\n"
    "       tilesim sweep matmul M N K [--dtype f32|bf16] [--chip NAME | --chip-file FILE] [--bm LIST] [--bn LIST] "
    "[--bk LIST] [--vmem-limit BYTES] [--csv | --json] [--top N] [--svg FILE] [--threads N]"};
const cli_cmd cli_explain_cmd = {
    "explain", "tilesim explain KERNEL [--set name=value ...] | tilesim explain matmul M N K BM BN BK [options]",
    "tilesim explain KERNEL|PLUGIN.so[:NAME] [--set name=value ...] [--chip NAME | --chip-file FILE] [--html FILE]\n"
    "       [--vmem-limit BYTES]\n"
    "       tilesim explain matmul M N K BM BN BK [--dtype f32|bf16] [--chip NAME | --chip-file FILE] [--vmem-limit BYTES]"};
static const cli_cmd tool_cmd = {
    "", "tilesim chips | list | run | verify | sweep | tune | calibrate | explain | hlo | profile | memory | review | help [COMMAND]",
    ""};

static const char *long_help(const cli_cmd *cmd)
{
    if (cmd == &cli_chips_cmd)
        return "Print the chip presets with every figure of the timing model, in readable units.\n"
               "  --json            one JSON object instead of the table (figures in SI units)\n"
               "  --chip-file FILE  add the what-if chip read from FILE ('key = value' lines, '# comments',\n"
               "                    'base = v5e' first to start from a preset) as another column\n";
    if (cmd == &cli_sweep_cmd)
        return "Any kernel: run every combination of parameter values in cost-only mode on all host cores and\n"
               "rank the legal ones by predicted time; the rejected ones are listed with their reason. A parameter\n"
               "given --vary takes that list, one given --set that value, any other the candidates its definition\n"
               "lists for sweeps ('tilesim list'), or its default when it has none.\n"
               "  --vary NAME=V1,V2,...  sweep a parameter over these values (repeatable)\n"
               "  --set NAME=VALUE       fix a parameter (repeatable)\n"
               "  --chip NAME            a preset (see 'tilesim chips'; default v5e)\n"
               "  --chip-file FILE       a what-if chip file instead of a preset\n"
               "  --vmem-limit BYTES     pin the scoped VMEM limit (rule M4); without it each configuration may\n"
               "                         raise its limit up to the physical VMEM, as an autotuner's may: the\n"
               "                         'limit' column shows what it sets, '*' what is above the default\n"
               "  --csv | --json         machine-readable output, every configuration\n"
               "  --svg FILE             also write a roofline plot of the legal configurations\n"
               "  --top N                legal rows to show in the table (default 20)\n"
               "  --threads N            host threads (default: one per core)\n"
               "KERNEL is a built-in name ('tilesim list'), PLUGIN.so (one kernel) or PLUGIN.so:NAME.\n\n"
               "matmul M N K: the original matmul sweep, kept as it was.\n"
               "Evaluate every (bm, bn, bk) block configuration of the tiled matmul C (M x N) = A (M x K) @ B\n"
               "(K x N) in cost-only mode on all host cores, and rank the legal ones by predicted time.\n"
               "  --dtype f32|bf16     element type of A, B and C (default f32)\n"
               "  --chip NAME          a preset (see 'tilesim chips'; default v5e)\n"
               "  --chip-file FILE     a what-if chip file instead of a preset\n"
               "  --bm/--bn/--bk LIST  comma-separated block sizes (default 128,256,512,1024,2048)\n"
               "  --vmem-limit BYTES   the scoped VMEM limit (default: the chip's; rule M4)\n"
               "  --csv | --json       machine-readable output, every row\n"
               "  --top N              legal rows to show (default 20 in text, all in CSV and JSON)\n"
               "  --svg FILE           also write a roofline plot of the legal configurations\n"
               "  --threads N          host threads (default: one per core)\n"
               "Exit status 1 when no configuration is legal.\n";
    if (cmd == &cli_explain_cmd)
        return "Any kernel: narrate the pipeline of one configuration step by step (grids of at most 512 steps):\n"
               "which block each operand holds, what was copied, skipped, kept or written back, and the rule.\n"
               "  --set NAME=VALUE     change a parameter from its default (repeatable; 'tilesim list')\n"
               "  --chip NAME          a preset (default v5e)\n"
               "  --chip-file FILE     a what-if chip file instead of a preset\n"
               "  --vmem-limit BYTES   the scoped VMEM limit of the call (rule M4), in place of the kernel's own\n"
               "  --html FILE          also write the teaching page: the walk step by step, the timeline\n"
               "  --trace-limit BYTES  refuse a page whose timeline is estimated larger (64M, 1G, none; default 256M)\n\n"
               "matmul M N K BM BN BK: the original matmul narration.\n"
               "Narrate the pipeline of one small tiled matmul grid step by step: which block each operand\n"
               "holds, what was copied, skipped, kept or written back, and the rule of PALLAS.md behind it.\n"
               "Grids of more than 512 steps are refused.\n"
               "  --dtype f32|bf16     element type (default f32)\n"
               "  --chip NAME          a preset (default v5e)\n"
               "  --chip-file FILE     a what-if chip file instead of a preset\n";
    if (cmd == &cli_hlo_cmd)
        return "Read one HLO instruction, as XProf's HLO op view or an XLA dump prints it, and say what each part\n"
               "means: the name, the element type and shape, the layout (dimensions from most minor to most major),\n"
               "the tiling (T(8,128)(2,1): tiles and bf16 packing), the memory space (S(1) VMEM; none or S(0) HBM),\n"
               "the op, its operands and attributes; and the bytes the result takes with and without tile padding.\n"
               "Text it cannot read is refused with the column where reading stopped (exit status 2).\n"
               "  --json   one JSON object instead of the explanation\n"
               "Example: tilesim hlo '%fusion.3 = bf16[32,32,4096]{2,1,0:T(8,128)(2,1)S(1)} fusion(\n"
               "           bf16[32,32,8192]{2,1,0:T(8,128)(2,1)} %fusion.32), kind=kCustom, calls=%all-reduce-scatter.3'\n";
    return "Commands:\n"
           "  chips     the chip presets and their figures\n"
           "  list      the built-in kernels (or a plugin's) and their parameters\n"
           "  run       run one configuration of a kernel, check it against its reference, print the report\n"
           "  verify    check every output of a kernel against its reference; --heatmap draws the errors\n"
           "  sweep     rank the configurations of a kernel by predicted time\n"
           "  tune      the best tiling of a kernel for each shape of a CSV file: a table keyed by shape\n"
           "  calibrate fit a chip's timing figures to kernel times measured on a TPU; write a chip file\n"
           "  explain   narrate a small grid of a kernel, step by step, with the rules\n"
           "  hlo       read one HLO instruction and explain its shape, layout, tiling and memory space\n"
           "  profile   the op profile of one run (XProf's HLO op profile) and its roofline\n"
           "  memory    VMEM over the grid steps, the peak and what is live at it (XProf's memory viewer)\n"
           "  review    the design review of a served model: devices, quantization, batch, TTFT, TPOT\n"
           "  help      this text; 'tilesim help COMMAND' for one command\n"
           "Exit status: 0 success, 1 a wrong result, nothing legal or a host failure, 2 a bad command line or a\n"
           "rejected call, 3 the kernel crashed (a signal, exit or pthread_exit in your code).\n";
}

void cli_help(const cli_cmd *cmd, FILE *f)
{
    if (!cmd) {
        const cli_cmd *all[] = {&cli_chips_cmd, &cli_list_cmd, &cli_run_cmd, &cli_verify_cmd, &cli_sweep_cmd,
                                &cli_explain_cmd, &cli_tune_cmd, &cli_calibrate_cmd, &cli_hlo_cmd, &cli_profile_cmd, &cli_memory_cmd,
                                &cli_review_cmd};
        fprintf(f, "tilesim: a Pallas-style TPU kernel simulator\n\nusage:\n");
        for (size_t i = 0; i < sizeof all / sizeof *all; i++) /* a second form starts "\n       tilesim" */
            for (const char *s = all[i]->synopsis; *s;) {
                size_t len = strcspn(s, "\n");
                fprintf(f, "  %.*s\n", (int)len, s);
                s += len;
                while (*s == '\n' || *s == ' ') s++;
            }
        fprintf(f, "  tilesim help [COMMAND]\n\n%s", long_help(NULL));
        return;
    }
    if (cmd == &cli_profile_cmd) {
        cli_profile_help(f);
        return;
    }
    if (cmd == &cli_memory_cmd) {
        cli_memory_help(f);
        return;
    }
    if (cmd == &cli_review_cmd) {
        cli_review_help(f);
        return;
    }
    if (cmd == &cli_tune_cmd) {
        cli_tune_help(f);
        return;
    }
    if (cmd == &cli_calibrate_cmd) {
        cli_calibrate_help(f);
        return;
    }
    if (cmd == &cli_list_cmd || cmd == &cli_run_cmd || cmd == &cli_verify_cmd) {
        cli_khelp(cmd, f);
        return;
    }
    fprintf(f, "usage: %s\n\n%s", cmd->synopsis, long_help(cmd));
}

int cli_fail(const cli_cmd *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "tilesim%s%s: ", cmd->name[0] ? " " : "", cmd->name);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    if (cmd->name[0]) fprintf(stderr, "\nusage: %s  (see 'tilesim help %s')\n", cmd->brief, cmd->name);
    else fprintf(stderr, "\nusage: %s  (see 'tilesim help')\n", cmd->brief);
    return CLI_EXIT_USAGE;
}

static const cli_cmd *find_cmd(const char *name)
{
    const cli_cmd *all[] = {&cli_chips_cmd, &cli_sweep_cmd, &cli_explain_cmd, &cli_list_cmd, &cli_run_cmd,
                            &cli_verify_cmd, &cli_hlo_cmd, &cli_profile_cmd, &cli_memory_cmd, &cli_review_cmd,
                            &cli_tune_cmd, &cli_calibrate_cmd};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        if (strcmp(all[i]->name, name) == 0) return all[i];
    return NULL;
}

#define COMMANDS "chips, list, run, verify, sweep, tune, calibrate, explain, hlo, profile, memory, review"

/* `sweep matmul M N K` and `explain matmul M N K BM BN BK`, as documented and
 * scripted against before kernel definitions: 'matmul' followed by a word
 * that is not an option goes to the original commands, unchanged. Anything
 * else is the kernel form ('sweep matmul --vary bm=128,256' sweeps the
 * matmul definition; 'sweep conv 1 2 3' is refused naming the kernel). */
static int old_matmul_form(int argc, char **argv)
{
    if (argc < 1) return 1; /* "missing the kernel", as before */
    if (argc < 2 || strcmp(argv[0], "matmul") != 0) return 0;
    const char *w = argv[1]; /* a size, "-5" (said to be not positive), or "--" before the sizes */
    return w[0] != '-' || w[1] == '\0' || (w[1] >= '0' && w[1] <= '9') || strcmp(w, "--") == 0;
}

int tilesim_main(int argc, char **argv)
{
    if (argc < 2) return cli_fail(&tool_cmd, "no command given");
    const char *c = argv[1];
    if (strcmp(c, "help") == 0 || strcmp(c, "--help") == 0 || strcmp(c, "-h") == 0) {
        if (argc > 3) return cli_fail(&tool_cmd, "help: too many arguments at '%s'", CLI_CUT(argv[3]));
        const cli_cmd *cmd = argc == 3 ? find_cmd(argv[2]) : NULL;
        if (argc == 3 && !cmd)
            return cli_fail(&tool_cmd, "help: unknown command '%s'; the commands are %s", CLI_CUT(argv[2]),
                            COMMANDS);
        cli_help(cmd, stdout);
        return cli_finish_stdout(&tool_cmd, 0);
    }
    if (strcmp(c, "chips") == 0) return cli_chips(argc - 2, argv + 2);
    if (strcmp(c, "sweep") == 0)
        return old_matmul_form(argc - 2, argv + 2) ? cli_sweep(argc - 2, argv + 2) : cli_ksweep(argc - 2, argv + 2);
    if (strcmp(c, "explain") == 0)
        return old_matmul_form(argc - 2, argv + 2) ? cli_explain(argc - 2, argv + 2) : cli_kexplain(argc - 2, argv + 2);
    if (strcmp(c, "list") == 0) return cli_list(argc - 2, argv + 2);
    if (strcmp(c, "run") == 0) return cli_run(argc - 2, argv + 2);
    if (strcmp(c, "verify") == 0) return cli_verify(argc - 2, argv + 2);
    if (strcmp(c, "hlo") == 0) return cli_hlo(argc - 2, argv + 2);
    if (strcmp(c, "profile") == 0) return cli_profile(argc - 2, argv + 2);
    if (strcmp(c, "memory") == 0) return cli_memory(argc - 2, argv + 2);
    if (strcmp(c, "review") == 0) return cli_review(argc - 2, argv + 2);
    if (strcmp(c, "tune") == 0) return cli_tune(argc - 2, argv + 2);
    if (strcmp(c, "calibrate") == 0) return cli_calibrate(argc - 2, argv + 2);
    if (c[0] == '-') return cli_fail(&tool_cmd, "unknown option '%s'; give a command first", CLI_CUT(c));
    return cli_fail(&tool_cmd, "unknown command '%s'; the commands are %s, help", CLI_CUT(c), COMMANDS);
}
