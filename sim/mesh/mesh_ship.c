/* sim/mesh/mesh_ship.c: a device's report and timing records as bytes, so that
 * a mesh run across processes (mesh_mpi.c) can replay every device's
 * timeline on rank 0 (mesh_run.h). Every process runs the same program, so
 * plain structs travel as their bytes; the arrays behind their pointers
 * travel after them, each preceded by its length, and get pointers again
 * on arrival. Nothing here needs MPI, so the round trip is tested without.
 */
#include <stdlib.h>
#include <string.h>

#include "mesh_run.h"

void sim_buf_put(sim_buf *b, const void *v, size_t n)
{
    if (b->bad || n == 0) return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->bad = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, v, n);
    b->n += n;
}

static void put_i64(sim_buf *b, int64_t v) { sim_buf_put(b, &v, sizeof v); }

/* n elements of `size` bytes, after their count (-1: a NULL array) */
static void put_array(sim_buf *b, const void *a, int64_t n, size_t size)
{
    put_i64(b, a ? n : -1);
    if (a) sim_buf_put(b, a, (size_t)n * size);
}

static void put_opline(sim_buf *b, const sim_opline *l)
{
    sim_opline head = *l;
    head.x = NULL;
    head.bidx = NULL;
    sim_buf_put(b, &head, sizeof head);
    put_array(b, l->x, l->n, sizeof *l->x);
    put_array(b, l->bidx, l->n * l->rank, sizeof *l->bidx);
}

static void put_line(sim_buf *b, const sim_coreline *c)
{
    put_i64(b, c->n_ops);
    for (int i = 0; i < c->n_ops; i++) put_opline(b, &c->op[i]);
    put_opline(b, &c->manual);
    put_opline(b, &c->signals);
    put_array(b, c->kev, c->n_kev, sizeof *c->kev);
    put_array(b, c->step_kev, c->cap_step_kev, sizeof *c->step_kev);
    put_array(b, c->step_s, c->steps, sizeof *c->step_s);
    sim_buf_put(b, &c->nested_overhead_s, sizeof c->nested_overhead_s);
    put_array(b, c->step_point, c->steps, sizeof *c->step_point);
}

void sim_ship_device(sim_buf *b, const sim_exec *x, int with_lines)
{
    sim_buf_put(b, &x->rep, sizeof x->rep);
    sim_buf_put(b, x->dot_flops, sizeof x->dot_flops);
    put_i64(b, with_lines && x->lines ? x->n_cores : -1);
    for (int c = 0; with_lines && x->lines && c < x->n_cores; c++) put_line(b, &x->lines[c]);
}

/* ---- arrival ---------------------------------------------------------------------- */

typedef struct reader {
    const char *at, *end;
    int rc;                 /* PL_OK, PL_EINVAL (truncated), PL_ENOMEM */
} reader;

static void get(reader *r, void *v, size_t n)
{
    if (r->rc || (size_t)(r->end - r->at) < n) {
        if (!r->rc) r->rc = PL_EINVAL;
        memset(v, 0, n);
        return;
    }
    memcpy(v, r->at, n);
    r->at += n;
}

static int64_t get_i64(reader *r)
{
    int64_t v;
    get(r, &v, sizeof v);
    return v;
}

/* an array put_array wrote: malloc'd (NULL for a NULL one), *n its count */
static void *get_array(reader *r, size_t size, int64_t *n)
{
    int64_t k = get_i64(r);
    *n = k > 0 ? k : 0;
    if (k < 0 || r->rc) return NULL;
    if ((uint64_t)k > (uint64_t)(r->end - r->at) / size) {
        r->rc = PL_EINVAL;
        return NULL;
    }
    void *a = malloc(k ? (size_t)k * size : 1);
    if (!a) r->rc = PL_ENOMEM;
    else get(r, a, (size_t)k * size);
    return a;
}

static void get_opline(reader *r, sim_opline *l)
{
    int64_t n;
    get(r, l, sizeof *l);
    l->x = NULL;
    l->bidx = NULL;
    l->x = get_array(r, sizeof *l->x, &n);
    l->n = l->cap = n;
    l->bidx = get_array(r, sizeof *l->bidx, &n);
}

static void get_line(reader *r, sim_coreline *c)
{
    int64_t n = get_i64(r);
    c->n_ops = n >= 0 && n <= SIM_MAX_OPS ? (int)n : 0;
    if (n != c->n_ops && !r->rc) r->rc = PL_EINVAL;
    for (int i = 0; i < c->n_ops; i++) get_opline(r, &c->op[i]);
    get_opline(r, &c->manual);
    get_opline(r, &c->signals);
    c->kev = get_array(r, sizeof *c->kev, &n);
    c->n_kev = c->cap_kev = n;
    c->step_kev = get_array(r, sizeof *c->step_kev, &n);
    c->cap_step_kev = n;
    c->step_s = get_array(r, sizeof *c->step_s, &n);
    c->steps = c->cap = n;
    get(r, &c->nested_overhead_s, sizeof c->nested_overhead_s);
    c->step_point = get_array(r, sizeof *c->step_point, &n);
}

int sim_unship_device(const char **at, const char *end, sim_exec *x)
{
    reader r = {*at, end, PL_OK};
    const pl_chip *chip = x->rep.chip;
    sim_walk_free(x); /* a shadow's (empty) records make way for the device's */
    get(&r, &x->rep, sizeof x->rep);
    x->rep.chip = chip; /* the other process's pointer means nothing here */
    get(&r, x->dot_flops, sizeof x->dot_flops);
    int64_t cores = get_i64(&r);
    if (cores > SIM_MAX_CORES) r.rc = PL_EINVAL;
    if (cores > 0 && !r.rc) {
        x->n_cores = (int)cores;
        if (!(x->lines = calloc((size_t)cores, sizeof *x->lines))) r.rc = PL_ENOMEM;
        for (int c = 0; !r.rc && c < x->n_cores; c++) get_line(&r, &x->lines[c]);
    }
    *at = r.at;
    return r.rc;
}
