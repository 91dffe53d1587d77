/* sim/report.c: the text report of a call: grid, per-operand traffic, VMEM
 * footprint by buffer against the scoped limit, FLOPs, warnings; the same
 * as JSON, optionally with a reference check's verdict. */
#include <math.h>
#include <string.h>

#include "sim.h"

static const char *role_name(pl_role r)
{
    switch (r) {
    case PL_ROLE_PREFETCH: return "prefetch";
    case PL_ROLE_IN: return "in";
    case PL_ROLE_OUT: return "out";
    case PL_ROLE_SCRATCH: return "scratch";
    default: return "?";
    }
}

/* 1536 -> "1.5 KiB" */
const char *pl_format_bytes(double b, char *buf, size_t n)
{
    const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (b >= 1024 && u < 4) b /= 1024, u++;
    snprintf(buf, n, u ? "%.1f %s" : "%.0f %s", b, unit[u]);
    return buf;
}

const char *pl_format_time(double s, char *buf, size_t n)
{
    if (s < 1e-6) snprintf(buf, n, "%.0f ns", s * 1e9);
    else if (s < 1e-3) snprintf(buf, n, "%.2f us", s * 1e6);
    else if (s < 1) snprintf(buf, n, "%.2f ms", s * 1e3);
    else snprintf(buf, n, "%.3f s", s);
    return buf;
}

static void format_shape(const int64_t *s, int rank, char *buf, size_t n)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int d = 0; d < rank && at < n; d++) at += (size_t)snprintf(buf + at, n - at, d ? "x%lld" : "%lld", (long long)s[d]);
    if (!rank) snprintf(buf, n, "scalar");
}

void pl_report_print(const pl_report *r, FILE *f)
{
    if (!r || !f) return;
    char a[64], b[64], shape[96];
    if (r->status != PL_OK) {
        fprintf(f, "%s: error %d (%s): %s\n", r->call_name, r->status, pl_strerror(r->status), r->error);
        return;
    }
    sim_format_idx(r->grid, r->grid_rank, shape, sizeof shape);
    fprintf(f, "%s: grid %s = %lld steps on %s\n", r->call_name, r->grid_rank ? shape : "()", (long long)r->steps,
            r->chip ? r->chip->name : "?");
    fprintf(f, "  %-10s %-8s %-5s %-4s %-13s %4s %10s %9s %10s %11s %11s\n", "operand", "role", "space", "dtype",
            "block", "bufs", "copies", "skipped", "writebacks", "HBM in", "HBM out");
    for (int i = 0; i < r->n_operands; i++) {
        const pl_operand_report *o = &r->op[i];
        format_shape(o->block, o->rank, shape, sizeof shape);
        fprintf(f, "  %-10s %-8s %-5s %-4s %-13s %4d %10lld %9lld %10lld %11s %11s\n", o->name, role_name(o->role),
                pl_memspace_name(o->space), pl_dtype_name(o->dtype), shape, o->buffers, (long long)o->copies,
                (long long)o->skipped, (long long)o->writebacks, pl_format_bytes((double)o->bytes_in, a, sizeof a),
                pl_format_bytes((double)o->bytes_out, b, sizeof b));
    }
    for (int i = 0; i < r->n_operands; i++)
        if (r->op[i].fetchbacks)
            fprintf(f, "  %s: %lld blocks fetched back from HBM (%s of its HBM in): revisited (RevisitMode.ANY, "
                    "rule P5)\n", r->op[i].name, (long long)r->op[i].fetchbacks,
                    pl_format_bytes((double)r->op[i].bytes_in, a, sizeof a));
    fprintf(f, "  VMEM: %s of %s scoped limit (%s physical)\n", pl_format_bytes((double)r->vmem_bytes, a, sizeof a),
            pl_format_bytes((double)r->vmem_limit, b, sizeof b),
            pl_format_bytes(r->chip ? (double)r->chip->vmem_bytes : 0, shape, sizeof shape));
    for (int i = 0; i < r->n_operands; i++) {
        const pl_operand_report *o = &r->op[i];
        if (o->space != PL_VMEM) continue;
        fprintf(f, "    %-10s %d x %s%s\n", o->name, o->buffers, pl_format_bytes((double)o->vmem_bytes, a, sizeof a),
                o->single_buffered ? " (single-buffered: its block never changes over the grid, rule P6)" : "");
    }
    for (int i = 0; i < r->n_scratch; i++)
        fprintf(f, "    %-10s 1 x %s (%s scratch, %s)\n", r->scratch[i].name,
                pl_format_bytes((double)r->scratch[i].bytes, a, sizeof a), pl_memspace_name(r->scratch[i].space),
                pl_dtype_name(r->scratch[i].dtype));
    fprintf(f, "  work: %.4g MXU FLOPs, %.4g VPU element ops, %s HBM traffic\n", r->mxu_flops, r->vpu_flops,
            pl_format_bytes((double)r->hbm_bytes, a, sizeof a));
    if (r->dma_copies)
        fprintf(f, "  manual DMA: %lld copies, %s to or from HBM\n", (long long)r->dma_copies,
                pl_format_bytes((double)r->dma_bytes, a, sizeof a));
    if (r->cores) {
        char t[4][32];
        fprintf(f, "  time on %s: %s = compute %s + exposed DMA %s + step overhead %s\n", r->chip->name,
                pl_format_time(r->time_s, t[0], 32), pl_format_time(r->compute_s, t[1], 32),
                pl_format_time(r->dma_exposed_s, t[2], 32), pl_format_time(r->overhead_s, t[3], 32));
        fprintf(f, "  %.3g TFLOP/s = %.1f%% of the %s MXU peak; %.1f FLOP per HBM byte (critical %.0f)\n",
                r->flops_per_s / 1e12, 100 * r->peak_fraction, pl_dtype_name(r->mxu_dtype), r->intensity,
                r->critical_intensity);
        fprintf(f, "  bound: %s\n", r->bound_msg);
    }
    if (r->n_warnings) {
        const char *w = r->warnings;
        while (*w) {
            const char *nl = strchr(w, '\n');
            int len = nl ? (int)(nl - w) : (int)strlen(w);
            fprintf(f, "  warning: %.*s\n", len, w);
            w += len + (nl ? 1 : 0);
        }
    }
}

/* ---- JSON ------------------------------------------------------------------------ */

void pl_json_string(FILE *f, const char *s)
{
    if (!f) return;
    if (!s) s = "";
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') fprintf(f, "\\%c", ch);
        else if (ch == '\n') fputs("\\n", f);
        else if (ch < 0x20) fprintf(f, "\\u%04x", ch);
        else fputc(ch, f);
    }
    fputc('"', f);
}

static void json_shape(FILE *f, const int64_t *s, int rank)
{
    fputc('[', f);
    for (int d = 0; d < rank; d++) fprintf(f, d ? ",%lld" : "%lld", (long long)s[d]);
    fputc(']', f);
}

/* Every member of the report object; the caller closes it. */
static void report_members(const pl_report *r, FILE *f)
{
    fprintf(f, "{\"call\":");
    pl_json_string(f, r->call_name);
    fprintf(f, ",\"status\":%d,\"error\":", r->status);
    pl_json_string(f, r->status ? r->error : "");
    fprintf(f, ",\"chip\":");
    pl_json_string(f, r->chip ? r->chip->name : "");
    fprintf(f, ",\"grid\":");
    json_shape(f, r->grid, r->grid_rank);
    fprintf(f, ",\"steps\":%lld,\"operands\":[", (long long)r->steps);
    for (int i = 0; i < r->n_operands; i++) {
        const pl_operand_report *o = &r->op[i];
        fprintf(f, "%s{\"name\":", i ? "," : "");
        pl_json_string(f, o->name);
        fprintf(f, ",\"fetchbacks\":%lld", (long long)o->fetchbacks); /* P5, RevisitMode.ANY */
        fprintf(f, ",\"role\":\"%s\",\"space\":\"%s\",\"dtype\":\"%s\",\"block\":", role_name(o->role),
                pl_memspace_name(o->space), pl_dtype_name(o->dtype));
        json_shape(f, o->block, o->rank);
        fprintf(f,
                ",\"buffers\":%d,\"block_bytes\":%lld,\"vmem_bytes\":%lld,\"copies\":%lld,\"skipped\":%lld,"
                "\"writebacks\":%lld,\"bytes_in\":%lld,\"bytes_out\":%lld,\"single_buffered\":%s}",
                o->buffers, (long long)o->block_bytes, (long long)o->vmem_bytes, (long long)o->copies,
                (long long)o->skipped, (long long)o->writebacks, (long long)o->bytes_in, (long long)o->bytes_out,
                o->single_buffered ? "true" : "false");
    }
    fprintf(f, "],\"scratch\":[");
    for (int i = 0; i < r->n_scratch; i++) {
        fprintf(f, "%s{\"name\":", i ? "," : "");
        pl_json_string(f, r->scratch[i].name);
        fprintf(f, ",\"space\":\"%s\",\"dtype\":\"%s\",\"bytes\":%lld}", pl_memspace_name(r->scratch[i].space),
                pl_dtype_name(r->scratch[i].dtype), (long long)r->scratch[i].bytes);
    }
    fprintf(f,
            "],\"vmem_bytes\":%lld,\"vmem_limit\":%lld,\"smem_bytes\":%lld,\"mxu_flops\":%.17g,"
            "\"vpu_flops\":%.17g,\"hbm_bytes\":%lld,\"dma_copies\":%lld,\"dma_bytes\":%lld,\"cores\":%d,\"time_s\":%.9g,\"compute_s\":%.9g,"
            "\"mxu_s\":%.9g,\"vpu_s\":%.9g,\"overhead_s\":%.9g,\"dma_exposed_s\":%.9g,\"flops_per_s\":%.9g,"
            "\"peak_fraction\":%.6g,\"intensity\":%.6g,\"critical_intensity\":%.6g,\"bound\":\"%s\",\"bound_msg\":",
            (long long)r->vmem_bytes, (long long)r->vmem_limit, (long long)r->smem_bytes, r->mxu_flops,
            r->vpu_flops, (long long)r->hbm_bytes, (long long)r->dma_copies, (long long)r->dma_bytes, r->cores, r->time_s, r->compute_s, r->mxu_s, r->vpu_s,
            r->overhead_s, r->dma_exposed_s, r->flops_per_s, r->peak_fraction, r->intensity,
            r->critical_intensity, pl_bound_name(r->bound));
    pl_json_string(f, r->bound_msg);
    fprintf(f, ",\"warnings\":[");
    const char *w = r->warnings;
    for (int first = 1; *w; first = 0) {
        const char *nl = strchr(w, '\n');
        size_t len = nl ? (size_t)(nl - w) : strlen(w);
        char line[PL_MSG_MAX];
        snprintf(line, sizeof line, "%.*s", (int)len, w);
        fprintf(f, "%s", first ? "" : ",");
        pl_json_string(f, line);
        w += len + (nl ? 1 : 0);
    }
    fprintf(f, "]");
}

void pl_report_json(const pl_report *r, FILE *f) { pl_report_json_with(r, NULL, f); }

/* A JSON number; JSON has no inf or NaN, so those become null. */
static void json_num(FILE *f, const char *key, double v)
{
    fprintf(f, ",\"%s\":", key);
    if (isfinite(v)) fprintf(f, "%.9g", v);
    else fprintf(f, "null");
}

void pl_report_json_with(const pl_report *r, const pl_check *c, FILE *f)
{
    if (!r || !f) return;
    report_members(r, f);
    if (c) {
        fprintf(f, ",\"verification\":{\"verdict\":\"%s\"", pl_verdict_name(c->verdict));
        json_num(f, "max_abs_err", c->max_abs_err);
        json_num(f, "norm_err", c->norm_err);
        json_num(f, "pass_below", c->pass_below);
        json_num(f, "fail_above", c->fail_above);
        fprintf(f, ",\"n_nan\":%lld,\"worst\":[%lld,%lld],\"blame\":", (long long)c->n_nan,
                (long long)c->worst_row, (long long)c->worst_col);
        pl_json_string(f, c->blame);
        fputc('}', f);
    }
    fprintf(f, "}\n");
}
