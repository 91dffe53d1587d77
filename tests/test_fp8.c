/* tests/test_fp8.c: the 8-bit float dtypes (float8_e4m3fn, float8_e5m2) and
 * int4 storage: conversions bit for bit as ml_dtypes defines them (round to
 * nearest even; e4m3fn has no infinity, so an overflow or an infinity is
 * NaN; e5m2 overflows to infinity), the MXU's fp8 path on v7x only (T10),
 * the 8- and 4-bit rows of the tiling table (T8), and int4 refused where
 * tilesim's arrays hold whole bytes per element. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/tilesim.h"
#include "helpers.h"

static float dec(pl_dtype t, uint8_t c) { return t == PL_F8E4M3 ? pl_f8e4m3_to_f32(c) : pl_f8e5m2_to_f32(c); }
static uint8_t enc(pl_dtype t, float x) { return t == PL_F8E4M3 ? pl_f32_to_f8e4m3(x) : pl_f32_to_f8e5m2(x); }

/* ---- decoding: known codes --------------------------------------------------------- */

Test(fp8, e4m3fn_decodes_known_codes)
{
    cr_assert_eq(pl_f8e4m3_to_f32(0x38), 1.0f);
    cr_assert_eq(pl_f8e4m3_to_f32(0x7e), 448.0f, "max finite");
    cr_assert_eq(pl_f8e4m3_to_f32(0xfe), -448.0f);
    cr_assert_eq(pl_f8e4m3_to_f32(0x08), ldexpf(1, -6), "min normal");
    cr_assert_eq(pl_f8e4m3_to_f32(0x01), ldexpf(1, -9), "min subnormal");
    cr_assert_eq(pl_f8e4m3_to_f32(0x07), 7 * ldexpf(1, -9), "max subnormal");
    cr_assert(isnan(pl_f8e4m3_to_f32(0x7f)) && isnan(pl_f8e4m3_to_f32(0xff)), "S.1111.111 is NaN");
    cr_assert(isinf(pl_f8e4m3_to_f32(0x78)) == 0 && pl_f8e4m3_to_f32(0x78) == 256.0f, "no infinity: 0x78 is 256");
    cr_assert(signbit(pl_f8e4m3_to_f32(0x80)) && pl_f8e4m3_to_f32(0x80) == 0.0f, "-0");
}

Test(fp8, e5m2_decodes_known_codes)
{
    cr_assert_eq(pl_f8e5m2_to_f32(0x3c), 1.0f);
    cr_assert_eq(pl_f8e5m2_to_f32(0x7b), 57344.0f, "max finite");
    cr_assert_eq(pl_f8e5m2_to_f32(0x04), ldexpf(1, -14), "min normal");
    cr_assert_eq(pl_f8e5m2_to_f32(0x01), ldexpf(1, -16), "min subnormal");
    cr_assert(isinf(pl_f8e5m2_to_f32(0x7c)) && pl_f8e5m2_to_f32(0x7c) > 0);
    cr_assert(isinf(pl_f8e5m2_to_f32(0xfc)) && pl_f8e5m2_to_f32(0xfc) < 0);
    for (int c = 0x7d; c <= 0x7f; c++) cr_assert(isnan(pl_f8e5m2_to_f32((uint8_t)c)), "0x%02x", c);
}

/* ---- every code round trips --------------------------------------------------------- */

static void every_code_round_trips(pl_dtype t)
{
    for (int c = 0; c < 256; c++) {
        float x = dec(t, (uint8_t)c);
        uint8_t back = enc(t, x);
        if (isnan(x)) {
            cr_assert(isnan(dec(t, back)), "%s 0x%02x: NaN came back as 0x%02x", pl_dtype_name(t), c, back);
            cr_assert_eq(back & 0x80, c & 0x80, "%s 0x%02x: NaN keeps its sign", pl_dtype_name(t), c);
            continue;
        }
        cr_assert_eq(back, c, "%s 0x%02x -> %g -> 0x%02x", pl_dtype_name(t), c, (double)x, back);
    }
}

Test(fp8, every_e4m3fn_code_round_trips) { every_code_round_trips(PL_F8E4M3); }
Test(fp8, every_e5m2_code_round_trips) { every_code_round_trips(PL_F8E5M2); }

/* ---- ties to even at every halfway point, subnormals included ------------------------ */

static void ties_go_to_even(pl_dtype t, int last_finite)
{
    for (int c = 0; c < last_finite; c++) {
        float lo = dec(t, (uint8_t)c), hi = dec(t, (uint8_t)(c + 1));
        float mid = (lo + hi) / 2; /* exact: 4 or 3 significant bits in an f32 */
        int even = (c % 2 == 0) ? c : c + 1;
        cr_assert_eq(enc(t, mid), even, "%s: %g between 0x%02x and 0x%02x", pl_dtype_name(t), (double)mid, c, c + 1);
        cr_assert_eq(enc(t, -mid), 0x80 | even, "%s: -%g", pl_dtype_name(t), (double)mid);
        cr_assert_eq(enc(t, nextafterf(mid, 0)), c, "%s: just below %g", pl_dtype_name(t), (double)mid);
        cr_assert_eq(enc(t, nextafterf(mid, INFINITY)), c + 1, "%s: just above %g", pl_dtype_name(t), (double)mid);
    }
}

Test(fp8, e4m3fn_rounds_to_nearest_even) { ties_go_to_even(PL_F8E4M3, 0x7e); }
Test(fp8, e5m2_rounds_to_nearest_even) { ties_go_to_even(PL_F8E5M2, 0x7b); }

Test(fp8, tiny_values_round_to_zero_or_the_smallest_subnormal)
{
    cr_assert_eq(pl_f32_to_f8e4m3(ldexpf(1, -10)), 0x00, "half the smallest subnormal ties to 0");
    cr_assert_eq(pl_f32_to_f8e4m3(-ldexpf(1, -10)), 0x80, "-0");
    cr_assert_eq(pl_f32_to_f8e4m3(ldexpf(1.5f, -10)), 0x01);
    cr_assert_eq(pl_f32_to_f8e4m3(1e-30f), 0x00);
    cr_assert_eq(pl_f32_to_f8e5m2(ldexpf(1, -17)), 0x00);
    cr_assert_eq(pl_f32_to_f8e5m2(ldexpf(3, -17)), 0x02, "1.5 x the smallest subnormal ties to 2 (even)");
}

/* ---- overflow, infinities and NaN as ml_dtypes (non-saturating) ------------------------ */

Test(fp8, e4m3fn_overflow_and_infinity_become_nan)
{
    cr_assert_eq(pl_f32_to_f8e4m3(464.0f), 0x7e, "the tie above 448 rounds down to it (even)");
    cr_assert_eq(pl_f32_to_f8e4m3(465.0f), 0x7f, "past the tie: NaN, there is no infinity");
    cr_assert_eq(pl_f32_to_f8e4m3(-465.0f), 0xff);
    cr_assert_eq(pl_f32_to_f8e4m3(1e6f), 0x7f);
    cr_assert_eq(pl_f32_to_f8e4m3(INFINITY), 0x7f);
    cr_assert_eq(pl_f32_to_f8e4m3(-INFINITY), 0xff);
    cr_assert_eq(pl_f32_to_f8e4m3(NAN), 0x7f);
    cr_assert_eq(pl_f32_to_f8e4m3(-NAN), 0xff);
}

Test(fp8, e5m2_overflows_to_infinity)
{
    cr_assert_eq(pl_f32_to_f8e5m2(58000.0f), 0x7b, "rounds down to 57344");
    cr_assert_eq(pl_f32_to_f8e5m2(61439.0f), 0x7b);
    cr_assert_eq(pl_f32_to_f8e5m2(61440.0f), 0x7c, "the tie rounds to the even code, infinity");
    cr_assert_eq(pl_f32_to_f8e5m2(1e6f), 0x7c);
    cr_assert_eq(pl_f32_to_f8e5m2(-1e6f), 0xfc);
    cr_assert_eq(pl_f32_to_f8e5m2(INFINITY), 0x7c);
    cr_assert(isnan(pl_f8e5m2_to_f32(pl_f32_to_f8e5m2(NAN))));
}

/* ---- names, sizes, element access ------------------------------------------------------ */

Test(fp8, names_sizes_and_parse)
{
    static const struct { pl_dtype t; const char *name, *jax; size_t size; int bits, fl; } k[] = {
        {PL_F8E4M3, "f8e4m3", "float8_e4m3fn", 1, 8, 1},
        {PL_F8E5M2, "f8e5m2", "float8_e5m2", 1, 8, 1},
        {PL_I4, "i4", "int4", 0, 4, 0},
    };
    for (size_t i = 0; i < sizeof k / sizeof *k; i++) {
        pl_dtype p;
        cr_assert_str_eq(pl_dtype_name(k[i].t), k[i].name);
        cr_assert_eq(pl_dtype_size(k[i].t), k[i].size, "%s", k[i].name);
        cr_assert_eq(pl_dtype_bits(k[i].t), k[i].bits, "%s", k[i].name);
        cr_assert_eq(pl_dtype_is_float(k[i].t), k[i].fl, "%s", k[i].name);
        cr_assert_eq(pl_dtype_parse(k[i].name, &p), PL_OK);
        cr_assert_eq(p, k[i].t);
        cr_assert_eq(pl_dtype_parse(k[i].jax, &p), PL_OK, "%s", k[i].jax);
        cr_assert_eq(p, k[i].t);
    }
    cr_assert_eq(pl_dtype_bits(PL_BF16), 16, "the others keep their widths");
}

Test(fp8, load_and_store_elements)
{
    uint8_t b[2];
    pl_store_elem(&b[0], PL_F8E4M3, 3.3);
    pl_store_elem(&b[1], PL_F8E5M2, -3.3);
    cr_assert_eq(b[0], pl_f32_to_f8e4m3(3.3f));
    cr_assert_eq(b[1], pl_f32_to_f8e5m2(-3.3f));
    cr_assert_eq(pl_load_elem(&b[0], PL_F8E4M3), 3.25);
    cr_assert_eq(pl_load_elem(&b[1], PL_F8E5M2), -3.5);
}

/* ---- int4: two per byte, element 2k in the low nibble ----------------------------------- */

Test(fp8, int4_packs_two_per_byte_low_nibble_first)
{
    uint8_t buf[2] = {0, 0};
    pl_i4_store(buf, 0, 3);
    pl_i4_store(buf, 1, -2);
    pl_i4_store(buf, 2, 7);
    pl_i4_store(buf, 3, -8);
    cr_assert_eq(buf[0], 0xe3, "element 0 low nibble, element 1 (-2 = 0xe) high: 0x%02x", buf[0]);
    cr_assert_eq(buf[1], 0x87, "0x%02x", buf[1]);
    cr_assert_eq(pl_i4_load(buf, 0), 3);
    cr_assert_eq(pl_i4_load(buf, 1), -2);
    cr_assert_eq(pl_i4_load(buf, 2), 7);
    cr_assert_eq(pl_i4_load(buf, 3), -8);
    pl_i4_store(buf, 0, 100);
    pl_i4_store(buf, 1, -100);
    cr_assert_eq(pl_i4_load(buf, 0), 7, "saturates");
    cr_assert_eq(pl_i4_load(buf, 1), -8);
    cr_assert_eq(buf[1], 0x87, "a store leaves the other nibble and bytes alone");
}

Test(fp8, int4_arrays_are_refused_with_a_clear_message)
{
    uint8_t *a = calloc(64 * 128, 1), *o = calloc(64 * 128, 1);
    cr_assert(a && o);
    pl_array in = PL_ARRAY(a, PL_I4, 64, 128), out = PL_ARRAY(o, PL_I8, 64, 128);
    pl_call call = th_copy_call_2d(64, 128, 64, 128);
    pl_report rep;
    int rc = pl_pallas_call(&call, &in, &out, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EDTYPE, "in0", "int4", "two per byte", "pl_i4_load");
    free(a);
    free(o);
}

/* ---- T8: the 8- and 4-bit rows of the tiling table ---------------------------------------- */

Test(fp8, T8_fp8_tiles_32_rows_and_int4_64_on_every_chip)
{
    for (int i = 0; i < pl_chip_count(); i++) {
        const pl_chip *c = pl_chip_at(i);
        cr_assert_eq(pl_chip_tile_rows(c, PL_F8E4M3, 4096), 32, "%s", c->name);
        cr_assert_eq(pl_chip_tile_rows(c, PL_F8E5M2, 4096), 32, "%s", c->name);
        cr_assert_eq(pl_chip_tile_rows(c, PL_I4, 4096), 64, "%s", c->name);
    }
    pl_array a = PL_ARRAY(NULL, PL_F8E4M3, 1024, 128), o = PL_ARRAY(NULL, PL_F8E4M3, 1024, 128);
    pl_call call = th_copy_call_2d(1024, 128, 8, 128);
    pl_options opt = {.chip = "v7x", .cost_only = 1};
    pl_report rep;
    int rc = pl_validate(&call, &a, &o, &opt, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_ETILING, "f8e4m3 array (1024, 128)", "(32, 128) tiles", "E2002", "rule T8");
}

/* ---- T10: fp8 x fp8 on the MXU, v7x only, into f32 ---------------------------------------- */

static void dot_kernel(pl_ctx *c, pl_ref *refs) { pl_dot(c, refs[2], refs[0], refs[1], 0); }

static int run_dot(pl_dtype ta, pl_dtype to, void *a, void *b, void *o, const char *chip, pl_report *rep)
{
    pl_array in[2] = {PL_ARRAY(a, ta, 32, 128), PL_ARRAY(b, ta, 128, 128)}, out = PL_ARRAY(o, to, 32, 128);
    pl_call call = {.name = "dot", .kernel = dot_kernel, .n_in = 2, .in = {{0}, {0}}, .n_out = 1, .out = {{0}}};
    pl_options opt = {.chip = chip};
    return pl_pallas_call(&call, in, &out, &opt, rep);
}

Test(fp8, T10_fp8_matmul_runs_on_v7x_into_f32_at_the_fp8_rate)
{
    uint8_t *a = malloc(32 * 128), *b = malloc(128 * 128);
    float *o = malloc(32 * 128 * 4);
    cr_assert(a && b && o);
    for (int i = 0; i < 32 * 128; i++) a[i] = pl_f32_to_f8e4m3((float)(i % 7) - 3.0f);
    for (int i = 0; i < 128 * 128; i++) b[i] = pl_f32_to_f8e4m3((float)(i % 5) * 0.5f - 1.0f);
    pl_report rep;
    th_expect_ok(run_dot(PL_F8E4M3, PL_F32, a, b, o, "v7x", &rep), &rep);
    for (int i = 0; i < 32; i++)
        for (int j = 0; j < 128; j++) {
            double s = 0;
            for (int p = 0; p < 128; p++) s += pl_f8e4m3_to_f32(a[i * 128 + p]) * pl_f8e4m3_to_f32(b[p * 128 + j]);
            cr_assert_eq(o[i * 128 + j], (float)s, "o[%d, %d]", i, j);
        }
    cr_assert_eq(rep.mxu_dtype, PL_F8E4M3, "timed at the fp8 rate");
    free(a);
    free(b);
    free(o);
}

/* JAX's Mosaic dtype table (tpu_info.is_matmul_supported): fp8 operands on
 * generations 5 to 7, not on v4; v5e and v6e have no fp8 rate and run them
 * widened to bf16, v7x at its fp8 rate. Into int32 they are refused. */
Test(fp8, T10_fp8_matmul_is_rejected_on_v4_widened_on_v5e_and_v6e_and_refused_into_int32)
{
    uint8_t *a = calloc(32 * 128, 1), *b = calloc(128 * 128, 1);
    float *o = calloc(32 * 128, 4);
    cr_assert(a && b && o);
    pl_report rep;
    int rc = run_dot(PL_F8E5M2, PL_F32, a, b, o, "v4", &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EDTYPE, "pl_dot of f8e5m2 x f8e5m2 into f32 on v4", "takes no fp8 operands",
                    "E2001", "rule T10");
    static const char *const widened[] = {"v5e", "v5p", "v6e"};
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(run_dot(PL_F8E5M2, PL_F32, a, b, o, widened[i], &rep), PL_OK, "%s: %s", widened[i], rep.error);
        cr_expect_eq(rep.mxu_dtype, PL_BF16, "%s: no fp8 rate, timed as bf16", widened[i]);
    }
    rc = run_dot(PL_F8E4M3, PL_I32, a, b, o, "v7x", &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EDTYPE, "into i32", "E2001", "rule T10");
    free(a);
    free(b);
    free(o);
}

/* ---- checking fp8 and int4 results ------------------------------------------------------ */

/* pl_allclose's default tolerance is a few units in the last place of the
 * dtype (V5): one fp8 step passes, a wrong value does not. */
Test(fp8, allclose_defaults_to_a_few_fp8_ulps)
{
    static const pl_dtype ts[] = {PL_F8E4M3, PL_F8E5M2};
    for (int t = 0; t < 2; t++) {
        uint8_t got[4], want[4];
        for (int i = 0; i < 4; i++) want[i] = enc(ts[t], 1.0f + (float)i);
        memcpy(got, want, 4);
        got[2] = (uint8_t)(want[2] + 1); /* the next code up: one ulp */
        pl_array g = PL_ARRAY(got, ts[t], 1, 4), w = PL_ARRAY(want, ts[t], 1, 4);
        pl_check chk;
        cr_assert_eq(pl_allclose(&g, &w, 0, 0, &chk, NULL), PL_OK, "%s", pl_dtype_name(ts[t]));
        cr_assert_eq(chk.verdict, PL_PASS, "%s: one ulp off passes (norm err %g)", pl_dtype_name(ts[t]), chk.norm_err);
        got[2] = enc(ts[t], -3.0f);
        pl_allclose(&g, &w, 0, 0, &chk, NULL);
        cr_assert_eq(chk.verdict, PL_FAIL, "%s: a wrong sign fails", pl_dtype_name(ts[t]));
    }
}

Test(fp8, allclose_refuses_int4_arrays_rather_than_reading_them_wrong)
{
    uint8_t a[4] = {0x12, 0x34, 0, 0}, b[4] = {0x21, 0x43, 0, 0};
    pl_array g = PL_ARRAY(a, PL_I4, 1, 4), w = PL_ARRAY(b, PL_I4, 1, 4);
    pl_check chk;
    cr_assert_neq(pl_allclose(&g, &w, 0, 0, &chk, NULL), PL_OK, "int4 has no byte per element to compare");
}

Test(fp8, int4_scratch_is_refused_too)
{
    pl_array a = PL_ARRAY(NULL, PL_F32, 64, 128), o = PL_ARRAY(NULL, PL_F32, 64, 128);
    pl_call call = th_copy_call_2d(64, 128, 64, 128);
    call.n_scratch = 1;
    call.scratch[0] = PLTPU_VMEM(PL_I4, 64, 128);
    pl_options opt = {.cost_only = 1};
    pl_report rep;
    int rc = pl_validate(&call, &a, &o, &opt, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EDTYPE, "int4", "two per byte");
}

/* ---- the VMEM report names fp8 as XLA does ----------------------------------------------- */

static void noop(pl_ctx *c, pl_ref *refs) { (void)c, (void)refs; }

Test(fp8, vmem_report_shows_fp8_layouts_as_xla_names_them)
{
    pl_call call = {.name = "q", .kernel = noop, .grid_rank = 1, .grid = {4},
                    .n_in = 1, .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), 256, 512)},
                    .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 256, 512)}};
    pl_array in = PL_ARRAY(NULL, PL_F8E4M3, 1024, 512), out = PL_ARRAY(NULL, PL_F8E5M2, 1024, 512);
    pl_options opt = {.cost_only = 1, .chip = "v7x"};
    pl_report rep;
    cr_assert_eq(pl_validate(&call, &in, &out, &opt, &rep), PL_OK, "%s", rep.error);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert_eq(pl_vmem_report(&rep, f), PL_OK);
    fclose(f);
    cr_expect(strstr(text, "f8e4m3fn[2,256,512]{2,1,0:T(32,128)(4,1)}"), "%s", text);
    cr_expect(strstr(text, "f8e5m2[2,256,512]{2,1,0:T(32,128)(4,1)}"), "%s", text);
    free(text);
}

/* An int4 array's bytes are its packed bytes, half its elements rounded up,
 * so a caller that allocates pl_array_bytes gets room for pl_i4_store. */
Test(fp8, int4_array_bytes_are_the_packed_bytes)
{
    pl_array a = PL_ARRAY(NULL, PL_I4, 3, 5), b = PL_ARRAY(NULL, PL_F8E5M2, 3, 5);
    cr_assert_eq(pl_array_bytes(&a), 8, "15 nibbles take 8 bytes");
    cr_assert_eq(pl_array_bytes(&b), 15);
}

/* V1 for fp8: a scratch's poison (NaN in both formats) copied into an output
 * reaches HBM, which strict mode refuses. The write-back's NaN scan read
 * 16-bit values over 8-bit rows (a heap overflow fuzz_pallas_call found). */
static void copy_scratch(pl_ctx *c, pl_ref *refs) { pl_copy(c, refs[1], refs[2]); }

Test(fp8, V1_poison_in_an_fp8_output_is_found_by_the_write_back)
{
    pl_dtype types[2] = {PL_F8E4M3, PL_F8E5M2};
    for (int i = 0; i < 2; i++) {
        static uint8_t x[32 * 128], o[32 * 128];
        pl_call call = {.name = "poison8", .kernel = copy_scratch, .grid_rank = 1, .grid = {1},
                        .n_in = 1, .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), 32, 128)},
                        .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), 32, 128)},
                        .n_scratch = 1, .scratch = {PLTPU_VMEM(types[i], 32, 128)}};
        pl_array in = PL_ARRAY(x, types[i], 32, 128), out = PL_ARRAY(o, types[i], 32, 128);
        pl_options opt = {.strict = 1};
        pl_report rep;
        int rc = pl_pallas_call(&call, &in, &out, &opt, &rep);
        cr_expect_eq(rc, PL_EPOISON, "%s: %d %s", pl_dtype_name(types[i]), rc, rep.error);
        cr_expect(strstr(rep.error, "V1"), "%s", rep.error);
    }
}
