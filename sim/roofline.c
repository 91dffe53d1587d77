/* sim/roofline.c: the roofline plot of any sweep as a standalone SVG file.
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

#include "tilesim.h"

#define W 760.0
#define H 520.0
#define L 80.0 /* plot area */
#define R (W - 30.0)
#define T 50.0
#define B (H - 70.0)

typedef struct axes {
    double x0, x1, y0, y1; /* log10 of the domain */
} axes;

static double px(const axes *a, double x) { return L + (log10(x) - a->x0) / (a->x1 - a->x0) * (R - L); }
static double py(const axes *a, double y) { return B - (log10(y) - a->y0) / (a->y1 - a->y0) * (B - T); }

static void xml_text(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '<') fputs("&lt;", f);
        else if (*s == '>') fputs("&gt;", f);
        else if (*s == '&') fputs("&amp;", f);
        else if (*s == '"') fputs("&quot;", f);
        else fputc(*s, f);
    }
}

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

static axes domain(int n, const pl_report *reports, const roofs *rf)
{
    double ridge = rf->mxu * 1e12 / rf->bw, xmin = rf->vpu * 1e12 / rf->bw, xmax = ridge;
    double ymin = rf->vpu, ymax = rf->mxu;
    for (int i = 0; i < n; i++) {
        if (!plottable(&reports[i])) continue;
        xmin = fmin(xmin, xval(&reports[i])), xmax = fmax(xmax, xval(&reports[i]));
        ymin = fmin(ymin, yval(&reports[i])), ymax = fmax(ymax, yval(&reports[i]));
    }
    axes a = {floor(log10(xmin / 1.5)), ceil(log10(xmax * 1.5)), floor(log10(ymin / 1.5)), ceil(log10(ymax * 1.5))};
    if (a.x1 - a.x0 < 2) a.x0 = a.x1 - 2;
    if (a.y1 - a.y0 < 2) a.y0 = a.y1 - 2;
    return a;
}

static void ticks(const axes *a, FILE *f)
{
    char lab[32];
    for (int d = (int)a->x0; d <= (int)a->x1; d++) {
        double v = pow(10, d), x = px(a, v);
        snprintf(lab, sizeof lab, (v >= 1e4 || v < 1e-3) ? "1e%.0f" : "%g", (v >= 1e4 || v < 1e-3) ? (double)d : v);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ccc\"/>\n", x, T, x, B);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", x, B + 20, lab);
    }
    for (int d = (int)a->y0; d <= (int)a->y1; d++) {
        double v = pow(10, d), y = py(a, v);
        snprintf(lab, sizeof lab, (v >= 1e4 || v < 1e-3) ? "1e%.0f" : "%g", (v >= 1e4 || v < 1e-3) ? (double)d : v);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ccc\"/>\n", L, y, R, y);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", L - 9, y + 4, lab);
    }
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#000\"/>\n", L, T,
            R - L, B - T);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">arithmetic intensity (MXU + VPU FLOP per HBM "
               "byte)</text>\n", (L + R) / 2, H - 25);
    fprintf(f, "<text x=\"20\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 20 %.1f)\">achieved "
               "TFLOP/s</text>\n", (T + B) / 2, (T + B) / 2);
}

/* A flat roof at peak from where the HBM line meets it; colours of the
 * Okabe-Ito palette, which colour-blind readers tell apart. */
static void flat_roof(const axes *a, const roofs *rf, double peak, const char *colour, const char *name, FILE *f)
{
    double ridge = peak * 1e12 / rf->bw, xhi = pow(10, a->x1);
    fprintf(f, "<polyline clip-path=\"url(#plot)\" fill=\"none\" stroke-width=\"2\" stroke=\"%s\" "
               "points=\"%.1f,%.1f %.1f,%.1f\"/>\n", colour, px(a, ridge), py(a, peak), px(a, xhi), py(a, peak));
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" fill=\"%s\">%s peak %.3g TFLOP/s</text>\n", R - 6,
            py(a, peak) - 6, colour, name, peak);
}

static void roof(const axes *a, const roofs *rf, FILE *f)
{
    double xlo = pow(10, a->x0), ridge = rf->mxu * 1e12 / rf->bw;
    fprintf(f, "<polyline clip-path=\"url(#plot)\" fill=\"none\" stroke-width=\"2\" stroke=\"#009E73\" "
               "points=\"%.1f,%.1f %.1f,%.1f\"/>\n", px(a, xlo), py(a, rf->bw * xlo / 1e12), px(a, ridge),
            py(a, rf->mxu));
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#009E73\">HBM %.0f GB/s x intensity</text>\n", L + 8, T + 16,
            rf->bw / 1e9);
    flat_roof(a, rf, rf->mxu, "#E69F00", "MXU", f);
    if (rf->vpu > 0 && rf->vpu < rf->mxu) flat_roof(a, rf, rf->vpu, "#CC79A7", "VPU", f);
}

static void points(const axes *a, int n, const pl_report *reports, const char *const *labels, const int *order,
                   int legal, FILE *f)
{
    char t[32];
    for (int i = legal - 1; i >= 0; i--) { /* the best last, on top */
        const pl_report *r = &reports[order[i]];
        if (!plottable(r)) continue;
        double x = px(a, xval(r)), y = py(a, yval(r));
        int best = i == 0;
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%s\" fill=\"%s\" fill-opacity=\"%s\" stroke=\"%s\"><title>",
                x, y, best ? "6" : "3.5", best ? "#D55E00" : "#0072B2", best ? "1" : "0.6", best ? "#000" : "none");
        xml_text(f, labels && labels[order[i]] ? labels[order[i]] : "");
        fprintf(f, ": %s, %.3g TFLOP/s, %s-bound</title></circle>\n", pl_format_time(r->time_s, t, sizeof t), yval(r),
                pl_bound_name(r->bound));
        if (!best) continue;
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" fill=\"#D55E00\" font-weight=\"bold\" "
                   "stroke=\"#fff\" stroke-width=\"4\" paint-order=\"stroke\">",
                x < (L + R) / 2 ? x + 10 : x - 10, y + 22, x < (L + R) / 2 ? "start" : "end");
        xml_text(f, labels && labels[order[i]] ? labels[order[i]] : "best");
        fprintf(f, "</text>\n");
    }
    (void)n;
}

static void draw(FILE *f, int n, const pl_report *reports, const char *const *labels, const pl_chip *chip,
                 const char *title, const int *order, int legal)
{
    roofs rf = chip_roofs(chip, n, reports);
    axes a = domain(n, reports, &rf);
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
               "font-family=\"sans-serif\" font-size=\"12\">\n", W, H, W, H);
    fprintf(f, "<defs><clipPath id=\"plot\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/></clipPath>"
               "</defs>\n<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n", L, T, R - L, B - T);
    fprintf(f, "<text x=\"%.1f\" y=\"28\" text-anchor=\"middle\" font-size=\"15\">roofline: ", (L + R) / 2);
    xml_text(f, title ? title : "sweep");
    fprintf(f, " on ");
    xml_text(f, chip->name);
    fprintf(f, ", %d legal configuration%s</text>\n", legal, legal == 1 ? "" : "s");
    ticks(&a, f);
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
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(msg, msglen, "roofline: cannot write '%s': %s", path, strerror(errno));
        free(order);
        return PL_EINVAL;
    }
    int legal = pl_sweep_rank(n, reports, order);
    draw(f, n, reports, labels, chip, title, order, legal);
    int bad = ferror(f);
    bad |= fclose(f) != 0;
    free(order);
    if (bad) {
        snprintf(msg, msglen, "roofline: writing '%s' failed (disk full?)", path);
        return PL_EINVAL;
    }
    snprintf(msg, msglen, "roofline of %d legal configuration%s written to %s", legal, legal == 1 ? "" : "s", path);
    return PL_OK;
}
