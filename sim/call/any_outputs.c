/* sim/call/any_outputs.c: outputs left in HBM (memory space ANY, rule T5),
 * which only the kernel's own copies write (manual DMA, an emit_pipeline's
 * write-backs).
 *
 * Such an output is a fresh buffer, as every output not aliased to an input
 * is (M6): it starts uninitialized, poisoned as JAX's TPU interpret mode
 * fills it (V1), where it kept the caller's array, so that a part no copy
 * wrote passed unseen. After the walk a NaN there is V1's finding, as a
 * NaN in a pipelined write-back is (sim/call/checks.c): poison that reached
 * HBM by a copy, or a part of the output nothing wrote. Real runs only (a
 * cost-only run has no data).
 */
#include <string.h>

#include "exec.h" /* sim_add_finding, sim_fail */

static int fresh_any_output(const sim_exec *x, int i)
{
    const sim_operand *op = &x->plan.ops[i];
    return op->role == PL_ROLE_OUT && op->space == PL_ANY && !op->aliased && op->arr->data && !x->cost_only &&
           x->checks;
}

void sim_any_outputs_poison(sim_exec *x)
{
    for (int i = 0; i < x->plan.n_ops; i++)
        if (fresh_any_output(x, i))
            sim_poison(x->plan.ops[i].arr->data, x->plan.ops[i].arr->dtype, pl_array_size(x->plan.ops[i].arr),
                       x->uninit);
}

int sim_any_outputs_check(sim_exec *x)
{
    if (x->uninit != PL_UNINIT_NAN) return PL_OK;
    for (int i = 0; i < x->plan.n_ops && !x->rep.status; i++) {
        const sim_operand *op = &x->plan.ops[i];
        if (!fresh_any_output(x, i) || !pl_dtype_is_float(op->arr->dtype) || pl_dtype_bits(op->arr->dtype) < 8)
            continue;
        int64_t e = sim_nan_in(op->arr->data, op->arr->dtype, pl_array_size(op->arr));
        if (e < 0) continue;
        int64_t pos[PL_MAX_RANK] = {0}, zero[PL_MAX_RANK] = {0}, point[PL_MAX_GRID] = {0};
        for (int d = op->arr->rank - 1; d >= 0; d--) pos[d] = e % op->arr->shape[d], e /= op->arr->shape[d];
        char at[128], msg[600];
        sim_format_idx(pos, op->arr->rank, at, sizeof at);
        snprintf(msg, sizeof msg,
                 "%s: NaN in HBM at element %s after the call (rule V1): an output in memory space ANY is a fresh "
                 "buffer only the kernel's copies write (T5, M6); likely cause: a part no copy wrote, or a copy "
                 "of data that was never written (scratch, or a VMEM buffer before the kernel filled it), or a "
                 "NaN computed by the kernel",
                 op->rep->name, at);
        sim_add_finding(&x->rep, PL_FIND_POISON, "V1", i, point, x->plan.call->grid_rank, zero, 0, msg);
        if (x->strict) return sim_fail(&x->rep, PL_EPOISON, "%s", msg);
    }
    return PL_OK;
}
