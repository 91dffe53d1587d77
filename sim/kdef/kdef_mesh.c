/* sim/kdef/kdef_mesh.c: pl_kernel_run_mesh, a mesh kernel definition (d->mesh)
 * run SPMD on every device of its mesh with pl_mesh_call, each device's
 * outputs checked against d->mesh_reference (V5).
 *
 * build describes one device's call; every device gets the arrays of that
 * build allocated for itself and filled with its own seed. Across MPI
 * ranks every process fills every device's inputs (a collective's
 * reference reads all of them) but holds the outputs of its own devices
 * only: each checks those, and pl_mesh_share gives every process the
 * verdicts of all. */
#include <stdlib.h>
#include <string.h>

#include "kdef_internal.h"

uint64_t pl_kernel_device_seed(uint64_t seed, int device)
{
    uint64_t s = seed ^ (0x9E3779B97F4A7C15ull * (uint64_t)(device + 1));
    return sim_splitmix64(&s);
}

int pl_kernel_def_mesh(const pl_kernel_def *d, const int64_t *v, pl_mesh *mesh, char *msg, size_t n)
{
    const char *name = d && d->name ? d->name : "(unnamed)";
    memset(mesh, 0, sizeof *mesh);
    if (!d || !v || !d->mesh) {
        snprintf(msg, n, "kernel '%s' is not a mesh kernel (its definition sets no mesh function)", name);
        return PL_EINVAL;
    }
    char why[PL_MSG_MAX] = "";
    int rc = sim_kdef_call_mesh(d, v, mesh, why, sizeof why);
    if (rc == PL_OK) rc = pl_mesh_check(mesh, why, sizeof why);
    if (rc != PL_OK) snprintf(msg, n, "kernel '%s': its mesh: %s", name, why[0] ? why : pl_strerror(rc));
    return rc == PL_OK ? PL_OK : rc < 0 ? rc : PL_EINVAL;
}

/* Every device's arrays: b[dev] (b[0] as built), owned[dev], and the flat
 * argument and output lists pl_mesh_call takes. */
typedef struct mesh_run {
    int n, cost_only;
    pl_kernel_build *b;
    unsigned char (*owned)[PL_KDEF_MAX_ARGS + PL_MAX_OPERANDS];
    pl_array *args, *outs;
    pl_array *want; /* the references of this process's devices (mesh_references) */
    sim_kdef_wants *asked; /* and how each reference asked its outputs checked (pl_want_*) */
    int n_want;
} mesh_run;

static void mesh_free(mesh_run *m)
{
    for (int dev = 0; m->b && m->owned && dev < m->n; dev++) sim_kdef_release(&m->b[dev], m->owned[dev]);
    for (int i = 0; m->want && i < m->n_want; i++) free(m->want[i].data);
    free(m->b), free(m->owned), free(m->args), free(m->outs), free(m->want), free(m->asked);
}

/* Build once, then give each device its arrays and inputs. */
static int mesh_setup(const pl_kernel_def *d, const int64_t *v, const pl_options *opt, mesh_run *m, pl_report *rep)
{
    char msg[PL_MSG_MAX];
    m->b = calloc((size_t)m->n, sizeof *m->b);
    m->owned = calloc((size_t)m->n, sizeof *m->owned);
    if (!m->b || !m->owned) return sim_kdef_fail(rep, PL_ENOMEM, "out of host memory for the devices' builds");
    int rc = sim_kdef_prepare(d, v, opt, &m->b[0], msg, sizeof msg);
    if (rc != PL_OK) return sim_kdef_fail(rep, rc, msg);
    int want = d->mesh_reference && !m->cost_only;
    if (sim_kdef_bad_arrays(d, &m->b[0], msg, sizeof msg)) return sim_kdef_fail(rep, PL_EINVAL, msg);
    rc = pl_host_memory_check(m->n * sim_kdef_host_bytes(&m->b[0], m->cost_only, want), msg, sizeof msg);
    if (rc != PL_OK) return sim_kdef_fail(rep, rc, msg);
    int na = m->b[0].n_args, no = m->b[0].n_outs;
    m->args = calloc((size_t)m->n * (size_t)(na ? na : 1), sizeof *m->args);
    m->outs = calloc((size_t)m->n * (size_t)(no ? no : 1), sizeof *m->outs);
    if (!m->args || !m->outs) return sim_kdef_fail(rep, PL_ENOMEM, "out of host memory for the devices' arrays");
    for (int dev = 1; dev < m->n; dev++) m->b[dev] = m->b[0]; /* the same shapes; build's own data stays shared */
    for (int dev = 0; dev < m->n; dev++) {
        if (sim_kdef_allocate(&m->b[dev], m->cost_only, m->owned[dev]) != PL_OK)
            return sim_kdef_fail(rep, PL_ENOMEM, "out of host memory for the devices' arrays");
        rc = sim_kdef_inputs(d, v, &m->b[dev], pl_kernel_device_seed(opt ? opt->seed : 0, dev), m->owned[dev]);
        if (rc != PL_OK) {
            snprintf(msg, sizeof msg, "kernel '%s': its inputs function failed on device %d: %s", d->name, dev,
                     pl_strerror(rc));
            return sim_kdef_fail(rep, rc < 0 ? rc : PL_EINVAL, msg);
        }
        memcpy(m->args + (size_t)dev * (size_t)na, m->b[dev].args, (size_t)na * sizeof *m->args);
        memcpy(m->outs + (size_t)dev * (size_t)no, m->b[dev].outs, (size_t)no * sizeof *m->outs);
    }
    return PL_OK;
}

/* Per device and output, what pl_mesh_share carries: verdict, norm_err, max_abs_err, rtol, atol, and a
 * dot's thresholds (pl_want_dot). */
enum { S_VERDICT, S_NORM, S_MAX, S_RTOL, S_ATOL, S_PASS, S_FAIL, S_N };

/* This process's devices' reference outputs, computed before the call runs:
 * a mesh_reference that crashes or fails then ends the run before the call
 * writes any file (a --trace, say), as a single device's reference does
 * (kdef_run.c). want holds count x no arrays, device by device. */
static int mesh_references(const pl_kernel_def *d, const int64_t *v, const pl_mesh *mesh, mesh_run *m,
                           pl_report *rep)
{
    int first, count, no = m->b[0].n_outs;
    pl_mesh_local_devices(mesh, &first, &count);
    m->want = calloc((size_t)(count ? count : 1) * (size_t)(no ? no : 1), sizeof *m->want);
    m->asked = calloc((size_t)(count ? count : 1), sizeof *m->asked);
    if (!m->want || !m->asked) return sim_kdef_fail(rep, PL_ENOMEM, "out of host memory for the reference outputs");
    m->n_want = count * no;
    for (int i = 0; i < count * no; i++) {
        m->want[i] = m->b[0].outs[i % no];
        m->want[i].data = calloc(1, pl_array_bytes(&m->want[i]) + 1);
        if (!m->want[i].data) return sim_kdef_fail(rep, PL_ENOMEM, "out of host memory for the reference outputs");
    }
    /* Every process learns whether any device's reference failed, so that
     * all of them stop before the call instead of some entering it alone. */
    double *failed = calloc((size_t)m->n, sizeof *failed);
    if (!failed) return sim_kdef_fail(rep, PL_ENOMEM, "out of host memory for the reference outputs");
    for (int dev = first; dev < first + count; dev++) {
        failed[dev] = sim_kdef_call_mesh_reference(d, v, m->b, m->n, dev, m->want + (size_t)(dev - first) * (size_t)no);
        sim_kdef_wants_take(&m->asked[dev - first]);
        if (failed[dev] != PL_OK) break;
    }
    int rc = pl_mesh_share(mesh, failed, 1);
    for (int dev = 0; dev < m->n && rc == PL_OK; dev++)
        if (failed[dev] != PL_OK) {
            int r = (int)failed[dev];
            char msg[256];
            snprintf(msg, sizeof msg, "kernel '%s': its mesh_reference failed on device %d: %s", d->name, dev,
                     pl_strerror(r));
            rc = sim_kdef_fail(rep, r < 0 ? r : PL_EINVAL, msg);
        }
    free(failed);
    if (rc == PL_ENOMEM && !rep->error[0])
        rc = sim_kdef_fail(rep, rc, "the devices' references could not be shared between processes");
    return rc;
}

/* Check this process's devices' outputs against their references into s
 * (S_N doubles per output per device; a device not checked here keeps -1). */
static int check_local(const pl_kernel_def *d, const pl_mesh *mesh, mesh_run *m, double *s, pl_report *rep)
{
    int first, count, no = m->b[0].n_outs;
    pl_mesh_local_devices(mesh, &first, &count);
    for (int dev = first; dev < first + count; dev++) {
        sim_kdef_wants_put(&m->asked[dev - first]);
        for (int o = 0; o < no; o++) {
            pl_check k;
            double rtol, atol, *w = s + ((size_t)dev * (size_t)no + (size_t)o) * S_N;
            const pl_array *want = &m->want[(size_t)(dev - first) * (size_t)no + (size_t)o];
            if (sim_kdef_check_output(d, &m->b[dev].outs[o], want, &k, &rtol, &atol) == PL_ESHAPE)
                return sim_kdef_fail(rep, PL_ESHAPE, "the reference output does not match the output's shape");
            w[S_VERDICT] = k.verdict, w[S_NORM] = k.norm_err, w[S_MAX] = k.max_abs_err, w[S_RTOL] = rtol,
            w[S_ATOL] = atol, w[S_PASS] = k.pass_below, w[S_FAIL] = k.fail_above;
        }
    }
    return PL_OK;
}

/* A verdict's severity: PASS < MARGINAL < FAIL. */
static int severity(double verdict) { return verdict == PL_FAIL ? 2 : verdict == PL_MARGINAL ? 1 : 0; }

/* Every device's outputs against the reference; one line per output, for the worst device. */
static int verify_mesh(const pl_kernel_def *d, const pl_mesh *mesh, mesh_run *m, pl_check *check, FILE *f,
                       pl_report *rep)
{
    int no = m->b[0].n_outs;
    double *s = malloc((size_t)m->n * (size_t)(no ? no : 1) * S_N * sizeof *s);
    if (!s) return sim_kdef_fail(rep, PL_ENOMEM, "out of host memory for the devices' checks");
    for (size_t i = 0; i < (size_t)m->n * (size_t)no * S_N; i++) s[i] = -1;
    int rc = check_local(d, mesh, m, s, rep);
    if (pl_mesh_share(mesh, s, no * S_N) != PL_OK && rc == PL_OK)
        rc = sim_kdef_fail(rep, PL_EINVAL, "the devices' checks could not be shared between processes");
    for (int o = 0; o < no && rc == PL_OK; o++) {
        int worst = 0;
        for (int dev = 1; dev < m->n; dev++) {
            const double *a = s + ((size_t)dev * (size_t)no + (size_t)o) * S_N;
            const double *w = s + ((size_t)worst * (size_t)no + (size_t)o) * S_N;
            if (severity(a[S_VERDICT]) > severity(w[S_VERDICT]) ||
                (severity(a[S_VERDICT]) == severity(w[S_VERDICT]) && a[S_NORM] > w[S_NORM]))
                worst = dev;
        }
        const double *w = s + ((size_t)worst * (size_t)no + (size_t)o) * S_N;
        pl_check k = {.verdict = (pl_verdict)w[S_VERDICT], .norm_err = w[S_NORM], .max_abs_err = w[S_MAX],
                      .pass_below = w[S_PASS], .fail_above = w[S_FAIL]};
        char where[64];
        snprintf(where, sizeof where, " on device %d of %d (the worst)", worst, m->n);
        sim_kdef_verdict_line(f, &m->b[0], o, &k, w[S_RTOL], w[S_ATOL], where);
        if (check) check[o] = k;
        if (k.verdict == PL_FAIL) rep->status = PL_EVERIFY;
    }
    free(s);
    if (rc == PL_OK && rep->status == PL_EVERIFY)
        snprintf(rep->error, sizeof rep->error, "kernel '%s': an output does not match the reference on a device (V5)",
                 d->name);
    return rc != PL_OK ? rc : rep->status;
}

/* The report a sweep ranks: the slowest device's, with the mesh's time and bound. */
static void summarize(pl_report *rep, const pl_report *reps, int n, const pl_mesh_report *mr)
{
    int slow = 0;
    for (int dev = 1; dev < n; dev++)
        if (reps[dev].time_s > reps[slow].time_s) slow = dev;
    *rep = reps[slow];
    rep->time_s = mr->time_s;
    /* the mesh's bound (one rule over the devices, the links and latency), not one device's */
    if (mr->bound > 0) {
        for (int b = 0; b < PL_BOUND_COUNT && b < PL_MESH_BUSY; b++) rep->busy[b] = mr->busy[b];
        rep->bound = (pl_bound)mr->bound;
        snprintf(rep->bound_msg, sizeof rep->bound_msg, "%s", mr->bound_msg);
    }
}

int pl_kernel_run_mesh(const pl_kernel_def *d, const int64_t *v, const pl_mesh *given, const pl_options *opt,
                       pl_report *rep, pl_check *check, FILE *f, pl_mesh_report *mr, pl_report *reps)
{
    pl_report own_rep;
    pl_mesh_report own_mr;
    if (!rep) rep = &own_rep;
    if (!mr) mr = &own_mr;
    memset(rep, 0, sizeof *rep);
    memset(mr, 0, sizeof *mr);
    if (check) memset(check, 0, sizeof *check * PL_MAX_OPERANDS);
    pl_mesh mesh;
    char msg[PL_MSG_MAX];
    int rc = given ? pl_mesh_check(given, msg, sizeof msg) : pl_kernel_def_mesh(d, v, &mesh, msg, sizeof msg);
    if (rc != PL_OK) return sim_kdef_fail(rep, rc, msg);
    if (given) mesh = *given;
    mesh_run m = {.n = pl_mesh_devices(&mesh), .cost_only = opt && opt->cost_only};
    pl_report *dreps = reps ? reps : calloc((size_t)m.n, sizeof *dreps);
    if (!dreps) return sim_kdef_fail(rep, PL_ENOMEM, "out of host memory for the devices' reports");
    rc = mesh_setup(d, v, opt, &m, rep);
    if (rc == PL_OK && d->mesh_reference && !m.cost_only) rc = mesh_references(d, v, &mesh, &m, rep);
    if (rc == PL_OK) {
        rc = pl_mesh_call(&mesh, &m.b[0].call, m.args, m.outs, opt, mr, dreps);
        if (rc != PL_OK) sim_kdef_fail(rep, rc, mr->error[0] ? mr->error : pl_strerror(rc));
        else summarize(rep, dreps, m.n, mr);
    }
    if (rc == PL_OK && !m.cost_only) {
        if (d->mesh_reference) rc = verify_mesh(d, &mesh, &m, check, f, rep);
        else if (f)
            fprintf(f, "  verify: kernel '%s' defines no mesh_reference; outputs not checked\n", d->name);
    }
    sim_kdef_ideal(d, v, rep);
    mesh_free(&m);
    if (!reps) free(dreps);
    return rc;
}
