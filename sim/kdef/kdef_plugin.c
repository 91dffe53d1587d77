/* sim/kdef/kdef_plugin.c: pl_plugin_load, kernel definitions from a shared
 * object. The library stays loaded for the life of the process: the
 * definitions, their callbacks and their strings live in it. Nothing the
 * plugin returns is trusted: every count, array, string and callback is
 * checked before any tool reads it (check_defs). */
#define _GNU_SOURCE /* dladdr */
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kdef_internal.h"
#include "../../kernel/guard.h"
#include "../base/outfile.h" /* sim_out_protect */

typedef int (*plugin_fn)(int abi, const pl_kernel_def *const **defs);

static int fail(char *msg, size_t n, const char *path, const char *what, const char *detail)
{
    if (msg && n) snprintf(msg, n, "plugin '%s': %s%s%s", path, what, detail ? ": " : "", detail ? detail : "");
    return PL_EINVAL;
}

/* ---- reading what a plugin hands over, without trusting it ------------------------
 *
 * tilesim_kernels is the user's code: the pointers it returns may be
 * garbage. Every byte the tools will read is probed first by writing it
 * into a pipe: write(2) fails with EFAULT on memory the process cannot
 * read, where a plain read would kill the process. Chunks of at most
 * PIPE_BUF bytes, read back at once, so that the pipe never fills. */

#define PROBE_CHUNK 512
#define MAX_DEFS 4096           /* definitions one plugin may give */
#define MAX_NAME 64             /* a kernel's or a parameter's name */
#define MAX_TEXT 1024           /* a summary or a parameter's help */
#define MAX_CANDIDATES 4096     /* a parameter's sweep candidates (a sweep runs at most 4096) */

typedef struct probe {
    int fd[2];
} probe;

static int readable(probe *pr, const void *p, size_t n)
{
    if (!p) return 0;
    char sink[PROBE_CHUNK];
    for (size_t off = 0; off < n; off += PROBE_CHUNK) {
        size_t k = n - off < PROBE_CHUNK ? n - off : PROBE_CHUNK;
        if (write(pr->fd[1], (const char *)p + off, k) != (ssize_t)k) return 0;
        if (read(pr->fd[0], sink, k) != (ssize_t)k) return 0;
    }
    return 1;
}

/* A NUL-terminated string of at most max characters, all readable: its
 * length, or -1 (unreadable) or -2 (no NUL within max). Memory is readable
 * a page at a time, so one byte is probed where the string starts and where
 * it enters each next page (probing more could read past a short string at
 * the end of its page, or into a sanitizer's red zone). */
static long string_len(probe *pr, const char *s, size_t max)
{
    if (!s) return -1;
    for (size_t i = 0; i <= max; i++) {
        if ((i == 0 || ((uintptr_t)(s + i) & 4095) == 0) && !readable(pr, s + i, 1)) return -1;
        if (!s[i]) return (long)i;
    }
    return -2;
}

/* A function pointer that lies inside some loaded object: a garbage one
 * would only crash when a tool calls it. */
static int code_pointer(const void *fn)
{
    Dl_info info;
    return fn && dladdr(fn, &info) && info.dli_fname;
}

static int fail_def(char *msg, size_t n, const char *path, int i, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static int fail_def(char *msg, size_t n, const char *path, int i, const char *name, const char *fmt, ...)
{
    char what[256], detail[192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    if (name) snprintf(what, sizeof what, "kernel '%s' (definition %d): %s", name, i, detail);
    else snprintf(what, sizeof what, "definition %d: %s", i, detail);
    return fail(msg, n, path, what, NULL);
}

/* A name a tool can print and a --set can name: letters, digits, '_', '-', '.' */
static int plain_name(const char *s)
{
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-' && *s != '.') return 0;
    return 1;
}

static int check_param(probe *pr, const char *path, int i, const pl_kernel_def *d, int p, char *msg, size_t n)
{
    const pl_kernel_param *q = &d->params[p];
    long len = string_len(pr, q->name, MAX_NAME);
    if (len <= 0)
        return fail_def(msg, n, path, i, d->name, "parameter %d has %s", p,
                        len == 0 ? "an empty name" : len == -1 ? "no readable name" : "a name over 64 characters");
    if (!plain_name(q->name))
        return fail_def(msg, n, path, i, d->name, "parameter %d's name '%s' has characters other than letters, "
                        "digits, '_', '-' and '.'", p, q->name);
    for (int o = 0; o < p; o++)
        if (!strcmp(d->params[o].name, q->name))
            return fail_def(msg, n, path, i, d->name, "two parameters are named '%s'", q->name);
    if (q->help && string_len(pr, q->help, MAX_TEXT) < 0)
        return fail_def(msg, n, path, i, d->name, "parameter '%s': its help is not a readable string of at "
                        "most %d characters", q->name, MAX_TEXT);
    if (q->kind != PL_PARAM_INT && q->kind != PL_PARAM_DTYPE)
        return fail_def(msg, n, path, i, d->name, "parameter '%s' has kind %d (PL_PARAM_INT or PL_PARAM_DTYPE)",
                        q->name, (int)q->kind);
    if (q->n_candidates < 0 || q->n_candidates > MAX_CANDIDATES)
        return fail_def(msg, n, path, i, d->name, "parameter '%s' has n_candidates = %d (0 to %d allowed)", q->name,
                        q->n_candidates, MAX_CANDIDATES);
    if (q->n_candidates > 0 && !readable(pr, q->candidates, (size_t)q->n_candidates * sizeof *q->candidates))
        return fail_def(msg, n, path, i, d->name, "parameter '%s' has n_candidates = %d but candidates is %s",
                        q->name, q->n_candidates, q->candidates ? "not readable memory" : "NULL");
    if (q->divides) {
        int t = -1;
        if (string_len(pr, q->divides, MAX_TEXT) >= 0)
            for (int o = 0; o < d->n_params; o++)
                if (o != p && string_len(pr, d->params[o].name, MAX_NAME) > 0 &&
                    !strcmp(d->params[o].name, q->divides))
                    t = o;
        if (t < 0 || q->kind != PL_PARAM_INT || d->params[t].kind != PL_PARAM_INT)
            return fail_def(msg, n, path, i, d->name, "parameter '%s': divides names no other integer parameter "
                            "of the definition", q->name);
    }
    if (q->multiple < 0)
        return fail_def(msg, n, path, i, d->name, "parameter '%s' has multiple = %lld (0 or more)", q->name,
                        (long long)q->multiple);
    if (q->kind == PL_PARAM_DTYPE) {
        if (q->def < 0 || q->def >= PL_DTYPE_COUNT)
            return fail_def(msg, n, path, i, d->name, "dtype parameter '%s' has default %lld, not a pl_dtype",
                            q->name, (long long)q->def);
        for (int c = 0; c < q->n_candidates; c++)
            if (q->candidates[c] < 0 || q->candidates[c] >= PL_DTYPE_COUNT)
                return fail_def(msg, n, path, i, d->name, "dtype parameter '%s': candidate %d is %lld, not a pl_dtype",
                                q->name, c, (long long)q->candidates[c]);
    }
    return PL_OK;
}

/* Everything the tools read of a definition before they call it: names,
 * texts, counts and the arrays they count, the callbacks' addresses. */
static int check_def(probe *pr, const char *path, const pl_kernel_def *const *defs, int i, char *msg, size_t n)
{
    const pl_kernel_def *d = defs[i];
    if (!readable(pr, d, sizeof *d))
        return fail_def(msg, n, path, i, NULL, "%s", d ? "its pointer is not readable memory" : "it is NULL");
    long len = string_len(pr, d->name, MAX_NAME);
    if (len == 0 || !d->name) {
        char what[64];
        snprintf(what, sizeof what, "definition %d has no name", i);
        return fail(msg, n, path, what, NULL);
    }
    if (len < 0)
        return fail_def(msg, n, path, i, NULL, "%s", len == -1 ? "its name is not readable memory"
                                                           : "its name is over 64 characters or not NUL-terminated");
    if (!plain_name(d->name))
        return fail_def(msg, n, path, i, NULL, "its name '%s' has characters other than letters, digits, '_', '-' "
                        "and '.'", d->name);
    for (int o = 0; o < i; o++)
        if (!strcmp(defs[o]->name, d->name)) return fail_def(msg, n, path, i, d->name, "the name is used twice");
    if (d->summary && string_len(pr, d->summary, MAX_TEXT) < 0)
        return fail_def(msg, n, path, i, d->name, "its summary is not a readable string of at most %d characters",
                        MAX_TEXT);
    if (d->n_params < 0 || d->n_params > PL_KDEF_MAX_PARAMS)
        return fail_def(msg, n, path, i, d->name, "it has %d parameters (0 to %d allowed)", d->n_params,
                        PL_KDEF_MAX_PARAMS);
    for (int p = 0; p < d->n_params; p++) {
        int rc = check_param(pr, path, i, d, p, msg, n);
        if (rc) return rc;
    }
    if (!code_pointer((const void *)(uintptr_t)d->build))
        return fail_def(msg, n, path, i, d->name, "%s", d->build ? "its build is not a function of a loaded object"
                                                                 : "it has no build function");
    const struct { const char *what; const void *fn; } optional[] = {
        {"check", (const void *)(uintptr_t)d->check}, {"inputs", (const void *)(uintptr_t)d->inputs},
        {"reference", (const void *)(uintptr_t)d->reference}, {"flops", (const void *)(uintptr_t)d->flops},
        {"bytes", (const void *)(uintptr_t)d->bytes}, {"vmem_limit", (const void *)(uintptr_t)d->vmem_limit},
        {"mesh", (const void *)(uintptr_t)d->mesh}, {"mesh_reference", (const void *)(uintptr_t)d->mesh_reference},
        {"chip_defaults", (const void *)(uintptr_t)d->chip_defaults}};
    for (size_t f = 0; f < sizeof optional / sizeof *optional; f++)
        if (optional[f].fn && !code_pointer(optional[f].fn))
            return fail_def(msg, n, path, i, d->name, "its %s is not a function of a loaded object", optional[f].what);
    if (!(d->rtol >= 0 && d->rtol < 1e30) || !(d->atol >= 0 && d->atol < 1e30))
        return fail_def(msg, n, path, i, d->name, "rtol %g and atol %g must be finite and not negative", d->rtol,
                        d->atol);
    return PL_OK;
}

static int check_defs(const char *path, const pl_kernel_def *const *defs, int count, char *msg, size_t n)
{
    probe pr;
    if (pipe(pr.fd) != 0) return fail(msg, n, path, "cannot check its definitions", strerror(errno));
    int rc = PL_OK;
    if (!readable(&pr, defs, (size_t)count * sizeof *defs)) {
        char what[128];
        snprintf(what, sizeof what, PL_PLUGIN_SYMBOL " returned %d definition%s at an address that is not "
                 "readable memory", count, count == 1 ? "" : "s");
        rc = fail(msg, n, path, what, NULL);
    }
    for (int i = 0; rc == PL_OK && i < count; i++) rc = check_def(&pr, path, defs, i, msg, n);
    close(pr.fd[0]);
    close(pr.fd[1]);
    return rc;
}

int pl_plugin_load(const char *path, const pl_kernel_def *const **defs, char *msg, size_t n)
{
    if (msg && n) msg[0] = '\0';
    if (!path || !path[0] || !defs) {
        if (msg && n) snprintf(msg, n, "pl_plugin_load: a path and a place for the definitions are required");
        return PL_EINVAL;
    }
    *defs = NULL;
    /* dlopen searches LD_LIBRARY_PATH for a name without '/': the user
     * means the file in the current directory */
    char full[PATH_MAX];
    if (!strchr(path, '/')) snprintf(full, sizeof full, "./%s", path);
    else snprintf(full, sizeof full, "%s", path);
    struct stat st;
    if (stat(full, &st) != 0) return fail(msg, n, path, "cannot open it", strerror(errno));
    if (!S_ISREG(st.st_mode)) return fail(msg, n, path, "not a regular file", NULL);
    sim_out_protect(full, "the plugin");
    dlerror();
    /* loading runs the plugin's constructors: its own code, guarded as its callbacks are */
    kern_guard_zone("plugin", path, "constructors (run as it loads)");
    void *h = dlopen(full, RTLD_NOW | RTLD_LOCAL);
    kern_guard_zone(NULL, NULL, NULL);
    if (!h) {
        const char *e = dlerror();
        fail(msg, n, path, "cannot load it as a shared object", e);
        /* the usual cause: a program linked with the static library holds
         * only the pl_ functions it calls, and exports none of them */
        if (e && strstr(e, "undefined symbol: pl") && msg && strlen(msg) + 1 < n)
            snprintf(msg + strlen(msg), n - strlen(msg),
                     " (the program loading plugins must export the tilesim library: link it with "
                     "-rdynamic -Wl,--whole-archive -ltilesim -Wl,--no-whole-archive)");
        return PL_EINVAL;
    }
    dlerror();
    void *sym = dlsym(h, PL_PLUGIN_SYMBOL);
    if (!sym) {
        const char *e = dlerror();
        fail(msg, n, path, "not a tilesim plugin: it exports no function " PL_PLUGIN_SYMBOL, e);
        dlclose(h);
        return PL_EINVAL;
    }
    plugin_fn fn;
    memcpy(&fn, &sym, sizeof fn); /* ISO C has no object-to-function pointer cast */
    const pl_kernel_def *const *got = NULL;
    /* the plugin's own code: a crash in it names the plugin (kernel/guard.h) */
    kern_guard_zone("plugin", path, PL_PLUGIN_SYMBOL " function");
    int count = fn(PL_KERNEL_ABI, &got);
    kern_guard_zone(NULL, NULL, NULL);
    char what[160];
    if (count < 0) {
        snprintf(what, sizeof what, "it does not support kernel ABI %d (rebuild it against this tilesim's sim/kdef.h)",
                 PL_KERNEL_ABI);
        dlclose(h);
        return fail(msg, n, path, what, NULL);
    }
    if (count > MAX_DEFS) {
        snprintf(what, sizeof what, PL_PLUGIN_SYMBOL " returned %d definitions (at most %d)", count, MAX_DEFS);
        dlclose(h);
        return fail(msg, n, path, what, NULL);
    }
    if (count == 0 || !got) {
        dlclose(h);
        return fail(msg, n, path, PL_PLUGIN_SYMBOL " returned no kernel definitions", NULL);
    }
    int rc = check_defs(path, got, count, msg, n);
    if (rc != PL_OK) {
        dlclose(h);
        return rc;
    }
    *defs = got;
    return count; /* h stays open: the definitions live in it */
}
