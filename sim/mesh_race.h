/* sim/mesh_race.h: races between devices of a mesh (rules V4, M11), found
 * the same way whatever the order the device threads ran in. Internal.
 *
 * Each device keeps a vector clock; a semaphore that a device adds to
 * (a signal, a copy's landed or sent bytes) takes on the adder's clock, and
 * a device that takes from a semaphore (a wait) takes on the semaphore's.
 * A remote copy is an event of its sender; the bytes it lands in remember
 * it, and, once the receiver's wait_recv took its bytes, that receive (an
 * event of the receiver). A later copy into any of those bytes is a race
 * unless its sender had, through some chain of waits, seen both: the earlier
 * copy's start (else two copies write at once), and its receive (else the
 * receiver may still be reading what is overwritten: the capacity handshake
 * of rule M12 is missing). Bytes never received are overwritten unread. So
 * these races are found in every schedule, not only in those where the
 * copies happened to collide. Every call is under the mesh's lock.
 */
#ifndef TILESIM_MESH_RACE_H
#define TILESIM_MESH_RACE_H

#include <stddef.h>
#include <stdint.h>

typedef struct sim_mesh_race sim_mesh_race;

/* For n devices; NULL when out of memory or n above SIM_MESH_RACE_MAX
 * (clocks take n x n entries): then no race between devices is tracked. */
#define SIM_MESH_RACE_MAX 1024
sim_mesh_race *sim_mesh_race_new(int n);
void sim_mesh_race_free(sim_mesh_race *r);
/* device added to the semaphore whose count is at cell */
void sim_mesh_race_added(sim_mesh_race *r, int device, const void *cell);
/* device took `amount` from it (a wait that returned): copies counted on
 * that semaphore, oldest first, are received */
void sim_mesh_race_taken(sim_mesh_race *r, int device, const void *cell, int64_t amount);
/* A local copy on `device` reads bytes [lo, hi) until a wait takes its
 * `bytes` off its semaphore sem: a remote copy into them must have seen that
 * wait (the same rule as a receive), and a copy that landed there must have
 * been received first. 0, or 1 (a race, msg says why). */
int sim_mesh_race_reading(sim_mesh_race *r, int device, uintptr_t lo, uintptr_t hi, const void *sem, int64_t bytes,
                          const char *point, char *msg, size_t n);
/* A copy of `bytes` from `from` lands in bytes [lo, hi) of device `to`,
 * counted on its semaphore `recv` there, started at grid point `point`: 0,
 * or 1 (a race, msg says with which copy and why). */
int sim_mesh_race_copy(sim_mesh_race *r, int from, int to, uintptr_t lo, uintptr_t hi, const void *recv,
                       int64_t bytes, const char *point, char *msg, size_t n);

#endif
