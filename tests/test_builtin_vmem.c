/* tests/test_builtin_vmem.c: the built-in definitions keep in VMEM what a
 * real kernel allocates, and no more (issue 22). What a Pallas kernel
 * computes from its blocks (x.astype(f32), a row's statistics, a dot's
 * result) is a value in vector registers, not a scratch buffer; only what
 * lives across grid steps (an accumulator, a running max) or what the
 * kernel DMAs into is scratch (examples/kernels/values.h). */
#include <criterion/criterion.h>
#include <string.h>

#include "../examples/kernels/registry.h"
#include "../examples/kernels/values.h"
#include "helpers.h"

/* name at its defaults with "name=value" settings on v5e, verified */
static void run_verified(const char *name, const char *const *sets, int n_sets, pl_report *rep)
{
    const pl_kernel_def *d = ex_kernel_find(name);
    cr_assert(d, "%s is a built-in", name);
    int64_t v[PL_KDEF_MAX_PARAMS];
    char msg[256];
    pl_kernel_defaults(d, v);
    for (int i = 0; i < n_sets; i++) cr_assert_eq(pl_kernel_set(d, v, sets[i], msg, sizeof msg), PL_OK, "%s", msg);
    pl_check chk[PL_MAX_OPERANDS];
    pl_options opt = {.chip = "v5e"};
    int rc = pl_kernel_run(d, v, &opt, rep, chk, NULL);
    cr_assert_eq(rc, PL_OK, "%s: %s", name, rep->error);
    cr_assert_eq(chk[0].verdict, PL_PASS, "%s: max abs err %g", name, chk[0].max_abs_err);
}

/* The call's scratch is exactly these buffers, in this order. */
static void expect_scratch(const char *name, const pl_report *rep, const char *const *names, int n)
{
    cr_assert_eq(rep->n_scratch, n, "%s: %d scratch buffers", name, rep->n_scratch);
    for (int i = 0; i < n; i++) cr_expect_str_eq(rep->scratch[i].name, names[i], "%s", name);
}

/* The sum of the blocks' buffers: what the budget holds with no scratch. */
static int64_t blocks_bytes(const pl_report *rep)
{
    int64_t b = 0;
    for (int i = 0; i < rep->n_operands; i++) b += rep->op[i].vmem_bytes * rep->op[i].buffers;
    return b;
}

/* RMSNorm and LayerNorm: x.astype(f32), its square or its centred copy and
 * the row statistics are values; a ragged last block (rows 100, br 16)
 * still verifies. */
Test(builtin_vmem, norms_keep_no_scratch)
{
    static const char *const names[] = {"rmsnorm", "layernorm"};
    static const char *const sets[] = {"rows=100", "d=256", "br=16", "dtype=bf16"};
    for (int k = 0; k < 2; k++) {
        pl_report rep;
        run_verified(names[k], sets, 4, &rep);
        cr_expect_eq(rep.n_scratch, 0, "%s: %d scratch buffers", names[k], rep.n_scratch);
        cr_expect_eq(rep.vmem_bytes, blocks_bytes(&rep), "%s: the blocks only", names[k]);
    }
}

/* Softmax: the running max m and sum s outlive a step and are scratch; a
 * block's max and exponentials are values. Ragged rows and columns verify. */
Test(builtin_vmem, softmax_keeps_only_its_running_max_and_sum)
{
    static const char *const sets[] = {"rows=100", "cols=1000", "br=16", "bc=256"};
    pl_report rep;
    run_verified("softmax", sets, 4, &rep);
    static const char *const names[] = {"m", "s"};
    expect_scratch("softmax", &rep, names, 2);
}

/* Flash attention: m, l and acc carry over the kv steps and are scratch;
 * the scores, p (in v's dtype for bf16 inputs), m_new and alpha are values.
 * Ragged, causal, bf16, with heads: it verifies with those three alone. */
Test(builtin_vmem, flash_attention_keeps_only_m_l_and_acc)
{
    static const char *const sets[] = {"sq=200", "skv=300", "bq=64", "bk=128", "heads=2", "causal=1",
                                       "dtype=bf16"};
    pl_report rep;
    run_verified("flash_attention", sets, 7, &rep);
    static const char *const names[] = {"m", "l", "acc"};
    expect_scratch("flash_attention", &rep, names, 3);
}

/* Paged attention: the page slots its copies land in, their semaphores and
 * the online softmax's m, l and acc are scratch; a page's scores and the
 * row statistics are values. bf16 pages of 32 tokens verify with those. */
Test(builtin_vmem, paged_attention_keeps_its_page_slots_and_softmax_state)
{
    static const char *const sets[] = {"page=32", "dtype=bf16"};
    pl_report rep;
    run_verified("paged_attention", sets, 2, &rep);
    static const char *const names[] = {"k_buf", "v_buf", "sems", "m", "l", "acc"};
    expect_scratch("paged_attention", &rep, names, 6);
}

/* Grouped matmul: the accumulator is scratch; the row mask of the last k
 * step (iota >= the group's first row) is a value. Ragged groups verify. */
Test(builtin_vmem, grouped_matmul_keeps_only_its_accumulator)
{
    static const char *const sets[] = {"M=500", "G=5", "dtype=bf16"};
    pl_report rep;
    run_verified("grouped_matmul", sets, 3, &rep);
    static const char *const names[] = {"acc"};
    expect_scratch("grouped_matmul", &rep, names, 1);
}

/* Values the host has no memory for end the call with PL_ENOMEM and the
 * bytes, as the runtime's own allocations do, rather than a run that
 * silently leaves the work out. */
static void greedy_kernel(pl_ctx *c, pl_ref *refs)
{
    ex_values_begin(c, (size_t)1 << 60);
    pl_fill(c, refs[0], 1.0);
}

Test(builtin_vmem, values_without_host_memory_are_PL_ENOMEM)
{
    static float out[8 * 128];
    pl_array o = PL_ARRAY(out, PL_F32, 8, 128);
    pl_call call = {.name = "greedy", .kernel = greedy_kernel, .grid_rank = 1, .grid = {1},
                    .n_out = 1, .out = {PL_BLOCK(PL_MAP(PL_ZERO, PL_ZERO), 8, 128)}};
    pl_report rep;
    int rc = pl_pallas_call(&call, NULL, &o, NULL, &rep);
    TH_EXPECT_ERROR(rc, rep, PL_ENOMEM, "out of host memory for the kernel's values", "1152921504606846976 bytes");
}
