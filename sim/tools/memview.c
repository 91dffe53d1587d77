/* sim/tools/memview.c: the memory viewer (sim/tilesim_memview.h): record which
 * buffer slot each new block went to at each step (pl_options.on_step),
 * then derive each slot's live range the way the timing model schedules
 * its copies (timing.c, P8), sum the live bytes per step, find the peak.
 * memview_out.c prints the view as text and JSON, memview_svg.c draws it.
 */
#include <stdlib.h>
#include <string.h>

#include "../base/common.h"
#include "../tilesim_memview.h"

/* Steps kept: a view is n_steps x n_allocs states plus a record per step. */
#define MEMVIEW_MAX_STEPS ((int64_t)1 << 20)

/* A new block in a slot: an input's copy (P1), a new or fetched-back output block (P4, P5). */
typedef struct mv_event {
    int64_t step; /* global step */
    int op, slot;
} mv_event;

typedef struct mv_rec {
    pl_mem_step *steps;
    int64_t n_steps, cap_steps;
    mv_event *ev;
    int64_t n_ev, cap_ev;
    int nomem, too_many;
    pl_step_fn next;   /* a recorder the options had before: still called, after this one */
    void *next_user;
} mv_rec;

static int grow(void **p, int64_t *cap, int64_t need, size_t size)
{
    if (need <= *cap) return 0;
    int64_t n = *cap ? *cap * 2 : 256;
    void *q = realloc(*p, (size_t)n * size);
    if (!q) return -1;
    *p = q;
    *cap = n;
    return 0;
}

static void record_step(const pl_step_info *info, mv_rec *r);

static void record(const pl_step_info *info, void *user)
{
    mv_rec *r = user;
    record_step(info, r);
    if (r->next) r->next(info, r->next_user);
}

static void record_step(const pl_step_info *info, mv_rec *r)
{
    if (info->final || r->nomem || r->too_many) return;
    if (r->n_steps == MEMVIEW_MAX_STEPS) {
        r->too_many = 1;
        return;
    }
    if (grow((void **)&r->steps, &r->cap_steps, r->n_steps + 1, sizeof *r->steps)) {
        r->nomem = 1;
        return;
    }
    pl_mem_step *s = &r->steps[r->n_steps];
    memset(s, 0, sizeof *s);
    s->core = info->core;
    s->core_step = info->step;
    memcpy(s->idx, info->idx, sizeof s->idx);
    for (int i = 0; i < info->n_operands; i++) {
        pl_step_action a = info->op[i].action;
        if (a != PL_ACT_COPY && a != PL_ACT_NEW && a != PL_ACT_FETCH) continue;
        if (grow((void **)&r->ev, &r->cap_ev, r->n_ev + 1, sizeof *r->ev)) {
            r->nomem = 1;
            return;
        }
        r->ev[r->n_ev++] = (mv_event){r->n_steps, i, info->op[i].slot};
    }
    r->n_steps++;
}

static int fail(pl_memview *mv, int code, const char *msg)
{
    mv->status = code;
    snprintf(mv->error, sizeof mv->error, "%s", msg);
    return code;
}

int pl_memview_recorder(pl_memview *mv, pl_options *opt)
{
    if (!mv) return PL_EINVAL;
    memset(mv, 0, sizeof *mv);
    if (!opt) return fail(mv, PL_EINVAL, "pl_memview_recorder: opt is NULL; the recorder goes into the options");
    mv_rec *r = calloc(1, sizeof *r);
    if (!(mv->rec = r)) return fail(mv, PL_ENOMEM, "out of host memory");
    r->next = opt->on_step == record ? NULL : opt->on_step; /* never itself: a second recorder call */
    r->next_user = opt->on_step_user;
    opt->on_step = record;
    opt->on_step_user = mv->rec;
    return PL_OK;
}

void pl_memview_free(pl_memview *mv)
{
    if (!mv) return;
    mv_rec *r = mv->rec;
    if (r) free(r->ev), free(r->steps), free(r);
    free(mv->allocs);
    free(mv->steps);
    free(mv->state);
    mv->rec = NULL, mv->allocs = NULL, mv->steps = NULL, mv->state = NULL;
    mv->n_allocs = 0, mv->n_steps = 0;
}

/* ---- allocations -------------------------------------------------------------------- */

static int64_t logical_bytes(const int64_t *shape, int rank, pl_dtype t)
{
    int64_t n = (int64_t)pl_dtype_size(t);
    for (int d = 0; d < rank; d++) n = sim_sat_mul(n, shape[d]);
    return n;
}

/* Every VMEM buffer slot, then every VMEM scratch buffer: what the budget (M4) sums. */
static int make_allocs(pl_memview *mv, const pl_call *call, const pl_report *rep)
{
    int n = 0;
    for (int i = 0; i < rep->n_operands; i++) n += rep->op[i].space == PL_VMEM ? rep->op[i].buffers : 0;
    for (int j = 0; j < rep->n_scratch; j++) n += rep->scratch[j].space == PL_VMEM;
    if (!(mv->allocs = calloc((size_t)n + 1, sizeof *mv->allocs))) return PL_ENOMEM;
    for (int i = 0; i < rep->n_operands; i++) {
        const pl_operand_report *o = &rep->op[i];
        for (int b = 0; o->space == PL_VMEM && b < o->buffers; b++) {
            pl_mem_alloc *a = &mv->allocs[mv->n_allocs++];
            *a = (pl_mem_alloc){.kind = PL_MEM_SLOT, .operand = i, .slot = b, .role = o->role, .dtype = o->dtype,
                                .rank = o->rank, .bytes = o->block_bytes, .padded_bytes = o->vmem_bytes};
            snprintf(a->name, sizeof a->name, "%s[%d]", o->name, b);
            memcpy(a->shape, o->block, sizeof a->shape);
        }
    }
    for (int j = 0; j < rep->n_scratch; j++) {
        const pl_scratch_report *s = &rep->scratch[j];
        if (s->space != PL_VMEM) continue;
        pl_mem_alloc *a = &mv->allocs[mv->n_allocs++];
        *a = (pl_mem_alloc){.kind = PL_MEM_SCRATCH, .operand = j, .slot = -1, .role = PL_ROLE_SCRATCH,
                            .dtype = s->dtype, .padded_bytes = s->bytes};
        snprintf(a->name, sizeof a->name, "%s", s->name);
        if (call && j < call->n_scratch && call->scratch[j].rank > 0 && call->scratch[j].rank <= PL_MAX_RANK) {
            a->rank = call->scratch[j].rank;
            memcpy(a->shape, call->scratch[j].shape, sizeof a->shape);
            a->bytes = logical_bytes(a->shape, a->rank, a->dtype);
        } else {
            a->bytes = s->bytes; /* no call: its shape is unknown, its padded size is what counts */
        }
    }
    return PL_OK;
}

/* ---- live ranges ---------------------------------------------------------------------- */

static void mark(pl_memview *mv, int a, int64_t from, int64_t to, pl_slot_state st)
{
    for (int64_t s = from; s <= to; s++) mv->state[s * mv->n_allocs + a] = (uint8_t)st;
}

/* The slots of allocation row `first` on (operand op, buffers nb) over one
 * core's steps [c0, c1): each new block j at step s_j in its slot is
 * current until the next one arrives. An input's copy is issued up to
 * nb - 1 steps ahead, and not before the block it replaces in that slot
 * is done with (timing.c issue_copies, P8); an output's block stays live
 * while its write-back is in flight, until the step that must reuse the
 * slot (P3, P8). */
static void slot_ranges(pl_memview *mv, const mv_rec *r, int op, int first, int nb, int is_out, int64_t c0,
                        int64_t c1)
{
    int64_t *s = malloc(sizeof *s * (size_t)(r->n_ev + 1)); /* this core's new blocks of op, by step */
    int *slot = malloc(sizeof *slot * (size_t)(r->n_ev + 1));
    int64_t n = 0;
    if (!s || !slot) {
        free(s), free(slot);
        mv->status = PL_ENOMEM;
        return;
    }
    for (int64_t e = 0; e < r->n_ev; e++)
        if (r->ev[e].op == op && r->ev[e].step >= c0 && r->ev[e].step < c1 && r->ev[e].slot >= 0 &&
            r->ev[e].slot < nb)
            s[n] = r->ev[e].step, slot[n++] = r->ev[e].slot;
    for (int64_t j = 0; j < n; j++) {
        int64_t last = j + 1 < n ? s[j + 1] - 1 : c1 - 1;
        int a = first + slot[j];
        if (is_out) {
            int64_t end = last + nb - 1 < c1 - 1 ? last + nb - 1 : c1 - 1;
            mark(mv, a, s[j], last, PL_SLOT_CURRENT);
            mark(mv, a, last + 1, end, PL_SLOT_WRITEBACK);
            continue;
        }
        int64_t issue = s[j] - (nb - 1);
        if (j >= nb && issue < s[j - nb + 1]) issue = s[j - nb + 1];
        if (issue < c0) issue = c0;
        mark(mv, a, issue, s[j] - 1, PL_SLOT_INFLIGHT);
        mark(mv, a, s[j], last, PL_SLOT_CURRENT);
    }
    for (int b = 0; b < nb; b++) { /* after its first block, a slot not live holds an old one */
        int seen = 0;
        for (int64_t t = c0; t < c1; t++) {
            uint8_t *st = &mv->state[t * mv->n_allocs + first + b];
            if (*st != PL_SLOT_EMPTY) seen = 1;
            else if (seen) *st = PL_SLOT_STALE;
        }
    }
    free(s);
    free(slot);
}

int pl_memview_live(const pl_memview *mv, int64_t s, int a)
{
    if (!mv || !mv->state || s < 0 || s >= mv->n_steps || a < 0 || a >= mv->n_allocs) return 0;
    uint8_t st = mv->state[s * mv->n_allocs + a];
    return st == PL_SLOT_INFLIGHT || st == PL_SLOT_CURRENT || st == PL_SLOT_WRITEBACK || st == PL_SLOT_SCRATCH;
}

const char *pl_slot_state_name(pl_slot_state s)
{
    static const char *const names[] = {"empty", "in flight", "current", "write-back", "stale", "scratch"};
    return (unsigned)s < sizeof names / sizeof *names ? names[s] : "?";
}

/* The slots of the operand whose slot 0 is row a: rows a, a + 1, ... */
static int count_slots(const pl_memview *mv, int a)
{
    int n = 1;
    while (a + n < mv->n_allocs && mv->allocs[a + n].kind == PL_MEM_SLOT &&
           mv->allocs[a + n].operand == mv->allocs[a].operand)
        n++;
    return n;
}

/* States of every allocation at every step, each core's steps alike; then
 * the live bytes per step and the peak. */
static int fill_states(pl_memview *mv, const mv_rec *r)
{
    mv->n_steps = r->n_steps;
    mv->steps = malloc(sizeof *mv->steps * (size_t)(r->n_steps + 1));
    mv->state = calloc((size_t)(r->n_steps * mv->n_allocs + 1), 1);
    if (!mv->steps || !mv->state) return PL_ENOMEM;
    memcpy(mv->steps, r->steps, sizeof *mv->steps * (size_t)r->n_steps);
    for (int64_t c0 = 0, c1; c0 < r->n_steps; c0 = c1) {
        for (c1 = c0 + 1; c1 < r->n_steps && r->steps[c1].core == r->steps[c0].core;) c1++;
        for (int a = 0; a < mv->n_allocs; a++) {
            const pl_mem_alloc *al = &mv->allocs[a];
            if (al->kind == PL_MEM_SCRATCH) mark(mv, a, c0, c1 - 1, PL_SLOT_SCRATCH);
            else if (al->slot == 0) /* once per operand: its slots are this row and the next ones */
                slot_ranges(mv, r, al->operand, a, count_slots(mv, a), al->role == PL_ROLE_OUT, c0, c1);
        }
    }
    if (mv->status == PL_ENOMEM) return PL_ENOMEM;
    mv->peak_step = 0;
    for (int64_t s = 0; s < mv->n_steps; s++) {
        int64_t sum = 0;
        for (int a = 0; a < mv->n_allocs; a++)
            if (pl_memview_live(mv, s, a)) sum += mv->allocs[a].padded_bytes, mv->allocs[a].live_steps++;
        mv->steps[s].live_bytes = sum;
        if (sum > mv->peak_bytes) mv->peak_bytes = sum, mv->peak_step = s;
    }
    return PL_OK;
}

/* ---- HBM ---------------------------------------------------------------------------------- */

/* The call's arrays in the report's order (prefetch, inputs, outputs); an
 * output aliased to an input (M6) shares its buffer and counts once. */
static void fill_hbm(pl_memview *mv, const pl_call *call, const pl_array *args, const pl_array *outs,
                     const pl_report *rep)
{
    int nargs = call ? call->num_scalar_prefetch + call->n_in : 0;
    mv->n_hbm = rep->n_operands < PL_MAX_CALL_OPERANDS ? rep->n_operands : PL_MAX_CALL_OPERANDS;
    for (int i = 0; i < mv->n_hbm; i++) {
        pl_mem_hbm *h = &mv->hbm[i];
        const pl_array *arr = !call ? NULL : i < nargs ? (args ? &args[i] : NULL) : (outs ? &outs[i - nargs] : NULL);
        *h = (pl_mem_hbm){.role = rep->op[i].role, .dtype = rep->op[i].dtype, .bytes = rep->op[i].array_bytes,
                          .alias_of = -1};
        snprintf(h->name, sizeof h->name, "%s", rep->op[i].name);
        if (arr && arr->rank >= 0 && arr->rank <= PL_MAX_RANK) {
            h->rank = arr->rank;
            memcpy(h->shape, arr->shape, sizeof h->shape);
            h->dtype = arr->dtype;
            h->bytes = (int64_t)pl_array_bytes(arr);
        }
    }
    for (int k = 0; call && k < call->n_alias && k < PL_MAX_OPERANDS; k++) {
        int o = nargs + call->alias[k].out, in = call->alias[k].in;
        if (o >= nargs && o < mv->n_hbm && in >= 0 && in < nargs) mv->hbm[o].alias_of = in;
    }
    mv->hbm_bytes = 0;
    for (int i = 0; i < mv->n_hbm; i++)
        if (mv->hbm[i].alias_of < 0) mv->hbm_bytes += mv->hbm[i].bytes;
}

/* ---- the view ------------------------------------------------------------------------------ */

int pl_memview_finish(pl_memview *mv, const pl_call *call, const pl_array *args, const pl_array *outs,
                      const pl_report *rep)
{
    if (!mv) return PL_EINVAL;
    mv_rec *r = mv->rec;
    if (!r) return fail(mv, PL_EINVAL, "pl_memview_finish: no recorder; call pl_memview_recorder before the run");
    if (!rep) return fail(mv, PL_EINVAL, "pl_memview_finish: the run's report is NULL");
    if (rep->status != PL_OK) return fail(mv, rep->status, rep->error);
    if (!rep->chip) return fail(mv, PL_EINVAL, "pl_memview_finish: the report names no chip");
    if (r->nomem) return fail(mv, PL_ENOMEM, "out of host memory recording the steps for the memory viewer");
    if (r->too_many || r->n_steps != rep->steps) {
        char m[256];
        snprintf(m, sizeof m, "the memory viewer keeps at most %lld steps and saw %lld of the run's %lld; "
                 "view a configuration with larger blocks (fewer grid steps)",
                 (long long)MEMVIEW_MAX_STEPS, (long long)r->n_steps, (long long)rep->steps);
        return fail(mv, PL_EINVAL, m);
    }
    snprintf(mv->call_name, sizeof mv->call_name, "%s", rep->call_name);
    snprintf(mv->chip_name, sizeof mv->chip_name, "%s", rep->chip->name);
    mv->grid_rank = rep->grid_rank;
    mv->vmem_limit = rep->vmem_limit;
    mv->vmem_physical = rep->chip->vmem_bytes;
    mv->smem_bytes = rep->smem_bytes;
    mv->smem_physical = rep->chip->smem_bytes;
    mv->hbm_physical = rep->chip->hbm_bytes;
    mv->internal_scratch_bytes = 0;
    if (make_allocs(mv, call, rep) || fill_states(mv, r))
        return fail(mv, PL_ENOMEM, "out of host memory for the memory viewer");
    mv->reserved_bytes = 0;
    for (int a = 0; a < mv->n_allocs; a++) mv->reserved_bytes += mv->allocs[a].padded_bytes;
    fill_hbm(mv, call, args, outs, rep);
    free(r->ev), free(r->steps), free(r);
    mv->rec = NULL;
    mv->status = PL_OK;
    return PL_OK;
}

int pl_memview_call(const pl_call *call, const pl_array *args, const pl_array *outs, const pl_options *opt,
                    pl_memview *mv, pl_report *rep)
{
    if (!mv) return PL_EINVAL;
    pl_options o;
    if (opt) o = *opt;
    else memset(&o, 0, sizeof o);
    int rc = pl_memview_recorder(mv, &o);
    if (rc) return rc;
    if (!call) return fail(mv, PL_EINVAL, "pl_memview_call: call is NULL");
    pl_report *own = rep ? NULL : calloc(1, sizeof *own);
    if (!rep && !own) return fail(mv, PL_ENOMEM, "out of host memory");
    o.cost_only = 1;    /* the view needs the walk and the slots, no data */
    o.trace_path = NULL;
    /* cost-only reads and writes no output data, so the const outputs stay as they were */
    rc = pl_pallas_call(call, args, (pl_array *)outs, &o, rep ? rep : own);
    rc = rc != PL_OK ? fail(mv, rc, (rep ? rep : own)->error) : pl_memview_finish(mv, call, args, outs, rep ? rep : own);
    free(own);
    return rc;
}
