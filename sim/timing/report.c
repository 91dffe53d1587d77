/* sim/timing/report.c: the text report of a call: grid, per-operand traffic, VMEM
 * footprint by buffer against the scoped limit, FLOPs, warnings; the same
 * as JSON, optionally with a reference check's verdict. */
#include <math.h>
#include <string.h>

#include "../base/json.h"
#include "../base/sim.h"

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

/* pl_format_bytes and pl_format_time, which analyze.c and host.c use too, are in common.c. */

static void format_shape(const int64_t *s, int rank, char *buf, size_t n)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int d = 0; d < rank && at < n; d++) at += (size_t)snprintf(buf + at, n - at, d ? "x%lld" : "%lld", (long long)s[d]);
    if (!rank) snprintf(buf, n, "scalar");
}

void sim_report_ideal_line(const pl_report *r, FILE *f)
{
    char b[32], t[32];
    if (r->ideal_s > 0 && r->ideal_flops <= 0) /* .bytes alone: no FLOP count to state */
        fprintf(f, "  ideal: %s (the kernel's .bytes; it gives no .flops) take %s on %s; efficiency %.1f%%\n",
                pl_format_bytes(r->ideal_bytes, b, sizeof b), pl_format_time(r->ideal_s, t, sizeof t), r->chip->name,
                100 * r->efficiency);
    else if (r->ideal_s > 0) /* a definition's .flops and .bytes */
        fprintf(f, "  ideal: %.4g FLOPs and %s (the kernel's .flops, .bytes) take %s on %s; efficiency %.1f%%\n",
                r->ideal_flops, pl_format_bytes(r->ideal_bytes, b, sizeof b), pl_format_time(r->ideal_s, t, sizeof t),
                r->chip->name, 100 * r->efficiency);
}

/* The time line, the headline and the bound. The parts of the time are the
 * last core's, so they add up to it (G4); a kernel with little MXU work
 * leads with the bandwidth it reaches, not "0 TFLOP/s". */
static void print_timing(const pl_report *r, FILE *f)
{
    char t[4][32], on[96] = "";
    double comp = r->compute_s, wait = r->dma_exposed_s, over = r->overhead_s;
    if (r->cores > 1) {
        comp = r->core_compute_s, wait = r->core_exposed_s, over = r->core_overhead_s;
        snprintf(on, sizeof on, " on core %d, the last of %d to finish", r->slowest_core, r->cores);
    }
    fprintf(f, "  time on %s: %s = compute %s + exposed DMA %s + step overhead %s%s\n", r->chip->name,
            pl_format_time(r->time_s, t[0], 32), pl_format_time(comp, t[1], 32), pl_format_time(wait, t[2], 32),
            pl_format_time(over, t[3], 32), on);
    if (r->mxu_light) {
        fprintf(f, "  %.1f GB/s = %.1f%% of the %s HBM bandwidth (%.0f GB/s); VPU busy %.1f%% of the time",
                r->hbm_bw_achieved / 1e9, 100 * r->hbm_bw_fraction, r->chip->name, r->chip->hbm_bw / 1e9,
                100 * r->vpu_fraction);
        if (r->mxu_flops > 0)
            fprintf(f, "; MXU %.3g TFLOP/s = %.1f%% of its %s peak", r->flops_per_s / 1e12, 100 * r->peak_fraction,
                    pl_dtype_name(r->mxu_dtype));
        fputc('\n', f);
    } else {
        fprintf(f, "  %.3g TFLOP/s = %.1f%% of the %s MXU peak; %.1f FLOP per HBM byte (critical %.0f)\n",
                r->flops_per_s / 1e12, 100 * r->peak_fraction, pl_dtype_name(r->mxu_dtype), r->intensity,
                r->critical_intensity);
    }
    char busy[256];
    sim_report_ideal_line(r, f);
    if (sim_bound_busy_line(r, busy, sizeof busy)) fprintf(f, "  busy: %s\n", busy);
    fprintf(f, "  bound: %s\n", r->bound_msg);
}

/* The two layers of legality (T1-T5, then T8): a call that ran passed both;
 * say so, with the memory tile each tiled block matched. */
static void print_legality(const pl_report *r, FILE *f)
{
    fprintf(f, "  legality: passes the BlockSpec check (T1-T5) and the compiler's tiling check on %s (T8)",
            r->chip ? r->chip->name : "?");
    const char *sep = ": ";
    for (int i = 0; i < r->n_operands; i++) {
        const pl_operand_report *o = &r->op[i];
        if (!o->tile_rows) continue;
        fprintf(f, "%s%s %s in (%d, 128) tiles", sep, o->name, pl_dtype_name(o->dtype), o->tile_rows);
        /* a short array's HBM tile; its VMEM buffer takes whole tiles of the dtype (T6, warned below) */
        int full = r->chip ? pl_chip_tile_rows(r->chip, o->dtype, (int64_t)1 << 40) : 0;
        if (full > o->tile_rows) fprintf(f, " in HBM, (%d, 128) in VMEM", full);
        sep = ", ";
    }
    fputc('\n', f);
}

void pl_report_print(const pl_report *r, FILE *f)
{
    if (!r || !f) return;
    char a[64], b[64], shape[96];
    /* a wrong result (V5) ran to the end: its report is whole, and its findings say why */
    if (r->status != PL_OK && r->status != PL_EVERIFY) {
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
    print_legality(r, f);
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
    if (r->scoped_peak_bytes > 0) /* K4: inside the kernel, on top of the call's own buffers above */
        fprintf(f, "    run_scoped inside the kernel: %s at most (of the %s the call's buffers leave)\n",
                pl_format_bytes((double)r->scoped_peak_bytes, a, sizeof a),
                pl_format_bytes((double)(r->vmem_limit - r->vmem_bytes), b, sizeof b));
    if (r->nested_steps > 0)
        fprintf(f, "  nested pipelines: %lld emit_pipeline steps, each with a grid step's overhead (rules K3, P9)\n",
                (long long)r->nested_steps);
    fprintf(f, "  work: %.4g MXU FLOPs, %.4g VPU element ops, %s HBM traffic\n", r->mxu_flops, r->vpu_flops,
            pl_format_bytes((double)r->hbm_bytes, a, sizeof a));
    char est[160];
    pl_cost_estimate(r, est, sizeof est);
    fprintf(f, "  cost estimate for the real call: %s\n", est);
    /* transcendental ops and element loops, only when the kernel has them */
    if (r->eup_elems) fprintf(f, "  EUP: %lld elements through it (their time is VPU time)\n", (long long)r->eup_elems);
    if (r->scalar_ops)
        fprintf(f, "  scalar unit: %lld accesses (pl_get / pl_set) taking %s\n", (long long)r->scalar_ops,
                pl_format_time(r->scalar_s, a, sizeof a));
    if (r->dma_copies)
        fprintf(f, "  manual DMA: %lld copies, %s to or from HBM\n", (long long)r->dma_copies,
                pl_format_bytes((double)r->dma_bytes, a, sizeof a));
    if (r->ici_copies) {
        char w[32];
        fprintf(f, "  to other devices (ICI): %lld copies, %s; waited %s for other devices\n",
                (long long)r->ici_copies, pl_format_bytes((double)r->ici_bytes, a, sizeof a),
                pl_format_time(r->remote_wait_s, w, sizeof w));
    }
    if (r->cores) print_timing(r, f);
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

/* The operands' members, in the report object's "operands" array. */
static void json_operands(const pl_report *r, FILE *f)
{
    for (int i = 0; i < r->n_operands; i++) {
        const pl_operand_report *o = &r->op[i];
        fprintf(f, "%s{\"name\":", i ? "," : "");
        pl_json_string(f, o->name);
        fprintf(f, ",\"fetchbacks\":%lld", (long long)o->fetchbacks); /* P5, RevisitMode.ANY */
        fprintf(f, ",\"tile_rows\":%d", o->tile_rows);                   /* T8: the array's memory tile */
        fprintf(f, ",\"role\":\"%s\",\"space\":\"%s\",\"dtype\":\"%s\",\"block\":", role_name(o->role),
                pl_memspace_name(o->space), pl_dtype_name(o->dtype));
        json_shape(f, o->block, o->rank);
        fprintf(f,
                ",\"buffers\":%d,\"block_bytes\":%lld,\"vmem_bytes\":%lld,\"copies\":%lld,\"skipped\":%lld,"
                "\"writebacks\":%lld,\"bytes_in\":%lld,\"bytes_out\":%lld,\"single_buffered\":%s,\"array_bytes\":%lld}",
                o->buffers, (long long)o->block_bytes, (long long)o->vmem_bytes, (long long)o->copies,
                (long long)o->skipped, (long long)o->writebacks, (long long)o->bytes_in, (long long)o->bytes_out,
                o->single_buffered ? "true" : "false", (long long)o->array_bytes);
    }
}

/* "warnings": one string a line of r->warnings. */
static void json_warnings(const pl_report *r, FILE *f)
{
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
    fprintf(f, ",\"steps\":%lld,\"nested_steps\":%lld,\"scoped_peak_bytes\":%lld,\"operands\":[", (long long)r->steps,
            (long long)r->nested_steps, (long long)r->scoped_peak_bytes);
    json_operands(r, f);
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
    fputc(',', f);
    sim_bound_busy_json(r, f);
    fprintf(f, ",\"ideal_flops\":%.17g,\"ideal_bytes\":%.17g,\"ideal_s\":%.9g,\"efficiency\":%.6g", r->ideal_flops,
            r->ideal_bytes, r->ideal_s, r->efficiency);
    fprintf(f, ",\"hbm_bw_achieved\":%.9g,\"hbm_bw_fraction\":%.6g,\"vpu_fraction\":%.6g,\"mxu_light\":%s,"
            "\"slowest_core\":%d,\"core_compute_s\":%.9g,\"core_exposed_s\":%.9g,\"core_overhead_s\":%.9g",
            r->hbm_bw_achieved, r->hbm_bw_fraction, r->vpu_fraction, r->mxu_light ? "true" : "false",
            r->slowest_core, r->core_compute_s, r->core_exposed_s, r->core_overhead_s);
    fprintf(f, ",\"scalar_ops\":%lld,\"scalar_s\":%.9g,\"eup_elems\":%lld", (long long)r->scalar_ops, r->scalar_s,
            (long long)r->eup_elems);
    fprintf(f, ",\"cost_estimate\":{\"flops\":%.0f,\"transcendentals\":%lld,\"bytes_accessed\":%lld}",
            r->mxu_flops + r->vpu_flops, (long long)r->eup_elems, (long long)r->hbm_bytes);
    fprintf(f, ",\"ici_copies\":%lld,\"ici_bytes\":%lld,\"remote_wait_s\":%.9g", (long long)r->ici_copies,
            (long long)r->ici_bytes, r->remote_wait_s);
    json_warnings(r, f);
}

int pl_cost_estimate(const pl_report *r, char *buf, size_t n)
{
    if (!r) return buf && n ? (buf[0] = '\0', 0) : 0;
    return snprintf(buf, buf ? n : 0, "pl.CostEstimate(flops=%.0f, transcendentals=%lld, bytes_accessed=%lld)",
                    r->mxu_flops + r->vpu_flops, (long long)r->eup_elems, (long long)r->hbm_bytes);
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
