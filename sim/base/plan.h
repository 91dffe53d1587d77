/* sim/base/plan.h: what the files of the planning stage share. Not part of the
 * public API; sim_plan_call (sim.h) is the stage's entry point.
 *
 * Planning (rule T7, everything checked before a call runs) is three files,
 * called in one direction only:
 *   validate.c   the call: its shape, the chip, the options, the operands'
 *                arrays, scalar prefetch, aliases (M6) and scratch (M2)
 *   blockspec.c  one operand's BlockSpec resolved into its sim_operand
 *                (B1, B4, B5, M1, P5-P7, T1-T5)
 *   budget.c     bytes in VMEM and SMEM: the tiled layout (T6) and the
 *                chip's budget (M4)
 * validate.c calls the other two; blockspec.c calls budget.c.
 */
#ifndef TILESIM_PLAN_H
#define TILESIM_PLAN_H

#include "sim.h"

/* blockspec.c: resolve op's spec s into op (block sizes and counts, buffer
 * count, the kernel's Ref template) and its report row; op->arr, role, rep
 * and arg are set by the caller. Rules B1, B3-B5, M1, P5-P7, T1-T5. */
int sim_plan_operand(const sim_plan *plan, sim_operand *op, const pl_block_spec *s, pl_report *rep);

/* budget.c: bytes a buffer of this shape takes, laid out in (sublanes, 128)
 * tiles in VMEM, or as 32-bit words in SMEM (T6); saturates at INT64_MAX. */
int64_t sim_laid_out_bytes(const int64_t *shape, int rank, pl_dtype t, pl_memspace space, const pl_chip *chip);

/* budget.c: warn (rule T6) when the tiled bytes are at least twice the
 * logical ones; who names the operand or scratch, kind says which ("block",
 * "scratch"). */
void sim_warn_padding(pl_report *rep, const char *who, const char *kind, const int64_t *shape, int rank,
                      pl_dtype t, const pl_chip *chip, int64_t tiled, int64_t logical);

/* budget.c: sum the report's buffers and scratch into rep->vmem_bytes and
 * rep->smem_bytes and check them against the chip (M1) and the call's scoped
 * VMEM limit (M4); PL_EVMEM lists every VMEM buffer. */
int sim_check_budget(const sim_plan *plan, const pl_call *call, pl_report *rep);

#endif
