/* sim/timing/ici.h: routes through a mesh and the ICI link model (rules M11, M12).
 *
 * Internal. A copy from one device to another crosses the directed links of
 * its route, chosen by dimension-ordered routing (sim/timing/mesh.c). sim_ici_time
 * times a set of such copies on the links: a fluid model like the DMA engine
 * of sim/timing/timing.c, standalone, so that the mesh runtime can call it on the
 * copies its devices recorded.
 */
#ifndef TILESIM_ICI_H
#define TILESIM_ICI_H

#include <stdint.h>

#include "../tilesim_mesh.h"

/* Directed links per device: one each way along every axis. The link that
 * leaves `device` along `axis` in the positive (+1) or negative direction is
 * numbered SIM_ICI_LINK(device, axis, positive); link numbers run from 0 to
 * SIM_ICI_LINKS(devices) - 1. */
#define SIM_ICI_LINK(device, axis, positive) ((device) * 2 * PL_MESH_MAX_AXES + (axis) * 2 + ((positive) ? 0 : 1))
/* A multislice mesh (M14): after every ICI link, each device's two DCN
 * ports, out (in = 0) and in (1), numbered SIM_DCN_LINK; SIM_ICI_LINKS
 * counts them too, so arrays of it hold every link. The timing model
 * (links.c) counts a port as its host's NIC. */
#define SIM_DCN_LINK(devices, device, in) ((devices) * 2 * PL_MESH_MAX_AXES + 2 * (device) + ((in) ? 1 : 0))
#define SIM_IS_DCN_LINK(devices, link) ((link) >= (devices) * 2 * PL_MESH_MAX_AXES)
#define SIM_ICI_LINKS(devices) ((devices) * (2 * PL_MESH_MAX_AXES + 2))

/* The links a copy from `from` to `to` crosses, in order: axis 0 first, the
 * shorter way round a wrapping axis (a tie goes the positive way), the
 * straight way along one that does not wrap. Writes the first `max` of them
 * into links (which may be NULL when max is 0) and returns how many there
 * are (pl_mesh_hops), as snprintf does; -1 for a bad mesh or device. */
int sim_mesh_route(const pl_mesh *m, int from, int to, int *links, int max);

/* One copy over ICI. The caller sets from, to, bytes and t_ready (when the
 * copy is issued, seconds); sim_ici_time sets t_start (its first byte: t_ready
 * plus one hop latency per link) and t_done (its last byte). A copy to its own
 * device crosses no link: it starts and ends at t_ready (the mesh runtime
 * times local copies on the device's DMA engine, not here). */
typedef struct sim_ici_xfer {
    int from, to;
    int64_t bytes;
    double t_ready;
    double t_start, t_done;
} sim_ici_xfer;

/* Time the n copies of x on the links of mesh m, each link moving link_bw
 * bytes per second one way (on a multislice mesh a copy between slices
 * holds its two devices' DCN ports at link_bw too, after two hop latencies
 * (the mesh runtime times DCN by hosts in links.c, not here). A copy occupies every link of its route at once
 * from t_start and drains at the smallest share it gets on any of them
 * (link_bw / the copies active on that link); shares change at every start
 * and finish. Returns 0; -1 out of memory; -2 bad figures (a bad mesh, a
 * device out of range, link_bw not finite and positive, hop_latency_s not
 * finite and >= 0, a negative byte count, a t_ready not finite and >= 0, or
 * n < 0 or x NULL with n > 0). Pure: any thread. */
int sim_ici_time(const pl_mesh *m, double link_bw, double hop_latency_s, sim_ici_xfer *x, int n);

#endif
