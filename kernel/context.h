/* kernel/context.h: the inside of pl_ctx, shared by the kernel language and
 * the simulator that fills it. Not part of the public API.
 *
 * The kernel layer knows nothing of chips or time: each block op appends a
 * kern_op (what it did, in FLOPs and elements) to the context's op log, and
 * the simulator reads the log after the step. A fault inside the kernel
 * (bad index, bad shapes) formats a message and longjmps back to the
 * executor, which owns every allocation, so nothing leaks.
 */
#ifndef TILESIM_KERNEL_CONTEXT_H
#define TILESIM_KERNEL_CONTEXT_H

#include <setjmp.h>
#include <stdarg.h>

#include "pallas.h"
#include "guard.h" /* kern_append, kern_append_int */

/* KERN_OP_EUP: a transcendental op, timed as VPU work at its weight and
 * also counted in the report's eup_elems. KERN_OP_SCALAR: pl_get / pl_set
 * accesses (elems of them) since the previous op, timed on the scalar unit.
 * KERN_OP_OVERHEAD: elems steps of a nested pipeline (emit_pipeline, K3),
 * each a grid step's overhead (P9): timed on the core, reported as overhead. */
/* On a mesh, waits and signals between devices are logged too, so that the
 * timing model makes a device wait for another (sim/timing/timing.c):
 * KERN_OP_RECV_WAIT (cell, elems bytes landed from other devices),
 * KERN_OP_SEM_WAIT (cell, elems the value taken), KERN_OP_SEM_SIGNAL (n the
 * device, cell there, elems the increment). */
typedef enum kern_op_kind {
    KERN_OP_DOT, KERN_OP_VPU, KERN_OP_COPY, KERN_OP_DMA_START, KERN_OP_DMA_WAIT, KERN_OP_EUP, KERN_OP_SCALAR,
    KERN_OP_RECV_WAIT, KERN_OP_SEM_WAIT, KERN_OP_SEM_SIGNAL, KERN_OP_OVERHEAD
} kern_op_kind;

/* One block op as the cost model sees it. */
typedef struct kern_op {
    uint8_t kind;   /* kern_op_kind */
    uint8_t dtype;  /* pl_dtype of the inputs (dot) or of the destination */
    uint8_t regular; /* a DMA start: its semaphores are regular ones, each signalled by 1 when it ends (M8) */
    int64_t m, n, k;  /* dot: the matmul's dimensions; VPU op: m = the register slots of its destination
                         (kern_vreg_slots); DMA start: m = 1 if the copy touches HBM; DMA wait: m = 1
                         if the wait before it covers this copy too (one semaphore wait for several copies) */
    int64_t elems;    /* VPU / copy: elements produced */
    double flops;     /* 2mnk for a dot, elems for an elementwise op */
    int64_t dma;      /* DMA start / wait: the copy's number in this call (its bytes in elems) */
    uintptr_t cell;   /* mesh: the semaphore (its count's address on its device); a remote DMA start: the
                         receiving semaphore there, n the device, k the ICI hops */
    const char *name; /* the pl_ / pltpu_ function that made it (a string literal), for the op profile */
    int64_t vmem;     /* bytes it reads and writes (inputs + output): the op profile's, and a floor on its time at
                         the chip's VMEM bandwidth (sim/call/oplog.c) */
} kern_op;

/* A semaphore is declared as an i32 scratch (PLTPU_SEMAPHORE) but counts in
 * 64 bits: DMA semaphores count bytes, and copies of 2 GiB or more are
 * legal. Each semaphore takes two i32 cells (stride 2, 8-byte aligned);
 * kernel/dma.c reads and writes the count as an int64_t. */
#define KERN_SEM_STRIDE 2
/* run_scoped semaphores a core of a mesh holds at fixed places (pl_ctx.sem_bank); more live at once take
 * heap cells, which other cores reach only while inside the scope */
#define KERN_SEM_BANK 1024
/* the bank's last cell is the barrier semaphore's (M15): scopes take the others */
#define KERN_SEM_BARRIER (KERN_SEM_BANK - 1)

/* run_scoped allocations live at the scoped VMEM peak that a report lists (pl_vmem_report) */
#define KERN_SCOPED_PEAK 8

/* Copies one core may have in flight (started, not yet waited), a model
 * choice: a TensorCore's DMA engine queues a bounded number of descriptors,
 * and a kernel that starts copies and never waits for them would stall it.
 * Without a bound every start compares its destination with all copies in
 * flight (the V4 race check), which grows quadratically with the grid (F4
 * in tests/fuzz/FINDINGS.md). Real kernels keep a handful in flight. */
#define KERN_MAX_DMA_IN_FLIGHT 4096

/* What a kernel-layer warning is (kern_warn): the report files each as a
 * finding of its own kind (sim/call/checks.c). */
typedef enum kern_warning {
    KERN_WARN_INPUT_WRITE, /* a write into an input block (V3) */
    KERN_WARN_DMA_INFLIGHT, /* a read or write of a copy's bytes before its wait (M7) */
    KERN_WARN_UNUSED_COPY,  /* a copy descriptor made and never started or waited (M7) */
    KERN_WARN_PARALLEL_WAIT, /* a copy waited at a grid point that differs from its start's along a parallel axis (G4) */
} kern_warning;

/* A copy started by pltpu_copy_start and not yet waited (kernel/dma.c). */
typedef struct kern_dma {
    pl_ref src, dst, sem;
    int64_t bytes;
    int64_t id;                 /* number of the copy in this call */
    int64_t point[PL_MAX_GRID]; /* the grid point that started it */
    uint8_t moved;              /* its data has been copied (at start, or at a wait in on_wait mode) */
    uint8_t remote;             /* to another device of a mesh: dst is there (kernel/remote.c) */
    int to;                     /* the unit whose memory dst is (this one's for a local copy) */
    uint8_t nomove;             /* a race on a mesh: the call fails at its end, and the data does not move */
    uint8_t read_early;         /* a vector op read its destination before the wait: reported once (M7) */
    uint8_t written_early;      /* a kernel op wrote its source or destination before the wait: once (M7) */
} kern_dma;

/* kernel/dma.c for kernel/remote.c: semaphore checks, counts and waits,
 * moving data, the copies in flight. */
#define PL_KERN_MESH_MSG 2048
void kern_check_sem(pl_ctx *c, const pl_ref *sem, pl_sem_kind want, const char *fn, const char *verb);
/* A copy's semaphore: a DMA semaphore, or a regular one where the chip's
 * DMAs can signal it (target.dma_regular, or no chip: interpret mode takes
 * both); returns 1 for a regular one (M8). */
int kern_check_dma_sem(pl_ctx *c, const pl_ref *sem, const char *fn, const char *verb);
/* A DMA wait (copy_wait, wait_send, wait_recv) on a regular semaphore: refused as JAX refuses it (M8). */
void kern_refuse_regular_wait(pl_ctx *c, const pl_ref *sem, const char *fn);
/* What a finished copy adds to its semaphore: its bytes, or 1 on a regular one (M8). */
static inline int64_t kern_sem_amount(const pl_ref *sem, int64_t bytes)
{
    return sem->sem_kind == PL_SEM_REGULAR ? 1 : bytes;
}
/* A copy's two sides (shapes, dtypes, spaces): its bytes, or a fault
 * citing `rule`. */
int64_t kern_copy_check(pl_ctx *c, const pl_ref *src, const pl_ref *dst, const char *fn, const char *rule);
/* At a copy's start (it moves data): neither side runs past its Ref (V2;
 * a source may under oob_reads = poison); else a fault. A handle only
 * waited on is not checked: a wait takes its byte count. */
void kern_copy_past(pl_ctx *c, const pl_ref *src, const pl_ref *dst, const char *fn);
/* A copy's handle at its start or wait: still what making it checked
 * (kern_copy_check), its bytes those of its sides; else a fault. */
void kern_copy_handle(pl_ctx *c, const pl_ref *src, const pl_ref *dst, int64_t bytes, const char *fn);
/* sem.c: n added to sem's own count (this core's) */
void kern_sem_add_own(pl_ctx *c, const pl_ref *sem, int64_t n, const char *fn);
/* sem.c: need taken off sem's count; on a mesh, waits for other cores to add; a count that can never be had
 * is PL_EDEADLOCK (bytes: a DMA semaphore, for the message) */
void kern_sem_take(pl_ctx *c, const pl_ref *sem, int64_t need, const char *fn, int bytes);
/* owner: the unit (device x dev_cores + core, kern_mesh_ops) whose semaphore cell is: its waiters wake */
void kern_sem_add(pl_ctx *c, const pl_ref *sem, int64_t *cell, int owner, int64_t n, const char *fn);
/* The same with the mesh's lock held (kern_sem_lock): 1 when the count
 * would overflow (nothing is added; the caller faults, unlocked), else 0. */
int kern_sem_add_held(pl_ctx *c, int64_t *cell, int owner, int64_t n);
void kern_dma_move(const pl_ref *dst, const pl_ref *src);
/* the same under the mesh's lock when this device's cores share its HBM (M13) */
void kern_dma_move_shared(pl_ctx *c, const pl_ref *dst, const pl_ref *src);
/* to: the unit (device x cores + core) whose memory dst is, -1 this one's;
 * another's is a remote copy (M11, M13), compared for races (V4) only with
 * copies into that unit; hops: the ICI links to its device, 0 on this one */
kern_dma *kern_dma_push(pl_ctx *c, const pl_ref *src, const pl_ref *dst, const pl_ref *sem, int64_t bytes,
                        int to, int hops, const char *fn);
void kern_dma_take(pl_ctx *c, const pl_ref *sem, int64_t need, const char *fn);
/* A read of src by op fn while a copy of this core that writes src's bytes
 * is in flight (started, not waited): a warning naming the copy (M7, M8). */
void kern_check_read_in_flight(pl_ctx *c, const pl_ref *src, const char *fn);
/* Bytes [lo, hi) that view r spans. */
void kern_ref_span(const pl_ref *r, uintptr_t *lo, uintptr_t *hi);

/* Kernel arguments the context can name (M3): the executor's refs array
 * holds at most SIM_MAX_OPS + PL_MAX_SCRATCH (sim/call/core.h). */
#define KERN_MAX_ARGS 64
#define KERN_MAX_FRESH 16 /* values a step's ops track for fusion (kern_vmem_read) */

/* The executor pads the refs array past the call's last argument with refs
 * whose arg is KERN_ARG_MISSING - position: a kernel that uses refs[3] of a
 * call with three arguments gets an error that says so (kern_check_ref),
 * not a crash on a NULL, rank-0 ref. */
#define KERN_ARG_MISSING (-2)

/* Element types (dtype.c's table): size and kind without a call, for the
 * per-op checks of the hot path; pl_dtype_size / pl_dtype_is_float are the
 * same answers for users. */
typedef struct kern_dtype_info {
    const char *name;
    size_t size;
    int is_float;
} kern_dtype_info;
extern const kern_dtype_info kern_dtypes[PL_DTYPE_COUNT];
/* Copy n indices one at a time, for a caller that has just stored them one
 * at a time: a memcpy's wide loads (gcc and clang turn a plain copy loop
 * into one) would wait for those narrow stores to land instead of reading
 * them from the store buffer. The empty asm keeps the loop a loop. */
static inline void kern_copy_idx(int64_t *dst, const int64_t *src, int n)
{
    for (int i = 0; i < n; i++) {
        int64_t v = src[i];
        __asm__("" : "+r"(v));
        dst[i] = v;
    }
}

static inline size_t kern_dtype_size(pl_dtype t) { return (unsigned)t < PL_DTYPE_COUNT ? kern_dtypes[t].size : 0; }
static inline int kern_dtype_is_float(pl_dtype t) { return (unsigned)t < PL_DTYPE_COUNT && kern_dtypes[t].is_float; }

/* A wait that blocks on a mesh, kept for the deadlock message and put
 * into words only if one is declared (kern_wait_format): a ring's devices
 * block at nearly every step, and a mesh declares a deadlock at most once. */
typedef struct kern_wait {
    pl_ctx *c;          /* the waiting kernel: its grid point (c->idx holds still while it waits) */
    const char *fn;     /* "pltpu_copy_wait" */
    const char *name;   /* the semaphore's operand name, or NULL: one of no operand (what says which) */
    const char *what;   /* with no name: "the barrier semaphore", "a scoped semaphore (...)" */
    int64_t need;
    int bytes;          /* need counts bytes (a DMA semaphore) */
} kern_wait;
/* "at grid point (i, j): pltpu_copy_wait on 'sems' for 4096 bytes" into buf. */
void kern_wait_format(const kern_wait *w, char *buf, size_t n);

/* How a device of a mesh reaches the others (sim/mesh/mesh_run.c fills it; NULL
 * on a single device). Semaphore cells of every device are read and
 * written under lock(); block() is called with the lock held and returns
 * with it held. The hooks name a TensorCore of the mesh by its unit,
 * device x (cores each device walks on) + core: a device whose call
 * walks on one core is its unit; axis_index alone takes a device. */
typedef struct kern_mesh_ops {
    void (*lock)(void *run);
    void (*unlock)(void *run);
    /* until *cell >= need or the mesh deadlocks (then nonzero, with the
     * message of every stuck device in msg); what: the wait, for that
     * message (kern_wait_format; valid while the device waits) */
    int (*block)(void *run, int device, const int64_t *cell, int64_t need, const struct kern_wait *what, char *msg,
                 size_t n);
    void (*wake)(void *run, int device); /* a semaphore of `device` grew: its blocked cores look again */
    /* r's data pointer on device `device` (the same argument and offsets)
     * into *out: 1, or 0 when r is not an ANY operand or scratch, which
     * other devices cannot reach (a pointer may be NULL + offset: cost-only
     * ANY operands have no data, so a NULL cannot say "unreachable") */
    int (*translate)(void *run, int from, int device, const pl_ref *r, void **out);
    /* the position of this device along the mesh axis `axis` and its size;
     * -1 when there is no such axis */
    int64_t (*axis_index)(void *run, int device, const char *axis, int64_t *size);
    void (*perturb)(void *run, int device); /* a seeded schedule: maybe yield the host thread */
    /* a copy from `from` is about to land in bytes [lo, hi) of argument `arg` of device `to`:
     * nonzero when it races with an earlier copy or a local copy there (V4, sim/mesh/mesh_race.h): the
     * race is recorded for the end of the call, and the copy's data must not move */
    int (*incoming)(void *run, int from, int to, int arg, uintptr_t lo, uintptr_t hi, const int64_t *recv,
                    int64_t bytes, const char *point);
    /* a local copy of `bytes` on `device` reads src and writes dst there until a wait takes its bytes off its
     * semaphore `sem`: a remote copy into either before some chain of waits saw that wait is a race (V4);
     * nonzero when it races with a copy that landed there and is not yet received: recorded, and its
     * data must not move */
    int (*local_copy)(void *run, int device, const pl_ref *src, const pl_ref *dst, const int64_t *sem, int64_t bytes,
                      const char *point);
    /* with the lock held: device added to, or took `amount` from, the semaphore at cell (the
     * semaphore of unit `owner`, the only one that waits on it) */
    void (*added)(void *run, int device, int owner, const int64_t *cell, int64_t amount);
    void (*taken)(void *run, int device, const int64_t *cell, int64_t amount);
    /* ICI links a copy from `from` to `to` crosses (dimension-ordered routing) */
    int (*hops)(void *run, int from, int to);
    /* nonzero when `device` runs in another process (a mesh across Open MPI ranks): its memory is
     * not here, so a copy or signal to it is posted instead (its Refs translate to its addresses
     * there, never dereferenced here) */
    int (*away)(void *run, int device);
    /* to a device away: a copy of src into dst there (dst NULL: a signal), adding `amount` to the
     * semaphore sem there when it lands; from a device thread, lock not held */
    void (*post)(void *run, int from, int to, const pl_ref *src, const pl_ref *dst, const pl_ref *sem,
                 int64_t amount, const char *point);
    /* the context of `device` of this process (its run_scoped allocations, read under the lock:
     * kern_scoped_peer), or NULL when it runs in another process */
    pl_ctx *(*peer)(void *run, int device);
    /* nonzero when a copy from `from` to `to` leaves its slice: over the data-center network (M14) */
    int (*dcn)(void *run, int from, int to);
    /* the kernel on `unit` loads (write 0) or stores (write 1) r at grid point `point`: unordered
     * against a remote copy into the same bytes, either is a race (V4; recorded for the end of the
     * call); lock not held */
    void (*access)(void *run, int unit, const pl_ref *r, int write, const char *point);
    /* the device at coords (one per mesh axis; NULL: this device's) with axis `axis` (NULL: none) set to
     * index; -1 when there is no such axis, -2 when a coordinate is off the mesh. n: the mesh's axes */
    int (*device_at)(void *run, int device, const int64_t *coords, const char *axis, int64_t index, int *n);
    /* the kernel on `unit` read `value` at semaphore cell `cell` (pltpu_semaphore_read, a kernel's polling
     * loop): the other cores run a while before it reads again (on a pool of fibers a spinning one would
     * hold its pool thread for ever); nonzero when nothing can change the count any more: every other
     * core waits or has ended and the count held still over many reads (lock not held) */
    int (*poll)(void *run, int unit, const int64_t *cell, int64_t value);
} kern_mesh_ops;

/* What the checks know of one kernel argument (set by the executor). */
typedef struct kern_arg {
    char *base;                  /* the buffer the Ref views, its first element */
    pl_ref tmpl;                 /* the Ref as handed to the kernel: shape and strides of the buffer */
    int64_t vlo[PL_MAX_RANK];    /* in-bounds part per Ref dimension: [vlo, vhi); narrower than the */
    int64_t vhi[PL_MAX_RANK];    /* shape on an edge block (B6) or under element padding (B5) */
    uint8_t clipped;             /* the current block hangs over the array's edge */
    uint8_t written;             /* an op wrote to it since its block became current (P4) */
    uint8_t initialized;         /* scratch: an op wrote all of it (M2); an output: all of its current block */
    uint8_t warned;              /* a write-protection warning was given (V3) */
} kern_arg;

#define KERN_DS_SITES 64

/* What the compiler checks at ops on the chip (rules T8-T10), filled by the
 * simulator from its pl_chip; chip NULL: no chip, no such checks. */
typedef struct kern_target {
    const char *chip;  /* its name, for messages */
    int tile_rows[4];  /* memory tile rows of 32-, 16-, 8- and 4-bit types in an array whose rows they divide */
    int mxu_int8;      /* the MXU multiplies int8 x int8 into int32 (T10) */
    int mxu_fp8;       /* the MXU multiplies fp8 x fp8 into f32 at an fp8 rate (T10: v7x) */
    int mxu_fp8_in;    /* it takes fp8 x fp8 at all: at the fp8 rate, or widened to bf16 (v5e, v5p, v6e) */
    int dma_regular;   /* a DMA may signal a regular semaphore, by 1 (M8: v6e and later) */
    int cores;         /* the cores the call walks (pl_kernel: the device's TensorCores; K7) */
    int subcores;      /* a SparseCore vector-subcore mesh (K5): subcores per SparseCore (core = this core / it,
                          subcore = this core % it), and no MXU; 0: TensorCores */
    /* pl_run_scoped and pltpu_emit_pipeline (kernel/scoped.c, rules K3, K4): the scoped VMEM limit left
     * after the call's own buffers (M4) */
    int64_t vmem_free;
} kern_target;

/* The (rows, 128) memory tile of a `bits`-wide type in a buffer whose
 * second-minor dimension has `rows` rows (T8; Mosaic's choice for kernel
 * operands): the target's rows when they divide `rows`, else 8 when rows >=
 * 8, else the smallest power of two >= rows and >= 32 / bits. */
int kern_tile_rows(const kern_target *t, int bits, int64_t rows);

/* A block as messages print it, "(squeezed, 64, 128)"; with its
 * second-last size replaced by rows when rows >= 0. */
void kern_format_block(const int64_t *block, const uint8_t *squeezed, int rank, int64_t rows, char *buf,
                       size_t n);

/* The compiler's tiling check (T8, XLA E2002) on a block of rank >= 2 whose
 * array's second-last dimension lies in (tile, 128) tiles: 0 when the block
 * passes; else 1 with msg saying why and the nearest legal shapes, for the
 * caller to prefix with the operand's name. One text for pallas_call's
 * BlockSpecs (sim/call/blockspec.c) and emit_pipeline's (K3). blk and shp are the
 * block and array as the caller prints them. */
int kern_check_t8(const char *chip, pl_dtype dtype, int rank, const int64_t *block, const uint8_t *squeezed,
                  const int64_t *shape, int64_t tile, const char *blk, const char *shp, char *msg, size_t n);

struct pl_ctx {
    /* the running grid point */
    int grid_rank;
    const int64_t *grid;        /* grid sizes */
    int64_t idx[PL_MAX_GRID];   /* current indices */
    /* inside an emit_pipeline body: the grid pl_program_id and
     * pl_num_programs answer for, the pipeline's (JAX runs the body in the
     * pipeline's grid_env; P9); prog_grid NULL: the call's grid above */
    int prog_rank;
    const int64_t *prog_grid, *prog_idx;
    int64_t step;               /* linear step on this core */
    char point[128];            /* idx as "(i, j)", made on first use in a step (kern_point) */
    int point_ok;
    int core;
    void *user;                 /* pl_call.user */
    const char *kernel_name;
    /* the kernel's arguments, for messages (M3): how many of each kind, and
     * each one's name (its spec's .name, else "in0", "scratch1", ...) */
    int n_prefetch, n_in, n_out, n_scratch;
    const char *arg_name[KERN_MAX_ARGS];

    /* options */
    int cost_only;              /* block ops report cost but touch no data */
    int checks;                 /* track reads, writes and poison (V1, V3) */
    int races_off;              /* checks_off: two copies into the same bytes are not refused either (V4) */
    int strict;                 /* writes into input blocks (V3) and reads of a landing copy (M7) are errors */
    unsigned parallel_axes;     /* bit a: grid axis a is parallel (G3), for copies waited across it (G4) */
    int chain_warned;           /* ... said once a call */
    int oob_poison;             /* reads past a Ref (pl_get, pl_load, DMA sources) give poison, not a fault (V2) */
    int uninit_zero;            /* poison is zero (V1) */

    /* per kernel argument, for the checks; NULL when checks are off */
    kern_arg *args;
    int n_args;
    /* the first suspicious reads, to explain a NaN that reaches HBM (V1) */
    char uninit_read[768];      /* scratch read before anything wrote all of it */
    int uninit_core;            /* ... on a core other than core 0: its scratch is its own (G4, M2) */
    char out_read[512];         /* an output block read before anything wrote all of it (P4) */
    char padding_read[512];     /* an edge block's overhang read */
    int padding_spare;          /* ... only along a dimension whose garbage the write-back drops (a matmul's M) */
    int padding_past;           /* ... of a block wholly past the array's end (B7), not an edge block's (B6) */
    char oob_read[512];         /* a read outside a Ref that returned poison (V2, poison mode) */
    /* manual DMA (kernel/dma.c); the executor frees dma and checks what is
     * left at the end of the call (M10) */
    int dma_on_wait;            /* copies move data when waited, not when started */
    kern_dma *dma;              /* copies in flight */
    int n_dma, cap_dma;
    int64_t next_dma;           /* the next copy's number */
    /* copy descriptors made this grid step and not yet started or waited
     * (kern_desc_*, kernel/dma.c): one left when the step ends is JAX's
     * "AsyncCopyDescriptor was not used" (M7) */
    struct kern_desc {
        const void *src, *dst, *sem;
        int arg, src_arg;
        const char *fn;
    } desc[8];
    int n_desc;
    /* Descriptors by what they copy (fn, source and destination operands, the semaphore): those some grid point
     * used, and those left unused at a step. JAX logs "not used" for a descriptor never used anywhere in the
     * kernel, and a kernel may make every descriptor at every step and use each at some (the distributed
     * guide's, under pl.when): only a kind no grid point used is the finding, once the core's walk ends. */
    struct kern_desc_site {
        const char *fn;
        int src, dst;
        const void *sem;
    } used_site[16], idle_site[8];
    int n_used_site, n_idle_site, sites_lost;

    /* warnings go to the executor's report */
    /* arg: the Ref's argument position, or -1; rule: the one the warning cites ("V3", "M7"); what: its kind */
    void (*warn)(void *sink, int arg, const char *rule, kern_warning what, const char *msg);
    void *warn_sink;

    /* the op log of the current step (reset by the executor) */
    kern_op *ops;
    int n_ops, cap_ops;
    double op_log_max;          /* bytes the step's op log may take (kern_setup); 0: no cap */
    /* pl_get / pl_set accesses not yet in the log: a counter keeps element
     * access cheap; kern_record and kern_flush_scalar turn it into one
     * KERN_OP_SCALAR op, so it stays in order with DMA starts and waits */
    int64_t scalar_ops;
    const char *last_op;        /* the name of the last op logged, for a crash report (kernel/guard.c) */

    /* host scratch for conversions, reused across steps (owned by executor) */
    float *tmp;
    size_t tmp_cap;             /* floats */
    /* host memory for the values a kernel holds (examples/kernels/values.c),
     * reused across steps: the core's own, not its host thread's, since
     * the cores of a mesh share threads (sim/mesh/mesh_fiber.h) and one may
     * park in a wait with its values live */
    struct kern_arena {
        char *base;
        size_t used, cap;
    } values;
    /* The values this step's ops wrote (Refs of no operand, as the arena
     * hands out), by address, and how often an op has read each since: what
     * kern_vmem_read charges a fused chain (KERN_MAX_FRESH at most; a
     * value past them is charged as a Ref) */
    struct kern_fresh {
        const void *data;
        int reads;
    } fresh[KERN_MAX_FRESH];
    int n_fresh;

    /* the mesh (kernel/remote.c): NULL on a single device */
    const kern_mesh_ops *mesh;
    void *mesh_run;
    int device, n_devices;
    /* what the hooks call this core: device x dev_cores + core, where a
     * device of the mesh walks on dev_cores TensorCores at once (G4) */
    int unit, dev_cores;
    /* on a mesh, run_scoped semaphores sit at fixed places, as on the chip:
     * a stack of KERN_SEM_BANK counts per core that scopes take in order
     * and give back, so another core may signal one before this core has
     * entered its scope (JAX's test_can_signal_cores); NULL off a mesh */
    int64_t *sem_bank;
    int sem_bank_top;
    /* the barrier semaphore (M15): the bank's last cell on a mesh, where
     * every device finds it, else barrier_cell */
    int has_collective_id;
    int barrier_taken;         /* the kernel took the barrier semaphore (M15: a collective_id needs it) */
    int64_t barrier_cell;

    kern_target target;         /* the chip's tiling and MXU (T9, T10); target.chip NULL: none */
    /* pl_ds calls that slice a tiled dimension (T9), told apart by call site
     * (return address), Ref argument, dimension and how many times that
     * triple came before in the step: one whose start differs between grid
     * steps has a dynamic start. The first KERN_DS_SITES of them. */
    struct kern_ds_site {
        uintptr_t site;
        int arg, dim, occ;      /* occ: the how-many-th such call in its step */
        int dynamic;            /* has taken two different starts */
        int64_t first;          /* the first start seen */
        int64_t unaligned;      /* a start off the tile seen here, or -1 */
        int64_t tile;
    } ds_site[KERN_DS_SITES];
    int n_ds_site;
    struct kern_ds_count {      /* this step's calls per (site, arg, dim); reset by kern_begin_step */
        uintptr_t site;
        int arg, dim, n;
    } ds_count[KERN_DS_SITES];
    int n_ds_count;

    /* run_scoped VMEM live in the kernel (kernel/scoped.c): freed on scope exit, or by kern_ctx_free after a fault */
    struct kern_scoped *scoped;
    /* set by kernel/scoped.c with its first allocation: frees what is still live. A hook, so that this
     * layer (kern_ctx_free) does not call up into scoped.c, which calls down into it (tools/layering.sh) */
    void (*scoped_release)(pl_ctx *c);
    int64_t scoped_bytes;       /* their laid-out bytes, counted against target.vmem_free (K4) */
    int64_t scoped_peak;        /* the most scoped_bytes has been (the report's scoped_peak_bytes) */
    int n_scoped_peak;          /* the allocations live at that peak, oldest first (at most KERN_SCOPED_PEAK) */
    char scoped_peak_what[KERN_SCOPED_PEAK][64];
    int64_t scoped_peak_bytes[KERN_SCOPED_PEAK];

    /* fault handling */
    jmp_buf *fault;             /* where a fault returns to; NULL: not inside a kernel */
    int fault_code;
    char fault_msg[2048];       /* a mesh's deadlock names every stuck device */
};

/* The barrier semaphore's count (M15): the bank's last cell on a mesh,
 * where every device finds it, else the context's own. */
static inline int64_t *kern_barrier_cell(pl_ctx *c)
{
    return c->sem_bank ? c->sem_bank + KERN_SEM_BARRIER : &c->barrier_cell;
}

/* ---- the border with the simulator (kernel/runner.c) ----------------------
 *
 * sim/ sets a context up, starts each step and runs the kernel only through
 * these functions, and never writes a pl_ctx field itself: the context's
 * invariants (the op log, copies in flight, the fault jump) stay in this
 * layer, and sim/ reads what a step did. One context serves one TensorCore;
 * two contexts share nothing, so two cores may run on two host threads.
 *
 *     kern_setup s = {.grid_rank = 2, .grid = grid, ...};
 *     kern_ctx_init(&ctx, &s);
 *     kern_core_start(&ctx, 0, 0);
 *     kern_begin_step(&ctx, 0, idx);
 *     if (kern_run(&ctx, call->kernel, refs)) report(kern_fault_text(&ctx));
 *     int n; const kern_op *ops = kern_step_ops(&ctx, &n);   // time them
 *     kern_ctx_free(&ctx);
 */
typedef struct kern_setup {
    int grid_rank;
    const int64_t *grid;
    void *user;
    const char *kernel_name;
    int n_prefetch, n_in, n_out, n_scratch;
    const char *const *arg_name; /* n_args names, for messages (M3) */
    int n_args;
    int cost_only, strict, oob_poison, uninit_zero, dma_on_wait;
    int races_off;             /* pl_options.checks_off: no race is rejected or reported (V4) */
    unsigned parallel_axes;    /* bit a: grid axis a is parallel (G3) */
    int has_collective_id;     /* the call set collective_id: the barrier semaphore may be taken (M15) */
    /* checks (V1, V3): the executor's per-argument table, or NULL when off */
    kern_arg *args;
    void (*warn)(void *sink, int arg, const char *rule, kern_warning what, const char *msg);
    void *warn_sink;
    /* a device of a mesh: its hooks (NULL: a single device), number and count */
    const kern_mesh_ops *mesh;
    void *mesh_run;
    int device, n_devices;
    int unit, dev_cores;       /* device x dev_cores + core: the hooks' name for this core; 0: 1 */
    const kern_target *target; /* NULL: no chip checks at ops (T9, T10) */
    double op_log_max;         /* bytes one grid point's op log may take; 0: no cap */
} kern_setup;

/* Set c up (it is zeroed first); kern_ctx_free releases what it allocates. */
void kern_ctx_init(pl_ctx *c, const kern_setup *s);
void kern_ctx_free(pl_ctx *c);
/* Free every run_scoped allocation still live (after a fault left its scope). */
void kern_scoped_free_all(pl_ctx *c);
/* A TensorCore starts its grid: no copies in flight; its copies are numbered
 * from first_dma on (numbers run on across the cores of a call). */
void kern_core_start(pl_ctx *c, int core, int64_t first_dma);
/* Grid point idx, step `step` of this core: the op log starts empty. */
void kern_begin_step(pl_ctx *c, int64_t step, const int64_t *idx);
/* Run the kernel on refs. PL_OK, or the fault's code with its message in
 * kern_fault_text (the setjmp here pairs with kern_fault's longjmp). */
int kern_run(pl_ctx *c, pl_kernel_fn kernel, pl_ref *refs);
const char *kern_fault_text(const pl_ctx *c);
/* The op log of the step just run; valid until the next kern_begin_step. */
const kern_op *kern_step_ops(const pl_ctx *c, int *n);
/* An output took a new block: reads that explain its NaN start afresh (V1). */
void kern_new_output_block(pl_ctx *c);
/* The next copy's number: where the next core's numbering starts. */
int64_t kern_next_copy(const pl_ctx *c);

/* Record the error, describe the grid point, and leave the kernel. */
#if defined(__GNUC__)
__attribute__((noreturn, format(printf, 3, 4)))
#endif
void kern_fault(pl_ctx *c, int code, const char *fmt, ...);

/* Checks around block ops (no-ops when c->checks is off): a write marks the
 * argument written and is refused or warned about on an input block (V3); a
 * read of uninitialized scratch or of edge-block padding is remembered (V1). */
void kern_note_write(pl_ctx *c, const pl_ref *dst, const char *fn);
void kern_note_read(pl_ctx *c, const pl_ref *src, const char *fn);
/* The same, for an op whose result along the view's dimensions in `spare` (bit d: dimension d) follows
 * the operand's: edge-block padding read there feeds only result elements past the edge, which the
 * write-back drops (a matmul's rows of a and columns of b), so it explains a NaN only when nothing
 * else does. */
void kern_note_read_spare(pl_ctx *c, const pl_ref *src, const char *fn, unsigned spare);

/* A warning about argument `arg` (or -1) with the grid point, to the report, as a finding of `rule` and kind `what`. */
#if defined(__GNUC__)
__attribute__((format(printf, 5, 6)))
#endif
void kern_warn(pl_ctx *c, int arg, const char *rule, kern_warning what, const char *fmt, ...);
/* M7: the pipeline is about to copy a new block into `block` (an input's
 * buffer): 1 with msg when a copy in flight still reads or writes those
 * bytes (said once a copy). The executor reports it, outside the kernel. */
int kern_dma_refill_conflict(pl_ctx *c, const pl_ref *block, char *msg, size_t n);
/* M16: the copies in flight whose DMA semaphore is the call's output
 * operand `arg` are the call's result, for a later call to wait on: they
 * land and leave the list (not M10's "never waited"). Returns how many. */
int kern_dma_hand_over(pl_ctx *c, int arg);
/* Copy descriptors (kernel/dma.c): made by fn (pltpu_async_copy,
 * pltpu_make_async_remote_copy), used by a start or a wait of the same
 * src, dst and semaphore; at the end of a grid step (the executor calls
 * kern_desc_step_end after kern_run, when n_desc) a descriptor made and
 * never used is a finding (M7), as JAX logs one. */
void kern_desc_made(pl_ctx *c, const pl_ref *src, const pl_ref *dst, const pl_ref *sem, const char *fn);
void kern_desc_used(pl_ctx *c, const pl_ref *src, const pl_ref *dst, const pl_ref *sem);
void kern_desc_step_end(pl_ctx *c);
/* At the end of a core's walk: a kind of descriptor made and never used at any of its grid points (M7). */
void kern_desc_walk_end(pl_ctx *c);

/* "refs[0] (input, VMEM f32) 'x'": a Ref for messages, with its argument
 * position, role, space, dtype and name. */
void kern_ref_name(const pl_ctx *c, const pl_ref *r, char *buf, size_t n);

/* Fault if r is past the end of the kernel's refs (KERN_ARG_MISSING):
 * "refs[3] does not exist: 2 inputs, 1 output, 0 scratch". Every op calls
 * it on each ref before anything else. */
#if defined(__GNUC__)
__attribute__((noreturn))
#endif
void kern_missing_ref(pl_ctx *c, const pl_ref *r, const char *fn);
static inline void kern_check_arg(pl_ctx *c, const pl_ref *r, const char *fn)
{
    if (r->arg <= KERN_ARG_MISSING) kern_missing_ref(c, r, fn);
}

/* Fault with PL_EBOUNDS: r is a view that runs past its Ref, which fn does
 * not take (V2, V6). */
#if defined(__GNUC__)
__attribute__((noreturn))
#endif
void kern_past_ref(pl_ctx *c, const pl_ref *r, const char *fn);
/* The same with the fix the message ends with (a copy cannot take a mask). */
#if defined(__GNUC__)
__attribute__((noreturn))
#endif
void kern_past_ref_fix(pl_ctx *c, const pl_ref *r, const char *fn, const char *fix);
/* Does view r run past its Ref along some dimension (pl_ds past the end)? */
static inline int kern_is_past(const pl_ref *r)
{
    int64_t any = 0;
    for (int d = 0; d < PL_MAX_RANK; d++) any |= r->past[d];
    return any != 0;
}

/* A view made by hand (shape and strides written into a pl_ref, as a
 * transposed or reshaped view) is fine while every element it names lies
 * in its argument's buffer; one that reaches outside is PL_EBOUNDS (V2),
 * never a read of host memory out of bounds (kernel/checks.c: it needs the
 * argument table, which the checks keep). */
void kern_check_span(pl_ctx *c, const pl_ref *r, const char *fn);

/* What every op checks first on each ref: that it exists, and that it lies
 * inside its Ref (ops other than pl_load / pl_store never touch elements
 * past the end, so they never read host memory out of bounds). */
static inline void kern_check_ref(pl_ctx *c, const pl_ref *r, const char *fn)
{
    kern_check_arg(c, r, fn);
    if (kern_is_past(r)) kern_past_ref(c, r, fn);
    if (c->args) kern_check_span(c, r, fn);
}

/* What uninitialized memory of dtype t reads as (V1): NaN, or the integer
 * maximum, or zero when the user asks (c->uninit_zero). */
double kern_poison_value(const pl_ctx *c, pl_dtype t);

/* Semaphore cells of a mesh device are shared with the other devices:
 * every read and write of one happens between these (no-ops on a single
 * device). kern_fault must not be called in between. */
static inline void kern_sem_lock(pl_ctx *c)
{
    if (c->mesh) c->mesh->lock(c->mesh_run);
}
static inline void kern_sem_unlock(pl_ctx *c)
{
    if (c->mesh) c->mesh->unlock(c->mesh_run);
}

/* Append an op to the step's log; faults with PL_ENOMEM when the host is out. */
void kern_record(pl_ctx *c, const kern_op *op);
/* The bytes an op moves through VMEM's vector loads and stores when it
 * reads r (kern_vmem_read) or writes it (kern_vmem_write): an op's `vmem`.
 * A Ref of the call (a block, scratch, a run_scoped or pipeline buffer)
 * is in VMEM: all its bytes. A value (a Ref of no operand: what Mosaic
 * keeps in vector registers, examples/kernels/values.h) is not, when the
 * ops chain: Mosaic lowers each op vreg by vreg and the scheduler keeps a
 * vreg's chain together, so an op reading the value the last op wrote
 * takes it from registers, and the write costs nothing. A value read
 * again (after a reduction over it, or by a second op) had to be kept:
 * the second read pays its store and its load, each later one a load. A
 * value no op of this step wrote is read from VMEM. Reads before the
 * write in one op (pl_mul(c, v, v, s) reads v, then writes it). */
int64_t kern_value_read(pl_ctx *c, const pl_ref *r, int64_t bytes);
int64_t kern_value_write(pl_ctx *c, const pl_ref *r, int64_t bytes);
/* A value: no operand's (what values.h hands out); inline, since every op
 * asks for each operand at every step of a sweep. */
/* The core's arena for values (kernel/values.c), emptied, with room for
 * `bytes`; and the next value in it, unchecked (the built-ins', which
 * reserve what they take). */
struct kern_arena *kern_values_begin(pl_ctx *c, size_t bytes);
pl_ref kern_arena_value(struct kern_arena *a, pl_dtype t, int64_t rows, int64_t cols);
static inline int kern_is_value(const pl_ref *r) { return r->arg < 0 && r->role == PL_ROLE_NONE && r->space == PL_VMEM; }
/* Bytes of the elements r views (what an op reads or writes of it). */
static inline int64_t kern_ref_bytes(const pl_ref *r) { return pl_size(*r) * (int64_t)kern_dtype_size(r->dtype); }
static inline int64_t kern_vmem_read(pl_ctx *c, const pl_ref *r)
{
    return kern_is_value(r) ? kern_value_read(c, r, kern_ref_bytes(r)) : kern_ref_bytes(r);
}
static inline int64_t kern_vmem_write(pl_ctx *c, const pl_ref *r)
{
    return kern_is_value(r) ? kern_value_write(c, r, kern_ref_bytes(r)) : kern_ref_bytes(r);
}
/* The same in two halves, for an op built in place: kern_record_slot
 * returns the log's next entry (zeroed), kern_record_done appends it. An op
 * built on the stack and copied in is read back by wide loads just after
 * its fields were stored one by one, which stalls (store forwarding): pl_dot,
 * at every step of a matmul, builds its op in the slot. */
kern_op *kern_record_slot(pl_ctx *c);
void kern_record_done(pl_ctx *c);

/* Log the pending scalar accesses (c->scalar_ops) as one op, and reset the
 * count; the executor calls it when the kernel returns. */
void kern_flush_scalar(pl_ctx *c);

/* A host buffer of at least n floats, valid until the next call. */
float *kern_tmp(pl_ctx *c, size_t n);

/* Format the grid point "(i, j, k)" into buf. */
void kern_format_point(const int64_t *idx, int rank, char *buf, size_t n);
/* The running grid point, "(i, j)", formatted once a step: on a mesh every
 * copy and wait names its point for the race checker and the deadlock
 * message, several a step (issue 26: formatting was 12 % of a big mesh). */
const char *kern_point(pl_ctx *c);

#endif
