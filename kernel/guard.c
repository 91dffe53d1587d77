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
#include <unistd.h>

#include "../sim/tilesim.h"
#include "context.h"
#include "guard.h"

#define ALT_STACK_BYTES (64 * 1024)

/* what this thread runs; read by the handlers on the same thread */
static _Thread_local pl_ctx *running;
static _Thread_local const char *zone_kind, *zone_owner, *zone_what;
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
} guard_thread;
static _Thread_local guard_thread *thread_state;

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

/* Say what crashed, how, and end the process. Only for a thread in a zone.
 * flush: not in a signal handler, so what the program printed so far (the
 * kernel's own printf too) may be flushed first. */
static void report_and_exit(const char *how, int flush)
{
    if (flush) fflush(NULL);
    msgbuf m = {.n = 0};
    put(&m, prog_name);
    put(&m, ": ");
    if (running) {
        describe_kernel(&m, running, how);
    } else {
        put(&m, zone_kind);
        put(&m, " '");
        put(&m, zone_owner);
        put(&m, "': its ");
        put(&m, zone_what);
        put(&m, " ");
        put(&m, how);
        put(&m, "\n  This is the ");
        put(&m, zone_kind);
        put(&m, "'s own C code: run the same command under gdb or valgrind to see the line.\n");
    }
    put(&m, "  (exit status ");
    put_int(&m, PL_EXIT_KERNEL_CRASHED);
    put(&m, ": the user's code crashed)\n");
    void (*fn)(void) = atomic_load(&atcrash);
    if (fn) fn();
    for (size_t off = 0; off < m.n;) {
        ssize_t w = write(2, m.s + off, m.n - off);
        if (w <= 0) break;
        off += (size_t)w;
    }
    _exit(PL_EXIT_KERNEL_CRASHED);
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
    thread_state = t;
    pthread_setspecific(thread_key, t);
}

/* ---- zones ------------------------------------------------------------------------------- */

void kern_guard_atcrash(void (*fn)(void)) { atomic_store(&atcrash, fn); }

pl_ctx *kern_guard_enter(pl_ctx *c)
{
    pl_ctx *prev = running;
    running = c;
    if (atomic_load_explicit(&installed, memory_order_relaxed)) thread_setup();
    return prev;
}

void kern_guard_leave(pl_ctx *prev) { running = prev; }

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
    if (what && atomic_load_explicit(&installed, memory_order_relaxed)) thread_setup();
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
