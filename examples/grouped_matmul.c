/* examples/grouped_matmul.c: a grouped (MoE-style) matmul: the rows of X are
 * cut into ragged groups, group g multiplies by W[g]. The group offsets and
 * a host-built tile table (row block, group) arrive by scalar prefetch (rule
 * M5). Verified against cblas_sgemm per group.
 *
 *   grouped_matmul     the demo: four groups (one empty, one smaller than a block)
 *                      in f32 and bf16, then eight random ragged groups
 *   grouped_matmul M N K G BM BN BK [f32|bf16] [--sizes S1,S2,...] [--seed N] [--chip NAME] [--report]
 *                  [--trace FILE.json] [--no-checks] [--cost-only]
 *
 * --sizes gives the G group sizes (summing to M; 0 is an empty group);
 * without it the sizes are a fixed pseudo-random function of --seed
 * (default 1), about a quarter of them empty. --report prints tilesim's full
 * report. --cost-only times the call without data (the group tables are
 * built, nothing is verified); a real run that cannot fit in host memory is
 * refused at once with the bytes it needs.
 *
 * The kernel is in kernels/grouped_matmul.h; its call, inputs and reference
 * are those of the "grouped_matmul" definition (kernels/matmul_tables.c), with
 * the group sizes given here.
 *
 * Exit status: 0 when every check passes, 1 when a result is wrong or the
 * checks found something, 2 for a bad command line or a call tilesim rejects.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/tilesim.h"
#include "kernels/grouped_matmul.h"
#include "kernels/frontend.h"
#include "kernels/options.h"
#include "kernels/registry.h"

#define PROG "grouped_matmul"
#define MAX_GROUPS 4096
#define USAGE                                                                                                  \
    "usage: " PROG " [M N K G BM BN BK [f32|bf16]] [--sizes S1,S2,...] [--seed N] [--chip NAME] [--report]\n"  \
    "                      [--trace FILE.json] [--no-checks] [--cost-only]\n"                                  \
    "  --sizes: the G group sizes, summing to M (0: an empty group)\n"

typedef struct gm_case {
    int64_t m, n, k, g, bm, bn, bk;
    pl_dtype dt;
    const int64_t *sizes; /* g entries, or NULL: random from seed */
    int64_t seed;
    int report;
} gm_case;

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Host bytes a real run takes at its peak: x, w, o, the reference and the
 * check's widened copies. */
static double host_bytes(const gm_case *gc)
{
    double m = (double)gc->m, n = (double)gc->n, k = (double)gc->k, es = (double)pl_dtype_size(gc->dt);
    return es * (m * k + (double)gc->g * k * n + 2 * m * n) + 8 * (m * k + k * n) + 16 * m * n;
}

/* gc as the values of the "grouped_matmul" definition. */
static int values_of(const gm_case *gc, const ex_cmdline *cl, int64_t *v)
{
    static const char *const names[] = {"M", "N", "K", "G", "bm", "bn", "bk", "sizes_seed", "dtype"};
    int64_t vals[] = {gc->m, gc->n, gc->k, gc->g, gc->bm, gc->bn, gc->bk, gc->seed, gc->dt};
    return ex_def_values(cl, &ex_def_grouped, v, 9, names, vals) ? 2 : 0;
}

static void print_header(const gm_case *gc, const int64_t *sizes)
{
    int64_t G = gc->g, empty = 0;
    for (int64_t g = 0; g < G; g++) empty += sizes[g] == 0;
    printf("== grouped matmul %lldx%lldx%lld %s, %lld groups (%lld empty), blocks (bm, bn, bk) = (%lld, %lld, %lld)\n",
           (long long)gc->m, (long long)gc->n, (long long)gc->k, pl_dtype_name(gc->dt), (long long)G, (long long)empty,
           (long long)gc->bm, (long long)gc->bn, (long long)gc->bk);
    if (G <= 16) {
        printf("  group sizes:");
        for (int64_t g = 0; g < G; g++) printf(" %lld", (long long)sizes[g]);
        printf("\n");
    }
}

/* The tiles, then the summary (or with --report the full report), then
 * what the checks found. */
static void print_summary(const pl_report *rep, void *user)
{
    const gm_case *gc = user;
    int64_t rbs = cdiv(gc->m, gc->bm), nj = cdiv(gc->n, gc->bn), n_tiles = rep->grid[1]; /* grid (N/bn, tiles, K/bk) */
    printf("  %lld tiles over %lld row blocks (%lld extra visit%s of row blocks shared by groups)\n",
           (long long)n_tiles, (long long)rbs, (long long)(n_tiles - rbs), n_tiles - rbs == 1 ? "" : "s");
    if (gc->report) {
        pl_report_print(rep, stdout);
    } else { /* operands: offsets, tile_rb, tile_group, x, w, o */
        printf("  grid (%lld, %lld, %lld): %lld steps on %s\n", (long long)rep->grid[0], (long long)rep->grid[1],
               (long long)rep->grid[2], (long long)rep->steps, rep->chip->name);
        printf("  x copies %lld (%lld skipped), w copies %lld (%lld skipped), o write-backs %lld (%lld blocks)\n",
               (long long)rep->op[3].copies, (long long)rep->op[3].skipped, (long long)rep->op[4].copies,
               (long long)rep->op[4].skipped, (long long)rep->op[5].writebacks, (long long)(rbs * nj));
        printf("  MXU FLOPs %.4g (2MNK = %.4g), predicted %.2f us: %s\n", rep->mxu_flops,
               2.0 * (double)gc->m * (double)gc->n * (double)gc->k, rep->time_s * 1e6, rep->bound_msg);
    }
    if (rep->n_findings)
        printf("  the checks found %d problem%s:\n%s", rep->n_findings, rep->n_findings == 1 ? "" : "s", rep->warnings);
}

/* The sizes the program's build uses: definition callbacks take no user
 * pointer, and the program runs one case at a time. */
static const int64_t *case_sizes;

static int build_with_sizes(const int64_t *v, pl_kernel_build *b, char *msg, size_t n)
{
    return ex_grouped_build(v, case_sizes, b, msg, n);
}

/* Run one case through the definition, with the group sizes given or drawn
 * from --seed; returns 0 (pass), 1 (wrong result or a finding), 2 (rejected). */
static int run_case(const gm_case *gc, const ex_cmdline *cl)
{
    int64_t v[PL_KDEF_MAX_PARAMS];
    if (values_of(gc, cl, v)) return 2;
    if (!cl->opt.cost_only && ex_check_host_memory(cl, "a real run", host_bytes(gc))) return 2;
    int64_t *sizes = malloc((size_t)gc->g * sizeof *sizes);
    if (!sizes) {
        fprintf(stderr, PROG ": out of memory for %lld groups\n", (long long)gc->g);
        return 2;
    }
    if (gc->sizes) memcpy(sizes, gc->sizes, (size_t)gc->g * sizeof *sizes);
    else gm_sizes_random(sizes, gc->g, gc->m, (uint64_t)gc->seed);
    print_header(gc, sizes);
    pl_kernel_def d = ex_def_grouped;
    d.build = build_with_sizes;
    case_sizes = sizes;
    pl_report rep;
    int status = ex_def_status(ex_def_run(cl, &d, v, print_summary, (void *)gc, &rep, NULL), &rep);
    case_sizes = NULL;
    free(sizes);
    if (status == 2) return 2;
    if (cl->opt.cost_only) printf("  cost-only: nothing computed, nothing verified\n");
    printf("  %s\n", status == 0 ? "PASS" : "FAIL");
    return status;
}

/* ---- the command line ------------------------------------------------------------- */

/* "3,0,120": up to max sizes; returns the count or -1 after a message. */
static int64_t parse_sizes(const ex_cmdline *cl, const char *s, int64_t *sizes, int64_t max)
{
    int64_t n = 0;
    const char *p = s;
    for (;;) {
        size_t len = strcspn(p, ",");
        int64_t v;
        if (ex_scan_int(p, len, 0, INT32_MAX, &v) != EX_NUM_OK) {
            ex_usage_error(cl, "--sizes takes whole numbers from 0 to %d separated by commas, got '%.40s%s'",
                           INT32_MAX, s, strlen(s) > 40 ? "..." : "");
            return -1;
        }
        if (n == max) {
            ex_usage_error(cl, "--sizes: more than %lld groups", (long long)max);
            return -1;
        }
        sizes[n++] = v;
        if (!p[len]) return n;
        p += len + 1;
    }
}

enum { O_SIZES = 256, O_SEED, O_REPORT };

typedef struct gm_cmd {
    gm_case gc;
    const char *sizes_arg;
} gm_cmd;

static int own_option(ex_cmdline *cl, int code, const char *arg, void *user)
{
    gm_cmd *c = user;
    switch (code) {
    case O_SIZES: c->sizes_arg = arg; return EX_PARSE_OK;
    case O_SEED: return ex_parse_int(cl, arg, "--seed", 1, 1LL << 31, &c->gc.seed);
    default: c->gc.report = 1; return EX_PARSE_OK;
    }
}

/* M N K G BM BN BK [dtype] and --sizes into c->gc. */
static int parse_case(gm_cmd *c, const ex_cmdline *cl, int64_t *sizes)
{
    gm_case *gc = &c->gc;
    if (cl->npos != 7 && cl->npos != 8)
        return ex_usage_error(cl, "expected 7 or 8 arguments (M N K G BM BN BK [dtype]), got %d", cl->npos);
    const char *names[7] = {"M", "N", "K", "G", "BM", "BN", "BK"};
    int64_t *dst[7] = {&gc->m, &gc->n, &gc->k, &gc->g, &gc->bm, &gc->bn, &gc->bk};
    for (int i = 0; i < 7; i++)
        if (ex_parse_int(cl, cl->pos[i], names[i], 1, i == 3 ? MAX_GROUPS : 1LL << 31, dst[i])) return EX_PARSE_ERROR;
    if (cl->npos == 8 && (pl_dtype_parse(cl->pos[7], &gc->dt) || (gc->dt != PL_F32 && gc->dt != PL_BF16)))
        return ex_usage_error(cl, "dtype must be f32 or bf16, got '%s'", cl->pos[7]);
    if (!c->sizes_arg) return EX_PARSE_OK;
    int64_t n = parse_sizes(cl, c->sizes_arg, sizes, MAX_GROUPS), total = 0;
    if (n < 0) return EX_PARSE_ERROR;
    if (n != gc->g)
        return ex_usage_error(cl, "--sizes lists %lld groups but G is %lld", (long long)n, (long long)gc->g);
    for (int64_t g = 0; g < n; g++) total += sizes[g];
    if (total != gc->m)
        return ex_usage_error(cl, "--sizes adds up to %lld rows but M is %lld", (long long)total, (long long)gc->m);
    gc->sizes = sizes;
    return EX_PARSE_OK;
}

int main(int argc, char **argv)
{
    static int64_t sizes[MAX_GROUPS];
    static const struct option own[] = {{"sizes", required_argument, NULL, O_SIZES},
                                        {"seed", required_argument, NULL, O_SEED},
                                        {"report", no_argument, NULL, O_REPORT},
                                        {0}};
    gm_cmd c = {.gc = {.dt = PL_F32, .seed = 1}};
    ex_cmdline cl = {.prog = PROG, .usage = USAGE, .accept = EX_CHIP | EX_TRACE | EX_NO_CHECKS | EX_COST_ONLY};
    int rc = ex_parse(&cl, argc, argv, own, own_option, &c);
    if (rc) return rc == EX_PARSE_HELP ? 0 : 2;
    if (cl.npos) return parse_case(&c, &cl, sizes) ? 2 : run_case(&c.gc, &cl);
    if (c.sizes_arg) return ex_usage_error(&cl, "--sizes needs M N K G BM BN BK");
    static const int64_t four[4] = {300, 0, 37, 663};
    gm_case demos[3] = {
        {1000, 512, 768, 4, 128, 256, 256, PL_F32, four, 1, c.gc.report},
        {1000, 512, 768, 4, 128, 256, 256, PL_BF16, four, 1, c.gc.report},
        {2048, 512, 1024, 8, 256, 256, 512, PL_F32, NULL, c.gc.seed, c.gc.report},
    };
    int worst = 0;
    for (int i = 0; i < 3; i++) {
        int s = run_case(&demos[i], &cl);
        worst = s > worst ? s : worst;
        printf("\n");
    }
    return worst;
}
