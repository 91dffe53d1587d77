/* sim/tilesim_kernel.h: the kernel-first Pallas of the TPU quickstart:
 * pl.kernel over a TensorCoreMesh, sync_copy, emit_pipeline and run_scoped
 * (rules K1-K4 of docs/PALLAS.md).
 *
 *     // Python: @pl.kernel(out_type=..., mesh=pltpu.TensorCoreMesh(axis_name='core'),
 *     //                    scratch_types=dict(o_vmem=pltpu.VMEM((8, 128), jnp.float32)))
 *     static void fill_42(pl_ctx *c, pl_ref *refs) {   // refs: outputs (HBM), then scratch
 *         pl_fill(c, refs[1], 42.0);
 *         pltpu_sync_copy(c, refs[1], refs[0]);     // VMEM -> HBM, blocks until it lands
 *     }
 *     pl_kernel_spec k = {.name = "fill_42", .body = fill_42, .n_out = 1,
 *                         .n_scratch = 1, .scratch = {PLTPU_VMEM(PL_F32, 8, 128)}};
 *     int rc = pl_kernel(&k, NULL, &out, NULL, &rep);
 *
 * pl_kernel runs the body once per TensorCore of the device (K1): the chip's
 * cores_per_device (2 on v4 and v5p, 1 on v5e, v6e; each v7x device has 1).
 * With .mesh = PL_MESH_VECTOR_SUBCORES it runs once per vector subcore of
 * every SparseCore instead (K5; v5p, v6e, v7x). It is a pallas_call
 * with grid (cores,) marked parallel whose operands all
 * stay in HBM (PL_ANY): validated, run, checked and timed by the same code,
 * and its report reads the same.
 */
#ifndef TILESIM_KERNEL_H
#define TILESIM_KERNEL_H

#include "../kernel/pltpu.h"
#include "tilesim.h"
#include "tilesim_mesh.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- pl.kernel on a TensorCore mesh (K1) ---------------------------------- */

/* Where pl_kernel runs its body (the mesh= of pl.kernel). */
typedef enum pl_kernel_mesh {
    PL_MESH_TENSORCORES = 0,     /* pltpu.TensorCoreMesh: once per TensorCore (K1) */
    PL_MESH_VECTOR_SUBCORES = 1, /* plsc.VectorSubcoreMesh: once per vector subcore of every SparseCore (K5) */
} pl_kernel_mesh;

typedef struct pl_kernel_spec {
    const char *name;                   /* for messages; NULL: "kernel" */
    pl_kernel_fn body;                  /* refs: inputs, outputs (all HBM, ANY), then scratch */
    void *user;                         /* pl_kernel_user() in the body */
    int n_in, n_out;                    /* arrays, each at most PL_MAX_OPERANDS */
    const char *in_names[PL_MAX_OPERANDS], *out_names[PL_MAX_OPERANDS]; /* NULL: "in0", "out0" */
    int n_scratch;                      /* scratch_types: VMEM, SMEM, semaphores (M2) */
    pl_scratch scratch[PL_MAX_SCRATCH];
    int64_t vmem_limit_bytes;           /* 0: the chip's default (M4); subcore mesh: its VMEM (K5) */
    pl_kernel_mesh mesh;                /* 0 (PL_MESH_TENSORCORES): once per TensorCore (K1);
                                           PL_MESH_VECTOR_SUBCORES: once per SparseCore vector subcore (K5) */
    int has_collective_id, collective_id; /* CompilerParams(collective_id=...), as pl_call's (M15) */
    int allow_collective_id_without_custom_barrier; /* as pl_call's (M15) */
} pl_kernel_spec;

/* Run k->body once on every TensorCore of the device (opt->chip), or with
 * k->mesh = PL_MESH_VECTOR_SUBCORES once on every vector subcore of its
 * SparseCores (K5: a chip without SparseCores, v4 and v5e, is PL_EINVAL);
 * ins and outs as pl_pallas_call's args and outs. Returns PL_OK or a PL_E*
 * code with report->error naming what and where (also pl_last_error()).
 * On a subcore mesh report->chip is the subcore view of the chip (its name
 * says so: "v5p SparseCore 4x16 subcores"), which lives for the process. */
int pl_kernel(const pl_kernel_spec *k, const pl_array *ins, pl_array *outs, const pl_options *opt,
              pl_report *report);

/* shard_map of pl.kernel over a TensorCoreMesh (M13): k on every
 * TensorCore of every device of `mesh`, all at once, as pl_mesh_call runs
 * a call (ins, outs, reports and the report as there). A body finds its
 * place with pltpu_device_id and pl_core_index, and reaches a core of any
 * device with pltpu_make_async_remote_copy_core and
 * pltpu_semaphore_signal_core (kernel/pltpu.h): JAX's device_id =
 * {'device': d, 'core': k}. Only PL_MESH_TENSORCORES (else PL_EINVAL). */
int pl_kernel_mesh_call(const pl_mesh *mesh, const pl_kernel_spec *k, const pl_array *ins, pl_array *outs,
                        const pl_options *opt, pl_mesh_report *mr, pl_report *reports);

/* lax.axis_index('core'): the TensorCore running the body, 0 .. cores - 1
 * (inside a pallas_call kernel: the core its grid point runs on, G4). On a
 * vector-subcore mesh (K5): the SparseCore, 0 .. sc_cores - 1. */
int pl_core_index(const pl_ctx *c);

/* lax.axis_index('subcore') on a vector-subcore mesh (K5): the vector
 * subcore of its SparseCore running the body, 0 .. sc_subcores - 1; 0 on a
 * TensorCore. Body number flat = core * sc_subcores + subcore. Each subcore
 * takes its own share, so no two write the same rows:
 *
 *     // Python: mesh = plsc.VectorSubcoreMesh(core_axis_name='core',
 *     //                                       subcore_axis_name='subcore', num_cores=4)
 *     static void body(pl_ctx *c, pl_ref *refs) {      // refs: in, out (HBM), then VMEM scratch
 *         int w = pl_core_index(c) * pl_subcore_count(c) + pl_subcore_index(c);
 *         pltpu_sync_copy(c, pl_ds(c, refs[0], 0, w * 8, 8), refs[2]);
 *         pl_mul_scalar(c, refs[2], refs[2], 2.0);
 *         pltpu_sync_copy(c, refs[2], pl_ds(c, refs[1], 0, w * 8, 8));
 *     }
 *     pl_kernel_spec k = {.body = body, .n_in = 1, .n_out = 1, .n_scratch = 1,
 *                         .scratch = {PLTPU_VMEM(PL_F32, 8, 128)}, .mesh = PL_MESH_VECTOR_SUBCORES};
 */
int pl_subcore_index(const pl_ctx *c);
/* lax.axis_size('subcore'): vector subcores per SparseCore on a subcore
 * mesh (16 on the presets); 1 on a TensorCore. */
int pl_subcore_count(const pl_ctx *c);

/* pltpu.sync_copy(src, dst): an async copy started and waited at once on a
 * DMA semaphore of its own; checked as pltpu_async_copy (M7, K2) and timed
 * as one (the core stalls until it lands). */
void pltpu_sync_copy(pl_ctx *c, pl_ref src, pl_ref dst);

/* ---- run_scoped (K4) ------------------------------------------------------- */

/* pl.run_scoped(body, *types): VMEM buffers (and DMA or regular semaphores)
 * that live while body runs, counted with the call's buffers against the
 * scoped VMEM limit (M4): what does not fit is PL_EVMEM naming the
 * allocation. scoped[i] is types[i] (n at most PL_MAX_SCRATCH); VMEM starts
 * as poison (V1), semaphores at 0, and must be 0 again at the end (M10). */
typedef void (*pl_scoped_fn)(pl_ctx *c, pl_ref *scoped, void *user);
void pl_run_scoped(pl_ctx *c, const pl_scratch *types, int n, pl_scoped_fn body, void *user);

/* ---- emit_pipeline (K3) ------------------------------------------------------ */

/* The body of a nested pipeline: refs are the VMEM blocks of the inputs,
 * then of the outputs, at the inner grid point idx. */
typedef void (*pltpu_pipeline_body)(pl_ctx *c, pl_ref *refs, const int64_t *idx, void *user);

typedef struct pltpu_pipeline {
    int grid_rank;                      /* 1 .. PL_MAX_GRID */
    int64_t grid[PL_MAX_GRID];
    int n_in, n_out;                    /* each at most PL_MAX_OPERANDS / 2 */
    pl_block_spec in[PL_MAX_OPERANDS / 2], out[PL_MAX_OPERANDS / 2]; /* rank = the ref's; sizes,
                                                                         PL_SQUEEZED, Element (K6) or BoundedSlice
                                                                         dims (K8) */
    /* core_axis_name: 1 splits one PL_PARALLEL axis of the grid over the cores of the call (pl_kernel's
     * TensorCores, K7), each core walking its own contiguous part; 0: every core walks the whole grid */
    int core_split;
    pl_semantics semantics[PL_MAX_GRID]; /* dimension_semantics; 0 is PL_ARBITRARY */
    /* core_axis=int: 1 + the axis of the enclosing grid whose points share the pipeline's grid, as the
     * cores do under core_split: point pl_program_id(axis) of pl_num_programs(axis) walks its own part
     * (a pallas_call grid (cores,) PARALLEL over a megacore chip's TensorCores); 0: none. Not with
     * core_split. (kernel ABI 7) */
    int core_axis;
    /* should_accumulate_out=True: every output is added into, not written: when an output block becomes
     * current it is copied in from its ref (the body sees what the ref holds) and kept, and at its write-back
     * the body's block plus the kept one goes out, so the ref gains what the body wrote (rule K9). Not for
     * outputs in memory space ANY. (kernel ABI 7) */
    int should_accumulate_out;
} pltpu_pipeline;

/* pltpu.emit_pipeline(body, grid=, in_specs=, out_specs=)(*ins, *outs):
 * walk p's grid in order, each block of ins and outs (refs the kernel holds,
 * usually HBM) buffered in run_scoped VMEM with manual copies: an input
 * block is copied in when it changes (the next one while the body runs), an
 * output block written back when it changes and after the last step. A
 * spec's .buffers is pipeline_mode=pl.Buffered(n): 0 the default 2, 1 no
 * overlap, 3 to 8 copies up to n - 1 changed blocks ahead (use_lookahead).
 * Blocks are checked as JAX's emit_pipeline checks them (B1-B5, P5, and the
 * window rule K6: rows a multiple of the dtype's sublane packing); an edge
 * block may hang over its ref (B6: only its part inside is copied, the rest
 * reads as poison); the buffers count against the VMEM limit (M4); every
 * step costs a grid step's overhead (P9), reported as step overhead. A spec
 * with .space = PL_ANY hands the body the ref's block itself, uncopied; one
 * with .space = PL_SMEM buffers its blocks in SMEM (scalars, no VMEM). */
void pltpu_emit_pipeline(pl_ctx *c, const pltpu_pipeline *p, const pl_ref *ins, const pl_ref *outs,
                         pltpu_pipeline_body body, void *user);

#ifdef __cplusplus
}
#endif
#endif
