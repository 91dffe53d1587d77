/* sim/tilesim_check.h: is the result right? Reference checks of a call's
 * outputs (rule V5): a matmul against OpenBLAS with an error measure scaled
 * to what rounding explains, any output against a reference with
 * tolerances (pl_allclose), the same as SVG heatmaps per block, the grid
 * points that wrote a wrong element (pl_check_blame), and two replays that
 * must not change a correct kernel's bits: the parallel axes in another
 * order (V4) and copies that land only when waited (M7, M8).
 *
 *     pl_check chk;
 *     if (pl_check_matmul_call(&call, &args[0], &args[1], &out, &chk, stdout) != PL_OK)
 *         fprintf(stderr, "wrong: %s\n", chk.blame);
 *
 * sim/tilesim.h includes this header, so a program that includes only
 * tilesim.h has all of it. This header names pl_array, pl_call, pl_options
 * and pl_report without including tilesim.h (no include cycle): a program
 * that builds those includes tilesim.h, in either order.
 *
 * Lifetimes: the checks read the arrays they are given during the call and
 * keep no pointer; a pl_check is a plain value. Threads: several checks
 * may run at once on different arrays. pl_check_order and
 * pl_check_dma_modes run the call, with pl_pallas_call's threads and
 * callbacks.
 */
#ifndef TILESIM_CHECK_H
#define TILESIM_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif
/* defined in sim/tilesim.h (a typedef may be repeated, in C11 and C++) */
typedef struct pl_array pl_array;
typedef struct pl_call pl_call;
typedef struct pl_options pl_options;
typedef struct pl_report pl_report;
#ifdef __cplusplus
}
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- reference checks (rule V5) --------------------------------------------- */

typedef enum pl_verdict { PL_PASS = 0, PL_MARGINAL = 1, PL_FAIL = 2 } pl_verdict;

typedef struct pl_check {
    pl_verdict verdict;
    double max_abs_err;   /* max |C - ref| */
    double norm_err;      /* max |C - ref| / (u * sum_k |a_ik| |b_kj|), u the unit roundoff */
    double pass_below;    /* norm_err thresholds used */
    double fail_above;
    int64_t worst_row, worst_col; /* the worst element (for rank > 2 in pl_allclose: row = index / last dim) */
    int64_t n_nan;        /* NaN or inf in C where the reference is finite */
    char blame[256];      /* with a call: the output block of the worst element and the grid points that wrote it */
} pl_check;

/* Compare c (m x n) with a @ b computed by cblas_sgemm (bf16 and f16 widened
 * to f32, exactly). If f is not NULL, print one BLIS-style verdict line.
 * Returns PL_OK when the verdict is PASS or MARGINAL, PL_EVERIFY on FAIL,
 * PL_EINVAL / PL_ESHAPE / PL_ENOMEM on bad arguments (a, b, c float arrays
 * of rank 2 with data; a line saying so on f). out may be NULL. Its work
 * arrays (a few times the size of a, b and c) are freed before it returns. */
int pl_check_matmul(const pl_array *a, const pl_array *b, const pl_array *c, pl_check *out, FILE *f);
/* The same, and when the verdict is not PASS, name the output block (of
 * call->out[0]) holding the worst element and the grid points that wrote it
 * in out->blame (see pl_check_blame, which may run call's index map). call
 * NULL: as pl_check_matmul. */
int pl_check_matmul_call(const pl_call *call, const pl_array *a, const pl_array *b, const pl_array *c, pl_check *out,
                         FILE *f);

/* ---- references for a kernel definition (a plugin's `reference` calls these) ---- */

/* out = op(a) @ op(b), op(x) = x, or x transposed when trans_x is 1: op(a)
 * (m, k), op(b) (k, n), out (m, n); rank-2 arrays of any dtype of whole
 * bytes (bf16, f16, fp8 and int8 widen exactly to f32), multiplied by
 * cblas_sgemm with f32 accumulation and each element rounded to out's dtype
 * once. PL_OK, or PL_ESHAPE / PL_EINVAL / PL_ENOMEM with a message in msg
 * (n bytes; msg may be NULL). Inside host threads of your own, set
 * OpenBLAS to one thread. */
int pl_ref_matmul(const pl_array *a, const pl_array *b, int trans_a, int trans_b, pl_array *out, char *msg,
                  size_t n);
/* Check got against op(a) @ op(b) as pl_check_matmul does (the normalised
 * error |C - ref| / (u * sum |a||b|), thresholds by the contraction
 * length), op transposing an operand when trans_x is 1: for an output that
 * is a dot, where a tolerance of the dtype is either too loose or fails a
 * correct long accumulation. Returns as pl_check_matmul. */
int pl_check_dot(const pl_array *got, const pl_array *a, const pl_array *b, int trans_a, int trans_b, pl_check *out,
                 FILE *f);
/* Softmax over the last dimension of x into out (same shape), in double. */
int pl_ref_softmax(const pl_array *x, pl_array *out, char *msg, size_t n);
/* RMSNorm over the last dimension: out = x / sqrt(mean(x^2) + eps) * gamma
 * (gamma: the last dimension's size, or NULL for 1), in double. */
int pl_ref_rmsnorm(const pl_array *x, const pl_array *gamma, double eps, pl_array *out, char *msg, size_t n);
/* LayerNorm over the last dimension: (x - mean) / sqrt(var + eps) * gamma +
 * beta (either NULL: 1 and 0), the population variance, in double. */
int pl_ref_layernorm(const pl_array *x, const pl_array *gamma, const pl_array *beta, double eps, pl_array *out,
                     char *msg, size_t n);

/* Which block of output `out` of call holds element elem (arr->rank
 * indices), and which grid points select it (so wrote it), in words, into
 * buf (n bytes). A function-form map of a call with scalar prefetch is not
 * called (it may read the block table): then only the block is named.
 * Otherwise the map is called for every grid point, on the calling thread,
 * with prefetch NULL. Returns PL_OK, or PL_EINVAL (a NULL pointer, n 0, out
 * not an output of call, elem outside arr, a block size below 1). */
int pl_check_blame(const pl_call *call, int out, const pl_array *arr, const int64_t *elem, char *buf, size_t n);

/* Compare any two arrays of one shape elementwise: |got - want| <= atol +
 * rtol |want|. rtol = atol = 0 (or either negative) picks tolerances for
 * the dtype (f32 1e-5 / 1e-6, bf16 1.6e-2 / 1e-2, f16 2e-3 / 1e-3; integers
 * exact). The dtypes may differ: values compare as doubles. norm_err is the
 * worst error over its tolerance: PASS <= 1, MARGINAL <= 4, else FAIL. NaN
 * matches only NaN. f and out may be NULL. Returns PL_OK, PL_EVERIFY on
 * FAIL, PL_ESHAPE (shapes differ, a NULL array or data). */
int pl_allclose(const pl_array *got, const pl_array *want, double rtol, double atol, pl_check *out, FILE *f);

/* Draw the normalised error of c against a @ b, worst per (bm, bn) block, as
 * an SVG heatmap at path. msg receives a one-line result or the error (with
 * the system's reason when path cannot be written); msglen bytes, not NULL
 * unless msglen is 0. Returns PL_OK when the verdict is PASS or MARGINAL,
 * PL_EVERIFY on FAIL (the heatmap is written either way), PL_EINVAL (bad
 * arguments, an unwritable path), PL_ESHAPE, PL_ENOMEM. */
int pl_check_heatmap(const pl_array *a, const pl_array *b, const pl_array *c, int64_t bm, int64_t bn, const char *path,
                     char *msg, size_t msglen);

/* The same heatmap for any output: the worst pl_allclose error (|got -
 * want| over atol + rtol |want|; 0, 0: the dtype's tolerances) per (bm, bn)
 * block of got (rank > 2 flattened: rows are all but the last dimension),
 * with numbered row and column blocks and a legend of the colour steps
 * (viridis, readable with colour-blindness). Returns like pl_check_heatmap;
 * msg may be NULL. */
int pl_allclose_heatmap(const pl_array *got, const pl_array *want, int64_t bm, int64_t bn, double rtol, double atol,
                        const char *path, char *msg, size_t msglen);

/* A missing wait (M7, M8): run the call with manual copies moving their data
 * at start (eager) into outs, then only when waited (on_wait) into scratch
 * copies, and compare bit for bit. A kernel that reads a buffer before
 * waiting for its copy gets different data in the two modes. Returns PL_OK,
 * PL_ERACE when the results differ (report->error names the element, its
 * block and output), or the call's own error. opt->dma_mode is overridden;
 * only the first run writes opt->trace_path; on_step sees both runs. The
 * report is the first run's (the second's if that one fails); report may
 * be NULL. In cost-only mode only the first run happens. Arguments,
 * lifetimes and threads as pl_pallas_call. */
int pl_check_dma_modes(const pl_call *call, const pl_array *args, pl_array *outs, const pl_options *opt,
                       pl_report *report);

/* Order-dependence (V4): run the call into outs, then again with the
 * parallel axes visited in the order seed shuffles them into (seed 0: a
 * fixed default) into scratch copies, and compare bit for bit. Returns
 * PL_OK, PL_ERACE when the results differ (report->error names the first
 * differing element, its block and output), or the call's own error.
 * opt->seed is overridden (the first run is in grid order); trace, on_step
 * and report as pl_check_dma_modes. */
int pl_check_order(const pl_call *call, const pl_array *args, pl_array *outs, const pl_options *opt, uint64_t seed,
                   pl_report *report);

/* "PASS", "MARGINAL", or "FAIL" for anything else: a static string. */
const char *pl_verdict_name(pl_verdict v);

#ifdef __cplusplus
}
#endif
#endif
