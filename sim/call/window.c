/* sim/call/window.c: moving one block between an HBM array and a VMEM buffer.
 *
 * A block buffer is contiguous and has the full block shape even at the
 * array's edge (rule B6): the part past the edge is poison on the way in and
 * is dropped on the way out. Copies go row by row (the last dimension is
 * contiguous on both sides); trailing dimensions that the block spans whole
 * are merged first, so a block of full rows moves in one memcpy.
 */
#include <string.h>

#include "../base/sim.h"

/* The bytes of the window's contiguous runs in HBM. A run extends over the
 * next outer dimension while the window spans every inner one whole in the
 * array. XLA lays a TPU array out in HBM in (8, 128) tiles (T(8,128) in HLO
 * layouts, packed types with a (2,1) or (4,1) sub-tile), each contiguous: a
 * window whose last dimension is whole 128-lane tiles but not the array's
 * whole rows is read in runs of 8 of its rows, not one (docs/CHIPS.md,
 * dma_row_bytes) */
static int64_t run_bytes(const sim_operand *op, const int64_t *count)
{
    int64_t run = (int64_t)op->elem_size;
    int last = op->rank - 1;
    for (int d = last; d >= 0; d--) {
        run *= count[d];
        if (count[d] != op->arr->shape[d]) {
            if (d == last && d > 0 && count[d] % 128 == 0) run *= count[d - 1] < 8 ? count[d - 1] : 8;
            break;
        }
    }
    return run;
}

void sim_window_plan(sim_operand *op)
{
    op->plain_blocks = op->rank > 0;
    op->whole_bytes = (int64_t)op->elem_size;
    for (int d = 0; d < op->rank; d++) {
        if (op->squeezed[d] || op->element[d] || op->block[d] > op->arr->shape[d]) op->plain_blocks = 0;
        op->whole_bytes = sim_sat_mul(op->whole_bytes, op->block[d]);
    }
    op->whole_row_bytes = op->plain_blocks ? run_bytes(op, op->block) : 0;
}

void sim_window_of(const sim_operand *op, const int64_t *bidx, sim_window *w)
{
    int64_t *start = w->start, *count = w->count, *boff = w->boff, bytes = (int64_t)op->elem_size;
    /* Most blocks lie inside the array: their bytes and runs are the
     * operand's (sim_window_plan); a sweep's walk finds one at most steps. */
    int d = 0;
    if (op->plain_blocks) {
        for (; d < op->rank; d++) {
            int64_t lo = bidx[d] * op->block[d];
            if (lo < 0 || lo > op->arr->shape[d] - op->block[d]) break;
            start[d] = lo, count[d] = op->block[d], boff[d] = 0;
        }
        if (d == op->rank) {
            w->clipped = 0, w->bytes = op->whole_bytes, w->row_bytes = op->whole_row_bytes;
            return;
        }
    }
    int clipped = 0;
    for (d = 0; d < op->rank; d++) {
        int64_t raw = op->squeezed[d] ? bidx[d] : op->element[d] ? bidx[d] - op->pad_lo[d] : bidx[d] * op->block[d];
        int64_t lo = raw < 0 ? 0 : raw, hi = raw + op->block[d];
        if (hi > op->arr->shape[d]) hi = op->arr->shape[d];
        start[d] = lo;
        count[d] = hi > lo ? hi - lo : 0;
        boff[d] = lo - raw;
        clipped |= count[d] < op->block[d];
        bytes *= count[d];
    }
    w->clipped = clipped;
    w->bytes = bytes;
    w->row_bytes = run_bytes(op, count);
}

void sim_poison(void *p, pl_dtype t, int64_t n, pl_uninit uninit)
{
    size_t es = pl_dtype_size(t), total = (size_t)n * es;
    if (uninit == PL_UNINIT_ZERO || total == 0) {
        memset(p, 0, total);
        return;
    }
    uint32_t f32 = 0x7fc00000u;
    uint16_t bf16 = 0x7fc0u, f16 = 0x7e00u;
    int32_t i32 = INT32_MAX; /* integers: the dtype's maximum, as JAX's TPU interpret mode fills them (V1) */
    int16_t i16 = INT16_MAX;
    int8_t i8 = INT8_MAX;
    uint8_t f8 = 0x7f; /* a NaN in both e4m3fn and e5m2 */
    const void *one = t == PL_F32 ? (const void *)&f32 : t == PL_BF16 ? (const void *)&bf16
                    : t == PL_F16 ? (const void *)&f16 : t == PL_I32 ? (const void *)&i32
                    : t == PL_I16 ? (const void *)&i16 : t == PL_I8 ? (const void *)&i8 : (const void *)&f8;
    /* one element, then double the filled prefix: memcpy-speed for any size */
    memcpy(p, one, es);
    for (size_t done = es; done < total;) {
        size_t chunk = done < total - done ? done : total - done;
        memcpy((char *)p + done, p, chunk);
        done += chunk;
    }
}

/* Copy the window (start, count) between the array and the buffer. to_buf
 * selects the direction. Returns the bytes moved. */
static int64_t copy_window(const sim_operand *op, const int64_t *start, const int64_t *count, const int64_t *boff,
                           char *buf, int to_buf)
{
    const pl_array *a = op->arr;
    int rank = a->rank;
    size_t es = op->elem_size;
    if (rank == 0) {
        if (to_buf) memcpy(buf, a->data, es);
        else memcpy(a->data, buf, es);
        return (int64_t)es;
    }
    /* Strides in elements of the array and of the buffer. */
    int64_t astride[PL_MAX_RANK], bstride[PL_MAX_RANK];
    astride[rank - 1] = bstride[rank - 1] = 1;
    for (int d = rank - 2; d >= 0; d--) {
        astride[d] = astride[d + 1] * a->shape[d + 1];
        bstride[d] = bstride[d + 1] * op->block[d + 1];
    }
    /* Merge trailing dims: while dim d is taken whole on both sides, the
     * row can extend over dim d-1 too. */
    int inner = rank - 1;
    int64_t row = count[inner];
    while (inner > 0 && count[inner] == a->shape[inner] && count[inner] == op->block[inner]) {
        inner--;
        row *= count[inner];
    }
    size_t row_bytes = (size_t)row * es;
    int64_t aoff = 0, base = 0;
    for (int d = 0; d < rank; d++) {
        if (count[d] <= 0) return 0; /* nothing in bounds (B5 padding only) */
        aoff += start[d] * astride[d];
        base += boff[d] * bstride[d];
    }
    int64_t pos[PL_MAX_RANK] = {0}, rows = 1;
    for (int d = 0; d < inner; d++) rows *= count[d];
    for (int64_t r = 0; r < rows; r++) {
        int64_t ao = aoff, bo = base;
        for (int d = 0; d < inner; d++) {
            ao += pos[d] * astride[d];
            bo += pos[d] * bstride[d];
        }
        char *ap = (char *)a->data + (size_t)ao * es, *bp = buf + (size_t)bo * es;
        if (to_buf) memcpy(bp, ap, row_bytes);
        else memcpy(ap, bp, row_bytes);
        for (int d = inner - 1; d >= 0; d--) { /* odometer over the outer dims */
            if (++pos[d] < count[d]) break;
            pos[d] = 0;
        }
    }
    return rows * (int64_t)row_bytes;
}

int64_t sim_copy_in(const sim_operand *op, const sim_window *w, void *buf, pl_uninit uninit)
{
    if (w->clipped) sim_poison(buf, op->arr->dtype, op->block_elems, uninit);
    return copy_window(op, w->start, w->count, w->boff, buf, 1);
}

int64_t sim_copy_out(const sim_operand *op, const sim_window *w, const void *buf)
{
    return copy_window(op, w->start, w->count, w->boff, (char *)buf, 0);
}
