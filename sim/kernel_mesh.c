/* sim/kernel_mesh.c: pl_kernel (rule K1), pl.kernel over a TensorCoreMesh:
 * the body once per TensorCore of the device. It is a pallas_call with grid
 * (cores,) marked parallel, so that the megacore split (G4) puts grid point
 * i on TensorCore i, and every operand left in HBM (ANY, T5): validation,
 * the checks, the timing and the report are pallas_call's own. */
#include "../kernel/scoped.h"
#include "tilesim_kernel.h"

/* The TensorCores of the chip the options name (pallas_call reports an unknown one). */
static int mesh_cores(const pl_options *opt)
{
    const pl_chip *chip = opt && opt->chip_spec ? opt->chip_spec
                          : opt && opt->chip    ? pl_chip_find(opt->chip)
                                                : pl_chip_default();
    return chip && chip->cores_per_device >= 1 ? chip->cores_per_device : 1;
}

int pl_kernel(const pl_kernel_spec *k, const pl_array *ins, pl_array *outs, const pl_options *opt,
              pl_report *report)
{
    static const pl_kernel_spec none = {.name = "pl_kernel (spec is NULL)"};
    if (!k) k = &none; /* pallas_call names the missing body */
    kern_kernel_wrap wrap = {.body = k->body, .user = k->user};
    pl_call call = {.name = k->name ? k->name : "kernel", .kernel = k->body ? kern_kernel_trampoline : NULL,
                    .user = &wrap, .grid_rank = 1, .grid = {mesh_cores(opt)}, .semantics = {PL_PARALLEL},
                    .n_in = k->n_in, .n_out = k->n_out, .n_scratch = k->n_scratch,
                    .vmem_limit_bytes = k->vmem_limit_bytes};
    for (int i = 0; i < PL_MAX_OPERANDS; i++) {
        call.in[i] = (pl_block_spec){.space = PL_ANY, .name = k->in_names[i]};
        call.out[i] = (pl_block_spec){.space = PL_ANY, .name = k->out_names[i]};
    }
    for (int i = 0; i < PL_MAX_SCRATCH; i++) call.scratch[i] = k->scratch[i];
    return pl_pallas_call(&call, ins, outs, opt, report);
}
