/* sim/call/budget.c: how many bytes the call's buffers take on the chip, and
 * whether they fit.
 *
 * A buffer takes more VMEM than its data: VMEM is laid out in tiles of
 * (native sublanes, 128 lanes), so the last two dimensions round up (rule
 * T6), and a layout that at least doubles the bytes gets a warning. SMEM
 * holds 32-bit words unpadded. The sum of every operand's buffers and every
 * scratch buffer must fit the SMEM of a TensorCore (rule M1) and the call's
 * scoped VMEM limit, itself at most the physical VMEM (rule M4).
 *
 * Called by validate.c and blockspec.c; calls nothing of the planning stage.
 */
#include <stdio.h>

#include "../base/plan.h"

/* ---- layout in VMEM (T6) -------------------------------------------------------- */

static int64_t round_up(int64_t x, int64_t m) { return x > INT64_MAX - m ? INT64_MAX : (x + m - 1) / m * m; }

static int native_sublanes(pl_dtype t, const pl_chip *chip)
{
    int bits = pl_dtype_bits(t);
    int rows8 = chip->sublanes_8bit > 0 ? chip->sublanes_8bit : 32; /* the chip's table (T8), 32 if unset */
    int rows4 = chip->sublanes_4bit > 0 ? chip->sublanes_4bit : 64;
    return bits >= 32 ? 8 : bits == 16 ? chip->sublanes_16bit : bits == 4 ? rows4 : rows8;
}

/* Bytes a buffer of this shape takes in VMEM, laid out in (sublanes, 128)
 * tiles. Model choice: rank-1 buffers are padded to a multiple of 128
 * elements; SMEM holds 32-bit words unpadded. */
int64_t sim_laid_out_bytes(const int64_t *shape, int rank, pl_dtype t, pl_memspace space, const pl_chip *chip)
{
    int64_t es = (int64_t)pl_dtype_size(t), n = 1, bits = pl_dtype_bits(t);
    if (space == PL_SMEM) {
        for (int d = 0; d < rank; d++) n = sim_sat_mul(n, shape[d]);
        return sim_sat_mul(n, es < 4 ? 4 : es);
    }
    for (int d = 0; d < rank; d++) {
        int64_t s = shape[d];
        if (d == rank - 1) s = round_up(s, 128);
        else if (d == rank - 2) s = round_up(s, native_sublanes(t, chip));
        n = sim_sat_mul(n, s);
    }
    return bits == 4 ? n / 2 + n % 2 : sim_sat_mul(n, es); /* 4-bit: two per byte */
}

/* T6, one rule for blocks and scratch alike: warn when the tiled layout at
 * least doubles the bytes, naming the padded dims, the factor and the bytes;
 * a (1, N) bias (sublanes) and a (256, 1) statistics block (lanes) alike. */
void sim_warn_padding(pl_report *rep, const char *who, const char *kind, const int64_t *shape, int rank,
                      pl_dtype t, const pl_chip *chip, int64_t tiled, int64_t logical)
{
    if (rank < 1 || logical <= 0 || tiled / 2 < logical) return; /* tiled < 2 x logical, without overflow */
    char why[200] = "", shp[128];
    int at = 0, sub = native_sublanes(t, chip);
    if (rank >= 2 && shape[rank - 2] % sub)
        at += snprintf(why, sizeof why, "has %lld row%s where the native tile has %d sublanes",
                       (long long)shape[rank - 2], shape[rank - 2] == 1 ? "" : "s", sub);
    if (shape[rank - 1] % 128)
        snprintf(why + at, sizeof why - (size_t)at, "%sis %lld wide where a tile has 128 lanes", at ? " and " : "",
                 (long long)shape[rank - 1]);
    sim_format_idx(shape, rank, shp, sizeof shp);
    sim_warn(rep, "%s: %s %s (%s) %s; it takes %lld bytes of VMEM for %lld of data, %.0fx (rule T6)", who, kind,
             shp, pl_dtype_name(t), why, (long long)tiled, (long long)logical, (double)tiled / (double)logical);
}

/* ---- the budget (M4) --------------------------------------------------------- */

static int64_t sat_add(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

int sim_check_budget(const sim_plan *plan, const pl_call *call, pl_report *rep)
{
    const pl_chip *chip = plan->chip;
    /* the options' limit (a tool's --vmem-limit) wins over the one the call sets */
    int64_t asked = plan->vmem_limit ? plan->vmem_limit : call->vmem_limit_bytes;
    int64_t limit = asked ? asked : chip->vmem_default_limit;
    if (asked < 0)
        return sim_fail(rep, PL_EINVAL, "%svmem_limit_bytes = %lld; it must be > 0, or 0 for the chip's default",
                        plan->vmem_limit ? "options: " : "", (long long)asked);
    if (limit > chip->vmem_bytes)
        return sim_fail(rep, PL_EVMEM,
                        "vmem_limit_bytes = %lld exceeds the %lld bytes of physical VMEM of a %s TensorCore "
                        "(rule M4)",
                        (long long)limit, (long long)chip->vmem_bytes, chip->name);
    rep->vmem_limit = limit;
    int64_t vmem = 0, smem = 0;
    for (int i = 0; i < rep->n_operands; i++) {
        const pl_operand_report *o = &rep->op[i];
        int64_t b = sim_sat_mul(o->vmem_bytes, o->buffers);
        if (o->space == PL_VMEM) vmem = sat_add(vmem, b);
        else if (o->space == PL_SMEM) smem = sat_add(smem, b);
    }
    for (int i = 0; i < rep->n_scratch; i++) {
        int64_t *sum = rep->scratch[i].space == PL_VMEM ? &vmem : &smem; /* semaphores count 0 */
        *sum = sat_add(*sum, rep->scratch[i].bytes);
    }
    rep->vmem_bytes = vmem;
    rep->smem_bytes = smem;
    if (smem > chip->smem_bytes)
        return sim_fail(rep, PL_EVMEM, "SMEM use of %lld bytes exceeds the %lld bytes of SMEM of a %s TensorCore "
                        "(rule M1)", (long long)smem, (long long)chip->smem_bytes, chip->name);
    if (vmem <= limit) return PL_OK;

    char list[1400];
    size_t at = 0;
    for (int i = 0; i < rep->n_operands && at < sizeof list; i++) {
        const pl_operand_report *o = &rep->op[i];
        if (o->space != PL_VMEM) continue;
        at += (size_t)snprintf(list + at, sizeof list - at, "\n  %-12s %d x %lld bytes = %lld", o->name,
                               o->buffers, (long long)o->vmem_bytes, (long long)sim_sat_mul(o->buffers, o->vmem_bytes));
    }
    for (int i = 0; i < rep->n_scratch && at < sizeof list; i++)
        if (rep->scratch[i].space == PL_VMEM)
            at += (size_t)snprintf(list + at, sizeof list - at, "\n  %-12s 1 x %lld bytes = %lld (scratch)",
                                   rep->scratch[i].name, (long long)rep->scratch[i].bytes,
                                   (long long)rep->scratch[i].bytes);
    return sim_fail(rep, PL_EVMEM,
                    "VMEM budget exceeded: %lld bytes of buffers over the scoped limit of %lld bytes on %s "
                    "(rule M4); raise vmem_limit_bytes (at most %lld) or use smaller blocks:%s",
                    (long long)vmem, (long long)limit, chip->name, (long long)chip->vmem_bytes, list);
}
