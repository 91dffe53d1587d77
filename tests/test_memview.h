/* tests/test_memview.h: what the memory viewer's tests share (test_memview.c,
 * test_memview_out.c, test_memview_cli.c). Static inline, as helpers.h. */
#ifndef TILESIM_TEST_MEMVIEW_H
#define TILESIM_TEST_MEMVIEW_H

#include <stdio.h>
#include <string.h>

#include "../examples/kernels/registry.h"
#include "../sim/kdef.h"
#include "../sim/tilesim_memview.h"
#include "helpers.h"

/* Kernels whose every slot is live at one step: the live peak is the budget. */
static inline int peak_is_budget(const char *name)
{
    static const char *const full[] = {"matmul", "matmul_tb", "block_sparse_matmul", "grouped_matmul",
                                       "paged_attention", "rmsnorm", "layernorm", "softmax", "add"};
    for (size_t i = 0; i < sizeof full / sizeof *full; i++)
        if (strcmp(full[i], name) == 0) return 1;
    return 0;
}

/* Tags balance: every <x ...> is closed by </x> in order, or is <x .../>. */
static inline int tags_balance(const char *s, char *why, size_t n)
{
    char stack[64][32];
    int depth = 0;
    for (const char *p = strchr(s, '<'); p; p = strchr(p + 1, '<')) {
        if (p[1] == '?' || p[1] == '!') continue;
        const char *end = strchr(p, '>');
        if (!end) return snprintf(why, n, "unclosed tag at %td", p - s), 0;
        int close = p[1] == '/';
        size_t len = strcspn(p + 1 + close, " \t\n/>");
        if (len >= 32) return snprintf(why, n, "long tag name"), 0;
        if (close) {
            if (!depth || strncmp(stack[depth - 1], p + 2, len) || stack[depth - 1][len])
                return snprintf(why, n, "</%.*s> closes %s", (int)len, p + 2, depth ? stack[depth - 1] : "nothing"), 0;
            depth--;
        } else if (end[-1] != '/') {
            if (depth == 64) return snprintf(why, n, "too deep"), 0;
            snprintf(stack[depth++], 32, "%.*s", (int)len, p + 1);
        }
    }
    return depth == 0 ? 1 : (snprintf(why, n, "%s left open", stack[depth - 1]), 0);
}


/* The last build view_kernel made (static storage: a build is large). */
static inline pl_kernel_build *built(void)
{
    static pl_kernel_build b;
    return &b;
}

/* A built-in kernel at its defaults (plus sets), viewed through the recorder
 * around pl_kernel_run, cost-only: what `tilesim memory` does. */
static inline void view_kernel(const char *name, const char *set, const char *chip, pl_memview *mv, pl_report *rep)
{
    const pl_kernel_def *d = ex_kernel_find(name);
    cr_assert(d, "no built-in kernel %s", name);
    int64_t v[PL_KDEF_MAX_PARAMS];
    char msg[PL_MSG_MAX];
    pl_kernel_defaults(d, v);
    if (set) cr_assert_eq(pl_kernel_set(d, v, set, msg, sizeof msg), PL_OK, "%s", msg);
    pl_kernel_build *b = built(); /* for the HBM arrays: shapes and aliases, no data */
    memset(b, 0, sizeof *b);
    cr_assert_eq(d->build(v, b, msg, sizeof msg), PL_OK, "%s", msg);
    pl_options opt = {.cost_only = 1, .chip = chip};
    cr_assert_eq(pl_memview_recorder(mv, &opt), PL_OK);
    cr_assert_eq(pl_kernel_run(d, v, &opt, rep, NULL, NULL), PL_OK, "%s: %s", name, rep->error);
    cr_assert_eq(pl_memview_finish(mv, &b->call, b->args, b->outs, rep), PL_OK, "%s: %s", name, mv->error);
}

static inline int find_alloc(const pl_memview *mv, const char *name)
{
    for (int a = 0; a < mv->n_allocs; a++)
        if (strcmp(mv->allocs[a].name, name) == 0) return a;
    cr_assert_fail("no allocation %s", name);
    return -1;
}

static inline pl_slot_state state_at(const pl_memview *mv, int64_t s, const char *name)
{
    return (pl_slot_state)mv->state[s * mv->n_allocs + find_alloc(mv, name)];
}

/* Sum of the padded bytes of the allocations live at step s: must be the step's figure. */
static inline int64_t live_sum(const pl_memview *mv, int64_t s)
{
    int64_t sum = 0;
    for (int a = 0; a < mv->n_allocs; a++)
        if (pl_memview_live(mv, s, a)) sum += mv->allocs[a].padded_bytes;
    return sum;
}


static inline pl_call copy_rows(int buffers, int constant)
{
    pl_call call = th_copy_call_2d(64, 128, 8, 128); /* grid (8, 1) */
    call.in[0].buffers = buffers;
    if (constant) call.in[0].map = PL_MAP(PL_ZERO, PL_ZERO);
    return call;
}

static inline void view_call(const pl_call *call, const char *chip, pl_memview *mv, pl_report *rep)
{
    pl_array a = PL_ARRAY(NULL, PL_F32, 64, 128), o = PL_ARRAY(NULL, PL_F32, 64, 128);
    pl_options opt = {.chip = chip};
    int rc = pl_memview_call(call, &a, &o, &opt, mv, rep);
    cr_assert_eq(rc, PL_OK, "%s", mv->error);
}

#endif
