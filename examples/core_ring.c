/* examples/core_ring.c: a ring over every TensorCore of a mesh (rule M13).
 * On v5p each device has 2 TensorCores; JAX names one by a device id with
 * a core axis, device_id={'device': d, 'core': k}. Here the cores of all
 * devices, taken in (device, core) order, pass their slab of x one step
 * along the ring: a core copies its slab into a run_scoped VMEM buffer of
 * the next core (the other core of its own device, or core 0 of the next
 * device), which writes it into its slab of out. A barrier over every core
 * of every device first makes sure each has entered the scope.
 *
 *   core_ring [DEVICES] [--chip NAME] [--trace FILE.json] [--cost-only]
 *
 * DEVICES defaults to 4 (8 cores on v5p). Exit status: 0 when out holds the
 * slab of the previous core everywhere, 1 when it does not, 2 for a bad
 * command line or a call tilesim rejects. */
#include <stdio.h>
#include <stdlib.h>

#include "../sim/tilesim_kernel.h"
#include "kernels/options.h"

#define USAGE "usage: core_ring [DEVICES] [--chip NAME] [--trace FILE.json] [--cost-only]\n"

enum { ROWS = 64, COLS = 512 }; /* each core's slab: (ROWS, COLS) f32 */

/* s: the barrier of this device's cores, the buffer that receives, the send and receive semaphores */
static void pass_on(pl_ctx *c, pl_ref *s, void *user)
{
    pl_ref *refs = user;
    int cores = pl_core_count(c), core = pl_core_index(c);
    int devs = pltpu_num_devices(c), me = pltpu_device_id(c) * cores + core, n = devs * cores;
    int next = (me + 1) % n;
    pl_ref mine = pl_at(c, refs[0], core), out = pl_at(c, refs[1], core), barrier = pl_at(c, refs[2], 0);
    for (int d = 0; d < devs; d++) /* every core of every device is inside the scope */
        for (int k = 0; k < cores; k++) pltpu_semaphore_signal_core(c, barrier, 1, d, k);
    pltpu_semaphore_wait(c, barrier, n);
    pltpu_remote_copy cp = pltpu_make_async_remote_copy_core(c, mine, s[0], pl_at(c, s[1], 0), pl_at(c, s[1], 1),
                                                             next / cores, next % cores);
    pltpu_remote_copy_start(c, &cp);
    pltpu_remote_copy_wait_send(c, &cp);
    pltpu_remote_copy_wait_recv(c, &cp); /* the previous core's slab is here */
    pltpu_sync_copy(c, s[0], out);
}

static void core_ring(pl_ctx *c, pl_ref *refs)
{
    static const pl_scratch types[] = {PLTPU_VMEM(PL_F32, ROWS, COLS), PLTPU_SEMAPHORE_DMA(2)};
    pl_run_scoped(c, types, 2, pass_on, refs);
}

int main(int argc, char **argv)
{
    ex_cmdline cl = {.prog = "core_ring", .usage = USAGE, .accept = EX_CHIP | EX_TRACE | EX_COST_ONLY};
    int rc = ex_parse(&cl, argc, argv, NULL, NULL, NULL);
    if (rc != EX_PARSE_OK) return rc == EX_PARSE_HELP ? 0 : 2;
    long devices = 4;
    char *end = NULL;
    if (cl.npos > 1 || (cl.npos == 1 && ((devices = strtol(cl.pos[0], &end, 10)) < 1 || *end || devices > 256))) {
        fprintf(stderr, "core_ring: DEVICES must be a whole number from 1 to 256, got '%s'\n%s", cl.pos[0], USAGE);
        return 2;
    }
    if (!cl.opt.chip) cl.opt.chip = "v5p";
    const pl_chip *chip = pl_chip_find(cl.opt.chip);
    int cores = chip && chip->cores_per_device > 0 ? chip->cores_per_device : 1;
    size_t slab = (size_t)ROWS * COLS, per = (size_t)cores * slab, n = (size_t)devices;
    float *x = malloc(n * per * sizeof *x), *o = malloc(n * per * sizeof *o);
    pl_array *ins = calloc(n, sizeof *ins), *outs = calloc(n, sizeof *outs);
    pl_report *reps = calloc(n, sizeof *reps);
    if (!x || !o || !ins || !outs || !reps) {
        fprintf(stderr, "core_ring: out of host memory\n");
        return 2;
    }
    for (size_t d = 0; d < n; d++) {
        for (size_t i = 0; i < per; i++) x[d * per + i] = (float)(d * per + i), o[d * per + i] = -1.0f;
        ins[d] = PL_ARRAY(x + d * per, PL_F32, cores, ROWS, COLS);
        outs[d] = PL_ARRAY(o + d * per, PL_F32, cores, ROWS, COLS);
    }
    pl_mesh mesh;
    char msg[256], shape[64];
    snprintf(shape, sizeof shape, "ring:%ld", devices);
    pl_mesh_parse(shape, &mesh, msg, sizeof msg);
    pl_kernel_spec k = {.name = "core_ring", .body = core_ring, .n_in = 1, .n_out = 1, .n_scratch = 1,
                        .scratch = {PLTPU_SEMAPHORE(1)}};
    pl_mesh_report mr;
    rc = pl_kernel_mesh_call(&mesh, &k, ins, outs, &cl.opt, &mr, reps);
    int status = 0;
    if (rc != PL_OK) {
        fprintf(stderr, "core_ring: %s\n", mr.error);
        status = 2;
    } else {
        size_t total = n * per, bad = 0;
        for (size_t i = 0; !cl.opt.cost_only && i < total; i++) /* out's slab u holds x's slab u - 1 */
            bad += o[i] != x[(i + total - slab) % total];
        size_t ring = n * (size_t)cores;
        printf("core_ring: %ld device%s x %d TensorCore%s of %s, each core's (%d, %d) f32 slab one step along the "
               "ring of %zu core%s\n", devices, devices == 1 ? "" : "s", cores, cores == 1 ? "" : "s", cl.opt.chip,
               ROWS, COLS, ring, ring == 1 ? "" : "s");
        printf("  %zu cop%s (%lld between devices over ICI, the rest within one), time %.2f us, bound: %s\n", ring,
               ring == 1 ? "y" : "ies", (long long)mr.remote_copies, mr.time_s * 1e6, mr.bound_msg);
        if (cl.opt.cost_only) printf("  cost only: the data was not checked\n");
        else printf("  out holds the previous core's slab: %s\n", bad ? "FAIL" : "PASS");
        status = bad ? 1 : 0;
    }
    free(x), free(o), free(ins), free(outs), free(reps);
    return status;
}
