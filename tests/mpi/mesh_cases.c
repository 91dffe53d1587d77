/* tests/mpi/mesh_cases.c: meshes whose devices run on several Open MPI
 * ranks (sim/mesh/mesh_mpi.c), for tests/mpi/test_mpi.sh, which runs this
 * program under mpirun on 1, 2, 3 and 4 ranks and requires rank 0 to print
 * the same every time: one rank is the one-process reference (with one
 * rank, pl_mesh_call runs every device in its own process).
 *
 *   mesh_cases TRACE.json
 *
 * Each case prints its status, the failing device and message, and every
 * device's status and timing at full precision; then whether its devices
 * ran on several ranks and whether messages crossed between them. Cases:
 * a race between devices on different ranks (a buffer sent into again
 * without a capacity handshake, rules V4, M12), under two seeds; a
 * semaphore left non-zero on another rank's device (M10); a kernel fault on
 * the last rank's device that leaves device 0 waiting (its own error is
 * reported first, M10); a deadlock of devices on every rank, which every
 * rank reports (each prints its code on stderr); a ring shift in which
 * each rank passes data for its own devices only (NULL for the others),
 * checked where each device ran; and a ring all-reduce whose trace is written to
 * TRACE.json by rank 0 (the script compares the files).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../examples/kernels/ring_allreduce.h"
#include "../../kernel/pltpu.h"
#include "../../sim/tilesim.h"
#include "../../sim/tilesim_mesh.h"

enum { Q_X, Q_O, Q_BUF, Q_DMA, Q_FREE };

static int rank;

static pl_call small_call(pl_kernel_fn k, int64_t steps)
{
    pl_call call = {
        .name = "mesh_case", .kernel = k, .grid_rank = 1, .grid = {steps},
        .n_in = 1, .in = {{.space = PL_ANY, .name = "x"}},
        .n_out = 1, .out = {{.space = PL_ANY, .name = "o"}},
        .n_scratch = 3,
        .scratch = {PLTPU_VMEM(PL_F32, 8, 128), PLTPU_SEMAPHORE_DMA(2), PLTPU_SEMAPHORE(1)},
    };
    return call;
}

/* The last device sends x into device 0's one buffer at every step, with no
 * capacity handshake: a race found in every schedule. */
static void no_handshake(pl_ctx *c, pl_ref *refs)
{
    int me = pltpu_device_id(c), n = pltpu_num_devices(c);
    pltpu_remote_copy cp = pltpu_make_async_remote_copy(c, refs[Q_X], refs[Q_BUF], pl_at(c, refs[Q_DMA], 0),
                                                        pl_at(c, refs[Q_DMA], 1), 0);
    if (me == n - 1) {
        pltpu_remote_copy_start(c, &cp);
        pltpu_remote_copy_wait_send(c, &cp);
    } else if (me == 0) {
        pltpu_remote_copy_wait_recv(c, &cp);
        pl_copy(c, refs[Q_BUF], refs[Q_BUF]);
    }
}

/* Every device signals its right neighbour, which never waits (M10). */
static void signal_left_over(pl_ctx *c, pl_ref *refs)
{
    int me = pltpu_device_id(c), n = pltpu_num_devices(c);
    if (pl_program_id(c, 0) == 0) pltpu_semaphore_signal_device(c, pl_at(c, refs[Q_FREE], 0), 1, (me + 1) % n);
}

/* The last device copies to a device that does not exist; device 0 waits
 * for its copy forever. */
static void fault_on_last(pl_ctx *c, pl_ref *refs)
{
    int me = pltpu_device_id(c), n = pltpu_num_devices(c);
    int to = me == n - 1 ? n : (me + 1) % n;
    pltpu_remote_copy cp = pltpu_make_async_remote_copy(c, refs[Q_X], refs[Q_BUF], pl_at(c, refs[Q_DMA], 0),
                                                        pl_at(c, refs[Q_DMA], 1), to);
    pltpu_remote_copy_start(c, &cp);
    pltpu_remote_copy_wait(c, &cp);
}

/* Every device but the first waits for a signal no device sends. */
static void wait_forever(pl_ctx *c, pl_ref *refs)
{
    if (pltpu_device_id(c) > 0) pltpu_semaphore_wait(c, pl_at(c, refs[Q_FREE], 0), 1);
}

/* Each device sends x straight into its right neighbour's o (HBM to HBM),
 * then waits for its own o from the left: a ring shift. */
static void ring_shift(pl_ctx *c, pl_ref *refs)
{
    int me = pltpu_device_id(c), n = pltpu_num_devices(c);
    pltpu_remote_copy cp = pltpu_make_async_remote_copy(c, refs[Q_X], refs[Q_O], pl_at(c, refs[Q_DMA], 0),
                                                        pl_at(c, refs[Q_DMA], 1), (me + 1) % n);
    pltpu_remote_copy_start(c, &cp);
    pltpu_remote_copy_wait(c, &cp);
}

static void print_case(const char *name, int rc, const pl_mesh_report *mr, const pl_report *reps, int n)
{
    /* every rank says how its call ended (the script checks that all agree) */
    fprintf(stderr, "rank %d: case %s: rc %d, %d ranks, %lld messages between them\n", rank, name, rc, mr->ranks,
            (long long)mr->rank_messages);
    if (rank) return;
    printf("case %s: rc %d (%s), failed device %d\n  error: %s\n", name, rc, pl_strerror(rc), mr->failed_device,
           mr->error);
    for (int d = 0; d < n; d++)
        printf("  device %d: status %d time_s %.17g remote_wait_s %.17g ici_copies %lld: %s\n", d, reps[d].status,
               reps[d].time_s, reps[d].remote_wait_s, (long long)reps[d].ici_copies, reps[d].error);
    printf("  mesh: time_s %.17g link_bytes %.17g links_used %d\n", mr->time_s, mr->link_bytes, mr->links_used);
}

static void run_small(const char *name, pl_kernel_fn k, int n, int64_t steps, uint64_t seed, int only_here)
{
    char text[32], msg[256];
    pl_mesh mesh;
    snprintf(text, sizeof text, "ring:%d", n);
    if (pl_mesh_parse(text, &mesh, msg, sizeof msg)) return;
    float *x = calloc((size_t)n * 1024, sizeof *x), *o = calloc((size_t)n * 1024, sizeof *o);
    pl_array *args = calloc((size_t)n, sizeof *args), *outs = calloc((size_t)n, sizeof *outs);
    pl_report *reps = calloc((size_t)n, sizeof *reps);
    for (int d = 0; d < n * 1024; d++) x[d] = (float)d;
    int first = 0, count = n;
    if (only_here) pl_mesh_local_devices(&mesh, &first, &count);
    for (int d = 0; d < n; d++) { /* only_here: no data for devices other ranks run (never read) */
        int here = d >= first && d < first + count;
        args[d] = PL_ARRAY(here ? x + d * 1024 : NULL, PL_F32, 8, 128);
        outs[d] = PL_ARRAY(here ? o + d * 1024 : NULL, PL_F32, 8, 128);
    }
    pl_call call = small_call(k, steps);
    pl_options opt = {.seed = seed};
    pl_mesh_report mr;
    int rc = pl_mesh_call(&mesh, &call, args, outs, &opt, &mr, reps);
    print_case(name, rc, &mr, reps, n);
    double *wrong = calloc((size_t)n, sizeof *wrong); /* the ring shift: o of d is x of d - 1, checked where d ran */
    for (int d = first; only_here && d < first + count; d++)
        for (int i = 0; i < 1024; i++) wrong[d] += o[d * 1024 + i] != x[((d + n - 1) % n) * 1024 + i];
    if (only_here) pl_mesh_share(&mesh, wrong, 1);
    for (int d = 0; only_here && !rank && d < n; d++) printf("  device %d: %g elements of o wrong\n", d, wrong[d]);
    free(wrong);
    free(x), free(o), free(args), free(outs), free(reps);
}

static void run_allreduce(const char *trace)
{
    ar_shape s = {.devices = 8, .rows = 64, .cols = 256};
    pl_mesh mesh;
    char msg[256];
    ar_data d;
    if (pl_mesh_parse("ring:8", &mesh, msg, sizeof msg) || ar_alloc(&d, &s, 1, 42)) return;
    pl_call call;
    ar_call(&call, &s, NULL);
    pl_options opt = {.trace_path = trace, .seed = 3};
    pl_report reps[8];
    pl_mesh_report mr;
    int rc = pl_mesh_call(&mesh, &call, d.args, d.outs, &opt, &mr, reps);
    print_case("ring_allreduce with a trace", rc, &mr, reps, 8);
    ar_free(&d);
}

int main(int argc, char **argv)
{
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    run_small("race without a handshake, seed 0", no_handshake, 4, 3, 0, 0);
    run_small("race without a handshake, seed 5", no_handshake, 4, 3, 5, 0);
    run_small("a signal left over (M10)", signal_left_over, 4, 2, 0, 0);
    run_small("a fault on the last device", fault_on_last, 4, 1, 0, 0);
    run_small("deadlock", wait_forever, 4, 2, 0, 0);
    run_small("a ring shift, each rank holding only its devices' arrays", ring_shift, 6, 1, 0, 1);
    if (argc > 1) run_allreduce(argv[1]);
    MPI_Finalize();
    return 0;
}
