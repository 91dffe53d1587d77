/* sim/base/hostthreads.h: the host's cores, for the simulator's own threads (the
 * TensorCores of a megacore call, walk.c; the workers of a sweep, sweep.c).
 * Internal.
 *
 * The topology comes from hwloc, read once per process: physical cores, not
 * hardware threads, since two simulated cores on the two hyperthreads of one
 * physical core would share its vector units and gain little. A thread is
 * pinned to one physical core, best effort (a failure to pin is no error).
 */
#ifndef TILESIM_HOSTTHREADS_H
#define TILESIM_HOSTTHREADS_H

/* Physical cores of the host (at least 1). Thread-safe. */
int sim_host_cores(void);
/* Pin the calling thread to physical core index % sim_host_cores(). */
void sim_pin_thread(int index);
/* Run fn(arg[t]) for t < n, each on a thread of its own pinned to core t,
 * and wait for all. A thread that cannot be created runs its job on the
 * calling thread instead, after the others have started. */
void sim_run_pinned(int n, void *(*fn)(void *), void *const *arg);
/* OpenBLAS on one thread while simulated cores run on host threads of their
 * own (each would otherwise start a pool as large as the host): calls nest
 * and may come from several threads; the setting comes back when the last
 * one ends. */
void sim_blas_single_begin(void);
void sim_blas_single_end(void);

#endif
