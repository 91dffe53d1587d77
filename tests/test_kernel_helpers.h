/* tests/test_kernel_helpers.h: what the tests of the kernel language
 * (test_kernel_*.c) share: float bits and reference roundings computed in
 * double, a one-step call that runs a test body inside a kernel, and element
 * access in row-major order. Static inline, as in helpers.h, so that a file
 * may use only some of them. */
#ifndef TILESIM_TEST_KERNEL_HELPERS_H
#define TILESIM_TEST_KERNEL_HELPERS_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../kernel/pallas.h"
#include "../sim/tilesim.h"

static inline uint32_t f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

static inline float f32_of(uint32_t u)
{
    float x;
    memcpy(&x, &u, 4);
    return x;
}

/* Reference round-to-nearest-even of x to a binary float format with `mant`
 * stored mantissa bits, minimum normal exponent emin and overflow threshold
 * 2^(emax+1) (1 - 2^-(mant+2)) (the first value that rounds to inf). The
 * result is returned as a double (inf on overflow, signed zero kept). */
static inline double ref_round(float xf, int mant, int emin, int emax)
{
    double x = xf, ax = fabs(x);
    if (isnan(x) || isinf(x)) return x;
    double q;
    if (ax < ldexp(1.0, emin)) q = ldexp(1.0, emin - mant); /* subnormal spacing */
    else {
        int e;
        frexp(ax, &e); /* ax = f 2^e, f in [0.5, 1) */
        q = ldexp(1.0, e - 1 - mant);
    }
    double n = ax / q, fl = floor(n), rem = n - fl;
    if (rem > 0.5 || (rem == 0.5 && fmod(fl, 2.0) == 1.0)) fl += 1.0;
    double v = fl * q;
    if (v >= ldexp(1.0, emax + 1)) v = INFINITY;
    return signbit(x) ? -v : v;
}

static inline double ref_bf16(float x) { return ref_round(x, 7, -126, 127); }
static inline double ref_f16(float x) { return ref_round(x, 10, -14, 15); }

/* Run `fn` once inside a kernel (grid ()) with the given scratch buffers. */
typedef void (*body_fn)(pl_ctx *c, pl_ref *refs, void *arg);

typedef struct body {
    body_fn fn;
    void *arg;
} body;

static inline void body_kernel(pl_ctx *c, pl_ref *refs)
{
    body *b = pl_kernel_user(c);
    b->fn(c, refs, b->arg);
}

static inline int run_body(body_fn fn, void *arg, const pl_scratch *scr, int n_scr, pl_report *rep)
{
    static body b;
    b = (body){fn, arg};
    pl_call call = {.name = "body", .kernel = body_kernel, .user = &b, .n_scratch = n_scr};
    for (int i = 0; i < n_scr; i++) call.scratch[i] = scr[i];
    return pl_pallas_call(&call, NULL, NULL, NULL, rep);
}

static inline void run_body_ok(body_fn fn, void *arg, const pl_scratch *scr, int n_scr, pl_report *rep)
{
    int rc = run_body(fn, arg, scr, n_scr, rep);
    cr_assert_eq(rc, PL_OK, "the kernel failed with %d (%s): %s", rc, pl_strerror(rc), rep->error);
}

/* Row-major element e of r as an index. */
static inline void unravel(const pl_ref *r, int64_t e, int64_t *idx)
{
    for (int d = r->rank - 1; d >= 0; d--) {
        idx[d] = e % r->shape[d];
        e /= r->shape[d];
    }
}

/* Set / get every element of r in row-major order. */
static inline void put(pl_ctx *c, pl_ref r, const double *v)
{
    int64_t idx[PL_MAX_RANK] = {0};
    for (int64_t e = 0; e < pl_size(r); e++) {
        unravel(&r, e, idx);
        pl_set(c, r, idx, v[e]);
    }
}

static inline void get(pl_ctx *c, pl_ref r, double *v)
{
    int64_t idx[PL_MAX_RANK] = {0};
    for (int64_t e = 0; e < pl_size(r); e++) {
        unravel(&r, e, idx);
        v[e] = pl_get(c, r, idx);
    }
}

/* Same value or both NaN. */
static inline int same(double a, double b) { return (isnan(a) && isnan(b)) || (a == b && signbit(a) == signbit(b)); }

#endif
