/* sim/base/sim.h: internals shared by the stages of a call. Not part of the
 * public API.
 *
 * A call goes through these stages, one file each:
 *   validate.c  sim_plan_call: check the call, resolve each operand into a plan
 *   maps.c      index maps: checked before running, evaluated at each step
 *   exec.c      pl_pallas_call: allocate, order the walk, time it (exec.h)
 *   walk.c      the grid walk, per TensorCore (core.c), in order or on threads
 *   pipeline.c  one operand's pipeline on one core: copies, write-backs (P1-P8)
 *   window.c    copy a block between HBM and a VMEM buffer, poison
 *   checks.c    what hardware hides: NaN, unwritten blocks, races (V1-V4)
 *   timing.c    the discrete-event model (timing.h); oplog.c prices the kernel's
 *               op log into it, records.c keeps what the walk records;
 *               analyze.c the bound
 *   trace.c, report.c, verify.c, order.c, sweep.c, chips.c
 * All state of a call lives in one sim_exec value: no globals, so calls may
 * run on several host threads at once (pl_sweep does).
 */
#ifndef TILESIM_SIM_H
#define TILESIM_SIM_H

#include "../../kernel/context.h"
#include "common.h" /* limits, sim_fail, sim_warn, sim_format_idx, the grid iterator */
#include "../tilesim.h"

/* One operand of the call, resolved: what the pipeline needs at each step.
 * Fixed by validation and shared by every TensorCore of the call; what a
 * core's pipeline changes as it walks is in its sim_pipe (pipeline.h). */
typedef struct sim_operand {
    pl_role role;
    int index;                     /* within its role */
    int arg;                       /* kernel argument position (M3) */
    const pl_array *arr;           /* the caller's HBM array */
    pl_memspace space;
    int rank;                      /* the array's rank */
    int64_t block[PL_MAX_RANK];    /* block elements per dim (squeezed: 1) */
    uint8_t squeezed[PL_MAX_RANK]; /* B4: index is an element index */
    uint8_t element[PL_MAX_RANK];  /* B5: index is an element offset into the padded array */
    int64_t pad_lo[PL_MAX_RANK];   /* B5 padding before the array */
    int aliased;                   /* output sharing an input's HBM buffer (M6); input: read from it */
    int revisit_any;               /* output: RevisitMode.ANY, a revisited block is fetched back (P5) */
    int sem_dma;                   /* space SEMAPHORE: DMA semaphores (PL_SEMAPHORE_DMA, M16), else regular */
    pl_array shared;               /* M6: the buffer both sides use */
    int64_t nblocks[PL_MAX_RANK];  /* legal block indices per dim (B7) */
    pl_index_map map;              /* fn or declarative; zero map when n == 0 */
    int pipelined;                 /* has VMEM/SMEM buffers fed by the index map */
    int buffers;                   /* buffer slots */
    int64_t block_elems;
    size_t elem_size;
    pl_ref ref;                    /* template handed to the kernel (squeezed dims dropped) */
    pl_operand_report *rep;        /* its row in the call's report: name, static figures */
    /* sim_window_plan: a block inside the array, indexed by blocks in every
     * dim, has these bytes and runs wherever it is (sim_window_of's fast way) */
    int plain_blocks;
    int64_t whole_bytes, whole_row_bytes;
} sim_operand;

typedef struct sim_plan {
    const pl_chip *chip;
    const pl_call *call;
    int n_ops;
    sim_operand ops[SIM_MAX_OPS];
    int64_t steps;
    int cost_only;                 /* arrays may have no data */
    int oob_poison;                /* V2: input blocks past the array read poison instead of failing B7 */
    int checks, strict;            /* the options' V1-V4 checks on, and warnings as errors */
    int64_t vmem_limit;            /* the options' scoped limit, in place of the call's; 0: the call's (M4) */
} sim_plan;

/* P6: does op's index map select one block at every grid point? Then one
 * buffer suffices (automatic single buffering; buffering.c). */
int sim_block_never_changes(const sim_plan *plan, const sim_operand *op);

/* Validate the call and fill plan and the static parts of rep (rules B1-B3,
 * T1-T7, M3, M4, P6, P7). */
int sim_plan_call(const pl_call *call, const pl_array *args, const pl_array *outs, const pl_options *opt,
                  sim_plan *plan, pl_report *rep);

/* verify.c: pl_allclose's element errors (|got - want| over its tolerance,
 * INFINITY for a NaN/inf mismatch) into a malloc'd *err (err NULL: none);
 * rtol and atol are replaced by the ones used. PL_OK, PL_ESHAPE, PL_ENOMEM. */
int sim_allclose_errors(const pl_array *got, const pl_array *want, double *rtol, double *atol, double **err,
                        pl_check *out);
/* verify.c: x's elements as floats (every float dtype and int8 widen exactly), |x| with take_abs; NULL when out of
 * memory. The caller frees it. */
float *sim_widen(const pl_array *x, int take_abs);
/* verify.c: the matmul check's arguments (a (m,k), b (k,n), c (m,n) float
 * arrays): PL_OK, PL_EINVAL or PL_ESHAPE; and the normalised error of every
 * element of c against a @ b (OpenBLAS) into a malloc'd *err, with the
 * verdict in *r. Shared by pl_check_matmul and pl_check_heatmap. */
int sim_matmul_args(const pl_array *a, const pl_array *b, const pl_array *c);
int sim_matmul_errors(const pl_array *a, const pl_array *b, const pl_array *c, double **err, pl_check *r);
/* heatmap.c: the worst err per (bm, bn) block of an m x n output as an SVG
 * at path, with block labels and a legend by r's thresholds. PL_OK or
 * PL_EINVAL (the path cannot be written) with msg set either way. */
int sim_heatmap_write(const char *path, const double *err, int64_t m, int64_t n, int64_t bm, int64_t bn,
                      const char *what, const pl_check *r, char *msg, size_t msglen);

/* Index maps before running (maps.c): a zero map; a declarative map's
 * entries (B2) and range (B7); outputs shared by parallel points (V4). */
int sim_map_is_zero(const pl_index_map *m);
int sim_check_map(const sim_plan *plan, const sim_operand *op, pl_report *rep);
int sim_check_map_range(const sim_plan *plan, const sim_operand *op, pl_report *rep);
int sim_check_races(const sim_plan *plan, pl_report *rep);
/* V4: grid points p0 and p1 differ in parallel axis `axis` yet write block blk
 * of output op (why: how that was found, may be ""). A race only where they can
 * run on different TensorCores: PL_ERACE on multi-core chips (and under strict);
 * on one core a warning and a finding, PL_OK (exec.c). */
int sim_race(const sim_plan *plan, pl_report *rep, const sim_operand *op, const int64_t *p0, const int64_t *p1,
             int axis, const int64_t *blk, const char *why);

/* Evaluate op's index map at grid point idx into bidx, checking rule B7.
 * prefetch: the scalar-prefetch refs. */
int sim_eval_map(const sim_plan *plan, const sim_operand *op, const int64_t *idx, const pl_ref *prefetch,
                 int64_t *bidx, pl_report *rep);
/* The same, with the message in err instead of the report. */
int sim_map_eval(const sim_plan *plan, const sim_operand *op, const int64_t *idx, const pl_ref *prefetch,
                 int64_t *bidx, char *err, size_t errlen);
/* A map by grid axes (no function) at grid point idx: its block indices
 * into bidx, and 1 when every one lies inside the array (B7), the answer
 * sim_map_eval would give. 0 for a function map or an index outside: ask
 * sim_map_eval. Inline: the walk evaluates a map per operand and step. */
static inline int sim_map_axes(const sim_operand *op, const int64_t *idx, int64_t *bidx)
{
    const pl_index_map *m = &op->map;
    if (m->fn) return 0;
    int inside = 1;
    for (int d = 0; d < op->rank; d++) {
        bidx[d] = (m->n == 0 || m->axis[d] == PL_ZERO) ? 0 : idx[m->axis[d]];
        inside &= bidx[d] >= 0 && bidx[d] < op->nblocks[d];
    }
    return inside;
}

/* The in-bounds part of a block: array elements [start, start+count) per
 * dim, at offset boff in the block buffer (nonzero only under B5's low
 * padding). The one place that computes it (window.c): the pipeline keeps
 * the window of each operand's current block (pipeline.h). */
typedef struct sim_window {
    int64_t start[PL_MAX_RANK], count[PL_MAX_RANK], boff[PL_MAX_RANK];
    int clipped;                   /* narrower than the block: an edge (B6) or padding (B5) */
    int64_t bytes;                 /* in-bounds bytes: what a copy of the block moves */
    int64_t row_bytes;             /* its contiguous runs in HBM: the DMA's row (its efficiency, docs/CHIPS.md) */
} sim_window;
void sim_window_of(const sim_operand *op, const int64_t *bidx, sim_window *w);
/* Fill op's plain_blocks, whole_bytes and whole_row_bytes (after its block and elem_size). */
void sim_window_plan(sim_operand *op);

/* Copy between HBM and a VMEM block buffer; only the window moves (copy-in
 * poisons the rest, V1). Returns the bytes moved. */
int64_t sim_copy_in(const sim_operand *op, const sim_window *w, void *buf, pl_uninit uninit);
int64_t sim_copy_out(const sim_operand *op, const sim_window *w, const void *buf);

/* Fill n elements with the dtype's poison (V1): NaN, the integer maximum, or zero. */
void sim_poison(void *p, pl_dtype t, int64_t n, pl_uninit uninit);

/* P10, after the walk (coverage.c): output blocks no grid point selects
 * become a finding (an error under strict), naming the first of them. */
int sim_check_coverage(const sim_plan *plan, int strict, pl_report *rep);

/* Refuse a real run whose simulated VMEM, SMEM and prefetch copies cannot
 * fit in host memory (host.c): PL_ENOMEM with the bytes it would take. */
int sim_host_check(const sim_plan *plan, pl_report *rep);
/* Would `copies` cores' buffers at once fit? 0 if so (host.c; the walk runs
 * cores on threads only then). */
int sim_host_check_copies(const sim_plan *plan, int copies);
/* Has this process grown past what it may hold (host.c): what it held when
 * a walk first asked, and three quarters of the host memory it may take
 * besides (TILESIM_HOST_MEMORY caps that)? A walk asks after `steps` grid
 * steps (64); sampled once in 4096 steps over all walks; 1 with the
 * resident bytes and the limit. The
 * estimates before a run cannot see everything (a cost-only mesh's
 * records, a trace's): this stops a run before Linux kills it. */
int sim_host_grown_past(unsigned steps, double *rss, double *limit);
/* pl_host_memory_available as this process first read it (what the op
 * log's cap and the size watch above are taken from); INFINITY: unknown. */
double sim_host_memory_once(void);

/* The one bound rule (bound.c): fill r->busy from the timed report (and
 * its op profile), pick the resource busy longest, and write the busy line
 * ("HBM 99.5%, MXU 42.8%, ...", largest first) into buf; returns how many
 * resources it names. */
void sim_bound_busy(pl_report *r);
pl_bound sim_bound_pick(const double *busy);
int sim_bound_busy_line(const pl_report *r, char *buf, size_t n);
/* "  ideal: ... efficiency 42.8%": a definition's ideal against the run
 * (report.c); nothing when unknown. */
void sim_report_ideal_line(const pl_report *r, FILE *f);
/* "busy":{"MXU":0.43,...}: every resource's fraction, as a JSON member. */
void sim_bound_busy_json(const pl_report *r, FILE *f);

#endif
