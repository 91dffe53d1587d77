/* examples/kernels/hier_allreduce.c: the hierarchical all-reduce kernel and
 * its call (hier_allreduce.h). */
#include <stdio.h>

#include "../../kernel/pltpu.h"
#include "hier_allreduce.h"

/* The kernel's refs (rule M3): x, o, then the scratch. */
enum {
    R_X, R_O,
    R_SUM1, R_SLOTS1, R_OWN1, /* phase 1: the running sum (h1), a receive slot a step, my x's chunk */
    R_SUM2, R_SLOTS2,         /* phase 2: the same for pieces (h2); my own pieces are in R_SUM1 */
    R_LOCAL, R_SEND, R_RECV1, R_RECV2, R_GATHER3, R_GATHER4, R_READY
};

/* One ring: its members are base + k stride for k < size; me is k. */
typedef struct ring { int base, stride, size, me; } ring;

static int wrap(int v, int n) { return ((v % n) + n) % n; }
static int member(const ring *r, int k) { return r->base + wrap(k, r->size) * r->stride; }

static void local_copy(pl_ctx *c, pl_ref src, pl_ref dst, pl_ref sem)
{
    pltpu_copy cp = pltpu_async_copy(c, src, dst, sem);
    pltpu_copy_start(c, &cp);
    pltpu_copy_wait(c, &cp);
}

/* Reduce-scatter step s of a one-way ring over chunks of `rows` rows of
 * own (my contribution, HBM or VMEM) into sum: at s = 0 sum is my chunk
 * me - 1; each step sends sum right, into that neighbour's slot s, and adds
 * my chunk me - s - 2 to what arrives from the left. After size - 1 steps
 * sum holds chunk me, summed over the ring. */
static void rs_step(pl_ctx *c, pl_ref *refs, const ring *r, int s, pl_ref own, pl_ref sum, pl_ref slots, pl_ref recv,
                    int64_t rows)
{
    pl_ref local = pl_at(c, refs[R_LOCAL], 0), sent = pl_at(c, refs[R_SEND], 0);
    pl_ref mine = pl_ds(c, refs[R_OWN1], 0, 0, rows);
    if (s == 0) local_copy(c, pl_ds(c, own, 0, wrap(r->me - 1, r->size) * rows, rows), sum, local);
    pltpu_remote_copy cp = pltpu_make_async_remote_copy(c, sum, pl_at(c, slots, s), sent, pl_at(c, recv, s),
                                                        member(r, r->me + 1));
    pltpu_remote_copy_start(c, &cp);
    pltpu_copy ld = pltpu_async_copy(c, pl_ds(c, own, 0, wrap(r->me - s - 2, r->size) * rows, rows), mine, local);
    pltpu_copy_start(c, &ld); /* my part of the arriving chunk, loaded meanwhile */
    pltpu_remote_copy_wait_recv(c, &cp);
    pltpu_copy_wait(c, &ld);
    pltpu_remote_copy_wait_send(c, &cp); /* sum is read until my send is done */
    pl_add(c, sum, pl_at(c, slots, s), mine);
}

/* All-gather step t of a one-way ring over chunks of `rows` rows of the
 * region of o that starts at row `at`: send chunk me - t on, into the same
 * place of the right neighbour's o. */
static void ag_step(pl_ctx *c, pl_ref *refs, const ring *r, int t, int64_t at, int64_t rows, pl_ref gather)
{
    pl_ref blk = pl_ds(c, refs[R_O], 0, at + wrap(r->me - t, r->size) * rows, rows);
    pltpu_remote_copy cp = pltpu_make_async_remote_copy(c, blk, blk, pl_at(c, refs[R_SEND], 1), pl_at(c, gather, t),
                                                        member(r, r->me + 1));
    pltpu_remote_copy_start(c, &cp);
    pltpu_remote_copy_wait(c, &cp);
}

void ha_kernel(pl_ctx *c, pl_ref *refs)
{
    /* the shape from the refs: rows = P h1 (x), h1 = S h2 (the sums' buffers) */
    int64_t h1 = refs[R_SUM1].shape[0], h2 = refs[R_SUM2].shape[0], step = pl_program_id(c, 0);
    int p = (int)(refs[R_X].shape[0] / h1), n_s = (int)(h1 / h2), me = pltpu_device_id(c);
    ring in_slice = {me / p * p, 1, p, me % p}, across = {me % p, p, n_s, me / p};
    pl_ref sum1 = refs[R_SUM1], sum2 = refs[R_SUM2];
    int64_t a = p - 1, b = a + n_s - 1, g = b + n_s - 1; /* where phases 2, 3 and 4 begin */
    if (step == 0) { /* M15: each ring's left neighbour copies into my slots only once it knows I am here */
        pl_ref ready = pl_at(c, refs[R_READY], 0);
        if (p > 1) pltpu_semaphore_signal_device(c, ready, 1, member(&in_slice, in_slice.me - 1));
        if (n_s > 1) pltpu_semaphore_signal_device(c, ready, 1, member(&across, across.me - 1));
        pltpu_semaphore_wait(c, ready, (p > 1) + (n_s > 1));
    }
    if (step < a) { /* 1: ICI */
        rs_step(c, refs, &in_slice, (int)step, refs[R_X], sum1, refs[R_SLOTS1], refs[R_RECV1], h1);
        if (step == a - 1 && n_s == 1) /* one slice: chunk me % p is whole */
            local_copy(c, sum1, pl_ds(c, refs[R_O], 0, in_slice.me * h1, h1), pl_at(c, refs[R_LOCAL], 0));
        return;
    }
    if (step == 0 && p == 1) local_copy(c, refs[R_X], sum1, pl_at(c, refs[R_LOCAL], 0)); /* a chip a slice */
    if (step < b) { /* 2: DCN, over the pieces of my chunk, which phase 1 left in sum1 */
        int s = (int)(step - a);
        rs_step(c, refs, &across, s, sum1, sum2, refs[R_SLOTS2], refs[R_RECV2], h2);
        if (s == n_s - 2) /* piece me / p of chunk me % p is whole: it goes into o */
            local_copy(c, sum2, pl_ds(c, refs[R_O], 0, in_slice.me * h1 + across.me * h2, h2),
                       pl_at(c, refs[R_LOCAL], 0));
        return;
    }
    if (step < g) { /* 3: DCN, the whole pieces of my chunk to every slice */
        ag_step(c, refs, &across, (int)(step - b), in_slice.me * h1, h2, refs[R_GATHER3]);
        return;
    }
    ag_step(c, refs, &in_slice, (int)(step - g), 0, h1, refs[R_GATHER4]); /* 4: ICI, the chunks */
}

int ha_shape_check(const ha_shape *s, char *msg, size_t n)
{
    int64_t devices = (int64_t)s->slices * s->per_slice;
    if (s->slices < 1 || s->per_slice < 1 || devices < 2) {
        snprintf(msg, n, "%d slices of %d devices: a hierarchical all-reduce needs at least 2 devices", s->slices,
                 s->per_slice);
        return PL_EINVAL;
    }
    if (s->rows < 1 || s->cols < 1 || s->rows % (8 * devices) != 0) {
        snprintf(msg, n, "shape (%lld, %lld) on %lld devices: rows must be a positive multiple of 8 x %lld = %lld "
                 "(a chunk a device of the slice, a piece of it a slice, each whole 8-row tiles) and cols positive",
                 (long long)s->rows, (long long)s->cols, (long long)devices, (long long)devices,
                 (long long)(8 * devices));
        return PL_EINVAL;
    }
    return PL_OK;
}

void ha_call(pl_call *call, const ha_shape *s)
{
    int64_t p = s->per_slice, n_s = s->slices, h1 = s->rows / p, h2 = h1 / n_s;
    int64_t k1 = p > 1 ? p - 1 : 1, k2 = n_s > 1 ? n_s - 1 : 1; /* steps of each ring (a slot at least) */
    *call = (pl_call){
        .name = "hier_allreduce",
        .kernel = ha_kernel,
        .grid_rank = 1,
        .grid = {2 * (p - 1) + 2 * (n_s - 1)},
        .semantics = {PL_ARBITRARY}, /* every step needs what the previous one received */
        .n_in = 1,
        .in = {{.space = PL_ANY, .name = "x"}},
        .n_out = 1,
        .out = {{.space = PL_ANY, .name = "o"}},
        .n_scratch = 12,
        .scratch = {PLTPU_VMEM(PL_F32, h1, s->cols), PLTPU_VMEM(PL_F32, k1, h1, s->cols),
                    PLTPU_VMEM(PL_F32, h1, s->cols), PLTPU_VMEM(PL_F32, h2, s->cols),
                    PLTPU_VMEM(PL_F32, k2, h2, s->cols), PLTPU_SEMAPHORE_DMA(1), PLTPU_SEMAPHORE_DMA(2),
                    PLTPU_SEMAPHORE_DMA(k1), PLTPU_SEMAPHORE_DMA(k2), PLTPU_SEMAPHORE_DMA(k2),
                    PLTPU_SEMAPHORE_DMA(k1), PLTPU_SEMAPHORE(1)},
    };
    static const char *names[] = {"slice_sum", "slice_slots", "x_chunk", "piece_sum", "piece_slots", "local_sems",
                                  "send_sems", "slice_recv_sems", "dcn_recv_sems", "dcn_gather_sems",
                                  "slice_gather_sems", "ready_sem"};
    for (int i = 0; i < call->n_scratch; i++) call->scratch[i].name = names[i];
}
