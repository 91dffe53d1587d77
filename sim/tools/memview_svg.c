/* sim/tools/memview_svg.c: the memory viewer's chart (sim/tilesim_memview.h): VMEM
 * live over the steps of the run, stacked by allocation, as a step chart;
 * the scoped VMEM limit and the physical VMEM as lines, the peak marked, a
 * legend row per allocation. Self-contained SVG: no scripts, no links, no
 * fonts to fetch, so that the HTML page can embed it as is.
 *
 * The y axis is linear from 0 to a little over the peak, so that the
 * allocations are readable. A limit far above it (the physical VMEM is
 * often 8x the scoped limit, the limit many times a small kernel's peak)
 * is drawn in a band above a break in the axis, labelled with its value.
 * More steps than columns: each column shows the busiest step of its range.
 */
#include <stdlib.h>
#include <string.h>

#include "../base/common.h"
#include "../tilesim_memview.h"

#define W 960
#define LEFT 90
#define RIGHT 30
#define TOP 56      /* the title */
#define BAND 44     /* the break band for limits off the scale */
#define PLOT_H 280
#define ROW 17      /* a legend row */
#define MAX_COLS 480

static const char *const palette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                                      "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

/* text with &, <, >, " and ' escaped */
static void esc(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&apos;", f); break;
        default: fputc(*s, f);
        }
    }
}

typedef struct chart {
    const pl_memview *mv;
    FILE *f;
    int cols;
    int64_t *step_of;   /* the step each column shows */
    double top;         /* bytes at the top of the linear scale */
    double y0, bottom;  /* the plot's top and bottom edges */
    double cw;          /* column width */
} chart;

static double y_of(const chart *c, double bytes) { return c->bottom - bytes / c->top * (c->bottom - c->y0); }
static double x_of(const chart *c, int col) { return LEFT + c->cw * col; }

static const char *color_of(const pl_memview *mv, int a)
{
    const pl_mem_alloc *al = &mv->allocs[a];
    int k = al->kind == PL_MEM_SCRATCH ? al->operand + 5 : al->operand; /* scratch: from the other end */
    return palette[k % (int)(sizeof palette / sizeof *palette)];
}

static double opacity_of(const pl_mem_alloc *al) { return al->slot > 0 ? 0.55 : 0.9; }

/* Columns: one per step, or the busiest step of each range. */
static int pick_columns(chart *c)
{
    const pl_memview *mv = c->mv;
    c->cols = mv->n_steps < MAX_COLS ? (int)mv->n_steps : MAX_COLS;
    if (!(c->step_of = calloc((size_t)c->cols, sizeof *c->step_of))) return -1;
    for (int k = 0; k < c->cols; k++) {
        int64_t lo = mv->n_steps * k / c->cols, hi = mv->n_steps * (k + 1) / c->cols, best = lo;
        for (int64_t s = lo; s < hi; s++)
            if (mv->steps[s].live_bytes > mv->steps[best].live_bytes) best = s;
        c->step_of[k] = best;
    }
    for (int k = 0; k < c->cols; k++) /* the peak's own column shows the peak */
        if (mv->n_steps * k / c->cols <= mv->peak_step && mv->peak_step < mv->n_steps * (k + 1) / c->cols)
            c->step_of[k] = mv->peak_step;
    c->cw = (double)(W - LEFT - RIGHT) / c->cols;
    return 0;
}

/* One rect per run of columns where allocation a is live on the same base;
 * base[k] (the bytes below it in column k) grows by it where it is live. */
static void draw_alloc(const chart *c, int a, double *base)
{
    const pl_memview *mv = c->mv;
    const pl_mem_alloc *al = &mv->allocs[a];
    fprintf(c->f, "<g class=\"alloc\" fill=\"%s\" fill-opacity=\"%.2f\"><title>", color_of(mv, a), opacity_of(al));
    esc(c->f, al->name);
    fprintf(c->f, "</title>\n");
    for (int k = 0; k < c->cols;) {
        if (!pl_memview_live(mv, c->step_of[k], a) || al->padded_bytes == 0) {
            k++;
            continue;
        }
        int e = k + 1;
        while (e < c->cols && pl_memview_live(mv, c->step_of[e], a) && base[e] == base[k]) e++;
        double yt = y_of(c, base[k] + (double)al->padded_bytes), yb = y_of(c, base[k]);
        fprintf(c->f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\"/>\n", x_of(c, k), yt,
                x_of(c, e) - x_of(c, k), yb - yt);
        for (int j = k; j < e; j++) base[j] += (double)al->padded_bytes;
        k = e;
    }
    fprintf(c->f, "</g>\n");
}

/* The scale, and where each limit goes: on it, or in the band above the break. */
static void scale(chart *c, double *y_limit, double *y_phys)
{
    const pl_memview *mv = c->mv;
    double peak = (double)mv->peak_bytes, lim = (double)mv->vmem_limit, phys = (double)mv->vmem_physical;
    double hi = (double)mv->reserved_bytes > peak ? (double)mv->reserved_bytes : peak;
    c->top = hi > 0 ? hi * 1.15 : lim > 0 ? lim : 1;
    if (lim > 0 && lim <= c->top * 1.6 && lim * 1.05 > c->top) c->top = lim * 1.05;
    c->y0 = TOP + BAND;
    c->bottom = c->y0 + PLOT_H;
    int lim_on = lim <= c->top, phys_on = phys <= c->top;
    *y_limit = lim_on ? y_of(c, lim) : TOP + (phys_on ? BAND * 0.6 : BAND * 0.75);
    *y_phys = phys_on ? y_of(c, phys) : TOP + (lim_on ? BAND * 0.6 : BAND * 0.3);
    if (!lim_on && lim == phys) *y_phys = *y_limit; /* the limit is the whole VMEM: one line, two labels */
}

static void axes(const chart *c)
{
    const pl_memview *mv = c->mv;
    FILE *f = c->f;
    char b[32];
    fprintf(f, "<g class=\"axes\" stroke=\"#444\" fill=\"none\"><path d=\"M%d %.1f V%.1f H%d\"/></g>\n", LEFT, c->y0 - 6,
            c->bottom, W - RIGHT);
    fprintf(f, "<path d=\"M%d %.1f l-6 4 l12 4 l-6 4\" stroke=\"#444\" fill=\"none\"/>\n", LEFT, c->y0 - 14);
    double unit = 1, step;
    while (unit * 1024 <= c->top / 4) unit *= 1024;
    double raw = c->top / 4 / unit, p10 = 1; /* 1, 2 or 5 x 10^k of KiB, MiB, ... */
    while (p10 * 10 <= raw) p10 *= 10;
    while (p10 > raw && p10 > 1e-3) p10 /= 10;
    step = (raw >= 5 * p10 ? 5 : raw >= 2 * p10 ? 2 : 1) * p10 * unit;
    for (int t = 0; t <= 6 && step * t <= c->top; t++) {
        double v = step * t;
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", LEFT - 6, y_of(c, v) + 4,
                pl_format_bytes(v, b, sizeof b));
        fprintf(f, "<path d=\"M%d %.1f H%d\" stroke=\"#ddd\"/>\n", LEFT, y_of(c, v), W - RIGHT);
    }
    int every = c->cols > 10 ? (c->cols + 9) / 10 : 1;
    for (int k = 0; k < c->cols; k += every)
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%lld</text>\n", x_of(c, k) + c->cw / 2,
                c->bottom + 16, (long long)c->step_of[k]);
    fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"middle\">step (program order)%s</text>\n", (LEFT + W - RIGHT) / 2,
            c->bottom + 34, c->cols < mv->n_steps ? "; each column: the busiest step of its range" : "");
    for (int k = 1; k < c->cols; k++) /* each core has its own VMEM: mark where the next one starts */
        if (mv->steps[c->step_of[k]].core != mv->steps[c->step_of[k - 1]].core)
            fprintf(f, "<path class=\"core\" d=\"M%.1f %.1f V%.1f\" stroke=\"#888\" stroke-dasharray=\"2 3\"/>"
                       "<text x=\"%.1f\" y=\"%.1f\">core %d</text>\n",
                    x_of(c, k), c->y0, c->bottom, x_of(c, k) + 3, c->y0 + 12, mv->steps[c->step_of[k]].core);
}

static void limits(const chart *c, double y_limit, double y_phys)
{
    const pl_memview *mv = c->mv;
    char b[32];
    fprintf(c->f, "<path class=\"limit-scoped\" d=\"M%d %.1f H%d\" stroke=\"#d62728\" stroke-width=\"1.5\" "
                  "stroke-dasharray=\"6 3\"/>\n<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" fill=\"#d62728\">"
                  "scoped VMEM limit %s (M4)</text>\n",
            LEFT, y_limit, W - RIGHT, W - RIGHT, y_limit - 3, pl_format_bytes((double)mv->vmem_limit, b, sizeof b));
    if ((double)mv->reserved_bytes <= c->top && mv->reserved_bytes > mv->peak_bytes) /* slots never live at once */
        fprintf(c->f, "<path class=\"reserved\" d=\"M%d %.1f H%d\" stroke=\"#777\" stroke-dasharray=\"1 3\"/>\n"
                      "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" fill=\"#555\">reserved %s (the M4 budget): "
                      "more than is ever live at once</text>\n",
                LEFT, y_of(c, (double)mv->reserved_bytes), W - RIGHT, W - RIGHT, y_of(c, (double)mv->reserved_bytes) - 3,
                pl_format_bytes((double)mv->reserved_bytes, b, sizeof b));
    fprintf(c->f, "<path class=\"limit-physical\" d=\"M%d %.1f H%d\" stroke=\"#222\" stroke-width=\"1.5\"/>\n"
                  "<text x=\"%d\" y=\"%.1f\" fill=\"#222\">physical VMEM %s</text>\n",
            LEFT, y_phys, W - RIGHT, LEFT + 4, y_phys - 3, pl_format_bytes((double)mv->vmem_physical, b, sizeof b));
}

static void peak_mark(const chart *c)
{
    const pl_memview *mv = c->mv;
    int k = 0;
    while (k + 1 < c->cols && c->step_of[k] != mv->peak_step) k++;
    double x = x_of(c, k) + c->cw / 2, y = y_of(c, (double)mv->peak_bytes);
    char b[32], pt[128];
    sim_format_idx(mv->steps[mv->peak_step].idx, mv->grid_rank, pt, sizeof pt);
    fprintf(c->f, "<g class=\"peak\"><path d=\"M%.1f %.1f V%.1f\" stroke=\"#000\" stroke-dasharray=\"3 2\"/>"
                  "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"#000\"/><text x=\"%.1f\" y=\"%.1f\" "
                  "text-anchor=\"%s\">peak %s at step %lld %s</text></g>\n",
            x, y, c->bottom, x, y, x + (x > W / 2 ? -8 : 8), y - 8, x > W / 2 ? "end" : "start",
            pl_format_bytes((double)mv->peak_bytes, b, sizeof b), (long long)mv->peak_step, pt);
}

static void legend(const chart *c, double y)
{
    const pl_memview *mv = c->mv;
    for (int a = 0; a < mv->n_allocs; a++, y += ROW) {
        const pl_mem_alloc *al = &mv->allocs[a];
        char shp[96] = "", b1[32], b2[32];
        for (int d = 0, at = 0; d < al->rank && at < (int)sizeof shp; d++)
            at += snprintf(shp + at, sizeof shp - (size_t)at, "%s%lld", d ? "x" : "", (long long)al->shape[d]);
        fprintf(c->f, "<rect x=\"%d\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\" fill-opacity=\"%.2f\"/>"
                      "<text x=\"%d\" y=\"%.1f\">", LEFT, y, color_of(mv, a), opacity_of(al), LEFT + 18, y + 10);
        esc(c->f, al->name);
        fprintf(c->f, " \xe2\x80\x94 %s %s %s, %s (%s padded), live %lld of %lld steps%s</text>\n",
                al->kind == PL_MEM_SCRATCH ? "scratch" : al->role == PL_ROLE_OUT ? "output slot" : "input slot",
                shp, pl_dtype_name(al->dtype), pl_format_bytes((double)al->bytes, b1, sizeof b1),
                pl_format_bytes((double)al->padded_bytes, b2, sizeof b2), (long long)al->live_steps,
                (long long)mv->n_steps, al->live_steps ? "" : ": never filled");
    }
}

int pl_memview_svg(const pl_memview *mv, FILE *f)
{
    if (!mv || !f || mv->status != PL_OK || !mv->state || mv->n_steps < 1) return PL_EINVAL;
    chart c = {.mv = mv, .f = f};
    double *base = NULL, y_limit, y_phys;
    if (pick_columns(&c) || !(base = calloc((size_t)c.cols, sizeof *base))) {
        free(c.step_of);
        return PL_ENOMEM;
    }
    scale(&c, &y_limit, &y_phys);
    int h = (int)c.bottom + 50 + ROW * mv->n_allocs + 10;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
               "font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n"
               "<text x=\"%d\" y=\"22\" font-size=\"15\">VMEM over the steps of ", W, h, W, h, W, h, LEFT);
    esc(f, mv->call_name);
    fprintf(f, " on ");
    esc(f, mv->chip_name);
    char r[32];
    fprintf(f, "</text>\n<text x=\"%d\" y=\"40\">live buffer slots and scratch per grid step, stacked; "
               "reserved (the M4 budget) %s</text>\n", LEFT, pl_format_bytes((double)mv->reserved_bytes, r, sizeof r));
    axes(&c);
    for (int pass = 0; pass < 2; pass++) /* scratch at the bottom: it never moves */
        for (int a = 0; a < mv->n_allocs; a++)
            if ((mv->allocs[a].kind == PL_MEM_SCRATCH) == !pass) draw_alloc(&c, a, base);
    limits(&c, y_limit, y_phys);
    peak_mark(&c);
    legend(&c, c.bottom + 48);
    fprintf(f, "</svg>\n");
    free(base);
    free(c.step_of);
    return ferror(f) ? PL_EINVAL : PL_OK;
}
