/* tests/json.h: a small strict JSON reader for tests of what tilesim writes
 * (traces, --json reports). It parses a whole document into a tree and
 * fails on anything that is not JSON, so a test that parses output also
 * checks its syntax.
 *
 *     tj_value *v = tj_parse(text);          // NULL on a syntax error
 *     const tj_value *ev = tj_get(v, "traceEvents");
 *     for (size_t i = 0; i < ev->n; i++) ... ev->items[i] ...
 *     tj_free(v);
 */
#ifndef TILESIM_TESTS_JSON_H
#define TILESIM_TESTS_JSON_H

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

typedef enum { TJ_NULL, TJ_BOOL, TJ_NUM, TJ_STR, TJ_ARR, TJ_OBJ } tj_kind;

typedef struct tj_value {
    tj_kind kind;
    double num;               /* TJ_NUM, TJ_BOOL */
    char *str;                /* TJ_STR */
    size_t n;                 /* TJ_ARR, TJ_OBJ: items */
    struct tj_value **items;  /* TJ_ARR, TJ_OBJ */
    char **keys;              /* TJ_OBJ */
} tj_value;

static inline void tj_free(tj_value *v)
{
    if (!v) return;
    for (size_t i = 0; i < v->n; i++) {
        tj_free(v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
    free(v);
}

static inline void tj_ws(const char **p)
{
    while (isspace((unsigned char)**p)) (*p)++;
}

static inline tj_value *tj_value_at(const char **p, int depth);

static inline char *tj_string(const char **p)
{
    if (**p != '"') return NULL;
    (*p)++;
    size_t cap = 16, n = 0;
    char *s = malloc(cap);
    while (s && **p != '"') {
        char ch = **p;
        if (!ch || (unsigned char)ch < 0x20) { free(s); return NULL; }
        if (ch == '\\') {
            (*p)++;
            switch (**p) {
            case '"': case '\\': case '/': ch = **p; break;
            case 'n': ch = '\n'; break;
            case 't': ch = '\t'; break;
            case 'r': ch = '\r'; break;
            case 'b': ch = '\b'; break;
            case 'f': ch = '\f'; break;
            case 'u':
                for (int i = 1; i <= 4; i++)
                    if (!isxdigit((unsigned char)(*p)[i])) { free(s); return NULL; }
                ch = '?'; /* tests never need the code point */
                *p += 4;
                break;
            default: free(s); return NULL;
            }
        }
        if (n + 2 > cap) {
            char *t = realloc(s, cap *= 2);
            if (!t) { free(s); return NULL; }
            s = t;
        }
        s[n++] = ch;
        (*p)++;
    }
    if (!s) return NULL;
    (*p)++;
    s[n] = '\0';
    return s;
}

static inline int tj_push(tj_value *v, tj_value *item, char *key)
{
    tj_value **items = realloc(v->items, (v->n + 1) * sizeof *items);
    if (!items) return -1;
    v->items = items;
    if (v->kind == TJ_OBJ) {
        char **keys = realloc(v->keys, (v->n + 1) * sizeof *keys);
        if (!keys) return -1;
        v->keys = keys;
        keys[v->n] = key;
    }
    items[v->n++] = item;
    return 0;
}

static inline tj_value *tj_container(const char **p, int depth, int obj)
{
    tj_value *v = calloc(1, sizeof *v);
    if (!v) return NULL;
    v->kind = obj ? TJ_OBJ : TJ_ARR;
    (*p)++;
    tj_ws(p);
    if (**p == (obj ? '}' : ']')) { (*p)++; return v; }
    for (;;) {
        char *key = NULL;
        tj_ws(p);
        if (obj) {
            if (!(key = tj_string(p))) break;
            tj_ws(p);
            if (**p != ':') { free(key); break; }
            (*p)++;
        }
        tj_value *item = tj_value_at(p, depth + 1);
        if (!item || tj_push(v, item, key)) { tj_free(item); free(key); break; }
        tj_ws(p);
        if (**p == ',') { (*p)++; continue; }
        if (**p == (obj ? '}' : ']')) { (*p)++; return v; }
        break;
    }
    tj_free(v);
    return NULL;
}

static inline tj_value *tj_value_at(const char **p, int depth)
{
    if (depth > 64) return NULL;
    tj_ws(p);
    if (**p == '{' || **p == '[') return tj_container(p, depth, **p == '{');
    tj_value *v = calloc(1, sizeof *v);
    if (!v) return NULL;
    if (**p == '"') {
        v->kind = TJ_STR;
        if ((v->str = tj_string(p))) return v;
    } else if (strncmp(*p, "true", 4) == 0 || strncmp(*p, "false", 5) == 0) {
        v->kind = TJ_BOOL;
        v->num = **p == 't';
        *p += **p == 't' ? 4 : 5;
        return v;
    } else if (strncmp(*p, "null", 4) == 0) {
        *p += 4;
        return v;
    } else if (**p == '-' || isdigit((unsigned char)**p)) {
        char *end;
        v->kind = TJ_NUM;
        v->num = strtod(*p, &end);
        if (end != *p) { *p = end; return v; }
    }
    free(v);
    return NULL;
}

/* The document, or NULL if text is not exactly one JSON value. */
static inline tj_value *tj_parse(const char *text)
{
    const char *p = text;
    tj_value *v = tj_value_at(&p, 0);
    tj_ws(&p);
    if (v && *p) { tj_free(v); return NULL; }
    return v;
}

/* Member `key` of an object, or NULL. */
static inline const tj_value *tj_get(const tj_value *v, const char *key)
{
    if (!v || v->kind != TJ_OBJ) return NULL;
    for (size_t i = 0; i < v->n; i++)
        if (strcmp(v->keys[i], key) == 0) return v->items[i];
    return NULL;
}

/* Read a whole file (NUL-terminated), or NULL. */
static inline char *tj_read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) { free(s); s = NULL; }
    if (s) s[n] = '\0';
    fclose(f);
    return s;
}

#endif
