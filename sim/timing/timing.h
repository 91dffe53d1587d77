/* sim/timing/timing.h: the discrete-event timing model (rules P6, P8, P9).
 *
 * The functional walk records, per TensorCore, what each grid step did: its
 * compute time (from the block ops) and, per pipelined operand, the copies
 * into VMEM it needed and the write-backs it started. sim_time_run then
 * replays those records on a chip:
 *
 *   - a DMA engine shared by all cores of the device: every transfer in
 *     flight gets an equal share of HBM bandwidth (a fluid model), after a
 *     fixed issue latency;
 *   - per core, the schedule of rule P8: start the copies for the next step
 *     (further with more buffers, never into a slot still in use), wait for
 *     this step's copies, pay the step overhead (P9) and run the kernel,
 *     start this step's write-backs, wait for the write-backs that the next
 *     step's output slot needs; at the end wait for every write-back.
 *
 * Results never depend on the host: only on the records and the chip.
 */
#ifndef TILESIM_TIMING_H
#define TILESIM_TIMING_H

#include "../tilesim_mesh.h" /* PL_MESH_MAX_SLICES */
#include "../../kernel/context.h"
#include "../base/sim.h"

/* One HBM <-> VMEM transfer. */
typedef struct sim_xfer {
    int64_t step;     /* input: the step that needs it; output: the step whose kernel it follows */
    int64_t bytes;
    int64_t row_bytes; /* contiguous bytes per row in HBM (sim_window.row_bytes); 0: one contiguous run */
    /* filled by sim_time_run (its state in flight lives in the DMA engine) */
    double t_issue, t_done;
    int slot;         /* buffer slot of its operand */
    uint8_t done;
    uint8_t fetch;    /* on an output's line: a fetch-back HBM -> VMEM the step waits for (P5, RevisitMode.ANY) */
    uint8_t hops;     /* on the manual line: a copy to another device over this many ICI links (M11); 0: local */
    uint8_t prof_row; /* on the manual line: its row in its core's op profile (pl_report.profile) */
    int32_t to;       /* mesh: the device whose semaphore `cell` it adds its bytes to when it ends */
    uint8_t regular;  /* ... or 1, not its bytes: a regular semaphore (M8) */
    uintptr_t cell;   /* 0: none */
} sim_xfer;         /* 64 bytes: a big mesh keeps one a copy */

typedef struct sim_opline {
    int is_out;
    int buffers;
    sim_xfer *x;      /* in step order */
    int64_t n, cap;
    int64_t *bidx;    /* rank entries per transfer, only when tracing */
    int rank;
    /* filled by sim_time_run, in transfer order as its core finds each one
     * done, by kind (0: a copy in or write-back, 1: a fetch-back, P5): the
     * sums the op profile needs, without a pass over cold records after */
    struct sim_copy_sums {
        int64_t n[2];
        double busy[2], bytes[2]; /* t_done - t_issue; bytes */
    } sums;
} sim_opline;

/* The walk and the replay read and write a line's records in order, each
 * long before or after its neighbours (cold): they prefetch this many ahead. */
#define SIM_RECORDS_AHEAD 16

/* Inside a step that starts or waits for manual copies (kernel/pltpu.h),
 * the kernel is a sequence of these. */
typedef enum sim_kevent_kind {
    SIM_KEV_COMPUTE, SIM_KEV_START, SIM_KEV_WAIT, SIM_KEV_END,
    SIM_KEV_TAKE,     /* mesh: until `amount` more has reached semaphore `cell` of this device (a wait) */
    SIM_KEV_SIGNAL,   /* mesh: `amount` reaches semaphore `cell` of device `device` (this one) now */
    SIM_KEV_SEND      /* mesh: a signal to another device, cl->signals[xfer]: it arrives as a copy's first byte
                       * would, after the DMA latency and a latency per ICI hop (M9, M11) */
} sim_kevent_kind;
/* 40 bytes: a big mesh records several a copy (issue 26), so the fields no
 * kind uses together share their bytes. */
typedef struct sim_kevent {
    uint8_t kind;     /* sim_kevent_kind */
    uint8_t joined;   /* WAIT: the same semaphore wait as the event before (its read is paid once) */
    int32_t device;   /* SIGNAL */
    union {
        int64_t xfer;     /* START, WAIT: index into the core's manual line; SEND: into its signals */
        uintptr_t cell;   /* TAKE, SIGNAL */
    };
    union {
        double seconds;   /* COMPUTE */
        int64_t amount;   /* TAKE, SIGNAL */
    };
    double t0, t1;    /* WAIT, TAKE: filled by the replay, when the core reached it and went on (-1: not yet) */
} sim_kevent;

/* What one TensorCore did. */
typedef struct sim_coreline {
    int n_ops;
    sim_opline op[SIM_MAX_OPS];
    sim_opline manual;   /* manual copies in start order (xfer.step: the step that started it) */
    sim_opline signals;  /* signals to other devices in order (xfer.bytes: the amount each adds at xfer.to) */
    sim_kevent *kev;     /* the event lists of steps with manual copies */
    int64_t n_kev, cap_kev;
    int64_t *step_kev;   /* per step: its first event in kev, or -1 (one compute block); NULL: no manual copies */
    int64_t cap_step_kev;
    double *step_s;   /* compute time of each step */
    double nested_overhead_s; /* of which the overhead of nested pipelines' steps (K3, P9): reported as overhead */
    int64_t steps, cap;
    int64_t *step_point; /* linear grid point of each step (for traces of split grids); NULL: = step */
    /* filled by sim_time_run when kernel_t is set (tracing) */
    double *kernel_t; /* 2 per step: start, end */
    double *begin_t;  /* with kernel_t: 1 per step, when it began: its overhead (P9) started with the waits for
                       * the last step's write-backs; [steps]: when
                       * the epilogue began (the last write-backs landed) */
    double *setup_t;  /* with kernel_t: 1 per step, when its overhead ended (the fixed cost and its copies'
                       * descriptors); [steps]: when the core ended (the epilogue's semaphore waits) */
} sim_coreline;

typedef struct sim_time_result {
    double total_s;      /* until the last write-back of the last core */
    double compute_s;    /* summed over cores: kernel time */
    double overhead_s;   /* summed over cores: per-step overhead */
    double exposed_s;    /* summed over cores: waiting for DMA beyond the overhead */
    double core_end_s[SIM_MAX_CORES];
    double core_compute_s[SIM_MAX_CORES], core_overhead_s[SIM_MAX_CORES]; /* per core: with its wait, core_end_s */
} sim_time_result;

/* ---- records.c: what the walk records ---- */

/* Make room for n transfers (with block indices) or `steps` steps up front:
 * the walk knows how many it will record. 0, or -1 when out of memory. */
int sim_opline_reserve(sim_opline *l, int64_t n, int with_bidx);
int sim_coreline_reserve(sim_coreline *c, int64_t steps);
/* While on, this host thread keeps the big step and copy lists that
 * sim_coreline_free frees and hands them to its next reservations (a sweep:
 * no fresh pages per configuration). Calls nest: the last off frees what
 * it kept. */
void sim_records_pool(int on);

/* Append a transfer; returns 0, or -1 when out of host memory. */
int sim_opline_push(sim_opline *l, int64_t step, int64_t bytes, int slot, const int64_t *bidx);
int sim_coreline_step(sim_coreline *c, double seconds);
/* The host bytes c's records fill (the steps, transfers and events in
 * them, not the room reserved): what a walk's records cost so far, to
 * project the whole walk's (sim/call/walk.c). */
double sim_coreline_bytes(const sim_coreline *c);
/* Append one event of step `step`'s kernel (call before sim_coreline_step for
 * that step); a step appends its events in order and ends them with
 * SIM_KEV_END. Returns 0 or -1 when out of host memory. */
int sim_coreline_event(sim_coreline *c, int64_t step, sim_kevent e);
void sim_coreline_free(sim_coreline *c);

/* ---- oplog.c: the price of the kernel's ops ---- */

/* Time of one block op on the chip: MXU ops padded to the MXU width and run at
 * the dtype's rate, elementwise ops on the VPU. *padded: the work after
 * padding (FLOPs for a dot, elements for the VPU). */
double sim_op_seconds(const pl_chip *chip, const kern_op *op, double *padded);
/* Time of `accesses` pl_get / pl_set on the scalar unit: one per clock cycle,
 * 1 ns each when the chip's clock is not published. */
double sim_scalar_seconds(const pl_chip *chip, double accesses);
/* The MXU's fill and drain of one pl_dot: mxu_fill_cycles at clock_hz, or
 * at the clock the MXU peak implies when clock_hz is not published. */
double sim_mxu_fill_seconds(const pl_chip *chip);
/* The MXU work of a dot after padding, in FLOPs. */
double sim_dot_padded_flops(const pl_chip *chip, const kern_op *op);

/* ---- oplog.c: a step's op log into the records ---- */

/* The time of one block op, remembered: kernels repeat the same few ops. */
#define SIM_OP_CACHE 8
typedef struct sim_op_memo {
    kern_op op;
    double seconds, padded;
    int valid;
    int prof_row;  /* the op's row in the core's profile (profile.h); -1: not yet found */
} sim_op_memo;

/* Price the n ops that step `step` logged (copies numbered from first_copy
 * on this core) and append the step to cl: its compute time, or its event
 * list when it started or waited for manual copies. The work goes into r's
 * counters (mxu_flops, vpu_s, dma_copies, ...) and dot_flops per dtype.
 * memo: SIM_OP_CACHE entries, zeroed at first. 0, or -1 out of memory. */
int sim_record_step(sim_coreline *cl, sim_op_memo *memo, const pl_chip *chip, int64_t step, int64_t first_copy,
                    const kern_op *ops, int n, pl_report *r, double *dot_flops);

/* ---- credit.c: semaphore counts of a mesh's replay ---- */

typedef struct sim_credits sim_credits;
sim_credits *sim_credits_new(int n_devices);  /* devices 0 .. n_devices - 1; NULL: out of memory */
void sim_credits_free(sim_credits *c);
/* amount reaches semaphore cell of device; 0, or -1 out of memory */
int sim_credit_add(sim_credits *c, int device, uintptr_t cell, int64_t amount);
/* Devices with news for a waiting core: an add to one of its semaphores
 * (sim_credit_add marks it) or a transfer of its own that ended (the
 * replay marks it). sim_credits_news takes one (1), or says there is none
 * (0). A core waits on its own device's transfers and semaphores only, so
 * the replay asks a waiting core again only when its device has news. */
void sim_credits_mark(sim_credits *c, int device);
int sim_credits_news(sim_credits *c, int *device);
/* 1 and taken when the semaphore holds amount, else 0 */
int sim_credit_take(sim_credits *c, int device, uintptr_t cell, int64_t amount);

/* ---- links.c: the ICI links of a mesh in the replay ---- */

typedef struct sim_links sim_links;
struct pl_mesh;
/* NULL: out of memory. mesh, credits: kept, not owned. bw and hop_latency:
 * an ICI link's; a multislice mesh's copies between slices (M14) cross the
 * sender's host NICs and the receiver's instead, each host's ports one
 * link of dcn_bw shared by its devices_per_host devices, after dcn_latency. */
typedef struct sim_link_figures {
    double bw, latency, hop_latency;           /* ICI: bytes/s a link; a DMA's latency; a hop's */
    double dcn_bw, dcn_latency;                /* DCN: bytes/s a host each way; issue to first byte */
    int devices_per_host;
} sim_link_figures;
sim_links *sim_links_new(const struct pl_mesh *mesh, const sim_link_figures *fig, sim_credits *credits);
void sim_links_free(sim_links *l);
/* x (to device x->to) from device `from` enters its route's links at now. 0, or -1 */
int sim_links_issue(sim_links *l, int from, sim_xfer *x, double now);
/* A semaphore signal x (x->bytes: the amount) from device `from` to x->to: it moves no bytes and takes no
 * share of a link, and arrives as a copy's first byte would. 0, or -1 */
int sim_links_signal(sim_links *l, int from, sim_xfer *x, double now);
/* the next time a copy starts or ends (INFINITY: none) */
double sim_links_next(sim_links *l, double now);
/* drain from now to t (no event in between); ended copies are done and credited. 0, or -1 */
int sim_links_advance(sim_links *l, double now, double t);
/* bytes that crossed directed link `link` (SIM_ICI_LINK, or a host's DCN
 * port: sim_links_host_port) so far */
double sim_links_bytes(const sim_links *l, int link);
int sim_links_count(const sim_links *l); /* link numbers run 0 .. this - 1 */
/* copies between slices and their bytes by (from, to) slice, so far */
void sim_links_dcn(const sim_links *l, int64_t *copies, double pair[PL_MESH_MAX_SLICES][PL_MESH_MAX_SLICES]);
/* A route's DCN port (SIM_DCN_LINK of a device) as the timing model counts
 * it: the port of that device's host, SIM_DCN_LINK(devices, host, in);
 * any other link as it is. */
int sim_links_host_port(const struct pl_mesh *mesh, int devices_per_host, int link);

/* ---- timing.c: the replay ---- */

/* The devices of a mesh, replayed together: each its own HBM DMA engine
 * and ICI engine, waits on other devices' copies and signals (TAKE,
 * SIGNAL events). Returns as sim_time_run, and -3 when a device waits for
 * a semaphore nothing in the records fills (records that do not match). */
typedef struct sim_time_dev {
    sim_coreline *cores;
    int n_cores;
    sim_time_result *out;
} sim_time_dev;
/* What the mesh's links carried (stats may be NULL). */
typedef struct sim_link_stats {
    double link_bytes;      /* bytes x links crossed, all copies */
    int links_used;         /* directed links that carried bytes */
    double busiest_bytes;   /* the most any one link carried */
    int busiest_link;       /* that link (SIM_ICI_LINK), -1: none */
    /* a multislice mesh: its hosts' DCN ports (not in the four above) */
    int64_t dcn_copies;
    double dcn_bytes, dcn_busiest_bytes; /* all copies between slices; the most one host's port carried */
    double dcn_pair[PL_MESH_MAX_SLICES][PL_MESH_MAX_SLICES];
} sim_link_stats;
int sim_time_mesh(sim_time_dev *devs, int n_devices, const pl_chip *chip, const struct pl_mesh *mesh,
                  sim_link_stats *stats);

/* Replay the records of n_cores cores; returns 0, -1 when out of memory or
 * on an internal inconsistency of the records, -2 when the next event lies
 * at infinity (a chip with zero bandwidth or rate, or infinite times). */
int sim_time_run(sim_coreline *cores, int n_cores, const pl_chip *chip, sim_time_result *out);
/* Why the replay returned -2 for chip: the first figure it cannot time,
 * named as a chip file spells it, into msg; 1, or 0 when every one is fine. */
int sim_time_chip_problem(const pl_chip *chip, char *msg, size_t n);
/* figures.c: the first of chip's timed figures of the scopes up to `scope`
 * (0: every run; 1: a mesh, its links; 2: a multislice mesh, its hosts'
 * NICs) that the replay cannot time, or -1. */
int sim_time_bad_figure(const pl_chip *chip, int scope);

/* Write the timeline of a timed run (kernel_t and transfer times filled) as
 * Chrome trace-event JSON. Returns 0, or -1 on a write error. */
int sim_trace_write(FILE *f, const sim_plan *plan, const sim_coreline *cores, int n_cores, const pl_report *rep);
/* The trace of call on devices devices would exceed opt's trace_limit_bytes
 * (pl_options): -1 with msg (the estimate, the limit, how to get a smaller
 * one), else 0. Checked before the trace file is made. opt->trace_path
 * names it in msg; NULL: the teaching page's timeline (html_rec.c). */
int sim_trace_check(const pl_call *call, int devices, const pl_options *opt, char *msg, size_t n);
/* The trace written into f (a file of path): over the limit after all? The estimate
 * above is low on purpose (manual copies, links and waits add events it does not count), so the size
 * written is checked too: -1 with msg, and the caller drops the file; else 0 (a device's size is not
 * known: 0). */
int sim_trace_too_big(FILE *f, int64_t limit, const char *path, char *msg, size_t n);
/* opt's trace limit in bytes: its trace_limit_bytes, or PL_TRACE_LIMIT_DEFAULT; negative: none. */
int64_t sim_trace_limit(const pl_options *opt);
/* A mesh's timeline in one file: a process for the ICI links (a track per
 * directed link that carried copies) and one per device (and TensorCore),
 * each with its waits as slices. */
typedef struct sim_trace_dev {
    const sim_plan *plan;
    const sim_coreline *cores;
    int n_cores;
    const pl_report *rep;
} sim_trace_dev;
int sim_trace_write_mesh(FILE *f, const struct pl_mesh *mesh, const sim_trace_dev *devs, int n, const pl_chip *chip,
                         double time_s);

/* Fill the report's timing fields and the bound sentence. dot_flops: MXU
 * FLOPs per dtype; plan: the operands' index maps, to name the grid axis
 * that makes an operand be re-read. */
void sim_analyze(pl_report *r, const sim_time_result *t, const double *dot_flops, const sim_plan *plan);

#endif
