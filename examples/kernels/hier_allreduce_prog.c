/* examples/kernels/hier_allreduce_prog.c: the program examples/hier_allreduce,
 * also `tilesim run hier_allreduce`.
 *
 * The hierarchical all-reduce of hier_allreduce.h over a multislice mesh
 * (rule M14), checked against the elementwise sum on every device, then
 * timed against a flat ring (ring_allreduce.h, bidirectional) over the same
 * devices in number order, whose ring crosses between slices at every
 * slice boundary:
 *
 *   hier_allreduce [--mesh dcn:S x SLICE] [--rows R] [--cols C] [--chip NAME | --chip-file FILE] [--seed S]
 *                  [--cost-only] [--no-checks] [--trace FILE.json] [--digest]
 *
 * Defaults: 'dcn:2 x 4x4' (two slices of 16 chips; on v5e two hosts each),
 * x and o (1024, 1024) f32 on every device. Prints both meshes' times, the
 * traffic over DCN per pair of slices, the busiest host NIC against its
 * closed form, and the verdict.
 *
 * Exit status: 0 on PASS, 1 when a device's o is wrong, 2 for a bad command
 * line or a call tilesim rejects.
 */
#include <stdio.h>
#include <stdlib.h>

#include "../../sim/tilesim.h"
#include "../../sim/tilesim_mesh.h"
#include "hier_allreduce.h"
#include "mesh_cli.h"
#include "mesh_progs.h"
#include "ring_allreduce.h"

#define USAGE                                                                                                   \
    "usage: hier_allreduce [--mesh 'dcn:S x SLICE'] [--rows R] [--cols C] [--chip NAME | --chip-file FILE]\n"  \
    "                      [--seed S] [--cost-only] [--no-checks] [--trace FILE.json] [--digest]\n"              \
    "  R must be a multiple of 8 x the mesh's devices (a chunk a device of a slice, a piece a slice)\n"

/* The DCN lines of a mesh report (the Megascale view). */
static void print_dcn(const char *what, const pl_mesh_report *mr)
{
    printf("  %s: %.2f us; %lld copies over DCN, %.0f bytes; the busiest host NIC %.2f us (%.1f%% of the run); "
           "a device waited at most %.2f us on DCN\n", what, mr->time_s * 1e6, (long long)mr->dcn_copies,
           mr->dcn_bytes, mr->dcn_busiest_s * 1e6, 100 * mr->busy[PL_BOUND_DCN], mr->dcn_wait_s * 1e6);
    for (int i = 0; i < PL_MESH_MAX_SLICES; i++)
        for (int j = 0; j < PL_MESH_MAX_SLICES; j++)
            if (mr->dcn_pair_bytes[i][j] > 0)
                printf("    slice %d -> slice %d: %.0f bytes\n", i, j, mr->dcn_pair_bytes[i][j]);
}

/* The flat ring over the same devices, cost only: its time. */
static int flat_ring(const pl_mesh *mesh, const ha_shape *s, const pl_options *base, pl_mesh_report *mr)
{
    ar_shape as = {.devices = pl_mesh_devices(mesh), .rows = s->rows, .cols = s->cols};
    ar_data d;
    if (ar_alloc(&d, &as, 0, 1) != PL_OK) return PL_ENOMEM;
    pl_call call;
    ar_call(&call, &as, NULL);
    pl_options opt = *base;
    opt.cost_only = 1, opt.trace_path = NULL;
    pl_report *reps = calloc((size_t)as.devices, sizeof *reps);
    int rc = reps ? pl_mesh_call(mesh, &call, d.args, d.outs, &opt, mr, reps) : PL_ENOMEM;
    free(reps);
    ar_free(&d);
    return rc;
}

static int verdict(const pl_mesh *mesh, const ar_data *d, int cost_only)
{
    if (cost_only) {
        printf("  cost only: no data to verify\n");
        return 0;
    }
    int first, count;
    pl_mesh_local_devices(mesh, &first, &count);
    int n = pl_mesh_devices(mesh);
    int64_t elems = d->s.rows * d->s.cols;
    double *v = calloc((size_t)n * 2, sizeof *v), *ref = malloc((size_t)elems * sizeof *ref);
    double *mag = malloc((size_t)elems * sizeof *mag);
    if (!v || !ref || !mag) return free(v), free(ref), free(mag), fprintf(stderr, "hier_allreduce: out of host memory\n"), 2;
    ar_reference(d, ref, mag); /* once: every device holds the same sum */
    for (int dev = first; dev < first + count; dev++) {
        ar_error e = {.first_device = -1, .first_elem = -1};
        ar_verify_device(d, dev, ref, mag, &e);
        v[2 * dev] = (double)e.bad, v[2 * dev + 1] = e.norm_err;
    }
    free(ref), free(mag);
    pl_mesh_share(mesh, v, 2);
    int64_t bad = 0;
    double worst = 0;
    for (int dev = 0; dev < n; dev++) {
        if (v[2 * dev] < 0) return free(v), fprintf(stderr, "hier_allreduce: out of host memory\n"), 2;
        bad += (int64_t)v[2 * dev];
        if (!(v[2 * dev + 1] <= worst)) worst = v[2 * dev + 1];
    }
    free(v);
    if (bad) {
        printf("FAIL: %lld elements differ from the sum over the %d devices by more than (N-1) u sum|x|\n",
               (long long)bad, n);
        return 1;
    }
    printf("PASS: every device holds the sum over the %d devices (%.2f of the f32 bound)\n", n, worst);
    return 0;
}

static int run(const pl_mesh *mesh, const ha_shape *s, const ex_cmdline *cl, int64_t seed, int digest)
{
    char msg[256], buf[160];
    if (ha_shape_check(s, msg, sizeof msg) != PL_OK) return ex_usage_error(cl, "%s", msg), 2;
    int cost_only = cl->opt.cost_only, n = pl_mesh_devices(mesh);
    ar_shape as = {.devices = n, .rows = s->rows, .cols = s->cols};
    if (!cost_only && ex_mesh_check_memory(cl, mesh, "x and o of every device", ar_host_bytes(&as))) return 2;
    ar_data d;
    pl_report *reps = calloc((size_t)n, sizeof *reps);
    if (!reps || ar_alloc(&d, &as, !cost_only, 42) != PL_OK) {
        free(reps);
        return fprintf(stderr, "hier_allreduce: out of host memory\n"), 2;
    }
    pl_call call;
    ha_call(&call, s);
    pl_options opt = cl->opt;
    opt.seed = (uint64_t)seed;
    pl_mesh_report mr, flat;
    printf("hier_allreduce: %s, x and o (%lld, %lld) f32 on every device; reduce-scatter in the slice (ICI), "
           "all-reduce of a chunk across slices (DCN), all-gather in the slice (ICI)\n",
           pl_mesh_format(mesh, buf, sizeof buf), (long long)s->rows, (long long)s->cols);
    int status = pl_mesh_call(mesh, &call, d.args, d.outs, &opt, &mr, reps);
    if (status != PL_OK) {
        fprintf(stderr, "hier_allreduce: %s\n", mr.error[0] ? mr.error : pl_strerror(status));
        status = 2;
    } else {
        const pl_chip *chip = ex_chip_of(&opt);
        print_dcn("hierarchical", &mr);
        ex_mesh_ranks_line(&mr);
        int fr = flat_ring(mesh, s, &opt, &flat);
        if (fr == PL_OK) {
            print_dcn("flat ring   ", &flat);
            printf("  the flat ring takes %.2fx the hierarchical one's time\n", flat.time_s / mr.time_s);
        } else
            printf("  the flat ring: %s\n", flat.error[0] ? flat.error : pl_strerror(fr));
        /* each device sends 2 (S - 1) / S of a chunk (rows / P) over DCN; a host's devices share its NIC */
        int dph = pl_chip_devices_per_host(chip), on_host = dph < s->per_slice ? dph : s->per_slice;
        double chunk = (double)(s->rows / s->per_slice) * (double)s->cols * 4;
        double nic = on_host * 2.0 * (s->slices - 1) / s->slices * chunk / chip->dcn_bw;
        printf("  closed form of the busiest NIC: %d devices x 2 (S-1)/S x %.0f bytes / %.1f GB/s = %.2f us\n",
               on_host, chunk, chip->dcn_bw / 1e9, nic * 1e6);
        printf("  bound: %s\n", mr.bound_msg);
        status = verdict(mesh, &d, cost_only);
        if (digest) ex_mesh_digest(&mr, reps, n, NULL, 0, 0);
    }
    ar_free(&d);
    free(reps);
    return status;
}

int ex_hier_allreduce_main(int argc, char **argv)
{
    ex_cmdline cl = {.prog = "hier_allreduce", .usage = USAGE,
                     .accept = EX_CHIP | EX_CHIP_FILE | EX_COST_ONLY | EX_NO_CHECKS | EX_TRACE};
    ex_mesh_args a = {.devices = 0, .rows = 1024, .cols = 1024, .with_mesh = 1}; /* 0: --devices not given */
    int exit_code = ex_mesh_parse(&cl, argc, argv, 0, &a);
    if (exit_code >= 0) return exit_code;
    if (!a.has_mesh && a.devices) { /* a split into 2 slices of the devices, when there is one */
        if (a.devices >= 4 && a.devices % 2 == 0)
            return ex_usage_error(&cl, "--devices %d alone says no slices: give the mesh, e.g. --mesh 'dcn:2 x ring:%d' "
                                  "(2 slices of %d)", a.devices, a.devices / 2, a.devices / 2), 2;
        return ex_usage_error(&cl, "--devices %d alone says no slices: give the mesh as --mesh 'dcn:S x SLICE' (S >= 2 "
                              "slices of 2 or more devices, e.g. 'dcn:2 x 4x4')", a.devices), 2;
    }
    pl_mesh mesh = a.mesh;
    char msg[256];
    if (!a.has_mesh && pl_mesh_parse("dcn:2 x 4x4", &mesh, msg, sizeof msg) != PL_OK)
        return fprintf(stderr, "hier_allreduce: %s\n", msg), 2;
    if (!mesh.dcn) { /* 'dcn:1 x 4' runs: a DCN axis of one slice, its cross-slice step empty */
        char buf[128];
        return ex_usage_error(&cl, "--mesh '%s' has one slice; a hierarchical all-reduce runs over slices joined by "
                              "DCN: 'dcn:2 x 4x4'", pl_mesh_format(&mesh, buf, sizeof buf)), 2;
    }
    ha_shape s = {.slices = pl_mesh_slices(&mesh), .per_slice = pl_mesh_devices(&mesh) / pl_mesh_slices(&mesh),
                  .rows = a.rows, .cols = a.cols};
    return run(&mesh, &s, &cl, a.seed, a.digest);
}
