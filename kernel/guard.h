/* kernel/guard.h: which user code is running on this thread, so that a
 * crash inside it can be reported (pl_guard_kernels in sim/tilesim.h).
 *
 * A kernel is the user's C code running in tilesim's process; when it
 * segfaults, calls abort(), exit() or pthread_exit(), the process cannot
 * go on, but the user still needs to know where. kern_run marks the
 * kernel it runs (kern_guard_enter / kern_guard_leave), and the kernel-
 * definition drivers mark the callbacks of a definition they call (build,
 * inputs, reference, a plugin's tilesim_kernels): zones. Once a program has
 * called pl_guard_kernels, a fatal signal, exit() or pthread_exit() inside
 * a zone prints what was running (the signal, the kernel, its grid point
 * and the last pl_ op it called) and ends the process with
 * PL_EXIT_KERNEL_CRASHED. Outside a zone nothing changes: tilesim's own
 * crashes keep their signal (and a sanitizer's report).
 *
 *     pl_ctx *prev = kern_guard_enter(c);
 *     kernel(c, refs);
 *     kern_guard_leave(prev);
 *
 * Marking costs a thread-local store; nothing is installed until
 * pl_guard_kernels is called, so the library's behaviour is unchanged for
 * programs that do not ask.
 */
#ifndef TILESIM_KERNEL_GUARD_H
#define TILESIM_KERNEL_GUARD_H

#include <stdatomic.h>
#include <stdint.h>

#include "pallas.h"

/* Mark c's kernel as running on this thread; returns the kernel it
 * replaces (NULL, or an outer one), for kern_guard_leave. */
pl_ctx *kern_guard_enter(pl_ctx *c);
void kern_guard_leave(pl_ctx *prev);

/* The kernel on this thread is blocked in tilesim (a mesh wait for
 * another device), not running its own code: the stall watch
 * (pl_guard_stalls) passes over it until kern_guard_waiting(0). */
void kern_guard_waiting(int waiting);

/* The code this thread runs from now on is on a stack whose guard page is
 * [lo, hi) (a mesh device's fiber, sim/mesh/mesh_fiber.c): a SIGSEGV there
 * is reported as a stack overflow, with note ("a mesh device's stack is 2
 * MiB: ..."; a string that outlives the stack). NULL note: the thread's
 * own stack again. */
void kern_guard_stack(const void *lo, const void *hi, const char *note);

/* Mark a callback of a kernel definition as running on this thread: kind
 * and owner name whose it is ("kernel definition", "rmsnorm"; "plugin",
 * "x.so"), what is the callback ("build callback", "tilesim_kernels
 * function"). All are kept as pointers: string literals or strings that
 * outlive the zone. kern_guard_zone(NULL, NULL, NULL) ends it. */
void kern_guard_zone(const char *kind, const char *owner, const char *what);
/* The same for a callback that is host code (a definition's inputs and
 * reference): it may compute for long without a tilesim call, so the stall
 * watch (pl_guard_stalls) gives it ten times its limit; a crash is reported
 * as in any zone. */
void kern_guard_host_zone(const char *kind, const char *owner, const char *what);
/* The zone this thread is in (NULLs: none), to put back after a nested one. */
void kern_guard_zone_get(const char **kind, const char **owner, const char **what);

/* fn runs just before a crash report ends the process, from a signal
 * handler: async-signal-safe calls only (sim/base/outfile.c removes its
 * temporary files). One hook; a second call replaces it. */
void kern_guard_atcrash(void (*fn)(void));

/* One tick of this thread's heartbeat: the user's code called tilesim
 * (pl_guard_stalls watches for a zone without one). A store, not a call:
 * every op and every pl_get/pl_set pays it. */
extern _Thread_local _Atomic uint64_t *kern_beat_word; /* NULL until the thread runs user code under a watch */
static inline void kern_beat(void)
{
    _Atomic uint64_t *w = kern_beat_word;
    /* release: what the thread wrote before it (its context: the op, the
     * grid point) is what the watcher reads when the beats stop */
    if (w) atomic_store_explicit(w, atomic_load_explicit(w, memory_order_relaxed) + 1, memory_order_release);
}

/* Append s (or v in decimal) to buf at `at`, within n bytes, NUL-terminated;
 * returns the new end. Async-signal-safe, without printf: the crash
 * report's messages, and messages built on hot paths (a mesh names the
 * point of every copy it makes). */
size_t kern_append(char *buf, size_t n, size_t at, const char *s);
/* A name a kernel or plugin gave (a call's, an operand's, an axis's) into
 * buf of n bytes, a control byte (below 0x20, or 0x7f) as '?': names reach
 * terminals and fixed-width tables, where an escape sequence or a newline
 * would act or break the layout. Returns buf. */
char *kern_copy_name(char *buf, size_t n, const char *name);
size_t kern_append_int(char *buf, size_t n, size_t at, int64_t v);

#endif
