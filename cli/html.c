/* cli/html.c: `--html FILE` on `tilesim run KERNEL` and `tilesim explain
 * KERNEL`: the teaching page of the configuration (sim/html.h), one
 * self-contained HTML file.
 *
 * The page comes from a walk of its own, cost only, with the chip and
 * options of the command: the same grid, blocks and timing as the run (the
 * timing model never reads data), so it can be written after a run with
 * data as well as after explain's narration.
 *
 * Exit status: 0 written; 2 the page cannot be written (a bad path: the
 * message names it) or the configuration is rejected; 1 out of host memory.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/html.h"
#include "../sim/tilesim_memview.h"
#include "cli.h"

/* The memory viewer's chart of the configuration as an HTML fragment (an
 * <svg>), malloc'd; NULL when it cannot be made (the page then says "not
 * available"). */
static char *memory_svg(const pl_kernel_def *d, const int64_t *v, const pl_options *given)
{
    pl_options opt = *given;
    opt.trace_path = NULL;
    pl_memview mv = {0};
    pl_report *rep = calloc(1, sizeof *rep);
    char *svg = NULL;
    size_t n = 0;
    FILE *f = rep ? open_memstream(&svg, &n) : NULL;
    int ok = f && cli_memview_of(d, v, &opt, &mv, rep) == PL_OK && pl_memview_svg(&mv, f) == PL_OK;
    pl_memview_free(&mv);
    if (f && fclose(f) != 0) ok = 0;
    free(rep);
    if (!ok) free(svg);
    return ok ? svg : NULL;
}

int cli_html(const cli_cmd *cmd, const pl_kernel_def *d, const int64_t *v, const pl_options *opt, const char *path,
             const sim_page_extras *extras, int quiet)
{
    if (!path || !*path) {
        fprintf(stderr, "tilesim %s: --html: the file name is empty\n", cmd->name);
        return CLI_EXIT_USAGE;
    }
    sim_page *p = calloc(1, sizeof *p);
    if (!p) return fprintf(stderr, "tilesim %s: --html: out of host memory\n", cmd->name), 1;
    char msg[PL_MSG_MAX];
    int rc = sim_page_record(d, v, opt, p, msg, sizeof msg), status = 0;
    p->origin = cmd->name;
    if (rc != PL_OK) {
        fflush(stdout);
        fprintf(stderr, "tilesim %s: --html: %s\n", cmd->name, msg);
        status = rc == PL_ENOMEM ? 1 : CLI_EXIT_USAGE;
    } else {
        FILE *f = fopen(path, "w");
        if (!f) {
            fflush(stdout);
            fprintf(stderr, "tilesim %s: --html: cannot write '%s': %s\n", cmd->name, path, strerror(errno));
            status = CLI_EXIT_USAGE;
        } else {
            sim_page_extras mine = extras ? *extras : (sim_page_extras){0};
            char *mem = mine.memory_viewer ? NULL : memory_svg(d, v, opt);
            if (mem) mine.memory_viewer = mem;
            int bad = sim_page_write(p, &mine, f);
            free(mem);
            int err = errno;
            if (fclose(f) != 0 || bad) {
                fflush(stdout);
                fprintf(stderr, "tilesim %s: --html: writing '%s' failed: %s\n", cmd->name, path,
                        strerror(bad ? err : errno));
                status = CLI_EXIT_USAGE;
            } else if (!quiet) {
                fprintf(stdout, "\npage: %s (%d of %lld steps; open it in a browser)\n", path, p->n_steps,
                        (long long)p->total_steps);
            }
        }
    }
    sim_page_free(p);
    free(p);
    return status;
}
