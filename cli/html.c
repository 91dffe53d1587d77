/* cli/html.c: `--html FILE` on `tilesim run KERNEL` and `tilesim explain
 * KERNEL`: the teaching page of the configuration (sim/tools/html.h), one
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

#include "../sim/tools/html.h"
#include "../sim/base/outfile.h"
#include "../sim/tilesim_memview.h"
#include "cli.h"

static void html_text(FILE *f, const char *s)
{
    for (; *s; s++) fputs(*s == '<' ? "&lt;" : *s == '>' ? "&gt;" : *s == '&' ? "&amp;" : (char[2]){*s, 0}, f);
}

/* The op profile of the page's walk as an HTML table (tilesim profile's
 * rows, sorted so the ops worth attention come first), malloc'd. */
static char *profile_table(const pl_report *r)
{
    char *html = NULL, t[32];
    size_t n = 0;
    FILE *f = open_memstream(&html, &n);
    if (!f) return NULL;
    int order[PL_MAX_PROFILE], rows = pl_profile_order(r, order);
    pl_format_time(r->time_s, t, sizeof t);
    fprintf(f, "<p>");
    html_text(f, r->call_name); /* the user's name for the call: text, never markup */
    fprintf(f, ": %s in all; the rows but the overlapped copies add up to it.</p>\n<table>\n<tr><th>category"
            "</th><th>op</th><th>count</th><th>time</th><th>share</th><th>FLOP/s</th><th>of peak</th>"
            "<th>bandwidth</th><th>of peak</th><th></th></tr>\n", t);
    for (int i = 0; i < rows; i++) {
        const pl_profile_row *row = &r->profile[order[i]];
        pl_profile_rates q = pl_profile_rates_of(r, row);
        pl_format_time(row->overlapped ? row->busy_s : row->time_s, t, sizeof t);
        fprintf(f, "<tr><td>%s</td><td>", pl_prof_cat_name(row->cat));
        html_text(f, row->name);
        fprintf(f, "</td><td>%lld</td><td>%s</td>", (long long)row->count, t);
        if (row->overlapped) fprintf(f, "<td>-</td>");
        else fprintf(f, "<td>%.1f%%</td>", r->time_s > 0 ? 100 * row->time_s / r->time_s : 0);
        if (q.peak_flops > 0) fprintf(f, "<td>%.3g</td><td>%.0f%%</td>", q.flops_per_s, 100 * q.flops_per_s / q.peak_flops);
        else fprintf(f, "<td></td><td></td>");
        if (q.peak_bw > 0) fprintf(f, "<td>%.3g GB/s</td><td>%.0f%%</td>", q.bw / 1e9, 100 * q.bw / q.peak_bw);
        else fprintf(f, "<td></td><td></td>");
        fprintf(f, "<td>%s</td></tr>\n", row->overlapped ? "overlapped" : q.vmem_bound ? "VMEM-bound" : "");
    }
    fprintf(f, "</table>\n");
    if (fclose(f) != 0) {
        free(html);
        return NULL;
    }
    return html;
}

/* The run's roofline (an <svg>) of the page's walk, malloc'd, or NULL. */
static char *roofline_svg(const pl_report *r)
{
    char *svg = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&svg, &n);
    if (!f) return NULL;
    int bad = pl_roofline_run_svg(r, NULL, f);
    if (fclose(f) != 0 || bad) {
        free(svg);
        return NULL;
    }
    return svg;
}

/* The memory viewer's chart of the configuration as an HTML fragment (an
 * <svg>), malloc'd; NULL when it cannot be made (the page then says "not
 * available"). */
static char *memory_svg(const pl_kernel_def *d, const int64_t *v, const pl_options *given)
{
    pl_options opt = *given;
    opt.trace_path = NULL;
    opt.on_step = NULL; /* the caller's recorder (explain's narrator) has done its walk; its state is gone */
    opt.on_step_user = NULL;
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
        sim_out *f = sim_out_open(path, msg, sizeof msg); /* temp + rename: a failure leaves path as it was */
        if (!f) {
            fflush(stdout);
            fprintf(stderr, "tilesim %s: --html: %s\n", cmd->name, msg);
            status = CLI_EXIT_USAGE;
        } else {
            sim_page_extras mine = extras ? *extras : (sim_page_extras){0};
            char *mem = mine.memory_viewer ? NULL : memory_svg(d, v, opt);
            char *prof = mine.op_profile ? NULL : profile_table(&p->rep);
            char *roof = mine.roofline ? NULL : roofline_svg(&p->rep);
            if (mem) mine.memory_viewer = mem;
            if (prof) mine.op_profile = prof;
            if (roof) mine.roofline = roof;
            int bad = sim_page_write(p, &mine, f->f);
            free(mem), free(prof), free(roof);
            if (bad) snprintf(msg, sizeof msg, "writing '%s' failed: %s", path, strerror(errno)), sim_out_abort(f);
            if (bad || sim_out_commit(f, msg, sizeof msg)) {
                fflush(stdout);
                fprintf(stderr, "tilesim %s: --html: %s\n", cmd->name, msg);
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
