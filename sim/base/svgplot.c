/* sim/base/svgplot.c: the roofline plots' shared drawing (svgplot.h). Colours of
 * the Okabe-Ito palette, which colour-blind readers tell apart, are the
 * callers' choice. */
#include <math.h>

#include "svgplot.h"

#define L SIM_PLOT_L
#define R SIM_PLOT_R
#define T SIM_PLOT_T
#define B SIM_PLOT_B

double sim_plot_x(const sim_axes *a, double x) { return L + (log10(x) - a->x0) / (a->x1 - a->x0) * (R - L); }
double sim_plot_y(const sim_axes *a, double y) { return B - (log10(y) - a->y0) / (a->y1 - a->y0) * (B - T); }

sim_axes sim_plot_axes(double xmin, double xmax, double ymin, double ymax)
{
    sim_axes a = {floor(log10(xmin / 1.5)), ceil(log10(xmax * 1.5)), floor(log10(ymin / 1.5)), ceil(log10(ymax * 1.5))};
    if (a.x1 - a.x0 < 2) a.x0 = a.x1 - 2;
    if (a.y1 - a.y0 < 2) a.y0 = a.y1 - 2;
    return a;
}

void sim_xml_text(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '<') fputs("&lt;", f);
        else if (*s == '>') fputs("&gt;", f);
        else if (*s == '&') fputs("&amp;", f);
        else if (*s == '"') fputs("&quot;", f);
        else fputc(*s, f);
    }
}

void sim_plot_open(FILE *f)
{
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
               "font-family=\"sans-serif\" font-size=\"12\">\n", SIM_PLOT_W, SIM_PLOT_H, SIM_PLOT_W, SIM_PLOT_H);
    fprintf(f, "<defs><clipPath id=\"plot\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/></clipPath>"
               "</defs>\n<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n", L, T, R - L, B - T);
}

static const char *decade(double v, int d, char *lab, size_t n)
{
    snprintf(lab, n, (v >= 1e4 || v < 1e-3) ? "1e%.0f" : "%g", (v >= 1e4 || v < 1e-3) ? (double)d : v);
    return lab;
}

void sim_plot_ticks(const sim_axes *a, const char *xtitle, const char *ytitle, FILE *f)
{
    char lab[32];
    for (int d = (int)a->x0; d <= (int)a->x1; d++) {
        double v = pow(10, d), x = sim_plot_x(a, v);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ccc\"/>\n", x, T, x, B);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", x, B + 20,
                decade(v, d, lab, sizeof lab));
    }
    for (int d = (int)a->y0; d <= (int)a->y1; d++) {
        double v = pow(10, d), y = sim_plot_y(a, v);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ccc\"/>\n", L, y, R, y);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", L - 9, y + 4,
                decade(v, d, lab, sizeof lab));
    }
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#000\"/>\n", L, T,
            R - L, B - T);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", (L + R) / 2, SIM_PLOT_H - 25);
    sim_xml_text(f, xtitle);
    fprintf(f, "</text>\n<text x=\"20\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 20 %.1f)\">",
            (T + B) / 2, (T + B) / 2);
    sim_xml_text(f, ytitle);
    fprintf(f, "</text>\n");
}

void sim_plot_flat_roof(const sim_axes *a, double bw, double peak, const char *colour, const char *name, FILE *f)
{
    double ridge = peak * 1e12 / bw, xhi = pow(10, a->x1);
    fprintf(f, "<polyline clip-path=\"url(#plot)\" fill=\"none\" stroke-width=\"2\" stroke=\"%s\" "
               "points=\"%.1f,%.1f %.1f,%.1f\"/>\n", colour, sim_plot_x(a, ridge), sim_plot_y(a, peak),
            sim_plot_x(a, xhi), sim_plot_y(a, peak));
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" fill=\"%s\">%s peak %.3g TFLOP/s</text>\n", R - 6,
            sim_plot_y(a, peak) - 6, colour, name, peak);
}

void sim_plot_slope(const sim_axes *a, double bw, double peak, const char *colour, FILE *f)
{
    double xlo = pow(10, a->x0), ridge = peak * 1e12 / bw;
    fprintf(f, "<polyline clip-path=\"url(#plot)\" fill=\"none\" stroke-width=\"2\" stroke=\"%s\" "
               "points=\"%.1f,%.1f %.1f,%.1f\"/>\n", colour, sim_plot_x(a, xlo), sim_plot_y(a, bw * xlo / 1e12),
            sim_plot_x(a, ridge), sim_plot_y(a, peak));
}
