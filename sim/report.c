/* sim/report.c: the text report of a call: grid, per-operand traffic, VMEM
 * footprint by buffer against the scoped limit, FLOPs, warnings. */
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
static const char *human_bytes(double b, char *buf, size_t n)
{
    const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (b >= 1024 && u < 4) b /= 1024, u++;
    snprintf(buf, n, u ? "%.1f %s" : "%.0f %s", b, unit[u]);
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
                (long long)o->skipped, (long long)o->writebacks, human_bytes((double)o->bytes_in, a, sizeof a),
                human_bytes((double)o->bytes_out, b, sizeof b));
    }
    fprintf(f, "  VMEM: %s of %s scoped limit (%s physical)\n", human_bytes((double)r->vmem_bytes, a, sizeof a),
            human_bytes((double)r->vmem_limit, b, sizeof b),
            human_bytes(r->chip ? (double)r->chip->vmem_bytes : 0, shape, sizeof shape));
    for (int i = 0; i < r->n_operands; i++) {
        const pl_operand_report *o = &r->op[i];
        if (o->space != PL_VMEM) continue;
        fprintf(f, "    %-10s %d x %s\n", o->name, o->buffers, human_bytes((double)o->vmem_bytes, a, sizeof a));
    }
    for (int i = 0; i < r->n_scratch; i++)
        fprintf(f, "    %-10s 1 x %s (%s scratch, %s)\n", r->scratch[i].name,
                human_bytes((double)r->scratch[i].bytes, a, sizeof a), pl_memspace_name(r->scratch[i].space),
                pl_dtype_name(r->scratch[i].dtype));
    fprintf(f, "  work: %.4g MXU FLOPs, %.4g VPU element ops, %s HBM traffic\n", r->mxu_flops, r->vpu_flops,
            human_bytes((double)r->hbm_bytes, a, sizeof a));
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
