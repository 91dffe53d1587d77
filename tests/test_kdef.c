/* tests/test_kdef.c: kernel definitions (sim/kdef.h): parameters, the run
 * driver with its reference check (V5), sweeps, and plugins loaded from
 * shared objects (those in tests/test_kdef_plugin.c).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/kdef.h"
#include "helpers.h"

/* ---- a small definition: y = 2 x over (rows, cols) in (br, cols) blocks ------- */

enum { P_ROWS, P_COLS, P_BR, P_DT };
static const int64_t br_cands[] = {8, 16, 24, 32};

static void scale_kernel(pl_ctx *c, pl_ref *refs) { pl_scale(c, refs[1], refs[0], 2.0); }

/* wrong at grid point 1 only: its block gets 2x + 1 */
static void wrong_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_scale(c, refs[1], refs[0], 2.0);
    if (pl_program_id(c, 0) == 1) pl_add_scalar(c, refs[1], refs[1], 1.0);
}

static int scale_check(const int64_t *v, char *msg, size_t n)
{
    if (v[P_BR] < 1 || v[P_ROWS] % v[P_BR]) {
        snprintf(msg, n, "br=%lld does not divide rows=%lld", (long long)v[P_BR], (long long)v[P_ROWS]);
        return PL_EINVAL;
    }
    return PL_OK;
}

static int build_with(const int64_t *v, pl_kernel_build *b, pl_kernel_fn fn)
{
    pl_dtype t = (pl_dtype)v[P_DT];
    b->call = (pl_call){.name = "scale", .kernel = fn, .grid_rank = 1, .grid = {v[P_ROWS] / v[P_BR]},
                        .n_in = 1, .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), v[P_BR], v[P_COLS])},
                        .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), v[P_BR], v[P_COLS])}};
    b->n_args = 1;
    b->args[0] = PL_ARRAY(NULL, t, v[P_ROWS], v[P_COLS]);
    b->n_outs = 1;
    b->outs[0] = PL_ARRAY(NULL, t, v[P_ROWS], v[P_COLS]);
    return PL_OK;
}
static int scale_build(const int64_t *v, pl_kernel_build *b, char *m, size_t n)
{
    (void)m, (void)n;
    return build_with(v, b, scale_kernel);
}
static int wrong_build(const int64_t *v, pl_kernel_build *b, char *m, size_t n)
{
    (void)m, (void)n;
    return build_with(v, b, wrong_kernel);
}

static int scale_reference(const int64_t *v, const pl_kernel_build *b, pl_array *want)
{
    (void)v;
    size_t es = pl_dtype_size(b->args[0].dtype);
    for (int64_t i = 0; i < pl_array_size(&b->args[0]); i++)
        pl_store_elem((char *)want[0].data + i * es, want[0].dtype,
                      2 * pl_load_elem((const char *)b->args[0].data + i * es, b->args[0].dtype));
    return PL_OK;
}

#define SCALE_PARAMS                                                                                              \
    .n_params = 4,                                                                                                \
    .params = {{.name = "rows", .def = 64, .help = "rows"},                                                       \
               {.name = "cols", .def = 128, .help = "columns"},                                                   \
               {.name = "br", .def = 16, .candidates = br_cands, .n_candidates = 4, .help = "rows per block"},    \
               {.name = "dtype", .kind = PL_PARAM_DTYPE, .def = PL_F32, .help = "dtype"}}

static const pl_kernel_def scale_def = {.name = "scale", .summary = "y = 2 x", SCALE_PARAMS, .check = scale_check,
                                        .build = scale_build, .reference = scale_reference};
static const pl_kernel_def wrong_def = {.name = "wrong", .summary = "y = 2 x, but not at block 1", SCALE_PARAMS,
                                        .build = wrong_build, .reference = scale_reference};
static const pl_kernel_def noref_def = {.name = "noref", .summary = "no reference", SCALE_PARAMS,
                                        .build = scale_build};
static const pl_kernel_def nobuild_def = {.name = "nobuild", .summary = "no build", SCALE_PARAMS};

/* Output of f (a tmpfile) as a malloc'd string. */
static char *read_back(FILE *f)
{
    long n = ftell(f);
    rewind(f);
    char *s = calloc(1, (size_t)n + 1);
    cr_assert(s);
    cr_assert_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    return s;
}

/* ---- parameters ------------------------------------------------------------ */

Test(kdef, params_defaults_index_and_format)
{
    int64_t v[PL_KDEF_MAX_PARAMS];
    pl_kernel_defaults(&scale_def, v);
    cr_assert_eq(v[P_ROWS], 64);
    cr_assert_eq(v[P_BR], 16);
    cr_assert_eq(pl_kernel_param_index(&scale_def, "br"), P_BR);
    cr_assert_eq(pl_kernel_param_index(&scale_def, "bm"), -1);
    char buf[128];
    cr_assert_str_eq(pl_kernel_format(&scale_def, v, buf, sizeof buf), "rows=64 cols=128 br=16 dtype=f32");
    pl_kernel_def unnamed = scale_def;
    unnamed.params[1].name = NULL; /* a broken definition prints, never crashes */
    cr_assert_str_eq(pl_kernel_format(&unnamed, v, buf, sizeof buf), "rows=64 ?=128 br=16 dtype=f32");
    char small[12];
    pl_kernel_format(&scale_def, v, small, sizeof small); /* truncates, never overflows */
    cr_assert_eq(strlen(small), sizeof small - 1);
}

Test(kdef, set_accepts_decimal_and_dtype_names)
{
    int64_t v[PL_KDEF_MAX_PARAMS];
    pl_kernel_defaults(&scale_def, v);
    char msg[256];
    cr_assert_eq(pl_kernel_set(&scale_def, v, "br=32", msg, sizeof msg), PL_OK);
    cr_assert_eq(v[P_BR], 32);
    cr_assert_eq(pl_kernel_set(&scale_def, v, "dtype=bf16", msg, sizeof msg), PL_OK);
    cr_assert_eq(v[P_DT], PL_BF16);
    cr_assert_eq(pl_kernel_set(&scale_def, v, "rows=0", msg, sizeof msg), PL_OK); /* check refuses it, not set */
    cr_assert_eq(v[P_ROWS], 0);
}

/* each bad assignment is PL_EINVAL, leaves the value alone, and the message names the culprit */
Test(kdef, set_refuses_junk_with_a_message_naming_the_parameter)
{
    static const struct { const char *a, *want; } bad[] = {
        {"br=abc", "'br'"}, {"br=-1", "'br'"}, {"br=+4", "'br'"}, {"br=12x", "'br'"}, {"br= 4", "'br'"},
        {"br=", "'br'"}, {"br=99999999999999999999", "'br'"}, {"br=0x10", "'br'"},
        {"dtype=f99", "'dtype'"}, {"nosuch=3", "'nosuch'"}, {"br", "name=value"}, {"=5", "name=value"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t v[PL_KDEF_MAX_PARAMS];
        pl_kernel_defaults(&scale_def, v);
        char msg[256] = "";
        cr_assert_eq(pl_kernel_set(&scale_def, v, bad[i].a, msg, sizeof msg), PL_EINVAL, "%s accepted", bad[i].a);
        cr_assert(strstr(msg, bad[i].want), "'%s': message '%s' does not name %s", bad[i].a, msg, bad[i].want);
        cr_assert_eq(v[P_BR], 16, "%s changed br", bad[i].a);
    }
    char msg[256];
    int64_t v[PL_KDEF_MAX_PARAMS];
    pl_kernel_set(&scale_def, v, "nosuch=3", msg, sizeof msg);
    cr_assert(strstr(msg, "rows, cols, br, dtype"), "the parameters are listed: %s", msg);
}

/* ---- inputs ------------------------------------------------------------------ */

Test(kdef, fill_inputs_is_deterministic_per_seed_and_in_range)
{
    float x[256], y[256], z[256];
    pl_kernel_build b = {.n_args = 1};
    b.args[0] = PL_ARRAY(x, PL_F32, 16, 16);
    cr_assert_eq(pl_kernel_fill_inputs(NULL, &b, 7), PL_OK);
    b.args[0].data = y;
    pl_kernel_fill_inputs(NULL, &b, 7);
    b.args[0].data = z;
    pl_kernel_fill_inputs(NULL, &b, 8);
    cr_assert_eq(memcmp(x, y, sizeof x), 0, "same seed, same inputs");
    cr_assert_neq(memcmp(x, z, sizeof x), 0, "another seed, other inputs");
    for (int i = 0; i < 256; i++) cr_assert(x[i] >= -1 && x[i] < 1, "x[%d] = %g", i, x[i]);
}

/* ---- the run driver ------------------------------------------------------------ */

Test(kdef, run_passes_a_right_kernel)
{
    int64_t v[PL_KDEF_MAX_PARAMS];
    pl_kernel_defaults(&scale_def, v);
    pl_report rep;
    pl_check chk[PL_MAX_OPERANDS];
    FILE *f = tmpfile();
    cr_assert_eq(pl_kernel_run(&scale_def, v, NULL, &rep, chk, f), PL_OK, "%s", rep.error);
    char *out = read_back(f);
    cr_assert_eq(chk[0].verdict, PL_PASS);
    cr_assert(strstr(out, "output 0") && strstr(out, "PASS"), "%s", out);
    cr_assert_eq(rep.steps, 4);
    free(out);
    fclose(f);
}

/* V5: a wrong block is found, and the check names it and the grid point that wrote it */
Test(kdef, run_blames_the_wrong_block_V5)
{
    int64_t v[PL_KDEF_MAX_PARAMS];
    pl_kernel_defaults(&wrong_def, v);
    pl_report rep;
    pl_check chk[PL_MAX_OPERANDS];
    FILE *f = tmpfile();
    cr_assert_eq(pl_kernel_run(&wrong_def, v, NULL, &rep, chk, f), PL_EVERIFY);
    char *out = read_back(f);
    cr_assert_eq(chk[0].verdict, PL_FAIL);
    cr_assert(chk[0].worst_row >= 16 && chk[0].worst_row < 32, "worst row %lld", (long long)chk[0].worst_row);
    cr_assert(strstr(chk[0].blame, "block (1, 0)") && strstr(chk[0].blame, "grid point (1)"), "blame: %s",
              chk[0].blame);
    cr_assert(strstr(out, "FAIL") && strstr(out, "block (1, 0)"), "%s", out);
    cr_assert(strstr(rep.error, "wrong"), "the error names the kernel: %s", rep.error);
    free(out);
    fclose(f);
}

Test(kdef, run_cost_only_touches_no_data_and_checks_nothing)
{
    int64_t v[PL_KDEF_MAX_PARAMS];
    pl_kernel_defaults(&wrong_def, v);
    pl_options opt = {.cost_only = 1};
    pl_report rep;
    FILE *f = tmpfile();
    cr_assert_eq(pl_kernel_run(&wrong_def, v, &opt, &rep, NULL, f), PL_OK, "%s", rep.error);
    cr_assert_eq(ftell(f), 0, "no verdict in cost-only mode");
    cr_assert_gt(rep.time_s, 0);
    fclose(f);
}

Test(kdef, run_without_reference_says_so)
{
    int64_t v[PL_KDEF_MAX_PARAMS];
    pl_kernel_defaults(&noref_def, v);
    pl_report rep;
    FILE *f = tmpfile();
    cr_assert_eq(pl_kernel_run(&noref_def, v, NULL, &rep, NULL, f), PL_OK, "%s", rep.error);
    char *out = read_back(f);
    cr_assert(strstr(out, "no reference"), "%s", out);
    free(out);
    fclose(f);
}

Test(kdef, run_refuses_missing_build_and_failed_check_with_messages)
{
    int64_t v[PL_KDEF_MAX_PARAMS];
    pl_kernel_defaults(&nobuild_def, v);
    pl_report rep;
    cr_assert_eq(pl_kernel_run(&nobuild_def, v, NULL, &rep, NULL, NULL), PL_EINVAL);
    cr_assert(strstr(rep.error, "nobuild") && strstr(rep.error, "no build"), "%s", rep.error);
    pl_kernel_defaults(&scale_def, v);
    v[P_BR] = 24;
    cr_assert_eq(pl_kernel_run(&scale_def, v, NULL, &rep, NULL, NULL), PL_EINVAL);
    cr_assert(strstr(rep.error, "br=24 does not divide rows=64"), "%s", rep.error);
    cr_assert_eq(pl_kernel_run(NULL, v, NULL, &rep, NULL, NULL), PL_EINVAL);
    cr_assert_eq(pl_kernel_run(&scale_def, v, NULL, NULL, NULL, NULL), PL_EINVAL, "rep may be NULL");
}

/* data that build provides (a table of the definition's own) is neither
 * freed nor overwritten by the default inputs */
static float own_table[64 * 128];
static int own_build(const int64_t *v, pl_kernel_build *b, char *m, size_t n)
{
    (void)m, (void)n;
    build_with(v, b, scale_kernel);
    b->args[0].data = own_table;
    return PL_OK;
}
static const pl_kernel_def own_def = {.name = "own", .summary = "y = 2 x, x given", SCALE_PARAMS,
                                      .build = own_build, .reference = scale_reference};

Test(kdef, run_leaves_arrays_build_provides_alone)
{
    for (int i = 0; i < 64 * 128; i++) own_table[i] = 0.25f;
    int64_t v[PL_KDEF_MAX_PARAMS];
    pl_kernel_defaults(&own_def, v);
    pl_report rep;
    pl_check chk[PL_MAX_OPERANDS];
    cr_assert_eq(pl_kernel_run(&own_def, v, NULL, &rep, chk, NULL), PL_OK, "%s", rep.error);
    for (int i = 0; i < 64 * 128; i++) cr_assert_eq(own_table[i], 0.25f, "own_table[%d] overwritten", i);
}

/* ---- the sweep driver ------------------------------------------------------------- */

Test(kdef, sweep_ranks_and_refused_configurations_carry_their_reason)
{
    int64_t vals[5][4] = {{64, 128, 8, PL_F32}, {64, 128, 16, PL_F32}, {64, 128, 24, PL_F32},
                          {64, 128, 32, PL_F32}, {8192, 4096, 8192, PL_F32}};
    pl_report rep[5];
    cr_assert_eq(pl_kernel_sweep(&scale_def, 5, &vals[0][0], NULL, NULL, rep), PL_OK);
    cr_assert_eq(rep[0].status, PL_OK, "%s", rep[0].error);
    cr_assert_eq(rep[0].steps, 8);
    cr_assert_eq(rep[3].steps, 2);
    cr_assert_eq(rep[2].status, PL_EINVAL);
    cr_assert(strstr(rep[2].error, "br=24") && strstr(rep[2].error, "does not divide rows=64"), "%s", rep[2].error);
    cr_assert_eq(rep[4].status, PL_EVMEM, "a 128 MiB block: %s", rep[4].error);
    cr_assert_eq(pl_kernel_sweep(&scale_def, 1, NULL, NULL, NULL, rep), PL_EINVAL);
    /* a definition without build: every configuration refused, saying so */
    cr_assert_eq(pl_kernel_sweep(&nobuild_def, 2, &vals[0][0], NULL, NULL, rep), PL_OK);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(rep[i].status, PL_EINVAL);
        cr_assert(strstr(rep[i].error, "nobuild") && strstr(rep[i].error, "no build"), "%s", rep[i].error);
        /* the reason alone: the caller prints the row's values once (issue 24: the sweep's rejected list
         * repeated them) */
        char label[256];
        pl_kernel_format(&nobuild_def, vals[i], label, sizeof label);
        cr_assert(!strstr(rep[i].error, label), "'%s' repeats the configuration '%s'", rep[i].error, label);
    }
}

/* A function map whose parameters live in b->param: in a sweep they must
 * follow the call into pl_sweep's param, as call.user does. The map reads
 * a block-row offset (0) and a magic word that must be intact. */
typedef struct fn_param { int64_t magic, offset; } fn_param;
static void fn_map(const int64_t *g, const pl_ref *pf, int64_t *blk, void *user)
{
    (void)pf;
    const fn_param *p = user;
    blk[0] = p->magic == 0x5eed ? g[0] + p->offset : 1000000;
    blk[1] = 0;
}
static int fnmap_build(const int64_t *v, pl_kernel_build *b, char *m, size_t n)
{
    (void)m, (void)n;
    build_with(v, b, scale_kernel);
    fn_param *p = (fn_param *)b->param;
    p->magic = 0x5eed;
    b->call.in[0].map = PL_MAP_FN(fn_map, p);
    b->call.out[0].map = PL_MAP_FN(fn_map, p);
    return PL_OK;
}
static const pl_kernel_def fnmap_def = {.name = "fnmap", .summary = "function maps", SCALE_PARAMS,
                                        .build = fnmap_build, .reference = scale_reference};

Test(kdef, sweep_moves_map_parameters_with_the_call)
{
    int64_t vals[4][4] = {{64, 128, 8, PL_F32}, {64, 128, 16, PL_F32}, {64, 128, 32, PL_F32}, {64, 128, 64, PL_F32}};
    pl_report rep[4];
    pl_sweep_options so = {.threads = 1};
    cr_assert_eq(pl_kernel_sweep(&fnmap_def, 4, &vals[0][0], NULL, &so, rep), PL_OK);
    for (int i = 0; i < 4; i++) cr_assert_eq(rep[i].status, PL_OK, "config %d: %s", i, rep[i].error);
    int64_t v[PL_KDEF_MAX_PARAMS];
    pl_kernel_defaults(&fnmap_def, v);
    pl_report r;
    cr_assert_eq(pl_kernel_run(&fnmap_def, v, NULL, &r, NULL, NULL), PL_OK, "%s", r.error);
}

/* ---- a reference's own tolerance for one output (pl_want_tolerance, issue 24) ---- */

static double off_by; /* the reference's error, relative */
static double own_rtol; /* 0: no pl_want_tolerance */
static int loose_reference(const int64_t *v, const pl_kernel_build *b, pl_array *want)
{
    scale_reference(v, b, want);
    size_t es = pl_dtype_size(want[0].dtype);
    for (int64_t i = 0; i < pl_array_size(&want[0]); i++) {
        char *p = (char *)want[0].data + i * es;
        pl_store_elem(p, want[0].dtype, pl_load_elem(p, want[0].dtype) * (1 + off_by));
    }
    return own_rtol > 0 ? pl_want_tolerance(&want[0], own_rtol, 0) : PL_OK;
}
static const pl_kernel_def loose_def = {.name = "loose", .summary = "y = 2 x, its reference a little off",
                                        SCALE_PARAMS, .build = scale_build, .reference = loose_reference};

Test(kdef, a_reference_sets_one_outputs_tolerance)
{
    int64_t v[PL_KDEF_MAX_PARAMS];
    pl_kernel_defaults(&loose_def, v);
    pl_report rep;
    pl_check chk[PL_MAX_OPERANDS];
    off_by = 5e-5, own_rtol = 0; /* 5x f32's default rtol: past MARGINAL, a FAIL */
    cr_assert_eq(pl_kernel_run(&loose_def, v, NULL, &rep, chk, NULL), PL_EVERIFY, "%s", rep.error);
    cr_assert_eq(chk[0].verdict, PL_FAIL);
    own_rtol = 1e-4; /* the definition's own tolerance for this output */
    cr_assert_eq(pl_kernel_run(&loose_def, v, NULL, &rep, chk, NULL), PL_OK, "%s", rep.error);
    cr_assert_eq(chk[0].verdict, PL_PASS, "worst %g of rtol 1e-4", chk[0].norm_err);
    pl_array none = {0};
    cr_assert_eq(pl_want_tolerance(&none, 1e-3, 0), PL_EINVAL, "no data: no output");
    cr_assert_eq(pl_want_tolerance(&none, -1, 0), PL_EINVAL);
}
