/* tests/fuzz/fuzz_pallas_call.c: structure-aware libFuzzer harness for
 * pl_validate and pl_pallas_call. The bytes decode, field by field, into a
 * call: options (cost-only, checks, strict, DMA mode, poison, a trace), a
 * preset or an extreme what-if chip (pl_options.chip_spec), a grid of up to
 * six axes with semantics, scalar-prefetch arrays, inputs and outputs with
 * their BlockSpecs (squeezed dims, declarative and function maps, spaces,
 * buffer counts, element dims), scratch of every space, aliases and a VMEM
 * limit; the rest of the bytes are the kernel's program (fuzz_kernel.c).
 *
 * Arrays are small (at most MAX_ARRAY_BYTES, with real data) except in
 * cost-only runs without data, where they may be large. Grids walk at most
 * MAX_STEPS points (a grid of more than 2^32 points is kept: validation must
 * refuse it without walking), so one input takes milliseconds.
 *
 * Besides "no crash, no sanitizer report", the harness checks the API's
 * promises: a known status code, a message with every error, the report's
 * status, and that a call validation rejects fails the same way and leaves
 * its outputs untouched.
 *
 * The bugs listed in FINDINGS.md are fixed, so by default the harness
 * reaches every region of inputs; TILESIM_FUZZ_AVOID_KNOWN=1 steers around
 * them again (extreme chips, 32k-step grids, INT32_MAX semaphore increments,
 * 2^40 padding, empty views, ANY operands without data, 3+ scratch traces,
 * integer copies), for bisecting a regression. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_pallas.h"
#include "fuzz_tmp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define MAX_STEPS 32768
#define MAX_ARRAY_BYTES (16 << 10)
static fz_case fc;
static pl_report rep;
static FILE *devnull;
static char trace_path[512];
static int avoid_known, dump;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    devnull = fopen("/dev/null", "w");
    if (!devnull) abort();
    char name[64];
    snprintf(name, sizeof name, "tilesim_fuzz_trace_%d.json", (int)getpid());
    fz_tmp_path(trace_path, sizeof trace_path, name);
    const char *k = getenv("TILESIM_FUZZ_AVOID_KNOWN");
    avoid_known = k && k[0] == '1';
    const char *d = getenv("TILESIM_FUZZ_DUMP"); /* print each decoded call: for reading crash inputs */
    dump = d && d[0] == '1';
    return 0;
}

/* ---- chips ------------------------------------------------------------------------ */

/* Each figure at an end of the range a chip file may give it (sim/timing/chips.c). */
static void extreme_chip(fz_reader *r, pl_chip *c)
{
    *c = *pl_chip_at((int)fz_pick(r, (unsigned)pl_chip_count()));
    snprintf(c->name, sizeof c->name, "extreme");
    unsigned mask = fz_byte(r);
    mask |= fz_byte(r) << 8;
    unsigned ends = fz_byte(r);
    ends |= fz_byte(r) << 8;
    /* The timing model livelocks (known) once its clock is so far past
     * zero that a transfer's last fraction of a byte no longer moves it:
     * fast HBM with a clock of milliseconds or more. Steered clear of by
     * keeping every step short: no figure slower than a microsecond a step. */
    double slow = avoid_known ? 1e-6 : 1, fast = avoid_known ? 1e13 : 1e15, low = avoid_known ? 1e12 : 1e9;
#define END(bit, lo, hi) ((mask >> (bit) & 1) ? ((ends >> (bit) & 1) ? (hi) : (lo)) : -1)
    double v;
    if ((v = END(0, low, 1e18)) >= 0) c->bf16_flops = v;
    if ((v = END(1, 0, 1e18)) >= 0) c->int8_ops = v;
    if ((v = END(2, 1e-3, 1)) >= 0) c->f32_fraction = v;
    if ((v = END(3, low, 1e18)) >= 0) c->vpu_flops = v;
    if ((v = END(4, 1, 64)) >= 0) c->mxu_count = (int)v;
    if ((v = END(5, 8, 4096)) >= 0) c->mxu_width = (int)v;
    if ((v = END(6, low / 1000, fast)) >= 0) c->hbm_bw = v;
    if ((v = END(7, 1024, 1e6 * 1048576.0)) >= 0) c->vmem_bytes = (int64_t)v;
    if ((v = END(8, 1024, 1e6 * 1048576.0)) >= 0) c->vmem_default_limit = (int64_t)v;
    if ((v = END(9, 1024, 1e12)) >= 0) c->smem_bytes = (int64_t)v;
    if ((v = END(10, 8, 32)) >= 0) c->sublanes_16bit = (int)v;
    if ((v = END(11, 1, 2)) >= 0) c->cores_per_device = (int)v;
    if ((v = END(12, 1, 8)) >= 0) c->devices_per_chip = (int)v;
    if ((v = END(13, 0, 1e15)) >= 0) c->ici_bw = v;
    if ((v = END(14, 0, slow)) >= 0) c->step_overhead_s = v;
    if ((v = END(15, 0, slow)) >= 0) c->dma_latency_s = v;
#undef END
    if (c->vmem_default_limit > c->vmem_bytes) c->vmem_default_limit = c->vmem_bytes; /* as the parser demands */
}

/* A preset with one figure no chip file could give it (zero, negative, NaN,
 * infinite, past an int's range): the call must refuse the chip with a
 * message or time it sanely, never crash or hang. */
static void insane_chip(fz_reader *r, pl_chip *c)
{
    static const double dv[5] = {0, -1, NAN, INFINITY, -INFINITY};
    static const int iv[4] = {0, -1, INT32_MAX, 65};
    static const int64_t bv[3] = {0, -1, INT64_MAX};
    *c = *pl_chip_at((int)fz_pick(r, (unsigned)pl_chip_count()));
    snprintf(c->name, sizeof c->name, "insane");
    unsigned field = fz_pick(r, 16), v = fz_byte(r);
    double *d[8] = {&c->bf16_flops, &c->int8_ops, &c->f32_fraction, &c->vpu_flops, &c->hbm_bw, &c->ici_bw,
                    &c->step_overhead_s, &c->dma_latency_s};
    int *i[6] = {&c->mxu_count, &c->mxu_width, &c->sublanes_16bit, &c->cores_per_device, &c->devices_per_chip,
                 &c->ici_links};
    if (field < 8) *d[field] = dv[v % 5];
    else if (field < 14) *i[field - 8] = iv[v % 4];
    else *(field == 14 ? &c->vmem_bytes : &c->smem_bytes) = bv[v % 3];
}

static void decode_options(fz_reader *r, fz_case *k)
{
    unsigned f = fz_byte(r);
    pl_options *o = &k->opt;
    o->cost_only = f & 1;
    k->null_data = o->cost_only && (f & 2);
    o->checks_off = (f >> 2) & 1;
    o->strict = (f >> 3) & 1;
    o->dma_mode = (f >> 4) & 1 ? PL_DMA_ON_WAIT : PL_DMA_EAGER;
    o->uninit = (f >> 5) & 1 ? PL_UNINIT_ZERO : PL_UNINIT_NAN;
    o->oob_reads = (f >> 6) & 1 ? PL_OOB_POISON : PL_OOB_RAISE;
    o->trace_path = (f >> 7) & 1 ? trace_path : NULL;
    k->runner = (int)fz_pick(r, 8);
    o->seed = fz_byte(r);
    unsigned chip = fz_pick(r, 8);
    if (chip < 5) o->chip = pl_chip_at((int)chip % pl_chip_count())->name;
    else if (chip == 6) extreme_chip(r, &k->chip), o->chip_spec = &k->chip;
    else if (chip == 7) insane_chip(r, &k->chip), o->chip_spec = &k->chip;
    o->on_step = fz_on_step;
    o->on_step_user = &k->prog;
}

/* ---- the grid ---------------------------------------------------------------------- */

static void decode_grid(fz_reader *r, pl_call *c)
{
    static const int ranks[8] = {1, 2, 3, 0, 1, 2, 4, 6};
    static const int64_t big[14] = {0, -1, 8, 16, 64, 100, 128, 1000, 4096, 25000, 30000, INT64_MAX, 1LL << 32, 257};
    c->grid_rank = ranks[fz_pick(r, 8)];
    int64_t steps = 1, positive = 1;
    for (int a = 0; a < c->grid_rank; a++) {
        unsigned b = fz_byte(r);
        c->grid[a] = b < 200 ? 1 + b % 6 : big[(b - 200) % 14];
        positive &= c->grid[a] > 0;
        steps = c->grid[a] > 0 && steps > INT64_MAX / c->grid[a] ? INT64_MAX : steps * (c->grid[a] > 0 ? c->grid[a] : 1);
    }
    /* walk at most max points; a grid past 2^32 is refused unwalked. Long
     * walks livelock the timing model (known): fewer steps while it does. */
    int64_t max = avoid_known ? MAX_STEPS / 8 : MAX_STEPS;
    if (positive && steps > max && steps <= (1LL << 32))
        for (int a = c->grid_rank - 1; a >= 0 && steps > max; a--) {
            steps /= c->grid[a];
            c->grid[a] = max / steps > 0 ? max / steps : 1;
            steps *= c->grid[a];
        }
    unsigned sem = fz_byte(r);
    for (int a = 0; a < c->grid_rank; a++) c->semantics[a] = (sem >> a) & 1 ? PL_PARALLEL : PL_ARBITRARY;
}

/* ---- arrays ----------------------------------------------------------------------- */

static pl_dtype decode_dtype(fz_reader *r)
{
    static const pl_dtype t[16] = {PL_F32, PL_F32, PL_F32, PL_F32, PL_F32, PL_F32, PL_F32, PL_F32,
                                   PL_BF16, PL_BF16, PL_BF16, PL_F16, PL_I32, PL_I32, PL_I8, PL_I8};
    unsigned b = fz_byte(r);
    return b == 255 ? (pl_dtype)7 : t[b % 16]; /* an invalid dtype, now and then */
}

static size_t bytes_of(const pl_array *a)
{
    size_t n = pl_dtype_size(a->dtype) ? pl_dtype_size(a->dtype) : 4;
    for (int d = 0; d < a->rank; d++) n *= (size_t)a->shape[d];
    return n;
}

static void *track(fz_case *k, void *p)
{
    if (p) k->mem[k->n_mem++] = p;
    return p;
}

/* Shape, dtype and data. Inputs count up from -8; outputs start as 0x7f bytes. */
static void decode_array(fz_reader *r, fz_case *k, pl_array *a, int input)
{
    static const int ranks[8] = {2, 2, 1, 3, 2, 1, 4, 0};
    static const int64_t dims[20] = {8, 16, 128, 256, 1, 2, 3, 7, 9, 17, 24, 32, 100, 129, 130, 300, 512, 1024, 64, 4};
    a->dtype = decode_dtype(r);
    a->rank = ranks[fz_pick(r, 8)];
    for (int d = 0; d < a->rank; d++) a->shape[d] = dims[fz_pick(r, 20)];
    if (k->null_data) { /* cost-only without data: large arrays are free */
        for (int d = 0; d < a->rank; d++) a->shape[d] <<= fz_pick(r, 11);
        while (avoid_known && bytes_of(a) > (1u << 30)) /* 3 GiB cost-only DMA: known */
            for (int d = 0; d < a->rank; d++) a->shape[d] = (a->shape[d] + 1) / 2;
        a->data = NULL;
        return;
    }
    while (bytes_of(a) > MAX_ARRAY_BYTES) {
        int big = 0;
        for (int d = 1; d < a->rank; d++) big = a->shape[d] > a->shape[big] ? d : big;
        a->shape[big] = (a->shape[big] + 1) / 2;
    }
    size_t n = bytes_of(a);
    a->data = track(k, malloc(n ? n : 1));
    if (!a->data) abort();
    if (!input || !pl_dtype_size(a->dtype)) {
        memset(a->data, 0x7f, n);
        return;
    }
    size_t es = pl_dtype_size(a->dtype);
    for (size_t i = 0; i < n / es; i++) pl_store_elem((char *)a->data + i * es, a->dtype, (double)(i % 17) - 8);
}

static void decode_prefetch(fz_reader *r, fz_case *k)
{
    static const int counts[4] = {0, 0, 1, 2};
    pl_call *c = &k->call;
    c->num_scalar_prefetch = counts[fz_pick(r, 4)];
    for (int i = 0; i < c->num_scalar_prefetch; i++) {
        unsigned b = fz_byte(r);
        int64_t len = 1 + b % 16;
        pl_dtype t = b >= 240 ? PL_F32 : PL_I32; /* M5 wants 32-bit scalars; f32 now and then */
        for (int j = 0; j < len; j++) {
            int32_t v = (int8_t)fz_byte(r);
            if (t == PL_F32) pl_store_elem(&k->prefetch[i][j], PL_F32, v);
            else k->prefetch[i][j] = v;
        }
        k->args[i] = PL_ARRAY(k->prefetch[i], t, len);
    }
}

/* ---- BlockSpecs --------------------------------------------------------------------- */

static void decode_map(fz_reader *r, fz_case *k, pl_block_spec *s)
{
    static const int64_t adds[8] = {0, 0, 0, 1, -1, 2, 1000, 1LL << 40};
    int g = k->call.grid_rank;
    unsigned how = fz_pick(r, 8);
    if (how == 5) {
        s->map = (pl_index_map){0}; /* all zeros (B3) */
    } else if (how < 5) {
        s->map.n = s->rank + (fz_byte(r) == 255);
        for (int d = 0; d < PL_MAX_RANK; d++) {
            unsigned b = fz_byte(r);
            s->map.axis[d] = (int8_t)(b >= 250 ? (b & 1 ? g : -2) : (int)(b % (unsigned)(g + 1)) - 1);
        }
    } else if (k->n_maps < 2 * PL_MAX_OPERANDS) {
        fz_map *m = &k->maps[k->n_maps++];
        m->n_prefetch = k->call.num_scalar_prefetch;
        for (int d = 0; d < PL_MAX_RANK; d++) {
            unsigned b = fz_byte(r);
            m->kind[d] = (uint8_t)(b % FZ_MAP_KINDS);
            if (m->kind[d] == FZ_MAP_UNSET && b < 200) m->kind[d] = FZ_MAP_AXIS; /* unset: rare */
            m->axis[d] = (int8_t)(g ? (int)(fz_byte(r) % (unsigned)g) : -1);
            m->mul[d] = (int64_t)fz_pick(r, 4) - 1;
            m->add[d] = adds[fz_pick(r, 8)];
        }
        s->map = (pl_index_map)PL_MAP_FN(fz_index_map, m);
    }
}

static int64_t decode_block_dim(fz_reader *r, int64_t full)
{
    switch (fz_pick(r, 16)) {
    case 4: return PL_SQUEEZED;
    case 5: return 1;
    case 6: return 8;
    case 7: return 16;
    case 8: return 128;
    case 9: return 256;
    case 10: return full > 1 ? full / 2 : 1;
    case 11: return full + 1;
    case 12: return 0;
    case 13: return (full + 7) / 8 * 8;
    case 14: return 1024;
    case 15: return -3;
    default: return full;
    }
}

static void decode_spec(fz_reader *r, fz_case *k, pl_block_spec *s, const pl_array *a)
{
    static const int buffers[8] = {0, 0, 0, 0, 0, 1, 3, -1};
    unsigned space = fz_pick(r, 9);
    s->space = space == 6 ? PL_SMEM : space == 7 ? PL_ANY : space == 8 ? PL_SEMAPHORE : PL_VMEM; /* M16 too */
    if (s->space == PL_ANY && k->null_data && avoid_known) s->space = PL_VMEM; /* NULL + offset: known */
    unsigned rk = fz_pick(r, 16);
    s->rank = rk == 0 ? 0 : rk == 1 ? a->rank - 1 : rk == 2 ? a->rank + 1 : a->rank;
    if (s->rank > PL_MAX_RANK) s->rank = PL_MAX_RANK;
    for (int d = 0; d < s->rank; d++) s->block[d] = decode_block_dim(r, d < a->rank ? a->shape[d] : 1);
    decode_map(r, k, s);
    s->buffers = buffers[fz_pick(r, 8)];
    unsigned el = fz_pick(r, 8);
    for (int d = 0; d < s->rank && el < 2; d++) {
        if (s->block[d] == PL_SQUEEZED || (el == 1 && d > 0)) continue; /* el 1: B5's all-or-none broken */
        s->element[d] = 1;
        s->pad_lo[d] = fz_pick(r, 4);
        s->pad_hi[d] = fz_byte(r) == 255 && !avoid_known ? 1LL << 40 : fz_pick(r, 4); /* 2^40: known */
    }
}

/* ---- scratch, aliases, limits, program ------------------------------------------ */

static void decode_scratch(fz_reader *r, fz_case *k)
{
    static const int64_t dims[8] = {1, 2, 8, 16, 128, 3, 256, 4};
    pl_call *c = &k->call;
    unsigned n = fz_byte(r);
    c->n_scratch = n >= 250 ? PL_MAX_SCRATCH + (int)(n & 1) - 1 : (int)(n % 5); /* 17: one too many */
    int vmem = 0;
    for (int i = 0; i < c->n_scratch && i < PL_MAX_SCRATCH; i++) {
        pl_scratch *s = &c->scratch[i];
        unsigned kind = fz_pick(r, 8), n_sem = 1 + fz_pick(r, 4);
        n_sem -= fz_byte(r) == 255; /* no semaphores at all, now and then */
        switch (kind) {
        case 2: {
            pl_dtype t = fz_byte(r) >= 240 ? PL_BF16 : PL_I32; /* M1 wants 32 bits; bf16 now and then */
            *s = PLTPU_SMEM(t, 1 + fz_pick(r, 64));
            break;
        }
        case 3: *s = PLTPU_SEMAPHORE((int64_t)n_sem); break;
        case 4:
        case 5: *s = PLTPU_SEMAPHORE_DMA((int64_t)n_sem); break;
        case 6: *s = PLTPU_VMEM(PL_F32, 2048, 2048 * (1 + fz_pick(r, 8))); break; /* over a budget */
        case 7: /* malformed: a space, dtype or rank that does not exist */
            *s = (pl_scratch){.shape = {2, 8, 128}};
            s->space = (pl_memspace)fz_pick(r, 6);
            s->dtype = (pl_dtype)fz_pick(r, 8);
            s->rank = (int)fz_pick(r, 9) - 1;
            s->sem_kind = (pl_sem_kind)fz_pick(r, 4);
            break;
        default:
            *s = (pl_scratch){.space = PL_VMEM};
            s->dtype = decode_dtype(r);
            s->rank = 1 + (int)fz_pick(r, 3);
            for (int d = 0; d < s->rank; d++) s->shape[d] = dims[fz_pick(r, 8)];
        }
        vmem += s->space == PL_VMEM;
    }
    if (vmem >= 3 && avoid_known) k->opt.trace_path = NULL; /* trace with 3+ VMEM scratch: known */
}

/* Alias arguments to outputs (M6); now and then make the output match the
 * input, so that aliasing gets past its checks and runs. */
static void decode_aliases(fz_reader *r, fz_case *k)
{
    static const int counts[8] = {0, 0, 0, 0, 0, 0, 1, 2};
    pl_call *c = &k->call;
    int n_args = c->num_scalar_prefetch + c->n_in;
    c->n_alias = counts[fz_pick(r, 8)];
    for (int i = 0; i < c->n_alias; i++) {
        struct pl_alias *al = &c->alias[i];
        al->in = (int)fz_pick(r, (unsigned)n_args + 1);
        al->out = (int)fz_pick(r, (unsigned)c->n_out + 1);
        if (!(fz_byte(r) & 1) || al->in >= n_args || al->out >= c->n_out || al->in < c->num_scalar_prefetch) continue;
        pl_array *o = &k->outs[al->out];
        const pl_array *in = &k->args[al->in];
        *o = *in;
        if (in->data) {
            o->data = track(k, malloc(bytes_of(in)));
            if (!o->data) abort();
            memset(o->data, 0x7f, bytes_of(in));
        }
        c->out[al->out] = c->in[al->in - c->num_scalar_prefetch];
    }
}

static void decode_program(fz_reader *r, fz_case *k)
{
    static const int64_t limits[8] = {0, 0, 0, 0, 0, 0, 1 << 20, -1};
    pl_call *c = &k->call;
    unsigned lim = fz_pick(r, 8);
    c->vmem_limit_bytes = lim == 6 ? 4096 * (int64_t)(1 + fz_byte(r)) : lim == 7 && fz_byte(r) & 1 ? 1LL << 40 : limits[lim];
    fz_program *p = &k->prog;
    p->n_refs = c->num_scalar_prefetch + c->n_in + c->n_out + (c->n_scratch < PL_MAX_SCRATCH ? c->n_scratch : PL_MAX_SCRATCH);
    p->grid_rank = c->grid_rank;
    p->avoid_known = avoid_known;
    while (p->n_ops < FZ_MAX_OPS && r->n - r->at >= FZ_OP_BYTES) {
        memcpy(p->ops[p->n_ops++], r->p + r->at, FZ_OP_BYTES);
        r->at += FZ_OP_BYTES;
    }
    c->kernel = fz_kernel;
    c->user = p;
    c->name = "fuzz";
}

static void decode(fz_reader *r, fz_case *k)
{
    pl_call *c = &k->call;
    decode_options(r, k);
    decode_grid(r, c);
    decode_prefetch(r, k);
    unsigned io = fz_byte(r);
    c->n_in = (int)(io % 4);
    c->n_out = (int)((io / 4 + 1) % 4);
    for (int i = 0; i < c->n_in; i++) {
        pl_array *a = &k->args[c->num_scalar_prefetch + i];
        decode_array(r, k, a, 1);
        decode_spec(r, k, &c->in[i], a);
    }
    for (int i = 0; i < c->n_out; i++) {
        decode_array(r, k, &k->outs[i], 0);
        decode_spec(r, k, &c->out[i], &k->outs[i]);
    }
    decode_scratch(r, k);
    decode_aliases(r, k);
    decode_program(r, k);
}

/* ---- running and the API's promises ----------------------------------------------- */

static void check_report(int rc, const pl_report *rp, int same_status)
{
    if (rc > 0 || rc < PL_STATUS_MIN) abort();              /* a status code pallas.h does not list */
    if (same_status && rp->status != rc) abort();           /* report.status is what the call returned */
    if (!memchr(rp->error, '\0', sizeof rp->error)) abort(); /* messages stay inside their buffer */
    if (rc != PL_OK && !rp->error[0]) abort();              /* every error says what and where */
    if (!memchr(rp->warnings, '\0', sizeof rp->warnings)) abort();
}

/* Snapshot of the outputs, to prove a rejected call left them untouched. */
static int outputs_differ(const fz_case *k, char *const *saved)
{
    for (int i = 0; i < k->call.n_out; i++)
        if (k->outs[i].data && saved[i] && memcmp(saved[i], k->outs[i].data, bytes_of(&k->outs[i]))) return 1;
    return 0;
}

static void run(fz_case *k)
{
    pl_call *c = &k->call;
    memset(&rep, 0, sizeof rep);
    int vrc = pl_validate(c, k->args, k->outs, &k->opt, &rep);
    check_report(vrc, &rep, 1);
    if (k->runner == 5) return;
    char *saved[PL_MAX_OPERANDS] = {0};
    for (int i = 0; i < c->n_out; i++)
        if (k->outs[i].data && (saved[i] = malloc(bytes_of(&k->outs[i]))))
            memcpy(saved[i], k->outs[i].data, bytes_of(&k->outs[i]));
    int rc;
    if (k->runner == 6) rc = pl_check_order(c, k->args, k->outs, &k->opt, k->opt.seed, &rep);
    else if (k->runner == 7) rc = pl_check_dma_modes(c, k->args, k->outs, &k->opt, &rep);
    else rc = pl_pallas_call(c, k->args, k->outs, &k->opt, &rep);
    check_report(rc, &rep, k->runner < 5);
    if (dump) fprintf(stderr, "  -> validate %d, run %d: %s\n", vrc, rc, rep.error);
    if (vrc != PL_OK && rc != vrc) abort();                /* validation runs first, the same way */
    if (vrc != PL_OK && outputs_differ(k, saved)) abort(); /* a rejected call writes nothing */
    for (int i = 0; i < c->n_out; i++) free(saved[i]);
    pl_report_print(&rep, devnull);
    pl_report_json(&rep, devnull);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    memset(&fc, 0, sizeof fc);
    fz_reader r = {data, size, 0};
    decode(&r, &fc);
    if (dump) fz_dump(&fc, stderr);
    run(&fc);
    unlink(trace_path); /* whether or not this call wrote it: nothing is left behind, even after a crash later */
    for (int i = 0; i < fc.n_mem; i++) free(fc.mem[i]);
    return 0;
}
