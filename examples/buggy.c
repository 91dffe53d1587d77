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

static const char *code_name(int rc)
{
    static const char *names[] = {"PL_OK",        "PL_EINVAL",    "PL_EBLOCKSHAPE", "PL_EINDEXMAP",
                                  "PL_EVMEM",     "PL_EREVISIT",  "PL_EBOUNDS",     "PL_ERACE",
                                  "PL_EDEADLOCK", "PL_ENOMEM",    "PL_ESHAPE",      "PL_EDTYPE",
                                  "PL_ESPACE",    "PL_EVERIFY",   "PL_EPOISON",     "PL_EREADONLY"};
    return rc <= 0 && -rc < (int)(sizeof names / sizeof *names) ? names[-rc] : "PL_E?";
}

static void usage(FILE *f)
{
    fprintf(f, "usage: buggy [NAME|--list] [--strict] [--uninit nan|zero] [--oob raise|poison] [--no-checks]\n");
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
    pl_options opt = {0};
    const char *name = NULL;
    int list = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--list") == 0) list = 1;
        else if (strcmp(a, "--strict") == 0) opt.strict = 1;
        else if (strcmp(a, "--no-checks") == 0) opt.checks_off = 1;
        else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--uninit") == 0 || strcmp(a, "--oob") == 0) {
            const char *v = i + 1 < argc ? argv[++i] : NULL;
            int uninit = strcmp(a, "--uninit") == 0;
            if (!v) {
                fprintf(stderr, "buggy: %s needs a value (%s)\n", a, uninit ? "nan or zero" : "raise or poison");
                usage(stderr);
                return 2;
            }
            if (uninit && strcmp(v, "nan") == 0) opt.uninit = PL_UNINIT_NAN;
            else if (uninit && strcmp(v, "zero") == 0) opt.uninit = PL_UNINIT_ZERO;
            else if (!uninit && strcmp(v, "raise") == 0) opt.oob_reads = PL_OOB_RAISE;
            else if (!uninit && strcmp(v, "poison") == 0) opt.oob_reads = PL_OOB_POISON;
            else {
                fprintf(stderr, "buggy: unknown value '%s' for %s (want %s)\n", v, a,
                        uninit ? "nan or zero" : "raise or poison");
                usage(stderr);
                return 2;
            }
        } else if (a[0] == '-') {
            fprintf(stderr, "buggy: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        } else if (name) {
            fprintf(stderr, "buggy: one case at a time ('%s' and '%s')\n", name, a);
            usage(stderr);
            return 2;
        } else {
            name = a;
        }
    }
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
