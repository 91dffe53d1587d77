/* sim/mesh/kernel_mesh.c: pl_kernel (rule K1), pl.kernel over a TensorCoreMesh:
 * the body once per TensorCore of the device. It is a pallas_call with grid
 * (cores,) marked parallel, so that the megacore split (G4) puts grid point
 * i on TensorCore i, and every operand left in HBM (ANY, T5): validation,
 * the checks, the timing and the report are pallas_call's own.
 *
 * Over a plsc.VectorSubcoreMesh (K5) it is the same call on a derived
 * what-if chip, the subcore view: one "TensorCore" per vector subcore
 * (cores_per_device = sc_cores x sc_subcores), each with the subcore's VMEM
 * as its VMEM and scoped limit, a VPU of sc_lanes f32 lanes at the chip's
 * clock (1 GHz where it is not published, as the scalar unit's timing
 * assumes) and no MXU (kern_target.subcores refuses pl_dot). The device's
 * HBM bandwidth, DMA latency and step overhead stay: all subcores share the
 * HBM. Figures: JAX's jax/_src/pallas/mosaic/tpu_info.py, SparseCoreInfo
 * (sim/timing/chips.c). */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../kernel/scoped.h"
#include "../call/exec.h" /* sim_exec_refuse: a refusal sets pl_last_error() as pallas_call does */
#include "ranks.h"
#include "../tilesim_kernel.h"
#include "../tilesim_mesh.h"

/* The chip the options name, or NULL when unknown (pallas_call reports it). */
static const pl_chip *options_chip(const pl_options *opt)
{
    return opt && opt->chip_spec ? opt->chip_spec : opt && opt->chip ? pl_chip_find(opt->chip) : pl_chip_default();
}

/* The TensorCores of the chip the options name. */
static int mesh_cores(const pl_options *opt)
{
    const pl_chip *chip = options_chip(opt);
    return chip && chip->cores_per_device >= 1 ? chip->cores_per_device : 1;
}

/* Fail the way pallas_call fails: report and pl_last_error() hold the
 * message; chip (the options' one) goes into the report. */
static int refuse(const char *name, const pl_chip *chip, pl_report *report, int code, const char *fmt, ...)
{
    char msg[PL_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return sim_exec_refuse(report, name, chip, code, msg);
}

/* "v5p, v6e, v7x": the presets that have SparseCores. */
static const char *sparsecore_presets(char *buf, size_t n)
{
    buf[0] = '\0';
    for (int i = 0; i < pl_chip_count(); i++)
        if (pl_chip_at(i)->sc_cores > 0)
            snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", buf[0] ? ", " : "", pl_chip_at(i)->name);
    return buf;
}

/* The subcore view of chip (see the top of the file), named for the report:
 * "v5p SparseCore 4x16 subcores" (a long what-if name is cut to fit). */
static void subcore_view(const pl_chip *chip, pl_chip *v)
{
    memcpy(v, chip, sizeof *v);
    char tail[64]; /* the counts are at most SIM_MAX_CORES: it fits in the name */
    size_t len = (size_t)snprintf(tail, sizeof tail, " SparseCore %dx%d subcores", chip->sc_cores,
                                  chip->sc_subcores);
    size_t keep = strnlen(chip->name, sizeof v->name - 1);
    if (keep + len > sizeof v->name - 1) keep = len < sizeof v->name - 1 ? sizeof v->name - 1 - len : 0;
    memset(v->name, 0, sizeof v->name);
    memcpy(v->name, chip->name, keep);
    memcpy(v->name + keep, tail, len < sizeof v->name - 1 - keep ? len : sizeof v->name - 1 - keep);
    v->cores_per_device = chip->sc_cores * chip->sc_subcores;
    v->vmem_bytes = v->vmem_default_limit = chip->sc_vmem_bytes;
    v->vpu_flops = chip->sc_lanes * (chip->clock_hz > 0 ? chip->clock_hz : 1e9); /* one f32 op per lane a cycle */
    /* no MXU: pl_dot is refused (K5); the roofline's compute roof is the VPU's */
    v->bf16_flops = v->vpu_flops;
    v->int8_ops = v->fp8_ops = 0;
    v->mxu_fp8_operands = 0;
    v->vmem_bw = 0; /* not published for a subcore: no VMEM roof */
    v->sc_view = 1;
}

/* Views live for the process, as presets do, since report->chip points at
 * one after the call: one per distinct chip, shared by all threads. */
#define MAX_VIEWS 4096
typedef struct view_node {
    struct view_node *next;
    pl_chip chip;
} view_node;
static pthread_mutex_t views_lock = PTHREAD_MUTEX_INITIALIZER;
static view_node *views;
static int n_views;

static const pl_chip *intern_view(const pl_chip *v)
{
    pthread_mutex_lock(&views_lock);
    view_node *n = views;
    while (n && memcmp(&n->chip, v, sizeof *v) != 0) n = n->next;
    if (!n && n_views < MAX_VIEWS && (n = malloc(sizeof *n))) {
        n->chip = *v;
        n->next = views;
        views = n;
        n_views++;
    }
    pthread_mutex_unlock(&views_lock);
    return n ? &n->chip : NULL;
}

/* The chip a subcore mesh runs on, or a refusal's code (report filled). */
static int subcore_chip(const char *name, const pl_options *opt, pl_report *report, const pl_chip **out)
{
    const pl_chip *chip = options_chip(opt);
    char list[128];
    if (!chip) return PL_OK; /* pallas_call names the unknown chip */
    if (chip->sc_cores < 1)
        return refuse(name, chip, report, PL_EINVAL, "pl_kernel %s: chip %s has no SparseCores, so no vector-subcore "
                      "mesh (PL_MESH_VECTOR_SUBCORES, rule K5); chips with SparseCores: %s", name, chip->name,
                      sparsecore_presets(list, sizeof list));
    if (chip->sc_subcores < 1 || chip->sc_lanes < 1 || chip->sc_vmem_bytes < 1 ||
        (int64_t)chip->sc_cores * chip->sc_subcores > SIM_MAX_CORES)
        return refuse(name, chip, report, PL_EINVAL, "pl_kernel %s: chip %s: sc_cores %d x sc_subcores %d (at most "
                      "%d subcores), sc_lanes %d and sc_vmem_bytes %lld must be positive (rule K5)", name, chip->name,
                      chip->sc_cores, chip->sc_subcores, SIM_MAX_CORES, chip->sc_lanes,
                      (long long)chip->sc_vmem_bytes);
    pl_chip v;
    subcore_view(chip, &v);
    if (!(*out = intern_view(&v)))
        return refuse(name, chip, report, PL_ENOMEM, "pl_kernel %s: no room for the subcore view of chip %s (%d "
                      "distinct chips with subcore meshes in this process at most)", name, chip->name, MAX_VIEWS);
    return PL_OK;
}

/* M13: the TensorCores of a device run at once, each on a host thread, so
 * that one may wait for another's signal: the call as a mesh of one device
 * (mesh_run.c runs a device's cores that way). Not when the caller asked
 * for the cores one after the other (host_threads 1), gave a recorder,
 * which sees steps in order, or runs under MPI (a mesh would split). */
static int at_once(const pl_call *call, const pl_options *opt)
{
    return call->grid[0] > 1 && (!opt || (opt->host_threads != 1 && !opt->on_step)) && sim_mpi_size() <= 1;
}

static int run_at_once(const pl_call *call, const pl_array *ins, pl_array *outs, const pl_options *opt,
                       pl_report *report)
{
    pl_mesh one = {.rank = 1, .shape = {1}, .axis = {"x"}};
    pl_report rep = {0}; /* a refusal before any device (a trace file that cannot be written) writes none */
    pl_mesh_report mr;
    int rc = pl_mesh_call(&one, call, ins, outs, opt, &mr, &rep);
    if (rc && !rep.status) { /* the mesh's own refusal, said as pallas_call says it (a race is in the report) */
        const char *msg = strncmp(mr.error, "pl_mesh_call: ", 14) ? mr.error : mr.error + 14;
        return sim_exec_refuse(report, call->name, options_chip(opt), rc, msg);
    }
    if (report) *report = rep;
    return rc;
}

/* pl_kernel's call: grid (cores,) parallel, every operand ANY (K1). opt
 * may name the subcore view (K5). wrap must outlive the call. */
static pl_call kernel_call(const pl_kernel_spec *k, const char *name, const pl_options *opt, kern_kernel_wrap *wrap)
{
    *wrap = (kern_kernel_wrap){.body = k->body, .user = k->user};
    pl_call call = {.name = name, .kernel = k->body ? kern_kernel_trampoline : NULL,
                    .user = wrap, .grid_rank = 1, .grid = {mesh_cores(opt)}, .semantics = {PL_PARALLEL},
                    .n_in = k->n_in, .n_out = k->n_out, .n_scratch = k->n_scratch,
                    .vmem_limit_bytes = k->vmem_limit_bytes, .has_collective_id = k->has_collective_id,
                    .allow_collective_id_without_custom_barrier = k->allow_collective_id_without_custom_barrier,
                    .collective_id = k->collective_id};
    for (int i = 0; i < PL_MAX_OPERANDS; i++) {
        call.in[i] = (pl_block_spec){.space = PL_ANY, .name = k->in_names[i]};
        call.out[i] = (pl_block_spec){.space = PL_ANY, .name = k->out_names[i]};
    }
    for (int i = 0; i < PL_MAX_SCRATCH; i++) call.scratch[i] = k->scratch[i];
    return call;
}

int pl_kernel(const pl_kernel_spec *k, const pl_array *ins, pl_array *outs, const pl_options *opt,
              pl_report *report)
{
    static const pl_kernel_spec none = {.name = "pl_kernel (spec is NULL)"};
    if (!k) k = &none; /* pallas_call names the missing body */
    const char *name = k->name ? k->name : "kernel";
    pl_options sub = opt ? *opt : (pl_options){0};
    if (k->mesh == PL_MESH_VECTOR_SUBCORES) {
        int rc = subcore_chip(name, opt, report, &sub.chip_spec);
        if (rc) return rc;
        opt = sub.chip_spec ? &sub : opt;
    } else if (k->mesh != PL_MESH_TENSORCORES) {
        return refuse(name, opt ? options_chip(opt) : NULL, report, PL_EINVAL, "pl_kernel %s: mesh = %d; give "
                      "PL_MESH_TENSORCORES (0, K1) or PL_MESH_VECTOR_SUBCORES (1, K5)", name, (int)k->mesh);
    }
    kern_kernel_wrap wrap;
    pl_call call = kernel_call(k, name, opt, &wrap);
    if (k->mesh == PL_MESH_TENSORCORES && at_once(&call, opt)) return run_at_once(&call, ins, outs, opt, report);
    return pl_pallas_call(&call, ins, outs, opt, report);
}

int pl_kernel_mesh_call(const pl_mesh *mesh, const pl_kernel_spec *k, const pl_array *ins, pl_array *outs,
                        const pl_options *opt, pl_mesh_report *mr, pl_report *reports)
{
    static const pl_kernel_spec none = {.name = "pl_kernel (spec is NULL)"};
    if (!k) k = &none;
    if (k->mesh != PL_MESH_TENSORCORES) {
        pl_mesh_report local;
        if (!mr) mr = &local;
        memset(mr, 0, sizeof *mr);
        mr->failed_device = -1;
        mr->status = PL_EINVAL;
        snprintf(mr->error, sizeof mr->error, "pl_kernel_mesh_call %s: mesh = %d; a mesh of devices runs "
                 "PL_MESH_TENSORCORES kernels (K1, M13)", k->name ? k->name : "kernel", (int)k->mesh);
        return PL_EINVAL;
    }
    kern_kernel_wrap wrap;
    pl_call call = kernel_call(k, k->name ? k->name : "kernel", opt, &wrap);
    return pl_mesh_call(mesh, &call, ins, outs, opt, mr, reports);
}

int pl_subcore_index(const pl_ctx *c) { return c->target.subcores > 0 ? c->core % c->target.subcores : 0; }

int pl_subcore_count(const pl_ctx *c) { return c->target.subcores > 0 ? c->target.subcores : 1; }
