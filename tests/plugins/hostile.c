/* tests/plugins/hostile.c: a plugin that misbehaves on purpose, for
 * tests/test_plugin_guard.c (issue 21: a plugin must not take tilesim down
 * without saying why).
 *
 * The kernel 'hostile' squares x over a (rows/br, 2) grid and, at grid
 * point (at, 1), ends the way its parameter `how` says: 1 an invalid memory
 * access, 2 abort(), 3 exit(7), 4 pthread_exit(), 5 a stack overflow. Its
 * callbacks misbehave the same way when `where` names them (1 build, 2
 * reference). 0 everywhere: a correct kernel.
 *
 * The loader itself misbehaves when the environment variable
 * TILESIM_HOSTILE_LOADER names how: "garbage" (a pointer to nothing),
 * "null_candidates", "bad_divides", "wild_divides", "negative_candidates", "long_name", "bad_kind",
 * "bad_build", "duplicate", "huge_count", "null_def", "crash" (segfaults
 * inside tilesim_kernels).
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/pallas.h"
#include "sim/kdef.h"

enum { P_ROWS, P_BR, P_HOW, P_AT, P_WHERE, N_P };
enum { HOW_NONE, HOW_SEGV, HOW_ABORT, HOW_EXIT, HOW_PTHREAD_EXIT, HOW_STACK };

static volatile int sink;
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

static void misbehave(int64_t how)
{
    switch (how) {
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
    if (v[P_WHERE] == 0 && pl_program_id(c, 0) == v[P_AT] && pl_program_id(c, 1) == 1) misbehave(v[P_HOW]);
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
    b->n_args = 1;
    b->args[0] = PL_ARRAY(NULL, PL_F32, rows, 256);
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
        [P_HOW] = {.name = "how", .def = 0, .help = "0 fine, 1 segv, 2 abort, 3 exit(7), 4 pthread_exit, 5 stack"}, \
        [P_AT] = {.name = "at", .def = 2, .help = "the grid row where it happens"},                    \
        [P_WHERE] = {.name = "where", .def = 0, .help = "0 the kernel, 1 build, 2 reference"},        \
    }

static const pl_kernel_def hostile_def = {
    .name = "hostile",
    .summary = "y = x * x, then misbehaves as told",
    .n_params = N_P,
    .params = HOSTILE_PARAMS,
    .build = hostile_build,
    .reference = hostile_reference,
};

/* ---- the loader's misbehaviours --------------------------------------------------- */

static pl_kernel_def broken;
static const pl_kernel_def *one[1];
static const pl_kernel_def *two[2];
static char long_name[200];

int tilesim_kernels(int abi, const pl_kernel_def *const **defs)
{
    if (abi != PL_KERNEL_ABI) return -1;
    const char *how = getenv("TILESIM_HOSTILE_LOADER");
    one[0] = &hostile_def;
    *defs = one;
    if (!how || !how[0]) return 1;
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
    }
    return 1;
}
