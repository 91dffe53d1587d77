/* bench/openxla_cost.h: OpenXLA's cost model of a Pallas matmul on a TPU
 * (xla/benchmarks/core/cost_model.py, with its figures from
 * platform_info.py), applied to the quantized matmul's copies: the
 * baseline bench/autotune_agree sets beside tilesim. How well does the
 * published model of these chips agree with the hardware's choices on the
 * same candidates, under the same VMEM limits?
 *
 * The model, per grid step: the time of its dot on the MXUs (vmatmul
 * cadence, latches not hidden by the vmatmuls between them, the matmul's
 * latency once) against the copies of the next step's blocks (in flight
 * together, sharing the bandwidth equally, plus the latency of the last
 * to finish): the step takes the longer. The first blocks' copies before
 * the grid and the last output's after it are added. Blocks that never
 * change are copied once. What the model leaves out and tilesim counts:
 * the VPU work (quantizing x, scaling the output), the step overhead, the
 * issue cost of each copy. Transcribed (the formulas, not the code) for
 * this kernel's grid (batch, out, in), the contraction innermost; x is
 * copied as bf16, packed fp4 weights as 4 bits (widened to fp8 for the
 * MXU: v7x has no fp4 cadence), o as bf16. Blocks under the MXU's 256 are
 * padded to it, as tilesim pads them; the model itself tries none.
 *
 *     double s = ox_seconds(ox_figures("v6e"), batch, out, in, bb, bo, bi, 8);
 */
#ifndef TILESIM_BENCH_OPENXLA_COST_H
#define TILESIM_BENCH_OPENXLA_COST_H

#include <math.h>
#include <string.h>

typedef struct ox_figures {
    const char *chip;
    double cadence, latch_cadence; /* cycles between vmatmuls (the 8-bit lhs) and between latch pushes */
    double ghz, gb_per_s, in_ns, out_ns, matmul_latency; /* clock; HBM<->VMEM; latencies; cycles */
    int mxus, mxu, sublanes;
} ox_figures;

/* platform_info.py: v6e with int8 x int8, v7x (default P-state 3, 1.9 GHz) with fp8 x fp8 */
static const ox_figures ox_table[] = {
    {"v6e", 8, 4, 1.75, 1373, 628, 523, 182, 2, 256, 8},
    {"v7x", 8, 4, 1.9, 3207, 692, 594, 204, 2, 256, 8},
};

static inline const ox_figures *ox_figures_of(const char *chip)
{
    for (size_t i = 0; i < sizeof ox_table / sizeof *ox_table; i++)
        if (!strcmp(ox_table[i].chip, chip)) return &ox_table[i];
    return NULL;
}

/* _dma_latency: n copies (bytes, latency) in flight together, sharing the
 * bandwidth equally; each finished copy frees its share. ns. */
static inline double ox_dma(const ox_figures *f, int n, const double *bytes_in, const double *lat)
{
    double b[3], total = 0, in_flight = 0;
    for (int i = 0; i < n; i++) b[i] = bytes_in[i];
    for (;;) {
        double least = INFINITY;
        int live = 0;
        for (int i = 0; i < n; i++)
            if (b[i] > 0) live++, least = b[i] < least ? b[i] : least;
        if (!live) break;
        double t = least * live / f->gb_per_s, done_lat = 0;
        total += t;
        for (int i = 0; i < n; i++)
            if (b[i] > 0 && b[i] == least && lat[i] > done_lat) done_lat = lat[i];
        in_flight = in_flight - t > done_lat ? in_flight - t : done_lat;
        for (int i = 0; i < n; i++) b[i] = b[i] > least ? b[i] - least : 0;
    }
    return total + in_flight;
}

/* _compute_matmul_latency_ns_per_iteration for a (bb, bi) x (bi, bo) dot of 8-bit operands. ns. */
static inline double ox_matmul_ns(const ox_figures *f, double bb, double bo, double bi)
{
    double kb = ceil(bi / f->mxu), nb = ceil(bo / f->mxu), latches = kb * nb;
    double rows = f->sublanes * 4.0; /* rows of an 8-bit vmatmul */
    double per_latch = ceil(bb / rows), extra = per_latch == 1 ? 4 : 0;
    double cycles = f->cadence * per_latch * latches + extra * (kb - 1) * nb;
    double latch = f->latch_cadence * (f->mxu / rows), between = per_latch * f->cadence + extra;
    double hidden_not = latch > between ? latch - between : 0;
    double latch_ns = (latch + hidden_not * (latches / f->mxus - 1)) / f->ghz;
    return cycles / f->mxus / f->ghz + latch_ns + f->matmul_latency / f->ghz;
}

/* The whole call, ns: grid (batch/bb, out/bo, in/bi); weight bits 8 or 4. */
static inline double ox_seconds(const ox_figures *f, double batch, double out, double in, double bb, double bo,
                                double bi, int wbits)
{
    double gm = batch / bb, gn = out / bo, gk = in / bi;
    double lb = bb * bi * 2, rb = bo * bi * wbits / 8, ob = bb * bo * 2;
    double mm = ox_matmul_ns(f, bb, bo, bi);
    double lat3[3] = {f->in_ns, f->in_ns, f->out_ns};
    double first[2] = {lb, rb}, last[1] = {ob}, all[3] = {lb, rb, ob};
    double init = ox_dma(f, 2, first, lat3), fin = ox_dma(f, 1, last, lat3 + 2);
    /* the innermost axis that takes more than one block: K, else N, else M */
    char inner = gk > 1 ? 'K' : gn > 1 ? 'N' : 'M';
    int swap_l = gm != 1 || gk != 1, swap_r = gk != 1 || gn != 1, swap_o = gm != 1 || gn != 1;
    double step[3] = {inner != 'N' && swap_l ? lb : 0, inner != 'M' && swap_r ? rb : 0,
                      inner != 'K' && swap_o ? ob : 0};
    double d_step = ox_dma(f, 3, step, lat3), d_last = ox_dma(f, 3, all, lat3);
    double steps = (gm - (inner == 'M')) * (gk - (inner == 'K')) * (gn - (inner == 'N'));
    double finals = (inner != 'M' ? gm : 1) * (inner != 'K' ? gk : 1) * (inner != 'N' ? gn : 1);
    double loop = (d_step > mm ? d_step : mm) * steps + (d_last > mm ? d_last : mm) * (finals - 1) + mm;
    return (init + loop + fin) * 1e-9;
}

#endif
