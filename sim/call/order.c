/* sim/call/order.c: replays that must not change a kernel's results: the
 * parallel axes in another order (rule V4) and manual copies that move their
 * data only when waited (M7, M8).
 *
 * A kernel whose parallel grid points are truly independent gives the same
 * bits in any order; what differs reveals a grid point that reads what
 * another wrote (a reduction over a parallel axis, scratch carried between
 * parallel points), which on a megacore chip depends on which core runs what.
 * A kernel that waits for every copy before reading its destination gives
 * the same bits whether copies land at start or at the wait; what differs
 * reveals a read before the wait, which on hardware reads whatever the DMA
 * engine has written so far.
 */
#include <stdlib.h>
#include <string.h>

#include "../base/sim.h"

/* Run the call with `first` into outs and with `second` into scratch
 * copies; compare. `why` explains a difference in the error message. */
static int compare_runs(const pl_call *call, const pl_array *args, pl_array *outs, const pl_options *first,
                        const pl_options *second, const char *why, pl_report *rep)
{
    int rc = pl_pallas_call(call, args, outs, first, rep);
    if (rc || first->cost_only) return rc;
    int n = call->n_out;
    pl_array other[PL_MAX_OPERANDS];
    memset(other, 0, sizeof other);
    for (int i = 0; i < n && !rc; i++) {
        other[i] = outs[i];
        other[i].data = calloc(1, pl_array_bytes(&outs[i]) + 1);
        if (!other[i].data) rc = PL_ENOMEM;
    }
    pl_report second_rep;
    if (!rc && (rc = pl_pallas_call(call, args, other, second, &second_rep))) *rep = second_rep;
    for (int i = 0; i < n && !rc; i++) {
        size_t es = pl_dtype_size(outs[i].dtype), bytes = pl_array_bytes(&outs[i]);
        if (memcmp(outs[i].data, other[i].data, bytes) == 0) continue;
        size_t at = 0;
        while (((char *)outs[i].data)[at] == ((char *)other[i].data)[at]) at++;
        at = at / es * es;
        int64_t e = (int64_t)(at / es), idx[PL_MAX_RANK];
        for (int d = outs[i].rank - 1; d >= 0; d--) idx[d] = e % outs[i].shape[d], e /= outs[i].shape[d];
        char where[128], blame[256] = "";
        sim_format_idx(idx, outs[i].rank, where, sizeof where);
        pl_check_blame(call, i, &outs[i], idx, blame, sizeof blame);
        double a = pl_load_elem((char *)outs[i].data + at, outs[i].dtype);
        double b = pl_load_elem((char *)other[i].data + at, outs[i].dtype);
        rep->status = rc = PL_ERACE;
        snprintf(rep->error, sizeof rep->error, "%s: element %s is %.9g in one run but %.9g in the other (%s); it is in %s",
                 rep->op[call->num_scalar_prefetch + call->n_in + i].name, where, a, b, why, blame);
    }
    for (int i = 0; i < n; i++) free(other[i].data);
    return rc;
}

int pl_check_order(const pl_call *call, const pl_array *args, pl_array *outs, const pl_options *opt, uint64_t seed,
                   pl_report *report)
{
    pl_report local;
    pl_options a = opt ? *opt : (pl_options){0}, b;
    a.seed = 0;
    b = a;
    b.seed = seed ? seed : 0x5eed;
    b.trace_path = NULL;
    char why[200];
    snprintf(why, sizeof why, "grid order, then the parallel axes shuffled with seed %llu: the result depends on "
             "their order; a parallel grid point reads what another one wrote (rules V4, G3)",
             (unsigned long long)b.seed);
    return compare_runs(call, args, outs, &a, &b, why, report ? report : &local);
}

int pl_check_dma_modes(const pl_call *call, const pl_array *args, pl_array *outs, const pl_options *opt,
                       pl_report *report)
{
    pl_report local;
    pl_options a = opt ? *opt : (pl_options){0}, b;
    a.dma_mode = PL_DMA_EAGER;
    b = a;
    b.dma_mode = PL_DMA_ON_WAIT;
    b.trace_path = NULL;
    return compare_runs(call, args, outs, &a, &b,
                        "copies landing at start, then only when waited: the kernel reads a copy's destination "
                        "before waiting for it (rules M7, M8)",
                        report ? report : &local);
}
