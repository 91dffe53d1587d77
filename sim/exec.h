/* sim/exec.h: the state of one running call, shared by the executor
 * (exec.c) and its checks (checks.c). Internal. */
#ifndef TILESIM_EXEC_H
#define TILESIM_EXEC_H

#include "blockset.h"
#include "sim.h"
#include "timing.h"

#define MAX_OPS (3 * PL_MAX_OPERANDS)

#define SIM_OP_CACHE 8

/* The time of one block op, remembered (walk.c). */
typedef struct sim_op_memo {
    kern_op op;
    double seconds, padded;
    int valid;
} sim_op_memo;

typedef struct sim_exec {
    sim_plan plan;
    pl_report rep;
    pl_uninit uninit;
    int cost_only;
    pl_ctx ctx;
    int n_refs;                                /* plan.n_ops + scratch */
    pl_ref refs[MAX_OPS + PL_MAX_SCRATCH];     /* templates: data set once or per new block */
    pl_ref kernel_refs[MAX_OPS + PL_MAX_SCRATCH]; /* the copy the kernel may scribble on */
    pl_ref prefetch[PL_MAX_OPERANDS];          /* SMEM copies of the prefetch args (M5) */
    void *scratch_mem[PL_MAX_SCRATCH];
    size_t scratch_bytes[PL_MAX_SCRATCH];
    sim_blockset written[MAX_OPS];             /* per output: block -> write-back step (P5) */
    sim_coreline *cores;                       /* what each TensorCore did, for the timing model */
    int n_alloc_cores;                         /* entries of cores: the chip's cores_per_device */
    int n_cores;                               /* cores walked: > 1 on multi-core chips with a parallel axis (G4) */
    int split_axis;                            /* the axis cut between cores; -1: none */
    int64_t lo[SIM_MAX_CORES], hi[SIM_MAX_CORES]; /* each core's range of split_axis */
    int64_t step_base[SIM_MAX_CORES];          /* global number of each core's first step */
    int core;                                  /* the core walking now */
    int tracing;
    FILE *trace;
    double dot_flops[PL_DTYPE_COUNT];          /* MXU work per dtype */
    pl_step_fn on_step;
    void *on_step_user;
    pl_step_info *info;                        /* what this step did, when on_step is set */

    /* checks (V1, V3, V4) */
    int checks, strict;
    kern_arg args[MAX_OPS + PL_MAX_SCRATCH];   /* ctx.args points here when checks are on */
    sim_blockset writers[MAX_OPS];             /* per output: block -> first step that selected it (V4) */
    uint8_t race_warned[MAX_OPS];              /* a single-core race was reported once for this output (V4) */
    int parallel_axes;                         /* parallel axes of size > 1 */
    int64_t *perm[PL_MAX_GRID];                /* seeded order of each parallel axis; NULL: in order */
    sim_op_memo op_memo[SIM_OP_CACHE];
    int64_t dma_base;                          /* number of this core's first manual copy */
} sim_exec;

/* G4: cut an axis of `size` indices into `cores` contiguous chunks [lo, hi),
 * the first size % cores chunks one index longer (exec.c). */
void sim_split_axis(int64_t size, int cores, int64_t *lo, int64_t *hi);

/* The grid point of a global step (each core's steps follow the previous
 * core's), seeded order applied. */
void sim_point_of_step(const sim_exec *x, int64_t step, int64_t *idx);

/* ---- walk.c ---- */

/* Walk the grid on every core (G1, G4), running the pipeline and the kernel. */
int sim_walk(sim_exec *x);

/* ---- checks.c ---- */

/* Describe every argument to the kernel layer's checks; static race check
 * of declarative output maps (V4). */
int sim_checks_init(sim_exec *x);
/* op took a new block bidx (called after its buffer is filled). */
void sim_checks_new_block(sim_exec *x, const sim_operand *op, const int64_t *bidx);
/* An output block is about to be written back: NaN and never-written checks (V1, P4). */
int sim_checks_writeback(sim_exec *x, const sim_operand *op, int64_t last_step);
/* An output selects bidx at step: two grid points that differ in a parallel
 * axis must not write one block (V4). */
int sim_checks_race(sim_exec *x, const sim_operand *op, const int64_t *bidx, int64_t step);
/* Record a finding in the report (and its warnings). */
void sim_add_finding(pl_report *rep, pl_finding_kind kind, const char *rule, int operand, const int64_t *point,
                     int grid_rank, const int64_t *block, int rank, const char *msg);

#endif
