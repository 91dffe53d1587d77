/* tests/test_fp4.c: float4_e2m1fn (PL_F4E2M1), a storage-only dtype like
 * int4: two per byte with element 2k in the low nibble, values {0, 0.5, 1,
 * 1.5, 2, 3, 4, 6} and their negatives, no infinity or NaN; a conversion
 * rounds to nearest even and saturates to +-6, as ml_dtypes does (T10).
 * Arrays, scratch and refs of it are refused as int4's are. Then the
 * built-in quant_matmul with fp4 weights on v7x (issue 15), and the x scale
 * that it now computes once per row block, not at every reduction step. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../examples/kernels/registry.h"
#include "../sim/tilesim_check.h"
#include "helpers.h"

/* ---- the code table: every one of the 16 codes ---------------------------------------- */

static const float f4_values[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};

Test(fp4, every_code_decodes_bit_exact)
{
    for (int c = 0; c < 16; c++) {
        uint8_t buf[1] = {(uint8_t)(c | (15 - c) << 4)};
        float lo = pl_f4_load(buf, 0), hi = pl_f4_load(buf, 1);
        cr_assert_eq(memcmp(&lo, &f4_values[c], 4), 0, "code 0x%x decodes to %g, not %g", c, lo, f4_values[c]);
        cr_assert_eq(memcmp(&hi, &f4_values[15 - c], 4), 0, "code 0x%x (high nibble) decodes to %g", 15 - c, hi);
        cr_assert_eq(pl_f32_to_f4e2m1(f4_values[c]), c, "%g encodes to its own code 0x%x", f4_values[c], c);
        float v = pl_f4e2m1_to_f32((uint8_t)c);
        cr_assert_eq(memcmp(&v, &f4_values[c], 4), 0, "pl_f4e2m1_to_f32(0x%x) = %g", c, v);
    }
}

/* Ties go to the even code (mantissa bit 0), as ml_dtypes' float4_e2m1fn. */
Test(fp4, ties_round_to_even)
{
    static const struct { float in, out; } k[] = {
        {0.25f, 0},    {0.75f, 1},  {1.25f, 1},    {1.75f, 2},   {2.5f, 2},    {3.5f, 4},  {5, 4},
        {0.26f, 0.5f}, {2.51f, 3},  {4.99f, 4},    {5.01f, 6},   {-0.25f, -0.0f}, {-2.5f, -2}, {-5, -4},
        {-0.3f, -0.5f}, {-2.9f, -3}, {0.1f, 0},    {1e-30f, 0},  {-1e-30f, -0.0f},
    };
    for (size_t i = 0; i < sizeof k / sizeof *k; i++) {
        float got = pl_f4e2m1_to_f32(pl_f32_to_f4e2m1(k[i].in));
        cr_assert_eq(memcmp(&got, &k[i].out, 4), 0, "%g rounds to %g, not %g", k[i].in, got, k[i].out);
    }
}

/* No infinity: everything at or past 6 (7, the tie with the next binade,
 * too) saturates to +-6; NaN becomes ml_dtypes' quiet_NaN(), the code 0x8
 * (-0), negated by the NaN's sign bit. */
Test(fp4, saturates_to_six_and_nan_becomes_zero)
{
    static const float big[] = {6, 6.5f, 7, 8, 1000, 3e38f, INFINITY};
    for (size_t i = 0; i < sizeof big / sizeof *big; i++) {
        cr_assert_eq(pl_f32_to_f4e2m1(big[i]), 0x7, "%g saturates to 6", big[i]);
        cr_assert_eq(pl_f32_to_f4e2m1(-big[i]), 0xf, "-%g saturates to -6", big[i]);
    }
    cr_assert_eq(pl_f32_to_f4e2m1(NAN), 0x8, "NaN -> ml_dtypes' quiet_NaN(), the code of -0");
    cr_assert_eq(pl_f32_to_f4e2m1(-NAN), 0x0, "-NaN -> -quiet_NaN(), +0");
    cr_assert_eq(pl_f32_to_f4e2m1(-0.0f), 0x8, "the sign of zero is kept");
}

/* Element 2k in the low nibble of byte k, 2k+1 in the high one (as PL_I4);
 * a store leaves the other nibble alone and rounds as the conversion. */
Test(fp4, packs_two_per_byte_low_nibble_first)
{
    uint8_t buf[3] = {0, 0, 0xaa};
    pl_f4_store(buf, 0, 1.5f);  /* 0x3 */
    pl_f4_store(buf, 1, -4.0f); /* 0xe */
    pl_f4_store(buf, 2, 6.0f);  /* 0x7 */
    pl_f4_store(buf, 3, -0.5f); /* 0x9 */
    cr_assert_eq(buf[0], 0xe3, "0x%02x", buf[0]);
    cr_assert_eq(buf[1], 0x97, "0x%02x", buf[1]);
    cr_assert_eq(buf[2], 0xaa, "the next byte is untouched");
    cr_assert_eq(pl_f4_load(buf, 0), 1.5f);
    cr_assert_eq(pl_f4_load(buf, 1), -4.0f);
    cr_assert_eq(pl_f4_load(buf, 2), 6.0f);
    cr_assert_eq(pl_f4_load(buf, 3), -0.5f);
    pl_f4_store(buf, 1, 100.0f);
    cr_assert_eq(buf[0], 0x73, "a store saturates and keeps the low nibble: 0x%02x", buf[0]);
    pl_f4_store(buf, 2, 2.5f);
    cr_assert_eq(buf[1], 0x94, "2.5 rounds to 2 (even, code 0x4) and keeps the high nibble: 0x%02x", buf[1]);
}

/* ---- the dtype's name, size and width ------------------------------------------------- */

Test(fp4, name_size_bits_and_parse)
{
    pl_dtype p = PL_F32;
    cr_assert_str_eq(pl_dtype_name(PL_F4E2M1), "f4e2m1");
    cr_assert_eq(pl_dtype_size(PL_F4E2M1), 0, "half a byte: nothing allocates it per element");
    cr_assert_eq(pl_dtype_bits(PL_F4E2M1), 4);
    cr_assert_eq(pl_dtype_is_float(PL_F4E2M1), 1);
    cr_assert_eq(pl_dtype_parse("f4e2m1", &p), PL_OK);
    cr_assert_eq(p, PL_F4E2M1);
    p = PL_F32;
    cr_assert_eq(pl_dtype_parse("float4_e2m1fn", &p), PL_OK, "the jnp name");
    cr_assert_eq(p, PL_F4E2M1);
    pl_array a = PL_ARRAY(NULL, PL_F4E2M1, 3, 5);
    cr_assert_eq(pl_array_bytes(&a), 8, "15 nibbles take 8 bytes");
    for (int i = 0; i < pl_chip_count(); i++)
        cr_assert_eq(pl_chip_tile_rows(pl_chip_at(i), PL_F4E2M1, 4096), 64, "T8: 4-bit rows tile by 64");
}

/* ---- refused where int4 is: arrays, scratch, allclose -------------------------------- */

Test(fp4, arrays_are_refused_with_a_clear_message)
{
    uint8_t *a = calloc(64 * 128, 1), *o = calloc(64 * 128, 1);
    cr_assert(a && o);
    pl_array in = PL_ARRAY(a, PL_I8, 64, 128), out = PL_ARRAY(o, PL_F4E2M1, 64, 128);
    pl_call call = th_copy_call_2d(64, 128, 64, 128);
    pl_report rep;
    int rc = pl_pallas_call(&call, &in, &out, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EDTYPE, "out0", "float4_e2m1fn", "two per byte", "pl_f4_load");
    cr_assert_null(strstr(rep.error, "int4"), "the message names fp4, not int4: %s", rep.error);
    free(a);
    free(o);
}

Test(fp4, scratch_is_refused_too)
{
    pl_array a = PL_ARRAY(NULL, PL_F32, 64, 128), o = PL_ARRAY(NULL, PL_F32, 64, 128);
    pl_call call = th_copy_call_2d(64, 128, 64, 128);
    call.n_scratch = 1;
    call.scratch[0] = PLTPU_VMEM(PL_F4E2M1, 64, 128);
    pl_options opt = {.cost_only = 1};
    pl_report rep;
    int rc = pl_validate(&call, &a, &o, &opt, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EDTYPE, "scratch0", "float4_e2m1fn", "two per byte");
}

Test(fp4, allclose_refuses_fp4_arrays_rather_than_reading_them_wrong)
{
    uint8_t a[4] = {0x12, 0x34, 0, 0}, b[4] = {0x21, 0x43, 0, 0};
    pl_array g = PL_ARRAY(a, PL_F4E2M1, 1, 4), w = PL_ARRAY(b, PL_F4E2M1, 1, 4);
    pl_check chk;
    cr_assert_neq(pl_allclose(&g, &w, 0, 0, &chk, NULL), PL_OK, "fp4 has no byte per element to compare");
}

/* pl_check_matmul (and its heatmap) refuses fp4 operands as it refuses
 * int4: they have no byte per element to read (it read them as zeros). */
Test(fp4, check_matmul_refuses_fp4_operands)
{
    static uint8_t a[8 * 128], b[128 * 128];
    static float o[8 * 128];
    pl_array x = PL_ARRAY(a, PL_F4E2M1, 8, 128), y = PL_ARRAY(b, PL_F4E2M1, 128, 128), z = PL_ARRAY(o, PL_F32, 8, 128);
    pl_check chk;
    cr_assert_eq(pl_check_matmul(&x, &y, &z, &chk, NULL), PL_EINVAL, "fp4 a and b");
    pl_array xi = PL_ARRAY(a, PL_I4, 8, 128), yi = PL_ARRAY(b, PL_I4, 128, 128);
    cr_assert_eq(pl_check_matmul(&xi, &yi, &z, &chk, NULL), PL_EINVAL, "int4, as before");
}

/* ---- the built-in quant_matmul (issue 15) ----------------------------------------------- */

static const pl_kernel_def *qmm(void)
{
    const pl_kernel_def *d = ex_kernel_find("quant_matmul");
    cr_assert(d, "quant_matmul is a built-in kernel");
    return d;
}

/* Run quant_matmul with "name=value" settings on chip (cost_only: no data). */
static int qmm_run(const char *chip, const char *const *sets, int n_sets, int cost_only, pl_report *rep,
                   pl_check *chk)
{
    int64_t v[PL_KDEF_MAX_PARAMS];
    char msg[256];
    pl_kernel_defaults(qmm(), v);
    for (int i = 0; i < n_sets; i++) cr_assert_eq(pl_kernel_set(qmm(), v, sets[i], msg, sizeof msg), PL_OK, "%s", msg);
    pl_options opt = {.chip = chip, .cost_only = cost_only};
    return pl_kernel_run(qmm(), v, &opt, rep, chk, NULL);
}

static const pl_profile_row *profile_row(const pl_report *rep, const char *name)
{
    for (int i = 0; i < rep->n_profile; i++)
        if (strcmp(rep->profile[i].name, name) == 0) return &rep->profile[i];
    return NULL;
}

/* The contraction in several steps (default sizes: grid (2, 4, 4)): each
 * step quantizes its own x block, the scale with it (bb numbers: a value,
 * as the production kernel computes it), not kept in a VMEM scratch (issue
 * 22); once per batch block when the contraction is one step is
 * test_quant_matmul.c's. */
Test(fp4, quant_matmul_quantizes_each_x_block_where_it_is_used)
{
    static const char *const sets[][1] = {{"wdtype=i8"}, {"wdtype=f8e4m3"}};
    static const char *const chips[] = {"v6e", "v7x"};
    for (int t = 0; t < 2; t++) {
        pl_report rep;
        pl_check chk[PL_MAX_OPERANDS];
        int rc = qmm_run(chips[t], sets[t], 1, 0, &rep, chk);
        cr_assert_eq(rc, PL_OK, "%s", rep.error);
        cr_assert_eq(chk[0].verdict, PL_PASS, "%s: max abs err %g", chips[t], chk[0].max_abs_err);
        const pl_profile_row *div = profile_row(&rep, "pl_div_col");
        cr_assert(div, "%s: the scale is computed with pl_div_col", chips[t]);
        cr_assert_eq(div->count, 2 * 4 * 4, "%s: at each step of the (2, 4, 4) grid, not %lld times",
                     chips[t], (long long)div->count);
        cr_assert_eq(rep.n_scratch, 1, "%s: the accumulator only", chips[t]);
    }
}

/* fp4 weights on v7x (issue 15): packed bytes in HBM and VMEM, widened to
 * fp8 in registers by VPU ops (issue 22), multiplied fp8 x fp8 (T10),
 * verified against the host reference over the same fp4 weights. */
Test(fp4, quant_matmul_fp4_weights_run_and_verify_on_v7x_at_the_fp8_rate)
{
    static const char *sets[] = {"wdtype=f4e2m1"};
    pl_report rep;
    pl_check chk[PL_MAX_OPERANDS];
    int rc = qmm_run("v7x", sets, 1, 0, &rep, chk);
    cr_assert_eq(rc, PL_OK, "%s", rep.error);
    cr_assert_eq(chk[0].verdict, PL_PASS, "max abs err %g", chk[0].max_abs_err);
    cr_assert_eq(rep.mxu_dtype, PL_F8E4M3, "the MXU multiplies the unpacked fp8 weights (T10)");
    cr_assert_eq(rep.n_findings, 0, "no findings: the unpack writes every lane of wu (V1)");
    const pl_profile_row *u = profile_row(&rep, "pl_unpack_f4");
    cr_assert(u, "the unpack is VPU work in the profile");
    cr_assert_eq(u->cat, PL_PROF_VPU);
    cr_assert_eq(u->count, 32, "once at each of the 32 steps");
    cr_assert_eq(u->flops, 32.0 * 256 * 256, "one op per weight of the (bo, bi) = (256, 256) block");
}

/* The jnp name selects it too. v4's MXU takes no fp8 operands (JAX's
 * Mosaic dtype table), so the widened weights have nowhere to go there; on
 * v6e they run widened to bf16 (no fp8 rate), and verify. */
Test(fp4, quant_matmul_fp4_weights_are_rejected_on_v4_and_widened_to_bf16_on_v6e_E2001)
{
    static const char *sets[] = {"wdtype=float4_e2m1fn"};
    pl_report rep;
    int rc = qmm_run("v4", sets, 1, 0, &rep, NULL);
    TH_EXPECT_ERROR(rc, rep, PL_EDTYPE, "takes no fp8 operands", "E2001", "rule T10");
    cr_assert_eq(qmm_run("v6e", sets, 1, 0, &rep, NULL), PL_OK, "%s", rep.error);
    cr_expect_eq(rep.mxu_dtype, PL_BF16, "no fp8 rate on v6e: timed as bf16");
}

/* The HBM bytes of the weights are half fp8's: the report's copy-in row of
 * w_q, and the total by that difference. */
Test(fp4, quant_matmul_fp4_weights_move_half_the_hbm_bytes_of_fp8)
{
    static const char *f8[] = {"wdtype=f8e4m3"}, *f4[] = {"wdtype=f4e2m1"};
    pl_report r8, r4;
    cr_assert_eq(qmm_run("v7x", f8, 1, 1, &r8, NULL), PL_OK, "%s", r8.error);
    cr_assert_eq(qmm_run("v7x", f4, 1, 1, &r4, NULL), PL_OK, "%s", r4.error);
    const pl_profile_row *w8 = profile_row(&r8, "copy in: w_q"), *w4 = profile_row(&r4, "copy in: w_q");
    cr_assert(w8 && w4, "a copy-in row for w_q");
    cr_assert_gt(w4->hbm_bytes, 0);
    cr_assert_eq(w4->hbm_bytes * 2, w8->hbm_bytes, "fp4 %g bytes, fp8 %g", w4->hbm_bytes, w8->hbm_bytes);
    cr_assert_eq(r8.hbm_bytes - r4.hbm_bytes, (int64_t)(w8->hbm_bytes / 2), "the rest is the same");
}

/* An odd bi cannot hold whole bytes of fp4 weights: refused by name. */
Test(fp4, quant_matmul_fp4_with_an_odd_block_is_refused_by_name)
{
    int64_t v[PL_KDEF_MAX_PARAMS];
    char msg[256];
    pl_kernel_defaults(qmm(), v);
    cr_assert_eq(pl_kernel_set(qmm(), v, "wdtype=f4e2m1", msg, sizeof msg), PL_OK, "%s", msg);
    cr_assert_eq(pl_kernel_set(qmm(), v, "in=999", msg, sizeof msg), PL_OK, "%s", msg);
    cr_assert_eq(pl_kernel_set(qmm(), v, "bi=333", msg, sizeof msg), PL_OK, "%s", msg);
    pl_report rep;
    pl_options opt = {.chip = "v7x", .cost_only = 1};
    int rc = pl_kernel_run(qmm(), v, &opt, &rep, NULL, NULL);
    cr_assert_eq(rc, PL_EINVAL, "%s", rep.error);
    cr_assert(strstr(rep.error, "bi = 333") && strstr(rep.error, "two per byte"), "%s", rep.error);
}

/* ---- pl_unpack_f4: packed bytes to values, in a kernel ------------------------------ */

static void unpack_kernel(pl_ctx *c, pl_ref *r) { pl_unpack_f4(c, r[1], r[0]); }

/* An (8, 128) int8 block of every byte value widens to (8, 256) f32: value
 * 2k from the low nibble of byte k, 2k + 1 from the high one, bit exact. */
Test(fp4, unpack_widens_every_byte_low_nibble_first)
{
    int8_t in[8 * 128];
    float out[8 * 256];
    for (int i = 0; i < 8 * 128; i++) in[i] = (int8_t)(uint8_t)(i * 37 + 11);
    pl_call call = {.name = "unpack", .kernel = unpack_kernel, .n_in = 1, .n_out = 1};
    pl_array args[1] = {PL_ARRAY(in, PL_I8, 8, 128)}, outs[1] = {PL_ARRAY(out, PL_F32, 8, 256)};
    pl_report rep;
    int rc = pl_pallas_call(&call, args, outs, NULL, &rep);
    cr_assert_eq(rc, PL_OK, "%s", rep.error);
    for (int i = 0; i < 8 * 128; i++) {
        uint8_t b = (uint8_t)in[i];
        cr_assert_eq(memcmp(&out[2 * i], &f4_values[b & 15], 4), 0, "byte %d (0x%02x): low nibble gave %g", i, b, out[2 * i]);
        cr_assert_eq(memcmp(&out[2 * i + 1], &f4_values[b >> 4], 4), 0, "byte %d: high nibble gave %g", i, out[2 * i + 1]);
    }
}

/* A destination that is not twice the source's last dimension, or a source
 * that is not int8 bytes, is the kernel's mistake, named. */
Test(fp4, unpack_refuses_a_wrong_shape_or_dtype_by_name)
{
    int8_t in[8 * 128] = {0};
    float out[8 * 256], fin[8 * 128] = {0};
    pl_call call = {.name = "unpack", .kernel = unpack_kernel, .n_in = 1, .n_out = 1};
    pl_report rep;
    pl_array a1[1] = {PL_ARRAY(in, PL_I8, 8, 128)}, o1[1] = {PL_ARRAY(out, PL_F32, 8, 128)};
    cr_assert_eq(pl_pallas_call(&call, a1, o1, NULL, &rep), PL_ESHAPE, "%s", rep.error);
    cr_expect(strstr(rep.error, "pl_unpack_f4") && strstr(rep.error, "(8, 128)") && strstr(rep.error, "doubled"), "%s",
              rep.error);
    pl_array a2[1] = {PL_ARRAY(fin, PL_F32, 8, 128)}, o2[1] = {PL_ARRAY(out, PL_F32, 8, 256)};
    cr_assert_eq(pl_pallas_call(&call, a2, o2, NULL, &rep), PL_EDTYPE, "%s", rep.error);
    cr_expect(strstr(rep.error, "int8"), "%s", rep.error);
}

/* ---- packed4: an int8 array of fp4 or int4 pairs, blocked as the 4-bit array --------- */

/* The autotuner's candidates for an fp4 weight are bi = every multiple of
 * 128 weights that divides in, so 384 (192 bytes) too: a BlockSpec over
 * the float4_e2m1fn array counts weights, not bytes (T1). Such a block
 * runs, verifies, and takes (bo, 384) fp4 = bo x 192 bytes of VMEM a buffer,
 * laid out in 4-bit tiles without lane padding (T6). */
Test(fp4, quant_matmul_fp4_blocks_of_an_odd_multiple_of_128_weights_run)
{
    static const char *sets[] = {"wdtype=f4e2m1", "batch=16", "bb=16", "out=256", "bo=128", "in=1152", "bi=384"};
    pl_report rep;
    pl_check chk[PL_MAX_OPERANDS];
    int rc = qmm_run("v7x", sets, 7, 0, &rep, chk);
    cr_assert_eq(rc, PL_OK, "%s", rep.error);
    cr_assert_eq(chk[0].verdict, PL_PASS, "max abs err %g", chk[0].max_abs_err);
    for (int i = 0; i < rep.n_operands; i++)
        if (strcmp(rep.op[i].name, "w_q") == 0) {
            cr_expect_eq(rep.op[i].block[1], 192, "192 bytes hold 384 weights");
            cr_expect_eq(rep.op[i].vmem_bytes, 128 * 192, "no lane padding: 4-bit tiles hold 128 weights a row");
            cr_expect_eq(rep.op[i].tile_rows, 64, "the 4-bit tile has 64 rows (T8)");
        }
}

/* A pallas_call over a packed4 int8 array: its blocks follow the 4-bit
 * rules, and the messages count weights. */
static void nop_kernel(pl_ctx *c, pl_ref *r) { (void)c, (void)r; }

static int packed_call(int64_t rows, int64_t bytes, int64_t brows, int64_t bbytes, int packed4, pl_dtype dt,
                       pl_report *rep)
{
    pl_array a = PL_ARRAY(NULL, dt, rows, bytes), o = PL_ARRAY(NULL, PL_F32, 8, 128);
    a.packed4 = packed4;
    pl_call call = {.name = "packed", .kernel = nop_kernel, .grid_rank = 1, .grid = {1}, .n_in = 1,
                    .in = {PL_BLOCK(PL_MAP(PL_ZERO, 0), brows, bbytes)}, .n_out = 1,
                    .out = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 8, 128)}};
    pl_options opt = {.chip = "v7x", .cost_only = 1};
    return pl_pallas_call(&call, &a, &o, &opt, rep);
}

Test(fp4, a_packed4_block_is_checked_in_weights)
{
    pl_report rep;
    cr_expect_eq(packed_call(256, 512, 64, 64, 1, PL_I8, &rep), PL_OK, "(64, 128 weights): %s", rep.error);
    cr_expect_eq(packed_call(256, 512, 64, 64, 0, PL_I8, &rep), PL_EBLOCKSHAPE, "unpacked int8: 64 lanes (T1)");
    int rc = packed_call(256, 512, 64, 32, 1, PL_I8, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBLOCKSHAPE, "dimension 64 (counted in 4-bit elements", "rule T1");
    rc = packed_call(256, 512, 32, 64, 1, PL_I8, &rep); /* 32 rows: the int8 tile, not the 4-bit one */
    TH_EXPECT_ERROR(rc, rep, PL_ETILING, "(64, 128) tiles", "E2002", "Nearest legal block shapes: (64, 64)");
}

Test(fp4, packed4_belongs_to_int8_arrays_only)
{
    pl_report rep;
    int rc = packed_call(256, 512, 64, 128, 1, PL_F32, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "packed4 = 1", "f32");
    rc = packed_call(256, 512, 64, 128, 2, PL_I8, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "packed4 = 2", "two 4-bit values");
}
