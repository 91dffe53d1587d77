/* tests/test_cli_host_memory.c: a real run that needs more host memory than
 * this machine has is a call tilesim rejects, exit 2, from the kernel verbs
 * and the mesh programs alike (issue 21: `tilesim run matmul` exited 1 and
 * `tilesim run ring_allreduce` 2 for the same refusal). The sizes are far
 * beyond any host (2^20 squared f32 is 4 TiB a matrix), so the refusal comes
 * before anything is allocated. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"
#include "../sim/tilesim.h"

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

/* 2^62 f32 elements are 2^64 bytes: the byte count wrapped to 0, passed the
 * check, and the inputs were filled through a 1-byte allocation (exit 139) */
Test(cli_host_memory, an_array_whose_bytes_pass_2_to_the_64_is_refused_not_wrapped)
{
    th_run r = TH_RUN("run", "add", "--set", "rows=2147483648", "--set", "cols=2147483648");
    expect_refused(&r, "run add");
    r = TH_RUN("verify", "add", "--set", "rows=4294967296", "--set", "cols=1073741824");
    expect_refused(&r, "verify add");
}

Test(cli_host_memory, mesh_programs_refuse_with_exit_2)
{
    th_run r = TH_RUN("run", "ring_allreduce", "--rows", "1048576", "--cols", "1048576");
    expect_refused(&r, "run ring_allreduce");
    r = TH_RUN("run", "ring_allgather", "--rows", "1048576", "--cols", "1048576");
    expect_refused(&r, "run ring_allgather");
}

/* A cost-only walk keeps a record of every grid step: one of 2^24 steps
 * (bm = 8: the (8, 128) minimum) needs about 2.1 GiB for them. On a host
 * with 1 GiB to give (TILESIM_HOST_MEMORY, a cap the host check honours)
 * it stops at its first checkpoint (step 2^20) with what it would need,
 * exit 2, instead of growing until Linux kills it (a 2^28-step run grew
 * past 17 GB with no output). */
Test(cli_host_memory, a_cost_only_walk_whose_records_cannot_fit_stops_early, .timeout = 60)
{
    setenv("TILESIM_HOST_MEMORY", "1G", 1);
    th_run r = TH_RUN("run", "matmul", "--set", "M=8192", "--set", "N=16384", "--set", "K=16384", "--set", "bm=8",
                      "--set", "bn=128", "--set", "bk=128", "--cost-only");
    cr_expect_eq(r.status, 2, "exit %d: %s", r.status, r.err);
    cr_expect(strstr(r.err, "its 16777216 grid steps would need about 2.1 GiB") && strstr(r.err, "use larger blocks"),
              "%s", r.err);
    th_run_free(&r);
}

/* A TILESIM_HOST_MEMORY tilesim cannot read would leave no cap, silently:
 * it is refused, exit 2, naming the variable. */
Test(cli_host_memory, a_host_memory_cap_that_is_no_size_is_refused)
{
    const char *bad[] = {"100 M", "0.1G", "-100M", "0", "abc", "none"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        setenv("TILESIM_HOST_MEMORY", bad[i], 1);
        th_run r = TH_RUN("chips");
        cr_expect_eq(r.status, 2, "'%s': exit %d", bad[i], r.status);
        cr_expect(strstr(r.err, "TILESIM_HOST_MEMORY="), "'%s': %s", bad[i], r.err);
        th_run_free(&r);
    }
    setenv("TILESIM_HOST_MEMORY", "64G", 1);
    th_run r = TH_RUN("chips");
    cr_expect_eq(r.status, 0, "%s", r.err);
    th_run_free(&r);
}

/* A kernel that never returns from one grid point, looping over block ops,
 * grew its op log until Linux killed the process (4.6 GB after 200 s, past
 * TILESIM_HOST_MEMORY): it stops at an eighth of the host's memory, naming
 * the grid point. (This kernel stops by itself after 2^22 ops, so that a
 * broken cap fails the test instead of hanging it.) */
static void many_ops(pl_ctx *c, pl_ref *refs)
{
    for (int i = 0; i < 1 << 22; i++) pl_add(c, refs[1], refs[0], refs[0]);
}

Test(cli_host_memory, a_grid_point_of_endless_ops_stops_at_the_hosts_share, .timeout = 60)
{
    setenv("TILESIM_HOST_MEMORY", "64M", 1); /* read once, at this process's first call */
    pl_call call = {.name = "endless", .kernel = many_ops, .n_in = 1, .n_out = 1,
                    .in = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 8, 128)}, .out = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 8, 128)}};
    pl_array a = PL_ARRAY(NULL, PL_F32, 8, 128), o = PL_ARRAY(NULL, PL_F32, 8, 128);
    pl_options opt = {.cost_only = 1};
    pl_report rep;
    int rc = pl_pallas_call(&call, &a, &o, &opt, &rep);
    cr_expect_eq(rc, PL_ENOMEM, "%s", rep.error);
    cr_expect(strstr(rep.error, "block ops at grid point ()") && strstr(rep.error, "a loop that never ends"), "%s",
              rep.error);
}

/* What no estimate before the run sees (a cost-only mesh keeps every
 * device's records: 1,024 devices grew to 2.7 GB under a 512 MiB cap, 4,096
 * past 14 GB) is watched as the process grows: the run stops at three
 * quarters of what it may take besides what it held, exit 2. */
Test(cli_host_memory, a_cost_only_mesh_that_outgrows_the_cap_stops, .timeout = 60)
{
    setenv("TILESIM_HOST_MEMORY", "64M", 1); /* 256 devices: under a second, under AddressSanitizer too */
    th_run r = TH_RUN("run", "ring_allreduce", "--devices", "256", "--rows", "2048", "--cost-only");
    cr_expect_eq(r.status, 2, "exit %d: %s", r.status, r.err);
    cr_expect(strstr(r.err, "of host memory, past the") && strstr(r.err, "TILESIM_HOST_MEMORY"), "%s", r.err);
    th_run_free(&r);
}
