/* examples/paged_attention.c: decode attention over a paged KV cache, run on
 * tilesim and checked against a reference built on OpenBLAS.
 *
 *   paged_attention                 the demo: f32 and bf16, ragged lengths
 *   paged_attention LEN[,LEN...] [--page N] [--heads N] [--dim N] [--dtype f32|bf16] [--chip NAME]
 *
 * The kernel is in kernels/paged_attention.h. Each run also replays the call
 * with copies landing only when waited (pl_check_dma_modes): a kernel that
 * read a page before waiting for it would give other numbers.
 *
 * Exit status: 0 when every check passes, 1 on a wrong result, 2 for a bad
 * command line or a call tilesim rejects.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/tilesim.h"
#include "kernels/paged_attention.h"

#define MAX_SEQS 64

typedef struct pa_case {
    int64_t n_seqs, lengths[MAX_SEQS], page, heads, dim;
    pl_dtype dt;
    const char *chip;
} pa_case;

static int run_case(const pa_case *pc)
{
    printf("== paged attention: %lld sequences of lengths", (long long)pc->n_seqs);
    for (int64_t b = 0; b < pc->n_seqs; b++) printf(" %lld", (long long)pc->lengths[b]);
    printf(", pages of %lld tokens, %lld heads x %lld, %s\n", (long long)pc->page, (long long)pc->heads,
           (long long)pc->dim, pl_dtype_name(pc->dt));
    pl_options opt = {.chip = pc->chip};
    pl_report rep;
    pl_check chk;
    int rc = pa_run(pc->lengths, pc->n_seqs, pc->page, pc->heads, pc->dim, pc->dt, &opt, &rep, &chk, stdout);
    if (rc == PL_ERACE || rc == PL_EVERIFY) {
        if (rc == PL_ERACE) fprintf(stderr, "paged_attention: %s\n", rep.error);
        return 1;
    }
    if (rc) {
        fprintf(stderr, "paged_attention: %s\n", rc == PL_ENOMEM ? "out of memory" : rep.error);
        return 2;
    }
    return rep.n_findings ? 1 : 0;
}

static int parse_count(const char *s, const char *what, int64_t max, int64_t *out)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || v < 0 || v > max) {
        fprintf(stderr, "paged_attention: %s must be a whole number from 0 to %lld, got '%s'\n", what, (long long)max, s);
        return -1;
    }
    *out = v;
    return 0;
}

int main(int argc, char **argv)
{
    pa_case pc = {.page = 16, .heads = 8, .dim = 128, .dt = PL_F32};
    const char *lens = NULL;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        int has = i + 1 < argc;
        if (strcmp(o, "-h") == 0 || strcmp(o, "--help") == 0) {
            printf("usage: paged_attention [LEN[,LEN...]] [--page N] [--heads N] [--dim N] [--dtype f32|bf16] "
                   "[--chip NAME]\n");
            return 0;
        } else if (o[0] != '-') lens = o;
        else if (!has) {
            fprintf(stderr, "paged_attention: %s needs a value\n", o);
            return 2;
        } else if (strcmp(o, "--page") == 0) {
            if (parse_count(argv[++i], "--page", 4096, &pc.page) || pc.page == 0) return 2;
        } else if (strcmp(o, "--heads") == 0) {
            if (parse_count(argv[++i], "--heads", 1024, &pc.heads) || pc.heads == 0) return 2;
        } else if (strcmp(o, "--dim") == 0) {
            if (parse_count(argv[++i], "--dim", 4096, &pc.dim) || pc.dim == 0) return 2;
        } else if (strcmp(o, "--chip") == 0) pc.chip = argv[++i];
        else if (strcmp(o, "--dtype") == 0) {
            if (pl_dtype_parse(argv[++i], &pc.dt) || (pc.dt != PL_F32 && pc.dt != PL_BF16)) {
                fprintf(stderr, "paged_attention: --dtype takes f32 or bf16, got '%s'\n", argv[i]);
                return 2;
            }
        } else {
            fprintf(stderr, "paged_attention: unknown option '%s'\n", o);
            return 2;
        }
    }
    if (lens) {
        char buf[1024];
        snprintf(buf, sizeof buf, "%s", lens);
        for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
            if (pc.n_seqs == MAX_SEQS) {
                fprintf(stderr, "paged_attention: at most %d sequences\n", MAX_SEQS);
                return 2;
            }
            if (parse_count(tok, "a length", 1 << 20, &pc.lengths[pc.n_seqs++])) return 2;
        }
        if (!pc.n_seqs) {
            fprintf(stderr, "paged_attention: no lengths in '%s'\n", lens);
            return 2;
        }
        return run_case(&pc);
    }
    static const int64_t demo[] = {1, 37, 128, 300, 0, 16};
    pc.n_seqs = 6;
    memcpy(pc.lengths, demo, sizeof demo);
    int worst = run_case(&pc);
    pc.dt = PL_BF16;
    printf("\n");
    int s = run_case(&pc);
    return s > worst ? s : worst;
}
