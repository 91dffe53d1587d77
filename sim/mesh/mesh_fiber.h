/* sim/mesh/mesh_fiber.h: a mesh's TensorCores as fibers (coroutines), a
 * few host threads for thousands of devices (issue 26). Internal.
 *
 * A thread per core (mesh_run.c's other mode) costs a kernel stack, a
 * scheduler entry and, at every semaphore wait, a futex round trip through
 * the kernel: at 512 devices most of the host's time went to waking threads
 * and to the mesh lock they fought over. A fiber is a stack of its own
 * (mmap'd, a guard page below it) and a ucontext; a core that must wait
 * parks, and its pool thread switches to the next core that can run, in
 * user space. Each fiber stays on one pool thread for its whole life, so
 * the thread-local state a kernel leans on (the crash guard's "what runs
 * here", kernel/guard.c) is the pool thread's, saved and put back at each
 * switch.
 *
 * The protocol is the thread mode's: the mesh lock (mesh_run.lock) guards
 * every count and every queue; a fiber parks with the lock held and is
 * resumed with it held, so the hooks (mesh_hooks.c) keep their contract:
 *
 *     lock; while (*cell < need && !deadlock) sim_fiber_park(r, d); unlock;
 *
 * and whoever makes a count grow (another fiber, or across processes the
 * calling thread, mesh_mpi.c) readies the waiter: sim_fiber_ready.
 *
 * Why ucontext and not a library: glibc's makecontext/swapcontext are POSIX
 * (2001; obsolescent but kept), need no package beyond libc, and
 * AddressSanitizer knows how to follow them when told
 * (__sanitizer_start_switch_fiber). Their cost, a sigprocmask system call
 * per switch, is small beside a thread wake-up. ThreadSanitizer cannot
 * follow a switch it is not told of, so a TSan build keeps threads; so may
 * any run, with TILESIM_MESH_THREADS=1 (the results are the same).
 */
#ifndef TILESIM_MESH_FIBER_H
#define TILESIM_MESH_FIBER_H

struct mesh_run;
struct mesh_dev;

/* Fibers for this run? 0 under ThreadSanitizer or with TILESIM_MESH_THREADS
 * set to anything but "0" or ""; under AddressSanitizer only with
 * TILESIM_MESH_THREADS=0 (it warns on stderr at the first switch). */
int sim_fibers_wanted(void);
/* Make a stack for every unit of this process and the pool's threads,
 * which wait for r->go. Returns the units made ready (all of them, or the
 * first that failed: its stack, or a pool thread). Lock not held. */
int sim_fibers_start(struct mesh_run *r);
/* After r->go is set (lock held): queue every fiber to run. */
void sim_fibers_go(struct mesh_run *r);
/* Wait for the pool threads (every fiber ended), free the stacks. */
void sim_fibers_join(struct mesh_run *r);
/* Lock held, on fiber d: let the pool run another; returns (lock held)
 * when d was readied and its turn came. */
void sim_fiber_park(struct mesh_run *r, struct mesh_dev *d);
/* Lock held: d parked may run again; queue it (once). */
void sim_fiber_ready(struct mesh_run *r, struct mesh_dev *d);
/* Lock not held, on fiber d: let others run first (a seeded schedule). */
void sim_fiber_yield(struct mesh_run *r, struct mesh_dev *d);

#endif
