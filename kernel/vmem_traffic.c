/* kernel/vmem_traffic.c: the VMEM bytes an op moves when it reads or
 * writes a value (kern_value_read, kern_value_write: the slow half of
 * kern_vmem_read and kern_vmem_write, inline in kernel/context.h, which
 * says the rule): a value the last op wrote is in vector registers, as
 * Mosaic lowers a chain of ops vreg by vreg. The step's values live in
 * pl_ctx.fresh, emptied by kern_begin_step. */
#include "context.h"

static struct kern_fresh *fresh_of(pl_ctx *c, const void *data)
{
    for (int i = 0; i < c->n_fresh; i++)
        if (c->fresh[i].data == data) return &c->fresh[i];
    return NULL;
}

int64_t kern_value_read(pl_ctx *c, const pl_ref *r, int64_t bytes)
{
    struct kern_fresh *f = fresh_of(c, r->data);
    if (!f) return bytes;
    f->reads++;
    return f->reads == 1 ? 0 : f->reads == 2 ? 2 * bytes : bytes;
}

int64_t kern_value_write(pl_ctx *c, const pl_ref *r, int64_t bytes)
{
    struct kern_fresh *f = fresh_of(c, r->data);
    if (!f && c->n_fresh < KERN_MAX_FRESH) f = &c->fresh[c->n_fresh++];
    if (!f) return bytes; /* more values than tracked: stored, as a Ref */
    *f = (struct kern_fresh){r->data, 0};
    return 0;
}
