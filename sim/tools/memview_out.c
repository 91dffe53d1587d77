/* sim/tools/memview_out.c: the memory viewer as text and as JSON
 * (sim/tilesim_memview.h). The text leads with the peak and what is live
 * at it, as XProf's memory viewer does; the JSON holds everything the SVG
 * and the HTML page draw from.
 */
#include <string.h>

#include "../base/common.h"
#include "../base/json.h"
#include "../tilesim_memview.h"

static const char *role_name(pl_role r)
{
    return r == PL_ROLE_PREFETCH ? "prefetch" : r == PL_ROLE_IN ? "in" : r == PL_ROLE_OUT ? "out" : "scratch";
}

static const char *role_word(const pl_mem_alloc *a)
{
    if (a->kind == PL_MEM_SCRATCH) return "scratch";
    return a->role == PL_ROLE_OUT ? "out slot" : "in slot";
}

static void shape_text(const int64_t *shape, int rank, char *buf, size_t n)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int d = 0; d < rank && at < n; d++)
        at += (size_t)snprintf(buf + at, n - at, "%s%lld", d ? "x" : "", (long long)shape[d]);
    if (!rank) snprintf(buf, n, "scalar");
}

static double pct(int64_t a, int64_t b) { return b > 0 ? 100.0 * (double)a / (double)b : 0; }

/* One row per allocation: the state at step s and the steps live. */
static void alloc_rows(const pl_memview *mv, int64_t s, FILE *f)
{
    fprintf(f, "  %-20s %-9s %-14s %-5s %11s %11s  %-10s %s\n", "allocation", "kind", "shape", "dtype", "bytes",
            "padded", "at peak", "live steps");
    for (int a = 0; a < mv->n_allocs; a++) {
        const pl_mem_alloc *al = &mv->allocs[a];
        char shp[96], b1[32], b2[32];
        shape_text(al->shape, al->rank, shp, sizeof shp);
        fprintf(f, "  %-20s %-9s %-14s %-5s %11s %11s  %-10s %lld of %lld\n", al->name, role_word(al), shp,
                pl_dtype_name(al->dtype), pl_format_bytes((double)al->bytes, b1, sizeof b1),
                pl_format_bytes((double)al->padded_bytes, b2, sizeof b2),
                pl_slot_state_name((pl_slot_state)mv->state[s * mv->n_allocs + a]), (long long)al->live_steps,
                (long long)mv->n_steps);
    }
}

/* Small grids: the live bytes of every step as a bar. */
static void step_bars(const pl_memview *mv, FILE *f)
{
    if (mv->n_steps > 64) {
        fprintf(f, "\n(%lld steps: draw them with --svg)\n", (long long)mv->n_steps);
        return;
    }
    fprintf(f, "\nVMEM live per step (program order):\n");
    for (int64_t s = 0; s < mv->n_steps; s++) {
        char pt[128], b[32];
        sim_format_idx(mv->steps[s].idx, mv->grid_rank, pt, sizeof pt);
        int w = mv->peak_bytes > 0 ? (int)(40 * mv->steps[s].live_bytes / mv->peak_bytes) : 0;
        fprintf(f, "  step %3lld core %d %-12s %10s |%.*s%s\n", (long long)s, mv->steps[s].core, pt,
                pl_format_bytes((double)mv->steps[s].live_bytes, b, sizeof b), w,
                "########################################", s == mv->peak_step ? "  <- peak" : "");
    }
}

static void hbm_rows(const pl_memview *mv, FILE *f)
{
    char b[32], c[32];
    fprintf(f, "\nHBM arrays of the call: %s of %s\n", pl_format_bytes((double)mv->hbm_bytes, b, sizeof b),
            pl_format_bytes((double)mv->hbm_physical, c, sizeof c));
    for (int i = 0; i < mv->n_hbm; i++) {
        const pl_mem_hbm *h = &mv->hbm[i];
        char shp[96];
        shape_text(h->shape, h->rank, shp, sizeof shp);
        fprintf(f, "  %-20s %-8s %-14s %-5s %11s", h->name, role_name(h->role), shp, pl_dtype_name(h->dtype),
                pl_format_bytes((double)h->bytes, b, sizeof b));
        if (h->alias_of >= 0) fprintf(f, "  aliases %s: counted once (M6)", mv->hbm[h->alias_of].name);
        fputc('\n', f);
    }
}

int pl_memview_print(const pl_memview *mv, FILE *f)
{
    if (!mv || !f || mv->status != PL_OK || !mv->state || mv->n_steps < 1) return PL_EINVAL;
    char a[32], b[32], c[32], pt[128];
    const pl_mem_step *p = &mv->steps[mv->peak_step];
    sim_format_idx(p->idx, mv->grid_rank, pt, sizeof pt);
    fprintf(f, "memory: %s on %s, %lld steps in program order (the grid steps, G1)\n", mv->call_name, mv->chip_name,
            (long long)mv->n_steps);
    fprintf(f, "  VMEM peak %s at step %lld (grid point %s, core %d)\n",
            pl_format_bytes((double)mv->peak_bytes, a, sizeof a), (long long)mv->peak_step, pt, p->core);
    fprintf(f, "  %.1f%% of the scoped VMEM limit %s (M4), %.1f%% of the physical VMEM %s\n",
            pct(mv->peak_bytes, mv->vmem_limit), pl_format_bytes((double)mv->vmem_limit, b, sizeof b),
            pct(mv->peak_bytes, mv->vmem_physical), pl_format_bytes((double)mv->vmem_physical, c, sizeof c));
    fprintf(f, "  reserved %s: every slot and scratch buffer, the budget validation checks (M4)\n",
            pl_format_bytes((double)mv->reserved_bytes, a, sizeof a));
    fprintf(f, "  internal scratch %s (not modelled); SMEM %s of %s\n",
            pl_format_bytes((double)mv->internal_scratch_bytes, a, sizeof a),
            pl_format_bytes((double)mv->smem_bytes, b, sizeof b),
            pl_format_bytes((double)mv->smem_physical, c, sizeof c));
    fprintf(f, "\nlive at the peak (step %lld): ", (long long)mv->peak_step);
    for (int i = 0, n = 0; i < mv->n_allocs; i++)
        if (pl_memview_live(mv, mv->peak_step, i)) fprintf(f, "%s%s", n++ ? ", " : "", mv->allocs[i].name);
    fprintf(f, "\n\n");
    alloc_rows(mv, mv->peak_step, f);
    step_bars(mv, f);
    hbm_rows(mv, f);
    return ferror(f) ? PL_EINVAL : PL_OK;
}

/* ---- JSON ------------------------------------------------------------------------------- */

static void json_shape(FILE *f, const int64_t *shape, int rank)
{
    fputc('[', f);
    for (int d = 0; d < rank; d++) fprintf(f, "%s%lld", d ? "," : "", (long long)shape[d]);
    fputc(']', f);
}

static void json_allocs(const pl_memview *mv, FILE *f)
{
    fprintf(f, ",\"allocations\":[");
    for (int a = 0; a < mv->n_allocs; a++) {
        const pl_mem_alloc *al = &mv->allocs[a];
        fprintf(f, "%s{\"name\":", a ? "," : "");
        pl_json_string(f, al->name);
        fprintf(f, ",\"kind\":\"%s\",\"operand\":%d,\"slot\":%d,\"dtype\":\"%s\",\"shape\":",
                al->kind == PL_MEM_SCRATCH ? "scratch" : "slot", al->operand, al->slot, pl_dtype_name(al->dtype));
        json_shape(f, al->shape, al->rank);
        fprintf(f, ",\"bytes\":%lld,\"padded_bytes\":%lld,\"live_steps\":%lld,\"role\":\"%s\"}", (long long)al->bytes,
                (long long)al->padded_bytes, (long long)al->live_steps, role_name(al->role));
    }
    fputc(']', f);
}

/* Per step: core, grid point, live bytes, and one state letter per allocation. */
static void json_steps(const pl_memview *mv, FILE *f)
{
    static const char letters[] = "-icwsS"; /* empty, in flight, current, write-back, stale, scratch */
    fprintf(f, ",\"state_letters\":{\"-\":\"empty\",\"i\":\"in flight\",\"c\":\"current\",\"w\":\"write-back\","
               "\"s\":\"stale\",\"S\":\"scratch\"},\"steps\":[");
    for (int64_t s = 0; s < mv->n_steps; s++) {
        const pl_mem_step *st = &mv->steps[s];
        fprintf(f, "%s{\"core\":%d,\"core_step\":%lld,\"point\":", s ? "," : "", st->core, (long long)st->core_step);
        json_shape(f, st->idx, mv->grid_rank);
        fprintf(f, ",\"live_bytes\":%lld,\"states\":\"", (long long)st->live_bytes);
        for (int a = 0; a < mv->n_allocs; a++) {
            uint8_t x = mv->state[s * mv->n_allocs + a];
            fputc(x < sizeof letters - 1 ? letters[x] : '?', f);
        }
        fprintf(f, "\"}");
    }
    fputc(']', f);
}

static void json_hbm(const pl_memview *mv, FILE *f)
{
    fprintf(f, ",\"hbm\":[");
    for (int i = 0; i < mv->n_hbm; i++) {
        const pl_mem_hbm *h = &mv->hbm[i];
        fprintf(f, "%s{\"name\":", i ? "," : "");
        pl_json_string(f, h->name);
        fprintf(f, ",\"role\":\"%s\",\"dtype\":\"%s\",\"shape\":", role_name(h->role), pl_dtype_name(h->dtype));
        json_shape(f, h->shape, h->rank);
        fprintf(f, ",\"bytes\":%lld,\"alias_of\":", (long long)h->bytes);
        if (h->alias_of >= 0) pl_json_string(f, mv->hbm[h->alias_of].name);
        else fprintf(f, "null");
        fputc('}', f);
    }
    fprintf(f, "],\"hbm_bytes\":%lld,\"hbm_physical\":%lld", (long long)mv->hbm_bytes, (long long)mv->hbm_physical);
}

int pl_memview_json(const pl_memview *mv, FILE *f)
{
    if (!mv || !f || mv->status != PL_OK || !mv->state || mv->n_steps < 1) return PL_EINVAL;
    fprintf(f, "{\"call\":");
    pl_json_string(f, mv->call_name);
    fprintf(f, ",\"chip\":");
    pl_json_string(f, mv->chip_name);
    fprintf(f, ",\"n_steps\":%lld,\"vmem_limit\":%lld,\"vmem_physical\":%lld,\"reserved_bytes\":%lld,"
               "\"internal_scratch_bytes\":%lld,\"smem_bytes\":%lld,\"smem_physical\":%lld,\"peak_bytes\":%lld,"
               "\"peak_step\":%lld,\"peak_core\":%d,\"peak_point\":",
            (long long)mv->n_steps, (long long)mv->vmem_limit, (long long)mv->vmem_physical,
            (long long)mv->reserved_bytes, (long long)mv->internal_scratch_bytes, (long long)mv->smem_bytes,
            (long long)mv->smem_physical, (long long)mv->peak_bytes, (long long)mv->peak_step,
            mv->steps[mv->peak_step].core);
    json_shape(f, mv->steps[mv->peak_step].idx, mv->grid_rank);
    fprintf(f, ",\"live_at_peak\":[");
    for (int a = 0, n = 0; a < mv->n_allocs; a++)
        if (pl_memview_live(mv, mv->peak_step, a)) {
            fprintf(f, "%s", n++ ? "," : "");
            pl_json_string(f, mv->allocs[a].name);
        }
    fputc(']', f);
    json_allocs(mv, f);
    json_steps(mv, f);
    json_hbm(mv, f);
    fprintf(f, "}\n");
    return ferror(f) ? PL_EINVAL : PL_OK;
}
