/* tests/fuzz/fuzz_mesh_call.c: libFuzzer harness for pl_mesh_call. The
 * bytes choose a mesh (2 to 4 devices: a ring, a line, a 2x2 torus), a grid
 * of 1 to 3 steps, real or cost-only, a seed for the thread schedule, and a
 * program of up to 24 ops that every device runs: remote copies (to a
 * neighbour or any device, with wait_send, wait_recv, both or no wait),
 * remote and local signals, semaphore waits, local DMA, a kernel fault, each
 * op guarded by a device mask. Whatever the program, the call must return
 * (a deadlock is reported, never a hang: libFuzzer's -timeout catches one)
 * with a status that matches the report, and never read or write out of
 * bounds or race on host memory the runtime owns. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../kernel/pltpu.h"
#include "../../sim/tilesim.h"
#include "../../sim/tilesim_mesh.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_OPS 24
enum { R_X, R_O, R_BUF, R_DMA, R_SEM };

typedef struct prog {
    int n_ops;
    uint8_t op[MAX_OPS][3]; /* kind, argument, device mask */
} prog;

static void run_op(pl_ctx *c, pl_ref *refs, const uint8_t *o)
{
    int me = pltpu_device_id(c), n = pltpu_num_devices(c), a = o[1];
    if (!((o[2] >> (me & 7)) & 1)) return;
    int to = a & 4 ? (me + 1 + (a & 3)) % n : a & 3; /* a neighbour, or any device (maybe out of range) */
    int slot = (a >> 3) & 1;
    pltpu_remote_copy cp = pltpu_make_async_remote_copy(c, refs[R_X], pl_at(c, refs[R_BUF], slot),
                                                        pl_at(c, refs[R_DMA], 0), pl_at(c, refs[R_DMA], 1 + slot), to);
    switch (o[0] % 9) {
    case 0: pltpu_remote_copy_start(c, &cp); break;
    case 1: pltpu_remote_copy_start(c, &cp), pltpu_remote_copy_wait_send(c, &cp); break;
    case 2: pltpu_remote_copy_start(c, &cp), pltpu_remote_copy_wait(c, &cp); break;
    case 3: pltpu_remote_copy_wait_recv(c, &cp); break;
    case 4: pltpu_semaphore_signal_device(c, pl_at(c, refs[R_SEM], slot), 1 + (a >> 4), to); break;
    case 5: pltpu_semaphore_wait(c, pl_at(c, refs[R_SEM], slot), a >> 4); break;
    case 6: pltpu_semaphore_signal(c, pl_at(c, refs[R_SEM], slot), a >> 4); break;
    case 7: {
        pltpu_copy l = pltpu_async_copy(c, pl_at(c, refs[R_BUF], slot), pl_at(c, refs[R_BUF], 1 - slot),
                                        pl_at(c, refs[R_DMA], 0));
        pltpu_copy_start(c, &l);
        if (a & 1) pltpu_copy_wait(c, &l);
        break;
    }
    default: pl_get(c, refs[R_X], (int64_t[]){a, 0}); break; /* past row 7: a fault on this device */
    }
}

static void kernel(pl_ctx *c, pl_ref *refs)
{
    const prog *p = pl_kernel_user(c);
    for (int i = 0; i < p->n_ops; i++) run_op(c, refs, p->op[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4) return 0;
    static const char *meshes[] = {"ring:2", "ring:3", "line:3", "ring:4", "2x2"};
    pl_mesh mesh;
    char msg[256];
    if (pl_mesh_parse(meshes[data[0] % 5], &mesh, msg, sizeof msg) != PL_OK) abort();
    int n = pl_mesh_devices(&mesh), steps = 1 + data[1] % 3, cost_only = data[2] & 1;
    prog p = {.n_ops = (int)((size - 4) / 3 < MAX_OPS ? (size - 4) / 3 : MAX_OPS)};
    memcpy(p.op, data + 4, (size_t)p.n_ops * 3);
    pl_call call = {
        .name = "fuzz_mesh", .kernel = kernel, .user = &p, .grid_rank = 1, .grid = {steps},
        .n_in = 1, .in = {{.space = PL_ANY, .name = "x"}},
        .n_out = 1, .out = {{.space = PL_ANY, .name = "o"}},
        .n_scratch = 3,
        .scratch = {PLTPU_VMEM(PL_F32, 2, 8, 128), PLTPU_SEMAPHORE_DMA(3), PLTPU_SEMAPHORE(2)},
    };
    float *x = calloc((size_t)n * 8 * 128, sizeof *x), *o = calloc((size_t)n * 8 * 128, sizeof *o);
    pl_array *args = calloc((size_t)n, sizeof *args), *outs = calloc((size_t)n, sizeof *outs);
    pl_report *reps = calloc((size_t)n, sizeof *reps);
    if (x && o && args && outs && reps) {
        for (int d = 0; d < n; d++) {
            args[d] = (pl_array){.data = cost_only ? NULL : x + d * 1024, .dtype = PL_F32, .rank = 2, .shape = {8, 128}};
            outs[d] = (pl_array){.data = cost_only ? NULL : o + d * 1024, .dtype = PL_F32, .rank = 2, .shape = {8, 128}};
        }
        pl_options opt = {.cost_only = cost_only, .seed = data[3]};
        pl_mesh_report mr;
        int rc = pl_mesh_call(&mesh, &call, args, outs, &opt, &mr, reps);
        if (rc != mr.status || (rc != PL_OK) != (mr.failed_device >= 0)) abort(); /* the report says what happened */
        if (rc == PL_OK && (mr.n_devices != n || !(mr.time_s >= 0))) abort();
        if (!memchr(mr.error, '\0', sizeof mr.error)) abort();
    }
    free(x);
    free(o);
    free(args);
    free(outs);
    free(reps);
    return 0;
}
