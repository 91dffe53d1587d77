/* sim/call/validate.c: sim_plan_call, everything checked before a call runs
 * (rule T7), at the level of the call.
 *
 * It checks the call's shape (grid G1, dimension semantics G3, operand
 * counts), the chip (TensorCores G4, sublanes T6, the MXU and the compute
 * rates a what-if chip gives) and the options (V1), the size of the grid,
 * each operand's array, scalar prefetch (M1, M5), input_output_aliases (M6)
 * and scratch (M1, M2); then the VMEM budget (M4) and output races (V4).
 *
 * The output is a sim_plan: each operand resolved into block sizes, block
 * counts, buffer count and the Ref template the kernel will get. One
 * operand's BlockSpec is blockspec.c's job, bytes and the budget budget.c's
 * (plan.h); this file calls both, neither calls it.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../kernel/scoped.h"
#include "../base/plan.h"

/* ---- arrays -------------------------------------------------------------------- */


static int check_array(const pl_array *a, const char *what, int allow_null, pl_report *rep)
{
    if (!a->data && !allow_null)
        return sim_fail(rep, PL_EINVAL, "%s: data is NULL (allowed only in cost-only mode)", what);
    if ((unsigned)a->dtype >= PL_DTYPE_COUNT)
        return sim_fail(rep, PL_EINVAL, "%s: unknown dtype %d", what, (int)a->dtype);
    if (pl_dtype_bits(a->dtype) == 4) { /* int4, fp4: every Ref, DMA and op here addresses whole bytes */
        int i4 = a->dtype == PL_I4;
        return sim_fail(rep, PL_EDTYPE, "%s: %s is a storage dtype packed two per byte, and tilesim's arrays "
                        "and Refs hold whole bytes per element; pass the packed bytes as an int8 array and read "
                        "them with %s (element 2k in the low nibble), or widen to %s", what,
                        i4 ? "int4" : "float4_e2m1fn", i4 ? "pl_i4_load" : "pl_f4_load", i4 ? "int8" : "fp8 or bf16");
    }
    if (a->rank < 0 || a->rank > PL_MAX_RANK)
        return sim_fail(rep, PL_EINVAL, "%s: rank %d is outside 0..%d", what, a->rank, PL_MAX_RANK);
    if (a->packed4 && (a->packed4 != 1 || a->dtype != PL_I8 || a->rank < 1))
        return sim_fail(rep, PL_EINVAL, "%s: packed4 = %d on a rank-%d %s array; packed4 = 1 marks an int8 array of "
                        "rank >= 1 whose bytes each hold two 4-bit values along the last dimension (0: none)",
                        what, a->packed4, a->rank, pl_dtype_name(a->dtype));
    for (int d = 0; d < a->rank; d++)
        if (a->shape[d] < 1)
            return sim_fail(rep, PL_EINVAL, "%s: dimension %d has size %lld; sizes must be >= 1", what, d,
                            (long long)a->shape[d]);
    return PL_OK;
}

/* Operands must be addressable with int64 byte offsets; scratch that is too
 * large is left to the budget (M4). */
static int check_addressable(const pl_array *a, const char *what, pl_report *rep)
{
    if (sim_sat_mul(pl_array_size(a), (int64_t)pl_dtype_size(a->dtype)) >= INT64_MAX / 2)
        return sim_fail(rep, PL_EINVAL, "%s: an array of %lld x %zu bytes is too large to address", what,
                        (long long)pl_array_size(a), pl_dtype_size(a->dtype));
    return PL_OK;
}

/* ---- input_output_aliases (M6) ------------------------------------------------- */

static int plan_aliases(sim_plan *plan, const pl_call *call, pl_report *rep)
{
    int n_args = call->num_scalar_prefetch + call->n_in;
    if (call->n_alias < 0 || call->n_alias > PL_MAX_OPERANDS)
        return sim_fail(rep, PL_EINVAL, "call %s: n_alias = %d must be in 0..%d", rep->call_name, call->n_alias,
                        PL_MAX_OPERANDS);
    for (int i = 0; i < call->n_alias; i++) {
        int in = call->alias[i].in, out = call->alias[i].out;
        if (in < 0 || in >= n_args || out < 0 || out >= call->n_out)
            return sim_fail(rep, PL_EINVAL, "alias %d: {%d: %d} names argument %d of %d and output %d of %d; "
                            "inputs count over the prefetch and input arguments (rule M6)", i, in, out, in, n_args,
                            out, call->n_out);
        sim_operand *src = &plan->ops[in], *dst = &plan->ops[n_args + out];
        int same = src->arr->dtype == dst->arr->dtype && src->arr->rank == dst->arr->rank;
        for (int d = 0; same && d < src->arr->rank; d++) same = src->arr->shape[d] == dst->arr->shape[d];
        if (!same)
            return sim_fail(rep, PL_EINVAL, "alias %d: %s and %s must have the same dtype and shape to share one "
                            "buffer (rule M6)", i, src->rep->name, dst->rep->name);
        if (dst->aliased)
            return sim_fail(rep, PL_EINVAL, "alias %d: output %s already aliases an input (rule M6)", i,
                            dst->rep->name);
        dst->aliased = 1;
        if (src->role == PL_ROLE_IN) { /* the input reads the shared buffer: the output's array */
            src->aliased = 1;
            src->arr = dst->arr;
        }
    }
    return PL_OK;
}

/* The call's arrays live in the device's HBM (P1): together they must fit
 * it, as the runtime's allocation on the chip would refuse them otherwise.
 * An output that aliases an input shares its buffer (M6). Packed 4-bit
 * arrays are int8 arrays here, two values a byte. */
static int check_hbm(const sim_plan *plan, const pl_call *call, pl_report *rep)
{
    const pl_chip *chip = plan->chip;
    int n = call->num_scalar_prefetch + call->n_in + call->n_out;
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        const sim_operand *o = &plan->ops[i];
        if (i >= call->num_scalar_prefetch + call->n_in && o->aliased) continue;
        int64_t b = sim_sat_mul(pl_array_size(o->arr), (int64_t)pl_dtype_size(o->arr->dtype));
        total = total > INT64_MAX - b ? INT64_MAX : total + b;
    }
    if (chip->hbm_bytes <= 0 || total <= chip->hbm_bytes) return PL_OK;
    char a[32], b[32];
    return sim_fail(rep, PL_EINVAL, "call %s: its arrays take %s of HBM, more than the %s a %s device has (rule P1: "
                    "the arrays a call gets live in HBM); use smaller arrays, or split the work over devices",
                    rep->call_name, pl_format_bytes((double)total, a, sizeof a),
                    pl_format_bytes((double)chip->hbm_bytes, b, sizeof b), chip->name);
}

/* ---- the call ---------------------------------------------------------------- */

static int check_call_shape(const pl_call *c, const pl_array *args, const pl_array *outs, pl_report *rep)
{
    if (!c) return sim_fail(rep, PL_EINVAL, "call is NULL");
    if (!c->kernel) return sim_fail(rep, PL_EINVAL, "call %s: kernel is NULL", rep->call_name);
    if (c->grid_rank < 0 || c->grid_rank > PL_MAX_GRID)
        return sim_fail(rep, PL_EINVAL, "call %s: grid_rank %d is outside 0..%d", rep->call_name, c->grid_rank,
                        PL_MAX_GRID);
    for (int a = 0; a < c->grid_rank; a++) {
        if (c->grid[a] < 1)
            return sim_fail(rep, PL_EINVAL, "call %s: grid axis %d has size %lld; sizes must be >= 1 (rule G1)",
                            rep->call_name, a, (long long)c->grid[a]);
        if (c->semantics[a] != PL_ARBITRARY && c->semantics[a] != PL_PARALLEL)
            return sim_fail(rep, PL_EINVAL, "call %s: grid axis %d has unknown semantics %d (rule G3)",
                            rep->call_name, a, (int)c->semantics[a]);
    }
    for (int a = 1; a < c->grid_rank; a++) /* as Mosaic: only a leading run of axes can be split */
        if (c->semantics[a] == PL_PARALLEL && c->semantics[a - 1] == PL_ARBITRARY)
            return sim_fail(rep, PL_EINVAL, "call %s: grid axis %d is parallel but axis %d before it is arbitrary; "
                            "parallel axes must come first, as a prefix of the grid (rule G3)",
                            rep->call_name, a, a - 1);
    if (c->n_in < 0 || c->n_in > PL_MAX_OPERANDS || c->n_out < 0 || c->n_out > PL_MAX_OPERANDS ||
        c->num_scalar_prefetch < 0 || c->num_scalar_prefetch > PL_MAX_OPERANDS || c->n_scratch < 0 ||
        c->n_scratch > PL_MAX_SCRATCH)
        return sim_fail(rep, PL_EINVAL,
                        "call %s: operand counts (prefetch %d, in %d, out %d, scratch %d) must each be in 0..%d",
                        rep->call_name, c->num_scalar_prefetch, c->n_in, c->n_out, c->n_scratch, PL_MAX_OPERANDS);
    if (c->n_in + c->num_scalar_prefetch > 0 && !args)
        return sim_fail(rep, PL_EINVAL, "call %s: args is NULL but the call has %d prefetch and %d inputs",
                        rep->call_name, c->num_scalar_prefetch, c->n_in);
    if (c->n_out > 0 && !outs)
        return sim_fail(rep, PL_EINVAL, "call %s: outs is NULL but the call has %d outputs", rep->call_name,
                        c->n_out);
    return PL_OK;
}

static int plan_prefetch(sim_plan *plan, const pl_call *call, const pl_array *args, pl_report *rep)
{
    for (int i = 0; i < call->num_scalar_prefetch; i++) {
        sim_operand *op = &plan->ops[plan->n_ops++];
        pl_operand_report *or = &rep->op[rep->n_operands++];
        snprintf(or->name, sizeof or->name, "prefetch%d", i);
        op->rep = or;
        op->role = or->role = PL_ROLE_PREFETCH;
        op->index = i;
        op->arg = i;
        op->arr = &args[i];
        int rc = check_array(op->arr, or->name, 0, rep);
        if (!rc) rc = check_addressable(op->arr, or->name, rep);
        if (rc) return rc;
        if (op->arr->dtype == PL_F16) /* M5: 8- and 16-bit tables widen to 32 bits; Mosaic has no f16 there */
            return sim_fail(rep, PL_EDTYPE, "%s: scalar-prefetch arrays live in SMEM as 32-bit words: i32 or f32, "
                            "or bf16, i16 and i8 read widened; got %s (rule M1, rule M5)", or->name,
                            pl_dtype_name(op->arr->dtype));
        pl_block_spec whole = {.space = PL_SMEM, .buffers = 1};
        rc = sim_plan_operand(plan, op, &whole, rep);
        if (rc) return rc;
        op->pipelined = 0; /* copied once before the grid (M5) */
    }
    return PL_OK;
}

static int plan_scratch(sim_plan *plan, const pl_call *call, pl_report *rep)
{
    for (int i = 0; i < call->n_scratch; i++) {
        const pl_scratch *s = &call->scratch[i];
        pl_scratch_report *sr = &rep->scratch[rep->n_scratch++];
        if (s->name) kern_copy_name(sr->name, sizeof sr->name, s->name);
        else snprintf(sr->name, sizeof sr->name, "scratch%d", i);
        sr->space = s->space;
        sr->dtype = s->dtype;
        sr->rank = s->rank > 0 && s->rank <= PL_MAX_RANK ? s->rank : 0;
        memcpy(sr->shape, s->shape, (size_t)sr->rank * sizeof *sr->shape);
        char msg[256];
        int rule = kern_scratch_rules(s, sr->name, msg, sizeof msg); /* the rules run_scoped checks too */
        if (rule == PL_EINVAL) return sim_fail(rep, rule, "%s", msg);
        pl_array shape = {.data = sr, .dtype = s->dtype, .rank = s->rank};
        memcpy(shape.shape, s->shape, sizeof shape.shape);
        int rc = check_array(&shape, sr->name, 0, rep);
        if (rc) return rc;
        if (rule) return sim_fail(rep, rule, "%s", msg); /* SMEM's 32 bits (M1), after the shape's own checks */
        /* semaphores live in their own memory, outside the VMEM and SMEM budgets */
        sr->bytes =
            s->space == PL_SEMAPHORE ? 0 : sim_laid_out_bytes(s->shape, s->rank, s->dtype, s->space, plan->chip);
        if (s->space == PL_VMEM)
            sim_warn_padding(rep, sr->name, "scratch", s->shape, s->rank, s->dtype, plan->chip, sr->bytes,
                             sim_sat_mul(pl_array_size(&shape), (int64_t)pl_dtype_size(s->dtype)));
    }
    return PL_OK;
}

/* The compute rates a what-if chip gives divide the ops' work (timing.c):
 * zero, negative or NaN made times infinite, negative or NaN, and the call
 * succeeded with them. int8_ops and clock_hz may be 0 (not published). */
static int check_chip_rates(const pl_chip *chip, pl_report *rep)
{
    const struct { const char *name; double v; int zero_ok; } f[] = {
        {"bf16_flops", chip->bf16_flops, 0}, {"vpu_flops", chip->vpu_flops, 0},
        {"f32_fraction", chip->f32_fraction, 0}, {"int8_ops", chip->int8_ops, 1}, {"clock_hz", chip->clock_hz, 1}};
    for (size_t i = 0; i < sizeof f / sizeof *f; i++)
        if (!isfinite(f[i].v) || f[i].v < 0 || (f[i].v == 0 && !f[i].zero_ok))
            return sim_fail(rep, PL_EINVAL, "chip %s: %s = %g; it must be finite and %s", chip->name, f[i].name,
                            f[i].v, f[i].zero_ok ? ">= 0 (0: not published)" : "> 0");
    return PL_OK;
}

/* The chip: a preset by name (or the default), or the caller's what-if
 * chip, with the figures the rest of the simulator divides by checked. */
static int plan_chip(sim_plan *plan, const pl_options *opt, pl_report *rep)
{
    const char *chip = opt && opt->chip ? opt->chip : NULL;
    plan->chip = opt && opt->chip_spec ? opt->chip_spec : chip ? pl_chip_find(chip) : pl_chip_default();
    if (!plan->chip) {
        char names[256] = "";
        for (int i = 0; i < pl_chip_count(); i++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
                     pl_chip_at(i)->name);
        return sim_fail(rep, PL_EINVAL, "unknown chip '%s'; the presets are %s", chip, names);
    }
    rep->chip = plan->chip;
    if (plan->chip->cores_per_device < 1 || plan->chip->cores_per_device > SIM_MAX_CORES)
        return sim_fail(rep, PL_EINVAL, "chip %s: cores_per_device = %d; a device has 1 to %d TensorCores (rule G4)",
                        plan->chip->name, plan->chip->cores_per_device, SIM_MAX_CORES);
    /* 16-bit blocks round up to this many rows (T6): 0 divided by zero, a negative count overflowed */
    if (plan->chip->sublanes_16bit < 1)
        return sim_fail(rep, PL_EINVAL, "chip %s: sublanes_16bit = %d; 16-bit types need at least 1 native sublane "
                        "(a chip file gives 8 to 32, rule T6)", plan->chip->name, plan->chip->sublanes_16bit);
    /* dots pad to it (timing.c): 0 made every dot's time NaN, a negative width 0 */
    if (plan->chip->mxu_width < 1)
        return sim_fail(rep, PL_EINVAL, "chip %s: mxu_width = %d; the MXU is width x width, at least 1 (a chip file "
                        "gives 128 or 256)", plan->chip->name, plan->chip->mxu_width);
    return check_chip_rates(plan->chip, rep);
}

/* The blocked inputs and outputs, in kernel argument order after the
 * prefetch (M3): each named, its array checked, its spec resolved. */
static int plan_blocked(sim_plan *plan, const pl_call *call, const pl_array *args, const pl_array *outs,
                        pl_report *rep)
{
    for (int role = PL_ROLE_IN; role <= PL_ROLE_OUT; role++) {
        int n = role == PL_ROLE_IN ? call->n_in : call->n_out;
        for (int i = 0; i < n; i++) {
            const pl_block_spec *s = role == PL_ROLE_IN ? &call->in[i] : &call->out[i];
            sim_operand *op = &plan->ops[plan->n_ops];
            pl_operand_report *or = &rep->op[rep->n_operands++];
            op->arg = plan->n_ops++;
            op->rep = or;
            op->role = or->role = (pl_role)role;
            op->index = i;
            op->arr = role == PL_ROLE_IN ? &args[call->num_scalar_prefetch + i] : &outs[i];
            if (s->name) kern_copy_name(or->name, sizeof or->name, s->name);
            else snprintf(or->name, sizeof or->name, "%s%d", role == PL_ROLE_IN ? "in" : "out", i);
            int rc = check_array(op->arr, or->name, plan->cost_only, rep);
            if (!rc) rc = check_addressable(op->arr, or->name, rep);
            if (!rc) rc = sim_plan_operand(plan, op, s, rep);
            if (rc) return rc;
        }
    }
    return PL_OK;
}

int sim_plan_call(const pl_call *call, const pl_array *args, const pl_array *outs, const pl_options *opt,
                  sim_plan *plan, pl_report *rep)
{
    memset(plan, 0, sizeof *plan);
    plan->call = call;
    plan->cost_only = opt && opt->cost_only;
    plan->oob_poison = opt && opt->oob_reads == PL_OOB_POISON;
    plan->checks = !(opt && opt->checks_off);
    plan->strict = opt && opt->strict;
    plan->vmem_limit = opt ? opt->vmem_limit_bytes : 0;
    kern_copy_name(rep->call_name, sizeof rep->call_name, call && call->name ? call->name : "kernel");
    int rc = check_call_shape(call, args, outs, rep);
    if (!rc) rc = plan_chip(plan, opt, rep);
    if (rc) return rc;
    if (opt && opt->uninit != PL_UNINIT_NAN && opt->uninit != PL_UNINIT_ZERO)
        return sim_fail(rep, PL_EINVAL, "options: uninit = %d; use PL_UNINIT_NAN or PL_UNINIT_ZERO (rule V1)",
                        (int)opt->uninit);

    rep->grid_rank = call->grid_rank;
    memcpy(rep->grid, call->grid, sizeof rep->grid);
    plan->steps = 1;
    for (int a = 0; a < call->grid_rank; a++) plan->steps = sim_sat_mul(plan->steps, call->grid[a]);
    /* 2^32 steps take about a quarter of an hour at 5 million steps per second */
    if (plan->steps > (1LL << 32))
        return sim_fail(rep, PL_EINVAL, "call %s: a grid of %s%lld points is more than tilesim walks (2^32); use "
                        "larger blocks", rep->call_name, plan->steps == INT64_MAX ? "over " : "",
                        (long long)plan->steps);

    rc = plan_prefetch(plan, call, args, rep);
    if (!rc) rc = plan_blocked(plan, call, args, outs, rep);
    if (!rc) rc = plan_aliases(plan, call, rep);
    if (!rc) rc = check_hbm(plan, call, rep);
    if (!rc) rc = plan_scratch(plan, call, rep);
    if (!rc) rc = sim_check_budget(plan, call, rep);
    if (rc) return rc;
    return sim_check_races(plan, rep);
}
