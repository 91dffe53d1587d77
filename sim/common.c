/* sim/common.c: helpers shared by every stage of sim/ (see common.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../kernel/context.h"
#include "common.h"

/* ---- messages ------------------------------------------------------------------ */

int sim_fail(pl_report *rep, int code, const char *fmt, ...)
{
    if (rep->status != PL_OK) return rep->status; /* keep the first error */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rep->error, sizeof rep->error, fmt, ap);
    va_end(ap);
    rep->status = code;
    return code;
}

void sim_warn(pl_report *rep, const char *fmt, ...)
{
    size_t used = strlen(rep->warnings);
    if (used + 2 >= sizeof rep->warnings) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rep->warnings + used, sizeof rep->warnings - used - 1, fmt, ap);
    va_end(ap);
    used = strlen(rep->warnings);
    rep->warnings[used] = '\n';
    rep->warnings[used + 1] = '\0';
    rep->n_warnings++;
}

/* One format for sim/ and kernel/: the kernel's messages print points too. */
void sim_format_idx(const int64_t *idx, int rank, char *buf, size_t n) { kern_format_point(idx, rank, buf, n); }

/* ---- the grid ------------------------------------------------------------------ */

void sim_grid_iter_box(sim_grid_iter *it, int rank, const int64_t *lo, const int64_t *hi)
{
    it->rank = rank;
    for (int a = 0; a < rank; a++) {
        it->lo[a] = lo[a];
        it->hi[a] = hi[a];
        it->pos[a] = lo[a];
    }
}

void sim_grid_iter_init(sim_grid_iter *it, int rank, const int64_t *grid)
{
    int64_t zero[PL_MAX_GRID] = {0};
    sim_grid_iter_box(it, rank, zero, grid);
}

int sim_grid_iter_empty(const sim_grid_iter *it)
{
    for (int a = 0; a < it->rank; a++)
        if (it->hi[a] <= it->lo[a]) return 1;
    return 0;
}

int sim_grid_iter_next(sim_grid_iter *it)
{
    for (int a = it->rank - 1; a >= 0; a--) { /* G1: last axis fastest */
        if (++it->pos[a] < it->hi[a]) return 1;
        it->pos[a] = it->lo[a];
    }
    return 0;
}
