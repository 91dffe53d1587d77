/* sim/tilesim.h: the host API of tilesim: describe a call as in Pallas
 * (grid, BlockSpecs with index maps, scratch, dimension semantics), run it on
 * a simulated TPU, and read what it did.
 *
 * pl_pallas_call first validates the whole call (block shapes against the
 * (8,128) rule, index maps, the VMEM budget of the chip) and runs nothing if
 * anything is wrong. Then it walks the grid in lexicographic order (rule G1).
 * At each grid point the index maps select a block of every operand; an input
 * block is copied from HBM into a VMEM buffer unless the previous grid point
 * selected the same block (P2); an output block is written back to HBM when
 * the next grid point selects a different block, and after the last one (P3).
 * The kernel sees the VMEM buffers as Refs.
 *
 * Example: C = A @ B with (bm, bn, bk) tiles and an fp32 accumulator.
 *
 *     pl_call call = {
 *         .name = "matmul", .kernel = matmul_kernel,            // see kernel/pallas.h
 *         .grid_rank = 3, .grid = {M / bm, N / bn, K / bk},
 *         .semantics = {PL_PARALLEL, PL_PARALLEL, PL_ARBITRARY},
 *         .n_in = 2,
 *         .in = {PL_BLOCK(PL_MAP(0, 2), bm, bk),                // x block (i, k)
 *                PL_BLOCK(PL_MAP(2, 1), bk, bn)},               // y block (k, j)
 *         .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, 1), bm, bn)},  // o block (i, j)
 *         .n_scratch = 1, .scratch = {PLTPU_VMEM(PL_F32, bm, bn)},
 *     };
 *     pl_array args[2] = {PL_ARRAY(a, PL_F32, M, K), PL_ARRAY(b, PL_F32, K, N)};
 *     pl_array out = PL_ARRAY(c, PL_F32, M, N);
 *     pl_report rep;
 *     int rc = pl_pallas_call(&call, args, &out, NULL, &rep);
 *     if (rc != PL_OK) fprintf(stderr, "%s\n", rep.error);
 *     pl_report_print(&rep, stdout);
 *
 * This header follows that path: limits; describing a call (arrays, index
 * maps, BlockSpecs, scratch, pl_call); running it (pl_pallas_call,
 * pl_validate, pl_last_error); options; the report; chips; sweeps of many
 * configurations; small helpers (formatting, host memory). The status codes
 * and pl_strerror are in kernel/pallas.h, with the kernel language; the
 * reference checks (pl_check_matmul, pl_allclose, heatmaps, pl_check_order)
 * are in sim/tilesim_check.h, which this header includes at its end.
 *
 * Ownership: the caller owns every array, spec and report; tilesim allocates
 * the simulated VMEM for the duration of the call and frees it before
 * returning. Output arrays are written only by completed write-backs, so a
 * call that fails validation leaves them untouched. tilesim keeps no pointer
 * the caller passed once a call returns, and a report holds one pointer
 * only: pl_report.chip (see there).
 *
 * Threads: any function here may be called from several threads at once, on
 * different arrays and reports. User callbacks (kernels, index maps, a
 * sweep's build) may be called on host threads other than the caller's, and
 * several at once: see pl_pallas_call and pl_sweep.
 */
#ifndef TILESIM_H
#define TILESIM_H

#include <stdio.h>

#include "../kernel/pallas.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- limits ------------------------------------------------------------------ */

/* Array, block and Ref ranks are at most PL_MAX_RANK and grids have at most
 * PL_MAX_GRID axes (kernel/pallas.h). Validation rejects a call over a
 * limit; longer names are cut to fit. */
#define PL_MAX_OPERANDS 16 /* inputs (or outputs) of one call */
#define PL_MAX_SCRATCH 16  /* scratch buffers of one call */
/* Operands of one call: scalar prefetch, inputs and outputs, each up to
 * PL_MAX_OPERANDS; the rows of a report and of a step's info. */
#define PL_MAX_CALL_OPERANDS (3 * PL_MAX_OPERANDS)
#define PL_NAME_MAX 32     /* an operand's or scratch buffer's name in a report, with its NUL */
#define PL_MSG_MAX 2048    /* pl_report.error and .warnings, pl_last_error(), with the NUL */
#define PL_MAX_FINDINGS 8  /* findings a report keeps (pl_report.n_findings counts them all) */

/* ==== describing a call ======================================================== */

/* ---- arrays in HBM ------------------------------------------------------------- */

/* An array in HBM: caller-owned, contiguous, row-major. tilesim reads and
 * writes data only during a call that was given the array. */
typedef struct pl_array {
    void *data;
    pl_dtype dtype;
    int rank;
    int64_t shape[PL_MAX_RANK];
    /* 1: an int8 array of packed 4-bit values, two per byte along its last
     * dimension (pl_i4_store, pl_f4_store), as HBM holds an int4 or
     * float4_e2m1fn array; shape counts bytes. Its blocks follow the rules
     * of the 4-bit elements, as a BlockSpec over the int4 or fp4 array
     * would: T1 and T2 count the last dimension in elements (two per byte),
     * T8 takes the 4-bit tile rows, and the VMEM layout (T6) is that of
     * 4-bit tiles. 0 (the default): one element per byte of dtype. */
    int packed4;
} pl_array;

#ifndef __cplusplus
#define PL_ARRAY(ptr, dt, ...)                                                                    \
    ((pl_array){.data = (ptr), .dtype = (dt),                                                     \
                .rank = (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),              \
                .shape = {__VA_ARGS__}})
#else /* C++: built by inline functions, see the end of this header */
#define PL_ARRAY(ptr, dt, ...) (::pl_cxx::array((ptr), (dt), __VA_ARGS__))
#endif

/* Elements of a: the product of its first rank dimensions (1 for rank 0),
 * saturating at INT64_MAX. a must not be NULL. Pure: any thread. */
int64_t pl_array_size(const pl_array *a);
/* Bytes of a's data: pl_array_size times the dtype's size (0 for an invalid
 * dtype; for int4, half the elements rounded up: packed two per byte). a
 * must not be NULL. Pure: any thread. */
size_t pl_array_bytes(const pl_array *a);

/* ---- index maps (rule B2) ---------------------------------------------- */

/* Function form: fill block_idx (one entry per array dimension) from the grid
 * indices and the scalar-prefetch refs (rule M5). A dimension left unset is
 * an error. grid_idx has the call's grid_rank entries; prefetch holds the
 * num_scalar_prefetch SMEM copies of the prefetch arrays, valid only during
 * this call to the map (NULL when the call has none). The map runs only
 * inside calls that were given it (pl_pallas_call, pl_validate, the checks),
 * possibly more than once per grid point and, like the kernel, on several
 * host threads at once (see pl_pallas_call): it must return the same blocks
 * for the same arguments and guard any state it keeps at user. */
typedef void (*pl_index_map_fn)(const int64_t *grid_idx, const pl_ref *prefetch, int64_t *block_idx,
                                void *user);

#define PL_ZERO (-1) /* in PL_MAP: this block index is the constant 0 */

typedef struct pl_index_map {
    pl_index_map_fn fn;       /* function form; NULL: declarative form below */
    void *user;               /* passed to fn */
    int n;                    /* declarative: number of entries (the array's rank) */
    int8_t axis[PL_MAX_RANK]; /* declarative: grid axis per dimension, or PL_ZERO */
} pl_index_map;

/* PL_MAP(0, 2): block index = (grid[0], grid[2]). PL_MAP(PL_ZERO, 1): (0, grid[1]).
 * A declarative map can be analysed without running it. */
#ifndef __cplusplus
#define PL_MAP(...)                                                                           \
    ((pl_index_map){.fn = NULL,                                                               \
                    .n = (int)(sizeof((int8_t[]){__VA_ARGS__}) / sizeof(int8_t)),             \
                    .axis = {__VA_ARGS__}})
#define PL_MAP_FN(f, u) ((pl_index_map){.fn = (f), .user = (u)})
#else /* C++: built by inline functions, see the end of this header */
#define PL_MAP(...) (::pl_cxx::map(__VA_ARGS__))
#define PL_MAP_FN(f, u) (::pl_cxx::map_fn((f), (u)))
#endif

/* ---- BlockSpecs (rules B1-B7, T1-T7) ------------------------------------ */

#define PL_SQUEEZED (-1) /* a block dimension of size 1 that the kernel's Ref drops (B4) */

/* An output's revisits (P5), Pallas's RevisitMode. IMMEDIATE: a block may be
 * selected again only at consecutive grid points; selecting it after its
 * write-back is PL_EREVISIT. ANY: it is fetched back from HBM when selected
 * again (an extra HBM -> VMEM copy), with one buffer. */
typedef enum pl_revisit { PL_REVISIT_IMMEDIATE = 0, PL_REVISIT_ANY = 1 } pl_revisit;

typedef struct pl_block_spec {
    int rank;                    /* 0: the block is the whole array and the map is all zeros (B3) */
    int64_t block[PL_MAX_RANK];  /* elements per dimension, or PL_SQUEEZED */
    pl_index_map map;            /* a zero map ({0}) means all zeros (B3) */
    pl_memspace space;           /* PL_VMEM (default), PL_SMEM, PL_ANY, or PL_SEMAPHORE for a whole int32 array
                                    of regular semaphores' counts (M16) */
    int buffers;                 /* pipeline_mode=Buffered(k); 0: default (2), see P6 */
    const char *name;            /* for messages and reports; NULL: "in0", "out0", ... */
    /* B5, pl.Element(n, (lo, hi)): the index map returns an element offset into
     * the array padded by pad_lo before and pad_hi after; all non-squeezed
     * dims or none. Padding reads as poison and is dropped on writes (B6). */
    uint8_t element[PL_MAX_RANK];
    int64_t pad_lo[PL_MAX_RANK], pad_hi[PL_MAX_RANK];
    pl_revisit revisit;          /* outputs: PL_REVISIT_ANY allows non-consecutive revisits (P5) */
    /* K8, pl.BoundedSlice(block[d]) (emit_pipeline only): the index map
     * returns PL_DS(start, size) for dimension d, a slice of at most
     * block[d] elements starting at element `start` (kernel ABI 7) */
    uint8_t bounded[PL_MAX_RANK];
} pl_block_spec;

/* An index map's pl.ds(start, size) for a BoundedSlice dimension (K8):
 * element start and size, each 0 to PL_DS_LIMIT - 1, packed into one
 * index (a value out of that range packs as one the pipeline refuses). */
#define PL_DS_LIMIT ((int64_t)1 << 30)
#define PL_DS_TAG ((int64_t)1 << 61)
#define PL_DS_BAD (PL_DS_TAG | ((int64_t)1 << 60))
static inline int64_t PL_DS(int64_t start, int64_t size)
{
    if (start < 0 || size < 0 || start >= PL_DS_LIMIT || size >= PL_DS_LIMIT) return PL_DS_BAD;
    return PL_DS_TAG | size * PL_DS_LIMIT | start; /* size in bits 30-59, start in 0-29 */
}

/* PL_BLOCK(PL_MAP(0, 2), bm, bk): a block of (bm, bk) elements at block (i, k). */
#ifndef __cplusplus
#define PL_BLOCK(m, ...)                                                                          \
    ((pl_block_spec){.rank = (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),         \
                     .block = {__VA_ARGS__},                                                      \
                     .map = m})
#else /* C++: built by inline functions, see the end of this header */
#define PL_BLOCK(m, ...) (::pl_cxx::block(m, __VA_ARGS__))
#endif
/* The same with its name, which messages and reports use:
 * PL_BLOCK_NAMED("x", PL_MAP(0, 2), bm, bk). */
#ifndef __cplusplus
#define PL_BLOCK_NAMED(nm, m, ...)                                                                \
    ((pl_block_spec){.rank = (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),         \
                     .block = {__VA_ARGS__},                                                      \
                     .map = m, .name = (nm)})
#else
#define PL_BLOCK_NAMED(nm, m, ...) (::pl_cxx::named((nm), ::pl_cxx::block(m, __VA_ARGS__)))
#endif

/* ---- scratch (rule M2) --------------------------------------------------- */

typedef struct pl_scratch {
    pl_memspace space;          /* PL_VMEM, PL_SMEM or PL_SEMAPHORE */
    pl_dtype dtype;
    int rank;
    int64_t shape[PL_MAX_RANK];
    const char *name;           /* NULL: "scratch0", ... */
    pl_sem_kind sem_kind;       /* PL_SEMAPHORE: regular or DMA */
} pl_scratch;

#ifndef __cplusplus
#define PLTPU_VMEM(dt, ...)                                                                       \
    ((pl_scratch){.space = PL_VMEM, .dtype = (dt),                                                \
                  .rank = (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),            \
                  .shape = {__VA_ARGS__}})
/* n semaphores, all 0 at the start (M9, M8); pick one with pl_at. An array
 * of another shape (REGULAR((4, 3)), or one of shape ()) is a pl_scratch
 * with .space = PL_SEMAPHORE, .dtype = PL_I32, its .rank and .shape, and
 * .sem_kind (M2). */
#define PLTPU_SEMAPHORE(n)                                                                        \
    ((pl_scratch){.space = PL_SEMAPHORE, .dtype = PL_I32, .rank = 1, .shape = {(n)}, .sem_kind = PL_SEM_REGULAR})
#define PLTPU_SEMAPHORE_DMA(n)                                                                    \
    ((pl_scratch){.space = PL_SEMAPHORE, .dtype = PL_I32, .rank = 1, .shape = {(n)}, .sem_kind = PL_SEM_DMA})
#define PLTPU_SMEM(dt, ...)                                                                       \
    ((pl_scratch){.space = PL_SMEM, .dtype = (dt),                                                \
                  .rank = (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),            \
                  .shape = {__VA_ARGS__}})
#else /* C++: built by inline functions, see the end of this header */
#define PLTPU_VMEM(dt, ...) (::pl_cxx::scratch(PL_VMEM, (dt), __VA_ARGS__))
#define PLTPU_SEMAPHORE(n) (::pl_cxx::semaphores((n), PL_SEM_REGULAR))
#define PLTPU_SEMAPHORE_DMA(n) (::pl_cxx::semaphores((n), PL_SEM_DMA))
#define PLTPU_SMEM(dt, ...) (::pl_cxx::scratch(PL_SMEM, (dt), __VA_ARGS__))
#endif
/* Named forms: PLTPU_VMEM_NAMED("acc", PL_F32, bm, bn), PLTPU_SEMAPHORE_DMA_NAMED("sems", 2). */
#ifndef __cplusplus
#define PLTPU_VMEM_NAMED(nm, dt, ...)                                                             \
    ((pl_scratch){.space = PL_VMEM, .dtype = (dt),                                                \
                  .rank = (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),            \
                  .shape = {__VA_ARGS__}, .name = (nm)})
#define PLTPU_SMEM_NAMED(nm, dt, ...)                                                             \
    ((pl_scratch){.space = PL_SMEM, .dtype = (dt),                                                \
                  .rank = (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),            \
                  .shape = {__VA_ARGS__}, .name = (nm)})
#define PLTPU_SEMAPHORE_NAMED(nm, n)                                                              \
    ((pl_scratch){.space = PL_SEMAPHORE, .dtype = PL_I32, .rank = 1, .shape = {(n)}, .name = (nm),  \
                  .sem_kind = PL_SEM_REGULAR})
#define PLTPU_SEMAPHORE_DMA_NAMED(nm, n)                                                          \
    ((pl_scratch){.space = PL_SEMAPHORE, .dtype = PL_I32, .rank = 1, .shape = {(n)}, .name = (nm),  \
                  .sem_kind = PL_SEM_DMA})
#else
#define PLTPU_VMEM_NAMED(nm, dt, ...) (::pl_cxx::named((nm), PLTPU_VMEM(dt, __VA_ARGS__)))
#define PLTPU_SMEM_NAMED(nm, dt, ...) (::pl_cxx::named((nm), PLTPU_SMEM(dt, __VA_ARGS__)))
#define PLTPU_SEMAPHORE_NAMED(nm, n) (::pl_cxx::named((nm), PLTPU_SEMAPHORE(n)))
#define PLTPU_SEMAPHORE_DMA_NAMED(nm, n) (::pl_cxx::named((nm), PLTPU_SEMAPHORE_DMA(n)))
#endif

/* ---- the call -------------------------------------------------------------- */

typedef enum pl_semantics { PL_ARBITRARY = 0, PL_PARALLEL = 1 } pl_semantics;

/* pl_call and what it points to (name, the specs' names, the maps' user
 * data) are read during a call only; tilesim copies the names it reports. */
typedef struct pl_call {
    const char *name;                 /* for messages; NULL: "kernel" */
    pl_kernel_fn kernel;
    void *user;                       /* handed to the kernel by pl_kernel_user() */
    int grid_rank;                    /* 0: one grid point (G1) */
    int64_t grid[PL_MAX_GRID];        /* grid points per axis, each >= 1 */
    pl_semantics semantics[PL_MAX_GRID]; /* default arbitrary (G3) */
    int num_scalar_prefetch;          /* leading args copied whole into SMEM (M5) */
    int n_in;                         /* inputs, after the prefetch args */
    pl_block_spec in[PL_MAX_OPERANDS];
    int n_out;
    pl_block_spec out[PL_MAX_OPERANDS];
    int n_scratch;
    pl_scratch scratch[PL_MAX_SCRATCH];
    int64_t vmem_limit_bytes;         /* scoped VMEM limit; 0: the chip's default (M4) */
    /* input_output_aliases (M6): output alias[i].out shares the HBM buffer of
     * argument alias[i].in (counted over prefetch + inputs). The output
     * starts as a copy of the input, inputs read the shared buffer, and
     * revisiting its blocks is allowed (P5). */
    int n_alias;
    struct pl_alias { int in, out; } alias[PL_MAX_OPERANDS];
    /* CompilerParams(collective_id=...) (M15): has_collective_id 1 lets the
     * kernel take the barrier semaphore (pltpu_get_barrier_semaphore) */
    int has_collective_id;
    int collective_id;
    /* CompilerParams(allow_collective_id_without_custom_barrier=True): a
     * collective_id whose kernel never takes the barrier semaphore is
     * accepted; 0: refused, as Mosaic refuses it (M15) */
    int allow_collective_id_without_custom_barrier;
} pl_call;

/* ==== running it ================================================================ */

/* Defined below, in the order a reader needs them. */
typedef struct pl_options pl_options;
typedef struct pl_report pl_report;
typedef struct pl_chip pl_chip;

/* Validate and run `call`. args: the num_scalar_prefetch prefetch arrays, then
 * the n_in inputs. outs: n_out arrays whose dtype and shape the caller sets
 * (out_shape) and whose data the call fills. opt and report may be NULL.
 * Returns PL_OK or a negative PL_E* code (kernel/pallas.h); report->error
 * says what and where, and so does pl_last_error() on this thread.
 *
 * Lifetimes: every pointer given (call, args, outs, opt and what they point
 * to) is used only until the call returns, except opt->chip_spec, which
 * report->chip keeps (pl_report). The report is written on return, also on
 * failure (but for a PL_ENOMEM before the call could start, which leaves it
 * as it was); the outputs only by completed write-backs.
 *
 * Threads: several threads may run calls at once; calls share nothing but
 * what the caller gives them: they may read the same inputs and chip, but
 * must not share an output array (nor an input aliased to one, M6). The
 * kernel and the index maps run on the calling thread, or, on a chip with
 * several TensorCores per device (G4) unless opt->host_threads is 1, on
 * tilesim's host threads, one per TensorCore, at the same time: a kernel
 * that writes through pl_call.user (pl_kernel_user) needs its own locking.
 * on_step always runs on the calling thread, the steps in order. While
 * cores run on host threads, OpenBLAS is set to one thread (process-wide;
 * the setting comes back when the last such call ends). */
int pl_pallas_call(const pl_call *call, const pl_array *args, pl_array *outs, const pl_options *opt,
                   pl_report *report);

/* Validate only: everything pl_pallas_call checks before running, with the
 * same codes and messages. Runs no kernel and reads or writes no array data
 * (function index maps may run). Lifetimes and threads as pl_pallas_call. */
int pl_validate(const pl_call *call, const pl_array *args, const pl_array *outs, const pl_options *opt,
                pl_report *report);

/* The message of the last pl_pallas_call or pl_validate on this thread (""
 * after a success or before any call), also when it had no report. The
 * string is this thread's: it stays valid, and unchanged, until this
 * thread's next such call (the checks and pl_sweep make such calls) or its
 * exit. The race a check finds (PL_ERACE) is in its report only. */
const char *pl_last_error(void);

/* ---- options ------------------------------------------------------------- */

typedef enum pl_uninit { PL_UNINIT_NAN = 0, PL_UNINIT_ZERO = 1 } pl_uninit;
typedef enum pl_oob { PL_OOB_RAISE = 0, PL_OOB_POISON = 1 } pl_oob;
typedef enum pl_dma_mode { PL_DMA_EAGER = 0, PL_DMA_ON_WAIT = 1 } pl_dma_mode;

/* What the pipeline did for one operand at one grid point. */
typedef enum pl_step_action {
    PL_ACT_NONE = 0, /* not pipelined (prefetch, ANY) */
    PL_ACT_COPY,     /* input: a new block was copied HBM -> VMEM (P1) */
    PL_ACT_SKIP,     /* input: same block as the previous step, copy skipped (P2) */
    PL_ACT_NEW,      /* output: a new block, its buffer starts as garbage (P4) */
    PL_ACT_KEEP,     /* output: same block, the kernel gets the same buffer back (P3) */
    PL_ACT_FETCH,    /* output: a block revisited under PL_REVISIT_ANY, fetched back HBM -> VMEM (P5) */
} pl_step_action;

typedef struct pl_step_operand {
    pl_step_action action;
    int64_t block[PL_MAX_RANK];    /* block index at this step */
    int slot;                      /* buffer slot holding it */
    int64_t bytes;                 /* bytes copied in (COPY) */
    int wrote_back;                /* output: the previous block went to HBM before this step (P3) */
    int64_t wb_block[PL_MAX_RANK]; /* which block that was */
    int64_t wb_bytes;
} pl_step_operand;

/* Handed to pl_options.on_step before the kernel runs at each grid point,
 * and once more after the last (final = 1) for the last write-backs.
 * Lifetimes: info and the names it points to are tilesim's and valid only
 * during that call of on_step; copy what you keep. */
typedef struct pl_step_info {
    int64_t step;                  /* steps run so far on this core */
    int core;
    int final;
    int grid_rank;
    int64_t idx[PL_MAX_GRID];      /* the grid point */
    int n_operands;                /* same order as pl_report.op */
    const char *names[PL_MAX_CALL_OPERANDS];
    int ranks[PL_MAX_CALL_OPERANDS];
    pl_step_operand op[PL_MAX_CALL_OPERANDS];
} pl_step_info;

/* Called during the call only, on the calling thread, one step after the
 * other: a call with a recorder walks its TensorCores in order (G4), core 0's
 * steps first. */
typedef void (*pl_step_fn)(const pl_step_info *info, void *user);

/* pl_options: how a call runs. A zeroed struct (or opt = NULL) is the
 * default: chip v5e, NaN poison, checks on, grid order, eager copies, a
 * megacore chip's cores on host threads of their own. */
struct pl_options {
    const char *chip;   /* chip preset by name ("v5e", the default when NULL) */
    const pl_chip *chip_spec; /* a what-if chip (pl_chip_load); overrides chip */
    pl_uninit uninit;   /* what uninitialized memory holds (V1): NaN / int min, or zero */
    pl_oob oob_reads;   /* reads past the end (pl_get, pl_load, a DMA source, an input block past the
                           array): end the call (raise, default) or read poison (V2, B7); writes always fail */
    int checks_off;     /* 1: no poison fills, no NaN, write-protection or race tracking (V1, V3, V4):
                           faster, for kernels already verified; bounds (V2) stay checked */
    int strict;         /* 1: a NaN reaching HBM (V1) and a write into an input block (V3) are errors */
    uint64_t seed;      /* nonzero: visit each parallel axis in a shuffled order seeded by this (V4) */
    pl_dma_mode dma_mode; /* manual copies move data at start (eager, default) or when waited (M7) */
    int cost_only;      /* walk the grid and time it, but touch no data: arrays may have data = NULL
                           (except scalar-prefetch arrays, which index maps read) */
    const char *trace_path; /* write a Chrome trace-event JSON (Perfetto) here; NULL: none. Written to a
                               temporary file beside it and renamed into place when the call succeeds: a
                               failed call leaves an existing file as it was; a device (/dev/null, a FIFO)
                               is written directly */
    pl_step_fn on_step; /* called at each grid point (a recorder); NULL: none */
    void *on_step_user;
    int host_threads;   /* host threads that walk a megacore chip's TensorCores (G4): 0, one per
                           TensorCore up to the host's physical cores; 1, the cores one after the
                           other; negative: PL_EINVAL. Results, outputs and reports are identical
                           either way. In order regardless: with on_step, checks_off, aliases,
                           ANY operands, semaphores, an array both input and output, or too
                           little host memory for every core's buffers at once */
    int64_t trace_limit_bytes; /* with trace_path: refuse the call (PL_EINVAL, before anything runs or any
                                  file is made) when the trace's estimated size exceeds this, and drop a trace
                                  that comes out larger all the same (the estimate counts grid steps only).
                                  0: the default, PL_TRACE_LIMIT_DEFAULT; negative: no limit */
    int64_t vmem_limit_bytes; /* nonzero: the scoped VMEM limit of the call, in place of its own
                                 pl_call.vmem_limit_bytes (`--vmem-limit`); at most the chip's
                                 physical VMEM, negative: PL_EINVAL (M4) */
    int check_dma_modes; /* pl_kernel_run (`tilesim run` and `verify --check-dma-modes`): run the call
                            twice, copies moving their data at start and when waited, and fail with
                            PL_ERACE where the outputs differ (pl_check_dma_modes; M7, M8) */
};
/* 256 MiB: a trace far larger than Perfetto opens comfortably; a grid of a million steps writes ~1 GB */
#define PL_TRACE_LIMIT_DEFAULT ((int64_t)256 << 20)

/* ---- the report -------------------------------------------------------------- */

/* A finding of the checks: something the kernel got wrong that hardware
 * would hide (V1, V3, V4). The first few are kept in the report. */
typedef enum pl_finding_kind {
    PL_FIND_POISON = 1,   /* NaN (uninitialized data) written back to HBM (V1) */
    PL_FIND_UNWRITTEN,    /* an output block written back though no op wrote it (P4) */
    PL_FIND_INPUT_WRITE,  /* a write into an input block (V3) */
    PL_FIND_UNSELECTED,   /* output blocks no grid point selects: never written (P10) */
    PL_FIND_RACE,         /* parallel grid points share an output block: a race on megacore chips (V4) */
    PL_FIND_DMA_INFLIGHT, /* a kernel op read or wrote bytes of a copy still in flight before its wait (M7) */
    PL_FIND_UNUSED_COPY,  /* a copy descriptor made and never started or waited: the copy never happens (M7) */
    PL_FIND_PARALLEL_WAIT, /* a copy started at one grid point and waited at another across a parallel axis (G4) */
    PL_FIND_NO_HANDSHAKE, /* a remote copy into a device's VMEM before anything from it arrived: no barrier (M15) */
} pl_finding_kind;

/* One run_scoped allocation live at the kernel's scoped VMEM peak (K4): what made it ("pl_run_scoped:
 * types[0] (VMEM f32 acc)", "pltpu_emit_pipeline: its double buffers") and the bytes it took, laid out. */
#define PL_MAX_SCOPED_PEAK 8
typedef struct pl_scoped_alloc {
    char what[64];
    int64_t bytes;
} pl_scoped_alloc;

typedef struct pl_finding {
    pl_finding_kind kind;
    char rule[8];                /* "V1", "P4", ... */
    int operand;                 /* index into pl_report.op, -1 if none */
    int64_t point[PL_MAX_GRID];  /* the grid point that wrote it */
    int64_t block[PL_MAX_RANK];  /* the block written back */
    char msg[1024];              /* what, where, and the likely cause */
} pl_finding;

/* The resources a run keeps busy; the bound is the one busy for the largest
 * fraction of the run (pl_report.busy). COMPUTE: the MXU. SCALAR: element
 * access (pl_get / pl_set loops) on the scalar unit. VMEM: the block ops'
 * vector loads and stores. ICI: a mesh device's copies to other devices.
 * LATENCY: cores waiting for copies whose issue latency (DMA, ICI hops) the
 * bandwidth does not explain. DCN: a multislice mesh's busiest host NIC
 * (copies between slices, M14; mesh reports only). */
typedef enum pl_bound {
    PL_BOUND_NONE = 0, PL_BOUND_COMPUTE, PL_BOUND_VPU, PL_BOUND_HBM, PL_BOUND_OVERHEAD, PL_BOUND_SCALAR,
    PL_BOUND_VMEM, PL_BOUND_ICI, PL_BOUND_LATENCY, PL_BOUND_DCN,
    PL_BOUND_COUNT
} pl_bound;

/* "compute", "VPU", "HBM", "step overhead", "scalar", "VMEM", "ICI",
 * "latency", "DCN"; "none" for anything else. A static string: valid for the
 * process, any thread. */
const char *pl_bound_name(pl_bound b);
/* The resource as the report's busy line names it: "MXU" for
 * PL_BOUND_COMPUTE, else as pl_bound_name. Static string, any thread. */
const char *pl_resource_name(pl_bound b);

typedef struct pl_operand_report {
    char name[PL_NAME_MAX];
    pl_role role;
    pl_memspace space;
    pl_dtype dtype;
    int rank;                     /* of the block, squeezed dims counted as 1 */
    int64_t block[PL_MAX_RANK];   /* elements (squeezed: 1) */
    int buffers;                  /* VMEM buffers this operand takes */
    int64_t block_bytes;          /* logical bytes of one block */
    int64_t vmem_bytes;           /* bytes of one block as laid out in tiles (T6) */
    int64_t copies;               /* HBM -> VMEM copies made (inputs) */
    int64_t skipped;              /* copies skipped: same block as before (P2) */
    int64_t writebacks;           /* VMEM -> HBM copies (outputs) */
    int64_t bytes_in, bytes_out;  /* HBM bytes moved, edge blocks clipped */
    int64_t fetchbacks;           /* outputs: revisited blocks copied back HBM -> VMEM (P5, PL_REVISIT_ANY);
                                     their bytes count in bytes_in */
    int single_buffered;          /* 1: given one buffer because its block never changes over the grid (P6, P7) */
    int64_t array_bytes;          /* logical bytes of its HBM array: bytes_in beyond it are re-reads */
    int tile_rows;                /* the rows of its array's (rows, 128) memory tile, which the block passed (T8);
                                     0: not a tiled VMEM block (rank < 2, SMEM, ANY) */
} pl_operand_report;

typedef struct pl_scratch_report {
    char name[PL_NAME_MAX];
    pl_memspace space;
    pl_dtype dtype;
    int64_t bytes;                /* as laid out in tiles */
    int rank;                     /* its shape, as declared */
    int64_t shape[PL_MAX_RANK];
} pl_scratch_report;

/* ---- the op profile (XProf's HLO op profile, for a simulated run) ----------------
 *
 * One row per (category, name): each pl_ / pltpu_ function the kernel called
 * (its block ops), each operand's pipeline copies, the per-step overhead (P9)
 * and the time cores waited. time_s is the row's part of the report's
 * time_s on the timeline of the TensorCore that finished last (G4), so the
 * rows' time_s add up to pl_report.time_s; DMA rows overlap compute: they
 * show their busy time and bandwidth, are marked overlapped and add 0. */
#define PL_MAX_PROFILE 64 /* rows a report keeps; past it, ops share the last row, "(other ops)" */
typedef enum pl_prof_cat {
    PL_PROF_MXU = 0,     /* pl_dot */
    PL_PROF_VPU,         /* elementwise ops, reductions, copies, masked loads and stores */
    PL_PROF_EUP,         /* transcendentals (exp, log, rsqrt, tanh, ...): VPU time at their weight */
    PL_PROF_SCALAR,      /* pl_get / pl_set element accesses */
    PL_PROF_DMA,         /* pipeline copies in / write-backs per operand, and manual copies: overlapped */
    PL_PROF_OVERHEAD,    /* the per-step overhead (P9) */
    PL_PROF_DMA_WAIT,    /* cores waiting for copies beyond the overhead (exposed DMA) */
    PL_PROF_REMOTE_WAIT, /* a mesh device waiting for other devices' copies and signals */
    PL_PROF_OTHER,       /* ops past PL_MAX_PROFILE rows */
    PL_PROF_COUNT
} pl_prof_cat;

/* "MXU", "VPU", "EUP", "scalar", "DMA", "overhead", "DMA wait", "remote wait", "other"; "?" past them. */
const char *pl_prof_cat_name(pl_prof_cat c);

typedef struct pl_profile_row {
    pl_prof_cat cat;
    char name[48];       /* "pl_dot", "pl_exp", "copy in: x", "write-back: o", "step overhead (P9)", ... */
    int64_t count;       /* ops, copies or steps, over all cores */
    double busy_s;       /* time the unit was busy with them, summed over cores (rates divide by this) */
    double time_s;       /* its part of pl_report.time_s (0 when overlapped) */
    double flops;        /* FLOPs as logged (2mnk for a dot, before MXU padding) */
    double vmem_bytes;   /* ops: bytes read and written in VMEM (inputs + output) */
    double hbm_bytes;    /* DMA rows: bytes to or from HBM (or over ICI for a copy to another device) */
    int overlapped;      /* 1: ran beside compute; time_s is 0 and busy_s is not part of the total */
} pl_profile_row;

/* pl_report: what a call did, filled by pl_pallas_call (and pl_validate up
 * to the VMEM budget). All by value except chip, so a report may be copied,
 * kept and freed with its memory.
 * chip: the chip the call ran on: a preset (lives for the process) or the
 * caller's opt->chip_spec, which must then outlive every use of the report
 * (pl_report_print, pl_report_json, the sweep printers, pl_roofline_svg).
 * NULL when the call failed before a chip was chosen (PL_EINVAL). */
struct pl_report {
    int status;                   /* what pl_pallas_call returned */
    char error[PL_MSG_MAX];       /* the detailed message when status != PL_OK */
    char warnings[PL_MSG_MAX];    /* one warning per line (T6, P6) */
    int n_warnings;
    char call_name[64];
    const pl_chip *chip;
    int grid_rank;
    int64_t grid[PL_MAX_GRID];
    int64_t steps;                /* grid points run */
    int64_t nested_steps;         /* steps of nested pipelines (pltpu_emit_pipeline, K3), each a step's overhead */
    int n_operands;               /* prefetch + inputs + outputs */
    pl_operand_report op[PL_MAX_CALL_OPERANDS];
    int n_scratch;
    pl_scratch_report scratch[PL_MAX_SCRATCH];
    int64_t vmem_bytes;           /* blocks x buffers + VMEM scratch */
    int64_t scoped_peak_bytes;    /* run_scoped VMEM live at once inside the kernel, at most (K4; emit_pipeline's
                                     buffers are run_scoped), on the core that needed most */
    int n_scoped_peak;            /* the allocations live at that peak (the newest PL_MAX_SCOPED_PEAK) */
    pl_scoped_alloc scoped_peak[PL_MAX_SCOPED_PEAK];
    int64_t vmem_limit;           /* the scoped limit checked against */
    int64_t smem_bytes;
    double mxu_flops;             /* 2mnk summed over pl_dot */
    double vpu_flops;             /* elementwise work, one per element */
    int64_t hbm_bytes;            /* bytes_in + bytes_out over all operands, plus dma_bytes */
    int64_t dma_copies;           /* manual copies started (kernel/pltpu.h) */
    int64_t dma_bytes;            /* bytes they moved to or from HBM */

    /* timing on the chip (rules P6, P8, P9); sim/timing/timing.h has the model */
    int cores;                    /* TensorCores that ran grid steps */
    double time_s;                /* simulated wall time of the call */
    double compute_s;             /* kernel time (MXU + VPU + scalar), summed over cores */
    double mxu_s, vpu_s;          /* its parts (MXU, VPU with EUP, scalar unit) */
    double scalar_s;              /* pl_get / pl_set element accesses on the scalar unit, summed over cores */
    int64_t scalar_ops;           /* those accesses: one scalar-unit cycle each (1 ns if the clock is unknown) */
    int64_t eup_elems;            /* elements through the EUP (exp, log, rsqrt, sqrt, tanh, sigmoid, gelu);
                                     their time is part of vpu_s */
    double overhead_s;            /* per-step overhead, summed over cores */
    double dma_exposed_s;         /* time cores waited for copies beyond the overhead */
    double mxu_flops_padded;      /* MXU work after padding to the MXU width */
    pl_dtype mxu_dtype;           /* dtype of the dots that did the most work */
    double flops_per_s;           /* mxu_flops / time_s */
    double peak_fraction;         /* flops_per_s / the cores' MXU peak for mxu_dtype */
    double intensity;             /* mxu_flops / hbm_bytes, FLOP per HBM byte */
    double critical_intensity;    /* the device's MXU peak / HBM bandwidth */
    double hbm_bw_achieved;       /* hbm_bytes / time_s, bytes per second */
    double hbm_bw_fraction;       /* hbm_bw_achieved / the chip's HBM bandwidth */
    double vpu_fraction;          /* vpu_s / (cores x time_s): how busy the VPUs were */
    int mxu_light;                /* 1: the MXU did little of the work, so the headline is bandwidth, not FLOP/s */
    /* G4: the TensorCore that finished last and its parts, which add up to
     * time_s (compute_s, overhead_s, dma_exposed_s are sums over cores) */
    int slowest_core;
    double core_compute_s, core_exposed_s, core_overhead_s;
    /* busy[b]: the fraction of time_s resource b was busy (0-1), indexed by pl_bound ([PL_BOUND_NONE]
       is 0): MXU, VPU, scalar, step overhead and DMA-latency waits per core; HBM bytes / the device's HBM
       bandwidth; VMEM bytes of the block ops / a core's VMEM bandwidth; ICI bytes sent / all the chip's links */
    double busy[PL_BOUND_COUNT];
    /* a kernel definition's ideal (sim/kdef.h .flops, .bytes; 0: not given, or not run from a definition) */
    double ideal_flops;           /* the algorithm's FLOPs */
    double ideal_bytes;           /* its HBM bytes, each array moved once */
    double ideal_s;               /* the longer of those FLOPs at the cores' peak and those bytes at HBM's, seconds */
    double efficiency;            /* ideal_s / time_s (0-1); 0: unknown */
    pl_bound bound;               /* the resource with the largest busy fraction (one rule, sim/timing/bound.c) */
    char bound_msg[1024];         /* the bound in one sentence */

    /* what the checks found (V1, V3); also summarized in warnings */
    int n_findings;               /* may exceed PL_MAX_FINDINGS; the first ones are kept */
    pl_finding findings[PL_MAX_FINDINGS];

    /* a device of a mesh (sim/tilesim_mesh.h): copies it sent to other devices over ICI (M11), and the
       time its cores waited for other devices' copies and signals (a synchronous collective waits long) */
    int64_t ici_copies, ici_bytes;
    double remote_wait_s;
    double dcn_wait_s;  /* of remote_wait_s, waits on semaphores that copies from another slice fill (M14) */

    /* the op profile (above): its rows in the order first met; pl_profile_order sorts them */
    int n_profile;
    int64_t profile_other;        /* ops that fell into the last row past PL_MAX_PROFILE */
    pl_profile_row profile[PL_MAX_PROFILE];
};

/* Human-readable report: grid, per-operand traffic, VMEM footprint, FLOPs,
 * simulated time and what bounds it; a failed call's report prints its
 * error. r or f NULL: nothing. Reads r->chip (see pl_report). Any thread. */
void pl_report_print(const pl_report *r, FILE *f);
/* The line to paste into the real pallas_call's cost_estimate= from what
 * the run counted: "pl.CostEstimate(flops=F, transcendentals=T,
 * bytes_accessed=B)", F = MXU FLOPs (2mnk per pl_dot) + VPU element ops,
 * T = elements through the EUP, B = HBM bytes moved (pipeline copies,
 * write-backs and manual DMA: re-fetches count, as on the chip). XLA
 * schedules around the call by it. Into buf (n bytes, always terminated);
 * returns the length it needs, as snprintf. */
int pl_cost_estimate(const pl_report *r, char *buf, size_t n);
/* The call's scoped VMEM as XLA lists it when a TPU program runs out of
 * VMEM, so that the listing met on hardware reads the same here: the total
 * against the scoped limit ("Ran out of memory in memory space vmem. Used
 * 33.00M of 16.00M vmem. ..." when over it), then every scoped allocation,
 * largest first: its size with tile padding, what it is (an operand's block
 * times its buffers, or a scratch buffer), its shape with layout and tiling
 * (f32[2,512,1024]{2,1,0:T(8,128)}, bf16[...]{...:T(16,128)(2,1)} on v7x),
 * its unpadded size and the padding's extra bytes. r must hold the call's
 * operands (any report past validation, failed with PL_EVMEM too). PL_OK,
 * or PL_EINVAL (NULL argument, no chip, or no limit: the call's own limit
 * was refused, over the physical VMEM), printing nothing. Any thread. */
int pl_vmem_report(const pl_report *r, FILE *f);
/* The same as one JSON object (and a newline). r or f NULL: nothing. */
void pl_report_json(const pl_report *r, FILE *f);

struct pl_check; /* sim/tilesim_check.h */
/* The same with a "verification" member from check (verdict, max_abs_err,
 * norm_err, pass_below, fail_above, n_nan, worst, blame); check NULL: none. */
void pl_report_json_with(const pl_report *r, const struct pl_check *check, FILE *f);

/* ---- chips ------------------------------------------------------------- */

/* A chip's figures (docs/CHIPS.md). Presets are read-only and live for the
 * process; a what-if chip is the caller's value (pl_chip_load). */
struct pl_chip {
    char name[32];               /* "v5e" */
    /* compute, per TensorCore */
    double bf16_flops;           /* MXU peak, bf16, FLOP/s */
    double int8_ops;             /* MXU peak, int8, OP/s; 0: no int8 MXU path: an int8 x int8 pl_dot is an error
                                    (rule T10, XLA E2001) */
    double fp8_ops;              /* MXU peak, fp8, FLOP/s; 0: no fp8 path: an fp8 x fp8 pl_dot is an error (T10) */
    double f32_fraction;         /* f32 matmul rate / bf16 rate (bf16_3x passes: 1/3) */
    double vpu_flops;            /* VPU elementwise rate, FLOP/s (f32) */
    int mxu_count;               /* MXUs per TensorCore */
    int mxu_width;               /* MXU is width x width; matmul dims pad to it */
    double clock_hz;             /* 0: not published */
    /* memory */
    double hbm_bw;               /* HBM bandwidth of one device, bytes/s, shared by its cores */
    int64_t hbm_bytes;           /* HBM capacity of one device */
    int64_t vmem_bytes;          /* physical VMEM per TensorCore */
    int64_t vmem_default_limit;  /* default scoped VMEM limit */
    int64_t smem_bytes;          /* SMEM per TensorCore */
    int sublanes_16bit;          /* native sublanes of 16-bit types: 16 on v7, else 8 (T6); the memory tile rows of
                                    a 16-bit array whose rows it divides (T8) */
    int sublanes_8bit;           /* memory tile rows of 8-bit types in such an array: 32 on every preset (T8) */
    int sublanes_4bit;           /* the same for 4-bit types: 64 (T8; no 4-bit dtype yet) */
    /* topology */
    int cores_per_device;        /* TensorCores one JAX device drives: 2 on megacore chips (v4, v5p); what-if
                                    chips 1 to 64 (G4) */
    int devices_per_chip;        /* JAX devices per package: 2 on v7x */
    int ici_links;               /* inter-chip links per chip */
    double ici_bw;               /* bytes/s per link, one way */
    /* model choices */
    double step_overhead_s;      /* fixed cost of one grid step (rule P9) */
    double dma_latency_s;        /* from issuing a DMA to its first byte */
    double ici_latency_s; /* one hop of an inter-chip link */
    double vmem_bw;              /* VMEM bandwidth of one TensorCore, bytes/s: roofline, floor of op times (0: none) */
    /* SparseCores of one device (JAX's jax/_src/pallas/mosaic/tpu_info.py, SparseCoreInfo; rule K5):
       where pl_kernel's PL_MESH_VECTOR_SUBCORES runs. sc_cores 0: none (v4, v5e) */
    int sc_cores;                /* SparseCores per device: 4 on v5p, 2 on v6e and on a v7x device */
    int sc_subcores;             /* vector subcores per SparseCore: 16 */
    int sc_lanes;                /* f32 lanes of a vector subcore: 8, 16 on v7x */
    int sc_view;                 /* 1: this chip is the vector-subcore mesh pl_kernel derives from a chip: each
                                    of its cores_per_device "TensorCores" is a vector subcore, with no MXU (K5);
                                    0 on presets and chip files */
    int64_t sc_vmem_bytes;       /* VMEM per vector subcore: 512 KiB (256 KiB on v6e) */
    /* the cost of a pipeline step beyond its fixed overhead (issue 22; docs/CHIPS.md) */
    double dma_issue_s;          /* seconds the core's scalar slot spends per DMA start and per semaphore wait */
    double dma_row_bytes;        /* contiguous HBM bytes per row at which a strided copy reaches full bandwidth
                                    (efficiency min(1, row / this)); 0: every copy at full bandwidth */
    double mxu_fill_cycles;      /* MXU fill and drain per pl_dot, cycles at clock_hz (or the MXU's implied clock) */
    double prologue_s;           /* seconds of a pipeline's prologue on each core, before its first copy */
    int dma_regular_sems;        /* 1: a DMA may signal a regular semaphore, by 1 when it ends (v6e and later:
                                    JAX's test_dma_with_regular_semaphore; rule M8); 0: DMA semaphores only */
    /* the data-center network between the slices of a multislice mesh (rule M14; docs/CHIPS.md) */
    int chips_per_host;          /* chips one host (its NICs) serves */
    double dcn_bw;               /* bytes/s of one host's NICs, each way, shared by its chips' copies */
    double dcn_latency_s;        /* from a copy's issue to its first byte arriving in another slice */
    int mxu_fp8_operands;        /* 1: the MXU takes fp8 x fp8 operands (rule T10): at fp8_ops where > 0, else
                                    widened to bf16 (v5e, v5p, v6e; JAX's tpu_info.is_matmul_supported); 0: E2001 (v4) */
};

/* The preset named `name` ("v4", "v5e", ...), or NULL (also for NULL). The
 * pointer is into the read-only preset table: valid for the process. */
const pl_chip *pl_chip_find(const char *name);
/* The default preset (v5e), which a NULL pl_options.chip means. */
const pl_chip *pl_chip_default(void);
/* The number of presets; pl_chip_at(0 .. count - 1) lists them (NULL
 * outside). Like pl_chip_find, the pointers live for the process. */
int pl_chip_count(void);
const pl_chip *pl_chip_at(int i); /* the i-th preset, or NULL */
/* Read a what-if chip from a text file of `key = value` lines (# comments);
 * `base = v5e` (the first key) starts from a preset. A file without `base`
 * starts from the default preset (v5e): then, on success, err holds a note
 * saying so (else err is ""), which programs should show. On error returns
 * PL_EINVAL and writes a message naming the file, line and key into err,
 * bytes outside printable ASCII escaped as \xNN. A path that is not a
 * regular file (a directory) is an error that says so. *out is written on
 * success only; err may be NULL (or errlen 0) for no message. The chip is
 * the caller's: it must outlive the reports of calls that ran on it. No
 * shared state: any thread. */
int pl_chip_load(const char *path, pl_chip *out, char *err, size_t errlen);
/* Parse the same format from a string; `where` names it in messages (NULL:
 * "chip"). Returns and writes as pl_chip_load. */
int pl_chip_parse(const char *text, const char *where, pl_chip *out, char *err, size_t errlen);
/* Write chip as a chip file that pl_chip_load reads back to the same
 * figures: `base =` the preset it most likely started from
 * (pl_chip_preset_of), its name, then every figure that differs from
 * that preset's. PL_OK; PL_EINVAL for a
 * NULL argument or a stream in error. */
int pl_chip_write(FILE *f, const pl_chip *chip);
/* The preset named as the chip is, else the one sharing the most of its
 * figures (a chip file's base, most likely); NULL only for NULL. */
const pl_chip *pl_chip_preset_of(const pl_chip *chip);
/* The MXU's peak for a dtype, FLOP/s per TensorCore: bf16 (and f16) at the
 * bf16 peak, f32 at f32_fraction of it, int8 at the int8 peak if any.
 * chip must not be NULL. Pure: any thread. */
double pl_chip_mxu_rate(const pl_chip *chip, pl_dtype t);
/* The rows of the (rows, 128) memory tile an array of dtype t gets when its
 * second-minor dimension has `rows` rows, as Mosaic lays out kernel operands
 * (rule T8): the chip's tile for the dtype's width (8 for 32-bit types,
 * sublanes_16bit, sublanes_8bit) when it divides rows, else 8 when rows >= 8,
 * else the smallest power of two >= rows and >= 32 / bits. A block's
 * second-minor size must be a multiple of it or the whole dimension (E2002).
 * chip must not be NULL. Pure: any thread. */
int pl_chip_tile_rows(const pl_chip *chip, pl_dtype t, int64_t rows);
/* JAX devices one host's NICs serve (rule M14): chips_per_host x
 * devices_per_chip, at least 1. chip must not be NULL. */
int pl_chip_devices_per_host(const pl_chip *chip);

/* ---- sweeps: many calls in cost-only mode, on every host core ---------------- */

#define PL_SWEEP_PARAM_BYTES 256

/* Describe configuration i: fill call, args (prefetch + inputs) and outs
 * (shapes and dtypes; data may stay NULL). `param` is PL_SWEEP_PARAM_BYTES
 * of zeroed memory that lives as long as the call: put the kernel's
 * parameters there and point call->user at it. Return PL_OK, or an error
 * code to record in that configuration's report without running it.
 * Called once per configuration, in no fixed order, on the sweep's worker
 * threads, several at once: what it reads through user must not change
 * during the sweep, and anything it writes there needs a lock. call, args,
 * outs and param are the worker's and valid until that configuration's
 * call returns. */
typedef int (*pl_sweep_build_fn)(int i, pl_call *call, pl_array *args, pl_array *outs, void *param, void *user);
/* done of total configurations finished; on the calling thread. */
typedef void (*pl_sweep_progress_fn)(int done, int total, void *user);

typedef struct pl_sweep_options {
    int threads;                   /* host threads (at most 64); 0: one per core (hwloc), pinned */
    pl_sweep_progress_fn progress; /* called from the calling thread about 10 times a second, and at the end */
    void *progress_user;
    /* pl_kernel_sweep only: 1, search what an autotuner searches: each
     * configuration may set any scoped VMEM limit up to the chip's physical
     * VMEM, so only that is the wall (M4); reports[i].vmem_limit is then the
     * limit the configuration needs, as a kernel would set it (its
     * definition's own, or the chip's default, when that holds its buffers;
     * else their bytes rounded up to a MiB). Ignored when
     * opt->vmem_limit_bytes pins the limit. */
    int vmem_limit_auto;
} pl_sweep_options;

/* Run configurations 0..n-1 with pl_pallas_call in cost-only mode (opt's
 * other fields apply, but for trace_path: no trace) and fill reports[i]
 * (n of them); a configuration that fails validation, or whose build
 * returns an error, has reports[i].status < 0 and the reason in
 * reports[i].error. Returns PL_OK, or PL_EINVAL (n < 0, build NULL, reports
 * NULL with n > 0); a configuration's own errors (PL_ENOMEM included) are
 * in its report. opt and sopt may be NULL.
 * Threads: configurations run on several host threads at once, so build,
 * the kernels, their index maps and opt->on_step run concurrently (see
 * pl_sweep_build_fn); reports are complete when pl_sweep returns. Several
 * sweeps may run at once. */
int pl_sweep(int n, pl_sweep_build_fn build, void *user, const pl_options *opt, const pl_sweep_options *sopt,
             pl_report *reports);

/* Printing a sweep's reports (what `tilesim sweep KERNEL` prints). labels[i]
 * names configuration i ("br=8 cols=512", pl_kernel_format; labels or
 * labels[i] NULL: none). Legal configurations (status PL_OK) come fastest
 * first, then the rejected ones in list order with the first sentence of
 * their reason (the table: pl_sweep_rejected_shown of them). The columns lead with achieved HBM bandwidth against the
 * chip's, then the MXU rate, then (when some report has one, from a
 * kernel definition's .flops and .bytes) the efficiency against the ideal:
 * %ideal in the table, ideal_pct in JSON. Each printer returns PL_OK, PL_EINVAL (bad
 * arguments, a write error), PL_ENOMEM. They read each report's chip (see
 * pl_report).
 * Threads: any thread, several at once (the sort's state is per thread). */

/* order[0..n): the legal indexes fastest first, then the rejected ones;
 * returns the number of legal ones. reports and order hold n entries (no
 * checks: n >= 0, neither NULL). Any thread. */
int pl_sweep_rank(int n, const pl_report *reports, int *order);
/* "over budget" (PL_EVMEM) or "illegal": a static string. r not NULL. */
const char *pl_sweep_reject_kind(const pl_report *r);
/* How many of n_rejected rejected configurations a text table lists: all
 * when top <= 0, else as many as the ranked rows it shows, at least 20 (a
 * sweep of a small problem rejects most of its grid, and a page of reasons
 * would hide the answer); the table counts the rest. */
int pl_sweep_rejected_shown(int n_rejected, int64_t top);
/* A ranked table; top > 0 shows only the top fastest legal ones. */
int pl_sweep_print_table(FILE *f, int n, const pl_report *reports, const char *const *labels, int top);
/* One row per configuration: rank,config,status,vmem_bytes,steps,time_s,hbm_gbps,hbm_pct,tflops,mxu_pct,bound,reason */
int pl_sweep_print_csv(FILE *f, int n, const pl_report *reports, const char *const *labels);
/* One JSON object: kernel (the calls' name), chip, evaluated, n_legal, n_rejected, legal (ranked, each with
 * config, params parsed from its label, time_s, hbm_gbps, ...), rejected
 * (config, params, kind, reason, error), best. */
int pl_sweep_print_json(FILE *f, int n, const pl_report *reports, const char *const *labels);
/* The roofline plot (MXU + VPU FLOP per HBM byte against TFLOP/s, with the
 * HBM, MXU and VPU roofs of chip) as an SVG file at path; title names the
 * kernel. msg gets a one-line result or the error (msg NULL: none).
 * Returns PL_OK, PL_EINVAL (bad arguments, an unwritable path, a write
 * error), PL_ENOMEM. */
int pl_roofline_svg(const char *path, int n, const pl_report *reports, const char *const *labels, const pl_chip *chip,
                    const char *title, char *msg, size_t msglen);

/* ---- the op profile and the roofline of a run (sim/profile*.c, sim/tools/roofline_run.c) ---- */

/* The rows of r's profile in the order a reader wants them (the few ops worth
 * attention first): by time_s, overlapped DMA rows by busy_s after the rest;
 * indexes into r->profile written to order (PL_MAX_PROFILE entries); returns
 * r->n_profile. */
int pl_profile_order(const pl_report *r, int *order);
/* A row's achieved FLOP/s (flops / busy_s), the peak of its unit on r's chip
 * (per TensorCore: MXU at r->mxu_dtype, VPU, scalar unit; 0 for rows with no
 * FLOPs), and its bandwidth (bytes / busy_s) against HBM (DMA rows) or VMEM
 * (ops); intensity: FLOP per VMEM byte. */
typedef struct pl_profile_rates {
    double flops_per_s, peak_flops, bw, peak_bw, intensity;
    int vmem_bound;   /* under the VMEM roof: vmem_bw x intensity < the unit's peak */
} pl_profile_rates;
/* The rates of one row of r (zeros when r, row or r->chip is NULL). Any thread. */
pl_profile_rates pl_profile_rates_of(const pl_report *r, const pl_profile_row *row);
/* The profile as a table on f: sorted (pl_profile_order), a total line equal
 * to r->time_s. A failed call prints its error. r or f NULL: nothing. */
void pl_profile_print(const pl_report *r, FILE *f);
/* The same as one JSON object (and a newline): call, chip, time_s, total_s,
 * cores, slowest_core, rows (sorted, each with its rates). r or f NULL: nothing. */
void pl_profile_json(const pl_report *r, FILE *f);
/* The roofline of a run as SVG on f: each op row with FLOPs placed at its
 * intensity (FLOP per VMEM byte) and achieved FLOP/s under the HBM and VMEM
 * ceilings and the MXU and VPU roofs of r's chip (per TensorCore); the run
 * itself at its FLOP per HBM byte. Returns 0, or -1 when r or f is NULL, r failed or has no chip, or on a
 * write error. */
int pl_roofline_run_svg(const pl_report *r, const char *title, FILE *f);

/* ---- helpers: formatting, host memory --------------------------------------------- */

/* 1536 -> "1.5 KiB": how reports print sizes. Writes at most n bytes into
 * buf and returns buf. Any thread. */
const char *pl_format_bytes(double bytes, char *buf, size_t n);
/* 2.1e-6 -> "2.10 us": how reports print times; as pl_format_bytes. */
const char *pl_format_time(double seconds, char *buf, size_t n);

/* Crash reports (kernel/guard.c). A kernel is your C code running in the
 * program's process: when it segfaults, calls abort(), exit() or
 * pthread_exit(), the process cannot go on. After pl_guard_kernels, such
 * an end inside a kernel (or inside a kernel definition's build, inputs or
 * reference callback, sim/kdef.h) prints on stderr the signal or call, the
 * kernel, its grid point, step, core (and device on a mesh) and the last
 * pl_ op it called, and ends the process with PL_EXIT_KERNEL_CRASHED.
 * Crashes outside the user's code keep their usual signal. Opt-in, once per
 * process (the tilesim command calls it; later calls do nothing): it
 * installs handlers for SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGSYS
 * and SIGTRAP (on an alternate stack per thread that runs a kernel) and an
 * on_exit handler. prog prefixes the message ("tilesim"). Returns 0, or -1
 * when a handler could not be installed. */
#define PL_EXIT_KERNEL_CRASHED 3
/* Install the crash reports above; see there. 0, or -1 when a handler could not be installed. */
int pl_guard_kernels(const char *prog);
/* Stuck kernels (kernel/guard.c): after pl_guard_kernels, a kernel, index
 * map function or kernel-definition callback that makes no tilesim call
 * (no pl_ op, no pl_get/pl_set) for `seconds` of wall time is taken for an
 * endless loop in its C code: the same report, "made no tilesim call for
 * 60 s", and PL_EXIT_KERNEL_CRASHED (a TPU would hang there; a simulator
 * says where). A definition's inputs and reference callbacks are host code
 * and may take long: not watched. A watcher thread wakes 4 times a second;
 * the kernels pay a store per op. seconds <= 0: no watch (the default).
 * hint (NULL: none) ends the message's last line ("; FOO=S waits longer").
 * Once per process; later calls do nothing. 0, or -1. */
int pl_guard_stalls(double seconds, const char *hint);

/* Host memory (host.c). A real run keeps its arrays and the simulated VMEM
 * in host memory; Linux lets malloc succeed far beyond it and kills the
 * process later. pl_host_memory_check says whether `bytes` more can be had
 * now (MemAvailable, a cgroup limit, RLIMIT_AS; it touches nothing):
 * PL_OK, or PL_ENOMEM with the bytes needed, the bytes available and a hint
 * to run cost-only in msg; PL_EINVAL for a negative or NaN size.
 * pl_pallas_call makes the same check of its VMEM buffers before a real
 * run; programs should check their arrays before they allocate them. msg
 * may be NULL (or n 0). Reads /proc and the cgroup files on each call: any
 * thread, but the answer may change between calls. */
int pl_host_memory_check(double bytes, char *msg, size_t n);
/* Bytes of host memory available now; INFINITY when nothing is known. */
double pl_host_memory_available(void);

#ifdef __cplusplus
}

/* C++ has no compound literals and refuses narrowing in braced lists, so
 * there the helper macros (PL_MAP, PL_MAP_FN, PL_BLOCK, PLTPU_VMEM,
 * PLTPU_SMEM, PLTPU_SEMAPHORE[_DMA], PL_ARRAY) call these, which fill the
 * same fields the C macros do (extern "C++" in case the header sits in an
 * extern "C" block). Too many dimensions is a compile-time error. */
extern "C++" {
namespace pl_cxx {
template <class... D> inline int dims(int64_t *out, D... d)
{
    static_assert(sizeof...(D) <= PL_MAX_RANK, "more dimensions than PL_MAX_RANK");
    const int64_t v[sizeof...(D) + 1] = {static_cast<int64_t>(d)...};
    for (size_t i = 0; i < sizeof...(D); i++) out[i] = v[i];
    return static_cast<int>(sizeof...(D));
}
template <class... A> inline pl_index_map map(A... axes)
{
    static_assert(sizeof...(A) <= PL_MAX_RANK, "PL_MAP: more entries than PL_MAX_RANK");
    const int v[sizeof...(A) + 1] = {static_cast<int>(axes)...};
    pl_index_map m = {};
    m.n = static_cast<int>(sizeof...(A));
    for (int i = 0; i < m.n; i++) m.axis[i] = static_cast<int8_t>(v[i]);
    return m;
}
inline pl_index_map map_fn(pl_index_map_fn f, void *user)
{
    pl_index_map m = {};
    m.fn = f;
    m.user = user;
    return m;
}
template <class... D> inline pl_block_spec block(const pl_index_map &m, D... d)
{
    pl_block_spec s = {};
    s.rank = dims(s.block, d...);
    s.map = m;
    return s;
}
template <class... D> inline pl_scratch scratch(pl_memspace space, pl_dtype dt, D... d)
{
    pl_scratch s = {};
    s.space = space;
    s.dtype = dt;
    s.rank = dims(s.shape, d...);
    return s;
}
template <class T> inline T named(const char *name, T spec) /* PL_BLOCK_NAMED, PLTPU_*_NAMED */
{
    spec.name = name;
    return spec;
}
inline pl_scratch semaphores(int64_t n, pl_sem_kind kind)
{
    pl_scratch s = scratch(PL_SEMAPHORE, PL_I32, n);
    s.sem_kind = kind;
    return s;
}
/* const data is accepted as C accepts it (with a warning): inputs are only read */
template <class... D> inline pl_array array(const void *data, pl_dtype dt, D... d)
{
    pl_array a = {};
    a.data = const_cast<void *>(data);
    a.dtype = dt;
    a.rank = dims(a.shape, d...);
    return a;
}
} /* namespace pl_cxx */
}
#endif

/* The reference checks: see the top of this header. */
#include "tilesim_check.h"

#endif
