/* examples/kernels/collective_matmul_prog.c: the program examples/collective_matmul, also
 * `tilesim run collective_matmul`.
 *
 * The all-gather matmul on a ring (rules
 * M7-M12), overlapped against unoverlapped, both checked against OpenBLAS
 * on every device.
 *
 *   collective_matmul [--devices N] [--rows M] [--k K] [--cols C] [--chip NAME] [--seed S] [--cost-only]
 *                     [--no-checks]
 *
 * x (N M, K) f32 is sharded by rows (M rows per device), w (K, C) f32 is on
 * every device, and every device computes out = all_gather(x) @ w. The
 * overlapped kernel multiplies the block it holds while the next one
 * travels round the ring; the unoverlapped one gathers all of x first, then
 * multiplies. Defaults: 8 devices, M 128, K 512, C 2048, where a block's
 * product (about 4 us on v5e) and its trip to the next device (about 7 us)
 * are of the same order, so that hiding one behind the other pays.
 *
 * Prints, per device, both times and both verdicts; then the two parts: the
 * compute part (the MXU time of the whole product, as the unoverlapped run
 * reports it) and the communication part (the ring all-gather of x alone,
 * kernels/ring_allgather.h, timed cost-only), each beside its closed form;
 * and whether the overlapped time is below the unoverlapped one and below
 * the sum of the parts.
 *
 * Exit status: 0 on PASS (both versions right on every device), 1 on a
 * wrong result, 2 for a bad command line or a call tilesim rejects.
 */
#include "mesh_progs.h"
#include <stdio.h>
#include <stdlib.h>

#include "../../sim/tilesim.h"
#include "../../sim/tilesim_mesh.h"
#include "collective_matmul.h"
#include "mesh_cli.h"
#include "ring_allgather.h"

#define USAGE                                                                                              \
    "usage: collective_matmul [--devices N] [--rows M] [--k K] [--cols C] [--chip NAME | --chip-file FILE]\n"     \
    "                         [--seed S] [--cost-only] [--no-checks]\n"                                              \
    "  x (N*M, K) sharded by rows over N devices, w (K, C) on every device; out = all_gather(x) @ w\n"

typedef struct cm_cmd {
    cm_shape s;
    int64_t seed;
} cm_cmd;

/* One version's run: its reports, mesh report and how many devices were right. */
typedef struct cm_run {
    pl_report *reps;
    pl_mesh_report mr;
    int status, right;
} cm_run;



/* Run version v on every device; checks each device's out unless cost-only. */
static int run_version(const pl_mesh *mesh, cm_data *d, cm_version v, const pl_options *opt, cm_run *r)
{
    pl_call call;
    cm_call(&call, &d->s, v, NULL);
    cm_reset(d);
    r->status = pl_mesh_call(mesh, &call, d->args, d->outs, opt, &r->mr, r->reps);
    if (r->status != PL_OK) {
        fprintf(stderr, "collective_matmul: %s: %s\n", call.name,
                r->mr.error[0] ? r->mr.error : pl_strerror(r->status));
        return 2;
    }
    /* each device checked where it ran (across MPI ranks, only there do its
     * outputs exist), the verdicts shared: ok, max error, normalised */
    double *ok = calloc((size_t)d->s.devices * 3, sizeof *ok);
    int first, count;
    pl_mesh_local_devices(mesh, &first, &count);
    for (int dev = first; ok && !opt->cost_only && dev < first + count; dev++) {
        pl_check chk;
        ok[3 * dev] = cm_check(d, dev, &chk, NULL) == PL_OK;
        ok[3 * dev + 1] = chk.max_abs_err, ok[3 * dev + 2] = chk.norm_err;
    }
    if (ok) pl_mesh_share(mesh, ok, 3);
    r->right = 0;
    for (int dev = 0; ok && !opt->cost_only && dev < d->s.devices; dev++) {
        r->right += ok[3 * dev] > 0;
        if (!(ok[3 * dev] > 0))
            printf("  %s, device %d: out differs from x @ w: max error %.3g, normalised %.3g\n", call.name, dev,
                   ok[3 * dev + 1], ok[3 * dev + 2]);
    }
    free(ok);
    return ok || opt->cost_only ? 0 : 2;
}

/* The communication part alone: the ring all-gather of x's blocks, cost-only. */
static double comm_part(const pl_mesh *mesh, const cm_shape *s, const pl_options *opt)
{
    ra_shape rs = {.devices = s->devices, .rows = s->rows, .cols = s->k};
    ra_data rd;
    pl_mesh_report mr;
    pl_call call;
    pl_options o = *opt;
    o.cost_only = 1;
    if (ra_alloc(&rd, &rs, 0, 1) != PL_OK) return -1;
    ra_call(&call, &rs, NULL);
    int rc = pl_mesh_call(mesh, &call, rd.args, rd.outs, &o, &mr, NULL);
    ra_free(&rd);
    if (rc != PL_OK) fprintf(stderr, "collective_matmul: the all-gather alone: %s\n", mr.error);
    return rc == PL_OK ? mr.time_s : -1;
}

static void print_times(const cm_shape *s, const cm_run *ov, const cm_run *un, double comm, const pl_chip *chip)
{
    for (int dev = 0; dev < s->devices; dev++)
        printf("  device %3d: overlapped %9.2f us, gather first %9.2f us\n", dev, ov->reps[dev].time_s * 1e6,
               un->reps[dev].time_s * 1e6);
    double t_ov = ov->mr.time_s, t_un = un->mr.time_s, compute = un->reps[0].mxu_s;
    printf("  mesh: overlapped %.2f us, gather first %.2f us (%lld bytes over ICI each)\n", t_ov * 1e6, t_un * 1e6,
           (long long)ov->mr.ici_bytes);
    ex_mesh_ranks_line(&ov->mr);
    printf("  links in use: overlapped %.2f of their peak, gather first %.2f (the same bytes in less time)\n",
           ov->mr.ici_bw_fraction, un->mr.ici_bw_fraction);
    printf("  compute part: %.2f us of MXU work per device (closed form 2 N M K C / f32 MXU rate: %.2f us)\n",
           compute * 1e6, cm_compute_s(s, chip) * 1e6);
    printf("  comm part: %.2f us, the ring all-gather of x alone (closed form (N-1) M K x 4 bytes / %.1f GB/s: "
           "%.2f us)\n",
           comm * 1e6, chip->ici_bw / 1e9, cm_comm_s(s, chip) * 1e6);
    printf("  the rest, in both: %.2f us (gather first - compute - comm: w's copy in, out's write-back, step "
           "overheads)\n",
           (t_un - compute - comm) * 1e6);
    printf("  overlapped < gather first: %s (%.2f us less); overlapped < compute + comm = %.2f us: %s\n",
           t_ov < t_un ? "yes" : "NO", (t_un - t_ov) * 1e6, (compute + comm) * 1e6,
           t_ov < compute + comm ? "yes" : "NO");
}

static int run(const cm_cmd *rc, const ex_cmdline *cl)
{
    pl_mesh mesh;
    char msg[256], buf[128];
    if (cm_shape_check(&rc->s, msg, sizeof msg) != PL_OK) return ex_usage_error(cl, "%s", msg);
    if (ex_ring_mesh("collective_matmul", rc->s.devices, &mesh) != PL_OK) return 2;
    int cost_only = cl->opt.cost_only, n = rc->s.devices;
    if (!cost_only && ex_mesh_check_memory(cl, &mesh, "x, w and every device's out", cm_host_bytes(&rc->s))) return 2;
    cm_data d;
    cm_run ov = {0}, un = {0};
    ov.reps = calloc((size_t)n, sizeof *ov.reps), un.reps = calloc((size_t)n, sizeof *un.reps);
    if (!ov.reps || !un.reps || cm_alloc(&d, &rc->s, !cost_only, 7) != PL_OK) {
        fprintf(stderr, "collective_matmul: out of host memory\n");
        free(ov.reps), free(un.reps);
        return 2;
    }
    pl_options opt = cl->opt;
    opt.seed = (uint64_t)rc->seed;
    printf("collective_matmul: %s, x (%lld, %lld) f32 in blocks of %lld rows, w (%lld, %lld), out (%lld, %lld) on "
           "every device\n",
           pl_mesh_format(&mesh, buf, sizeof buf), (long long)(n * rc->s.rows), (long long)rc->s.k,
           (long long)rc->s.rows, (long long)rc->s.k, (long long)rc->s.cols, (long long)(n * rc->s.rows),
           (long long)rc->s.cols);
    int status = run_version(&mesh, &d, CM_OVERLAPPED, &opt, &ov);
    if (!status) status = run_version(&mesh, &d, CM_GATHER_FIRST, &opt, &un);
    double comm = status ? -1 : comm_part(&mesh, &rc->s, &opt);
    if (!status && comm < 0) status = 2;
    if (!status) {
        print_times(&rc->s, &ov, &un, comm, ex_chip_of(&opt));
        if (cost_only) printf("  cost only: no data to verify\n");
        else if (ov.right == n && un.right == n)
            printf("PASS: both versions' out equal x @ w (OpenBLAS) on all %d devices\n", n);
        else printf("FAIL: overlapped right on %d of %d devices, gather first on %d\n", ov.right, n, un.right);
        status = cost_only || (ov.right == n && un.right == n) ? 0 : 1;
    }
    cm_free(&d);
    free(ov.reps), free(un.reps);
    return status;
}

int ex_collective_matmul_main(int argc, char **argv)
{
    ex_cmdline cl = {.prog = "collective_matmul", .usage = USAGE,
                     .accept = EX_CHIP | EX_CHIP_FILE | EX_COST_ONLY | EX_NO_CHECKS};
    ex_mesh_args a = {.devices = 8, .rows = 128, .k = 512, .cols = 2048};
    int exit_code = ex_mesh_parse(&cl, argc, argv, 1, &a);
    if (exit_code >= 0) return exit_code;
    cm_cmd rc = {.s = {.devices = a.devices, .rows = a.rows, .k = a.k, .cols = a.cols}, .seed = a.seed};
    return run(&rc, &cl);
}
