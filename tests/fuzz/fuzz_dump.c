/* tests/fuzz/fuzz_dump.c: a decoded call in words, so that a crash input of
 * fuzz_pallas_call can be read and turned into a Criterion reproducer:
 *     TILESIM_FUZZ_DUMP=1 build/fuzz/fuzz_pallas_call CRASH_FILE */
#include <inttypes.h>

#include "fuzz_pallas.h"

static void dims(FILE *f, const int64_t *v, int n)
{
    fputc('(', f);
    for (int d = 0; d < n; d++) fprintf(f, "%s%" PRId64, d ? ", " : "", v[d]);
    fputc(')', f);
}

static void spec(FILE *f, const char *what, int i, const pl_block_spec *s, const pl_array *a)
{
    fprintf(f, "  %s%d: array %s ", what, i, pl_dtype_name(a->dtype));
    dims(f, a->shape, a->rank);
    fprintf(f, "%s; block rank %d ", a->data ? "" : " (no data)", s->rank);
    dims(f, s->block, s->rank > 0 && s->rank <= PL_MAX_RANK ? s->rank : 0);
    fprintf(f, " space %s buffers %d", pl_memspace_name(s->space), s->buffers);
    if (s->map.fn) {
        const fz_map *m = s->map.user;
        fprintf(f, " map fn:");
        for (int d = 0; d < PL_MAX_RANK; d++)
            fprintf(f, " [kind %d axis %d mul %" PRId64 " add %" PRId64 "]", m->kind[d], m->axis[d], m->mul[d], m->add[d]);
    } else {
        fprintf(f, " map n %d axes", s->map.n);
        for (int d = 0; d < PL_MAX_RANK; d++) fprintf(f, " %d", s->map.axis[d]);
    }
    for (int d = 0; d < s->rank && d < PL_MAX_RANK; d++)
        if (s->element[d]) fprintf(f, " element[%d] pad (%" PRId64 ", %" PRId64 ")", d, s->pad_lo[d], s->pad_hi[d]);
    fputc('\n', f);
}

static void chip(FILE *f, const pl_chip *c)
{
    fprintf(f, "  chip %s: bf16 %g int8 %g f32x %g vpu %g mxu %dx%d hbm %g B/s vmem %" PRId64 " limit %" PRId64
               " smem %" PRId64 " sublanes16 %d cores %d devices %d ici %g overhead %g s latency %g s\n",
            c->name, c->bf16_flops, c->int8_ops, c->f32_fraction, c->vpu_flops, c->mxu_count, c->mxu_width,
            c->hbm_bw, c->vmem_bytes, c->vmem_default_limit, c->smem_bytes, c->sublanes_16bit, c->cores_per_device,
            c->devices_per_chip, c->ici_bw, c->step_overhead_s, c->dma_latency_s);
}

void fz_dump(const fz_case *k, FILE *f)
{
    const pl_call *c = &k->call;
    const pl_options *o = &k->opt;
    fprintf(f, "fuzz call: runner %d cost_only %d null_data %d checks_off %d strict %d dma_mode %d uninit %d oob %d "
               "trace %d seed %" PRIu64 " chip %s\n",
            k->runner, o->cost_only, k->null_data, o->checks_off, o->strict, o->dma_mode, o->uninit, o->oob_reads,
            o->trace_path != NULL, o->seed, o->chip ? o->chip : o->chip_spec ? "(spec)" : "(default)");
    if (o->chip_spec) chip(f, o->chip_spec);
    fprintf(f, "  grid rank %d ", c->grid_rank);
    dims(f, c->grid, c->grid_rank);
    fprintf(f, " parallel:");
    for (int a = 0; a < c->grid_rank; a++) fprintf(f, " %d", c->semantics[a]);
    fprintf(f, "; prefetch %d, in %d, out %d, scratch %d, alias %d, vmem_limit %" PRId64 "\n", c->num_scalar_prefetch,
            c->n_in, c->n_out, c->n_scratch, c->n_alias, c->vmem_limit_bytes);
    for (int i = 0; i < c->num_scalar_prefetch; i++) {
        fprintf(f, "  prefetch%d: %s ", i, pl_dtype_name(k->args[i].dtype));
        dims(f, k->args[i].shape, k->args[i].rank);
        fputc('\n', f);
    }
    for (int i = 0; i < c->n_in; i++) spec(f, "in", i, &c->in[i], &k->args[c->num_scalar_prefetch + i]);
    for (int i = 0; i < c->n_out; i++) spec(f, "out", i, &c->out[i], &k->outs[i]);
    for (int i = 0; i < c->n_scratch && i < PL_MAX_SCRATCH; i++) {
        const pl_scratch *s = &c->scratch[i];
        fprintf(f, "  scratch%d: space %d dtype %d sem_kind %d ", i, s->space, s->dtype, s->sem_kind);
        dims(f, s->shape, s->rank > 0 && s->rank <= PL_MAX_RANK ? s->rank : 0);
        fputc('\n', f);
    }
    for (int i = 0; i < c->n_alias; i++) fprintf(f, "  alias in %d -> out %d\n", c->alias[i].in, c->alias[i].out);
    for (int i = 0; i < k->prog.n_ops; i++) {
        const uint8_t *b = k->prog.ops[i];
        fprintf(f, "  op %d: %s %u %u %u %u %u\n", i, fz_op_name(b[0]), b[1], b[2], b[3], b[4], b[5]);
    }
}
