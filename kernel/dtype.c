/* kernel/dtype.c: element types, their sizes and conversions.
 *
 * bf16 and f16 are stored as uint16_t. Conversions from f32 round to nearest
 * even, as XLA's astype does on TPU, so that a kernel's results here match the
 * chip bit for bit where the chip is deterministic. fp8 (e4m3fn, e5m2) is
 * one byte converted as ml_dtypes does; int4 is storage only, two per byte
 * with element 2k in the low nibble (XLA's s4 packing): a byte address per
 * element does not exist, so pl_dtype_size is 0 for it and arrays of it are
 * refused (sim/call/validate.c); pl_i4_load/store read and write packed buffers.
 * fp4 (float4_e2m1fn) is storage only the same way, packed as int4, and
 * converts as ml_dtypes does (pl_f4_load/store).
 */
#include <math.h>
#include <string.h>

#include "context.h"

/* the table kern_dtype_size and kern_dtype_is_float (context.h) read inline on hot paths */
const kern_dtype_info kern_dtypes[PL_DTYPE_COUNT] = {
    [PL_F32] = {"f32", 4, 1},  [PL_BF16] = {"bf16", 2, 1}, [PL_F16] = {"f16", 2, 1},
    [PL_I32] = {"i32", 4, 0},  [PL_I8] = {"i8", 1, 0},    [PL_I16] = {"i16", 2, 0},
    [PL_F8E4M3] = {"f8e4m3", 1, 1}, [PL_F8E5M2] = {"f8e5m2", 1, 1},
    [PL_I4] = {"i4", 0, 0}, /* half a byte: the size is 0 so nothing allocates it by mistake */
    [PL_F4E2M1] = {"f4e2m1", 0, 1}, /* half a byte, as int4 */
};

static int valid(pl_dtype t) { return (unsigned)t < PL_DTYPE_COUNT; }

size_t pl_dtype_size(pl_dtype t) { return kern_dtype_size(t); }
int pl_dtype_bits(pl_dtype t) { return t == PL_I4 || t == PL_F4E2M1 ? 4 : (int)pl_dtype_size(t) * 8; }
const char *pl_dtype_name(pl_dtype t) { return valid(t) ? kern_dtypes[t].name : "?"; }
int pl_dtype_is_float(pl_dtype t) { return kern_dtype_is_float(t); }

int pl_dtype_parse(const char *s, pl_dtype *out)
{
    for (int t = 0; s && t < PL_DTYPE_COUNT; t++)
        if (strcmp(s, kern_dtypes[t].name) == 0) {
            *out = (pl_dtype)t;
            return PL_OK;
        }
    /* accept the JAX spellings too */
    if (s && strcmp(s, "float32") == 0) return *out = PL_F32, PL_OK;
    if (s && strcmp(s, "bfloat16") == 0) return *out = PL_BF16, PL_OK;
    if (s && strcmp(s, "float16") == 0) return *out = PL_F16, PL_OK;
    if (s && strcmp(s, "int32") == 0) return *out = PL_I32, PL_OK;
    if (s && strcmp(s, "int8") == 0) return *out = PL_I8, PL_OK;
    if (s && strcmp(s, "int16") == 0) return *out = PL_I16, PL_OK;
    if (s && strcmp(s, "float8_e4m3fn") == 0) return *out = PL_F8E4M3, PL_OK;
    if (s && strcmp(s, "float8_e5m2") == 0) return *out = PL_F8E5M2, PL_OK;
    if (s && strcmp(s, "int4") == 0) return *out = PL_I4, PL_OK;
    if (s && strcmp(s, "float4_e2m1fn") == 0) return *out = PL_F4E2M1, PL_OK;
    return PL_EINVAL;
}

const char *pl_memspace_name(pl_memspace s)
{
    switch (s) {
    case PL_VMEM: return "VMEM";
    case PL_SMEM: return "SMEM";
    case PL_ANY: return "ANY";
    case PL_SEMAPHORE: return "SEMAPHORE";
    case PL_SEMAPHORE_DMA: return "SEMAPHORE (DMA)";
    }
    return "?";
}

/* ---- bf16 ---------------------------------------------------------------- */

static uint32_t bits_of(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }
static float float_of(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }

uint16_t pl_f32_to_bf16(float x)
{
    uint32_t u = bits_of(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it a (quiet) NaN */
        return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest, ties to even */
    return (uint16_t)(u >> 16);
}

float pl_bf16_to_f32(uint16_t x) { return float_of((uint32_t)x << 16); }

/* ---- f16 ----------------------------------------------------------------- */

uint16_t pl_f32_to_f16(float x)
{
    uint32_t u = bits_of(x);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return sign | 0x7e00u; /* NaN */
    if (a >= 0x477ff000u) return sign | 0x7c00u; /* rounds to >= 65520: inf */
    if (a < 0x38800000u) {
        /* subnormal in f16 (or zero): scale so that rounding happens at the
         * f16 subnormal spacing 2^-24, and let the FPU round to even. */
        float f = float_of(a) * 16777216.0f; /* * 2^24, exact */
        return sign | (uint16_t)lrintf(f);
    }
    uint32_t mant = a & 0x7fffffu;
    uint32_t exp = (a >> 23) - 127 + 15;
    uint32_t h = (exp << 10) | (mant >> 13);
    uint32_t rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++; /* may carry into exp: fine */
    return sign | (uint16_t)h;
}

float pl_f16_to_f32(uint16_t x)
{
    uint32_t sign = (uint32_t)(x & 0x8000u) << 16;
    uint32_t exp = (x >> 10) & 0x1fu, mant = x & 0x3ffu;
    if (exp == 0) {
        float f = (float)mant / 16777216.0f; /* mant * 2^-24 */
        return sign ? -f : f;
    }
    if (exp == 31) return float_of(sign | 0x7f800000u | (mant << 13));
    return float_of(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

/* ---- fp8 (float8_e4m3fn, float8_e5m2) and int4 ----------------------------- */

/* One 8-bit float format: exponent bias, mantissa bits, largest finite
 * value, and whether it has infinities (e5m2) or turns an overflow into NaN
 * (e4m3fn, whose only NaN is S.1111.111). */
typedef struct f8_format {
    int bias, mbits;
    double max;
    int has_inf;
    uint8_t nan; /* the NaN code a conversion makes (sign added) */
} f8_format;

static const f8_format E4M3 = {7, 3, 448.0, 0, 0x7f};
static const f8_format E5M2 = {15, 2, 57344.0, 1, 0x7e};

/* Round |x| to the format by scaling to its quantum at x's exponent (the
 * subnormal quantum below the smallest normal) and rounding once, to
 * nearest even (the FPU's default mode): then check the rounded value
 * against the largest finite one, as ml_dtypes does (464 -> 448 in e4m3fn,
 * 465 -> NaN). x is a double so pl_store_elem rounds only once. */
static uint8_t f8_encode(const f8_format *f, double x)
{
    uint8_t sign = signbit(x) ? 0x80 : 0;
    double a = fabs(x);
    if (isnan(x)) return sign | f->nan;
    if (a == 0) return sign;
    if (isinf(a)) return sign | (f->has_inf ? 0x7c : f->nan);
    int emin = 1 - f->bias, e = ilogb(a);
    if (e < emin) e = emin;
    double q = ldexp(1.0, e - f->mbits);
    double r = nearbyint(a / q) * q;
    if (r > f->max) return sign | (f->has_inf ? 0x7c : f->nan);
    if (r < ldexp(1.0, emin)) return sign | (uint8_t)(r / ldexp(1.0, emin - f->mbits)); /* subnormal or 0 */
    int re = ilogb(r);
    int mant = (int)(r / ldexp(1.0, re - f->mbits)) - (1 << f->mbits);
    return sign | (uint8_t)(((re + f->bias) << f->mbits) | mant);
}

static float f8_decode(const f8_format *f, uint8_t c)
{
    int ebits = 7 - f->mbits, emask = (1 << ebits) - 1, mmask = (1 << f->mbits) - 1;
    int e = (c >> f->mbits) & emask, m = c & mmask;
    float s = (c & 0x80) ? -1.0f : 1.0f;
    if (f->has_inf && e == emask) return copysignf(m ? NAN : INFINITY, s); /* a NaN keeps its sign */
    if (!f->has_inf && e == emask && m == mmask) return copysignf(NAN, s);
    if (e == 0) return s * ldexpf((float)m, 1 - f->bias - f->mbits);
    return s * ldexpf((float)(m | (1 << f->mbits)), e - f->bias - f->mbits);
}

uint8_t pl_f32_to_f8e4m3(float x) { return f8_encode(&E4M3, x); }
float pl_f8e4m3_to_f32(uint8_t x) { return f8_decode(&E4M3, x); }
uint8_t pl_f32_to_f8e5m2(float x) { return f8_encode(&E5M2, x); }
float pl_f8e5m2_to_f32(uint8_t x) { return f8_decode(&E5M2, x); }

int pl_i4_load(const void *packed, int64_t i)
{
    int nib = (((const uint8_t *)packed)[i / 2] >> (i % 2 ? 4 : 0)) & 0xf;
    return nib >= 8 ? nib - 16 : nib;
}

void pl_i4_store(void *packed, int64_t i, int v)
{
    uint8_t *b = (uint8_t *)packed + i / 2;
    unsigned nib = (unsigned)(v < -8 ? -8 : v > 7 ? 7 : v) & 0xfu;
    int shift = i % 2 ? 4 : 0;
    *b = (uint8_t)((*b & ~(0xfu << shift)) | (nib << shift));
}

/* ---- fp4 (float4_e2m1fn): 1 sign, 2 exponent bits (bias 1), 1 mantissa bit ---- */

/* Round |x| at the quantum of its binade (0.5 below 2: the subnormal 0.5
 * and the binade [1, 2) share it), to nearest even by the FPU's default
 * mode, then clamp: ml_dtypes' float4_e2m1fn has no infinity, and its
 * overflow (kSaturate off) returns infinity(), which is the largest value 6.
 * A NaN returns quiet_NaN(), the code 0x8, negated by the NaN's sign bit. */
static uint8_t f4_encode(double x)
{
    uint8_t sign = signbit(x) ? 0x8 : 0;
    if (isnan(x)) return (uint8_t)(0x8 ^ sign);
    double a = fabs(x);
    if (a >= 6) return sign | 0x7; /* 7 ties to 8, past 6: saturates as well */
    int e = a < 2 ? 0 : ilogb(a); /* 0 for both the subnormal and [1, 2): quantum 0.5 */
    double q = ldexp(1.0, e - 1), r = nearbyint(a / q) * q;
    if (r < 1) return sign | (uint8_t)(r * 2); /* 0 or 0.5: exponent field 0 */
    int re = ilogb(r); /* r in [1, 6], a multiple of its binade's quantum */
    int mant = (int)(r / ldexp(1.0, re - 1)) - 2;
    return sign | (uint8_t)(((re + 1) << 1) | mant);
}

uint8_t pl_f32_to_f4e2m1(float x) { return f4_encode(x); }

float pl_f4e2m1_to_f32(uint8_t code)
{
    int e = (code >> 1) & 3, m = code & 1;
    float v = e ? ldexpf((float)(2 + m), e - 2) : 0.5f * (float)m;
    return (code & 0x8) ? -v : v;
}

float pl_f4_load(const void *packed, int64_t i)
{
    return pl_f4e2m1_to_f32((uint8_t)((((const uint8_t *)packed)[i / 2] >> (i % 2 ? 4 : 0)) & 0xf));
}

void pl_f4_store(void *packed, int64_t i, float v)
{
    uint8_t *b = (uint8_t *)packed + i / 2;
    int shift = i % 2 ? 4 : 0;
    *b = (uint8_t)((*b & ~(0xfu << shift)) | ((unsigned)f4_encode(v) << shift));
}

/* ---- generic element access ---------------------------------------------- */

static double to_int_range(double v, double lo, double hi)
{
    if (isnan(v)) return 0;
    v = trunc(v);
    return v < lo ? lo : v > hi ? hi : v;
}

double pl_load_elem(const void *p, pl_dtype t)
{
    switch (t) {
    case PL_F32: { float f; memcpy(&f, p, 4); return f; }
    case PL_BF16: { uint16_t h; memcpy(&h, p, 2); return pl_bf16_to_f32(h); }
    case PL_F16: { uint16_t h; memcpy(&h, p, 2); return pl_f16_to_f32(h); }
    case PL_I32: { int32_t i; memcpy(&i, p, 4); return i; }
    case PL_I8: return *(const int8_t *)p;
    case PL_I16: { int16_t i; memcpy(&i, p, 2); return i; }
    case PL_F8E4M3: return pl_f8e4m3_to_f32(*(const uint8_t *)p);
    case PL_F8E5M2: return pl_f8e5m2_to_f32(*(const uint8_t *)p);
    default: return 0; /* int4, fp4 have no byte address: pl_i4_load, pl_f4_load */
    }
}

void pl_store_elem(void *p, pl_dtype t, double v)
{
    switch (t) {
    case PL_F32: { float f = (float)v; memcpy(p, &f, 4); break; }
    case PL_BF16: { uint16_t h = pl_f32_to_bf16((float)v); memcpy(p, &h, 2); break; }
    case PL_F16: { uint16_t h = pl_f32_to_f16((float)v); memcpy(p, &h, 2); break; }
    case PL_I32: { int32_t i = (int32_t)to_int_range(v, INT32_MIN, INT32_MAX); memcpy(p, &i, 4); break; }
    case PL_I8: *(int8_t *)p = (int8_t)to_int_range(v, INT8_MIN, INT8_MAX); break;
    case PL_I16: { int16_t i = (int16_t)to_int_range(v, INT16_MIN, INT16_MAX); memcpy(p, &i, 2); break; }
    case PL_F8E4M3: *(uint8_t *)p = f8_encode(&E4M3, v); break;
    case PL_F8E5M2: *(uint8_t *)p = f8_encode(&E5M2, v); break;
    default: break; /* int4, fp4: pl_i4_store, pl_f4_store */
    }
}
