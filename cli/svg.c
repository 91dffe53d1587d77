/* cli/svg.c: the roofline plot of a sweep as a standalone SVG file.
 *
 * Log-log axes: x = arithmetic intensity, FLOP per HBM byte over the whole
 * call (pl_report.intensity); y = achieved TFLOP/s. The roof is the lower of
 * the HBM ceiling (bandwidth x intensity) and the MXU peak for the dtype;
 * they meet at the chip's critical intensity. Every legal configuration is a
 * point; the fastest is red and labelled "bm x bn x bk". */
#include <math.h>
#include <string.h>

#include "cli.h"

#define W 760.0
#define H 520.0
#define L 80.0  /* plot area */
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
    for (; *s; s++) {
        if (*s == '<') fputs("&lt;", f);
        else if (*s == '>') fputs("&gt;", f);
        else if (*s == '&') fputs("&amp;", f);
        else if (*s == '"') fputs("&quot;", f);
        else fputc(*s, f);
    }
}

static int plottable(const cli_sweep_row *r) { return r->rep->intensity > 0 && r->rep->flops_per_s > 0; }

/* The MXU peak the sweep's %peak column refers to, TFLOP/s. */
static double peak_tflops(const cli_sweep_result *s)
{
    for (int i = 0; i < s->n_legal; i++) {
        const pl_report *r = s->rows[s->legal[i]].rep;
        if (r->peak_fraction > 0 && r->flops_per_s > 0) return r->flops_per_s / r->peak_fraction / 1e12;
    }
    return pl_chip_mxu_rate(s->chip, s->dtype) / 1e12;
}

static axes domain(const cli_sweep_result *s, double peak, double ridge)
{
    double xmin = ridge, xmax = ridge, ymin = peak, ymax = peak;
    for (int i = 0; i < s->n_legal; i++) {
        const cli_sweep_row *r = &s->rows[s->legal[i]];
        if (!plottable(r)) continue;
        double x = r->rep->intensity, y = r->rep->flops_per_s / 1e12;
        xmin = fmin(xmin, x), xmax = fmax(xmax, x), ymin = fmin(ymin, y), ymax = fmax(ymax, y);
    }
    axes a = {floor(log10(xmin / 1.5)), ceil(log10(xmax * 1.5)), floor(log10(ymin / 1.5)), ceil(log10(ymax * 1.5))};
    if (a.x1 - a.x0 < 2) a.x0 = a.x1 - 2;
    if (a.y1 - a.y0 < 2) a.y0 = a.y1 - 2;
    return a;
}

static void tick_label(double v, char *buf, size_t n)
{
    if (v >= 1e4 || v < 1e-3) snprintf(buf, n, "1e%d", (int)lround(log10(v)));
    else snprintf(buf, n, "%g", v);
}

static void grid_and_ticks(const axes *a, FILE *f)
{
    char lab[32];
    for (int d = (int)a->x0; d <= (int)a->x1; d++) {
        double v = pow(10, d), x = px(a, v);
        for (int m = 2; m < 10 && d < (int)a->x1; m++)
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>\n", px(a, v * m), T,
                    px(a, v * m), B);
        tick_label(v, lab, sizeof lab);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ccc\"/>\n", x, T, x, B);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000\"/>\n", x, B, x, B + 6);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", x, B + 20, lab);
    }
    for (int d = (int)a->y0; d <= (int)a->y1; d++) {
        double v = pow(10, d), y = py(a, v);
        for (int m = 2; m < 10 && d < (int)a->y1; m++)
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>\n", L, py(a, v * m), R,
                    py(a, v * m));
        tick_label(v, lab, sizeof lab);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ccc\"/>\n", L, y, R, y);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000\"/>\n", L - 6, y, L, y);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", L - 9, y + 4, lab);
    }
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#000\"/>\n", L, T,
            R - L, B - T);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">arithmetic intensity (FLOP per HBM byte)</text>\n",
            (L + R) / 2, H - 25);
    fprintf(f, "<text x=\"20\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 20 %.1f)\">achieved "
               "TFLOP/s</text>\n", (T + B) / 2, (T + B) / 2);
}

static void roof(const cli_sweep_result *s, const axes *a, double peak, double ridge, FILE *f)
{
    double bw = s->chip->hbm_bw, xlo = pow(10, a->x0), xhi = pow(10, a->x1);
    fprintf(f, "<g clip-path=\"url(#plot)\" fill=\"none\" stroke-width=\"2\">\n");
    fprintf(f, "<polyline stroke=\"#2ca02c\" points=\"%.1f,%.1f %.1f,%.1f\"/>\n", px(a, xlo), py(a, bw * xlo / 1e12),
            px(a, ridge), py(a, peak));
    fprintf(f, "<polyline stroke=\"#ff7f0e\" points=\"%.1f,%.1f %.1f,%.1f\"/>\n", px(a, ridge), py(a, peak), px(a, xhi),
            py(a, peak));
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#999\" stroke-width=\"1\" "
               "stroke-dasharray=\"4 4\"/>\n</g>\n", px(a, ridge), py(a, peak), px(a, ridge), B);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" fill=\"#ff7f0e\">%s MXU peak %.1f TFLOP/s</text>\n",
            R - 6, py(a, peak) - 6, pl_dtype_name(s->dtype), peak);
    /* the HBM label sits on its line, halfway between where it enters the plot and the ridge */
    double enter = fmax(xlo, pow(10, a->y0) * 1e12 / bw), at = sqrt(enter * ridge);
    double angle = -atan(((B - T) / (a->y1 - a->y0)) / ((R - L) / (a->x1 - a->x0))) * 57.29577951308232; /* degrees */
    double lx = px(a, at), ly = py(a, bw * at / 1e12) - 6;
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#2ca02c\" transform=\"rotate(%.1f %.1f %.1f)\">"
               "HBM %.0f GB/s x intensity</text>\n", lx, ly, angle, lx, ly, bw / 1e9);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#666\">critical %.0f</text>\n", px(a, ridge) + 4, B - 6, ridge);
}

static void points(const cli_sweep_result *s, const axes *a, FILE *f)
{
    char t[32];
    for (int i = s->n_legal - 1; i >= 0; i--) { /* the best last, on top */
        const cli_sweep_row *r = &s->rows[s->legal[i]];
        if (!plottable(r)) continue;
        double x = px(a, r->rep->intensity), y = py(a, r->rep->flops_per_s / 1e12);
        int best = i == 0;
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%s\" fill=\"%s\" fill-opacity=\"%s\" stroke=\"%s\">"
                   "<title>%lld x %lld x %lld: %s, %.1f TFLOP/s, %s-bound</title></circle>\n",
                x, y, best ? "6" : "3.5", best ? "#d62728" : "#1f77b4", best ? "1" : "0.6", best ? "#000" : "none",
                (long long)r->bm, (long long)r->bn, (long long)r->bk, pl_format_time(r->rep->time_s, t, sizeof t),
                r->rep->flops_per_s / 1e12, pl_bound_name(r->rep->bound));
        if (best)
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" fill=\"#d62728\" font-weight=\"bold\" "
                       "stroke=\"#fff\" stroke-width=\"4\" paint-order=\"stroke\">"
                       "%lld x %lld x %lld</text>\n",
                    x < (L + R) / 2 ? x + 10 : x - 10, y + 22, x < (L + R) / 2 ? "start" : "end", (long long)r->bm,
                    (long long)r->bn, (long long)r->bk);
    }
}

int cli_sweep_svg(const cli_sweep_result *s, FILE *f)
{
    double peak = peak_tflops(s), ridge = peak * 1e12 / s->chip->hbm_bw;
    axes a = domain(s, peak, ridge);
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
               "font-family=\"sans-serif\" font-size=\"12\">\n", W, H, W, H);
    fprintf(f, "<defs><clipPath id=\"plot\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/></clipPath>"
               "</defs>\n<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n", L, T, R - L, B - T);
    fprintf(f, "<text x=\"%.1f\" y=\"28\" text-anchor=\"middle\" font-size=\"15\">roofline: matmul %lld x %lld x %lld "
               "%s on ", (L + R) / 2, (long long)s->m, (long long)s->n, (long long)s->k, pl_dtype_name(s->dtype));
    xml_text(f, s->chip->name);
    fprintf(f, ", %d legal block configurations</text>\n", s->n_legal);
    grid_and_ticks(&a, f);
    roof(s, &a, peak, ridge, f);
    points(s, &a, f);
    if (!s->n_legal)
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">no legal configuration</text>\n", (L + R) / 2,
                (T + B) / 2);
    fprintf(f, "</svg>\n");
    return ferror(f) ? -1 : 0;
}
