/* kernel/dtype.c: element types, their sizes and conversions.
 *
 * bf16 and f16 are stored as uint16_t. Conversions from f32 round to nearest
 * even, as XLA's astype does on TPU, so that a kernel's results here match the
 * chip bit for bit where the chip is deterministic.
 */
#include <math.h>
#include <string.h>

#include "pallas.h"

static const struct {
    const char *name;
    size_t size;
    int is_float;
} dtypes[PL_DTYPE_COUNT] = {
    [PL_F32] = {"f32", 4, 1},  [PL_BF16] = {"bf16", 2, 1}, [PL_F16] = {"f16", 2, 1},
    [PL_I32] = {"i32", 4, 0},  [PL_I8] = {"i8", 1, 0},    [PL_I16] = {"i16", 2, 0},
};

static int valid(pl_dtype t) { return (unsigned)t < PL_DTYPE_COUNT; }

size_t pl_dtype_size(pl_dtype t) { return valid(t) ? dtypes[t].size : 0; }
int pl_dtype_bits(pl_dtype t) { return (int)pl_dtype_size(t) * 8; }
const char *pl_dtype_name(pl_dtype t) { return valid(t) ? dtypes[t].name : "?"; }
int pl_dtype_is_float(pl_dtype t) { return valid(t) && dtypes[t].is_float; }

int pl_dtype_parse(const char *s, pl_dtype *out)
{
    for (int t = 0; s && t < PL_DTYPE_COUNT; t++)
        if (strcmp(s, dtypes[t].name) == 0) {
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
    return PL_EINVAL;
}

const char *pl_memspace_name(pl_memspace s)
{
    switch (s) {
    case PL_VMEM: return "VMEM";
    case PL_SMEM: return "SMEM";
    case PL_ANY: return "ANY";
    case PL_SEMAPHORE: return "SEMAPHORE";
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
    default: return 0;
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
    default: break;
    }
}
