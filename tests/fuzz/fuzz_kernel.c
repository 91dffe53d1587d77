/* tests/fuzz/fuzz_kernel.c: the kernel of the structure-aware harness: an
 * interpreter of a little program of block ops that the fuzzer's bytes chose
 * (fz_program), run at every grid point; and the function-form index map.
 *
 * Ops pick their operands among the kernel's Refs and views made by earlier
 * ops of the same step (pl_ds, pl_at). Most combinations are wrong (shapes
 * that do not match, a semaphore as a dot operand): the simulator must fault
 * with a message, and the fault longjmps out of this function (kernel/
 * context.h), which is expected. The "smart" DMA op cuts its source and
 * destination to a common shape and finds a semaphore element, so that the
 * manual DMA and semaphore paths run often, not only fail their checks. */
#include <math.h>
#include <string.h>

#include "fuzz_pallas.h"

enum {
    OP_COPY, OP_FILL, OP_BINARY, OP_UNARY, OP_DOT, OP_REDUCE, OP_BROADCAST, OP_TRIL, OP_GET, OP_SET,
    OP_DS, OP_AT, OP_DMA, OP_DMA_SMART, OP_WAIT, OP_RESTART, OP_SEM, OP_IF, OP_COUNT
};

#define N_VIEWS 8

const char *fz_op_name(unsigned b0)
{
    static const char *names[OP_COUNT] = {"copy", "fill", "binary", "unary", "dot", "reduce", "broadcast", "tril",
                                          "get", "set", "ds", "at", "dma", "dma_smart", "wait", "restart", "sem", "if"};
    return names[(b0 & 0x7f) % OP_COUNT];
}

typedef struct kstate {
    pl_ctx *c;
    fz_program *p;
    pl_ref slot[64 + N_VIEWS];
    int n_slots, n_views;
} kstate;

static const double values[] = {0, 1, -1, 0.5, 1e30, -1e-30, NAN, INFINITY, 65504, 3e38,
                                127, -128, 2147483647.0, -2147483648.0, 1e10, 255};

static pl_ref *sel(kstate *k, unsigned b) { return &k->slot[b % (unsigned)k->n_slots]; }

static int is_data(const pl_ref *r) { return r->space == PL_VMEM || r->space == PL_SMEM; }

static int same_shape(const pl_ref *a, const pl_ref *b)
{
    if (a->rank != b->rank) return 0;
    for (int d = 0; d < a->rank; d++)
        if (a->shape[d] != b->shape[d]) return 0;
    return 1;
}

/* Careful ops (opcode byte >= 128) choose operands an op accepts: the first
 * slot from b on that holds data of like's shape (and dtype, if asked), or
 * NULL. Most random operand choices fault at once; careful ones let a kernel
 * run many steps, which is where DMA waits and semaphores live. */
static pl_ref *sel_like(kstate *k, unsigned b, const pl_ref *like, int same_dtype, const pl_ref *not)
{
    for (int i = 0; i < k->n_slots; i++) {
        pl_ref *r = sel(k, b + (unsigned)i);
        if (r == not || (like && !same_shape(r, like)) || (same_dtype && like && r->dtype != like->dtype)) continue;
        if (like ? like->space != PL_SEMAPHORE && r->space != PL_SEMAPHORE : 1) return r;
    }
    return NULL;
}

static pl_ref *sel_space(kstate *k, unsigned b, int data, pl_sem_kind sem)
{
    for (int i = 0; i < k->n_slots; i++) {
        pl_ref *r = sel(k, b + (unsigned)i);
        if (data ? is_data(r) && pl_dtype_is_float(r->dtype) : r->space == PL_SEMAPHORE && r->sem_kind == sem)
            return r;
    }
    return NULL;
}

/* Count the elements an op touches; 0 when the input's budget is spent. */
static int afford(kstate *k, pl_ref r)
{
    int64_t n = pl_size(r);
    k->p->work += n > 0 ? n : 1;
    return k->p->work <= FZ_WORK_BUDGET;
}

static void add_view(kstate *k, pl_ref v, unsigned where)
{
    int at = k->n_views < N_VIEWS ? k->n_views++ : (int)(where % N_VIEWS);
    k->slot[k->p->n_refs + at] = v;
    k->n_slots = k->p->n_refs + k->n_views;
}

/* One semaphore out of a semaphore array (pl_at until rank 0). */
static pl_ref one_sem(kstate *k, pl_ref s, unsigned b)
{
    while (s.rank > 0 && s.shape[0] > 0) s = pl_at(k->c, s, (int64_t)(b % (unsigned)s.shape[0]));
    return s;
}

/* Cut src and dst to the same shape, where their ranks agree. */
static void common_shape(kstate *k, pl_ref *src, pl_ref *dst)
{
    while (src->rank > dst->rank && src->shape[0] > 0) *src = pl_at(k->c, *src, 0);
    while (dst->rank > src->rank && dst->shape[0] > 0) *dst = pl_at(k->c, *dst, 0);
    for (int d = 0; d < src->rank && d < dst->rank; d++) {
        int64_t n = src->shape[d] < dst->shape[d] ? src->shape[d] : dst->shape[d];
        if (k->p->avoid_known && n == 0) return; /* empty views: known UBSan report */
        *src = pl_ds(k->c, *src, d, 0, n);
        *dst = pl_ds(k->c, *dst, d, 0, n);
    }
}

static void dma_op(kstate *k, const uint8_t *b, int smart)
{
    pl_ref src = *sel(k, b[1]), dst = *sel(k, b[2]), sem = *sel(k, b[3]);
    if (smart) { /* a source and a destination of one dtype, cut to one shape, and a DMA semaphore */
        pl_ref *s = NULL, *d = NULL, *m = sel_space(k, b[3], 0, PL_SEM_DMA);
        for (int i = 0; i < k->n_slots && !d; i++) {
            s = sel(k, b[1] + (unsigned)i);
            if (s->space == PL_SEMAPHORE) continue;
            for (int j = 0; j < k->n_slots && !d; j++) {
                pl_ref *t = sel(k, b[2] + (unsigned)j);
                if (t != s && t->space != PL_SEMAPHORE && t->dtype == s->dtype && t->rank == s->rank) d = t;
            }
        }
        if (!d || !m) return;
        src = *s, dst = *d;
        common_shape(k, &src, &dst);
        sem = one_sem(k, *m, b[4]);
    }
    if (!afford(k, src)) return;
    pltpu_copy cp = pltpu_async_copy(k->c, src, dst, sem);
    pltpu_copy_start(k->c, &cp);
    int h = b[5] % FZ_MAX_COPIES;
    if (smart && (b[5] & 0x10)) { /* start, then wait at once */
        pltpu_copy_wait(k->c, &cp);
        return;
    }
    k->p->copies[h] = cp;
    k->p->have[h] = 1;
}

static void sem_op(kstate *k, const uint8_t *b, int careful)
{
    pl_ref s = *sel(k, b[1]);
    if (careful) {
        const pl_ref *m = sel_space(k, b[1], 0, b[2] & 1 ? PL_SEM_DMA : PL_SEM_REGULAR);
        if (!m) return;
        s = *m;
    }
    if (careful || (b[4] & 1)) s = one_sem(k, s, b[2]);
    int64_t v = (int64_t)(b[3] % 8) - (careful ? -1 : 1); /* -1 and 0 are errors to report */
    if (!k->p->avoid_known && b[3] >= 248) v = INT32_MAX; /* 32-bit counts: known */
    switch (careful && s.sem_kind == PL_SEM_DMA ? 2 : b[5] % 3) { /* DMA counts are only read */
    case 0: pltpu_semaphore_signal(k->c, s, v); break;
    case 1: { /* careful: no more than the count holds, so no deadlock */
        int64_t have = careful ? pltpu_semaphore_read(k->c, s) : v;
        if (!careful || have > 0) pltpu_semaphore_wait(k->c, s, v < have ? v : have);
        break;
    }
    default: (void)pltpu_semaphore_read(k->c, s); break;
    }
}

/* An element of r: careful, inside it (0 if r is no data or empty); else
 * mostly inside, sometimes one or two past the end. */
static int index_of(const pl_ref *r, const uint8_t *b, int64_t *idx, int careful)
{
    for (int d = 0; d < r->rank; d++) {
        if (careful && (!is_data(r) || r->shape[d] < 1)) return 0;
        idx[d] = (int64_t)(b[2 + d % 4] + d) % (r->shape[d] + (careful ? 0 : 1 + (b[1] & 1)));
    }
    return 1;
}

static int is_int(pl_dtype t) { return t == PL_I32 || t == PL_I8; }

/* A pl_copy that takes kernel/ops.c's integer path (F1: NULL + 0 there). */
static int int_copy(const pl_ref *d, const pl_ref *x)
{
    int unit = (d->rank == 0 || d->stride[d->rank - 1] == 1) && (x->rank == 0 || x->stride[x->rank - 1] == 1);
    return is_int(d->dtype) && is_int(x->dtype) && !(unit && d->dtype == x->dtype);
}

/* Careful operands: float data of one shape (a dot: (m,k) @ (k,n) into (m,n)). */
static int careful_operands(kstate *k, const uint8_t *b, int op, pl_ref **d, pl_ref **x, pl_ref **y)
{
    if (!(*d = sel_space(k, b[1], 1, PL_SEM_NONE))) return 0;
    if (op != OP_DOT) {
        *x = sel_like(k, b[2], *d, 0, NULL);
        *y = sel_like(k, b[3], *d, 0, NULL);
        return *x && *y && is_data(*x) && is_data(*y);
    }
    if ((*d)->rank != 2) return 0;
    for (int i = 0; i < k->n_slots; i++) { /* a: (m, kk) */
        *x = sel(k, b[2] + (unsigned)i);
        if (!is_data(*x) || (*x)->rank != 2 || (*x)->shape[0] != (*d)->shape[0]) continue;
        for (int j = 0; j < k->n_slots; j++) { /* b: (kk, n) */
            *y = sel(k, b[3] + (unsigned)j);
            if (is_data(*y) && (*y)->rank == 2 && (*y)->shape[0] == (*x)->shape[1] && (*y)->shape[1] == (*d)->shape[1])
                return 1;
        }
    }
    return 0;
}

static void elementwise(kstate *k, const uint8_t *b, int op, int careful)
{
    pl_ctx *c = k->c;
    pl_ref *d = sel(k, b[1]), *x = sel(k, b[2]), *y = sel(k, b[3]);
    if (careful && !careful_operands(k, b, op, &d, &x, &y)) return;
    if (!afford(k, *d)) return;
    if (op == OP_COPY && k->p->avoid_known && int_copy(d, x)) return; /* F1 in FINDINGS.md */
    static void (*const bin[])(pl_ctx *, pl_ref, pl_ref, pl_ref) = {pl_add, pl_mul, pl_max, pl_sub};
    static void (*const bcast[])(pl_ctx *, pl_ref, pl_ref, pl_ref) = {pl_sub_col, pl_mul_col, pl_div_col,
                                                                       pl_add_row, pl_mul_row};
    switch (op) {
    case OP_COPY: pl_copy(c, *d, *x); break;
    case OP_FILL: pl_fill(c, *d, values[b[4] % 16]); break;
    case OP_BINARY: bin[b[4] % 4](c, *d, *x, *y); break;
    case OP_UNARY:
        if (b[4] % 3 == 0) pl_relu(c, *d, *x);
        else if (b[4] % 3 == 1) pl_exp(c, *d, *x);
        else pl_scale(c, *d, *x, values[b[5] % 16]);
        break;
    case OP_DOT: pl_dot(c, *d, *x, *y, (b[4] % 4u) & (careful ? PL_DOT_ACC : 3u)); break;
    case OP_REDUCE: (b[4] & 1 ? pl_sum_rows : pl_max_rows)(c, *d, *x); break;
    case OP_BROADCAST: bcast[b[4] % 5](c, *d, *x, *y); break;
    case OP_TRIL: pl_tril(c, *d, *x, (int64_t)(int8_t)b[4], values[b[5] % 16]); break;
    default: break;
    }
}

/* Returns 1 when the next op is to be skipped (OP_IF). */
static int run_op(kstate *k, const uint8_t *b)
{
    pl_ctx *c = k->c;
    int op = (b[0] & 0x7f) % OP_COUNT, careful = b[0] >= 0x80;
    int64_t idx[PL_MAX_RANK];
    switch (op) {
    case OP_GET:
        if (index_of(sel(k, b[1]), b, idx, careful)) (void)pl_get(c, *sel(k, b[1]), idx);
        break;
    case OP_SET:
        if (index_of(sel(k, b[1]), b, idx, careful)) pl_set(c, *sel(k, b[1]), idx, values[b[5] % 16]);
        break;
    case OP_DS: {
        pl_ref r = *sel(k, b[1]);
        int dim = r.rank ? b[2] % r.rank : 0;
        int64_t n = r.rank ? r.shape[dim] : 1, start = b[3] % (n + 1), size = b[4] % (n - start + 2);
        if (k->p->avoid_known && size == 0) size = 1; /* empty views: known UBSan report */
        add_view(k, pl_ds(c, r, b[2] >= 250 ? -1 : dim, start, size), b[5]);
        break;
    }
    case OP_AT: {
        pl_ref r = *sel(k, b[1]);
        add_view(k, pl_at(c, r, r.rank && r.shape[0] ? b[2] % (r.shape[0] + (b[3] & 1)) : 0), b[5]);
        break;
    }
    case OP_DMA: dma_op(k, b, careful); break;
    case OP_DMA_SMART: dma_op(k, b, 1); break;
    case OP_WAIT:
    case OP_RESTART:
        if (k->p->have[b[1] % FZ_MAX_COPIES]) {
            const pltpu_copy *cp = &k->p->copies[b[1] % FZ_MAX_COPIES];
            if (op == OP_WAIT) pltpu_copy_wait(c, cp), k->p->have[b[1] % FZ_MAX_COPIES] = b[2] & 1;
            else pltpu_copy_start(c, cp);
        }
        break;
    case OP_SEM: sem_op(k, b, careful); break;
    case OP_IF: { /* skip the next op unless program_id(axis) is 0 (or the last) */
        int rank = k->p->grid_rank, axis = b[1] >= 250 ? rank : rank ? b[1] % rank : 0;
        if (rank == 0 && b[1] < 250) return 0;
        int64_t id = pl_program_id(c, axis), want = b[2] & 1 ? pl_num_programs(c, axis) - 1 : 0;
        return id != want;
    }
    default: elementwise(k, b, op, careful); break;
    }
    return 0;
}

void fz_kernel(pl_ctx *c, pl_ref *refs)
{
    fz_program *p = pl_kernel_user(c);
    kstate k = {.c = c, .p = p, .n_slots = p->n_refs};
    memcpy(k.slot, refs, (size_t)p->n_refs * sizeof *refs);
    if (k.n_slots == 0 || p->work > FZ_WORK_BUDGET) return;
    for (int i = 0; i < p->n_ops; i++)
        if (run_op(&k, p->ops[i])) i++;
}

void fz_on_step(const pl_step_info *info, void *user)
{
    fz_program *p = user;
    if (info->step == 0 && !info->final) memset(p->have, 0, sizeof p->have);
}

void fz_index_map(const int64_t *g, const pl_ref *prefetch, int64_t *block_idx, void *user)
{
    const fz_map *m = user;
    for (int d = 0; d < PL_MAX_RANK; d++) {
        int64_t gi = m->axis[d] >= 0 ? g[m->axis[d]] : 0;
        switch (m->kind[d]) {
        case FZ_MAP_AXIS: block_idx[d] = gi * m->mul[d] + m->add[d]; break;
        case FZ_MAP_CONST: block_idx[d] = m->add[d]; break;
        case FZ_MAP_PREFETCH:
            if (m->n_prefetch > 0 && prefetch[0].rank == 1 && prefetch[0].shape[0] > 0) {
                int64_t i = (gi + m->add[d]) % prefetch[0].shape[0];
                double v = pl_load_elem((const char *)prefetch[0].data +
                                            (size_t)(i < 0 ? -i : i) * pl_dtype_size(prefetch[0].dtype),
                                        prefetch[0].dtype);
                block_idx[d] = v > -1e15 && v < 1e15 ? (int64_t)v : 0; /* a NaN cast is the harness's UB */
            } else {
                block_idx[d] = 0;
            }
            break;
        default: break; /* left unset: the simulator must say so */
        }
    }
}
