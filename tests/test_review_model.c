/* tests/test_review_model.c: model files for `tilesim review` (issue 16,
 * sim/review/model.c): the presets are the models/ files and CHIPS.md's figures;
 * every bad file gets "file:line: key: message" and no crash. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../sim/tilesim_review.h"
#include "run.h"

#define GOOD "layers = 2\nd_model = 256\nheads = 8\nkv_heads = 2\nhead_dim = 128\nffn = 512\n" \
             "ffn_kind = swiglu\nvocab = 1024\nparams = 2.5M\n"

/* models/NAME.model, found from this file's directory */
static void model_path(char *buf, size_t n, const char *name)
{
    const char *slash = strrchr(__FILE__, '/');
    snprintf(buf, n, "%.*s/../models/%s.model", slash ? (int)(slash - __FILE__) : 1, slash ? __FILE__ : ".", name);
}

Test(review_model, the_presets_are_the_model_files_and_chips_md)
{
    const pl_model *p = pl_model_find("llama3-70b");
    cr_assert(p);
    cr_expect(p->layers == 80 && p->d_model == 8192 && p->heads == 64 && p->kv_heads == 8 && p->head_dim == 128 &&
              p->ffn == 28672 && p->vocab == 128256 && p->params == 70.55e9 && p->ffn_kind == PL_FFN_SWIGLU);
    /* CHIPS.md: KV cache per token 2 x 8 x 128 x 80 x 2 B = 327,680 B */
    cr_expect_eq(2 * p->kv_heads * p->head_dim * p->layers * 2, 327680);
    cr_expect_eq(pl_model_count(), 2);
    for (int i = 0; i < pl_model_count(); i++) {
        char path[512], err[512];
        pl_model m;
        model_path(path, sizeof path, pl_model_at(i)->name);
        cr_assert_eq(pl_model_load(path, &m, err, sizeof err), PL_OK, "%s", err);
        cr_expect(memcmp(&m, pl_model_at(i), sizeof m) == 0, "%s differs from its preset", path);
    }
    cr_expect_null(pl_model_find("llama3-405b"));
    cr_expect_null(pl_model_find(NULL));
}

Test(review_model, a_good_file_parses_with_defaults_named_custom)
{
    pl_model m;
    char err[256] = "x";
    cr_assert_eq(pl_model_parse("# a comment\n\n" GOOD, "m", &m, err, sizeof err), PL_OK, "%s", err);
    cr_expect_str_eq(m.name, "custom");
    cr_expect(m.layers == 2 && m.kv_heads == 2 && m.params == 2.5e6 && err[0] == '\0');
    cr_assert_eq(pl_model_parse("name = mine  # trailing comment\n" GOOD "", "m", &m, err, sizeof err), PL_OK);
    cr_expect_str_eq(m.name, "mine");
}

Test(review_model, bad_files_get_file_line_key_messages)
{
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"layers = two\n", "m:1: layers: 'two' is not a whole number from 1 to 100000"},
        {"layers = 0\n", "m:1: layers: '0' is not a whole number"},
        {"layers = 2 3\n", "m:1: layers: '2 3' is not"},
        {"\nlayers = 2\nlayers = 3\n", "m:3: layers: given twice"},
        {"depth = 2\n", "m:1: depth: unknown key; known keys: layers, d_model"},
        {"layers 2\n", "m:1: expected 'key = value', got 'layers 2'"},
        {"ffn_kind = relu\n", "m:1: ffn_kind: 'relu' is not swiglu or gelu"},
        {"params = lots\n", "m:1: params: 'lots' is not a parameter count"},
        {"params = nan\n", "m:1: params: 'nan'"},
        {"name = \x01x\n", "m:1: name: must be 1 to 31 printable characters, got '\\x01x'"},
        {"layers = 2\n", "m: d_model: missing"},
        {GOOD "kv_heads = 3\n", "m:10: kv_heads: given twice"},
        {"layers = 2\nd_model = 256\nheads = 8\nkv_heads = 3\nhead_dim = 128\nffn = 512\nffn_kind = gelu\n"
         "vocab = 10\nparams = 1e6\n", "m: kv_heads: 3 does not divide heads = 8"},
        /* params sizes HBM, the sizes time the steps: one model, within a factor of two */
        {"layers = 80\nd_model = 8192\nheads = 64\nkv_heads = 8\nhead_dim = 128\nffn = 28672\nffn_kind = swiglu\n"
         "vocab = 128256\nparams = 1\n", "m: params: 1 is far from the 7.055e+10 its sizes give"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        pl_model m = {.layers = 99};
        char err[512];
        cr_expect_eq(pl_model_parse(cases[i].text, "m", &m, err, sizeof err), PL_EINVAL, "case %zu", i);
        cr_expect(strstr(err, cases[i].want), "case %zu: got '%s', want '%s'", i, err, cases[i].want);
        cr_expect_eq(m.layers, 99, "case %zu: the model is untouched on error", i);
    }
    char big[700];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    char err[256];
    pl_model m;
    cr_expect_eq(pl_model_parse(big, "m", &m, err, sizeof err), PL_EINVAL);
    cr_expect(strstr(err, "m:1: line longer than"), "%s", err);
    cr_expect_eq(pl_model_parse(NULL, "m", &m, err, sizeof err), PL_EINVAL);
    cr_expect_eq(pl_model_parse(GOOD, NULL, &m, NULL, 0), PL_OK, "no error buffer is fine");
}

Test(review_model, files_that_are_not_model_files_say_so)
{
    pl_model m;
    char err[512], path[64];
    cr_expect_eq(pl_model_load("/nonexistent/x.model", &m, err, sizeof err), PL_EINVAL);
    cr_expect(strstr(err, "/nonexistent/x.model: cannot open"), "%s", err);
    cr_expect_eq(pl_model_load("/tmp", &m, err, sizeof err), PL_EINVAL);
    cr_expect(strstr(err, "is a directory"), "%s", err);
    th_temp_file(path, "layers = 2\nheads = x\n");
    cr_expect_eq(pl_model_load(path, &m, err, sizeof err), PL_EINVAL);
    char want[128];
    snprintf(want, sizeof want, "%s:2: heads: 'x'", path);
    cr_expect(strstr(err, want), "%s (want %s)", err, want);
    unlink(path);
    FILE *f = fopen(path, "wb");
    cr_assert(f);
    fwrite("layers = 2\0\n", 1, 12, f);
    fclose(f);
    cr_expect_eq(pl_model_load(path, &m, err, sizeof err), PL_EINVAL);
    cr_expect(strstr(err, "not a text file"), "%s", err);
    unlink(path);
}
