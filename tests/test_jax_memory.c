/* tests/test_jax_memory.c: where tilesim follows JAX's own Pallas TPU tests
 * on memory (issue 9): out-of-bounds reads as poison for blocks, ranges and
 * DMA sources (V2, B7), masked loads and stores (V6), narrow scalar prefetch
 * (M5) and single-semaphore arguments (M8, M9). Each test names the JAX test
 * file it mirrors. */
#include <math.h>

#include "../kernel/pltpu.h"
#include "helpers.h"

/* ---- M9: semaphore arguments are single semaphores ------------------------------------ */

/* Mirrors JAX's tests/pallas/tpu_pallas_test.py semaphore tests, which pass
 * sem.at[i] (one semaphore) to signal, wait and copies: a (1,)-shaped
 * semaphore array is not one semaphore, even though it holds one. */
enum { SEM_SIGNAL, SEM_WAIT, SEM_READ, SEM_COPY, SEM_ONE };

static void sem_arg_kernel(pl_ctx *c, pl_ref *refs)
{
    int what = *(int *)pl_kernel_user(c);
    pl_ref sems = refs[2], dsem = refs[3]; /* PLTPU_SEMAPHORE(1), PLTPU_SEMAPHORE_DMA(1) */
    pl_fill(c, refs[1], 1.0);
    if (what == SEM_SIGNAL) pltpu_semaphore_signal(c, sems, 1);
    if (what == SEM_WAIT) pltpu_semaphore_wait(c, sems, 0);
    if (what == SEM_READ) (void)pltpu_semaphore_read(c, sems);
    if (what == SEM_COPY) (void)pltpu_async_copy(c, refs[0], refs[1], dsem);
    if (what == SEM_ONE) { /* the control: selected with pl_at, all of it works */
        pl_ref s = pl_at(c, sems, 0);
        pltpu_semaphore_signal(c, s, 2);
        pltpu_semaphore_wait(c, s, 2);
        pltpu_copy cp = pltpu_async_copy(c, refs[0], refs[1], pl_at(c, dsem, 0));
        pltpu_copy_start(c, &cp);
        pltpu_copy_wait(c, &cp);
    }
}

static int sem_arg_call(int what, pl_report *rep)
{
    th_io io = th_io_2d(8, 128);
    pl_call call = th_copy_call_2d(8, 128, 8, 128);
    call.kernel = sem_arg_kernel;
    call.user = &what;
    call.n_scratch = 2;
    call.scratch[0] = PLTPU_SEMAPHORE(1);
    call.scratch[1] = PLTPU_SEMAPHORE_DMA(1);
    int rc = pl_pallas_call(&call, &io.a, &io.o, NULL, rep);
    th_io_free(&io);
    return rc;
}

Test(jax_memory, M9_signal_of_a_semaphore_array_is_rejected)
{
    pl_report rep;
    int rc = sem_arg_call(SEM_SIGNAL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_ESHAPE, "cannot signal a semaphore array; select one with pl_at", "refs[2]",
                    "shape (1)", "rule M9", "grid point (0, 0)");
}

Test(jax_memory, M9_wait_and_read_of_a_semaphore_array_are_rejected)
{
    pl_report rep;
    int rc = sem_arg_call(SEM_WAIT, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_ESHAPE, "cannot wait on a semaphore array; select one with pl_at", "refs[2]");
    rc = sem_arg_call(SEM_READ, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_ESHAPE, "cannot read a semaphore array; select one with pl_at", "refs[2]");
}

Test(jax_memory, M8_copy_with_a_semaphore_array_is_rejected)
{
    pl_report rep;
    int rc = sem_arg_call(SEM_COPY, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_ESHAPE, "cannot copy with a semaphore array; select one with pl_at", "refs[3]",
                    "rule M8");
}

Test(jax_memory, M9_a_semaphore_selected_with_pl_at_works)
{
    pl_report rep;
    th_expect_ok(sem_arg_call(SEM_ONE, &rep), &rep);
}

/* ---- M5: narrow scalar prefetch ------------------------------------------------------- */

/* Mirrors JAX's tests/pallas/tpu_pallas_test.py scalar-prefetch tests run
 * with int8, int16 and bfloat16 prefetch arrays: Mosaic accepts them and a
 * read widens to 32 bits. Here: block b of the output copies input block
 * table[b] (an index map that reads the narrow table), and the kernel adds
 * the table entry it reads itself. */
enum { NP_BLOCKS = 4, NP_ROWS = 8, NP_COLS = 128 };

static void narrow_map(const int64_t *idx, const pl_ref *prefetch, int64_t *bidx, void *user)
{
    (void)user;
    const pl_ref *t = &prefetch[0];
    bidx[0] = (int64_t)pl_load_elem((const char *)t->data + (size_t)idx[0] * pl_dtype_size(t->dtype), t->dtype);
    bidx[1] = 0;
}

static void narrow_kernel(pl_ctx *c, pl_ref *refs)
{
    double v = pl_get_at(c, refs[0], pl_program_id(c, 0)); /* widened: -3 stays -3 */
    pl_fill(c, refs[2], v);
    pl_add(c, refs[2], refs[2], refs[1]);
}

static void narrow_prefetch_run(pl_dtype t, const void *table)
{
    enum { M = NP_BLOCKS * NP_ROWS };
    float *x = th_f32_seq(M * NP_COLS), *y = th_f32_fill(M * NP_COLS, TH_SENTINEL);
    pl_call call = {
        .name = "narrow_prefetch", .kernel = narrow_kernel, .grid_rank = 1, .grid = {NP_BLOCKS},
        .num_scalar_prefetch = 1,
        .n_in = 1, .in = {PL_BLOCK(PL_MAP_FN(narrow_map, NULL), NP_ROWS, NP_COLS)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), NP_ROWS, NP_COLS)},
    };
    pl_array args[2] = {PL_ARRAY((void *)table, t, NP_BLOCKS), PL_ARRAY(x, PL_F32, M, NP_COLS)};
    pl_array out = PL_ARRAY(y, PL_F32, M, NP_COLS);
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, args, &out, NULL, &rep), &rep);
    const int src[NP_BLOCKS] = {3, 0, 2, 1};
    for (int b = 0; b < NP_BLOCKS; b++)
        for (int i = 0; i < NP_ROWS * NP_COLS; i++) {
            int64_t o = (int64_t)b * NP_ROWS * NP_COLS + i, s = (int64_t)src[b] * NP_ROWS * NP_COLS + i;
            cr_assert_eq(y[o], x[s] + (float)src[b], "%s: y[%lld] = %g, want %g", pl_dtype_name(t), (long long)o,
                         y[o], x[s] + (float)src[b]);
        }
    free(x), free(y);
}

Test(jax_memory, M5_int8_int16_and_bf16_scalar_prefetch_widen_to_32_bits)
{
    const int8_t t8[NP_BLOCKS] = {3, 0, 2, 1};
    const int16_t t16[NP_BLOCKS] = {3, 0, 2, 1};
    uint16_t tb[NP_BLOCKS];
    for (int i = 0; i < NP_BLOCKS; i++) tb[i] = pl_f32_to_bf16((float)t8[i]);
    narrow_prefetch_run(PL_I8, t8);
    narrow_prefetch_run(PL_I16, t16);
    narrow_prefetch_run(PL_BF16, tb);
}

/* A negative int8 / int16 entry read by the kernel is sign-extended, not
 * zero-extended (widening, M5). */
static void signed_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_fill(c, refs[2], pl_get_at(c, refs[0], 0) + 1000 * pl_get_at(c, refs[0], 1));
    (void)refs[1];
}

Test(jax_memory, M5_narrow_prefetch_sign_extends)
{
    int8_t t8[2] = {-3, INT8_MIN};
    int16_t t16[2] = {-3, INT16_MIN};
    const void *tables[2] = {t8, t16};
    pl_dtype types[2] = {PL_I8, PL_I16};
    for (int k = 0; k < 2; k++) {
        th_io io = th_io_2d(8, 128);
        pl_call call = th_copy_call_2d(8, 128, 8, 128);
        call.kernel = signed_kernel;
        call.num_scalar_prefetch = 1;
        pl_array args[2] = {PL_ARRAY((void *)tables[k], types[k], 2), io.a};
        pl_report rep;
        th_expect_ok(pl_pallas_call(&call, args, &io.o, NULL, &rep), &rep);
        double want = -3 + 1000.0 * (k ? INT16_MIN : INT8_MIN);
        cr_assert_eq(io.out[0], (float)want, "%s: %g, want %g", pl_dtype_name(types[k]), io.out[0], want);
        th_io_free(&io);
    }
}

/* PL_I16 is a dtype like the others: named, parsed, 2 bytes, poison INT16_MAX. */
Test(jax_memory, M5_i16_is_a_dtype)
{
    pl_dtype t;
    cr_assert_eq(pl_dtype_parse("i16", &t), PL_OK);
    cr_assert_eq(t, PL_I16);
    cr_assert_eq(pl_dtype_parse("int16", &t), PL_OK);
    cr_assert_eq(t, PL_I16);
    cr_assert_str_eq(pl_dtype_name(PL_I16), "i16");
    cr_assert_eq(pl_dtype_size(PL_I16), 2);
    cr_assert_not(pl_dtype_is_float(PL_I16));
    int16_t v;
    pl_store_elem(&v, PL_I16, 70000.0); /* saturates */
    cr_assert_eq(v, INT16_MAX);
    pl_store_elem(&v, PL_I16, -12.7); /* truncates toward zero */
    cr_assert_eq(pl_load_elem(&v, PL_I16), -12.0);
}

/* ---- V2, B7: out-of-bounds reads as poison cover whole blocks -------------------------- */

/* Mirrors JAX's tests/pallas/tpu_pallas_interpret_test.py runs with
 * InterpretParams(out_of_bounds_reads="uninitialized"): an input block whose
 * index map points past the array reads as uninitialized memory (NaN for
 * floats, the integer maximum) instead of failing; the default "raise" still
 * fails (B7), and an output block past the array is an error either way. */
enum { OB_ROWS = 16, OB_COLS = 128, OB_BM = 8, OB_GRID = 3 }; /* block 2 of the input lies past its 2 blocks */

static void past_map(const int64_t *idx, const pl_ref *prefetch, int64_t *bidx, void *user)
{
    (void)prefetch, (void)user;
    bidx[0] = idx[0];
    bidx[1] = 0;
}

static int past_block_call(pl_dtype t, int fn_map, pl_oob oob, pl_uninit uninit, void *in, void *out, pl_report *rep)
{
    pl_call call = {
        .name = "past_block", .kernel = th_copy_kernel, .grid_rank = 1, .grid = {OB_GRID},
        .n_in = 1, .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), OB_BM, OB_COLS)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), OB_BM, OB_COLS)},
    };
    if (fn_map) call.in[0].map = PL_MAP_FN(past_map, NULL);
    pl_array a = PL_ARRAY(in, t, OB_ROWS, OB_COLS), o = PL_ARRAY(out, t, OB_GRID * OB_BM, OB_COLS);
    pl_options opt = {.oob_reads = oob, .uninit = uninit};
    return pl_pallas_call(&call, &a, &o, &opt, rep);
}

Test(jax_memory, V2_an_input_block_past_the_array_reads_poison)
{
    for (int fn_map = 0; fn_map < 2; fn_map++) {
        float *x = th_f32_seq(OB_ROWS * OB_COLS), *y = th_f32_fill(OB_GRID * OB_BM * OB_COLS, TH_SENTINEL);
        pl_report rep;
        th_expect_ok(past_block_call(PL_F32, fn_map, PL_OOB_POISON, PL_UNINIT_NAN, x, y, &rep), &rep);
        for (int i = 0; i < OB_ROWS * OB_COLS; i++) cr_assert_eq(y[i], x[i], "map %d: y[%d]", fn_map, i);
        for (int i = OB_ROWS * OB_COLS; i < OB_GRID * OB_BM * OB_COLS; i++)
            cr_assert(isnan(y[i]), "map %d: y[%d] = %g, want the poison NaN (V1)", fn_map, i, y[i]);
        free(x), free(y);
    }
}

Test(jax_memory, V2_a_past_block_reads_the_integer_maximum_or_zero)
{
    int32_t x[OB_ROWS * OB_COLS], y[OB_GRID * OB_BM * OB_COLS];
    for (int i = 0; i < OB_ROWS * OB_COLS; i++) x[i] = i;
    pl_report rep;
    th_expect_ok(past_block_call(PL_I32, 1, PL_OOB_POISON, PL_UNINIT_NAN, x, y, &rep), &rep);
    cr_assert_eq(y[OB_ROWS * OB_COLS], INT32_MAX);
    cr_assert_eq(y[OB_ROWS * OB_COLS - 1], OB_ROWS * OB_COLS - 1);
    th_expect_ok(past_block_call(PL_I32, 0, PL_OOB_POISON, PL_UNINIT_ZERO, x, y, &rep), &rep);
    cr_assert_eq(y[OB_GRID * OB_BM * OB_COLS - 1], 0);
}

Test(jax_memory, B7_an_input_block_past_the_array_still_raises_by_default)
{
    float *x = th_f32_seq(OB_ROWS * OB_COLS), *y = th_f32_fill(OB_GRID * OB_BM * OB_COLS, TH_SENTINEL);
    pl_report rep;
    int rc = past_block_call(PL_F32, 0, PL_OOB_RAISE, PL_UNINIT_NAN, x, y, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINDEXMAP, "in0", "rule B7");
    rc = past_block_call(PL_F32, 1, PL_OOB_RAISE, PL_UNINIT_NAN, x, y, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINDEXMAP, "in0", "grid point (2)", "rule B7");
    free(x), free(y);
}

/* Writes past the end stay errors: an output block map past the array. */
Test(jax_memory, B7_an_output_block_past_the_array_stays_an_error_under_poison)
{
    float *x = th_f32_seq(OB_GRID * OB_BM * OB_COLS), *y = th_f32_fill(OB_ROWS * OB_COLS, TH_SENTINEL);
    pl_call call = {
        .name = "past_out", .kernel = th_copy_kernel, .grid_rank = 1, .grid = {OB_GRID},
        .n_in = 1, .in = {PL_BLOCK(PL_MAP(0, PL_ZERO), OB_BM, OB_COLS)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP_FN(past_map, NULL), OB_BM, OB_COLS)},
    };
    pl_array a = PL_ARRAY(x, PL_F32, OB_GRID * OB_BM, OB_COLS), o = PL_ARRAY(y, PL_F32, OB_ROWS, OB_COLS);
    pl_options opt = {.oob_reads = PL_OOB_POISON};
    pl_report rep;
    int rc = pl_pallas_call(&call, &a, &o, &opt, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINDEXMAP, "out0", "grid point (2)", "rule B7");
    call.out[0].map = PL_MAP(0, PL_ZERO);
    rc = pl_pallas_call(&call, &a, &o, &opt, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINDEXMAP, "out0", "rule B7");
    free(x), free(y);
}

/* A block index so far past the array that its element offset would
 * overflow stays a B7 error under poison, never undefined arithmetic. */
static void huge_map(const int64_t *idx, const pl_ref *prefetch, int64_t *bidx, void *user)
{
    (void)idx, (void)prefetch, (void)user;
    bidx[0] = INT64_MAX / 2;
    bidx[1] = 0;
}

Test(jax_memory, B7_a_block_index_beyond_any_offset_stays_an_error)
{
    float *x = th_f32_seq(OB_ROWS * OB_COLS), *y = th_f32_fill(OB_GRID * OB_BM * OB_COLS, TH_SENTINEL);
    pl_call call = {
        .name = "huge_block", .kernel = th_copy_kernel, .grid_rank = 1, .grid = {OB_GRID},
        .n_in = 1, .in = {PL_BLOCK(PL_MAP_FN(huge_map, NULL), OB_BM, OB_COLS)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(0, PL_ZERO), OB_BM, OB_COLS)},
    };
    pl_array a = PL_ARRAY(x, PL_F32, OB_ROWS, OB_COLS), o = PL_ARRAY(y, PL_F32, OB_GRID * OB_BM, OB_COLS);
    pl_options opt = {.oob_reads = PL_OOB_POISON};
    pl_report rep;
    int rc = pl_pallas_call(&call, &a, &o, &opt, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EINDEXMAP, "in0", "rule B7");
    free(x), free(y);
}

/* ---- V6: masked loads and stores; V2: ranges past the end ----------------------------- */

/* Mirrors JAX's tests/pallas/pallas_test.py test_masked_load_store: a ragged
 * array (N not a multiple of the block) walked in blocks by a grid; each
 * block is pl_ds(start, BS) of the whole-array Ref, so the last one runs past
 * the end; the mask (lane index < N - start) keeps the load and the store
 * inside. Every element comes out right and nothing past the array is read
 * or written (the VMEM buffer is exactly the array: ASan would see it). */
enum { RG_ROWS = 8, RG_N = 1000, RG_BS = 256, RG_GRID = (RG_N + RG_BS - 1) / RG_BS };

typedef struct ragged_cfg {
    int masked_load, masked_store; /* 0: leave that mask off */
} ragged_cfg;

static void ragged_kernel(pl_ctx *c, pl_ref *refs)
{
    const ragged_cfg *cfg = pl_kernel_user(c);
    pl_ref x = refs[0], o = refs[1], tmp = refs[2], mask = refs[3];
    int64_t start = pl_program_id(c, 0) * RG_BS;
    pl_ref xs = pl_ds(c, x, 1, start, RG_BS), os = pl_ds(c, o, 1, start, RG_BS);
    pl_mask_lt(c, mask, 1, RG_N - start); /* (1, BS): broadcast over the rows */
    pl_load(c, tmp, xs, cfg->masked_load ? &mask : NULL, 0.0);
    pl_scale(c, tmp, tmp, 2.0);
    pl_store(c, os, tmp, cfg->masked_store ? &mask : NULL);
}

static int ragged_call(ragged_cfg cfg, pl_oob oob, float *x, float *y, pl_report *rep)
{
    pl_call call = {
        .name = "ragged", .kernel = ragged_kernel, .user = &cfg, .grid_rank = 1, .grid = {RG_GRID},
        .semantics = {PL_ARBITRARY},
        .n_in = 1, .in = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), RG_ROWS, RG_N)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), RG_ROWS, RG_N)},
        .n_scratch = 2, .scratch = {PLTPU_VMEM(PL_F32, RG_ROWS, RG_BS), PLTPU_VMEM(PL_I32, 1, RG_BS)},
    };
    pl_array a = PL_ARRAY(x, PL_F32, RG_ROWS, RG_N), o = PL_ARRAY(y, PL_F32, RG_ROWS, RG_N);
    pl_options opt = {.oob_reads = oob, .strict = 1};
    return pl_pallas_call(&call, &a, &o, &opt, rep);
}

Test(jax_memory, V6_ragged_array_masked_load_and_store)
{
    enum { GUARD = 64 };
    float *x = th_f32_seq(RG_ROWS * RG_N), *y = th_f32_fill(RG_ROWS * RG_N + GUARD, TH_SENTINEL);
    pl_report rep;
    th_expect_ok(ragged_call((ragged_cfg){1, 1}, PL_OOB_RAISE, x, y, &rep), &rep);
    for (int i = 0; i < RG_ROWS * RG_N; i++) cr_assert_eq(y[i], 2 * x[i], "y[%d] = %g, want %g", i, y[i], 2 * x[i]);
    for (int i = 0; i < GUARD; i++) cr_assert_eq(y[RG_ROWS * RG_N + i], TH_SENTINEL, "past the array: %d", i);
    cr_assert_gt(rep.vpu_flops, 0, "masked ops report VPU work");
    free(x), free(y);
}

Test(jax_memory, V6_an_unmasked_store_past_the_end_is_out_of_bounds)
{
    float *x = th_f32_seq(RG_ROWS * RG_N), *y = th_f32_fill(RG_ROWS * RG_N, TH_SENTINEL);
    pl_report rep;
    int rc = ragged_call((ragged_cfg){1, 0}, PL_OOB_POISON, x, y, &rep); /* writes stay errors under poison */
    TH_EXPECT_ERROR(rc, rep, PL_EBOUNDS, "pl_store writes element (0, 232)", "refs[1] (output", "grid point (3)",
                    "rule");
    free(x), free(y);
}

Test(jax_memory, V2_an_unmasked_load_past_the_end_raises_or_reads_poison)
{
    float *x = th_f32_seq(RG_ROWS * RG_N), *y = th_f32_fill(RG_ROWS * RG_N, TH_SENTINEL);
    pl_report rep;
    int rc = ragged_call((ragged_cfg){0, 1}, PL_OOB_RAISE, x, y, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBOUNDS, "pl_load reads element (0, 232)", "refs[0] (input", "grid point (3)");
    /* poison: the part past the end reads NaN, and the masked store drops it */
    th_expect_ok(ragged_call((ragged_cfg){0, 1}, PL_OOB_POISON, x, y, &rep), &rep);
    for (int i = 0; i < RG_ROWS * RG_N; i++) cr_assert_eq(y[i], 2 * x[i], "y[%d]", i);
    free(x), free(y);
}

/* A range past the end reads poison for the part past it through pl_load
 * and pl_get; other ops refuse the view; writes past the end stay errors. */
typedef enum { PV_LOAD, PV_GET_INSIDE, PV_GET_PAST, PV_SET_PAST, PV_COPY, PV_BAD_MASK } past_view_case;

static void past_view_kernel(pl_ctx *c, pl_ref *refs)
{
    past_view_case k = *(past_view_case *)pl_kernel_user(c);
    pl_ref v = pl_ds(c, refs[0], 0, 4, 8); /* rows 4..11 of 8: rows 8..11 lie past the block */
    pl_ref tmp = refs[2];
    pl_fill(c, refs[1], 0.0);
    if (k == PV_LOAD) {
        pl_load(c, tmp, v, NULL, 0.0);
        pl_copy(c, refs[1], tmp);
    }
    if (k == PV_GET_INSIDE) pl_set_at(c, refs[1], pl_get_at(c, v, 3, 5), 0, 0);
    if (k == PV_GET_PAST) pl_set_at(c, refs[1], pl_get_at(c, v, 4, 5), 0, 0);
    if (k == PV_SET_PAST) pl_set_at(c, v, 1.0, 4, 5);
    if (k == PV_COPY) pl_copy(c, tmp, v);
    if (k == PV_BAD_MASK) pl_load(c, tmp, v, &refs[3], 0.0);
}

static int past_view_call(past_view_case k, pl_oob oob, float *y, pl_report *rep)
{
    float *x = th_f32_seq(8 * 128);
    pl_call call = th_copy_call_2d(8, 128, 8, 128);
    call.kernel = past_view_kernel;
    call.user = &k;
    call.n_scratch = 2;
    call.scratch[0] = PLTPU_VMEM(PL_F32, 8, 128);
    call.scratch[1] = PLTPU_VMEM(PL_I32, 2, 128);
    pl_array a = PL_ARRAY(x, PL_F32, 8, 128), o = PL_ARRAY(y, PL_F32, 8, 128);
    pl_options opt = {.oob_reads = oob};
    int rc = pl_pallas_call(&call, &a, &o, &opt, rep);
    free(x);
    return rc;
}

Test(jax_memory, V2_a_pl_ds_range_past_the_end_reads_poison_for_that_part)
{
    float y[8 * 128];
    pl_report rep;
    th_expect_ok(past_view_call(PV_LOAD, PL_OOB_POISON, y, &rep), &rep);
    for (int i = 0; i < 4 * 128; i++) cr_assert_eq(y[i], 0.5f * (float)(4 * 128 + i), "y[%d]", i);
    for (int i = 4 * 128; i < 8 * 128; i++) cr_assert(isnan(y[i]), "y[%d] = %g, want poison", i, y[i]);
    th_expect_ok(past_view_call(PV_GET_PAST, PL_OOB_POISON, y, &rep), &rep);
    cr_assert(isnan(y[0]));
    th_expect_ok(past_view_call(PV_GET_INSIDE, PL_OOB_RAISE, y, &rep), &rep);
    cr_assert_eq(y[0], 0.5f * (7 * 128 + 5));
}

Test(jax_memory, V2_a_pl_ds_range_past_the_end_raises_by_default)
{
    float y[8 * 128];
    pl_report rep;
    int rc = past_view_call(PV_LOAD, PL_OOB_RAISE, y, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBOUNDS, "pl_load reads element (4, 0)", "refs[0] (input");
    rc = past_view_call(PV_GET_PAST, PL_OOB_RAISE, y, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBOUNDS, "pl_get index (4, 5)", "lies past the Ref", "rule V2");
}

Test(jax_memory, V2_writes_and_plain_ops_past_the_end_stay_errors)
{
    float y[8 * 128];
    pl_report rep;
    int rc = past_view_call(PV_SET_PAST, PL_OOB_POISON, y, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBOUNDS, "pl_set index (4, 5)", "lies past the Ref");
    rc = past_view_call(PV_COPY, PL_OOB_POISON, y, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBOUNDS, "pl_copy on a view of refs[0]", "last 4 elements of dimension 0",
                    "rule V6");
    rc = past_view_call(PV_BAD_MASK, PL_OOB_POISON, y, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_ESHAPE, "the mask refs[3]", "shape (2, 128)", "does not broadcast", "rule V6");
}

/* A DMA whose source runs past the end of its Ref: poison for that part
 * under oob_reads = poison, an error by default; a destination past the end
 * is always an error. */
typedef enum { DP_SRC_PAST, DP_DST_PAST } dma_past_case;

static void dma_past_kernel(pl_ctx *c, pl_ref *refs)
{
    dma_past_case k = *(dma_past_case *)pl_kernel_user(c);
    pl_ref hbm = refs[0], buf = refs[2], sem = pl_at(c, refs[3], 0);
    pltpu_copy cp = k == DP_SRC_PAST ? pltpu_async_copy(c, pl_ds(c, hbm, 0, 8, 16), buf, sem)
                                     : pltpu_async_copy(c, buf, pl_ds(c, hbm, 0, 8, 16), sem);
    pltpu_copy_start(c, &cp);
    pltpu_copy_wait(c, &cp);
    pl_copy(c, refs[1], buf);
}

static int dma_past_call(dma_past_case k, pl_oob oob, float *x, float *y, pl_report *rep)
{
    pl_call call = {
        .name = "dma_past", .kernel = dma_past_kernel, .user = &k, .grid_rank = 1, .grid = {1},
        .n_in = 1, .in = {{.space = PL_ANY}},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 16, 128)},
        .n_scratch = 2, .scratch = {PLTPU_VMEM(PL_F32, 16, 128), PLTPU_SEMAPHORE_DMA(1)},
    };
    pl_array a = PL_ARRAY(x, PL_F32, 16, 128), o = PL_ARRAY(y, PL_F32, 16, 128);
    pl_options opt = {.oob_reads = oob};
    return pl_pallas_call(&call, &a, &o, &opt, rep);
}

Test(jax_memory, V2_a_dma_source_past_the_end_reads_poison_for_that_part)
{
    float *x = th_f32_seq(16 * 128), *y = th_f32_fill(16 * 128, TH_SENTINEL);
    pl_report rep;
    th_expect_ok(dma_past_call(DP_SRC_PAST, PL_OOB_POISON, x, y, &rep), &rep);
    for (int i = 0; i < 8 * 128; i++) cr_assert_eq(y[i], x[8 * 128 + i], "y[%d]", i);
    for (int i = 8 * 128; i < 16 * 128; i++) cr_assert(isnan(y[i]), "y[%d] = %g, want poison", i, y[i]);
    int rc = dma_past_call(DP_SRC_PAST, PL_OOB_RAISE, x, y, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBOUNDS, "pltpu_async_copy from a source", "rule V2");
    rc = dma_past_call(DP_DST_PAST, PL_OOB_POISON, x, y, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_EBOUNDS, "pltpu_async_copy into a destination", "rule V2");
    free(x), free(y);
}

/* PL_I16 everywhere a dtype goes: a copy call in blocks, an edge block whose
 * overhang is poison INT16_MAX (V1, B6), read through pl_get. */
static void i16_edge_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_copy(c, refs[1], refs[0]);
    if (pl_program_id(c, 0) == 1) /* rows 16..31 of a 24-row array: row 8 of the block is overhang */
        pl_set_at(c, refs[1], pl_get_at(c, refs[0], 8, 0) == INT16_MAX ? 1 : 0, 0, 0);
}

Test(jax_memory, M5_i16_blocks_copy_and_poison_their_overhang)
{
    enum { M = 24, N = 128 };
    int16_t x[M * N], y[M * N];
    for (int i = 0; i < M * N; i++) x[i] = (int16_t)(i - 1000);
    pl_call call = th_copy_call_2d(M, N, 16, N);
    call.kernel = i16_edge_kernel;
    pl_array a = PL_ARRAY(x, PL_I16, M, N), o = PL_ARRAY(y, PL_I16, M, N);
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &a, &o, NULL, &rep), &rep);
    cr_assert_eq(y[16 * N], 1, "the overhang of an i16 edge block reads INT16_MAX (V1)");
    for (int i = 0; i < M * N; i++)
        if (i != 16 * N) cr_assert_eq(y[i], x[i], "y[%d] = %d, want %d", i, y[i], x[i]);
}

/* Masked ops in a cost-only run report their work and touch no data. */
Test(jax_memory, V6_masked_ops_in_cost_only_touch_no_data)
{
    pl_call call = {
        .name = "ragged_cost", .kernel = ragged_kernel, .user = &(ragged_cfg){1, 1}, .grid_rank = 1,
        .grid = {RG_GRID}, .semantics = {PL_ARBITRARY},
        .n_in = 1, .in = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), RG_ROWS, RG_N)},
        .n_out = 1, .out = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), RG_ROWS, RG_N)},
        .n_scratch = 2, .scratch = {PLTPU_VMEM(PL_F32, RG_ROWS, RG_BS), PLTPU_VMEM(PL_I32, 1, RG_BS)},
    };
    pl_array a = PL_ARRAY(NULL, PL_F32, RG_ROWS, RG_N), o = PL_ARRAY(NULL, PL_F32, RG_ROWS, RG_N);
    pl_options opt = {.cost_only = 1};
    pl_report rep;
    th_expect_ok(pl_pallas_call(&call, &a, &o, &opt, &rep), &rep);
    cr_assert_gt(rep.vpu_flops, 0);
}
