/* sim/kdef/kdef_ideal.c: a definition's efficiency against its ideal. .flops
 * and .bytes (sim/kdef.h) give the algorithm's work and traffic, not the
 * tiling's; the ideal time is the longer of that work at the chip's peak
 * and those bytes at its HBM bandwidth, and the run's efficiency is that
 * over the simulated time (issue 22: the two callbacks were never used).
 */
#include "../../kernel/guard.h"
#include "kdef_internal.h"
#include "../base/sim.h"

/* Each callback in its guard zone: a plugin's crash names it. */
static double call_ideal(const pl_kernel_def *d, const int64_t *v, double (*fn)(const int64_t *), const char *what)
{
    if (!fn) return 0;
    kern_guard_zone("kernel definition", d->name, what);
    double x = fn(v);
    kern_guard_zone(NULL, NULL, NULL);
    return x > 0 && x < 1e300 ? x : 0; /* NaN, negative or absurd: unknown */
}

void sim_kdef_ideal(const pl_kernel_def *d, const int64_t *v, pl_report *rep)
{
    rep->ideal_flops = rep->ideal_bytes = rep->ideal_s = rep->efficiency = 0;
    if (!d || rep->status != PL_OK || !rep->chip || !(rep->time_s > 0) || rep->cores <= 0) return;
    const pl_chip *chip = rep->chip;
    rep->ideal_flops = call_ideal(d, v, d->flops, "flops callback");
    rep->ideal_bytes = call_ideal(d, v, d->bytes, "bytes callback");
    /* the MXU's peak when the kernel uses it, else the VPU's: its FLOPs are elementwise */
    double peak = (rep->mxu_flops > 0 ? pl_chip_mxu_rate(chip, rep->mxu_dtype) : chip->vpu_flops) * rep->cores;
    double compute = peak > 0 ? rep->ideal_flops / peak : 0, traffic = rep->ideal_bytes / chip->hbm_bw;
    rep->ideal_s = compute > traffic ? compute : traffic;
    rep->efficiency = rep->ideal_s / rep->time_s;
}
