/* sim/tools/roofline_run.c: the roofline of one run, as XProf's roofline tool
 * draws a profile's ops: each row of the op profile with FLOPs is a point at
 * its arithmetic intensity (FLOP per byte it reads and writes in VMEM) and
 * its achieved FLOP/s (FLOPs over the time its unit was busy), under the
 * ceilings of one TensorCore: HBM (its share of the device's bandwidth) and
 * VMEM (pl_chip.vmem_bw) times intensity, and the MXU and VPU peaks. An op
 * whose intensity puts it under the VMEM line is VMEM-bound, and labelled
 * so. The run itself is a point at its FLOP per HBM byte (as the sweep's
 * roofline places a configuration), per core. Drawing: svgplot.c, shared
 * with the sweep's roofline (roofline.c). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../base/svgplot.h"
#include "../tilesim.h"

typedef struct run_roofs {
    double mxu, vpu;   /* TFLOP/s of one TensorCore */
    double hbm, vmem;  /* bytes/s: a core's share of HBM, its VMEM (0: none) */
} run_roofs;

static run_roofs roofs_of(const pl_report *r)
{
    const pl_chip *c = r->chip;
    int cores = c->cores_per_device > 0 ? c->cores_per_device : 1;
    return (run_roofs){pl_chip_mxu_rate(c, r->mxu_dtype) / 1e12, c->vpu_flops / 1e12, c->hbm_bw / cores,
                       c->vmem_bw > 0 ? c->vmem_bw : 0};
}

static int plotted(const pl_profile_row *w)
{
    return w->flops > 0 && w->busy_s > 0 && w->vmem_bytes > 0;
}

/* The run: all FLOPs per HBM byte, per core (the roofs are a core's). */
static double run_x(const pl_report *r)
{
    return r->hbm_bytes > 0 ? (r->mxu_flops + r->vpu_flops) / (double)r->hbm_bytes : 0;
}
static double run_y(const pl_report *r)
{
    return r->time_s > 0 && r->cores > 0 ? (r->mxu_flops + r->vpu_flops) / r->time_s / r->cores / 1e12 : 0;
}

static sim_axes run_axes(const pl_report *r, const run_roofs *rf)
{
    double lo_bw = rf->vmem > 0 ? rf->vmem : rf->hbm;
    double xmin = rf->vpu * 1e12 / lo_bw, xmax = rf->mxu * 1e12 / rf->hbm, ymin = rf->vpu, ymax = rf->mxu;
    for (int i = 0; i < r->n_profile; i++) {
        const pl_profile_row *w = &r->profile[i];
        if (!plotted(w)) continue;
        pl_profile_rates p = pl_profile_rates_of(r, w);
        xmin = fmin(xmin, p.intensity), xmax = fmax(xmax, p.intensity);
        ymin = fmin(ymin, p.flops_per_s / 1e12), ymax = fmax(ymax, p.flops_per_s / 1e12);
    }
    if (run_x(r) > 0 && run_y(r) > 0) {
        xmin = fmin(xmin, run_x(r)), xmax = fmax(xmax, run_x(r));
        ymin = fmin(ymin, run_y(r)), ymax = fmax(ymax, run_y(r));
    }
    return sim_plot_axes(xmin, xmax, ymin, ymax);
}

/* Labels placed so far (boxes on the page), so that the next one moves
 * down until it hides none: ops of one shape land on one spot (a norm's
 * multiplies), and their names would print over each other. */
typedef struct label_boxes {
    int n;
    double x0[PL_MAX_PROFILE], x1[PL_MAX_PROFILE], y0[PL_MAX_PROFILE], y1[PL_MAX_PROFILE];
} label_boxes;

#define CHAR_W 7.2 /* px per character of the page's 12 px sans-serif, with room */

/* A label already on the page (a ceiling's), which the op labels avoid. */
static void taken(label_boxes *b, double x0, double y, size_t chars)
{
    if (b->n >= PL_MAX_PROFILE) return;
    b->x0[b->n] = x0, b->x1[b->n] = x0 + CHAR_W * (double)chars, b->y0[b->n] = y - 11, b->y1[b->n] = y + 3;
    b->n++;
}

/* The row a label of `chars` characters starting at x takes: y, moved down
 * past every label it would hide. */
static double free_row(label_boxes *b, double x, double y, size_t chars)
{
    double w = CHAR_W * (double)chars;
    for (int moved = 1, tries = 0; moved && tries < 2 * PL_MAX_PROFILE; tries++) {
        moved = 0;
        for (int k = 0; k < b->n; k++)
            if (x < b->x1[k] && x + w > b->x0[k] && y - 11 < b->y1[k] && y + 3 > b->y0[k]) y += 14, moved = 1;
    }
    if (b->n < PL_MAX_PROFILE) {
        b->x0[b->n] = x, b->x1[b->n] = x + w, b->y0[b->n] = y - 11, b->y1[b->n] = y + 3;
        b->n++;
    }
    return y;
}

/* A flat roof's label as sim_plot_flat_roof writes it, right-aligned at the plot's edge: its box. */
static void roof_label(const sim_axes *a, double peak, const char *name, label_boxes *b)
{
    char t[64];
    size_t n = (size_t)snprintf(t, sizeof t, "%s peak %.3g TFLOP/s", name, peak);
    taken(b, SIM_PLOT_R - 6 - CHAR_W * (double)n, sim_plot_y(a, peak) - 6, n);
}

static void ceilings(const sim_axes *a, const run_roofs *rf, label_boxes *b, FILE *f)
{
    char t[96];
    sim_plot_slope(a, rf->hbm, rf->mxu, "#009E73", f);
    taken(b, SIM_PLOT_L + 8, SIM_PLOT_T + 16,
          (size_t)snprintf(t, sizeof t, "HBM %.0f GB/s x intensity (a core's share)", rf->hbm / 1e9));
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#009E73\">%s</text>\n", SIM_PLOT_L + 8, SIM_PLOT_T + 16, t);
    double flat_from = rf->hbm;
    if (rf->vmem > 0) {
        sim_plot_slope(a, rf->vmem, rf->mxu, "#56B4E9", f);
        taken(b, SIM_PLOT_L + 8, SIM_PLOT_T + 32,
              (size_t)snprintf(t, sizeof t, "VMEM %.0f GB/s x intensity", rf->vmem / 1e9));
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#56B4E9\">%s</text>\n", SIM_PLOT_L + 8, SIM_PLOT_T + 32, t);
        flat_from = rf->vmem;
    }
    sim_plot_flat_roof(a, flat_from, rf->mxu, "#E69F00", "MXU", f);
    roof_label(a, rf->mxu, "MXU", b);
    if (rf->vpu > 0 && rf->vpu < rf->mxu) {
        sim_plot_flat_roof(a, flat_from, rf->vpu, "#CC79A7", "VPU", f);
        roof_label(a, rf->vpu, "VPU", b);
    }
}

/* x where a label of `chars` characters beside a point at px starts: to its
 * right, or to its left where the right would run off the page. */
static double label_x(double px, size_t chars)
{
    double w = CHAR_W * (double)chars;
    return px + 8 + w <= SIM_PLOT_W - 4 ? px + 8 : px - 8 - w;
}

static const char *colour_of(pl_prof_cat c)
{
    return c == PL_PROF_MXU ? "#D55E00" : c == PL_PROF_EUP ? "#882255" : c == PL_PROF_SCALAR ? "#555555" : "#0072B2";
}

/* Where row i's point goes on the page. */
static void place(const sim_axes *a, const pl_report *r, int i, double *x, double *y)
{
    pl_profile_rates p = pl_profile_rates_of(r, &r->profile[i]);
    *x = sim_plot_x(a, p.intensity);
    *y = sim_plot_y(a, p.flops_per_s / 1e12);
}

static void point(const sim_axes *a, const pl_report *r, int i, label_boxes *boxes, FILE *f)
{
    char t[32];
    const pl_profile_row *w = &r->profile[i];
    pl_profile_rates p = pl_profile_rates_of(r, w);
    double x, y;
    place(a, r, i, &x, &y);
    fprintf(f, "<circle class=\"op\" cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\" fill-opacity=\"0.8\"><title>", x, y,
            colour_of(w->cat));
    sim_xml_text(f, w->name);
    fprintf(f, " (%s): %lld ops, %s busy, %.3g FLOP per VMEM byte, %.3g TFLOP/s of %.3g%s</title></circle>\n",
            pl_prof_cat_name(w->cat), (long long)w->count, pl_format_time(w->busy_s, t, sizeof t), p.intensity,
            p.flops_per_s / 1e12, p.peak_flops / 1e12, p.vmem_bound ? ", VMEM-bound" : "");
    size_t chars = strlen(w->name) + (p.vmem_bound ? 14 : 0);
    double lx = label_x(x, chars), ly = free_row(boxes, lx, y - 6, chars);
    if (ly > y + 8) /* moved down past others: a leader line back to its point */
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"0.6\"/>\n", x, y,
                lx > x ? lx - 1 : lx + CHAR_W * (double)chars + 1, ly - 4, colour_of(w->cat));
    fprintf(f, "<text class=\"label\" x=\"%.1f\" y=\"%.1f\" fill=\"%s\" stroke=\"#fff\" stroke-width=\"3\" "
               "paint-order=\"stroke\">", lx, ly, colour_of(w->cat));
    sim_xml_text(f, w->name);
    fprintf(f, "%s</text>\n", p.vmem_bound ? " (VMEM-bound)" : "");
}

/* Does some op go faster than VMEM could feed it (the model times ops by
 * their unit alone)? */
static int above_vmem(const pl_report *r, const run_roofs *rf)
{
    for (int i = 0; rf->vmem > 0 && i < r->n_profile; i++) {
        const pl_profile_row *w = &r->profile[i];
        if (!plotted(w)) continue;
        pl_profile_rates p = pl_profile_rates_of(r, w);
        if (p.flops_per_s > rf->vmem * p.intensity * 1.001) return 1;
    }
    return 0;
}

static void run_point(const sim_axes *a, const pl_report *r, label_boxes *boxes, FILE *f)
{
    if (!(run_x(r) > 0 && run_y(r) > 0)) return;
    double x = sim_plot_x(a, run_x(r)), y = sim_plot_y(a, run_y(r));
    fprintf(f, "<rect class=\"run\" x=\"%.1f\" y=\"%.1f\" width=\"10\" height=\"10\" fill=\"#000\"><title>the run: "
               "%.3g FLOP per HBM byte, %.3g TFLOP/s per core, %s-bound</title></rect>\n",
            x - 5, y - 5, run_x(r), run_y(r), pl_bound_name(r->bound));
    static const char label[] = "the run (per HBM byte)";
    size_t chars = sizeof label - 1 + 2; /* bold: wider */
    double lx = label_x(x, chars), ly = free_row(boxes, lx, y + 16, chars);
    fprintf(f, "<text class=\"label\" x=\"%.1f\" y=\"%.1f\" font-weight=\"bold\">%s</text>\n", lx, ly, label);
}

int pl_roofline_run_svg(const pl_report *r, const char *title, FILE *f)
{
    if (!r || !f || r->status != PL_OK || !r->chip || !(r->chip->hbm_bw > 0)) return -1;
    run_roofs rf = roofs_of(r);
    if (!(rf.mxu > 0)) return -1;
    sim_axes a = run_axes(r, &rf);
    sim_plot_open(f);
    fprintf(f, "<text x=\"%.1f\" y=\"28\" text-anchor=\"middle\" font-size=\"15\">roofline of a run: ",
            (SIM_PLOT_L + SIM_PLOT_R) / 2);
    sim_xml_text(f, title && *title ? title : r->call_name);
    fprintf(f, " on ");
    sim_xml_text(f, r->chip->name);
    fprintf(f, ", one TensorCore's ceilings</text>\n");
    sim_plot_ticks(&a, "arithmetic intensity (FLOP per byte: ops per VMEM byte, the run per HBM byte)",
                   "achieved TFLOP/s (per TensorCore)", f);
    label_boxes boxes = {0};
    ceilings(&a, &rf, &boxes, f);
    for (int i = 0; i < r->n_profile; i++)
        if (plotted(&r->profile[i])) point(&a, r, i, &boxes, f);
    if (above_vmem(r, &rf))
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">Ops above the VMEM line are timed at their unit's rate; "
                   "on hardware VMEM bandwidth would hold them to it.</text>\n", SIM_PLOT_L, SIM_PLOT_H - 8);
    run_point(&a, r, &boxes, f);
    fprintf(f, "</svg>\n");
    return ferror(f) ? -1 : 0;
}
