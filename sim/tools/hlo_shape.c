/* sim/tools/hlo_shape.c: HLO shapes: element types, dimensions, layouts with
 * tiles (sim/tilesim_hlo.h), parsed for sim/tools/hlo_parse.c, and what they take
 * in memory with and without tile padding.
 */
#include <stdarg.h>
#include <string.h>

#include "hlo.h"

/* ---- shapes and layouts ------------------------------------------------------------- */

/* One tile: (8,128) or (*,2,*,3). */
static int parse_tile(hlo_p *p, pl_hlo_shape *s)
{
    if (s->n_tiles == PL_HLO_MAX_TILES)
        return sim_hlo_fail(p, p->pos, "more than %d tiles in one layout", PL_HLO_MAX_TILES);
    int t = s->n_tiles++, k = 0;
    p->pos++; /* '(' */
    do {
        if (k == PL_HLO_MAX_DIMS) return sim_hlo_fail(p, p->pos, "a tile of more than %d sizes", PL_HLO_MAX_DIMS);
        if (hlo_peek(p) == '*') {
            s->tiles[t][k++] = PL_HLO_TILE_COMBINE;
            p->pos++;
            continue;
        }
        size_t at = p->pos;
        if (sim_hlo_int(p, &s->tiles[t][k], "a tile size or '*'")) return -1;
        if (s->tiles[t][k++] == 0) return sim_hlo_fail(p, at, "a tile size must be at least 1");
    } while (hlo_peek(p) == ',' && ++p->pos);
    s->tile_rank[t] = k;
    if (s->tiles[t][k - 1] == PL_HLO_TILE_COMBINE) /* it merges a dimension into the next more minor one */
        return sim_hlo_fail(p, p->pos - 1, "a tile's last (most minor) size cannot be '*'");
    return sim_hlo_expect(p, ')', "after the sizes of the tile");
}

/* E(4), L(1024), S(1): a letter, a number in parentheses. */
static int parse_item_number(hlo_p *p, int64_t *out, const char *what)
{
    p->pos++; /* the letter */
    if (sim_hlo_expect(p, '(', what) || sim_hlo_int(p, out, what)) return -1;
    return sim_hlo_expect(p, ')', what);
}

/* The part of a layout after ':': T(..)(..), E(n), L(n), S(n) in any order. */
static int parse_layout_items(hlo_p *p, pl_hlo_shape *s)
{
    while (hlo_peek(p) != '}') {
        size_t at = p->pos;
        char c = hlo_peek(p);
        int64_t v = 0;
        if (c == 'T' && p->s[p->pos + 1] == '(') {
            p->pos++;
            while (hlo_peek(p) == '(')
                if (parse_tile(p, s)) return -1;
        } else if (c == 'E' && p->s[p->pos + 1] == '(') {
            if (parse_item_number(p, &v, "for E(bits)")) return -1;
            if (v < 1 || v > 128)
                return sim_hlo_fail(p, at, "E(%lld): an element size from 1 to 128 bits", (long long)v);
            s->element_bits = (int)v;
        } else if (c == 'L' && p->s[p->pos + 1] == '(') {
            if (parse_item_number(p, &s->tail_align, "for L(elements)")) return -1;
            if (s->tail_align == 0) return sim_hlo_fail(p, at, "L(0): a tail alignment must be at least 1 element");
        } else if (c == 'S' && p->s[p->pos + 1] == '(') {
            if (parse_item_number(p, &s->memory_space, "for S(memory space)")) return -1;
        } else if (c == '\0') {
            return sim_hlo_fail(p, at, "expected '}' to end the layout");
        } else if (c == 'D' || c == '#' || c == '*' || c == 'P' || c == 'M' || c == 'S') {
            return sim_hlo_fail(p, at, "layout item '%c' is not supported (only T(tiles), E(bits), L(align), S(space))",
                                c);
        } else {
            return sim_hlo_fail(p, at, "expected a layout item T(...), E(n), L(n) or S(n), or '}' to end the layout");
        }
    }
    return 0;
}

/* {2,1,0:T(8,128)(2,1)S(1)} */
static int parse_layout(hlo_p *p, pl_hlo_shape *s)
{
    size_t at = p->pos++;
    int k = 0;
    s->has_layout = 1;
    while (isdigit((unsigned char)hlo_peek(p))) {
        int64_t d;
        size_t dat = p->pos;
        if (sim_hlo_int(p, &d, "a dimension number")) return -1;
        if (k == s->rank || d >= s->rank)
            return sim_hlo_fail(p, dat, "the layout names dimension %lld of a shape of %d dimension%s", (long long)d,
                                s->rank, s->rank == 1 ? "" : "s");
        for (int i = 0; i < k; i++)
            if (s->minor_to_major[i] == d)
                return sim_hlo_fail(p, dat, "the layout names dimension %lld twice", (long long)d);
        s->minor_to_major[k++] = (int)d;
        if (hlo_peek(p) == ',') p->pos++;
        else break;
    }
    if (k != s->rank)
        return sim_hlo_fail(p, hlo_peek(p) == ':' || hlo_peek(p) == '}' ? p->pos : at,
                            "expected %d dimension numbers in the layout (one for each dimension, most minor first), "
                            "got %d",
                            s->rank, k);
    if (hlo_peek(p) == ':') {
        p->pos++;
        if (parse_layout_items(p, s)) return -1;
    }
    return sim_hlo_expect(p, '}', "to end the layout");
}

/* f32[8,128]{1,0:T(8,128)}: one array shape. */
static int parse_array(hlo_p *p, pl_hlo_shape *s)
{
    memset(s, 0, sizeof *s);
    size_t at = p->pos, len = 0;
    while (isalnum((unsigned char)p->s[at + len])) len++;
    int t = sim_hlo_lookup_dtype(p->s + at, len);
    if (t < 0)
        return sim_hlo_fail(p, at, "expected an element type (pred, s8, s32, u8, f16, bf16, f32, f8e4m3fn, ...) %s",
                            len ? "but this word is not one" : "to start the shape");
    s->dtype = (pl_hlo_dtype)t;
    p->pos += len;
    if (sim_hlo_expect(p, '[', "after the element type (the dimensions, '[]' for a scalar)")) return -1;
    while (hlo_peek(p) != ']') {
        if (hlo_peek(p) == '<' || hlo_peek(p) == '?')
            return sim_hlo_fail(p, p->pos, "dynamic dimensions ('<=' bound or '?') are not supported: give the size");
        if (s->rank == PL_HLO_MAX_DIMS) return sim_hlo_fail(p, p->pos, "more than %d dimensions", PL_HLO_MAX_DIMS);
        if (sim_hlo_int(p, &s->dims[s->rank++], "a dimension size")) return -1;
        if (hlo_peek(p) == ',') p->pos++;
        else if (hlo_peek(p) != ']') return sim_hlo_fail(p, p->pos, "expected ']' after the dimensions of the shape");
    }
    p->pos++;
    for (int i = 0; i < s->rank; i++) s->minor_to_major[i] = s->rank - 1 - i; /* XLA's default: row-major */
    return hlo_peek(p) == '{' ? parse_layout(p, s) : 0;
}

/* The elements of a tuple, pos just after its '(': arrays, and the leaves
 * of tuples within it (depth: how many tuples hold this one). */
static int parse_tuple(hlo_p *p, pl_hlo_type *t, int depth)
{
    pl_hlo_instr *h = p->h;
    hlo_skip_ws(p);
    while (hlo_peek(p) != ')') {
        if (hlo_peek(p) == '(') {
            if (depth == 8) return sim_hlo_fail(p, p->pos, "tuples nested more than 8 deep");
            t->nested = 1;
            p->pos++;
            if (parse_tuple(p, t, depth + 1)) return -1;
        } else {
            if (h->n_shapes == PL_HLO_MAX_SHAPES)
                return sim_hlo_fail(p, p->pos, "more than %d shapes in one instruction", PL_HLO_MAX_SHAPES);
            if (parse_array(p, &h->shapes[h->n_shapes++])) return -1;
            t->n++;
        }
        hlo_skip_ws(p);
        if (hlo_peek(p) == ',') {
            p->pos++;
            hlo_skip_ws(p);
        } else if (hlo_peek(p) != ')') {
            return sim_hlo_fail(p, p->pos, "expected ',' or ')' after an element of the tuple");
        }
    }
    p->pos++;
    return 0;
}

/* An array shape or a tuple of them, into h->shapes. */
int sim_hlo_type(hlo_p *p, pl_hlo_type *t)
{
    pl_hlo_instr *h = p->h;
    t->first = h->n_shapes;
    t->n = t->nested = 0;
    t->is_tuple = hlo_peek(p) == '(';
    if (t->is_tuple) {
        p->pos++;
        return parse_tuple(p, t, 1);
    }
    if (h->n_shapes == PL_HLO_MAX_SHAPES)
        return sim_hlo_fail(p, p->pos, "more than %d shapes in one instruction", PL_HLO_MAX_SHAPES);
    t->n = 1;
    return parse_array(p, &h->shapes[h->n_shapes++]);
}

/* Does a type start here: '(' or a dtype followed by '['? */
int sim_hlo_type_starts(const hlo_p *p)
{
    if (hlo_peek(p) == '(') return 1;
    size_t len = 0;
    while (isalnum((unsigned char)p->s[p->pos + len])) len++;
    return p->s[p->pos + len] == '[' && sim_hlo_lookup_dtype(p->s + p->pos, len) >= 0;
}

int pl_hlo_parse_shape(const char *text, pl_hlo_shape *out, char *err, size_t n)
{
    if (err && n) err[0] = '\0';
    if (!out || !text) {
        if (err && n) snprintf(err, n, "%s is NULL", out ? "the text" : "the shape to fill");
        return PL_EINVAL;
    }
    hlo_p p = {text, 0, NULL, err, n, 0}; /* parse_array writes only the shape it is given */
    hlo_skip_ws(&p);
    if (parse_array(&p, out) == 0) {
        hlo_skip_ws(&p);
        if (!hlo_peek(&p)) return PL_OK;
        sim_hlo_fail(&p, p.pos, "expected the end of the shape");
    }
    memset(out, 0, sizeof *out);
    return PL_EINVAL;
}

/* ---- element types and sizes ---------------------------------------------------------- */

/* name; bits of one value; bits XLA stores it in without E(n): sub-byte
 * types take a whole byte each (primitive_util::ByteWidth), pred a byte */
static const struct {
    const char *name;
    int bits, storage_bits;
} dtypes[PL_HLO_DTYPE_COUNT] = {
    [PL_HLO_PRED] = {"pred", 1, 8},
    [PL_HLO_S1] = {"s1", 1, 8},
    [PL_HLO_S2] = {"s2", 2, 8},
    [PL_HLO_S4] = {"s4", 4, 8},
    [PL_HLO_S8] = {"s8", 8, 8},
    [PL_HLO_S16] = {"s16", 16, 16},
    [PL_HLO_S32] = {"s32", 32, 32},
    [PL_HLO_S64] = {"s64", 64, 64},
    [PL_HLO_U1] = {"u1", 1, 8},
    [PL_HLO_U2] = {"u2", 2, 8},
    [PL_HLO_U4] = {"u4", 4, 8},
    [PL_HLO_U8] = {"u8", 8, 8},
    [PL_HLO_U16] = {"u16", 16, 16},
    [PL_HLO_U32] = {"u32", 32, 32},
    [PL_HLO_U64] = {"u64", 64, 64},
    [PL_HLO_F16] = {"f16", 16, 16},
    [PL_HLO_BF16] = {"bf16", 16, 16},
    [PL_HLO_F32] = {"f32", 32, 32},
    [PL_HLO_F64] = {"f64", 64, 64},
    [PL_HLO_C64] = {"c64", 64, 64},
    [PL_HLO_C128] = {"c128", 128, 128},
    [PL_HLO_F8E5M2] = {"f8e5m2", 8, 8},
    [PL_HLO_F8E4M3FN] = {"f8e4m3fn", 8, 8},
    [PL_HLO_F8E4M3B11FNUZ] = {"f8e4m3b11fnuz", 8, 8},
    [PL_HLO_F8E5M2FNUZ] = {"f8e5m2fnuz", 8, 8},
    [PL_HLO_F8E4M3FNUZ] = {"f8e4m3fnuz", 8, 8},
    [PL_HLO_F8E4M3] = {"f8e4m3", 8, 8},
    [PL_HLO_F8E3M4] = {"f8e3m4", 8, 8},
    [PL_HLO_F8E8M0FNU] = {"f8e8m0fnu", 8, 8},
    [PL_HLO_F4E2M1FN] = {"f4e2m1fn", 4, 8},
    [PL_HLO_TOKEN] = {"token", 0, 0},
    [PL_HLO_OPAQUE] = {"opaque", 0, 0},
};

const char *pl_hlo_dtype_name(pl_hlo_dtype t)
{
    return (unsigned)t < PL_HLO_DTYPE_COUNT ? dtypes[t].name : "?";
}

int pl_hlo_dtype_bits(pl_hlo_dtype t)
{
    return (unsigned)t < PL_HLO_DTYPE_COUNT ? dtypes[t].storage_bits : 0;
}

int sim_hlo_value_bits(pl_hlo_dtype t)
{
    return (unsigned)t < PL_HLO_DTYPE_COUNT ? dtypes[t].bits : 0;
}

int sim_hlo_lookup_dtype(const char *w, size_t len)
{
    for (int t = 0; t < PL_HLO_DTYPE_COUNT; t++)
        if (strlen(dtypes[t].name) == len && memcmp(dtypes[t].name, w, len) == 0) return t;
    return -1;
}

/* Tiling as XLA's tiled_layout.md defines it: each tile applies to the most
 * minor dimensions of what the previous one produced (a tile longer than
 * the shape sees size-1 major dimensions); every covered dimension d
 * becomes ceil(d / t) tiles and t within them, the tile sizes moved to the
 * most minor end. A '*' merges its dimension into the next more minor one
 * first. So bf16[32,32,4096]{2,1,0:T(8,128)(2,1)} becomes (32, 4, 32, 8,
 * 128) after (8,128), then (32, 4, 32, 4, 128, 2, 1) after (2,1): rows are
 * padded to a multiple of 8 (not 16: the (2,1) tile divides 8 exactly). */
int pl_hlo_tiled_dims(const pl_hlo_shape *s, int64_t *out, int max)
{
    if (!s || !out || s->rank < 0 || s->rank > PL_HLO_MAX_DIMS || s->n_tiles < 0 || s->n_tiles > PL_HLO_MAX_TILES)
        return -1;
    int64_t a[PL_HLO_MAX_DIMS * (PL_HLO_MAX_TILES + 2)], t[PL_HLO_MAX_DIMS];
    int n = s->rank;
    for (int i = 0; i < n; i++) {
        int d = s->minor_to_major[n - 1 - i];
        if (d < 0 || d >= n) return -1;
        a[i] = s->dims[d];
    }
    for (int k = 0; k < s->n_tiles; k++) {
        int r = s->tile_rank[k];
        if (r < 1 || r > PL_HLO_MAX_DIMS || n + 2 * r > (int)(sizeof a / sizeof *a)) return -1;
        memcpy(t, s->tiles[k], (size_t)r * sizeof *t);
        if (r > n) { /* size-1 major dimensions under the tile's extra sizes */
            memmove(a + (r - n), a, (size_t)n * sizeof *a);
            for (int i = 0; i < r - n; i++) a[i] = 1;
            n = r;
        }
        for (int j = 0; j < r - 1;) { /* '*': merge a[base + j] into the next more minor dimension */
            int base = n - r;
            if (t[j] != PL_HLO_TILE_COMBINE) {
                j++;
                continue;
            }
            if (__builtin_mul_overflow(a[base + j], a[base + j + 1], &a[base + j + 1])) return -1;
            memmove(a + base + j, a + base + j + 1, (size_t)(n - base - j - 1) * sizeof *a);
            memmove(t + j, t + j + 1, (size_t)(r - j - 1) * sizeof *t);
            n--;
            r--;
        }
        if (t[r - 1] < 1) return -1;
        for (int j = 0; j < r; j++) {
            int64_t d = a[n - r + j];
            a[n - r + j] = d / t[j] + (d % t[j] != 0);
            a[n + j] = t[j];
        }
        n += r;
    }
    if (n > max) return -1;
    memcpy(out, a, (size_t)n * sizeof *a);
    return n;
}

/* ceil(elements * bits / 8), or -1 on overflow */
static int64_t bytes_of(int64_t elements, int bits)
{
    int64_t b;
    if (__builtin_mul_overflow(elements, (int64_t)bits, &b)) return -1;
    return b / 8 + (b % 8 != 0);
}

int64_t pl_hlo_shape_bytes(const pl_hlo_shape *s, int padded)
{
    if (!s || (unsigned)s->dtype >= PL_HLO_DTYPE_COUNT || s->rank < 0 || s->rank > PL_HLO_MAX_DIMS) return -1;
    int bits = s->element_bits ? s->element_bits : pl_hlo_dtype_bits(s->dtype);
    int64_t dims[PL_HLO_MAX_DIMS * (PL_HLO_MAX_TILES + 2)], e = 1;
    int n = s->rank;
    if (padded) {
        n = pl_hlo_tiled_dims(s, dims, (int)(sizeof dims / sizeof *dims));
        if (n < 0) return -1;
    } else {
        memcpy(dims, s->dims, (size_t)n * sizeof *dims);
    }
    for (int i = 0; i < n; i++)
        if (dims[i] < 0 || __builtin_mul_overflow(e, dims[i], &e)) return -1;
    if (padded && s->tail_align > 0 && e % s->tail_align) { /* L(n): pad the end to a multiple of n elements */
        if (__builtin_add_overflow(e, s->tail_align - e % s->tail_align, &e)) return -1;
    }
    return bytes_of(e, bits);
}

/* ---- printing ------------------------------------------------------------------------- */

static void put(char *buf, size_t n, size_t *len, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void put(char *buf, size_t n, size_t *len, const char *fmt, ...)
{
    if (*len >= n) return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf + *len, n - *len, fmt, ap);
    va_end(ap);
    *len = k < 0 ? n : *len + (size_t)k;
}

const char *pl_hlo_shape_format(const pl_hlo_shape *s, char *buf, size_t n)
{
    if (!buf || !n) return buf;
    buf[0] = '\0';
    if (!s || s->rank < 0 || s->rank > PL_HLO_MAX_DIMS || s->n_tiles < 0 || s->n_tiles > PL_HLO_MAX_TILES) return buf;
    size_t len = 0;
    put(buf, n, &len, "%s[", pl_hlo_dtype_name(s->dtype));
    for (int i = 0; i < s->rank; i++) put(buf, n, &len, "%s%lld", i ? "," : "", (long long)s->dims[i]);
    put(buf, n, &len, "]");
    if (!s->has_layout) return buf;
    put(buf, n, &len, "{");
    for (int i = 0; i < s->rank; i++) put(buf, n, &len, "%s%d", i ? "," : "", s->minor_to_major[i]);
    if (s->n_tiles || s->element_bits || s->tail_align || s->memory_space) put(buf, n, &len, ":");
    if (s->n_tiles) put(buf, n, &len, "T");
    for (int k = 0; k < s->n_tiles; k++) {
        for (int j = 0; j < s->tile_rank[k] && j < PL_HLO_MAX_DIMS; j++) {
            if (s->tiles[k][j] == PL_HLO_TILE_COMBINE) put(buf, n, &len, "%s*", j ? "," : "(");
            else put(buf, n, &len, "%s%lld", j ? "," : "(", (long long)s->tiles[k][j]);
        }
        put(buf, n, &len, ")");
    }
    if (s->tail_align) put(buf, n, &len, "L(%lld)", (long long)s->tail_align);
    if (s->element_bits) put(buf, n, &len, "E(%d)", s->element_bits);
    if (s->memory_space) put(buf, n, &len, "S(%lld)", (long long)s->memory_space);
    put(buf, n, &len, "}");
    return buf;
}
