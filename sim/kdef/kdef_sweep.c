/* sim/kdef/kdef_sweep.c: pl_kernel_sweep, every configuration of a kernel
 * definition in cost-only mode through pl_sweep.
 *
 * pl_sweep's build callback returns only a code, so the reason a
 * configuration is refused (check or build) is kept per configuration and
 * written into its report afterwards. Scalar-prefetch tables must hold data
 * even in cost-only mode (index maps read them) and pl_sweep gives the
 * callback no way to free memory, so they are built and filled first, on
 * the calling thread, and live until the sweep ends. */
#include <stdlib.h>
#include <string.h>

#include "kdef_internal.h"

#define REASON_MAX 512

typedef struct kdef_slot {
    int rc;                                /* check or build refused: its code */
    char reason[REASON_MAX];
    void *prefetch[PL_MAX_OPERANDS];       /* the tables' data, owned */
} kdef_slot;

typedef struct kdef_sweep {
    const pl_kernel_def *d;
    const int64_t *values;
    const pl_options *opt; /* the chip the definitions' VMEM limits are for */
    uint64_t seed;
    kdef_slot *slots;
} kdef_sweep;

/* Build configuration i's prefetch tables (if any) and fill them. */
static void prepare_slot(kdef_sweep *s, int i)
{
    kdef_slot *slot = &s->slots[i];
    const int64_t *v = s->values + (size_t)i * (size_t)s->d->n_params;
    pl_kernel_build *b = malloc(sizeof *b);
    if (!b) {
        slot->rc = PL_ENOMEM;
        snprintf(slot->reason, sizeof slot->reason, "out of host memory");
        return;
    }
    slot->rc = sim_kdef_prepare(s->d, v, s->opt, b, slot->reason, sizeof slot->reason);
    int np = b->call.num_scalar_prefetch;
    unsigned char owned[PL_KDEF_MAX_ARGS] = {0};
    for (int a = 0; slot->rc == PL_OK && a < np && a < b->n_args && a < PL_MAX_OPERANDS; a++) {
        if (b->args[a].data) continue; /* the definition's own table */
        owned[a] = 1;
        slot->prefetch[a] = b->args[a].data = calloc(1, pl_array_bytes(&b->args[a]) + 1);
        if (!slot->prefetch[a]) {
            slot->rc = PL_ENOMEM;
            snprintf(slot->reason, sizeof slot->reason, "out of host memory for the scalar-prefetch tables");
        }
    }
    if (slot->rc == PL_OK && np > 0) {
        int rc = sim_kdef_inputs(s->d, v, b, s->seed, owned);
        if (rc != PL_OK) {
            slot->rc = rc < 0 ? rc : PL_EINVAL;
            snprintf(slot->reason, sizeof slot->reason, "its inputs function failed: %s", pl_strerror(rc));
        }
    }
    free(b);
}

/* p moved with the bytes at from to to, if it pointed into them */
static void *repoint(void *p, const unsigned char *from, unsigned char *to)
{
    uintptr_t u = (uintptr_t)p, lo = (uintptr_t)from;
    return u >= lo && u < lo + PL_SWEEP_PARAM_BYTES ? to + (u - lo) : p;
}

static int build_one(int i, pl_call *call, pl_array *args, pl_array *outs, void *param, void *user)
{
    kdef_sweep *s = user;
    kdef_slot *slot = &s->slots[i];
    if (slot->rc != PL_OK) return slot->rc;
    pl_kernel_build b;
    char msg[REASON_MAX];
    int rc = sim_kdef_prepare(s->d, s->values + (size_t)i * (size_t)s->d->n_params, s->opt, &b, msg, sizeof msg);
    if (rc != PL_OK) return rc; /* cannot happen: the same build refused nothing before */
    *call = b.call;
    memcpy(param, b.param, PL_SWEEP_PARAM_BYTES);
    /* the parameters now live in pl_sweep's param, not in b: the kernel's
     * and those of function-form index maps */
    call->user = repoint(b.call.user, b.param, param);
    for (int k = 0; k < b.call.n_in && k < PL_MAX_OPERANDS; k++)
        call->in[k].map.user = repoint(b.call.in[k].map.user, b.param, param);
    for (int k = 0; k < b.call.n_out && k < PL_MAX_OPERANDS; k++)
        call->out[k].map.user = repoint(b.call.out[k].map.user, b.param, param);
    memcpy(args, b.args, sizeof b.args[0] * (size_t)b.n_args);
    memcpy(outs, b.outs, sizeof b.outs[0] * (size_t)b.n_outs);
    for (int a = 0; a < b.call.num_scalar_prefetch && a < PL_MAX_OPERANDS; a++)
        if (slot->prefetch[a]) args[a].data = slot->prefetch[a];
    return PL_OK;
}

/* ---- the scoped limit an autotuner would set (M4) --------------------------------- */

/* The limit configuration i needs: its definition's (or the chip's default)
 * when that holds its buffers, else their bytes rounded up to a MiB, as a
 * kernel computes vmem_limit_bytes (the production quantized matmul rounds
 * its estimate; a whole MiB is what flags such as
 * --xla_tpu_scoped_vmem_limit_kib can express too). */
static int64_t needed_limit(const pl_kernel_def *d, const int64_t *v, const pl_chip *chip, int64_t used)
{
    const int64_t mib = 1 << 20;
    int64_t own = sim_kdef_vmem_limit(d, v, chip), lim = own > 0 ? own : chip->vmem_default_limit;
    if (used <= lim) return lim;
    int64_t up = (used + mib - 1) / mib * mib;
    return up < chip->vmem_bytes ? up : chip->vmem_bytes;
}

/* After a sweep against physical VMEM: each legal row's limit is what it
 * needs; a row over physical VMEM says so, not "raise the limit". */
static void settle_limits(const pl_kernel_def *d, int n, const int64_t *values, const pl_chip *chip,
                          pl_report *reports)
{
    for (int i = 0; i < n; i++) {
        pl_report *r = &reports[i];
        if (r->status == PL_OK)
            r->vmem_limit = needed_limit(d, values + (size_t)i * (size_t)d->n_params, chip, r->vmem_bytes);
        else if (r->status == PL_EVMEM && r->vmem_bytes > chip->vmem_bytes)
            snprintf(r->error, sizeof r->error,
                     "VMEM budget exceeded: %lld bytes of buffers, more than the %lld bytes of physical VMEM of a %s "
                     "TensorCore, the highest vmem_limit_bytes a call can set (rule M4); use smaller blocks",
                     (long long)r->vmem_bytes, (long long)chip->vmem_bytes, chip->name);
    }
}

/* A mesh kernel: one configuration after another, each on every device's
 * host thread at once (pl_mesh_call), cost only; a configuration refused
 * keeps its reason. */
static int sweep_mesh(const pl_kernel_def *d, int n, const int64_t *values, const pl_options *opt,
                      const pl_sweep_options *sopt, pl_report *reports)
{
    pl_options o = opt ? *opt : (pl_options){0};
    o.cost_only = 1;
    const pl_chip *chip = sim_kdef_chip(opt);
    int autolim = sopt && sopt->vmem_limit_auto && !o.vmem_limit_bytes && chip;
    if (autolim) o.vmem_limit_bytes = chip->vmem_bytes;
    for (int i = 0; i < n; i++) /* each row's status and reason in its report */
        pl_kernel_run_mesh(d, values + (size_t)i * (size_t)d->n_params, NULL, &o, &reports[i], NULL, NULL, NULL, NULL);
    if (autolim) settle_limits(d, n, values, chip, reports);
    return PL_OK;
}

int pl_kernel_sweep(const pl_kernel_def *d, int n, const int64_t *values, const pl_options *opt,
                    const pl_sweep_options *sopt, pl_report *reports)
{
    if (!d || n < 0 || (n > 0 && (!values || !reports)) || d->n_params < 0 || d->n_params > PL_KDEF_MAX_PARAMS)
        return PL_EINVAL;
    if (n == 0) return PL_OK;
    if (d->mesh) return sweep_mesh(d, n, values, opt, sopt, reports);
    kdef_sweep s = {.d = d, .values = values, .opt = opt, .seed = opt ? opt->seed : 0,
                    .slots = calloc((size_t)n, sizeof(kdef_slot))};
    if (!s.slots) return PL_ENOMEM;
    for (int i = 0; i < n; i++) prepare_slot(&s, i);
    pl_options o = opt ? *opt : (pl_options){0};
    o.cost_only = 1; /* pl_sweep does too; the arrays here have no data */
    const pl_chip *chip = sim_kdef_chip(opt);
    int autolim = sopt && sopt->vmem_limit_auto && !o.vmem_limit_bytes && chip;
    if (autolim) o.vmem_limit_bytes = chip->vmem_bytes; /* the wall; each row's own limit is settled after */
    int rc = pl_sweep(n, build_one, &s, &o, sopt, reports);
    if (rc == PL_OK && autolim) settle_limits(d, n, values, chip, reports);
    for (int i = 0; i < n; i++) {
        /* the reason alone, as a rejected call's: the caller holds row i's values and prints them once */
        if (rc == PL_OK && s.slots[i].rc != PL_OK)
            snprintf(reports[i].error, sizeof reports[i].error, "%s", s.slots[i].reason);
        if (rc == PL_OK) sim_kdef_ideal(d, values + (size_t)i * (size_t)d->n_params, &reports[i]);
        for (int a = 0; a < PL_MAX_OPERANDS; a++) free(s.slots[i].prefetch[a]);
    }
    free(s.slots);
    return rc;
}
