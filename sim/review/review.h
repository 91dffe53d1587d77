/* sim/review/review.h: the internals of the design review (sim/tilesim_review.h):
 * the kernel jobs (review_jobs.c) that the configurations (review.c) share. */
#ifndef TILESIM_SIM_REVIEW_H
#define TILESIM_SIM_REVIEW_H

#include "../tilesim_review.h"

enum { RV_MATMUL = 0, RV_FLASH = 1, RV_PAGED = 2, RV_ALLREDUCE = 3, RV_KINDS };

/* The job of this kind and dims (matmul M N K wdtype; flash heads S d
 * causal; paged seqs heads dim len dtype; all-reduce devices bytes), added
 * when new: its index, or -1 out of memory. Identical shapes share one job,
 * so one sweep serves every configuration that needs it. */
int rv_job(pl_review_result *r, int kind, int64_t d0, int64_t d1, int64_t d2, int64_t d3, int64_t d4);

/* The shapes of one device's shard at tensor parallelism tp (review_fit.c). */
typedef struct rv_dims {
    int64_t qkv_n, o_k, up_n, down_k, head_n, qheads, kvheads, group; /* per device */
} rv_dims;
rv_dims rv_dims_of(const pl_model *m, int64_t tp);
/* 1 when b's model can be split TP ways on b's chip (review_fit.c); else 0
 * with "illegal: why" in why. */
int rv_tp_ok(const pl_review_brief *b, int64_t tp, char *why, size_t n);
/* 1 when the model splits into `slices` pipeline stages over DCN on b's chip; else 0 with why (M14). */
int rv_slices_ok(const pl_review_brief *b, int64_t slices, char *why, size_t n);
/* Seconds of one hand-off of `bytes` per device between two stages over DCN, at TP degree tp. */
double rv_dcn_handoff_s(const pl_chip *chip, int64_t tp, int64_t bytes);

/* Time every job: the fastest legal tiling of a cost-only sweep over its
 * candidates, all jobs of a kind in one pl_kernel_sweep on every core.
 * PL_OK, or an error with a message (a definition lacks a parameter). */
int rv_jobs_run(pl_review_result *r, const pl_review_brief *b, const pl_review_kernels *k, char *err, size_t n);

#endif
