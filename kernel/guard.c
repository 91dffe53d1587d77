/* kernel/guard.c: a crash inside the user's code reported with where it
 * happened (kernel/guard.h, pl_guard_kernels).
 *
 * Why a handler in the process and not a child process per run: a sweep
 * runs thousands of configurations on worker threads, and fork() beside
 * OpenBLAS's threads and our own is fragile; every thread that runs user
 * code already passes through kern_run, so a thread-local mark costs one
 * store. What the handler may do is limited (async-signal-safe calls
 * only), so the message is put together by hand and written with write(2),
 * and the process ends with _exit: after a fault inside the user's code
 * there is no state worth saving, and the user's own files were never
 * opened in place (outputs are written to a temporary file first).
 *
 * Three ways out of a kernel are caught:
 * - a fatal signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGSYS,
 *   SIGTRAP): a handler on an alternate stack per thread, so that a stack
 *   overflow in the kernel is reported too;
 * - exit(): an on_exit handler, which sees the status;
 * - pthread_exit(): the destructor of a thread-specific key, which runs
 *   when a thread ends by pthread_exit (never on a normal return: the key
 *   holds the thread's state, and the running kernel is unmarked first).
 * Outside a zone the previous signal action is put back and the signal
 * delivered again, so tilesim's own crashes keep their core dump or a
 * sanitizer's report.
 */
#define _DEFAULT_SOURCE /* on_exit, sigaltstack, SA_ONSTACK */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../sim/tilesim.h"
#include "context.h"
#include "guard.h"

#define ALT_STACK_BYTES (64 * 1024)

/* what this thread runs; read by the handlers on the same thread */
static _Thread_local pl_ctx *running;
static _Thread_local const char *zone_kind, *zone_owner, *zone_what;
static _Thread_local int zone_host; /* the zone is host code (kern_guard_host_zone): the stall watch passes */
/* the guard page below the stack the running code is on, when it is not
 * the thread's own (a mesh device's fiber), and what to say when a fault
 * lands in it */
static _Thread_local uintptr_t stack_guard_lo, stack_guard_hi;
static _Thread_local const char *stack_note;

/* this thread's alternate signal stack, made the first time it enters a
 * zone after pl_guard_kernels; the key's value, so its destructor runs when
 * the thread ends by pthread_exit (and frees it when the thread returns) */
typedef struct guard_thread {
    void *stack;
    /* for the stall watch (pl_guard_stalls): the registry of threads
     * (watch_lock), what the thread runs, mirrored for the watcher, and its
     * heartbeat (kern_beat) */
    struct guard_thread *next, **pprev;
    _Atomic(pl_ctx *) kernel;
    _Atomic(const char *) zone_kind, zone_owner, zone_what;
    atomic_int zone_watched; /* a zone the watch judges: 1, or 2 for host code (HOST_PATIENCE times the limit) */
    _Atomic uint64_t beat;
    uint64_t seen; /* the watcher's: the beat it saw last */
} guard_thread;
static _Thread_local guard_thread *thread_state;
_Thread_local _Atomic uint64_t *kern_beat_word;

static pthread_mutex_t watch_lock = PTHREAD_MUTEX_INITIALIZER;
static guard_thread *threads; /* every thread set up, under watch_lock */

static atomic_int installed;
static void (*_Atomic atcrash)(void);
static pthread_key_t thread_key;
static const char *prog_name = "tilesim";

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGSYS, SIGTRAP};
#define N_FATAL (int)(sizeof fatal_signals / sizeof *fatal_signals)
static struct sigaction previous[N_FATAL];

/* ---- a message without stdio (async-signal-safe) --------------------------------- */

typedef struct msgbuf {
    char s[1024];
    size_t n;
} msgbuf;

/* Async-signal-safe (no stdio, no locale): the crash handler's messages,
 * and messages built on hot paths (kernel/context.h). */
size_t kern_append(char *buf, size_t n, size_t at, const char *s)
{
    while (*s && at + 1 < n) buf[at++] = *s++;
    if (at < n) buf[at] = '\0';
    return at;
}

char *kern_copy_name(char *buf, size_t n, const char *name)
{
    if (!n) return buf;
    size_t i = 0;
    for (; name && name[i] && i + 1 < n; i++) {
        unsigned char ch = (unsigned char)name[i];
        buf[i] = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
    }
    buf[i] = '\0';
    return buf;
}

size_t kern_append_int(char *buf, size_t n, size_t at, int64_t v)
{
    char d[24];
    int i = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do d[i++] = (char)('0' + u % 10); while ((u /= 10) && i < 22);
    if (v < 0) d[i++] = '-';
    while (i > 0 && at + 1 < n) buf[at++] = d[--i];
    if (at < n) buf[at] = '\0';
    return at;
}

static void put(msgbuf *m, const char *s) { m->n = kern_append(m->s, sizeof m->s, m->n, s ? s : "(null)"); }

static void put_int(msgbuf *m, int64_t v) { m->n = kern_append_int(m->s, sizeof m->s, m->n, v); }

/* "(1, 0)" */
static void put_tuple(msgbuf *m, const int64_t *v, int n)
{
    put(m, "(");
    for (int i = 0; i < n; i++) {
        if (i) put(m, ", ");
        put_int(m, v[i]);
    }
    put(m, n == 1 ? ",)" : ")");
}

static const char *signal_text(int sig)
{
    switch (sig) {
    case SIGSEGV: return "SIGSEGV (an invalid memory access, or a stack overflow)";
    case SIGBUS: return "SIGBUS (a bad memory access)";
    case SIGFPE: return "SIGFPE (an arithmetic fault, such as an integer division by zero)";
    case SIGILL: return "SIGILL (an illegal instruction)";
    case SIGABRT: return "SIGABRT (abort() or a failed assert)";
    case SIGSYS: return "SIGSYS (a bad system call)";
    case SIGTRAP: return "SIGTRAP (a trap or breakpoint)";
    }
    return "a fatal signal";
}

/* "tilesim: kernel 'k' <how> at grid point (1, 0) of grid (4, 2), step 5 on core 0; ..." */
static void describe_kernel(msgbuf *m, const pl_ctx *c, const char *how)
{
    put(m, "kernel '");
    put(m, c->kernel_name ? c->kernel_name : "(unnamed)");
    put(m, "' ");
    put(m, how);
    if (c->grid_rank > 0) {
        put(m, " at grid point ");
        put_tuple(m, c->idx, c->grid_rank);
        put(m, " of grid ");
        put_tuple(m, c->grid, c->grid_rank);
    } else {
        put(m, " (a pl_kernel body, no grid)");
    }
    put(m, ", step ");
    put_int(m, c->step);
    put(m, " on core ");
    put_int(m, c->core);
    if (c->n_devices > 1) {
        put(m, " of device ");
        put_int(m, c->device);
    }
    put(m, ";\n  the last tilesim op it called: ");
    put(m, c->scalar_ops ? "pl_get/pl_set" : c->last_op ? c->last_op : "none yet");
    put(m, "\n  This is the kernel's own C code: run the same command under gdb or valgrind to see the line.\n");
}

/* Say what ran (the kernel k, or the zone kind/owner/what), what it did
 * (how), and end the process; tail ends the message. flush: not in a
 * signal handler, so what the program printed so far (the kernel's own
 * printf too) may be flushed first. */
static void report_and_exit_as(const pl_ctx *k, const char *kind, const char *owner, const char *what,
                               const char *how, const char *note, const char *tail, int flush)
{
    if (flush) fflush(NULL);
    msgbuf m = {.n = 0};
    put(&m, prog_name);
    put(&m, ": ");
    if (k) {
        describe_kernel(&m, k, how);
    } else {
        put(&m, kind);
        put(&m, " '");
        put(&m, owner);
        put(&m, "': its ");
        put(&m, what);
        put(&m, " ");
        put(&m, how);
        put(&m, "\n  This is the ");
        put(&m, kind);
        put(&m, "'s own C code: run the same command under gdb or valgrind to see the line.\n");
    }
    if (note) put(&m, note);
    put(&m, "  (exit status ");
    put_int(&m, PL_EXIT_KERNEL_CRASHED);
    put(&m, tail);
    void (*fn)(void) = atomic_load(&atcrash);
    if (fn) fn();
    for (size_t off = 0; off < m.n;) {
        ssize_t w = write(2, m.s + off, m.n - off);
        if (w <= 0) break;
        off += (size_t)w;
    }
    _exit(PL_EXIT_KERNEL_CRASHED);
}

/* What this thread runs crashed: say so and end the process. Only for a thread in a zone. */
static void report_and_exit(const char *how, int flush)
{
    report_and_exit_as(running, zone_kind, zone_owner, zone_what, how, NULL, ": the user's code crashed)\n", flush);
}

static int in_zone(void) { return running || zone_what; }

/* ---- the three ways out --------------------------------------------------------------- */

static void on_fatal(int sig, siginfo_t *info, void *uc)
{
    (void)uc;
    if (in_zone()) {
        msgbuf how = {.n = 0};
        put(&how, "crashed with ");
        uintptr_t at = info ? (uintptr_t)info->si_addr : 0;
        if (sig == SIGSEGV && stack_note && at >= stack_guard_lo && at < stack_guard_hi) {
            put(&how, "SIGSEGV: a stack overflow (");
            put(&how, stack_note);
            put(&how, ")");
        } else {
            put(&how, signal_text(sig));
        }
        report_and_exit(how.s, 0);
    }
    /* not the user's code: the previous action (the default, or a
     * sanitizer's handler) takes it. A fault from an instruction happens
     * again when the handler returns; a sent signal (raise, abort) must be
     * sent again. */
    for (int i = 0; i < N_FATAL; i++)
        if (fatal_signals[i] == sig) sigaction(sig, &previous[i], NULL);
    if (!info || info->si_code <= 0) raise(sig);
}

static void on_process_exit(int status, void *arg)
{
    (void)arg;
    if (!in_zone()) return;
    msgbuf how = {.n = 0};
    put(&how, "called exit(");
    put_int(&how, status);
    put(&how, ")");
    report_and_exit(how.s, 1);
}

static void on_thread_exit(void *value)
{
    guard_thread *t = value;
    if (in_zone()) report_and_exit("called pthread_exit()", 1);
    /* the thread returned normally: its stack goes with it */
    pthread_mutex_lock(&watch_lock);
    *t->pprev = t->next;
    if (t->next) t->next->pprev = t->pprev;
    pthread_mutex_unlock(&watch_lock);
    kern_beat_word = NULL;
    stack_t off = {.ss_flags = SS_DISABLE};
    sigaltstack(&off, NULL);
    free(t->stack);
    free(t);
    thread_state = NULL;
}

/* The calling thread's alternate stack and key value, once. */
static void thread_setup(void)
{
    if (thread_state) return;
    guard_thread *t = calloc(1, sizeof *t);
    if (!t) return; /* no report for this thread's stack overflows; faults are still caught */
    t->stack = malloc(ALT_STACK_BYTES);
    stack_t st = {.ss_sp = t->stack, .ss_size = ALT_STACK_BYTES, .ss_flags = 0};
    stack_t old;
    /* a thread that has its own alternate stack (a sanitizer's) keeps it */
    if (t->stack && sigaltstack(NULL, &old) == 0 && (old.ss_flags & SS_DISABLE)) sigaltstack(&st, NULL);
    pthread_mutex_lock(&watch_lock);
    t->next = threads, t->pprev = &threads;
    if (threads) threads->pprev = &t->next;
    threads = t;
    pthread_mutex_unlock(&watch_lock);
    thread_state = t;
    kern_beat_word = &t->beat;
    pthread_setspecific(thread_key, t);
}

/* What the thread runs now, for the watcher, and a beat: entering or
 * leaving user code is progress. The kernel changes at every grid step and
 * fiber switch, the zone only around a callback: each is mirrored apart. */
static void mirror_kernel(pl_ctx *k)
{
    guard_thread *t = thread_state;
    if (!t) return;
    atomic_store_explicit(&t->kernel, k, memory_order_release);
    kern_beat();
}

static void mirror_zone(void)
{
    guard_thread *t = thread_state;
    if (!t) return;
    atomic_store_explicit(&t->zone_kind, zone_kind, memory_order_relaxed);
    atomic_store_explicit(&t->zone_owner, zone_owner, memory_order_relaxed);
    atomic_store_explicit(&t->zone_what, zone_what, memory_order_relaxed);
    atomic_store_explicit(&t->zone_watched, !zone_what ? 0 : zone_host ? 2 : 1, memory_order_release);
    kern_beat();
}

/* ---- zones ------------------------------------------------------------------------------- */

void kern_guard_atcrash(void (*fn)(void)) { atomic_store(&atcrash, fn); }

pl_ctx *kern_guard_enter(pl_ctx *c)
{
    pl_ctx *prev = running;
    running = c;
    if (atomic_load_explicit(&installed, memory_order_relaxed)) thread_setup();
    mirror_kernel(c);
    return prev;
}

void kern_guard_leave(pl_ctx *prev)
{
    running = prev;
    mirror_kernel(prev);
}

void kern_guard_waiting(int waiting) { mirror_kernel(waiting ? NULL : running); }

void kern_guard_stack(const void *lo, const void *hi, const char *note)
{
    stack_guard_lo = (uintptr_t)lo;
    stack_guard_hi = (uintptr_t)hi;
    stack_note = note;
}

void kern_guard_zone(const char *kind, const char *owner, const char *what)
{
    zone_kind = kind;
    zone_owner = owner;
    zone_what = what;
    zone_host = 0;
    if (what && atomic_load_explicit(&installed, memory_order_relaxed)) thread_setup();
    mirror_zone();
}

void kern_guard_host_zone(const char *kind, const char *owner, const char *what)
{
    kern_guard_zone(kind, owner, what);
    zone_host = what != NULL;
    mirror_zone();
}

void kern_guard_zone_get(const char **kind, const char **owner, const char **what)
{
    *kind = zone_kind;
    *owner = zone_owner;
    *what = zone_what;
}

int pl_guard_kernels(const char *prog)
{
    if (atomic_exchange(&installed, 1)) return 0;
    if (prog && prog[0]) prog_name = prog;
    if (pthread_key_create(&thread_key, on_thread_exit) != 0) return -1;
    if (on_exit(on_process_exit, NULL) != 0) return -1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fatal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < N_FATAL; i++)
        if (sigaction(fatal_signals[i], &sa, &previous[i]) != 0) return -1;
    thread_setup();
    return 0;
}

/* ---- stuck user code (pl_guard_stalls) ------------------------------------------------------ */

static double watch_limit;
static const char *watch_hint = "";

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* User code the watch judges: a kernel or a zone (1), or a zone of host
 * code (2: kern_guard_host_zone: a definition's inputs and reference
 * callbacks compute on the host without tilesim calls and may rightly take
 * minutes, so they get HOST_PATIENCE times the limit; an endless loop there
 * hung for ever). */
#define HOST_PATIENCE 10
static int watched(const guard_thread *t)
{
    return atomic_load_explicit(&t->kernel, memory_order_acquire) ? 1
                                                                    : atomic_load_explicit(&t->zone_watched, memory_order_acquire);
}

/* The report of a stuck thread, from the watcher: the thread is in its own
 * loop, not in tilesim, so its context holds still while it is read. */
__attribute__((no_sanitize("thread"))) static void report_stall(guard_thread *t, double seconds)
{
    msgbuf how = {.n = 0}, tail = {.n = 0};
    put(&how, "made no tilesim call (no pl_ op, no pl_get or pl_set) for ");
    put_int(&how, (int64_t)(seconds + 0.5));
    put(&how, " s");
    put(&tail, ": the user's code did not return");
    put(&tail, watch_hint);
    put(&tail, ")\n");
    report_and_exit_as(atomic_load(&t->kernel), atomic_load(&t->zone_kind), atomic_load(&t->zone_owner),
                       atomic_load(&t->zone_what), how.s,
                       "  An endless loop in its C code? On a TPU it would hang; tilesim stops it.\n", tail.s, 0);
}

/* Four times a second: a stall is no beat on any thread for the limit
 * while some thread is in watched user code. Not per thread: a core that
 * waits for another's semaphore (megacore threads) beats not, while the
 * other works and beats. */
static void *watch_main(void *arg)
{
    (void)arg;
    double last_change = mono_now();
    for (;;) {
        struct timespec tick = {0, 250 * 1000 * 1000};
        nanosleep(&tick, NULL);
        double now = mono_now();
        guard_thread *stuck = NULL;
        int how = 0;
        pthread_mutex_lock(&watch_lock);
        for (guard_thread *t = threads; t; t = t->next) {
            uint64_t b = atomic_load_explicit(&t->beat, memory_order_acquire);
            if (b != t->seen) t->seen = b, last_change = now;
            int w = watched(t);
            if (w && (!stuck || w < how)) stuck = t, how = w; /* a kernel or zone before host code */
        }
        if (!stuck) last_change = now;
        double limit = how == 2 ? HOST_PATIENCE * watch_limit : watch_limit;
        if (stuck && now - last_change >= limit) report_stall(stuck, now - last_change); /* does not return */
        pthread_mutex_unlock(&watch_lock);
    }
    return NULL;
}

int pl_guard_stalls(double seconds, const char *hint)
{
    static atomic_int started;
    if (!(seconds > 0) || !atomic_load(&installed) || atomic_exchange(&started, 1)) return 0;
    watch_limit = seconds;
    if (hint) watch_hint = hint;
    pthread_attr_t attr;
    pthread_t th;
    if (pthread_attr_init(&attr)) return -1;
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    int rc = pthread_create(&th, &attr, watch_main, NULL);
    pthread_attr_destroy(&attr);
    return rc ? -1 : 0;
}
