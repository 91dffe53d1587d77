/* sim/call/buffering.c: automatic single buffering (rule P6).
 *
 * Current Mosaic gives one buffer, not two, to a window whose block index
 * never changes over the whole grid: it is copied in once (or written back
 * once), so a second buffer would never be used. The VMEM budget (M4) then
 * counts it once. Deciding "never changes" must not run the kernel:
 *   - a declarative map never changes when every grid axis it reads has size 1;
 *   - a function map is evaluated at every grid point, but only for small
 *     grids (a validation must stay cheap) and only without scalar prefetch
 *     (its values may change while the grid runs, P8); otherwise two buffers.
 */
#include <string.h>

#include "../base/sim.h"

/* Function maps are asked at most this many times before a call runs. */
#define MAX_PROBED_POINTS 4096

static int fn_map_constant(const sim_plan *plan, const sim_operand *op)
{
    const pl_call *call = plan->call;
    if (call->num_scalar_prefetch > 0 || plan->steps > MAX_PROBED_POINTS) return 0;
    int64_t first[PL_MAX_RANK], bidx[PL_MAX_RANK];
    char err[PL_MSG_MAX];
    sim_grid_iter it;
    sim_grid_iter_init(&it, call->grid_rank, call->grid);
    /* a map that fails B7 anywhere keeps two buffers: the walk reports it */
    if (sim_map_eval(plan, op, it.pos, NULL, first, err, sizeof err)) return 0;
    while (sim_grid_iter_next(&it)) {
        if (sim_map_eval(plan, op, it.pos, NULL, bidx, err, sizeof err)) return 0;
        if (memcmp(bidx, first, (size_t)op->rank * sizeof *bidx) != 0) return 0;
    }
    return 1;
}

int sim_block_never_changes(const sim_plan *plan, const sim_operand *op)
{
    const pl_index_map *m = &op->map;
    if (m->fn) return fn_map_constant(plan, op);
    for (int d = 0; d < m->n; d++)
        if (m->axis[d] != PL_ZERO && plan->call->grid[m->axis[d]] > 1) return 0;
    return 1;
}
