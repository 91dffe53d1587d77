/* kernel/context.h: the inside of pl_ctx, shared by the kernel language and
 * the simulator that fills it. Not part of the public API.
 *
 * The kernel layer knows nothing of chips or time: each block op appends a
 * kern_op (what it did, in FLOPs and elements) to the context's op log, and
 * the simulator reads the log after the step. A fault inside the kernel
 * (bad index, bad shapes) formats a message and longjmps back to the
 * executor, which owns every allocation, so nothing leaks.
 */
#ifndef TILESIM_KERNEL_CONTEXT_H
#define TILESIM_KERNEL_CONTEXT_H

#include <setjmp.h>
#include <stdarg.h>

#include "pallas.h"

typedef enum kern_op_kind { KERN_OP_DOT, KERN_OP_VPU, KERN_OP_COPY } kern_op_kind;

/* One block op as the cost model sees it. */
typedef struct kern_op {
    uint8_t kind;   /* kern_op_kind */
    uint8_t dtype;  /* pl_dtype of the inputs (dot) or of the destination */
    int64_t m, n, k;  /* dot: the matmul's dimensions */
    int64_t elems;    /* VPU / copy: elements produced */
    double flops;     /* 2mnk for a dot, elems for an elementwise op */
} kern_op;

struct pl_ctx {
    /* the running grid point */
    int grid_rank;
    const int64_t *grid;        /* grid sizes */
    int64_t idx[PL_MAX_GRID];   /* current indices */
    int64_t step;               /* linear step on this core */
    int core;
    void *user;                 /* pl_call.user */
    const char *kernel_name;

    /* options */
    int cost_only;              /* block ops report cost but touch no data */

    /* the op log of the current step (reset by the executor) */
    kern_op *ops;
    int n_ops, cap_ops;

    /* host scratch for conversions, reused across steps (owned by executor) */
    float *tmp;
    size_t tmp_cap;             /* floats */

    /* fault handling */
    jmp_buf *fault;             /* where a fault returns to; NULL: not inside a kernel */
    int fault_code;
    char fault_msg[512];
};

/* Record the error, describe the grid point, and leave the kernel. */
#if defined(__GNUC__)
__attribute__((noreturn, format(printf, 3, 4)))
#endif
void kern_fault(pl_ctx *c, int code, const char *fmt, ...);

/* "x (input 0)" style description of a Ref for messages. */
void kern_ref_name(const pl_ref *r, char *buf, size_t n);

/* Append an op to the step's log; faults with PL_ENOMEM when the host is out. */
void kern_record(pl_ctx *c, const kern_op *op);

/* A host buffer of at least n floats, valid until the next call. */
float *kern_tmp(pl_ctx *c, size_t n);

/* Format the grid point "(i, j, k)" into buf. */
void kern_format_point(const int64_t *idx, int rank, char *buf, size_t n);

#endif
