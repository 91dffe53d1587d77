/* examples/kernels/paged_attention.h: decode attention over a paged KV cache,
 * the way vLLM-style TPU kernels do it: the key and value pages stay in HBM
 * (memory space ANY, rule T5) and a block table in scalar prefetch (M5) says
 * which pages each sequence owns. One grid point per sequence walks its
 * pages with hand-written double buffering: while page p is being used,
 * page p + 1 is already on its way into the other VMEM slot
 * (pltpu_async_copy, M7), and a DMA semaphore per slot says when it landed
 * (M8). Pages past the sequence's length are never copied; the last page is
 * cut to the length. The softmax is the online one of flash attention.
 *
 *     pa_shape s = {.batch = 4, .heads = 8, .dim = 128, .page = 16, .pages_per_seq = 19, .num_pages = 80};
 *     pa_params p;
 *     pl_call call;
 *     pa_call(&call, &p, &s, PL_F32);
 *     // args: block_tables (batch, pages_per_seq) i32, lengths (batch) i32,
 *     //       q (batch, heads, dim), k_pages and v_pages (num_pages, page, dim)
 *     pl_pallas_call(&call, args, &out, NULL, &rep);   // out: (batch, heads, dim)
 */
#ifndef TILESIM_EXAMPLES_PAGED_ATTENTION_H
#define TILESIM_EXAMPLES_PAGED_ATTENTION_H

#include "../../sim/tilesim.h"

typedef struct pa_shape {
    int64_t batch;          /* sequences, one grid point each */
    int64_t heads;          /* query heads sharing one KV head (a multiple of 8, rule T1) */
    int64_t dim;            /* head dimension (a multiple of 128, rule T1) */
    int64_t page;           /* tokens per page */
    int64_t pages_per_seq;  /* columns of the block table */
    int64_t num_pages;      /* pages in the cache */
} pa_shape;

/* Pages in flight while one is used, at most (PA_MAX_AHEAD). */
#define PA_MAX_AHEAD 16

typedef struct pa_params {
    double scale;           /* 1 / sqrt(dim) (pa_call sets it) */
    int ahead;              /* pages in flight while one is used: 1 (0 too) double-buffers; more hide the
                               DMA latency of short pages; at most PA_MAX_AHEAD. Set before pa_call */
} pa_params;

void pa_kernel(pl_ctx *c, pl_ref *refs);

/* Describe the call: 2 prefetch args, 3 inputs (q in VMEM blocks, k and v
 * pages in ANY), 1 output, and the scratch the kernel needs (p->ahead + 1
 * page slots for k and for v). p must outlive the call. */
void pa_call(pl_call *call, pa_params *p, const pa_shape *s, pl_dtype kv_dtype);

/* The reference on the host, through cblas_sgemm and a softmax in double:
 * out (batch, heads, dim) f32 from f32 copies of q, k_pages, v_pages. */
void pa_reference(const pa_shape *s, const int32_t *tables, const int32_t *lengths, const float *q, const float *k,
                  const float *v, float *out);

/* The cache shape for sequences of these lengths (as many block-table
 * columns as the longest needs, three pages nobody owns), and its block table
 * (batch x pages_per_seq, pages handed out in a scrambled order) and int32
 * lengths: what pa_run and the "paged_attention" definition both use. */
pa_shape pa_shape_for(const int64_t *lengths, int64_t n_seqs, int64_t page, int64_t heads, int64_t dim);
void pa_fill_tables(const pa_shape *s, const int64_t *lengths, int32_t *tables, int32_t *lens);

/* Build a cache for sequences of the given lengths (pages handed out in a
 * scrambled order), run the call (pl_check_dma_modes: eager, then copies
 * landing only at their waits) and compare with pa_reference (pl_allclose).
 * Prints the report and the verdict to f if not NULL. Returns PL_OK,
 * PL_EVERIFY on a wrong result, PL_ERACE when the two DMA modes disagree,
 * or the call's error (in rep->error). */
int pa_run(const int64_t *lengths, int64_t n_seqs, int64_t page, int64_t heads, int64_t dim, pl_dtype dt,
           const pl_options *opt, pl_report *rep, pl_check *chk, FILE *f);
/* pa_run always computes and compares: a cost-only run is the
 * "paged_attention" definition's (pl_kernel_run). pa_host_bytes: host memory
 * a real run over these lengths takes. */
double pa_host_bytes(const int64_t *lengths, int64_t n_seqs, int64_t page, int64_t heads, int64_t dim, pl_dtype dt);

#endif
