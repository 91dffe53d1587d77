/* sim/call/coverage.c: output blocks that no grid point selects (rule P10).
 *
 * An output block is written to HBM only by a write-back, and only blocks
 * that some grid point selects are ever written back (P3). A grid one step
 * short, or a map that never reaches part of the array, leaves blocks that
 * keep whatever HBM held: garbage on hardware, and nothing a NaN check of
 * the write-backs can see. This runs after the walk, in real and cost-only
 * runs alike (it needs no data).
 *
 * Cheap in the common case: every selected block is written back at least
 * once, and again only after a fetch-back (RevisitMode.ANY), so an output
 * with at least as many write-backs, less fetch-backs, as blocks is fully
 * covered and costs nothing more. Only an output with fewer write-backs
 * than blocks is looked at closely, to count and name what is missing.
 * Skipped: outputs aliased to an input (M6: their unselected blocks keep
 * the input's data), ANY and SMEM outputs, and element dimensions (B5),
 * whose offsets may overlap.
 */
#include <stdlib.h>
#include <string.h>

#include "blockset.h"
#include "exec.h" /* sim_add_finding */

static int checked(const sim_operand *op)
{
    if (op->role != PL_ROLE_OUT || !op->pipelined || op->space != PL_VMEM || op->aliased) return 0;
    for (int d = 0; d < op->rank; d++)
        if (op->element[d]) return 0;
    return 1;
}

/* Blocks of op's array, saturating far above any grid a walk can finish. */
static int64_t total_blocks(const sim_operand *op)
{
    int64_t n = 1;
    for (int d = 0; d < op->rank; d++) n = n > INT64_MAX / op->nblocks[d] ? INT64_MAX : n * op->nblocks[d];
    return n;
}

/* Advance bidx to the next block in row-major order; 0 after the last. */
static int next_block(const sim_operand *op, int64_t *bidx)
{
    for (int d = op->rank - 1; d >= 0; d--) {
        if (++bidx[d] < op->nblocks[d]) return 1;
        bidx[d] = 0;
    }
    return 0;
}

/* Declarative map: is block b the image of some grid point? Each dimension
 * follows one axis (or is 0), so b is selected when every PL_ZERO entry is
 * 0, every entry is inside its axis, and dimensions sharing an axis agree. */
static int declarative_selects(const sim_plan *plan, const sim_operand *op, const int64_t *b)
{
    const pl_index_map *m = &op->map;
    int64_t want[PL_MAX_GRID];
    for (int a = 0; a < PL_MAX_GRID; a++) want[a] = -1;
    for (int d = 0; d < op->rank; d++) {
        if (m->n == 0 || m->axis[d] == PL_ZERO) {
            if (b[d] != 0) return 0;
            continue;
        }
        int a = m->axis[d];
        if (b[d] >= plan->call->grid[a] || (want[a] >= 0 && want[a] != b[d])) return 0;
        want[a] = b[d];
    }
    return 1;
}

/* Declarative map: how many distinct blocks it selects. */
static int64_t declarative_count(const sim_plan *plan, const sim_operand *op)
{
    const pl_index_map *m = &op->map;
    int64_t per_axis[PL_MAX_GRID], n = 1;
    for (int a = 0; a < PL_MAX_GRID; a++) per_axis[a] = -1;
    for (int d = 0; d < op->rank; d++) {
        if (m->n == 0 || m->axis[d] == PL_ZERO) continue;
        int a = m->axis[d];
        int64_t lim = plan->call->grid[a] < op->nblocks[d] ? plan->call->grid[a] : op->nblocks[d];
        if (per_axis[a] < 0 || lim < per_axis[a]) per_axis[a] = lim;
    }
    for (int a = 0; a < PL_MAX_GRID; a++)
        if (per_axis[a] >= 0) n *= per_axis[a];
    return n;
}

/* Function map: the set of blocks it selects over the whole grid, with the
 * scalar-prefetch arrays as the call received them. Returns 0, or -1 when a
 * map fails here (a kernel that rewrote its table) or memory runs out: then
 * nothing is said. */
static int function_selects(const sim_plan *plan, const sim_operand *op, sim_blockset *set)
{
    pl_ref prefetch[PL_MAX_OPERANDS];
    for (int i = 0; i < plan->n_ops; i++) {
        const sim_operand *p = &plan->ops[i];
        if (p->role != PL_ROLE_PREFETCH) continue;
        prefetch[p->index] = p->ref;
        prefetch[p->index].data = p->arr->data;
    }
    const pl_call *call = plan->call;
    int64_t bidx[PL_MAX_RANK];
    char err[PL_MSG_MAX];
    sim_grid_iter it;
    sim_grid_iter_init(&it, call->grid_rank, call->grid);
    int64_t s = 0;
    for (int more = !sim_grid_iter_empty(&it); more; more = sim_grid_iter_next(&it), s++)
        if (sim_map_eval(plan, op, it.pos, prefetch, bidx, err, sizeof err) ||
            sim_blockset_put(set, bidx, op->rank, s))
            return -1;
    return 0;
}

/* The first block of op that no grid point selects, into first; returns the
 * number of blocks selected, or -1 when it cannot tell. */
static int64_t find_unselected(const sim_plan *plan, const sim_operand *op, int64_t *first)
{
    sim_blockset set = {0};
    int64_t selected, v;
    if (op->map.fn) {
        if (function_selects(plan, op, &set)) {
            sim_blockset_free(&set);
            return -1;
        }
        selected = (int64_t)set.len;
    } else {
        selected = declarative_count(plan, op);
    }
    memset(first, 0, (size_t)op->rank * sizeof *first);
    int found = 0;
    do {
        found = op->map.fn ? !sim_blockset_get(&set, first, op->rank, &v)
                           : !declarative_selects(plan, op, first);
    } while (!found && next_block(op, first));
    sim_blockset_free(&set);
    return found ? selected : -1;
}

int sim_check_coverage(const sim_plan *plan, int strict, pl_report *rep)
{
    for (int i = 0; i < plan->n_ops; i++) {
        const sim_operand *op = &plan->ops[i];
        int64_t total = total_blocks(op), first[PL_MAX_RANK];
        /* RevisitMode.ANY (P5): each fetch-back is a block written back once more */
        int64_t distinct = op->rep->writebacks - op->rep->fetchbacks;
        if (!checked(op) || distinct >= total) continue; /* the common case: all covered */
        int64_t selected = find_unselected(plan, op, first);
        if (selected < 0) continue;
        char blk[128], msg[1024];
        sim_format_idx(first, op->rank, blk, sizeof blk);
        snprintf(msg, sizeof msg,
                 "%s: %lld of %lld output blocks are selected by no grid point, the first is block %s: they are "
                 "never written and keep whatever HBM held (rule P10); make the grid cover the whole output "
                 "(ceil-divide: grid = cdiv(size, block)) or its index map reach every block",
                 op->rep->name, (long long)(total - selected), (long long)total, blk);
        sim_add_finding(rep, PL_FIND_UNSELECTED, "P10", op->arg, NULL, 0, first, op->rank, msg);
        if (strict) return sim_fail(rep, PL_EPOISON, "%s", msg);
    }
    return PL_OK;
}
