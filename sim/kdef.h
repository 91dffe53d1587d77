/* sim/kdef.h: kernel definitions, so that every tool (run, sweep, explain,
 * verify, list) works on any kernel, the user's own included.
 *
 * A definition names a kernel, its parameters (each with a default and the
 * candidate values a sweep tries), and the callbacks that turn parameter
 * values into a call: build (the pl_call and the shapes of its arrays),
 * inputs (fill the input arrays), reference (the expected outputs, computed
 * on the host) and, optionally, the ideal FLOPs and bytes for roofline
 * efficiency. The generic drivers below do the rest.
 *
 * Example: an elementwise add over (rows, cols) in (br, cols) blocks.
 *
 *     static const int64_t br_cands[] = {8, 16, 32, 64, 128, 256};
 *     static const pl_kernel_def add_def = {
 *         .name = "add", .summary = "z = x + y, row blocks",
 *         .n_params = 3,
 *         .params = {{.name = "rows", .def = 1024, .help = "rows of x, y and z"},
 *                    {.name = "cols", .def = 512, .help = "columns"},
 *                    {.name = "br", .def = 128, .candidates = br_cands, .n_candidates = 6,
 *                     .help = "rows per block"}},
 *         .build = add_build, .inputs = NULL,   // NULL: pl_kernel_fill_inputs
 *         .reference = add_reference,
 *     };
 *
 * Parameter values travel as an array `v` of int64_t in the order of
 * params; a dtype parameter (kind PL_PARAM_DTYPE) holds a pl_dtype.
 *
 * A plugin is a shared object that exports one function, named by
 * PL_PLUGIN_SYMBOL:
 *
 *     int tilesim_kernels(int abi, const pl_kernel_def *const **defs);
 *
 * It sets *defs to an array of definitions and returns their count, or -1
 * when it does not support abi (PL_KERNEL_ABI). Build one with
 *     cc -shared -fPIC -O2 -I<tilesim include dir> mykernel.c -o mykernel.so
 * and pass the path where a kernel name is accepted ("mykernel.so" or
 * "mykernel.so:NAME").
 */
#ifndef TILESIM_KDEF_H
#define TILESIM_KDEF_H

#include <stdio.h>

#include "tilesim.h"
#include "tilesim_mesh.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PL_KERNEL_ABI 7 /* 2: pl_kernel_param.divides and .multiple; 3: mesh kernels (.mesh, .mesh_reference);
                           4: pltpu_remote_copy.core (devices of several TensorCores, M13);
                           5: pl_mesh has 4 axes and .dcn (multislice meshes, M14);
                           6: pl_kernel_def.chip_defaults;
                           7: pltpu_pipeline.core_axis and .should_accumulate_out, pl_block_spec.bounded */
#define PL_PLUGIN_SYMBOL "tilesim_kernels"
#define PL_KDEF_MAX_PARAMS 16
#define PL_KDEF_MAX_ARGS (2 * PL_MAX_OPERANDS) /* prefetch + inputs */

typedef enum pl_param_kind { PL_PARAM_INT = 0, PL_PARAM_DTYPE = 1 } pl_param_kind;

typedef struct pl_kernel_param {
    const char *name;          /* "bm": what --set and --vary name */
    pl_param_kind kind;
    int64_t def;               /* default value (a pl_dtype for PL_PARAM_DTYPE) */
    const int64_t *candidates; /* values a sweep tries when not told; NULL: the default only */
    int n_candidates;
    const char *help;          /* one line, shown by `tilesim list` */
    /* A block size that tiles another parameter's dimension: a sweep tries
     * every multiple of `multiple` (0: 1) that divides that parameter's value
     * (at most 64, the smallest first), as an autotuner searches, in place
     * of `candidates` (which stay the list when that parameter is itself
     * swept over several values). NULL: `candidates`. */
    const char *divides;
    int64_t multiple;
} pl_kernel_param;

/* What build fills: the call, its arguments (prefetch, then inputs) and
 * outputs (shape and dtype; data allocated by the driver unless cost-only),
 * and `param`, PL_SWEEP_PARAM_BYTES of zeroed memory living as long as the
 * call, for the kernel's own parameters (point call->user, or a function
 * index map's user, into it: sweeps move those pointers with the bytes). */
typedef struct pl_kernel_build {
    pl_call call;
    int n_args, n_outs;
    pl_array args[PL_KDEF_MAX_ARGS];
    pl_array outs[PL_MAX_OPERANDS];
    unsigned char param[PL_SWEEP_PARAM_BYTES];
} pl_kernel_build;

typedef struct pl_kernel_def {
    const char *name;    /* "rmsnorm" */
    const char *summary; /* one line */
    int n_params;
    pl_kernel_param params[PL_KDEF_MAX_PARAMS];
    /* Constraints between values (e.g. "bk divides K"): PL_OK, or an error
     * code with a message naming the parameters into msg. NULL: none. */
    int (*check)(const int64_t *v, char *msg, size_t n);
    /* Describe the call for values v. Set every array's dtype and shape;
     * leave data NULL: the driver allocates it (or not, in cost-only mode).
     * Return PL_OK or an error code with a message in msg. */
    int (*build)(const int64_t *v, pl_kernel_build *b, char *msg, size_t n);
    /* Fill the input arrays (data allocated) deterministically from seed.
     * NULL: pl_kernel_fill_inputs (values in [-1, 1), integers small) over
     * the arrays the driver allocated: data build set stays as it is.
     * In cost-only runs and sweeps only the scalar-prefetch tables have
     * data (index maps read them): skip arrays whose data is NULL. */
    int (*inputs)(const int64_t *v, pl_kernel_build *b, uint64_t seed);
    /* Write the expected outputs into want[0 .. n_outs-1] (allocated with the
     * outputs' shapes and dtypes) from the inputs b->args. NULL: no reference
     * (run reports, verify refuses). */
    int (*reference)(const int64_t *v, const pl_kernel_build *b, pl_array *want);
    double rtol, atol;   /* for pl_allclose; 0, 0: the dtype's defaults */
    /* Ideal work and traffic of the algorithm (not of the tiling), for
     * roofline efficiency. NULL: unknown. */
    double (*flops)(const int64_t *v);
    double (*bytes)(const int64_t *v);
    /* The scoped VMEM limit the call sets, as compiler_params(
     * vmem_limit_bytes=...) does (rule M4): a constant, or computed from the
     * values and the chip (e.g. min(the kernel's own estimate, a cap)); the
     * function, when set, wins. 0 (or the function returning 0): the chip's
     * default scoped limit. The drivers set it on the call after build,
     * unless build set call.vmem_limit_bytes itself; a tool's --vmem-limit
     * (pl_options.vmem_limit_bytes) overrides both. At the end of the
     * struct: definitions written before it leave both 0. */
    int64_t vmem_limit_bytes;
    int64_t (*vmem_limit)(const int64_t *v, const pl_chip *chip);
    /* A mesh kernel (rules M11, M12; ABI 3): the call runs SPMD on every
     * device of the mesh this fills for values v (pl_mesh_parse("ring:8"),
     * or a shape taken from v), as shard_map + pallas_call does. build then
     * describes one device's call and the shapes of one device's arrays;
     * every device gets arrays of its own, which inputs fills with the seed
     * plus the device's number (pl_kernel_device_seed), so that devices
     * differ. NULL: a kernel of one device. */
    int (*mesh)(const int64_t *v, pl_mesh *mesh, char *msg, size_t n);
    /* A mesh kernel's reference: device `device`'s expected outputs into
     * want[0 .. n_outs-1] from every device's inputs, devs[0 .. n_devices-1]
     * (each as build and inputs left it). pl_want_tolerance and pl_want_dot
     * apply as for reference. NULL: outputs not checked. */
    int (*mesh_reference)(const int64_t *v, const pl_kernel_build *devs, int n_devices, int device, pl_array *want);
    /* Defaults that depend on the chip (ABI 6): change v, which holds every
     * parameter's default, for the chip the tools run on; a weight dtype
     * that chip's MXU takes, say (quant_matmul: i8 where the MXU has an
     * int8 path, f8e4m3 on v7x, which has none: T10). The tools call it
     * through pl_kernel_defaults_on before any --set, column or --vary, so a
     * value the user gives always wins. NULL: the same defaults on every
     * chip. */
    void (*chip_defaults)(int64_t *v, const pl_chip *chip);
} pl_kernel_def;

/* ---- how a reference's outputs are checked ---------------------------------- */

/* Called by a definition's reference on one of its want[] arrays, these
 * choose how the driver checks that output (V5), instead of pl_allclose
 * with the definition's rtol and atol:
 *   pl_want_tolerance: with these tolerances (an f32 output and a bf16 one
 *     of one kernel need not share them; 0, 0: the dtype's defaults);
 *   pl_want_dot: the output is op(a) @ op(b) of two of the arrays in
 *     b->args; it is checked as pl_check_dot checks it, the error scaled by
 *     what rounding over the contraction explains.
 * PL_OK, or PL_EINVAL (a negative or infinite tolerance, no data). */
int pl_want_tolerance(const pl_array *want, double rtol, double atol);
int pl_want_dot(const pl_array *want, const pl_array *a, const pl_array *b, int trans_a, int trans_b);

/* ---- parameters ------------------------------------------------------------ */

/* The index of parameter `name`, or -1. */
int pl_kernel_param_index(const pl_kernel_def *d, const char *name);
/* Fill v with every parameter's default. */
void pl_kernel_defaults(const pl_kernel_def *d, int64_t *v);
/* The defaults on a chip: pl_kernel_defaults, then d->chip_defaults for
 * chip (none when chip is NULL). */
void pl_kernel_defaults_on(const pl_kernel_def *d, const pl_chip *chip, int64_t *v);
/* Apply "name=value" (a dtype parameter takes "f32", "bf16", ...).
 * PL_OK or PL_EINVAL with a message naming the parameter or the value. */
int pl_kernel_set(const pl_kernel_def *d, int64_t *v, const char *assignment, char *msg, size_t n);
/* Format the values as "name=value name=value ..." into buf. */
const char *pl_kernel_format(const pl_kernel_def *d, const int64_t *v, char *buf, size_t n);

/* ---- drivers ------------------------------------------------------------------ */

/* Build, allocate, fill the inputs, run (opt may be NULL), and, unless
 * cost-only, compare every output with the reference (pl_allclose, the
 * def's tolerances): check[i] for output i when check is not NULL (at least
 * PL_MAX_OPERANDS entries), and a verdict line per output on f when f is
 * not NULL. Returns the call's code, or PL_EVERIFY when an output FAILs. */
int pl_kernel_run(const pl_kernel_def *d, const int64_t *v, const pl_options *opt, pl_report *rep, pl_check *check,
                  FILE *f);

/* A mesh kernel's run (d->mesh set): the devices' arrays built, filled and
 * run with pl_mesh_call, and, unless cost-only, each device's outputs
 * compared with d->mesh_reference; a verdict line per output on f (the
 * worst device's). mesh: d's mesh at v as pl_kernel_def_mesh gave it, or
 * NULL to ask d (a caller sizing reps passes the mesh it sized them by:
 * d->mesh is asked once, so a definition whose answer changes cannot
 * overrun them). mr: the mesh report (may be NULL); reps: one report per
 * device of that mesh (may be NULL). rep gets the slowest device's report
 * with the mesh's time, what a sweep ranks. check[o]: output o's worst
 * check over the devices. Returns as pl_kernel_run. pl_kernel_run calls
 * this for a mesh kernel. */
int pl_kernel_run_mesh(const pl_kernel_def *d, const int64_t *v, const pl_mesh *mesh, const pl_options *opt,
                       pl_report *rep, pl_check *check, FILE *f, pl_mesh_report *mr, pl_report *reps);
/* A mesh kernel's mesh at values v (d->mesh, checked): PL_OK, or an error
 * code with a message naming the kernel (PL_EINVAL when d is not a mesh
 * kernel). */
int pl_kernel_def_mesh(const pl_kernel_def *d, const int64_t *v, pl_mesh *mesh, char *msg, size_t n);
/* The seed a mesh kernel's inputs get on device `device`, from the run's
 * seed (what inputs receives; a definition's own inputs need not call it). */
uint64_t pl_kernel_device_seed(uint64_t seed, int device);

/* Advice that was simulated: each tiling parameter (an integer parameter
 * with sweep candidates) at twice and half its value, cost-only on opt's
 * chip; appends to rep->bound_msg the fastest that gains at least 1%
 * ("; simulated: bk=2048: 612.00 us instead of 677.00 us") or that none
 * does. rep: d's successful run at v. Returns 1 when a change gains. */
int pl_kernel_advise(const pl_kernel_def *d, const int64_t *v, const pl_options *opt, pl_report *rep);

/* Sweep: n configurations, values[i * d->n_params ...] each, in cost-only
 * mode on every core (pl_sweep). reports[i] as pl_sweep fills them; a
 * configuration that check or build refuses has status < 0 and the reason. */
int pl_kernel_sweep(const pl_kernel_def *d, int n, const int64_t *values, const pl_options *opt,
                    const pl_sweep_options *sopt, pl_report *reports);

/* The default inputs generator. */
int pl_kernel_fill_inputs(const int64_t *v, pl_kernel_build *b, uint64_t seed);

/* ---- plugins ------------------------------------------------------------------ */

/* Load the plugin at path (dlopen) and return its definitions: *defs set to
 * its array, the count returned; or a negative code with a message naming
 * the file and what is wrong (not found, no PL_PLUGIN_SYMBOL, ABI refused). */
int pl_plugin_load(const char *path, const pl_kernel_def *const **defs, char *msg, size_t n);

#ifdef __cplusplus
}
#endif
#endif
