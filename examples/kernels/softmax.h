/* examples/kernels/softmax.h: row softmax over rows wider than a block, in
 * one call (definition "softmax" in registry.h).
 *
 * y = exp(x - max(x, -1)) / sum(exp(x - max), -1) for x (rows, cols) in
 * (br, bc) blocks, bc < cols allowed. The grid is (cdiv(rows, br), 2,
 * cdiv(cols, bc)): for each row block, phase 0 walks the column blocks and
 * keeps the online running max m and sum s (s rescaled by exp(m_old - m_new)
 * when the max grows) in f32 VMEM scratch, the one state that outlives a
 * step (a block's max and exponentials are values); phase 1 walks them again and
 * writes exp(x - m) / s. The row axis is parallel, the other two arbitrary
 * (they carry m and s, G3).
 *
 * The output index map is (i, phase * j): during phase 0 it stays on block
 * (i, 0), which phase 1 writes first, so that block is neither written back
 * nor revisited while phase 0 runs (it changes only after phase 1's j = 0
 * has filled it: no poison goes to HBM, no revisit after a write-back, P5).
 * Every other block is selected once, at the one step that writes it. The
 * cost: x is read twice, which the report's copies show. Ragged column
 * blocks slice away their poison overhang (B6); ragged row blocks compute
 * poison rows, which are dropped on write-back. */
#ifndef TILESIM_EXAMPLES_SOFTMAX_H
#define TILESIM_EXAMPLES_SOFTMAX_H

#include "../../sim/tilesim.h"

typedef struct softmax_params {
    int64_t cols; /* to slice the ragged last column block */
    int no_max;   /* the broken variant tests use: no max subtracted (overflows for large x) */
    int64_t br, bc; /* the block: the values' shapes */
} softmax_params;

/* refs: x, o; scratch m, s (br, 1) f32, carried over the steps; the block's
 * max mx (br, 1) and exp(x - m) t (br, bc) are f32 values (values.h) */
void softmax_kernel(pl_ctx *c, pl_ref *refs);

#endif
