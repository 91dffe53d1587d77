/* tests/test_cli_host_memory.c: a real run that needs more host memory than
 * this machine has is a call tilesim rejects, exit 2, from the kernel verbs
 * and the mesh programs alike (issue 21: `tilesim run matmul` exited 1 and
 * `tilesim run ring_allreduce` 2 for the same refusal). The sizes are far
 * beyond any host (2^20 squared f32 is 4 TiB a matrix), so the refusal comes
 * before anything is allocated. */
#include <criterion/criterion.h>
#include <string.h>

#include "run.h"

static void expect_refused(th_run *r, const char *who)
{
    cr_expect_eq(r->status, 2, "%s: exit %d: %s", who, r->status, r->err);
    cr_expect(strstr(r->err, "of host memory, but only"), "%s: the message names the bytes: %s", who, r->err);
    cr_expect(strstr(r->err, "cost-only"), "%s: the way out: %s", who, r->err);
    th_run_free(r);
}

Test(cli_host_memory, run_and_verify_of_a_kernel_refuse_with_exit_2)
{
    th_run r = TH_RUN("run", "matmul", "--set", "M=1048576", "--set", "N=1048576", "--set", "K=1048576");
    expect_refused(&r, "run matmul");
    r = TH_RUN("verify", "matmul", "--set", "M=1048576", "--set", "N=1048576", "--set", "K=1048576");
    expect_refused(&r, "verify matmul");
}

Test(cli_host_memory, mesh_programs_refuse_with_exit_2)
{
    th_run r = TH_RUN("run", "ring_allreduce", "--rows", "1048576", "--cols", "1048576");
    expect_refused(&r, "run ring_allreduce");
    r = TH_RUN("run", "ring_allgather", "--rows", "1048576", "--cols", "1048576");
    expect_refused(&r, "run ring_allgather");
}
