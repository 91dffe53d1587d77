/* sim/tools/hlo_lex.c: what the HLO reader's parts share (sim/tools/hlo.h): a failure
 * with its column and caret, a whole number, an expected character. Its own
 * file so that the instruction (hlo_parse.c) and the shapes (hlo_shape.c)
 * both call down into it, never into each other (tools/layering.sh).
 */
#include <ctype.h>
#include <stdarg.h>
#include <string.h>

#include "hlo.h"

/* The text around column `at`, with a caret line under it; bytes that would
 * not print one column wide (controls, UTF-8) are shown as '?'. */
static void caret(const char *s, size_t at, char *buf, size_t n)
{
    size_t len = strlen(s), from = 0, to = len;
    if (len > 100) {
        from = at > 50 ? at - 50 : 0;
        to = from + 100 < len ? from + 100 : len;
    }
    char line[128], mark[128];
    size_t k = 0, c = 0;
    for (size_t i = from; i < to && k < sizeof line - 1; i++, k++) {
        unsigned char ch = (unsigned char)s[i];
        line[k] = ch < 0x20 || ch >= 0x7f ? '?' : (char)ch;
        if (i < at) c++;
    }
    line[k] = '\0';
    memset(mark, ' ', sizeof mark);
    mark[c < sizeof mark - 2 ? c : sizeof mark - 2] = '^';
    mark[(c < sizeof mark - 2 ? c : sizeof mark - 2) + 1] = '\0';
    snprintf(buf, n, "\n  %s%s%s\n  %s%s", from ? "..." : "", line, to < len ? "..." : "", from ? "   " : "", mark);
}

int sim_hlo_fail(hlo_p *p, size_t at, const char *fmt, ...)
{
    if (p->failed) return -1; /* the first failure is the one to report */
    p->failed = 1;
    if (!p->err || !p->n) return -1;
    char what[256], where[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    caret(p->s, at, where, sizeof where);
    snprintf(p->err, p->n, "column %zu: %s%s", at + 1, what, where);
    return -1;
}

int sim_hlo_int(hlo_p *p, int64_t *out, const char *what)
{
    if (!isdigit((unsigned char)hlo_peek(p))) return sim_hlo_fail(p, p->pos, "expected %s (a whole number)", what);
    size_t at = p->pos;
    int64_t v = 0;
    while (isdigit((unsigned char)hlo_peek(p))) {
        if (v > (HLO_MAX_NUMBER - (hlo_peek(p) - '0')) / 10)
            return sim_hlo_fail(p, at, "%s is too large (at most %lld)", what, HLO_MAX_NUMBER);
        v = v * 10 + (hlo_peek(p) - '0');
        p->pos++;
    }
    *out = v;
    return 0;
}

int sim_hlo_expect(hlo_p *p, char c, const char *after)
{
    if (hlo_peek(p) != c) return sim_hlo_fail(p, p->pos, "expected '%c' %s", c, after);
    p->pos++;
    return 0;
}

