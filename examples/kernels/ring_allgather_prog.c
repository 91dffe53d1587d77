/* examples/kernels/ring_allgather_prog.c: the program examples/ring_allgather, also
 * `tilesim run ring_allgather`.
 *
 * A ring all-gather over N devices (rules M11,
 * M12), run SPMD by pl_mesh_call and checked against the concatenation of
 * the shards on every device.
 *
 *   ring_allgather [--devices N] [--rows R] [--cols C] [--chip NAME] [--seed S] [--cost-only] [--no-checks]
 *
 * Defaults: a ring of 8 devices, shards of (256, 1024) f32 (1 MiB). --seed S
 * runs the device threads in an order shuffled by S: the results must not
 * change. --cost-only times the ring without data (nothing to verify).
 *
 * Prints the mesh, one line per device (its time, the copies it started,
 * the bytes it moved, whether its o is the concatenation), the mesh's time
 * and ICI bytes against the closed form (N - 1) / N x total bytes / link
 * bandwidth, and the verdict.
 *
 * Exit status: 0 on PASS, 1 when a device's o is wrong, 2 for a bad command
 * line or a call tilesim rejects.
 */
#include "mesh_progs.h"
#include <stdio.h>
#include <stdlib.h>

#include "../../sim/tilesim.h"
#include "../../sim/tilesim_mesh.h"
#include "mesh_cli.h"
#include "ring_allgather.h"

#define USAGE                                                                                              \
    "usage: ring_allgather [--devices N] [--rows R] [--cols C] [--chip NAME | --chip-file FILE] [--seed S]\n"  \
    "                      [--cost-only] [--no-checks] [--trace FILE.json]\n"

typedef struct ra_cmd {
    ra_shape s;
    int64_t seed;
} ra_cmd;



/* Each device's wrong elements, counted where the device ran (across MPI
 * ranks, only there do its outputs exist) and shared. */
static void check_devices(const pl_mesh *mesh, const ra_data *d, int cost_only, double *bad)
{
    int first, count;
    pl_mesh_local_devices(mesh, &first, &count);
    for (int dev = first; dev < first + count; dev++) bad[dev] = cost_only ? 0 : (double)ra_device_mismatches(d, dev);
    pl_mesh_share(mesh, bad, 1);
}

static void print_devices(const ra_data *d, const pl_report *reps, int cost_only, const double *bad)
{
    for (int dev = 0; dev < d->s.devices; dev++) {
        const pl_report *r = &reps[dev];
        ex_mesh_device_line(dev, r);
        if (!cost_only) printf(bad[dev] > 0 ? ", o: %lld elements wrong" : ", o: the concatenation", (long long)bad[dev]);
        printf("\n");
    }
}

static void print_mesh(const ra_shape *s, const pl_mesh_report *mr, const pl_chip *chip)
{
    double closed = ra_closed_form_s(s, chip);
    printf("  mesh: %.2f us, %lld remote copies, %lld bytes over ICI\n", mr->time_s * 1e6,
           (long long)mr->remote_copies, (long long)mr->ici_bytes);
    ex_mesh_ranks_line(mr);
    if (closed > 0)
        printf("  closed form on %s: (N-1)/N x %lld bytes / %.1f GB/s per link = %.2f us; simulated / closed form = "
               "%.3f\n",
               chip->name, (long long)(s->devices * s->rows * s->cols * 4), chip->ici_bw / 1e9, closed * 1e6,
               mr->time_s / closed);
}

/* Run the ring; returns the exit status. */
static int run(const ra_cmd *rc, const ex_cmdline *cl)
{
    pl_mesh mesh;
    char buf[128];
    if (ex_ring_mesh("ring_allgather", rc->s.devices, &mesh) != PL_OK) return 2;
    int cost_only = cl->opt.cost_only;
    if (!cost_only && ex_mesh_check_memory(cl, &mesh, "the shards and outputs of every device", ra_host_bytes(&rc->s)))
        return 2;
    ra_data d;
    pl_report *reps = calloc((size_t)rc->s.devices, sizeof *reps);
    if (!reps || ra_alloc(&d, &rc->s, !cost_only, 42) != PL_OK) {
        fprintf(stderr, "ring_allgather: out of host memory\n");
        free(reps);
        return 2;
    }
    pl_call call;
    ra_call(&call, &rc->s, NULL);
    pl_options opt = cl->opt;
    opt.seed = (uint64_t)rc->seed;
    pl_mesh_report mr;
    printf("ring_allgather: %s, shards (%lld, %lld) f32, o (%lld, %lld) on every device\n",
           pl_mesh_format(&mesh, buf, sizeof buf), (long long)rc->s.rows, (long long)rc->s.cols,
           (long long)(rc->s.devices * rc->s.rows), (long long)rc->s.cols);
    int status = pl_mesh_call(&mesh, &call, d.args, d.outs, &opt, &mr, reps);
    double *bad = calloc((size_t)rc->s.devices, sizeof *bad);
    if (status != PL_OK || !bad) {
        fprintf(stderr, "ring_allgather: %s\n", !bad ? "out of host memory" : mr.error[0] ? mr.error : pl_strerror(status));
        status = 2;
    } else {
        check_devices(&mesh, &d, cost_only, bad);
        print_devices(&d, reps, cost_only, bad);
        print_mesh(&rc->s, &mr, ex_chip_of(&opt));
        int dev = -1;
        int64_t wrong = 0;
        for (int v = 0; v < rc->s.devices; v++) {
            if (bad[v] > 0 && dev < 0) dev = v;
            wrong += (int64_t)bad[v];
        }
        if (cost_only) printf("  cost only: no data to verify\n");
        else if (wrong) printf("FAIL: %lld elements wrong; the first on device %d\n", (long long)wrong, dev);
        else printf("PASS: every device holds the %d shards in order\n", rc->s.devices);
        status = wrong ? 1 : 0;
    }
    free(bad);
    ra_free(&d);
    free(reps);
    return status;
}

int ex_ring_allgather_main(int argc, char **argv)
{
    ex_cmdline cl = {.prog = "ring_allgather", .usage = USAGE,
                     .accept = EX_CHIP | EX_CHIP_FILE | EX_COST_ONLY | EX_NO_CHECKS | EX_TRACE};
    ex_mesh_args a = {.devices = 8, .rows = 256, .cols = 1024};
    int exit_code = ex_mesh_parse(&cl, argc, argv, 0, &a);
    if (exit_code >= 0) return exit_code;
    ra_cmd rc = {.s = {.devices = a.devices, .rows = a.rows, .cols = a.cols}, .seed = a.seed};
    return run(&rc, &cl);
}
