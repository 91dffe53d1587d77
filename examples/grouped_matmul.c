/* examples/grouped_matmul.c: a grouped (MoE-style) matmul: the rows of X are
 * cut into ragged groups, group g multiplies by W[g]. The group offsets and
 * a host-built tile table (row block, group) arrive by scalar prefetch (rule
 * M5). Verified against cblas_sgemm per group.
 *
 *   grouped_matmul     the demo: four groups (one empty, one smaller than a block)
 *                      in f32 and bf16, then eight random ragged groups
 *   grouped_matmul M N K G BM BN BK [f32|bf16] [--sizes S1,S2,...] [--seed N] [--chip NAME] [--report]
 *
 * --sizes gives the G group sizes (summing to M; 0 is an empty group);
 * without it the sizes are a fixed pseudo-random function of --seed
 * (default 1), about a quarter of them empty. --report prints tilesim's full
 * report.
 *
 * The kernel and its call are in kernels/grouped_matmul.h.
 *
 * Exit status: 0 when every check passes, 1 when a result is wrong or the
 * checks found something, 2 for a bad command line or a call tilesim rejects.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/data.h"
#include "../kernel/pallas.h"
#include "../sim/tilesim.h"
#include "kernels/grouped_matmul.h"

#define PROG "grouped_matmul"
#define MAX_GROUPS 4096

typedef struct gm_case {
    int64_t m, n, k, g, bm, bn, bk;
    pl_dtype dt;
    const int64_t *sizes; /* g entries, or NULL: random from seed */
    int64_t seed;
    const char *chip;
    int report;
} gm_case;

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Run one case; returns 0 (pass), 1 (wrong result or a finding), 2 (rejected). */
static int run_case(const gm_case *gc)
{
    int64_t m = gc->m, n = gc->n, k = gc->k, G = gc->g;
    int64_t *sizes = malloc((size_t)G * sizeof *sizes);
    int32_t *offsets = malloc((size_t)(G + 1) * sizeof *offsets);
    size_t es = pl_dtype_size(gc->dt);
    void *x = ex_random_matrix(m * k, gc->dt, 1), *w = ex_random_matrix(G * k * n, gc->dt, 2);
    void *o = malloc((size_t)(m * n) * es);
    gm_tiles tiles = {0};
    int status = 0;
    char err[256];
    if (!sizes || !offsets || !x || !w || !o) {
        fprintf(stderr, PROG ": out of memory for %lldx%lldx%lld with %lld groups\n", (long long)m, (long long)n,
                (long long)k, (long long)G);
        status = 2;
        goto done;
    }
    if (gc->sizes) memcpy(sizes, gc->sizes, (size_t)G * sizeof *sizes);
    else gm_sizes_random(sizes, G, m, (uint64_t)gc->seed);
    if (gm_offsets_from_sizes(offsets, sizes, G) || gm_tiles_build(&tiles, offsets, G, m, gc->bm, err, sizeof err)) {
        fprintf(stderr, PROG ": %s\n", err);
        status = 2;
        goto done;
    }
    gm_params params;
    pl_call call;
    if (gm_call(&call, &params, &tiles, m, n, k, gc->bm, gc->bn, gc->bk, GM_N_OUTER, err, sizeof err)) {
        fprintf(stderr, PROG ": %s\n", err);
        status = 2;
        goto done;
    }
    for (int64_t e = 0; e < m * n; e++) pl_store_elem((char *)o + (size_t)e * es, gc->dt, NAN); /* unwritten shows */
    pl_array xa = PL_ARRAY(x, gc->dt, m, k), wa = PL_ARRAY(w, gc->dt, G, k, n), out = PL_ARRAY(o, gc->dt, m, n);
    pl_array args[5];
    gm_args(args, &tiles, &xa, &wa);

    printf("== grouped matmul %lldx%lldx%lld %s, %lld groups (%lld empty), blocks (bm, bn, bk) = (%lld, %lld, %lld)\n",
           (long long)m, (long long)n, (long long)k, pl_dtype_name(gc->dt), (long long)G, (long long)tiles.empty_groups,
           (long long)gc->bm, (long long)gc->bn, (long long)gc->bk);
    if (G <= 16) {
        printf("  group sizes:");
        for (int64_t g = 0; g < G; g++) printf(" %lld", (long long)sizes[g]);
        printf("\n");
    }
    int64_t rbs = cdiv(m, gc->bm), nj = cdiv(n, gc->bn);
    printf("  %lld tiles over %lld row blocks (%lld extra visit%s of row blocks shared by groups)\n",
           (long long)tiles.n_tiles, (long long)rbs, (long long)(tiles.n_tiles - rbs),
           tiles.n_tiles - rbs == 1 ? "" : "s");

    pl_options opt = {.chip = gc->chip};
    pl_report rep;
    int rc = pl_pallas_call(&call, args, &out, &opt, &rep);
    if (rc != PL_OK) {
        fprintf(stderr, PROG ": %s\n", rep.error);
        status = 2;
        goto done;
    }
    if (gc->report) pl_report_print(&rep, stdout);
    else {
        /* operands: offsets, tile_rb, tile_group, x, w, o */
        printf("  grid (%lld, %lld, %lld): %lld steps on %s\n", (long long)rep.grid[0], (long long)rep.grid[1],
               (long long)rep.grid[2], (long long)rep.steps, rep.chip->name);
        printf("  x copies %lld (%lld skipped), w copies %lld (%lld skipped), o write-backs %lld (%lld blocks)\n",
               (long long)rep.op[3].copies, (long long)rep.op[3].skipped, (long long)rep.op[4].copies,
               (long long)rep.op[4].skipped, (long long)rep.op[5].writebacks, (long long)(rbs * nj));
        printf("  MXU FLOPs %.4g (2MNK = %.4g), predicted %.2f us: %s\n", rep.mxu_flops,
               2.0 * (double)m * (double)n * (double)k, rep.time_s * 1e6, rep.bound_msg);
    }
    if (rep.n_findings) {
        printf("  the checks found %d problem%s:\n%s", rep.n_findings, rep.n_findings == 1 ? "" : "s", rep.warnings);
        status = 1;
    }
    if (gm_check(&tiles, &xa, &wa, &out, NULL, NULL, stdout) != PL_OK) status = 1;
done:
    if (status != 2) printf("  %s\n", status == 0 ? "PASS" : "FAIL");
    gm_tiles_free(&tiles);
    free(sizes), free(offsets), free(x), free(w), free(o);
    return status;
}

/* ---- the command line ------------------------------------------------------------- */

static int usage(FILE *f, int status)
{
    fprintf(f, "usage: " PROG " [M N K G BM BN BK [f32|bf16]] [--sizes S1,S2,...] [--seed N] [--chip NAME]"
               " [--report]\n"
               "  --sizes: the G group sizes, summing to M (0: an empty group)\n");
    return status;
}

static int parse_int(const char *s, const char *what, int64_t lo, int64_t *out)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || v < lo || v > (1LL << 31)) {
        fprintf(stderr, PROG ": %s must be a whole number from %lld to 2^31, got '%s'\n", what, (long long)lo, s);
        return -1;
    }
    *out = v;
    return 0;
}

/* "3,0,120": up to max sizes; returns the count or -1 after a message. */
static int64_t parse_sizes(const char *s, int64_t *sizes, int64_t max)
{
    int64_t n = 0;
    const char *p = s;
    for (;;) {
        char *end;
        long long v = strtoll(p, &end, 10);
        if (end == p || v < 0 || v > INT32_MAX || (*end && *end != ',')) {
            fprintf(stderr, PROG ": --sizes takes whole numbers >= 0 separated by commas, got '%s'\n", s);
            return -1;
        }
        if (n == max) {
            fprintf(stderr, PROG ": --sizes: more than %lld groups\n", (long long)max);
            return -1;
        }
        sizes[n++] = v;
        if (!*end) return n;
        p = end + 1;
    }
}

int main(int argc, char **argv)
{
    static int64_t sizes[MAX_GROUPS];
    gm_case gc = {.dt = PL_F32, .seed = 1};
    const char *pos[8], *sizes_arg = NULL;
    int npos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) return usage(stdout, 0);
        if (strcmp(a, "--seed") == 0 || strcmp(a, "--chip") == 0 || strcmp(a, "--sizes") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, PROG ": %s needs a value\n", a);
                return usage(stderr, 2);
            }
            const char *v = argv[++i];
            if (strcmp(a, "--chip") == 0) {
                if (!pl_chip_find(v)) {
                    fprintf(stderr, PROG ": --chip: unknown chip '%s'\n", v);
                    return 2;
                }
                gc.chip = v;
            } else if (strcmp(a, "--sizes") == 0) sizes_arg = v;
            else if (parse_int(v, "--seed", 1, &gc.seed)) return 2;
        } else if (strcmp(a, "--report") == 0) gc.report = 1;
        else if (a[0] == '-' && a[1] && !(a[1] >= '0' && a[1] <= '9')) {
            fprintf(stderr, PROG ": unknown option '%s'\n", a);
            return usage(stderr, 2);
        } else if (npos < 8) pos[npos++] = a;
        else {
            fprintf(stderr, PROG ": too many arguments ('%s')\n", a);
            return usage(stderr, 2);
        }
    }
    if (npos == 0) { /* the demo */
        static const int64_t four[4] = {300, 0, 37, 663};
        gm_case demos[3] = {
            {1000, 512, 768, 4, 128, 256, 256, PL_F32, four, 1, gc.chip, gc.report},
            {1000, 512, 768, 4, 128, 256, 256, PL_BF16, four, 1, gc.chip, gc.report},
            {2048, 512, 1024, 8, 256, 256, 512, PL_F32, NULL, gc.seed, gc.chip, gc.report},
        };
        if (sizes_arg) {
            fprintf(stderr, PROG ": --sizes needs M N K G BM BN BK\n");
            return usage(stderr, 2);
        }
        int worst = 0;
        for (int i = 0; i < 3; i++) {
            int s = run_case(&demos[i]);
            worst = s > worst ? s : worst;
            printf("\n");
        }
        return worst;
    }
    if (npos != 7 && npos != 8) {
        fprintf(stderr, PROG ": expected 7 or 8 arguments (M N K G BM BN BK [dtype]), got %d\n", npos);
        return usage(stderr, 2);
    }
    const char *names[7] = {"M", "N", "K", "G", "BM", "BN", "BK"};
    int64_t *dst[7] = {&gc.m, &gc.n, &gc.k, &gc.g, &gc.bm, &gc.bn, &gc.bk};
    for (int i = 0; i < 7; i++)
        if (parse_int(pos[i], names[i], 1, dst[i])) return 2;
    if (gc.g > MAX_GROUPS) {
        fprintf(stderr, PROG ": G must be at most %d, got %lld\n", MAX_GROUPS, (long long)gc.g);
        return 2;
    }
    if (npos == 8 && (pl_dtype_parse(pos[7], &gc.dt) || (gc.dt != PL_F32 && gc.dt != PL_BF16))) {
        fprintf(stderr, PROG ": dtype must be f32 or bf16, got '%s'\n", pos[7]);
        return 2;
    }
    if (sizes_arg) {
        int64_t n = parse_sizes(sizes_arg, sizes, MAX_GROUPS), total = 0;
        if (n < 0) return 2;
        if (n != gc.g) {
            fprintf(stderr, PROG ": --sizes lists %lld groups but G is %lld\n", (long long)n, (long long)gc.g);
            return 2;
        }
        for (int64_t g = 0; g < n; g++) total += sizes[g];
        if (total != gc.m) {
            fprintf(stderr, PROG ": --sizes adds up to %lld rows but M is %lld\n", (long long)total, (long long)gc.m);
            return 2;
        }
        gc.sizes = sizes;
    }
    return run_case(&gc);
}
