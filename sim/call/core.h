/* sim/call/core.h: one TensorCore as a value. Internal.
 *
 * A core owns everything a TensorCore has while it walks its part of the
 * grid (G4): a pipeline per operand (pipeline.h) with its VMEM buffers, its
 * scratch and semaphores, its copy of the scalar-prefetch arrays (M5), the
 * kernel's context, and its timeline for the timing model. What it finds
 * (counters, warnings, findings, an error) goes into a report of its own,
 * which sim_core_merge adds to the call's after the walk, in core order:
 * so a call's report does not depend on how its cores were scheduled.
 *
 * Cores share nothing but the call (sim_exec: the plan and the order of the
 * walk, read-only while they run) and the HBM arrays. Two cores of one call
 * may therefore walk on two host threads (walk.c), when nothing makes one
 * core's walk depend on another's (sim_cores_independent, walk.c):
 *
 *     sim_core *k = sim_core_new(x, 1, &x->rep); // core 1's buffers, context, report
 *     ... walk it ...
 *     sim_core_merge(x, k);                    // its counters, warnings, error into x->rep
 *     sim_core_delete(k);
 */
#ifndef TILESIM_CORE_H
#define TILESIM_CORE_H

#include "exec.h"
#include "pipeline.h"

typedef struct sim_core {
    sim_exec *x;                               /* the call; read-only while cores walk */
    int index;
    int64_t steps;                             /* grid points it walks */
    unsigned size_tick;                        /* steps since it last asked sim_host_grown_past */
    int64_t step_base;                         /* global number of its first step */
    int64_t lo[PL_MAX_GRID], hi[PL_MAX_GRID];  /* its box of the grid (G4) */
    int cross_cores;                           /* V4 also looks at the earlier cores' writers (in order only) */
    int met;                                   /* on threads: it stopped at a block another core selected */
    pl_report rep;                             /* what it adds to the call's report */
    double dot_flops[PL_DTYPE_COUNT];          /* MXU work per dtype */
    sim_coreline *line;                        /* its timeline (x->lines[index]) */
    sim_op_memo memo[SIM_OP_CACHE];
    int64_t first_copy;                        /* the number of its first manual copy */

    pl_ctx ctx;                                /* the kernel's context (kernel/context.h) */
    int n_refs;                                /* operands + scratch */
    pl_ref refs[SIM_MAX_OPS + PL_MAX_SCRATCH];     /* templates: data set once or per new block */
    pl_ref kernel_refs[SIM_MAX_OPS + PL_MAX_SCRATCH]; /* the copy the kernel may scribble on */
    pl_ref prefetch[PL_MAX_OPERANDS];          /* SMEM copies of the prefetch args (M5) */
    kern_arg args[SIM_MAX_OPS + PL_MAX_SCRATCH]; /* the checks' table (V1, V3); used when checks are on */
    int checking;                              /* the kernel layer's checks are on */
    sim_pipe pipe[SIM_MAX_OPS];
    void *scratch_mem[PL_MAX_SCRATCH];
    size_t scratch_bytes[PL_MAX_SCRATCH];
} sim_core;

/* Core `index` of the call, with its buffers allocated; NULL when out of
 * host memory (err says so). */
sim_core *sim_core_new(sim_exec *x, int index, pl_report *err);
void sim_core_delete(sim_core *k);
/* Its VMEM, scratch, prefetch copies and context, once it has walked; its
 * report, timeline and the blocks it selected (V4) stay. */
void sim_core_free_buffers(sim_core *k);
/* Add what k found to x->rep: counters, warnings, findings, then its error. */
void sim_core_merge(sim_exec *x, const sim_core *k);
/* Host memory for VMEM buffers and scratch (vmem.c): zeroed pages for
 * cost-only runs, plain memory otherwise. */
void *sim_vmem_alloc(int cost_only, size_t bytes);
void sim_vmem_free(int cost_only, void *p, size_t bytes);

/* ---- checks.c: what hardware hides, per core (V1, V3, V4, P4) ---- */

/* The kernel layer's argument table for k (when checks are on). */
void sim_checks_init(sim_core *k);
/* p took a new block (after its buffer is filled). */
void sim_checks_new_block(sim_core *k, const sim_pipe *p);
/* An output block is about to be written back: NaN and never-written checks. */
int sim_checks_writeback(sim_core *k, const sim_pipe *p, int64_t last_step);
/* An output selects bidx at global step: parallel grid points must not write
 * one block (V4). */
int sim_checks_race(sim_core *k, sim_pipe *p, const int64_t *bidx, int64_t step);
/* The kernel layer's warnings (V3) into k's report. */
void sim_kernel_warning(void *core, int arg, const char *rule, kern_warning what, const char *msg);

#endif
