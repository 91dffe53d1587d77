/* sim/tilesim_memview.h: the memory viewer of a simulated run, after
 * XProf's memory viewer: VMEM in use over the steps of the run (program
 * order = the grid steps, rule G1), the peak, the step at which it is
 * reached and what is live at it, against the call's scoped VMEM limit and
 * the chip's physical VMEM (M4); and the HBM arrays of the call.
 *
 * The allocations are the VMEM buffer slots of every pipelined operand (one
 * per buffer: two under double buffering, P6), the VMEM scratch buffers
 * (live for the whole kernel, M2). Mosaic's internal scratch is not
 * modelled: internal_scratch_bytes says 0, as the budget counts it. Each
 * allocation has a name,
 * shape, dtype, its logical bytes and its padded bytes as laid out in
 * (sublanes, 128) tiles (T6): the padded bytes are what VMEM holds and what
 * the budget counts.
 *
 * Which slots are live at a step comes from the pipeline itself, recorded
 * step by step through pl_options.on_step: the slot each new block went to
 * (its copy in, P1, or a new output block, P4) and the steps at which it
 * stayed (P2, P3). A slot is live from the step whose prologue issues its
 * copy (P8: up to buffers - 1 steps ahead, never into a slot still in use,
 * as the timing model issues it) to the last step that uses its block; an
 * output slot stays live while its write-back is in flight (until the step
 * that must reuse it, P8). A slot no block ever reached (a second buffer of
 * a block that never changes) stays empty: reserved, never live.
 *
 * The reserved total (every slot and scratch buffer) is exactly the budget
 * validation checks (pl_report.vmem_bytes, M4); the peak of live bytes
 * equals it when every slot is live at once, as in an ordinary double-
 * buffered pipeline, and is lower when some slot never fills or two never
 * overlap (flash attention: q's next block arrives the step before o's next
 * block starts, so q's and o's second slots are never live together).
 *
 * On a chip of several TensorCores per device (G4) each core has its own
 * VMEM: the steps are core 0's, then core 1's, ..., each with its core.
 *
 * Example:
 *
 *     pl_memview mv;
 *     pl_report rep;
 *     if (pl_memview_call(&call, args, outs, NULL, &mv, &rep) != PL_OK) {
 *         fprintf(stderr, "%s\n", mv.error);   // the call's error, or the viewer's
 *     } else {
 *         printf("peak %lld bytes at step %lld\n", (long long)mv.peak_bytes, (long long)mv.peak_step);
 *         pl_memview_print(&mv, stdout);       // the table at the peak
 *         FILE *f = fopen("mem.svg", "w");
 *         pl_memview_svg(&mv, f);              // step chart, limits, peak, legend
 *         fclose(f);
 *     }
 *     pl_memview_free(&mv);
 *
 * To view a run you make yourself (pl_kernel_run, your own pl_pallas_call):
 * pl_memview_recorder(&mv, &opt) before it, pl_memview_finish(&mv, &call,
 * args, outs, &rep) after it.
 *
 * Threads: a pl_memview is one run's: any thread, one at a time.
 */
#ifndef TILESIM_MEMVIEW_H
#define TILESIM_MEMVIEW_H

#include <stdio.h>

#include "tilesim.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pl_mem_kind {
    PL_MEM_SLOT = 0,     /* a buffer slot of a pipelined operand */
    PL_MEM_SCRATCH = 1,  /* a VMEM scratch buffer: live at every step (M2) */
} pl_mem_kind;

/* What an allocation holds at a step. Live (counted in use): INFLIGHT,
 * CURRENT, WRITEBACK, SCRATCH. */
typedef enum pl_slot_state {
    PL_SLOT_EMPTY = 0,     /* reserved, no block has reached it yet (or ever) */
    PL_SLOT_INFLIGHT = 1,  /* input: the copy of a later step's block is in flight into it (P8) */
    PL_SLOT_CURRENT = 2,   /* the block the kernel sees at this step */
    PL_SLOT_WRITEBACK = 3, /* output: its block is on its way to HBM (P3) */
    PL_SLOT_STALE = 4,     /* holds an earlier block nobody needs: free for the pipeline */
    PL_SLOT_SCRATCH = 5,   /* a scratch buffer */
} pl_slot_state;

typedef struct pl_mem_alloc {
    char name[PL_NAME_MAX + 16];  /* "x[0]" (operand x, slot 0), "acc" */
    pl_mem_kind kind;
    int operand;                  /* index into pl_report.op (slots) or pl_report.scratch */
    int slot;                     /* buffer slot, -1 for scratch */
    pl_role role;                 /* PL_ROLE_IN, PL_ROLE_OUT, PL_ROLE_SCRATCH */
    pl_dtype dtype;
    int rank;
    int64_t shape[PL_MAX_RANK];   /* the block (squeezed dims 1) or the scratch shape */
    int64_t bytes;                /* logical */
    int64_t padded_bytes;         /* laid out in tiles (T6): what it takes in VMEM */
    int64_t live_steps;           /* steps at which it is live */
} pl_mem_alloc;

/* One step in program order. */
typedef struct pl_mem_step {
    int core;                     /* the TensorCore (G4) */
    int64_t core_step;            /* its step on that core */
    int64_t idx[PL_MAX_GRID];     /* the grid point */
    int64_t live_bytes;           /* padded bytes of the allocations live at it */
} pl_mem_step;

/* An array of the call in HBM. */
typedef struct pl_mem_hbm {
    char name[PL_NAME_MAX];
    pl_role role;                 /* PL_ROLE_PREFETCH, PL_ROLE_IN, PL_ROLE_OUT */
    pl_dtype dtype;
    int rank;
    int64_t shape[PL_MAX_RANK];
    int64_t bytes;
    int alias_of;                 /* an output aliased to an input (M6): that input's index here; else -1 */
} pl_mem_hbm;

typedef struct pl_memview {
    int status;                   /* PL_OK, or the code of error */
    char error[PL_MSG_MAX];
    char call_name[64], chip_name[32];
    int grid_rank;
    int64_t vmem_limit;           /* the scoped limit (M4) */
    int64_t vmem_physical;        /* the chip's VMEM per TensorCore */
    int64_t reserved_bytes;       /* every slot and VMEM scratch: = pl_report.vmem_bytes (M4) */
    int64_t internal_scratch_bytes; /* 0: not modelled */
    int64_t smem_bytes, smem_physical; /* SMEM (prefetch, SMEM blocks and scratch) and the chip's */
    int64_t peak_bytes;           /* the most live bytes at one step */
    int64_t peak_step;            /* the first step (index into steps) where it is reached */
    int n_allocs;
    pl_mem_alloc *allocs;
    int64_t n_steps;
    pl_mem_step *steps;
    uint8_t *state;               /* pl_slot_state of allocation a at step s: state[s * n_allocs + a] */
    int n_hbm;
    pl_mem_hbm hbm[PL_MAX_CALL_OPERANDS];
    int64_t hbm_bytes;            /* the arrays' bytes, an aliased pair counted once */
    int64_t hbm_physical;         /* the device's HBM */
    void *rec;                    /* the recorder's state between pl_memview_recorder and _finish */
} pl_memview;

/* Run call in cost-only mode (arrays need no data but scalar-prefetch
 * tables; opt's other fields apply, its on_step after the viewer's, but
 * not its trace_path) and
 * fill mv; rep (may be NULL) gets the call's report. Returns PL_OK, the
 * call's code, PL_EINVAL or PL_ENOMEM, with the message in mv->error. At
 * most 2^20 steps are kept: a longer run is PL_EINVAL, said so. mv must be
 * freed with pl_memview_free whatever is returned. */
int pl_memview_call(const pl_call *call, const pl_array *args, const pl_array *outs, const pl_options *opt,
                    pl_memview *mv, pl_report *rep);

/* Zero mv and set opt->on_step to its recorder: run the call with opt next.
 * A recorder opt already had (another tool's) is kept: called after this
 * one at every step, with its own user. PL_OK, PL_EINVAL (a NULL argument),
 * PL_ENOMEM. */
int pl_memview_recorder(pl_memview *mv, pl_options *opt);
/* After that run: build the view from what was recorded, rep (the run's
 * report) and the call's arrays (args: prefetch + inputs; outs). A failed
 * run (rep->status != PL_OK) gives its code and message. */
int pl_memview_finish(pl_memview *mv, const pl_call *call, const pl_array *args, const pl_array *outs,
                      const pl_report *rep);

/* Is allocation a live at step s? 0 outside the ranges. */
int pl_memview_live(const pl_memview *mv, int64_t s, int a);
/* "empty", "in flight", "current", "write-back", "stale", "scratch". */
const char *pl_slot_state_name(pl_slot_state s);

/* Text: the limits, the peak and what is live at it, every allocation, the
 * HBM arrays. JSON: one object (allocations, per-step live bytes and
 * states, peak, limits, HBM). SVG: a self-contained step chart of VMEM over
 * the steps, stacked by allocation, with the scoped limit and physical VMEM
 * as lines, the peak marked and a legend; no scripts. Each returns PL_OK,
 * or PL_EINVAL (a NULL argument, a view without data, a write error). */
int pl_memview_print(const pl_memview *mv, FILE *f);
int pl_memview_json(const pl_memview *mv, FILE *f);
int pl_memview_svg(const pl_memview *mv, FILE *f);

/* Release what mv holds (mv itself is the caller's). NULL: nothing. */
void pl_memview_free(pl_memview *mv);

#ifdef __cplusplus
}
#endif
#endif
