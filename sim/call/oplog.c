/* sim/call/oplog.c: the price of a block op on a chip, and a step's op log
 * (kernel/context.h) into the timing model's records (timing.h) and the
 * report's work counters.
 *
 * The kernel layer logs what each block op did in FLOPs and elements; this
 * file prices each op on the chip (sim_op_seconds: MXU ops padded to the
 * MXU width at the dtype's rate, elementwise ops on the VPU, either no
 * faster than its VMEM bytes at the VMEM bandwidth, element accesses on
 * the scalar unit) and adds it to the step's
 * compute time. A step that starts or waits for manual copies becomes an
 * event list instead: compute between the copies' starts and waits. Both
 * grow as needed, so a step may log any number of ops and copies.
 */
#include <math.h>

#include "profile.h"
#include "../timing/timing.h"

/* ---- compute ---------------------------------------------------------------------- */

static double pad(double x, double m) { return ceil(x / m) * m; }

double pl_chip_mxu_rate(const pl_chip *chip, pl_dtype t)
{
    if (t == PL_F32) return chip->bf16_flops * chip->f32_fraction;
    if (t == PL_I8 && chip->int8_ops > 0) return chip->int8_ops;
    if ((t == PL_F8E4M3 || t == PL_F8E5M2) && chip->fp8_ops > 0) return chip->fp8_ops;
    return chip->bf16_flops; /* bf16, f16, and int8 where the chip has no int8 path */
}

/* The MXU holds the (k, n) operand in a width x width array (a "latch" of
 * weights) and streams m through it one vector register of rows at a time
 * (a vmatmul): 8 sublanes of 32-bit words, so 8 rows of f32, 16 of bf16,
 * 32 of 8-bit types (OpenXLA's Pallas matmul cost model, cost_model.py:
 * rows_per_vmatmul = sublanes * 32 / bits). k and n pad to the width, m to
 * those rows. */
static double dot_rows(pl_dtype t)
{
    int bits = pl_dtype_bits(t);
    return 8.0 * 32 / (bits < 8 ? 8 : bits > 32 ? 32 : bits);
}

double sim_dot_padded_flops(const pl_chip *chip, const kern_op *op)
{
    return 2.0 * pad((double)op->m, dot_rows((pl_dtype)op->dtype)) * pad((double)op->n, chip->mxu_width) *
           pad((double)op->k, chip->mxu_width);
}

/* The MXU's cycle: the chip's clock, or where it is not published the one
 * its peak implies: 2 FLOP per cell per cycle */
static double mxu_hz(const pl_chip *chip)
{
    double cells = (double)chip->mxu_count * chip->mxu_width * chip->mxu_width;
    return chip->clock_hz > 0 ? chip->clock_hz : cells > 0 ? chip->bf16_flops / (2 * cells) : 0;
}

double sim_mxu_fill_seconds(const pl_chip *chip)
{
    double hz = mxu_hz(chip);
    return hz > 0 && chip->mxu_fill_cycles > 0 ? chip->mxu_fill_cycles / hz : 0;
}

/* Loading a width x width tile of weights into the MXU (a latch) pushes one
 * register of rows every 4 cycles (2 for f32): width / 4 cycles for 16- and
 * 32-bit weights, width / 8 for 8-bit ones (OpenXLA's platform_info.py,
 * latch_cadence_cycles_by_dtype, and cost_model.py). A dot whose m fills
 * fewer vmatmuls than that waits on the next latch: a small-m dot is bound
 * by its weights, not its FLOPs. */
static double latch_seconds(const pl_chip *chip, pl_dtype t)
{
    double hz = mxu_hz(chip);
    int bits = pl_dtype_bits(t);
    double rows_per_latch = dot_rows(t), cadence = bits >= 32 ? 2 : 4;
    return hz > 0 ? cadence * chip->mxu_width / rows_per_latch / hz : 0;
}

/* A dot's time on the MXUs: its vmatmuls spread over the MXUs, the first
 * latch, the latches its vmatmuls do not cover, and the fill and drain. */
static double dot_seconds(const pl_chip *chip, const kern_op *op, double padded)
{
    pl_dtype t = (pl_dtype)op->dtype;
    double rate = pl_chip_mxu_rate(chip, t), w = chip->mxu_width, mxus = chip->mxu_count > 0 ? chip->mxu_count : 1;
    double rows = dot_rows(t), latches = pad((double)op->k, w) / w * (pad((double)op->n, w) / w);
    double vmatmuls = pad((double)op->m, rows) / rows;
    double per_vmatmul = 2.0 * rows * w * w * mxus / rate; /* one MXU's time for one vmatmul */
    double latch = latch_seconds(chip, t), between = vmatmuls * per_vmatmul, rest = latches / mxus - 1;
    double stall = latch > between && rest > 0 ? (latch - between) * rest : 0;
    return padded / rate + latch + stall + sim_mxu_fill_seconds(chip);
}

double sim_scalar_seconds(const pl_chip *chip, double accesses)
{
    /* one access per cycle of the scalar unit, or 1 ns where the clock is not published */
    return accesses * (chip->clock_hz > 0 ? 1.0 / chip->clock_hz : 1e-9);
}

double sim_op_seconds(const pl_chip *chip, const kern_op *op, double *padded)
{
    if (op->kind == KERN_OP_SCALAR) {
        *padded = (double)op->elems;
        return sim_scalar_seconds(chip, (double)op->elems);
    }
    if (op->kind == KERN_OP_OVERHEAD) { /* a nested pipeline's steps, each a grid step's overhead (P9, K3) */
        *padded = 0;
        return (double)op->elems * chip->step_overhead_s;
    }
    /* an op's operands stream through the vector loads and stores of VMEM:
     * no op runs faster than its bytes at the VMEM bandwidth (docs/CHIPS.md) */
    double streamed = chip->vmem_bw > 0 ? (double)op->vmem / chip->vmem_bw : 0, unit;
    if (op->kind == KERN_OP_DOT) {
        *padded = sim_dot_padded_flops(chip, op);
        /* each dot latches its first weights, fills the systolic array and
         * drains it: latency no other work of the dot overlaps
         * (docs/CHIPS.md, mxu_fill_cycles) */
        unit = dot_seconds(chip, op, *padded);
    } else {
        /* the VPU works on whole (8, 128) registers; an op's FLOPs (4 per
         * element for exp and the other EUP ops, more for tanh and gelu,
         * every element a reduction reads) are its work */
        double work = op->flops > (double)op->elems ? op->flops : (double)op->elems;
        /* an elementwise op (m: its destination's register slots) works on whole registers: a (128, 1)
         * column takes 16 of them, one lane each (docs/CHIPS.md, "VPU ops on columns") */
        if (op->m > op->elems && op->elems > 0 && !chip->sc_view) work *= (double)op->m / (double)op->elems;
        *padded = pad(work, chip->sc_view && chip->sc_lanes > 0 ? chip->sc_lanes : 1024); /* a subcore's vreg (K5) */
        unit = *padded / chip->vpu_flops;
    }
    return unit > streamed ? unit : streamed;
}


/* Kernels repeat the same few ops at every step: remember the last times,
 * and each op's row in the profile (its name is a string literal: the
 * pointer tells ops of one shape apart, pl_add from pl_mul). */
static const sim_op_memo *op_memo(sim_op_memo *memo, const pl_chip *chip, const kern_op *o)
{
    unsigned h = (unsigned)(o->kind * 31u + (unsigned)o->m * 7u + (unsigned)o->n * 3u + (unsigned)o->k +
                            (unsigned)o->elems + (unsigned)((uintptr_t)o->name >> 3)) % SIM_OP_CACHE;
    sim_op_memo *m = &memo[h];
    if (m->valid && m->op.kind == o->kind && m->op.dtype == o->dtype && m->op.m == o->m && m->op.n == o->n &&
        m->op.k == o->k && m->op.elems == o->elems && m->op.flops == o->flops && m->op.name == o->name && m->op.vmem == o->vmem)
        return m;
    m->op = *o;
    m->seconds = sim_op_seconds(chip, o, &m->padded);
    m->valid = 1;
    m->prof_row = -1;
    return m;
}

/* The compute since the last event (*segment, then reset), then e. */
static int push_event(sim_coreline *cl, int64_t step, double *segment, sim_kevent e)
{
    if ((*segment > 0 &&
         sim_coreline_event(cl, step, (sim_kevent){.kind = SIM_KEV_COMPUTE, .seconds = *segment})) ||
        sim_coreline_event(cl, step, e))
        return -1;
    *segment = 0;
    return 0;
}

/* Count a compute op's work in the report; returns its time. */
static double tally_op(sim_op_memo *memo, const pl_chip *chip, const kern_op *o, pl_report *r, double *dot_flops)
{
    sim_op_memo *m = (sim_op_memo *)op_memo(memo, chip, o);
    double padded = m->padded, t = m->seconds;
    if (o->kind == KERN_OP_OVERHEAD) { /* the profile's one overhead row takes it (profile.c) */
        r->nested_steps += o->elems;
        return t;
    }
    if (m->prof_row < 0) {
        pl_prof_cat cat = o->kind == KERN_OP_DOT ? PL_PROF_MXU : o->kind == KERN_OP_SCALAR ? PL_PROF_SCALAR
                          : o->kind == KERN_OP_EUP ? PL_PROF_EUP : PL_PROF_VPU;
        m->prof_row = sim_profile_add(r, cat, o->name, 0, 0, 0, 0, 0);
    }
    sim_profile_add_at(r, m->prof_row, 1, t, o->flops, (double)o->vmem, 0);
    if (o->kind == KERN_OP_DOT) {
        r->mxu_flops += o->flops;
        r->mxu_flops_padded += padded;
        r->mxu_s += t;
        dot_flops[o->dtype] += o->flops;
    } else if (o->kind == KERN_OP_SCALAR) {
        r->scalar_ops += o->elems;
        r->scalar_s += t;
    } else {
        r->vpu_flops += o->flops;
        r->vpu_s += t;
        if (o->kind == KERN_OP_EUP) r->eup_elems += o->elems;
    }
    return t;
}

int sim_record_step(sim_coreline *cl, sim_op_memo *memo, const pl_chip *chip, int64_t step, int64_t first_copy,
                    const kern_op *ops, int n, pl_report *r, double *dot_flops)
{
    int events = 0;
    double seconds = 0, segment = 0;
    for (int i = 0; i < n; i++) {
        const kern_op *o = &ops[i];
        if (o->kind == KERN_OP_SEM_SIGNAL && o->k) { /* to another device: it crosses the links (M9, M11) */
            events = 1;
            if (sim_opline_push(&cl->signals, step, o->elems, 0, NULL)) return -1;
            sim_xfer *x = &cl->signals.x[cl->signals.n - 1];
            x->hops = (uint8_t)(o->k > 255 ? 255 : o->k), x->to = (int32_t)o->n, x->cell = o->cell;
            sim_kevent e = {.kind = SIM_KEV_SEND, .xfer = cl->signals.n - 1};
            if (push_event(cl, step, &segment, e)) return -1;
            continue;
        }
        if (o->kind == KERN_OP_RECV_WAIT || o->kind == KERN_OP_SEM_WAIT || o->kind == KERN_OP_SEM_SIGNAL) {
            events = 1;
            sim_kevent e = {.kind = o->kind == KERN_OP_SEM_SIGNAL ? SIM_KEV_SIGNAL : SIM_KEV_TAKE,
                            .device = (int32_t)o->n, .cell = o->cell, .amount = o->elems};
            if (push_event(cl, step, &segment, e)) return -1;
            continue;
        }
        if (o->kind != KERN_OP_DMA_START && o->kind != KERN_OP_DMA_WAIT) {
            double t = tally_op(memo, chip, o, r, dot_flops);
            if (o->kind == KERN_OP_OVERHEAD) cl->nested_overhead_s += t;
            seconds += t;
            segment += t;
            continue;
        }
        events = 1;
        if (o->kind == KERN_OP_DMA_START) {
            if (sim_opline_push(&cl->manual, step, o->elems, 0, NULL)) return -1;
            sim_xfer *x = &cl->manual.x[cl->manual.n - 1];
            x->hops = (uint8_t)(o->k > 255 ? 255 : o->k); /* k: ICI hops (M11) */
            x->to = (int32_t)o->n;
            x->cell = o->cell; /* mesh: the receiving semaphore, credited when the transfer ends */
            x->regular = o->regular; /* by 1, not its bytes (M8) */
            r->dma_copies++;
            if (o->m) r->dma_bytes += o->elems; /* m: the copy touches HBM */
            if (o->k) r->ici_copies++, r->ici_bytes += o->elems; /* k: to another device (M11) */
            double b = (double)o->elems; /* its time in flight comes after the replay (profile.c) */
            sim_op_memo *mm = (sim_op_memo *)op_memo(memo, chip, o); /* its row found once, as for compute */
            if (mm->prof_row < 0) mm->prof_row = sim_profile_add(r, PL_PROF_DMA, o->name, 0, 0, 0, 0, 0);
            sim_profile_add_at(r, mm->prof_row, 1, 0, 0, o->m || o->k ? 0 : b, o->m || o->k ? b : 0);
            x->prof_row = (uint8_t)mm->prof_row;
        }
        sim_kevent e = {.kind = o->kind == KERN_OP_DMA_START ? SIM_KEV_START : SIM_KEV_WAIT,
                        .joined = o->kind == KERN_OP_DMA_WAIT && o->m, .xfer = o->dma - first_copy};
        if (push_event(cl, step, &segment, e)) return -1;
    }
    if (events && push_event(cl, step, &segment, (sim_kevent){.kind = SIM_KEV_END})) return -1;
    return sim_coreline_step(cl, seconds);
}
