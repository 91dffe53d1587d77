/* kernel/pipeline_emit_check.c: pltpu_emit_pipeline's checks (rule K3), the
 * rules pallas_call applies to a BlockSpec applied to each inner block:
 * its rank and sizes (B1), squeezed dimensions (B4), ragged edge blocks and
 * the range of block indices (B2, B6), the window rule of nested pipelines
 * (K6: lanes as T1, rows by the dtype's packing, T2 for rank 1; not T8, the
 * chip's memory tiling of pallas_call operands), and outputs revisited
 * after their write-back (P5). Messages name the
 * operand ("in_specs[0]") and the inner grid point, as pallas_call's name
 * the operand and the grid point. */
#include <stdio.h>
#include <string.h>

#include "pipeline_emit.h"

void kern_emit_check_pipeline(pl_ctx *c, const pltpu_pipeline *p, const pl_ref *ins, const pl_ref *outs,
                              pltpu_pipeline_body body)
{
    if (!p || !body)
        kern_fault(c, PL_EINVAL, "pltpu_emit_pipeline: %s is NULL (rule K3)", !p ? "the pipeline" : "the body");
    /* grid () runs the body once, as JAX's emit_pipeline(grid=()) does */
    if (p->grid_rank < 0 || p->grid_rank > PL_MAX_GRID)
        kern_fault(c, PL_EINVAL, "pltpu_emit_pipeline: grid of %d axes; 0 to %d (rules G2, K3)", p->grid_rank,
                   PL_MAX_GRID);
    for (int a = 0; a < p->grid_rank; a++)
        if (p->grid[a] < 1)
            kern_fault(c, PL_EINVAL, "pltpu_emit_pipeline: grid axis %d has %lld points; each needs >= 1 (rules "
                       "G2, K3)", a, (long long)p->grid[a]);
    if (p->n_in < 0 || p->n_out < 0 || p->n_in > PL_MAX_OPERANDS / 2 || p->n_out > PL_MAX_OPERANDS / 2 ||
        (p->n_in && !ins) || (p->n_out && !outs))
        kern_fault(c, PL_EINVAL, "pltpu_emit_pipeline: %d inputs and %d outputs (each 0 to %d, with their refs) "
                   "(rule K3)", p->n_in, p->n_out, PL_MAX_OPERANDS / 2);
}

/* ---- the block's shape --------------------------------------------------------- */

static int is_pow2(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

/* K6: a nested pipeline's window. emit_pipeline copies each block as a
 * slice of its ref (jax/_src/pallas/mosaic/pipeline.py: no (8,128) check;
 * the tile comes from the ref's dtype, not the chip's memory layout), so:
 * lanes as T1; rows a multiple of the rows one 32-bit sublane word packs
 * (1 for 32-bit, 2 for 16-bit, 4 for 8-bit, 8 for 4-bit) or the whole
 * dimension; a block that does not divide its dimension (a ragged edge, B6)
 * a multiple of the pipeline's tile (that packing doubled up to min(rows,
 * 8)), else Pallas's "Block size must divide tiling". Rank 1 keeps T2. */
static void check_window(pl_ctx *c, const kern_emit_op *o)
{
    const pl_ref *r = &o->hbm;
    int n = r->rank;
    if (n == 1) {
        int64_t b = o->block[0], min = 128 * (32 / pl_dtype_bits(r->dtype));
        if (b == r->shape[0] || b % 1024 == 0 || (is_pow2(b) && b >= min)) return;
        kern_fault(c, PL_EBLOCKSHAPE, "pltpu_emit_pipeline: %s: rank-1 block (%lld) of a %s ref (%lld) must equal "
                   "the ref's size, be a multiple of 1024, or be a power of two >= %lld (rules T2, K3)", o->name,
                   (long long)b, pl_dtype_name(r->dtype), (long long)r->shape[0], (long long)min);
    }
    int64_t lane = o->block[n - 1], sub = o->block[n - 2], rows = r->shape[n - 2];
    if (lane % 128 && lane != r->shape[n - 1])
        kern_fault(c, PL_EBLOCKSHAPE, "pltpu_emit_pipeline: %s: block (..., %lld, %lld) of a ref (..., %lld, "
                   "%lld): the last dimension must be a multiple of 128 lanes or equal the ref's (a squeezed "
                   "dimension counts as 1) (rules T1, K6)", o->name, (long long)sub, (long long)lane,
                   (long long)rows, (long long)r->shape[n - 1]);
    if (o->squeezed[n - 2] || (sub == rows && !o->element[n - 2])) return;
    int bits = pl_dtype_bits(r->dtype);
    int64_t pack = bits >= 32 ? 1 : 32 / bits, tile = pack, cap = rows < 8 ? rows : 8;
    while (tile < cap) tile *= 2;
    /* an Element window, or a BoundedSlice (K8), starts anywhere: whole tiles */
    int ragged = rows % sub != 0 || o->element[n - 2] || o->bounded[n - 2];
    if (!ragged && sub % pack == 0) return;
    if (ragged && sub % tile == 0) return;
    if (o->element[n - 2])
        kern_fault(c, PL_EBLOCKSHAPE, "pltpu_emit_pipeline: %s: an Element window of %lld rows of a %s ref: JAX "
                   "copies it as a slice of whole %lld-row tiles, so its rows must be a multiple of %lld (rules "
                   "B5, K6)", o->name, (long long)sub, pl_dtype_name(r->dtype), (long long)tile, (long long)tile);
    if (!ragged)
        kern_fault(c, PL_EBLOCKSHAPE, "pltpu_emit_pipeline: %s: a window of %lld row%s of a %s ref (..., %lld, %lld): "
                   "a %d-bit dtype packs %lld rows in each 32-bit sublane word, so a window's rows must be a "
                   "multiple of %lld or the whole dimension (rule K6)", o->name, (long long)sub, sub == 1 ? "" : "s",
                   pl_dtype_name(r->dtype), (long long)rows, (long long)r->shape[n - 1], bits, (long long)pack,
                   (long long)pack);
    kern_fault(c, PL_EBLOCKSHAPE, "pltpu_emit_pipeline: %s: a window of %lld rows does not divide the ref's %lld, "
               "so its last block is ragged, and a ragged window must be a multiple of the pipeline's %lld-row "
               "tile for %s (Pallas: \"Block size must divide tiling\"; rules B6, K6)", o->name, (long long)sub,
               (long long)rows, (long long)tile, pl_dtype_name(r->dtype));
}

/* B1, B4, B5, B6: each dimension's size, squeezed or not, and its index range. */
static void check_dims(pl_ctx *c, const pltpu_pipeline *p, kern_emit_op *o)
{
    const pl_block_spec *s = o->spec;
    const pl_ref *r = &o->hbm;
    for (int d = 0; d < r->rank; d++) {
        o->element[d] = s->element[d] != 0;
        o->bounded[d] = s->bounded[d] != 0;
        if (o->bounded[d] && (o->element[d] || s->block[d] < 1))
            kern_fault(c, PL_EBLOCKSHAPE, "pltpu_emit_pipeline: %s: BoundedSlice dimension %d of %lld elements%s; "
                       "its bound is >= 1, and it is neither squeezed nor an Element dimension (rules K8, B1)",
                       o->name, d, (long long)s->block[d], o->element[d] ? " is also an Element dimension" : "");
        if (o->element[d] && (s->block[d] < 1 || s->block[d] > r->shape[d]))
            kern_fault(c, PL_EBLOCKSHAPE, "pltpu_emit_pipeline: %s: Element dimension %d of %lld elements in a ref "
                       "of %lld; an Element window is 1 to the ref's size (rules B5, K6)", o->name, d,
                       (long long)s->block[d], (long long)r->shape[d]);
        if (s->block[d] < 1 && s->block[d] != PL_SQUEEZED)
            kern_fault(c, PL_EBLOCKSHAPE, "pltpu_emit_pipeline: %s: block dimension %d is %lld; sizes must be >= 1 "
                       "or PL_SQUEEZED (rules B1, K3)", o->name, d, (long long)s->block[d]);
        o->squeezed[d] = s->block[d] == PL_SQUEEZED;
        o->block[d] = o->squeezed[d] ? 1 : s->block[d];
        /* ceil without overflow for a huge block; a squeezed index is an element index (B4) */
        o->nblocks[d] = o->squeezed[d] ? r->shape[d]
                        : o->element[d] ? r->shape[d] - o->block[d] + 1 /* first elements of a window inside */
                                        : r->shape[d] / o->block[d] + (r->shape[d] % o->block[d] != 0);
        if (!s->map.fn && s->map.axis[d] != PL_ZERO && (s->map.axis[d] < 0 || s->map.axis[d] >= p->grid_rank))
            kern_fault(c, PL_EINDEXMAP, "pltpu_emit_pipeline: %s: index map entry %d names grid axis %d of a "
                       "%d-axis grid (rules B2, K3)", o->name, d, s->map.axis[d], p->grid_rank);
    }
}

/* A spec of rank 0 (JAX's BlockSpec(memory_space=...) with no block shape) is the whole ref under a zero
 * index map, as in a pallas_call (B3); the caller's space and buffers stay. */
static void whole_ref_spec(kern_emit_op *o)
{
    o->whole = *o->spec;
    o->whole.rank = o->whole.map.n = o->hbm.rank;
    o->whole.map.fn = NULL;
    for (int d = 0; d < o->hbm.rank; d++) o->whole.block[d] = o->hbm.shape[d], o->whole.map.axis[d] = PL_ZERO;
    o->spec = &o->whole;
}

void kern_emit_check_spec(pl_ctx *c, const pltpu_pipeline *p, kern_emit_op *o)
{
    const pl_ref *r = &o->hbm;
    kern_check_ref(c, r, "pltpu_emit_pipeline");
    if (r->space == PL_SEMAPHORE || r->rank < 1)
        kern_fault(c, PL_ESPACE, "pltpu_emit_pipeline: %s: its ref is %s of rank %d, not an array (rule K3)",
                   o->name, pl_memspace_name(r->space), r->rank);
    if (o->spec->rank == 0) whole_ref_spec(o);
    const pl_block_spec *s = o->spec;
    if (s->rank != r->rank)
        kern_fault(c, PL_EBLOCKSHAPE, "pltpu_emit_pipeline: %s: block of rank %d for a ref of rank %d (rules B1, "
                   "K3)", o->name, s->rank, r->rank);
    if (!s->map.fn && s->map.n != r->rank)
        kern_fault(c, PL_EINDEXMAP, "pltpu_emit_pipeline: %s: index map of %d entries for a ref of rank %d (rules "
                   "B2, K3)", o->name, s->map.n, r->rank);
    if (s->revisit != PL_REVISIT_IMMEDIATE)
        kern_fault(c, PL_EINVAL, "pltpu_emit_pipeline: %s: revisit = %d%s; emit_pipeline takes only "
                   "PL_REVISIT_IMMEDIATE (0, the default): it never fetches a written-back block back, so "
                   "RevisitMode.ANY has no meaning here; visit each output block in consecutive inner grid points "
                   "(rules P5, K3)", o->name, (int)s->revisit, s->revisit == PL_REVISIT_ANY ? " (PL_REVISIT_ANY)" : "");
    /* Pallas's emit_pipeline takes any pl.Buffered(n); past 8 slots no chip's copy latency is left to hide */
    if (s->buffers < 0 || s->buffers > KERN_EMIT_MAX_BUFFERS)
        kern_fault(c, PL_EINVAL, "pltpu_emit_pipeline: %s: buffers = %d (pipeline_mode=Buffered(%d)); "
                   "emit_pipeline takes 1 to %d buffers, or 0 for the default 2 (rules P6, K3)", o->name,
                   s->buffers, s->buffers, (int)KERN_EMIT_MAX_BUFFERS);
    /* memory_space=ANY: JAX's emit_pipeline hands the body the ref's block
     * as it is, unbuffered; the body moves what it needs itself */
    o->direct = s->space == PL_ANY;
    /* memory_space=SMEM: JAX allocates the buffers in SMEM and copies into them; SMEM windows are untiled
     * scalars (M1; every Ref's dtype is 8 to 32 bits), so the window rule does not apply */
    o->smem = s->space == PL_SMEM;
    if (s->space == PL_SEMAPHORE)
        kern_fault(c, PL_ESPACE, "pltpu_emit_pipeline: %s: a block spec in memory space SEMAPHORE; a pipeline "
                   "buffers arrays in VMEM or SMEM, or leaves them in ANY (rule K3)", o->name);
    o->nbuf = o->direct ? 0 : s->buffers ? s->buffers : 2;
    check_dims(c, p, o);
    if (!o->direct && !o->smem) check_window(c, o); /* the window rule is for VMEM copies (K6) */
}

/* ---- the block of an inner grid point -------------------------------------------- */

/* K8: a BoundedSlice dimension's index is PL_DS(start, size), size at most
 * the bound, the slice inside the ref; JAX: "Must return a pl.ds from the
 * index_map for a BoundedSlice dimension". */
static void bounded_at(pl_ctx *c, const kern_emit_op *o, const int64_t *idx, int rank, const int64_t *bi, int d)
{
    int64_t start = kern_ds_start(bi[d]), size = kern_ds_size(bi[d]);
    int is_ds = kern_is_ds(bi[d]);
    if (is_ds && size <= o->block[d] && start + size <= o->hbm.shape[d]) return;
    char pt[128];
    kern_format_point(idx, rank, pt, sizeof pt);
    if (!is_ds)
        kern_fault(c, PL_EINDEXMAP, "pltpu_emit_pipeline: %s: dimension %d is a BoundedSlice(%lld), but the index "
                   "map gave %s at inner grid point %s; it must give PL_DS(start, size) (JAX: \"Must return a pl.ds "
                   "from the index_map for a BoundedSlice dimension\"; rule K8)", o->name, d,
                   (long long)o->block[d], bi[d] == PL_DS_BAD ? "PL_DS with a start or size out of range" : "a "
                   "plain index", pt);
    kern_fault(c, PL_EINDEXMAP, "pltpu_emit_pipeline: %s: PL_DS(%lld, %lld) along BoundedSlice(%lld) dimension %d "
               "at inner grid point %s: %s (rules K8, B2)", o->name, (long long)start, (long long)size,
               (long long)o->block[d], d, pt,
               size > o->block[d] ? "the size is over the bound" : "the slice runs past the ref's end");
}

void kern_emit_block_at(pl_ctx *c, const kern_emit_op *o, const int64_t *idx, int rank, int64_t *bi)
{
    const pl_block_spec *s = o->spec;
    for (int d = 0; d < o->hbm.rank; d++) bi[d] = s->map.fn ? INT64_MIN : s->map.axis[d] == PL_ZERO ? 0
                                                                           : idx[s->map.axis[d]];
    if (s->map.fn) s->map.fn(idx, NULL, bi, s->map.user);
    for (int d = 0; d < o->hbm.rank; d++) {
        if (o->bounded[d]) {
            bounded_at(c, o, idx, rank, bi, d);
            continue;
        }
        int unset = bi[d] == INT64_MIN, outside = bi[d] < 0 || bi[d] >= o->nblocks[d];
        if (!unset && !outside) continue; /* the point is formatted only for a message (every inner step comes here) */
        char pt[128];
        kern_format_point(idx, rank, pt, sizeof pt);
        if (unset)
            kern_fault(c, PL_EINDEXMAP, "pltpu_emit_pipeline: %s: the index map left dimension %d unset at inner "
                       "grid point %s (rules B2, K3)", o->name, d, pt);
        if (o->squeezed[d])
            kern_fault(c, PL_EINDEXMAP, "pltpu_emit_pipeline: %s: element index %lld along squeezed dimension %d "
                       "at inner grid point %s lies outside a ref of %lld (rules B4, B2, K3)", o->name,
                       (long long)bi[d], d, pt, (long long)o->hbm.shape[d]);
        if (o->element[d])
            kern_fault(c, PL_EINDEXMAP, "pltpu_emit_pipeline: %s: the Element window of %lld along dimension %d "
                       "starts at element %lld at inner grid point %s; in a ref of %lld it starts at 0 to %lld "
                       "(rules B5, B2, K6)", o->name, (long long)o->block[d], d, (long long)bi[d], pt,
                       (long long)o->hbm.shape[d], (long long)o->nblocks[d] - 1);
        kern_fault(c, PL_EINDEXMAP, "pltpu_emit_pipeline: %s: block index %lld along dimension %d at inner "
                   "grid point %s: a ref of %lld holds %lld blocks of %lld (indices 0 to %lld%s) (rules B2, K3)",
                   o->name, (long long)bi[d], d, pt, (long long)o->hbm.shape[d], (long long)o->nblocks[d],
                   (long long)o->block[d], (long long)o->nblocks[d] - 1,
                   o->hbm.shape[d] % o->block[d] ? ", the last one ragged, B6" : "");
    }
}

/* ---- revisits (P5) ---------------------------------------------------------------- */

int64_t kern_emit_revisit_cap(int64_t steps, int n_out)
{
    if (n_out <= 0) return 0;
    int64_t want = steps > KERN_EMIT_REVISITS / n_out ? KERN_EMIT_REVISITS : steps * n_out, cap = 16;
    while (cap < 2 * want) cap *= 2; /* at most half full: probes stay short */
    return cap;
}

static uint64_t mix(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return k;
}

/* The entry of (op, block), or the empty one where it would go. */
static kern_emit_written *find(const kern_emit_revisits *t, const int64_t *block, int rank, int op)
{
    uint64_t h = mix((uint64_t)op + 0x9e3779b97f4a7c15ULL);
    for (int d = 0; d < rank; d++) h = mix(h ^ (uint64_t)block[d]) + 0x9e3779b97f4a7c15ULL * (uint64_t)(d + 1);
    for (uint64_t i = h & (uint64_t)(t->cap - 1);; i = (i + 1) & (uint64_t)(t->cap - 1)) {
        kern_emit_written *w = &t->slot[i];
        if (!w->used || (w->op == op && memcmp(w->block, block, (size_t)rank * sizeof *block) == 0)) return w;
    }
}

void kern_emit_point(const pltpu_pipeline *p, int64_t s, int64_t *idx)
{
    for (int a = p->grid_rank - 1; a >= 0; a--) {
        idx[a] = s % p->grid[a];
        s /= p->grid[a];
    }
}

void kern_emit_revisit_check(pl_ctx *c, const kern_emit_revisits *t, const pltpu_pipeline *p, const kern_emit_op *o,
                             int op, int64_t s)
{
    if (!t->cap || !t->n) return;
    const kern_emit_written *w = find(t, o->now, o->hbm.rank, op);
    if (!w->used) return;
    int64_t then[PL_MAX_GRID], now[PL_MAX_GRID];
    char a[128], b[128], blk[128];
    kern_emit_point(p, w->step, then);
    kern_emit_point(p, s, now);
    kern_format_point(then, p->grid_rank, a, sizeof a);
    kern_format_point(now, p->grid_rank, b, sizeof b);
    kern_format_point(o->now, o->hbm.rank, blk, sizeof blk);
    kern_fault(c, PL_EREVISIT, "pltpu_emit_pipeline: %s: inner grid point %s selects output block %s again, but "
               "that block was written back to HBM after inner grid point %s; on hardware the earlier result is "
               "lost. Visit each output block in consecutive inner grid points (put the reduction axis last) "
               "(rules P5, K3)", o->name, b, blk, a);
}

void kern_emit_revisit_put(kern_emit_revisits *t, const kern_emit_op *o, int op, int64_t s)
{
    if (!t->cap || 2 * (t->n + 1) > t->cap) return; /* full: later write-backs go unremembered */
    kern_emit_written *w = find(t, o->now, o->hbm.rank, op);
    if (!w->used) t->n++;
    memcpy(w->block, o->now, (size_t)o->hbm.rank * sizeof *o->now);
    w->step = s;
    w->op = op;
    w->used = 1;
}

/* ---- the grid over cores (K7) ------------------------------------------------------ */

void kern_emit_split(pl_ctx *c, const pltpu_pipeline *p, pltpu_pipeline *part, int64_t *offset)
{
    *part = *p;
    for (int a = 0; a < PL_MAX_GRID; a++) offset[a] = 0;
    int64_t cores = c->target.subcores > 0 ? c->target.cores / c->target.subcores : c->target.cores, core = 0;
    if (p->core_axis && p->core_split)
        kern_fault(c, PL_EINVAL, "pltpu_emit_pipeline: core_split and core_axis both set: the pipeline's grid is "
                   "shared by the cores or by the points of one enclosing grid axis, not both (rule K7)");
    if (p->core_axis) { /* the enclosing grid's axis numbers the parts (JAX's core_axis=int) */
        if (p->core_axis < 0 || p->core_axis > PL_MAX_GRID)
            kern_fault(c, PL_EINVAL, "pltpu_emit_pipeline: core_axis = %d names axis %d of the enclosing grid; it "
                       "is 1 + an axis, or 0 for none (rule K7)", p->core_axis, p->core_axis - 1);
        int rank = c->prog_grid ? c->prog_rank : c->grid_rank; /* the grid pl_program_id answers for */
        if (p->core_axis - 1 >= rank)
            kern_fault(c, PL_EINVAL, "pltpu_emit_pipeline: core_axis = %d names axis %d of the enclosing grid, "
                       "which has %d ax%s (rule K7)", p->core_axis, p->core_axis - 1, rank, rank == 1 ? "is" : "es");
        cores = pl_num_programs(c, p->core_axis - 1);
        core = pl_program_id(c, p->core_axis - 1);
    } else {
        if (!p->core_split) return;
        core = pl_core_index(c);
    }
    if (cores <= 1) return;
    /* the first parallel axis the cores divide evenly, else the largest parallel one (the first of equals) */
    int dim = -1, even = 0;
    for (int a = 0; a < p->grid_rank && dim < 0; a++)
        if (p->semantics[a] == PL_PARALLEL && p->grid[a] % cores == 0) dim = a, even = 1;
    for (int a = 0; a < p->grid_rank && !even; a++)
        if (p->semantics[a] == PL_PARALLEL && (dim < 0 || p->grid[a] > p->grid[dim])) dim = a;
    if (dim < 0)
        kern_fault(c, PL_EINVAL, "pltpu_emit_pipeline: %s over %lld %s, but no grid axis is PL_PARALLEL: mark the "
                   "axis they share in .semantics (JAX: \"Cannot partition over cores without parallel grid "
                   "dimensions\"; rule K7)", p->core_axis ? "core_axis" : "core_split", (long long)cores,
                   p->core_axis ? "points of the enclosing axis" : "cores");
    int64_t n = p->grid[dim], base = n / cores, rem = n % cores;
    part->grid[dim] = base + (core < rem);                          /* the first rem cores take one more */
    offset[dim] = core < rem ? core * (base + 1) : core * base + rem; /* contiguous parts, in core order */
}
