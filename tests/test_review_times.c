/* tests/test_review_times.c: the time targets of `tilesim review` (issue
 * 21). --ttft 1e-300s was accepted and shown as "TTFT 0 ms" while --ttft 0
 * was refused: one rule now, a time from 1 us to an hour with a unit, plain
 * decimal (no sign, space, hex float, inf or nan), shown as given. */
#include <criterion/criterion.h>
#include <string.h>

#include "run.h"

static th_run review(const char *ttft, const char *tpot)
{
    return TH_RUN("review", "--model", "llama3-8b", "--prompt", "8", "--context", "8", "--ttft", ttft, "--tpot", tpot,
                  "--chips", "1", "--batch", "1");
}

Test(review_times, a_time_out_of_range_or_not_plain_is_refused_by_name)
{
    static const char *const bad[] = {"1e-300s", "0", "0s", "0.5us", "0.0009ms", "3601s", "1e9ms", "nans", "nan",
                                      "infs", "-1s", "+1s", " 1s", "0x1p-3s", "1e400s", "s", "1 s", "1sec"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        for (int which = 0; which < 2; which++) {
            th_run r = which ? review("1s", bad[i]) : review(bad[i], "1s");
            const char *opt = which ? "--tpot" : "--ttft";
            cr_expect_eq(r.status, 2, "%s '%s': exit %d: %s%s", opt, bad[i], r.status, r.out, r.err);
            char want[96];
            snprintf(want, sizeof want, "%s '%s': want a time from 1us to an hour (3600s) with a unit", opt, bad[i]);
            cr_expect(strstr(r.err, want), "stderr lacks \"%s\": %s", want, r.err);
            th_run_free(&r);
        }
    }
}

/* the smallest target is shown as given, not rounded to "0 ms" */
Test(review_times, the_floor_is_accepted_and_shown_as_given)
{
    th_run r = review("1us", "0.001ms");
    cr_expect_eq(r.status, 1, "no configuration meets 1 us: %s%s", r.out, r.err);
    cr_expect(strstr(r.out, "targets TTFT 1.00 us, TPOT 1.00 us"), "%s", r.out);
    th_run_free(&r);
    r = review("500ms", "30ms");
    cr_expect(strstr(r.out, "targets TTFT 500 ms, TPOT 30.0 ms"), "%s", r.out);
    th_run_free(&r);
}
