/* tests/test_mesh_bound.c: the mesh report names its bound by the one rule
 * (sim/timing/bound.c, issue 22): a ring whose links run at 31% of peak, its time
 * going to copy and hop latencies, is latency-bound, not ICI-bound. */
#include <criterion/criterion.h>
#include <string.h>

#include "run.h"

Test(mesh_bound, a_ring_of_8_with_links_at_31_percent_is_latency_bound)
{
    th_run r = TH_RUN("run", "ring_allreduce", "--chip", "v5e", "--rows", "128", "--cost-only");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_not_null(strstr(r.out, "(0.31 of a link's peak); latency-bound: "), "%s", r.out);
    cr_assert_not_null(strstr(r.out, "(10.19 us, 30.7%)"), "the link's share, beside the verdict: %s", r.out);
    cr_assert_null(strstr(r.out, "ICI-bound"), "%s", r.out);
    th_run_free(&r);
}

/* At rows 1024 the busiest link carries 77% of the time: ICI-bound, and
 * the sentence gives the share that made it so. */
Test(mesh_bound, a_ring_with_busy_links_is_ici_bound)
{
    th_run r = TH_RUN("run", "ring_allreduce", "--chip", "v5e", "--cost-only");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_not_null(strstr(r.out, "ICI-bound: the busiest link carries 81.56 us of data over v5e at 45 GB/s, "
                                     "76.6% of the 106.51 us the mesh takes"), "%s", r.out);
    th_run_free(&r);
}
