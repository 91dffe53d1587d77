/* tests/test_cli_calibrate.c: `tilesim calibrate MEASURED.csv` (issue 22).
 *
 * Measurements are made here from a known what-if chip (truth.chip) with a
 * deterministic noise of up to 0.5 %, as a user's TPU would give them; the
 * fit starts from the v5e preset and must find the truth's figures within
 * 5 %, write a chip file that --chip-file takes, and refuse what the rows
 * cannot determine, by name.
 */
#include <criterion/criterion.h>
#include <sys/stat.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>

#include "run.h"

static const char *const truth_text = "base = v5e\nname = truth\nbf16_tflops = 170\nhbm_gbps = 700\n"
                                      "step_overhead_us = 0.6\ndma_latency_us = 1.5\n";

/* kernel and --set values of each measured configuration: compute-bound
 * matmuls, HBM-bound norms, step-bound small blocks, latency-bound thin ones */
static const char *const configs[][2] = {
    {"matmul", "M=4096 N=4096 K=4096 bm=512 bn=512 bk=512 dtype=bf16"},
    {"matmul", "M=2048 N=2048 K=2048 bm=256 bn=256 bk=256 dtype=bf16"},
    {"matmul", "M=1024 N=1024 K=1024 bm=128 bn=128 bk=128 dtype=bf16"},
    {"matmul", "M=512 N=512 K=512 bm=128 bn=128 bk=128 dtype=f32"},
    {"matmul", "M=256 N=8192 K=8192 bm=256 bn=512 bk=512 dtype=bf16"},
    {"matmul", "M=8 N=4096 K=4096 bm=8 bn=512 bk=512 dtype=bf16"},
    {"rmsnorm", "rows=8192 d=2048 br=256 dtype=bf16"},
    {"rmsnorm", "rows=8192 d=2048 br=8 dtype=f32"},
    {"add", "rows=4096 cols=4096 br=256 bc=512 dtype=f32"},
    {"add", "rows=1024 cols=1024 br=8 bc=128 dtype=f32"},
    {"layernorm", "rows=4096 d=1024 br=64 dtype=f32"},
    {"softmax", "rows=1024 cols=8192 br=64 bc=512 dtype=f32"},
    {"add", "rows=4096 cols=4096 br=512 bc=128 dtype=f32"}, /* HBM-bound on runs of 8 512-byte rows (a tile) */
};
#define N_CONFIGS (int)(sizeof configs / sizeof *configs)

/* MEASURED.csv of the first n configurations, timed on a truth chip whose base is chip */
static void measure_chip(char *csv, char *truth, int n, const char *truth_chip, const char *chip)
{
    th_temp_file(truth, truth_chip);
    char text[8192] = "# measured on a TPU\nkernel,chip,time_us,params\n";
    for (int i = 0; i < n; i++) {
        double noise = 1 + 0.005 * ((i % 3) - 1); /* -0.5 %, 0, +0.5 % */
        snprintf(text + strlen(text), sizeof text - strlen(text), "%s,%s,%.6f,%s\n", configs[i][0], chip,
                 th_predicted_s(configs[i][0], configs[i][1], truth) * 1e6 * noise, configs[i][1]);
    }
    th_temp_file(csv, text);
}

static void measure_on(char *csv, char *truth, int n, const char *truth_chip)
{
    measure_chip(csv, truth, n, truth_chip, "v5e");
}

static void measure(char *csv, char *truth, int n) { measure_on(csv, truth, n, truth_text); }

/* key = value of a chip file's text, or NAN */
static double chip_value(const char *text, const char *key)
{
    for (const char *p = strstr(text, key); p; p = strstr(p + 1, key))
        if ((p == text || p[-1] == '\n') && p[strlen(key)] == ' ') return atof(strchr(p, '=') + 1);
    return NAN;
}

Test(calibrate, recovers_known_figures_within_5_percent_and_writes_a_chip_file)
{
    char csv[64], truth[64], out[64];
    measure(csv, truth, N_CONFIGS);
    th_temp_file(out, "");
    th_run r = TH_RUN("calibrate", csv, "--chip", "v5e", "--fit", "bf16_tflops,hbm_gbps,step_overhead_us,dma_latency_us",
                      "-o", out);
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_assert(strstr(r.out, "RMS log error"), "%s", r.out);
    char *text = th_read_file(out);
    static const struct {
        const char *key;
        double want;
    } figures[] = {{"bf16_tflops", 170}, {"hbm_gbps", 700}, {"step_overhead_us", 0.6}, {"dma_latency_us", 1.5}};
    for (size_t i = 0; i < sizeof figures / sizeof *figures; i++) {
        double got = chip_value(text, figures[i].key);
        cr_assert(fabs(got / figures[i].want - 1) < 0.05, "%s: fitted %g, truth %g\n%s", figures[i].key, got,
                  figures[i].want, r.out);
    }
    cr_assert(strstr(text, "base = v5e"), "%s", text);
    /* the file is a chip: run takes it, and predicts within 1 % of the measurement */
    double fitted = th_predicted_s(configs[0][0], configs[0][1], out);
    double measured = th_predicted_s(configs[0][0], configs[0][1], truth);
    cr_assert(fabs(fitted / measured - 1) < 0.01, "fitted chip %g s, truth %g s", fitted, measured);
    free(text);
    th_run_free(&r);
    unlink(csv), unlink(truth), unlink(out);
}

/* v6e's preset has no fixed step cost (OpenXLA's model); a chip that has
 * one is still found from it. */
Test(calibrate, a_figure_the_base_sets_to_zero_is_still_fitted)
{
    char csv[64], truth[64], out[64];
    measure_chip(csv, truth, N_CONFIGS, "base = v6e\nname = truth\nstep_overhead_us = 0.4\n", "v6e");
    th_temp_file(out, "");
    th_run r = TH_RUN("calibrate", csv, "--chip", "v6e", "--fit", "step_overhead_us,hbm_gbps", "-o", out);
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    char *text = th_read_file(out);
    double got = chip_value(text, "step_overhead_us");
    cr_assert(fabs(got / 0.4 - 1) < 0.05, "step_overhead_us: fitted %g, truth 0.4\n%s", got, r.out);
    free(text);
    th_run_free(&r);
    unlink(csv), unlink(truth), unlink(out);
}

Test(calibrate, a_figure_no_row_depends_on_is_refused_by_name)
{
    char csv[64], truth[64];
    measure(csv, truth, 6); /* matmuls only: the VPU rate bounds none of them */
    th_run r = TH_RUN("calibrate", csv, "--chip", "v5e", "--fit", "bf16_tflops,vpu_tflops,hbm_gbps");
    cr_assert_eq(r.status, 2, "%s%s", r.out, r.err);
    cr_assert(strstr(r.err, "cannot determine vpu_tflops"), "%s", r.err);
    th_run_free(&r);
    r = TH_RUN("calibrate", csv, "--chip", "v5e", "--fit", "bf16_tflops,hbm_gbps,step_overhead_us,dma_latency_us,"
                                                          "vpu_tflops");
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "vpu_tflops"), "%s", r.err);
    th_run_free(&r);
    unlink(csv), unlink(truth);
}

Test(calibrate, fewer_rows_than_figures_are_refused)
{
    char csv[64], truth[64];
    measure(csv, truth, 2);
    th_run r = TH_RUN("calibrate", csv, "--chip", "v5e", "--fit", "bf16_tflops,hbm_gbps,step_overhead_us");
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "2 measurements cannot determine 3 figures"), "%s", r.err);
    th_run_free(&r);
    unlink(csv), unlink(truth);
}

/* -o may not name the measurements: the chip file would replace them (it did, exit 0). */
Test(calibrate, output_into_the_measurements_file_is_refused)
{
    char csv[64], truth[64];
    measure(csv, truth, 4);
    struct stat before, after;
    cr_assert_eq(stat(csv, &before), 0);
    th_run r = TH_RUN("calibrate", csv, "--chip", "v5e", "--fit", "hbm_gbps", "-o", csv);
    cr_assert_eq(r.status, 2, "%s", r.err);
    cr_expect(strstr(r.err, "is the measurements file"), "%s", r.err);
    th_run_free(&r);
    cr_assert_eq(stat(csv, &after), 0);
    cr_expect_eq(after.st_size, before.st_size, "the measurements are as they were");
    cr_expect_eq(after.st_mtime, before.st_mtime);
    unlink(csv), unlink(truth);
}

Test(calibrate, bad_rows_are_errors_naming_the_line)
{
    static const struct {
        const char *text, *words;
    } cases[] = {
        {"kernel,chip,time_us,params\nconv,v5e,10,M=1\n", ":2: unknown kernel 'conv'"},
        {"kernel,chip,time_us,params\n# c\nmatmul,v5e,10,M=1 bm=x\n", ":3: params:"},
        {"kernel,chip,time_us,params\nmatmul,v5e,-4,M=512\n", ":2: time_us '-4' is not a measured time"},
        {"kernel,chip,time_us,params\nmatmul,v5e,1e-300,M=512\n", ":2: time_us '1e-300' is not a measured time"},
        {"kernel,chip,time_us,params\nmatmul,v5e,0x10,M=512\n", ":2: time_us '0x10'"},
        /* a row the simulator refuses is that row's error, with or without --fit (it was blamed on a figure) */
        {"kernel,chip,time_us,params\nmatmul,v5e,10,M=512\nmatmul,v5e,10,M=512 K=0\nmatmul,v5e,20,M=1024\n",
         "line 3: matmul: the simulator refuses this configuration"},
        {"kernel,chip,time_us,params\nmatmul,v5e,nan,M=512\n", ":2: time_us 'nan'"},
        {"kernel,chip,time_us,params\nmatmul,v6e,10,M=512\n", ":2: measured on 'v6e', but the base chip is 'v5e'"},
        {"kernel,chip,time_us\nmatmul,v5e,10\n", ":1: the header has no column 'params'"},
        {"kernel,chip,time_us,params\nmatmul,v5e,10,M=512,N=512\n", ":2: 5 fields where the header has 4"},
        {"kernel,chip,time_us,params\n", "no measurements"},
        {"kernel,chip,time_us,params\nmatmul,v5e,10,\"M=512 N=512\n", ":2: a quoted field has no closing quote"},
        {"kernel,chip,time_us,params\nmatmul,v5e,10,\"M=512\"x\n", ":2: a quoted field has no closing quote"},
        /* the second value won quietly */
        {"kernel,chip,time_us,params\nmatmul,v5e,10,M=512 M=1024\n", ":2: params: 'M' given twice"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char csv[64];
        th_temp_file(csv, cases[i].text);
        th_run r = TH_RUN("calibrate", csv, "--chip", "v5e");
        cr_assert_eq(r.status, 2, "case %zu: %s", i, r.err);
        cr_assert(strstr(r.err, cases[i].words), "case %zu: '%s' missing from: %s", i, cases[i].words, r.err);
        th_run_free(&r);
        unlink(csv);
    }
    th_run r = TH_RUN("calibrate", "/nonexistent.csv");
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "/nonexistent.csv"), "%s", r.err);
    th_run_free(&r);
    r = TH_RUN("calibrate", "x.csv", "--fit", "speed");
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "--fit: 'speed' is not a figure"), "%s", r.err);
    th_run_free(&r);
}

/* A chip file as the base: rows measured on its preset are its rows, and
 * the file written is that chip with the fit, its other figures kept (they
 * were dropped, and the file said base = custom, which no run could load). */
Test(calibrate, a_chip_file_base_keeps_its_figures_in_the_file_written)
{
    char csv[64], truth[64], base[64], out[64], again[64];
    measure(csv, truth, N_CONFIGS);
    /* the truth's step figures, the preset's throughputs; no name: 'custom' */
    th_temp_file(base, "base = v5e\ndma_latency_us = 1.5\nstep_overhead_us = 0.6\n");
    th_temp_file(out, "");
    th_run r = TH_RUN("calibrate", csv, "--chip-file", base, "--fit", "bf16_tflops,hbm_gbps", "-o", out);
    cr_assert_eq(r.status, 0, "rows on v5e fit a chip file based on v5e: %s%s", r.out, r.err);
    char *text = th_read_file(out);
    cr_expect(strstr(text, "base = v5e"), "%s", text);
    cr_expect(fabs(chip_value(text, "dma_latency_us") - 1.5) < 1e-9, "the base's own figure is kept:\n%s", text);
    cr_expect(fabs(chip_value(text, "bf16_tflops") / 170 - 1) < 0.05, "%s\n%s", text, r.out);
    th_run_free(&r);
    /* the file written is a base again, and keeps the first fit */
    th_temp_file(again, "");
    r = TH_RUN("calibrate", csv, "--chip-file", out, "--fit", "hbm_gbps", "-o", again);
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    char *text2 = th_read_file(again);
    cr_expect(fabs(chip_value(text2, "dma_latency_us") - 1.5) < 1e-9, "%s", text2);
    cr_expect(fabs(chip_value(text2, "bf16_tflops") - chip_value(text, "bf16_tflops")) < 1e-6, "%s", text2);
    free(text), free(text2);
    th_run_free(&r);
    unlink(csv), unlink(truth), unlink(base), unlink(out), unlink(again);
}

/* The step figures of issue 22: a truth chip with a slower DMA issue, a
 * slower MXU fill (dma_row_bytes binds only runs shorter than an (8, 128)
 * tile of HBM, which no legal block of these kernels makes); the fit from v5e finds
 * them within 5 % (thin matmul blocks and narrow adds bound them). */
Test(calibrate, recovers_the_step_figures)
{
    char csv[64], truth[64], out[64];
    measure_on(csv, truth, N_CONFIGS, "base = v5e\nname = truth\ndma_issue_us = 0.05\n"
                                      "mxu_fill_cycles = 300\n");
    th_temp_file(out, "");
    th_run r = TH_RUN("calibrate", csv, "--chip", "v5e", "--fit", "dma_issue_us,mxu_fill_cycles", "-o", out);
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    char *text = th_read_file(out);
    static const struct {
        const char *key;
        double want;
    } figures[] = {{"dma_issue_us", 0.05}, {"mxu_fill_cycles", 300}};
    for (size_t i = 0; i < sizeof figures / sizeof *figures; i++) {
        double got = chip_value(text, figures[i].key);
        cr_assert(fabs(got / figures[i].want - 1) < 0.05, "%s: fitted %g, truth %g\n%s", figures[i].key, got,
                  figures[i].want, r.out);
    }
    free(text);
    th_run_free(&r);
    unlink(csv), unlink(truth), unlink(out);
}

/* Without --fit every figure is a candidate; one the rows cannot determine
 * (no legal block of these kernels makes a run shorter than an HBM tile,
 * so none depends on dma_row_bytes) keeps the base's value and says so,
 * where naming it in --fit is refused: the default never fails on it. */
Test(calibrate, the_default_fit_keeps_what_the_rows_cannot_determine)
{
    char csv[64], truth[64], out[64];
    measure(csv, truth, N_CONFIGS);
    th_temp_file(out, "");
    th_run r = TH_RUN("calibrate", csv, "--chip", "v5e", "-o", out);
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_assert(strstr(r.out, "dma_row_bytes") && strstr(r.out, "kept"), "%s", r.out);
    char *text = th_read_file(out);
    cr_assert(!strstr(text, "dma_row_bytes"), "a kept figure is not written: the base's stays\n%s", text);
    cr_assert(strstr(text, "hbm_gbps"), "%s", text);
    free(text);
    th_run_free(&r);
    r = TH_RUN("calibrate", csv, "--chip", "v5e", "--fit", "hbm_gbps,dma_row_bytes");
    cr_assert_eq(r.status, 2, "%s%s", r.out, r.err);
    cr_assert(strstr(r.err, "cannot determine dma_row_bytes"), "%s", r.err);
    th_run_free(&r);
    unlink(csv), unlink(truth), unlink(out);
}

/* The data-center network's figures (rule M14) from multislice runs of the
 * hierarchical all-reduce: small ones bound by DCN latency, big ones by a
 * host's DCN bandwidth; the truth chip's NICs are slower and farther than
 * v5e's. */
Test(calibrate, recovers_the_dcn_figures_from_multislice_runs, .timeout = 240)
{
    static const char *const mesh_configs[] = {
        "slices=2 per_slice=2 rows=64 cols=128",     "slices=4 per_slice=2 rows=64 cols=128",
        "slices=2 per_slice=4 rows=2048 cols=1024", "slices=4 per_slice=2 rows=1024 cols=1024",
        "slices=2 per_slice=2 rows=512 cols=512",
    };
    char csv[64], truth[64], out[64];
    th_temp_file(truth, "base = v5e\nname = truth\ndcn_gbps = 10\ndcn_latency_us = 25\n");
    char text[4096] = "kernel,chip,time_us,params\n";
    for (int i = 0; i < 5; i++) {
        double noise = 1 + 0.005 * ((i % 3) - 1);
        snprintf(text + strlen(text), sizeof text - strlen(text), "hier_allreduce,v5e,%.6f,%s\n",
                 th_predicted_s("hier_allreduce", mesh_configs[i], truth) * 1e6 * noise, mesh_configs[i]);
    }
    th_temp_file(csv, text);
    th_temp_file(out, "");
    th_run r = TH_RUN("calibrate", csv, "--chip", "v5e", "--fit", "dcn_gbps,dcn_latency_us", "-o", out);
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    char *chip = th_read_file(out);
    double gbps = chip_value(chip, "dcn_gbps"), lat = chip_value(chip, "dcn_latency_us");
    cr_expect(fabs(gbps / 10 - 1) < 0.05, "dcn_gbps: fitted %g, truth 10\n%s", gbps, r.out);
    cr_expect(fabs(lat / 25 - 1) < 0.05, "dcn_latency_us: fitted %g, truth 25\n%s", lat, r.out);
    free(chip);
    th_run_free(&r);
    /* single-device rows say nothing about the network: named, refused */
    char csv2[64], truth2[64];
    measure(csv2, truth2, N_CONFIGS);
    r = TH_RUN("calibrate", csv2, "--chip", "v5e", "--fit", "hbm_gbps,dcn_gbps");
    cr_expect_eq(r.status, 2, "%s%s", r.out, r.err);
    cr_expect(strstr(r.err, "cannot determine dcn_gbps"), "%s", r.err);
    th_run_free(&r);
    unlink(csv), unlink(truth), unlink(out), unlink(csv2), unlink(truth2);
}

/* Fields in double quotes, as a spreadsheet or a careful hand writes them
 * (RFC 4180: "" is a quote inside), are their values without the quotes:
 * the row is the same measurement as unquoted, with the same fit. */
Test(calibrate, quoted_fields_are_read_as_a_spreadsheet_writes_them)
{
    char plain[64], quoted[64];
    th_temp_file(plain, "kernel,chip,time_us,params\nmatmul,v5e,80,M=1024 N=1024 K=1024\n");
    /* as a spreadsheet saves it: a UTF-8 byte order mark first, CRLF line ends */
    th_temp_file(quoted, "\xEF\xBB\xBF\"kernel\",\"chip\",\"time_us\",\"params\"\r\n"
                         "\"matmul\", v5e ,\"80\",\"M=1024 N=1024 K=1024\"\r\n");
    th_run a = TH_RUN("calibrate", plain, "--chip", "v5e", "--fit", "hbm_gbps");
    th_run b = TH_RUN("calibrate", quoted, "--chip", "v5e", "--fit", "hbm_gbps");
    cr_assert_eq(a.status, 0, "%s", a.err);
    cr_assert_eq(b.status, 0, "%s", b.err);
    cr_expect_str_eq(a.out, b.out);
    /* each configuration whole, not cut at 44 characters before its block sizes end */
    cr_expect(strstr(a.out, "matmul M=1024 N=1024 K=1024 bm=256 bn=256 bk=256 dtype=f32 "), "%s", a.out);
    th_run_free(&a), th_run_free(&b);
    unlink(plain), unlink(quoted);
}

/* v6e has no fixed step cost (0, OpenXLA's model); a chip of yours may.
 * The default fit takes the fixed costs at 0 too: it recovers a 0.3 us
 * step and a slower HBM without --fit, where it had left the step out and
 * bent the MXU peak past v6e's to make up for it. */
Test(calibrate, the_default_fit_recovers_a_step_cost_the_base_has_at_zero)
{
    char csv[64], truth[64], out[64];
    measure_chip(csv, truth, N_CONFIGS, "base = v6e\nname = truth\nstep_overhead_us = 0.3\nhbm_gbps = 1200\n", "v6e");
    th_temp_file(out, "");
    th_run r = TH_RUN("calibrate", csv, "--chip", "v6e", "-o", out);
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    char *text = th_read_file(out);
    double step = chip_value(text, "step_overhead_us"), hbm = chip_value(text, "hbm_gbps");
    cr_expect(fabs(step / 0.3 - 1) < 0.05, "step_overhead_us %g\n%s", step, r.out);
    cr_expect(fabs(hbm / 1200 - 1) < 0.05, "hbm_gbps %g\n%s", hbm, r.out);
    free(text);
    th_run_free(&r);
    unlink(csv), unlink(truth), unlink(out);
}
