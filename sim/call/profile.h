/* sim/call/profile.h: the op profile of a run (pl_report.profile), internal.
 *
 * The walk adds each priced op to its core's report (oplog.c calls
 * sim_profile_add), cores merge like the other counters (core.c), and after
 * the replay sim_profile_finish adds what only the timeline knows: each
 * copy's time in flight, the step overhead (P9), the waits, and each row's
 * part of time_s on the timeline of the core that finished last (G4). */
#ifndef TILESIM_PROFILE_H
#define TILESIM_PROFILE_H

#include "../tilesim.h"

struct sim_exec;

#define SIM_PROFILE_OTHER "(other ops)"

/* Add to the row (cat, name), made when new (name NULL: "(unnamed)"); past
 * PL_MAX_PROFILE - 1 rows everything new goes to the last, SIM_PROFILE_OTHER.
 * Returns the row's index. */
int sim_profile_add(pl_report *r, pl_prof_cat cat, const char *name, int64_t count, double busy_s, double flops,
                    double vmem_bytes, double hbm_bytes);
/* Add to row i (an index sim_profile_add returned for r). */
void sim_profile_add_at(pl_report *r, int i, int64_t count, double busy_s, double flops, double vmem_bytes,
                        double hbm_bytes);
/* Every row of `from` into `to` (a core's rows into the call's). */
void sim_profile_merge(pl_report *to, const pl_report *from);
/* After the replay and sim_analyze: DMA rows, overhead, waits, time_s. */
void sim_profile_finish(struct sim_exec *x);

#endif
