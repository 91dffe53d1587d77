/* kernel/context.c: the context of a running kernel (context.h): faults,
 * the op log, host scratch, and the border with the simulator.
 *
 * The simulator owns the grid walk; this file owns the context. Keeping the
 * setjmp of kern_run here, beside kern_fault's longjmp, means a fault can
 * only ever jump into a frame of this layer that is still live.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "guard.h"

/* ---- faults ----------------------------------------------------------------- */

/* By hand, not by snprintf: a mesh names the point of every copy it makes */
void kern_format_point(const int64_t *idx, int rank, char *buf, size_t n)
{
    if (n == 0) return;
    size_t at = kern_append(buf, n, 0, "(");
    for (int a = 0; a < rank; a++) {
        if (a) at = kern_append(buf, n, at, ", ");
        at = kern_append_int(buf, n, at, idx[a]);
    }
    kern_append(buf, n, at, ")");
}

void kern_ref_name(const pl_ctx *c, const pl_ref *r, char *buf, size_t n)
{
    static const char *roles[] = {"ref", "scalar-prefetch", "input", "output", "scratch"};
    const char *role = r->role < sizeof roles / sizeof *roles ? roles[r->role] : "ref";
    const char *name = r->arg >= 0 && r->arg < KERN_MAX_ARGS ? c->arg_name[r->arg] : NULL;
    if (r->arg <= KERN_ARG_MISSING)
        snprintf(buf, n, "refs[%d], which does not exist", KERN_ARG_MISSING - r->arg);
    else if (r->arg >= 0)
        snprintf(buf, n, "refs[%d] (%s, %s %s)%s%s%s", r->arg, role, pl_memspace_name(r->space),
                 pl_dtype_name(r->dtype), name ? " '" : "", name ? name : "", name ? "'" : "");
    else
        snprintf(buf, n, "a %s %s ref", pl_memspace_name(r->space), pl_dtype_name(r->dtype));
}

static const char *plural(int n) { return n == 1 ? "" : "s"; }

void kern_missing_ref(pl_ctx *c, const pl_ref *r, const char *fn)
{
    char pre[48] = "";
    if (c->n_prefetch) snprintf(pre, sizeof pre, "%d scalar-prefetch, ", c->n_prefetch);
    kern_fault(c, PL_EINVAL, "%s: refs[%d] does not exist: %s%d input%s, %d output%s, %d scratch; the kernel's refs "
               "are the scalar-prefetch refs, inputs, outputs and scratch, in that order (rule M3)",
               fn, KERN_ARG_MISSING - r->arg, pre, c->n_in, plural(c->n_in), c->n_out, plural(c->n_out),
               c->n_scratch);
}

void kern_fault(pl_ctx *c, int code, const char *fmt, ...)
{
    char point[128];
    kern_format_point(c->idx, c->grid_rank, point, sizeof point);
    int at = snprintf(c->fault_msg, sizeof c->fault_msg, "kernel %s at grid point %s: ",
                      c->kernel_name ? c->kernel_name : "?", point);
    if (at < 0) at = 0;
    if ((size_t)at < sizeof c->fault_msg) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->fault_msg + at, sizeof c->fault_msg - (size_t)at, fmt, ap);
        va_end(ap);
    }
    c->fault_code = code;
    if (c->fault) longjmp(*c->fault, 1);
    /* Called outside a running kernel: there is nowhere to return to. This is
     * the simulator's own invariant, never user input. */
    fprintf(stderr, "tilesim: fault outside a kernel: %s\n", c->fault_msg);
    abort();
}

/* Room for one more op in the step's log. */
static void room_for_op(pl_ctx *c)
{
    if (c->n_ops == c->cap_ops) {
        int cap = c->cap_ops ? 2 * c->cap_ops : 16;
        /* a kernel that loops over block ops forever grew this log until the host killed the process */
        if ((c->op_log_max > 0 && (double)cap * sizeof(kern_op) > c->op_log_max) || c->cap_ops > INT32_MAX / 4) {
            char point[128];
            kern_format_point(c->idx, c->grid_rank, point, sizeof point);
            kern_fault(c, PL_ENOMEM, "the kernel made %d block ops at grid point %s without returning, more than "
                       "this host can record for one grid point (%.0f MiB of it): a loop that never ends, or a grid "
                       "point that does too much; split its work over more grid points", c->n_ops, point,
                       c->op_log_max / (1 << 20));
        }
        kern_op *ops = realloc(c->ops, (size_t)cap * sizeof *ops);
        if (!ops) kern_fault(c, PL_ENOMEM, "out of host memory recording block ops");
        c->ops = ops;
        c->cap_ops = cap;
    }
}

static void append_op(pl_ctx *c, const kern_op *op)
{
    room_for_op(c);
    c->ops[c->n_ops++] = *op;
    c->last_op = op->name;
}

void kern_flush_scalar(pl_ctx *c)
{
    if (!c->scalar_ops) return;
    kern_op s = {.kind = KERN_OP_SCALAR, .elems = c->scalar_ops, .flops = (double)c->scalar_ops,
                 .name = "pl_get/pl_set"};
    c->scalar_ops = 0;
    append_op(c, &s);
}

void kern_record(pl_ctx *c, const kern_op *op)
{
    kern_flush_scalar(c); /* element accesses before this op come first in the step's time line */
    append_op(c, op);
    kern_beat(); /* the kernel called tilesim: not stuck (pl_guard_stalls) */
}

kern_op *kern_record_slot(pl_ctx *c)
{
    kern_flush_scalar(c); /* as kern_record */
    room_for_op(c);
    kern_op *op = &c->ops[c->n_ops];
    *op = (kern_op){0};
    return op;
}

void kern_record_done(pl_ctx *c)
{
    c->last_op = c->ops[c->n_ops++].name;
    kern_beat();
}

float *kern_tmp(pl_ctx *c, size_t n)
{
    if (n == 0) n = 1; /* never NULL: ops on empty views still offset what this returns */
    if (n > c->tmp_cap) {
        free(c->tmp);
        c->tmp = malloc(n * sizeof *c->tmp);
        c->tmp_cap = c->tmp ? n : 0;
        if (!c->tmp) kern_fault(c, PL_ENOMEM, "out of host memory (%zu floats of conversion space)", n);
    }
    return c->tmp;
}

/* ---- the border with the simulator ------------------------------------------ */

void kern_ctx_init(pl_ctx *c, const kern_setup *s)
{
    memset(c, 0, sizeof *c);
    c->grid_rank = s->grid_rank;
    c->grid = s->grid;
    c->user = s->user;
    c->kernel_name = s->kernel_name;
    c->n_prefetch = s->n_prefetch;
    c->n_in = s->n_in;
    c->n_out = s->n_out;
    c->n_scratch = s->n_scratch;
    for (int i = 0; i < s->n_args && i < KERN_MAX_ARGS; i++) c->arg_name[i] = s->arg_name[i];
    c->cost_only = s->cost_only;
    c->op_log_max = s->op_log_max;
    c->strict = s->strict;
    c->races_off = s->races_off;
    c->parallel_axes = s->parallel_axes;
    c->oob_poison = s->oob_poison;
    c->uninit_zero = s->uninit_zero;
    c->dma_on_wait = s->dma_on_wait;
    c->has_collective_id = s->has_collective_id;
    c->mesh = s->mesh;
    c->mesh_run = s->mesh_run;
    c->device = s->device;
    c->n_devices = s->n_devices > 0 ? s->n_devices : 1;
    c->unit = s->unit;
    c->dev_cores = s->dev_cores > 0 ? s->dev_cores : 1;
    if (s->mesh) c->sem_bank = calloc(KERN_SEM_BANK, sizeof *c->sem_bank); /* NULL: heap cells, as off a mesh */
    if (s->target) c->target = *s->target;
    if (s->args) {
        c->checks = 1;
        c->args = s->args;
        c->n_args = s->n_args;
        c->warn = s->warn;
        c->warn_sink = s->warn_sink;
    }
}

void kern_ctx_free(pl_ctx *c)
{
    if (c->scoped_release) c->scoped_release(c); /* run_scoped VMEM a fault left live (kernel/scoped.c) */
    free(c->ops);
    free(c->tmp);
    free(c->values.base);
    c->values = (struct kern_arena){0};
    free(c->dma);
    free(c->sem_bank);
    c->sem_bank = NULL;
    c->ops = NULL;
    c->tmp = NULL;
    c->dma = NULL;
}

void kern_core_start(pl_ctx *c, int core, int64_t first_dma)
{
    c->core = core;
    c->n_dma = 0;
    c->next_dma = first_dma;
    memset(c->idx, 0, sizeof c->idx);
    c->point_ok = 0;
}

const char *kern_point(pl_ctx *c)
{
    if (!c->point_ok) kern_format_point(c->idx, c->grid_rank, c->point, sizeof c->point);
    c->point_ok = 1;
    return c->point;
}

void kern_begin_step(pl_ctx *c, int64_t step, const int64_t *idx)
{
    c->step = step;
    kern_copy_idx(c->idx, idx, c->grid_rank); /* walk_steps has just stored them */
    c->point_ok = 0;
    c->n_ops = 0;
    c->scalar_ops = 0;
    c->n_ds_count = 0; /* pl_ds calls are counted per step (T9) */
    c->n_fresh = 0;    /* values are a step's own */
    c->prog_grid = NULL; /* the call's grid again, even after a fault left a pipeline body (G2) */
}

int kern_run(pl_ctx *c, pl_kernel_fn kernel, pl_ref *refs)
{
    jmp_buf jb;
    c->fault = &jb;
    pl_ctx *prev = kern_guard_enter(c); /* a crash inside the kernel names it (kernel/guard.h) */
    if (setjmp(jb)) {
        kern_guard_leave(prev);
        c->fault = NULL;
        return c->fault_code;
    }
    kernel(c, refs);
    kern_guard_leave(prev);
    kern_flush_scalar(c); /* element accesses after the last block op */
    c->fault = NULL;
    return PL_OK;
}

const char *kern_fault_text(const pl_ctx *c) { return c->fault_msg; }

const kern_op *kern_step_ops(const pl_ctx *c, int *n)
{
    *n = c->n_ops;
    return c->ops;
}

void kern_new_output_block(pl_ctx *c)
{
    c->padding_read[0] = '\0';
    c->padding_spare = 0;
    c->padding_past = 0;
    c->oob_read[0] = '\0';
    c->out_read[0] = '\0';
}

int64_t kern_next_copy(const pl_ctx *c) { return c->next_dma; }
