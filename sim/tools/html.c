/* sim/tools/html.c: the teaching page (sim/tools/html.h) as one self-contained HTML
 * file: the style sheet and the script inline, the recorded data as JSON in
 * a <script type="application/json">, nothing fetched from anywhere.
 *
 * The block cells of each operand's array are written here, in the HTML
 * itself, so that the page shows its grids before (and without) the
 * script; the script only marks them at each step. Every name that comes
 * from a kernel definition is escaped: as HTML text, or, inside the data
 * script, as a JSON string with "</" written "<\/" so that no name can end
 * the script element.
 */
#include <stdlib.h>
#include <string.h>

#include "html.h"
#include "../base/json.h"

static const char axis_letter[PL_MAX_GRID] = {'i', 'j', 'k', 'l', 'm', 'n'};

static void esc(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(*s, f);
        }
    }
}

static void tuple(FILE *f, const int64_t *v, int n)
{
    fputc('(', f);
    for (int d = 0; d < n; d++) fprintf(f, "%s%lld", d ? ", " : "", (long long)v[d]);
    fputc(')', f);
}

static int64_t cells_of(const sim_page_operand *o)
{
    if (o->rank < 1) return 0;
    int64_t n = 1;
    for (int d = 0; d < o->rank; d++) {
        if (o->nblocks[d] <= 0) return 0;
        n = n > SIM_PAGE_MAX_CELLS ? n : n * o->nblocks[d];
    }
    return n;
}

/* Pipelined operands (not scalar prefetch, not left in HBM) have a grid of blocks. */
static int pipelined(const sim_page_operand *o)
{
    return o->role != PL_ROLE_PREFETCH && o->space != PL_ANY && o->space != PL_SEMAPHORE;
}

static const char *role_word(pl_role r)
{
    return r == PL_ROLE_IN ? "input" : r == PL_ROLE_OUT ? "output" : r == PL_ROLE_PREFETCH ? "scalar prefetch" : "operand";
}

/* ---- the step-through -------------------------------------------------------------- */

static void write_array(FILE *f, int i, const sim_page_operand *o)
{
    fprintf(f, "<div class=\"array\" id=\"arr%d\"><h3>", i);
    esc(f, o->name);
    fprintf(f, " <span class=\"dim\">%s, %s ", role_word(o->role), pl_dtype_name(o->dtype));
    tuple(f, o->shape, o->rank);
    fprintf(f, ", block ");
    tuple(f, o->block, o->rank);
    fprintf(f, " (B1), ");
    if (!pipelined(o)) {
        fprintf(f, "%s: no pipeline copies (%s)</span></h3></div>\n",
                o->role == PL_ROLE_PREFETCH ? "in SMEM, read by the index maps" : "stays in HBM",
                o->role == PL_ROLE_PREFETCH ? "rule M5" : "rule T5");
        return;
    }
    int64_t n = cells_of(o), cols = o->rank ? o->nblocks[o->rank - 1] : 1;
    fprintf(f, "%lld blocks, %d VMEM buffer%s (P6)</span></h3>\n", (long long)n, o->buffers, o->buffers == 1 ? "" : "s");
    fprintf(f, "<div class=\"slots\" id=\"slots%d\"></div>\n", i);
    if (n <= 0 || n > SIM_PAGE_MAX_CELLS) {
        fprintf(f, "<p class=\"na\">%s: not drawn (at most %d cells a page)</p></div>\n",
                n ? "too many blocks" : "no block grid", SIM_PAGE_MAX_CELLS);
        return;
    }
    fprintf(f, "<div class=\"grid\" style=\"grid-template-columns:repeat(%lld,var(--cell))\">", (long long)cols);
    for (int64_t c = 0; c < n; c++) {
        int64_t b[PL_MAX_RANK], rest = c;
        for (int d = o->rank - 1; d >= 0; d--) b[d] = rest % o->nblocks[d], rest /= o->nblocks[d];
        fprintf(f, "<div class=\"cell\" id=\"c%d-%lld\" title=\"", i, (long long)c);
        esc(f, o->name);
        fprintf(f, " block ");
        tuple(f, b, o->rank);
        fprintf(f, "\"></div>");
    }
    fprintf(f, "</div></div>\n");
}

static void write_walk(FILE *f, const sim_page *p)
{
    int64_t shown = p->n_steps;
    fprintf(f, "<section id=\"walk\"><h2>The grid walk, step by step</h2>\n<p class=\"dim\">grid ");
    tuple(f, p->grid, p->grid_rank);
    fprintf(f, ": %lld steps, the last axis fastest (G1); axes ", (long long)p->total_steps);
    for (int a = 0; a < p->grid_rank; a++) fprintf(f, "%s%c", a ? ", " : "", axis_letter[a]);
    fprintf(f, ". Hover over a cell or an event for the rule behind it.</p>\n");
    if (shown < p->total_steps)
        fprintf(f, "<p class=\"note\" id=\"capnote\">The run has %lld steps; this page embeds the first %lld "
                   "(at most %d).</p>\n", (long long)p->total_steps, (long long)shown, SIM_PAGE_MAX_STEPS);
    fprintf(f, "<div id=\"controls\"><button id=\"prev\" type=\"button\">&#9664; previous</button>"
               "<button id=\"play\" type=\"button\">play</button>"
               "<button id=\"next\" type=\"button\">next &#9654;</button>"
               "<input type=\"range\" id=\"slider\" min=\"0\" max=\"%lld\" value=\"0\" step=\"1\">"
               "<span id=\"stepno\">step 1 of %lld</span></div>\n",
            (long long)(shown > 0 ? shown - 1 : 0), (long long)shown);
    fprintf(f, "<div id=\"status\">step 0</div>\n<div id=\"legend\"><span class=\"cell held\"></span>in a VMEM slot "
               "<span class=\"cell cur\"></span>used by this step <span class=\"cell inflight\"></span>copy in "
               "flight for the next step <span class=\"cell wb\"></span>written back after this step</div>\n");
    fprintf(f, "<div id=\"arrays\">\n");
    for (int i = 0; i < p->n_ops; i++) write_array(f, i, &p->op[i]);
    fprintf(f, "</div>\n<div id=\"stepinfo\"><h3>What the pipeline does</h3><ul id=\"events\"></ul>"
               "<h3>The kernel's ops</h3><p id=\"kops\"></p></div></section>\n");
}

/* ---- the data ------------------------------------------------------------------------ */

static void json_ints(FILE *f, const int64_t *v, int n)
{
    fputc('[', f);
    for (int d = 0; d < n; d++) fprintf(f, "%s%lld", d ? "," : "", (long long)v[d]);
    fputc(']', f);
}

static void write_steps(FILE *f, const sim_page *p)
{
    fprintf(f, ",\"steps\":[");
    for (int s = 0; s < p->n_steps; s++) {
        const sim_page_step *st = &p->steps[s];
        fprintf(f, "%s\n{\"c\":%d,\"s\":%lld,\"g\":", s ? "," : "", st->core, (long long)st->step);
        json_ints(f, st->idx, p->grid_rank);
        fprintf(f, ",\"k\":");
        pl_json_string(f, st->ops);
        fprintf(f, ",\"o\":[");
        for (int i = 0; i < p->n_ops; i++) {
            const sim_page_opstep *o = &st->op[i];
            fprintf(f, "%s[%d,", i ? "," : "", o->act);
            json_ints(f, o->block, p->op[i].rank);
            fprintf(f, ",%d,", o->slot);
            if (o->wb) json_ints(f, o->wb_block, p->op[i].rank);
            else fputc('0', f);
            fputc(']', f);
        }
        fprintf(f, "]}");
    }
    fprintf(f, "]");
}

static void write_data(FILE *f, const sim_page *p)
{
    fprintf(f, "{\"title\":");
    pl_json_string(f, p->title);
    fprintf(f, ",\"origin\":");
    pl_json_string(f, p->origin ? p->origin : "run");
    fprintf(f, ",\"grid\":");
    json_ints(f, p->grid, p->grid_rank);
    fprintf(f, ",\"total_steps\":%lld,\"cap\":%d,\"overhead_s\":%.9g,\"time_s\":%.9g,\"ops\":[",
            (long long)p->total_steps, SIM_PAGE_MAX_STEPS, p->step_overhead_s, p->rep.time_s);
    for (int i = 0; i < p->n_ops; i++) {
        const sim_page_operand *o = &p->op[i];
        int64_t n = cells_of(o);
        fprintf(f, "%s{\"name\":", i ? "," : "");
        pl_json_string(f, o->name);
        fprintf(f, ",\"role\":\"%s\",\"buffers\":%d,\"pipelined\":%d,\"drawn\":%d,\"nb\":", role_word(o->role),
                o->buffers, pipelined(o), pipelined(o) && n > 0 && n <= SIM_PAGE_MAX_CELLS);
        json_ints(f, o->nblocks, o->rank);
        fputc('}', f);
    }
    fprintf(f, "]");
    write_steps(f, p);
    fprintf(f, ",\"trace_cut\":%d,\"trace\":", p->trace_cut);
    if (p->trace && p->trace_len) fwrite(p->trace, 1, p->trace_len, f);
    else fputs("null", f);
    fprintf(f, "}");
}

/* The data as JSON, with every "</" written "<\/" (the same string in
 * JSON), so that nothing in it closes the script element. */
static int write_data_script(FILE *f, const sim_page *p)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m) return -1;
    write_data(m, p);
    if (fclose(m) != 0) return free(buf), -1;
    fprintf(f, "<script type=\"application/json\" id=\"data\">");
    for (size_t i = 0; i < len; i++) {
        if (buf[i] == '<' && i + 1 < len && buf[i + 1] == '/') fputs("<\\", f);
        else fputc(buf[i], f);
    }
    fprintf(f, "</script>\n");
    free(buf);
    return 0;
}

/* ---- the sections of other tools ------------------------------------------------------ */

static void section(FILE *f, const char *id, const char *title, const char *what, const char *html)
{
    fprintf(f, "<section id=\"%s\" class=\"tool\"><h2>", id);
    esc(f, title);
    fprintf(f, "</h2>\n");
    if (what) fprintf(f, "<p class=\"dim\">%s</p>\n", what);
    if (html && *html) fprintf(f, "%s\n", html);
    else fprintf(f, "<p class=\"na\">not available</p>\n");
    fprintf(f, "</section>\n");
}

static void write_tools(FILE *f, const sim_page_extras *x)
{
    section(f, "op-profile", "Op profile",
            "Time per op kind (pl_dot, VPU ops, DMAs, step overhead) with its FLOPs, bytes and share of the total, "
            "as XProf's HLO op profile.", x ? x->op_profile : NULL);
    section(f, "roofline", "Roofline", "Each op of the run by arithmetic intensity against achieved FLOP/s, "
            "under the HBM and VMEM ceilings.", x ? x->roofline : NULL);
    section(f, "memory-viewer", "Memory viewer", "VMEM in use over the steps, its peak and what is live at it, "
            "against the scoped limit.", x ? x->memory_viewer : NULL);
    for (int i = 0; x && i < x->n_more && i < SIM_PAGE_MAX_MORE; i++) {
        char id[32];
        snprintf(id, sizeof id, "more-%d", i);
        section(f, id, x->more_title[i] ? x->more_title[i] : "", NULL, x->more_html[i]);
    }
}

int sim_page_write(const sim_page *p, const sim_page_extras *extras, FILE *f)
{
    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>tilesim: ");
    esc(f, p->title);
    fprintf(f, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<header><h1>tilesim: ", sim_page_css);
    esc(f, p->title);
    fprintf(f, "</h1>\n<p class=\"dim\">Written by <code>tilesim %s ... --html</code>: the grid walk of one "
               "configuration (as <code>tilesim explain</code> narrates it), its timeline and the profile tools. "
               "Nothing here is fetched from the network.</p></header>\n", p->origin ? p->origin : "run");
    write_walk(f, p);
    fprintf(f, "<section id=\"timeline\"><h2>Timeline</h2>\n<p class=\"dim\">Per TensorCore: the kernel steps, "
               "the step overhead before each (P9), and each buffer slot's DMAs (P8), as the trace viewer shows "
               "them. Click a step to go to it.</p>\n<div id=\"tl\"><p class=\"dim\">drawn by the page's script</p></div>"
               "</section>\n");
    write_tools(f, extras);
    fprintf(f, "<pre id=\"selftest\"></pre>\n");
    if (write_data_script(f, p)) return -1;
    fprintf(f, "<script>\n%s</script>\n</body></html>\n", sim_page_js);
    return ferror(f) ? -1 : 0;
}
