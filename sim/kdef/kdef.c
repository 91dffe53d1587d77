/* sim/kdef/kdef.c: kernel definitions (sim/kdef.h): parameters, the default
 * inputs, and the run driver that builds, runs and checks one
 * configuration. The sweep driver is in kdef_sweep.c, plugins in
 * kdef_plugin.c. */
#include "../kdef.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "kdef_internal.h"
#include "../../kernel/guard.h"

/* A value the user gave, for a message: escaped (sim_text_escape), and cut
 * with "..." past what buf holds (a 5000-digit --set was echoed whole). */
static const char *shown_value(const char *v, char *buf, size_t n)
{
    sim_text_escape(v, buf, n - 3);
    if (strlen(buf) < strlen(v)) strcat(buf, "...");
    return buf;
}

static void say(char *msg, size_t n, const char *fmt, ...)
{
    if (!msg || !n) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, n, fmt, ap);
    va_end(ap);
}

/* ---- parameters ------------------------------------------------------------ */

int pl_kernel_param_index(const pl_kernel_def *d, const char *name)
{
    if (!d || !name) return -1;
    for (int i = 0; i < d->n_params && i < PL_KDEF_MAX_PARAMS; i++)
        if (d->params[i].name && strcmp(d->params[i].name, name) == 0) return i;
    return -1;
}

void pl_kernel_defaults(const pl_kernel_def *d, int64_t *v)
{
    if (!d || !v) return;
    for (int i = 0; i < d->n_params && i < PL_KDEF_MAX_PARAMS; i++) v[i] = d->params[i].def;
}

void pl_kernel_defaults_on(const pl_kernel_def *d, const pl_chip *chip, int64_t *v)
{
    pl_kernel_defaults(d, v);
    if (!d || !v || !chip || !d->chip_defaults) return;
    /* a plugin's code: a crash in it names the definition (kernel/guard.h) */
    kern_guard_zone("kernel definition", d->name, "chip_defaults callback");
    d->chip_defaults(v, chip);
    kern_guard_zone(NULL, NULL, NULL);
    /* a dtype no tool could print or build with keeps the declared default */
    for (int i = 0; i < d->n_params && i < PL_KDEF_MAX_PARAMS; i++)
        if (d->params[i].kind == PL_PARAM_DTYPE && (v[i] < 0 || v[i] >= PL_DTYPE_COUNT)) v[i] = d->params[i].def;
}

/* The parameter names, "a, b, c", for messages about an unknown one. */
static void list_names(const pl_kernel_def *d, char *buf, size_t n)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < d->n_params && i < PL_KDEF_MAX_PARAMS && at < n; i++) {
        int w = snprintf(buf + at, n - at, "%s%s", i ? ", " : "", d->params[i].name ? d->params[i].name : "?");
        if (w < 0) break;
        at += (size_t)w;
    }
}

/* Plain decimal digits only: no sign, no spaces, no hex, no suffix. */
static int parse_count(const char *s, int64_t *out)
{
    if (!s[0] || s[0] == '-' || s[0] == '+') return 0;
    for (const char *p = s; *p; p++)
        if (*p < '0' || *p > '9') return 0;
    errno = 0;
    char *end;
    long long x = strtoll(s, &end, 10);
    if (errno == ERANGE || *end) return 0;
    *out = (int64_t)x;
    return 1;
}

int pl_kernel_set(const pl_kernel_def *d, int64_t *v, const char *assignment, char *msg, size_t n)
{
    if (!d || !v || !assignment) {
        say(msg, n, "pl_kernel_set: a definition, values and an assignment are required");
        return PL_EINVAL;
    }
    const char *eq = strchr(assignment, '=');
    if (!eq || eq == assignment) {
        say(msg, n, "'%s': want name=value (e.g. %s=%" PRId64 ")", assignment,
            d->n_params > 0 ? d->params[0].name : "name", d->n_params > 0 ? d->params[0].def : 0);
        return PL_EINVAL;
    }
    char name[64];
    size_t len = (size_t)(eq - assignment);
    if (len >= sizeof name) len = sizeof name - 1;
    memcpy(name, assignment, len);
    name[len] = '\0';
    int i = pl_kernel_param_index(d, name);
    if (i < 0) {
        char names[512];
        list_names(d, names, sizeof names);
        say(msg, n, "kernel '%s' has no parameter '%s' (its parameters: %s)", d->name ? d->name : "?", name, names);
        return PL_EINVAL;
    }
    const char *val = eq + 1;
    if (d->params[i].kind == PL_PARAM_DTYPE) {
        pl_dtype t;
        if (pl_dtype_parse(val, &t) != PL_OK) {
            char shown[80];
            say(msg, n, "parameter '%s' of kernel '%s': '%s' is not a dtype (f32, bf16, f16, i32, ...)", name,
                d->name ? d->name : "?", shown_value(val, shown, sizeof shown));
            return PL_EINVAL;
        }
        v[i] = (int64_t)t;
        return PL_OK;
    }
    int64_t x;
    if (!parse_count(val, &x)) {
        char shown[80];
        say(msg, n, "parameter '%s' of kernel '%s': '%s' is not a non-negative decimal integer below 2^63", name,
            d->name ? d->name : "?", shown_value(val, shown, sizeof shown));
        return PL_EINVAL;
    }
    v[i] = x;
    return PL_OK;
}

const char *pl_kernel_format(const pl_kernel_def *d, const int64_t *v, char *buf, size_t n)
{
    if (!buf || !n) return buf;
    buf[0] = '\0';
    if (!d || !v) return buf;
    size_t at = 0;
    for (int i = 0; i < d->n_params && i < PL_KDEF_MAX_PARAMS && at < n; i++) {
        const pl_kernel_param *p = &d->params[i];
        const char *name = p->name ? p->name : "?";
        int w = p->kind == PL_PARAM_DTYPE
                    ? snprintf(buf + at, n - at, "%s%s=%s", i ? " " : "", name, pl_dtype_name((pl_dtype)v[i]))
                    : snprintf(buf + at, n - at, "%s%s=%" PRId64, i ? " " : "", name, v[i]);
        if (w < 0) break;
        at += (size_t)w;
    }
    return buf;
}

/* ---- the default inputs ------------------------------------------------------- */

/* Floats uniform in [-1, 1); integers in [-8, 8), prefetch tables (block
 * indices, counts) in [0, 8). Arrays without data (cost-only) are skipped. */
int pl_kernel_fill_inputs(const int64_t *v, pl_kernel_build *b, uint64_t seed)
{
    (void)v;
    if (!b) return PL_EINVAL;
    uint64_t s = seed;
    for (int a = 0; a < b->n_args && a < PL_KDEF_MAX_ARGS; a++) {
        pl_array *arr = &b->args[a];
        if (!arr->data) continue;
        int prefetch = a < b->call.num_scalar_prefetch, fl = pl_dtype_is_float(arr->dtype);
        size_t es = pl_dtype_size(arr->dtype);
        int64_t cnt = pl_array_size(arr);
        for (int64_t i = 0; i < cnt; i++) {
            uint64_t r = sim_splitmix64(&s);
            double x = fl ? (double)(r >> 11) * 0x1.0p-52 - 1.0 : prefetch ? (double)(r % 8) : (double)(r % 16) - 8;
            pl_store_elem((char *)arr->data + (size_t)i * es, arr->dtype, x);
        }
    }
    return PL_OK;
}

/* The definition's inputs, or the default ones over the arrays the driver
 * allocated only (owned[a]): a table build gave data to is the
 * definition's own, and stays as it is. */
int sim_kdef_inputs(const pl_kernel_def *d, const int64_t *v, pl_kernel_build *b, uint64_t seed,
                    const unsigned char *owned)
{
    if (d->inputs) return sim_kdef_call_inputs(d, v, b, seed);
    void *kept[PL_KDEF_MAX_ARGS];
    for (int a = 0; a < b->n_args; a++) {
        kept[a] = b->args[a].data;
        if (!owned[a]) b->args[a].data = NULL;
    }
    int rc = pl_kernel_fill_inputs(v, b, seed);
    for (int a = 0; a < b->n_args; a++) b->args[a].data = kept[a];
    return rc;
}

int sim_kdef_tables(const pl_kernel_def *d, const int64_t *v, pl_kernel_build *b, uint64_t seed, void **owned)
{
    unsigned char mine[PL_KDEF_MAX_ARGS] = {0};
    for (int a = 0; a < b->call.num_scalar_prefetch && a < b->n_args && a < PL_KDEF_MAX_ARGS; a++) {
        if (b->args[a].data) continue;
        if (!(owned[a] = b->args[a].data = calloc(1, pl_array_bytes(&b->args[a]) + 1))) return PL_ENOMEM;
        mine[a] = 1;
    }
    return b->call.num_scalar_prefetch ? sim_kdef_inputs(d, v, b, seed, mine) : PL_OK;
}

#define KDEF_ZONE "kernel definition"

int sim_kdef_call_inputs(const pl_kernel_def *d, const int64_t *v, pl_kernel_build *b, uint64_t seed)
{
    if (!d->inputs) return pl_kernel_fill_inputs(v, b, seed);
    kern_guard_host_zone(KDEF_ZONE, d->name, "inputs callback");
    int rc = d->inputs(v, b, seed);
    kern_guard_zone(NULL, NULL, NULL);
    return rc;
}

/* ---- how each output is checked: what the reference asked (pl_want_*) -------------- */

typedef struct sim_kdef_want want_rule;
static _Thread_local sim_kdef_wants cur; /* the reference runs on the driver's thread */

void sim_kdef_wants_take(sim_kdef_wants *to) { *to = cur; }
void sim_kdef_wants_put(const sim_kdef_wants *from) { cur = *from; }

static want_rule *rule_for(const pl_array *want)
{
    if (!want || !want->data) return NULL;
    for (int i = 0; i < cur.n; i++)
        if (cur.rule[i].data == want->data) return &cur.rule[i];
    if (cur.n == PL_MAX_OPERANDS) return NULL;
    cur.rule[cur.n] = (want_rule){.data = want->data};
    return &cur.rule[cur.n++];
}

int pl_want_tolerance(const pl_array *want, double rtol, double atol)
{
    if (!(rtol >= 0 && rtol < 1e30) || !(atol >= 0 && atol < 1e30)) return PL_EINVAL;
    want_rule *r = rule_for(want);
    if (!r) return PL_EINVAL;
    r->has_tol = 1, r->rtol = rtol, r->atol = atol;
    return PL_OK;
}

int pl_want_dot(const pl_array *want, const pl_array *a, const pl_array *b, int trans_a, int trans_b)
{
    if (!a || !b || !a->data || !b->data) return PL_EINVAL;
    want_rule *r = rule_for(want);
    if (!r) return PL_EINVAL;
    r->dot = 1, r->a = *a, r->b = *b, r->ta = trans_a != 0, r->tb = trans_b != 0;
    return PL_OK;
}

int sim_kdef_check_output(const pl_kernel_def *d, const pl_array *got, const pl_array *want, pl_check *k,
                          double *rtol, double *atol)
{
    const want_rule *r = NULL;
    for (int i = 0; want && i < cur.n; i++)
        if (cur.rule[i].data == want->data) r = &cur.rule[i];
    *rtol = r && r->has_tol ? r->rtol : d->rtol, *atol = r && r->has_tol ? r->atol : d->atol;
    if (r && r->dot) {
        *rtol = *atol = -1; /* no tolerance: the dot's normalised error */
        int rc = pl_check_dot(got, &r->a, &r->b, r->ta, r->tb, k, NULL);
        return rc == PL_EVERIFY ? PL_OK : rc; /* the verdict is in k */
    }
    return pl_allclose(got, want, *rtol, *atol, k, NULL);
}

int sim_kdef_call_reference(const pl_kernel_def *d, const int64_t *v, const pl_kernel_build *b, pl_array *want)
{
    cur.n = 0; /* this reference's own pl_want_* calls */
    kern_guard_host_zone(KDEF_ZONE, d->name, "reference callback");
    int rc = d->reference(v, b, want);
    kern_guard_zone(NULL, NULL, NULL);
    return rc;
}

int sim_kdef_call_mesh_reference(const pl_kernel_def *d, const int64_t *v, const pl_kernel_build *devs, int n_devices,
                                 int device, pl_array *want)
{
    cur.n = 0;
    kern_guard_host_zone(KDEF_ZONE, d->name, "mesh_reference callback");
    int rc = d->mesh_reference(v, devs, n_devices, device, want);
    kern_guard_zone(NULL, NULL, NULL);
    return rc;
}

int sim_kdef_call_mesh(const pl_kernel_def *d, const int64_t *v, pl_mesh *mesh, char *msg, size_t n)
{
    kern_guard_zone(KDEF_ZONE, d->name, "mesh callback");
    int rc = d->mesh(v, mesh, msg, n);
    kern_guard_zone(NULL, NULL, NULL);
    if (n) msg[n - 1] = '\0'; /* a plugin's message may fill the buffer without its NUL */
    return rc;
}

/* ---- shared by the drivers ------------------------------------------------------ */

int sim_kdef_prepare(const pl_kernel_def *d, const int64_t *v, const pl_options *opt, pl_kernel_build *b, char *msg,
                     size_t n)
{
    memset(b, 0, sizeof *b);
    if (!d || !v) {
        say(msg, n, "a kernel definition and its parameter values are required");
        return PL_EINVAL;
    }
    const char *name = d->name ? d->name : "(unnamed)";
    if (!d->build) {
        say(msg, n, "kernel '%s' defines no build function: there is no call to run", name);
        return PL_EINVAL;
    }
    if (d->n_params < 0 || d->n_params > PL_KDEF_MAX_PARAMS) {
        say(msg, n, "kernel '%s': %d parameters (at most %d)", name, d->n_params, PL_KDEF_MAX_PARAMS);
        return PL_EINVAL;
    }
    msg[0] = '\0';
    kern_guard_zone(KDEF_ZONE, name, "check callback");
    int rc = d->check ? d->check(v, msg, n) : PL_OK;
    kern_guard_zone(KDEF_ZONE, name, "build callback");
    if (rc == PL_OK) rc = d->build(v, b, msg, n);
    kern_guard_zone(NULL, NULL, NULL);
    msg[n - 1] = '\0'; /* a plugin's message may fill the buffer without its NUL */
    if (rc > 0) rc = PL_EINVAL; /* a callback returning 1 for "no" still fails */
    if (rc == PL_OK && (b->n_args < 0 || b->n_args > PL_KDEF_MAX_ARGS || b->n_outs < 0 ||
                        b->n_outs > PL_MAX_OPERANDS)) {
        say(msg, n, "kernel '%s': build gave %d arguments and %d outputs (at most %d and %d)", name, b->n_args,
            b->n_outs, PL_KDEF_MAX_ARGS, PL_MAX_OPERANDS);
        rc = PL_EINVAL;
    }
    if (rc != PL_OK && !msg[0]) say(msg, n, "kernel '%s': %s", name, pl_strerror(rc));
    if (rc == PL_OK && !b->call.name) b->call.name = d->name;
    const pl_chip *chip = sim_kdef_chip(opt);
    if (rc == PL_OK && !b->call.vmem_limit_bytes && chip) { /* a limit build set itself stays */
        kern_guard_zone(KDEF_ZONE, name, "vmem_limit callback");
        b->call.vmem_limit_bytes = sim_kdef_vmem_limit(d, v, chip);
        kern_guard_zone(NULL, NULL, NULL);
    }
    return rc;
}

int64_t sim_kdef_vmem_limit(const pl_kernel_def *d, const int64_t *v, const pl_chip *chip)
{
    return d->vmem_limit ? d->vmem_limit(v, chip) : d->vmem_limit_bytes;
}

const pl_chip *sim_kdef_chip(const pl_options *opt)
{
    if (opt && opt->chip_spec) return opt->chip_spec;
    return opt && opt->chip ? pl_chip_find(opt->chip) : pl_chip_default();
}
