/* tests/fuzz/fuzz_pallas.h: what the two halves of the structure-aware
 * pl_pallas_call harness share: the byte reader, and the kernel and index
 * maps (fuzz_kernel.c) that the call decoder (fuzz_pallas_call.c) plugs in.
 *
 * Every field is read with fz_byte, which returns 0 once the bytes run out,
 * so a short input decodes to a small, mostly default call: seeds stay
 * small and the fuzzer grows them. */
#ifndef TILESIM_FUZZ_PALLAS_H
#define TILESIM_FUZZ_PALLAS_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "../../kernel/pltpu.h"
#include "../../sim/tilesim.h"

typedef struct fz_reader {
    const uint8_t *p;
    size_t n, at;
} fz_reader;

static inline unsigned fz_byte(fz_reader *r) { return r->at < r->n ? r->p[r->at++] : 0; }
static inline unsigned fz_pick(fz_reader *r, unsigned n) { return fz_byte(r) % n; }

/* ---- the kernel (fuzz_kernel.c) ------------------------------------------------ */

#define FZ_MAX_OPS 24     /* block ops per kernel program */
#define FZ_OP_BYTES 6     /* bytes per op: opcode and five operands */
#define FZ_MAX_COPIES 4   /* DMA handles the kernel keeps across grid points */
#define FZ_WORK_BUDGET (4LL << 20) /* elements the kernel's ops may touch per input */

/* The kernel's program, handed to it as pl_call.user. */
typedef struct fz_program {
    int n_refs;                          /* prefetch + inputs + outputs + scratch */
    int grid_rank;
    int n_ops;
    uint8_t ops[FZ_MAX_OPS][FZ_OP_BYTES];
    int avoid_known;                     /* steer clear of bugs being fixed elsewhere (see FINDINGS.md) */
    int64_t work;                        /* elements touched so far, against FZ_WORK_BUDGET */
    int have[FZ_MAX_COPIES];             /* copies[i] holds a handle */
    pltpu_copy copies[FZ_MAX_COPIES];    /* started copies, kept across grid points */
} fz_program;

void fz_kernel(pl_ctx *c, pl_ref *refs);
const char *fz_op_name(unsigned opcode_byte);
/* pl_options.on_step: forgets the DMA handles when a walk starts, so that a
 * handle never outlives the buffers of the call (or core) that made it. */
void fz_on_step(const pl_step_info *info, void *user);

/* ---- function-form index maps (fuzz_kernel.c) ---------------------------------- */

/* Per dimension: block index = g[axis] * mul + add, a prefetch lookup, a
 * constant, or left unset. */
typedef enum fz_map_kind { FZ_MAP_AXIS = 0, FZ_MAP_PREFETCH, FZ_MAP_CONST, FZ_MAP_UNSET, FZ_MAP_KINDS } fz_map_kind;

typedef struct fz_map {
    int n_prefetch;
    uint8_t kind[PL_MAX_RANK];
    int8_t axis[PL_MAX_RANK];
    int64_t mul[PL_MAX_RANK], add[PL_MAX_RANK];
} fz_map;

void fz_index_map(const int64_t *grid_idx, const pl_ref *prefetch, int64_t *block_idx, void *user);

/* ---- the decoded call (fuzz_pallas_call.c) ----------------------------------------- */

#define FZ_MAX_ARGS (2 + PL_MAX_OPERANDS)

typedef struct fz_case {
    pl_call call;
    pl_array args[FZ_MAX_ARGS], outs[PL_MAX_OPERANDS];
    void *mem[FZ_MAX_ARGS + PL_MAX_OPERANDS];
    int n_mem;
    fz_map maps[2 * PL_MAX_OPERANDS];
    int n_maps;
    int32_t prefetch[2][16];
    fz_program prog;
    pl_chip chip;
    pl_options opt;
    int runner, null_data;
} fz_case;

/* The call in words, for reading a crash input (TILESIM_FUZZ_DUMP=1). */
void fz_dump(const fz_case *k, FILE *f);

#endif
