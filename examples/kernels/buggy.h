/* examples/kernels/buggy.h: the buggy kernels gallery. Each case is a real
 * kernel (mostly the tiled matmul of matmul.h) with one typical mistake that
 * hardware would hide or turn into wrong numbers, and that tilesim must catch
 * with a message naming the operand, the grid point and the rule of PALLAS.md.
 *
 * The gallery is a table. A case builds its own small arrays (at most about
 * 1 MiB each), runs one pl_pallas_call with the options it is given, frees
 * its memory and returns what the call returned; the report says the rest
 * (rep->error for an error, rep->findings for what the checks found).
 *
 *     const bug_case *bc = bug_find("missing_zero");
 *     pl_options opt = {0};                     // checks on, poison is NaN
 *     pl_report rep;
 *     int rc = bc->run(&opt, &rep);
 *     if (rc != PL_OK) printf("%s: %s\n", pl_strerror(rc), rep.error);
 *     for (int i = 0; i < rep.n_findings && i < PL_MAX_FINDINGS; i++)
 *         printf("rule %s: %s\n", rep.findings[i].rule, rep.findings[i].msg);
 *
 * The cases, one file each (buggy_<class>.c):
 *
 *   missing_zero         the accumulator is never zeroed       V1 finding (M2)
 *   missing_store        the result is never stored            P4 finding
 *   parallel_reduction   k marked parallel                     PL_ERACE before running (V4, G3) on
 *                                                              v5p, the default of these two cases;
 *                                                              a V4 warning on single-core chips
 *   parallel_reduction_fn  the same, function-form output map  PL_ERACE while running
 *   revisit              k outermost in the grid               PL_EREVISIT (P5)
 *   oob_index            a read one row past a Ref             PL_EBOUNDS (V2); NaN finding with
 *                                                              oob_reads = PL_OOB_POISON
 *   read_padding         ragged K read without a mask          V1 finding explained by B6
 *   write_input          the input block scaled in place       V3 finding; PL_EREADONLY if strict
 *
 * Shapes: every matmul case computes o (BUG_M, BUG_N) = x (BUG_M, K) @ y (K,
 * BUG_N) in (BUG_BM, BUG_BN, bk) blocks, with K = BUG_K and bk = BUG_BK,
 * except read_padding (K = BUG_K_RAGGED, bk = BUG_BK_RAGGED, so that the last
 * contraction block hangs over the edge). The grid is (M/bm, N/bn, cdiv(K,
 * bk)), reduction last, except revisit, whose grid is (K/bk, M/bm, N/bn).
 * Operands are named "x", "y", "o" and the scratch "acc", as in matmul.h.
 */
#ifndef TILESIM_EXAMPLES_BUGGY_H
#define TILESIM_EXAMPLES_BUGGY_H

#include "../../sim/tilesim.h"

#define BUG_M 256
#define BUG_N 384
#define BUG_K 256
#define BUG_BM 128
#define BUG_BN 128
#define BUG_BK 128
#define BUG_K_RAGGED 300  /* read_padding: K */
#define BUG_BK_RAGGED 256 /* read_padding: bk; the last block has 44 valid columns */

typedef struct bug_case {
    const char *name; /* "missing_zero" */
    const char *bug;  /* the mistake, in one line */
    const char *rule; /* the rules of PALLAS.md that catch it, main one first ("V1, M2") */
    /* Run the case with opt (NULL: defaults) and fill rep (may be NULL).
     * Returns the status of pl_pallas_call, or PL_ENOMEM if the case could
     * not allocate its arrays. */
    int (*run)(const pl_options *opt, pl_report *rep);
} bug_case;

/* The whole gallery, in a fixed order; *n receives the count. */
const bug_case *bug_cases(int *n);
/* The case named `name`, or NULL. */
const bug_case *bug_find(const char *name);

/* ---- the cases (one file each) -------------------------------------------- */

int bug_run_missing_zero(const pl_options *opt, pl_report *rep);
int bug_run_missing_store(const pl_options *opt, pl_report *rep);
int bug_run_parallel_reduction(const pl_options *opt, pl_report *rep);
int bug_run_parallel_reduction_fn(const pl_options *opt, pl_report *rep);
int bug_run_revisit(const pl_options *opt, pl_report *rep);
int bug_run_oob_index(const pl_options *opt, pl_report *rep);
int bug_run_read_padding(const pl_options *opt, pl_report *rep);
int bug_run_write_input(const pl_options *opt, pl_report *rep);

/* ---- shared by the cases ------------------------------------------------------ */

/* Allocate x (m, k), y (k, n) with fixed pseudo-random f32 values in [-1, 1)
 * and o (m, n), run `call` on them, free them. Returns the call's status (or
 * PL_ENOMEM, with rep filled in). */
int bug_run_matmul(const pl_call *call, int64_t m, int64_t n, int64_t k, const pl_options *opt, pl_report *rep);

/* The matmul call of matmul.h with the given blocks and kernel: grid
 * (cdiv(m, bm), cdiv(n, bn), cdiv(k, bk)), semantics (parallel, parallel,
 * arbitrary), operands x, y, o and scratch acc (bm, bn) f32. Cases mutate
 * what they need. */
pl_call bug_matmul_call(pl_kernel_fn kernel, int64_t m, int64_t n, int64_t k, int64_t bm, int64_t bn, int64_t bk);

/* read_padding's kernel: the matmul with its K edge unmasked, for other shapes (tests). */
void bug_read_padding_kernel(pl_ctx *c, pl_ref *refs);

#endif
