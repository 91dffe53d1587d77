/* sim/mesh/race_queue.h: the race detector on a host core of its own
 * (issue 26). Internal.
 *
 * On a big mesh, half of a cost-only run's host time is the detector
 * (mesh_race.c): its vector clocks are one entry per device, so a wait
 * joins 4 KiB at 1,024 devices, and it walks regions the size of the
 * mesh. A cost-only run moves no data, so nothing in the walk needs the
 * detector's answer at once (with data, a copy that races must not move:
 * it does). The walk then only queues each event, under the mesh's lock,
 * in the order it happened, and a thread of the detector's own takes them
 * off in that order: the same events in the same order as if the walk
 * had called the detector itself, so the race found is the same, and its
 * work overlaps the walk's on a second host core.
 *
 *     sim_race_queue *q = sim_race_queue_start(race, SIM_RACE_QUEUE_MAX); // NULL: call race directly
 *     sim_race_queue_taken(q, device, cell, amount);    // under the mesh's lock
 *     ...
 *     sim_race_queue_finish(q);   // every event applied; then sim_mesh_race_found(race)
 *
 * Every call but finish is made under the mesh's lock (one producer at a
 * time); finish after every device ended. The queue holds at most
 * max_events (SIM_RACE_QUEUE_MAX: 64 MiB of them): a walk that gets that
 * far ahead waits for the detector.
 */
#ifndef TILESIM_RACE_QUEUE_H
#define TILESIM_RACE_QUEUE_H

#include <stdint.h>

#include "mesh_race.h"

typedef struct sim_race_queue sim_race_queue;

#define SIM_RACE_QUEUE_MAX (1 << 20)

/* NULL when the thread or its memory cannot be had: then the caller calls
 * the detector itself, as before. */
sim_race_queue *sim_race_queue_start(sim_mesh_race *race, long long max_events);
/* As sim_mesh_race_copy, _local, _added, _taken and _access; the copies answer 0
 * (the race, if any, is found later: only a run that moves no data queues). */
void sim_race_queue_copy(sim_race_queue *q, int from, int to, uintptr_t lo, uintptr_t hi, const void *recv,
                         int64_t bytes, const char *point);
void sim_race_queue_local(sim_race_queue *q, int device, const uintptr_t *span, const void *sem, int64_t bytes,
                          const char *point);
void sim_race_queue_added(sim_race_queue *q, int device, int owner, const void *cell, int64_t amount);
void sim_race_queue_access(sim_race_queue *q, int device, uintptr_t lo, uintptr_t hi, int write, const char *point);
void sim_race_queue_taken(sim_race_queue *q, int device, const void *cell, int64_t amount);
/* Apply what is queued, end the thread, free the queue (NULL: nothing). */
void sim_race_queue_finish(sim_race_queue *q);

#endif
