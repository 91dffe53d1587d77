/* kernel/pallas.h: the kernel language of tilesim, what code inside a kernel
 * sees and does. It mirrors JAX Pallas (`pl.`) so that a Python kernel
 * transliterates line by line.
 *
 * A kernel is a C function called once per grid point (rule G1 of PALLAS.md).
 * It receives a context (the running grid point) and its Refs in the order of
 * rule M3: scalar-prefetch refs, inputs, outputs, scratch. A Ref is a view of a
 * VMEM (or SMEM) buffer: it never owns memory. Block ops compute on the data
 * and report the work they did (FLOPs, elements, bytes) to the context, which
 * the simulator turns into time.
 *
 * Example: the tiled matmul of the Pallas docs.
 *
 *     static void matmul_kernel(pl_ctx *c, pl_ref *refs) {
 *         pl_ref x = refs[0], y = refs[1], o = refs[2], acc = refs[3];
 *         if (pl_program_id(c, 2) == 0)
 *             pl_fill(c, acc, 0.0);                        // acc[...] = 0
 *         pl_dot(c, acc, x, y, PL_DOT_ACC);                // acc += x @ y
 *         if (pl_program_id(c, 2) == pl_num_programs(c, 2) - 1)
 *             pl_copy(c, o, acc);                          // o[...] = acc.astype(o.dtype)
 *     }
 *
 * Contract of every function below: the first argument is the context of the
 * running kernel. A misuse that hardware would not catch or would crash on
 * (an index outside a Ref, shapes that do not match, an unsupported dtype)
 * never returns: the simulator records the error with the grid point, leaves
 * the kernel and makes pl_pallas_call return the code (PL_EBOUNDS, PL_ESHAPE,
 * ...). Kernels therefore need no error handling of their own.
 *
 * Lifetimes: the context and the refs array are valid only during the
 * kernel's call for one grid point, and so are the Refs in it and every view
 * made from them (pl_ds, pl_at): the VMEM buffers behind them are reused at
 * later grid points and freed when pl_pallas_call returns. Scratch keeps its
 * contents from one grid point to the next of the same TensorCore; read it
 * through the refs of each call, not through a Ref saved from an earlier one.
 *
 * Threads: a context belongs to the one thread running that kernel call; do
 * not hand it, or its Refs, to other threads. On a chip with several
 * TensorCores per device the kernel may run on several host threads at once,
 * one per core (sim/tilesim.h, pl_pallas_call), so what it shares with other
 * grid points outside its Refs (pl_kernel_user, statics) needs a lock. The
 * functions that take no context (dtypes, conversions, pl_strerror) are
 * pure and may be called from any thread.
 */
#ifndef TILESIM_PALLAS_H
#define TILESIM_PALLAS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PL_MAX_RANK 6 /* dimensions of an array, block or Ref */
#define PL_MAX_GRID 6 /* axes of a grid */

/* ---- status codes -------------------------------------------------------- */

/* Every public function that can fail returns PL_OK or one of these. */
typedef enum pl_status {
    PL_OK = 0,
    PL_EINVAL = -1,      /* a malformed call, option or argument */
    PL_EBLOCKSHAPE = -2, /* block shape breaks rules B1, T1-T5 */
    PL_EINDEXMAP = -3,   /* index map out of range or malformed (B2, B7) */
    PL_EVMEM = -4,       /* VMEM (or SMEM) budget exceeded (M4) */
    PL_EREVISIT = -5,    /* an output block revisited after write-back (P5) */
    PL_EBOUNDS = -6,     /* a kernel access outside a Ref (V2) */
    PL_ERACE = -7,       /* two writers of the same bytes without order (V4) */
    PL_EDEADLOCK = -8,   /* a wait that nothing can satisfy (M10) */
    PL_ENOMEM = -9,      /* the host ran out of memory */
    PL_ESHAPE = -10,     /* operands of a block op whose shapes do not match */
    PL_EDTYPE = -11,     /* a dtype an op does not support */
    PL_ESPACE = -12,     /* an op on a Ref in the wrong memory space (M1) */
    PL_EVERIFY = -13,    /* a result that does not match its reference (V5) */
    PL_EPOISON = -14,    /* uninitialized data (NaN poison) reached HBM, in strict mode (V1) */
    PL_EREADONLY = -15,  /* a write into an input block, in strict mode (V3) */
    PL_ESEMAPHORE = -16, /* a semaphore non-zero, or a copy never waited, at the end (M10) */
    PL_ETILING = -17,    /* the compiler's tiling check: a block off the memory tiling (T8, XLA E2002) or a
                            dynamic slice not provably tile-aligned (T9, E2003) */
    /* The most negative code: keep it right after the last one, so loops over
     * every code (tests, pl_strerror) stay right when a code is added. */
    PL_STATUS_MIN = PL_ETILING,
} pl_status;

/* A static string naming the code ("block shape breaks the (8,128) rule"). */
const char *pl_strerror(int code);

/* ---- dtypes and memory spaces ------------------------------------------- */

typedef enum pl_dtype {
    PL_F32 = 0, /* IEEE binary32 */
    PL_BF16,    /* bfloat16, stored as uint16_t (top half of an f32) */
    PL_F16,     /* IEEE binary16, stored as uint16_t */
    PL_I32,     /* int32_t */
    PL_I8,      /* int8_t */
    PL_I16,     /* int16_t (scalar-prefetch tables, M5) */
    PL_F8E4M3,  /* float8_e4m3fn, one byte: no infinity, NaN = S.1111.111, max 448 */
    PL_F8E5M2,  /* float8_e5m2, one byte: IEEE-like, with infinities and NaNs */
    PL_I4,      /* int4, storage only: two per byte, element 2k in the low nibble
                 * (pl_i4_load/store); arrays and Refs of it are refused */
    PL_F4E2M1,  /* float4_e2m1fn, storage only as int4: two per byte, element 2k in the
                 * low nibble (pl_f4_load/store); arrays and Refs of it are refused */
    PL_DTYPE_COUNT
} pl_dtype;

size_t pl_dtype_size(pl_dtype t);      /* bytes per element; 0 if invalid, int4 or fp4 (half a byte) */
int pl_dtype_bits(pl_dtype t);         /* bits per element (4 for int4 and fp4) */
const char *pl_dtype_name(pl_dtype t); /* "f32", "bf16", ...; "?" if invalid */
int pl_dtype_is_float(pl_dtype t);
int pl_dtype_parse(const char *s, pl_dtype *out); /* PL_OK or PL_EINVAL */

/* Conversions, rounding to nearest even (as astype does on TPU). Floats to
 * integers truncate toward zero and saturate; NaN becomes 0. */
uint16_t pl_f32_to_bf16(float x);
float pl_bf16_to_f32(uint16_t x);
uint16_t pl_f32_to_f16(float x);
float pl_f16_to_f32(uint16_t x);
/* fp8 as ml_dtypes converts (non-saturating): round to nearest even; e4m3fn
 * has no infinity, so a value past 464 in magnitude, an infinity or a NaN
 * becomes NaN (0x7f, with the sign); e5m2 overflows to infinity. Serving
 * stacks clip to the max (448, 57344) before they cast. fp8 -> f32 is exact. */
uint8_t pl_f32_to_f8e4m3(float x);
float pl_f8e4m3_to_f32(uint8_t x);
uint8_t pl_f32_to_f8e5m2(float x);
float pl_f8e5m2_to_f32(uint8_t x);
/* int4 element i of a packed buffer (element 2k in the low nibble of byte
 * k, 2k+1 in the high one, as XLA packs s4); a store saturates to -8..7. */
int pl_i4_load(const void *packed, int64_t i);
void pl_i4_store(void *packed, int64_t i, int v);
/* float4_e2m1fn: codes 0..15 (sign, 2 exponent bits, 1 mantissa bit, bias
 * 1), values 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives; no infinity,
 * no NaN. From f32 as ml_dtypes converts: round to nearest even, saturate
 * to +-6 (infinities too); a NaN becomes ml_dtypes' quiet_NaN(), the code
 * 0x8 (-0), negated by the NaN's sign bit (so +NaN -> -0, -NaN -> +0).
 * fp4 -> f32 is exact. pl_f4_load/store address a packed buffer as int4:
 * element 2k in the low nibble of byte k, 2k+1 in the high one. */
uint8_t pl_f32_to_f4e2m1(float x);
float pl_f4e2m1_to_f32(uint8_t code);
float pl_f4_load(const void *packed, int64_t i);
void pl_f4_store(void *packed, int64_t i, float v);
double pl_load_elem(const void *p, pl_dtype t);        /* one element as double */
void pl_store_elem(void *p, pl_dtype t, double v);     /* one element, converted */

typedef enum pl_memspace {
    PL_VMEM = 0,  /* vector memory: the default for blocks and scratch */
    PL_SMEM,      /* scalar memory: 32-bit scalars (M1) */
    PL_ANY,       /* left in HBM, reachable only by DMA (T5) */
    PL_SEMAPHORE, /* semaphores (M9) */
    PL_SEMAPHORE_DMA, /* a call's operand only: an int32 array of DMA semaphores' counts (M16), as JAX's
                       * memory_space=pltpu.SEMAPHORE with out_shape pltpu.SemaphoreType.DMA */
} pl_memspace;

const char *pl_memspace_name(pl_memspace s);

/* ---- Refs ---------------------------------------------------------------- */

/* What a Ref is to the call that made it, for messages and checks. */
typedef enum pl_role { PL_ROLE_NONE = 0, PL_ROLE_PREFETCH, PL_ROLE_IN, PL_ROLE_OUT, PL_ROLE_SCRATCH } pl_role;

typedef struct pl_ref {
    void *data;                   /* first element */
    pl_dtype dtype;
    pl_memspace space;
    int rank;                     /* 0..PL_MAX_RANK; squeezed dims are gone */
    int64_t shape[PL_MAX_RANK];   /* elements per dimension */
    int64_t stride[PL_MAX_RANK];  /* elements between neighbours, per dimension */
    /* private: where the Ref came from, for messages */
    int16_t arg;                  /* kernel argument position (M3), -1 if none */
    uint8_t role;                 /* pl_role */
    uint8_t readonly;             /* an input block: writes never reach HBM (V3) */
    uint8_t sem_kind;             /* PL_SEMAPHORE refs: pl_sem_kind */
    /* private: elements at the end of each dimension that lie past the Ref the
     * view was sliced from (a pl_ds range that runs past the end, V2). Only
     * pl_get / pl_set of elements inside, pl_load / pl_store (V6) and a DMA
     * source take such a view; any other op refuses it (PL_EBOUNDS). */
    int64_t past[PL_MAX_RANK];
} pl_ref;

/* Semaphores are regular (signal / wait on counts, M9) or DMA (count the
 * bytes of finished copies, M8). */
typedef enum pl_sem_kind { PL_SEM_NONE = 0, PL_SEM_REGULAR = 1, PL_SEM_DMA = 2 } pl_sem_kind;

typedef struct pl_ctx pl_ctx; /* opaque: the running grid point */

/* The kernel: called once per grid point with refs in the order of rule M3. */
typedef void (*pl_kernel_fn)(pl_ctx *c, pl_ref *refs);

/* ---- the grid (rule G2) ------------------------------------------------- */

/* In an emit_pipeline body: the pipeline's global point and whole grid size
 * (JAX's grid_env), not the call's. */
int64_t pl_program_id(const pl_ctx *c, int axis);   /* faults on a bad axis */
int64_t pl_num_programs(const pl_ctx *c, int axis); /* faults on a bad axis */
void *pl_kernel_user(const pl_ctx *c);              /* pl_call.user: shared by all grid points and cores */

/* Values: the arrays a Pallas kernel names as Python variables (t =
 * x_ref[...] * 2, s = jnp.dot(...)). Mosaic keeps them in vector registers
 * and its own internal scratch, not in a VMEM buffer of the call, so they
 * count against no scoped limit (M4). Block ops take Refs, so a value is a
 * Ref over host memory that belongs to no operand and no scratch: the ops
 * on it are counted (VPU, MXU) as on any Ref, and an op that reads the value
 * the op before it wrote moves no VMEM bytes for it. Declare as scratch
 * only what outlives a grid point (an accumulator, a running max) or what a
 * copy lands in. At each grid point reserve the sum of the values it takes,
 * then take them; their contents are what the last grid point left, so
 * write before reading:
 *
 *     pl_values_begin(c, pl_value_bytes(PL_F32, bm, bn));
 *     pl_ref t = pl_value(c, PL_F32, bm, bn);   // t = x_ref[...] * 2
 *     pl_mul_scalar(c, t, x, 2.0);
 *     pl_add(c, o, t, y);                       // o_ref[...] = t + y_ref[...]
 *
 * A value taken past what pl_values_begin reserved is PL_EINVAL. */
size_t pl_value_bytes(pl_dtype t, int64_t rows, int64_t cols); /* what one (rows, cols) value takes */
void pl_values_begin(pl_ctx *c, size_t bytes);
pl_ref pl_value(pl_ctx *c, pl_dtype t, int64_t rows, int64_t cols);

/* ---- views: never copy ----------------------------------------------------- */

/* ref[..., start:start+size, ...] along dimension dim (pl.ds). The range may
 * run past the end of r (start + size > size of dim): the view then holds
 * elements past the Ref, which no op reads or writes except as V6 allows
 * (masked pl_load / pl_store, and reads as poison under oob_reads = poison). */
pl_ref pl_ds(pl_ctx *c, pl_ref r, int dim, int64_t start, int64_t size);
/* pl.multiple_of: value, promised to be a multiple of m, as a start for
 * pl_ds along a tiled dimension (rule T9). The promise is checked: a value
 * that is not a multiple faults with PL_ETILING; m < 1 with PL_EINVAL. */
int64_t pl_multiple_of(pl_ctx *c, int64_t value, int64_t m);
/* ref[i]: drops the leading dimension. */
pl_ref pl_at(pl_ctx *c, pl_ref r, int64_t i);
int64_t pl_size(pl_ref r); /* number of elements */

/* ---- element access --------------------------------------------------------- */

/* idx has r.rank entries. Values pass through double, exact for every dtype. */
double pl_get(pl_ctx *c, pl_ref r, const int64_t *idx);
void pl_set(pl_ctx *c, pl_ref r, const int64_t *idx, double v);
#ifndef __cplusplus
#define pl_get_at(c, r, ...) pl_get((c), (r), (const int64_t[]){__VA_ARGS__})
#define pl_set_at(c, r, v, ...) pl_set((c), (r), (const int64_t[]){__VA_ARGS__}, (v))
#else /* C++: built by inline functions, see the end of this header */
#define pl_get_at(c, r, ...) (::pl_cxx::get_at((c), (r), __VA_ARGS__))
#define pl_set_at(c, r, v, ...) (::pl_cxx::set_at((c), (r), (v), __VA_ARGS__))
#endif

/* ---- block ops: compute and report their cost --------------------------- */

#define PL_DOT_ACC 1u     /* acc += a @ b (otherwise acc = a @ b) */
#define PL_DOT_TRANS_B 2u /* b is given as (n, k): acc (+)= a @ b^T */

/* acc (m,n) (+)= a (m,k) @ b (k,n), accumulated in fp32 through OpenBLAS, as
 * jnp.dot(a, b, preferred_element_type=f32). a and b are f32, bf16 or f16
 * (a bf16 product is exact in f32); acc of any float dtype is read and written
 * through f32. int8 x int8 accumulates exactly in an int32 acc, where the
 * chip's MXU has an int8 path (not v7x); a float x int8 mix widens the int8
 * operand to f32. Other mixes are PL_EDTYPE (rule T10, XLA E2001).
 * Reports 2*m*n*k MXU FLOPs. */
void pl_dot(pl_ctx *c, pl_ref acc, pl_ref a, pl_ref b, unsigned flags);

void pl_fill(pl_ctx *c, pl_ref dst, double value);       /* dst[...] = value */
void pl_copy(pl_ctx *c, pl_ref dst, pl_ref src);          /* dst[...] = src.astype(dst.dtype) */
void pl_add(pl_ctx *c, pl_ref dst, pl_ref a, pl_ref b);   /* dst = a + b */
void pl_mul(pl_ctx *c, pl_ref dst, pl_ref a, pl_ref b);   /* dst = a * b */
void pl_max(pl_ctx *c, pl_ref dst, pl_ref a, pl_ref b);   /* dst = maximum(a, b) */
void pl_relu(pl_ctx *c, pl_ref dst, pl_ref src);          /* dst = maximum(src, 0) */

/* ---- masked loads and stores (rule V6) ------------------------------------ */

/* dst = where(mask, src, other): pl.load(src, idx, mask=, other=). src may be
 * a pl_ds view that runs past its Ref: masked-off elements there are never
 * touched; an unmasked one is PL_EBOUNDS, or poison under oob_reads = poison
 * (V2). mask NULL: every element (an unmasked load: past the end reads
 * poison or fails). dst must lie inside its Ref. */
void pl_load(pl_ctx *c, pl_ref dst, pl_ref src, const pl_ref *mask, double other);
/* dst[mask] = src[mask].astype(dst.dtype): pl.store(dst, idx, src, mask=).
 * dst may run past its Ref where the mask is 0 (the ragged last block); an
 * unmasked element past the end is PL_EBOUNDS. mask NULL: every element. */
void pl_store(pl_ctx *c, pl_ref dst, pl_ref src, const pl_ref *mask);
/* A mask is a VMEM ref of any dtype (nonzero: on) with dst's rank, each
 * dimension equal to dst's or 1 (broadcast: a (1, n) row, an (r, 1) column).
 * mask[i...] = (i_dim < n): the "lane index < n" mask of a ragged tail, as
 * jnp.arange(block) + start < size. */
void pl_mask_lt(pl_ctx *c, pl_ref mask, int dim, int64_t n);
/* Cost (model choice): 1 VPU op per element of dst (a select). */

/* ---- softmax math: what attention kernels need ---------------------------- */

/* Float refs only (f32, bf16, f16, in any mix; integers fault with PL_EDTYPE),
 * computed in double and rounded once to dst's dtype; dst may be a source (in
 * place). Broadcasts, reductions and pl_tril take rank-2 refs. Cost (model
 * choice): 1 VPU FLOP per element produced, 4 for exp and division; a
 * reduction produces one element per row and counts 1 per element reduced;
 * the max of an empty row is -inf, its sum 0. */
void pl_exp(pl_ctx *c, pl_ref dst, pl_ref src);               /* dst = exp(src) */
void pl_scale(pl_ctx *c, pl_ref dst, pl_ref src, double s);   /* dst = src * s */
void pl_sub(pl_ctx *c, pl_ref dst, pl_ref a, pl_ref b);       /* dst = a - b */
void pl_max_rows(pl_ctx *c, pl_ref dst, pl_ref src);          /* dst (r,1) = src.max(-1, keepdims); NaN wins */
void pl_sum_rows(pl_ctx *c, pl_ref dst, pl_ref src);          /* dst (r,1) = src.sum(-1, keepdims) */
void pl_sub_col(pl_ctx *c, pl_ref dst, pl_ref a, pl_ref col); /* dst = a - col, col (r,1) along the last axis */
void pl_mul_col(pl_ctx *c, pl_ref dst, pl_ref a, pl_ref col); /* dst = a * col, col (r,1) along the last axis */
void pl_div_col(pl_ctx *c, pl_ref dst, pl_ref a, pl_ref col); /* dst = a / col, col (r,1) along the last axis */
void pl_add_row(pl_ctx *c, pl_ref dst, pl_ref a, pl_ref row); /* dst = a + row, row (1,n) across the rows */
void pl_mul_row(pl_ctx *c, pl_ref dst, pl_ref a, pl_ref row); /* dst = a * row, row (1,n) across the rows */
/* dst[i, j] = src[i, j] if j <= i + k else value: jnp.where(tril(ones, k), src, value), the causal mask */
void pl_tril(pl_ctx *c, pl_ref dst, pl_ref src, int64_t k, double value);

/* ---- more elementwise ops, masks, reductions and iota (jnp names) ---------- */

/* Broadcasting: every source has dst's rank and each of its dimensions equals
 * dst's or is 1 (a (1, n) row, an (r, 1) column, a (1, 1) scalar block), as
 * the masks of pl_load do; anything else faults with PL_ESHAPE. Values are
 * computed in double and rounded once to dst's dtype; dst may be a source.
 *
 * Cost (model choice, sim/timing/chips.c's notes): VPU ops count 1 FLOP per element
 * produced (add_scalar, mul_scalar, cmp, where, iota, cast); div counts 4 (a
 * reciprocal on the EUP and a multiply, as pl_div_col). The transcendental
 * ops run on the EUP (the report counts their elements in eup_elems) and are
 * charged as VPU-equivalent FLOPs per element: 4 for exp, log, rsqrt and
 * sqrt, 6 for tanh and sigmoid (the EUP push and the VPU work around it), 10
 * for gelu (tanh plus its polynomial). */

/* Float refs only (f32, bf16, f16: integers fault with PL_EDTYPE). */
void pl_rsqrt(pl_ctx *c, pl_ref dst, pl_ref src);   /* dst = 1 / sqrt(src) (lax.rsqrt) */
void pl_sqrt(pl_ctx *c, pl_ref dst, pl_ref src);    /* dst = sqrt(src) */
void pl_log(pl_ctx *c, pl_ref dst, pl_ref src);     /* dst = log(src), natural */
void pl_tanh(pl_ctx *c, pl_ref dst, pl_ref src);    /* dst = tanh(src) */
void pl_sigmoid(pl_ctx *c, pl_ref dst, pl_ref src); /* dst = 1 / (1 + exp(-src)) (jax.nn.sigmoid) */
/* dst = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): jax.nn.gelu(approximate=True) */
void pl_gelu(pl_ctx *c, pl_ref dst, pl_ref src);
void pl_div(pl_ctx *c, pl_ref dst, pl_ref a, pl_ref b);            /* dst = a / b, broadcasting */
/* dst = src + s, dst = src * s. On integer refs (i8, i16, i32, src an integer
 * ref too) s must be a whole number and the result wraps at dst's width, as
 * jnp's x + 1 does; a fractional s there is PL_EINVAL (jnp's result would be
 * float). */
void pl_add_scalar(pl_ctx *c, pl_ref dst, pl_ref src, double s);   /* dst = src + s */
void pl_mul_scalar(pl_ctx *c, pl_ref dst, pl_ref src, double s);   /* dst = src * s */

/* Comparisons write a mask: 1 where the comparison holds, else 0, into a ref
 * of any dtype (i32 or i8 are usual). A mask is read as on where nonzero, so
 * the same mask serves pl_where, pl_load and pl_store (V6). Operands may be
 * any dtype (integers compare exactly); a comparison with NaN is false
 * except PL_NE, as in jnp. */
typedef enum pl_cmp_op { PL_LT = 0, PL_LE, PL_GT, PL_GE, PL_EQ, PL_NE } pl_cmp_op;
void pl_cmp(pl_ctx *c, pl_ref mask, pl_ref a, pl_ref b, pl_cmp_op op);          /* mask = a OP b */
void pl_cmp_scalar(pl_ctx *c, pl_ref mask, pl_ref a, pl_cmp_op op, double s);   /* mask = a OP s */
/* dst = where(mask, a, b) (jnp.where, lax.select): mask, a and b broadcast to
 * dst; any dtypes (an integer dst takes integers exactly). */
void pl_where(pl_ctx *c, pl_ref dst, pl_ref mask, pl_ref a, pl_ref b);

/* Reductions of a rank-2 float or int32 ref along axis 0 (dst (1, n): per
 * column) or axis 1 (dst (r, 1): per row, as pl_sum_rows / pl_max_rows),
 * keepdims (jnp.sum, jnp.max, jnp.min). Cost: 1 VPU op per element reduced.
 * The max of nothing is -inf (the min +inf), NaN wins; an int32 sum wraps. */
void pl_reduce_sum(pl_ctx *c, pl_ref dst, pl_ref src, int axis);
void pl_reduce_max(pl_ctx *c, pl_ref dst, pl_ref src, int axis);
void pl_reduce_min(pl_ctx *c, pl_ref dst, pl_ref src, int axis);

/* dst[i...] = offset + i[dim]: lax.broadcasted_iota plus an offset, e.g.
 * pl_program_id(c, 0) * block_rows to build a mask of global row indices.
 * Any dtype (float dsts round). */
void pl_iota(pl_ctx *c, pl_ref dst, int dim, int64_t offset);
/* dst = src.astype(dst.dtype): the jnp name of pl_copy (same conversions). */
void pl_cast(pl_ctx *c, pl_ref dst, pl_ref src);
/* dst (..., 2n) = the fp4 e2m1 values packed two to a byte in the int8
 * Ref src (..., n), element 2k in byte k's low nibble (pl_f4_store's
 * layout), converted to dst's dtype: w_ref[...].astype(...) on a
 * float4_e2m1fn Ref, as a kernel widens packed weights for the MXU.
 * Cost (model choice): 1 VPU op per value of dst. */
void pl_unpack_f4(pl_ctx *c, pl_ref dst, pl_ref src);
/* dst (n, m) = src (m, n).T, converted to dst's dtype: x.T or
 * jnp.transpose(x) of a 2-D block (the XLU's job on a TPU). dst may be src
 * itself when it is square. Cost (model choice): 1 VPU op per element and
 * the bytes of a copy through VMEM. A reshape needs no op: take a view. */
void pl_transpose(pl_ctx *c, pl_ref dst, pl_ref src);

#ifdef __cplusplus
}

/* C++ has no compound literals: pl_get_at and pl_set_at pass their indices
 * through these (extern "C++" in case the header sits in an extern "C" block).
 * Missing trailing indices read as 0. */
extern "C++" {
namespace pl_cxx {
template <class... I> inline double get_at(pl_ctx *c, pl_ref r, I... i)
{
    static_assert(sizeof...(I) <= PL_MAX_RANK, "pl_get_at: more indices than PL_MAX_RANK");
    const int64_t idx[PL_MAX_RANK] = {static_cast<int64_t>(i)...};
    return pl_get(c, r, idx);
}
template <class V, class... I> inline void set_at(pl_ctx *c, pl_ref r, V v, I... i)
{
    static_assert(sizeof...(I) <= PL_MAX_RANK, "pl_set_at: more indices than PL_MAX_RANK");
    const int64_t idx[PL_MAX_RANK] = {static_cast<int64_t>(i)...};
    pl_set(c, r, idx, static_cast<double>(v));
}
} /* namespace pl_cxx */
}
#endif
#endif
