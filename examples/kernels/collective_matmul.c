/* examples/kernels/collective_matmul.c: the all-gather matmul, overlapped
 * and not, its calls, data and reference (collective_matmul.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../kernel/pltpu.h"
#include "data.h"
#include "collective_matmul.h"

/* The refs, in the order of rule M3. Overlapped: x, w, out, then x_buf
 * (2, m, k), local_sem, send_sem, recv_sems (2, one per slot), cap_sem.
 * Gather first: x, w, out, then x_all (N m, k), local_sem, send_sem,
 * recv_sems (N - 1, one per step). */
enum { R_X, R_W, R_OUT, R_BUF, R_LOCAL_SEM, R_SEND_SEM, R_RECV_SEMS, R_CAP_SEM };

static int wrap(int64_t v, int n) { return (int)(((v % n) + n) % n); }

static void local_copy(pl_ctx *c, pl_ref src, pl_ref dst, pl_ref sem)
{
    pltpu_copy cp = pltpu_async_copy(c, src, dst, sem);
    pltpu_copy_start(c, &cp);
    pltpu_copy_wait(c, &cp);
}

/* M15: my left neighbour copies into my x_buf only once it knows I am in
 * the kernel; I wait for my right neighbour's word before copying into its */
static void entry_handshake(pl_ctx *c, pl_ref *refs)
{
    int me = pltpu_device_id(c), n = pltpu_num_devices(c);
    pl_ref ready = pl_at(c, refs[R_CAP_SEM], 0);
    pltpu_semaphore_signal_device(c, ready, 1, wrap(me - 1, n));
    pltpu_semaphore_wait(c, ready, 1);
}

void cm_overlapped_kernel(pl_ctx *c, pl_ref *refs)
{
    const cm_params *p = pl_kernel_user(c);
    int handshake = !(p && p->no_handshake);
    int64_t s = pl_program_id(c, 0), m = refs[R_X].shape[0];
    int me = pltpu_device_id(c), n = pltpu_num_devices(c), slot = (int)(s % 2), next = 1 - slot;
    pl_ref cur = pl_at(c, refs[R_BUF], slot);
    if (s == 0) local_copy(c, refs[R_X], cur, pl_at(c, refs[R_LOCAL_SEM], 0)); /* my own block first */
    if (s == 0) entry_handshake(c, refs);
    pltpu_remote_copy cp;
    int sends = s < n - 1; /* the last block received goes no further */
    if (sends) {
        /* M12: my right neighbour's other slot held the block it multiplied
         * at step s - 1; it says when that is done (the first send finds the
         * slot empty) */
        if (handshake && s >= 1) pltpu_semaphore_wait(c, pl_at(c, refs[R_CAP_SEM], 0), 1);
        cp = pltpu_make_async_remote_copy(c, cur, pl_at(c, refs[R_BUF], next), pl_at(c, refs[R_SEND_SEM], 0),
                                          pl_at(c, refs[R_RECV_SEMS], next), wrap(me + 1, n));
        pltpu_remote_copy_start(c, &cp);
    }
    /* the MXU works on the block I hold while the copy travels */
    pl_dot(c, pl_ds(c, refs[R_OUT], 0, wrap(me - s, n) * m, m), cur, refs[R_W], 0);
    if (sends) pltpu_remote_copy_wait(c, &cp); /* mine is sent, my left neighbour's has landed in `next` */
    /* `cur` is free: my left neighbour may fill it at its step s + 1 */
    if (handshake && s + 1 <= n - 2) pltpu_semaphore_signal_device(c, pl_at(c, refs[R_CAP_SEM], 0), 1, wrap(me - 1, n));
}

void cm_gather_first_kernel(pl_ctx *c, pl_ref *refs)
{
    int64_t s = pl_program_id(c, 0), m = refs[R_X].shape[0];
    int me = pltpu_device_id(c), n = pltpu_num_devices(c);
    pl_ref all = refs[R_BUF];
    if (s == n - 1) { /* every block is here: one product of the whole */
        pl_dot(c, refs[R_OUT], all, refs[R_W], 0);
        return;
    }
    if (s == 0) local_copy(c, refs[R_X], pl_ds(c, all, 0, me * m, m), pl_at(c, refs[R_LOCAL_SEM], 0));
    if (s == 0) entry_handshake(c, refs);
    /* the ring all-gather of ring_allgather.c, into VMEM: every slot is
     * written once, so one receive semaphore per step is all it needs */
    pl_ref blk = pl_ds(c, all, 0, wrap(me - s, n) * m, m);
    pltpu_remote_copy cp = pltpu_make_async_remote_copy(c, blk, blk, pl_at(c, refs[R_SEND_SEM], 0),
                                                        pl_at(c, refs[R_RECV_SEMS], s), wrap(me + 1, n));
    pltpu_remote_copy_start(c, &cp);
    pltpu_remote_copy_wait(c, &cp);
}

int cm_shape_check(const cm_shape *s, char *msg, size_t n)
{
    if (s->devices < 2 || s->devices > PL_MESH_MAX_DEVICES) {
        snprintf(msg, n, "devices %d: a collective matmul needs a ring of 2 to %d devices", s->devices,
                 PL_MESH_MAX_DEVICES);
        return PL_EINVAL;
    }
    if (s->rows < 1 || s->k < 1 || s->cols < 1) {
        snprintf(msg, n, "shape: rows %lld, k %lld, cols %lld: each must be at least 1", (long long)s->rows,
                 (long long)s->k, (long long)s->cols);
        return PL_EINVAL;
    }
    return PL_OK;
}

void cm_call(pl_call *call, const cm_shape *s, cm_version v, const cm_params *p)
{
    int64_t n = s->devices, m = s->rows;
    int over = v == CM_OVERLAPPED;
    *call = (pl_call){
        .name = over ? "collective_matmul" : "gather_then_matmul",
        .kernel = over ? cm_overlapped_kernel : cm_gather_first_kernel,
        .user = (void *)p,
        .grid_rank = 1,
        .grid = {n},
        .semantics = {PL_ARBITRARY}, /* every step needs the block the previous one received */
        .n_in = 2,
        /* w and out never change block: one buffer each (Buffered(1)) */
        .in = {{.space = PL_ANY, .name = "x"}, {.map = {0}, .buffers = 1, .name = "w"}},
        .n_out = 1,
        .out = {{.map = {0}, .buffers = 1, .name = "out"}},
        .n_scratch = 5, /* the last, a regular semaphore: the entry handshake (M15), and M12's capacity */
        .scratch = {over ? PLTPU_VMEM(PL_F32, 2, m, s->k) : PLTPU_VMEM(PL_F32, n * m, s->k), PLTPU_SEMAPHORE_DMA(1),
                    PLTPU_SEMAPHORE_DMA(1), PLTPU_SEMAPHORE_DMA(over ? 2 : n - 1), PLTPU_SEMAPHORE(1)},
    };
    static const char *names[] = {"x_buf", "local_sem", "send_sem", "recv_sems", "capacity_sem"};
    for (int i = 0; i < call->n_scratch; i++) call->scratch[i].name = names[i];
    if (!over) call->scratch[0].name = "x_all";
}

double cm_host_bytes(const cm_shape *s)
{
    double n = s->devices, x = n * (double)(s->rows * s->k), w = (double)(s->k * s->cols);
    double out = n * (double)s->rows * (double)s->cols;
    /* x, w, every device's out; pl_check_matmul's work arrays, a few times a, b and c */
    return 4 * (x + w + n * out) + 4 * 4 * (x + w + out) + 3.0 * n * sizeof(pl_array);
}

int cm_alloc(cm_data *d, const cm_shape *s, int with_data, uint64_t seed)
{
    char msg[256];
    memset(d, 0, sizeof *d);
    if (cm_shape_check(s, msg, sizeof msg) != PL_OK) return PL_EINVAL;
    d->s = *s;
    int64_t n = s->devices, xs = s->rows * s->k, os = n * s->rows * s->cols;
    d->args = calloc((size_t)(2 * n), sizeof *d->args);
    d->outs = calloc((size_t)n, sizeof *d->outs);
    if (with_data) {
        d->x = malloc((size_t)(n * xs) * sizeof *d->x);
        d->w = malloc((size_t)(s->k * s->cols) * sizeof *d->w);
        d->out = malloc((size_t)(n * os) * sizeof *d->out);
    }
    if (!d->args || !d->outs || (with_data && (!d->x || !d->w || !d->out))) {
        cm_free(d);
        return PL_ENOMEM;
    }
    for (int64_t i = 0; with_data && i < n * xs; i++) d->x[i] = ex_draw(&seed);
    for (int64_t i = 0; with_data && i < s->k * s->cols; i++) d->w[i] = ex_draw(&seed);
    cm_reset(d);
    for (int64_t dev = 0; dev < n; dev++) {
        d->args[2 * dev] = PL_ARRAY(with_data ? d->x + dev * xs : NULL, PL_F32, s->rows, s->k);
        d->args[2 * dev + 1] = PL_ARRAY(d->w, PL_F32, s->k, s->cols); /* read only: one copy serves all */
        d->outs[dev] = PL_ARRAY(with_data ? d->out + dev * os : NULL, PL_F32, n * s->rows, s->cols);
    }
    return PL_OK;
}

void cm_reset(cm_data *d)
{
    int64_t all = (int64_t)d->s.devices * d->s.devices * d->s.rows * d->s.cols;
    for (int64_t i = 0; d->out && i < all; i++) d->out[i] = NAN;
}

void cm_free(cm_data *d)
{
    free(d->x), free(d->w), free(d->out), free(d->args), free(d->outs);
    memset(d, 0, sizeof *d);
}

int cm_check(const cm_data *d, int dev, pl_check *chk, FILE *f)
{
    if (!d->x || !d->out || dev < 0 || dev >= d->s.devices) return PL_EINVAL;
    int64_t n = d->s.devices;
    pl_array a = PL_ARRAY(d->x, PL_F32, n * d->s.rows, d->s.k); /* the gathered x: the shards in order */
    pl_array b = PL_ARRAY(d->w, PL_F32, d->s.k, d->s.cols);
    pl_array out = PL_ARRAY(d->out + dev * n * d->s.rows * d->s.cols, PL_F32, n * d->s.rows, d->s.cols);
    return pl_check_matmul(&a, &b, &out, chk, f);
}

double cm_compute_s(const cm_shape *s, const pl_chip *chip)
{
    double rate = chip ? chip->bf16_flops * chip->f32_fraction : 0;
    if (!(rate > 0)) return 0;
    return 2.0 * s->devices * (double)s->rows * (double)s->k * (double)s->cols / rate;
}

double cm_comm_s(const cm_shape *s, const pl_chip *chip)
{
    if (!chip || !(chip->ici_bw > 0)) return 0;
    return (s->devices - 1) * (double)(s->rows * s->k) * 4 / chip->ici_bw;
}
