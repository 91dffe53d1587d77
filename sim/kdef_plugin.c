/* sim/kdef_plugin.c: pl_plugin_load, kernel definitions from a shared
 * object. The library stays loaded for the life of the process: the
 * definitions, their callbacks and their strings live in it. */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#include "kdef_internal.h"

typedef int (*plugin_fn)(int abi, const pl_kernel_def *const **defs);

static int fail(char *msg, size_t n, const char *path, const char *what, const char *detail)
{
    if (msg && n) snprintf(msg, n, "plugin '%s': %s%s%s", path, what, detail ? ": " : "", detail ? detail : "");
    return PL_EINVAL;
}

/* Every definition must at least have a name and a sane parameter count:
 * the tools print and index them before they call anything. */
static int check_defs(const char *path, const pl_kernel_def *const *defs, int count, char *msg, size_t n)
{
    for (int i = 0; i < count; i++) {
        const pl_kernel_def *d = defs[i];
        char what[128];
        if (!d || !d->name || !d->name[0]) {
            snprintf(what, sizeof what, "definition %d has no name", i);
            return fail(msg, n, path, what, NULL);
        }
        if (d->n_params < 0 || d->n_params > PL_KDEF_MAX_PARAMS) {
            snprintf(what, sizeof what, "kernel '%.40s' has %d parameters (0 to %d allowed)", d->name, d->n_params,
                     PL_KDEF_MAX_PARAMS);
            return fail(msg, n, path, what, NULL);
        }
        for (int p = 0; p < d->n_params; p++)
            if (!d->params[p].name || !d->params[p].name[0]) {
                snprintf(what, sizeof what, "kernel '%.40s': parameter %d has no name", d->name, p);
                return fail(msg, n, path, what, NULL);
            }
    }
    return PL_OK;
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
    dlerror();
    void *h = dlopen(full, RTLD_NOW | RTLD_LOCAL);
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
    int count = fn(PL_KERNEL_ABI, &got);
    char what[160];
    if (count < 0) {
        snprintf(what, sizeof what, "it does not support kernel ABI %d (rebuild it against this tilesim's sim/kdef.h)",
                 PL_KERNEL_ABI);
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
