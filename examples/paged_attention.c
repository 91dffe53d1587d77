/* examples/paged_attention.c: decode attention over a paged KV cache, run on
 * tilesim and checked against a reference built on OpenBLAS.
 *
 *   paged_attention                 the demo: f32 and bf16, ragged lengths
 *   paged_attention LEN[,LEN...] [--page N] [--heads N] [--dim N] [--dtype f32|bf16] [--chip NAME]
 *                   [--trace FILE.json] [--no-checks] [--cost-only]
 *
 * The kernel is in kernels/paged_attention.h; its call, inputs and reference
 * are those of the "paged_attention" definition (kernels/attention.c), with
 * the lengths given here. Each run also runs again with copies landing only
 * when waited (M7): a kernel that read a page before waiting for it would
 * give other numbers, which the reference catches. --cost-only
 * times the call once without data (nothing to verify); a real run that
 * cannot fit in host memory is refused at once with the bytes it needs.
 *
 * Exit status: 0 when every check passes, 1 on a wrong result, 2 for a bad
 * command line or a call tilesim rejects.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/tilesim.h"
#include "kernels/frontend.h"
#include "kernels/options.h"
#include "kernels/paged_attention.h"
#include "kernels/registry.h"

#define MAX_SEQS 64
#define USAGE                                                                                              \
    "usage: paged_attention [LEN[,LEN...]] [--page N] [--heads N] [--dim N] [--dtype f32|bf16]\n"         \
    "                       [--chip NAME] [--trace FILE.json] [--no-checks] [--cost-only]\n"

typedef struct pa_case {
    int64_t n_seqs, lengths[MAX_SEQS], page, heads, dim;
    pl_dtype dt;
} pa_case;

/* pc as the values of the "paged_attention" definition (max_len: the
 * longest of the lengths, at least 1, which its check wants). */
static int values_of(const pa_case *pc, const ex_cmdline *cl, int64_t *v)
{
    static const char *const names[] = {"batch", "heads", "dim", "page", "max_len", "dtype"};
    int64_t max_len = 1;
    for (int64_t b = 0; b < pc->n_seqs; b++) max_len = pc->lengths[b] > max_len ? pc->lengths[b] : max_len;
    int64_t vals[] = {pc->n_seqs, pc->heads, pc->dim, pc->page, max_len, pc->dt};
    return ex_def_values(cl, &ex_def_paged, v, 6, names, vals) ? 2 : 0;
}

/* The lengths the program's build uses (definition callbacks take no user
 * pointer, and the program runs one case at a time). */
static const int64_t *case_lengths;

static int build_with_lengths(const int64_t *v, pl_kernel_build *b, char *msg, size_t n)
{
    return ex_paged_build(v, case_lengths, b, msg, n);
}

/* Run the definition again with copies landing only when waited (M7): a
 * kernel that read a page before waiting for it would give other numbers,
 * which the reference catches. Returns 0 or 1 (a read before a wait). */
static int check_on_wait(const pl_kernel_def *d, const int64_t *v, const ex_cmdline *cl)
{
    pl_options opt = cl->opt;
    opt.dma_mode = PL_DMA_ON_WAIT;
    opt.trace_path = NULL;
    pl_report rep;
    pl_check chk[PL_MAX_OPERANDS];
    int rc = pl_kernel_run(d, v, &opt, &rep, chk, NULL);
    if (rc == PL_OK) {
        printf("  copies landing only at their waits give a result that passes too: no read before a wait (M7, M8)\n");
        return 0;
    }
    printf("  copies landing only at their waits: %s (M7, M8)\n", rep.error[0] ? rep.error : pl_strerror(rc));
    if (rc == PL_EVERIFY) printf("    max abs err %.3g; the worst element is in %s\n", chk[0].max_abs_err, chk[0].blame);
    return 1;
}

static int run_case(const pa_case *pc, const ex_cmdline *cl)
{
    int64_t v[PL_KDEF_MAX_PARAMS];
    if (values_of(pc, cl, v)) return 2;
    if (!cl->opt.cost_only &&
        ex_check_host_memory(cl, "a real run",
                             pa_host_bytes(pc->lengths, pc->n_seqs, pc->page, pc->heads, pc->dim, pc->dt)))
        return 2;
    printf("== paged attention: %lld sequences of lengths", (long long)pc->n_seqs);
    for (int64_t b = 0; b < pc->n_seqs; b++) printf(" %lld", (long long)pc->lengths[b]);
    printf(", pages of %lld tokens, %lld heads x %lld, %s\n", (long long)pc->page, (long long)pc->heads,
           (long long)pc->dim, pl_dtype_name(pc->dt));
    pl_kernel_def d = ex_def_paged;
    d.build = build_with_lengths;
    case_lengths = pc->lengths;
    pl_report rep;
    int status = ex_def_status(ex_def_run(cl, &d, v, NULL, NULL, &rep, NULL), &rep);
    if (status == 0 && !cl->opt.cost_only) status = check_on_wait(&d, v, cl);
    case_lengths = NULL;
    if (status != 2 && cl->opt.cost_only) printf("  cost-only: nothing computed, nothing verified\n");
    return status;
}

enum { O_PAGE = 256, O_HEADS, O_DIM, O_DTYPE };

static int own_option(ex_cmdline *cl, int code, const char *arg, void *user)
{
    pa_case *pc = user;
    switch (code) {
    case O_PAGE: return ex_parse_int(cl, arg, "--page", 1, 4096, &pc->page);
    case O_HEADS: return ex_parse_int(cl, arg, "--heads", 1, 1024, &pc->heads);
    case O_DIM: return ex_parse_int(cl, arg, "--dim", 1, 4096, &pc->dim);
    default:
        if (pl_dtype_parse(arg, &pc->dt) || (pc->dt != PL_F32 && pc->dt != PL_BF16))
            return ex_usage_error(cl, "--dtype takes f32 or bf16, got '%s'", arg);
        return EX_PARSE_OK;
    }
}

/* "1,37,128": the sequence lengths. */
static int parse_lengths(pa_case *pc, const ex_cmdline *cl, const char *lens)
{
    char buf[1024];
    if (strlen(lens) >= sizeof buf) return ex_usage_error(cl, "the list of lengths is too long");
    snprintf(buf, sizeof buf, "%s", lens);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (pc->n_seqs == MAX_SEQS) return ex_usage_error(cl, "at most %d sequences", MAX_SEQS);
        if (ex_parse_int(cl, tok, "a length", 0, 1 << 20, &pc->lengths[pc->n_seqs++])) return EX_PARSE_ERROR;
    }
    if (!pc->n_seqs) return ex_usage_error(cl, "no lengths in '%s'", lens);
    return EX_PARSE_OK;
}

int main(int argc, char **argv)
{
    static const struct option own[] = {{"page", required_argument, NULL, O_PAGE},
                                        {"heads", required_argument, NULL, O_HEADS},
                                        {"dim", required_argument, NULL, O_DIM},
                                        {"dtype", required_argument, NULL, O_DTYPE},
                                        {0}};
    pa_case pc = {.page = 16, .heads = 8, .dim = 128, .dt = PL_F32};
    ex_cmdline cl = {.prog = "paged_attention", .usage = USAGE,
                     .accept = EX_CHIP | EX_TRACE | EX_NO_CHECKS | EX_COST_ONLY};
    int rc = ex_parse(&cl, argc, argv, own, own_option, &pc);
    if (rc) return rc == EX_PARSE_HELP ? 0 : 2;
    if (cl.npos > 1) return ex_usage_error(&cl, "one list of lengths, got %d arguments", cl.npos);
    if (cl.npos == 1) return parse_lengths(&pc, &cl, cl.pos[0]) ? 2 : run_case(&pc, &cl);
    static const int64_t demo[] = {1, 37, 128, 300, 0, 16};
    pc.n_seqs = 6;
    memcpy(pc.lengths, demo, sizeof demo);
    int worst = run_case(&pc, &cl);
    pc.dt = PL_BF16;
    printf("\n");
    int s = run_case(&pc, &cl);
    return s > worst ? s : worst;
}
