/* sim/timing/figures.c: which of a chip's figures the replay can time.
 *
 * The replay divides by rates and adds times: a rate of zero, a negative
 * time or a NaN (a chip file can say anything) would put the next event at
 * infinity or move time backwards. sim_time_run refuses such a chip before
 * it starts (-2), and sim_time_chip_problem names the figure as a chip file
 * spells it ("hbm_gbps = 0"), for the caller's message.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>

#include "timing.h"

/* The figures the replay divides by or adds: each named as a chip file
 * spells it, for the message when one cannot be timed (time must only move
 * forward, to a finite end). scope 0: every run; 1: a mesh (its links);
 * 2: a multislice mesh (its hosts' NICs). */
static const struct timed_figure {
    const char *key, *field;
    size_t offset;
    double scale;
    int rate, scope; /* rate: finite and > 0; else a time, finite and >= 0 */
} timed_figures[] = {
    {"hbm_gbps", "hbm_bw", offsetof(pl_chip, hbm_bw), 1e9, 1, 0},
    {"step_overhead_us", "step_overhead_s", offsetof(pl_chip, step_overhead_s), 1e-6, 0, 0},
    {"dma_latency_us", "dma_latency_s", offsetof(pl_chip, dma_latency_s), 1e-6, 0, 0},
    {"dma_issue_us", "dma_issue_s", offsetof(pl_chip, dma_issue_s), 1e-6, 0, 0},
    {"prologue_us", "prologue_s", offsetof(pl_chip, prologue_s), 1e-6, 0, 0},
    {"dma_row_bytes", "dma_row_bytes", offsetof(pl_chip, dma_row_bytes), 1, 0, 0},
    {"ici_gbps", "ici_bw", offsetof(pl_chip, ici_bw), 1e9, 1, 1},
    {"dcn_gbps", "dcn_bw", offsetof(pl_chip, dcn_bw), 1e9, 1, 2},
    {"dcn_latency_us", "dcn_latency_s", offsetof(pl_chip, dcn_latency_s), 1e-6, 0, 2},
};
#define N_TIMED (int)(sizeof timed_figures / sizeof *timed_figures)

static int figure_ok(const pl_chip *chip, int i)
{
    double v = *(const double *)((const char *)chip + timed_figures[i].offset);
    return isfinite(v) && (timed_figures[i].rate ? v > 0 : v >= 0);
}

int sim_time_bad_figure(const pl_chip *chip, int scope)
{
    for (int i = 0; i < N_TIMED; i++)
        if (timed_figures[i].scope <= scope && !figure_ok(chip, i)) return i;
    return -1;
}

int sim_time_chip_problem(const pl_chip *chip, char *msg, size_t n)
{
    int i = sim_time_bad_figure(chip, 2);
    if (i < 0) return 0;
    const struct timed_figure *f = &timed_figures[i];
    snprintf(msg, n, "chip %s cannot be timed: %s = %g (pl_chip.%s); %s (a mesh's copies need ici_gbps > 0, a "
             "multislice mesh's dcn_gbps > 0 too)", chip->name, f->key,
             *(const double *)((const char *)chip + f->offset) / f->scale, f->field,
             f->rate ? "a rate must be finite and positive" : "a time must be finite and not negative");
    return 1;
}
