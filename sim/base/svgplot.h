/* sim/base/svgplot.h: what the roofline plots share (roofline.c, a sweep's;
 * roofline_run.c, a run's ops): the page, log-log axes, text escaped for
 * XML, and the roofs. Internal. */
#ifndef TILESIM_SVGPLOT_H
#define TILESIM_SVGPLOT_H

#include <stdio.h>

#define SIM_PLOT_W 760.0
#define SIM_PLOT_H 520.0
#define SIM_PLOT_L 80.0 /* plot area */
#define SIM_PLOT_R (SIM_PLOT_W - 30.0)
#define SIM_PLOT_T 50.0
#define SIM_PLOT_B (SIM_PLOT_H - 70.0)

typedef struct sim_axes {
    double x0, x1, y0, y1; /* log10 of the domain */
} sim_axes;

double sim_plot_x(const sim_axes *a, double x);
double sim_plot_y(const sim_axes *a, double y);
/* The decades around [xmin, xmax] x [ymin, ymax], at least two each way. */
sim_axes sim_plot_axes(double xmin, double xmax, double ymin, double ymax);
void sim_xml_text(FILE *f, const char *s);
/* <svg ...>, the plot's clip path and a white page */
void sim_plot_open(FILE *f);
/* Grid lines and labels of each decade, the frame and the axes' titles. */
void sim_plot_ticks(const sim_axes *a, const char *xtitle, const char *ytitle, FILE *f);
/* A flat roof at `peak` TFLOP/s from where the line bw x intensity meets it
 * to the right edge, labelled "<name> peak <peak> TFLOP/s" at height row. */
void sim_plot_flat_roof(const sim_axes *a, double bw, double peak, const char *colour, const char *name, FILE *f);
/* The line bw x intensity from the left edge up to `peak` TFLOP/s. */
void sim_plot_slope(const sim_axes *a, double bw, double peak, const char *colour, FILE *f);

#endif
