/* tests/test_pipeline_outputs.c: output blocks while a call runs: they stay
 * in VMEM while their block index holds and are written back when it changes
 * (P3), start as garbage (P4), and may not be revisited after a write-back
 * (P5).
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

/* ---- P3: outputs stay in VMEM while their block index holds ---------------------- */

typedef struct p3_state {
    float *o_hbm;          /* the output array, watched from inside the kernel */
    const void *data[6];   /* o.data per step */
    int64_t early_write;   /* HBM rows of block 1 changed before the end */
    int64_t premature;     /* HBM block 0 changed while still being accumulated */
    int64_t missing;       /* HBM block 0 not final once block 1 runs */
    const float *want;     /* final o */
} p3_state;

static void p3_kernel(pl_ctx *c, pl_ref *refs)
{
    p3_state *u = pl_kernel_user(c);
    pl_ref x = refs[0], o = refs[1];
    int64_t i = pl_program_id(c, 0), k = pl_program_id(c, 1);
    u->data[i * 3 + k] = o.data;
    for (int64_t e = 0; e < 8 * 128; e++) {
        u->early_write += u->o_hbm[8 * 128 + e] != -1.0f;
        if (i == 0) u->premature += u->o_hbm[e] != -1.0f;
        if (i == 1 && k >= 1) u->missing += u->o_hbm[e] != u->want[e];
    }
    if (k == 0) pl_fill(c, o, 0.0);
    pl_add(c, o, o, x);
}

Test(pipeline, P3_output_block_accumulates_and_writes_back_once)
{
    float *x = f32_iota(16 * 384), *o = f32_const(16 * 128, -1.0f), *want = malloc(16 * 128 * sizeof *want);
    cr_assert_not_null(want);
    for (int r = 0; r < 16; r++)
        for (int col = 0; col < 128; col++) {
            float s = 0;
            for (int k = 0; k < 3; k++) s += x[r * 384 + k * 128 + col];
            want[r * 128 + col] = s;
        }
    static p3_state u;
    u = (p3_state){.o_hbm = o, .want = want};
    pl_call call = {.kernel = p3_kernel, .user = &u, .grid_rank = 2, .grid = {2, 3}, .n_in = 1,
                    .in = {PL_BLOCK(PL_MAP(0, 1), 8, 128)}, .n_out = 1,
                    .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)}};
    pl_array args[1] = {PL_ARRAY(x, PL_F32, 16, 384)};
    pl_array out = PL_ARRAY(o, PL_F32, 16, 128);
    pl_report rep;
    run_ok(&call, args, &out, NULL, &rep);
    for (int i = 0; i < 2; i++)
        for (int k = 1; k < 3; k++)
            cr_expect_eq(u.data[i * 3 + k], u.data[i * 3], "block %d: step %d got another buffer than step 0", i,
                         k);
    cr_expect_eq(u.premature, 0, "block 0 reached HBM while its index was still current");
    cr_expect_eq(u.early_write, 0, "block 1 reached HBM before the grid ended");
    cr_expect_eq(u.missing, 0, "block 0 was not in HBM after its index changed");
    int64_t bad = 0;
    for (int e = 0; e < 16 * 128; e++) bad += o[e] != want[e];
    cr_assert_eq(bad, 0, "%lld output elements differ from the sum over k", (long long)bad);
    cr_assert_eq(rep.op[1].writebacks, 2, "writebacks = %lld, want one per output block",
                 (long long)rep.op[1].writebacks);
    cr_assert_eq(rep.op[1].bytes_out, 16 * 128 * 4);
    cr_assert_eq(rep.op[0].copies, 6);
    free(x), free(o), free(want);
}

/* o += x over k with the zeroing forgotten (the pipelining guide's pattern without its
 * `@pl.when(k == 0)`): the NaN that reaches HBM is explained by the first read of the
 * output block before anything wrote all of it, not as a part left unwritten (P4, V1). */
static void p4_acc_kernel(pl_ctx *c, pl_ref *refs)
{
    int zero = *(const int *)pl_kernel_user(c);
    if (zero && pl_program_id(c, 1) == 0) pl_fill(c, refs[1], 0.0);
    pl_add(c, refs[1], refs[1], refs[0]);
}

Test(pipeline, P4_an_output_accumulated_without_zeroing_names_the_read)
{
    float *x = f32_iota(16 * 384), *o = f32_const(16 * 128, -1.0f);
    static int zero;
    pl_call call = {.kernel = p4_acc_kernel, .user = &zero, .grid_rank = 2, .grid = {2, 3}, .n_in = 1,
                    .in = {PL_BLOCK(PL_MAP(0, 1), 8, 128)}, .n_out = 1,
                    .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)}};
    pl_array args[1] = {PL_ARRAY(x, PL_F32, 16, 384)};
    pl_array out = PL_ARRAY(o, PL_F32, 16, 128);
    pl_report rep;
    zero = 0;
    run_ok(&call, args, &out, NULL, &rep);
    cr_assert_eq(rep.n_findings, 2, "one per output block");
    for (int i = 0; i < 2; i++) {
        const char *m = rep.findings[i].msg;
        cr_expect_eq(rep.findings[i].kind, PL_FIND_POISON);
        cr_expect(strstr(m, "an output block read before it was written") && strstr(m, "pl_add read refs[1]") &&
                  strstr(m, i ? "grid point (1, 0)" : "grid point (0, 0)") && strstr(m, "zero it"), "%s", m);
    }
    zero = 1; /* zeroed first: the reads that follow are of what the kernel wrote */
    run_ok(&call, args, &out, NULL, &rep);
    cr_expect_eq(rep.n_findings, 0, "%s", rep.n_findings ? rep.findings[0].msg : "");
    free(x), free(o);
}

/* Output index changes every step: one write-back per step. */
static void p3_fill_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_fill(c, refs[0], (double)(pl_program_id(c, 0) * 10 + pl_program_id(c, 1)));
}

Test(pipeline, P3_writeback_per_block_change)
{
    float *o = f32_const(32 * 256, -1.0f);
    pl_call call = {.kernel = p3_fill_kernel, .grid_rank = 2, .grid = {4, 2}, .n_out = 1,
                    .out = {PL_BLOCK(PL_MAP(0, 1), 8, 128)}};
    pl_array out = PL_ARRAY(o, PL_F32, 32, 256);
    pl_report rep;
    run_ok(&call, NULL, &out, NULL, &rep);
    cr_assert_eq(rep.op[0].writebacks, 8);
    cr_assert_eq(rep.op[0].bytes_out, 32 * 256 * 4);
    for (int r = 0; r < 32; r++)
        for (int col = 0; col < 256; col++)
            cr_assert_eq(o[r * 256 + col], (float)((r / 8) * 10 + col / 128), "o[%d][%d] = %g", r, col,
                         o[r * 256 + col]);
    free(o);
}

/* ---- P4: output blocks start as garbage --------------------------------------- */

typedef struct p4_state {
    int64_t not_poison; /* output elements that were not poison on entry */
    int64_t entries;
} p4_state;

Test(pipeline, P4_unwritten_output_is_nan_in_hbm)
{
    float *o = f32_const(16 * 256, 7.0f);
    pl_call call = {.kernel = p4_nothing_kernel, .grid_rank = 2, .grid = {2, 2}, .n_out = 1,
                    .out = {PL_BLOCK(PL_MAP(0, 1), 8, 128)}};
    pl_array out = PL_ARRAY(o, PL_F32, 16, 256);
    pl_report rep;
    /* status not asserted: rule V1 allows reporting the NaN; the NaN is what
     * matters, and it proves the write-back happened */
    pl_pallas_call(&call, NULL, &out, NULL, &rep);
    cr_assert_eq(count_nan_f32(o, 16 * 256), 16 * 256,
                 "%d of %d elements are NaN; an unwritten output block must write back poison",
                 count_nan_f32(o, 16 * 256), 16 * 256);
    cr_assert_eq(rep.op[0].writebacks, 4);
    free(o);
}

Test(pipeline, P4_unwritten_output_is_zero_with_uninit_zero)
{
    float *o = f32_const(16 * 256, 7.0f);
    pl_call call = {.kernel = p4_nothing_kernel, .grid_rank = 2, .grid = {2, 2}, .n_out = 1,
                    .out = {PL_BLOCK(PL_MAP(0, 1), 8, 128)}};
    pl_array out = PL_ARRAY(o, PL_F32, 16, 256);
    pl_options opt = {.uninit = PL_UNINIT_ZERO};
    pl_report rep;
    run_ok(&call, NULL, &out, &opt, &rep);
    for (int e = 0; e < 16 * 256; e++) cr_assert_eq(o[e], 0.0f, "o[%d] = %g, want 0", e, o[e]);
    free(o);
}

/* Every new output block is poison on entry: never the HBM contents, never
 * what an earlier block left in the same (reused) buffer. */
static void p4_entry_kernel(pl_ctx *c, pl_ref *refs)
{
    p4_state *u = pl_kernel_user(c);
    pl_ref o = refs[0];
    for (int64_t r = 0; r < 8; r++)
        for (int64_t col = 0; col < 128; col++) u->not_poison += !isnan(pl_get_at(c, o, r, col));
    u->entries++;
    pl_fill(c, o, (double)(pl_program_id(c, 0) + 1));
}

Test(pipeline, P4_output_block_is_never_loaded_and_starts_poisoned)
{
    float *o = f32_const(32 * 128, 5.0f);
    static p4_state u;
    pl_call call = {.kernel = p4_entry_kernel, .user = &u, .grid_rank = 1, .grid = {4}, .n_out = 1,
                    .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)}};
    pl_array out = PL_ARRAY(o, PL_F32, 32, 128);
    pl_report rep;
    run_ok(&call, NULL, &out, NULL, &rep);
    cr_assert_eq(u.entries, 4);
    cr_assert_eq(u.not_poison, 0, "%lld output elements were not poison when the kernel started",
                 (long long)u.not_poison);
    for (int e = 0; e < 32 * 128; e++) cr_assert_eq(o[e], (float)(e / (8 * 128) + 1));
    free(o);
}

static void p4_write_input_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_set_at(c, refs[0], 99.0, 0, 0);
    pl_set_at(c, refs[0], 99.0, 7, 127);
}

Test(pipeline, P4_writes_to_input_block_never_reach_hbm)
{
    float *x = f32_iota(16 * 128);
    pl_call call = {.kernel = p4_write_input_kernel, .grid_rank = 1, .grid = {2}, .n_in = 1,
                    .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)}};
    pl_array args[1] = {PL_ARRAY(x, PL_F32, 16, 128)};
    pl_report rep;
    /* status not asserted: rule V3 lets the simulator report the write */
    pl_pallas_call(&call, args, NULL, NULL, &rep);
    for (int e = 0; e < 16 * 128; e++) cr_assert_eq(x[e], (float)e, "input HBM element %d changed to %g", e, x[e]);
    free(x);
}

/* ---- P5: revisits ------------------------------------------------------------ */

static void p5_table_map(const int64_t *g, const pl_ref *prefetch, int64_t *b, void *user)
{
    (void)prefetch;
    const int64_t *table = user;
    b[0] = table[g[1]];
    b[1] = 0;
}

Test(pipeline, P5_revisit_after_writeback_is_an_error)
{
    static const int64_t table[4] = {0, 1, 2, 1}; /* block 1 again at (0, 3), written back after (0, 1) */
    float *o = f32_const(24 * 128, 0.0f);
    pl_call call = {.kernel = p3_fill_kernel, .grid_rank = 2, .grid = {1, 4}, .n_out = 1,
                    .out = {PL_BLOCK(PL_MAP_FN(p5_table_map, (void *)table), 8, 128)}};
    call.out[0].name = "acc_out";
    pl_array out = PL_ARRAY(o, PL_F32, 24, 128);
    pl_report rep;
    int rc = pl_pallas_call(&call, NULL, &out, NULL, &rep);
    cr_assert_eq(rc, PL_EREVISIT, "got %d (%s): %s", rc, pl_strerror(rc), rep.error);
    cr_assert_eq(rep.status, PL_EREVISIT);
    cr_expect_not_null(strstr(rep.error, "P5"), "error does not cite rule P5: %s", rep.error);
    cr_expect_not_null(strstr(rep.error, "(0, 3)"), "error does not name the revisiting point (0, 3): %s",
                       rep.error);
    cr_expect_not_null(strstr(rep.error, "(0, 1)"), "error does not name the earlier point (0, 1): %s", rep.error);
    cr_expect_not_null(strstr(rep.error, "acc_out"), "error does not name the operand: %s", rep.error);
    cr_expect_eq(strcmp(pl_last_error(), rep.error), 0);
    free(o);
}

Test(pipeline, P5_revisit_on_outer_axis_is_an_error)
{
    /* out block follows the fast axis: (0,0) b0, (0,1) b1, (1,0) b0 again */
    float *o = f32_const(16 * 128, 0.0f);
    pl_call call = {.kernel = p3_fill_kernel, .grid_rank = 2, .grid = {2, 2}, .n_out = 1,
                    .out = {PL_BLOCK(PL_MAP(1, PL_ZERO), 8, 128)}};
    pl_array out = PL_ARRAY(o, PL_F32, 16, 128);
    pl_report rep;
    int rc = pl_pallas_call(&call, NULL, &out, NULL, &rep);
    cr_assert_eq(rc, PL_EREVISIT, "got %d: %s", rc, rep.error);
    cr_expect_not_null(strstr(rep.error, "(1, 0)"), "error does not name grid point (1, 0): %s", rep.error);
    free(o);
}

Test(pipeline, P5_consecutive_revisits_are_legal)
{
    /* block (i, 0) over steps (i, 0..2): the same block three times in a row */
    float *o = f32_const(16 * 128, -1.0f), *x = f32_iota(16 * 384);
    static p3_state u;
    float *want = malloc(16 * 128 * sizeof *want);
    cr_assert_not_null(want);
    for (int e = 0; e < 16 * 128; e++) {
        int r = e / 128, col = e % 128;
        want[e] = x[r * 384 + col] + x[r * 384 + 128 + col] + x[r * 384 + 256 + col];
    }
    u = (p3_state){.o_hbm = o, .want = want};
    pl_call call = {.kernel = p3_kernel, .user = &u, .grid_rank = 2, .grid = {2, 3}, .n_in = 1,
                    .in = {PL_BLOCK(PL_MAP(0, 1), 8, 128)}, .n_out = 1,
                    .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 8, 128)}};
    pl_array args[1] = {PL_ARRAY(x, PL_F32, 16, 384)};
    pl_array out = PL_ARRAY(o, PL_F32, 16, 128);
    pl_report rep;
    run_ok(&call, args, &out, NULL, &rep);
    cr_assert_eq(rep.op[1].writebacks, 2);
    for (int e = 0; e < 16 * 128; e++) cr_assert_eq(o[e], want[e]);
    free(o), free(x), free(want);
}
