/* cli/sweep_print.c: a sweep's results as a text table, CSV or JSON.
 *
 * Legal configurations come fastest first (limited by --top), then the
 * rejected ones in list order with the first sentence of their reason. */
#include <string.h>

#include "../sim/base/json.h"
#include "cli.h"

double cli_tile_intensity(const cli_sweep_row *r) { return (double)r->bm * (double)r->bn / (double)(r->bm + r->bn); }

const char *cli_reject_kind(const cli_sweep_row *r)
{
    if (r->too_many_steps) return "too many steps";
    return r->rep->status == PL_EVMEM ? "over budget" : "illegal";
}

#define REASON_MAX 110 /* characters of a reason before it is cut at its first sentence */

static int64_t shown(const cli_sweep_result *s)
{
    return s->top > 0 && s->top < s->n_legal ? s->top : s->n_legal;
}

static int64_t limit_bytes(const cli_sweep_result *s)
{
    return s->vmem_limit ? s->vmem_limit : s->chip->vmem_default_limit;
}

static const char *reason(const cli_sweep_row *r, char *buf, size_t n)
{
    return cli_first_sentence(r->rep->error, REASON_MAX, buf, n);
}

/* ---- text ---------------------------------------------------------------------- */

void cli_sweep_print_text(const cli_sweep_result *s, FILE *f)
{
    char a[32], b[32], why[PL_MSG_MAX];
    fprintf(f, "sweep: matmul %lld x %lld x %lld %s on %s, scoped VMEM limit %s: %d configuration%s\n",
            (long long)s->m, (long long)s->n, (long long)s->k, pl_dtype_name(s->dtype), s->chip->name,
            pl_format_bytes((double)limit_bytes(s), a, sizeof a), s->n_rows, s->n_rows == 1 ? "" : "s");
    if (s->n_legal) {
        fputc('\n', f);
        fprintf(f, "%5s %6s %6s %6s %8s %10s %5s %8s %10s %8s %6s  %s\n", "#", "bm", "bn", "bk", "AI", "VMEM", "fits",
                "steps", "time", "TFLOP/s", "%peak", "bound");
        for (int64_t i = 0; i < shown(s); i++) {
            const cli_sweep_row *r = &s->rows[s->legal[i]];
            fprintf(f, "%5lld %6lld %6lld %6lld %8.1f %10s %5s %8lld %10s %8.2f %6.1f  %s\n", (long long)i + 1,
                    (long long)r->bm, (long long)r->bn, (long long)r->bk, cli_tile_intensity(r),
                    pl_format_bytes((double)r->rep->vmem_bytes, a, sizeof a), "yes", (long long)r->rep->steps,
                    pl_format_time(r->rep->time_s, b, sizeof b), r->rep->flops_per_s / 1e12, 100 * r->rep->peak_fraction,
                    pl_bound_name(r->rep->bound));
        }
        if (shown(s) < s->n_legal)
            fprintf(f, "      ... %lld more legal configurations (--top N shows more)\n",
                    (long long)(s->n_legal - shown(s)));
        fprintf(f, "AI = bm*bn/(bm+bn): FLOP per byte of x and y that a step loads, in bf16 (half that in f32);\n"
                   "VMEM = double-buffered x, y and o blocks plus the f32 accumulator (none when bk covers K), under the "
                   "scoped limit.\n");
    }
    if (s->n_rejected) {
        fprintf(f, "\nrejected (%d):\n%6s %6s %6s  %s\n", s->n_rejected, "bm", "bn", "bk", "reason");
        int cut = pl_sweep_rejected_shown(s->n_rejected, s->top);
        for (int i = 0; i < cut; i++) {
            const cli_sweep_row *r = &s->rows[s->rejected[i]];
            if (r->rep->status == PL_EVMEM && r->rep->vmem_bytes > r->rep->vmem_limit && r->rep->vmem_limit > 0)
                snprintf(why, sizeof why, "needs %s of VMEM, over the %s scoped limit (rule M4)",
                         pl_format_bytes((double)r->rep->vmem_bytes, a, sizeof a),
                         pl_format_bytes((double)r->rep->vmem_limit, b, sizeof b));
            else reason(r, why, sizeof why);
            fprintf(f, "%6lld %6lld %6lld  %s: %s\n", (long long)r->bm, (long long)r->bn, (long long)r->bk,
                    cli_reject_kind(r), why);
        }
        if (cut < s->n_rejected)
            fprintf(f, "      ... %d more rejected (--top N shows more; --csv and --json list every one)\n",
                    s->n_rejected - cut);
    }
    fprintf(f, "\n%d configuration%s evaluated in %.2f s, %d legal", s->n_rows, s->n_rows == 1 ? "" : "s", s->wall_s,
            s->n_legal);
    if (!s->n_legal) {
        fprintf(f, "; nothing to rank (the reasons are above)\n");
        return;
    }
    const cli_sweep_row *best = &s->rows[s->legal[0]];
    fprintf(f, "; best bm x bn x bk = %lld x %lld x %lld: %s, %.1f TFLOP/s (%.0f%% of peak)\n  %s\n",
            (long long)best->bm, (long long)best->bn, (long long)best->bk, pl_format_time(best->rep->time_s, a, sizeof a),
            best->rep->flops_per_s / 1e12, 100 * best->rep->peak_fraction, best->rep->bound_msg);
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

void cli_sweep_print_csv(const cli_sweep_result *s, FILE *f)
{
    char why[PL_MSG_MAX];
    fprintf(f, "bm,bn,bk,status,ai,vmem_bytes,fits,steps,time_s,tflops,peak_pct,bound,reason\n");
    for (int64_t i = 0; i < shown(s); i++) {
        const cli_sweep_row *r = &s->rows[s->legal[i]];
        fprintf(f, "%lld,%lld,%lld,ok,%.4g,%lld,yes,%lld,%.6g,%.6g,%.4g,%s,", (long long)r->bm, (long long)r->bn,
                (long long)r->bk, cli_tile_intensity(r), (long long)r->rep->vmem_bytes, (long long)r->rep->steps,
                r->rep->time_s, r->rep->flops_per_s / 1e12, 100 * r->rep->peak_fraction, pl_bound_name(r->rep->bound));
        csv_string(f, r->rep->bound_msg);
        fputc('\n', f);
    }
    for (int i = 0; i < s->n_rejected; i++) {
        const cli_sweep_row *r = &s->rows[s->rejected[i]];
        fprintf(f, "%lld,%lld,%lld,%s,%.4g,", (long long)r->bm, (long long)r->bn, (long long)r->bk, cli_reject_kind(r),
                cli_tile_intensity(r));
        if (r->rep->vmem_bytes) fprintf(f, "%lld", (long long)r->rep->vmem_bytes);
        fprintf(f, ",no,%lld,,,,,", (long long)r->steps);
        csv_string(f, reason(r, why, sizeof why));
        fputc('\n', f);
    }
}

/* ---- JSON ------------------------------------------------------------------------- */

static void json_legal(const cli_sweep_row *r, FILE *f)
{
    fprintf(f, "{\"bm\":%lld,\"bn\":%lld,\"bk\":%lld,\"ai\":", (long long)r->bm, (long long)r->bn, (long long)r->bk);
    cli_json_number(f, cli_tile_intensity(r));
    fprintf(f, ",\"vmem_bytes\":%lld,\"fits\":true,\"steps\":%lld,\"time_s\":", (long long)r->rep->vmem_bytes,
            (long long)r->rep->steps);
    cli_json_number(f, r->rep->time_s);
    fprintf(f, ",\"tflops\":");
    cli_json_number(f, r->rep->flops_per_s / 1e12);
    fprintf(f, ",\"peak_pct\":");
    cli_json_number(f, 100 * r->rep->peak_fraction);
    fprintf(f, ",\"intensity\":");
    cli_json_number(f, r->rep->intensity);
    fprintf(f, ",\"hbm_bytes\":%lld,\"bound\":", (long long)r->rep->hbm_bytes);
    pl_json_string(f, pl_bound_name(r->rep->bound));
    fprintf(f, ",\"bound_msg\":");
    pl_json_string(f, r->rep->bound_msg);
    fputc('}', f);
}

void cli_sweep_print_json(const cli_sweep_result *s, FILE *f)
{
    char why[PL_MSG_MAX];
    fprintf(f, "{\"kernel\":\"matmul\",\"m\":%lld,\"n\":%lld,\"k\":%lld,\"dtype\":\"%s\",\"chip\":", (long long)s->m,
            (long long)s->n, (long long)s->k, pl_dtype_name(s->dtype));
    pl_json_string(f, s->chip->name);
    fprintf(f, ",\"vmem_limit\":%lld,\"evaluated\":%d,\"n_legal\":%d,\"n_rejected\":%d,\"legal\":[",
            (long long)limit_bytes(s), s->n_rows, s->n_legal, s->n_rejected);
    for (int64_t i = 0; i < shown(s); i++) {
        fputs(i ? ",\n" : "\n", f);
        json_legal(&s->rows[s->legal[i]], f);
    }
    fprintf(f, "],\"rejected\":[");
    for (int i = 0; i < s->n_rejected; i++) {
        const cli_sweep_row *r = &s->rows[s->rejected[i]];
        fprintf(f, "%s{\"bm\":%lld,\"bn\":%lld,\"bk\":%lld,\"steps\":%lld,\"fits\":false,\"kind\":", i ? ",\n" : "\n",
                (long long)r->bm, (long long)r->bn, (long long)r->bk, (long long)r->steps);
        pl_json_string(f, cli_reject_kind(r));
        if (r->rep->vmem_bytes) fprintf(f, ",\"vmem_bytes\":%lld", (long long)r->rep->vmem_bytes);
        fprintf(f, ",\"reason\":");
        pl_json_string(f, reason(r, why, sizeof why));
        fprintf(f, ",\"error\":");
        pl_json_string(f, r->rep->error);
        fputc('}', f);
    }
    fprintf(f, "],\"best\":");
    if (s->n_legal) json_legal(&s->rows[s->legal[0]], f);
    else fputs("null", f);
    fprintf(f, "}\n");
}
