/* tests/plugins/hostile.c: a plugin that misbehaves on purpose, for
 * tests/test_plugin_guard.c (issue 21: a plugin must not take tilesim down
 * without saying why).
 *
 * The kernel 'hostile' squares x over a (rows/br, 2) grid and, at grid
 * point (at, 1), ends the way its parameter `how` says: 1 an invalid memory
 * access, 2 abort(), 3 exit(7), 4 pthread_exit(), 5 a stack overflow, 6 an
 * endless loop without a tilesim call, 7 2.5 s of C code without one, 8
 * (the kernel only) NaN written into its output block, 9 (the kernel
 * only) its result also written into its input block (V3; right outputs). Its
 * callbacks misbehave the same way when `where` names them (1 build, 2
 * reference, 6 the index map function of x). 0 everywhere: a correct kernel.
 *
 * The loader itself misbehaves when the environment variable
 * TILESIM_HOSTILE_LOADER names how: "garbage" (a pointer to nothing),
 * "null_candidates", "bad_divides", "wild_divides", "negative_candidates", "long_name", "bad_kind",
 * "bad_build", "duplicate", "huge_count", "null_def", "crash" (segfaults
 * inside tilesim_kernels), "chip_defaults_crash" (a chip_defaults callback
 * that segfaults), "bad_chip_defaults" (one outside any loaded object),
 * "mesh" (the loader is fine, and returns the mesh
 * kernel 'hostile_mesh' instead: a ring whose device `at` misbehaves as
 * `how` says in its kernel (where 0), its mesh callback (where 3) or its
 * mesh_reference (where 4); where 5: a mesh callback whose answer changes
 * at every call).
 */
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernel/pallas.h"
#include "kernel/pltpu.h"
#include "sim/kdef.h"

enum { P_ROWS, P_BR, P_HOW, P_AT, P_WHERE, N_P };
enum { HOW_NONE, HOW_SEGV, HOW_ABORT, HOW_EXIT, HOW_PTHREAD_EXIT, HOW_STACK, HOW_SPIN, HOW_BUSY, HOW_NAN, HOW_INPUT_WRITE };

static volatile int sink;
static volatile unsigned spins; /* unsigned: a spin may wrap it (UBSan) */
static volatile uintptr_t bad_address = 16; /* not NULL: UBSan would report a NULL store first */

/* Deep enough to overflow any thread's stack; volatile so that it is not
 * turned into a loop. */
static int recurse(volatile int depth)
{
    volatile char pad[4096];
    pad[0] = (char)depth;
    if (depth > (1 << 30)) return pad[0]; /* never: a stack is far smaller */
    return recurse(depth + 1) + pad[0];
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void misbehave(int64_t how)
{
    switch (how) {
    case HOW_SPIN: /* an endless loop that never calls tilesim */
        for (;;) spins++;
    case HOW_BUSY: /* 2.5 s of C code that calls nothing either, then returns: slow, not stuck */
        for (double t0 = now_s(); now_s() - t0 < 2.5;) spins++;
        break;
    case HOW_SEGV: *(volatile int *)bad_address = 1; break;
    case HOW_ABORT: abort();
    case HOW_EXIT: exit(7);
    case HOW_PTHREAD_EXIT: pthread_exit(NULL);
    case HOW_STACK: sink = recurse(0); break;
    }
}

static void hostile_kernel(pl_ctx *c, pl_ref *refs)
{
    const int64_t *v = pl_kernel_user(c);
    pl_mul(c, refs[1], refs[0], refs[0]);
    if (v[P_WHERE] == 0 && pl_program_id(c, 0) == v[P_AT] && pl_program_id(c, 1) == 1) {
        if (v[P_HOW] == HOW_NAN) pl_fill(c, refs[1], NAN);
        if (v[P_HOW] == HOW_INPUT_WRITE) pl_copy(c, refs[0], refs[1]);
        misbehave(v[P_HOW]);
    }
}

/* where 6: x's index map is a function that misbehaves at (at, 1) */
static void hostile_map(const int64_t *idx, const pl_ref *prefetch, int64_t *bidx, void *user)
{
    (void)prefetch;
    const int64_t *v = user;
    if (idx[0] == v[P_AT] && idx[1] == 1) misbehave(v[P_HOW]);
    bidx[0] = idx[0], bidx[1] = idx[1];
}

static int hostile_build(const int64_t *v, pl_kernel_build *b, char *msg, size_t n)
{
    (void)msg, (void)n;
    if (v[P_WHERE] == 1) misbehave(v[P_HOW]);
    memcpy(b->param, v, N_P * sizeof *v);
    int64_t rows = v[P_ROWS], br = v[P_BR];
    b->call = (pl_call){
        .name = "hostile",
        .kernel = hostile_kernel,
        .user = b->param,
        .grid_rank = 2,
        .grid = {rows / br, 2},
        .semantics = {PL_PARALLEL, PL_PARALLEL},
        .n_in = 1,
        .in = {PL_BLOCK(PL_MAP(0, 1), br, 128)},
        .n_out = 1,
        .out = {PL_BLOCK(PL_MAP(0, 1), br, 128)},
    };
    if (v[P_WHERE] == 6) b->call.in[0].map = PL_MAP_FN(hostile_map, b->param);
    b->n_args = 1;
    b->args[0] = PL_ARRAY(NULL, PL_F32, v[P_WHERE] == 7 ? -rows : rows, 256); /* where 7: a negative size */
    b->n_outs = 1;
    b->outs[0] = PL_ARRAY(NULL, PL_F32, rows, 256);
    return PL_OK;
}

static int hostile_reference(const int64_t *v, const pl_kernel_build *b, pl_array *want)
{
    if (v[P_WHERE] == 2) misbehave(v[P_HOW]);
    const float *x = b->args[0].data;
    float *y = want[0].data;
    for (int64_t i = 0; i < v[P_ROWS] * 256; i++) y[i] = x[i] * x[i];
    return PL_OK;
}

static const int64_t br_cands[] = {8, 16, 32};

#define HOSTILE_PARAMS                                                                                 \
    {                                                                                                  \
        [P_ROWS] = {.name = "rows", .def = 64, .help = "rows of x"},                                   \
        [P_BR] = {.name = "br", .def = 16, .candidates = br_cands, .n_candidates = 3, .help = "rows per block"}, \
        [P_HOW] = {.name = "how", .def = 0, .help = "0 fine, 1 segv, 2 abort, 3 exit(7), 4 pthread_exit, 5 stack, 6 spin, 7 2.5 s busy, 8 NaN, 9 V3"}, \
        [P_AT] = {.name = "at", .def = 2, .help = "the grid row where it happens"},                    \
        [P_WHERE] = {.name = "where", .def = 0, .help = "0 the kernel, 1 build, 2 reference, 6 x's index map, 7 x's size negative"},        \
    }

static const pl_kernel_def hostile_def = {
    .name = "hostile",
    .summary = "y = x * x, then misbehaves as told",
    .n_params = N_P,
    .params = HOSTILE_PARAMS,
    .build = hostile_build,
    .reference = hostile_reference,
};

/* ---- a mesh kernel that misbehaves: each device copies x to its right
 * neighbour's o (M11); device `at` misbehaves first ---------------------------------- */

enum { M_DEVICES, M_HOW, M_AT, M_WHERE, M_N };

static void mesh_kernel(pl_ctx *c, pl_ref *refs)
{
    const int64_t *v = pl_kernel_user(c);
    int me = pltpu_device_id(c), n = (int)v[M_DEVICES];
    pl_mul(c, refs[0], refs[0], refs[0]);
    if (v[M_WHERE] == 0 && me == v[M_AT]) misbehave(v[M_HOW]);
    pltpu_remote_copy cp = pltpu_make_async_remote_copy(c, refs[0], refs[1], pl_at(c, refs[2], 0),
                                                        pl_at(c, refs[2], 1), (me + 1) % n);
    pltpu_remote_copy_start(c, &cp);
    if (v[M_WHERE] == 0 && me == v[M_AT] && v[M_HOW] == HOW_INPUT_WRITE) /* a store into the copy's source before */
        pl_add_scalar(c, refs[0], refs[0], 0.0);                         /* its wait_send (M7): the same values */
    pltpu_remote_copy_wait(c, &cp);
}

static int mesh_calls; /* where 5: the mesh answers ring:4, then ring:8, then ring:4, ... */

static int mesh_of(const int64_t *v, pl_mesh *mesh, char *msg, size_t n)
{
    if (v[M_WHERE] == 3) misbehave(v[M_HOW]);
    char spec[32] = "ring:4";
    if (v[M_DEVICES] == 8 || (v[M_WHERE] == 5 && mesh_calls++ % 2)) strcpy(spec, "ring:8");
    return pl_mesh_parse(spec, mesh, msg, n);
}

static int mesh_build(const int64_t *v, pl_kernel_build *b, char *msg, size_t n)
{
    (void)msg, (void)n;
    memcpy(b->param, v, M_N * sizeof *v);
    b->call = (pl_call){.name = "hostile_mesh", .kernel = mesh_kernel, .user = b->param, .grid_rank = 1,
                        .grid = {1}, .n_in = 1, .in = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 8, 128)},
                        .n_out = 1, .out = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 8, 128)},
                        .n_scratch = 1, .scratch = {PLTPU_SEMAPHORE_DMA(2)}};
    b->n_args = 1, b->args[0] = PL_ARRAY(NULL, PL_F32, 8, 128);
    b->n_outs = 1, b->outs[0] = PL_ARRAY(NULL, PL_F32, 8, 128);
    return PL_OK;
}

static int mesh_reference(const int64_t *v, const pl_kernel_build *devs, int n_devices, int device, pl_array *want)
{
    if (v[M_WHERE] == 4) misbehave(v[M_HOW]);
    const float *x = devs[(device + n_devices - 1) % n_devices].args[0].data;
    float *o = want[0].data;
    for (int i = 0; i < 8 * 128; i++) o[i] = x[i] * x[i];
    return PL_OK;
}

static const pl_kernel_def hostile_mesh_def = {
    .name = "hostile_mesh",
    .summary = "each device's x squared into its right neighbour's o, then misbehaves as told",
    .n_params = M_N,
    .params = {[M_DEVICES] = {.name = "devices", .def = 4, .help = "4 or 8"},
               [M_HOW] = {.name = "how", .def = 0, .help = "as hostile's"},
               [M_AT] = {.name = "at", .def = 1, .help = "the device that misbehaves"},
               [M_WHERE] = {.name = "where", .def = 0,
                            .help = "0 the kernel, 3 mesh, 4 mesh_reference, 5 a mesh that changes at every call"}},
    .build = mesh_build,
    .mesh = mesh_of,
    .mesh_reference = mesh_reference,
};

/* ---- the loader's misbehaviours --------------------------------------------------- */

static void crashing_chip_defaults(int64_t *v, const pl_chip *chip)
{
    (void)v, (void)chip;
    misbehave(HOW_SEGV);
}

static pl_kernel_def broken;
static const pl_kernel_def *one[1];
static const pl_kernel_def *two[2];
static char long_name[200];

/* TILESIM_HOSTILE_CTOR=exit|abort: misbehave while the plugin loads, in a
 * constructor, before tilesim calls anything of it */
__attribute__((constructor)) static void hostile_ctor(void)
{
    const char *how = getenv("TILESIM_HOSTILE_CTOR");
    if (how && !strcmp(how, "exit")) exit(0);
    if (how && !strcmp(how, "abort")) abort();
}

int tilesim_kernels(int abi, const pl_kernel_def *const **defs)
{
    if (abi != PL_KERNEL_ABI) return -1;
    const char *how = getenv("TILESIM_HOSTILE_LOADER");
    one[0] = &hostile_def;
    *defs = one;
    if (!how || !how[0]) return 1;
    if (!strcmp(how, "mesh")) {
        one[0] = &hostile_mesh_def;
        return 1;
    }
    broken = hostile_def;
    one[0] = &broken;
    if (!strcmp(how, "garbage")) {
        *defs = (const pl_kernel_def *const *)(uintptr_t)0x10;
    } else if (!strcmp(how, "null_candidates")) {
        broken.params[P_BR].candidates = NULL; /* n_candidates stays 3 */
    } else if (!strcmp(how, "bad_divides")) {
        broken.params[P_BR].divides = "no_such_param";
    } else if (!strcmp(how, "wild_divides")) {
        broken.params[P_BR].divides = (const char *)(uintptr_t)0x10; /* not readable */
    } else if (!strcmp(how, "negative_candidates")) {
        broken.params[P_BR].n_candidates = -1;
    } else if (!strcmp(how, "long_name")) {
        memset(long_name, 'k', sizeof long_name); /* no NUL within 200 bytes */
        broken.name = long_name;
    } else if (!strcmp(how, "bad_kind")) {
        broken.params[P_HOW].kind = (pl_param_kind)7;
    } else if (!strcmp(how, "bad_build")) {
        broken.build = (int (*)(const int64_t *, pl_kernel_build *, char *, size_t))(uintptr_t)0x1234;
    } else if (!strcmp(how, "duplicate")) {
        two[0] = two[1] = &hostile_def;
        *defs = two;
        return 2;
    } else if (!strcmp(how, "huge_count")) {
        return 1 << 30;
    } else if (!strcmp(how, "null_def")) {
        one[0] = NULL;
    } else if (!strcmp(how, "crash")) {
        misbehave(HOW_SEGV);
    } else if (!strcmp(how, "chip_defaults_crash")) {
        broken.chip_defaults = crashing_chip_defaults;
    } else if (!strcmp(how, "bad_chip_defaults")) {
        broken.chip_defaults = (void (*)(int64_t *, const pl_chip *))(uintptr_t)0x1234;
    }
    return 1;
}
