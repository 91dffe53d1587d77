/* examples/buggy.c: the buggy kernels gallery (kernels/buggy.h), run on
 * tilesim, to show what it says about each mistake.
 *
 *   buggy                    run every case
 *   buggy NAME               run one case
 *   buggy --list             list the cases
 *
 * Options (the verification options of pl_options): --strict (findings
 * become errors), --uninit nan|zero, --oob raise|poison, --no-checks.
 *
 * For each case: its name, the bug in one line, then what tilesim said: the
 * error with its code, or every finding with its rule.
 *
 * Exit status: 0 when tilesim caught every case it ran (an error or at least
 * one finding), 1 when some bug went unnoticed, 2 for a bad command line.
 */
#include <stdio.h>
#include <string.h>

#include "../kernel/pallas.h"
#include "../sim/tilesim.h"
#include "kernels/buggy.h"
#include "kernels/options.h"

/* "PL_EBOUNDS" for PL_EBOUNDS: the code's C name, as a user greps for it. */
static const char *code_name(int rc)
{
    static const char *names[] = {"PL_OK",        "PL_EINVAL",    "PL_EBLOCKSHAPE", "PL_EINDEXMAP", "PL_EVMEM",
                                  "PL_EREVISIT",  "PL_EBOUNDS",   "PL_ERACE",       "PL_EDEADLOCK", "PL_ENOMEM",
                                  "PL_ESHAPE",    "PL_EDTYPE",    "PL_ESPACE",      "PL_EVERIFY",   "PL_EPOISON",
                                  "PL_EREADONLY", "PL_ESEMAPHORE", "PL_ETILING"};
    _Static_assert(sizeof names / sizeof *names == 1 - PL_STATUS_MIN, "a name for every status code");
    return rc <= 0 && rc >= PL_STATUS_MIN ? names[-rc] : "PL_E?";
}

#define USAGE "usage: buggy [NAME|--list] [--strict] [--uninit nan|zero] [--oob raise|poison] [--no-checks]\n"

enum { OPT_LIST = 256 };

static int own_option(ex_cmdline *cl, int code, const char *arg, void *user)
{
    (void)cl, (void)arg;
    if (code == OPT_LIST) *(int *)user = 1;
    return 0;
}

/* Run one case and say what tilesim found; returns 1 if it was caught. */
static int run_one(const bug_case *bc, const pl_options *opt)
{
    pl_report rep;
    printf("== %s (rule %s)\n   bug: %s\n", bc->name, bc->rule, bc->bug);
    int rc = bc->run(opt, &rep);
    int caught = rc != PL_OK || rep.n_findings > 0;
    if (rc != PL_OK) printf("   tilesim: error %s (%s): %s\n", code_name(rc), pl_strerror(rc), rep.error);
    int kept = rep.n_findings < PL_MAX_FINDINGS ? rep.n_findings : PL_MAX_FINDINGS;
    for (int i = 0; i < kept; i++) printf("   tilesim: finding, rule %s: %s\n", rep.findings[i].rule, rep.findings[i].msg);
    if (rep.n_findings > kept) printf("   tilesim: ... and %d more findings\n", rep.n_findings - kept);
    printf("   => %s\n\n", caught ? "caught" : "NOT CAUGHT: tilesim said nothing");
    return caught;
}

int main(int argc, char **argv)
{
    static const struct option mine[] = {{"list", no_argument, NULL, OPT_LIST}, {0}};
    ex_cmdline cl = {.prog = "buggy", .usage = USAGE, .accept = EX_STRICT | EX_UNINIT | EX_OOB | EX_NO_CHECKS};
    int list = 0;
    int rc = ex_parse(&cl, argc, argv, mine, own_option, &list);
    if (rc != EX_PARSE_OK) return rc == EX_PARSE_HELP ? 0 : 2;
    if (cl.npos > 1) return ex_usage_error(&cl, "one case at a time ('%s' and '%s')", cl.pos[0], cl.pos[1]);
    const char *name = cl.npos ? cl.pos[0] : NULL;
    pl_options opt = cl.opt;
    int n;
    const bug_case *cases = bug_cases(&n);
    if (list) {
        for (int i = 0; i < n; i++) printf("%-22s %-7s %s\n", cases[i].name, cases[i].rule, cases[i].bug);
        return 0;
    }
    if (name) {
        const bug_case *bc = bug_find(name);
        if (!bc) {
            fprintf(stderr, "buggy: no case named '%s'; cases:", name);
            for (int i = 0; i < n; i++) fprintf(stderr, " %s", cases[i].name);
            fprintf(stderr, "\n");
            return 2;
        }
        return run_one(bc, &opt) ? 0 : 1;
    }
    int missed = 0;
    for (int i = 0; i < n; i++) missed += !run_one(&cases[i], &opt);
    printf("%d of %d bugs caught\n", n - missed, n);
    return missed ? 1 : 0;
}
