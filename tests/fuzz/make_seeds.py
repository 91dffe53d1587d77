#!/usr/bin/env python3
"""tests/fuzz/make_seeds.py: writes the seed corpus of fuzz_pallas_call
(tests/fuzz/corpus/pallas_call/) by encoding calls in the byte format that
fuzz_pallas_call.c decodes, field by field, in its order. Run it from the
top of the tree after changing that format; check the dumps with
    TILESIM_FUZZ_DUMP=1 build/fuzz/fuzz_pallas_call tests/fuzz/corpus/pallas_call/*
"""
import os

OUT = "tests/fuzz/corpus/pallas_call"
# decode tables of fuzz_pallas_call.c, inverted
GRID_RANK = {1: 0, 2: 1, 3: 2, 0: 3, 4: 6, 6: 7}
ARR_RANK = {2: 0, 1: 2, 3: 3, 4: 6, 0: 7}
DIMS = [8, 16, 128, 256, 1, 2, 3, 7, 9, 17, 24, 32, 100, 129, 130, 300, 512, 1024, 64, 4]
DTYPE = {"f32": 0, "bf16": 8, "f16": 11, "i32": 12, "i8": 14}
BLOCK = {"full": 0, "squeezed": 4, 1: 5, 8: 6, 16: 7, 128: 8, 256: 9, "half": 10, 0: 12, 1024: 14}
SPACE = {"vmem": 0, "smem": 6, "any": 7}
OPS = ["copy", "fill", "binary", "unary", "dot", "reduce", "broadcast", "tril", "get", "set", "ds", "at",
       "dma", "dma_smart", "wait", "restart", "sem", "if"]


def options(cost_only=0, on_wait=0, checks_off=0, strict=0, trace=0, runner=0, seed=0, chip=5, extreme=None):
    f = cost_only | checks_off << 2 | strict << 3 | on_wait << 4 | trace << 7
    b = [f, runner, seed, chip]
    if chip == 6:  # extreme: preset index, figure mask (16 bits), which end (16 bits)
        b += [extreme[0], extreme[1] & 255, extreme[1] >> 8, extreme[2] & 255, extreme[2] >> 8]
    elif chip == 7:  # insane: preset index, which figure, which bad value
        b += list(extreme)
    return b


BIG = [0, -1, 8, 16, 64, 100, 128, 1000, 4096, 25000, 30000, 2**63 - 1, 2**32, 257]


def grid(sizes, parallel=0):
    return [GRID_RANK[len(sizes)]] + [s - 1 if s <= 6 else 200 + BIG.index(s) for s in sizes] + [parallel]


def array(dtype, shape):
    return [DTYPE[dtype], ARR_RANK[len(shape)]] + [DIMS.index(d) for d in shape]


def spec(block, axes=None, space="vmem", zero_map=False, buffers=0, element=None):
    b = [SPACE[space], 3]  # rank: the array's
    b += [BLOCK[x] for x in block]
    if zero_map:
        b += [5]
    else:  # declarative: n, then one entry per dimension (grid axis + 1; 0 is PL_ZERO)
        b += [0, 0] + [a + 1 for a in (axes or [])] + [0] * (6 - len(axes or []))
    b += [{0: 0, 1: 5, 3: 6}[buffers]]
    if element:  # all non-squeezed dims: pad_lo, then pad_hi (a marker byte, then its value)
        b += [0] + [p for lo, hi in element for p in (lo, 0, hi)]
    else:
        b += [2]
    return b


def scratch(*items):
    b = [len(items)]
    for kind, *rest in items:
        if kind == "vmem":
            dtype, shape = rest
            b += [0, 0, 0, DTYPE[dtype], len(shape) - 1] + [[1, 2, 8, 16, 128, 3, 256, 4].index(d) for d in shape]
        elif kind == "smem":
            b += [2, 0, 0, 0, rest[0] - 1]
        elif kind == "sem":
            b += [3, rest[0] - 1, 0]
        elif kind == "dma_sem":
            b += [4, rest[0] - 1, 0]
    return b


def program(*ops, aliases=(), limit=None):
    b = [len(aliases) and (5 + len(aliases))]
    for i, o in aliases:
        b += [i, o, 1]
    b += [0] if limit is None else [6, limit // 4096 - 1]
    for name, *args in ops:
        careful = 0x80 if name.startswith("!") else 0
        b += [OPS.index(name.lstrip("!")) | careful] + list(args) + [0] * (5 - len(args))
    return b


def call(opts, g, prefetch, ins, outs, scr, prog):
    b = opts + g
    b += [{0: 0, 1: 2, 2: 3}[len(prefetch)]]
    for values in prefetch:
        b += [len(values) - 1] + [v & 255 for v in values]
    b += [len(ins) | ((len(outs) - 1) % 4) << 2]
    for a, s in ins + outs:
        b += a + s
    return bytes(b + scr + prog)


SEEDS = {
    # out = in, block (8, 128) over a (16, 256) f32 array, grid (2, 2)
    "copy_2x2": call(options(), grid([2, 2], 3), [], [(array("f32", [16, 256]), spec([8, 128], [0, 1]))],
                     [(array("f32", [16, 256]), spec([8, 128], [0, 1]))], scratch(), program(("copy", 2, 0))),
    # a tiled matmul: acc scratch, k axis arbitrary; (16, 256) @ (256, 8) in (8, 128) @ (128, 8) blocks
    "matmul": call(options(), grid([2, 1, 2], 3),
                   [], [(array("f32", [16, 256]), spec([8, 128], [0, 2])),
                        (array("f32", [256, 8]), spec([128, "full"], [2, 1]))],
                   [(array("f32", [16, 8]), spec([8, "full"], [0, 1]))], scratch(("vmem", "f32", [8, 8])),
                   program(("!if", 2, 0), ("fill", 3, 0, 0, 0), ("dot", 3, 0, 1, 1), ("!if", 2, 1),
                           ("copy", 2, 3))),
    # bf16 in, f32 out, cost only on v7x
    "bf16_cost_only": call(options(cost_only=1, chip=4), grid([2], 1),
                           [], [(array("bf16", [16, 256]), spec([8, 256], [0]))],
                           [(array("f32", [16, 256]), spec([8, 256], [0]))], scratch(), program(("copy", 1, 0))),
    # input left in HBM, paged into VMEM scratch by DMA, waited at once
    "dma_any": call(options(), grid([2]), [], [(array("f32", [16, 128]), [SPACE["any"], 0, 5, 0, 2])],
                    [(array("f32", [16, 128]), spec([8, 128], [0]))],
                    scratch(("vmem", "f32", [8, 128]), ("dma_sem", 2)),
                    program(("dma_smart", 0, 2, 3, 0, 0x10), ("copy", 1, 2))),
    # DMA started at one step, waited at the next (handle kept), on_wait mode
    "dma_across_steps": call(options(on_wait=1), grid([3]), [], [(array("f32", [8, 128]), spec([8, 128], [-1]))],
                             [(array("f32", [8, 128]), spec([8, 128], [-1]))],
                             scratch(("vmem", "f32", [8, 128]), ("dma_sem", 1)),
                             program(("wait", 0, 0), ("dma_smart", 0, 2, 3, 0, 0), ("!if", 0, 1), ("wait", 0, 0),
                                     ("copy", 1, 2))),
    # regular semaphore: signal 2, wait 2, read
    "semaphores": call(options(), grid([2]), [], [], [(array("f32", [8, 128]), spec([8, 128], [-1]))],
                       scratch(("sem", 2)),
                       program(("fill", 0, 0, 0, 1), ("!sem", 1, 0, 1, 1, 0), ("!sem", 1, 0, 1, 1, 1),
                               ("!sem", 1, 0, 0, 1, 2))),
    # scalar prefetch table drives a declarative map of the output; SMEM scratch
    "prefetch_smem": call(options(), grid([4]), [[0, 1, 1, 0]],
                          [(array("i32", [4, 8, 128]), spec(["squeezed", "full", "full"], [0, -1, -1]))],
                          [(array("i32", [4, 8, 128]), spec(["squeezed", "full", "full"], [0, -1, -1]))],
                          scratch(("smem", 8)),
                          program(("copy", 2, 1), ("!set", 3, 0, 0, 0, 1), ("!get", 0, 0))),
    # output aliases its input (M6), written only at even steps
    "alias": call(options(), grid([4]), [], [(array("f32", [32, 128]), spec([8, 128], [0]))],
                  [(array("f32", [32, 128]), spec([8, 128], [0]))], scratch(),
                  program(("!if", 0, 0), ("unary", 1, 0, 0, 0), aliases=[(0, 0)])),
    # element dims with padding (B5) and one buffer
    "element_pad": call(options(), grid([2]), [],
                        [(array("f32", [16, 128]), spec([8, 128], [0, -1], buffers=1, element=[(1, 1), (0, 0)]))],
                        [(array("f32", [16, 128]), spec([8, 128], [0]))], scratch(), program(("copy", 1, 0))),
    # megacore v5p, parallel axis, order check with a seed
    "megacore_order": call(options(runner=6, seed=7, chip=2), grid([2, 2], 1), [],
                           [(array("f32", [16, 256]), spec([8, 128], [0, 1]))],
                           [(array("f32", [16, 256]), spec([8, 128], [0, 1]))], scratch(),
                           program(("!binary", 1, 0, 0, 0))),
    # an extreme chip: every figure at its low end, dma-mode check
    "extreme_chip": call(options(runner=7, chip=6, extreme=(1, 0xfe7f, 0x0000)), grid([3]), [],
                         [(array("f32", [24, 128]), spec([8, 128], [0]))],
                         [(array("f32", [24, 128]), spec([8, 128], [0]))],
                         scratch(("vmem", "f32", [8, 128]), ("dma_sem", 1)),
                         program(("!dma", 0, 2, 3, 0, 0x10), ("copy", 1, 2))),
    # a chip with a NaN DMA latency (insane figure 7, value 2): refused or timed sanely
    "insane_chip": call(options(chip=7, extreme=(1, 7, 2)), grid([2]), [],
                        [(array("f32", [16, 128]), spec([8, 128], [0]))],
                        [(array("f32", [16, 128]), spec([8, 128], [0]))], scratch(), program(("copy", 1, 0))),
    # a chip with a NaN step overhead (insane figure 6, value 2): the cost estimate's
    # step count in scalar cycles converted NaN to an integer (FINDINGS F7)
    "insane_overhead": call(options(chip=7, extreme=(1, 6, 2)), grid([2]), [],
                            [(array("f32", [16, 128]), spec([8, 128], [0]))],
                            [(array("f32", [16, 128]), spec([8, 128], [0]))], scratch(), program(("copy", 1, 0))),
    # many small steps: one i8 row per step, grid (128,), trace on
    "tiny_blocks": call(options(trace=1), grid([128]), [],
                        [(array("i8", [128, 1, 128]), spec(["squeezed", "full", "full"], [0, -1, -1]))],
                        [(array("i8", [128, 1, 128]), spec(["squeezed", "full", "full"], [0, -1, -1]))], scratch(),
                        program(("copy", 1, 0))),
    # validation only: a block that breaks T1, and a VMEM limit
    "illegal_block": call(options(runner=5), grid([2]), [], [(array("f32", [16, 256]), spec([1, 128], [0, 1]))],
                          [(array("f32", [16, 256]), spec([8, 128], [0, 1]))], scratch(), program(limit=8192)),
}

if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    print(f"{len(SEEDS)} seeds in {OUT}")
