/* examples/kernels/ring_allreduce.c: the ring all-reduce kernel (both
 * ways round the ring, or one), its call, its data and its reference
 * (ring_allreduce.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../kernel/pltpu.h"
#include "data.h"
#include "ring_allreduce.h"

/* The kernel's refs, in the order of rule M3: x, o, then the scratch. */
enum { R_X, R_O, R_RBUF, R_SBUF, R_XBUF, R_LOCAL_SEMS, R_SEND_SEMS, R_RECV_SEMS, R_CAP_SEMS, R_AG_SEMS };
/* The way a half travels: RIGHT to me + 1 (first halves), LEFT to me - 1 (second halves). */
enum { RIGHT, LEFT };

static int wrap(int64_t v, int n) { return (int)(((v % n) + n) % n); }
static int toward(int dir) { return dir == RIGHT ? 1 : -1; }

/* The ring's directions: the first dimension of the send buffers (ar_call). */
static int dirs_of(const pl_ref *refs) { return (int)refs[R_SBUF].shape[0]; }

/* Part `dir` of shard k of a (rows, cols) ref, a shard cut into `dirs`
 * parts of h rows: rows (dirs k + dir) h .. + h. */
static pl_ref half_of(pl_ctx *c, pl_ref r, int64_t k, int dir, int64_t h, int dirs)
{
    return pl_ds(c, r, 0, (dirs * k + dir) * h, h);
}

static pl_ref slot_of(pl_ctx *c, pl_ref *refs, int dir, int slot)
{
    return pl_at(c, pl_at(c, refs[R_RBUF], dir), slot);
}

static void local_copy(pl_ctx *c, pl_ref src, pl_ref dst, pl_ref sem)
{
    pltpu_copy cp = pltpu_async_copy(c, src, dst, sem);
    pltpu_copy_start(c, &cp);
    pltpu_copy_wait(c, &cp);
}

/* Reduce-scatter step s: send my running sum of one shard each way, take
 * the neighbours' sums of the next ones, add my own x to them. Both sends
 * start before anything waits, so that both directions of the links move
 * data at once. */
static void rs_step(pl_ctx *c, pl_ref *refs, int64_t s, int single)
{
    int me = pltpu_device_id(c), n = pltpu_num_devices(c), slots = single ? 1 : 2, slot = single ? 0 : (int)(s % 2);
    int dirs = dirs_of(refs);
    int64_t h = refs[R_SBUF].shape[1];
    pltpu_remote_copy cp[2];
    pltpu_copy ld[2];
    /* M15: a neighbour copies into my recv_buf only once it knows I am in the kernel. The entry handshake is
     * the first capacity signal: the slot is free (each way, all signals before any wait) */
    for (int dir = RIGHT; dir < dirs && s == 0; dir++)
        pltpu_semaphore_signal_device(c, pl_at(c, refs[R_CAP_SEMS], dir), 1, wrap(me - toward(dir), n));
    for (int dir = RIGHT; dir < dirs && s == 0; dir++) pltpu_semaphore_wait(c, pl_at(c, refs[R_CAP_SEMS], dir), 1);
    for (int dir = RIGHT; dir < dirs; dir++) {
        int step = toward(dir);
        pl_ref sbuf = pl_at(c, refs[R_SBUF], dir), local = pl_at(c, refs[R_LOCAL_SEMS], dir);
        if (s == 0) /* the first shard I send carries my x alone */
            local_copy(c, half_of(c, refs[R_X], wrap(me - step, n), dir, h, dirs), sbuf, local);
        /* M12: the slot I am about to fill was read by my neighbour two steps
         * ago only once it says so; the first two sends find it empty */
        if (!single && s >= 2) pltpu_semaphore_wait(c, pl_at(c, refs[R_CAP_SEMS], dir), 1);
        cp[dir] = pltpu_make_async_remote_copy(c, sbuf, slot_of(c, refs, dir, slot), pl_at(c, refs[R_SEND_SEMS], dir),
                                               pl_at(c, refs[R_RECV_SEMS], dir * slots + slot), wrap(me + step, n));
        pltpu_remote_copy_start(c, &cp[dir]);
        /* my x for the shard arriving from the other side, loaded meanwhile */
        ld[dir] = pltpu_async_copy(c, half_of(c, refs[R_X], wrap(me - step * (s + 2), n), dir, h, dirs),
                                   pl_at(c, refs[R_XBUF], dir), local);
        pltpu_copy_start(c, &ld[dir]);
    }
    for (int dir = RIGHT; dir < dirs; dir++) {
        pltpu_remote_copy_wait_recv(c, &cp[dir]);
        pltpu_copy_wait(c, &ld[dir]);
        pltpu_remote_copy_wait_send(c, &cp[dir]); /* sbuf is read until the send is done */
        pl_ref sbuf = pl_at(c, refs[R_SBUF], dir);
        pl_add(c, sbuf, slot_of(c, refs, dir, slot), pl_at(c, refs[R_XBUF], dir)); /* f32 */
        /* the slot is read: its sender may refill it, if it sends again into it */
        if (!single && s + 2 <= n - 2)
            pltpu_semaphore_signal_device(c, pl_at(c, refs[R_CAP_SEMS], dir), 1, wrap(me - toward(dir), n));
    }
    if (s < n - 2) return;
    pltpu_copy st[2]; /* the last step: sbuf holds the full sum of shard me */
    for (int dir = RIGHT; dir < dirs; dir++) {
        st[dir] = pltpu_async_copy(c, pl_at(c, refs[R_SBUF], dir), half_of(c, refs[R_O], me, dir, h, dirs),
                                   pl_at(c, refs[R_LOCAL_SEMS], dir));
        pltpu_copy_start(c, &st[dir]);
    }
    for (int dir = RIGHT; dir < dirs; dir++) pltpu_copy_wait(c, &st[dir]);
}

/* All-gather step t: send the half received last (my own at t = 0) on, into
 * the same place of the neighbour's o, one receive semaphore per step as in
 * ring_allgather.c. */
static void ag_step(pl_ctx *c, pl_ref *refs, int64_t t)
{
    int me = pltpu_device_id(c), n = pltpu_num_devices(c), dirs = dirs_of(refs);
    int64_t h = refs[R_SBUF].shape[1];
    pltpu_remote_copy cp[2];
    for (int dir = RIGHT; dir < dirs; dir++) {
        int step = toward(dir);
        pl_ref blk = half_of(c, refs[R_O], wrap(me - step * t, n), dir, h, dirs);
        cp[dir] = pltpu_make_async_remote_copy(c, blk, blk, pl_at(c, refs[R_SEND_SEMS], dir),
                                               pl_at(c, refs[R_AG_SEMS], dir * (n - 1) + t), wrap(me + step, n));
        pltpu_remote_copy_start(c, &cp[dir]);
    }
    for (int dir = RIGHT; dir < dirs; dir++) pltpu_remote_copy_wait(c, &cp[dir]);
}

void ar_kernel(pl_ctx *c, pl_ref *refs)
{
    const ar_params *p = pl_kernel_user(c);
    int64_t step = pl_program_id(c, 0), n = pltpu_num_devices(c);
    if (step < n - 1) rs_step(c, refs, step, p && p->single_slot);
    else ag_step(c, refs, step - (n - 1));
}

/* The ring's directions: 2 unless s says 1. */
int ar_directions(const ar_shape *s) { return s->directions == 1 ? 1 : 2; }

int ar_shape_check(const ar_shape *s, char *msg, size_t n)
{
    if (s->devices < 2 || s->devices > PL_MESH_MAX_DEVICES) {
        snprintf(msg, n, "devices %d: a ring all-reduce needs 2 to %d devices", s->devices, PL_MESH_MAX_DEVICES);
        return PL_EINVAL;
    }
    if (s->directions < 0 || s->directions > 2) {
        snprintf(msg, n, "directions %d: a ring sends both ways (2) or one way (1)", s->directions);
        return PL_EINVAL;
    }
    int dirs = ar_directions(s);
    if (s->rows < 1 || s->cols < 1 || s->rows % (dirs * s->devices) != 0) {
        if (dirs == 2)
            snprintf(msg, n, "shape (%lld, %lld) on %d devices: rows must be a positive multiple of 2 x %d = %d (%d "
                     "shards of two halves, one per direction) and cols positive",
                     (long long)s->rows, (long long)s->cols, s->devices, s->devices, 2 * s->devices, s->devices);
        else
            snprintf(msg, n, "shape (%lld, %lld) on %d devices, one way: rows must be a positive multiple of %d (one "
                     "shard per device) and cols positive",
                     (long long)s->rows, (long long)s->cols, s->devices, s->devices);
        return PL_EINVAL;
    }
    return PL_OK;
}

void ar_call(pl_call *call, const ar_shape *s, const ar_params *p)
{
    int64_t n = s->devices, dirs = ar_directions(s), h = s->rows / (dirs * n), slots = p && p->single_slot ? 1 : 2;
    *call = (pl_call){
        .name = "ring_allreduce",
        .kernel = ar_kernel,
        .user = (void *)p,
        .grid_rank = 1,
        .grid = {2 * (n - 1)},
        .semantics = {PL_ARBITRARY}, /* every step needs what the previous one received */
        .n_in = 1,
        .in = {{.space = PL_ANY, .name = "x"}},
        .n_out = 1,
        .out = {{.space = PL_ANY, .name = "o"}},
        .n_scratch = 8,
        .scratch = {PLTPU_VMEM(PL_F32, dirs, slots, h, s->cols), PLTPU_VMEM(PL_F32, dirs, h, s->cols),
                    PLTPU_VMEM(PL_F32, dirs, h, s->cols), PLTPU_SEMAPHORE_DMA(dirs), PLTPU_SEMAPHORE_DMA(dirs),
                    PLTPU_SEMAPHORE_DMA(dirs * slots), PLTPU_SEMAPHORE(dirs), PLTPU_SEMAPHORE_DMA(dirs * (n - 1))},
    };
    static const char *names[] = {"recv_buf", "sum_buf", "x_buf", "local_sems", "send_sems", "recv_sems",
                                  "capacity_sems", "gather_sems"};
    for (int i = 0; i < call->n_scratch; i++) call->scratch[i].name = names[i];
}

static int64_t elems(const ar_shape *s) { return s->rows * s->cols; }

double ar_host_bytes(const ar_shape *s)
{
    double e = (double)elems(s), n = s->devices;
    /* x and o of every device, the reference and magnitudes of ar_verify */
    return e * 4 * 2 * n + e * 8 * 2 + 2.0 * n * sizeof(pl_array);
}

int ar_alloc(ar_data *d, const ar_shape *s, int with_data, uint64_t seed)
{
    char msg[256];
    memset(d, 0, sizeof *d);
    if (ar_shape_check(s, msg, sizeof msg) != PL_OK) return PL_EINVAL;
    d->s = *s;
    int64_t n = s->devices, e = elems(s);
    d->args = calloc((size_t)n, sizeof *d->args);
    d->outs = calloc((size_t)n, sizeof *d->outs);
    if (with_data) {
        d->x = malloc((size_t)(n * e) * sizeof *d->x);
        d->o = malloc((size_t)(n * e) * sizeof *d->o);
    }
    if (!d->args || !d->outs || (with_data && (!d->x || !d->o))) {
        ar_free(d);
        return PL_ENOMEM;
    }
    for (int64_t i = 0; with_data && i < n * e; i++) d->x[i] = ex_draw(&seed), d->o[i] = AR_SENTINEL;
    for (int64_t dev = 0; dev < n; dev++) {
        d->args[dev] = PL_ARRAY(with_data ? d->x + dev * e : NULL, PL_F32, s->rows, s->cols);
        d->outs[dev] = PL_ARRAY(with_data ? d->o + dev * e : NULL, PL_F32, s->rows, s->cols);
    }
    return PL_OK;
}

void ar_free(ar_data *d)
{
    free(d->x), free(d->o), free(d->args), free(d->outs);
    memset(d, 0, sizeof *d);
}

void ar_reference(const ar_data *d, double *ref, double *mag)
{
    int64_t e = elems(&d->s);
    for (int64_t i = 0; i < e; i++) {
        double sum = 0, abs_sum = 0;
        for (int dev = 0; dev < d->s.devices; dev++) {
            double v = d->x[dev * e + i];
            sum += v, abs_sum += fabs(v);
        }
        ref[i] = sum;
        if (mag) mag[i] = abs_sum;
    }
}

/* Device dev's o against ref and the bound, into e. */
void ar_verify_device(const ar_data *d, int dev, const double *ref, const double *mag, ar_error *e)
{
    int64_t n_el = elems(&d->s);
    double k = d->s.devices - 1, u = ldexp(1, -24), gamma = k * u / (1 - k * u);
    const float *o = d->o + dev * n_el;
    for (int64_t i = 0; i < n_el; i++) {
        double err = fabs((double)o[i] - ref[i]), bound = gamma * mag[i];
        double norm = err == 0 ? 0 : bound > 0 ? err / bound : INFINITY;
        if (!(err <= e->max_abs_err)) e->max_abs_err = err; /* NaN sticks */
        if (!(norm <= e->norm_err)) e->norm_err = isnan(err) ? INFINITY : norm;
        if (err <= bound) continue;
        if (e->bad++ == 0) e->first_device = dev, e->first_elem = i;
    }
}

int ar_verify(const ar_data *d, int dev, ar_error *e)
{
    *e = (ar_error){.first_device = -1, .first_elem = -1};
    if (!d->x || !d->o || dev < -1 || dev >= d->s.devices) return PL_EINVAL;
    int64_t n_el = elems(&d->s);
    double *ref = malloc((size_t)n_el * sizeof *ref), *mag = malloc((size_t)n_el * sizeof *mag);
    if (!ref || !mag) {
        free(ref), free(mag);
        return PL_ENOMEM;
    }
    ar_reference(d, ref, mag);
    for (int v = dev < 0 ? 0 : dev; v < (dev < 0 ? d->s.devices : dev + 1); v++) ar_verify_device(d, v, ref, mag, e);
    e->ok = e->bad == 0;
    free(ref), free(mag);
    return PL_OK;
}

double ar_closed_form_s(const ar_shape *s, const pl_chip *chip, int directions)
{
    if (!chip || chip->ici_bw <= 0 || directions < 1) return 0;
    double n = s->devices, bytes = (double)elems(s) * 4;
    return 2 * (n - 1) / n * bytes / (chip->ici_bw * directions);
}
