/* examples/kernels/block_sparse.c: the block-sparse matmul kernel, its
 * table-driven index maps and the host-side block table. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "block_sparse.h"
#include "matmul.h"

/* ceil(a / b) without a + b - 1, which overflows for sizes near 2^63 */
static int64_t cdiv(int64_t a, int64_t b) { return a / b + (a % b != 0); }

/* ---- the block table (host) ------------------------------------------------------ */

int bs_pattern_from_mask(bs_pattern *p, int64_t row_blocks, int64_t k_blocks, const unsigned char *mask)
{
    memset(p, 0, sizeof *p);
    if (row_blocks < 1 || k_blocks < 1 || !mask || row_blocks > INT32_MAX - 1 || k_blocks > INT32_MAX ||
        row_blocks > INT32_MAX / k_blocks)
        return PL_EINVAL;
    int64_t nnz = 0;
    for (int64_t e = 0; e < row_blocks * k_blocks; e++) nnz += mask[e] != 0;
    p->offsets = malloc((size_t)(row_blocks + 1) * sizeof *p->offsets);
    p->kidx = malloc((size_t)(nnz ? nnz : 1) * sizeof *p->kidx);
    if (!p->offsets || !p->kidx) {
        bs_pattern_free(p);
        return PL_ENOMEM;
    }
    p->row_blocks = row_blocks;
    p->k_blocks = k_blocks;
    p->kidx[0] = 0; /* the placeholder when nothing is present */
    int64_t at = 0;
    for (int64_t i = 0; i < row_blocks; i++) {
        p->offsets[i] = (int32_t)at;
        for (int64_t kb = 0; kb < k_blocks; kb++)
            if (mask[i * k_blocks + kb]) p->kidx[at++] = (int32_t)kb;
        int64_t c = at - p->offsets[i];
        if (c > p->max_row) p->max_row = c;
        p->empty_rows += c == 0;
    }
    p->offsets[row_blocks] = (int32_t)at;
    p->nnz = nnz;
    return PL_OK;
}

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

int bs_pattern_random(bs_pattern *p, int64_t row_blocks, int64_t k_blocks, double density, uint64_t seed)
{
    memset(p, 0, sizeof *p);
    if (row_blocks < 1 || k_blocks < 1 || !(density >= 0 && density <= 1) || row_blocks > INT32_MAX / k_blocks)
        return PL_EINVAL;
    int64_t total = row_blocks * k_blocks, want = (int64_t)llround(density * (double)total);
    int64_t *order = malloc((size_t)total * sizeof *order);
    unsigned char *mask = calloc((size_t)total, 1);
    if (!order || !mask) {
        free(order), free(mask);
        return PL_ENOMEM;
    }
    for (int64_t e = 0; e < total; e++) order[e] = e;
    for (int64_t e = 0; e < want; e++) { /* a partial Fisher-Yates: the first `want` of a shuffle */
        int64_t j = e + (int64_t)(splitmix64(&seed) % (uint64_t)(total - e)), t = order[e];
        order[e] = order[j];
        order[j] = t;
        mask[order[e]] = 1;
    }
    int rc = bs_pattern_from_mask(p, row_blocks, k_blocks, mask);
    free(order), free(mask);
    return rc;
}

void bs_pattern_free(bs_pattern *p)
{
    free(p->offsets);
    free(p->kidx);
    p->offsets = p->kidx = NULL;
}

void bs_fill_x(const bs_pattern *p, void *x, pl_dtype dt, int64_t m, int64_t k, int64_t bm, int64_t bk, uint64_t seed)
{
    size_t es = pl_dtype_size(dt);
    memset(x, 0, (size_t)(m * k) * es);
    for (int64_t i = 0; i < p->row_blocks; i++)
        for (int32_t e = p->offsets[i]; e < p->offsets[i + 1]; e++)
            for (int64_t r = i * bm; r < (i + 1) * bm && r < m; r++)
                for (int64_t c = (int64_t)p->kidx[e] * bk; c < ((int64_t)p->kidx[e] + 1) * bk && c < k; c++) {
                    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
                    double v = (double)(seed >> 11) / 9007199254740992.0 * 2.0 - 1.0;
                    pl_store_elem((char *)x + (size_t)(r * k + c) * es, dt, v);
                }
}

int64_t bs_expected_x_copies(const bs_pattern *p, int64_t n_col_blocks)
{
    int64_t n = 0;
    for (int64_t i = 0; i < p->row_blocks; i++) {
        int64_t c = p->offsets[i + 1] - p->offsets[i];
        n += c <= 1 ? c : c * n_col_blocks;
    }
    return n ? n : 1;
}

/* ---- the index maps: read the block table (M5, B2) -------------------------------- */

/* The CSR entry grid point (i, j, s) works on, the row block that entry
 * belongs to, and which column block the y map should name. A row block
 * with present blocks walks them and then repeats its last (P2 skips the
 * copy). An empty row block names the block loaded at the grid point just
 * before it (the last block of the last non-empty row, at the last column
 * block), or, before any non-empty row, the first block the walk will load
 * (row r0's first, at column block 0): either way, nothing new is copied.
 * Returns -1 when nothing at all is present. */
static int64_t entry_at(const pl_ref *prefetch, int64_t i, int64_t s, int64_t *row, int *col_mode)
{
    const int32_t *off = prefetch[0].data;
    int64_t rows = prefetch[0].shape[0] - 1, lo = off[i], hi = off[i + 1];
    *row = i;
    *col_mode = 0; /* this grid point's j */
    if (hi > lo) return lo + (s < hi - lo ? s : hi - lo - 1);
    if (off[rows] == 0) return -1;
    int64_t r = i;
    if (lo > 0) { /* the last non-empty row before i */
        while (off[r - 1] == off[r]) r--;
        *row = r - 1;
        *col_mode = 1; /* its last column block */
        return lo - 1;
    }
    while (off[r] == off[r + 1]) r++; /* the first non-empty row after i */
    *row = r;
    *col_mode = 2; /* column block 0 */
    return 0;
}

static void x_map(const int64_t *g, const pl_ref *prefetch, int64_t *b, void *user)
{
    (void)user;
    b[0] = b[1] = 0;
    if (!prefetch) return; /* pl_check_blame calls maps without the table; x is not an output */
    int64_t row;
    int mode;
    int64_t e = entry_at(prefetch, g[0], g[2], &row, &mode);
    if (e < 0) return;
    b[0] = row;
    b[1] = ((const int32_t *)prefetch[1].data)[e];
}

static void y_map(const int64_t *g, const pl_ref *prefetch, int64_t *b, void *user)
{
    const bs_params *p = user;
    b[0] = 0;
    b[1] = g[1];
    if (!prefetch) return;
    int64_t row;
    int mode;
    int64_t e = entry_at(prefetch, g[0], g[2], &row, &mode);
    if (e < 0) { /* nothing present: one block for the whole walk */
        b[1] = 0;
        return;
    }
    b[0] = ((const int32_t *)prefetch[1].data)[e];
    b[1] = mode == 0 ? g[1] : mode == 1 ? cdiv(p->n, p->bn) - 1 : 0;
}

/* ---- the kernel -------------------------------------------------------------------- */

/* refs: offsets, kidx (SMEM), x (bm, bk), y (bk, bn), o (bm, bn), acc (bm, bn) f32 */
void bs_kernel(pl_ctx *c, pl_ref *refs)
{
    pl_ref off = refs[0], x = refs[2], y = refs[3], o = refs[4], acc = refs[5];
    int64_t i = pl_program_id(c, 0), s = pl_program_id(c, 2), ns = pl_num_programs(c, 2);
    int64_t count = (int64_t)pl_get_at(c, off, i + 1) - (int64_t)pl_get_at(c, off, i);
    if (s == 0) pl_fill(c, acc, 0.0);
    if (s < count) pl_dot(c, acc, x, y, PL_DOT_ACC); /* past the row's count: nothing to add */
    if (s == ns - 1) pl_copy(c, o, acc);             /* an empty row stores its zeros */
}

/* ---- the call ------------------------------------------------------------------------ */

int bs_call(pl_call *call, bs_params *p, const bs_pattern *pat, int64_t m, int64_t n, int64_t k, int64_t bm,
            int64_t bn, int64_t bk, char *err, size_t errlen)
{
    char local[8];
    if (!err) err = local, errlen = sizeof local;
    if (m < 1 || n < 1 || k < 1 || bm < 1 || bn < 1 || bk < 1) {
        snprintf(err, errlen, "sizes and blocks must be >= 1");
        return PL_EINVAL;
    }
    if (m % bm) {
        snprintf(err, errlen, "M = %lld is not a multiple of BM = %lld: the sparsity pattern is in whole blocks",
                 (long long)m, (long long)bm);
        return PL_EINVAL;
    }
    if (k % bk) {
        snprintf(err, errlen, "K = %lld is not a multiple of BK = %lld: the sparsity pattern is in whole blocks",
                 (long long)k, (long long)bk);
        return PL_EINVAL;
    }
    if (!pat || !pat->offsets || pat->row_blocks != m / bm || pat->k_blocks != k / bk) {
        snprintf(err, errlen, "the pattern has %lld x %lld blocks, the problem %lld x %lld",
                 pat ? (long long)pat->row_blocks : 0LL, pat ? (long long)pat->k_blocks : 0LL, (long long)(m / bm),
                 (long long)(k / bk));
        return PL_EINVAL;
    }
    *p = (bs_params){.m = m, .n = n, .k = k, .bm = bm, .bn = bn, .bk = bk};
    /* the tiled matmul's call (examples/kernels/matmul.h), with the k axis
     * walking each row's present blocks through the block table */
    mm_params dense;
    mm_call(call, &dense, m, n, k, bm, bn, bk);
    call->name = "block_sparse_matmul";
    call->kernel = bs_kernel;
    call->user = p;
    call->grid[2] = pat->max_row > 0 ? pat->max_row : 1;
    call->n_scratch = 1; /* the accumulator stays: a row's blocks vary in number, and an empty row stores its zeros */
    call->num_scalar_prefetch = 2;
    call->in[0].map = PL_MAP_FN(x_map, p);
    call->in[1].map = PL_MAP_FN(y_map, p);
    return PL_OK;
}

void bs_args(pl_array args[4], const bs_pattern *pat, const pl_array *x, const pl_array *y)
{
    args[0] = PL_ARRAY(pat->offsets, PL_I32, pat->row_blocks + 1);
    args[1] = PL_ARRAY(pat->kidx, PL_I32, pat->nnz ? pat->nnz : 1);
    args[2] = *x;
    args[3] = *y;
}
