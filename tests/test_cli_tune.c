/* tests/test_cli_tune.c: `tilesim tune KERNEL --shapes SHAPES.csv` (issue
 * 22): the best tiling per shape, with its predicted time, the runner-up and
 * the margin, as a table keyed by shape in text, CSV and JSON, written with
 * -o like every other output (a temporary file renamed into place).
 *
 * The answers are checked against the simulator itself: the best row's time
 * is what `tilesim run` predicts for that configuration, no tiling of the
 * sweep beats it, and the runner-up is no faster.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>

#include "run.h"

/* 20 matmul shapes, from square to skinny (M a decode batch) */
static void twenty_shapes(char *path)
{
    char text[2048] = "# M N K: a decode batch and a prefill\nM,N,K\n";
    static const int64_t m[] = {8, 16, 32, 64, 128}, nk[][2] = {{1024, 1024}, {2048, 512}, {512, 2048}, {4096, 1024}};
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 4; j++)
            snprintf(text + strlen(text), sizeof text - strlen(text), "%lld,%lld,%lld\n", (long long)m[i],
                     (long long)nk[j][0], (long long)nk[j][1]);
    th_temp_file(path, text);
}

static json_t *load_json(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    cr_assert(j, "not JSON (%s): %.300s", e.text, text);
    return j;
}

/* "bm=512 bn=512 bk=512 dtype=bf16" from a JSON object of parameters */
static void config_of(json_t *shape, json_t *tiling, char *buf, size_t n)
{
    const char *k;
    json_t *v;
    buf[0] = '\0';
    json_t *both[] = {shape, tiling};
    for (int i = 0; i < 2; i++)
        json_object_foreach(both[i], k, v) {
            if (json_is_string(v)) snprintf(buf + strlen(buf), n - strlen(buf), "%s%s=%s", buf[0] ? " " : "", k,
                                            json_string_value(v));
            else snprintf(buf + strlen(buf), n - strlen(buf), "%s%s=%lld", buf[0] ? " " : "", k,
                          (long long)json_integer_value(v));
        }
}

Test(tune, twenty_shapes_give_twenty_rows_whose_best_is_what_run_predicts)
{
    char shapes[64];
    twenty_shapes(shapes);
    th_run r = TH_RUN("tune", "matmul", "--shapes", shapes, "--set", "dtype=bf16", "--json");
    cr_assert_eq(r.status, 0, "%s", r.err);
    json_t *j = load_json(r.out);
    json_t *rows = json_object_get(j, "shapes");
    cr_assert_eq(json_array_size(rows), 20);
    cr_assert_str_eq(json_string_value(json_object_get(j, "kernel")), "matmul");
    for (size_t i = 0; i < 20; i++) {
        json_t *row = json_array_get(rows, i), *best = json_object_get(row, "best");
        cr_assert(json_is_object(best), "shape %zu has no best", i);
        cr_assert_eq(json_object_size(best), 3, "the tiling is bm, bn, bk (dtype is --set)");
        double t = json_number_value(json_object_get(row, "time_us")),
               second = json_number_value(json_object_get(row, "runner_up_us")),
               margin = json_number_value(json_object_get(row, "margin"));
        cr_assert_gt(t, 0);
        cr_assert_geq(second, t, "shape %zu: the runner-up is faster than the best", i);
        cr_assert_float_eq(margin, (second - t) / t, 1e-3);
        json_int_t ties = json_integer_value(json_object_get(row, "ties"));
        cr_expect(margin > 0.05 ? ties == 1 : ties >= 2, "shape %zu: margin %g, %lld ties", i, margin, (long long)ties);
        if (i % 7 == 0) { /* a few against the simulator itself */
            char config[256];
            config_of(json_object_get(row, "shape"), best, config, sizeof config);
            strcat(config, " dtype=bf16");
            cr_assert_float_eq(th_predicted_s("matmul", config, NULL) * 1e6, t, t * 1e-4, "shape %zu: %s", i,
                               config);
        }
    }
    json_decref(j);
    th_run_free(&r);
    unlink(shapes);
}

Test(tune, no_tiling_of_the_sweep_beats_the_best)
{
    char shapes[64];
    th_temp_file(shapes, "M,N,K\n256,1024,2048\n");
    th_run t = TH_RUN("tune", "matmul", "--shapes", shapes, "--set", "dtype=f32", "--csv");
    cr_assert_eq(t.status, 0, "%s", t.err);
    /* header, one row: M,N,K,dtype,bm,bn,bk,time_us,... */
    char *row = strchr(t.out, '\n');
    cr_assert(row && strstr(t.out, "M,N,K,dtype,bm,bn,bk,time_us,vmem_limit_bytes,runner_up,runner_up_us,margin_pct,ties,legal,tried,why"),
              "%s", t.out);
    long long m, n, k, bm, bn, bk;
    double best;
    cr_assert_eq(sscanf(row + 1, "%lld,%lld,%lld,f32,%lld,%lld,%lld,%lf", &m, &n, &k, &bm, &bn, &bk, &best), 7, "%s",
                 row + 1);
    th_run s = TH_RUN("sweep", "matmul", "--set", "M=256", "--set", "N=1024", "--set", "K=2048", "--set", "dtype=f32",
                      "--json");
    cr_assert_eq(s.status, 0, "%s", s.err);
    json_t *j = load_json(s.out);
    json_t *legal = json_object_get(j, "legal");
    cr_assert_gt(json_array_size(legal), 10);
    size_t i;
    json_t *e;
    int near = 0;
    json_array_foreach(legal, i, e) {
        double us = json_number_value(json_object_get(e, "time_us"));
        if (us == 0) us = json_number_value(json_object_get(e, "time_s")) * 1e6;
        cr_assert_geq(us, best * (1 - 1e-4), "%s beats the tuned best %g us", json_dumps(e, 0), best);
        near += us <= best * 1.05;
    }
    /* ties: the sweep's legal tilings within 5 % of the best (field 13 of the row) */
    const char *f = row + 1;
    for (int c = 0; c < 12 && f; c++) f = strchr(f, ',') ? strchr(f, ',') + 1 : NULL;
    cr_assert(f, "%s", row + 1);
    cr_expect_eq(atoi(f), near, "ties %d, the sweep has %d within 5 %%: %s", atoi(f), near, row + 1);
    cr_expect_geq(near, 1);
    json_decref(j);
    th_run_free(&t), th_run_free(&s);
    unlink(shapes);
}

Test(tune, text_names_the_tiling_and_each_shape)
{
    char shapes[64];
    th_temp_file(shapes, "M,N,K\n1024,1024,1024\n512,2048,256\n");
    th_run r = TH_RUN("tune", "matmul", "--shapes", shapes, "--set", "dtype=bf16");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "tune: matmul on v5e: 2 shapes, tiling (bm, bn, bk) swept per shape"), "%s", r.out);
    cr_assert(strstr(r.out, "M=1024 N=1024 K=1024"), "%s", r.out);
    cr_assert(strstr(r.out, "M=512 N=2048 K=256"), "%s", r.out);
    th_run_free(&r);
    unlink(shapes);
}

Test(tune, o_writes_the_table_and_a_failed_run_keeps_the_old_file)
{
    char shapes[64], out[64], bad[64];
    th_temp_file(shapes, "M,N,K\n1024,1024,1024\n");
    th_temp_file(out, "old table\n");
    th_temp_file(bad, "M,N,K\n1024,x,1024\n");
    th_run r = TH_RUN("tune", "matmul", "--shapes", bad, "--csv", "-o", out);
    cr_assert_eq(r.status, 2);
    th_run_free(&r);
    char *text = th_read_file(out);
    cr_assert_str_eq(text, "old table\n");
    free(text);
    r = TH_RUN("tune", "matmul", "--shapes", shapes, "--csv", "-o", out);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "1 shape written to"), "%s", r.out);
    text = th_read_file(out);
    /* dtype is not tiling but a key: its value beside the shape's, not swept */
    cr_assert(strncmp(text, "M,N,K,dtype,bm,bn,bk,time_us", 28) == 0, "%s", text);
    cr_assert(strstr(text, "\n1024,1024,1024,f32,"), "%s", text);
    free(text);
    th_run_free(&r);
    unlink(shapes), unlink(out), unlink(bad);
}

Test(tune, errors_in_the_shapes_file_name_the_line_and_column)
{
    static const struct {
        const char *text, *words;
    } cases[] = {
        {"M,N,Q\n1,2,3\n", ":1: 'Q' is not a parameter of matmul"},
        {"M,N,K\n1024,1024\n", ":2: 2 columns where the header has 3"},
        {"M,N,K\n\n# c\n1024,1024,abc\n", ":4: column 'K'"},
        {"M,N,K\n1,2,3,4\n", ":2: more than the header's 3 columns"},
        {"M,N,K\n", "has a header but no shape"},
        {"M,M\n1,2\n", ":1: column 'M' is given twice"},
        {"# only a comment\n", "has no header line"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char shapes[64];
        th_temp_file(shapes, cases[i].text);
        th_run r = TH_RUN("tune", "matmul", "--shapes", shapes);
        cr_assert_eq(r.status, 2, "case %zu: %s", i, r.err);
        cr_assert(strstr(r.err, cases[i].words), "case %zu: '%s' missing from: %s", i, cases[i].words, r.err);
        th_run_free(&r);
        unlink(shapes);
    }
    th_run r = TH_RUN("tune", "matmul");
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "missing --shapes"), "%s", r.err);
    th_run_free(&r);
}

Test(tune, a_shape_without_a_legal_tiling_says_why_and_exits_1)
{
    char shapes[64];
    th_temp_file(shapes, "M,N,K\n1024,1024,1024\n");
    th_run r = TH_RUN("tune", "matmul", "--shapes", shapes, "--vary", "bm=7,9", "--json");
    cr_assert_eq(r.status, 1, "%s%s", r.out, r.err);
    json_t *j = load_json(r.out), *row = json_array_get(json_object_get(j, "shapes"), 0);
    cr_assert(json_is_null(json_object_get(row, "best")));
    cr_assert(strstr(json_string_value(json_object_get(row, "reason")), "rule T1"), "%s", r.out);
    json_decref(j);
    th_run_free(&r);
    /* --csv too: its last column, why */
    r = TH_RUN("tune", "matmul", "--shapes", shapes, "--vary", "bm=7,9", "--csv");
    cr_assert_eq(r.status, 1, "%s%s", r.out, r.err);
    const char *row2 = strchr(r.out, '\n');
    cr_assert(row2 && strstr(row2, "rule T1") && strstr(row2, ",\""), "%s", r.out);
    th_run_free(&r);
    unlink(shapes);
}

/* A shape whose tiling sweep is too big is that shape's error: by its line */
Test(tune, a_shape_too_big_to_sweep_names_its_line)
{
    char shapes[64];
    th_temp_file(shapes, "batch,in,out\n256,1024,1024\n# big\n92252160,92252160,92252160\n");
    th_run r = TH_RUN("tune", "quant_matmul", "--shapes", shapes);
    cr_expect_eq(r.status, 2, "%s%s", r.out, r.err);
    cr_expect(strstr(r.err, ":4)"), "%s", r.err);
    th_run_free(&r);
    unlink(shapes);
}

/* An option given twice is refused, not the last one taken (-o a -o b wrote
 * only b; --chip v6e --chip v5e tuned on v5e); --set and --vary repeat. */
Test(tune, an_option_given_twice_is_refused)
{
    char shapes[64];
    th_temp_file(shapes, "M,N,K\n256,256,256\n");
    th_run r = TH_RUN("tune", "matmul", "--shapes", shapes, "--chip", "v6e", "--chip", "v5e");
    cr_expect_eq(r.status, 2, "%s", r.out);
    cr_expect(strstr(r.err, "--chip: given twice"), "%s", r.err);
    th_run_free(&r);
    r = TH_RUN("tune", "matmul", "--shapes", shapes, "-o", "/tmp/tilesim_never_a", "--out", "/tmp/tilesim_never_b");
    cr_expect_eq(r.status, 2, "%s", r.out);
    cr_expect(access("/tmp/tilesim_never_a", F_OK) && access("/tmp/tilesim_never_b", F_OK), "nothing written");
    th_run_free(&r);
    r = TH_RUN("tune", "matmul", "--shapes", shapes, "--vary", "bm=128", "--vary", "bn=128", "--set", "bk=128");
    cr_expect_eq(r.status, 0, "--vary repeats: %s", r.err);
    th_run_free(&r);
    unlink(shapes);
}

/* A dtype is part of the shape, not the tiling: a tuned table is keyed by
 * its dtypes (vLLM's by x_q_dtype and w_q_dtype). Without a column, --set
 * or --vary, quant_matmul's wdtype keeps its default (i8) rather than
 * being "tuned" to fp4; a column keys each row by it; --vary sweeps it. */
Test(tune, a_dtype_keeps_its_default_unless_given)
{
    char shapes[64], keyed[64];
    th_temp_file(shapes, "batch,out,in\n16,1024,4096\n");
    th_run r = TH_RUN("tune", "quant_matmul", "--shapes", shapes, "--chip", "v6e", "--csv");
    cr_assert_eq(r.status, 0, "%s", r.err);
    /* every tiling parameter a column, bb too though a batch of 16 gives it one value (the whole batch) */
    cr_expect(strncmp(r.out, "batch,out,in,wdtype,bb,bo,bi,time_us,", 37) == 0, "wdtype a key: %.200s", r.out);
    cr_expect(strstr(r.out, "\n16,1024,4096,i8,"), "its default: %.300s", r.out);
    cr_expect_null(strstr(r.out, "f4e2m1"), "wdtype not swept: %.300s", r.out);
    th_run_free(&r);

    th_temp_file(keyed, "batch,out,in,wdtype\n16,1024,4096,f8e4m3\n16,1024,4096,f4e2m1\n");
    r = TH_RUN("tune", "quant_matmul", "--shapes", shapes, "--chip", "v6e");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "tiling (bb, bo, bi) swept per shape, wdtype=i8 kept (a dtype"), "the text says so: %.300s",
              r.out);
    th_run_free(&r);

    r = TH_RUN("tune", "quant_matmul", "--shapes", keyed, "--chip", "v7x");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "tiling (bb, bo, bi) swept per shape, cost only"), "%.300s", r.out);
    const char *a = strstr(r.out, "wdtype=f8e4m3 "), *b = strstr(r.out, "wdtype=f4e2m1 ");
    cr_assert(a && b, "one row per dtype: %.600s", r.out);
    cr_expect_eq(strchr(a, '\n') - a, strchr(b, '\n') - b, "rows line up: %.600s", r.out);
    th_run_free(&r);

    r = TH_RUN("tune", "quant_matmul", "--shapes", shapes, "--chip", "v7x", "--vary", "wdtype=f8e4m3,f4e2m1");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "tiling (bb, bo, bi, wdtype) swept"), "%.300s", r.out);
    th_run_free(&r);
    unlink(shapes), unlink(keyed);
}

/* The default a dtype keeps is the chip's (chip_defaults): v7x's MXU has no
 * int8 path (T10), so its shapes are tuned with fp8 weights, each one legal,
 * where int8 would make every configuration illegal; v6e keeps int8. */
Test(tune, a_dtype_keeps_the_chips_default)
{
    char shapes[64];
    th_temp_file(shapes, "batch,out,in\n16,1024,4096\n256,5120,4096\n");
    th_run r = TH_RUN("tune", "quant_matmul", "--shapes", shapes, "--chip", "v7x", "--csv");
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "\n16,1024,4096,f8e4m3,16,1024,"), "fp8 and a best tiling: %.400s", r.out);
    cr_expect(strstr(r.out, "\n256,5120,4096,f8e4m3,"), "%.400s", r.out);
    cr_expect_null(strstr(r.out, "i8"), "%.400s", r.out);
    th_run_free(&r);
    r = TH_RUN("tune", "quant_matmul", "--shapes", shapes, "--chip", "v6e", "--csv");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "\n16,1024,4096,i8,"), "%.400s", r.out);
    th_run_free(&r);
    unlink(shapes);
}

/* A hardware table keyed by chip as well (serving stacks key by TPU
 * version) names the way to tune it, one chip a run. */
Test(tune, a_chip_column_says_to_tune_one_chip_a_run)
{
    char shapes[64];
    th_temp_file(shapes, "chip,batch,out,in\nv7x,16,1024,4096\n");
    th_run r = TH_RUN("tune", "quant_matmul", "--shapes", shapes);
    cr_expect_eq(r.status, 2, "%s", r.out);
    cr_expect(strstr(r.err, ":1: a 'chip' column: tune takes one chip a run; split the file by chip and give each "
                            "--chip"), "%s", r.err);
    th_run_free(&r);
    unlink(shapes);
}

/* A shapes file with quoted fields (RFC 4180), saved as a spreadsheet
 * saves it (a UTF-8 byte order mark before the first name, CRLF line ends),
 * reads as the plain one; a quote left open names its line. */
Test(tune, quoted_fields_read_as_plain_ones)
{
    char plain[64], quoted[64], open_quote[64];
    th_temp_file(plain, "M,N,K\n512,1024,256\n");
    th_temp_file(quoted, "\xEF\xBB\xBF\"M\",\"N\",\"K\"\r\n\"512\", 1024 ,\"256\"\r\n");
    th_temp_file(open_quote, "M,N,K\n# a comment\n\"512,1024,256\n");
    th_run a = TH_RUN("tune", "matmul", "--shapes", plain, "--csv");
    th_run b = TH_RUN("tune", "matmul", "--shapes", quoted, "--csv");
    cr_assert_eq(a.status, 0, "%s", a.err);
    cr_assert_eq(b.status, 0, "%s", b.err);
    cr_expect_str_eq(a.out, b.out);
    th_run_free(&a), th_run_free(&b);
    th_run c = TH_RUN("tune", "matmul", "--shapes", open_quote);
    cr_expect_eq(c.status, 2);
    cr_expect(strstr(c.err, ":3: a quoted field has no closing quote"), "%s", c.err);
    th_run_free(&c);
    unlink(plain), unlink(quoted), unlink(open_quote);
}

/* tilesim tune over a shapes file holding csv and the words given: exit 0 and `want` in what it printed. */
#define EXPECT_TUNE(csv, want, ...)                                                                          \
    do {                                                                                                     \
        char shapes_[64];                                                                                    \
        th_temp_file(shapes_, csv);                                                                          \
        th_run r_ = TH_RUN("tune", "matmul", "--shapes", shapes_, "--set", "dtype=bf16", __VA_ARGS__);       \
        cr_assert_eq(r_.status, 0, "%s", r_.err);                                                            \
        cr_expect(strstr(r_.out, want), "%.900s", r_.out);                                                   \
        th_run_free(&r_);                                                                                    \
        unlink(shapes_);                                                                                     \
    } while (0)

/* A shape parameter no column gives keeps its default for every shape, and the table says so: in the
 * heading, and as a key column of the CSV and JSON (K vanished from both, and nothing said it was 512). */
Test(tune, a_shape_parameter_no_column_gives_is_said_and_keyed)
{
    EXPECT_TUNE("M,N\n128,4096\n", ", K=512 for every shape (no column or --set gives it: its default)", "--chip",
                "v5e");
    EXPECT_TUNE("M,N\n128,4096\n", "M,N,K,dtype,bm,bn,bk,time_us,", "--csv");
    EXPECT_TUNE("M,N\n128,4096\n", "\n128,4096,512,bf16,", "--csv");
}

/* The best at the largest candidate tried, where twice it is faster, is said under the table (matmul
 * 4096^3 on v6e: 512 is the end of the default lists, and bm=1024 bn=2048 bk=1024 is 2.9x faster). */
Test(tune, a_best_at_the_end_of_its_candidates_is_said)
{
    EXPECT_TUNE("M,N,K\n4096,4096,4096\n",
                "bn: the best of 1 shape is the largest bn tried, and twice it is 1% faster or more (simulated)", "--chip",
                "v6e");
    EXPECT_TUNE("M,N,K\n4096,4096,4096\n", "\"faster_past_the_list\":[\"bm\",\"bn\",\"bk\"]", "--chip", "v6e",
                "--json");
}

/* -o may not name the shapes file: the table would replace it. */
Test(tune, output_into_the_shapes_file_is_refused)
{
    char shapes[64];
    th_temp_file(shapes, "M,N,K\n256,256,256\n");
    th_run r = TH_RUN("tune", "matmul", "--shapes", shapes, "-o", shapes, "--csv");
    cr_assert_eq(r.status, 2, "%s", r.err);
    cr_expect(strstr(r.err, "is the shapes file"), "%s", r.err);
    th_run_free(&r);
    FILE *f = fopen(shapes, "r");
    char line[64] = "";
    cr_assert_not_null(f);
    cr_expect_not_null(fgets(line, sizeof line, f));
    fclose(f);
    cr_expect_str_eq(line, "M,N,K\n", "the shapes file is as it was");
    unlink(shapes);
}

/* As `sweep` does, each tiling may raise its VMEM limit unless --vmem-limit pins it: a 4096^3 matmul on v5e
 * over 512..2048 blocks had 13 of 27 legal under the default 16 MiB, and sweep's best was not tune's. */
Test(tune, tilings_raise_their_vmem_limit_as_sweep_does_unless_pinned)
{
    char shapes[64];
    th_temp_file(shapes, "M,N,K\n4096,4096,4096\n");
    const char *v[] = {"--vary", "bm=512,1024,2048", "--vary", "bn=512,1024,2048", "--vary", "bk=512,1024,2048"};
    th_run r = TH_RUN("tune", "matmul", "--shapes", shapes, "--set", "dtype=bf16", v[0], v[1], v[2], v[3], v[4], v[5],
                      "--csv");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, ",27,27,"), "every tiling legal: %.400s", r.out);
    th_run_free(&r);
    r = TH_RUN("tune", "matmul", "--shapes", shapes, "--set", "dtype=bf16", v[0], v[1], v[2], v[3], v[4], v[5], "--csv",
               "--vmem-limit", "16M");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect_null(strstr(r.out, ",27,27,"), "a pinned limit refuses some: %.400s", r.out);
    th_run_free(&r);
    unlink(shapes);
}

/* A kernel that sets its own VMEM limit keeps it as the wall: quant_matmul asks for min(its estimate,
 * 48 MiB) on v7x, as the production kernel does, and a tiling over that does not compile (the hardware
 * autotuner timed such tilings as failed). --vmem-limit still pins another. */
static int legal_of(const char *out)
{
    const char *line = strchr(out, '\n'); /* the first row, after the header */
    int commas = 0, legal = -1;
    for (const char *p = line ? line + 1 : out; *p && *p != '\n'; p++)
        if (*p == ',' && ++commas == 12) legal = atoi(p + 1); /* after batch..ties: legal */
    return legal;
}

Test(tune, a_kernels_own_vmem_limit_stays_its_wall)
{
    char shapes[64];
    th_temp_file(shapes, "batch,out,in\n8192,7168,8192\n");
    th_run own = TH_RUN("tune", "quant_matmul", "--shapes", shapes, "--chip", "v7x", "--set", "wdtype=f8e4m3", "--csv");
    th_run phys = TH_RUN("tune", "quant_matmul", "--shapes", shapes, "--chip", "v7x", "--set", "wdtype=f8e4m3", "--csv",
                         "--vmem-limit", "64M");
    cr_assert_eq(own.status, 0, "%s", own.err);
    cr_assert_eq(phys.status, 0, "%s", phys.err);
    int a = legal_of(own.out), b = legal_of(phys.out);
    cr_expect(a > 0 && a < b, "legal under its own limit %d, under 64 MiB %d: %s%s", a, b, own.out, phys.out);
    th_run_free(&own), th_run_free(&phys);
    unlink(shapes);
}

/* A shape given twice is tuned once and keyed once (4096 copies of one
 * shape took hours, one sweep each), and the merge is said. */
Test(tune, a_repeated_shape_is_tuned_once)
{
    char once[64], thrice[64];
    th_temp_file(once, "M,N,K\n512,1024,256\n256,256,256\n");
    th_temp_file(thrice, "M,N,K\n512,1024,256\n256,256,256\n512,1024,256\n 512 ,1024,256\n");
    th_run a = TH_RUN("tune", "matmul", "--shapes", once, "--csv");
    th_run b = TH_RUN("tune", "matmul", "--shapes", thrice, "--csv");
    cr_assert_eq(a.status, 0, "%s", a.err);
    cr_assert_eq(b.status, 0, "%s", b.err);
    cr_expect_str_eq(a.out, b.out);
    cr_expect(strstr(b.err, "2 rows of") && strstr(b.err, "(line 4 repeats line 2): each shape is tuned once"), "%s",
              b.err);
    cr_expect_eq(a.err[0], '\0', "%s", a.err);
    th_run_free(&a), th_run_free(&b);
    unlink(once), unlink(thrice);
}

/* The best tiling's VMEM limit is part of the table a serving stack reads:
 * a best that needs more than the chip's default scoped limit is marked,
 * and the call must set it (rmsnorm 8192 x 8192 bf16 on v6e: br=512 takes
 * 33 MiB over the 32 MiB default; run refuses it without --vmem-limit). */
Test(tune, the_table_carries_the_limit_the_best_needs)
{
    char shapes[64];
    th_temp_file(shapes, "rows,d\n8192,8192\n1024,4096\n");
    th_run t = TH_RUN("tune", "rmsnorm", "--shapes", shapes, "--set", "dtype=bf16", "--chip", "v6e");
    cr_assert_eq(t.status, 0, "%s", t.err);
    cr_expect(strstr(t.out, "33.0 MiB*") && strstr(t.out, "must set it (vmem_limit_bytes)"), "%s", t.out);
    th_run_free(&t);
    t = TH_RUN("tune", "rmsnorm", "--shapes", shapes, "--set", "dtype=bf16", "--chip", "v6e", "--json");
    cr_assert_eq(t.status, 0, "%s", t.err);
    json_t *j = load_json(t.out), *rows = json_object_get(j, "shapes");
    cr_assert_eq(json_array_size(rows), 2);
    cr_expect(json_is_true(json_object_get(json_array_get(rows, 0), "raised_limit")));
    cr_expect_eq(json_integer_value(json_object_get(json_array_get(rows, 0), "vmem_limit_bytes")), 33 << 20);
    cr_expect(json_is_false(json_object_get(json_array_get(rows, 1), "raised_limit")));
    json_decref(j);
    th_run_free(&t);
    unlink(shapes);
}
