/* sim/call/maps.c: index maps (rules B2, B5, B7) and what they imply before a
 * call runs: the range of declarative maps, and output blocks that two
 * parallel grid points share (V4). Evaluated at run time for every operand
 * at every grid point, so sim_eval_map stays lean. */
#include <stdio.h>
#include <string.h>

#include "../base/sim.h"
#include "../../kernel/guard.h"

int sim_map_is_zero(const pl_index_map *m)
{
    if (m->fn) return 0;
    for (int d = 0; d < m->n; d++)
        if (m->axis[d] != PL_ZERO) return 0;
    return 1;
}

int sim_check_map(const sim_plan *plan, const sim_operand *op, pl_report *rep)
{
    const pl_index_map *m = &op->map;
    if (m->fn) return PL_OK;
    if (m->n == 0) {
        for (int d = 0; d < PL_MAX_RANK; d++)
            if (m->axis[d] != 0)
                return sim_fail(rep, PL_EINDEXMAP, "%s: index map has n = 0 but axis entries set; use PL_MAP "
                                "(rule B2)", op->rep->name);
        return PL_OK; /* missing map: all zeros (B3) */
    }
    if (m->n != op->rank)
        return sim_fail(rep, PL_EINDEXMAP,
                        "%s: index map returns %d indices but the array has rank %d; it must return one block "
                        "index per array dimension (rule B2)",
                        op->rep->name, m->n, op->rank);
    for (int d = 0; d < m->n; d++)
        if (m->axis[d] != PL_ZERO && (m->axis[d] < 0 || m->axis[d] >= plan->call->grid_rank))
            return sim_fail(rep, PL_EINDEXMAP,
                            "%s: index map entry %d names grid axis %d but the grid has %d ax%s (rule B2)",
                            op->rep->name, d, (int)m->axis[d], plan->call->grid_rank,
                            plan->call->grid_rank == 1 ? "is" : "es");
    return PL_OK;
}

/* V2 with out-of-bounds reads as poison (JAX's "uninitialized"): an input
 * block past the array's end is legal and reads as poison (sim_copy_in
 * fills what lies outside the array). Writes past the end stay B7 errors. */
static int past_reads_poison(const sim_plan *plan, const sim_operand *op)
{
    return plan->oob_poison && op->role == PL_ROLE_IN;
}

/* Past the end by at most this many elements: the block's element offset
 * stays far from int64 overflow in sim_window_of. */
#define SIM_PAST_MAX (INT64_C(1) << 60)

static int past_ok(const sim_plan *plan, const sim_operand *op, int d, int64_t b)
{
    if (!past_reads_poison(plan, op) || b < op->nblocks[d]) return 0;
    int64_t unit = op->squeezed[d] || op->element[d] ? 1 : op->block[d];
    return unit > 0 && b <= SIM_PAST_MAX / unit;
}

/* A declarative map can be checked against B7 before anything runs: the
 * largest index it returns along a dimension is its axis size minus one. */
int sim_check_map_range(const sim_plan *plan, const sim_operand *op, pl_report *rep)
{
    const pl_index_map *m = &op->map;
    if (m->fn || past_reads_poison(plan, op)) return PL_OK;
    for (int d = 0; d < m->n; d++) {
        if (m->axis[d] == PL_ZERO) continue;
        int64_t top = plan->call->grid[m->axis[d]] - 1;
        if (top < op->nblocks[d]) continue;
        int64_t idx[PL_MAX_GRID] = {0}, bidx[PL_MAX_RANK];
        idx[m->axis[d]] = top;
        for (int e = 0; e < op->rank; e++) bidx[e] = m->axis[e] == PL_ZERO ? 0 : idx[m->axis[e]];
        char point[128], got[128];
        sim_format_idx(idx, plan->call->grid_rank, point, sizeof point);
        sim_format_idx(bidx, op->rank, got, sizeof got);
        return sim_fail(rep, PL_EINDEXMAP,
                        "%s: at grid point %s the index map returns block index %s; dimension %d must be in "
                        "0..%lld (%lld element%s in blocks of %lld): the grid is larger than the array (rule B7)",
                        op->rep->name, point, got, d, (long long)op->nblocks[d] - 1, (long long)op->arr->shape[d],
                        op->arr->shape[d] == 1 ? "" : "s", (long long)op->block[d]);
    }
    return PL_OK;
}

/* ---- races (V4) ----------------------------------------------------------------- */

/* A declarative output map that ignores a parallel axis sends every point
 * along that axis to the same block: on a megacore chip those points may run
 * on different TensorCores, and one result is lost. Function-form maps are
 * checked as they run (checks.c). */
int sim_check_races(const sim_plan *plan, pl_report *rep)
{
    const pl_call *call = plan->call;
    for (int i = 0; i < plan->n_ops; i++) {
        const sim_operand *op = &plan->ops[i];
        if (op->role != PL_ROLE_OUT || !op->pipelined || op->map.fn) continue;
        for (int a = 0; a < call->grid_rank; a++) {
            if (call->semantics[a] != PL_PARALLEL || call->grid[a] < 2) continue;
            int used = 0;
            for (int d = 0; d < op->map.n; d++) used |= op->map.axis[d] == a;
            if (used) continue;
            int64_t p0[PL_MAX_GRID] = {0}, p1[PL_MAX_GRID] = {0}, blk[PL_MAX_RANK] = {0};
            p1[a] = 1;
            char why[64];
            snprintf(why, sizeof why, " (its index map ignores axis %d)", a);
            int rc = sim_race(plan, rep, op, p0, p1, a, blk, why);
            if (rc) return rc;
            break; /* one-core warning: once per output (V4) */
        }
    }
    return PL_OK;
}

/* ---- index maps at run time (B2, B4, B7) ---------------------------------------- */

int sim_eval_map(const sim_plan *plan, const sim_operand *op, const int64_t *idx, const pl_ref *prefetch,
                 int64_t *bidx, pl_report *rep)
{
    char err[PL_MSG_MAX];
    int rc = sim_map_eval(plan, op, idx, prefetch, bidx, err, sizeof err);
    return rc ? sim_fail(rep, rc, "%s", err) : PL_OK;
}

/* A function map's entry d is INT64_MIN, the fill before the call: did the
 * map leave it so, or return INT64_MIN? Ask again with another fill. Only
 * on this error path, so maps still run once per step. */
static int left_unset(const sim_operand *op, const int64_t *idx, const pl_ref *prefetch, int d)
{
    int64_t again[PL_MAX_RANK];
    for (int e = 0; e < op->rank; e++) again[e] = INT64_MAX;
    op->map.fn(idx, prefetch, again, op->map.user);
    return again[d] == INT64_MAX;
}

int sim_map_eval(const sim_plan *plan, const sim_operand *op, const int64_t *idx, const pl_ref *prefetch,
                 int64_t *bidx, char *err, size_t errlen)
{
    const pl_index_map *m = &op->map;
    if (m->fn) {
        for (int d = 0; d < op->rank; d++) bidx[d] = INT64_MIN;
        /* the user's code: a crash, exit or abort in it is reported as the kernel's would be (exit 3) */
        const char *kind, *owner, *what;
        kern_guard_zone_get(&kind, &owner, &what);
        if (!what) kern_guard_zone("call", plan->call->name ? plan->call->name : "kernel", "index map function");
        m->fn(idx, prefetch, bidx, m->user);
        if (!what) kern_guard_zone(NULL, NULL, NULL);
    } else if (sim_map_axes(op, idx, bidx)) {
        return PL_OK;
    }
    for (int d = 0; d < op->rank; d++) {
        if ((bidx[d] >= 0 && bidx[d] < op->nblocks[d]) || past_ok(plan, op, d, bidx[d])) continue;
        char point[128], got[160];
        sim_format_idx(idx, plan->call->grid_rank, point, sizeof point);
        if (bidx[d] == INT64_MIN && m->fn && left_unset(op, idx, prefetch, d)) {
            snprintf(err, errlen,
                     "%s: at grid point %s the index map left dimension %d unset; it must return one block index "
                     "per array dimension (rule B2)",
                     op->rep->name, point, d);
            return PL_EINDEXMAP;
        }
        sim_format_idx(bidx, op->rank, got, sizeof got);
        char why[160];
        if (op->squeezed[d])
            snprintf(why, sizeof why, "squeezed, so an element index into %lld elements",
                     (long long)op->arr->shape[d]);
        else if (op->element[d])
            snprintf(why, sizeof why, "an element offset into %lld elements padded by %lld before, for a block of "
                     "%lld (rule B5)", (long long)op->arr->shape[d], (long long)op->pad_lo[d], (long long)op->block[d]);
        else
            snprintf(why, sizeof why, "%lld element%s in blocks of %lld", (long long)op->arr->shape[d],
                     op->arr->shape[d] == 1 ? "" : "s", (long long)op->block[d]);
        snprintf(err, errlen,
                 "%s: at grid point %s the index map returned block index %s; dimension %d must be in 0..%lld (%s) "
                 "(rule B7)",
                 op->rep->name, point, got, d, (long long)op->nblocks[d] - 1, why);
        return PL_EINDEXMAP;
    }
    return PL_OK;
}
