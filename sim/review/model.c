/* sim/review/model.c: the models a design review serves: presets and `key = value`
 * files read the way chip files are (sim/timing/chips.c): '#' comments, one key a
 * line, errors as "file:line: key: message", bytes outside printable ASCII
 * escaped, never a crash on any input (tests/fuzz/fuzz_model_parse.c).
 *
 * The presets are the models/ files compiled in (models/llama3-70b.model,
 * models/llama3-8b.model): figures from Meta's model cards and
 * ../shared/CHIPS.md. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../base/common.h"
#include "../base/outfile.h" /* sim_out_protect */
#include "../tilesim_review.h"

static const pl_model models[] = {
    {.name = "llama3-70b", .layers = 80, .d_model = 8192, .heads = 64, .kv_heads = 8, .head_dim = 128,
     .ffn = 28672, .ffn_kind = PL_FFN_SWIGLU, .vocab = 128256, .params = 70.55e9},
    {.name = "llama3-8b", .layers = 32, .d_model = 4096, .heads = 32, .kv_heads = 8, .head_dim = 128,
     .ffn = 14336, .ffn_kind = PL_FFN_SWIGLU, .vocab = 128256, .params = 8.03e9},
};

int pl_model_count(void) { return (int)(sizeof models / sizeof *models); }
const pl_model *pl_model_at(int i) { return i >= 0 && i < pl_model_count() ? &models[i] : NULL; }

const pl_model *pl_model_find(const char *name)
{
    for (int i = 0; name && i < pl_model_count(); i++)
        if (strcmp(models[i].name, name) == 0) return &models[i];
    return NULL;
}

typedef struct model_key {
    const char *key;
    size_t offset; /* of an int64_t field; params and ffn_kind are special */
    int64_t max;
} model_key;

#define MK(k, max) {#k, offsetof(pl_model, k), max}
static const model_key keys[] = {
    MK(layers, 100000), MK(d_model, 1 << 20), MK(heads, 65536), MK(kv_heads, 65536),
    MK(head_dim, 65536), MK(ffn, 1 << 22), MK(vocab, 1 << 24),
    {"ffn_kind", 0, 0}, {"params", 0, 0}, {"name", 0, 0},
};
#define N_KEYS (sizeof keys / sizeof *keys)


/* "70.55e9", "70.55B", "8M": a positive parameter count */
static int parse_params(const char *val, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(val, &end);
    if (end == val || errno || !isfinite(v)) return -1;
    if (*end == 'B' || *end == 'b') v *= 1e9, end++;
    else if (*end == 'M' || *end == 'm') v *= 1e6, end++;
    if (*end || !(v >= 1 && v <= 1e16)) return -1;
    *out = v;
    return 0;
}

static int set_key(pl_model *m, int k, const char *key, const char *val, const char *at, char *err, size_t n)
{
    char ev[96];
    if (strcmp(key, "name") == 0) {
        if (!*val || strlen(val) >= sizeof m->name || strcmp(sim_text_escape(val, ev, sizeof ev), val) != 0)
            return snprintf(err, n, "%s: name: must be 1 to %zu printable characters, got '%s'", at,
                            sizeof m->name - 1, sim_text_escape(val, ev, sizeof ev)), PL_EINVAL;
        snprintf(m->name, sizeof m->name, "%s", val);
    } else if (strcmp(key, "ffn_kind") == 0) {
        if (strcmp(val, "swiglu") == 0) m->ffn_kind = PL_FFN_SWIGLU;
        else if (strcmp(val, "gelu") == 0) m->ffn_kind = PL_FFN_GELU;
        else return snprintf(err, n, "%s: ffn_kind: '%s' is not swiglu or gelu", at, sim_text_escape(val, ev, sizeof ev)), PL_EINVAL;
    } else if (strcmp(key, "params") == 0) {
        if (parse_params(val, &m->params))
            return snprintf(err, n, "%s: params: '%s' is not a parameter count from 1 to 1e16 (70.55e9 or 70.55B)",
                            at, sim_text_escape(val, ev, sizeof ev)), PL_EINVAL;
    } else {
        char *end;
        errno = 0;
        long long v = strtoll(val, &end, 10);
        if (end == val || *end || errno || v < 1 || v > keys[k].max)
            return snprintf(err, n, "%s: %s: '%s' is not a whole number from 1 to %lld", at, key,
                            sim_text_escape(val, ev, sizeof ev), (long long)keys[k].max), PL_EINVAL;
        *(int64_t *)((char *)m + keys[k].offset) = v;
    }
    return PL_OK;
}

/* One line, comment stripped: blank, or key = value into m. */
static int parse_line(pl_model *m, char *s, const char *where, int lineno, unsigned *seen, char *err, size_t n)
{
    char at[300], ek[96];
    snprintf(at, sizeof at, "%s:%d", where, lineno);
    char *hash = strchr(s, '#');
    if (hash) *hash = '\0';
    s = sim_text_trim(s);
    if (!*s) return PL_OK;
    char *eq = strchr(s, '=');
    if (!eq) return snprintf(err, n, "%s: expected 'key = value', got '%s'", at, sim_text_escape(s, ek, sizeof ek)), PL_EINVAL;
    *eq = '\0';
    char *key = sim_text_trim(s), *val = sim_text_trim(eq + 1);
    for (size_t k = 0; k < N_KEYS; k++) {
        if (strcmp(key, keys[k].key) != 0) continue;
        if (*seen & (1u << k)) return snprintf(err, n, "%s: %s: given twice", at, key), PL_EINVAL;
        *seen |= 1u << k;
        return set_key(m, (int)k, key, val, at, err, n);
    }
    size_t w = (size_t)snprintf(err, n, "%s: %s: unknown key; known keys:", at, sim_text_escape(key, ek, sizeof ek));
    for (size_t k = 0; k < N_KEYS && w < n; k++)
        w += (size_t)snprintf(err + w, n - w, "%s %s", k ? "," : "", keys[k].key);
    return PL_EINVAL;
}

/* Whole-file checks: every key given, heads shared evenly by KV heads. */
static int check_model(const pl_model *m, unsigned seen, const char *where, char *err, size_t n)
{
    for (size_t k = 0; k < N_KEYS; k++)
        if (!(seen & (1u << k)) && strcmp(keys[k].key, "name") != 0)
            return snprintf(err, n, "%s: %s: missing (every key but name is required)", where, keys[k].key),
                   PL_EINVAL;
    if (m->heads % m->kv_heads)
        return snprintf(err, n, "%s: kv_heads: %lld does not divide heads = %lld (grouped-query attention shares "
                        "each KV head among the same number of query heads)", where, (long long)m->kv_heads,
                        (long long)m->heads), PL_EINVAL;
    /* params sizes the weights in HBM, the layer sizes time the steps: they must tell of one model (a file
     * with params = 1 was recommended on 0.0 GB of weights while its steps read 34.8 GB of them) */
    double attn = (double)m->d_model * (double)m->head_dim * (2.0 * (double)m->heads + 2.0 * (double)m->kv_heads);
    double ffn = (m->ffn_kind == PL_FFN_SWIGLU ? 3.0 : 2.0) * (double)m->d_model * (double)m->ffn;
    double layers = (double)m->layers * (attn + ffn), emb = (double)m->vocab * (double)m->d_model;
    if (m->params < 0.5 * (layers + emb) || m->params > 2.0 * (layers + 2 * emb))
        return snprintf(err, n, "%s: params: %.4g is far from the %.4g its sizes give (layers x (attention + FFN) "
                        "+ embeddings: %.4g to %.4g with the LM head); fix params or the sizes", where, m->params,
                        layers + 2 * emb, layers + emb, layers + 2 * emb), PL_EINVAL;
    return PL_OK;
}

int pl_model_parse(const char *text, const char *where, pl_model *out, char *err, size_t n)
{
    char unused[8];
    if (!err || !n) err = unused, n = sizeof unused;
    if (!where) where = "model";
    if (!text || !out) return snprintf(err, n, "%s: no text or no model to fill", where), PL_EINVAL;
    pl_model m = {.name = "custom"};
    unsigned seen = 0;
    char line[512];
    for (int lineno = 1; *text; lineno++) {
        const char *nl = strchr(text, '\n');
        size_t len = nl ? (size_t)(nl - text) : strlen(text);
        if (len >= sizeof line)
            return snprintf(err, n, "%s:%d: line longer than %zu characters", where, lineno, sizeof line - 1),
                   PL_EINVAL;
        memcpy(line, text, len);
        line[len] = '\0';
        text += len + (nl ? 1 : 0);
        int rc = parse_line(&m, line, where, lineno, &seen, err, n);
        if (rc) return rc;
    }
    int rc = check_model(&m, seen, where, err, n);
    if (rc) return rc;
    *out = m;
    err[0] = '\0';
    return PL_OK;
}

int pl_model_load(const char *path, pl_model *out, char *err, size_t n)
{
    char unused[8];
    if (!err || !n) err = unused, n = sizeof unused;
    if (!path || !out) return snprintf(err, n, "pl_model_load: no path or no model to fill"), PL_EINVAL;
    int rc;
    char *buf = sim_text_load(path, "model", err, n, &rc);
    if (!buf) return rc;
    sim_out_protect(path, "the model file");
    rc = pl_model_parse(buf, path, out, err, n);
    free(buf);
    return rc;
}
