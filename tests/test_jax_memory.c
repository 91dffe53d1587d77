/* tests/test_jax_memory.c: where tilesim follows JAX's own Pallas TPU tests
 * on memory (issue 9), part one: single-semaphore arguments (M8, M9) and
 * narrow types: scalar prefetch of 8- and 16-bit tables (M5) and i16 blocks.
 * Out-of-bounds reads and masked loads and stores are in
 * test_jax_memory_oob.c. Each test names the JAX test file it mirrors. */
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

/* PL_I16 everywhere a dtype goes: a copy call in blocks, an edge block whose
 * overhang is poison INT16_MAX (V1, B6: the dtype's maximum, as JAX's TPU
 * interpret mode fills integer buffers), read through pl_get. */
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

