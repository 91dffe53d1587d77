/* sim/timing/chips.c: the chip presets, one row per TPU generation, and what-if
 * chips read from `key = value` files.
 *
 * Sources (../shared/CHIPS.md): the Cloud TPU system-architecture pages for
 * each generation, JAX's pltpu.get_tpu_info() table, and the scaling book.
 * Every figure is per TensorCore unless its name says otherwise; per-chip
 * figures were divided by the TensorCores per chip. Model choices shared by
 * all presets:
 *   - f32 matmuls run as three bf16 passes (bf16_3x): f32_fraction = 1/3.
 *   - VPU rate = MXU bf16 peak / 30. CHIPS.md gives 1/30 (about 1.4e13
 *     FLOP/s per chip) for v5p only; the other generations are not published,
 *     and their clocks are not all known, so the same ratio scales them.
 *   - The EUP (transcendentals) is charged as VPU work, per element: 4
 *     VPU-equivalent FLOPs for exp, log, rsqrt and sqrt (one EUP push, as
 *     pl_exp always was), 6 for tanh and sigmoid (the push and the VPU ops
 *     around it), 10 for gelu's tanh form (tanh plus its cubic); div is a
 *     reciprocal and a multiply, 4. Not published; the ratios follow the
 *     op counts of the lowered code, and the report counts EUP elements.
 *   - Scalar-unit work: each pl_get / pl_set is one cycle at clock_hz (1 ns
 *     when the clock is not published), added to the step's compute time.
 *     A TPU reads one vector element through a vector load and a lane
 *     extract, so this is a floor: an element loop is never free.
 *   - Per-step overhead 0.15 us (v4, v5e, v5p): calibrated (`tilesim
 *     calibrate bench/data/pallas_guide_v5e.csv --fit step_overhead_us`
 *     fits 0.1525) against the timings the JAX Pallas TPU matmul guide
 *     publishes for its bf16 matmuls on a v5e (docs/pallas/tpu/matmul,
 *     1024^3 to 8192^3, blocks 128^3 and 512 x 1024 x 1024). A 128^3 step
 *     there takes 0.35 us in all, the "few tenths of a microsecond" of
 *     rule P9: the fixed cost plus the step's two descriptors and two
 *     waits (0.08 us) and its MXU work with fill and drain (0.13 us).
 *     The guide measured v5e; v4 and v5p take the same figure (model
 *     choice: the same scalar bookkeeping a step).
 *   - DMA issue latency 0.2 us (v4, v5e, v5p): not published. It must stay
 *     below the time a small step takes, or a double-buffered pipeline of
 *     tiny blocks could not hide it, and the guide's 128^3 steps would
 *     cost more than their measured 0.35 us (the calibration cannot see
 *     this figure: hidden, as it must be).
 *   - v6e and v7x: OpenXLA's measured platform figures for its Pallas
 *     matmul cost model (openxla/xla, xla/benchmarks/core/platform_info.py,
 *     2026): the HBM->VMEM DMA rate a copy gets (1373 GB/s on v6e, 3207
 *     on v7x: 84 % and 87 % of the spec sheets' 1638 and 3690), a DMA's
 *     latency from issue to completion (628 and 692 ns HBM->VMEM; the
 *     VMEM->HBM figures, 523 and 594 ns, are not modelled apart), the
 *     clock (1.75 GHz; 1.9 GHz at v7x's default P-state, where the MXUs
 *     run at 1.9 / 2.2 of the spec sheet's peak) and the MXU's latency
 *     from a matmul's start to its result (192 and 211 cycles). That
 *     model has no fixed cost per grid step beyond the copies' latency,
 *     and fitting it here agrees: with the step overhead at 0 instead of
 *     0.1 us the hardware autotuner's choices (the block sizes vLLM's TPU
 *     backend chose by timing every tiling of its quantized matmul on
 *     these chips; bench/autotune_agree, docs/CHIPS.md) are within 5 % of
 *     tilesim's best on 75.9 % (v6e) and 71.0 % (v7x) of the shapes
 *     (70.2 and 67.1 % with the earlier fitted 0.1 / 0.4 us; 78.4 and
 *     72.3 % once values between chained ops move no VMEM bytes,
 *     kern_vmem_read in kernel/context.h). A step
 *     still pays its copies' issue and waits (below).
 *   - What a step costs beyond its fixed overhead (issue 22; docs/CHIPS.md
 *     has the sources and how well each is reproduced): a DMA issue or
 *     semaphore wait 0.02 us on the core (model choice from public TPU
 *     listings: a dozen-odd scalar bundles per descriptor); strided copies
 *     at min(1, row bytes / 512) of the bandwidth (model choice; libtpu's
 *     DMA lowering as reverse-engineered publicly); MXU fill and drain of
 *     the MXU width in cycles per pl_dot (the scaling book; at the clock
 *     the peak implies where none is published); a 0.35 us prologue per
 *     core per call (model choice: what one small step takes in all on
 *     v5e, the guide's 0.35 us; the calibration cannot see it).
 *   - ICI hop latency 1 us (ici_latency_s; a copy to another chip pays it
 *     once per link of its route before its first byte lands): not
 *     published per generation. Public descriptions of the ICI put one hop
 *     at about a microsecond or below (sub-microsecond between neighbouring
 *     chips; about 1 us per hop as the rule of thumb for latency-bound
 *     collectives); we take the round 1 us on every preset. With it a ring
 *     collective over small shards is latency-bound: below about 45 KB per
 *     step on a 45 GB/s link (v4, v5e), 90 KB on v5p and v6e.
 *   - VMEM bandwidth (vmem_bw, per TensorCore; the run's roofline, and
 *     the floor of each block op's time: its VMEM bytes / vmem_bw, the
 *     vector loads and stores it needs, sim/call/oplog.c): 22 x the HBM
 *     bandwidth one TensorCore gets.
 *     Not published per generation; the scaling book ("How to Think About
 *     TPUs") puts VMEM's bandwidth to the MXU at about 22x HBM's, so that a
 *     matmul fed from VMEM needs an intensity of only 10-20 FLOP per byte
 *     (docs/CHIPS.md).
 *   - Memory tiling (rule T8): an array's (rows, 128) tile is 8 rows for
 *     32-bit types, 16 for 16-bit types on v7x and 8 before (sublanes_16bit),
 *     32 for 8-bit types and 64 for 4-bit ones on every preset, when those
 *     rows divide the array's second-minor dimension (Mosaic's
 *     infer-memref-layout for kernel operands; XLA's layouts T(8,128),
 *     T(16,128)(2,1), T(32,128)(4,1)). Compile errors quoted from v7x users
 *     ("has tiling (16, 128), but its block shape (..., 8, 256) is not
 *     divisible", E2002) confirm 16 there.
 *   - SparseCores (rule K5; JAX's jax/_src/pallas/mosaic/tpu_info.py,
 *     SparseCoreInfo): v5p 4 per device, v6e 2, v7x 2 per device (4 per
 *     chip); 16 vector subcores each; 8 f32 lanes (16 on v7x); 512 KiB VMEM
 *     per vector subcore (256 KiB on v6e); DMA granule 32 B (not modelled).
 *     v4 and v5e: none in that table (sc_cores 0).
 *   - MXU dtypes (rule T10): int8 x int8 into int32 where int8_ops > 0 (v5e
 *     to v6e; v4 and v7x have none for a Pallas kernel); an fp8 rate only
 *     on v7x (fp8_ops, 4614 TFLOP/s per chip, half per device). fp8 x fp8
 *     (PL_F8E4M3, PL_F8E5M2) into f32 is accepted where mxu_fp8_operands
 *     is 1: JAX's Mosaic dtype table (jax/_src/pallas/mosaic/tpu_info.py,
 *     is_matmul_supported) takes fp8 operands on generations 5, 6 and 7
 *     (v5e, v5p, v6e, v7x) and not on 4 (v4). Without an fp8 rate they run widened to bf16, at its rate
 *     (the same table gives v6e's fp8 rate as its bf16 one; v5e and v5p
 *     "not available"; model choice: the bf16 rate. OpenXLA's cost model
 *     gives half of it on v5e, v5p and v6e, its fp8 cadence).
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../base/outfile.h" /* sim_out_protect */
#include "../base/sim.h" /* SIM_MAX_CORES */

#define KiB 1024LL
#define MiB (1024LL * 1024LL)
#define GiB (1024LL * MiB)
#define TERA 1e12
#define GIGA 1e9

/* VMEM bandwidth of a TensorCore: VMEM_X times its share of HBM (see above) */
#define VMEM_X 22.0
#define COMMON .sublanes_8bit = 32, .sublanes_4bit = 64, \
               .f32_fraction = 1.0 / 3.0, .smem_bytes = 1 * MiB, \
               .ici_latency_s = 1e-6, .dma_issue_s = 0.02e-6, .dma_row_bytes = 512, .prologue_s = 0.35e-6
/* A grid step's fixed cost and a DMA's latency: calibrated on the Pallas
 * matmul guide's v5e timings and a model choice (v4, v5e, v5p); OpenXLA's
 * measured latency and no fixed step cost (v6e, v7x; see above) */
#define STEP_DOCS .step_overhead_s = 0.15e-6, .dma_latency_s = 0.2e-6
#define STEP_OPENXLA(lat_ns) .step_overhead_s = 0, .dma_latency_s = lat_ns * 1e-9
/* DMAs that signal a regular semaphore (rule M8): TPU v6 and later, the
 * chips on which JAX runs test_dma_with_regular_semaphore (it skips below
 * v6: "Regular semaphores in DMAs require TPU v6+") */
#define DMA_REGULAR .dma_regular_sems = 1
/* fp8 x fp8 operands on the MXU (rule T10; see above) */
#define FP8_IN .mxu_fp8_operands = 1
/* The data-center network (rule M14; docs/CHIPS.md). Chips per host and
 * host NICs from the Cloud TPU pages: v5e 8 chips and 2 x 100 Gbps NICs a
 * host (25 GB/s); v5p 4 chips a host (its 4-chip VM) and 50 Gbps of DCN a
 * chip (25 GB/s a host); v6e 8 chips a host. Model choices where no figure
 * was found: v6e's, v4's and v7x's NICs as v5e's and v5p's 25 GB/s a host,
 * v4's and v7x's 4 chips a host, and 10 us from issue to first byte on
 * every chip (a host-mediated hop of a data-center network; no TPU figure
 * is published). */
#define DCN(chips) .chips_per_host = chips, .dcn_bw = 25 * GIGA, .dcn_latency_s = 10e-6
/* v7x's default P-state clock over the one its peak is quoted at (OpenXLA) */
#define V7X_PSTATE (1.9 / 2.2)

static const pl_chip chips[] = {
    /* v4: 275 TFLOP/s bf16 per chip over 2 TensorCores (megacore); the
     * spec sheet's int8 rate is XLA's: Mosaic's dtype table (JAX's
     * tpu_info.py: int8_ops_per_second 0, "Not Available", and a float
     * lhs on generation 4) gives a Pallas kernel no int8 x int8 (T10);
     * 1200 GB/s HBM per chip shared by both cores; 32 GiB; 16 MiB VMEM per
     * core, scoped default assumed equal; 4 MXUs of 128x128; ~1.05 GHz;
     * 6 ICI links at 45 GB/s. */
    {.name = "v4", .bf16_flops = 275 * TERA / 2, .int8_ops = 0, .vpu_flops = 275 * TERA / 2 / 30,
     .mxu_count = 4, .mxu_width = 128, .mxu_fill_cycles = 128, .clock_hz = 1.05 * GIGA, .hbm_bw = 1200 * GIGA, .hbm_bytes = 32 * GiB,
     .vmem_bytes = 16 * MiB, .vmem_default_limit = 16 * MiB, .sublanes_16bit = 8, .cores_per_device = 2,
     .devices_per_chip = 1, .ici_links = 6, .ici_bw = 45 * GIGA, .vmem_bw = VMEM_X * 1200 * GIGA / 2, COMMON, STEP_DOCS, DCN(4)},
    /* v5e (the default): 197 TFLOP/s bf16, 394 TOP/s int8, one TensorCore;
     * 819 GB/s; 16 GiB; 128 MiB VMEM, 16 MiB scoped default; 4 MXUs of
     * 128x128; 1.5 GHz; 4 ICI links at 45 GB/s. */
    {.name = "v5e", .bf16_flops = 197 * TERA, .int8_ops = 394 * TERA, .vpu_flops = 197 * TERA / 30, .mxu_count = 4,
     .mxu_width = 128, .mxu_fill_cycles = 128, .clock_hz = 1.5 * GIGA, .hbm_bw = 819 * GIGA, .hbm_bytes = 16 * GiB, .vmem_bytes = 128 * MiB,
     .vmem_default_limit = 16 * MiB, .sublanes_16bit = 8, .cores_per_device = 1, .devices_per_chip = 1,
     .ici_links = 4, .ici_bw = 45 * GIGA, .vmem_bw = VMEM_X * 819 * GIGA, COMMON, STEP_DOCS, DCN(8), FP8_IN},
    /* v5p: 459 TFLOP/s bf16, 918 TOP/s int8 per chip over 2 TensorCores
     * (megacore); HBM 2765 GB/s per chip (the Cloud page; JAX's table says
     * 2460); 95 GiB; 64 MiB VMEM per core, scoped default assumed 16 MiB;
     * 4 MXUs of 128x128; ~1.75 GHz; 6 ICI links at 90 GB/s. */
    {.name = "v5p", .bf16_flops = 459 * TERA / 2, .int8_ops = 918 * TERA / 2, .vpu_flops = 459 * TERA / 2 / 30,
     .mxu_count = 4, .mxu_width = 128, .mxu_fill_cycles = 128, .clock_hz = 1.75 * GIGA, .hbm_bw = 2765 * GIGA, .hbm_bytes = 95 * GiB,
     .vmem_bytes = 64 * MiB, .vmem_default_limit = 16 * MiB, .sublanes_16bit = 8, .cores_per_device = 2,
     .devices_per_chip = 1, .ici_links = 6, .ici_bw = 90 * GIGA, .vmem_bw = VMEM_X * 2765 * GIGA / 2, COMMON, STEP_DOCS,
     .sc_cores = 4, .sc_subcores = 16, .sc_lanes = 8, .sc_vmem_bytes = 512 * KiB, DCN(4), FP8_IN},
    /* v6e (Trillium): 918 TFLOP/s bf16, 1836 TOP/s int8, one TensorCore;
     * 1638 GB/s on the spec sheet, 1373 GB/s a DMA gets (OpenXLA, above);
     * 32 GiB; 128 MiB VMEM, 32 MiB scoped default; 2 MXUs of 256x256;
     * 1.75 GHz (OpenXLA); 4 ICI links at 90 GB/s. VMEM bandwidth scales
     * the spec sheet's HBM figure. */
    {.name = "v6e", .bf16_flops = 918 * TERA, .int8_ops = 1836 * TERA, .vpu_flops = 918 * TERA / 30, .mxu_count = 2,
     .mxu_width = 256, .mxu_fill_cycles = 192, .clock_hz = 1.75 * GIGA, .hbm_bw = 1373 * GIGA, .hbm_bytes = 32 * GiB, .vmem_bytes = 128 * MiB,
     .vmem_default_limit = 32 * MiB, .sublanes_16bit = 8, .cores_per_device = 1, .devices_per_chip = 1,
     .ici_links = 4, .ici_bw = 90 * GIGA, .vmem_bw = VMEM_X * 1638 * GIGA, COMMON, STEP_OPENXLA(628), DMA_REGULAR,
     .sc_cores = 2, .sc_subcores = 16, .sc_lanes = 8, .sc_vmem_bytes = 256 * KiB, DCN(8), FP8_IN},
    /* v7x (Ironwood): a chip is two devices of one TensorCore each; model
     * choice: a device has half the chip's 2307 TFLOP/s bf16 (4614 fp8),
     * at the default P-state's 1.9 GHz of the peak's 2.2 (OpenXLA, above),
     * half its 7380 GB/s of HBM on the spec sheet (3207 GB/s a DMA gets,
     * OpenXLA) and half its 192 GiB. No int8 MXU path (fp8 instead): an
     * int8 x int8 pl_dot is an error (T10). 64 MiB VMEM, 32 MiB scoped
     * default; 2 MXUs of 256x256; 16-bit types tile as (16, 128) (rule
     * T6); ICI 1200 GB/s per chip both ways over 6 links = 100 GB/s per
     * link one way. */
    {.name = "v7x", .bf16_flops = 2307 * TERA / 2 * V7X_PSTATE, .int8_ops = 0, .fp8_ops = 4614 * TERA / 2 * V7X_PSTATE,
     .vpu_flops = 2307 * TERA / 2 * V7X_PSTATE / 30, .mxu_count = 2,
     .mxu_width = 256, .mxu_fill_cycles = 211, .clock_hz = 1.9 * GIGA, .hbm_bw = 3207 * GIGA, .hbm_bytes = 96 * GiB, .vmem_bytes = 64 * MiB,
     .vmem_default_limit = 32 * MiB, .sublanes_16bit = 16, .cores_per_device = 1, .devices_per_chip = 2,
     .ici_links = 6, .ici_bw = 100 * GIGA, .vmem_bw = VMEM_X * 7380 * GIGA / 2, COMMON, STEP_OPENXLA(692), DMA_REGULAR,
     .sc_cores = 2, .sc_subcores = 16, .sc_lanes = 16, .sc_vmem_bytes = 512 * KiB, DCN(4), FP8_IN},
};

int pl_chip_count(void) { return (int)(sizeof chips / sizeof *chips); }

const pl_chip *pl_chip_at(int i) { return i >= 0 && i < pl_chip_count() ? &chips[i] : NULL; }

const pl_chip *pl_chip_default(void) { return &chips[1]; }

const pl_chip *pl_chip_find(const char *name)
{
    for (int i = 0; name && i < pl_chip_count(); i++)
        if (strcmp(chips[i].name, name) == 0) return &chips[i];
    return NULL;
}

int pl_chip_devices_per_host(const pl_chip *chip)
{
    /* in 64 bits: a chip spec's two counts may each be near INT_MAX (tests/fuzz/FINDINGS.md F8) */
    int64_t d = (int64_t)chip->chips_per_host * (chip->devices_per_chip > 0 ? chip->devices_per_chip : 1);
    return d > 0 ? (d > INT_MAX ? INT_MAX : (int)d) : 1;
}

int pl_chip_tile_rows(const pl_chip *chip, pl_dtype t, int64_t rows)
{
    kern_target k = {.tile_rows = {8, chip->sublanes_16bit, chip->sublanes_8bit, chip->sublanes_4bit}};
    return kern_tile_rows(&k, pl_dtype_bits(t), rows);
}

/* ---- what-if chips ------------------------------------------------------------ */

/* One key of the file: where its value goes and in what unit. */
typedef enum { K_DOUBLE, K_BYTES, K_INT } key_kind;
typedef struct chip_key {
    const char *key;
    key_kind kind;
    size_t offset;
    double scale; /* file unit -> model unit */
    double min, max;
    const char *unit;
} chip_key;

#define KEY_D(k, f, s, lo, hi, u) {k, K_DOUBLE, offsetof(pl_chip, f), s, lo, hi, u}
#define KEY_B(k, f, s, lo, hi, u) {k, K_BYTES, offsetof(pl_chip, f), s, lo, hi, u}
#define KEY_I(k, f, lo, hi) {k, K_INT, offsetof(pl_chip, f), 1, lo, hi, ""}

static const chip_key keys[] = {
    KEY_D("bf16_tflops", bf16_flops, TERA, 1e-3, 1e6, "TFLOP/s per TensorCore"),
    KEY_D("int8_tops", int8_ops, TERA, 0, 1e6, "TOP/s per TensorCore (0: none)"),
    KEY_D("fp8_tflops", fp8_ops, TERA, 0, 1e6, "TFLOP/s per TensorCore (0: none)"),
    KEY_D("f32_fraction", f32_fraction, 1, 1e-3, 1, "of the bf16 rate"),
    KEY_D("vpu_tflops", vpu_flops, TERA, 1e-3, 1e6, "TFLOP/s per TensorCore"),
    KEY_I("mxu_count", mxu_count, 1, 64),
    KEY_I("mxu_width", mxu_width, 8, 4096),
    KEY_D("clock_ghz", clock_hz, GIGA, 0, 100, "GHz (0: unknown)"),
    KEY_D("hbm_gbps", hbm_bw, GIGA, 1e-3, 1e6, "GB/s per device"),
    KEY_B("hbm_gib", hbm_bytes, GiB, 1.0 / 1024, 1e6, "GiB per device"),
    KEY_B("vmem_mib", vmem_bytes, MiB, 1.0 / 1024, 1e6, "MiB per TensorCore"),
    KEY_B("vmem_limit_mib", vmem_default_limit, MiB, 1.0 / 1024, 1e6, "MiB (default scoped limit)"),
    KEY_B("smem_kib", smem_bytes, KiB, 1, 1e9, "KiB per TensorCore"),
    KEY_I("sublanes_16bit", sublanes_16bit, 8, 32),
    KEY_I("sublanes_8bit", sublanes_8bit, 8, 64),
    KEY_I("sublanes_4bit", sublanes_4bit, 8, 128),
    KEY_I("cores_per_device", cores_per_device, 1, SIM_MAX_CORES),
    KEY_I("devices_per_chip", devices_per_chip, 1, 8),
    KEY_I("ici_links", ici_links, 0, 64),
    KEY_D("ici_gbps", ici_bw, GIGA, 0, 1e6, "GB/s per link, one way"),
    KEY_D("step_overhead_us", step_overhead_s, 1e-6, 0, 1e6, "microseconds per grid step"),
    KEY_D("dma_latency_us", dma_latency_s, 1e-6, 0, 1e6, "microseconds per DMA"),
    KEY_D("ici_latency_us", ici_latency_s, 1e-6, 0, 1e6, "microseconds per ICI hop"),
    KEY_D("vmem_gbps", vmem_bw, GIGA, 0, 1e7, "GB/s per TensorCore (roofline, floor of op times; 0: none)"),
    KEY_D("dma_issue_us", dma_issue_s, 1e-6, 0, 1e6, "microseconds per DMA start or semaphore wait"),
    KEY_D("dma_row_bytes", dma_row_bytes, 1, 0, 1e9, "bytes: the contiguous row at full DMA bandwidth (0: any)"),
    KEY_D("mxu_fill_cycles", mxu_fill_cycles, 1, 0, 1e6, "cycles of MXU fill and drain per pl_dot"),
    KEY_D("prologue_us", prologue_s, 1e-6, 0, 1e6, "microseconds per core per call, before the first copy"),
    KEY_I("dma_regular_semaphores", dma_regular_sems, 0, 1), /* a DMA may signal a regular semaphore (M8) */
    KEY_I("sc_cores", sc_cores, 0, SIM_MAX_CORES),           /* SparseCores per device, 0: none (K5) */
    KEY_I("sc_subcores", sc_subcores, 1, SIM_MAX_CORES),     /* vector subcores per SparseCore */
    KEY_I("sc_lanes", sc_lanes, 1, 1024),                    /* f32 lanes of a vector subcore */
    KEY_B("sc_vmem_kib", sc_vmem_bytes, KiB, 1, 1e6, "KiB per vector subcore"),
    KEY_I("chips_per_host", chips_per_host, 1, 4096),        /* chips a host's NICs serve (M14) */
    KEY_D("dcn_gbps", dcn_bw, GIGA, 1e-3, 1e6, "GB/s of one host's NICs, each way"),
    KEY_D("dcn_latency_us", dcn_latency_s, 1e-6, 0, 1e6, "microseconds from issue to first byte over DCN"),
    KEY_I("mxu_fp8_operands", mxu_fp8_operands, 0, 1), /* the MXU takes fp8 x fp8 (T10), widened without fp8_tflops */
};


static int set_key(pl_chip *c, const char *key, const char *val, const char *where, int line, int first,
                   char *err, size_t errlen)
{
    char ek[96], ev[96];
    if (strcmp(key, "name") == 0) {
        if (!*val || strlen(val) >= sizeof c->name || strcmp(sim_text_escape(val, ev, sizeof ev), val) != 0) {
            snprintf(err, errlen, "%s:%d: name must be 1 to %zu printable characters, got '%s'", where, line,
                     sizeof c->name - 1, sim_text_escape(val, ev, sizeof ev));
            return PL_EINVAL;
        }
        snprintf(c->name, sizeof c->name, "%s", val);
        return PL_OK;
    }
    if (strcmp(key, "base") == 0) {
        const pl_chip *b = pl_chip_find(val);
        if (!first) {
            snprintf(err, errlen, "%s:%d: base must be the first key: it replaces every figure", where, line);
            return PL_EINVAL;
        }
        if (!b) {
            snprintf(err, errlen, "%s:%d: base = %s is not a preset (v4, v5e, v5p, v6e, v7x)", where, line,
                     sim_text_escape(val, ev, sizeof ev));
            return PL_EINVAL;
        }
        *c = *b;
        c->name[0] = '\0';
        return PL_OK;
    }
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        const chip_key *k = &keys[i];
        if (strcmp(key, k->key) != 0) continue;
        char *end;
        errno = 0;
        double v = strtod(val, &end);
        const char *digits = val + (*val == '+' || *val == '-');
        int hex = digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X'); /* 0x1p-3: a number, not a figure */
        if (end == val || hex || *sim_text_trim(end) || errno || !(v >= k->min && v <= k->max) ||
            (k->kind == K_INT && v != (double)(int)v)) {
            snprintf(err, errlen, "%s:%d: %s = '%s' is not %s from %g to %g%s%s", where, line, key,
                     sim_text_escape(val, ev, sizeof ev),
                     k->kind == K_INT ? "a whole number" : "a number", k->min, k->max, *k->unit ? " " : "", k->unit);
            return PL_EINVAL;
        }
        char *field = (char *)c + k->offset;
        if (k->kind == K_DOUBLE) *(double *)field = v * k->scale;
        else if (k->kind == K_BYTES) *(int64_t *)field = (int64_t)(v * k->scale);
        else *(int *)field = (int)v;
        return PL_OK;
    }
    size_t at = (size_t)snprintf(err, errlen, "%s:%d: unknown key '%s'; known keys: name, base", where, line,
                                 sim_text_escape(key, ek, sizeof ek));
    for (size_t i = 0; i < sizeof keys / sizeof *keys && at < errlen; i++)
        at += (size_t)snprintf(err + at, errlen - at, ", %s", keys[i].key);
    return PL_EINVAL;
}

int pl_chip_parse(const char *text, const char *where, pl_chip *out, char *err, size_t errlen)
{
    char unused[8];
    if (!err || !errlen) err = unused, errlen = sizeof unused;
    if (!where) where = "chip";
    if (!text || !out) {
        snprintf(err, errlen, "%s: no text or no chip to fill", where);
        return PL_EINVAL;
    }
    pl_chip c = *pl_chip_default();
    c.name[0] = '\0';
    char line[512];
    int lineno = 0, keys_seen = 0, based = 0;
    enum { SEEN = 96 };
    char seen[SEEN][32]; /* the keys so far and their lines: a key given twice is an error, not the last kept */
    int seen_line[SEEN];
    while (*text) {
        const char *nl = strchr(text, '\n');
        size_t len = nl ? (size_t)(nl - text) : strlen(text);
        lineno++;
        if (len >= sizeof line) {
            snprintf(err, errlen, "%s:%d: line longer than %zu characters", where, lineno, sizeof line - 1);
            return PL_EINVAL;
        }
        memcpy(line, text, len);
        line[len] = '\0';
        text += len + (nl ? 1 : 0);
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        char *s = sim_text_trim(line);
        if (!*s) continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            char es[160];
            snprintf(err, errlen, "%s:%d: expected 'key = value', got '%s'", where, lineno, sim_text_escape(s, es, sizeof es));
            return PL_EINVAL;
        }
        *eq = '\0';
        char *key = sim_text_trim(s);
        for (int k = 0; k < keys_seen && k < SEEN; k++)
            if (!strcmp(seen[k], key)) {
                char ek[96];
                snprintf(err, errlen, "%s:%d: %s given twice (first at line %d): give each figure once", where, lineno,
                         sim_text_escape(key, ek, sizeof ek), seen_line[k]);
                return PL_EINVAL;
            }
        if (keys_seen < SEEN) snprintf(seen[keys_seen], sizeof seen[keys_seen], "%s", key), seen_line[keys_seen] = lineno;
        based |= strcmp(key, "base") == 0;
        int rc = set_key(&c, key, sim_text_trim(eq + 1), where, lineno, keys_seen++ == 0, err, errlen);
        if (rc) return rc;
    }
    if (!c.name[0]) snprintf(c.name, sizeof c.name, "custom");
    if (c.vmem_default_limit > c.vmem_bytes) {
        snprintf(err, errlen, "%s: vmem_limit_mib (%lld MiB) exceeds vmem_mib (%lld MiB) (rule M4)", where,
                 (long long)(c.vmem_default_limit / MiB), (long long)(c.vmem_bytes / MiB));
        return PL_EINVAL;
    }
    /* a base without SparseCores (v4, v5e) leaves the other three figures at 0 */
    if (c.sc_cores > 0 && (c.sc_subcores < 1 || c.sc_lanes < 1 || c.sc_vmem_bytes < 1)) {
        snprintf(err, errlen, "%s: sc_cores = %d needs sc_subcores, sc_lanes and sc_vmem_kib too (rule K5); "
                 "have %d, %d and %lld KiB", where, c.sc_cores, c.sc_subcores, c.sc_lanes,
                 (long long)(c.sc_vmem_bytes / KiB));
        return PL_EINVAL;
    }
    /* the subcore mesh runs as that many cores of one device (K5, G4) */
    if (c.sc_cores > 0 && (int64_t)c.sc_cores * c.sc_subcores > SIM_MAX_CORES) {
        snprintf(err, errlen, "%s: sc_cores (%d) x sc_subcores (%d) = %lld vector subcores; a device has at most "
                 "%d (rule K5)", where, c.sc_cores, c.sc_subcores, (long long)c.sc_cores * c.sc_subcores,
                 SIM_MAX_CORES);
        return PL_EINVAL;
    }
    *out = c;
    /* no base: the figures not given are the default preset's; say so */
    if (based) err[0] = '\0';
    else snprintf(err, errlen, "%s: no 'base' key: the figures it does not set are %s's (the default preset); "
                  "write 'base = %s' to say so", where, pl_chip_default()->name, pl_chip_default()->name);
    return PL_OK;
}

/* Whether chips a and b have the same value of key k. */
static int same_figure(const chip_key *k, const pl_chip *a, const pl_chip *b)
{
    size_t size = k->kind == K_DOUBLE ? sizeof(double) : k->kind == K_BYTES ? sizeof(int64_t) : sizeof(int);
    return !memcmp((const char *)a + k->offset, (const char *)b + k->offset, size);
}

/* The preset a chip file most likely started from: the chip's own name if
 * it is a preset's, else the preset that shares the most of its figures. */
const pl_chip *pl_chip_preset_of(const pl_chip *chip)
{
    if (!chip) return NULL;
    const pl_chip *best = pl_chip_find(chip->name);
    if (best) return best;
    int most = -1;
    for (int p = 0; p < pl_chip_count(); p++) {
        int same = 0;
        for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) same += same_figure(&keys[i], chip, pl_chip_at(p));
        if (same > most) most = same, best = pl_chip_at(p);
    }
    return best;
}

int pl_chip_write(FILE *f, const pl_chip *chip)
{
    if (!f || !chip) return PL_EINVAL;
    char ev[96];
    const pl_chip *base = pl_chip_preset_of(chip);
    fprintf(f, "base = %s\n", base->name);
    /* a name pl_chip_parse takes back: printable, no '#' (a comment there) */
    if (chip->name[0] && !strchr(chip->name, '#') && !strcmp(sim_text_escape(chip->name, ev, sizeof ev), chip->name))
        fprintf(f, "name = %s\n", chip->name);
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        const chip_key *k = &keys[i];
        const char *field = (const char *)chip + k->offset;
        /* the base's own figures come with `base` (a v5e has no SparseCore: sc_lanes 0 is not a value to write) */
        if (same_figure(k, chip, base)) continue;
        if (k->kind == K_DOUBLE) fprintf(f, "%s = %.17g\n", k->key, *(const double *)field / k->scale);
        else if (k->kind == K_BYTES) fprintf(f, "%s = %.17g\n", k->key, (double)*(const int64_t *)field / k->scale);
        else fprintf(f, "%s = %d\n", k->key, *(const int *)field);
    }
    return ferror(f) ? PL_EINVAL : PL_OK;
}

int sim_chip_devices_ok(const pl_chip *chip, int64_t devices, char *msg, size_t n)
{
    if (chip->ici_links > 0 || devices <= 1) return 1;
    snprintf(msg, n, "chip %s has ici_links = 0: with no inter-chip links it is a single device, so %lld devices "
             "cannot be connected (give it ici_links >= 1, or use 1 device)", chip->name, (long long)devices);
    return 0;
}

int pl_chip_load(const char *path, pl_chip *out, char *err, size_t errlen)
{
    char unused[8];
    if (!err || !errlen) err = unused, errlen = sizeof unused;
    if (!path || !out) {
        snprintf(err, errlen, "pl_chip_load: no path or no chip to fill");
        return PL_EINVAL;
    }
    int rc;
    char *buf = sim_text_load(path, "chip", err, errlen, &rc);
    if (!buf) return rc;
    sim_out_protect(path, "the chip file");
    rc = pl_chip_parse(buf, path, out, err, errlen);
    free(buf);
    return rc;
}
