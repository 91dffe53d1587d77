/* sim/mesh/mesh_race.h: races between devices of a mesh (rules V4, M11), found
 * the same way whatever the order the device threads ran in. Internal.
 *
 * Each device keeps a vector clock; a semaphore keeps its adds (a signal, a
 * copy's landed or sent bytes) with the adder's clock, and a device that
 * takes from it (a wait) learns the clocks of the adds it takes, oldest
 * first: not those of adds that came later, which it did not wait for.
 * A remote copy is an event of its sender; the bytes it lands in remember
 * it, and, once the receiver's wait_recv took its bytes, that receive (an
 * event of the receiver). A later copy into any of those bytes is a race
 * unless its sender had, through some chain of waits, seen both: the earlier
 * copy's start (else two copies write at once), and its receive (else the
 * receiver may still be reading what is overwritten: the capacity handshake
 * of rule M12 is missing). Bytes never received are overwritten unread.
 * The kernel's own loads and stores there are events of its device too: a
 * copy landing in bytes the receiver's kernel touched races unless its
 * sender saw the receiver done with them, and a load or store of bytes a
 * copy landed in races until the receiver's wait_recv took them. So
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
/* device added `amount` to the semaphore whose count is at cell, which
 * device `owner` waits on (only its owner waits on a semaphore: an add by
 * the owner itself carries nothing a wait would learn) */
void sim_mesh_race_added(sim_mesh_race *r, int device, int owner, const void *cell, int64_t amount);
/* device took `amount` from it (a wait that returned): copies counted on
 * that semaphore, oldest first, are received */
void sim_mesh_race_taken(sim_mesh_race *r, int device, const void *cell, int64_t amount);
/* Grid points kept once: a device names the same point at every copy of a
 * step, so a region (or a queued event, race_queue.c) holds a pointer to one
 * copy of it. Chunks of strings, freed all at once. */
typedef struct sim_points {
    struct sim_point_chunk *chunks;
    const char **last;     /* per device: the point it named last, kept */
    int devices;
} sim_points;
/* 0, or -1 when out of memory */
int sim_points_init(sim_points *p, int devices);
/* Device d's point, kept: the last one it named, or a new copy (at most as
 * long as a sim_mesh_event's); "" when out of memory */
const char *sim_points_keep(sim_points *p, int d, const char *point);
void sim_points_free(sim_points *p);

/* One side of a race: a device's event. kind 0: a copy that landed (sent
 * by device), 1: a local copy reading, 2: a local copy writing, 3: the
 * kernel loading, 4: the kernel storing. */
typedef struct sim_mesh_event {
    int device;
    int kind;
    char point[64];        /* the grid point that started it */
} sim_mesh_event;

/* A race: two events on device `on`'s memory (key: the first byte both
 * touch, as the caller keyed it) that nothing orders; a before b in the
 * canonical order. */
typedef struct sim_mesh_conflict {
    int found;
    int on;
    uintptr_t key;
    sim_mesh_event a, b;
} sim_mesh_conflict;

/* Has device `from` heard from device `to` in this call: is some event of
 * `to` (a signal, a copy it sent) ordered before from's now? (M15) */
int sim_mesh_race_heard(const sim_mesh_race *r, int from, int to);
/* A local copy on `device` reads bytes [span[0], span[1]) and writes
 * [span[2], span[3]) (an empty range: not tracked) until a wait takes its
 * `bytes` off its semaphore sem. 1 when it races with a copy that landed
 * there and is not received yet: recorded, and its data must not move. */
int sim_mesh_race_local(sim_mesh_race *r, int device, const uintptr_t *span, const void *sem, int64_t bytes,
                        const char *point);
/* A copy of `bytes` from `from` lands in bytes [lo, hi) of device `to`,
 * counted on its semaphore `recv` there, started at grid point `point`. 1
 * when it races with an earlier copy or a local copy there: recorded, and
 * its data must not move. */
int sim_mesh_race_copy(sim_mesh_race *r, int from, int to, uintptr_t lo, uintptr_t hi, const void *recv,
                       int64_t bytes, const char *point);
/* The kernel of `device` loads (write 0) or stores (write 1) bytes [lo,
 * hi) of its own memory at grid point `point`. 1 when a copy that landed
 * there is not received yet: recorded. A copy landing there later races
 * with it unless its sender saw this device's next event. */
int sim_mesh_race_access(sim_mesh_race *r, int device, uintptr_t lo, uintptr_t hi, int write, const char *point);
/* The same without the sender's tick: its clock, ticked, came with the copy
 * from another process (sim_mesh_race_learn). */
int sim_mesh_race_landed(sim_mesh_race *r, int from, int to, uintptr_t lo, uintptr_t hi, const void *recv,
                         int64_t bytes, const char *point);

/* Across processes (mesh_mpi.c), each holds a detector for all n devices
 * but runs only some: a copy or signal to a device of another process
 * carries its sender's clock (taken here, ticked first for a copy, as
 * sim_mesh_race_copy does), which the receiving process learns before it
 * records the copy (sim_mesh_race_landed) or the add. Only the sender's
 * own messages write its row there, in the order it sent them. Each
 * process finds the races on its devices; every process considers all of
 * them, so that each ends with the same first one. */
int sim_mesh_race_devices(const sim_mesh_race *r);
void sim_mesh_race_clock(sim_mesh_race *r, int device, int tick, uint32_t *out);
void sim_mesh_race_learn(sim_mesh_race *r, int device, const uint32_t *clock);
void sim_mesh_race_consider(sim_mesh_race *r, const sim_mesh_conflict *c);

/* The race to report: the first found in the canonical order (by device,
 * grid point, kind of its two events), the same in every schedule; NULL:
 * none. Races do not stop the run: every device runs on, so that every
 * schedule meets every race, and the call fails with this one at the end. */
const sim_mesh_conflict *sim_mesh_race_found(const sim_mesh_race *r);

#endif
