/* sim/kdef/kdef_internal.h: what the kernel-definition drivers (kdef.c,
 * kdef_run.c, kdef_sweep.c) share. Not part of the public API. */
#ifndef TILESIM_KDEF_INTERNAL_H
#define TILESIM_KDEF_INTERNAL_H

#include "../base/common.h" /* sim_splitmix64: the inputs' generator */
#include "../kdef.h"

/* Check and build the call for values v into b (zeroed first), with the
 * scoped VMEM limit the definition declares for opt's chip (opt may be
 * NULL: the default chip). PL_OK, or an error code with a message naming
 * the kernel into msg (never empty). */
int sim_kdef_prepare(const pl_kernel_def *d, const int64_t *v, const pl_options *opt, pl_kernel_build *b, char *msg,
                     size_t n);
/* The scoped VMEM limit d declares at v on chip (vmem_limit, else
 * vmem_limit_bytes); 0: none, the chip's default. */
int64_t sim_kdef_vmem_limit(const pl_kernel_def *d, const int64_t *v, const pl_chip *chip);
/* The chip opt names (chip_spec, chip, or the default), NULL if unknown. */
const pl_chip *sim_kdef_chip(const pl_options *opt);

/* Fill the inputs: d->inputs, or pl_kernel_fill_inputs over the arrays
 * with owned[a] set (those the driver allocated). */
int sim_kdef_inputs(const pl_kernel_def *d, const int64_t *v, pl_kernel_build *b, uint64_t seed,
                    const unsigned char *owned);
/* For a cost-only look at the call (explain, the teaching page): give the
 * scalar-prefetch tables build left without data zeroed memory (owned[a],
 * PL_KDEF_MAX_ARGS entries, for the caller to free) and fill them as
 * sim_kdef_inputs does, leaving the tables build gave data to as they are:
 * index maps read them. */
int sim_kdef_tables(const pl_kernel_def *d, const int64_t *v, pl_kernel_build *b, uint64_t seed, void **owned);

/* The definition's own callbacks, each run as a zone of kernel/guard.h, so
 * that a crash inside one names the definition and the callback:
 * d->inputs (or pl_kernel_fill_inputs over every array with data: the
 * drivers call sim_kdef_inputs, which keeps build's own tables out of it)
 * and d->reference. */
int sim_kdef_call_inputs(const pl_kernel_def *d, const int64_t *v, pl_kernel_build *b, uint64_t seed);
int sim_kdef_call_reference(const pl_kernel_def *d, const int64_t *v, const pl_kernel_build *b, pl_array *want);
/* A mesh kernel's callbacks, guarded likewise: d->mesh_reference for one
 * device, and d->mesh. */
int sim_kdef_call_mesh_reference(const pl_kernel_def *d, const int64_t *v, const pl_kernel_build *devs, int n_devices,
                                 int device, pl_array *want);
int sim_kdef_call_mesh(const pl_kernel_def *d, const int64_t *v, pl_mesh *mesh, char *msg, size_t n);
/* Check one output against its reference as the last reference call asked
 * (pl_want_dot: pl_check_dot; pl_want_tolerance: those tolerances), else
 * with the definition's rtol/atol; the tolerances used into *rtol, *atol
 * (-1, -1 for a dot, whose k->norm_err is pl_check_dot's).
 * Returns as pl_allclose (PL_OK with the verdict in k, or PL_ESHAPE ...). */
int sim_kdef_check_output(const pl_kernel_def *d, const pl_array *got, const pl_array *want, pl_check *k,
                          double *rtol, double *atol);
/* What a reference call asked of its outputs (its pl_want_* calls), kept
 * when several references run before their checks (a mesh's devices): take
 * them after one reference call, put them back before its checks. */
typedef struct sim_kdef_wants {
    struct sim_kdef_want {
        const void *data; /* the want[] array's data: which output */
        int has_tol, dot, ta, tb;
        double rtol, atol;
        pl_array a, b; /* dot: the operands (arrays of b->args) */
    } rule[PL_MAX_OPERANDS];
    int n;
} sim_kdef_wants;
void sim_kdef_wants_take(sim_kdef_wants *to);
void sim_kdef_wants_put(const sim_kdef_wants *from);

/* The run drivers' pieces (kdef_run.c), shared with the mesh driver
 * (kdef_mesh.c): rep's status and error set, the code returned; the host
 * bytes a run allocates; the arrays build left without data allocated (in
 * cost-only mode only the scalar-prefetch tables), owned[] recording which
 * (args first, outputs at PL_KDEF_MAX_ARGS), and freed; the flat index of
 * (row, col) unravelled; one output's verdict line, `where` after its
 * shape (" on device 3", or ""). */
int sim_kdef_fail(pl_report *rep, int code, const char *msg);
int sim_kdef_bad_arrays(const pl_kernel_def *d, const pl_kernel_build *b, char *msg, size_t n);
double sim_kdef_host_bytes(const pl_kernel_build *b, int cost_only, int with_want);
int sim_kdef_allocate(pl_kernel_build *b, int cost_only, unsigned char *owned);
void sim_kdef_release(pl_kernel_build *b, const unsigned char *owned);
void sim_kdef_unravel(const pl_array *a, int64_t row, int64_t col, int64_t *elem);
/* Under a FAIL within 10x of the tolerance with no NaN: how the reference sets the output's tolerance. */
void sim_kdef_rounding_hint(FILE *f, int o, pl_dtype t, const pl_check *k, double rtol);
void sim_kdef_verdict_line(FILE *f, const pl_kernel_build *b, int o, const pl_check *k, double rtol, double atol,
                           const char *where);

/* rep's ideal_flops, ideal_bytes, ideal_s and efficiency from d->flops and
 * d->bytes at v (kdef_ideal.c); zeros when unknown or the run failed. */
void sim_kdef_ideal(const pl_kernel_def *d, const int64_t *v, pl_report *rep);

#endif
