/* sim/call/heatmap.c: the worst normalised error per output block as an SVG
 * heatmap, for any output (pl_allclose_heatmap) and for the matmul check
 * (pl_check_heatmap, verify.c).
 *
 * Colours are discrete steps of viridis, light (good) to dark (bad), which
 * readers with any common colour-vision deficiency tell apart by lightness
 * alone; each step has a legend entry with its threshold, and every block
 * carries a tooltip with its error and the elements it covers. Rows and
 * columns of blocks are numbered as the grid's block indices are. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../base/outfile.h"
#include "../base/sim.h"
#include "../base/svgplot.h"

#define N_CLASSES 5
static const char *const class_colour[N_CLASSES] = {"#FDE725", "#7AD151", "#22A884", "#2A788E", "#440154"};

/* 0 exact, 1 within the tolerance (<= 1), 2 PASS, 3 MARGINAL, 4 FAIL (or NaN/inf). */
static int classify(double e, const pl_check *r)
{
    if (e == 0) return 0;
    if (!(e <= r->fail_above)) return 4;
    if (e <= 1) return 1;
    return e <= r->pass_below ? 2 : 3;
}

static void legend(FILE *f, const pl_check *r, double y)
{
    char text[N_CLASSES][96];
    snprintf(text[0], sizeof text[0], "exact (0)");
    snprintf(text[1], sizeof text[1], "within the tolerance (error <= 1)%s", r->pass_below <= 1 ? ": PASS" : "");
    snprintf(text[2], sizeof text[2], "PASS (1 < error <= %.3g)", r->pass_below);
    snprintf(text[3], sizeof text[3], "MARGINAL (%.3g < error <= %.3g)", r->pass_below, r->fail_above);
    snprintf(text[4], sizeof text[4], "FAIL (error > %.3g, or NaN/inf)", r->fail_above);
    fprintf(f, "<g class=\"legend\">\n<text x=\"20\" y=\"%.0f\">legend (worst error of a block, over its "
               "tolerance):</text>\n", y);
    for (int c = 0, row = 0; c < N_CLASSES; c++) {
        if (c == 2 && r->pass_below <= 1) continue; /* pl_allclose: PASS is 'within the tolerance' */
        double yy = y + 8 + 20 * row++;
        fprintf(f, "<rect x=\"20\" y=\"%.0f\" width=\"16\" height=\"16\" fill=\"%s\" stroke=\"#000\"/>"
                   "<text x=\"44\" y=\"%.0f\">", yy, class_colour[c], yy + 13);
        sim_xml_text(f, text[c]); /* "error <= 1": a bare '<' is not XML */
        fprintf(f, "</text>\n");
    }
    fprintf(f, "</g>\n");
}

static double block_worst(const double *err, int64_t m, int64_t n, int64_t i, int64_t j, int64_t bm, int64_t bn)
{
    double worst = 0;
    for (int64_t y = i * bm; y < (i + 1) * bm && y < m; y++)
        for (int64_t x = j * bn; x < (j + 1) * bn && x < n; x++)
            if (!(err[y * n + x] <= worst)) worst = err[y * n + x];
    return worst;
}

/* Every step-th block index is labelled, so labels never overlap. */
static void labels(FILE *f, int64_t gm, int64_t gn, double cell, double x0, double y0)
{
    int64_t sr = (int64_t)ceil(14.0 / cell), sc = (int64_t)ceil(28.0 / cell);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">column block j</text>\n",
            x0 + (double)gn * cell / 2, y0 - 22);
    fprintf(f, "<text x=\"14\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 14 %.1f)\">row block i</text>\n",
            y0 + (double)gm * cell / 2, y0 + (double)gm * cell / 2);
    for (int64_t j = 0; j < gn; j += sc < 1 ? 1 : sc)
        fprintf(f, "<text class=\"col-label\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%lld</text>\n",
                x0 + ((double)j + 0.5) * cell, y0 - 6, (long long)j);
    for (int64_t i = 0; i < gm; i += sr < 1 ? 1 : sr)
        fprintf(f, "<text class=\"row-label\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%lld</text>\n", x0 - 6,
                y0 + ((double)i + 0.5) * cell + 4, (long long)i);
}

int sim_heatmap_write(const char *path, const double *err, int64_t m, int64_t n, int64_t bm, int64_t bn,
                      const char *what, const pl_check *r, char *msg, size_t msglen)
{
    char why[PL_MSG_MAX];
    sim_out *o = sim_out_open(path, why, sizeof why); /* temp + rename: a failure never destroys the old file */
    if (!o) {
        snprintf(msg, msglen, "heatmap: %s", why);
        return PL_EINVAL;
    }
    FILE *f = o->f;
    int64_t gm = m / bm + (m % bm != 0), gn = n / bn + (n % bn != 0);
    double cell = 480.0 / (double)(gm > gn ? gm : gn), x0 = 60, y0 = 70;
    if (cell > 60) cell = 60;
    if (cell < 2) cell = 2;
    double w = x0 + (double)gn * cell + 20, h = y0 + (double)gm * cell + 40 + 20 * N_CLASSES + 20;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" "
               "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n"
               "<text x=\"20\" y=\"18\">worst normalised error per (%lld, %lld) block of a %lld x %lld output: "
               "worst %.3g, %s</text>\n<text x=\"20\" y=\"34\" fill=\"#444\">",
            w < 640 ? 640 : w, h, (long long)bm, (long long)bn, (long long)m, (long long)n, r->norm_err,
            pl_verdict_name(r->verdict));
    for (const char *s = what ? what : ""; *s; s++) /* XML-escaped */
        if (*s == '<') fputs("&lt;", f);
        else if (*s == '>') fputs("&gt;", f);
        else if (*s == '&') fputs("&amp;", f);
        else fputc(*s, f);
    fprintf(f, "</text>\n");
    labels(f, gm, gn, cell, x0, y0);
    for (int64_t i = 0; i < gm; i++)
        for (int64_t j = 0; j < gn; j++) {
            double worst = block_worst(err, m, n, i, j, bm, bn);
            fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" stroke=\"white\">"
                       "<title>block (%lld, %lld): %.3g; rows %lld..%lld, columns %lld..%lld</title></rect>\n",
                    x0 + (double)j * cell, y0 + (double)i * cell, cell, cell, class_colour[classify(worst, r)],
                    (long long)i, (long long)j, worst, (long long)(i * bm),
                    (long long)((i + 1) * bm < m ? (i + 1) * bm - 1 : m - 1), (long long)(j * bn),
                    (long long)((j + 1) * bn < n ? (j + 1) * bn - 1 : n - 1));
        }
    legend(f, r, y0 + (double)gm * cell + 24);
    fprintf(f, "</svg>\n");
    if (sim_out_commit(o, why, sizeof why)) {
        snprintf(msg, msglen, "heatmap: %s", why);
        return PL_EINVAL;
    }
    snprintf(msg, msglen, "heatmap of %lldx%lld blocks written to %s (%s)", (long long)gm, (long long)gn, path,
             pl_verdict_name(r->verdict));
    return PL_OK;
}

int pl_allclose_heatmap(const pl_array *got, const pl_array *want, int64_t bm, int64_t bn, double rtol, double atol,
                        const char *path, char *msg, size_t msglen)
{
    char dummy[8];
    if (!msg) msg = dummy, msglen = sizeof dummy;
    if (!got || !want || !got->data || !want->data || got->rank < 1 || bm < 1 || bn < 1 || !path) {
        snprintf(msg, msglen, "heatmap: want two arrays with data, block sizes >= 1 and a path");
        return PL_EINVAL;
    }
    double *err = NULL;
    pl_check r;
    int rc = sim_allclose_errors(got, want, &rtol, &atol, &err, &r);
    if (rc == PL_ESHAPE) {
        snprintf(msg, msglen, "heatmap: the two arrays differ in shape");
        return rc;
    }
    if (rc) {
        snprintf(msg, msglen, "heatmap: out of host memory");
        return rc;
    }
    /* rank > 2 is flattened: rows = all but the last dimension */
    int64_t n = got->shape[got->rank - 1], m = n ? pl_array_size(got) / n : 0;
    char what[160];
    snprintf(what, sizeof what, "error = |got - want| / (atol + rtol |want|), %s, rtol %.3g, atol %.3g",
             pl_dtype_name(got->dtype), rtol, atol);
    rc = m > 0 && n > 0 ? sim_heatmap_write(path, err, m, n, bm, bn, what, &r, msg, msglen) : PL_EINVAL;
    if (m <= 0 || n <= 0) snprintf(msg, msglen, "heatmap: the output is empty");
    free(err);
    if (rc) return rc;
    return r.verdict == PL_FAIL ? PL_EVERIFY : PL_OK; /* the file is written either way */
}

int pl_check_heatmap(const pl_array *a, const pl_array *b, const pl_array *c, int64_t bm, int64_t bn, const char *path,
                     char *msg, size_t msglen)
{
    int rc = sim_matmul_args(a, b, c);
    if (rc || bm < 1 || bn < 1 || !path) {
        snprintf(msg, msglen, "heatmap: want a (m,k), b (k,n), c (m,n) float arrays and block sizes >= 1");
        return rc ? rc : PL_EINVAL;
    }
    double *err = NULL;
    pl_check r;
    if ((rc = sim_matmul_errors(a, b, c, &err, &r))) {
        snprintf(msg, msglen, "heatmap: out of host memory");
        return rc;
    }
    char what[160];
    snprintf(what, sizeof what, "error of C against A @ B (OpenBLAS) over u |A| @ |B|, %s", pl_dtype_name(c->dtype));
    rc = sim_heatmap_write(path, err, c->shape[0], c->shape[1], bm, bn, what, &r, msg, msglen);
    free(err);
    if (rc) return rc;
    return r.verdict == PL_FAIL ? PL_EVERIFY : PL_OK; /* the file is written either way */
}
