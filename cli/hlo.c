/* cli/hlo.c: `tilesim hlo 'TEXT' [--json]`: read one HLO instruction, as
 * XProf's HLO op view or an XLA dump prints it, and say what each part
 * means (sim/tilesim_hlo.h). Text the reader refuses is a user error (exit
 * 2) whose message names the column and shows it with a caret. */
#include <stdlib.h>
#include <string.h>

#include "../sim/tilesim_hlo.h"
#include "cli.h"

const cli_cmd cli_hlo_cmd = {"hlo", "tilesim hlo 'HLO INSTRUCTION' [--json]", "tilesim hlo 'HLO INSTRUCTION' [--json]",
    /* help */
    "Read one HLO instruction, as XProf's HLO op view or an XLA dump prints it, and say what each part\n"
                   "means: the name, the element type and shape, the layout (dimensions from most minor to most major),\n"
                   "the tiling (T(8,128)(2,1): tiles and bf16 packing), the memory space (S(1) VMEM; none or S(0) HBM),\n"
                   "the op, its operands and attributes; and the bytes the result takes with and without tile padding.\n"
                   "Text it cannot read is refused with the column where reading stopped (exit status 2).\n"
                   "  --json   one JSON object instead of the explanation\n"
                   "Example: tilesim hlo '%fusion.3 = bf16[32,32,4096]{2,1,0:T(8,128)(2,1)S(1)} fusion(\n"
                   "           bf16[32,32,8192]{2,1,0:T(8,128)(2,1)} %fusion.32), kind=kCustom, calls=%all-reduce-scatter.3'\n",
    NULL};

int cli_hlo(int argc, char **argv)
{
    static const cli_optspec specs[] = {{"--json", 0}};
    enum { N = sizeof specs / sizeof *specs };
    const cli_cmd *cmd = &cli_hlo_cmd;
    cli_args a;
    int rc = cli_start(cmd, argc, argv, specs, N, &a);
    if (rc >= 0) return rc;
    if (a.npos == 0) return cli_fail(cmd, "missing the HLO instruction (quote it: it has spaces and parentheses)");
    if (a.npos > 1)
        return cli_fail(cmd, "one instruction, in one argument: unexpected '%s' (quote the whole line)",
                        CLI_CUT(a.pos[1]));
    pl_hlo_instr *h = malloc(sizeof *h); /* ~70 KiB of fixed arrays: not on the stack */
    if (!h) {
        fprintf(stderr, "tilesim hlo: out of memory\n");
        return 1;
    }
    char err[1024];
    if (pl_hlo_parse(a.pos[0], h, err, sizeof err) != PL_OK) {
        free(h);
        return cli_fail(cmd, "%s", err);
    }
    if (cli_opt(&a, specs, N, "--json")) {
        pl_hlo_json(h, stdout);
    } else {
        const char *t = a.pos[0];
        size_t len = strcspn(t, "\r\n");
        printf("%.*s\n\n", (int)len, t);
        pl_hlo_explain(h, stdout);
    }
    free(h);
    return cli_finish_stdout(cmd, 0);
}
