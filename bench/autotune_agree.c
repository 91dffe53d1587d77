/* bench/autotune_agree.c: does tilesim's tile advice agree with a hardware
 * autotuner's? (issue 22)
 *
 * bench/data/quant_matmul_autotuned.csv lists, per chip and shape, the
 * block sizes an autotuner chose for the production quantized matmul after
 * timing every candidate on a real TPU (v6e with int8 weights, v7x with fp8
 * and packed fp4 ones). For each shape this sweeps the built-in
 * quant_matmul, cost only, over what such an autotuner searches: bb every
 * power of two from 16 that divides batch, bo and bi every multiple of 128
 * that divides out and in; each configuration under the VMEM limit the
 * kernel itself sets (M4). It reports, per chip:
 *   - refused: shapes whose hardware choice tilesim rejects (goal 0);
 *   - within 5 %: shapes where the hardware's choice is predicted within
 *     5 % of tilesim's best (goal >= 80 %);
 *   - top: shapes where it is tilesim's best;
 * and the shapes it misses by most, with both configurations.
 *
 *     build/bench/autotune_agree [CSV] [--every N]
 *
 * --every N keeps every Nth shape (a quick look); the whole file takes
 * about a quarter of an hour on two cores.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../examples/kernels/registry.h"
#include "../sim/kdef.h"
#include "../sim/tilesim.h"

#define MAX_CANDS 64
#define MAX_ROWS 1024

typedef struct row {
    char chip[8], wdtype[16];
    int64_t batch, out, in, bb, bo, bi;
    double hw_s, best_s; /* predicted times; hw_s < 0: refused */
    int64_t best[3];
    char why[160];
} row;

/* Multiples of q that divide n (q = 0: powers of two from 16). */
static int cands(int64_t n, int64_t q, int64_t *c)
{
    int k = 0;
    if (q == 0) {
        for (int64_t d = 16; d <= n && k < MAX_CANDS; d *= 2)
            if (n % d == 0) c[k++] = d;
    } else {
        for (int64_t d = q; d <= n && k < MAX_CANDS; d += q)
            if (n % d == 0) c[k++] = d;
    }
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
    int nb = cands(r->batch, 0, cb), no = cands(r->out, 128, co), ni = cands(r->in, 128, ci);
    int n = nb * no * ni, np = d->n_params, hw = -1;
    int64_t base[PL_KDEF_MAX_PARAMS], *values = calloc((size_t)n * (size_t)np, sizeof *values);
    pl_report *reps = calloc((size_t)n, sizeof *reps);
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
    pl_options opt = {.chip = r->chip};
    pl_sweep_options sopt = {.vmem_limit_auto = 1};
    int rc = pl_kernel_sweep(d, n, values, &opt, &sopt, reps);
    r->best_s = -1;
    for (int i = 0; rc == PL_OK && i < n; i++)
        if (reps[i].status == PL_OK && (r->best_s < 0 || reps[i].time_s < r->best_s)) {
            r->best_s = reps[i].time_s;
            for (int k = 0; k < 3; k++) r->best[k] = values[(size_t)i * (size_t)np + (k == 0 ? ib : k == 1 ? io : ii)];
        }
    r->hw_s = -1;
    if (hw < 0) snprintf(r->why, sizeof r->why, "not a candidate");
    else if (reps[hw].status != PL_OK) snprintf(r->why, sizeof r->why, "%.150s", reps[hw].error);
    else r->hw_s = reps[hw].time_s;
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

static void summary(row *rows, int n, const char *chip)
{
    int total = 0, refused = 0, within = 0, top = 0;
    for (int i = 0; i < n; i++) {
        const row *r = &rows[i];
        if (strcmp(r->chip, chip)) continue;
        total++;
        if (r->hw_s < 0) refused++;
        else if (r->hw_s <= 1.05 * r->best_s) within++;
        if (r->hw_s >= 0 && r->hw_s <= r->best_s * (1 + 1e-12)) top++;
    }
    if (!total) return;
    printf("%s: %d shapes; hardware's choice refused %d, within 5%% of tilesim's best %d (%.1f%%; goal 80%%), "
           "tilesim's best %d\n", chip, total, refused, within, 100.0 * within / total, top);
}

int main(int argc, char **argv)
{
    const char *path = "bench/data/quant_matmul_autotuned.csv";
    int every = 1;
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--every") == 0 && a + 1 < argc) every = atoi(argv[++a]);
        else path = argv[a];
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
    printf("\nthe 12 shapes missed by most (batch x out x in, wdtype: hardware's bb/bo/bi, tilesim's best):\n");
    for (int i = 0; i < n && i < 12; i++) {
        const row *r = &rows[i];
        printf("  %s %5lld x %5lld x %5lld %-7s hw %lld/%lld/%lld ", r->chip, (long long)r->batch, (long long)r->out,
               (long long)r->in, r->wdtype, (long long)r->bb, (long long)r->bo, (long long)r->bi);
        if (r->hw_s < 0) printf("refused: %s\n", r->why);
        else printf("%.2f us, best %lld/%lld/%lld %.2f us (+%.1f%%)\n", r->hw_s * 1e6, (long long)r->best[0],
                    (long long)r->best[1], (long long)r->best[2], r->best_s * 1e6, 100 * (r->hw_s / r->best_s - 1));
    }
    return 0;
}
