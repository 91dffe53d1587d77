/* cli/help.c: the bottom of cli/: a verb's usage error and its help. Every
 * verb calls these; they call no verb (a command's help is its cli_cmd's
 * text or printer), so main.c, which calls every verb, stays on top
 * (tools/layering.sh). */
#include <stdarg.h>

#include "cli.h"

void cli_help(const cli_cmd *cmd, FILE *f)
{
    if (cmd->print_help) {
        cmd->print_help(cmd, f);
        return;
    }
    fprintf(f, "usage: %s\n\n%s", cmd->synopsis, cmd->help ? cmd->help : "");
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
