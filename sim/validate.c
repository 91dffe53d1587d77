/* sim/validate.c: everything checked before a call runs (rule T7): the call's
 * shape, each operand's BlockSpec against the (8,128) rule and its kin
 * (B1-B4, T1-T6), scratch, and the VMEM budget of the chip (M4).
 *
 * The output of validation is a sim_plan: each operand resolved into block
 * sizes, block counts, buffer count and the Ref template the kernel will get.
 * Messages always name the operand, its block shape, its array shape and the
 * rule, because that is what a user needs to fix the spec.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim.h"

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

/* ---- arrays -------------------------------------------------------------------- */


static int check_array(const pl_array *a, const char *what, int allow_null, pl_report *rep)
{
    if (!a->data && !allow_null)
        return sim_fail(rep, PL_EINVAL, "%s: data is NULL (allowed only in cost-only mode)", what);
    if ((unsigned)a->dtype >= PL_DTYPE_COUNT)
        return sim_fail(rep, PL_EINVAL, "%s: unknown dtype %d", what, (int)a->dtype);
    if (a->rank < 0 || a->rank > PL_MAX_RANK)
        return sim_fail(rep, PL_EINVAL, "%s: rank %d is outside 0..%d", what, a->rank, PL_MAX_RANK);
    for (int d = 0; d < a->rank; d++)
        if (a->shape[d] < 1)
            return sim_fail(rep, PL_EINVAL, "%s: dimension %d has size %lld; sizes must be >= 1", what, d,
                            (long long)a->shape[d]);
    return PL_OK;
}

/* Operands must be addressable with int64 byte offsets; scratch that is too
 * large is left to the budget (M4). */
static int check_addressable(const pl_array *a, const char *what, pl_report *rep)
{
    if (sim_sat_mul(pl_array_size(a), (int64_t)pl_dtype_size(a->dtype)) >= INT64_MAX / 2)
        return sim_fail(rep, PL_EINVAL, "%s: an array of %lld x %zu bytes is too large to address", what,
                        (long long)pl_array_size(a), pl_dtype_size(a->dtype));
    return PL_OK;
}

/* ---- layout in VMEM (T6) -------------------------------------------------------- */

static int64_t sat_add(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

static int64_t round_up(int64_t x, int64_t m) { return x > INT64_MAX - m ? INT64_MAX : (x + m - 1) / m * m; }

static int native_sublanes(pl_dtype t, const pl_chip *chip)
{
    int bits = pl_dtype_bits(t);
    return bits >= 32 ? 8 : bits == 16 ? chip->sublanes_16bit : 32;
}

/* Bytes a buffer of this shape takes in VMEM, laid out in (sublanes, 128)
 * tiles. Model choice: rank-1 buffers are padded to a multiple of 128
 * elements; SMEM holds 32-bit words unpadded. */
static int64_t laid_out_bytes(const int64_t *shape, int rank, pl_dtype t, pl_memspace space, const pl_chip *chip)
{
    int64_t es = (int64_t)pl_dtype_size(t), n = 1;
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
    return sim_sat_mul(n, es);
}

/* T6, one rule for blocks and scratch alike: warn when the tiled layout at
 * least doubles the bytes, naming the padded dims, the factor and the bytes;
 * a (1, N) bias (sublanes) and a (256, 1) statistics block (lanes) alike. */
static void warn_padding(pl_report *rep, const char *who, const char *kind, const int64_t *shape, int rank,
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

/* ---- BlockSpecs --------------------------------------------------------------- */

static int is_pow2(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

/* T1 / T2: the (8,128) rule on a VMEM (or partial SMEM) block. */
static int check_tiling(const sim_operand *op, const pl_block_spec *s, pl_report *rep)
{
    const pl_array *a = op->arr;
    char blk[128], shp[128];
    format_block(s, blk, sizeof blk);
    sim_format_idx(a->shape, a->rank, shp, sizeof shp);
    int r = a->rank;
    if (r == 1) {
        int64_t b = op->block[0], min = 128 * (32 / pl_dtype_bits(a->dtype));
        if (b == a->shape[0] || b % 1024 == 0 || (is_pow2(b) && b >= min)) return PL_OK;
        return sim_fail(rep, PL_EBLOCKSHAPE,
                        "%s: rank-1 block %s of %s array %s must equal the array's size, be a multiple of "
                        "1024, or be a power of two >= %lld (rule T2)",
                        op->rep->name, blk, pl_dtype_name(a->dtype), shp, (long long)min);
    }
    int64_t last = op->block[r - 1], second = op->block[r - 2];
    if (last % 128 != 0 && last != a->shape[r - 1])
        return sim_fail(rep, PL_EBLOCKSHAPE,
                        "%s: block %s of array %s: the last block dimension %lld%s must be a multiple of 128 "
                        "or equal the array's last dimension %lld (rule T1, the (8,128) rule)",
                        op->rep->name, blk, shp, (long long)last, op->squeezed[r - 1] ? " (squeezed)" : "",
                        (long long)a->shape[r - 1]);
    if (second % 8 != 0 && second != a->shape[r - 2])
        return sim_fail(rep, PL_EBLOCKSHAPE,
                        "%s: block %s of array %s: the second-last block dimension %lld%s must be a multiple "
                        "of 8 or equal the array's second-last dimension %lld (rule T1, the (8,128) rule)",
                        op->rep->name, blk, shp, (long long)second, op->squeezed[r - 2] ? " (squeezed)" : "",
                        (long long)a->shape[r - 2]);
    return PL_OK;
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

/* Resolve one operand's spec into op; checks B1, B3, B4, T1-T5. */
static int plan_operand(sim_plan *plan, sim_operand *op, const pl_block_spec *s, pl_report *rep)
{
    const pl_array *a = op->arr;
    char blk[128], shp[128];
    format_block(s, blk, sizeof blk);
    sim_format_idx(a->shape, a->rank, shp, sizeof shp);
    op->rank = a->rank;
    op->space = s->space;
    op->map = s->map;
    op->elem_size = pl_dtype_size(a->dtype);
    op->rep->space = s->space;
    op->rep->dtype = a->dtype;

    if (s->space != PL_VMEM && s->space != PL_SMEM && s->space != PL_ANY)
        return sim_fail(rep, PL_EINVAL, "%s: memory space %s cannot hold a block operand (rule M1)",
                        op->rep->name, pl_memspace_name(s->space));
    if (s->space == PL_SMEM && pl_dtype_bits(a->dtype) != 32 && op->role != PL_ROLE_PREFETCH) /* M5 widens */
        return sim_fail(rep, PL_EDTYPE, "%s: SMEM holds 32-bit scalars; a %s array cannot live there (rule M1)",
                        op->rep->name, pl_dtype_name(a->dtype));
    int rc = check_revisit_mode(op, s, rep);
    if (rc) return rc;
    if (s->rank != 0 && s->rank != a->rank)
        return sim_fail(rep, PL_EBLOCKSHAPE,
                        "%s: block shape %s has rank %d but the array %s has rank %d (rule B1)", op->rep->name, blk,
                        s->rank, shp, a->rank);
    if (s->space != PL_ANY && a->rank == 0 && s->space != PL_SMEM)
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
        } else if (s->element[d]) { /* B5: offsets 0 .. padded size - block */
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
    rc = sim_check_map(plan, op, rep);
    if (rc) return rc;

    int whole = 1;
    for (int d = 0; d < a->rank; d++) whole &= !op->squeezed[d] && op->block[d] == a->shape[d];
    int constant = sim_map_is_zero(&op->map);

    if (s->space == PL_ANY) {
        if (!whole || !constant)
            return sim_fail(rep, PL_EBLOCKSHAPE,
                            "%s: operand in memory space ANY takes no blocking, but has block %s of array %s%s; "
                            "give it the whole array with a zero index map (rule T5)",
                            op->rep->name, blk, shp, constant ? "" : " and a non-constant index map");
        op->pipelined = 0;
        op->buffers = 0;
    } else {
        op->pipelined = 1;
        if (!(s->space == PL_SMEM && whole)) { /* T4: whole SMEM windows are exempt */
            rc = check_tiling(op, s, rep);
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
    }

    if (op->pipelined && (rc = sim_check_map_range(plan, op, rep))) return rc;

    /* The kernel's Ref: the block with squeezed dims dropped (B4). */
    pl_ref *r = &op->ref;
    memset(r, 0, sizeof *r);
    r->dtype = a->dtype;
    r->space = s->space;
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
        stride = sim_sat_mul(stride, b); /* a huge block is rejected by M4 below */
    }

    pl_operand_report *or = op->rep;
    or->rank = a->rank;
    memcpy(or->block, op->pipelined ? op->block : a->shape, sizeof or->block);
    or->buffers = op->buffers;
    or->block_bytes = sim_sat_mul(op->block_elems, (int64_t)op->elem_size);
    or->vmem_bytes = op->pipelined ? laid_out_bytes(op->block, a->rank, a->dtype, s->space, plan->chip) : 0;

    or->array_bytes = sim_sat_mul(pl_array_size(a), (int64_t)op->elem_size);
    if (s->space == PL_VMEM && op->pipelined)
        warn_padding(rep, or->name, "block", op->block, a->rank, a->dtype, plan->chip, or->vmem_bytes,
                     or->block_bytes);
    return PL_OK;
}

/* ---- the budget (M4) --------------------------------------------------------- */

static int check_budget(const sim_plan *plan, const pl_call *call, pl_report *rep)
{
    const pl_chip *chip = plan->chip;
    int64_t limit = call->vmem_limit_bytes ? call->vmem_limit_bytes : chip->vmem_default_limit;
    if (call->vmem_limit_bytes < 0)
        return sim_fail(rep, PL_EINVAL, "vmem_limit_bytes = %lld; it must be > 0, or 0 for the chip's default",
                        (long long)call->vmem_limit_bytes);
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

/* ---- input_output_aliases (M6) ------------------------------------------------- */

static int plan_aliases(sim_plan *plan, const pl_call *call, pl_report *rep)
{
    int n_args = call->num_scalar_prefetch + call->n_in;
    if (call->n_alias < 0 || call->n_alias > PL_MAX_OPERANDS)
        return sim_fail(rep, PL_EINVAL, "call %s: n_alias = %d must be in 0..%d", rep->call_name, call->n_alias,
                        PL_MAX_OPERANDS);
    for (int i = 0; i < call->n_alias; i++) {
        int in = call->alias[i].in, out = call->alias[i].out;
        if (in < 0 || in >= n_args || out < 0 || out >= call->n_out)
            return sim_fail(rep, PL_EINVAL, "alias %d: {%d: %d} names argument %d of %d and output %d of %d; "
                            "inputs count over the prefetch and input arguments (rule M6)", i, in, out, in, n_args,
                            out, call->n_out);
        sim_operand *src = &plan->ops[in], *dst = &plan->ops[n_args + out];
        int same = src->arr->dtype == dst->arr->dtype && src->arr->rank == dst->arr->rank;
        for (int d = 0; same && d < src->arr->rank; d++) same = src->arr->shape[d] == dst->arr->shape[d];
        if (!same)
            return sim_fail(rep, PL_EINVAL, "alias %d: %s and %s must have the same dtype and shape to share one "
                            "buffer (rule M6)", i, src->rep->name, dst->rep->name);
        if (dst->aliased)
            return sim_fail(rep, PL_EINVAL, "alias %d: output %s already aliases an input (rule M6)", i,
                            dst->rep->name);
        dst->aliased = 1;
        if (src->role == PL_ROLE_IN) { /* the input reads the shared buffer: the output's array */
            src->aliased = 1;
            src->arr = dst->arr;
        }
    }
    return PL_OK;
}

/* ---- the call ---------------------------------------------------------------- */

static int check_call_shape(const pl_call *c, const pl_array *args, const pl_array *outs, pl_report *rep)
{
    if (!c) return sim_fail(rep, PL_EINVAL, "call is NULL");
    if (!c->kernel) return sim_fail(rep, PL_EINVAL, "call %s: kernel is NULL", rep->call_name);
    if (c->grid_rank < 0 || c->grid_rank > PL_MAX_GRID)
        return sim_fail(rep, PL_EINVAL, "call %s: grid_rank %d is outside 0..%d", rep->call_name, c->grid_rank,
                        PL_MAX_GRID);
    for (int a = 0; a < c->grid_rank; a++) {
        if (c->grid[a] < 1)
            return sim_fail(rep, PL_EINVAL, "call %s: grid axis %d has size %lld; sizes must be >= 1 (rule G1)",
                            rep->call_name, a, (long long)c->grid[a]);
        if (c->semantics[a] != PL_ARBITRARY && c->semantics[a] != PL_PARALLEL)
            return sim_fail(rep, PL_EINVAL, "call %s: grid axis %d has unknown semantics %d (rule G3)",
                            rep->call_name, a, (int)c->semantics[a]);
    }
    for (int a = 1; a < c->grid_rank; a++) /* as Mosaic: only a leading run of axes can be split */
        if (c->semantics[a] == PL_PARALLEL && c->semantics[a - 1] == PL_ARBITRARY)
            return sim_fail(rep, PL_EINVAL, "call %s: grid axis %d is parallel but axis %d before it is arbitrary; "
                            "parallel axes must come first, as a prefix of the grid (rule G3)",
                            rep->call_name, a, a - 1);
    if (c->n_in < 0 || c->n_in > PL_MAX_OPERANDS || c->n_out < 0 || c->n_out > PL_MAX_OPERANDS ||
        c->num_scalar_prefetch < 0 || c->num_scalar_prefetch > PL_MAX_OPERANDS || c->n_scratch < 0 ||
        c->n_scratch > PL_MAX_SCRATCH)
        return sim_fail(rep, PL_EINVAL,
                        "call %s: operand counts (prefetch %d, in %d, out %d, scratch %d) must each be in 0..%d",
                        rep->call_name, c->num_scalar_prefetch, c->n_in, c->n_out, c->n_scratch, PL_MAX_OPERANDS);
    if (c->n_in + c->num_scalar_prefetch > 0 && !args)
        return sim_fail(rep, PL_EINVAL, "call %s: args is NULL but the call has %d prefetch and %d inputs",
                        rep->call_name, c->num_scalar_prefetch, c->n_in);
    if (c->n_out > 0 && !outs)
        return sim_fail(rep, PL_EINVAL, "call %s: outs is NULL but the call has %d outputs", rep->call_name,
                        c->n_out);
    return PL_OK;
}

static int plan_prefetch(sim_plan *plan, const pl_call *call, const pl_array *args, pl_report *rep)
{
    for (int i = 0; i < call->num_scalar_prefetch; i++) {
        sim_operand *op = &plan->ops[plan->n_ops++];
        pl_operand_report *or = &rep->op[rep->n_operands++];
        snprintf(or->name, sizeof or->name, "prefetch%d", i);
        op->rep = or;
        op->role = or->role = PL_ROLE_PREFETCH;
        op->index = i;
        op->arg = i;
        op->arr = &args[i];
        int rc = check_array(op->arr, or->name, 0, rep);
        if (!rc) rc = check_addressable(op->arr, or->name, rep);
        if (rc) return rc;
        if (op->arr->dtype == PL_F16) /* M5: 8- and 16-bit tables widen to 32 bits; Mosaic has no f16 there */
            return sim_fail(rep, PL_EDTYPE, "%s: scalar-prefetch arrays live in SMEM as 32-bit words: i32 or f32, "
                            "or bf16, i16 and i8 read widened; got %s (rule M1, rule M5)", or->name,
                            pl_dtype_name(op->arr->dtype));
        pl_block_spec whole = {.space = PL_SMEM, .buffers = 1};
        rc = plan_operand(plan, op, &whole, rep);
        if (rc) return rc;
        op->pipelined = 0; /* copied once before the grid (M5) */
    }
    return PL_OK;
}

static int plan_scratch(sim_plan *plan, const pl_call *call, pl_report *rep)
{
    for (int i = 0; i < call->n_scratch; i++) {
        const pl_scratch *s = &call->scratch[i];
        pl_scratch_report *sr = &rep->scratch[rep->n_scratch++];
        if (s->name) snprintf(sr->name, sizeof sr->name, "%s", s->name);
        else snprintf(sr->name, sizeof sr->name, "scratch%d", i);
        sr->space = s->space;
        sr->dtype = s->dtype;
        if (s->space != PL_VMEM && s->space != PL_SMEM && s->space != PL_SEMAPHORE)
            return sim_fail(rep, PL_EINVAL, "%s: scratch cannot live in memory space %s (rule M2)", sr->name,
                            pl_memspace_name(s->space));
        if (s->space == PL_SEMAPHORE && (s->dtype != PL_I32 || s->rank != 1 ||
                                         (s->sem_kind != PL_SEM_REGULAR && s->sem_kind != PL_SEM_DMA)))
            return sim_fail(rep, PL_EINVAL, "%s: declare semaphore scratch with PLTPU_SEMAPHORE(n) or "
                            "PLTPU_SEMAPHORE_DMA(n) (rule M2)", sr->name);
        if (s->space == PL_SEMAPHORE && (s->shape[0] < 1 || s->shape[0] > 65536))
            return sim_fail(rep, PL_EINVAL, "%s: %lld semaphores; an array holds 1 to 65536 (rule M2)", sr->name,
                            (long long)s->shape[0]);
        pl_array shape = {.data = sr, .dtype = s->dtype, .rank = s->rank};
        memcpy(shape.shape, s->shape, sizeof shape.shape);
        int rc = check_array(&shape, sr->name, 0, rep);
        if (rc) return rc;
        if (s->space == PL_SMEM && pl_dtype_bits(s->dtype) != 32)
            return sim_fail(rep, PL_EDTYPE, "%s: SMEM holds 32-bit scalars; got %s (rule M1)", sr->name,
                            pl_dtype_name(s->dtype));
        /* semaphores live in their own memory, outside the VMEM and SMEM budgets */
        sr->bytes = s->space == PL_SEMAPHORE ? 0 : laid_out_bytes(s->shape, s->rank, s->dtype, s->space, plan->chip);
        if (s->space == PL_VMEM)
            warn_padding(rep, sr->name, "scratch", s->shape, s->rank, s->dtype, plan->chip, sr->bytes,
                         sim_sat_mul(pl_array_size(&shape), (int64_t)pl_dtype_size(s->dtype)));
    }
    return PL_OK;
}

/* The compute rates a what-if chip gives divide the ops' work (timing.c):
 * zero, negative or NaN made times infinite, negative or NaN, and the call
 * succeeded with them. int8_ops and clock_hz may be 0 (not published). */
static int check_chip_rates(const pl_chip *chip, pl_report *rep)
{
    const struct { const char *name; double v; int zero_ok; } f[] = {
        {"bf16_flops", chip->bf16_flops, 0}, {"vpu_flops", chip->vpu_flops, 0},
        {"f32_fraction", chip->f32_fraction, 0}, {"int8_ops", chip->int8_ops, 1}, {"clock_hz", chip->clock_hz, 1}};
    for (size_t i = 0; i < sizeof f / sizeof *f; i++)
        if (!isfinite(f[i].v) || f[i].v < 0 || (f[i].v == 0 && !f[i].zero_ok))
            return sim_fail(rep, PL_EINVAL, "chip %s: %s = %g; it must be finite and %s", chip->name, f[i].name,
                            f[i].v, f[i].zero_ok ? ">= 0 (0: not published)" : "> 0");
    return PL_OK;
}

int sim_plan_call(const pl_call *call, const pl_array *args, const pl_array *outs, const pl_options *opt,
                  sim_plan *plan, pl_report *rep)
{
    memset(plan, 0, sizeof *plan);
    plan->call = call;
    plan->cost_only = opt && opt->cost_only;
    plan->oob_poison = opt && opt->oob_reads == PL_OOB_POISON;
    plan->checks = !(opt && opt->checks_off);
    plan->strict = opt && opt->strict;
    snprintf(rep->call_name, sizeof rep->call_name, "%s", call && call->name ? call->name : "kernel");
    int rc = check_call_shape(call, args, outs, rep);
    if (rc) return rc;

    const char *chip = opt && opt->chip ? opt->chip : NULL;
    plan->chip = opt && opt->chip_spec ? opt->chip_spec : chip ? pl_chip_find(chip) : pl_chip_default();
    if (!plan->chip) {
        char names[256] = "";
        for (int i = 0; i < pl_chip_count(); i++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
                     pl_chip_at(i)->name);
        return sim_fail(rep, PL_EINVAL, "unknown chip '%s'; the presets are %s", chip, names);
    }
    rep->chip = plan->chip;
    if (plan->chip->cores_per_device < 1 || plan->chip->cores_per_device > SIM_MAX_CORES)
        return sim_fail(rep, PL_EINVAL, "chip %s: cores_per_device = %d; a device has 1 to %d TensorCores (rule G4)",
                        plan->chip->name, plan->chip->cores_per_device, SIM_MAX_CORES);
    /* 16-bit blocks round up to this many rows (T6): 0 divided by zero, a negative count overflowed */
    if (plan->chip->sublanes_16bit < 1)
        return sim_fail(rep, PL_EINVAL, "chip %s: sublanes_16bit = %d; 16-bit types need at least 1 native sublane "
                        "(a chip file gives 8 to 32, rule T6)", plan->chip->name, plan->chip->sublanes_16bit);
    /* dots pad to it (timing.c): 0 made every dot's time NaN, a negative width 0 */
    if (plan->chip->mxu_width < 1)
        return sim_fail(rep, PL_EINVAL, "chip %s: mxu_width = %d; the MXU is width x width, at least 1 (a chip file "
                        "gives 128 or 256)", plan->chip->name, plan->chip->mxu_width);
    if ((rc = check_chip_rates(plan->chip, rep))) return rc;
    if (opt && opt->uninit != PL_UNINIT_NAN && opt->uninit != PL_UNINIT_ZERO)
        return sim_fail(rep, PL_EINVAL, "options: uninit = %d; use PL_UNINIT_NAN or PL_UNINIT_ZERO (rule V1)",
                        (int)opt->uninit);

    rep->grid_rank = call->grid_rank;
    memcpy(rep->grid, call->grid, sizeof rep->grid);
    plan->steps = 1;
    for (int a = 0; a < call->grid_rank; a++) plan->steps = sim_sat_mul(plan->steps, call->grid[a]);
    /* 2^32 steps take about a quarter of an hour at 5 million steps per second */
    if (plan->steps > (1LL << 32))
        return sim_fail(rep, PL_EINVAL, "call %s: a grid of %s%lld points is more than tilesim walks (2^32); use "
                        "larger blocks", rep->call_name, plan->steps == INT64_MAX ? "over " : "",
                        (long long)plan->steps);

    rc = plan_prefetch(plan, call, args, rep);
    if (rc) return rc;
    for (int role = PL_ROLE_IN; role <= PL_ROLE_OUT; role++) {
        int n = role == PL_ROLE_IN ? call->n_in : call->n_out;
        for (int i = 0; i < n; i++) {
            const pl_block_spec *s = role == PL_ROLE_IN ? &call->in[i] : &call->out[i];
            sim_operand *op = &plan->ops[plan->n_ops];
            pl_operand_report *or = &rep->op[rep->n_operands++];
            op->arg = plan->n_ops++;
            op->rep = or;
            op->role = or->role = (pl_role)role;
            op->index = i;
            op->arr = role == PL_ROLE_IN ? &args[call->num_scalar_prefetch + i] : &outs[i];
            if (s->name) snprintf(or->name, sizeof or->name, "%s", s->name);
            else snprintf(or->name, sizeof or->name, "%s%d", role == PL_ROLE_IN ? "in" : "out", i);
            rc = check_array(op->arr, or->name, plan->cost_only, rep);
            if (!rc) rc = check_addressable(op->arr, or->name, rep);
            if (rc) return rc;
            rc = plan_operand(plan, op, s, rep);
            if (rc) return rc;
        }
    }
    rc = plan_aliases(plan, call, rep);
    if (rc) return rc;
    rc = plan_scratch(plan, call, rep);
    if (rc) return rc;
    rc = check_budget(plan, call, rep);
    if (rc) return rc;
    return sim_check_races(plan, rep);
}
