/* sim/tools/hlo.h: what the files of the HLO reader share (sim/tools/hlo_parse.c,
 * sim/tools/hlo_shape.c, sim/tools/hlo_explain.c). Internal: not installed. The public
 * API is sim/tilesim_hlo.h. */
#ifndef TILESIM_HLO_INTERNAL_H
#define TILESIM_HLO_INTERNAL_H

#include <ctype.h>
#include <string.h>

#include "../tilesim_hlo.h"

/* dimension sizes and layout numbers above this are refused, so that sums
 * and products of a few of them stay far from int64 overflow in the parser */
#define HLO_MAX_NUMBER 1000000000000000LL

/* The parser's state: the text, where it is, where the shapes go. */
typedef struct hlo_p {
    const char *s;
    size_t pos;
    pl_hlo_instr *h; /* NULL when parsing a lone shape */
    char *err;
    size_t n;
    int failed;
} hlo_p;

static inline char hlo_peek(const hlo_p *p)
{
    return p->s[p->pos];
}
/* Spaces, and the index comments XLA writes into long lists; an unclosed
 * comment is left for the parser to refuse. */
static inline void hlo_skip_ws(hlo_p *p)
{
    for (;;) {
        while (p->s[p->pos] == ' ' || p->s[p->pos] == '\t') p->pos++;
        if (p->s[p->pos] != '/' || p->s[p->pos + 1] != '*') return;
        const char *end = strstr(p->s + p->pos + 2, "*/");
        if (!end) return;
        p->pos = (size_t)(end - p->s) + 2;
    }
}
static inline int hlo_name_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '.' || c == '-';
}

/* Record the first failure: "column C: <what>", the text and a caret
 * under column `at` (0-based). Returns -1. */
int sim_hlo_fail(hlo_p *p, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A whole number of at most HLO_MAX_NUMBER; `what` names it in messages. */
int sim_hlo_int(hlo_p *p, int64_t *out, const char *what);
/* The character c, or a failure "expected 'c' <after>". */
int sim_hlo_expect(hlo_p *p, char c, const char *after);

/* sim/tools/hlo_shape.c: an array shape or a tuple of them, into p->h->shapes. */
int sim_hlo_type(hlo_p *p, pl_hlo_type *t);
/* Does a type start here: '(' or an element type followed by '['? */
int sim_hlo_type_starts(const hlo_p *p);

/* The element type named by w[0..len), or -1. */
int sim_hlo_lookup_dtype(const char *w, size_t len);
/* Bits of one value (bf16: 16, s4: 4, pred: 1), whatever it is stored in. */
int sim_hlo_value_bits(pl_hlo_dtype t);

#endif
