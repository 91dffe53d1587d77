/* sim/tools/vmem_report.c: a call's scoped VMEM listed as XLA lists a TPU
 * program's when it runs out of VMEM (pl_vmem_report, sim/tilesim.h).
 *
 * On hardware the listing is the first thing a user sees of a block that is
 * too large: the total against the limit, then each scoped allocation,
 * largest first, with its size, shape, layout and tiling, unpadded size and
 * padding. tilesim knows the same allocations before anything runs (rule
 * M4): each VMEM operand's block, once per buffer, and each VMEM scratch
 * buffer, their bytes as laid out in tiles (T6). A double-buffered block is
 * listed as one allocation with the buffers as its major dimension, as
 * Mosaic allocates it. Shapes are written by the HLO reader's formatter
 * (tilesim_hlo.h), so that `tilesim hlo` reads them back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/common.h" /* sim_sat_mul */
#include "../tilesim_hlo.h"

/* XLA's human-readable sizes: 512B, 4.00K, 31.07M, 1.50G (binary units). */
static const char *xla_bytes(int64_t b, char *buf, size_t n)
{
    if (b < 1024) snprintf(buf, n, "%lldB", (long long)b);
    else if (b < (1LL << 20)) snprintf(buf, n, "%.2fK", (double)b / 1024);
    else if (b < (1LL << 30)) snprintf(buf, n, "%.2fM", (double)b / (1 << 20));
    else snprintf(buf, n, "%.2fG", (double)b / (1 << 30));
    return buf;
}

static pl_hlo_dtype hlo_dtype(pl_dtype t)
{
    switch (t) {
    case PL_BF16: return PL_HLO_BF16;
    case PL_F16: return PL_HLO_F16;
    case PL_I32: return PL_HLO_S32;
    case PL_I8: return PL_HLO_S8;
    case PL_I16: return PL_HLO_S16;
    case PL_F8E4M3: return PL_HLO_F8E4M3FN;
    case PL_F8E5M2: return PL_HLO_F8E5M2;
    default: return PL_HLO_F32; /* int4 arrays are refused before a report exists */
    }
}

/* One allocation of the listing. */
typedef struct vmem_alloc {
    const char *name, *what;
    int buffers;
    pl_dtype dtype;
    int rank;
    const int64_t *shape;
    int64_t padded, unpadded;
} vmem_alloc;

/* Its shape as XLA writes it: [buffers,] dims, row-major, the 2-D memory
 * tile of the dtype on the chip, and the packing of narrow types. */
static void shape_text(const vmem_alloc *a, const pl_chip *chip, char *buf, size_t n)
{
    pl_hlo_shape s = {.dtype = hlo_dtype(a->dtype)};
    if (a->buffers > 1) s.dims[s.rank++] = a->buffers;
    for (int d = 0; d < a->rank && s.rank < PL_HLO_MAX_DIMS; d++) s.dims[s.rank++] = a->shape[d];
    s.has_layout = 1;
    for (int d = 0; d < s.rank; d++) s.minor_to_major[d] = s.rank - 1 - d;
    int bits = pl_dtype_bits(a->dtype);
    if (a->rank >= 2) {
        s.n_tiles = 1;
        s.tile_rank[0] = 2;
        /* the tile the budget laid the buffer out in (T6): the chip's for the dtype's width, which every
         * large array gets (a small array may get a smaller one, T8; the budget counts the full tile) */
        s.tiles[0][0] = pl_chip_tile_rows(chip, a->dtype, 1LL << 40);
        s.tiles[0][1] = 128;
        if (bits < 32) { /* (2,1) for 16-bit, (4,1) for 8-bit: values of a column packed in a 32-bit word */
            s.n_tiles = 2;
            s.tile_rank[1] = 2;
            s.tiles[1][0] = 32 / bits;
            s.tiles[1][1] = 1;
        }
    }
    pl_hlo_shape_format(&s, buf, n);
}

static int by_size(const void *x, const void *y)
{
    const vmem_alloc *a = x, *b = y;
    return (a->padded < b->padded) - (a->padded > b->padded);
}

static int collect(const pl_report *r, vmem_alloc *v)
{
    int n = 0;
    for (int i = 0; i < r->n_operands; i++) {
        const pl_operand_report *o = &r->op[i];
        if (o->space != PL_VMEM || o->buffers < 1) continue;
        v[n++] = (vmem_alloc){o->name, o->role == PL_ROLE_OUT ? "output block" : "input block", o->buffers,
                              o->dtype, o->rank, o->block, sim_sat_mul(o->vmem_bytes, o->buffers),
                              sim_sat_mul(o->block_bytes, o->buffers)};
    }
    for (int i = 0; i < r->n_scratch; i++) {
        const pl_scratch_report *s = &r->scratch[i];
        if (s->space != PL_VMEM) continue;
        int64_t logical = (int64_t)pl_dtype_size(s->dtype);
        for (int d = 0; d < s->rank; d++) logical = sim_sat_mul(logical, s->shape[d]);
        v[n++] = (vmem_alloc){s->name, "scratch", 1, s->dtype, s->rank, s->shape, s->bytes, logical};
    }
    /* what the kernel allocated itself, live at its peak: known only once it has run (K4); no shape kept */
    for (int i = 0; i < r->n_scoped_peak && i < PL_MAX_SCOPED_PEAK; i++)
        v[n++] = (vmem_alloc){r->scoped_peak[i].what, NULL, 1, PL_F32, 0, NULL, r->scoped_peak[i].bytes, 0};
    qsort(v, (size_t)n, sizeof *v, by_size);
    return n;
}

int pl_vmem_report(const pl_report *r, FILE *f)
{
    /* no limit: the call's own was refused (over the physical VMEM), nothing to list against */
    if (!r || !f || !r->chip || r->vmem_limit <= 0) return PL_EINVAL;
    vmem_alloc v[PL_MAX_CALL_OPERANDS + PL_MAX_SCRATCH + PL_MAX_SCOPED_PEAK];
    int n = collect(r, v);
    int64_t used = 0;
    for (int i = 0; i < n; i++) used = v[i].padded > INT64_MAX - used ? INT64_MAX : used + v[i].padded; /* saturates */
    char a[32], b[32], c[32], shape[256];
    if (used > r->vmem_limit)
        fprintf(f, "Ran out of memory in memory space vmem. Used %s of %s vmem. Exceeded vmem capacity by %s.\n",
                xla_bytes(used, a, sizeof a), xla_bytes(r->vmem_limit, b, sizeof b),
                xla_bytes(used - r->vmem_limit, c, sizeof c));
    else
        fprintf(f, "Scoped vmem of %s on %s: used %s of %s vmem.\n", r->call_name, r->chip->name,
                xla_bytes(used, a, sizeof a), xla_bytes(r->vmem_limit, b, sizeof b));
    fprintf(f, "\nProgram vmem requirement %s:\n    scoped %16s\n\n  Largest program allocations in vmem:\n",
            xla_bytes(used, a, sizeof a), xla_bytes(used, b, sizeof b));
    for (int i = 0; i < n; i++) {
        if (!v[i].what) {
            fprintf(f, "\n  %d. Size: %s\n     Operator: pallas_call %s, inside the kernel: %s\n     Shape: (run_scoped "
                    "while the kernel ran, rule K4)\n     Allocation type: scoped\n     ==========================\n",
                    i + 1, xla_bytes(v[i].padded, a, sizeof a), r->call_name, v[i].name);
            continue;
        }
        shape_text(&v[i], r->chip, shape, sizeof shape);
        fprintf(f, "\n  %d. Size: %s\n     Operator: pallas_call %s, %s '%s'", i + 1, xla_bytes(v[i].padded, a, sizeof a),
                r->call_name, v[i].what, v[i].name);
        if (v[i].buffers > 1) fprintf(f, " (%d buffers, rule P6)", v[i].buffers);
        fprintf(f, "\n     Shape: %s\n     Unpadded size: %s\n", shape, xla_bytes(v[i].unpadded, a, sizeof a));
        if (v[i].padded > v[i].unpadded && v[i].unpadded > 0)
            fprintf(f, "     Extra memory due to padding: %s (%.1fx expansion)\n",
                    xla_bytes(v[i].padded - v[i].unpadded, a, sizeof a), (double)v[i].padded / (double)v[i].unpadded);
        fprintf(f, "     Allocation type: scoped\n     ==========================\n");
    }
    return ferror(f) ? PL_EINVAL : PL_OK;
}
