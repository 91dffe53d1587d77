/* examples/paged_attention.c: decode attention over a paged KV cache, run on
 * tilesim and checked against a reference built on OpenBLAS.
 *
 *   paged_attention                 the demo: f32 and bf16, ragged lengths
 *   paged_attention LEN[,LEN...] [--page N] [--heads N] [--dim N] [--dtype f32|bf16] [--chip NAME]
 *                   [--trace FILE.json] [--no-checks] [--cost-only]
 *
 * The kernel is in kernels/paged_attention.h. Each run also replays the call
 * with copies landing only when waited (pl_check_dma_modes): a kernel that
 * read a page before waiting for it would give other numbers. --cost-only
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
#include "kernels/options.h"
#include "kernels/paged_attention.h"

#define MAX_SEQS 64
#define USAGE                                                                                              \
    "usage: paged_attention [LEN[,LEN...]] [--page N] [--heads N] [--dim N] [--dtype f32|bf16]\n"         \
    "                       [--chip NAME] [--trace FILE.json] [--no-checks] [--cost-only]\n"

typedef struct pa_case {
    int64_t n_seqs, lengths[MAX_SEQS], page, heads, dim;
    pl_dtype dt;
} pa_case;

static int run_case(const pa_case *pc, const ex_cmdline *cl)
{
    if (!cl->opt.cost_only &&
        ex_check_host_memory(cl, "a real run",
                             pa_host_bytes(pc->lengths, pc->n_seqs, pc->page, pc->heads, pc->dim, pc->dt)))
        return 2;
    printf("== paged attention: %lld sequences of lengths", (long long)pc->n_seqs);
    for (int64_t b = 0; b < pc->n_seqs; b++) printf(" %lld", (long long)pc->lengths[b]);
    printf(", pages of %lld tokens, %lld heads x %lld, %s\n", (long long)pc->page, (long long)pc->heads,
           (long long)pc->dim, pl_dtype_name(pc->dt));
    pl_report rep;
    pl_check chk;
    int rc = pa_run(pc->lengths, pc->n_seqs, pc->page, pc->heads, pc->dim, pc->dt, &cl->opt, &rep, &chk, stdout);
    if (rc == PL_ERACE || rc == PL_EVERIFY) {
        if (rc == PL_ERACE) fprintf(stderr, "paged_attention: %s\n", rep.error);
        return 1;
    }
    if (rc) {
        fprintf(stderr, "paged_attention: %s\n", rc == PL_ENOMEM ? "out of memory" : rep.error);
        return 2;
    }
    if (cl->opt.cost_only) printf("  cost-only: nothing computed, nothing verified\n");
    return rep.n_findings ? 1 : 0;
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
