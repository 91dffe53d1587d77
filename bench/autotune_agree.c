/* bench/autotune_agree.c: does tilesim's tile advice agree with a hardware
 * autotuner's? (issue 22)
 *
 * bench/data/quant_matmul_autotuned.csv lists, per chip and shape, the
 * block sizes an autotuner chose for the production quantized matmul after
 * timing every candidate on a real TPU (v6e with int8 weights, v7x with fp8
 * and packed fp4 ones). For each shape this sweeps the built-in
 * quant_matmul, cost only, over what that autotuner searched (its
 * autotune.py, make_configs): bb the whole batch below 128 rows, else
 * every multiple of 128 that divides it; bo and bi every multiple of 128
 * that divides out and in. A configuration the production call could not
 * compile, its VMEM over the limit the kernel sets itself (min(estimate,
 * 96 MiB on v6e, 48 MiB on v7x); M4), the autotuner timed as failed: so
 * tilesim's best is taken over those under the kernel's own limit, as
 * `tilesim tune` picks. The hardware's choice is judged under physical
 * VMEM, since some rows were tuned under an earlier, higher cap. It
 * reports, per chip:
 *   - refused: shapes whose hardware choice tilesim rejects at physical
 *     VMEM (goal 0), and how many need more than the kernel's own limit;
 *   - within 5 %: shapes where the hardware's choice is predicted within
 *     5 % of tilesim's best (goal >= 80 %);
 *   - top: shapes where it is tilesim's best;
 *   - candidates refused by a rule other than VMEM (goal 0: the
 *     autotuner compiled and timed each one);
 * and the shapes it misses by most, with both configurations. As a
 * baseline it also ranks the same candidates, under the same limits, by
 * OpenXLA's published cost model of a Pallas matmul on these chips
 * (openxla_cost.h): how far a model of the MXU and the copies alone gets.
 *
 *     build/bench/autotune_agree [CSV] [--every N] [--all] [--chip-file F ...]
 *
 * --all lists every shape, not the 12 missed by most. --every N keeps
 * every Nth shape (a quick look); the whole file takes
 * about two minutes on two cores. --chip-file F (repeatable) times the rows
 * of F's base chip on the what-if chip F instead: how a calibration
 * experiment is judged.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../examples/kernels/registry.h"
#include "../sim/kdef.h"
#include "../sim/tilesim.h"
#include "openxla_cost.h"

#define MAX_CANDS 64
#define MAX_ROWS 1024
#define MAX_FILES 4

static pl_chip what_if[MAX_FILES]; /* --chip-file: replaces the preset whose name it keeps */
static char what_if_base[MAX_FILES][32];
static int n_what_if;

typedef struct row {
    char chip[8], wdtype[16];
    int64_t batch, out, in, bb, bo, bi;
    double hw_s, best_s; /* predicted times; hw_s < 0: refused */
    double ox_hw_s, ox_best_s; /* OpenXLA's cost model on the same candidates (openxla_cost.h) */
    int hw_over_own;     /* the hardware's choice needs more than the kernel's own limit */
    int cands, cand_refused; /* candidates searched; refused by a rule other than VMEM (M4) */
    char cand_why[160];      /* the first such refusal */
    int64_t best[3];
    char why[160];
} row;

/* Multiples of 128 that divide n; n itself when none does (a batch under
 * 128 rows: the autotuner tries only the whole batch). */
static int cands(int64_t n, int64_t *c)
{
    int k = 0;
    for (int64_t d = 128; d <= n && k < MAX_CANDS; d += 128)
        if (n % d == 0) c[k++] = d;
    if (!k) c[k++] = n;
    return k;
}

static int set(const pl_kernel_def *d, int64_t *v, const char *name, const char *value)
{
    char kv[64], msg[256];
    snprintf(kv, sizeof kv, "%s=%s", name, value);
    if (pl_kernel_set(d, v, kv, msg, sizeof msg) == PL_OK) return 0;
    fprintf(stderr, "autotune_agree: %s\n", msg);
    return -1;
}

static int set_int(const pl_kernel_def *d, int64_t *v, const char *name, int64_t x)
{
    char s[32];
    snprintf(s, sizeof s, "%lld", (long long)x);
    return set(d, v, name, s);
}

/* Sweep one shape; fill r's times. */
static int evaluate(const pl_kernel_def *d, row *r)
{
    int64_t cb[MAX_CANDS], co[MAX_CANDS], ci[MAX_CANDS];
    int nb = cands(r->batch, cb), no = cands(r->out, co), ni = cands(r->in, ci);
    int n = nb * no * ni, np = d->n_params, hw = -1;
    int64_t base[PL_KDEF_MAX_PARAMS], *values = calloc((size_t)(n + 1) * (size_t)np, sizeof *values);
    pl_report *reps = calloc((size_t)(n + 1), sizeof *reps);
    if (!values || !reps) return free(values), free(reps), -1;
    pl_kernel_defaults(d, base);
    if (set_int(d, base, "batch", r->batch) || set_int(d, base, "out", r->out) || set_int(d, base, "in", r->in) ||
        set(d, base, "wdtype", r->wdtype))
        return free(values), free(reps), -1;
    int ib = pl_kernel_param_index(d, "bb"), io = pl_kernel_param_index(d, "bo"), ii = pl_kernel_param_index(d, "bi");
    for (int i = 0; i < n; i++) {
        int64_t *v = values + (size_t)i * (size_t)np;
        memcpy(v, base, (size_t)np * sizeof *v);
        v[ib] = cb[i / (no * ni)], v[io] = co[i / ni % no], v[ii] = ci[i % ni];
        if (v[ib] == r->bb && v[io] == r->bo && v[ii] == r->bi) hw = i;
    }
    if (hw < 0) { /* outside the search above (one v7x row, from an older autotuner): time it too */
        int64_t *v = values + (size_t)n * (size_t)np;
        memcpy(v, base, (size_t)np * sizeof *v);
        v[ib] = r->bb, v[io] = r->bo, v[ii] = r->bi, hw = n++;
    }
    pl_options opt = {.chip = r->chip};
    for (int f = 0; f < n_what_if; f++)
        if (!strcmp(what_if_base[f], r->chip)) opt.chip_spec = &what_if[f];
    pl_sweep_options sopt = {.vmem_limit_auto = 1}; /* physical VMEM the wall: one sweep serves both limits */
    int rc = pl_kernel_sweep(d, n, values, &opt, &sopt, reps);
    const pl_chip *chip = opt.chip_spec ? opt.chip_spec : pl_chip_find(r->chip);
    r->best_s = -1;
    r->cands = n;
    for (int i = 0; rc == PL_OK && i < n; i++)
        if (reps[i].status != PL_OK && reps[i].status != PL_EVMEM && !r->cand_refused++)
            snprintf(r->cand_why, sizeof r->cand_why, "%.150s", reps[i].error);
    for (int i = 0; rc == PL_OK && i < n; i++)
        if (reps[i].status == PL_OK && reps[i].vmem_bytes <= d->vmem_limit(values + (size_t)i * (size_t)np, chip) &&
            (r->best_s < 0 || reps[i].time_s < r->best_s)) {
            r->best_s = reps[i].time_s;
            for (int k = 0; k < 3; k++) r->best[k] = values[(size_t)i * (size_t)np + (k == 0 ? ib : k == 1 ? io : ii)];
        }
    /* the baseline: OpenXLA's model over the candidates tilesim keeps (the same VMEM rule) */
    const ox_figures *ox = ox_figures_of(r->chip);
    int wbits = strcmp(r->wdtype, "f4e2m1") ? 8 : 4;
    r->ox_best_s = -1;
    for (int i = 0; ox && rc == PL_OK && i < n; i++) {
        const int64_t *v = values + (size_t)i * (size_t)np;
        if (reps[i].status != PL_OK || (i != hw && reps[i].vmem_bytes > d->vmem_limit(v, chip))) continue;
        double t = ox_seconds(ox, (double)r->batch, (double)r->out, (double)r->in, (double)v[ib], (double)v[io],
                              (double)v[ii], wbits);
        if (i == hw) r->ox_hw_s = t;
        if (r->ox_best_s < 0 || t < r->ox_best_s) r->ox_best_s = t;
    }
    r->hw_s = -1;
    if (reps[hw].status != PL_OK) snprintf(r->why, sizeof r->why, "%.150s", reps[hw].error);
    else {
        r->hw_s = reps[hw].time_s;
        r->hw_over_own = reps[hw].vmem_bytes > d->vmem_limit(values + (size_t)hw * (size_t)np, chip);
        if (r->best_s < 0 || r->hw_s < r->best_s) r->best_s = r->hw_s; /* ran on the chip: a candidate */
    }
    free(values), free(reps);
    return rc == PL_OK ? 0 : -1;
}

static int read_rows(const char *path, row *rows, int every)
{
    FILE *f = fopen(path, "r");
    if (!f) return fprintf(stderr, "autotune_agree: cannot open %s\n", path), -1;
    char line[256];
    int n = 0, seen = 0, lineno = 0;
    while (fgets(line, sizeof line, f) && n < MAX_ROWS) {
        lineno++;
        if (line[0] == '#' || strncmp(line, "chip,", 5) == 0 || line[0] == '\n') continue;
        row r = {0};
        long long b, o, i, bb, bo, bi;
        if (sscanf(line, "%7[^,],%lld,%lld,%lld,%15[^,],%lld,%lld,%lld", r.chip, &b, &o, &i, r.wdtype, &bb, &bo, &bi) !=
            8) {
            fprintf(stderr, "autotune_agree: %s:%d: not chip,batch,out,in,wdtype,bb,bo,bi\n", path, lineno);
            fclose(f);
            return -1;
        }
        r.batch = b, r.out = o, r.in = i, r.bb = bb, r.bo = bo, r.bi = bi;
        if (seen++ % every == 0) rows[n++] = r;
    }
    fclose(f);
    return n;
}

static int by_ratio(const void *a, const void *b)
{
    const row *x = a, *y = b;
    double rx = x->hw_s < 0 ? 1e9 : x->hw_s / x->best_s, ry = y->hw_s < 0 ? 1e9 : y->hw_s / y->best_s;
    return rx < ry ? 1 : rx > ry ? -1 : 0;
}

static int by_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The autotuner timed each candidate from the host, the whole jitted call
 * (tpu-inference autotune.py: perf_counter around fn(...).block_until_ready(),
 * the mean of 10 runs), which adds the host's dispatch: about 108 us on a
 * v5e in the Pallas guide's own notebook (bench/data/pallas_guide_v5e.csv).
 * Under SMALL_S of kernel time, 5 % is a few hundred ns in a measurement
 * of 100 us and more: the hardware's choice there is one of many within
 * its noise, so the agreement is shown apart for shorter and longer kernels. */
#define SMALL_S 20e-6

static void summary(row *rows, int n, const char *chip)
{
    int total = 0, refused = 0, over = 0, within = 0, within10 = 0, top = 0, k = 0, cands = 0, cand_refused = 0;
    int small = 0, small_within = 0; /* shapes whose best takes under SMALL_S */
    int ox_within = 0, ox_top = 0;    /* the baseline's */
    const char *cand_why = NULL;
    static double ratio[MAX_ROWS];
    for (int i = 0; i < n; i++) {
        const row *r = &rows[i];
        if (strcmp(r->chip, chip)) continue;
        total++;
        cands += r->cands, cand_refused += r->cand_refused;
        if (r->cand_refused && !cand_why) cand_why = r->cand_why;
        over += r->hw_over_own;
        if (r->hw_s < 0) {
            refused++;
            continue;
        }
        within += r->hw_s <= 1.05 * r->best_s;
        if (r->best_s < SMALL_S) small++, small_within += r->hw_s <= 1.05 * r->best_s;
        within10 += r->hw_s <= 1.10 * r->best_s;
        top += r->hw_s <= r->best_s * (1 + 1e-12);
        ox_within += r->ox_best_s > 0 && r->ox_hw_s <= 1.05 * r->ox_best_s;
        ox_top += r->ox_best_s > 0 && r->ox_hw_s <= r->ox_best_s * (1 + 1e-12);
        ratio[k++] = r->hw_s / r->best_s;
    }
    if (!total) return;
    qsort(ratio, (size_t)k, sizeof *ratio, by_double);
    printf("%s: %d shapes; hardware's choice refused %d (over the kernel's own limit %d), within 5%% of tilesim's "
           "best %d (%.1f%%; goal 80%%), tilesim's best %d\n",
           chip, total, refused, over, within, 100.0 * within / total, top);
    if (k)
        printf("     within 10%%: %d (%.1f%%); the hardware's choice over tilesim's best, median %.3f, 90th "
               "percentile %.3f\n",
               within10, 100.0 * within10 / total, ratio[k / 2], ratio[k * 9 / 10]);
    if (small < total - refused)
        printf("     by tilesim's best time: under %.0f us %d of %d within 5%% (%.1f%%), %.0f us and over %d of %d "
               "(%.1f%%)\n", SMALL_S * 1e6, small_within, small, small ? 100.0 * small_within / small : 0,
               SMALL_S * 1e6, within - small_within, total - refused - small,
               100.0 * (within - small_within) / (total - refused - small));
    printf("     baseline, OpenXLA's matmul cost model on the same candidates: within 5%% %d (%.1f%%), its best %d\n",
           ox_within, 100.0 * ox_within / total, ox_top);
    /* the autotuner compiled and timed every candidate: none may break a block rule */
    printf("     candidates searched %d, refused by a rule other than VMEM %d (goal 0)%s%s\n", cands, cand_refused,
           cand_why ? ", first: " : "", cand_why ? cand_why : "");
}

int main(int argc, char **argv)
{
    const char *path = "bench/data/quant_matmul_autotuned.csv";
    int every = 1, show = 12;
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--every") == 0 && a + 1 < argc) every = atoi(argv[++a]);
        else if (strcmp(argv[a], "--all") == 0) show = MAX_ROWS;
        else if (strcmp(argv[a], "--chip-file") == 0 && a + 1 < argc && n_what_if < MAX_FILES) {
            char err[512];
            if (pl_chip_load(argv[++a], &what_if[n_what_if], err, sizeof err) != PL_OK)
                return fprintf(stderr, "autotune_agree: %s\n", err), 2;
            /* the file's base preset: the one whose figures it starts from */
            const char *base = NULL;
            for (int c = 0; c < pl_chip_count(); c++)
                if (!strcmp(pl_chip_at(c)->name, what_if[n_what_if].name)) base = pl_chip_at(c)->name;
            if (!base) return fprintf(stderr, "autotune_agree: %s: name the chip as its base preset\n", argv[a]), 2;
            snprintf(what_if_base[n_what_if++], sizeof what_if_base[0], "%s", base);
        } else path = argv[a];
    }
    if (every < 1) every = 1;
    static row rows[MAX_ROWS];
    int n = read_rows(path, rows, every);
    if (n <= 0) return n < 0 ? 2 : 1;
    const pl_kernel_def *d = ex_kernel_find("quant_matmul");
    for (int i = 0; i < n; i++) {
        if (evaluate(d, &rows[i])) return fprintf(stderr, "autotune_agree: the sweep failed\n"), 1;
        fprintf(stderr, "\r%d/%d shapes", i + 1, n);
    }
    fprintf(stderr, "\n");
    printf("quant_matmul: the hardware autotuner's block sizes (%s) against tilesim's sweep\n\n", path);
    summary(rows, n, "v6e");
    summary(rows, n, "v7x");
    qsort(rows, (size_t)n, sizeof *rows, by_ratio);
    printf("\nthe %d shapes missed by most (batch x out x in, wdtype: hardware's bb/bo/bi, tilesim's best):\n",
           show < n ? show : n);
    for (int i = 0; i < n && i < show; i++) {
        const row *r = &rows[i];
        printf("  %s %5lld x %5lld x %5lld %-7s hw %lld/%lld/%lld ", r->chip, (long long)r->batch, (long long)r->out,
               (long long)r->in, r->wdtype, (long long)r->bb, (long long)r->bo, (long long)r->bi);
        if (r->hw_s < 0) printf("refused: %s\n", r->why);
        else printf("%.2f us, best %lld/%lld/%lld %.2f us (+%.1f%%)\n", r->hw_s * 1e6, (long long)r->best[0],
                    (long long)r->best[1], (long long)r->best[2], r->best_s * 1e6, 100 * (r->hw_s / r->best_s - 1));
    }
    return 0;
}
