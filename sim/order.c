/* sim/order.c: order-dependence (rule V4): run a call in order and with its
 * parallel axes shuffled, and compare the results bit for bit.
 *
 * A kernel whose parallel axes are truly independent gives the same bits in
 * any order: what differs reveals a grid point that reads what another one
 * wrote (a reduction over a parallel axis, scratch carried between parallel
 * points), which on a megacore chip depends on which core runs what.
 */
#include <stdlib.h>
#include <string.h>

#include "sim.h"

int pl_check_order(const pl_call *call, const pl_array *args, pl_array *outs, const pl_options *opt, uint64_t seed,
                   pl_report *report)
{
    pl_report local, *rep = report ? report : &local;
    pl_options o = opt ? *opt : (pl_options){0};
    o.seed = 0;
    int rc = pl_pallas_call(call, args, outs, &o, rep);
    if (rc || o.cost_only) return rc;

    int n = call->n_out;
    pl_array shuffled[PL_MAX_OPERANDS];
    memset(shuffled, 0, sizeof shuffled);
    for (int i = 0; i < n && !rc; i++) {
        shuffled[i] = outs[i];
        shuffled[i].data = calloc(1, pl_array_bytes(&outs[i]) + 1);
        if (!shuffled[i].data) rc = PL_ENOMEM;
    }
    if (!rc) {
        o.seed = seed ? seed : 0x5eed;
        o.trace_path = NULL;
        pl_report second;
        rc = pl_pallas_call(call, args, shuffled, &o, &second);
        if (rc) {
            *rep = second;
        } else {
            for (int i = 0; i < n && !rc; i++) {
                size_t es = pl_dtype_size(outs[i].dtype), bytes = pl_array_bytes(&outs[i]);
                if (memcmp(outs[i].data, shuffled[i].data, bytes) == 0) continue;
                size_t at = 0;
                while (at < bytes && ((char *)outs[i].data)[at] == ((char *)shuffled[i].data)[at]) at++;
                int64_t e = (int64_t)(at / es), idx[PL_MAX_RANK];
                for (int d = outs[i].rank - 1; d >= 0; d--) idx[d] = e % outs[i].shape[d], e /= outs[i].shape[d];
                char where[128], blame[256] = "";
                sim_format_idx(idx, outs[i].rank, where, sizeof where);
                pl_check_blame(call, i, &outs[i], idx, blame, sizeof blame);
                double a = pl_load_elem((char *)outs[i].data + at / es * es, outs[i].dtype);
                double b = pl_load_elem((char *)shuffled[i].data + at / es * es, outs[i].dtype);
                rep->status = rc = PL_ERACE;
                snprintf(rep->error, sizeof rep->error,
                         "%s: the result depends on the order of the parallel axes: element %s is %.9g in grid "
                         "order but %.9g with the parallel axes shuffled (seed %llu); it is in %s. A parallel "
                         "grid point reads what another one wrote (rules V4, G3)",
                         rep->op[call->num_scalar_prefetch + call->n_in + i].name, where, a, b,
                         (unsigned long long)o.seed, blame);
            }
        }
    }
    for (int i = 0; i < n; i++) free(shuffled[i].data);
    return rc;
}
