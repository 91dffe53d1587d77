/* sim/tools/roofline.c: the roofline plot of any sweep as a standalone SVG file.
 *
 * Log-log axes: x = FLOP per HBM byte over the whole call, MXU and VPU work
 * together (a norm or a softmax does its work on the VPU); y = achieved
 * TFLOP/s. The roofs are the HBM ceiling (bandwidth x intensity), the MXU
 * peak and the VPU peak of the cores that ran. Every legal configuration is
 * a point with its label as a tooltip; the fastest is red and labelled. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../base/outfile.h"
#include "../base/svgplot.h"
#include "../tilesim.h"

#define L SIM_PLOT_L
#define R SIM_PLOT_R
#define T SIM_PLOT_T
#define B SIM_PLOT_B

static double work(const pl_report *r) { return r->mxu_flops + r->vpu_flops; }
static double xval(const pl_report *r) { return r->hbm_bytes > 0 ? work(r) / (double)r->hbm_bytes : 0; }
static double yval(const pl_report *r) { return r->time_s > 0 ? work(r) / r->time_s / 1e12 : 0; }
static int plottable(const pl_report *r) { return r->status == PL_OK && xval(r) > 0 && yval(r) > 0; }

typedef struct roofs {
    double mxu, vpu, bw; /* TFLOP/s, TFLOP/s, bytes/s */
} roofs;

static roofs chip_roofs(const pl_chip *chip, int n, const pl_report *reports)
{
    int cores = chip->cores_per_device > 0 ? chip->cores_per_device : 1;
    roofs r = {pl_chip_mxu_rate(chip, PL_BF16) * cores / 1e12, chip->vpu_flops * cores / 1e12, chip->hbm_bw};
    for (int i = 0; i < n; i++) /* the peak the reports' %MXU refers to */
        if (reports[i].status == PL_OK && reports[i].peak_fraction > 0 && reports[i].flops_per_s > 0) {
            r.mxu = reports[i].flops_per_s / reports[i].peak_fraction / 1e12;
            break;
        }
    return r;
}

static sim_axes domain(int n, const pl_report *reports, const roofs *rf)
{
    double ridge = rf->mxu * 1e12 / rf->bw, xmin = rf->vpu * 1e12 / rf->bw, xmax = ridge;
    double ymin = rf->vpu, ymax = rf->mxu;
    for (int i = 0; i < n; i++) {
        if (!plottable(&reports[i])) continue;
        xmin = fmin(xmin, xval(&reports[i])), xmax = fmax(xmax, xval(&reports[i]));
        ymin = fmin(ymin, yval(&reports[i])), ymax = fmax(ymax, yval(&reports[i]));
    }
    return sim_plot_axes(xmin, xmax, ymin, ymax);
}

static void roof(const sim_axes *a, const roofs *rf, FILE *f)
{
    sim_plot_slope(a, rf->bw, rf->mxu, "#009E73", f);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#009E73\">HBM %.0f GB/s x intensity</text>\n", L + 8, T + 16,
            rf->bw / 1e9);
    sim_plot_flat_roof(a, rf->bw, rf->mxu, "#E69F00", "MXU", f);
    if (rf->vpu > 0 && rf->vpu < rf->mxu) sim_plot_flat_roof(a, rf->bw, rf->vpu, "#CC79A7", "VPU", f);
}

static void points(const sim_axes *a, int n, const pl_report *reports, const char *const *labels, const int *order,
                   int legal, FILE *f)
{
    char t[32];
    for (int i = legal - 1; i >= 0; i--) { /* the best last, on top */
        const pl_report *r = &reports[order[i]];
        if (!plottable(r)) continue;
        double x = sim_plot_x(a, xval(r)), y = sim_plot_y(a, yval(r));
        int best = i == 0;
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%s\" fill=\"%s\" fill-opacity=\"%s\" stroke=\"%s\"><title>",
                x, y, best ? "6" : "3.5", best ? "#D55E00" : "#0072B2", best ? "1" : "0.6", best ? "#000" : "none");
        sim_xml_text(f, labels && labels[order[i]] ? labels[order[i]] : "");
        fprintf(f, ": %s, %.3g TFLOP/s, %s-bound</title></circle>\n", pl_format_time(r->time_s, t, sizeof t), yval(r),
                pl_bound_name(r->bound));
        if (!best) continue;
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" fill=\"#D55E00\" font-weight=\"bold\" "
                   "stroke=\"#fff\" stroke-width=\"4\" paint-order=\"stroke\">",
                x < (L + R) / 2 ? x + 10 : x - 10, y + 22, x < (L + R) / 2 ? "start" : "end");
        sim_xml_text(f, labels && labels[order[i]] ? labels[order[i]] : "best");
        fprintf(f, "</text>\n");
    }
    (void)n;
}

static void draw(FILE *f, int n, const pl_report *reports, const char *const *labels, const pl_chip *chip,
                 const char *title, const int *order, int legal)
{
    roofs rf = chip_roofs(chip, n, reports);
    sim_axes a = domain(n, reports, &rf);
    sim_plot_open(f);
    fprintf(f, "<text x=\"%.1f\" y=\"28\" text-anchor=\"middle\" font-size=\"15\">roofline: ", (L + R) / 2);
    sim_xml_text(f, title ? title : "sweep");
    fprintf(f, " on ");
    sim_xml_text(f, chip->name);
    fprintf(f, ", %d legal configuration%s</text>\n", legal, legal == 1 ? "" : "s");
    sim_plot_ticks(&a, "arithmetic intensity (MXU + VPU FLOP per HBM byte)", "achieved TFLOP/s", f);
    roof(&a, &rf, f);
    points(&a, n, reports, labels, order, legal, f);
    if (!legal)
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">no legal configuration</text>\n", (L + R) / 2,
                (T + B) / 2);
    fprintf(f, "</svg>\n");
}

int pl_roofline_svg(const char *path, int n, const pl_report *reports, const char *const *labels, const pl_chip *chip,
                    const char *title, char *msg, size_t msglen)
{
    char dummy[8];
    if (!msg) msg = dummy, msglen = sizeof dummy;
    if (!path || n < 0 || (n && !reports) || !chip || chip->hbm_bw <= 0) {
        snprintf(msg, msglen, "roofline: want a path, n >= 0 reports and a chip with a positive HBM bandwidth");
        return PL_EINVAL;
    }
    int *order = malloc((size_t)(n ? n : 1) * sizeof *order);
    if (!order) {
        snprintf(msg, msglen, "roofline: out of host memory");
        return PL_ENOMEM;
    }
    char why[PL_MSG_MAX];
    sim_out *o = sim_out_open(path, why, sizeof why); /* temp + rename: a failure never destroys the old file */
    if (!o) {
        snprintf(msg, msglen, "roofline: %s", why);
        free(order);
        return PL_EINVAL;
    }
    int legal = pl_sweep_rank(n, reports, order);
    draw(o->f, n, reports, labels, chip, title, order, legal);
    free(order);
    if (sim_out_commit(o, why, sizeof why)) {
        snprintf(msg, msglen, "roofline: %s", why);
        return PL_EINVAL;
    }
    snprintf(msg, msglen, "roofline of %d legal configuration%s written to %s", legal, legal == 1 ? "" : "s", path);
    return PL_OK;
}
