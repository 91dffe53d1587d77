/* sim/kdef/sweep_print.c: the results of any sweep as a ranked table, CSV or
 * JSON, so that a C program calling pl_sweep (or pl_kernel_sweep) prints
 * what `tilesim sweep KERNEL` prints in one call.
 *
 * A configuration is known by its label ("br=8 cols=512", pl_kernel_format);
 * legal ones (status PL_OK) come fastest first, then the rejected ones in
 * list order with their reason. The headline columns are the achieved HBM
 * bandwidth against the chip's and the MXU rate: a kernel with little MXU
 * work (a norm, a softmax) is judged by the first. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../base/json.h"
#include "../tilesim.h"

#define REASON_MAX 110 /* characters of a reason before it is cut at its first sentence */

/* qsort has no user pointer in C11: the comparator reads this thread's */
static _Thread_local const pl_report *sort_reports;

static int by_time(const void *pa, const void *pb)
{
    int a = *(const int *)pa, b = *(const int *)pb;
    double ta = sort_reports[a].time_s, tb = sort_reports[b].time_s;
    if (ta != tb) return ta < tb ? -1 : 1;
    return (a > b) - (a < b); /* stable: list order */
}

int pl_sweep_rank(int n, const pl_report *reports, int *order)
{
    int legal = 0, k = 0;
    for (int i = 0; i < n; i++)
        if (reports[i].status == PL_OK) order[legal++] = i;
    sort_reports = reports;
    qsort(order, (size_t)legal, sizeof *order, by_time);
    k = legal;
    for (int i = 0; i < n; i++)
        if (reports[i].status != PL_OK) order[k++] = i;
    return legal;
}

/* The first line of msg, cut at its first "; " or ". " when long. */
static const char *first_sentence(const char *msg, char *buf, size_t n)
{
    size_t len = strcspn(msg, "\n");
    if (len > REASON_MAX) {
        const char *semi = strstr(msg, "; "), *stop = strstr(msg, ". ");
        const char *cut = semi && (!stop || semi < stop) ? semi : stop;
        if (cut && (size_t)(cut - msg) < len) len = (size_t)(cut - msg);
    }
    while (len > 0 && (msg[len - 1] == ':' || msg[len - 1] == ' ')) len--;
    snprintf(buf, n, "%.*s", (int)len, msg);
    return buf;
}

int pl_sweep_rejected_shown(int n_rejected, int64_t top)
{
    int64_t most = top > 20 ? top : 20;
    return top <= 0 || n_rejected <= most ? n_rejected : (int)most;
}

const char *pl_sweep_reject_kind(const pl_report *r)
{
    return r->status == PL_EVMEM ? "over budget" : "illegal";
}

static double hbm_gbps(const pl_report *r) { return r->time_s > 0 ? (double)r->hbm_bytes / r->time_s / 1e9 : 0; }

static double hbm_pct(const pl_report *r)
{
    return r->chip && r->chip->hbm_bw > 0 ? 100 * hbm_gbps(r) * 1e9 / r->chip->hbm_bw : 0;
}

/* Needs a scoped VMEM limit above the chip's default (M4): the call must
 * raise vmem_limit_bytes, as a production kernel does. */
static int above_default(const pl_report *r) { return r->chip && r->vmem_bytes > r->chip->vmem_default_limit; }

static const char *label_of(const char *const *labels, int i) { return labels && labels[i] ? labels[i] : ""; }

static int label_width(int n, const int *order, const char *const *labels)
{
    int w = 6;
    for (int i = 0; i < n; i++) {
        int l = (int)strlen(label_of(labels, order[i]));
        if (l > w) w = l < 60 ? l : 60;
    }
    return w;
}

/* " %ideal" (the efficiency against a definition's .flops and .bytes) when
 * some row knows it, else nothing: sweeps without a definition keep their
 * columns. */
static void ideal_cell(FILE *f, int any, const pl_report *r)
{
    if (!any) return;
    if (!r) fprintf(f, " %6s", "%ideal");
    else if (r->ideal_s > 0) fprintf(f, " %6.1f", 100 * r->efficiency);
    else fprintf(f, " %6s", "-");
}

static int print_table(FILE *f, int n, const pl_report *reports, const char *const *labels, int top, int *order)
{
    char a[32], b[32], c[32], why[PL_MSG_MAX];
    int legal = pl_sweep_rank(n, reports, order), shown = top > 0 && top < legal ? top : legal, marked = 0;
    int w = label_width(n, order, labels), ideal = 0;
    for (int i = 0; i < legal; i++) ideal |= reports[order[i]].ideal_s > 0;
    if (legal) {
        fprintf(f, "%4s  %-*s %10s %10s %8s %10s %9s %6s %8s %6s", "#", w, "configuration", "VMEM", "limit ",
                "steps", "time", "HBM GB/s", "%HBM", "TFLOP/s", "%MXU");
        ideal_cell(f, ideal, NULL);
        fprintf(f, "  %s\n", "bound");
        for (int i = 0; i < shown; i++) {
            const pl_report *r = &reports[order[i]];
            marked += above_default(r);
            fprintf(f, "%4d  %-*s %10s %9s%c %8lld %10s %9.1f %6.1f %8.2f %6.1f", i + 1, w,
                    label_of(labels, order[i]), pl_format_bytes((double)r->vmem_bytes, a, sizeof a),
                    pl_format_bytes((double)r->vmem_limit, c, sizeof c), above_default(r) ? '*' : ' ',
                    (long long)r->steps,
                    pl_format_time(r->time_s, b, sizeof b), hbm_gbps(r), hbm_pct(r), r->flops_per_s / 1e12,
                    100 * r->peak_fraction);
            ideal_cell(f, ideal, r);
            fprintf(f, "  %s\n", pl_bound_name(r->bound));
        }
        if (shown < legal) fprintf(f, "      ... %d more legal configurations\n", legal - shown);
        if (marked)
            fprintf(f, "      * needs vmem_limit_bytes above the default %s of %s (rule M4); limit: what the call "
                       "sets\n", pl_format_bytes((double)reports[order[0]].chip->vmem_default_limit, a, sizeof a),
                    reports[order[0]].chip->name);
    }
    if (legal < n) {
        fprintf(f, "%srejected (%d):\n", legal ? "\n" : "", n - legal);
        int cut = legal + pl_sweep_rejected_shown(n - legal, top);
        for (int i = legal; i < cut; i++) {
            const pl_report *r = &reports[order[i]];
            fprintf(f, "  %-*s %s: %s\n", w, label_of(labels, order[i]), pl_sweep_reject_kind(r),
                    first_sentence(r->error, why, sizeof why));
        }
        if (cut < n) fprintf(f, "      ... %d more rejected configurations (the CSV and JSON list every one)\n", n - cut);
    }
    fprintf(f, "\n%d configuration%s, %d legal", n, n == 1 ? "" : "s", legal);
    if (!legal) fprintf(f, "; nothing to rank (the reasons are above)\n");
    else
        fprintf(f, "; best %s: %s, %.1f GB/s of HBM (%.0f%%)\n  %s\n", label_of(labels, order[0]),
                pl_format_time(reports[order[0]].time_s, a, sizeof a), hbm_gbps(&reports[order[0]]),
                hbm_pct(&reports[order[0]]), reports[order[0]].bound_msg);
    return legal;
}

int pl_sweep_print_table(FILE *f, int n, const pl_report *reports, const char *const *labels, int top)
{
    if (!f || n < 0 || (n && !reports)) return PL_EINVAL;
    int *order = malloc((size_t)(n ? n : 1) * sizeof *order);
    if (!order) return PL_ENOMEM;
    print_table(f, n, reports, labels, top, order);
    free(order);
    return ferror(f) ? PL_EINVAL : PL_OK;
}

/* ---- CSV ------------------------------------------------------------------------- */

static void csv_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s == '\n' ? ' ' : *s, f);
    }
    fputc('"', f);
}

int pl_sweep_print_csv(FILE *f, int n, const pl_report *reports, const char *const *labels)
{
    if (!f || n < 0 || (n && !reports)) return PL_EINVAL;
    int *order = malloc((size_t)(n ? n : 1) * sizeof *order);
    if (!order) return PL_ENOMEM;
    char why[PL_MSG_MAX];
    int legal = pl_sweep_rank(n, reports, order);
    fprintf(f, "rank,config,status,vmem_bytes,vmem_limit,above_default_limit,steps,time_s,hbm_gbps,hbm_pct,tflops,"
               "mxu_pct,bound,reason\n");
    for (int i = 0; i < n; i++) {
        const pl_report *r = &reports[order[i]];
        if (i < legal) fprintf(f, "%d,", i + 1);
        else fputc(',', f);
        csv_string(f, label_of(labels, order[i]));
        if (i < legal)
            fprintf(f, ",ok,%lld,%lld,%d,%lld,%.6g,%.6g,%.4g,%.6g,%.4g,%s,", (long long)r->vmem_bytes,
                    (long long)r->vmem_limit, above_default(r), (long long)r->steps,
                    r->time_s, hbm_gbps(r), hbm_pct(r), r->flops_per_s / 1e12, 100 * r->peak_fraction,
                    pl_bound_name(r->bound));
        else fprintf(f, ",%s,,,,,,,,,,,", pl_sweep_reject_kind(r));
        csv_string(f, i < legal ? r->bound_msg : first_sentence(r->error, why, sizeof why));
        fputc('\n', f);
    }
    free(order);
    return ferror(f) ? PL_EINVAL : PL_OK;
}

/* ---- JSON ------------------------------------------------------------------------- */

static void json_number(FILE *f, double v)
{
    if (v == v && v - v == 0) fprintf(f, "%.9g", v);
    else fputs("null", f);
}

/* "br=8 dtype=bf16" as {"br":8,"dtype":"bf16"}: numbers stay numbers. */
static void json_params(FILE *f, const char *label)
{
    fputc('{', f);
    int first = 1;
    while (*label) {
        while (*label == ' ') label++;
        size_t len = strcspn(label, " ");
        if (!len) break;
        const char *eq = memchr(label, '=', len);
        if (eq) {
            char key[64], val[64];
            snprintf(key, sizeof key, "%.*s", (int)(eq - label) < 63 ? (int)(eq - label) : 63, label);
            int vl = (int)(len - (size_t)(eq - label) - 1);
            snprintf(val, sizeof val, "%.*s", vl < 63 ? vl : 63, eq + 1);
            fputs(first ? "" : ",", f);
            pl_json_string(f, key);
            fputc(':', f);
            char *end;
            long long v = val[0] ? strtoll(val, &end, 10) : 0;
            if (val[0] && !*end) fprintf(f, "%lld", v);
            else pl_json_string(f, val);
            first = 0;
        }
        label += len;
    }
    fputc('}', f);
}

static void json_legal(FILE *f, int rank, const pl_report *r, const char *label)
{
    fprintf(f, "{\"rank\":%d,\"config\":", rank);
    pl_json_string(f, label);
    fprintf(f, ",\"params\":");
    json_params(f, label);
    fprintf(f, ",\"vmem_bytes\":%lld,\"vmem_limit\":%lld,\"above_default_limit\":%s,\"steps\":%lld,\"time_s\":",
            (long long)r->vmem_bytes, (long long)r->vmem_limit, above_default(r) ? "true" : "false",
            (long long)r->steps);
    json_number(f, r->time_s);
    fprintf(f, ",\"hbm_bytes\":%lld,\"hbm_gbps\":", (long long)r->hbm_bytes);
    json_number(f, hbm_gbps(r));
    fprintf(f, ",\"hbm_pct\":");
    json_number(f, hbm_pct(r));
    fprintf(f, ",\"tflops\":");
    json_number(f, r->flops_per_s / 1e12);
    fprintf(f, ",\"mxu_pct\":");
    json_number(f, 100 * r->peak_fraction);
    fprintf(f, ",\"ideal_pct\":"); /* against a definition's .flops and .bytes; null: unknown */
    json_number(f, r->ideal_s > 0 ? 100 * r->efficiency : NAN);
    fprintf(f, ",\"bound\":");
    pl_json_string(f, pl_bound_name(r->bound));
    fprintf(f, ",\"bound_msg\":");
    pl_json_string(f, r->bound_msg);
    fputc('}', f);
}

int pl_sweep_print_json(FILE *f, int n, const pl_report *reports, const char *const *labels)
{
    if (!f || n < 0 || (n && !reports)) return PL_EINVAL;
    int *order = malloc((size_t)(n ? n : 1) * sizeof *order);
    if (!order) return PL_ENOMEM;
    char why[PL_MSG_MAX];
    int legal = pl_sweep_rank(n, reports, order);
    const char *kernel = "", *chip = ""; /* from the reports: the call's name and the chip */
    for (int i = 0; i < n; i++) {
        if (!kernel[0] && reports[i].call_name[0]) kernel = reports[i].call_name;
        if (!chip[0] && reports[i].chip) chip = reports[i].chip->name;
    }
    fprintf(f, "{\"kernel\":");
    pl_json_string(f, kernel);
    fprintf(f, ",\"chip\":");
    pl_json_string(f, chip);
    fprintf(f, ",\"evaluated\":%d,\"n_legal\":%d,\"n_rejected\":%d,\"legal\":[", n, legal, n - legal);
    for (int i = 0; i < legal; i++) {
        fputs(i ? ",\n" : "\n", f);
        json_legal(f, i + 1, &reports[order[i]], label_of(labels, order[i]));
    }
    fprintf(f, "],\"rejected\":[");
    for (int i = legal; i < n; i++) {
        const pl_report *r = &reports[order[i]];
        fputs(i > legal ? ",\n" : "\n", f);
        fprintf(f, "{\"config\":");
        pl_json_string(f, label_of(labels, order[i]));
        fprintf(f, ",\"params\":");
        json_params(f, label_of(labels, order[i]));
        fprintf(f, ",\"kind\":");
        pl_json_string(f, pl_sweep_reject_kind(r));
        fprintf(f, ",\"status\":%d,\"reason\":", r->status);
        pl_json_string(f, first_sentence(r->error, why, sizeof why));
        fprintf(f, ",\"error\":");
        pl_json_string(f, r->error);
        fputc('}', f);
    }
    fprintf(f, "],\"best\":");
    if (legal) json_legal(f, 1, &reports[order[0]], label_of(labels, order[0]));
    else fputs("null", f);
    fprintf(f, "}\n");
    free(order);
    return ferror(f) ? PL_EINVAL : PL_OK;
}
