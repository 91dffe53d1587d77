/* examples/kernels/ring_allreduce_prog.c: the program examples/ring_allreduce, also
 * `tilesim run ring_allreduce`.
 *
 * A ring all-reduce over N devices (rules M7-M12):
 * a bidirectional reduce-scatter then a bidirectional all-gather, run SPMD
 * by pl_mesh_call and checked against the elementwise sum over devices on
 * every device.
 *
 *   ring_allreduce [--devices N] [--rows R] [--cols C] [--chip NAME] [--seed S] [--cost-only] [--no-checks]
 *
 * Defaults: a ring of 8 devices, x of (1024, 1024) f32 (4 MiB) on each; R
 * must be a multiple of 2 N. --seed S runs the device threads in an order
 * shuffled by S: the results must not change. --cost-only times the ring
 * without data (nothing to verify).
 *
 * Prints the mesh, one line per device (its time, the copies it started,
 * the bytes it sent over ICI, its error against the sum), the mesh's time
 * against the closed form 2 (N - 1) / N x bytes / (link bandwidth x
 * directions), and the verdict. The ratio is taken against the form with
 * both directions: the reduce-scatter and the all-gather each keep both
 * directions of every link of the ring busy, and the mesh timing gives
 * every directed link its own bandwidth. The time above it is mostly one
 * DMA latency and one hop latency per step, printed too; it fades as the
 * shards grow (--rows 2048 --cols 2048: 1.09 of the closed form).
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
#include "ring_allreduce.h"

#define USAGE                                                                                              \
    "usage: ring_allreduce [--devices N | --mesh SPEC] [--rows R] [--cols C] [--chip NAME | --chip-file FILE]\n" \
    "                      [--one-way] [--seed S] [--cost-only] [--no-checks] [--trace FILE.json] [--digest]\n"  \
    "  R must be a multiple of 2 N (N shards, each cut into two halves, one per ring direction)\n"              \
    "  --one-way: the textbook ring, every shard whole and to the right only (R a multiple of N)\n"              \
    "  --mesh SPEC: the ring over a mesh's devices in number order, e.g. 'dcn:2 x ring:8' (two slices over\n"   \
    "  DCN, rule M14: the ring crosses between slices twice)\n"

typedef struct ar_cmd {
    ar_shape s;
    int64_t seed;
    int digest;
    const pl_mesh *mesh; /* --mesh: the ring runs over its devices in number order; NULL: a ring of s.devices */
} ar_cmd;



/* Each device's check, worked out where the device ran (across MPI ranks,
 * only there do its outputs exist) and shared: C_N numbers per device. */
enum { C_OK, C_BAD, C_MAX, C_NORM, C_FIRST, C_DIGEST_HI, C_DIGEST_LO, C_N };

static void check_devices(const pl_mesh *mesh, const ar_data *d, int cost_only, double *v)
{
    int first, count;
    pl_mesh_local_devices(mesh, &first, &count);
    int64_t n_el = d->s.rows * d->s.cols;
    for (int dev = first; dev < first + count; dev++) {
        double *w = v + (size_t)dev * C_N;
        ar_error e = {.first_elem = -1};
        if (!cost_only && ar_verify(d, dev, &e) != PL_OK) e.ok = -1; /* out of memory: said below */
        uint64_t h = cost_only ? 0 : ex_digest(d->o + dev * n_el, (size_t)n_el * sizeof *d->o);
        w[C_OK] = e.ok, w[C_BAD] = (double)e.bad, w[C_MAX] = e.max_abs_err, w[C_NORM] = e.norm_err;
        w[C_FIRST] = (double)e.first_elem, w[C_DIGEST_HI] = (double)(h >> 32), w[C_DIGEST_LO] = (double)(h & 0xffffffffu);
    }
    pl_mesh_share(mesh, v, C_N);
}

static void print_devices(const ar_data *d, const pl_report *reps, int cost_only, const double *v)
{
    for (int dev = 0; dev < d->s.devices; dev++) {
        const double *w = v + (size_t)dev * C_N;
        ex_mesh_device_line(dev, &reps[dev]);
        if (!cost_only && w[C_OK] > 0) printf(", o: the sum (max error %.3g, %.2f of the bound)", w[C_MAX], w[C_NORM]);
        else if (!cost_only && w[C_OK] == 0) printf(", o: %lld elements wrong", (long long)w[C_BAD]);
        printf("\n");
    }
}

static void print_mesh(const ar_shape *s, const pl_mesh_report *mr, const pl_chip *chip)
{
    int dirs = ar_directions(s);
    double form = ar_closed_form_s(s, chip, dirs), one = ar_closed_form_s(s, chip, 1);
    double lat = 2.0 * (s->devices - 1) * (chip->dma_latency_s + chip->ici_latency_s);
    if (mr->dcn_copies) /* a multislice mesh: some of the copies go over DCN, not ICI (M14) */
        printf("  mesh: %.2f us, %lld remote copies, %lld bytes over ICI and DCN\n", mr->time_s * 1e6,
               (long long)mr->remote_copies, (long long)mr->ici_bytes);
    else
        printf("  mesh: %.2f us, %lld remote copies, %lld bytes over ICI\n", mr->time_s * 1e6,
               (long long)mr->remote_copies, (long long)mr->ici_bytes);
    printf("  links: %d directed links carried data, %.1f GB/s each (%.2f of a link's peak); %s\n", mr->links_used,
           mr->ici_bw_achieved / 1e9, mr->ici_bw_fraction, mr->bound_msg);
    ex_mesh_ranks_line(mr);
    if (mr->dcn_copies)
        printf("  DCN: %lld copies between %d slices, %.0f bytes; the busiest host NIC %.2f us (%.1f%% of the run); "
               "a device waited at most %.2f us on DCN\n", (long long)mr->dcn_copies, mr->slices, mr->dcn_bytes,
               mr->dcn_busiest_s * 1e6, 100 * mr->busy[PL_BOUND_DCN], mr->dcn_wait_s * 1e6);
    if (form <= 0 || mr->dcn_copies) return; /* the closed form is a one-slice ring's */
    printf("  closed form on %s: 2 (N-1)/N x %lld bytes / (%.1f GB/s per link x %d direction%s) = %.2f us;\n"
           "    simulated / closed form = %.3f (plus one DMA and hop latency per step, 2 (N-1) x %.1f us: %.2f us",
           chip->name, (long long)(s->rows * s->cols * 4), chip->ici_bw / 1e9, dirs, dirs > 1 ? "s" : "", form * 1e6,
           mr->time_s / form, (chip->dma_latency_s + chip->ici_latency_s) * 1e6, (form + lat) * 1e6);
    if (dirs > 1) printf(";\n    a one-way ring's closed form: %.2f us", one * 1e6);
    printf(")\n");
}

static int verdict(const ar_data *d, int cost_only, const double *v)
{
    if (cost_only) {
        printf("  cost only: no data to verify\n");
        return 0;
    }
    ar_error e = {.ok = 1, .first_device = -1};
    for (int dev = 0; dev < d->s.devices; dev++) { /* as ar_verify(d, -1, &e) adds them up */
        const double *w = v + (size_t)dev * C_N;
        if (w[C_OK] < 0) {
            fprintf(stderr, "ring_allreduce: out of host memory for the reference\n");
            return 2;
        }
        if (!(w[C_MAX] <= e.max_abs_err)) e.max_abs_err = w[C_MAX];
        if (!(w[C_NORM] <= e.norm_err)) e.norm_err = w[C_NORM];
        if (w[C_BAD] > 0 && e.bad == 0) e.first_device = dev, e.first_elem = (int64_t)w[C_FIRST];
        e.bad += (int64_t)w[C_BAD];
    }
    if (e.bad) {
        printf("FAIL: %lld elements differ from the sum by more than (N-1) u sum|x|; the first on device %d, "
               "element %lld (max error %.3g)\n",
               (long long)e.bad, e.first_device, (long long)e.first_elem, e.max_abs_err);
        return 1;
    }
    printf("PASS: every device holds the sum over the %d devices (max error %.3g, %.2f of the f32 bound)\n",
           d->s.devices, e.max_abs_err, e.norm_err);
    return 0;
}

/* Run the ring; returns the exit status. */
static int run(const ar_cmd *rc, const ex_cmdline *cl)
{
    pl_mesh mesh;
    char msg[256], buf[128];
    if (ar_shape_check(&rc->s, msg, sizeof msg) != PL_OK) return ex_usage_error(cl, "%s", msg);
    if (rc->mesh) mesh = *rc->mesh;
    else if (ex_ring_mesh("ring_allreduce", rc->s.devices, &mesh) != PL_OK) return 2;
    int cost_only = cl->opt.cost_only;
    if (!cost_only && ex_mesh_check_memory(cl, &mesh, "x and o of every device", ar_host_bytes(&rc->s))) return 2;
    ar_data d;
    pl_report *reps = calloc((size_t)rc->s.devices, sizeof *reps);
    if (!reps || ar_alloc(&d, &rc->s, !cost_only, 42) != PL_OK) {
        fprintf(stderr, "ring_allreduce: out of host memory\n");
        free(reps);
        return 2;
    }
    pl_call call;
    ar_call(&call, &rc->s, NULL);
    pl_options opt = cl->opt;
    opt.seed = (uint64_t)rc->seed;
    pl_mesh_report mr;
    int dirs = ar_directions(&rc->s);
    printf("ring_allreduce: %s, x and o (%lld, %lld) f32 on every device, %s of (%lld, %lld) %s\n",
           pl_mesh_format(&mesh, buf, sizeof buf), (long long)rc->s.rows, (long long)rc->s.cols,
           dirs > 1 ? "halves" : "shards", (long long)(rc->s.rows / (dirs * rc->s.devices)), (long long)rc->s.cols,
           dirs > 1 ? "each way" : "one way round");
    int status = pl_mesh_call(&mesh, &call, d.args, d.outs, &opt, &mr, reps);
    double *v = calloc((size_t)rc->s.devices * C_N, sizeof *v);
    if (status != PL_OK || !v) {
        fprintf(stderr, "ring_allreduce: %s\n", !v ? "out of host memory" : mr.error[0] ? mr.error : pl_strerror(status));
        status = 2;
    } else {
        check_devices(&mesh, &d, cost_only, v);
        print_devices(&d, reps, cost_only, v);
        print_mesh(&rc->s, &mr, ex_chip_of(&opt));
        status = verdict(&d, cost_only, v);
        if (rc->digest) ex_mesh_digest(&mr, reps, rc->s.devices, v, C_N, C_DIGEST_HI);
    }
    free(v);
    ar_free(&d);
    free(reps);
    return status;
}

int ex_ring_allreduce_main(int argc, char **argv)
{
    ex_cmdline cl = {.prog = "ring_allreduce", .usage = USAGE,
                     .accept = EX_CHIP | EX_CHIP_FILE | EX_COST_ONLY | EX_NO_CHECKS | EX_TRACE};
    ex_mesh_args a = {.devices = 8, .rows = 1024, .cols = 1024, .with_mesh = 1, .with_one_way = 1};
    int exit_code = ex_mesh_parse(&cl, argc, argv, 0, &a);
    if (exit_code >= 0) return exit_code;
    ar_cmd rc = {.s = {.devices = a.devices, .rows = a.rows, .cols = a.cols, .directions = a.one_way ? 1 : 2},
                 .seed = a.seed, .digest = a.digest,
                 .mesh = a.has_mesh ? &a.mesh : NULL};
    return run(&rc, &cl);
}
