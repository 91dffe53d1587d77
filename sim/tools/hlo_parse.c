/* sim/tools/hlo_parse.c: the HLO instruction reader (sim/tilesim_hlo.h).
 *
 * A recursive-descent parser over one NUL-terminated line, with no
 * allocation: every list goes into the fixed arrays of pl_hlo_instr and a
 * list past its cap is refused like any other malformed text. Each failure
 * names the column (a byte, from 1) and what was expected there, and shows
 * the text with a caret under it, so that a user pasting a line from a dump
 * or from XProf's op view sees where the reader stopped. The grammar is
 * what XLA's HloInstruction::ToString prints (docs/shapes.md):
 *     [ROOT] [%]name = TYPE op(OPERANDS)[, key=value]...
 *     TYPE  = dtype[d0,d1,...]{minor,...,major:T(..)(..)E(n)L(n)S(n)} | (TYPE, ...)
 *     OPERAND = [TYPE] [%]name
 */
#include <stdarg.h>
#include <string.h>

#include "hlo.h"

/* A name ([%]name), without its '%', into buf. */
static int parse_name(hlo_p *p, char *buf, size_t n, const char *what)
{
    size_t at = p->pos;
    if (hlo_peek(p) == '%') p->pos++;
    size_t start = p->pos;
    while (hlo_name_char(hlo_peek(p))) p->pos++;
    size_t len = p->pos - start;
    if (len == 0 && hlo_peek(p) == '/' && p->s[p->pos + 1] == '*')
        return sim_hlo_fail(p, p->pos, "this comment is not closed (expected '*/')");
    if (len == 0) return sim_hlo_fail(p, p->pos, "expected %s (letters, digits, '_', '.', '-')", what);
    if (len >= n) return sim_hlo_fail(p, at, "%s is longer than %zu characters", what, n - 1);
    memcpy(buf, p->s + start, len);
    buf[len] = '\0';
    return 0;
}

/* ---- the instruction ---------------------------------------------------------------- */

/* The text of a balanced (...), {...} or [...] group or "string" starting at
 * pos, or a bare word, up to a ',' or `stop` at depth 0; pos is left there. */
static int scan_value(hlo_p *p, char stop, char *buf, size_t n, const char *what)
{
    size_t start = p->pos, open_at[64];
    char want[64];
    int depth = 0;
    for (;;) {
        char c = hlo_peek(p);
        if (c == '\0' || c == '\n' || c == '\r') break;
        if (depth == 0 && (c == ',' || c == stop)) break;
        if (c == '"') {
            size_t at = p->pos++;
            while (hlo_peek(p) && hlo_peek(p) != '"') p->pos += p->s[p->pos] == '\\' && p->s[p->pos + 1] ? 2 : 1;
            if (!hlo_peek(p)) return sim_hlo_fail(p, at, "this string is not closed (expected '\"')");
        } else if (c == '(' || c == '{' || c == '[') {
            if (depth == 64) return sim_hlo_fail(p, p->pos, "more than 64 nested brackets in %s", what);
            open_at[depth] = p->pos;
            want[depth++] = c == '(' ? ')' : c == '{' ? '}' : ']';
        } else if (c == ')' || c == '}' || c == ']') {
            if (depth == 0) return sim_hlo_fail(p, p->pos, "'%c' closes nothing in %s", c, what);
            if (c != want[depth - 1])
                return sim_hlo_fail(p, p->pos, "expected '%c' to close the '%c' of column %zu, not '%c'",
                                    want[depth - 1], p->s[open_at[depth - 1]], open_at[depth - 1] + 1, c);
            depth--;
        }
        p->pos++;
    }
    if (depth)
        return sim_hlo_fail(p, p->pos, "expected '%c' to close the '%c' of column %zu", want[depth - 1],
                            p->s[open_at[depth - 1]], open_at[depth - 1] + 1);
    size_t len = p->pos - start;
    while (len && (p->s[start + len - 1] == ' ' || p->s[start + len - 1] == '\t')) len--;
    if (len >= n) return sim_hlo_fail(p, start, "%s is longer than %zu characters", what, n - 1);
    memcpy(buf, p->s + start, len);
    buf[len] = '\0';
    return 0;
}

/* OPERAND = [TYPE] [%]name */
static int parse_operand(hlo_p *p)
{
    pl_hlo_instr *h = p->h;
    if (h->n_operands == PL_HLO_MAX_OPERANDS)
        return sim_hlo_fail(p, p->pos, "more than %d operands", PL_HLO_MAX_OPERANDS);
    pl_hlo_operand *o = &h->operands[h->n_operands++];
    o->type.first = h->n_shapes;
    if (sim_hlo_type_starts(p)) {
        if (sim_hlo_type(p, &o->type)) return -1;
        if (hlo_peek(p) != ' ' && hlo_peek(p) != '\t')
            return sim_hlo_fail(p, p->pos, "expected a space and the operand's name after its shape");
        hlo_skip_ws(p);
    }
    return parse_name(p, o->name, sizeof o->name, "the operand's name");
}

/* (OPERANDS), or for constant and parameter the literal in the parentheses. */
static int parse_operands(hlo_p *p)
{
    size_t open = p->pos;
    if (sim_hlo_expect(p, '(', "after the op name (its operands)")) return -1;
    hlo_skip_ws(p);
    pl_hlo_instr *h = p->h;
    if (strcmp(h->op, "constant") == 0 || strcmp(h->op, "parameter") == 0) {
        if (scan_value(p, ')', h->literal, sizeof h->literal, "the literal")) return -1;
        if (hlo_peek(p) == ',') return sim_hlo_fail(p, p->pos, "expected ')' to end the %s", h->op);
    } else {
        while (hlo_peek(p) != ')') {
            if (!hlo_peek(p))
                return sim_hlo_fail(p, p->pos, "expected ')' to close the operands opened at column %zu", open + 1);
            if (parse_operand(p)) return -1;
            hlo_skip_ws(p);
            if (hlo_peek(p) == ',') {
                p->pos++;
                hlo_skip_ws(p);
            } else if (hlo_peek(p) != ')') {
                return sim_hlo_fail(p, p->pos, "expected ',' or ')' after an operand");
            }
        }
    }
    return sim_hlo_expect(p, ')', "to close the operands");
}

/* , key=value ... to the end of the line */
static int parse_attrs(hlo_p *p)
{
    pl_hlo_instr *h = p->h;
    for (;;) {
        hlo_skip_ws(p);
        if (!hlo_peek(p) || hlo_peek(p) == '\n' || hlo_peek(p) == '\r') break;
        if (hlo_peek(p) != ',')
            return sim_hlo_fail(p, p->pos, "expected ',' and an attribute (key=value), or the end of the line");
        p->pos++;
        hlo_skip_ws(p);
        if (h->n_attrs == PL_HLO_MAX_ATTRS) return sim_hlo_fail(p, p->pos, "more than %d attributes", PL_HLO_MAX_ATTRS);
        int a = h->n_attrs++;
        size_t start = p->pos;
        while (hlo_name_char(hlo_peek(p))) p->pos++;
        if (p->pos == start) return sim_hlo_fail(p, p->pos, "expected an attribute name (key=value)");
        if (p->pos - start >= PL_HLO_KEY)
            return sim_hlo_fail(p, start, "an attribute name is longer than %d characters", PL_HLO_KEY - 1);
        memcpy(h->attr_key[a], p->s + start, p->pos - start);
        h->attr_key[a][p->pos - start] = '\0';
        for (int b = 0; b < a; b++)
            if (strcmp(h->attr_key[b], h->attr_key[a]) == 0)
                return sim_hlo_fail(p, start, "the attribute '%s' is given twice", h->attr_key[a]);
        if (sim_hlo_expect(p, '=', "after the attribute name")) return -1;
        size_t vat = p->pos;
        if (scan_value(p, '\0', h->attr_value[a], PL_HLO_VALUE, "an attribute value")) return -1;
        if (!h->attr_value[a][0]) return sim_hlo_fail(p, vat, "expected a value after '%s='", h->attr_key[a]);
    }
    while (hlo_peek(p) == '\n' || hlo_peek(p) == '\r' || hlo_peek(p) == ' ' || hlo_peek(p) == '\t') p->pos++;
    if (hlo_peek(p)) return sim_hlo_fail(p, p->pos, "one instruction only: expected the end after the line");
    return 0;
}

static int parse_instr(hlo_p *p)
{
    pl_hlo_instr *h = p->h;
    hlo_skip_ws(p);
    if (strncmp(p->s + p->pos, "ROOT", 4) == 0 && (p->s[p->pos + 4] == ' ' || p->s[p->pos + 4] == '\t')) {
        h->is_root = 1;
        p->pos += 4;
        hlo_skip_ws(p);
    }
    if (parse_name(p, h->name, sizeof h->name, "the instruction's name")) return -1;
    hlo_skip_ws(p);
    if (sim_hlo_expect(p, '=', "after the instruction's name")) return -1;
    hlo_skip_ws(p);
    if (sim_hlo_type(p, &h->result)) return -1;
    hlo_skip_ws(p);
    size_t at = p->pos;
    while (hlo_name_char(hlo_peek(p))) p->pos++;
    if (p->pos == at) return sim_hlo_fail(p, at, "expected the op name (add, fusion, all-reduce, ...) after the shape");
    if (p->pos - at >= PL_HLO_NAME)
        return sim_hlo_fail(p, at, "the op name is longer than %d characters", PL_HLO_NAME - 1);
    memcpy(h->op, p->s + at, p->pos - at);
    h->op[p->pos - at] = '\0';
    if (parse_operands(p)) return -1;
    return parse_attrs(p);
}

int pl_hlo_parse(const char *text, pl_hlo_instr *out, char *err, size_t n)
{
    if (err && n) err[0] = '\0';
    if (!out || !text) {
        if (err && n) snprintf(err, n, "%s is NULL", out ? "the text" : "the instruction to fill");
        return PL_EINVAL;
    }
    memset(out, 0, sizeof *out);
    hlo_p p = {text, 0, out, err, n, 0};
    if (parse_instr(&p) == 0) return PL_OK;
    memset(out, 0, sizeof *out);
    return PL_EINVAL;
}
