/* tests/test_sparsecore.c: pl_kernel over a SparseCore vector-subcore mesh
 * (rule K5): the body once per (SparseCore, subcore), the subcore's VMEM,
 * lanes and lack of an MXU, chips without SparseCores, chip-file keys. */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/tilesim_kernel.h"
#include "helpers.h"

enum { COLS = 128, MAX_BODIES = 64 };

/* Each body counts its (core, subcore) once; cores may run on host threads. */
typedef struct seen {
    atomic_int count[MAX_BODIES];
    atomic_int bad; /* an index outside the mesh */
    int subcores, cores;
} seen;

static void count_body(pl_ctx *c, pl_ref *refs)
{
    (void)refs;
    seen *s = pl_kernel_user(c);
    int core = pl_core_index(c), sub = pl_subcore_index(c);
    if (core < 0 || core >= s->cores || sub < 0 || sub >= s->subcores) {
        atomic_fetch_add(&s->bad, 1);
        return;
    }
    atomic_fetch_add(&s->count[core * s->subcores + sub], 1);
}

static void expect_each_subcore_once(const char *chip, int cores, int subcores)
{
    seen s = {.cores = cores, .subcores = subcores};
    float *o = th_f32_fill(8 * COLS, 0);
    pl_array out = PL_ARRAY(o, PL_F32, 8, COLS);
    pl_kernel_spec k = {.name = "count", .body = count_body, .user = &s, .n_out = 1,
                        .mesh = PL_MESH_VECTOR_SUBCORES};
    pl_options opt = {.chip = chip};
    pl_report rep;
    int rc = pl_kernel(&k, NULL, &out, &opt, &rep);
    th_expect_ok(rc, &rep);
    cr_assert_eq(atomic_load(&s.bad), 0, "%s: a body saw an index outside %d x %d", chip, cores, subcores);
    for (int i = 0; i < cores * subcores; i++)
        cr_assert_eq(atomic_load(&s.count[i]), 1, "%s: (core %d, subcore %d) ran %d times, want once", chip,
                     i / subcores, i % subcores, atomic_load(&s.count[i]));
    cr_assert_eq(rep.cores, cores * subcores, "%s: %d bodies ran, want %d", chip, rep.cores, cores * subcores);
    cr_assert(rep.chip && strstr(rep.chip->name, chip) && strstr(rep.chip->name, "SparseCore"),
              "the report says where it ran: '%s'", rep.chip ? rep.chip->name : "(null)");
    free(o);
}

Test(sparsecore, K5_the_body_runs_once_per_subcore_on_v5p) { expect_each_subcore_once("v5p", 4, 16); }
Test(sparsecore, K5_the_body_runs_once_per_subcore_on_v6e) { expect_each_subcore_once("v6e", 2, 16); }
Test(sparsecore, K5_the_body_runs_once_per_subcore_on_v7x) { expect_each_subcore_once("v7x", 2, 16); }

/* An embedding gather: subcore w copies rows idx[8w .. 8w+7] of the table
 * into its VMEM, one DMA per row, doubles them and writes rows 8w .. 8w+7. */
enum { SHARE = 8, TABLE_ROWS = 1000 };
static void gather_body(pl_ctx *c, pl_ref *refs) /* table, idx, out; rows (VMEM), ids (SMEM) */
{
    int w = pl_core_index(c) * pl_subcore_count(c) + pl_subcore_index(c);
    pltpu_sync_copy(c, pl_ds(c, refs[1], 0, w * SHARE, SHARE), refs[4]);
    for (int r = 0; r < SHARE; r++) {
        int64_t row = (int64_t)pl_get_at(c, refs[4], r);
        pltpu_sync_copy(c, pl_ds(c, refs[0], 0, row, 1), pl_ds(c, refs[3], 0, r, 1));
    }
    pl_mul_scalar(c, refs[3], refs[3], 2.0);
    pltpu_sync_copy(c, refs[3], pl_ds(c, refs[2], 0, w * SHARE, SHARE));
}

static void expect_gather(const char *chip, int bodies)
{
    int n = bodies * SHARE;
    float *table = th_f32_seq((int64_t)TABLE_ROWS * COLS), *o = th_f32_fill((int64_t)n * COLS, 0);
    int32_t *idx = malloc((size_t)n * sizeof *idx);
    for (int i = 0; i < n; i++) idx[i] = (int32_t)((i * 37 + 11) % TABLE_ROWS);
    pl_array ins[2] = {PL_ARRAY(table, PL_F32, TABLE_ROWS, COLS), PL_ARRAY(idx, PL_I32, n)};
    pl_array out = PL_ARRAY(o, PL_F32, n, COLS);
    pl_kernel_spec k = {.name = "gather", .body = gather_body, .n_in = 2, .n_out = 1, .n_scratch = 2,
                        .scratch = {PLTPU_VMEM(PL_F32, SHARE, COLS), PLTPU_SMEM(PL_I32, SHARE)},
                        .mesh = PL_MESH_VECTOR_SUBCORES};
    pl_options opt = {.chip = chip};
    pl_report rep;
    th_expect_ok(pl_kernel(&k, ins, &out, &opt, &rep), &rep);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < COLS; j++)
            cr_assert_eq(o[i * COLS + j], 2 * table[idx[i] * COLS + j], "%s: row %d col %d", chip, i, j);
    cr_assert_eq(rep.dma_copies, (int64_t)bodies * (SHARE + 2), "%s: one copy per row, per share", chip);
    cr_assert_gt(rep.time_s, 0);
    free(table), free(o), free(idx);
}

Test(sparsecore, K5_a_gather_on_every_subcore_is_right_on_v5p) { expect_gather("v5p", 64); }
Test(sparsecore, K5_a_gather_on_every_subcore_is_right_on_v7x) { expect_gather("v7x", 32); }

/* The subcore view of a preset carries tpu_info.py's figures. */
static const pl_chip *subcore_chip(const char *chip)
{
    static pl_report rep; /* its chip outlives the call: the view lives for the process */
    float *o = th_f32_fill(8 * COLS, 0);
    pl_array out = PL_ARRAY(o, PL_F32, 8, COLS);
    pl_kernel_spec k = {.body = th_noop_kernel, .n_out = 1, .mesh = PL_MESH_VECTOR_SUBCORES};
    pl_options opt = {.chip = chip};
    int rc = pl_kernel(&k, NULL, &out, &opt, &rep);
    free(o);
    cr_assert(rep.chip, "%s: no chip in the report (rc %d: %s)", chip, rc, rep.error);
    return rep.chip;
}

Test(sparsecore, K5_a_subcore_has_its_own_vmem_lanes_and_the_devices_hbm)
{
    const struct { const char *chip; int64_t vmem; double vpu, hbm; } want[] = {
        {"v5p", 512 * 1024, 8 * 1.75e9, 2765e9}, /* 8 lanes at v5p's 1.75 GHz */
        {"v6e", 256 * 1024, 8 * 1.75e9, 1373e9}, /* OpenXLA's clock and DMA rate */
        {"v7x", 512 * 1024, 16 * 1.9e9, 3207e9}};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        const pl_chip *c = subcore_chip(want[i].chip);
        cr_assert_eq(c->vmem_bytes, want[i].vmem, "%s: VMEM %lld", want[i].chip, (long long)c->vmem_bytes);
        cr_assert_eq(c->vmem_default_limit, want[i].vmem, "%s: scoped limit", want[i].chip);
        cr_assert_float_eq(c->vpu_flops, want[i].vpu, 1, "%s: VPU %g FLOP/s", want[i].chip, c->vpu_flops);
        cr_assert_float_eq(c->hbm_bw, want[i].hbm, 1e3, "%s: HBM is the device's, shared", want[i].chip);
        cr_assert_eq(c->sc_view, 1);
    }
}

/* A 1 MiB scratch: more than a v5p subcore's 512 KiB, far less than a TensorCore's VMEM. */
Test(sparsecore, K5_the_vmem_limit_is_the_subcores)
{
    float *o = th_f32_fill(8 * COLS, 0);
    pl_array out = PL_ARRAY(o, PL_F32, 8, COLS);
    pl_kernel_spec k = {.name = "big", .body = th_noop_kernel, .n_out = 1, .n_scratch = 1,
                        .scratch = {PLTPU_VMEM(PL_F32, 512, 512)}};
    pl_options opt = {.chip = "v5p"};
    pl_report rep;
    th_expect_ok(pl_kernel(&k, NULL, &out, &opt, &rep), &rep);
    k.mesh = PL_MESH_VECTOR_SUBCORES;
    int rc = pl_kernel(&k, NULL, &out, &opt, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EVMEM, "scratch0");
    free(o);
}

static void dot_body(pl_ctx *c, pl_ref *refs)
{
    pl_fill(c, refs[1], 1.0);
    pl_dot(c, refs[2], refs[1], refs[1], 0);
}

Test(sparsecore, K5_a_subcore_has_no_mxu)
{
    float *o = th_f32_fill(8 * COLS, 0);
    pl_array out = PL_ARRAY(o, PL_F32, 8, COLS);
    pl_kernel_spec k = {.name = "dot", .body = dot_body, .n_out = 1, .n_scratch = 2,
                        .scratch = {PLTPU_VMEM(PL_F32, 128, 128), PLTPU_VMEM(PL_F32, 128, 128)}};
    pl_options opt = {.chip = "v6e"};
    pl_report rep;
    th_expect_ok(pl_kernel(&k, NULL, &out, &opt, &rep), &rep); /* a TensorCore has one */
    k.mesh = PL_MESH_VECTOR_SUBCORES;
    k.vmem_limit_bytes = 0;
    int rc = pl_kernel(&k, NULL, &out, &opt, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "pl_dot", "a SparseCore subcore has no MXU (rule K5)");
    free(o);
}

static void expect_refused(const char *chip)
{
    float *o = th_f32_fill(8 * COLS, 0);
    pl_array out = PL_ARRAY(o, PL_F32, 8, COLS);
    pl_kernel_spec k = {.name = "sc", .body = th_noop_kernel, .n_out = 1, .mesh = PL_MESH_VECTOR_SUBCORES};
    pl_options opt = {.chip = chip};
    pl_report rep;
    int rc = pl_kernel(&k, NULL, &out, &opt, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, chip, "no SparseCores", "v5p, v6e, v7x", "K5");
    cr_assert_str_eq(pl_last_error(), rep.error, "pl_last_error() says what the report says");
    cr_assert_str_eq(rep.call_name, "sc");
    for (int i = 0; i < 8 * COLS; i++) cr_assert_eq(o[i], 0.0f, "the output was written");
    free(o);
}

Test(sparsecore, K5_v5e_has_no_sparsecores) { expect_refused("v5e"); }
Test(sparsecore, K5_v4_has_no_sparsecores) { expect_refused("v4"); }

Test(sparsecore, K5_an_unknown_mesh_is_refused)
{
    float *o = th_f32_fill(8 * COLS, 0);
    pl_array out = PL_ARRAY(o, PL_F32, 8, COLS);
    pl_kernel_spec k = {.name = "sc", .body = th_noop_kernel, .n_out = 1, .mesh = (pl_kernel_mesh)7};
    pl_report rep;
    int rc = pl_kernel(&k, NULL, &out, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "sc", "mesh = 7");
    free(o);
}

Test(sparsecore, K5_pl_subcore_index_is_0_on_a_tensorcore)
{
    seen s = {.cores = 2, .subcores = 1};
    float *o = th_f32_fill(8 * COLS, 0);
    pl_array out = PL_ARRAY(o, PL_F32, 8, COLS);
    pl_kernel_spec k = {.body = count_body, .user = &s, .n_out = 1};
    pl_options opt = {.chip = "v5p"};
    pl_report rep;
    th_expect_ok(pl_kernel(&k, NULL, &out, &opt, &rep), &rep);
    cr_assert_eq(atomic_load(&s.bad), 0);
    cr_assert(atomic_load(&s.count[0]) == 1 && atomic_load(&s.count[1]) == 1);
    cr_assert_str_eq(rep.chip->name, "v5p");
    free(o);
}

/* ---- chip files ------------------------------------------------------------------ */

Test(sparsecore, K5_chip_file_keys_parse_and_make_a_subcore_mesh)
{
    pl_chip chip;
    char err[512];
    int rc = pl_chip_parse("base = v5e\nname = sc-test\nsc_cores = 2\nsc_subcores = 4\nsc_lanes = 16\n"
                           "sc_vmem_kib = 128\n", "t.chip", &chip, err, sizeof err);
    cr_assert_eq(rc, PL_OK, "%s", err);
    cr_assert(chip.sc_cores == 2 && chip.sc_subcores == 4 && chip.sc_lanes == 16);
    cr_assert_eq(chip.sc_vmem_bytes, 128 * 1024);
    seen s = {.cores = 2, .subcores = 4};
    float *o = th_f32_fill(8 * COLS, 0);
    pl_array out = PL_ARRAY(o, PL_F32, 8, COLS);
    pl_kernel_spec k = {.body = count_body, .user = &s, .n_out = 1, .mesh = PL_MESH_VECTOR_SUBCORES};
    pl_options opt = {.chip_spec = &chip};
    pl_report rep;
    th_expect_ok(pl_kernel(&k, NULL, &out, &opt, &rep), &rep);
    cr_assert_eq(rep.cores, 8);
    for (int i = 0; i < 8; i++) cr_assert_eq(atomic_load(&s.count[i]), 1, "body %d", i);
    cr_assert_eq(rep.vmem_limit, 128 * 1024);
    cr_assert_float_eq(rep.chip->vpu_flops, 16 * 1.5e9, 1, "16 lanes at v5e's 1.5 GHz");
    cr_assert_str_eq(rep.chip->name, "sc-test SparseCore 2x4 subcores");
    free(o);
}

Test(sparsecore, K5_the_presets_figures)
{
    const struct { const char *chip; int cores, lanes; int64_t vmem; } want[] = {
        {"v4", 0, 0, 0}, {"v5e", 0, 0, 0}, {"v5p", 4, 8, 512 * 1024}, {"v6e", 2, 8, 256 * 1024},
        {"v7x", 2, 16, 512 * 1024}};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        const pl_chip *c = pl_chip_find(want[i].chip);
        cr_assert_eq(c->sc_cores, want[i].cores, "%s", want[i].chip);
        if (!want[i].cores) continue;
        cr_assert_eq(c->sc_subcores, 16, "%s", want[i].chip);
        cr_assert_eq(c->sc_lanes, want[i].lanes, "%s", want[i].chip);
        cr_assert_eq(c->sc_vmem_bytes, want[i].vmem, "%s", want[i].chip);
        cr_assert_eq(c->sc_view, 0, "%s", want[i].chip);
    }
}

static void expect_bad_file(const char *text, const char *const *subs)
{
    pl_chip chip;
    memset(&chip, 0x5a, sizeof chip);
    char err[512] = "";
    int rc = pl_chip_parse(text, "t.chip", &chip, err, sizeof err);
    cr_assert_eq(rc, PL_EINVAL, "accepted: %s", text);
    for (; *subs; subs++) cr_assert(strstr(err, *subs), "message lacks \"%s\": %s", *subs, err);
}
#define BAD_FILE(text, ...) expect_bad_file((text), (const char *const[]){__VA_ARGS__, NULL})

Test(sparsecore, K5_bad_chip_file_values_name_file_line_and_key)
{
    BAD_FILE("base = v5p\nsc_lanes = 0\n", "t.chip:2: sc_lanes");
    BAD_FILE("base = v5p\n\nsc_cores = -1\n", "t.chip:3: sc_cores");
    BAD_FILE("base = v5p\nsc_subcores = 2.5\n", "t.chip:2: sc_subcores", "whole number");
    BAD_FILE("base = v5p\nsc_vmem_kib = 0\n", "t.chip:2: sc_vmem_kib");
    BAD_FILE("base = v5p\nsc_vmem_kib = nan\n", "t.chip:2: sc_vmem_kib");
    /* 8 x 16 subcores: more than a device's 64 cores of the model */
    BAD_FILE("base = v5p\nsc_cores = 8\n", "t.chip", "sc_cores", "sc_subcores", "64");
}

Test(sparsecore, K5_zero_sparsecores_in_a_chip_file_means_none)
{
    pl_chip chip;
    char err[512];
    cr_assert_eq(pl_chip_parse("base = v5p\nname = nosc\nsc_cores = 0\n", "t.chip", &chip, err, sizeof err), PL_OK,
                 "%s", err);
    float *o = th_f32_fill(8 * COLS, 0);
    pl_array out = PL_ARRAY(o, PL_F32, 8, COLS);
    pl_kernel_spec k = {.name = "sc", .body = th_noop_kernel, .n_out = 1, .mesh = PL_MESH_VECTOR_SUBCORES};
    pl_options opt = {.chip_spec = &chip};
    pl_report rep;
    int rc = pl_kernel(&k, NULL, &out, &opt, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "nosc", "no SparseCores");
    free(o);
}

/* The report's chip name keeps the mesh's part whole: a long what-if name is cut instead. */
Test(sparsecore, K5_a_long_chip_name_is_cut_to_keep_the_subcore_mesh_in_the_name)
{
    pl_chip chip;
    char err[512];
    cr_assert_eq(pl_chip_parse("base = v5p\nname = abcdefghijklmnopqrstuvwxyz01234\n", "t.chip", &chip, err,
                               sizeof err), PL_OK, "%s", err);
    float *o = th_f32_fill(8 * COLS, 0);
    pl_array out = PL_ARRAY(o, PL_F32, 8, COLS);
    pl_kernel_spec k = {.body = th_noop_kernel, .n_out = 1, .mesh = PL_MESH_VECTOR_SUBCORES};
    pl_options opt = {.chip_spec = &chip};
    pl_report rep;
    th_expect_ok(pl_kernel(&k, NULL, &out, &opt, &rep), &rep);
    cr_assert_str_eq(rep.chip->name, "abcdef SparseCore 4x16 subcores"); /* 31 characters, the most a name holds */
    free(o);
}

Test(sparsecore, K5_an_unknown_chip_is_named_as_pallas_call_names_it)
{
    float *o = th_f32_fill(8 * COLS, 0);
    pl_array out = PL_ARRAY(o, PL_F32, 8, COLS);
    pl_kernel_spec k = {.body = th_noop_kernel, .n_out = 1, .mesh = PL_MESH_VECTOR_SUBCORES};
    pl_options opt = {.chip = "v9z"};
    pl_report rep;
    int rc = pl_kernel(&k, NULL, &out, &opt, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINVAL, "unknown chip 'v9z'");
    free(o);
}
