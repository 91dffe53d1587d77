/* examples/kernels/ring_allgather.c: the ring all-gather kernel, its call,
 * its data and its reference (ring_allgather.h). */
#include <stdlib.h>
#include <string.h>

#include "../../kernel/pltpu.h"
#include "data.h"
#include "ring_allgather.h"

/* The kernel's refs, in the order of rule M3. */
enum { R_X, R_O, R_LOCAL_SEM, R_SEND_SEM, R_RECV_SEMS };

void ra_kernel(pl_ctx *c, pl_ref *refs)
{
    const ra_params *p = pl_kernel_user(c);
    int64_t step = pl_program_id(c, 0), rows = refs[R_X].shape[0];
    int me = pltpu_device_id(c), n = pltpu_num_devices(c);
    if (step == 0) { /* my own shard into its slot of o, before anything is sent from there */
        pltpu_copy local = pltpu_async_copy(c, refs[R_X], pl_ds(c, refs[R_O], 0, me * rows, rows),
                                            pl_at(c, refs[R_LOCAL_SEM], 0));
        pltpu_copy_start(c, &local);
        pltpu_copy_wait(c, &local);
    }
    /* The slot received last (my own at step 0) goes to the same slot of my
     * right neighbour; my left neighbour meanwhile fills slot (me - step - 1),
     * which I send at the next step. Indices need not be symmetric. */
    int64_t slot = ((me - step) % n + n) % n;
    pl_ref blk = pl_ds(c, refs[R_O], 0, slot * rows, rows);
    pltpu_remote_copy cp = pltpu_make_async_remote_copy(c, blk, blk, pl_at(c, refs[R_SEND_SEM], 0),
                                                        pl_at(c, refs[R_RECV_SEMS], step), (me + 1) % n);
    if (p && p->forgetful == me) { /* the bug: no send, yet waiting for what the left neighbour sends */
        pltpu_remote_copy_wait_recv(c, &cp);
        return;
    }
    pltpu_remote_copy_start(c, &cp);
    pltpu_remote_copy_wait(c, &cp);
}

void ra_call(pl_call *call, const ra_shape *s, const ra_params *p)
{
    *call = (pl_call){
        .name = "ring_allgather",
        .kernel = ra_kernel,
        .user = (void *)p,
        .grid_rank = 1,
        .grid = {s->devices - 1},
        .semantics = {PL_ARBITRARY}, /* each step needs the shard the previous one received */
        .n_in = 1,
        .in = {{.space = PL_ANY, .name = "x"}},
        .n_out = 1,
        .out = {{.space = PL_ANY, .name = "o"}},
        .n_scratch = 3,
        .scratch = {PLTPU_SEMAPHORE_DMA(1), PLTPU_SEMAPHORE_DMA(1), PLTPU_SEMAPHORE_DMA(s->devices - 1)},
    };
    call->scratch[0].name = "local_sem";
    call->scratch[1].name = "send_sem";
    call->scratch[2].name = "recv_sems";
}

static int64_t shard_elems(const ra_shape *s) { return s->rows * s->cols; }

double ra_host_bytes(const ra_shape *s)
{
    double shard = (double)shard_elems(s) * 4, n = s->devices;
    /* shards, every device's o, the reference of ra_mismatches */
    return shard * n + shard * n * n + shard * n + 2.0 * n * sizeof(pl_array);
}

int ra_alloc(ra_data *d, const ra_shape *s, int with_data, uint64_t seed)
{
    memset(d, 0, sizeof *d);
    if (s->devices < 2 || s->rows < 1 || s->cols < 1) return PL_EINVAL;
    d->s = *s;
    int64_t n = s->devices, shard = shard_elems(s);
    d->args = calloc((size_t)n, sizeof *d->args);
    d->outs = calloc((size_t)n, sizeof *d->outs);
    if (with_data) {
        d->x = malloc((size_t)(n * shard) * sizeof *d->x);
        d->o = malloc((size_t)(n * n * shard) * sizeof *d->o);
    }
    if (!d->args || !d->outs || (with_data && (!d->x || !d->o))) {
        ra_free(d);
        return PL_ENOMEM;
    }
    for (int64_t i = 0; with_data && i < n * shard; i++) d->x[i] = ex_draw(&seed);
    for (int64_t i = 0; with_data && i < n * n * shard; i++) d->o[i] = RA_SENTINEL;
    for (int64_t dev = 0; dev < n; dev++) {
        d->args[dev] = PL_ARRAY(with_data ? d->x + dev * shard : NULL, PL_F32, s->rows, s->cols);
        d->outs[dev] = PL_ARRAY(with_data ? d->o + dev * n * shard : NULL, PL_F32, n * s->rows, s->cols);
    }
    return PL_OK;
}

void ra_free(ra_data *d)
{
    free(d->x), free(d->o), free(d->args), free(d->outs);
    memset(d, 0, sizeof *d);
}

void ra_reference(const ra_data *d, float *out)
{
    /* device d's shard is rows d*rows .. (d+1)*rows - 1 of the result */
    memcpy(out, d->x, (size_t)(d->s.devices * shard_elems(&d->s)) * sizeof *out);
}

static int64_t diff_against(const ra_data *d, const float *ref, int dev, int64_t *first)
{
    int64_t total = d->s.devices * shard_elems(&d->s), bad = 0;
    const float *o = d->o + dev * total;
    for (int64_t i = 0; i < total; i++)
        if (memcmp(&o[i], &ref[i], sizeof *o) != 0 && bad++ == 0 && first) *first = i;
    return bad;
}

int64_t ra_device_mismatches(const ra_data *d, int dev)
{
    if (!d->x || !d->o || dev < 0 || dev >= d->s.devices) return -1;
    return diff_against(d, d->x, dev, NULL); /* the reference is the shards, in order */
}

int64_t ra_mismatches(const ra_data *d, int *device, int64_t *elem)
{
    *device = -1, *elem = -1;
    if (!d->x || !d->o) return -1;
    float *ref = malloc((size_t)(d->s.devices * shard_elems(&d->s)) * sizeof *ref);
    if (!ref) return -1;
    ra_reference(d, ref);
    int64_t bad = 0;
    for (int dev = 0; dev < d->s.devices; dev++) {
        int64_t first = -1, b = diff_against(d, ref, dev, &first);
        if (b && *device < 0) *device = dev, *elem = first;
        bad += b;
    }
    free(ref);
    return bad;
}

double ra_closed_form_s(const ra_shape *s, const pl_chip *chip)
{
    if (!chip || chip->ici_bw <= 0) return 0;
    return (double)(s->devices - 1) * (double)shard_elems(s) * 4 / chip->ici_bw;
}
