/* cli/main.c: `tilesim COMMAND ...`: the top of cli/: the table of verbs,
 * dispatch and `tilesim help`. A verb's usage and help are in help.c.
 *
 * The command's main() is a one-liner in cli_main.c that calls tilesim_main:
 * the fuzz harness of tests/fuzz/ calls tilesim_main in-process, many times,
 * so nothing here may call exit() or keep state from one call to the next. */
#include <string.h>

#include "cli.h"

static const cli_cmd tool_cmd = {
    "", "tilesim chips | list | run | verify | sweep | tune | calibrate | explain | hlo | profile | memory | review | help [COMMAND]",
    "", NULL, NULL};

static const char commands_help[] =
    "Commands:\n"
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

static int sweep_verb(int argc, char **argv);
static int explain_verb(int argc, char **argv);

/* The verbs, in the order `tilesim help` lists them: the one table dispatch and help read. */
static const struct verb {
    const cli_cmd *cmd;
    int (*run)(int argc, char **argv);
} verbs[] = {
    {&cli_chips_cmd, cli_chips},         {&cli_list_cmd, cli_list},       {&cli_run_cmd, cli_run},
    {&cli_verify_cmd, cli_verify},       {&cli_sweep_cmd, sweep_verb},    {&cli_explain_cmd, explain_verb},
    {&cli_tune_cmd, cli_tune},           {&cli_calibrate_cmd, cli_calibrate}, {&cli_hlo_cmd, cli_hlo},
    {&cli_profile_cmd, cli_profile},     {&cli_memory_cmd, cli_memory},   {&cli_review_cmd, cli_review},
};
#define N_VERBS (sizeof verbs / sizeof *verbs)

/* `tilesim help`: every command's synopsis, then what each does. */
static void overview(FILE *f)
{
    fprintf(f, "tilesim: a Pallas-style TPU kernel simulator\n\nusage:\n");
    for (size_t i = 0; i < N_VERBS; i++) /* a second form starts "\n       tilesim" */
        for (const char *s = verbs[i].cmd->synopsis; *s;) {
            size_t len = strcspn(s, "\n");
            fprintf(f, "  %.*s\n", (int)len, s);
            s += len;
            while (*s == '\n' || *s == ' ') s++;
        }
    fprintf(f, "  tilesim help [COMMAND]\n\n%s", commands_help);
}

static const struct verb *find_verb(const char *name)
{
    for (size_t i = 0; i < N_VERBS; i++)
        if (strcmp(verbs[i].cmd->name, name) == 0) return &verbs[i];
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

static int sweep_verb(int argc, char **argv)
{
    return old_matmul_form(argc, argv) ? cli_sweep(argc, argv) : cli_ksweep(argc, argv);
}

static int explain_verb(int argc, char **argv)
{
    return old_matmul_form(argc, argv) ? cli_explain(argc, argv) : cli_kexplain(argc, argv);
}

int tilesim_main(int argc, char **argv)
{
    if (argc < 2) return cli_fail(&tool_cmd, "no command given");
    const char *c = argv[1];
    if (strcmp(c, "help") == 0 || strcmp(c, "--help") == 0 || strcmp(c, "-h") == 0) {
        if (argc > 3) return cli_fail(&tool_cmd, "help: too many arguments at '%s'", CLI_CUT(argv[3]));
        const struct verb *v = argc == 3 ? find_verb(argv[2]) : NULL;
        if (argc == 3 && !v && !strcmp(argv[2], "help")) { /* help help: what help says, the overview */
            overview(stdout);
            return cli_finish_stdout(&tool_cmd, 0);
        }
        if (argc == 3 && !v)
            return cli_fail(&tool_cmd, "help: unknown command '%s'; the commands are %s", CLI_CUT(argv[2]),
                            COMMANDS);
        if (v) cli_help(v->cmd, stdout);
        else overview(stdout);
        return cli_finish_stdout(&tool_cmd, 0);
    }
    const struct verb *v = find_verb(c);
    if (v) return v->run(argc - 2, argv + 2);
    if (c[0] == '-') return cli_fail(&tool_cmd, "unknown option '%s'; give a command first", CLI_CUT(c));
    return cli_fail(&tool_cmd, "unknown command '%s'; the commands are %s, help", CLI_CUT(c), COMMANDS);
}
