/* sim/base/outfile.c: output files written to a temporary file and renamed into
 * place, devices written directly (outfile.h says why). */
#include "outfile.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../kernel/guard.h"

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

static char *dup_n(const char *s, size_t len)
{
    char *d = malloc(len + 1);
    if (d) memcpy(d, s, len), d[len] = '\0';
    return d;
}

/* The directory part of p ("." when none), malloc'd. */
static char *dir_of(const char *p)
{
    const char *slash = strrchr(p, '/');
    if (!slash) return dup_n(".", 1);
    return dup_n(p, slash == p ? 1 : (size_t)(slash - p));
}

/* Follow the symbolic links of p's last component (as open would) to the
 * path a rename must replace so that the links stay links; *exists says
 * whether that file exists, *st its status then. malloc'd, or NULL with err. */
static char *resolve(const char *p, struct stat *st, int *exists, char *err, size_t n)
{
    char *cur = dup_n(p, strlen(p));
    for (int hops = 0; cur; hops++) {
        if (lstat(cur, st) != 0) {
            if (errno == ENOENT) return *exists = 0, cur;
            snprintf(err, n, "cannot write '%s': %s", p, strerror(errno));
            return free(cur), NULL;
        }
        if (!S_ISLNK(st->st_mode)) return *exists = 1, cur;
        char link[PATH_MAX];
        ssize_t k = hops < 40 ? readlink(cur, link, sizeof link - 1) : -1;
        if (k < 0) {
            snprintf(err, n, "cannot write '%s': %s", p, strerror(hops < 40 ? errno : ELOOP));
            return free(cur), NULL;
        }
        link[k] = '\0';
        char *next, *dir = link[0] == '/' ? NULL : dir_of(cur);
        size_t len = strlen(link) + (dir ? strlen(dir) + 1 : 0);
        if ((next = malloc(len + 1))) snprintf(next, len + 1, "%s%s%s", dir ? dir : "", dir ? "/" : "", link);
        free(dir);
        free(cur);
        cur = next;
    }
    snprintf(err, n, "cannot write '%s': out of host memory", p);
    return NULL;
}

/* ---- inputs an output must not replace ------------------------------------------ */

/* every input read, however many (a measurements file may name hundreds of plugins) */
static struct protected_file {
    dev_t dev;
    ino_t ino;
    const char *what;
} *protected_files;
static int n_protected, cap_protected;

void sim_out_protect(const char *path, const char *what)
{
    struct stat st;
    if (!path || stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return;
    for (int i = 0; i < n_protected; i++)
        if (protected_files[i].dev == st.st_dev && protected_files[i].ino == st.st_ino) return;
    if (n_protected == cap_protected) {
        int cap = cap_protected ? 2 * cap_protected : 16;
        struct protected_file *grown = realloc(protected_files, (size_t)cap * sizeof *grown);
        if (!grown) return; /* out of memory: the output's own checks still stand */
        protected_files = grown, cap_protected = cap;
    }
    protected_files[n_protected].dev = st.st_dev;
    protected_files[n_protected].ino = st.st_ino;
    protected_files[n_protected++].what = what;
}

/* Is path (followed through links) an input this process read? */
static const char *protected_input(const char *path)
{
    struct stat st;
    if (!n_protected || stat(path, &st) != 0) return NULL;
    for (int i = 0; i < n_protected; i++)
        if (protected_files[i].dev == st.st_dev && protected_files[i].ino == st.st_ino) return protected_files[i].what;
    return NULL;
}

/* What writing path means: *direct (a device, FIFO or socket: write it as
 * it is) or a regular file to replace (*target, *exists, *st). The checks
 * open(2) would make, made without touching anything. 0, or -1 with err. */
static int plan(const char *path, int *direct, char **target, struct stat *st, int *exists, char *err, size_t n)
{
    *direct = 0;
    *target = NULL;
    if (!path || !path[0]) return snprintf(err, n, "cannot write '': an empty path"), -1;
    const char *input = protected_input(path);
    if (input)
        return snprintf(err, n, "cannot write '%s': it is %s this command reads; writing there would replace it: "
                        "give the output a name of its own", path, input), -1;
    if (stat(path, st) == 0 && S_ISDIR(st->st_mode))
        return snprintf(err, n, "cannot write '%s': it is a directory", path), -1;
    /* /dev/null, a FIFO, /dev/fd/N of a pipe; and /dev/stdout, /dev/fd/N or /proc/self/fd/N even when they
     * lead to a regular file: the file the shell opened for us, to write through, not to replace */
    int fd_path = !strncmp(path, "/dev/std", 8) || !strncmp(path, "/dev/fd/", 8) || !strncmp(path, "/proc/", 6);
    if (stat(path, st) == 0 && (!S_ISREG(st->st_mode) || fd_path)) {
        *direct = 1;
        if (access(path, W_OK) != 0) return snprintf(err, n, "cannot write '%s': %s", path, strerror(errno)), -1;
        return 0;
    }
    if (!(*target = resolve(path, st, exists, err, n))) return -1;
    char *dir = dir_of(*target);
    int e = !dir ? ENOMEM : *exists && access(*target, W_OK) != 0 ? errno : 0; /* fopen would refuse it too */
    if (!e && access(dir, W_OK | X_OK) != 0) /* the temporary file goes there */
        snprintf(err, n, "cannot write '%s': cannot create a file in '%s': %s", path, dir, strerror(errno)), e = -1;
    else if (e) snprintf(err, n, "cannot write '%s': %s", path, strerror(e));
    free(dir);
    if (e) free(*target), *target = NULL;
    return e ? -1 : 0;
}

int sim_out_probe(const char *path, char *err, size_t n)
{
    int direct, exists;
    char *target;
    struct stat st;
    int rc = plan(path, &direct, &target, &st, &exists, err, n);
    free(target);
    return rc;
}

/* A new temporary file beside target: ".NAME.tmpXXXXXX", created with
 * O_EXCL (never an existing file) and 0666 so that the umask applies as it
 * does for fopen; mkstemp would make it 0600. */
static int make_tmp(const char *target, char **tmp)
{
    static atomic_uint counter;
    char *dir = dir_of(target);
    const char *slash = strrchr(target, '/'), *base = slash ? slash + 1 : target;
    if (strlen(base) > 200) base = "tilesim"; /* room for the suffix within NAME_MAX */
    size_t len = (dir ? strlen(dir) : 0) + strlen(base) + 40;
    *tmp = dir ? malloc(len) : NULL;
    int fd = -1;
    errno = ENOMEM;
    for (int i = 0; *tmp && fd < 0 && i < 100; i++) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        unsigned r = (unsigned)ts.tv_nsec ^ ((unsigned)getpid() << 12) ^
                     (atomic_fetch_add_explicit(&counter, 1, memory_order_relaxed) * 2654435761u);
        snprintf(*tmp, len, "%s/.%s.tmp%08x", dir, base, r);
        fd = open(*tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    int e = errno;
    free(dir);
    if (fd < 0) free(*tmp), *tmp = NULL;
    errno = e;
    return fd;
}

/* ---- temporary files in flight, removed if the user's kernel crashes or the process is stopped ----
 *
 * A crash inside the user's code ends the process at once (kernel/guard.c,
 * _exit): no sim_out_abort runs. The guard calls live_unlink_all first,
 * from a signal handler, so the table is plain arrays and atomics (no
 * locks, no malloc) and unlink(2) is async-signal-safe. A path that does
 * not fit, or a seventeenth file at once, is only not cleaned up. */

#define LIVE_MAX 16
enum { LIVE_FREE, LIVE_CLAIMED, LIVE_SET };
static char live_path[LIVE_MAX][PATH_MAX];
static atomic_int live_state[LIVE_MAX];

static void live_unlink_all(void)
{
    for (int i = 0; i < LIVE_MAX; i++)
        if (atomic_load(&live_state[i]) == LIVE_SET) unlink(live_path[i]);
}

/* Ctrl-C, a timeout's SIGTERM, a closed terminal: the temporary files go
 * too (they were left beside the file the user named), then the signal
 * does what it did before, default or the program's own handler. */
static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP};
#define N_STOP (int)(sizeof stop_signals / sizeof *stop_signals)
static struct sigaction stop_previous[N_STOP];

static void on_stop(int sig)
{
    live_unlink_all();
    for (int i = 0; i < N_STOP; i++)
        if (stop_signals[i] == sig) sigaction(sig, &stop_previous[i], NULL);
    raise(sig);
}

static void hook_stop_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < N_STOP; i++) {
        struct sigaction old;
        /* a signal the program ignores (nohup) stays ignored */
        if (sigaction(stop_signals[i], NULL, &old) != 0 || old.sa_handler == SIG_IGN) continue;
        stop_previous[i] = old;
        sigaction(stop_signals[i], &sa, NULL);
    }
}

static void live_add(const char *tmp)
{
    static atomic_int hooked;
    if (!atomic_exchange(&hooked, 1)) kern_guard_atcrash(live_unlink_all), hook_stop_signals();
    if (strlen(tmp) >= PATH_MAX) return;
    for (int i = 0; i < LIVE_MAX; i++) {
        int want = LIVE_FREE;
        if (atomic_compare_exchange_strong(&live_state[i], &want, LIVE_CLAIMED)) {
            strcpy(live_path[i], tmp);
            atomic_store(&live_state[i], LIVE_SET);
            return;
        }
    }
}

static void live_remove(const char *tmp)
{
    for (int i = 0; tmp && i < LIVE_MAX; i++) {
        int want = LIVE_SET;
        if (atomic_load(&live_state[i]) == LIVE_SET && !strcmp(live_path[i], tmp) &&
            atomic_compare_exchange_strong(&live_state[i], &want, LIVE_CLAIMED)) {
            live_path[i][0] = '\0';
            atomic_store(&live_state[i], LIVE_FREE);
            return;
        }
    }
}

int sim_tmp_make(char *tmpl)
{
    int fd = mkstemp(tmpl);
    if (fd >= 0) live_add(tmpl);
    return fd;
}

void sim_tmp_drop(const char *path)
{
    unlink(path);
    live_remove(path);
}

static void out_free(sim_out *o)
{
    live_remove(o->tmp);
    free(o->path);
    free(o->target);
    free(o->tmp);
    free(o);
}

/* Our own descriptor N that path names (/dev/stdout, /dev/stderr, /dev/fd/N,
 * /proc/self/fd/N), or -1. */
static int own_fd(const char *path)
{
    if (!strcmp(path, "/dev/stdout")) return 1;
    if (!strcmp(path, "/dev/stderr")) return 2;
    const char *num = !strncmp(path, "/dev/fd/", 8) ? path + 8 : !strncmp(path, "/proc/self/fd/", 14) ? path + 14 : NULL;
    if (!num || *num < '0' || *num > '9') return -1;
    char *end;
    long v = strtol(num, &end, 10);
    return *end || v > INT_MAX ? -1 : (int)v;
}

/* A device, FIFO or socket, or the file the shell opened for us, written as
 * it is and never truncated: our own descriptor is duplicated, so the
 * writes go where the shell's go (appending after `>>`), where reopening
 * with fopen(path, "w") emptied the file the shell had opened; a FIFO is
 * opened without blocking, so that one no process reads is an error
 * (ENXIO), not a wait forever. */
static int open_direct(const char *path, const struct stat *st)
{
    int own = own_fd(path);
    if (own >= 0) return dup(own);
    int fifo = S_ISFIFO(st->st_mode);
    int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC | (fifo ? O_NONBLOCK : 0) | (S_ISREG(st->st_mode) ? O_APPEND : 0));
    if (fd >= 0 && fifo) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

sim_out *sim_out_open(const char *path, char *err, size_t n)
{
    int direct, exists;
    struct stat st;
    sim_out *o = calloc(1, sizeof *o);
    if (!o || !(o->path = dup_n(path ? path : "", path ? strlen(path) : 0))) {
        snprintf(err, n, "cannot write '%s': out of host memory", path ? path : "");
        return free(o), NULL;
    }
    if (plan(path, &direct, &o->target, &st, &exists, err, n) != 0) return out_free(o), NULL;
    if (direct) {
        int fd = open_direct(path, &st);
        if (fd < 0 || !(o->f = fdopen(fd, "w"))) {
            int e = errno;
            if (fd >= 0) close(fd);
            return snprintf(err, n, "cannot write '%s': %s", path, e == ENXIO ? "it is a FIFO no process reads "
                            "(start its reader first)" : strerror(e)), out_free(o), NULL;
        }
        return o;
    }
    int fd = make_tmp(o->target, &o->tmp);
    if (fd < 0) return snprintf(err, n, "cannot write '%s': %s", path, strerror(errno)), out_free(o), NULL;
    live_add(o->tmp);
    if (exists) { /* the replacement keeps what the file was; its owner as far as we may */
        if (fchown(fd, st.st_uid, st.st_gid) != 0) { /* not root: the file becomes ours, as an editor's does */ }
        fchmod(fd, st.st_mode & 07777);
    }
    if (!(o->f = fdopen(fd, "w"))) {
        snprintf(err, n, "cannot write '%s': %s", path, strerror(errno));
        close(fd);
        unlink(o->tmp);
        return out_free(o), NULL;
    }
    return o;
}

int sim_out_commit(sim_out *o, char *err, size_t n)
{
    int bad = fflush(o->f) != 0 || ferror(o->f), e = errno;
    if (fclose(o->f) != 0 && !bad) bad = 1, e = errno;
    if (bad) snprintf(err, n, "error writing '%s': %s", o->path, e ? strerror(e) : "write failed (disk full?)");
    else if (o->tmp && rename(o->tmp, o->target) != 0)
        bad = 1, snprintf(err, n, "cannot write '%s': renaming '%s' into place: %s", o->path, o->tmp, strerror(errno));
    if (bad && o->tmp) unlink(o->tmp); /* ours; the original is as it was */
    out_free(o);
    return bad ? -1 : 0;
}

void sim_out_abort(sim_out *o)
{
    if (!o) return;
    fclose(o->f);
    if (o->tmp) unlink(o->tmp);
    out_free(o);
}

int sim_parse_size(const char *s, int64_t *out)
{
    if (!strcmp(s, "none")) return *out = -1, 0;
    if (*s < '0' || *s > '9') return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    int shift = 0;
    const char *units = "KMGT", *u = *end ? strchr(units, toupper((unsigned char)*end)) : NULL; /* 16M or 16m */
    if (u) shift = 10 * (int)(u - units + 1), end++;
    if (u && *end == 'i') end++;
    if (u && (*end == 'B' || *end == 'b')) end++;
    if (errno || *end || v == 0 || v > (unsigned long long)INT64_MAX >> shift) return -1;
    *out = (int64_t)(v << shift);
    return 0;
}
