/* cli/tune_print.c: `tilesim tune`'s table (cli/tune.h) as text, CSV or
 * JSON: one row per shape, keyed by the shape and every other parameter
 * that is not the tiling, so that a serving stack reading it finds the
 * same columns whatever the shapes. */
#include <stdlib.h>
#include <string.h>

#include "../sim/base/json.h"
#include "tune.h"

const char *tune_assign(const pl_kernel_def *d, int p, int64_t v, char *buf, size_t n)
{
    if (d->params[p].kind == PL_PARAM_DTYPE) snprintf(buf, n, "%s=%s", d->params[p].name, pl_dtype_name((pl_dtype)v));
    else snprintf(buf, n, "%s=%lld", d->params[p].name, (long long)v);
    return buf;
}

static const char *value_text(const pl_kernel_def *d, int p, int64_t v, char *buf, size_t n)
{
    const char *a = tune_assign(d, p, v, buf, n);
    return a + strlen(d->params[p].name) + 1;
}

/* The parameters of v that are in mask, "bm=256 bn=512", into buf. */
static const char *params_text(const pl_kernel_def *d, const int *mask, const int64_t *v, const char *sep, char *buf,
                               size_t n)
{
    buf[0] = '\0';
    for (int p = 0; p < d->n_params; p++) {
        char one[96];
        if (mask[p] && strlen(buf) + 1 < n)
            snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", buf[0] ? sep : "", tune_assign(d, p, v[p], one, sizeof one));
    }
    return buf;
}

static void shape_mask(const tune_job *job, int *mask)
{
    memset(mask, 0, PL_KDEF_MAX_PARAMS * sizeof *mask);
    for (int c = 0; c < job->sh->n_cols; c++) mask[job->sh->col[c]] = 1;
}

/* The parameters outside the shape columns and the tiling (--set, or kept
 * at their defaults: a dtype, a K no column gives): the CSV and JSON tables
 * name them beside the shape, so that a row says every value it was tuned
 * at, as a tuned table is keyed by its dtypes. */
static void key_mask(const tune_job *job, int *mask)
{
    int shape[PL_KDEF_MAX_PARAMS];
    shape_mask(job, shape);
    for (int p = 0; p < job->d->n_params; p++) mask[p] = !shape[p] && !job->tiling[p];
}

/* ", K=512 for every shape (no column or --set gives it: its default)", or "". */
static const char *defaulted_text(const tune_job *job, char *buf, size_t n)
{
    char one[96];
    size_t at = 0;
    int count = 0;
    buf[0] = '\0';
    for (int p = 0; p < job->d->n_params && at < n; p++)
        if (job->defaulted[p])
            at += (size_t)snprintf(buf + at, n - at, "%s%s", count++ ? " " : ", ",
                                   tune_assign(job->d, p, job->rows[0].key[p], one, sizeof one));
    if (count && at < n)
        snprintf(buf + at, n - at, " for every shape (no column or --set gives %s: %s default)", count > 1 ? "them" : "it",
                 count > 1 ? "their" : "its");
    return buf;
}

/* The tiling parameters some shape's best takes at the largest value tried where twice that value is
 * faster (simulated), noted under the table: the list (--vary) should reach further. */
static void edge_note(const tune_job *job, FILE *f)
{
    for (int p = 0; p < job->d->n_params && p < 32; p++) {
        int rows = 0;
        for (int i = 0; i < job->sh->n; i++) rows += job->rows[i].legal && (job->rows[i].edge >> p & 1u);
        if (rows)
            fprintf(f, "  %s: the best of %d shape%s is the largest %s tried, and twice it is 1%% faster or "
                       "more (simulated): --vary %s=... to search past it\n", job->d->params[p].name, rows,
                    rows == 1 ? "" : "s", job->d->params[p].name, job->d->params[p].name);
    }
}

/* The shape of row i ("M=8 N=4096 K=4096") into buf. */
static const char *shape_text(const tune_job *job, const int *shape, int i, char *buf, size_t n)
{
    int64_t v[PL_KDEF_MAX_PARAMS] = {0};
    for (int k = 0; k < job->sh->n_cols; k++) v[job->sh->col[k]] = job->sh->values[(size_t)i * PL_KDEF_MAX_PARAMS + k];
    return params_text(job->d, shape, v, " ", buf, n);
}

/* Column widths: the widest shape and the widest configuration, at least
 * the old fixed widths, so that every row lines up under its heading. */
static void text_widths(const tune_job *job, const int *shape, int *ws, int *wc)
{
    char a[256];
    *ws = 28, *wc = 30;
    for (int i = 0; i < job->sh->n; i++) {
        const tune_row *r = &job->rows[i];
        int n = (int)strlen(shape_text(job, shape, i, a, sizeof a));
        if (n > *ws) *ws = n;
        if (!r->legal) continue;
        if ((n = (int)strlen(params_text(job->d, job->tiling, r->best, " ", a, sizeof a))) > *wc) *wc = n;
        if (r->second_s >= 0 && (n = (int)strlen(params_text(job->d, job->tiling, r->second, " ", a, sizeof a))) > *wc)
            *wc = n;
    }
}

void tune_print_text(const tune_job *job, FILE *f)
{
    const pl_kernel_def *d = job->d;
    int shape[PL_KDEF_MAX_PARAMS], ws, wc;
    shape_mask(job, shape);
    text_widths(job, shape, &ws, &wc);
    char a[256] = "", b[256], c[256], t1[32], t2[32];
    for (int p = 0; p < d->n_params; p++)
        if (job->tiling[p]) snprintf(a + strlen(a), sizeof a - strlen(a), "%s%s", a[0] ? ", " : "", d->params[p].name);
    char kept[256], defaulted[256];
    cli_kept_text(d, job->kept, job->rows[0].key, "give it as a column, --set or --vary", kept, sizeof kept);
    fprintf(f, "tune: %s on %s: %d shape%s, tiling (%s) swept per shape%s%s, cost only\n\n", d->name,
            job->opt.chip_spec->name, job->sh->n, job->sh->n == 1 ? "" : "s", a[0] ? a : "nothing varies", kept,
            defaulted_text(job, defaulted, sizeof defaulted));
    fprintf(f, "  %-*s %-*s %10s %10s  %-*s %10s %7s %5s\n", ws, "shape", wc, "best", "time", "limit", wc, "runner-up",
            "time", "margin", "ties");
    int raised = 0;
    for (int i = 0; i < job->sh->n; i++) {
        const tune_row *r = &job->rows[i];
        shape_text(job, shape, i, a, sizeof a);
        if (!r->legal) {
            fprintf(f, "  %-*s none of %d tilings is legal: %.160s\n", ws, a, r->total, r->reason);
            continue;
        }
        params_text(d, job->tiling, r->best, " ", b, sizeof b);
        char lim[40], lb[32];
        snprintf(lim, sizeof lim, "%s%s", pl_format_bytes((double)r->vmem_limit, lb, sizeof lb), r->raised ? "*" : "");
        raised |= r->raised;
        fprintf(f, "  %-*s %-*s %10s %10s", ws, a, wc, b, pl_format_time(r->best_s, t1, sizeof t1), lim);
        if (r->second_s >= 0)
            fprintf(f, "  %-*s %10s %6.1f%% %5d\n", wc, params_text(d, job->tiling, r->second, " ", c, sizeof c),
                    pl_format_time(r->second_s, t2, sizeof t2), 100.0 * (r->second_s - r->best_s) / r->best_s,
                    r->ties);
        else fprintf(f, "  %-*s %10s %7s %5d\n", wc, "(none)", "", "", r->ties);
    }
    fprintf(f, "\n  limit: the scoped VMEM limit the best needs%s\n", raised ? "; * above the chip's default: the call "
            "must set it (vmem_limit_bytes), as --vmem-limit does" : "");
    fprintf(f, "  ties: the tilings predicted within %.0f %% of the best, the best included: read them as equal "
               "and time\n  them on the chip (a hardware autotuner's choice is usually among them: docs/CHIPS.md)\n",
            100 * TUNE_TIE);
    edge_note(job, f);
}

void tune_print_csv(const tune_job *job, FILE *f)
{
    const pl_kernel_def *d = job->d;
    char buf[96], a[256];
    int dkey[PL_KDEF_MAX_PARAMS];
    key_mask(job, dkey);
    for (int c = 0; c < job->sh->n_cols; c++) fprintf(f, "%s,", d->params[job->sh->col[c]].name);
    for (int p = 0; p < d->n_params; p++)
        if (dkey[p]) fprintf(f, "%s,", d->params[p].name);
    for (int p = 0; p < d->n_params; p++)
        if (job->tiling[p]) fprintf(f, "%s,", d->params[p].name);
    fprintf(f, "time_us,vmem_limit_bytes,runner_up,runner_up_us,margin_pct,ties,legal,tried,why\n");
    for (int i = 0; i < job->sh->n; i++) {
        const tune_row *r = &job->rows[i];
        for (int c = 0; c < job->sh->n_cols; c++)
            fprintf(f, "%s,", value_text(d, job->sh->col[c], job->sh->values[(size_t)i * PL_KDEF_MAX_PARAMS + c], buf,
                                         sizeof buf));
        for (int p = 0; p < d->n_params; p++)
            if (dkey[p]) fprintf(f, "%s,", value_text(d, p, r->key[p], buf, sizeof buf));
        for (int p = 0; p < d->n_params; p++)
            if (job->tiling[p]) fprintf(f, "%s,", r->legal ? value_text(d, p, r->best[p], buf, sizeof buf) : "");
        if (r->legal) fprintf(f, "%.4f,%lld,", r->best_s * 1e6, (long long)r->vmem_limit);
        else fprintf(f, ",,");
        if (r->second_s >= 0)
            fprintf(f, "%s,%.4f,%.2f,", params_text(d, job->tiling, r->second, " ", a, sizeof a), r->second_s * 1e6,
                    100.0 * (r->second_s - r->best_s) / r->best_s);
        else fprintf(f, ",,,");
        fprintf(f, "%d,%d,%d,", r->ties, r->legal, r->total);
        /* a shape with no legal tiling says why (the first refusal), quoted as CSV quotes a field */
        if (!r->legal && r->reason[0]) {
            fputc('"', f);
            for (const char *q = r->reason; *q; q++) {
                if (*q == '"') fputc('"', f);
                fputc(*q == '\n' ? ' ' : *q, f);
            }
            fputc('"', f);
        }
        fputc('\n', f);
    }
}

/* {"bm":256,"dtype":"bf16"} of the parameters in mask */
static void json_params(const pl_kernel_def *d, const int *mask, const int64_t *v, FILE *f)
{
    int first = 1;
    fputc('{', f);
    for (int p = 0; p < d->n_params; p++) {
        if (!mask[p]) continue;
        fprintf(f, "%s", first ? "" : ",");
        pl_json_string(f, d->params[p].name);
        if (d->params[p].kind == PL_PARAM_DTYPE) fputc(':', f), pl_json_string(f, pl_dtype_name((pl_dtype)v[p]));
        else fprintf(f, ":%lld", (long long)v[p]);
        first = 0;
    }
    fputc('}', f);
}

void tune_print_json(const tune_job *job, FILE *f)
{
    const pl_kernel_def *d = job->d;
    int shape[PL_KDEF_MAX_PARAMS], dkey[PL_KDEF_MAX_PARAMS];
    shape_mask(job, shape);
    key_mask(job, dkey);
    for (int p = 0; p < d->n_params; p++) shape[p] |= dkey[p];
    fprintf(f, "{\"kernel\":");
    pl_json_string(f, d->name);
    fprintf(f, ",\"chip\":");
    pl_json_string(f, job->opt.chip_spec->name);
    fprintf(f, ",\"shapes\":[");
    for (int i = 0; i < job->sh->n; i++) {
        const tune_row *r = &job->rows[i];
        int64_t v[PL_KDEF_MAX_PARAMS] = {0};
        memcpy(v, r->key, sizeof v);
        for (int k = 0; k < job->sh->n_cols; k++) v[job->sh->col[k]] = job->sh->values[(size_t)i * PL_KDEF_MAX_PARAMS + k];
        fprintf(f, "%s{\"shape\":", i ? "," : "");
        json_params(d, shape, v, f);
        fprintf(f, ",\"legal\":%d,\"tried\":%d,\"best\":", r->legal, r->total);
        if (r->legal)
            json_params(d, job->tiling, r->best, f), fprintf(f, ",\"time_us\":%.6g,\"vmem_limit_bytes\":%lld,"
                                                               "\"raised_limit\":%s", r->best_s * 1e6,
                                                               (long long)r->vmem_limit, r->raised ? "true" : "false");
        else fprintf(f, "null,\"time_us\":null,\"vmem_limit_bytes\":null,\"raised_limit\":null");
        fprintf(f, ",\"runner_up\":");
        if (r->second_s >= 0)
            json_params(d, job->tiling, r->second, f), fprintf(f, ",\"runner_up_us\":%.6g,\"margin\":%.6g",
                                                              r->second_s * 1e6, (r->second_s - r->best_s) / r->best_s);
        else fprintf(f, "null,\"runner_up_us\":null,\"margin\":null");
        fprintf(f, ",\"ties\":%d,\"faster_past_the_list\":[", r->ties); /* the note under the text table */
        for (int p = 0, n = 0; p < d->n_params && p < 32; p++)
            if (r->legal && (r->edge >> p & 1u)) fprintf(f, "%s", n++ ? "," : ""), pl_json_string(f, d->params[p].name);
        fputc(']', f);
        fprintf(f, ",\"reason\":");
        if (r->legal) fprintf(f, "null");
        else pl_json_string(f, r->reason);
        fputc('}', f);
    }
    fprintf(f, "]}\n");
}

