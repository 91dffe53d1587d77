/* kernel/ref.c: the grid, views and element access (the context, its
 * faults and op log are in context.c).
 *
 * Views (pl_ds, pl_at) only adjust a pointer, a shape and strides; they are
 * checked against the Ref they slice so that a kernel can never reach memory
 * outside its block (rule V2).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"

/* ---- the grid --------------------------------------------------------------- */

static void check_axis(const pl_ctx *c, int axis, const char *fn)
{
    int rank = c->prog_grid ? c->prog_rank : c->grid_rank;
    if (axis < 0 || axis >= rank)
        kern_fault((pl_ctx *)c, PL_EINVAL, "%s(%d): the %s has %d ax%s (rule G2)", fn, axis,
                   c->prog_grid ? "emit_pipeline's grid around this body" : "grid", rank, rank == 1 ? "is" : "es");
}

/* In an emit_pipeline body they answer for the pipeline's grid, as JAX's
 * do (the body runs in its grid_env): its global point and whole size, a
 * grid split over cores included (K7). */
int64_t pl_program_id(const pl_ctx *c, int axis)
{
    check_axis(c, axis, "pl_program_id");
    return c->prog_grid ? c->prog_idx[axis] : c->idx[axis];
}

int64_t pl_num_programs(const pl_ctx *c, int axis)
{
    check_axis(c, axis, "pl_num_programs");
    return c->prog_grid ? c->prog_grid[axis] : c->grid[axis];
}

void *pl_kernel_user(const pl_ctx *c) { return c->user; }

/* ---- views ------------------------------------------------------------------ */

/* r's data pointer moved by `elems` elements. In cost-only runs an ANY
 * operand has no data (NULL): offsetting a NULL pointer is undefined, so the
 * address is computed as an integer; views of it keep distinct addresses,
 * which the DMA race check (V4) compares. */
static void *offset_data(const pl_ref *r, int64_t elems)
{
    return (void *)((uintptr_t)r->data + (uintptr_t)elems * pl_dtype_size(r->dtype));
}

int64_t pl_size(pl_ref r)
{
    int64_t n = 1;
    for (int d = 0; d < r.rank; d++) n *= r.shape[d];
    return n;
}

void kern_past_ref(pl_ctx *c, const pl_ref *r, const char *fn)
{
    kern_past_ref_fix(c, r, fn, "only pl_load and pl_store, with a mask that excludes them, touch such a view "
                      "(rule V6)");
}

void kern_past_ref_fix(pl_ctx *c, const pl_ref *r, const char *fn, const char *fix)
{
    char name[96];
    int d = 0;
    while (d + 1 < PL_MAX_RANK && r->past[d] == 0) d++;
    kern_ref_name(c, r, name, sizeof name);
    kern_fault(c, PL_EBOUNDS, "%s on a view of %s whose last %lld element%s of dimension %d lie past the Ref (a "
               "pl_ds range past the end, rule V2): %s", fn, name, (long long)r->past[d], r->past[d] == 1 ? "" : "s",
               d, fix);
}

int kern_tile_rows(const kern_target *t, int bits, int64_t rows)
{
    int at = bits >= 32 ? 0 : bits >= 16 ? 1 : bits >= 8 ? 2 : 3;
    int packing = bits >= 32 ? 1 : bits > 0 ? 32 / bits : 1;
    static const int usual[4] = {8, 8, 32, 64}; /* a chip struct that leaves the table zero */
    int large = t->tile_rows[at] > 0 ? t->tile_rows[at] : usual[at];
    if (rows > 0 && rows % large == 0) return large;           /* tall enough for a whole large tile */
    if (rows >= 8) return 8;
    int tile = packing; /* small arrays: Mosaic's smallest tiling that holds them */
    while (tile < rows) tile *= 2;
    return tile;
}

void kern_format_block(const int64_t *block, const uint8_t *squeezed, int rank, int64_t rows, char *buf,
                       size_t n)
{
    size_t at = (size_t)snprintf(buf, n, "(");
    for (int d = 0; d < rank && at < n; d++) {
        const char *sep = d ? ", " : "";
        if (squeezed[d]) at += (size_t)snprintf(buf + at, n - at, "%ssqueezed", sep);
        else at += (size_t)snprintf(buf + at, n - at, "%s%lld", sep,
                                    (long long)(d == rank - 2 && rows >= 0 ? rows : block[d]));
    }
    if (at < n) snprintf(buf + at, n - at, ")");
}

int kern_check_t8(const char *chip, pl_dtype dtype, int rank, const int64_t *block, const uint8_t *squeezed,
                  const int64_t *shape, int64_t tile, const char *blk, const char *shp, char *msg, size_t n)
{
    int64_t b = block[rank - 2], rows = shape[rank - 2];
    if (b == rows || b % tile == 0) return 0;
    int64_t down = b / tile * tile, up = down + tile < rows ? down + tile : rows;
    char lo[128] = "", hi[128];
    if (down > 0) kern_format_block(block, squeezed, rank, down, lo, sizeof lo);
    kern_format_block(block, squeezed, rank, up, hi, sizeof hi);
    const char *dt = pl_dtype_name(dtype);
    snprintf(msg, n,
             "block %s of %s array %s passes the BlockSpec check (T1) but not the compiler's tiling check (XLA "
             "E2002, rule T8): on %s a %s array with %lld rows is laid out in (%lld, 128) tiles, and the block's "
             "second-last dimension %lld is neither a multiple of %lld nor the whole dimension %lld, so Mosaic "
             "rejects it (CompileTimeMosaicMisalignedBlockAndTiling). Nearest legal block shapes: %s%s%s",
             blk, dt, shp, chip, dt, (long long)rows, (long long)tile, (long long)b, (long long)tile,
             (long long)rows, lo, *lo ? " or " : "", hi);
    return 1;
}

/* How many times this step has sliced (site, arg, dim) before; -1 when the
 * table is full. */
static int ds_occurrence(pl_ctx *c, uintptr_t site, int arg, int dim)
{
    for (int i = 0; i < c->n_ds_count; i++) {
        struct kern_ds_count *k = &c->ds_count[i];
        if (k->site == site && k->arg == arg && k->dim == dim) return k->n++;
    }
    if (c->n_ds_count == KERN_DS_SITES) return -1;
    c->ds_count[c->n_ds_count++] = (struct kern_ds_count){.site = site, .arg = arg, .dim = dim, .n = 1};
    return 0;
}

/* The call's record (T9), or NULL when a table is full. A helper that
 * slices twice per step is two records whether the compiler inlined it or
 * not, so the verdict does not depend on the build. */
static struct kern_ds_site *ds_site(pl_ctx *c, uintptr_t site, int arg, int dim, int64_t start, int64_t tile)
{
    int occ = ds_occurrence(c, site, arg, dim);
    if (occ < 0) return NULL;
    for (int i = 0; i < c->n_ds_site; i++) {
        struct kern_ds_site *s = &c->ds_site[i];
        if (s->site == site && s->arg == arg && s->dim == dim && s->occ == occ) return s;
    }
    if (c->n_ds_site == KERN_DS_SITES) return NULL;
    struct kern_ds_site *s = &c->ds_site[c->n_ds_site++];
    *s = (struct kern_ds_site){.site = site, .arg = arg, .dim = dim, .occ = occ, .first = start, .unaligned = -1,
                               .tile = tile};
    return s;
}

/* T9: a slice of a VMEM Ref along one of its two tiled dimensions with a
 * dynamic start must start on a tile: the (rows, 128) tile of its dtype on
 * the chip (T8) for the second-last dimension, 128 lanes for the last.
 * Mosaic proves a dynamic start aligned (i * 16, or pl_multiple_of) or
 * rejects it (XLA E2003); a static start may be unaligned (it shifts). C has
 * no static starts, so the simulator calls a start dynamic when the same
 * pl_ds call (call site, Ref, dimension, and its count in the step) takes
 * different starts at different grid steps: a start the same at every step
 * is a constant. Rank-1 Refs are exempt (their tiling is compact). */
static void check_ds_alignment(pl_ctx *c, const pl_ref *r, int dim, int64_t start, int64_t size, uintptr_t site,
                               int at)
{
    if (!c->target.chip || r->space != PL_VMEM || r->rank < 2 || dim < r->rank - 2) return;
    int rows = dim == r->rank - 2;
    int64_t tile = rows ? kern_tile_rows(&c->target, pl_dtype_bits(r->dtype), r->shape[dim]) : 128;
    /* Rows of a buffer one tile column wide (a row pitch of at most 128
     * lanes) follow each other in VMEM: one vector load reads 8 sublanes
     * from any row, so Mosaic needs only the rows packed into one 32-bit
     * sublane to stay together (1 for 32-bit types, 2 for 16-bit, 4 for
     * 8-bit). A wider buffer interleaves its tile columns, and a dynamic
     * row start must be a whole tile (E2003). */
    if (rows && r->stride[dim] <= 128) tile = pl_dtype_bits(r->dtype) >= 32 ? 1 : 32 / pl_dtype_bits(r->dtype);
    if (tile <= 1) return;
    struct kern_ds_site *s = ds_site(c, site, r->arg, dim, start, tile);
    if (!s) return;
    if (start % tile != 0 && s->unaligned < 0) s->unaligned = start, s->tile = tile;
    s->dynamic |= start != s->first;
    if (!s->dynamic || s->unaligned < 0) return;
    char name[96], call[64];
    kern_ref_name(c, r, name, sizeof name);
    if (at) snprintf(call, sizeof call, "pl_at(%lld), a row: pl_ds(%lld, 1),", (long long)start, (long long)start);
    else snprintf(call, sizeof call, "pl_ds(%lld, %lld)", (long long)start, (long long)size);
    kern_fault(c, PL_ETILING,
               "%s on dimension %d of %s (%s, %lld %s): this %s has taken the starts %lld and "
               "%lld at different grid steps, so its start is dynamic, and %lld is not a multiple of the %lld-%s tile of %s on %s: the "
               "compiler cannot prove the access aligned (XLA E2003, CompileTimeMosaicUnprovenMemoryAccessAlignment;"
               " rule T9). Keep dynamic starts on multiples of %lld and, where the compiler cannot see it, say so "
               "with pl_multiple_of(c, start, %lld); or mask a whole-tile access instead",
               call, dim, name, pl_dtype_name(r->dtype), (long long)r->shape[dim], rows ? "rows" : "lanes",
               at ? "pl_at" : "pl_ds", (long long)s->first, (long long)(start != s->first ? start : s->unaligned),
               (long long)(start % s->tile ? start : s->unaligned), (long long)s->tile, rows ? "row" : "lane",
               pl_dtype_name(r->dtype),
               c->target.chip, (long long)s->tile, (long long)s->tile);
}

int64_t pl_multiple_of(pl_ctx *c, int64_t value, int64_t m)
{
    if (m <= 0)
        kern_fault(c, PL_EINVAL, "pl_multiple_of(%lld, %lld): the multiple must be >= 1 (rule T9)",
                   (long long)value, (long long)m);
    if (value % m != 0)
        kern_fault(c, PL_ETILING, "pl_multiple_of(%lld, %lld): %lld is not a multiple of %lld; the compiler would "
                   "trust the promise and access the wrong elements (rule T9)", (long long)value, (long long)m,
                   (long long)value, (long long)m);
    return value;
}

pl_ref pl_ds(pl_ctx *c, pl_ref r, int dim, int64_t start, int64_t size)
{
    char name[96];
    kern_check_arg(c, &r, "pl_ds");
    if (dim < 0 || dim >= r.rank) {
        kern_ref_name(c, &r, name, sizeof name);
        kern_fault(c, PL_EBOUNDS, "pl_ds on dimension %d of %s, which has rank %d (rule V2)", dim, name,
                   r.rank);
    }
    /* A range past the end is a view (V6): it is refused where it is used,
     * unless a mask keeps the use inside. Its offset must stay an address. */
    int64_t off, bytes;
    if (start < 0 || size < 0 || size > INT64_MAX - start || start > r.shape[dim] ||
        __builtin_mul_overflow(start, r.stride[dim], &off) ||
        __builtin_mul_overflow(off, (int64_t)pl_dtype_size(r.dtype), &bytes)) {
        kern_ref_name(c, &r, name, sizeof name);
        kern_fault(c, PL_EBOUNDS,
                   "pl_ds(%lld, %lld) on dimension %d of %s of size %lld: the start must be in 0..%lld and the "
                   "size >= 0 (rule V2)",
                   (long long)start, (long long)size, dim, name, (long long)r.shape[dim], (long long)r.shape[dim]);
    }
    check_ds_alignment(c, &r, dim, start, size, (uintptr_t)__builtin_return_address(0), 0);
    int64_t inside = r.shape[dim] - r.past[dim] - start; /* elements of the new view inside the Ref */
    inside = inside < 0 ? 0 : inside > size ? size : inside;
    r.data = offset_data(&r, off);
    r.shape[dim] = size;
    r.past[dim] = size - inside;
    return r;
}

pl_ref pl_at(pl_ctx *c, pl_ref r, int64_t i)
{
    char name[96];
    kern_check_arg(c, &r, "pl_at");
    /* a row past the Ref leaves a view wholly past it: fine while rank is left to say so */
    int whole_past = r.rank >= 1 && i >= r.shape[0] - r.past[0];
    if (r.rank < 1 || i < 0 || i >= r.shape[0] || (whole_past && r.rank < 2)) {
        kern_ref_name(c, &r, name, sizeof name);
        kern_fault(c, PL_EBOUNDS, "pl_at(%lld) on %s of leading size %lld%s (rule V2)", (long long)i, name,
                   r.rank ? (long long)r.shape[0] : 0LL, whole_past ? ", a row past the end of the Ref" : "");
    }
    /* On a rank-2 Ref, o_ref[j] indexes the tiled row dimension: Mosaic
     * lowers it as o_ref[pl.ds(j, 1), :], with T9's alignment rule. */
    if (r.rank == 2) check_ds_alignment(c, &r, 0, i, 1, (uintptr_t)__builtin_return_address(0), 1);
    r.data = offset_data(&r, i * r.stride[0]);
    memmove(r.shape, r.shape + 1, (size_t)(r.rank - 1) * sizeof *r.shape);
    memmove(r.stride, r.stride + 1, (size_t)(r.rank - 1) * sizeof *r.stride);
    memmove(r.past, r.past + 1, (size_t)(PL_MAX_RANK - 1) * sizeof *r.past);
    r.past[PL_MAX_RANK - 1] = 0;
    r.rank--;
    if (whole_past) r.past[0] = r.shape[0];
    return r;
}

/* ---- element access -------------------------------------------------------- */

double kern_poison_value(const pl_ctx *c, pl_dtype t)
{
    if (c->uninit_zero) return 0;
    switch (t) { /* integers: the dtype's maximum, as JAX's TPU interpret mode fills them
                  * (its get_uninitialized_value: iinfo(dtype).max; V1) */
    case PL_I32: return INT32_MAX;
    case PL_I16: return INT16_MAX;
    case PL_I8: return INT8_MAX;
    default: return (double)NAN;
    }
}

/* The element's address, or NULL for a read outside the Ref when
 * out-of-bounds reads are poison (V2). */
static char *elem_ptr(pl_ctx *c, const pl_ref *r, const int64_t *idx, const char *fn, int reading)
{
    char name[96];
    kern_check_arg(c, r, fn);
    if (r->space == PL_ANY || r->space == PL_SEMAPHORE) {
        kern_ref_name(c, r, name, sizeof name);
        kern_fault(c, PL_ESPACE, "%s on %s: memory space %s is reachable only by DMA (rule M1)", fn, name,
                   pl_memspace_name(r->space));
    }
    int64_t off = 0;
    for (int d = 0; d < r->rank; d++) {
        if (idx[d] < 0 || idx[d] >= r->shape[d] - r->past[d]) { /* past[d]: a view past the end (V6) */
            if (reading && c->oob_poison) return NULL;
            char at[128];
            kern_format_point(idx, r->rank, at, sizeof at);
            kern_ref_name(c, r, name, sizeof name);
            if (idx[d] >= 0 && idx[d] < r->shape[d])
                kern_fault(c, PL_EBOUNDS, "%s index %s of a view of %s lies past the Ref: only the first %lld of "
                           "dimension %d's %lld elements are inside (a pl_ds range past the end, rule V2)", fn, at,
                           name, (long long)(r->shape[d] - r->past[d]), d, (long long)r->shape[d]);
            kern_fault(c, PL_EBOUNDS, "%s index %s is outside %s: dimension %d has size %lld (rule V2)", fn,
                       at, name, d, (long long)r->shape[d]);
        }
        off += idx[d] * r->stride[d];
    }
    return (char *)r->data + (size_t)off * pl_dtype_size(r->dtype);
}

/* A one-element view of r at idx, for the checks. */
static pl_ref element_view(const pl_ref *r, char *p)
{
    pl_ref e = *r;
    e.data = p;
    for (int d = 0; d < e.rank; d++) e.shape[d] = 1;
    return e;
}

double pl_get(pl_ctx *c, pl_ref r, const int64_t *idx)
{
    c->scalar_ops++; /* scalar-unit work (sim/timing/timing.c), poison reads included */
    kern_beat();
    char *p = elem_ptr(c, &r, idx, "pl_get", 1);
    if (!p) { /* V2 in poison mode: what an uninitialized element holds */
        if (!c->oob_read[0]) {
            char at[128], name[96], point[128];
            kern_format_point(idx, r.rank, at, sizeof at);
            kern_ref_name(c, &r, name, sizeof name);
            kern_format_point(c->idx, c->grid_rank, point, sizeof point);
            snprintf(c->oob_read, sizeof c->oob_read,
                     "pl_get read index %s outside %s at grid point %s and got poison (rule V2)", at, name, point);
        }
        return kern_poison_value(c, r.dtype);
    }
    if (c->args) {
        pl_ref e = element_view(&r, p);
        kern_note_read(c, &e, "pl_get");
    }
    return pl_load_elem(p, r.dtype);
}

void pl_set(pl_ctx *c, pl_ref r, const int64_t *idx, double v)
{
    c->scalar_ops++;
    kern_beat();
    char *p = elem_ptr(c, &r, idx, "pl_set", 0);
    if (c->args) {
        pl_ref e = element_view(&r, p);
        kern_note_write(c, &e, "pl_set");
    }
    pl_store_elem(p, r.dtype, v);
}
