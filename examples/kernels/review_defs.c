/* examples/kernels/review_defs.c: the definitions and the all-reduce that
 * `tilesim review` times (review_defs.h says what each models). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kdef_util.h"
#include "registry.h"
#include "paged_attention.h"
#include "review_defs.h"
#include "ring_allreduce.h"

/* ---- review_matmul ------------------------------------------------------------ */

enum { R_M, R_N, R_K, R_BM, R_BN, R_BK, R_WQ };

typedef struct rmm_params {
    int64_t k; /* the contraction length, to mask the ragged last block (B6) */
} rmm_params;

/* refs: x, w, o, acc (f32), and wb (bf16) when w is 8-bit */
static void rmm_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_ref x = refs[0], w = refs[1], o = refs[2], acc = refs[3];
    const rmm_params *p = pl_kernel_user(c);
    int64_t k = pl_program_id(c, 2), nk = pl_num_programs(c, 2);
    if (k == 0) pl_fill(c, acc, 0.0);
    int64_t bk = x.shape[1], valid = p->k - k * bk;
    if (w.dtype != PL_BF16) { /* dequantize the 8-bit block in VMEM */
        pl_copy(c, refs[4], w);
        w = refs[4];
    }
    if (valid < bk) {
        x = pl_ds(c, x, 1, 0, valid);
        w = pl_ds(c, w, 0, 0, valid);
    }
    pl_dot(c, acc, x, w, PL_DOT_ACC);
    if (k == nk - 1) pl_copy(c, o, acc);
}

static int rmm_check(const int64_t *v, char *msg, size_t n)
{
    for (int i = R_M; i <= R_BK; i++)
        if (v[i] < 1) {
            snprintf(msg, n, "review_matmul: %s = %lld must be >= 1", ex_def_review_matmul.params[i].name,
                     (long long)v[i]);
            return PL_EINVAL;
        }
    if (v[R_WQ] != PL_BF16 && v[R_WQ] != PL_I8 && v[R_WQ] != PL_F8E4M3) {
        snprintf(msg, n, "review_matmul: wdtype = %s must be bf16, i8 or f8e4m3", pl_dtype_name((pl_dtype)v[R_WQ]));
        return PL_EINVAL;
    }
    return PL_OK;
}

static int rmm_build(const int64_t *v, pl_kernel_build *b, char *msg, size_t n)
{
    int rc = rmm_check(v, msg, n);
    if (rc != PL_OK) return rc;
    int64_t m = v[R_M], nn = v[R_N], k = v[R_K], bm = v[R_BM], bn = v[R_BN], bk = v[R_BK];
    pl_dtype wt = v[R_WQ] == PL_BF16 ? PL_BF16 : PL_I8; /* 8-bit weights are bytes, dequantized in VMEM */
    ((rmm_params *)b->param)->k = k;
    b->call = (pl_call){
        .name = "review_matmul", .kernel = rmm_kernel, .user = b->param, .grid_rank = 3,
        .grid = {ex_cdiv(m, bm), ex_cdiv(nn, bn), ex_cdiv(k, bk)},
        .semantics = {PL_PARALLEL, PL_PARALLEL, PL_ARBITRARY},
        .n_in = 2, .in = {PL_BLOCK(PL_MAP(0, 2), bm, bk), PL_BLOCK(PL_MAP(2, 1), bk, bn)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, 1), bm, bn)},
        .n_scratch = wt == PL_BF16 ? 1 : 2,
        .scratch = {PLTPU_VMEM(PL_F32, bm, bn), PLTPU_VMEM(PL_BF16, bk, bn)},
    };
    b->call.in[0].name = "x", b->call.in[1].name = "w", b->call.out[0].name = "o";
    b->call.scratch[0].name = "acc", b->call.scratch[1].name = "wb";
    b->n_args = 2;
    b->args[0] = PL_ARRAY(NULL, PL_BF16, m, k);
    b->args[1] = PL_ARRAY(NULL, wt, k, nn);
    b->n_outs = 1;
    b->outs[0] = PL_ARRAY(NULL, PL_BF16, m, nn);
    return PL_OK;
}

static double rmm_flops(const int64_t *v) { return 2.0 * v[R_M] * (double)v[R_N] * v[R_K]; }
static double rmm_bytes(const int64_t *v)
{
    double wb = v[R_WQ] == PL_BF16 ? 2 : 1;
    return 2.0 * v[R_M] * v[R_K] + wb * v[R_K] * v[R_N] + 2.0 * v[R_M] * v[R_N];
}

static const int64_t rblk[] = {256, 512, 1024};

const pl_kernel_def ex_def_review_matmul = {
    .name = "review_matmul", .summary = "a projection x @ W, W bf16 or 8-bit dequantized in VMEM (tilesim review)",
    .n_params = 7,
    .params = {{.name = "M", .def = 512, .help = "rows of x (tokens)"},
               {.name = "N", .def = 512, .help = "columns of W (the shard's outputs)"},
               {.name = "K", .def = 512, .help = "the contraction length"},
               {.name = "bm", .def = 256, .candidates = rblk, .n_candidates = 3, .help = "rows per block"},
               {.name = "bn", .def = 256, .candidates = rblk, .n_candidates = 3, .help = "columns per block"},
               {.name = "bk", .def = 256, .candidates = rblk, .n_candidates = 3, .help = "contraction per step"},
               {.name = "wdtype", .kind = PL_PARAM_DTYPE, .def = PL_BF16,
                .help = "weights: bf16, i8 or f8e4m3 (8-bit, a byte each)"}},
    .check = rmm_check, .build = rmm_build, .flops = rmm_flops, .bytes = rmm_bytes,
};

/* ---- review_paged --------------------------------------------------------------- */

enum { A_BATCH, A_HEADS, A_DIM, A_PAGE, A_MAXLEN, A_LSEED, A_DT, A_KV, A_AHEAD };

static int rpa_build(const int64_t *v, pl_kernel_build *b, char *msg, size_t n)
{
    if (v[A_BATCH] < 1 || v[A_BATCH] > 4096) {
        snprintf(msg, n, "review_paged: batch = %lld must be 1 to 4096", (long long)v[A_BATCH]);
        return PL_EINVAL;
    }
    int64_t *len = malloc(sizeof *len * (size_t)v[A_BATCH]);
    if (!len) return PL_ENOMEM;
    for (int64_t i = 0; i < v[A_BATCH]; i++) len[i] = v[A_MAXLEN];
    pl_dtype kv = (pl_dtype)v[A_KV];
    int rc = PL_OK;
    if (kv != PL_I8 && kv != PL_F8E4M3 && kv != (pl_dtype)v[A_DT]) {
        snprintf(msg, n, "review_paged: kv = %s must be %s (the dtype's) or an 8-bit cache, i8 or f8e4m3",
                 pl_dtype_name(kv), pl_dtype_name((pl_dtype)v[A_DT]));
        rc = PL_EINVAL;
    }
    if (rc == PL_OK && (v[A_AHEAD] < 1 || v[A_AHEAD] > PA_MAX_AHEAD)) {
        snprintf(msg, n, "review_paged: ahead = %lld must be 1 to %d pages", (long long)v[A_AHEAD], PA_MAX_AHEAD);
        rc = PL_EINVAL;
    }
    if (rc == PL_OK) rc = ex_paged_build_kv(v, len, kv, (int)v[A_AHEAD], b, msg, n);
    free(len);
    return rc;
}

static double rpa_flops(const int64_t *v) { return 4.0 * v[A_BATCH] * (double)v[A_HEADS] * v[A_DIM] * v[A_MAXLEN]; }
static double rpa_bytes(const int64_t *v)
{
    double es = (double)pl_dtype_size((pl_dtype)v[A_DT]), kv = (double)pl_dtype_size((pl_dtype)v[A_KV]);
    return v[A_BATCH] * (2.0 * es * v[A_HEADS] * v[A_DIM] + 2.0 * kv * v[A_MAXLEN] * v[A_DIM]);
}

const pl_kernel_def ex_def_review_paged = {
    .name = "review_paged", .summary = "paged_attention with every sequence max_len long (tilesim review)",
    .n_params = 9,
    .params = {{.name = "batch", .def = 4, .help = "sequences (x KV heads), one grid point each"},
               {.name = "heads", .def = 8, .help = "query heads sharing a KV head (a multiple of 8)"},
               {.name = "dim", .def = 128, .help = "head dimension (a multiple of 128)"},
               {.name = "page", .def = 128, .candidates = (const int64_t[]){64, 128, 256, 512}, .n_candidates = 4,
                .help = "tokens per page"},
               {.name = "max_len", .def = 300, .help = "every sequence's length"},
               {.name = "lengths_seed", .def = 1, .help = "unused (every length is max_len)"},
               {.name = "dtype", .kind = PL_PARAM_DTYPE, .def = PL_BF16, .help = "of q and o: f32 or bf16"},
               {.name = "kv", .kind = PL_PARAM_DTYPE, .def = PL_BF16,
                .help = "of the KV pages: the dtype's, or i8 or f8e4m3 (widened in registers)"},
               {.name = "ahead", .def = 1, .candidates = (const int64_t[]){1, 2, 4, 8}, .n_candidates = 4,
                .help = "pages in flight while one is used (1: double-buffered)"}},
    .build = rpa_build, .flops = rpa_flops, .bytes = rpa_bytes,
};

/* ---- the all-reduce --------------------------------------------------------------- */

/* one chunk of `bytes` per device through the simulated ring */
static double ring_chunk_s(const pl_chip *chip, int devices, double bytes, char *err, size_t n)
{
    int64_t quantum = 16 * (int64_t)devices; /* rows: 2 N half shards of 8 f32 rows */
    int64_t rows = ex_cdiv(ex_cdiv((int64_t)(bytes / 4 + 0.5), 128), quantum) * quantum;
    ar_shape s = {.devices = devices, .rows = rows, .cols = 128};
    if (ar_shape_check(&s, err, n) != PL_OK) return -1;
    pl_mesh mesh;
    char text[32];
    snprintf(text, sizeof text, "ring:%d", devices);
    if (pl_mesh_parse(text, &mesh, err, n) != PL_OK) return -1;
    ar_data d;
    if (ar_alloc(&d, &s, 0, 42) != PL_OK) return snprintf(err, n, "out of host memory"), -1;
    pl_call call;
    ar_call(&call, &s, NULL);
    pl_options opt = {.chip_spec = chip, .cost_only = 1};
    pl_mesh_report mr;
    int rc = pl_mesh_call(&mesh, &call, d.args, d.outs, &opt, &mr, NULL);
    ar_free(&d);
    if (rc != PL_OK) return snprintf(err, n, "ring all-reduce over %d devices: %s", devices, mr.error), -1;
    return mr.time_s;
}

double ex_review_allreduce_s(const pl_chip *chip, int devices, double bytes, void *user, char *err, size_t n)
{
    (void)user;
    if (devices < 2 || bytes <= 0) return 0;
    double chunk_max = 2.0 * devices * 1024 * 1024;
    double chunks = bytes > chunk_max ? (double)ex_cdiv((int64_t)bytes, (int64_t)chunk_max) : 1;
    double t = ring_chunk_s(chip, devices, bytes / chunks, err, n);
    return t < 0 ? t : t * chunks;
}

pl_review_kernels ex_review_kernels(void)
{
    return (pl_review_kernels){.matmul = &ex_def_review_matmul, .flash = &ex_def_flash,
                               .paged = &ex_def_review_paged, .allreduce_s = ex_review_allreduce_s};
}
