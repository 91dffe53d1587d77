/* examples/kernels/mesh_defs.c: the built-in ring programs as mesh kernel
 * definitions (sim/kdef.h, .mesh and .mesh_reference; registry.h,
 * ex_mesh_kernel_find), so that `tilesim sweep ring_allreduce --vary
 * devices=4,8,16`, `tilesim profile ring_allgather` and `tilesim run
 * ring_allreduce --set devices=8 --html page.html` take them (and
 * collective_matmul, whose sweep weighs overlapping the gather with the
 * matmul against gathering first) as they take
 * a plugin's. `tilesim run NAME --devices N` still runs the program
 * (mesh_progs.h), with its closed form and its own checks.
 *
 * Both keep x and o in HBM (ANY) and are the kernels of ring_allreduce.h
 * and ring_allgather.h unchanged; here only the parameters, the mesh (a
 * ring of `devices`) and the references live. */
#include <stdio.h>
#include <string.h>

#include "collective_matmul.h"
#include "registry.h"
#include "ring_allgather.h"
#include "hier_allreduce.h"
#include "ring_allreduce.h"

enum { MD_DEVICES, MD_ROWS, MD_COLS };

static int ring_of(const int64_t *v, pl_mesh *mesh, char *msg, size_t n)
{
    char spec[32];
    snprintf(spec, sizeof spec, "ring:%lld", (long long)v[MD_DEVICES]);
    return pl_mesh_parse(spec, mesh, msg, n);
}

static int ring_size_check(const int64_t *v, char *msg, size_t n)
{
    if (v[MD_DEVICES] < 2 || v[MD_DEVICES] > PL_MESH_MAX_DEVICES || v[MD_ROWS] < 1 || v[MD_COLS] < 1) {
        snprintf(msg, n, "devices=%lld, rows=%lld, cols=%lld: a ring takes 2 to %d devices and rows, cols >= 1",
                 (long long)v[MD_DEVICES], (long long)v[MD_ROWS], (long long)v[MD_COLS], PL_MESH_MAX_DEVICES);
        return PL_EINVAL;
    }
    return PL_OK;
}

/* ---- ring_allreduce ---------------------------------------------------------- */

enum { MD_DIRECTIONS = MD_COLS + 1 };

static ar_shape ar_of(const int64_t *v)
{
    return (ar_shape){(int)v[MD_DEVICES], v[MD_ROWS], v[MD_COLS], (int)v[MD_DIRECTIONS]};
}

static int ar_check(const int64_t *v, char *msg, size_t n)
{
    if (ring_size_check(v, msg, n) != PL_OK) return PL_EINVAL;
    if (v[MD_DIRECTIONS] != 1 && v[MD_DIRECTIONS] != 2) {
        snprintf(msg, n, "directions=%lld: a ring sends both ways (2) or one way (1)", (long long)v[MD_DIRECTIONS]);
        return PL_EINVAL;
    }
    ar_shape s = ar_of(v);
    return ar_shape_check(&s, msg, n);
}

static int ar_build(const int64_t *v, pl_kernel_build *b, char *msg, size_t n)
{
    (void)msg, (void)n;
    ar_shape s = ar_of(v);
    ar_call(&b->call, &s, NULL);
    b->n_args = 1, b->args[0] = PL_ARRAY(NULL, PL_F32, s.rows, s.cols);
    b->n_outs = 1, b->outs[0] = PL_ARRAY(NULL, PL_F32, s.rows, s.cols);
    return PL_OK;
}

/* Every device's o is the sum of every device's x, in double; N - 1 f32
 * additions in the ring's order round by at most (N - 1) u sum|x| (u =
 * 2^-24), and the inputs lie in [-1, 1). */
static int ar_reference_of(const int64_t *v, const pl_kernel_build *devs, int n_devices, int device, pl_array *want)
{
    (void)device;
    int64_t count = v[MD_ROWS] * v[MD_COLS];
    float *o = want[0].data;
    for (int64_t i = 0; i < count; i++) {
        double sum = 0;
        for (int d = 0; d < n_devices; d++) sum += ((const float *)devs[d].args[0].data)[i];
        o[i] = (float)sum;
    }
    return pl_want_tolerance(&want[0], 0, (double)(n_devices - 1) * n_devices * 0x1p-24 + 0x1p-24);
}

static double ar_bytes(const int64_t *v) { return 8.0 * (double)(v[MD_ROWS] * v[MD_COLS]); }

const pl_kernel_def ex_def_ring_allreduce = {
    .name = "ring_allreduce",
    .summary = "a bidirectional ring all-reduce: every device ends with the sum of every device's x",
    .n_params = 4,
    .params = {{.name = "devices", .def = 8, .help = "devices in the ring"},
               {.name = "rows", .def = 1024, .help = "rows of x and o (a multiple of directions x devices)"},
               {.name = "cols", .def = 1024, .help = "columns of x and o"},
               {.name = "directions", .def = 2, .help = "2: half of each shard each way round the ring; 1: one way"}},
    .check = ar_check,
    .build = ar_build,
    .bytes = ar_bytes,
    .mesh = ring_of,
    .mesh_reference = ar_reference_of,
};

/* ---- ring_allgather ---------------------------------------------------------- */

enum { MD_FORGETFUL = MD_COLS + 1 };

static int ra_check(const int64_t *v, char *msg, size_t n)
{
    if (ring_size_check(v, msg, n) != PL_OK) return PL_EINVAL;
    if (v[MD_FORGETFUL] < -1 || v[MD_FORGETFUL] >= v[MD_DEVICES]) {
        snprintf(msg, n, "forgetful=%lld: a device of the ring (0 to %lld), or -1 for none",
                 (long long)v[MD_FORGETFUL], (long long)v[MD_DEVICES] - 1);
        return PL_EINVAL;
    }
    return PL_OK;
}

static int ra_build(const int64_t *v, pl_kernel_build *b, char *msg, size_t n)
{
    (void)msg, (void)n;
    ra_shape s = {(int)v[MD_DEVICES], v[MD_ROWS], v[MD_COLS]};
    ra_params *p = (ra_params *)b->param; /* lives as long as the call */
    p->forgetful = (int)v[MD_FORGETFUL];
    ra_call(&b->call, &s, p);
    b->n_args = 1, b->args[0] = PL_ARRAY(NULL, PL_F32, s.rows, s.cols);
    b->n_outs = 1, b->outs[0] = PL_ARRAY(NULL, PL_F32, s.devices * s.rows, s.cols);
    return PL_OK;
}

/* Every device's o is the devices' shards one after the other, exactly. */
static int ra_reference_of(const int64_t *v, const pl_kernel_build *devs, int n_devices, int device, pl_array *want)
{
    (void)device;
    size_t shard = (size_t)(v[MD_ROWS] * v[MD_COLS]) * sizeof(float);
    for (int d = 0; d < n_devices; d++) memcpy((char *)want[0].data + (size_t)d * shard, devs[d].args[0].data, shard);
    return pl_want_tolerance(&want[0], 0, 0x1p-149); /* a copy: bit for bit (below f32's least step) */
}

static double ra_bytes(const int64_t *v) { return 4.0 * (double)(v[MD_DEVICES] + 1) * (double)(v[MD_ROWS] * v[MD_COLS]); }

const pl_kernel_def ex_def_ring_allgather = {
    .name = "ring_allgather",
    .summary = "a ring all-gather: every device ends with every device's shard, in device order",
    .n_params = 4,
    .params = {{.name = "devices", .def = 8, .help = "devices in the ring"},
               {.name = "rows", .def = 256, .help = "rows of a shard"},
               {.name = "cols", .def = 1024, .help = "columns"},
               {.name = "forgetful", .def = -1,
                .help = "the device that never sends yet waits (examples/deadlock.c's bug); -1: none"}},
    .check = ra_check,
    .build = ra_build,
    .bytes = ra_bytes,
    .mesh = ring_of,
    .mesh_reference = ra_reference_of,
};

/* ---- collective_matmul ------------------------------------------------------ */

enum { CM_DEVICES, CM_ROWS, CM_K, CM_COLS, CM_FIRST };

static cm_shape cm_of(const int64_t *v)
{
    return (cm_shape){(int)v[CM_DEVICES], v[CM_ROWS], v[CM_K], v[CM_COLS]};
}

static int cm_def_check(const int64_t *v, char *msg, size_t n)
{
    if (v[CM_DEVICES] < 2 || v[CM_DEVICES] > PL_MESH_MAX_DEVICES || (v[CM_FIRST] != 0 && v[CM_FIRST] != 1)) {
        snprintf(msg, n, "devices=%lld, gather_first=%lld: a ring takes 2 to %d devices; gather_first is 0 or 1",
                 (long long)v[CM_DEVICES], (long long)v[CM_FIRST], PL_MESH_MAX_DEVICES);
        return PL_EINVAL;
    }
    cm_shape s = cm_of(v);
    return cm_shape_check(&s, msg, n);
}

static int cm_build(const int64_t *v, pl_kernel_build *b, char *msg, size_t n)
{
    (void)msg, (void)n;
    cm_shape s = cm_of(v);
    cm_call(&b->call, &s, v[CM_FIRST] ? CM_GATHER_FIRST : CM_OVERLAPPED, NULL);
    b->n_args = 2;
    b->args[0] = PL_ARRAY(NULL, PL_F32, s.rows, s.k);
    b->args[1] = PL_ARRAY(NULL, PL_F32, s.k, s.cols);
    b->n_outs = 1, b->outs[0] = PL_ARRAY(NULL, PL_F32, s.devices * s.rows, s.cols);
    return PL_OK;
}

/* Device d's out: every device's x shard, in device order, @ d's own w, in
 * double; f32 products over k round by about k u |x||w|. */
static int cm_reference(const int64_t *v, const pl_kernel_build *devs, int n_devices, int device, pl_array *want)
{
    int64_t m = v[CM_ROWS], k = v[CM_K], n = v[CM_COLS];
    const float *w = devs[device].args[1].data;
    float *o = want[0].data;
    for (int d = 0; d < n_devices; d++) {
        const float *x = devs[d].args[0].data;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double sum = 0;
                for (int64_t t = 0; t < k; t++) sum += (double)x[i * k + t] * w[t * n + j];
                o[((int64_t)d * m + i) * n + j] = (float)sum;
            }
    }
    return pl_want_tolerance(&want[0], 0, (double)k * 0x1p-22);
}

static double cm_flops(const int64_t *v)
{
    return 2.0 * (double)v[CM_DEVICES] * (double)v[CM_ROWS] * (double)v[CM_K] * (double)v[CM_COLS];
}

const pl_kernel_def ex_def_collective_matmul = {
    .name = "collective_matmul",
    .summary = "all_gather(x) @ w on a ring, the gather overlapped with the matmul (or, gather_first=1, not)",
    .n_params = 5,
    .params = {{.name = "devices", .def = 8, .help = "devices in the ring"},
               {.name = "rows", .def = 128, .help = "rows of x on one device (m)"},
               {.name = "k", .def = 512, .help = "columns of x, rows of w"},
               {.name = "cols", .def = 2048, .help = "columns of w and out (n)"},
               {.name = "gather_first", .def = 0, .candidates = (const int64_t[]){0, 1}, .n_candidates = 2,
                .help = "0: overlap each block's copy with its matmul; 1: gather every block, then multiply"}},
    .check = cm_def_check,
    .build = cm_build,
    .flops = cm_flops,
    .mesh = ring_of,
    .mesh_reference = cm_reference,
};

/* ---- hier_allreduce ---------------------------------------------------------- */

enum { HA_SLICES, HA_PER_SLICE, HA_ROWS, HA_COLS };

static ha_shape ha_of(const int64_t *v)
{
    return (ha_shape){(int)v[HA_SLICES], (int)v[HA_PER_SLICE], v[HA_ROWS], v[HA_COLS]};
}

static int ha_def_check(const int64_t *v, char *msg, size_t n)
{
    if (v[HA_SLICES] < 1 || v[HA_SLICES] > PL_MESH_MAX_SLICES || v[HA_PER_SLICE] < 1 ||
        v[HA_SLICES] * v[HA_PER_SLICE] > PL_MESH_MAX_DEVICES) {
        snprintf(msg, n, "slices=%lld, per_slice=%lld: 1 to %d slices of at least 1 device, at most %d devices",
                 (long long)v[HA_SLICES], (long long)v[HA_PER_SLICE], PL_MESH_MAX_SLICES, PL_MESH_MAX_DEVICES);
        return PL_EINVAL;
    }
    ha_shape s = ha_of(v);
    return ha_shape_check(&s, msg, n);
}

static int ha_mesh(const int64_t *v, pl_mesh *mesh, char *msg, size_t n)
{
    char spec[64];
    snprintf(spec, sizeof spec, "dcn:%lld x ring:%lld", (long long)v[HA_SLICES], (long long)v[HA_PER_SLICE]);
    return pl_mesh_parse(spec, mesh, msg, n);
}

static int ha_build(const int64_t *v, pl_kernel_build *b, char *msg, size_t n)
{
    (void)msg, (void)n;
    ha_shape s = ha_of(v);
    ha_call(&b->call, &s);
    b->n_args = 1, b->args[0] = PL_ARRAY(NULL, PL_F32, s.rows, s.cols);
    b->n_outs = 1, b->outs[0] = PL_ARRAY(NULL, PL_F32, s.rows, s.cols);
    return PL_OK;
}

static int ha_reference_of(const int64_t *v, const pl_kernel_build *devs, int n_devices, int device, pl_array *want)
{
    int64_t w[] = {n_devices, v[HA_ROWS], v[HA_COLS]}; /* the sum, as the ring's */
    return ar_reference_of(w, devs, n_devices, device, want);
}

static double ha_bytes(const int64_t *v) { return 8.0 * (double)(v[HA_ROWS] * v[HA_COLS]); }

const pl_kernel_def ex_def_hier_allreduce = {
    .name = "hier_allreduce",
    .summary = "a hierarchical all-reduce over slices joined by DCN (M14): in the slice, across, in the slice",
    .n_params = 4,
    .params = {{.name = "slices", .def = 2, .help = "slices, joined by the data-center network"},
               {.name = "per_slice", .def = 8, .help = "devices a slice, a ring over ICI"},
               {.name = "rows", .def = 1024, .help = "rows of x and o (a multiple of 8 x slices x per_slice)"},
               {.name = "cols", .def = 1024, .help = "columns of x and o"}},
    .check = ha_def_check,
    .build = ha_build,
    .bytes = ha_bytes,
    .mesh = ha_mesh,
    .mesh_reference = ha_reference_of,
};

static const pl_kernel_def *const mesh_defs[] = {&ex_def_ring_allreduce, &ex_def_ring_allgather,
                                                 &ex_def_collective_matmul, &ex_def_hier_allreduce};

const pl_kernel_def *ex_mesh_kernel_find(const char *name)
{
    for (size_t i = 0; name && i < sizeof mesh_defs / sizeof *mesh_defs; i++)
        if (strcmp(mesh_defs[i]->name, name) == 0) return mesh_defs[i];
    return NULL;
}
