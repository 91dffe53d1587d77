/* sim/tilesim_review.h: the design review of a served model (issue 16):
 * from a model file, a chip and latency targets to the mesh, quantization
 * and batch that serve it, with every figure built from simulated kernels.
 *
 *     pl_model m;
 *     pl_model_load("models/llama3-70b.model", &m, err, sizeof err);   // or *pl_model_find("llama3-70b")
 *     pl_review_brief b = {.model = &m, .chip = pl_chip_find("v7x"), .prompt = 8192, .context = 32768,
 *                          .ttft_s = 0.5, .tpot_s = 0.03, ...lists...};
 *     pl_review_result r;
 *     pl_review_run(&b, &kernels, &r, err, sizeof err);  // kernels: the definitions it times (see below)
 *     ... r.configs[r.best] ...
 *     pl_review_free(&r);
 *
 * The library does the arithmetic (shapes per tensor-parallel shard, HBM
 * capacity, TTFT and TPOT, rooflines, the choice) and times each distinct
 * kernel shape once by a cost-only sweep of the definitions it is given
 * (sim/kdef.h): the built-ins live outside the library, so the caller
 * passes them (examples/kernels/review_defs.h has them). */
#ifndef TILESIM_REVIEW_H
#define TILESIM_REVIEW_H

#include "kdef.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- models ------------------------------------------------------------------ */

typedef enum pl_ffn_kind { PL_FFN_SWIGLU = 0, PL_FFN_GELU = 1 } pl_ffn_kind;

typedef struct pl_model {
    char name[32];
    int64_t layers, d_model, heads, kv_heads, head_dim, ffn, vocab;
    pl_ffn_kind ffn_kind; /* swiglu: up and gate (2 x ffn columns), then down; gelu: up, then down */
    double params;        /* parameter count (HBM capacity; embedding and LM head included) */
} pl_model;

/* The preset named name ("llama3-70b", "llama3-8b"), or NULL. */
const pl_model *pl_model_find(const char *name);
int pl_model_count(void);
const pl_model *pl_model_at(int i);
/* A model from `key = value` lines ('#' comments): name, layers, d_model,
 * heads, kv_heads, head_dim, ffn, ffn_kind (swiglu|gelu), vocab, params
 * (a number, 70.55e9 or 70.55B). Every key but name is required, once.
 * PL_OK, or PL_EINVAL with "where:line: key: message" in err. */
int pl_model_parse(const char *text, const char *where, pl_model *out, char *err, size_t n);
/* The same from a file (at most 64 KiB of text). */
int pl_model_load(const char *path, pl_model *out, char *err, size_t n);

/* ---- what is timed ------------------------------------------------------------ */

/* Weight dtypes: bf16; int8 and fp8 are weight-only quantization (bf16
 * activations; the weights are 1 byte each). int8 needs the chip's int8 MXU
 * path (int8_ops > 0: not v7x), fp8 its fp8 path (fp8_ops > 0: v7x only);
 * pl_review_wdtype_ok is that rule, in one place. */
typedef enum pl_wdtype { PL_W_BF16 = 0, PL_W_INT8 = 1, PL_W_FP8 = 2, PL_W_COUNT } pl_wdtype;
const char *pl_wdtype_name(pl_wdtype w);
int pl_wdtype_parse(const char *s, pl_wdtype *out);
/* 1 when chip serves weights of w; else 0 and why in msg */
int pl_review_wdtype_ok(const pl_chip *chip, pl_wdtype w, char *msg, size_t n);
/* 1 when the review weighs a KV cache of w on chip (bf16 and fp8 always,
 * int8 where int8_ops > 0); else 0 and why in msg. */
int pl_review_kv_ok(const pl_chip *chip, pl_wdtype w, char *msg, size_t n);
/* The KV cache dtype of w: bf16, i8 or f8e4m3. */
pl_dtype pl_review_kv_dtype(pl_wdtype w);

/* The kernels the review times. matmul: params M, N, K, bm, bn, bk, wdtype
 * (a pl_wdtype; activations bf16); flash: sq, skv, d, bq, bk, heads, causal,
 * dtype; paged: batch, heads, dim, page, max_len, kv (the pages' dtype; q
 * and o bf16), every sequence max_len long. allreduce_s: the simulated time of a ring all-reduce of
 * `bytes` per device over `devices` devices (0 < return), or < 0 with err. */
typedef struct pl_review_kernels {
    const pl_kernel_def *matmul, *flash, *paged;
    double (*allreduce_s)(const pl_chip *chip, int devices, double bytes, void *user, char *err, size_t n);
    void *user;
    int threads;                                  /* sweep threads; 0: every core */
    void (*progress)(int done, int total, void *user); /* over all sweeps; NULL: none */
} pl_review_kernels;

/* ---- the review ---------------------------------------------------------------- */

#define PL_REVIEW_MAX_LIST 64

typedef struct pl_review_brief {
    const pl_model *model;
    const pl_chip *chip;
    int64_t prompt, context;     /* P tokens of prompt; conversations grow to C tokens */
    double ttft_s, tpot_s;       /* targets */
    int n_chips, n_quant, n_batch;
    int64_t chips[PL_REVIEW_MAX_LIST];  /* tensor-parallel degrees (one 1 x N ring each) */
    pl_wdtype quant[PL_W_COUNT];
    int64_t batch[PL_REVIEW_MAX_LIST];
    /* KV cache dtypes to weigh (issue 24): bf16, or an 8-bit cache the
     * attention kernel widens in registers (fp8 on every chip; int8 where
     * the chip's MXU has an int8 path, pl_review_kv_ok). n_kv 0: bf16 only. */
    int n_kv;
    pl_wdtype kv[PL_W_COUNT];
    /* Pipeline stages across slices (issue 26, rule M14): a model that one
     * slice cannot hold is split by layers over S slices joined by the
     * data-center network, each slice the TP ring; a decode step passes
     * through the stages in turn, and the activations cross DCN between
     * stages; S micro-batches of the batch are in flight, one a stage
     * (every stage busy). n_slices 0: one slice only. */
    int n_slices;
    int64_t slices[PL_REVIEW_MAX_LIST];
} pl_review_brief;

typedef enum pl_review_verdict {
    PL_RV_BEST = 0, PL_RV_SLOWER, PL_RV_MISS_TPOT, PL_RV_MISS_TTFT, PL_RV_NO_FIT, PL_RV_ILLEGAL
} pl_review_verdict;

/* One step's parts (seconds, per chip; a decode step or a prefill). */
typedef struct pl_review_parts {
    double proj_s;      /* QKV, output, MLP matmuls of one layer */
    double attn_s;      /* flash (prefill) or paged (decode) attention of one layer */
    double comm_s;      /* the layer's two all-reduces */
    double head_s;      /* LM head matmul, once */
    double embed_s;     /* embedding gather (closed form: rows x d_model x 2 B / HBM bandwidth) */
    double dcn_s;       /* the activations between pipeline stages over DCN (closed form, M14); 0: one slice */
    double total_s;     /* layers x (proj + attn + comm) + head + embed + dcn */
    double flops, bytes;/* the ideal work and HBM traffic (roofline) */
    double roof_s;      /* max(flops / peak, bytes / HBM bandwidth) */
} pl_review_parts;

typedef struct pl_review_config {
    int64_t chips, batch;
    pl_wdtype wq;
    pl_dtype kv;        /* the KV cache's dtype (of kvq) */
    pl_wdtype kvq;      /* the KV choice weighed (bf16, int8, fp8) */
    pl_review_verdict verdict;
    char reason[256];
    double weight_bytes, kv_bytes, act_bytes, hbm_bytes; /* per chip; hbm: the chip's capacity */
    pl_review_parts prefill, decode;
    double ttft_s, tpot_s, tok_s_chip;
    int job[16];        /* indexes of its kernel jobs in the result (-1: none) */
    int detail_job;     /* illegal for want of a legal tiling: the job whose error is the full message (the
                           reason is its first line, whole words only); -1: none */
    int64_t slices;     /* pipeline stages, one a slice (1: the TP ring alone); devices = chips x slices */
} pl_review_config;

typedef struct pl_review_job {
    int kind;           /* 0 matmul, 1 flash, 2 paged, 3 allreduce */
    int64_t dims[6];
    double time_s;      /* of the fastest tiling */
    int64_t values[PL_KDEF_MAX_PARAMS]; /* that tiling's parameter values (the definition's order) */
    char label[192];
    int status;         /* PL_OK, or the reason no tiling was legal in error */
    char error[PL_MSG_MAX]; /* the whole message of the last tiling refused (it may span lines) */
} pl_review_job;

typedef struct pl_review_result {
    int n_configs, best;          /* best: index of the recommended configuration, -1: none */
    pl_review_config *configs;
    int n_jobs;
    pl_review_job *jobs;
    int64_t avg_context;          /* (P + C) / 2: TPOT's context */
    int kernel_runs;              /* tilings simulated over all sweeps */
    char bottleneck[512];         /* the best one's, in one sentence */
} pl_review_result;

/* Refuse, in closed form and before any kernel is simulated, a model one of
 * whose kernels fits no configuration of b: its weights at b's largest
 * legal TP degree and narrowest legal weight dtype do not fit the chip's
 * HBM, or the smallest attention blocks the review tries (head_dim whole)
 * do not fit its scoped VMEM limit. PL_OK, or PL_EINVAL with a message
 * naming the kernel, the dimensions and the chip's limit. pl_review_run
 * calls it first. */
int pl_review_check(const pl_review_brief *b, char *err, size_t n);

/* Weigh every configuration of b. PL_OK (r filled; best may be -1 when none
 * meets the targets), or PL_EINVAL / PL_ENOMEM with a message. */
int pl_review_run(const pl_review_brief *b, const pl_review_kernels *k, pl_review_result *r, char *err, size_t n);
void pl_review_free(pl_review_result *r);
const char *pl_review_verdict_name(pl_review_verdict v);

#ifdef __cplusplus
}
#endif
#endif
