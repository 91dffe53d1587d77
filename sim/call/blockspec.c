/* sim/call/blockspec.c: one operand's BlockSpec, checked and resolved into the
 * sim_operand the pipeline walks with (rule T7: before anything runs).
 *
 * It implements the rules on a block: its rank and sizes (B1), squeezed
 * dimensions dropped from the kernel's Ref (B4), Element dimensions with
 * padding (B5), the memory space a block may live in (M1), RevisitMode.ANY
 * (P5), the buffer count (P6, P7), and the (8,128) rule and its kin (T1-T5).
 * Messages name the operand, its block shape, its array shape and the rule,
 * because that is what a user needs to fix the spec.
 *
 * Called by validate.c (sim_plan_operand, plan.h); calls budget.c for the
 * bytes of a block in VMEM and the layout warning (T6), and maps.c and
 * buffering.c for the index map.
 */
#include <stdio.h>
#include <string.h>

#include "../base/plan.h"

/* ---- messages ------------------------------------------------------------------ */

static void format_block(const pl_block_spec *s, char *buf, size_t n)
{
    size_t at = (size_t)snprintf(buf, n, "(");
    int rank = s->rank < 0 ? 0 : s->rank > PL_MAX_RANK ? PL_MAX_RANK : s->rank;
    for (int d = 0; d < rank && at < n; d++) {
        const char *sep = d ? ", " : "";
        if (s->block[d] == PL_SQUEEZED)
            at += (size_t)snprintf(buf + at, n - at, "%ssqueezed", sep);
        else
            at += (size_t)snprintf(buf + at, n - at, "%s%lld", sep, (long long)s->block[d]);
    }
    if (at < n) snprintf(buf + at, n - at, ")");
}

/* ---- the block's shape -------------------------------------------------------- */

static int is_pow2(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

/* T8, the compiler's layer after T1: the array lives in HBM in (rows, 128)
 * tiles that depend on its dtype and the chip (pl_chip_tile_rows), and
 * Mosaic copies a block only as whole tiles; a second-last block size that
 * is neither a multiple of those rows nor the whole dimension is rejected
 * (XLA E2002). One that is the whole dimension is legal and only pads (T6).
 * The message names the tile and the nearest legal sizes. */
/* The block and the array counted in elements, and their dtype: a packed4
 * int8 array holds two 4-bit values per byte along its last dimension
 * (pl_array.packed4), and its blocks follow the 4-bit rules. */
static pl_dtype element_view(const sim_operand *op, int64_t *blk, int64_t *shp)
{
    const pl_array *a = op->arr;
    int r = a->rank;
    memcpy(blk, op->block, (size_t)r * sizeof *blk);
    memcpy(shp, a->shape, (size_t)r * sizeof *shp);
    if (!a->packed4) return a->dtype;
    blk[r - 1] = sim_sat_mul(blk[r - 1], 2), shp[r - 1] = sim_sat_mul(shp[r - 1], 2);
    return PL_I4;
}

static int check_memory_tiling(const sim_plan *plan, const sim_operand *op, const char *blk, const char *shp,
                               pl_report *rep)
{
    const pl_array *a = op->arr;
    int r = a->rank;
    if (op->space != PL_VMEM || op->element[r - 2] || op->squeezed[r - 2]) return PL_OK;
    char msg[PL_MSG_MAX];
    int64_t eb[PL_MAX_RANK], es[PL_MAX_RANK];
    pl_dtype t = element_view(op, eb, es);
    /* rows are rows either way: the block as the caller wrote it, the tile of its elements */
    if (!kern_check_t8(plan->chip->name, t, r, op->block, op->squeezed, a->shape,
                       pl_chip_tile_rows(plan->chip, t, es[r - 2]), blk, shp, msg, sizeof msg))
        return PL_OK;
    return sim_fail(rep, PL_ETILING, "%s: %s", op->rep->name, msg);
}

/* T1 / T2: the (8,128) rule on a VMEM (or partial SMEM) block; blk and shp
 * are the block and array shapes as messages print them; then T8. */
/* T1's way out for one of the last two dims: the legal sizes nearest b (a
 * multiple of m, or the array's whole dim), or, for a squeezed dim (one
 * row a grid point: a gather), a unit dimension or a copy of its own. */
static void nearest_legal(int64_t b, int64_t m, int64_t whole, int squeezed, char *buf, size_t n)
{
    if (squeezed) {
        snprintf(buf, n, "; to take one row a grid point, give the array a unit dimension (rows, 1, cols) with "
                 "block (squeezed, 1, cols), or copy the row from an ANY operand (pltpu_async_copy)");
        return;
    }
    int64_t lo = b / m * m, hi = lo > INT64_MAX - m ? INT64_MAX : lo + m; /* a block near 2^63: no overflow */
    if (lo > 0 && hi < whole) snprintf(buf, n, "; %lld or %lld would do, or %lld", (long long)lo, (long long)hi,
                                       (long long)whole);
    else if (lo > 0) snprintf(buf, n, "; %lld would do, or %lld", (long long)lo, (long long)whole);
    else snprintf(buf, n, "; %lld would do%s", (long long)(hi < whole ? hi : whole),
                  hi < whole ? ", or the whole dimension" : "");
}

static int check_tiling(const sim_plan *plan, const sim_operand *op, const char *blk, const char *shp,
                        pl_report *rep)
{
    const pl_array *a = op->arr;
    int r = a->rank;
    int64_t eb[PL_MAX_RANK], es[PL_MAX_RANK];
    pl_dtype t = element_view(op, eb, es);
    const char *unit = a->packed4 ? " (counted in 4-bit elements, two per byte: packed4)" : "";
    if (r == 1) {
        int64_t b = eb[0], min = 128 * (32 / pl_dtype_bits(t));
        if (b == es[0] || b % 1024 == 0 || (is_pow2(b) && b >= min)) return PL_OK;
        return sim_fail(rep, PL_EBLOCKSHAPE,
                        "%s: rank-1 block %s of %s array %s: %lld elements%s must equal the array's %lld, be a "
                        "multiple of 1024, or be a power of two >= %lld (rule T2)",
                        op->rep->name, blk, pl_dtype_name(t), shp, (long long)b, unit, (long long)es[0],
                        (long long)min);
    }
    int64_t last = eb[r - 1], second = eb[r - 2];
    char near[200];
    if (last % 128 != 0 && last != es[r - 1]) {
        nearest_legal(last, 128, es[r - 1], op->squeezed[r - 1], near, sizeof near);
        return sim_fail(rep, PL_EBLOCKSHAPE,
                        "%s: block %s of array %s: the last block dimension %lld%s%s must be a multiple of 128 "
                        "or equal the array's last dimension %lld (rule T1, the (8,128) rule)%s",
                        op->rep->name, blk, shp, (long long)last, unit, op->squeezed[r - 1] ? " (squeezed)" : "",
                        (long long)es[r - 1], near);
    }
    if (second % 8 != 0 && second != a->shape[r - 2]) {
        nearest_legal(second, 8, a->shape[r - 2], op->squeezed[r - 2], near, sizeof near);
        return sim_fail(rep, PL_EBLOCKSHAPE,
                        "%s: block %s of array %s: the second-last block dimension %lld%s must be a multiple "
                        "of 8 or equal the array's second-last dimension %lld (rule T1, the (8,128) rule)%s",
                        op->rep->name, blk, shp, (long long)second, op->squeezed[r - 2] ? " (squeezed)" : "",
                        (long long)a->shape[r - 2], near);
    }
    return check_memory_tiling(plan, op, blk, shp, rep);
}

/* P5: RevisitMode.ANY is a property of pipelined outputs: only they are
 * written back, so only they can be fetched back. */
static int check_revisit_mode(sim_operand *op, const pl_block_spec *s, pl_report *rep)
{
    if (s->revisit != PL_REVISIT_IMMEDIATE && s->revisit != PL_REVISIT_ANY)
        return sim_fail(rep, PL_EINVAL, "%s: revisit = %d; it must be PL_REVISIT_IMMEDIATE (0, the default) or "
                        "PL_REVISIT_ANY (rule P5)", op->rep->name, (int)s->revisit);
    op->revisit_any = s->revisit == PL_REVISIT_ANY;
    if (op->revisit_any && (op->role != PL_ROLE_OUT || s->space == PL_ANY))
        return sim_fail(rep, PL_EINVAL, "%s: revisit = PL_REVISIT_ANY applies to pipelined output blocks only; %s "
                        "(rule P5)", op->rep->name, op->role != PL_ROLE_OUT ? "this operand is not an output, its "
                        "blocks are never written back" : "this output lives in ANY and has no VMEM block");
    if (op->revisit_any && s->buffers > 1)
        return sim_fail(rep, PL_EINVAL, "%s: RevisitMode.ANY (revisit = PL_REVISIT_ANY) needs one buffer, but the "
                        "spec asks for Buffered(%d): a revisited block is fetched back into the buffer its "
                        "write-back just left (rule P5); leave buffers at 0 or set it to 1",
                        op->rep->name, s->buffers);
    return PL_OK;
}

/* M1 and P5: a memory space that can hold the block, and a revisit mode it
 * allows. */
static int check_space(sim_operand *op, const pl_block_spec *s, pl_report *rep)
{
    const pl_array *a = op->arr;
    if (s->space == PL_SEMAPHORE) { /* semaphores another call made or takes next (M16) */
        if (op->role == PL_ROLE_PREFETCH || a->dtype != PL_I32 || op->revisit_any)
            return sim_fail(rep, op->role == PL_ROLE_PREFETCH || op->revisit_any ? PL_EINVAL : PL_EDTYPE,
                            "%s: a semaphore operand is an input or output int32 array of counts, one per semaphore "
                            "(PL_SEMAPHORE: pltpu.SemaphoreType.REGULAR; PL_SEMAPHORE_DMA: .DMA), whole, with no "
                            "revisit mode; this one is %s "
                            "(rule M16)", op->rep->name,
                            op->role == PL_ROLE_PREFETCH ? "a scalar-prefetch argument"
                            : op->revisit_any ? "revisited" : pl_dtype_name(a->dtype));
        int64_t n = pl_array_size(a); /* as a scratch semaphore array (M2) */
        if (n < 1 || n > 65536)
            return sim_fail(rep, PL_EINVAL, "%s: a semaphore operand of %lld semaphores; an array holds 1 to 65536 "
                            "(rules M16, M2)", op->rep->name, (long long)n);
        return PL_OK;
    }
    if (s->space != PL_VMEM && s->space != PL_SMEM && s->space != PL_ANY)
        return sim_fail(rep, PL_EINVAL, "%s: memory space %s cannot hold a block operand (rule M1)",
                        op->rep->name, pl_memspace_name(s->space));
    int bits = pl_dtype_bits(a->dtype); /* M1: a narrower scalar takes a 32-bit word (JAX's test_sum_in_smem: int16) */
    if (s->space == PL_SMEM && bits != 32 && bits != 16 && bits != 8 && op->role != PL_ROLE_PREFETCH) /* M5 widens */
        return sim_fail(rep, PL_EDTYPE, "%s: SMEM holds scalars of 8, 16 or 32 bits, each in a 32-bit word; a %s "
                        "array cannot live there (rule M1)", op->rep->name, pl_dtype_name(a->dtype));
    return check_revisit_mode(op, s, rep);
}

/* B5: Element dimension d of block size b, at offsets 0 .. padded size - b. */
static int plan_element_dim(sim_operand *op, const pl_block_spec *s, int d, int64_t b, pl_report *rep)
{
    const pl_array *a = op->arr;
    op->block[d] = b;
    op->element[d] = 1;
    op->pad_lo[d] = s->pad_lo[d];
    if (s->pad_lo[d] < 0 || s->pad_hi[d] < 0 || s->pad_lo[d] > (1LL << 40) || s->pad_hi[d] > (1LL << 40))
        return sim_fail(rep, PL_EBLOCKSHAPE, "%s: element dimension %d has padding (%lld, %lld); padding "
                        "must be >= 0 (rule B5)", op->rep->name, d, (long long)s->pad_lo[d],
                        (long long)s->pad_hi[d]);
    op->nblocks[d] = a->shape[d] + s->pad_lo[d] + s->pad_hi[d] - b + 1;
    if (op->nblocks[d] < 1)
        return sim_fail(rep, PL_EBLOCKSHAPE, "%s: element block %lld of dimension %d is larger than the "
                        "padded array (%lld + %lld + %lld) (rule B5)", op->rep->name, (long long)b, d,
                        (long long)a->shape[d], (long long)s->pad_lo[d], (long long)s->pad_hi[d]);
    return PL_OK;
}

/* B1, B4, B5, T3: each dimension's block size and block count. */
static int plan_dims(sim_operand *op, const pl_block_spec *s, const char *blk, const char *shp, pl_report *rep)
{
    const pl_array *a = op->arr;
    if (s->rank != 0 && s->rank != a->rank)
        return sim_fail(rep, PL_EBLOCKSHAPE,
                        "%s: block shape %s has rank %d but the array %s has rank %d (rule B1)", op->rep->name, blk,
                        s->rank, shp, a->rank);
    for (int d = 0; d < PL_MAX_RANK; d++)
        if (s->bounded[d])
            return sim_fail(rep, PL_EBLOCKSHAPE, "%s: dimension %d is a BoundedSlice, which only "
                            "pltpu_emit_pipeline's blocks take; a pallas_call block has static sizes (rule K8)",
                            op->rep->name, d);
    if (s->space != PL_ANY && a->rank == 0 && s->space != PL_SMEM && s->space != PL_SEMAPHORE)
        return sim_fail(rep, PL_EBLOCKSHAPE, "%s: a rank-0 array cannot be a VMEM block (rule T3)",
                        op->rep->name);
    for (int d = 0; d < a->rank; d++) {
        int64_t b = s->rank ? s->block[d] : a->shape[d];
        if (b == PL_SQUEEZED) {
            op->squeezed[d] = 1;
            op->block[d] = 1;
            op->nblocks[d] = a->shape[d];
        } else if (b < 1) {
            return sim_fail(rep, PL_EBLOCKSHAPE,
                            "%s: block shape %s of array %s has dimension %d of size %lld; sizes must be >= 1 or "
                            "PL_SQUEEZED (rule B1)",
                            op->rep->name, blk, shp, d, (long long)b);
        } else if (s->element[d]) {
            int rc = plan_element_dim(op, s, d, b, rep);
            if (rc) return rc;
        } else {
            op->block[d] = b;
            op->nblocks[d] = a->shape[d] / b + (a->shape[d] % b != 0); /* ceil, without overflow for huge b */
        }
    }
    int n_element = 0, n_plain = 0;
    for (int d = 0; d < a->rank; d++)
        if (!op->squeezed[d]) *(op->element[d] ? &n_element : &n_plain) += 1;
    if (n_element && n_plain)
        return sim_fail(rep, PL_EBLOCKSHAPE, "%s: block %s mixes element and blocked dimensions; either every "
                        "non-squeezed dimension is an Element dimension, or none is (rule B5)", op->rep->name, blk);
    return PL_OK;
}

/* ---- buffers ------------------------------------------------------------------ */

/* T4, T5, P5-P7: whether the operand is pipelined, and with how many
 * buffers. */
static int plan_buffers(const sim_plan *plan, sim_operand *op, const pl_block_spec *s, const char *blk,
                        const char *shp, pl_report *rep)
{
    const pl_array *a = op->arr;
    int whole = 1;
    for (int d = 0; d < a->rank; d++) whole &= !op->squeezed[d] && op->block[d] == a->shape[d];
    int constant = sim_map_is_zero(&op->map);

    if (s->space == PL_ANY || s->space == PL_SEMAPHORE) {
        if (!whole || !constant)
            return sim_fail(rep, PL_EBLOCKSHAPE,
                            "%s: operand in memory space %s takes no blocking, but has block %s of array %s%s; "
                            "give it the whole array with a zero index map (rule %s)",
                            op->rep->name, pl_memspace_name(s->space), blk, shp,
                            constant ? "" : " and a non-constant index map", s->space == PL_ANY ? "T5" : "M16");
        op->pipelined = 0;
        op->buffers = 0;
        return PL_OK;
    }
    op->pipelined = 1;
    if (!(s->space == PL_SMEM && whole)) { /* T4: whole SMEM windows are exempt */
        int rc = check_tiling(plan, op, blk, shp, rep);
        if (rc) return rc;
    }
    if (s->buffers < 0)
        return sim_fail(rep, PL_EINVAL, "%s: buffers = %d; it must be >= 1, or 0 for the default (rule P6)",
                        op->rep->name, s->buffers);
    /* P7: a whole-array block with a constant map is copied once and
     * needs one buffer; everything else is double-buffered (P6). */
    op->buffers = s->buffers ? s->buffers : (whole && constant) ? 1 : 2;
    if (!s->buffers && s->space == PL_VMEM && sim_block_never_changes(plan, op)) op->buffers = 1;
    op->rep->single_buffered = !s->buffers && op->buffers == 1;
    if (op->buffers > 2)
        sim_warn(rep, "%s: Buffered(%d) is a what-if: pallas_call accepts only 1 or 2 buffers; deeper "
                 "buffering exists only inside emit_pipeline (rule P6)",
                 op->rep->name, op->buffers);
    if (op->revisit_any) op->buffers = 1; /* P5: checked above that the spec asks for no more */
    return PL_OK;
}

/* ---- what the kernel and the report get ------------------------------------------ */

/* The kernel's Ref: the block with squeezed dims dropped (B4). */
static void plan_ref(sim_operand *op)
{
    const pl_array *a = op->arr;
    pl_ref *r = &op->ref;
    memset(r, 0, sizeof *r);
    r->dtype = a->dtype;
    r->space = op->space;
    r->arg = (int16_t)op->arg;
    r->role = (uint8_t)op->role;
    r->readonly = op->role == PL_ROLE_IN;
    op->block_elems = 1;
    for (int d = a->rank - 1; d >= 0; d--) {
        int64_t b = op->pipelined ? op->block[d] : a->shape[d];
        if (!op->pipelined || !op->squeezed[d]) r->rank++;
        op->block_elems = sim_sat_mul(op->block_elems, b);
    }
    int64_t stride = 1;
    for (int d = a->rank - 1, k = r->rank - 1; d >= 0; d--) {
        int64_t b = op->pipelined ? op->block[d] : a->shape[d];
        if (!op->pipelined || !op->squeezed[d]) {
            r->shape[k] = b;
            r->stride[k] = stride;
            k--;
        }
        stride = sim_sat_mul(stride, b); /* a huge block is rejected by M4 later */
    }
}

/* The operand's row in the report: its block, buffers and bytes; and the
 * layout warning (T6) for a VMEM block. */
static void report_operand(const sim_plan *plan, const sim_operand *op, pl_report *rep)
{
    const pl_array *a = op->arr;
    pl_operand_report *or = op->rep;
    or->rank = a->rank;
    memcpy(or->block, op->pipelined ? op->block : a->shape, sizeof or->block);
    or->buffers = op->buffers;
    or->block_bytes = sim_sat_mul(op->block_elems, (int64_t)op->elem_size);
    int64_t eb[PL_MAX_RANK], es[PL_MAX_RANK];
    pl_dtype t = a->rank >= 1 ? element_view(op, eb, es) : a->dtype; /* packed4: laid out as 4-bit tiles */
    or->vmem_bytes = op->pipelined ? sim_laid_out_bytes(eb, a->rank, t, op->space, plan->chip) : 0;

    or->array_bytes = sim_sat_mul(pl_array_size(a), (int64_t)op->elem_size);
    or->tile_rows = op->space == PL_VMEM && op->pipelined && a->rank >= 2
                        ? pl_chip_tile_rows(plan->chip, t, es[a->rank - 2])
                        : 0;
    if (op->space == PL_VMEM && op->pipelined)
        sim_warn_padding(rep, or->name, "block", eb, a->rank, t, plan->chip, or->vmem_bytes, or->block_bytes);
}

int sim_plan_operand(const sim_plan *plan, sim_operand *op, const pl_block_spec *spec, pl_report *rep)
{
    const pl_array *a = op->arr;
    /* M16: DMA semaphores are semaphores of another kind; from here on both are PL_SEMAPHORE */
    pl_block_spec dma_sems, *s = &dma_sems;
    dma_sems = *spec;
    op->sem_dma = spec->space == PL_SEMAPHORE_DMA;
    if (op->sem_dma) dma_sems.space = PL_SEMAPHORE;
    char blk[128], shp[128];
    format_block(s, blk, sizeof blk);
    sim_format_idx(a->shape, a->rank, shp, sizeof shp);
    op->rank = a->rank;
    op->space = s->space;
    op->map = s->map;
    op->elem_size = pl_dtype_size(a->dtype);
    op->rep->space = s->space;
    op->rep->dtype = a->dtype;

    int rc = check_space(op, s, rep);
    if (!rc) rc = plan_dims(op, s, blk, shp, rep);
    if (!rc) rc = sim_check_map(plan, op, rep);
    if (!rc) rc = plan_buffers(plan, op, s, blk, shp, rep);
    if (!rc && op->pipelined) rc = sim_check_map_range(plan, op, rep);
    if (rc) return rc;
    plan_ref(op);
    sim_window_plan(op);
    report_operand(plan, op, rep);
    return PL_OK;
}
