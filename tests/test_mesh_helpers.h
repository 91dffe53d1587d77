/* tests/test_mesh_helpers.h: running one call on a mesh for the
 * mesh_runtime suites (test_mesh_runtime*.c): per-device arrays, the call
 * timed on the host clock, and message checks. Static inline, like
 * helpers.h. */
#ifndef TILESIM_TEST_MESH_HELPERS_H
#define TILESIM_TEST_MESH_HELPERS_H

#include <time.h>

#include "../examples/kernels/ring_allgather.h"
#include "../kernel/pltpu.h"
#include "../sim/tilesim_mesh.h"
#include "helpers.h"

#define MH_SENTINEL (-7.25f)

/* A chain down the devices, on semaphore `sem` of each: device me waits
 * for device me + 1's signal (the last waits for none), then signals
 * device me - 1. Returns 1 on device 0, the chain's end. */
static inline int mh_chain(pl_ctx *c, pl_ref sem)
{
    int me = pltpu_device_id(c), n = pltpu_num_devices(c);
    if (me < n - 1) pltpu_semaphore_wait(c, sem, 1);
    if (me > 0) pltpu_semaphore_signal_device(c, sem, 1, me - 1);
    return me == 0;
}

/* One mesh call: n devices, each with x (xr, xc) f32 holding dev * 10000 + i
 * and o (orows, ocols) f32 holding MH_SENTINEL. */
typedef struct mh_run {
    pl_mesh mesh;
    int n;
    int64_t x_elems, o_elems;
    float *x, *o;             /* device d's at d * x_elems, d * o_elems */
    pl_array *args, *outs;
    pl_report *reps;
    pl_mesh_report mr;
    int rc;
    double seconds;           /* host time pl_mesh_call took */
} mh_run;

static inline pl_mesh mh_mesh(const char *text)
{
    pl_mesh m;
    char msg[256] = "";
    int rc = pl_mesh_parse(text, &m, msg, sizeof msg);
    cr_assert_eq(rc, PL_OK, "pl_mesh_parse(\"%s\"): %d %s", text, rc, msg);
    return m;
}

static inline double mh_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static inline void mh_alloc(mh_run *r, const char *mesh, int64_t xr, int64_t xc, int64_t orows, int64_t ocols)
{
    memset(r, 0, sizeof *r);
    r->mesh = mh_mesh(mesh);
    r->n = pl_mesh_devices(&r->mesh);
    r->x_elems = xr * xc, r->o_elems = orows * ocols;
    r->x = malloc((size_t)(r->n * r->x_elems) * sizeof *r->x);
    r->o = malloc((size_t)(r->n * r->o_elems) * sizeof *r->o);
    r->args = calloc((size_t)r->n, sizeof *r->args);
    r->outs = calloc((size_t)r->n, sizeof *r->outs);
    r->reps = calloc((size_t)r->n, sizeof *r->reps);
    cr_assert(r->x && r->o && r->args && r->outs && r->reps, "out of host memory");
    for (int d = 0; d < r->n; d++) {
        for (int64_t i = 0; i < r->x_elems; i++) r->x[d * r->x_elems + i] = (float)(d * 10000 + i);
        for (int64_t i = 0; i < r->o_elems; i++) r->o[d * r->o_elems + i] = MH_SENTINEL;
        r->args[d] = PL_ARRAY(r->x + d * r->x_elems, PL_F32, xr, xc);
        r->outs[d] = PL_ARRAY(r->o + d * r->o_elems, PL_F32, orows, ocols);
    }
}

/* A race or deadlock is reported the same in every schedule: the seed 0
 * run's message is kept in first, later seeds' must match it. */
static inline void mh_expect_same_report(char *first, size_t n, uint64_t seed, const char *error)
{
    if (!seed) snprintf(first, n, "%s", error);
    else cr_expect_str_eq(error, first, "seed %llu: the same report in every schedule", (unsigned long long)seed);
}

static inline void mh_free(mh_run *r)
{
    free(r->x), free(r->o), free(r->args), free(r->outs), free(r->reps);
    memset(r, 0, sizeof *r);
}

/* Run call on r's arrays, timing it. */
static inline int mh_call(mh_run *r, const pl_call *call, const pl_options *opt)
{
    double t0 = mh_now();
    r->rc = pl_mesh_call(&r->mesh, call, r->args, r->outs, opt, &r->mr, r->reps);
    r->seconds = mh_now() - t0;
    return r->rc;
}

/* Does msg name "device D" (not the prefix of "device 12" for 1)? */
static inline int mh_names_device(const char *msg, int dev)
{
    char want[32];
    int n = snprintf(want, sizeof want, "device %d", dev);
    for (const char *p = strstr(msg, want); p; p = strstr(p + 1, want))
        if (p[n] < '0' || p[n] > '9') return 1;
    return 0;
}

/* Does msg name "device D" with the grid point `point` ("(2)") soon after,
 * before any other device is named? How a deadlock says where each waits. */
static inline int mh_names_device_at(const char *msg, int dev, const char *point)
{
    char want[32];
    int n = snprintf(want, sizeof want, "device %d", dev);
    for (const char *p = strstr(msg, want); p; p = strstr(p + 1, want)) {
        if (p[n] >= '0' && p[n] <= '9') continue;
        const char *next = strstr(p + n, "device "), *at = strstr(p + n, point);
        if (at && (!next || at < next)) return 1;
    }
    return 0;
}

/* Assert that msg holds every fact (NULL-terminated list). */
#define mh_assert_says(msg, ...)                                                                     \
    do {                                                                                             \
        const char *facts_[] = {__VA_ARGS__, NULL};                                                  \
        for (int f_ = 0; facts_[f_]; f_++)                                                           \
            cr_assert(strstr((msg), facts_[f_]), "the message should say \"%s\": %s", facts_[f_], (msg)); \
    } while (0)

/* A ring all-gather of (rows, cols) shards on "ring:N" (kernels/ring_allgather.h). */
typedef struct mh_ring {
    pl_mesh mesh;
    ra_data d;
    pl_report *reps;
    pl_mesh_report mr;
    int rc;
    double seconds;
} mh_ring;

static inline void mh_ring_run(mh_ring *r, int n, int64_t rows, int64_t cols, const pl_options *opt,
                               const ra_params *p, int with_data)
{
    char text[32];
    snprintf(text, sizeof text, "ring:%d", n);
    memset(r, 0, sizeof *r);
    r->mesh = mh_mesh(text);
    ra_shape s = {.devices = n, .rows = rows, .cols = cols};
    cr_assert_eq(ra_alloc(&r->d, &s, with_data, 42), PL_OK, "ra_alloc");
    r->reps = calloc((size_t)n, sizeof *r->reps);
    cr_assert(r->reps, "out of host memory");
    pl_call call;
    ra_call(&call, &s, p);
    double t0 = mh_now();
    r->rc = pl_mesh_call(&r->mesh, &call, r->d.args, r->d.outs, opt, &r->mr, r->reps);
    r->seconds = mh_now() - t0;
}

static inline void mh_ring_free(mh_ring *r)
{
    ra_free(&r->d);
    free(r->reps);
    r->reps = NULL;
}

#endif
