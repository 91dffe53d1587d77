/* tests/test_memview.h: what the memory viewer's tests share (test_memview.c,
 * test_memview_cli.c). Static inline, as helpers.h. */
#ifndef TILESIM_TEST_MEMVIEW_H
#define TILESIM_TEST_MEMVIEW_H

#include <stdio.h>
#include <string.h>

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

#endif
