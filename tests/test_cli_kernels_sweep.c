/* tests/test_cli_kernels_sweep.c: the `tilesim` verbs over any kernel
 * definition (issue 10), continued from test_cli_kernels.c: sweep KERNEL
 * (text, CSV, JSON, SVG) and the public sweep printers it shares, explain
 * KERNEL; the messages for bad kernels, --set and --vary and the help of
 * every verb; and that the older `sweep matmul M N K` and `explain matmul
 * ...` keep their output format (documented and scripted against).
 *
 * The command is the tilesim of this build directory (BUILD/tilesim next to
 * BUILD/tests/), the plugin BUILD/examples/plugin/rmsnorm.so (tests/run.h). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../examples/kernels/registry.h"
#include "../sim/tilesim.h"
#include "run.h"

#define STARTS(text, lit) (strncmp((text), (lit), strlen(lit)) == 0)

/* ---- sweep KERNEL ------------------------------------------------------------------------ */

static void expect_ranked(json_t *doc)
{
    json_t *legal = json_object_get(doc, "legal"), *rej = json_object_get(doc, "rejected");
    cr_assert(json_is_array(legal) && json_is_array(rej));
    cr_expect_eq((double)json_array_size(legal), th_json_num(doc, "n_legal"));
    cr_expect_eq((double)json_array_size(rej), th_json_num(doc, "n_rejected"));
    for (size_t i = 1; i < json_array_size(legal); i++)
        cr_expect(th_json_num(json_array_get(legal, i - 1), "time_s") <= th_json_num(json_array_get(legal, i), "time_s"),
                  "ranked fastest first");
    for (size_t i = 0; i < json_array_size(rej); i++) {
        json_t *x = json_array_get(rej, i);
        cr_expect(strlen(th_json_str(x, "reason")) > 10, "a rejected configuration has its reason");
        cr_expect(json_is_object(json_object_get(x, "params")));
    }
}

Test(cli_kernels, sweep_kernel_json_ranks_and_lists_rejected)
{
    th_run r = TH_RUN("sweep", "rmsnorm", "--vary", "br=8,12,16,32,64,128,256,512,1024", "--set", "dtype=f32", "--json");
    cr_assert_eq(r.status, 0, "%s", r.err);
    json_t *doc = th_json_parse(r.out, "sweep --json");
    cr_expect_str_eq(th_json_str(doc, "kernel"), "rmsnorm");
    cr_expect_str_eq(th_json_str(doc, "chip"), "v5e");
    cr_expect_eq(th_json_num(doc, "evaluated"), 9);
    cr_expect_eq(th_json_num(doc, "n_rejected"), 1, "br=12 breaks the (8, 128) rule");
    json_t *rej = json_array_get(json_object_get(doc, "rejected"), 0);
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(rej, "params"), "br")), 12);
    cr_expect(strstr(th_json_str(rej, "reason"), "T1"), "%s", th_json_str(rej, "reason"));
    expect_ranked(doc);
    json_decref(doc);
    th_run_free(&r);
}

/* A C program gets the command's JSON from pl_kernel_sweep and one call of
 * the public printer, byte for byte. */
Test(cli_kernels, public_json_printer_prints_what_the_command_prints)
{
    const pl_kernel_def *d = ex_kernel_find("rmsnorm");
    cr_assert(d);
    static const int64_t brs[] = {8, 12, 64, 256};
    int64_t v[4 * PL_KDEF_MAX_PARAMS];
    char labels[4][256];
    const char *lab[4];
    int br = pl_kernel_param_index(d, "br");
    for (int i = 0; i < 4; i++) {
        pl_kernel_defaults(d, v + i * d->n_params);
        v[i * d->n_params + br] = brs[i];
        lab[i] = pl_kernel_format(d, v + i * d->n_params, labels[i], sizeof labels[i]);
    }
    pl_report *reps = calloc(4, sizeof *reps);
    pl_options opt = {.cost_only = 1};
    cr_assert_eq(pl_kernel_sweep(d, 4, v, &opt, NULL, reps), PL_OK);
    /* the command adds its simulated advice to the fastest row (br=256), as run does */
    cr_assert(reps[3].time_s < reps[0].time_s && reps[3].time_s < reps[2].time_s);
    pl_kernel_advise(d, v + 3 * d->n_params, &opt, &reps[3]);
    cr_assert(strstr(reps[3].bound_msg, "; simulated: "), "%s", reps[3].bound_msg);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert_eq(pl_sweep_print_json(f, 4, reps, lab), PL_OK);
    fclose(f);
    th_run r = TH_RUN("sweep", "rmsnorm", "--vary", "br=8,12,64,256", "--set", "dtype=f32", "--json");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect_str_eq(r.out, text);
    int order[4];
    cr_expect_eq(pl_sweep_rank(4, reps, order), 3, "br=12 is rejected");
    cr_expect_eq(order[3], 1, "the rejected one comes last");
    free(text), free(reps);
    th_run_free(&r);
}

Test(cli_kernels, sweep_kernel_text_csv_and_svg)
{
    char svg[] = "/tmp/tck_roof_XXXXXX";
    close(mkstemp(svg));
    th_run r = TH_RUN("sweep", "add", "--svg", svg, "--top", "3");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "configuration") && strstr(r.out, "HBM GB/s") && strstr(r.out, "more legal"), "%s", r.out);
    char *plot = th_read_file(svg);
    cr_expect(plot && strstr(plot, "<svg") && strstr(plot, "roofline: add"), "the roofline names the kernel");
    free(plot);
    unlink(svg);
    th_run_free(&r);
    r = TH_RUN("sweep", "add", "--csv");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(STARTS(r.out, "rank,config,status,"), "%s", r.out);
    th_run_free(&r);
}

Test(cli_kernels, sweep_of_the_plugin)
{
    th_need_plugin();
    th_run r = TH_RUN("sweep", th_plugin(), "--json");
    cr_assert_eq(r.status, 0, "%s", r.err);
    json_t *doc = th_json_parse(r.out, "plugin sweep");
    cr_expect_gt(th_json_num(doc, "n_legal"), 0);
    expect_ranked(doc);
    json_decref(doc);
    th_run_free(&r);
}

/* ---- explain KERNEL -------------------------------------------------------------------- */

Test(cli_kernels, explain_any_kernel_narrates_its_operands)
{
    th_run r = TH_RUN("explain", "rmsnorm", "--set", "rows=64", "--set", "br=16");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "grid (4) = 4 steps"), "%s", r.out);
    cr_expect(strstr(r.out, "copied HBM -> VMEM") && strstr(r.out, "written back to HBM"), "%s", r.out);
    cr_expect(strstr(r.out, "gamma"), "every operand by its name: %s", r.out);
    cr_expect(!strstr(r.out, "acc += x @ y"), "no matmul narration for a norm");
    th_run_free(&r);
    r = TH_RUN("explain", "rmsnorm", "--set", "br=8", "--set", "rows=65536");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "at most 512"), "%s", r.err);
    th_run_free(&r);
}

/* ---- bad command lines ------------------------------------------------------------------ */

typedef struct bad {
    const char *args[10];
    const char *says;
} bad;

Test(cli_kernels, bad_command_lines_name_what_and_exit_2)
{
    static const bad cases[] = {
        {{"run"}, "missing the kernel"},
        {{"run", "conv"}, "unknown kernel 'conv'; the kernels are matmul"},
        {{"verify", "nope"}, "unknown kernel 'nope'"},
        {{"explain", "nope"}, "unknown kernel 'nope'"},
        {{"run", "rmsnorm", "--set", "bogus=1"}, "no parameter 'bogus' (its parameters: rows, d, br"},
        {{"run", "rmsnorm", "--set", "br=x"}, "--set br=x: parameter 'br'"},
        {{"run", "rmsnorm", "--set", "br"}, "want name=value"},
        {{"run", "rmsnorm", "--frob"}, "unknown option '--frob'; see 'tilesim run --help'"},
        {{"run", "rmsnorm", "--se", "br=8"}, "unknown option '--se'"},
        {{"verify", "rmsnorm", "--heat=x.svg"}, "unknown option '--heat'"},
        {{"run", "rmsnorm", "--seed"}, "--seed: missing value"},
        {{"run", "rmsnorm", "--json=1"}, "--json: takes no value"},
        {{"run", "rmsnorm", "--vary", "br=8"}, "'--vary' is not an option of run"},
        {{"run", "rmsnorm", "extra"}, "unexpected argument 'extra'"},
        {{"sweep", "rmsnorm", "--vary", "br=8,x"}, "--vary br=8,x: parameter 'br'"},
        {{"sweep", "rmsnorm", "--vary", "zz=8"}, "--vary zz=8: kernel 'rmsnorm' has no parameter 'zz'"},
        {{"sweep", "rmsnorm", "--vary", "br=8,8"}, "'8' appears twice"},
        {{"sweep", "rmsnorm", "--vary", "br="}, "want NAME=V1,V2"},
        {{"sweep", "rmsnorm", "--vary", "br=8", "--set", "br=16"}, "given twice"},
        /* a parameter set twice took the last value quietly */
        {{"run", "rmsnorm", "--set", "br=8", "--set", "br=16"}, "--set br=8 and --set br=16: 'br' given twice"},
        {{"sweep", "rmsnorm", "--csv", "--json"}, "exclude each other"},
        {{"sweep", "rmsnorm", "--heatmap", "x"}, "'--heatmap' is not an option of sweep"},
        {{"run", "rmsnorm", "--chip", "v9"}, "unknown chip 'v9'"},
        {{"list", "a", "b"}, "unexpected argument 'b'"},
        {{"verify", "rmsnorm", "--output", "9"}, "--output: '9'"},
        /* the matmul form, now read by getopt_long: messages as before, no abbreviated options */
        {{"sweep", "matmul", "-5", "256", "256"}, "M: '-5' is not positive"},
        {{"sweep", "matmul", "256", "256", "256", "--thr", "2"}, "unknown option '--thr'"},
        {{"sweep", "matmul", "256", "256", "256", "--bm", "-128"}, "--bm: '-128' is not positive"},
        {{"explain", "matmul", "--", "256", "256", "256", "128", "128"}, "missing BK"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        th_run r = th_run_tilesim(cases[i].args);
        cr_expect_eq(r.status, 2, "case %zu (%s ...): exit %d: %s", i, cases[i].args[0], r.status, r.err);
        cr_expect(strstr(r.err, cases[i].says), "case %zu: stderr lacks \"%s\":\n%s", i, cases[i].says, r.err);
        cr_expect(strstr(r.err, "usage: tilesim"), "case %zu: no usage hint: %s", i, r.err);
        th_run_free(&r);
    }
}

Test(cli_kernels, every_verb_has_help_listing_its_options)
{
    static const char *const verbs[][3] = {
        {"list", "--help"}, {"run", "--help"}, {"verify", "-h"}, {"sweep", "--help"}, {"explain", "--help"}};
    static const char *const wants[] = {"usage: tilesim list", "--cost-only", "--heatmap FILE.svg", "--vary",
                                        "--set"};
    for (size_t i = 0; i < sizeof verbs / sizeof *verbs; i++) {
        th_run r = th_run_tilesim(verbs[i]);
        cr_expect_eq(r.status, 0, "%s --help: %s", verbs[i][0], r.err);
        cr_expect(strstr(r.out, wants[i]), "%s --help lacks %s:\n%s", verbs[i][0], wants[i], r.out);
        th_run_free(&r);
    }
}

/* ---- the matmul commands keep their format ------------------------------------------------- */

/* `sweep matmul M N K --json` is scripted against: its members and their
 * order stay those of release 0.5. */
Test(cli_kernels, old_matmul_sweep_json_keeps_its_members)
{
    th_run r = TH_RUN("sweep", "matmul", "256", "256", "256", "--bm", "128,256", "--bn", "128", "--bk", "128,100", "--json");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(STARTS(r.out, "{\"kernel\":\"matmul\",\"m\":256,\"n\":256,\"k\":256,\"dtype\":\"f32\",\"chip\":\"v5e\","
                            "\"vmem_limit\":"), "%s", r.out);
    cr_expect(strstr(r.out, "\n{\"bm\":128,\"bn\":128,\"bk\":128,\"ai\":64,\"vmem_bytes\":"), "%s", r.out);
    cr_expect(strstr(r.out, "\"rejected\":[\n{\"bm\":128,\"bn\":128,\"bk\":100,\"steps\":"), "%s", r.out);
    json_t *doc = th_json_parse(r.out, "sweep matmul --json");
    cr_expect_eq(th_json_num(doc, "n_legal"), 2);
    json_decref(doc);
    th_run_free(&r);
    r = TH_RUN("sweep", "matmul", "256", "256", "256", "--bm", "128", "--bn", "128", "--bk", "128", "--csv");
    cr_expect(STARTS(r.out, "bm,bn,bk,status,ai,vmem_bytes,fits,steps,time_s,tflops,peak_pct,bound,reason\n"
                            "128,128,128,ok,64,"), "%s", r.out);
    th_run_free(&r);
    r = TH_RUN("explain", "matmul", "256", "256", "256", "128", "128", "128");
    cr_expect_eq(r.status, 0);
    cr_expect(STARTS(r.out, "explain: matmul C (256 x 256) = A (256 x 256) @ B (256 x 256), f32 on v5e\n"), "%s", r.out);
    cr_expect(strstr(r.out, "kernel: acc = 0; acc += x @ y"), "%s", r.out);
    th_run_free(&r);
}

/* A size near 2^63 is a usage error, not a crash or a negative grid: the
 * definitions' ceiling division must not overflow (G1; the paged table). */
Test(cli_kernels, sizes_near_int64_max_are_refused_by_name)
{
    th_run r = TH_RUN("run", "paged_attention", "--set", "max_len=9223372036854775000", "--set", "page=4096", "--cost-only");
    cr_expect_eq(r.status, 2, "%s", r.err);
    cr_expect(strstr(r.err, "block table"), "%s", r.err);
    th_run_free(&r);
    r = TH_RUN("run", "add", "--set", "rows=9223372036854775807", "--cost-only");
    cr_expect_eq(r.status, 2, "%s", r.err);
    cr_expect(!strstr(r.err, "has size -"), "a negative grid axis: %s", r.err);
    th_run_free(&r);
}

/* An error names the word the user typed: the unknown letter of a short
 * option cluster, the NAME=... of a --vary whose name is not a parameter. */
Test(cli_kernels, errors_name_the_word_typed)
{
    th_run r = TH_RUN("run", "-xy", "rmsnorm");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "unknown option '-x'"), "%s", r.err);
    th_run_free(&r);
    r = TH_RUN("sweep", "rmsnorm", "--vary", "=1");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "'=1'") && !strstr(r.err, "'=0'"), "%s", r.err);
    th_run_free(&r);
}

/* ---- block sizes that divide a dimension (pl_kernel_param.divides) ------------------------ */

/* quant_matmul's bb, bo and bi are the blocks of batch, out and in: a sweep
 * tries every multiple of 128 that divides them, as the hardware autotuner
 * does, so 1024 x 1536 x 1280 has 4 x 6 x 4 = 96 configurations, among
 * them the whole-dimension blocks. */
Test(cli_kernels, sweep_tries_every_block_that_divides_its_dimension)
{
    th_run r = TH_RUN("sweep", "quant_matmul", "--set", "batch=1024", "--set", "out=1536", "--set", "in=1280", "--set",
                      "wdtype=i8", "--chip", "v6e", "--json");
    cr_assert_eq(r.status, 0, "%s", r.err);
    json_t *doc = th_json_parse(r.out, "sweep --json");
    cr_expect_eq(th_json_num(doc, "evaluated"), 4 * 6 * 4, "bb 128..1024 (4), bo 128,256,384,512,768,1536, bi "
                                                            "128,256,640,1280");
    int whole = 0, odd = 0;
    json_t *legal = json_object_get(doc, "legal");
    for (size_t i = 0; i < json_array_size(legal); i++) {
        json_t *p = json_object_get(json_array_get(legal, i), "params");
        json_int_t bb = json_integer_value(json_object_get(p, "bb")), bo = json_integer_value(json_object_get(p, "bo")),
                   bi = json_integer_value(json_object_get(p, "bi"));
        cr_expect(1024 % bb == 0 && bb % 128 == 0 && 1536 % bo == 0 && bo % 128 == 0 && 1280 % bi == 0 && bi % 128 == 0,
                  "bb %lld bo %lld bi %lld", (long long)bb, (long long)bo, (long long)bi);
        whole |= bb == 1024 && bo == 1536 && bi == 1280;
        odd |= bo == 384 && bi == 640;
    }
    cr_expect(whole && odd, "the whole dimensions and the divisors that are no powers of two are tried");
    json_decref(doc);
    th_run_free(&r);
    /* a swept dimension keeps the definition's short list for its blocks */
    r = TH_RUN("sweep", "quant_matmul", "--vary", "out=1024,2048", "--set", "wdtype=i8", "--chip", "v6e", "--csv");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "bo=512") && !strstr(r.out, "bo=1024 "), "%s", r.out);
    th_run_free(&r);
    /* no multiple of 128 divides batch = 8 (nor 64, below): the whole dimension is the block */
    r = TH_RUN("sweep", "quant_matmul", "--set", "batch=8", "--set", "out=256", "--set", "in=256", "--chip", "v6e",
               "--csv");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "bb=8 ") && !strstr(r.out, "bb=128"), "%s", r.out);
    th_run_free(&r);
    r = TH_RUN("sweep", "quant_matmul", "--set", "batch=64", "--set", "out=256", "--set", "in=256", "--chip", "v6e",
               "--csv");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "bb=64 ") && !strstr(r.out, "bb=16 ") && !strstr(r.out, "bb=32 "), "%s", r.out);
    th_run_free(&r);
    /* tilesim list says what a sweep tries */
    r = TH_RUN("list");
    cr_expect(strstr(r.out, "sweep: the multiples of 128 dividing out"), "%s", r.out);
    th_run_free(&r);
}

/* `explain matmul M N K ...` takes --vmem-limit as every other verb does:
 * it sets the call's scoped limit (M4), at most physical VMEM. */
Test(cli_kernels, explain_matmul_takes_vmem_limit)
{
    th_run r = TH_RUN("explain", "matmul", "1024", "1024", "1024", "1024", "1024", "1024", "--vmem-limit", "4194304");
    cr_expect_eq(r.status, 2, "%s", r.err);
    cr_expect(strstr(r.err, "scoped limit of 4194304 bytes"), "%s", r.err);
    th_run_free(&r);
    r = TH_RUN("explain", "matmul", "1024", "1024", "1024", "1024", "1024", "1024", "--vmem-limit", "33554432");
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "of the 32.0 MiB scoped limit"), "%s", r.out);
    th_run_free(&r);
    r = TH_RUN("explain", "matmul", "256", "256", "256", "256", "256", "256", "--vmem-limit", "999999999999");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "physical VMEM"), "%s", r.err);
    th_run_free(&r);
}

/* `run` and `verify` take --check-dma-modes (issue 23): paged_attention's
 * manual copies give the same outputs whether they move at start or when
 * waited, so both pass and say what was checked. */
Test(cli_kernels, run_and_verify_take_check_dma_modes)
{
    th_run r = TH_RUN("run", "paged_attention", "--check-dma-modes");
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "copies (M7): the outputs are the same"), "%s", r.out);
    th_run_free(&r);
    r = TH_RUN("verify", "paged_attention", "--check-dma-modes");
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    th_run_free(&r);
    r = TH_RUN("run", "--help");
    cr_expect(strstr(r.out, "--check-dma-modes"), "%s", r.out);
    th_run_free(&r);
}

/* The sweep's advice tries the best row's neighbours at the limit its rows
 * get (raised to the chip's VMEM when --vmem-limit pins none): bm=2048
 * needs more than v5e's 16 MiB default and is the faster; it was tried at
 * the default, refused, and the advice said no neighbour was faster. */
Test(cli_kernels, the_sweeps_advice_tries_neighbours_at_the_raised_limit)
{
    th_run r = TH_RUN("sweep", "matmul", "--set", "M=8192", "--set", "N=8192", "--set", "K=8192", "--set", "dtype=bf16",
                      "--vary", "bm=1024", "--vary", "bn=1024", "--vary", "bk=1024");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "simulated: bm=2048: "), "%s", r.out);
    th_run_free(&r);
    r = TH_RUN("sweep", "matmul", "--set", "M=8192", "--set", "N=8192", "--set", "K=8192", "--set", "dtype=bf16",
               "--vary", "bm=1024", "--vary", "bn=1024", "--vary", "bk=1024", "--vmem-limit", "16M");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "simulated: no bm, bn or bk twice or half as large is 1% faster or more"), "%s", r.out);
    th_run_free(&r);
}
