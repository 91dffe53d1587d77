/* sim/tilesim_hlo.h: reading one HLO instruction, as XProf's HLO op view and
 * XLA's dumps print it, and explaining each part in plain words.
 *
 * An instruction line such as
 *
 *     %fusion.3 = bf16[32,32,4096]{2,1,0:T(8,128)(2,1)S(1)} fusion(bf16[32,32,8192]{2,1,0:T(8,128)(2,1)} %fusion.32),
 *                 kind=kCustom, calls=%all-reduce-scatter.3          (one line in a dump)
 *
 * has a name (fusion.3), a result shape (dtype bf16, dimensions 32 x 32 x
 * 4096), a layout ({2,1,0}: the dimensions from most minor to most major),
 * a tiling (T(8,128)(2,1): 8 x 128 tiles over the two most minor dimensions,
 * then 2 x 1 tiles inside them: two bf16 rows packed into one 32-bit word),
 * a memory space (S(1): VMEM; none or S(0): HBM), an op (fusion), operands
 * (each with its shape when the dump gives it, and its name) and attributes
 * (kind=kCustom, calls=%all-reduce-scatter.3) (see XLA's docs/shapes.md and
 * docs/tiled_layout.md).
 *
 *     pl_hlo_instr *h = malloc(sizeof *h);            // about 67 KiB: better not on the stack
 *     char err[512];
 *     if (pl_hlo_parse(text, h, err, sizeof err) != PL_OK) {
 *         fprintf(stderr, "hlo: %s\n", err);          // "column 17: expected ']' after ...", the text, a caret
 *     } else {
 *         pl_hlo_explain(h, stdout);                  // each part named in plain words
 *         int64_t logical = pl_hlo_shape_bytes(&h->shapes[0], 0);  // 8388608
 *         int64_t padded = pl_hlo_shape_bytes(&h->shapes[0], 1);   // the same: no tile padding here
 *     }
 *
 * The parser allocates nothing: every list has a fixed cap (PL_HLO_MAX_*),
 * and text past a cap is refused with a message naming the cap and the
 * column, as any other malformed text. It never reads past the text's NUL.
 * Dynamic dimensions (<=8, ?) and layout items other than T, E, L and S
 * (D(...) sparse levels, #(...) and *(...) index/pointer types, P(...)
 * physical shapes) are refused by name. Tuples nested in tuples (as async
 * ops return) are read flattened: their leaves in order, up to 8 deep.
 */
#ifndef TILESIM_HLO_H
#define TILESIM_HLO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tilesim.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PL_HLO_MAX_DIMS 16      /* dimensions of one array shape */
#define PL_HLO_MAX_TILES 4      /* tiles of one layout: T(8,128)(2,1) is 2 */
#define PL_HLO_MAX_SHAPES 48    /* array shapes in one instruction (result and operands, tuple elements each) */
#define PL_HLO_MAX_OPERANDS 32
#define PL_HLO_MAX_ATTRS 24
#define PL_HLO_NAME 128         /* names: instruction, operand, op; with the NUL */
#define PL_HLO_KEY 64           /* an attribute's key, with the NUL */
#define PL_HLO_VALUE 1024       /* an attribute's value (metadata={...}, backend_config=...), with the NUL */
#define PL_HLO_TILE_COMBINE (-1) /* a '*' in a tile: the dimension is combined with the next more minor one */

/* Element types of XLA's PrimitiveType that dumps print. */
typedef enum pl_hlo_dtype {
    PL_HLO_PRED, PL_HLO_S1, PL_HLO_S2, PL_HLO_S4, PL_HLO_S8, PL_HLO_S16, PL_HLO_S32, PL_HLO_S64,
    PL_HLO_U1, PL_HLO_U2, PL_HLO_U4, PL_HLO_U8, PL_HLO_U16, PL_HLO_U32, PL_HLO_U64,
    PL_HLO_F16, PL_HLO_BF16, PL_HLO_F32, PL_HLO_F64, PL_HLO_C64, PL_HLO_C128,
    PL_HLO_F8E5M2, PL_HLO_F8E4M3FN, PL_HLO_F8E4M3B11FNUZ, PL_HLO_F8E5M2FNUZ, PL_HLO_F8E4M3FNUZ,
    PL_HLO_F8E4M3, PL_HLO_F8E3M4, PL_HLO_F8E8M0FNU, PL_HLO_F4E2M1FN,
    PL_HLO_TOKEN, PL_HLO_OPAQUE,
    PL_HLO_DTYPE_COUNT
} pl_hlo_dtype;

/* One array shape with its layout: bf16[32,32,4096]{2,1,0:T(8,128)(2,1)S(1)}. */
typedef struct pl_hlo_shape {
    pl_hlo_dtype dtype;
    int rank;                                   /* 0: a scalar (f32[]) */
    int64_t dims[PL_HLO_MAX_DIMS];              /* logical sizes, dimension 0 first */
    int has_layout;                             /* a {...} was given; else minor_to_major is the default */
    int minor_to_major[PL_HLO_MAX_DIMS];        /* most minor first; default rank-1, ..., 0 (row-major) */
    int n_tiles;
    int tile_rank[PL_HLO_MAX_TILES];
    int64_t tiles[PL_HLO_MAX_TILES][PL_HLO_MAX_DIMS]; /* each tile's sizes, most major first; or PL_HLO_TILE_COMBINE */
    int element_bits;                           /* E(n); 0: not given (the dtype's storage size) */
    int64_t tail_align;                         /* L(n): elements; 0: not given */
    int64_t memory_space;                       /* S(n); 0: not given, HBM */
} pl_hlo_shape;

/* A result or an operand's type: one array shape, or a tuple of them. Its
 * shapes are h->shapes[first .. first + n). */
typedef struct pl_hlo_type {
    int is_tuple;   /* (f32[8]{0}, s32[]): 1 even when it has one element or none */
    int nested;     /* a tuple within the tuple ((f32[8], s32[]), u32[]): shapes lists the leaves, in order */
    int first;      /* index into pl_hlo_instr.shapes */
    int n;          /* shapes: 1 for an array; a tuple's elements; 0 for an operand given by name only */
} pl_hlo_type;

typedef struct pl_hlo_operand {
    char name[PL_HLO_NAME];     /* "fusion.32": without its '%' */
    pl_hlo_type type;           /* n == 0: the dump gave no shape */
} pl_hlo_operand;

typedef struct pl_hlo_instr {
    int is_root;                /* "ROOT %x = ...": the computation's result */
    char name[PL_HLO_NAME];     /* "fusion.3": without its '%' */
    pl_hlo_type result;
    char op[PL_HLO_NAME];       /* "fusion", "all-reduce", "custom-call" */
    int n_operands;
    pl_hlo_operand operands[PL_HLO_MAX_OPERANDS];
    char literal[PL_HLO_VALUE]; /* constant(...) / parameter(...): the text in the parentheses; else "" */
    int n_attrs;
    char attr_key[PL_HLO_MAX_ATTRS][PL_HLO_KEY];     /* "kind" */
    char attr_value[PL_HLO_MAX_ATTRS][PL_HLO_VALUE]; /* "kCustom": as written, '%' and quotes kept */
    int n_shapes;
    pl_hlo_shape shapes[PL_HLO_MAX_SHAPES];
} pl_hlo_instr;

/* Parse one instruction line (a trailing newline or spaces are fine).
 * PL_OK, or PL_EINVAL with err saying "column C: expected ... " (columns
 * count bytes from 1) followed by the text (or the part of it around the
 * column) and a caret under the column, on two more lines. err may be NULL
 * when n is 0. *out is written in either case (zeroed on failure). */
int pl_hlo_parse(const char *text, pl_hlo_instr *out, char *err, size_t n);

/* Parse one shape alone: "bf16[8,128]{1,0:T(8,128)(2,1)}" (no tuples). */
int pl_hlo_parse_shape(const char *text, pl_hlo_shape *out, char *err, size_t n);

/* "bf16" for PL_HLO_BF16; "?" outside the enum. */
const char *pl_hlo_dtype_name(pl_hlo_dtype t);
/* Bits one element takes when no E(n) says otherwise: XLA stores a sub-byte
 * integer in a whole byte unless the layout packs it (E(4)); pred is a byte. */
int pl_hlo_dtype_bits(pl_hlo_dtype t);

/* Bytes the array takes: padded == 0, the logical elements only (packed
 * bits rounded up to a byte once); padded != 0, after every tile's padding
 * and the L(n) tail alignment. -1 when the count does not fit in int64. */
int64_t pl_hlo_shape_bytes(const pl_hlo_shape *s, int padded);
/* The physical dimensions after tiling, most major first: the tile counts,
 * then each tile's sizes. Returns how many (at most max), -1 on overflow. */
int pl_hlo_tiled_dims(const pl_hlo_shape *s, int64_t *out, int max);

/* "bf16[32,32,4096]{2,1,0:T(8,128)(2,1)S(1)}" into buf, as XLA prints it;
 * returns buf. */
const char *pl_hlo_shape_format(const pl_hlo_shape *s, char *buf, size_t n);

/* What each part of h means, in plain words, one part a line or a few.
 * Returns 0, or -1 on a write error. */
int pl_hlo_explain(const pl_hlo_instr *h, FILE *f);
/* The same facts as one JSON object (name, op, result shapes with bytes,
 * operands, attributes). Returns 0, or -1 on a write error. */
int pl_hlo_json(const pl_hlo_instr *h, FILE *f);

#ifdef __cplusplus
}
#endif

#endif
