/* tests/test_cplusplus.cc: the public headers used from C++.
 *
 * The headers declare extern "C", and their helper macros (PL_MAP, PL_MAP_FN,
 * PL_BLOCK, PL_ARRAY, PLTPU_VMEM, PLTPU_SMEM, PLTPU_SEMAPHORE[_DMA],
 * pl_get_at, pl_set_at) must work in C++ as well, where C's compound
 * literals and designated initializers do not exist (ISO C++17) and braced
 * lists refuse narrowing. This file is compiled as C++17 with
 * -pedantic-errors (see the Makefile), so a macro that only GNU C++ accepts
 * fails the build, and it runs real calls built with the macros, with
 * arguments of the types C++ code has at hand (int, size_t, variables).
 */
#include <criterion/criterion.h>
#include <cstring>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "../kernel/pallas.h"
#include "../kernel/pltpu.h"
#include "../sim/tilesim.h"
#include "../sim/tilesim_check.h"
#include "../sim/tilesim_hlo.h"
#include "../sim/tilesim_memview.h"
#include "../sim/tilesim_review.h"
#include "../sim/tilesim_kernel.h"
#include "../sim/tilesim_mesh.h"

namespace {

/* o[b] = x[b] @ y for a batch of matmuls, grid (b, i, j, k): the batch
 * dimension of x and o is squeezed out of their blocks (B4). */
void bmm_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_ref x = refs[0], y = refs[1], o = refs[2], acc = refs[3];
    if (pl_program_id(c, 3) == 0) pl_fill(c, acc, 0.0);
    pl_dot(c, acc, x, y, PL_DOT_ACC);
    if (pl_program_id(c, 3) == pl_num_programs(c, 3) - 1) pl_copy(c, o, acc);
}

/* y's block (k, j), as a function-form map from a captureless lambda. */
const pl_index_map_fn y_map = [](const int64_t *g, const pl_ref *, int64_t *blk, void *) {
    blk[0] = g[3];
    blk[1] = g[2];
};

/* out = max(x, 0), one element at a time through pl_get_at / pl_set_at. */
void relu_at_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_ref x = refs[0], o = refs[1];
    for (int64_t i = 0; i < x.shape[0]; i++)
        for (int64_t j = 0; j < x.shape[1]; j++) {
            double v = pl_get_at(c, x, i, j);
            pl_set_at(c, o, v > 0 ? v : 0.0, i, j);
        }
}

} // namespace

/* A batched matmul (PL_MAP, PL_MAP_FN, PL_BLOCK with PL_SQUEEZED, PL_ARRAY,
 * PLTPU_VMEM, PLTPU_SMEM, PLTPU_SEMAPHORE_DMA) matches a plain loop. */
Test(cplusplus, batched_matmul_built_with_the_macros)
{
    const int batch = 2, m = 32, n = 256, k = 256;
    const int bm = 16;
    const std::size_t bn = 128, bk = 128; /* size_t: narrowing in a braced list */
    std::vector<float> x(batch * m * k), y(k * n), o(batch * m * n, -1.0f);
    for (std::size_t i = 0; i < x.size(); i++) x[i] = float(int(i % 13) - 6) * 0.25f;
    for (std::size_t i = 0; i < y.size(); i++) y[i] = float(int(i % 7) - 3) * 0.5f;

    const int ax_b = 0, ax_i = 1, ax_j = 2, ax_k = 3; /* int variables: narrowed to int8_t */
    pl_call call = {};
    call.name = "bmm";
    call.kernel = bmm_kernel;
    call.grid_rank = 4;
    call.grid[0] = batch, call.grid[1] = m / bm, call.grid[2] = int64_t(n / bn), call.grid[3] = int64_t(k / bk);
    call.semantics[0] = call.semantics[1] = call.semantics[2] = PL_PARALLEL;
    call.n_in = 2;
    call.in[0] = PL_BLOCK(PL_MAP(ax_b, ax_i, ax_k), PL_SQUEEZED, bm, bk);
    call.in[1] = PL_BLOCK(PL_MAP_FN(y_map, nullptr), bk, bn);
    call.n_out = 1;
    call.out[0] = PL_BLOCK(PL_MAP(ax_b, ax_i, ax_j), PL_SQUEEZED, bm, bn);
    call.n_scratch = 3;
    call.scratch[0] = PLTPU_VMEM(PL_F32, bm, bn);
    call.scratch[1] = PLTPU_SMEM(PL_I32, 8);
    call.scratch[2] = PLTPU_SEMAPHORE_DMA(2);

    pl_array args[2] = {PL_ARRAY(x.data(), PL_F32, batch, m, k), PL_ARRAY(y.data(), PL_F32, k, n)};
    pl_array out = PL_ARRAY(o.data(), PL_F32, batch, m, n);
    pl_report rep;
    int rc = pl_pallas_call(&call, args, &out, nullptr, &rep);
    cr_assert_eq(rc, PL_OK, "rc %d (%s): %s", rc, pl_strerror(rc), rep.error);
    cr_assert_eq(rep.steps, int64_t(batch) * (m / bm) * int64_t(n / bn) * int64_t(k / bk));

    int64_t wrong = 0;
    for (int b = 0; b < batch; b++)
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) {
                double want = 0;
                for (int l = 0; l < k; l++) want += double(x[(b * m + i) * k + l]) * y[l * n + j];
                wrong += std::fabs(o[(b * m + i) * n + j] - want) > 1e-3;
            }
    cr_assert_eq(wrong, 0, "%lld elements of o differ from the loop", (long long)wrong);
}

/* pl_get_at / pl_set_at and PL_ZERO in a map: relu of a (16, 256) array
 * whose single block column is (0, j) only on the first axis. */
Test(cplusplus, element_access_and_zero_map)
{
    const int64_t m = 16, n = 256;
    std::vector<float> x(m * n), o(m * n, -7.0f);
    for (std::size_t i = 0; i < x.size(); i++) x[i] = float(int(i % 9) - 4);
    pl_call call = {};
    call.name = "relu_at";
    call.kernel = relu_at_kernel;
    call.grid_rank = 1;
    call.grid[0] = 2;
    call.n_in = call.n_out = 1;
    call.in[0] = PL_BLOCK(PL_MAP(PL_ZERO, 0), m, 128);
    call.out[0] = PL_BLOCK(PL_MAP(PL_ZERO, 0), m, 128);
    const float *cx = x.data(); /* a const pointer, as C++ inputs often are */
    pl_array in = PL_ARRAY(cx, PL_F32, m, n), out = PL_ARRAY(o.data(), PL_F32, m, n);
    pl_report rep;
    int rc = pl_pallas_call(&call, &in, &out, nullptr, &rep);
    cr_assert_eq(rc, PL_OK, "rc %d (%s): %s", rc, pl_strerror(rc), rep.error);
    for (std::size_t i = 0; i < x.size(); i++)
        cr_assert_eq(o[i], x[i] > 0 ? x[i] : 0.0f, "element %zu: %g for x = %g", i, double(o[i]), double(x[i]));
}

/* The structs the macros build hold what the C macros would put there. */
Test(cplusplus, macros_fill_the_structs_as_in_c)
{
    pl_index_map mp = PL_MAP(2, PL_ZERO, 0);
    cr_assert(mp.fn == nullptr && mp.user == nullptr && mp.n == 3);
    cr_assert(mp.axis[0] == 2 && mp.axis[1] == PL_ZERO && mp.axis[2] == 0 && mp.axis[3] == 0);

    int tag = 0;
    pl_index_map fm = PL_MAP_FN(y_map, &tag);
    cr_assert(fm.fn == y_map && fm.user == &tag && fm.n == 0);

    pl_block_spec s = PL_BLOCK(mp, PL_SQUEEZED, 8, 128);
    cr_assert(s.rank == 3 && s.block[0] == PL_SQUEEZED && s.block[1] == 8 && s.block[2] == 128 && s.block[3] == 0);
    cr_assert(s.map.n == 3 && s.space == PL_VMEM && s.buffers == 0 && s.name == nullptr && s.element[0] == 0);

    pl_array a = PL_ARRAY(nullptr, PL_BF16, 2, 3, 4);
    cr_assert(a.data == nullptr && a.dtype == PL_BF16 && a.rank == 3);
    cr_assert(a.shape[0] == 2 && a.shape[1] == 3 && a.shape[2] == 4 && a.shape[3] == 0);

    pl_scratch v = PLTPU_VMEM(PL_BF16, 16, 128), sm = PLTPU_SMEM(PL_I32, 4);
    cr_assert(v.space == PL_VMEM && v.dtype == PL_BF16 && v.rank == 2 && v.shape[0] == 16 && v.shape[1] == 128);
    cr_assert(v.name == nullptr && v.sem_kind == PL_SEM_NONE);
    cr_assert(sm.space == PL_SMEM && sm.dtype == PL_I32 && sm.rank == 1 && sm.shape[0] == 4);

    const std::size_t nsem = 3;
    pl_scratch r = PLTPU_SEMAPHORE(nsem), d = PLTPU_SEMAPHORE_DMA(2);
    cr_assert(r.space == PL_SEMAPHORE && r.dtype == PL_I32 && r.rank == 1 && r.shape[0] == 3);
    cr_assert(r.sem_kind == PL_SEM_REGULAR && d.sem_kind == PL_SEM_DMA && d.shape[0] == 2);

    /* the named forms (issue 24) fill the same fields and the name */
    pl_block_spec nb = PL_BLOCK_NAMED("x", mp, PL_SQUEEZED, 8, 128);
    cr_assert(nb.rank == 3 && nb.block[2] == 128 && nb.map.n == 3 && std::strcmp(nb.name, "x") == 0);
    pl_scratch nv = PLTPU_VMEM_NAMED("acc", PL_F32, 8, 128), ns = PLTPU_SEMAPHORE_DMA_NAMED("sems", 2);
    cr_assert(nv.space == PL_VMEM && nv.rank == 2 && std::strcmp(nv.name, "acc") == 0);
    cr_assert(ns.sem_kind == PL_SEM_DMA && ns.shape[0] == 2 && std::strcmp(ns.name, "sems") == 0);
    pl_scratch nr = PLTPU_SEMAPHORE_NAMED("bar", 1), nm = PLTPU_SMEM_NAMED("idx", PL_I32, 4);
    cr_assert(nr.sem_kind == PL_SEM_REGULAR && std::strcmp(nr.name, "bar") == 0 && nm.space == PL_SMEM);
}

/* The checks of sim/tilesim_check.h from C++: pl_allclose and
 * pl_check_matmul on arrays built with PL_ARRAY from std::vector. */
Test(cplusplus, checks_header_from_cplusplus)
{
    const int m = 8, k = 16, n = 4;
    std::vector<float> a(m * k), b(k * n), c(m * n, 0.0f);
    for (std::size_t i = 0; i < a.size(); i++) a[i] = float(int(i % 5) - 2);
    for (std::size_t i = 0; i < b.size(); i++) b[i] = float(int(i % 3) - 1);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++)
            for (int l = 0; l < k; l++) c[i * n + j] += a[i * k + l] * b[l * n + j];
    pl_array pa = PL_ARRAY(a.data(), PL_F32, m, k), pb = PL_ARRAY(b.data(), PL_F32, k, n);
    pl_array pc = PL_ARRAY(c.data(), PL_F32, m, n);
    pl_check chk;
    cr_assert_eq(pl_check_matmul(&pa, &pb, &pc, &chk, nullptr), PL_OK);
    cr_assert_eq(chk.verdict, PL_PASS, "%s", pl_verdict_name(chk.verdict));
    std::vector<float> wrong(c);
    wrong[5] += 1.0f;
    pl_array pw = PL_ARRAY(wrong.data(), PL_F32, m, n);
    cr_assert_eq(pl_allclose(&pw, &pc, 0, 0, &chk, nullptr), PL_EVERIFY);
    cr_assert(chk.worst_row == 1 && chk.worst_col == 1, "worst at (%lld, %lld)", (long long)chk.worst_row,
              (long long)chk.worst_col);
    cr_assert_str_eq(pl_verdict_name(chk.verdict), "FAIL");
}
