/* examples/block_sparse_matmul.c: a block-sparse (M x K) times dense (K x N)
 * matmul whose block table arrives by scalar prefetch (rule M5), verified
 * against cblas_sgemm on the dense equivalent, and compared with the dense
 * tiled matmul of the same shape (copies and predicted time).
 *
 *   block_sparse_matmul        the demo: 1024x512x2048 in (128, 256, 256) blocks,
 *                              25% of X's blocks present, in f32 then bf16
 *   block_sparse_matmul M N K BM BN BK DENSITY [f32|bf16] [--seed N] [--chip NAME] [--report]
 *                       [--trace FILE.json] [--no-checks] [--cost-only]
 *
 * DENSITY is the fraction of X's (BM, BK) blocks present, from 0 to 1; which
 * ones is a fixed shuffle of --seed (default 1). --report prints tilesim's
 * full report of the sparse call. --cost-only times the call without data
 * (the block table is built, nothing is verified); a real run that cannot
 * fit in host memory is refused at once with the bytes it needs.
 *
 * The kernel is in kernels/block_sparse.h; its call, inputs and reference are
 * those of the "block_sparse_matmul" definition (kernels/matmul_tables.c),
 * with DENSITY as given, and the dense comparison is the "matmul" definition.
 *
 * Exit status: 0 when every check passes, 1 when a result is wrong or the
 * checks found something, 2 for a bad command line or a call tilesim rejects.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/tilesim.h"
#include "kernels/block_sparse.h"
#include "kernels/frontend.h"
#include "kernels/options.h"
#include "kernels/registry.h"

#define PROG "block_sparse_matmul"

#define USAGE                                                                                               \
    "usage: " PROG " [M N K BM BN BK DENSITY [f32|bf16]] [--seed N] [--chip NAME] [--report]\n"             \
    "                           [--trace FILE.json] [--no-checks] [--cost-only]\n"                            \
    "  DENSITY: the fraction of X's (BM, BK) blocks present, 0 to 1\n"

typedef struct bs_case {
    int64_t m, n, k, bm, bn, bk;
    double density;
    pl_dtype dt;
    int64_t seed;
    int report;
} bs_case;

static double ratio(double a, double b) { return b > 0 ? a / b : 0; }

/* Host bytes a real run takes at its peak: x, y, o, the reference and the
 * check's widened copies. */
static double host_bytes(const bs_case *bc)
{
    double es = (double)pl_dtype_size(bc->dt), m = (double)bc->m, n = (double)bc->n, k = (double)bc->k;
    return es * (m * k + k * n + 2 * m * n) + 8 * (m * k + k * n) + 16 * m * n;
}

/* The density as the definition's whole percentage (its check and its ideal
 * FLOPs); the build takes the exact fraction. */
static int values_of(const bs_case *bc, const ex_cmdline *cl, int64_t *v)
{
    static const char *const names[] = {"M", "N", "K", "bm", "bn", "bk", "density", "pattern_seed", "dtype"};
    int64_t vals[] = {bc->m, bc->n, bc->k, bc->bm, bc->bn, bc->bk, llround(bc->density * 100), bc->seed, bc->dt};
    return ex_def_values(cl, &ex_def_block_sparse, v, 9, names, vals) ? 2 : 0;
}

/* The program's density (definition callbacks take no user pointer, and the
 * program runs one case at a time). */
static double case_density;

static int build_with_density(const int64_t *v, pl_kernel_build *b, char *msg, size_t n)
{
    return ex_block_sparse_build(v, case_density, b, msg, n);
}

/* The grid (or with --report the full report), then what the checks found. */
static void print_summary(const pl_report *rep, void *user)
{
    if (*(const int *)user) pl_report_print(rep, stdout);
    else printf("  grid (%lld, %lld, %lld): %lld steps on %s\n", (long long)rep->grid[0], (long long)rep->grid[1],
                (long long)rep->grid[2], (long long)rep->steps, rep->chip->name);
    if (rep->n_findings)
        printf("  the checks found %d problem%s:\n%s", rep->n_findings, rep->n_findings == 1 ? "" : "s", rep->warnings);
}

/* The "matmul" definition of the same shape and blocks, timed without data,
 * next to the sparse call. Returns 0, or 2 after saying why it failed. */
static int compare_dense(const bs_case *bc, const ex_cmdline *cl, const pl_report *rep)
{
    static const char *const names[] = {"M", "N", "K", "bm", "bn", "bk", "dtype"};
    int64_t vals[] = {bc->m, bc->n, bc->k, bc->bm, bc->bn, bc->bk, bc->dt}, v[PL_KDEF_MAX_PARAMS];
    pl_options dopt = {.chip = cl->opt.chip, .cost_only = 1};
    pl_report dense;
    if (ex_def_values(cl, &ex_def_matmul, v, 7, names, vals)) return 2;
    if (pl_kernel_run(&ex_def_matmul, v, &dopt, &dense, NULL, NULL) != PL_OK) {
        fprintf(stderr, PROG ": the dense comparison failed: %s\n", dense.error);
        return 2;
    }
    /* operands: prefetch0, prefetch1, x, y, o (sparse); x, y, o (dense) */
    int64_t sx = rep->op[2].copies, sy = rep->op[3].copies, dx = dense.op[0].copies, dy = dense.op[1].copies;
    printf("  vs the dense tiled matmul (cost-only), sparse / dense:\n");
    printf("    x copies   %8lld / %-8lld (%lld skipped by P2; %lld saved)\n", (long long)sx, (long long)dx,
           (long long)rep->op[2].skipped, (long long)(dx - sx));
    printf("    y copies   %8lld / %-8lld (%lld skipped by P2; %lld saved)\n", (long long)sy, (long long)dy,
           (long long)rep->op[3].skipped, (long long)(dy - sy));
    printf("    HBM bytes  %8.3g / %-8.3g (%.2fx less)\n", (double)rep->hbm_bytes, (double)dense.hbm_bytes,
           ratio((double)dense.hbm_bytes, (double)rep->hbm_bytes));
    printf("    MXU FLOPs  %8.3g / %-8.3g\n", rep->mxu_flops, dense.mxu_flops);
    printf("    time       %8.2f / %-8.2f us on %s (%.2fx faster); sparse: %s\n", rep->time_s * 1e6,
           dense.time_s * 1e6, rep->chip->name, ratio(dense.time_s, rep->time_s), rep->bound_msg);
    return 0;
}

/* What the block table holds, as the build draws it. */
static int print_header(const bs_case *bc)
{
    bs_pattern pat;
    int rc = bs_pattern_random(&pat, bc->m / bc->bm, bc->k / bc->bk, bc->density, (uint64_t)bc->seed);
    if (rc) {
        fprintf(stderr, PROG ": cannot build the block table: %s\n", pl_strerror(rc));
        return 2;
    }
    int64_t total = pat.row_blocks * pat.k_blocks;
    printf("== block-sparse matmul %lldx%lldx%lld %s, blocks (bm, bn, bk) = (%lld, %lld, %lld)\n", (long long)bc->m,
           (long long)bc->n, (long long)bc->k, pl_dtype_name(bc->dt), (long long)bc->bm, (long long)bc->bn,
           (long long)bc->bk);
    printf("  X: %lld of %lld blocks present (%.1f%%), at most %lld in a row block, %lld empty row block%s\n",
           (long long)pat.nnz, (long long)total, 100.0 * ratio((double)pat.nnz, (double)total), (long long)pat.max_row,
           (long long)pat.empty_rows, pat.empty_rows == 1 ? "" : "s");
    bs_pattern_free(&pat);
    return 0;
}

/* Run one case through the definition; returns 0 (pass), 1 (wrong result or
 * a finding), 2 (rejected). */
static int run_case(const bs_case *bc, const ex_cmdline *cl)
{
    int64_t v[PL_KDEF_MAX_PARAMS];
    if (values_of(bc, cl, v)) return 2;
    if (!cl->opt.cost_only && ex_check_host_memory(cl, "a real run", host_bytes(bc))) return 2;
    if (print_header(bc)) return 2;
    pl_kernel_def d = ex_def_block_sparse;
    d.build = build_with_density;
    case_density = bc->density;
    pl_report rep;
    int status = ex_def_status(ex_def_run(cl, &d, v, print_summary, (void *)&bc->report, &rep, NULL), &rep);
    if (status != 2 && cl->opt.cost_only) printf("  cost-only: nothing computed, nothing verified\n");
    if (status != 2 && compare_dense(bc, cl, &rep)) status = status ? status : 2;
    printf("  %s\n", status == 0 ? "PASS" : status == 1 ? "FAIL" : "REJECTED");
    return status;
}

/* ---- the command line ------------------------------------------------------------- */

enum { O_SEED = 256, O_REPORT };

static int own_option(ex_cmdline *cl, int code, const char *arg, void *user)
{
    bs_case *bc = user;
    if (code == O_SEED) return ex_parse_int(cl, arg, "--seed", 1, 1LL << 31, &bc->seed);
    bc->report = 1;
    return EX_PARSE_OK;
}

/* M N K BM BN BK DENSITY [dtype] into bc. */
static int parse_case(bs_case *bc, const ex_cmdline *cl)
{
    if (cl->npos != 7 && cl->npos != 8)
        return ex_usage_error(cl, "expected 7 or 8 arguments (M N K BM BN BK DENSITY [dtype]), got %d", cl->npos);
    const char *names[6] = {"M", "N", "K", "BM", "BN", "BK"};
    int64_t *dst[6] = {&bc->m, &bc->n, &bc->k, &bc->bm, &bc->bn, &bc->bk};
    for (int i = 0; i < 6; i++)
        if (ex_parse_int(cl, cl->pos[i], names[i], 1, 1LL << 31, dst[i])) return EX_PARSE_ERROR;
    char *end;
    bc->density = strtod(cl->pos[6], &end);
    if (end == cl->pos[6] || *end || !(bc->density >= 0 && bc->density <= 1))
        return ex_usage_error(cl, "DENSITY must be a number from 0 to 1, got '%s'", cl->pos[6]);
    if (cl->npos == 8 && (pl_dtype_parse(cl->pos[7], &bc->dt) || (bc->dt != PL_F32 && bc->dt != PL_BF16)))
        return ex_usage_error(cl, "dtype must be f32 or bf16, got '%s'", cl->pos[7]);
    if (bc->m % bc->bm)
        return ex_usage_error(cl, "M (%lld) must be a multiple of BM (%lld): X is sparse in whole blocks",
                              (long long)bc->m, (long long)bc->bm);
    if (bc->k % bc->bk)
        return ex_usage_error(cl, "K (%lld) must be a multiple of BK (%lld): X is sparse in whole blocks",
                              (long long)bc->k, (long long)bc->bk);
    return EX_PARSE_OK;
}

int main(int argc, char **argv)
{
    static const struct option own[] = {{"seed", required_argument, NULL, O_SEED},
                                        {"report", no_argument, NULL, O_REPORT},
                                        {0}};
    bs_case bc = {.dt = PL_F32, .seed = 1};
    ex_cmdline cl = {.prog = PROG, .usage = USAGE, .accept = EX_CHIP | EX_TRACE | EX_NO_CHECKS | EX_COST_ONLY};
    int rc = ex_parse(&cl, argc, argv, own, own_option, &bc);
    if (rc) return rc == EX_PARSE_HELP ? 0 : 2;
    if (cl.npos) return parse_case(&bc, &cl) ? 2 : run_case(&bc, &cl);
    int worst = 0; /* the demo */
    pl_dtype dts[2] = {PL_F32, PL_BF16};
    for (int i = 0; i < 2; i++) {
        bs_case d = bc;
        d.m = 1024, d.n = 512, d.k = 2048, d.bm = 128, d.bn = 256, d.bk = 256, d.density = 0.25, d.dt = dts[i];
        int s = run_case(&d, &cl);
        worst = s > worst ? s : worst;
        printf("\n");
    }
    return worst;
}
