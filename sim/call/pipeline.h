/* sim/call/pipeline.h: one operand's pipeline on one TensorCore (rules P1-P8).
 * Internal.
 *
 * The plan of an operand (sim_operand, sim.h) is fixed by validation and
 * shared by every core; what changes while a core walks its grid lives in
 * a sim_pipe of that core: its VMEM buffer slots and which one is current,
 * the block now in VMEM, the look-ahead of P8, and the blocks it wrote back
 * (P5) and selected (V4). At each grid point the walk calls
 *
 *     sim_pipe_advance(core, pipe, idx, step);   // P1-P6: copy, skip, write back
 *
 * for every pipelined operand, then runs the kernel; after its last point,
 * sim_pipe_drain writes the last output blocks back (P3). Every copy is
 * recorded into the core's timeline (timing.h) for the timing model.
 */
#ifndef TILESIM_PIPELINE_H
#define TILESIM_PIPELINE_H

#include "blockset.h"
#include "../base/sim.h"
#include "../timing/timing.h"

struct sim_core;

typedef struct sim_pipe {
    const sim_operand *op;         /* its plan (immutable) */
    pl_operand_report *tally;      /* its row in the core's report: copies, bytes, ... */
    sim_opline *line;              /* its copies in the core's timeline */
    char *slots;                   /* buffers x block bytes (prefetch: the whole array, M5) */
    size_t slots_bytes;
    int slot;                      /* current slot */
    int have_block;
    int64_t cur[PL_MAX_RANK];      /* block index now in VMEM */
    sim_window win;                /* its in-bounds part (B5, B6): what copies move */
    /* P8: a map that reads scalar prefetch is evaluated for step n + 1 before
     * kernel n runs, as the pipeline issues that step's copies then */
    int ahead;                     /* ahead_bidx holds the next step's block index */
    int ahead_rc;                  /* its evaluation failed: report at that step */
    int64_t ahead_bidx[PL_MAX_RANK];
    char *ahead_err;               /* the message (malloc'd) when ahead_rc != 0 */
    sim_blockset written;          /* output: block -> global step of its write-back (P5) */
    sim_blockset writers;          /* output: block -> first global step that selected it (V4) */
    uint8_t race_warned;           /* a single-core race was reported once for this output (V4) */
    uint8_t fresh;                 /* a mesh device's output: slots poisoned at the start, not yet used */
    int remote_seen;               /* its slot's remote_written count when the current block was taken (M11) */
} sim_pipe;

/* The sim_exec.remote_written column of p's current slot. */
static inline int sim_remote_slot(const sim_pipe *p) { return p->slot < SIM_REMOTE_SLOTS ? p->slot : SIM_REMOTE_SLOTS - 1; }

/* The buffers of p (its plan's buffers x block, or the prefetch array):
 * PL_OK or PL_ENOMEM with the report's message. sim_pipe_free releases them. */
int sim_pipe_alloc(struct sim_core *k, sim_pipe *p);
void sim_pipe_free(struct sim_core *k, sim_pipe *p);
/* Before the core's first grid point: an empty pipeline; a prefetch operand
 * gets its own copy of the array (M5). */
int sim_pipe_start(struct sim_core *k, sim_pipe *p);
/* Bring p to the block of grid point idx, this core's step `step`. */
int sim_pipe_advance(struct sim_core *k, sim_pipe *p, const int64_t *idx, int64_t step);
/* P8: evaluate the maps that read scalar prefetch at the point after `at`. */
void sim_pipe_look_ahead(struct sim_core *k, const sim_grid_iter *at);
/* After the core's last step (`steps` of them): an output writes its last
 * block back (P3). */
int sim_pipe_drain(struct sim_core *k, sim_pipe *p, int64_t steps);
/* M16: a semaphore output's counts into its array once the core is done (a
 * mesh: once every device is, as others may still signal it): a regular
 * one's are core 0's; a DMA one's, the bytes all cores landed, summed
 * (saturating at INT32_MAX), its array zeroed by sim_pipe_sem_zero first. */
void sim_pipe_sem_out(struct sim_core *k, sim_pipe *p);
void sim_pipe_sem_zero(const sim_operand *op);
/* The buffer slot now current. */
char *sim_pipe_buffer(const sim_pipe *p);

#endif
