/* tests/test_pipeline_poison.c: scratch persists across grid points and
 * starts poisoned (M2), and the poison of every dtype (V1).
 *
 * Each test is named after the rule of docs/PALLAS.md it checks. Kernels
 * never assert: they record what they saw into a host struct reached through
 * pl_kernel_user, and the test asserts after the call, so a failure names the
 * rule rather than a longjmp out of the simulator.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../kernel/pallas.h"
#include "../sim/tilesim.h"
#include "test_pipeline_helpers.h"

/* ---- M2: scratch ------------------------------------------------------------------ */

typedef struct m2_state {
    int64_t vmem_not_nan;  /* VMEM f32 scratch elements not NaN at step 0 */
    int64_t smem_first;    /* SMEM i32 scratch[0] at step 0 */
    int64_t smem_final;    /* its value at the last step */
    const void *acc_data[6];
} m2_state;

static void m2_kernel(pl_ctx *c, pl_ref *refs)
{
    m2_state *u = pl_kernel_user(c);
    pl_ref x = refs[0], o = refs[1], acc = refs[2], cnt = refs[3];
    int64_t i = pl_program_id(c, 0), j = pl_program_id(c, 1), step = i * 3 + j;
    u->acc_data[step] = acc.data;
    if (step == 0) {
        for (int64_t r = 0; r < 8; r++)
            for (int64_t col = 0; col < 128; col++) u->vmem_not_nan += !isnan(pl_get_at(c, acc, r, col));
        u->smem_first = (int64_t)pl_get_at(c, cnt, 0);
        pl_fill(c, acc, 0.0);
        pl_set_at(c, cnt, 0.0, 0);
    }
    pl_add(c, acc, acc, x); /* acc persists across all six steps */
    pl_set_at(c, cnt, pl_get_at(c, cnt, 0) + 1, 0);
    if (step == 5) {
        pl_copy(c, o, acc);
        u->smem_final = (int64_t)pl_get_at(c, cnt, 0);
    }
}

Test(pipeline, M2_scratch_persists_and_starts_poisoned)
{
    float *x = f32_iota(8 * 128), *o = f32_const(8 * 128, -1.0f);
    static m2_state u;
    pl_call call = {.kernel = m2_kernel, .user = &u, .grid_rank = 2, .grid = {2, 3}, .n_in = 1,
                    .in = {{0}}, .n_out = 1, .out = {{0}}, .n_scratch = 2,
                    .scratch = {PLTPU_VMEM(PL_F32, 8, 128), PLTPU_SMEM(PL_I32, 4)}};
    pl_array args[1] = {PL_ARRAY(x, PL_F32, 8, 128)};
    pl_array out = PL_ARRAY(o, PL_F32, 8, 128);
    pl_report rep;
    run_ok(&call, args, &out, NULL, &rep);
    cr_assert_eq(u.vmem_not_nan, 0, "%lld VMEM scratch elements were not NaN at the first step",
                 (long long)u.vmem_not_nan);
    cr_assert_eq(u.smem_first, INT32_MAX, "SMEM i32 scratch started as %lld, want INT32_MAX (rule V1, as JAX)",
                 (long long)u.smem_first);
    cr_assert_eq(u.smem_final, 6, "SMEM counter = %lld after 6 steps", (long long)u.smem_final);
    for (int s = 1; s < 6; s++) cr_expect_eq(u.acc_data[s], u.acc_data[0], "scratch moved at step %d", s);
    for (int e = 0; e < 8 * 128; e++) cr_assert_eq(o[e], 6.0f * (float)e, "o[%d] = %g", e, o[e]);
    cr_assert_eq(rep.n_scratch, 2);
    free(x), free(o);
}

Test(pipeline, M2_scratch_is_zero_with_uninit_zero)
{
    float *x = f32_iota(8 * 128), *o = f32_const(8 * 128, -1.0f);
    static m2_state u;
    pl_call call = {.kernel = m2_kernel, .user = &u, .grid_rank = 2, .grid = {2, 3}, .n_in = 1,
                    .in = {{0}}, .n_out = 1, .out = {{0}}, .n_scratch = 2,
                    .scratch = {PLTPU_VMEM(PL_F32, 8, 128), PLTPU_SMEM(PL_I32, 4)}};
    pl_array args[1] = {PL_ARRAY(x, PL_F32, 8, 128)};
    pl_array out = PL_ARRAY(o, PL_F32, 8, 128);
    pl_options opt = {.uninit = PL_UNINIT_ZERO};
    pl_report rep;
    run_ok(&call, args, &out, &opt, &rep);
    cr_assert_eq(u.vmem_not_nan, 8 * 128, "with uninit zero the scratch must not be NaN");
    cr_assert_eq(u.smem_first, 0);
    free(x), free(o);
}

/* ---- V1: poison per dtype ---------------------------------------------------------- */

#define V1_N 5 /* f32, bf16, f16, i32, i8 */

typedef struct v1_state {
    double out_first[V1_N], out_last[V1_N]; /* output blocks at entry */
    double scr[V1_N];                        /* scratch at entry */
} v1_state;

static void v1_kernel(pl_ctx *c, pl_ref *refs)
{
    v1_state *u = pl_kernel_user(c);
    for (int t = 0; t < V1_N; t++) {
        pl_ref o = refs[t], s = refs[V1_N + t];
        u->out_first[t] = pl_get_at(c, o, 0, 0);
        u->out_last[t] = pl_get_at(c, o, o.shape[0] - 1, o.shape[1] - 1);
        u->scr[t] = pl_get_at(c, s, 1, 2);
    }
    /* writes nothing: the poison goes back to HBM */
}

static void v1_run(pl_uninit uninit)
{
    static const pl_dtype dts[V1_N] = {PL_F32, PL_BF16, PL_F16, PL_I32, PL_I8};
    void *mem[V1_N];
    pl_array outs[V1_N];
    pl_call call = {.kernel = v1_kernel, .grid_rank = 0, .n_out = V1_N, .n_scratch = V1_N};
    static v1_state u;
    call.user = &u;
    for (int t = 0; t < V1_N; t++) {
        size_t es = pl_dtype_size(dts[t]);
        mem[t] = malloc(32 * 128 * es);
        cr_assert_not_null(mem[t]);
        for (int e = 0; e < 32 * 128; e++) pl_store_elem((char *)mem[t] + (size_t)e * es, dts[t], 3.0);
        outs[t] = PL_ARRAY(mem[t], dts[t], 32, 128);
        call.out[t] = (pl_block_spec){0};
        call.scratch[t] = PLTPU_VMEM(dts[t], 4, 8);
    }
    pl_options opt = {.uninit = uninit};
    pl_report rep;
    pl_pallas_call(&call, NULL, outs, &opt, &rep); /* V1 may report NaN reaching HBM */
    cr_assert_eq(rep.steps, 1, "the call did not run: %s", rep.error);
    for (int t = 0; t < V1_N; t++) {
        const char *n = pl_dtype_name(dts[t]);
        size_t es = pl_dtype_size(dts[t]);
        if (uninit == PL_UNINIT_ZERO) {
            cr_expect_eq(u.out_first[t], 0.0, "%s output at entry: %g", n, u.out_first[t]);
            cr_expect_eq(u.out_last[t], 0.0, "%s output at entry: %g", n, u.out_last[t]);
            cr_expect_eq(u.scr[t], 0.0, "%s scratch at entry: %g", n, u.scr[t]);
            for (int e = 0; e < 32 * 128; e++)
                cr_assert_eq(pl_load_elem((char *)mem[t] + (size_t)e * es, dts[t]), 0.0, "%s HBM element %d", n,
                             e);
        } else if (pl_dtype_is_float(dts[t])) {
            cr_expect(isnan(u.out_first[t]) && isnan(u.out_last[t]), "%s output at entry: %g, %g, want NaN", n,
                      u.out_first[t], u.out_last[t]);
            cr_expect(isnan(u.scr[t]), "%s scratch at entry: %g, want NaN", n, u.scr[t]);
            for (int e = 0; e < 32 * 128; e++)
                cr_assert(isnan(pl_load_elem((char *)mem[t] + (size_t)e * es, dts[t])), "%s HBM element %d: %g", n,
                          e, pl_load_elem((char *)mem[t] + (size_t)e * es, dts[t]));
        } else {
            /* integers: the dtype's maximum, as JAX's TPU interpret mode fills them (V1) */
            double max = dts[t] == PL_I32 ? (double)INT32_MAX : (double)INT8_MAX;
            cr_expect_eq(u.out_first[t], max, "%s output at entry: %g, want %g", n, u.out_first[t], max);
            cr_expect_eq(u.out_last[t], max, "%s output at entry: %g, want %g", n, u.out_last[t], max);
            cr_expect_eq(u.scr[t], max, "%s scratch at entry: %g, want %g", n, u.scr[t], max);
            for (int e = 0; e < 32 * 128; e++)
                cr_assert_eq(pl_load_elem((char *)mem[t] + (size_t)e * es, dts[t]), max, "%s HBM element %d", n, e);
        }
        free(mem[t]);
    }
}

Test(pipeline, V1_poison_per_dtype) { v1_run(PL_UNINIT_NAN); }

Test(pipeline, V1_uninit_zero_per_dtype) { v1_run(PL_UNINIT_ZERO); }

Test(pipeline, V1_bf16_poison_is_nan_bits)
{
    uint16_t *o = malloc(16 * 128 * sizeof *o);
    cr_assert_not_null(o);
    for (int e = 0; e < 16 * 128; e++) o[e] = 0x3f80; /* 1.0 */
    pl_call call = {.kernel = p4_nothing_kernel, .grid_rank = 1, .grid = {2}, .n_out = 1,
                    .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)}};
    pl_array out = PL_ARRAY(o, PL_BF16, 16, 128);
    pl_report rep;
    pl_pallas_call(&call, NULL, &out, NULL, &rep);
    for (int e = 0; e < 16 * 128; e++)
        cr_assert((o[e] & 0x7f80) == 0x7f80 && (o[e] & 0x7f) != 0, "bf16 element %d = 0x%04x is not a NaN", e, o[e]);
    free(o);
}

/* ---- V1 for integers: the poison value reaches HBM after an uninitialized read ------- */

/* An integer has no NaN, so its poison (the dtype's maximum) reaching HBM
 * is a finding once the kernel read uninitialized memory: a running index
 * never set to its start (JAX's argmax shape), copied out. A kernel that
 * writes INT32_MAX itself reads nothing uninitialized: no finding. */
static void int_uninit_kernel(pl_ctx *c, pl_ref *refs)
{
    if (*(const int *)pl_kernel_user(c)) pl_fill(c, refs[2], 7); /* the fix: the start value */
    pl_copy(c, refs[1], refs[2]);
    (void)refs[0];
}

static void int_max_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_fill(c, refs[1], 2147483647.0);
    (void)refs[0];
}

static int int_poison_call(pl_kernel_fn fn, int init, int strict, int32_t *y, pl_report *rep)
{
    static int32_t x[8 * 128];
    pl_call call = {.name = "int_poison", .kernel = fn, .user = &init, .n_in = 1, .n_out = 1,
                    .in = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 8, 128)}, .out = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 8, 128)},
                    .n_scratch = 1, .scratch = {PLTPU_VMEM(PL_I32, 8, 128)}};
    pl_array a = PL_ARRAY(x, PL_I32, 8, 128), o = PL_ARRAY(y, PL_I32, 8, 128);
    pl_options opt = {.strict = strict};
    return pl_pallas_call(&call, &a, &o, &opt, rep);
}

Test(pipeline_poison, V1_integer_poison_reaching_hbm_after_an_uninitialized_read_is_a_finding)
{
    int32_t y[8 * 128];
    pl_report rep;
    cr_assert_eq(int_poison_call(int_uninit_kernel, 0, 0, y, &rep), PL_OK, "%s", rep.error);
    cr_assert_eq(y[0], INT32_MAX, "the poison reached HBM");
    cr_assert_geq(rep.n_findings, 1);
    cr_expect_eq(rep.findings[0].kind, PL_FIND_POISON);
    cr_expect_str_eq(rep.findings[0].rule, "V1");
    cr_expect(strstr(rep.findings[0].msg, "poison value 2147483647") && strstr(rep.findings[0].msg, "scratch"),
              "%s", rep.findings[0].msg);
    cr_expect_eq(int_poison_call(int_uninit_kernel, 0, 1, y, &rep), PL_EPOISON, "strict: an error");
    cr_assert_eq(int_poison_call(int_uninit_kernel, 1, 1, y, &rep), PL_OK, "initialized: %s", rep.error);
    cr_expect_eq(rep.n_findings, 0);
    cr_assert_eq(int_poison_call(int_max_kernel, 0, 1, y, &rep), PL_OK, "INT32_MAX computed: %s", rep.error);
    cr_expect_eq(rep.n_findings, 0, "a value the kernel wrote is not poison");
}
